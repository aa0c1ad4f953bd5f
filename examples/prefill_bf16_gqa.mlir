// Causal bf16 prefill of a 2048-token prompt, GQA 8:2, head_dim 128, batch and cache length at
// launch. Compiles to `prefill_bf16_gqa_prefill`: the decode kernel over query chunks, each
// consumer warpgroup with its own 64-row query tile (docs/benchmarks/gpu-prefill.md).
func.func @prefill_bf16_gqa(%q: memref<?x2048x8x128xbf16>, %k: memref<?x?x2x128xbf16>, %v: memref<?x?x2x128xbf16>,
                            %o: memref<?x2048x8x128xbf16>) {
  attn.attention prefill ins(%q, %k, %v : memref<?x2048x8x128xbf16>, memref<?x?x2x128xbf16>, memref<?x?x2x128xbf16>)
      outs(%o : memref<?x2048x8x128xbf16>) {causal, target = #attn.target<sm_90a>}
  return
}
