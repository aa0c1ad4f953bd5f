// MQA decode over an int8 KV cache with per-(token, head) scales: the Table-3 setting of the
// Character.AI seed (3 new query tokens, 16 query heads, 1 KV head, head_dim 128), batch 16 at a
// context of 8192 tokens. Query heads share the KV head, so they pack into one 64-row WGMMA tile.
func.func @decode_int8_mqa(%q: memref<16x3x16x128xbf16>,
                           %k: memref<16x8192x1x128xi8>, %v: memref<16x8192x1x128xi8>,
                           %ks: memref<16x8192x1xf32>, %vs: memref<16x8192x1xf32>,
                           %lens: memref<16xi32>, %o: memref<16x3x16x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<16x3x16x128xbf16>, memref<16x8192x1x128xi8>, memref<16x8192x1x128xi8>)
      k_scale(%ks : memref<16x8192x1xf32>) v_scale(%vs : memref<16x8192x1xf32>)
      seq_lens(%lens : memref<16xi32>)
      outs(%o : memref<16x3x16x128xbf16>)
      {causal, k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>,
       mode = #attn.mode<half_int8>, target = #attn.target<sm_90a>}
  return
}
