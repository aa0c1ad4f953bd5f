// RUN: attn-opt %s -split-input-file -verify-diagnostics
// One case per diagnostic of attn.attention (AttentionOps.cpp) and of the scale / zero-point
// checks it shares with the other quantized ops (VerifyUtils.cpp).

func.func @batch(%q: memref<2x1x8x64xbf16>, %k: memref<3x100x2x64xbf16>, %v: memref<3x100x2x64xbf16>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{q, k, v and out must have the same batch size, got [2, 3, 3, 2]}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<3x100x2x64xbf16>, memref<3x100x2x64xbf16>) outs(%o : memref<2x1x8x64xbf16>)
  return
}

// -----

func.func @kv_mismatch(%q: memref<2x1x8x64xbf16>, %k: memref<2x100x2x64xbf16>, %v: memref<2x99x2x64xbf16>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{k and v must have the same tokens and heads, got k [2, 100, 2, 64] and v [2, 99, 2, 64]}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x100x2x64xbf16>, memref<2x99x2x64xbf16>) outs(%o : memref<2x1x8x64xbf16>)
  return
}

// -----

func.func @gqa(%q: memref<2x1x6x64xbf16>, %k: memref<2x100x4x64xbf16>, %v: memref<2x100x4x64xbf16>, %o: memref<2x1x6x64xbf16>) {
  // expected-error @+1 {{the 6 query heads are not a multiple of the 4 KV heads (GQA needs Hq = n · Hkv)}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x6x64xbf16>, memref<2x100x4x64xbf16>, memref<2x100x4x64xbf16>) outs(%o : memref<2x1x6x64xbf16>)
  return
}

// -----

func.func @head_dim(%q: memref<2x1x8x64xbf16>, %k: memref<2x100x2x128xbf16>, %v: memref<2x100x2x64xbf16>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{q and k must have the same head_dim, got 64 and 128}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x100x2x128xbf16>, memref<2x100x2x64xbf16>) outs(%o : memref<2x1x8x64xbf16>)
  return
}

// -----

func.func @out_shape(%q: memref<2x1x8x64xbf16>, %k: memref<2x100x2x64xbf16>, %v: memref<2x100x2x64xbf16>, %o: memref<2x1x2x64xbf16>) {
  // expected-error @+1 {{'out' must be [B, Sq, Hq, Dv] = [2, 1, 8, 64], got [2, 1, 2, 64]}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x100x2x64xbf16>, memref<2x100x2x64xbf16>) outs(%o : memref<2x1x2x64xbf16>)
  return
}

// -----

func.func @out_type(%q: memref<2x1x8x64xbf16>, %k: memref<2x100x2x64xbf16>, %v: memref<2x100x2x64xbf16>, %o: memref<2x1x8x64xi8>) {
  // expected-error @+1 {{'out' must hold bf16, f16 or f32, got 'i8'}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x100x2x64xbf16>, memref<2x100x2x64xbf16>) outs(%o : memref<2x1x8x64xi8>)
  return
}

// -----

func.func @rank(%q: memref<2x8x64xbf16>, %k: memref<2x100x2x64xbf16>, %v: memref<2x100x2x64xbf16>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{operand #0 must be 4D memref of any type values}}
  attn.attention decode ins(%q, %k, %v : memref<2x8x64xbf16>, memref<2x100x2x64xbf16>, memref<2x100x2x64xbf16>) outs(%o : memref<2x1x8x64xbf16>)
  return
}

// -----

func.func @no_scheme(%q: memref<2x1x8x64xbf16>, %k: memref<2x100x2x64xi8>, %v: memref<2x100x2x64xi8>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{'k' has quantized element type 'i8' but no 'k_quant' scheme}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x100x2x64xi8>, memref<2x100x2x64xi8>) outs(%o : memref<2x1x8x64xbf16>)
  return
}

// -----

