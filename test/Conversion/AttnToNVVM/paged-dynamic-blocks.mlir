// A paged decode spec whose block table has a dynamic width (block_table memref<?x?xi32>): the
// kernel takes no parameter for it — its kv_len parameter is max_blocks · P, so the table's row
// length is kv_len >> log2(P). That run-time stride indexes the table (row b · (kv_len / 16)) and
// clamps the block index (into [0, kv_len / 16 − 1]) of every lookup, and the looked-up page
// gives the TMA copy's pool row. The launch metadata says max_blocks -1 and kv_len -1.
// RUN: attn-opt %s --attn-normalize --attn-select-schedule --attn-build-kernel --convert-attn-to-nvvm --convert-attnk-to-nvvm | FileCheck %s
// RUN: attn-opt %s --emit=launch | FileCheck %s --check-prefix=META
// The pool's size is known at launch only: the kernel's last parameter, num_slots (num_pages · P),
// clamps every page a scale load uses into [0, num_slots / P), so that no table entry makes
// the kernel read past the scales.
// RUN: attn-opt %s --attn-normalize --attn-select-schedule --attn-build-kernel --convert-attn-to-nvvm --convert-attnk-to-nvvm | FileCheck %s --check-prefix=SCALE

// CHECK-LABEL: llvm.func @paged_dyn_decode(
// CHECK-SAME: %[[KMAP:arg0]]: !llvm.ptr
// CHECK-SAME: %[[KVLEN:arg10]]: i32
// CHECK-SAME: %[[TABLE:arg15]]: !llvm.ptr<1>
// The prologue's first copies: the table's width from kv_len, the entry of (b, block).
// CHECK: %[[SH:.+]] = llvm.mlir.constant(4 : i32) : i32
// CHECK-NEXT: %[[BLOCKS:.+]] = llvm.lshr %[[KVLEN]], %[[SH]] : i32
// CHECK: %[[BLK:.+]] = llvm.udiv %{{.+}}, %{{.+}} : i32
// CHECK: %[[LAST:.+]] = llvm.add %[[BLOCKS]], %{{.+}} : i32
// CHECK-NEXT: %[[IN:.+]] = llvm.icmp "ult" %[[BLK]], %[[BLOCKS]] : i32
// CHECK-NEXT: %[[BLKC:.+]] = llvm.select %[[IN]], %[[BLK]], %[[LAST]] : i1, i32
// CHECK-NEXT: %[[ROW:.+]] = llvm.mul %{{.+}}, %[[BLOCKS]] : i32
// CHECK-NEXT: %[[ENTRY:.+]] = llvm.add %[[ROW]], %[[BLKC]] : i32
// CHECK-NEXT: %[[E64:.+]] = llvm.sext %[[ENTRY]] : i32 to i64
// CHECK: %[[OFF:.+]] = llvm.mul %[[E64]], %{{.+}} : i64
// CHECK-NEXT: %[[PTR:.+]] = llvm.getelementptr %[[TABLE]][%[[OFF]]]
// CHECK-NEXT: %[[PAGE:.+]] = llvm.load %[[PTR]] invariant {alignment = 4 : i64} : !llvm.ptr<1> -> i32
// CHECK: %[[PROW:.+]] = llvm.mul %[[PAGE]], %{{.+}} : i32
// CHECK: %[[POOLROW:.+]] = llvm.add %[[PROW]], %{{.+}} : i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.+}}, %[[KMAP]], %{{.+}}, box[%{{.+}}, %{{.+}}, %[[POOLROW]], %{{.+}}]
// The producer's lookups (attnk.page_lookup … blocks(kv_len >> 4)) read the same stride.
// CHECK: %[[PBLOCKS:.+]] = arith.shrui %[[KVLEN]], %{{.+}} : i32
// CHECK: %[[PROWB:.+]] = llvm.mul %{{.+}}, %[[PBLOCKS]] : i32
// CHECK-NEXT: %[[PENTRY:.+]] = llvm.add %[[PROWB]], %{{.+}} : i32
// CHECK-NEXT: %[[PE64:.+]] = llvm.sext %[[PENTRY]] : i32 to i64
// CHECK: %[[POFF:.+]] = llvm.mul %[[PE64]], %{{.+}} : i64
// CHECK-NEXT: llvm.getelementptr %[[TABLE]][%[[POFF]]]

// SCALE-LABEL: llvm.func @paged_dyn_decode(
// SCALE-SAME: %[[KSCALE:arg3]]: !llvm.ptr<1>
// SCALE-SAME: %[[SLOTS:arg16]]: i32)
// SCALE: %[[POOL:.+]] = llvm.lshr %[[SLOTS]], %{{.+}} : i32
// SCALE-NEXT: %[[IN:.+]] = llvm.icmp "ult" %[[PG:[^,]+]], %[[POOL]] : i32
// SCALE: %[[LAST:.+]] = llvm.add %[[POOL]], %{{.+}} : i32
// SCALE-NEXT: %[[PGC:.+]] = llvm.select %[[IN]], %[[PG]], %[[LAST]] : i1, i32
// SCALE: %[[PROW:.+]] = llvm.mul %[[PGC]], %{{.+}} : i32
// SCALE: %[[ROW:.+]] = llvm.add %[[PROW]], %{{.+}} : i32
// SCALE: llvm.getelementptr %[[KSCALE]][%{{.+}}]
// META: "params": [
// META: "block_table",
// META-NEXT: "num_slots"
// META-NEXT: ],
// META: "paged": {
// META-NEXT: "max_blocks": -1,
// META-NEXT: "num_pages": -1,
// META-NEXT: "page_size": 16
// META: "problem": {
// META: "kv_len": -1,

func.func @paged_dyn(%q: memref<?x1x16x128xbf16>, %k: memref<?x16x2x128xi8>, %v: memref<?x16x2x128xi8>,
                     %ks: memref<?x16x2xf32>, %vs: memref<?x16x2xf32>, %lens: memref<?xi32>,
                     %pages: memref<?x?xi32>, %o: memref<?x1x16x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<?x1x16x128xbf16>, memref<?x16x2x128xi8>, memref<?x16x2x128xi8>)
      k_scale(%ks : memref<?x16x2xf32>) v_scale(%vs : memref<?x16x2xf32>)
      seq_lens(%lens : memref<?xi32>) block_table(%pages : memref<?x?xi32>) outs(%o : memref<?x1x16x128xbf16>)
      {page_size = 16, k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>,
       target = #attn.target<sm_90a>}
  return
}
