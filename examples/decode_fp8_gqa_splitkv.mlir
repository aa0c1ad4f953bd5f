// GQA 8:1 decode over an fp8 (e4m3) KV cache with per-token scales, ALiBi, and a hand-written
// schedule: split the 32768-token context 8 ways and pack all 8 query heads of a KV head.
func.func @decode_fp8_gqa(%q: memref<2x1x32x128xbf16>,
                          %k: memref<2x32768x4x128xf8E4M3FN>, %v: memref<2x32768x4x128xf8E4M3FN>,
                          %ks: memref<2x32768xf32>, %vs: memref<2x32768xf32>,
                          %slopes: memref<32xf32>, %o: memref<2x1x32x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<2x1x32x128xbf16>, memref<2x32768x4x128xf8E4M3FN>, memref<2x32768x4x128xf8E4M3FN>)
      k_scale(%ks : memref<2x32768xf32>) v_scale(%vs : memref<2x32768xf32>)
      alibi(%slopes : memref<32xf32>)
      outs(%o : memref<2x1x32x128xbf16>)
      {k_quant = #attn.quant<f8E4M3FN, per_token>, v_quant = #attn.quant<f8E4M3FN, per_token>,
       target = #attn.target<sm_90a>,
       schedule = #attn.schedule<pack_q_heads = 8, split_kv = 8>}
  return
}
