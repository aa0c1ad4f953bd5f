// Table-3 decode of the Character.AI seed on a bf16 cache (reference point for the quantized
// kernels): q_len 3, 16 query heads packed over 1 KV head, head_dim 128; batch and context
// length at launch. Built by scripts/gpu-decode-build.sh; run by scripts/gpu-decode-run.sh.
func.func @table3_bf16(%q: memref<?x3x16x128xbf16>, %k: memref<?x?x1x128xbf16>, %v: memref<?x?x1x128xbf16>, %o: memref<?x3x16x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<?x3x16x128xbf16>, memref<?x?x1x128xbf16>, memref<?x?x1x128xbf16>)
      outs(%o : memref<?x3x16x128xbf16>) {target = #attn.target<sm_90a>}
  return
}
