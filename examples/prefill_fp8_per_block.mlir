// FP8 (e4m3) non-causal prefill with per-block scales (one scale per 128 tokens × 128 channels of
// each head), bf16 output. Mode fp8 is inferred from the element types by attn-normalize.
func.func @prefill_fp8(%q: memref<4x4096x16x128xf8E4M3FN>, %k: memref<4x4096x16x128xf8E4M3FN>,
                       %v: memref<4x4096x16x128xf8E4M3FN>,
                       %qs: memref<4x32x16x1xf32>, %ks: memref<4x32x16x1xf32>, %vs: memref<4x32x16x1xf32>,
                       %o: memref<4x4096x16x128xbf16>) {
  attn.attention prefill ins(%q, %k, %v : memref<4x4096x16x128xf8E4M3FN>, memref<4x4096x16x128xf8E4M3FN>, memref<4x4096x16x128xf8E4M3FN>)
      q_scale(%qs : memref<4x32x16x1xf32>) k_scale(%ks : memref<4x32x16x1xf32>) v_scale(%vs : memref<4x32x16x1xf32>)
      outs(%o : memref<4x4096x16x128xbf16>)
      {q_quant = #attn.quant<f8E4M3FN, per_block<128x128>>, k_quant = #attn.quant<f8E4M3FN, per_block<128x128>>,
       v_quant = #attn.quant<f8E4M3FN, per_block<128x128>>, target = #attn.target<sm_90a>}
  return
}
