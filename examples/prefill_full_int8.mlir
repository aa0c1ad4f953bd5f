// Full-int8 causal prefill, MQA 16:1: both GEMMs on int8 tensor cores. Q (per token and head), K
// (per block of 128 tokens of a head) and V (per token and head) are int8 with f32 scales; P is
// quantized to u8 with one scale per row and 128-key tile. full_int8 is never inferred — integer
// K/V default to half_int8 — so the spec names it.
func.func @prefill_full_int8(%q: memref<?x?x16x128xi8>, %k: memref<?x?x1x128xi8>, %v: memref<?x?x1x128xi8>,
                             %qs: memref<?x?x16xf32>, %ks: memref<?x?x1x1xf32>, %vs: memref<?x?x1xf32>,
                             %lens: memref<?xi32>, %o: memref<?x?x16x128xbf16>) {
  attn.attention prefill ins(%q, %k, %v : memref<?x?x16x128xi8>, memref<?x?x1x128xi8>, memref<?x?x1x128xi8>)
      q_scale(%qs : memref<?x?x16xf32>) k_scale(%ks : memref<?x?x1x1xf32>) v_scale(%vs : memref<?x?x1xf32>)
      seq_lens(%lens : memref<?xi32>)
      outs(%o : memref<?x?x16x128xbf16>)
      {causal, mode = #attn.mode<full_int8>, q_quant = #attn.quant<i8, per_token_head>,
       k_quant = #attn.quant<i8, per_block<128x128>>, v_quant = #attn.quant<i8, per_token_head>,
       target = #attn.target<sm_90a>}
  return
}
