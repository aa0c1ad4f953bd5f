// Table-3 decode of the Character.AI seed: q_len 3, 16 query heads packed over 1 KV head,
// head_dim 128, f8E4M3FN K/V cache with per_token scales; batch and context length at launch.
// Built by scripts/gpu-decode-build.sh; run by scripts/gpu-decode-run.sh.
func.func @table3_fp8(%q: memref<?x3x16x128xbf16>, %k: memref<?x?x1x128xf8E4M3FN>, %v: memref<?x?x1x128xf8E4M3FN>, %ks: memref<?x?xf32>, %vs: memref<?x?xf32>, %o: memref<?x3x16x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<?x3x16x128xbf16>, memref<?x?x1x128xf8E4M3FN>, memref<?x?x1x128xf8E4M3FN>)
      k_scale(%ks : memref<?x?xf32>) v_scale(%vs : memref<?x?xf32>)
      outs(%o : memref<?x3x16x128xbf16>)
      {k_quant = #attn.quant<f8E4M3FN, per_token>, v_quant = #attn.quant<f8E4M3FN, per_token>, target = #attn.target<sm_90a>}
  return
}
