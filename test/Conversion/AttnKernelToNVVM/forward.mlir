// The forward kernel's kernel level lowered to NVVM: the values the kernel level names reach the
// instructions they stand for. Printed after attn-build-kernel (stderr, first) and at the end.
// A role's register budget reaches its setmaxnreg (a producer decreases, a consumer increases)
// under the split on the first role's threads; each ring's offset is added to the dynamic shared
// memory aligned to 1024 bytes (computed once, by the first ring); the tensor maps become
// by-value grid constants; ctas_per_sm becomes .minnctapersm.
// RUN: attn-opt %s --attn-select-schedule --attn-build-kernel --mlir-print-ir-after=attn-build-kernel --convert-attn-to-nvvm --convert-attnk-to-nvvm 2>&1 | FileCheck %s

// CHECK-LABEL: IR Dump After AttnBuildKernel
// CHECK: attnk.kernel @mqa_i8_decode(
// CHECK: attnk.ring.alloc at [[ST:[0-9]+]] stride {{[0-9]+}} barriers {{[0-9]+}}, {{[0-9]+}} : !attnk.ring<256x128xi8
// CHECK-NEXT: attnk.ring.alloc at [[CK:[0-9]+]] stride {{[0-9]+}} barriers {{[0-9]+}}, {{[0-9]+}} : !attnk.ring<128x128xbf16
// CHECK: attnk.warp_specialize attributes {ctas_per_sm = [[CTAS:[0-9]+]] : i64}
// CHECK-NEXT: #attn.role<producer, warpgroups = 2, regs = [[PREGS:[0-9]+]]> {
// CHECK: #attn.role<consumer, warpgroups = 2, regs = [[CREGS:[0-9]+]]> {

// CHECK-LABEL: llvm.func @mqa_i8_decode(%arg0: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant}, %arg1: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant}, %arg2: !llvm.ptr<1> {llvm.noalias}
// CHECK-SAME: nvvm.minctasm = [[CTAS]] : i32
// CHECK: %[[RAW:.+]] = llvm.mlir.addressof @__attn_dynamic_smem : !llvm.ptr<3>
// CHECK: %[[BASE:.+]] = llvm.getelementptr %[[RAW]][%{{.+}}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
// CHECK-NEXT: %[[STOFF:.+]] = llvm.mlir.constant([[ST]] : i32) : i32
// CHECK-NEXT: llvm.getelementptr %[[BASE]][%[[STOFF]]]
// CHECK-NEXT: %[[CKOFF:.+]] = llvm.mlir.constant([[CK]] : i32) : i32
// CHECK-NEXT: llvm.getelementptr %[[BASE]][%[[CKOFF]]]
// CHECK-NOT: llvm.mlir.addressof @__attn_dynamic_smem
// CHECK: nvvm.barrier id
// CHECK-NEXT: %[[TID:.+]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK-NEXT: %[[PT:.+]] = llvm.mlir.constant(256 : i32) : i32
// CHECK-NEXT: %[[FIRST:.+]] = llvm.icmp "ult" %[[TID]], %[[PT]] : i32
// CHECK-NEXT: scf.if %[[FIRST]] {
// CHECK-NEXT: nvvm.setmaxregister  decrease [[PREGS]]
// CHECK: nvvm.setmaxregister  increase [[CREGS]]
// CHECK: nvvm.griddepcontrol launch_dependents
// CHECK: llvm.return
// CHECK: llvm.func @mqa_i8_combine(
func.func @mqa_i8(%q: memref<?x3x16x128xbf16>, %k: memref<?x?x1x128xi8>, %v: memref<?x?x1x128xi8>,
                  %ks: memref<?x?x1xf32>, %vs: memref<?x?x1xf32>, %o: memref<?x3x16x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<?x3x16x128xbf16>, memref<?x?x1x128xi8>, memref<?x?x1x128xi8>)
      k_scale(%ks : memref<?x?x1xf32>) v_scale(%vs : memref<?x?x1xf32>)
      outs(%o : memref<?x3x16x128xbf16>)
      {k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>,
       target = #attn.target<sm_90a>}
  return
}
