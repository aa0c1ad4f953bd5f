// RUN: attn-opt %s --convert-attn-to-cpu=isa=avx2 -verify-diagnostics
// isa= overrides the ops' targets; an override that cannot run an op is refused on the op.

func.func @wide_on_avx2(%l: memref<1x64x32xui8>, %p: memref<1x2xf32>, %c: memref<1x4x64x32xui8>, %n: index, %s: memref<1x128xf32>) {
  // expected-error @+1 {{not supported yet: 32-centroid lookups on avx2}}
  attn.pq.scores ins(%l, %p, %c : memref<1x64x32xui8>, memref<1x2xf32>, memref<1x4x64x32xui8>) length(%n) outs(%s : memref<1x128xf32>) {pq = #attn.pq<dsub = 2, centroids = 32>, target = #attn.target<avx512_vbmi>}
  return
}
