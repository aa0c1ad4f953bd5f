// Half-int8 causal prefill (Character.AI's FA3 fork): int8 Q and K on s8 WGMMA with per-token
// scales, int8 V upcast to bf16 by the producer warpgroup, P·V in bf16. Dynamic batch and length.
func.func @prefill_half_int8(%q: memref<?x?x16x128xi8>, %k: memref<?x?x1x128xi8>, %v: memref<?x?x1x128xi8>,
                             %qs: memref<?x?xf32>, %ks: memref<?x?xf32>, %vs: memref<1xf32>,
                             %o: memref<?x?x16x128xbf16>) {
  attn.attention prefill ins(%q, %k, %v : memref<?x?x16x128xi8>, memref<?x?x1x128xi8>, memref<?x?x1x128xi8>)
      q_scale(%qs : memref<?x?xf32>) k_scale(%ks : memref<?x?xf32>) v_scale(%vs : memref<1xf32>)
      outs(%o : memref<?x?x16x128xbf16>)
      {causal, q_quant = #attn.quant<i8, per_token>, k_quant = #attn.quant<i8, per_token>,
       v_quant = #attn.quant<i8, per_tensor>, mode = #attn.mode<half_int8>, target = #attn.target<sm_90a>,
       schedule = #attn.schedule<roles = [producer<warpgroups = 1, regs = 40>, consumer<warpgroups = 2, regs = 232>],
                                 stages = 2, pingpong = true, intra_wg_overlap = true>}
  return
}
