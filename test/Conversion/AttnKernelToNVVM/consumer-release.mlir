// A stage of the K/V ring is released only after the GEMMs that read it. A bf16 cache: the
// consumer's WGMMAs read K and V where TMA put them, in the stage of key tile j (j mod 2 of the
// ring `attnk.ring.alloc at A stride S barriers F, E` the kernel level allocates). Followed as
// values through the lowered tile loop: the stage index feeds the K tile's address (A + s · S),
// the V tile's (K's + 128 rows), the full barrier the loop waits on (F + 8 s) and the empty
// barrier it arrives on (E + 8 s); Q·Kᵀ takes the descriptor of K's address and P·V that of V's;
// the arrive comes after the last P·V WGMMA's commit and its wait for zero groups in flight, with
// no other arrive in between, and ends the loop body.
// RUN: attn-opt %s --attn-select-schedule --attn-build-kernel --mlir-print-ir-after=attn-build-kernel --convert-attn-to-nvvm --convert-attnk-to-nvvm 2>&1 | FileCheck %s

// CHECK-LABEL: IR Dump After AttnBuildKernel
// CHECK: attnk.ring.alloc at [[AT:[0-9]+]] stride [[STRIDE:[0-9]+]] barriers [[FULL:[0-9]+]], [[EMPTY:[0-9]+]] : !attnk.ring<256x128xbf16, stages = 2,
// CHECK: #attn.role<consumer, warpgroups = 2,

// CHECK-LABEL: llvm.func @mqa_bf16_decode(
// CHECK: nvvm.setmaxregister  increase
// CHECK: scf.for %[[J:[^ ]+]] = {{.+}} iter_args(
// CHECK: %[[S:.+]] = llvm.urem %[[J]], %{{.+}} : i32
// CHECK-NEXT: %[[CS:.+]] = llvm.mlir.constant([[STRIDE]] : i32) : i32
// CHECK-NEXT: %[[SOFF:.+]] = llvm.mul %[[S]], %[[CS]] : i32
// CHECK-NEXT: %[[CAT:.+]] = llvm.mlir.constant([[AT]] : i32) : i32
// CHECK-NEXT: %[[KOFF:.+]] = llvm.add %[[SOFF]], %[[CAT]] : i32
// CHECK-NEXT: %[[KPTR:.+]] = llvm.getelementptr %[[BASE:[0-9]+]][%[[KOFF]]] : (!llvm.ptr<3>, i32)
// CHECK-NEXT: %[[KADDR:.+]] = llvm.ptrtoint %[[KPTR]] : !llvm.ptr<3> to i32
// CHECK-NEXT: %[[CV:.+]] = llvm.mlir.constant(32768 : i32) : i32
// CHECK-NEXT: %[[VOFF:.+]] = llvm.add %[[KOFF]], %[[CV]] : i32
// CHECK-NEXT: %[[VPTR:.+]] = llvm.getelementptr %[[BASE]][%[[VOFF]]]
// CHECK-NEXT: %[[VADDR:.+]] = llvm.ptrtoint %[[VPTR]] : !llvm.ptr<3> to i32
// CHECK-NEXT: %[[C8:.+]] = llvm.mlir.constant(8 : i32) : i32
// CHECK-NEXT: %[[F8:.+]] = llvm.mul %[[S]], %[[C8]] : i32
// CHECK-NEXT: %[[CF:.+]] = llvm.mlir.constant([[FULL]] : i32) : i32
// CHECK-NEXT: %[[FOFF:.+]] = llvm.add %[[F8]], %[[CF]] : i32
// CHECK-NEXT: %[[FPTR:.+]] = llvm.getelementptr %[[BASE]][%[[FOFF]]]
// CHECK: nvvm.mbarrier.try_wait.parity %[[FPTR]], %{{.+}}, %{{.+}} : !llvm.ptr<3>, i32, i32
// CHECK-NEXT: nvvm.wgmma.fence.aligned
// CHECK: %[[KSH:.+]] = llvm.lshr %[[KADDR]], %{{.+}} : i32
// CHECK-NEXT: %{{.+}} = llvm.mlir.constant(16383 : i32) : i32
// CHECK-NEXT: %[[KAND:.+]] = llvm.and %[[KSH]], %{{.+}} : i32
// CHECK-NEXT: %{{.+}} = llvm.mlir.constant({{[0-9]+}} : i32) : i32
// CHECK-NEXT: %[[KLO:.+]] = llvm.or %[[KAND]], %{{.+}} : i32
// CHECK: %[[KZ:.+]] = llvm.zext %[[KLO]] : i32 to i64
// CHECK-NEXT: %{{.+}} = llvm.mlir.constant({{[0-9]+}} : i64) : i64
// CHECK-NEXT: %[[KDESC:.+]] = llvm.or %[[KZ]], %{{.+}} : i64
// CHECK: nvvm.wgmma.mma_async %{{.+}}, %[[KDESC]], %{{.+}}, <m = 64, n = 128, k = 16>
// CHECK-NOT: nvvm.mbarrier.arrive
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-NEXT: %{{.+}} = llvm.mlir.constant(4 : i32) : i32
// CHECK-NEXT: %[[VSH:.+]] = llvm.lshr %[[VADDR]], %{{.+}} : i32
// CHECK-NEXT: %{{.+}} = llvm.mlir.constant(16383 : i32) : i32
// CHECK-NEXT: %[[VAND:.+]] = llvm.and %[[VSH]], %{{.+}} : i32
// CHECK-NEXT: %{{.+}} = llvm.mlir.constant({{[0-9]+}} : i32) : i32
// CHECK-NEXT: %[[VLO:.+]] = llvm.or %[[VAND]], %{{.+}} : i32
// CHECK-NEXT: %[[VZ:.+]] = llvm.zext %[[VLO]] : i32 to i64
// CHECK-NEXT: %{{.+}} = llvm.mlir.constant({{[0-9]+}} : i64) : i64
// CHECK-NEXT: %[[VDESC:.+]] = llvm.or %[[VZ]], %{{.+}} : i64
// CHECK-NEXT: llvm.inline_asm has_side_effects "{{.*}}wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16{{.*}}" {{.*}}, %[[VDESC]],
// CHECK-NOT: nvvm.mbarrier.arrive
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NEXT: %[[C8E:.+]] = llvm.mlir.constant(8 : i32) : i32
// CHECK-NEXT: %[[E8:.+]] = llvm.mul %[[S]], %[[C8E]] : i32
// CHECK-NEXT: %[[CE:.+]] = llvm.mlir.constant([[EMPTY]] : i32) : i32
// CHECK-NEXT: %[[EOFF:.+]] = llvm.add %[[E8]], %[[CE]] : i32
// CHECK-NEXT: %[[EPTR:.+]] = llvm.getelementptr %[[BASE]][%[[EOFF]]]
// CHECK-NEXT: nvvm.mbarrier.arrive %[[EPTR]] : !llvm.ptr<3>
// CHECK-NEXT: scf.yield

func.func @mqa_bf16(%q: memref<4x1x8x128xbf16>, %k: memref<4x1024x1x128xbf16>,
                    %v: memref<4x1024x1x128xbf16>, %o: memref<4x1x8x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<4x1x8x128xbf16>, memref<4x1024x1x128xbf16>, memref<4x1024x1x128xbf16>)
      outs(%o : memref<4x1x8x128xbf16>) {target = #attn.target<sm_90a>}
  return
}
