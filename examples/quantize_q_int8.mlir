// Dynamic quantization of a prefill's queries to int8, one scale per (token, head) — the input
// of the int8-query (half_int8) kernels. Compiles to one sm_90a kernel, `quantize_q_quantize`.
func.func @quantize_q(%x: memref<1x512x32x128xbf16>, %xq: memref<1x512x32x128xi8>,
                      %s: memref<1x512x32xf32>) {
  attn.quantize.dynamic ins(%x : memref<1x512x32x128xbf16>)
      outs(%xq, %s : memref<1x512x32x128xi8>, memref<1x512x32xf32>)
      {quant = #attn.quant<i8, per_token_head>, target = #attn.target<sm_90a>}
  return
}
