// RUN: attn-opt %s -split-input-file -verify-diagnostics
// One case per diagnostic of attn.mla_decode.

func.func @dims(%q: memref<1x1x64x576xbf16>, %kv: memref<1x100x576xbf16>, %o: memref<1x1x64x512xbf16>) {
  // expected-error @+1 {{head_dim_v must be positive and rope_dim non-negative}}
  attn.mla_decode ins(%q, %kv : memref<1x1x64x576xbf16>, memref<1x100x576xbf16>) outs(%o : memref<1x1x64x512xbf16>) {head_dim_v = 0 : i64, rope_dim = 64 : i64}
  return
}

// -----

func.func @dk(%q: memref<1x1x64x512xbf16>, %kv: memref<1x100x576xbf16>, %o: memref<1x1x64x512xbf16>) {
  // expected-error @+1 {{q head_dim (512) must equal head_dim_v + rope_dim = 512 + 64 = 576}}
  attn.mla_decode ins(%q, %kv : memref<1x1x64x512xbf16>, memref<1x100x576xbf16>) outs(%o : memref<1x1x64x512xbf16>) {head_dim_v = 512 : i64, rope_dim = 64 : i64}
  return
}

// -----

func.func @types(%q: memref<1x1x64x576xf32>, %kv: memref<1x100x576xbf16>, %o: memref<1x1x64x512xbf16>) {
  // expected-error @+1 {{q and out must be bf16}}
  attn.mla_decode ins(%q, %kv : memref<1x1x64x576xf32>, memref<1x100x576xbf16>) outs(%o : memref<1x1x64x512xbf16>) {head_dim_v = 512 : i64, rope_dim = 64 : i64}
  return
}

// -----

func.func @out(%q: memref<1x1x64x576xbf16>, %kv: memref<1x100x576xbf16>, %o: memref<1x1x64x576xbf16>) {
  // expected-error @+1 {{'out' must be [B, Sq, Hq, head_dim_v] = [1, 1, 64, 512], got [1, 1, 64, 576]}}
  attn.mla_decode ins(%q, %kv : memref<1x1x64x576xbf16>, memref<1x100x576xbf16>) outs(%o : memref<1x1x64x576xbf16>) {head_dim_v = 512 : i64, rope_dim = 64 : i64}
  return
}

// -----

