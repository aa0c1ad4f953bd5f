// Quantization kernel for MLA: append one new latent token per sequence (512 + 64 values, bf16)
// into FlashMLA's FP8 token cache — 512 e4m3 codes with one f32 scale per 1 x 128 tile, then the
// 64 RoPE values in bf16: 656 bytes per token — at each sequence's position. The cache is what
// attn.mla_decode (examples/mla_decode_fp8_sparse.mlir) reads. Compiles to one sm_90a kernel,
// `append_kv_quantize`.
func.func @append_kv(%new: memref<128x1x576xbf16>, %pos: memref<128xi32>,
                     %cache: memref<128x65536x656xi8>) {
  attn.quantize.mla_append ins(%new : memref<128x1x576xbf16>) positions(%pos : memref<128xi32>)
      outs(%cache : memref<128x65536x656xi8>)
      {head_dim_v = 512 : i64, rope_dim = 64 : i64,
       kv_quant = #attn.quant<f8E4M3FN, per_block<1x128>>, target = #attn.target<sm_90a>}
  return
}
