// Quantization kernel: append one new token per sequence into an int8 K cache with asymmetric
// per-group scales (groups of 64 channels, f16 scales, i8 zero points) at each sequence's
// position. Compiles to one sm_90a kernel, `append_k_quantize`.
func.func @append_k(%new: memref<8x1x8x128xbf16>, %pos: memref<8xi32>,
                    %cache: memref<8x4096x8x128xi8>, %scales: memref<8x4096x8x2xf16>,
                    %zeros: memref<8x4096x8x2xi8>) {
  attn.quantize.append ins(%new : memref<8x1x8x128xbf16>) positions(%pos : memref<8xi32>)
      outs(%cache, %scales : memref<8x4096x8x128xi8>, memref<8x4096x8x2xf16>)
      zeros(%zeros : memref<8x4096x8x2xi8>)
      {quant = #attn.quant<i8, per_group<64>, asymmetric, scale = f16>, target = #attn.target<sm_90a>}
  return
}