func.func @scheme_type(%q: memref<2x1x8x64xbf16>, %k: memref<2x100x2x64xi8>, %v: memref<2x100x2x64xbf16>, %ks: memref<2x100xf32>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{'k' element type 'i8' does not match 'k_quant' element type 'f8E4M3FN'}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x100x2x64xi8>, memref<2x100x2x64xbf16>) k_scale(%ks : memref<2x100xf32>) outs(%o : memref<2x1x8x64xbf16>) {k_quant = #attn.quant<f8E4M3FN, per_token>}
  return
}

// -----

func.func @scale_without_scheme(%q: memref<2x1x8x64xbf16>, %k: memref<2x100x2x64xbf16>, %v: memref<2x100x2x64xbf16>, %ks: memref<2x100xf32>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{'k_scale' given without a 'k_quant' scheme}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x100x2x64xbf16>, memref<2x100x2x64xbf16>) k_scale(%ks : memref<2x100xf32>) outs(%o : memref<2x1x8x64xbf16>)
  return
}

// -----

func.func @zero_without_scheme(%q: memref<2x1x8x64xbf16>, %k: memref<2x100x2x64xbf16>, %v: memref<2x100x2x64xbf16>, %kz: memref<2x100xi32>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{'k_zero' given without a 'k_quant' scheme}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x100x2x64xbf16>, memref<2x100x2x64xbf16>) k_zero(%kz : memref<2x100xi32>) outs(%o : memref<2x1x8x64xbf16>)
  return
}

// -----

func.func @missing_scale(%q: memref<2x1x8x64xbf16>, %k: memref<2x100x2x64xi8>, %v: memref<2x100x2x64xi8>, %vs: memref<2x100x2xf32>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{'k_quant' needs a 'k_scale' operand}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x100x2x64xi8>, memref<2x100x2x64xi8>) v_scale(%vs : memref<2x100x2xf32>) outs(%o : memref<2x1x8x64xbf16>) {k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>}
  return
}

// -----

func.func @scale_shape(%q: memref<2x1x8x64xbf16>, %k: memref<2x100x2x64xi8>, %v: memref<2x100x2x64xi8>, %ks: memref<2x100xf32>, %vs: memref<2x100x2xf32>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{'k_scale' must have the per_token_head scale shape [2, 100, 2] of 'k', got [2, 100]}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x100x2x64xi8>, memref<2x100x2x64xi8>) k_scale(%ks : memref<2x100xf32>) v_scale(%vs : memref<2x100x2xf32>) outs(%o : memref<2x1x8x64xbf16>) {k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>}
  return
}

// -----

func.func @scale_type(%q: memref<2x1x8x64xbf16>, %k: memref<2x100x2x64xi8>, %v: memref<2x100x2x64xi8>, %ks: memref<2x100x2xf16>, %vs: memref<2x100x2xf32>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{'k_scale' element type 'f16' does not match the scheme's scale type 'f32'}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x100x2x64xi8>, memref<2x100x2x64xi8>) k_scale(%ks : memref<2x100x2xf16>) v_scale(%vs : memref<2x100x2xf32>) outs(%o : memref<2x1x8x64xbf16>) {k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>}
  return
}

// -----

func.func @group(%q: memref<2x1x8x64xbf16>, %k: memref<2x100x2x64xi8>, %v: memref<2x100x2x64xi8>, %ks: memref<2x100x2x2xf32>, %vs: memref<2x100x2xf32>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{per_group<48> does not divide the head_dim 64 of 'k'}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x100x2x64xi8>, memref<2x100x2x64xi8>) k_scale(%ks : memref<2x100x2x2xf32>) v_scale(%vs : memref<2x100x2xf32>) outs(%o : memref<2x1x8x64xbf16>) {k_quant = #attn.quant<i8, per_group<48>>, v_quant = #attn.quant<i8, per_token_head>}
  return
}

// -----

func.func @block_cols(%q: memref<2x1x8x64xbf16>, %k: memref<2x100x2x64xi8>, %v: memref<2x100x2x64xi8>, %ks: memref<2x1x2x1xf32>, %vs: memref<2x100x2xf32>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{per_block columns (48) do not divide the head_dim 64 of 'k'}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x100x2x64xi8>, memref<2x100x2x64xi8>) k_scale(%ks : memref<2x1x2x1xf32>) v_scale(%vs : memref<2x100x2xf32>) outs(%o : memref<2x1x8x64xbf16>) {k_quant = #attn.quant<i8, per_block<128x48>>, v_quant = #attn.quant<i8, per_token_head>}
  return
}

// -----

func.func @zero_symmetric(%q: memref<2x1x8x64xbf16>, %k: memref<2x100x2x64xi8>, %v: memref<2x100x2x64xi8>, %ks: memref<2x100x2xf32>, %kz: memref<2x100x2xi32>, %vs: memref<2x100x2xf32>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{'k_zero' given but 'k_quant' is symmetric}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x100x2x64xi8>, memref<2x100x2x64xi8>) k_scale(%ks : memref<2x100x2xf32>) v_scale(%vs : memref<2x100x2xf32>) k_zero(%kz : memref<2x100x2xi32>) outs(%o : memref<2x1x8x64xbf16>) {k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>}
  return
}

