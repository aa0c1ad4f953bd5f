// attnk.tma_load with paged addressing lowered to NVVM: a 32-row K tile of a pool with pages of
// 16 tokens is two boxes of one page each. Each box's page is read from the block table
// (row b · max_blocks + token / P, the block index clamped into the row) and the copy's row
// coordinate is page · P + token mod P, with batch coordinate 0 (the pool is one sequence of
// num_pages · P rows); the second box's token is 16 further on.
// RUN: attn-opt %s --convert-attnk-to-nvvm | FileCheck %s

// CHECK-LABEL: llvm.func @paged(
// CHECK-SAME: %[[KMAP:[^:]+]]: !llvm.ptr {{{.*}}}, %[[TABLE:[^:]+]]: !llvm.ptr<1>, %[[S:[^:]+]]: i32, %[[B:[^:]+]]: i32, %[[TOK:[^:]+]]: i32, %[[H:[^:]+]]: i32)
// Box 0: the block index token / 16, clamped below max_blocks 8, at row b · 8 of the table.
// CHECK: %[[P16:.+]] = llvm.mlir.constant(16 : i32) : i32
// CHECK-NEXT: %[[BLK:.+]] = llvm.udiv %[[TOK]], %[[P16]] : i32
// CHECK: %[[INROW:.+]] = llvm.icmp "ult" %[[BLK]], %{{.+}} : i32
// CHECK: %[[BLKC:.+]] = llvm.select %[[INROW]], %[[BLK]], %{{.+}} : i1, i32
// CHECK: %[[ROW0:.+]] = llvm.mul %[[B]], %{{.+}} : i32
// CHECK-NEXT: %[[ENTRY:.+]] = llvm.add %[[ROW0]], %[[BLKC]] : i32
// CHECK-NEXT: %[[ENTRY64:.+]] = llvm.sext %[[ENTRY]] : i32 to i64
// CHECK: %[[OFF:.+]] = llvm.mul %[[ENTRY64]], %{{.+}} : i64
// CHECK-NEXT: %[[EPTR:.+]] = llvm.getelementptr %[[TABLE]][%[[OFF]]]
// CHECK-NEXT: %[[PAGE:.+]] = llvm.load %[[EPTR]] invariant {alignment = 4 : i64} : !llvm.ptr<1> -> i32
// CHECK: %[[PROW:.+]] = llvm.mul %[[PAGE]], %{{.+}} : i32
// CHECK: %[[INPAGE:.+]] = llvm.and %[[TOK]], %{{.+}} : i32
// CHECK-NEXT: %[[ROW:.+]] = llvm.add %[[PROW]], %[[INPAGE]] : i32
// Box 1: token + 16, its own table entry.
// CHECK: %[[TOK1:.+]] = llvm.add %[[TOK]], %{{.+}} : i32
// CHECK: llvm.udiv %[[TOK1]], %{{.+}} : i32
// CHECK: %[[PAGE1:.+]] = llvm.load %{{.+}} invariant {alignment = 4 : i64} : !llvm.ptr<1> -> i32
// CHECK: %[[PROW1:.+]] = llvm.mul %[[PAGE1]], %{{.+}} : i32
// CHECK: %[[ROW1:.+]] = llvm.add %[[PROW1]], %{{.+}} : i32
// The copies: column 0, head h, the pool row, batch 0; 16 rows of 128 bytes apart.
// CHECK: %[[ZERO:.+]] = llvm.mlir.constant(0 : i32) : i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.+}}, %[[KMAP]], %{{.+}}, box[%{{.+}}, %[[H]], %[[ROW]], %[[ZERO]]]
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.+}}, %[[KMAP]], %{{.+}}, box[%{{.+}}, %[[H]], %[[ROW1]], %{{.+}}]
// CHECK-NOT: nvvm.cp.async.bulk.tensor

gpu.module @attn_kernels {
  attnk.kernel @paged(%kmap: !attnk.tensor_map<1x16x1x128xi8, none>, %table: memref<?x8xi32>,
                      %s: i32, %b: i32, %tok: i32, %h: i32) threads = 384 {
    %c0 = arith.constant 0 : i32
    %st = attnk.ring.alloc at 1024 stride 8192 barriers 0, 16 : !attnk.ring<64x128xi8, stages = 2, none, producers = 1, consumers = 128>
    attnk.warp_specialize
      #attn.role<producer, warpgroups = 1, regs = 56> {
        %f = attnk.ring.acquire %st[%s] expect_tx 4096 : !attnk.ring<64x128xi8, stages = 2, none, producers = 1, consumers = 128>
        %k = attnk.subtile %f[0] : !attnk.stage<64x128xi8, none> -> !attnk.stage<32x128xi8, none>
        attnk.tma_load %kmap[%b, %tok, %h, %c0] #attnk.addressing<paged, page = 16> into %k
            block_table(%table : memref<?x8xi32>) : !attnk.tensor_map<1x16x1x128xi8, none>, !attnk.stage<32x128xi8, none>
        attnk.ring.commit %st[%f] : !attnk.ring<64x128xi8, stages = 2, none, producers = 1, consumers = 128>
      }
      #attn.role<consumer, warpgroups = 2, regs = 200> {
      }
  }
}

