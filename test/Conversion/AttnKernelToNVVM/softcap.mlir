// Logit soft-capping of a bf16 decode spec: attn-build-kernel puts `softcap` in the forward ops'
// plan; lowered, each base-2 logit s (the S accumulator times softmax_scale · log2 e) becomes
// C · tanh.approx(s / C) with C = 30 · log2 e before the mask, and the capped, masked logit is
// what the row maximum and P's exponent read.
// RUN: attn-opt %s --attn-select-schedule --attn-build-kernel --mlir-print-ir-after=attn-build-kernel --convert-attn-to-nvvm --convert-attnk-to-nvvm 2>&1 | FileCheck %s

// CHECK-LABEL: IR Dump After AttnBuildKernel
// CHECK: #plan = {{{.*}}softcap = 3.000000e+01 : f64{{.*}}}

// CHECK-LABEL: llvm.func @sc_decode(
// CHECK: %[[S:.+]] = llvm.fmul %{{.+}}, %{{.+}} : f32
// CHECK-NEXT: %[[C:.+]] = llvm.mlir.constant(43.2808{{[0-9]*}} : f32) : f32
// CHECK-NEXT: %[[IC:.+]] = llvm.mlir.constant(0.0231049{{[0-9]*}} : f32) : f32
// CHECK-NEXT: %[[X:.+]] = llvm.fmul %[[S]], %[[IC]] : f32
// CHECK-NEXT: %[[T:.+]] = llvm.inline_asm "tanh.approx.f32 $0, $1;", "=f,f" %[[X]] : (f32) -> f32
// CHECK-NEXT: %[[CAP:.+]] = llvm.fmul %[[C]], %[[T]] : f32
// CHECK: %[[M:.+]] = llvm.select %{{.+}}, %[[CAP]], %{{.+}} : i1, f32
// CHECK: llvm.intr.maxnum(%[[M]], %{{.+}}) : (f32, f32) -> f32
// CHECK: llvm.fsub %[[M]], %{{.+}} : f32
func.func @sc(%q: memref<?x1x8x128xbf16>, %k: memref<?x?x2x128xbf16>, %v: memref<?x?x2x128xbf16>, %lens: memref<?xi32>, %o: memref<?x1x8x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<?x1x8x128xbf16>, memref<?x?x2x128xbf16>, memref<?x?x2x128xbf16>)
      seq_lens(%lens : memref<?xi32>) outs(%o : memref<?x1x8x128xbf16>)
      {softcap = 30.0 : f32, target = #attn.target<sm_90a>}
  return
}