// -----

func.func @zero_missing(%q: memref<2x1x8x64xbf16>, %k: memref<2x100x2x64xui8>, %v: memref<2x100x2x64xi8>, %ks: memref<2x100x2xf32>, %vs: memref<2x100x2xf32>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{asymmetric 'k_quant' needs a 'k_zero' operand}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x100x2x64xui8>, memref<2x100x2x64xi8>) k_scale(%ks : memref<2x100x2xf32>) v_scale(%vs : memref<2x100x2xf32>) outs(%o : memref<2x1x8x64xbf16>) {k_quant = #attn.quant<ui8, per_token_head, asymmetric>, v_quant = #attn.quant<i8, per_token_head>}
  return
}

// -----

func.func @zero_shape(%q: memref<2x1x8x64xbf16>, %k: memref<2x100x2x64xui8>, %v: memref<2x100x2x64xi8>, %ks: memref<2x100x2xf32>, %kz: memref<2x100xi32>, %vs: memref<2x100x2xf32>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{'k_zero' shape [2, 100] must equal the 'k_scale' shape [2, 100, 2]}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x100x2x64xui8>, memref<2x100x2x64xi8>) k_scale(%ks : memref<2x100x2xf32>) v_scale(%vs : memref<2x100x2xf32>) k_zero(%kz : memref<2x100xi32>) outs(%o : memref<2x1x8x64xbf16>) {k_quant = #attn.quant<ui8, per_token_head, asymmetric>, v_quant = #attn.quant<i8, per_token_head>}
  return
}

// -----

func.func @zero_type(%q: memref<2x1x8x64xbf16>, %k: memref<2x100x2x64xui8>, %v: memref<2x100x2x64xi8>, %ks: memref<2x100x2xf32>, %kz: memref<2x100x2xf16>, %vs: memref<2x100x2xf32>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{'k_zero' element type must be i32, f32 or 'ui8', got 'f16'}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x100x2x64xui8>, memref<2x100x2x64xi8>) k_scale(%ks : memref<2x100x2xf32>) v_scale(%vs : memref<2x100x2xf32>) k_zero(%kz : memref<2x100x2xf16>) outs(%o : memref<2x1x8x64xbf16>) {k_quant = #attn.quant<ui8, per_token_head, asymmetric>, v_quant = #attn.quant<i8, per_token_head>}
  return
}

// -----

