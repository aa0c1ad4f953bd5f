// A paged int8 decode spec (pages of 16 tokens, 16 per sequence, a pool of 48 pages).
func.func @paged(%q: memref<?x1x8x128xbf16>, %k: memref<48x16x2x128xi8>, %v: memref<48x16x2x128xi8>,
                 %ks: memref<48x16x2xf32>, %vs: memref<48x16x2xf32>, %lens: memref<?xi32>,
                 %pages: memref<?x16xi32>, %o: memref<?x1x8x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<?x1x8x128xbf16>, memref<48x16x2x128xi8>, memref<48x16x2x128xi8>)
      k_scale(%ks : memref<48x16x2xf32>) v_scale(%vs : memref<48x16x2xf32>)
      seq_lens(%lens : memref<?xi32>) block_table(%pages : memref<?x16xi32>) outs(%o : memref<?x1x8x128xbf16>)
      {page_size = 16, k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>,
       target = #attn.target<sm_90a>}
  return
}
