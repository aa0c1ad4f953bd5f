// DeepSeek FlashMLA FP8 sparse decode: 128 query heads, s_q = 2, top-2048 token indices per query
// token, the 656-byte token format (512 e4m3 + 4 f32 tile scales + 64 bf16 RoPE values), and the
// 2-CTA crossover through distributed shared memory.
func.func @mla_decode(%q: memref<128x2x128x576xbf16>, %kv: memref<128x65536x656xi8>,
                      %idx: memref<128x2x2048xi32>, %o: memref<128x2x128x512xbf16>) {
  attn.mla_decode ins(%q, %kv : memref<128x2x128x576xbf16>, memref<128x65536x656xi8>)
      indices(%idx : memref<128x2x2048xi32>)
      outs(%o : memref<128x2x128x512xbf16>)
      {head_dim_v = 512 : i64, rope_dim = 64 : i64,
       kv_quant = #attn.quant<f8E4M3FN, per_block<1x128>>, target = #attn.target<sm_90a>,
       schedule = #attn.schedule<crossover = true, cluster = [2, 1, 1]>}
  return
}