func.func @no_mode(%q: memref<2x1x8x64xbf16>, %k: memref<2x100x2x64xi8>, %v: memref<2x100x2x64xbf16>, %ks: memref<2x100x2xf32>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{cannot infer a mode from k 'i8' and v 'bf16'; write one with mode = #attn.mode<...>}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x100x2x64xi8>, memref<2x100x2x64xbf16>) k_scale(%ks : memref<2x100x2xf32>) outs(%o : memref<2x1x8x64xbf16>) {k_quant = #attn.quant<i8, per_token_head>}
  return
}

// -----

func.func @mode_bf16(%q: memref<2x1x8x64xbf16>, %k: memref<2x100x2x64xi8>, %v: memref<2x100x2x64xi8>, %ks: memref<2x100x2xf32>, %vs: memref<2x100x2xf32>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{mode bf16 needs unquantized (bf16, f16 or f32) q, k and v, got q 'bf16', k 'i8', v 'i8'}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x100x2x64xi8>, memref<2x100x2x64xi8>) k_scale(%ks : memref<2x100x2xf32>) v_scale(%vs : memref<2x100x2xf32>) outs(%o : memref<2x1x8x64xbf16>) {k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>, mode = #attn.mode<bf16>}
  return
}

// -----

func.func @mode_half(%q: memref<2x1x8x64xbf16>, %k: memref<2x100x2x64xbf16>, %v: memref<2x100x2x64xbf16>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{mode half_int8 needs integer k and v, and integer or bf16 q, got q 'bf16', k 'bf16', v 'bf16'}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x100x2x64xbf16>, memref<2x100x2x64xbf16>) outs(%o : memref<2x1x8x64xbf16>) {mode = #attn.mode<half_int8>}
  return
}

// -----

func.func @mode_full(%q: memref<2x1x8x64xbf16>, %k: memref<2x100x2x64xi8>, %v: memref<2x100x2x64xi8>, %ks: memref<2x100x2xf32>, %vs: memref<2x100x2xf32>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{mode full_int8 needs integer q, k and v, got q 'bf16', k 'i8', v 'i8'}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x100x2x64xi8>, memref<2x100x2x64xi8>) k_scale(%ks : memref<2x100x2xf32>) v_scale(%vs : memref<2x100x2xf32>) outs(%o : memref<2x1x8x64xbf16>) {k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>, mode = #attn.mode<full_int8>}
  return
}

// -----

func.func @mode_fp8(%q: memref<2x1x8x64xbf16>, %k: memref<2x100x2x64xi8>, %v: memref<2x100x2x64xi8>, %ks: memref<2x100x2xf32>, %vs: memref<2x100x2xf32>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{mode fp8 needs f8E4M3FN or f8E5M2 k and v, and fp8 or bf16 q, got q 'bf16', k 'i8', v 'i8'}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x100x2x64xi8>, memref<2x100x2x64xi8>) k_scale(%ks : memref<2x100x2xf32>) v_scale(%vs : memref<2x100x2xf32>) outs(%o : memref<2x1x8x64xbf16>) {k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>, mode = #attn.mode<fp8>}
  return
}

// -----

func.func @target_mode(%q: memref<2x1x8x64xbf16>, %k: memref<2x100x2x64xi8>, %v: memref<2x100x2x64xi8>, %ks: memref<2x100x2xf32>, %vs: memref<2x100x2xf32>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{target avx2 does not support mode half_int8: int8 and fp8 tensor-core modes need sm_90a}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x100x2x64xi8>, memref<2x100x2x64xi8>) k_scale(%ks : memref<2x100x2xf32>) v_scale(%vs : memref<2x100x2xf32>) outs(%o : memref<2x1x8x64xbf16>) {k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>, target = #attn.target<avx2>}
  return
}

// -----

func.func @head_dim_step(%q: memref<2x1x8x80xbf16>, %k: memref<2x100x2x80xi8>, %v: memref<2x100x2x80xi8>, %ks: memref<2x100x2xf32>, %vs: memref<2x100x2xf32>, %o: memref<2x1x8x80xbf16>) {
  // expected-error @+1 {{head_dim 80 is not a multiple of the WGMMA K step (32) of mode half_int8}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x80xbf16>, memref<2x100x2x80xi8>, memref<2x100x2x80xi8>) k_scale(%ks : memref<2x100x2xf32>) v_scale(%vs : memref<2x100x2xf32>) outs(%o : memref<2x1x8x80xbf16>) {k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>, target = #attn.target<sm_90a>}
  return
}

// -----

func.func @head_dim_max(%q: memref<2x1x8x512xbf16>, %k: memref<2x100x2x512xbf16>, %v: memref<2x100x2x512xbf16>, %o: memref<2x1x8x512xbf16>) {
  // expected-error @+1 {{head_dim 512 exceeds 256, the largest a Hopper attention tile holds}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x512xbf16>, memref<2x100x2x512xbf16>, memref<2x100x2x512xbf16>) outs(%o : memref<2x1x8x512xbf16>) {target = #attn.target<sm_90a>}
  return
}

// -----

func.func @head_dim_dynamic(%q: memref<2x1x8x?xbf16>, %k: memref<2x100x2x?xbf16>, %v: memref<2x100x2x?xbf16>, %o: memref<2x1x8x?xbf16>) {
  // expected-error @+1 {{head_dim must be static on sm_90a: it sizes the tiles}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x?xbf16>, memref<2x100x2x?xbf16>, memref<2x100x2x?xbf16>) outs(%o : memref<2x1x8x?xbf16>) {target = #attn.target<sm_90a>}
  return
}

// -----

func.func @decode_len(%q: memref<2x128x8x64xbf16>, %k: memref<2x1000x2x64xbf16>, %v: memref<2x1000x2x64xbf16>, %o: memref<2x128x8x64xbf16>) {
  // expected-error @+1 {{decode takes at most 64 query tokens, got 128; use prefill}}
  attn.attention decode ins(%q, %k, %v : memref<2x128x8x64xbf16>, memref<2x1000x2x64xbf16>, memref<2x1000x2x64xbf16>) outs(%o : memref<2x128x8x64xbf16>)
  return
}

// -----

func.func @causal(%q: memref<2x8x8x64xbf16>, %k: memref<2x4x2x64xbf16>, %v: memref<2x4x2x64xbf16>, %o: memref<2x8x8x64xbf16>) {
  // expected-error @+1 {{causal attention needs q_len ≤ kv_len, got 8 > 4}}
  attn.attention prefill ins(%q, %k, %v : memref<2x8x8x64xbf16>, memref<2x4x2x64xbf16>, memref<2x4x2x64xbf16>) outs(%o : memref<2x8x8x64xbf16>) {causal}
  return
}

// -----

func.func @seq_lens(%q: memref<2x1x8x64xbf16>, %k: memref<2x100x2x64xbf16>, %v: memref<2x100x2x64xbf16>, %l: memref<3xi32>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{'seq_lens' must be one length per batch [B] = [2], got [3]}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x100x2x64xbf16>, memref<2x100x2x64xbf16>) seq_lens(%l : memref<3xi32>) outs(%o : memref<2x1x8x64xbf16>)
  return
}

