// Rotated half-int8 prefill for data with outlier channels (incoherent processing): Q, K and V
// were quantized from rows rotated by the Walsh–Hadamard matrix H (quantize_kv_hadamard.mlir,
// and `attn.quantize.dynamic` with `hadamard` for Q); `hadamard` here makes the kernel rotate O
// back, so `o` is the attention of the unrotated tensors. Per-(token, head) int8 scales then fit
// the bulk of each row rather than its outliers: with ×20 outlier channels the error against
// unquantized attention drops from 5–10% to 1.5–2.7% (docs/benchmarks/gpu-prefill.md).
func.func @prefill_rotated(%q: memref<?x?x16x128xi8>, %k: memref<?x?x1x128xi8>, %v: memref<?x?x1x128xi8>,
                           %qs: memref<?x?x16xf32>, %ks: memref<?x?x1xf32>, %vs: memref<?x?x1xf32>,
                           %o: memref<?x?x16x128xbf16>) {
  attn.attention prefill ins(%q, %k, %v : memref<?x?x16x128xi8>, memref<?x?x1x128xi8>, memref<?x?x1x128xi8>)
      q_scale(%qs : memref<?x?x16xf32>) k_scale(%ks : memref<?x?x1xf32>) v_scale(%vs : memref<?x?x1xf32>)
      outs(%o : memref<?x?x16x128xbf16>)
      {causal, hadamard, q_quant = #attn.quant<i8, per_token_head>, k_quant = #attn.quant<i8, per_token_head>,
       v_quant = #attn.quant<i8, per_token_head>, target = #attn.target<sm_90a>}
  return
}
