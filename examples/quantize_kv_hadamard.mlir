// New K (or V) tokens rotated by the Walsh–Hadamard matrix along head_dim, then quantized to int8
// per (token, head) into the cache — the K/V side of prefill_half_int8_hadamard.mlir. Built for
// an AVX2 CPU (object file and C header); `target = #attn.target<sm_90a>` gives the
// GPU kernel instead.
func.func @append_kv_rotated(%x: memref<?x?x1x128xbf16>, %pos: memref<?xi32>,
                             %cache: memref<?x?x1x128xi8>, %s: memref<?x?x1xf32>) {
  attn.quantize.append ins(%x : memref<?x?x1x128xbf16>) positions(%pos : memref<?xi32>)
      outs(%cache, %s : memref<?x?x1x128xi8>, memref<?x?x1xf32>)
      {quant = #attn.quant<i8, per_token_head>, hadamard, target = #attn.target<avx2>}
  return
}