// -----

func.func @alibi(%q: memref<2x1x8x64xbf16>, %k: memref<2x100x2x64xbf16>, %v: memref<2x100x2x64xbf16>, %s: memref<2xf32>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{'alibi' must be one slope per query head [Hq] = [8], got [2]}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x100x2x64xbf16>, memref<2x100x2x64xbf16>) alibi(%s : memref<2xf32>) outs(%o : memref<2x1x8x64xbf16>)
  return
}

// -----

func.func @softmax_scale(%q: memref<2x1x8x64xbf16>, %k: memref<2x100x2x64xbf16>, %v: memref<2x100x2x64xbf16>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{softmax_scale must be positive and finite, got -1}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x100x2x64xbf16>, memref<2x100x2x64xbf16>) outs(%o : memref<2x1x8x64xbf16>) {softmax_scale = -1.0 : f32}
  return
}

// -----

func.func @roles_cpu(%q: memref<2x1x8x64xbf16>, %k: memref<2x100x2x64xbf16>, %v: memref<2x100x2x64xbf16>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{warp roles, clusters and crossover need a GPU target, got neon}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x100x2x64xbf16>, memref<2x100x2x64xbf16>) outs(%o : memref<2x1x8x64xbf16>) {target = #attn.target<neon>, schedule = #attn.schedule<cluster = [2]>}
  return
}

// -----