// With `pages` (looked up before): no table load, each band's row is its page · 16 + token mod 16.
// CHECK-LABEL: llvm.func @paged_given(
// CHECK-SAME: %[[GMAP:[^:]+]]: !llvm.ptr {{{.*}}}, %[[GTABLE:[^:]+]]: !llvm.ptr<1>, %[[GS:[^:]+]]: i32, %[[GB:[^:]+]]: i32, %[[GTOK:[^:]+]]: i32, %[[GH:[^:]+]]: i32, %[[PG0:[^:]+]]: i32, %[[PG1:[^:]+]]: i32)
// CHECK-NOT: llvm.load
// CHECK: %[[GROW0:.+]] = llvm.mul %[[PG0]], %{{.+}} : i32
// CHECK: %[[GIN0:.+]] = llvm.and %[[GTOK]], %{{.+}} : i32
// CHECK-NEXT: %[[GR0:.+]] = llvm.add %[[GROW0]], %[[GIN0]] : i32
// CHECK: %[[GROW1:.+]] = llvm.mul %[[PG1]], %{{.+}} : i32
// CHECK: %[[GR1:.+]] = llvm.add %[[GROW1]], %{{.+}} : i32
// CHECK-NOT: llvm.load
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.+}}, %[[GMAP]], %{{.+}}, box[%{{.+}}, %[[GH]], %[[GR0]], %{{.+}}]
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.+}}, %[[GMAP]], %{{.+}}, box[%{{.+}}, %[[GH]], %[[GR1]], %{{.+}}]

// attnk.page_lookup over a table of a dynamic number of pages per sequence: the row stride and
// the clamp are the `blocks` operand (the kernel's kv_len / P).
// CHECK-LABEL: llvm.func @lookup_dynamic(
// CHECK-SAME: %[[DTABLE:[^:]+]]: !llvm.ptr<1>, %[[DB:[^:]+]]: i32, %[[DTOK:[^:]+]]: i32, %[[DN:[^:]+]]: i32)
// CHECK: %[[DBLK:.+]] = llvm.udiv %[[DTOK]], %{{.+}} : i32
// CHECK: %[[DLAST:.+]] = llvm.add %[[DN]], %{{.+}} : i32
// CHECK-NEXT: %[[DIN:.+]] = llvm.icmp "ult" %[[DBLK]], %[[DN]] : i32
// CHECK-NEXT: %[[DBLKC:.+]] = llvm.select %[[DIN]], %[[DBLK]], %[[DLAST]] : i1, i32
// CHECK-NEXT: %[[DROW:.+]] = llvm.mul %[[DB]], %[[DN]] : i32
// CHECK-NEXT: %[[DENTRY:.+]] = llvm.add %[[DROW]], %[[DBLKC]] : i32
// CHECK: llvm.getelementptr %[[DTABLE]]
// CHECK-NEXT: llvm.load %{{.+}} invariant {alignment = 4 : i64} : !llvm.ptr<1> -> i32

gpu.module @attn_kernels_given {
  attnk.kernel @paged_given(%kmap: !attnk.tensor_map<1x16x1x128xi8, none>, %table: memref<?x8xi32>,
                            %s: i32, %b: i32, %tok: i32, %h: i32, %p0: i32, %p1: i32) threads = 384 {
    %c0 = arith.constant 0 : i32
    %st = attnk.ring.alloc at 1024 stride 8192 barriers 0, 16 : !attnk.ring<64x128xi8, stages = 2, none, producers = 1, consumers = 128>
    attnk.warp_specialize
      #attn.role<producer, warpgroups = 1, regs = 56> {
        %f = attnk.ring.acquire %st[%s] expect_tx 4096 : !attnk.ring<64x128xi8, stages = 2, none, producers = 1, consumers = 128>
        %k = attnk.subtile %f[0] : !attnk.stage<64x128xi8, none> -> !attnk.stage<32x128xi8, none>
        attnk.tma_load %kmap[%b, %tok, %h, %c0] #attnk.addressing<paged, page = 16> into %k
            pages(%p0, %p1) : !attnk.tensor_map<1x16x1x128xi8, none>, !attnk.stage<32x128xi8, none>
        attnk.ring.commit %st[%f] : !attnk.ring<64x128xi8, stages = 2, none, producers = 1, consumers = 128>
      }
      #attn.role<consumer, warpgroups = 2, regs = 200> {
      }
  }
  attnk.kernel @lookup_dynamic(%table: memref<?x?xi32>, %b: i32, %tok: i32, %n: i32) threads = 128 {
    %pg = attnk.page_lookup %table[%b, %tok] page = 16 blocks(%n) : memref<?x?xi32>
  }
}
