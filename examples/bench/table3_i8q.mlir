// Table-3 decode with int8 queries: the same int8 K/V cache as table3_i8.mlir, but Q arrives
// quantized (per (token, head) scales), so S = s_q · s_k · (q̂·k̂) runs on s8 WGMMA and the producer
// only copies K (it still dequantizes V for the bf16 P·V) — the seed's half-int8 arithmetic.
func.func @table3_i8q(%q: memref<?x3x16x128xi8>, %qs: memref<?x3x16xf32>, %k: memref<?x?x1x128xi8>, %v: memref<?x?x1x128xi8>, %ks: memref<?x?x1xf32>, %vs: memref<?x?x1xf32>, %o: memref<?x3x16x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<?x3x16x128xi8>, memref<?x?x1x128xi8>, memref<?x?x1x128xi8>)
      q_scale(%qs : memref<?x3x16xf32>) k_scale(%ks : memref<?x?x1xf32>) v_scale(%vs : memref<?x?x1xf32>)
      outs(%o : memref<?x3x16x128xbf16>)
      {q_quant = #attn.quant<i8, per_token_head>, k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>, target = #attn.target<sm_90a>}
  return
}