func.func @crossover(%q: memref<2x1x8x64xbf16>, %k: memref<2x100x2x64xbf16>, %v: memref<2x100x2x64xbf16>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{crossover applies to attn.mla_decode only}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x100x2x64xbf16>, memref<2x100x2x64xbf16>) outs(%o : memref<2x1x8x64xbf16>) {schedule = #attn.schedule<crossover = true>}
  return
}

// -----

func.func @pack_divides(%q: memref<2x1x8x64xbf16>, %k: memref<2x100x2x64xbf16>, %v: memref<2x100x2x64xbf16>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{pack_q_heads = 3 does not divide the 4 query heads per KV head}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x100x2x64xbf16>, memref<2x100x2x64xbf16>) outs(%o : memref<2x1x8x64xbf16>) {schedule = #attn.schedule<pack_q_heads = 3>}
  return
}

// -----

func.func @pack_rows(%q: memref<2x32x16x64xbf16>, %k: memref<2x100x1x64xbf16>, %v: memref<2x100x1x64xbf16>, %o: memref<2x32x16x64xbf16>) {
  // expected-error @+1 {{pack_q_heads × q_len = 4 × 32 rows exceed tile_m = 64}}
  attn.attention decode ins(%q, %k, %v : memref<2x32x16x64xbf16>, memref<2x100x1x64xbf16>, memref<2x100x1x64xbf16>) outs(%o : memref<2x32x16x64xbf16>) {schedule = #attn.schedule<pack_q_heads = 4>}
  return
}

// -----

func.func @hadamard_dv(%q: memref<2x1x8x64xi8>, %k: memref<2x100x2x64xi8>, %v: memref<2x100x2x32xi8>, %qs: memref<2x1x8xf32>, %ks: memref<2x100x2xf32>, %vs: memref<2x100x2xf32>, %o: memref<2x1x8x32xbf16>) {
  // expected-error @+1 {{hadamard needs head_dim == head_dim_v, a static power of two ≥ 8, got [64, 32]}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xi8>, memref<2x100x2x64xi8>, memref<2x100x2x32xi8>)
      q_scale(%qs : memref<2x1x8xf32>) k_scale(%ks : memref<2x100x2xf32>) v_scale(%vs : memref<2x100x2xf32>)
      outs(%o : memref<2x1x8x32xbf16>)
      {hadamard, q_quant = #attn.quant<i8, per_token_head>, k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>}
  return
}

// -----

func.func @hadamard_pow2(%q: memref<2x1x8x96xbf16>, %k: memref<2x100x2x96xi8>, %v: memref<2x100x2x96xi8>, %ks: memref<2x100x2xf32>, %vs: memref<2x100x2xf32>, %o: memref<2x1x8x96xbf16>) {
  // expected-error @+1 {{hadamard needs head_dim == head_dim_v, a static power of two ≥ 8, got [96, 96]}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x96xbf16>, memref<2x100x2x96xi8>, memref<2x100x2x96xi8>)
      k_scale(%ks : memref<2x100x2xf32>) v_scale(%vs : memref<2x100x2xf32>)
      outs(%o : memref<2x1x8x96xbf16>)
      {hadamard, k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>}
  return
}

// -----

func.func @hadamard_bf16(%q: memref<2x1x8x64xbf16>, %k: memref<2x100x2x64xbf16>, %v: memref<2x100x2x64xbf16>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{hadamard rotates only what is quantized: k and v are 'bf16', which need no rotation}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x100x2x64xbf16>, memref<2x100x2x64xbf16>) outs(%o : memref<2x1x8x64xbf16>) {hadamard}
  return
}

// -----

func.func @sinks_shape(%q: memref<2x1x8x64xbf16>, %k: memref<2x100x2x64xbf16>, %v: memref<2x100x2x64xbf16>, %s: memref<2xf32>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{'sinks' must be one logit per query head [Hq] = [8], got [2]}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x100x2x64xbf16>, memref<2x100x2x64xbf16>) sinks(%s : memref<2xf32>) outs(%o : memref<2x1x8x64xbf16>)
  return
}

// -----

