// The producer's ring protocol, TMA loads and tile conversion lowered to NVVM, with their data
// flow: the TMA-filled stage's full barrier is armed with expect_tx before the copies, which
// complete on the barrier of the same stage and land at that stage's offset (its K and V
// halves); the converting warpgroups wait on the full barrier of the stage they read and on the
// empty barrier of the buffer pair they write, read the stage's chunks, store into the buffer,
// then fence and arrive on the buffer's full barrier, and give the stage back over named
// barrier 1 of the producer's 256 threads.
// RUN: attn-opt %s --convert-attnk-to-nvvm | FileCheck %s

// CHECK-LABEL: llvm.func @producer(
// CHECK-SAME: %[[KMAP:[^:]+]]: !llvm.ptr {{{.*}}}, %[[VMAP:[^:]+]]: !llvm.ptr {{{.*}}}, %[[S:[^:]+]]: i32, %{{[^:]+}}: i32, %[[B:[^:]+]]: i32, %[[ROW:[^:]+]]: i32, %[[H:[^:]+]]: i32, %[[N:[^:]+]]: i32)
// CHECK: %[[BASE:.+]] = llvm.getelementptr %{{.+}}[%{{.+}}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
// CHECK: nvvm.setmaxregister  decrease 56
// ring.acquire expect_tx: the stage at 16384 + s * 32768 first, then full[s] (barriers at 0)
// armed with the stage's 32768 bytes before any copy; the V half 16384 bytes on.
// CHECK: %[[SM:.+]] = llvm.mul %[[S]], %{{.+}} : i32
// CHECK-NEXT: %[[SOFF:.+]] = llvm.mlir.constant(16384 : i32)
// CHECK-NEXT: %[[STAGE:.+]] = llvm.add %[[SM]], %[[SOFF]] : i32
// CHECK: %[[FB:.+]] = llvm.mul %[[S]], %{{.+}} : i32
// CHECK-NEXT: %[[FULL1:.+]] = llvm.getelementptr %[[BASE]][%[[FB]]]
// CHECK-NEXT: %[[TX:.+]] = llvm.mlir.constant(32768 : i32)
// CHECK-NEXT: nvvm.mbarrier.arrive.expect_tx %[[FULL1]], %[[TX]]
// CHECK: %[[VHALF:.+]] = llvm.add %[[STAGE]], %{{.+}} : i32
// The K copy lands in the stage, completing on full[s]; then V into the V half.
// CHECK: %[[KB:.+]] = llvm.mul %[[S]], %{{.+}} : i32
// CHECK-NEXT: %[[KBAR:.+]] = llvm.getelementptr %[[BASE]][%[[KB]]]
// CHECK-NEXT: %[[KDST:.+]] = llvm.getelementptr %[[BASE]][%[[STAGE]]]
// CHECK-NEXT: nvvm.cp.async.bulk.tensor.shared.cluster.global %[[KDST]], %[[KMAP]], %[[KBAR]], box[%{{.+}}, %[[H]], %[[ROW]], %[[B]]]
// CHECK: %[[VB:.+]] = llvm.mul %[[S]], %{{.+}} : i32
// CHECK-NEXT: %[[VBAR:.+]] = llvm.getelementptr %[[BASE]][%[[VB]]]
// CHECK-NEXT: %[[VDST:.+]] = llvm.getelementptr %[[BASE]][%[[VHALF]]]
// CHECK-NEXT: nvvm.cp.async.bulk.tensor.shared.cluster.global %[[VDST]], %[[VMAP]], %[[VBAR]], box[%{{.+}}, %[[H]], %[[ROW]], %[[B]]]
// The commit of a TMA-filled stage adds no arrival.
// CHECK-NOT: nvvm.mbarrier.arrive
// ring.wait: full[s]; ring.acquire of the buffer pair: one wait on empty[s] (at 32); the
// stage's and the buffers' offsets after both waits.
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: %[[EB:.+]] = llvm.mul %[[S]], %{{.+}} : i32
// CHECK-NEXT: %[[EOFF:.+]] = llvm.mlir.constant(32 : i32)
// CHECK-NEXT: %[[EADD:.+]] = llvm.add %[[EB]], %[[EOFF]]
// CHECK-NEXT: %[[EMPTY:.+]] = llvm.getelementptr %[[BASE]][%[[EADD]]]
// CHECK: nvvm.mbarrier.try_wait.parity %[[EMPTY]]
// CHECK-NOT: nvvm.mbarrier.try_wait.parity
// CHECK: %[[RSTAGE:.+]] = llvm.add %{{.+}}, %{{.+}} : i32
// CHECK: %[[KBUF:.+]] = llvm.add %{{.+}}, %{{.+}} : i32
// The conversion reads the waited stage's chunks (tid · 16 on), zeroes rows at or past %n and
// stores into the acquired K buffer.
// CHECK: %[[TID:.+]] = nvvm.read.ptx.sreg.tid.x
// CHECK: %[[T16:.+]] = llvm.mul %[[TID]], %{{.+}} : i32
// CHECK-NEXT: %[[SRC:.+]] = llvm.add %[[RSTAGE]], %[[T16]]
// CHECK: llvm.getelementptr %[[BASE]][%[[SRC]]]
// CHECK: llvm.icmp "slt" %{{.+}}, %[[N]]
// CHECK: %[[DST:.+]] = llvm.add %[[KBUF]], %{{.+}} : i32
// CHECK: %[[DP:.+]] = llvm.getelementptr %[[BASE]][%[[DST]]]
// CHECK-NEXT: llvm.store %{{.+}}, %[[DP]] {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<3>
// ring.commit of the written buffers: fence, then one arrival on full[s] (at 16); the stage goes
// back over named barrier 1 of the 256 producer threads.
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>
// CHECK-NEXT: %[[CB:.+]] = llvm.mlir.constant(8 : i32)
// CHECK-NEXT: %[[CM:.+]] = llvm.mul %[[S]], %[[CB]]
// CHECK-NEXT: %[[COFF:.+]] = llvm.mlir.constant(16 : i32)
// CHECK-NEXT: %[[CADD:.+]] = llvm.add %[[CM]], %[[COFF]]
// CHECK-NEXT: %[[CFULL:.+]] = llvm.getelementptr %[[BASE]][%[[CADD]]]
// CHECK-NEXT: nvvm.mbarrier.arrive %[[CFULL]]
// CHECK-NEXT: %[[ID:.+]] = llvm.mlir.constant(1 : i32)
// CHECK-NEXT: %[[NT:.+]] = llvm.mlir.constant(256 : i32)
// CHECK-NEXT: nvvm.barrier id = %[[ID]] number_of_threads = %[[NT]]
// CHECK-NEXT: } else {
// CHECK-NEXT: nvvm.setmaxregister  increase 200

