// Table-3 decode with int8 queries (as table3_i8q.mlir) built for two CTAs per SM
// (`ctas_per_sm = 2`: attn-select-schedule fills one producer and one consumer warpgroup and
// tile_n 64, so two CTAs' registers and shared memory fit one SM). For batches of more than one
// wave of CTAs at one CTA per SM: on the H100, 1024 × 256 ran in 34.3 µs against 39.1 µs with
// the default schedule (docs/benchmarks/gpu-decode.md); slower on the other Table-3 rows. The
// batch is dynamic here, so the field must be written; a spec with a static batch of more than
// one wave gets it from attn-select-schedule (scripts/gpu-decode-build.sh's table3_i8qs_bB).
func.func @table3_i8q_2cta(%q: memref<?x3x16x128xi8>, %qs: memref<?x3x16xf32>, %k: memref<?x?x1x128xi8>, %v: memref<?x?x1x128xi8>, %ks: memref<?x?x1xf32>, %vs: memref<?x?x1xf32>, %o: memref<?x3x16x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<?x3x16x128xi8>, memref<?x?x1x128xi8>, memref<?x?x1x128xi8>)
      q_scale(%qs : memref<?x3x16xf32>) k_scale(%ks : memref<?x?x1xf32>) v_scale(%vs : memref<?x?x1xf32>)
      outs(%o : memref<?x3x16x128xbf16>)
      {q_quant = #attn.quant<i8, per_token_head>, k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>, target = #attn.target<sm_90a>, schedule = #attn.schedule<ctas_per_sm = 2>}
  return
}