func.func @lse_shape(%q: memref<2x1x8x64xbf16>, %k: memref<2x100x2x64xbf16>, %v: memref<2x100x2x64xbf16>, %o: memref<2x1x8x64xbf16>, %l: memref<2x8x1xf32>) {
  // expected-error @+1 {{'lse' must be one value per row [B, Sq, Hq] = [2, 1, 8], got [2, 8, 1]}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x100x2x64xbf16>, memref<2x100x2x64xbf16>) outs(%o : memref<2x1x8x64xbf16>) lse(%l : memref<2x8x1xf32>)
  return
}

// -----

func.func @sinks_prefill(%q: memref<2x16x8x64xbf16>, %k: memref<2x100x2x64xbf16>, %v: memref<2x100x2x64xbf16>, %s: memref<8xf32>, %o: memref<2x16x8x64xbf16>) {
  // expected-error @+1 {{sinks is implemented for decode only, not prefill}}
  attn.attention prefill ins(%q, %k, %v : memref<2x16x8x64xbf16>, memref<2x100x2x64xbf16>, memref<2x100x2x64xbf16>) sinks(%s : memref<8xf32>) outs(%o : memref<2x16x8x64xbf16>)
  return
}

// -----

func.func @lse_cpu(%q: memref<2x1x8x64xbf16>, %k: memref<2x100x2x64xbf16>, %v: memref<2x100x2x64xbf16>, %o: memref<2x1x8x64xbf16>, %l: memref<2x1x8xf32>) {
  // expected-error @+1 {{lse needs target sm_90a (the CPU lowering does not implement it), got avx2}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x100x2x64xbf16>, memref<2x100x2x64xbf16>) outs(%o : memref<2x1x8x64xbf16>) lse(%l : memref<2x1x8xf32>) {target = #attn.target<avx2>}
  return
}

// -----

func.func @sinks_hadamard(%q: memref<2x1x8x64xbf16>, %k: memref<2x100x2x64xi8>, %v: memref<2x100x2x64xi8>, %ks: memref<2x100x2xf32>, %vs: memref<2x100x2xf32>, %s: memref<8xf32>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{sinks is not implemented with hadamard}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x100x2x64xi8>, memref<2x100x2x64xi8>) k_scale(%ks : memref<2x100x2xf32>) v_scale(%vs : memref<2x100x2xf32>) sinks(%s : memref<8xf32>) outs(%o : memref<2x1x8x64xbf16>) {hadamard, k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>}
  return
}

// -----

func.func @softcap_value(%q: memref<2x1x8x64xbf16>, %k: memref<2x100x2x64xbf16>, %v: memref<2x100x2x64xbf16>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{softcap must be positive and finite, got 0}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x100x2x64xbf16>, memref<2x100x2x64xbf16>) outs(%o : memref<2x1x8x64xbf16>) {softcap = 0.0 : f32}
  return
}

// -----

func.func @softcap_prefill(%q: memref<2x16x8x64xbf16>, %k: memref<2x100x2x64xbf16>, %v: memref<2x100x2x64xbf16>, %o: memref<2x16x8x64xbf16>) {
  // expected-error @+1 {{softcap is implemented for decode only, not prefill}}
  attn.attention prefill ins(%q, %k, %v : memref<2x16x8x64xbf16>, memref<2x100x2x64xbf16>, memref<2x100x2x64xbf16>) outs(%o : memref<2x16x8x64xbf16>) {softcap = 30.0 : f32}
  return
}

// -----

func.func @softcap_cpu(%q: memref<2x1x8x64xbf16>, %k: memref<2x100x2x64xbf16>, %v: memref<2x100x2x64xbf16>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{softcap needs target sm_90a (the CPU lowering does not implement it), got avx2}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x100x2x64xbf16>, memref<2x100x2x64xbf16>) outs(%o : memref<2x1x8x64xbf16>) {softcap = 30.0 : f32, target = #attn.target<avx2>}
  return
}

// -----