gpu.module @attn_kernels {
  attnk.kernel @producer(%kmap: !attnk.tensor_map<1x128x1x128xi8, none>, %vmap: !attnk.tensor_map<1x128x1x128xi8, none>,
                         %s: i32, %phase: i32, %b: i32, %row: i32, %h: i32, %n: i32) threads = 512 {
    %c0 = arith.constant 0 : i32
    %ph = arith.trunci %phase : i32 to i1
    %st = attnk.ring.alloc at 16384 stride 32768 barriers 0, 48 : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 256>
    %ck = attnk.ring.alloc at 81920 stride 65536 barriers 16, 32 : !attnk.ring<128x128xbf16, stages = 2, swizzle_128b, producers = 256, consumers = 128>
    %cv = attnk.ring.alloc at 114688 stride 65536 barriers 16, 32 : !attnk.ring<128x128xbf16, stages = 2, swizzle_128b, producers = 256, consumers = 128>
    attnk.warp_specialize
      #attn.role<producer, warpgroups = 2, regs = 56> {
        %f = attnk.ring.acquire %st[%s] expect_tx 32768 : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 256>
        %k = attnk.subtile %f[0] : !attnk.stage<256x128xi8, none> -> !attnk.stage<128x128xi8, none>
        %v = attnk.subtile %f[1] : !attnk.stage<256x128xi8, none> -> !attnk.stage<128x128xi8, none>
        attnk.tma_load %kmap[%b, %row, %h, %c0] #attnk.addressing<contiguous> into %k : !attnk.tensor_map<1x128x1x128xi8, none>, !attnk.stage<128x128xi8, none>
        attnk.tma_load %vmap[%b, %row, %h, %c0] #attnk.addressing<contiguous> into %v : !attnk.tensor_map<1x128x1x128xi8, none>, !attnk.stage<128x128xi8, none>
        attnk.ring.commit %st[%f] : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 256>
        %full = attnk.ring.wait %st[%s] phase %ph : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 256>
        %bk, %bv = attnk.ring.acquire %ck, %cv[%s] phase %ph : !attnk.ring<128x128xbf16, stages = 2, swizzle_128b, producers = 256, consumers = 128>, !attnk.ring<128x128xbf16, stages = 2, swizzle_128b, producers = 256, consumers = 128>
        %kk = attnk.subtile %full[0] : !attnk.stage<256x128xi8, none> -> !attnk.stage<128x128xi8, none>
        attnk.convert_tile %kk into %bk rows(%n) {part = #attnk.part<codes>, quant = [#attn.quant<i8, per_token_head>], role = #attn.role<producer, warpgroups = 2, regs = 56>}
            : !attnk.stage<128x128xi8, none> into !attnk.stage<128x128xbf16, swizzle_128b>
        attnk.ring.commit %ck, %cv[%bk, %bv] : !attnk.ring<128x128xbf16, stages = 2, swizzle_128b, producers = 256, consumers = 128>, !attnk.ring<128x128xbf16, stages = 2, swizzle_128b, producers = 256, consumers = 128>
        attnk.ring.release %st[%full] {named_barrier = 1 : i64} : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 256>
      }
      #attn.role<consumer, warpgroups = 2, regs = 200> {
      }
  }
}
