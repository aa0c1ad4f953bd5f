// NoMAD-Attention decode on a CPU with AVX2: keys are product-quantized (dsub = 1: 128
// sub-quantizers of 16 centroids each for head_dim 128), one new key is encoded into
// the block-major, transposed 4-bit code cache, and 4 query heads (GQA 4:1) attend by in-register
// table lookups.
func.func @nomad_step(%key: memref<1x2x128xf32>, %codebooks: memref<2x128x16x1xf32>,
                      %codes: memref<2x512x128x16xui8>, %pos: index,
                      %q: memref<8x128xf32>, %values: memref<16384x2x128xf16>, %len: index,
                      %o: memref<8x128xf32>) {
  attn.pq.encode ins(%key, %codebooks : memref<1x2x128xf32>, memref<2x128x16x1xf32>)
      offset(%pos) outs(%codes : memref<2x512x128x16xui8>)
      {pq = #attn.pq<dsub = 1, centroids = 16>, target = #attn.target<avx2>}
  attn.pq.attention ins(%q, %codebooks, %codes, %values : memref<8x128xf32>, memref<2x128x16x1xf32>,
      memref<2x512x128x16xui8>, memref<16384x2x128xf16>)
      length(%len) outs(%o : memref<8x128xf32>)
      {pq = #attn.pq<dsub = 1, centroids = 16>, target = #attn.target<avx2>}
  return
}

// The same scores in steps: LUT build, then lookups accumulated in u16.
func.func @nomad_scores(%q: memref<8x128xf32>, %codebooks: memref<2x64x16x2xf32>,
                        %codes: memref<2x512x64x16xui8>, %len: index,
                        %lut: memref<8x64x16xui8>, %params: memref<8x2xf32>, %scores: memref<8x16384xf32>) {
  attn.pq.lut ins(%q, %codebooks : memref<8x128xf32>, memref<2x64x16x2xf32>)
      outs(%lut, %params : memref<8x64x16xui8>, memref<8x2xf32>)
      {pq = #attn.pq<dsub = 2, centroids = 16>, target = #attn.target<avx512>}
  attn.pq.scores ins(%lut, %params, %codes : memref<8x64x16xui8>, memref<8x2xf32>, memref<2x512x64x16xui8>)
      length(%len) outs(%scores : memref<8x16384xf32>)
      {pq = #attn.pq<dsub = 2, centroids = 16>, target = #attn.target<avx512>}
  return
}