func.func @scheme(%q: memref<1x1x64x576xbf16>, %kv: memref<1x100x656xi8>, %o: memref<1x1x64x512xbf16>) {
  // expected-error @+1 {{kv_quant must be #attn.quant<f8E4M3FN, per_block<1xC>> with C dividing head_dim_v and f32 scales}}
  attn.mla_decode ins(%q, %kv : memref<1x1x64x576xbf16>, memref<1x100x656xi8>) outs(%o : memref<1x1x64x512xbf16>) {head_dim_v = 512 : i64, rope_dim = 64 : i64, kv_quant = #attn.quant<i8, per_token>}
  return
}

// -----

func.func @bytes_type(%q: memref<1x1x64x576xbf16>, %kv: memref<1x100x656xf8E4M3FN>, %o: memref<1x1x64x512xbf16>) {
  // expected-error @+1 {{a quantized MLA cache holds raw bytes (i8), got 'f8E4M3FN'}}
  attn.mla_decode ins(%q, %kv : memref<1x1x64x576xbf16>, memref<1x100x656xf8E4M3FN>) outs(%o : memref<1x1x64x512xbf16>) {head_dim_v = 512 : i64, rope_dim = 64 : i64, kv_quant = #attn.quant<f8E4M3FN, per_block<1x128>>}
  return
}

// -----

func.func @bytes(%q: memref<1x1x64x576xbf16>, %kv: memref<1x100x640xi8>, %o: memref<1x1x64x512xbf16>) {
  // expected-error @+1 {{'kv' must be [B, T, Dv + 4·Dv/C + 2·rope_dim bytes] = [1, 100, 656], got [1, 100, 640]}}
  attn.mla_decode ins(%q, %kv : memref<1x1x64x576xbf16>, memref<1x100x640xi8>) outs(%o : memref<1x1x64x512xbf16>) {head_dim_v = 512 : i64, rope_dim = 64 : i64, kv_quant = #attn.quant<f8E4M3FN, per_block<1x128>>}
  return
}

// -----

func.func @dense_type(%q: memref<1x1x64x576xbf16>, %kv: memref<1x100x576xf16>, %o: memref<1x1x64x512xbf16>) {
  // expected-error @+1 {{an unquantized MLA cache must be bf16, got 'f16'}}
  attn.mla_decode ins(%q, %kv : memref<1x1x64x576xbf16>, memref<1x100x576xf16>) outs(%o : memref<1x1x64x512xbf16>) {head_dim_v = 512 : i64, rope_dim = 64 : i64}
  return
}

// -----

func.func @dense_shape(%q: memref<1x1x64x576xbf16>, %kv: memref<1x100x512xbf16>, %o: memref<1x1x64x512xbf16>) {
  // expected-error @+1 {{'kv' must be [B, T, Dk] = [1, 100, 576], got [1, 100, 512]}}
  attn.mla_decode ins(%q, %kv : memref<1x1x64x576xbf16>, memref<1x100x512xbf16>) outs(%o : memref<1x1x64x512xbf16>) {head_dim_v = 512 : i64, rope_dim = 64 : i64}
  return
}

// -----

func.func @indices(%q: memref<1x2x64x576xbf16>, %kv: memref<1x100x576xbf16>, %i: memref<1x1x32xi32>, %o: memref<1x2x64x512xbf16>) {
  // expected-error @+1 {{'indices' must be [B, Sq, topk] = [1, 2, 32], got [1, 1, 32]}}
  attn.mla_decode ins(%q, %kv : memref<1x2x64x576xbf16>, memref<1x100x576xbf16>) indices(%i : memref<1x1x32xi32>) outs(%o : memref<1x2x64x512xbf16>) {head_dim_v = 512 : i64, rope_dim = 64 : i64}
  return
}

// -----

func.func @lens(%q: memref<1x1x64x576xbf16>, %kv: memref<1x100x576xbf16>, %l: memref<2xi32>, %o: memref<1x1x64x512xbf16>) {
  // expected-error @+1 {{'seq_lens' must be one length per batch [B] = [1], got [2]}}
  attn.mla_decode ins(%q, %kv : memref<1x1x64x576xbf16>, memref<1x100x576xbf16>) seq_lens(%l : memref<2xi32>) outs(%o : memref<1x1x64x512xbf16>) {head_dim_v = 512 : i64, rope_dim = 64 : i64}
  return
}

// -----

func.func @target(%q: memref<1x1x64x576xbf16>, %kv: memref<1x100x576xbf16>, %o: memref<1x1x64x512xbf16>) {
  // expected-error @+1 {{MLA decode needs target sm_90a, got avx512}}
  attn.mla_decode ins(%q, %kv : memref<1x1x64x576xbf16>, memref<1x100x576xbf16>) outs(%o : memref<1x1x64x512xbf16>) {head_dim_v = 512 : i64, rope_dim = 64 : i64, target = #attn.target<avx512>}
  return
}

// -----

func.func @heads(%q: memref<1x1x96x576xbf16>, %kv: memref<1x100x576xbf16>, %o: memref<1x1x96x512xbf16>) {
  // expected-error @+1 {{MLA decode on sm_90a packs 64 query heads per CTA; h_q = 96 is not a multiple of 64}}
  attn.mla_decode ins(%q, %kv : memref<1x1x96x576xbf16>, memref<1x100x576xbf16>) outs(%o : memref<1x1x96x512xbf16>) {head_dim_v = 512 : i64, rope_dim = 64 : i64, target = #attn.target<sm_90a>}
  return
}

// -----

func.func @crossover_dense(%q: memref<1x1x128x576xbf16>, %kv: memref<1x100x576xbf16>, %o: memref<1x1x128x512xbf16>) {
  // expected-error @+1 {{crossover shares dequantized K/V between 2 CTAs; it needs an FP8 cache (kv_quant)}}
  attn.mla_decode ins(%q, %kv : memref<1x1x128x576xbf16>, memref<1x100x576xbf16>) outs(%o : memref<1x1x128x512xbf16>) {head_dim_v = 512 : i64, rope_dim = 64 : i64, schedule = #attn.schedule<crossover = true>}
  return
}

// -----

func.func @crossover_heads(%q: memref<1x1x64x576xbf16>, %kv: memref<1x100x656xi8>, %o: memref<1x1x64x512xbf16>) {
  // expected-error @+1 {{crossover needs h_q a multiple of 128 (two CTAs of 64 heads), got 64}}
  attn.mla_decode ins(%q, %kv : memref<1x1x64x576xbf16>, memref<1x100x656xi8>) outs(%o : memref<1x1x64x512xbf16>) {head_dim_v = 512 : i64, rope_dim = 64 : i64, kv_quant = #attn.quant<f8E4M3FN, per_block<1x128>>, schedule = #attn.schedule<crossover = true>}
  return
}

// -----

func.func @scale(%q: memref<1x1x64x576xbf16>, %kv: memref<1x100x576xbf16>, %o: memref<1x1x64x512xbf16>) {
  // expected-error @+1 {{softmax_scale must be positive and finite, got 0}}
  attn.mla_decode ins(%q, %kv : memref<1x1x64x576xbf16>, memref<1x100x576xbf16>) outs(%o : memref<1x1x64x512xbf16>) {head_dim_v = 512 : i64, rope_dim = 64 : i64, softmax_scale = 0.0 : f32}
  return
}

// -----

// Huge extents are refused before any arithmetic on them (found by the UBSan fuzz run).
func.func @huge(%q: memref<1x1x64x576xbf16>, %kv: memref<1x100x576xbf16>, %o: memref<1x1x64x512xbf16>) {
  // expected-error @+1 {{head_dim_v and rope_dim must be at most 65536}}
  attn.mla_decode ins(%q, %kv : memref<1x1x64x576xbf16>, memref<1x100x576xbf16>) outs(%o : memref<1x1x64x512xbf16>) {head_dim_v = 9223372036854775807 : i64, rope_dim = 64 : i64}
  return
}

// -----

func.func @window(%q: memref<1x1x64x576xbf16>, %kv: memref<1x100x576xbf16>, %o: memref<1x1x64x512xbf16>) {
  // expected-error @+1 {{window is not implemented for MLA decode}}
  attn.mla_decode ins(%q, %kv : memref<1x1x64x576xbf16>, memref<1x100x576xbf16>) outs(%o : memref<1x1x64x512xbf16>) {head_dim_v = 512 : i64, rope_dim = 64 : i64, window = array<i64: 127, 0>}
  return
}
