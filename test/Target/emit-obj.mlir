// RUN: attn-opt %s --emit=obj -split-input-file -verify-diagnostics -o /dev/null
// --emit=obj: CPU targets only; ops without a CPU lowering are refused on the op
// (the NoMAD ops that do compile are tested in test/Conversion/AttnToCPU/emit-cpu.mlir).

func.func @mixed_arch(%q: memref<4x128xf32>, %cb: memref<1x128x16x1xf32>, %l: memref<4x128x16xui8>, %pp: memref<4x2xf32>) {
  attn.pq.lut ins(%q, %cb : memref<4x128xf32>, memref<1x128x16x1xf32>) outs(%l, %pp : memref<4x128x16xui8>, memref<4x2xf32>) {pq = #attn.pq<dsub = 1>, target = #attn.target<neon>}
  // expected-error @+1 {{one function holds one architecture; this op targets avx2, another neon}}
  attn.pq.lut ins(%q, %cb : memref<4x128xf32>, memref<1x128x16x1xf32>) outs(%l, %pp : memref<4x128x16xui8>, memref<4x2xf32>) {pq = #attn.pq<dsub = 1>, target = #attn.target<avx2>}
  return
}

// -----

func.func @append(%x: memref<2x1x4x64xbf16>, %p: memref<2xi32>, %c: memref<2x100x4x64xi8>, %s: memref<2x100x4xf32>) {
  // expected-error @+1 {{--emit=obj needs a CPU target, but this op targets sm_90a}}
  attn.quantize.append ins(%x : memref<2x1x4x64xbf16>) positions(%p : memref<2xi32>) outs(%c, %s : memref<2x100x4x64xi8>, memref<2x100x4xf32>) {quant = #attn.quant<i8, per_token_head>, target = #attn.target<sm_90a>}
  return
}

// -----

func.func @quantize(%x: memref<1x8x4x64xbf16>, %y: memref<1x8x4x64xi4>, %s: memref<1x8xf32>) {
  // expected-error @+1 {{not supported yet by convert-attn-to-cpu: 'i4' symmetric codes (i8 or e4m3 symmetric; i8 or ui8 asymmetric)}}
  attn.quantize.dynamic ins(%x : memref<1x8x4x64xbf16>) outs(%y, %s : memref<1x8x4x64xi4>, memref<1x8xf32>) {quant = #attn.quant<i4, per_token>, target = #attn.target<avx512>}
  return
}