func.func @window_size(%q: memref<2x1x8x64xbf16>, %k: memref<2x100x2x64xbf16>, %v: memref<2x100x2x64xbf16>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{window must be array<i64: left, right>, got 3 values}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x100x2x64xbf16>, memref<2x100x2x64xbf16>) outs(%o : memref<2x1x8x64xbf16>) {window = array<i64: 1, 2, 3>}
  return
}

// -----

func.func @window_bounds(%q: memref<2x1x8x64xbf16>, %k: memref<2x100x2x64xbf16>, %v: memref<2x100x2x64xbf16>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{window bounds must be ≥ −1 (−1: unbounded), got [-2, 0]}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x100x2x64xbf16>, memref<2x100x2x64xbf16>) outs(%o : memref<2x1x8x64xbf16>) {window = array<i64: -2, 0>}
  return
}

// -----

func.func @window_cpu(%q: memref<2x1x8x64xbf16>, %k: memref<2x100x2x64xbf16>, %v: memref<2x100x2x64xbf16>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{window needs target sm_90a (the CPU lowering does not implement it), got avx2}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x100x2x64xbf16>, memref<2x100x2x64xbf16>) outs(%o : memref<2x1x8x64xbf16>) {window = array<i64: 63, 0>, target = #attn.target<avx2>}
  return
}

// -----

func.func @ragged_decode(%q: memref<1x9x8x64xbf16>, %k: memref<2x100x2x64xbf16>, %v: memref<2x100x2x64xbf16>, %cu: memref<3xi32>, %o: memref<1x9x8x64xbf16>) {
  // expected-error @+1 {{cu_seqlens_q (a ragged batch) is implemented for prefill only; decode takes the same number of new tokens per sequence}}
  attn.attention decode ins(%q, %k, %v : memref<1x9x8x64xbf16>, memref<2x100x2x64xbf16>, memref<2x100x2x64xbf16>) cu_seqlens_q(%cu : memref<3xi32>) outs(%o : memref<1x9x8x64xbf16>)
  return
}

// -----

func.func @ragged_cpu(%q: memref<1x9x8x64xbf16>, %k: memref<2x100x2x64xbf16>, %v: memref<2x100x2x64xbf16>, %cu: memref<3xi32>, %o: memref<1x9x8x64xbf16>) {
  // expected-error @+1 {{cu_seqlens_q needs target sm_90a (the CPU lowering does not implement it), got avx2}}
  attn.attention prefill ins(%q, %k, %v : memref<1x9x8x64xbf16>, memref<2x100x2x64xbf16>, memref<2x100x2x64xbf16>) cu_seqlens_q(%cu : memref<3xi32>) outs(%o : memref<1x9x8x64xbf16>) {target = #attn.target<avx2>}
  return
}

// -----

func.func @ragged_batched_q(%q: memref<2x9x8x64xbf16>, %k: memref<2x100x2x64xbf16>, %v: memref<2x100x2x64xbf16>, %cu: memref<3xi32>, %o: memref<2x9x8x64xbf16>) {
  // expected-error @+1 {{with cu_seqlens_q, 'q' packs every sequence's rows along Sq: its dim 0 must be 1, got [2, 9, 8, 64]}}
  attn.attention prefill ins(%q, %k, %v : memref<2x9x8x64xbf16>, memref<2x100x2x64xbf16>, memref<2x100x2x64xbf16>) cu_seqlens_q(%cu : memref<3xi32>) outs(%o : memref<2x9x8x64xbf16>)
  return
}

// -----

func.func @ragged_offsets(%q: memref<1x9x8x64xbf16>, %k: memref<2x100x2x64xbf16>, %v: memref<2x100x2x64xbf16>, %cu: memref<2xi32>, %o: memref<1x9x8x64xbf16>) {
  // expected-error @+1 {{'cu_seqlens_q' must be the first packed row of each sequence and the end [B + 1] = [3], got [2]}}
  attn.attention prefill ins(%q, %k, %v : memref<1x9x8x64xbf16>, memref<2x100x2x64xbf16>, memref<2x100x2x64xbf16>) cu_seqlens_q(%cu : memref<2xi32>) outs(%o : memref<1x9x8x64xbf16>)
  return
}
