// RUN: attn-opt %s -split-input-file -verify-diagnostics
// One case per diagnostic of attn.quantize.append, attn.quantize.dynamic and
// attn.quantize.mla_append.

func.func @src_type(%x: memref<2x1x4x64xi8>, %p: memref<2xi32>, %c: memref<2x100x4x64xi8>, %s: memref<2x100x4xf32>) {
  // expected-error @+1 {{'src' must hold bf16, f16 or f32, got 'i8'}}
  attn.quantize.append ins(%x : memref<2x1x4x64xi8>) positions(%p : memref<2xi32>) outs(%c, %s : memref<2x100x4x64xi8>, memref<2x100x4xf32>) {quant = #attn.quant<i8, per_token_head>}
  return
}

// -----

func.func @cache_type(%x: memref<2x1x4x64xbf16>, %p: memref<2xi32>, %c: memref<2x100x4x64xui8>, %s: memref<2x100x4xf32>) {
  // expected-error @+1 {{'cache' element type 'ui8' does not match the scheme's 'i8'}}
  attn.quantize.append ins(%x : memref<2x1x4x64xbf16>) positions(%p : memref<2xi32>) outs(%c, %s : memref<2x100x4x64xui8>, memref<2x100x4xf32>) {quant = #attn.quant<i8, per_token_head>}
  return
}

// -----

func.func @agree(%x: memref<2x1x4x64xbf16>, %p: memref<2xi32>, %c: memref<2x100x8x64xi8>, %s: memref<2x100x8xf32>) {
  // expected-error @+1 {{'src' [2, 1, 4, 64] and 'cache' [2, 100, 8, 64] must agree on batch, heads and head_dim}}
  attn.quantize.append ins(%x : memref<2x1x4x64xbf16>) positions(%p : memref<2xi32>) outs(%c, %s : memref<2x100x8x64xi8>, memref<2x100x8xf32>) {quant = #attn.quant<i8, per_token_head>}
  return
}

// -----

func.func @too_many(%x: memref<2x200x4x64xbf16>, %p: memref<2xi32>, %c: memref<2x100x4x64xi8>, %s: memref<2x100x4xf32>) {
  // expected-error @+1 {{cannot append 200 tokens to a cache of 100}}
  attn.quantize.append ins(%x : memref<2x200x4x64xbf16>) positions(%p : memref<2xi32>) outs(%c, %s : memref<2x100x4x64xi8>, memref<2x100x4xf32>) {quant = #attn.quant<i8, per_token_head>}
  return
}

// -----

func.func @positions(%x: memref<2x1x4x64xbf16>, %p: memref<1xi32>, %c: memref<2x100x4x64xi8>, %s: memref<2x100x4xf32>) {
  // expected-error @+1 {{'positions' must be one position per batch [B] = [2], got [1]}}
  attn.quantize.append ins(%x : memref<2x1x4x64xbf16>) positions(%p : memref<1xi32>) outs(%c, %s : memref<2x100x4x64xi8>, memref<2x100x4xf32>) {quant = #attn.quant<i8, per_token_head>}
  return
}

// -----

func.func @block_rows(%x: memref<2x1x4x64xbf16>, %p: memref<2xi32>, %c: memref<2x128x4x64xi8>, %s: memref<2x1x4x1xf32>) {
  // expected-error @+1 {{per_block<128x64> cannot be appended token by token: a block's scale depends on tokens not yet appended}}
  attn.quantize.append ins(%x : memref<2x1x4x64xbf16>) positions(%p : memref<2xi32>) outs(%c, %s : memref<2x128x4x64xi8>, memref<2x1x4x1xf32>) {quant = #attn.quant<i8, per_block<128x64>>}
  return
}

// -----

func.func @append_scales(%x: memref<2x1x4x64xbf16>, %p: memref<2xi32>, %c: memref<2x100x4x64xi8>, %s: memref<2x100xf32>) {
  // expected-error @+1 {{'scales' must have the per_token_head scale shape [2, 100, 4] of 'cache', got [2, 100]}}
  attn.quantize.append ins(%x : memref<2x1x4x64xbf16>) positions(%p : memref<2xi32>) outs(%c, %s : memref<2x100x4x64xi8>, memref<2x100xf32>) {quant = #attn.quant<i8, per_token_head>}
  return
}

// -----

func.func @dyn_src(%x: memref<1x8x4x64xf8E4M3FN>, %y: memref<1x8x4x64xi8>, %s: memref<1x8xf32>) {
  // expected-error @+1 {{'src' must hold bf16, f16 or f32, got 'f8E4M3FN'}}
  attn.quantize.dynamic ins(%x : memref<1x8x4x64xf8E4M3FN>) outs(%y, %s : memref<1x8x4x64xi8>, memref<1x8xf32>) {quant = #attn.quant<i8, per_token>}
  return
}

// -----

func.func @dyn_dst_type(%x: memref<1x8x4x64xbf16>, %y: memref<1x8x4x64xi8>, %s: memref<1x8xf32>) {
  // expected-error @+1 {{'dst' element type 'i8' does not match the scheme's 'f8E4M3FN'}}
  attn.quantize.dynamic ins(%x : memref<1x8x4x64xbf16>) outs(%y, %s : memref<1x8x4x64xi8>, memref<1x8xf32>) {quant = #attn.quant<f8E4M3FN, per_token>}
  return
}

// -----

func.func @dyn_shape(%x: memref<1x8x4x64xbf16>, %y: memref<1x8x4x32xi8>, %s: memref<1x8xf32>) {
  // expected-error @+1 {{'dst' must be the shape of 'src' = [1, 8, 4, 64], got [1, 8, 4, 32]}}
  attn.quantize.dynamic ins(%x : memref<1x8x4x64xbf16>) outs(%y, %s : memref<1x8x4x32xi8>, memref<1x8xf32>) {quant = #attn.quant<i8, per_token>}
  return
}

// -----

func.func @dyn_static(%x: memref<1x8x4x64xbf16>, %y: memref<1x8x4x64xi8>, %s: memref<1xf32>) {
  // expected-error @+1 {{dynamic quantization needs a token-local granularity (per_token, per_token_head, per_group<g> or per_block<1xc>), got per_tensor}}
  attn.quantize.dynamic ins(%x : memref<1x8x4x64xbf16>) outs(%y, %s : memref<1x8x4x64xi8>, memref<1xf32>) {quant = #attn.quant<i8, per_tensor>}
  return
}

// -----

func.func @mla_scheme(%x: memref<2x1x576xbf16>, %p: memref<2xi32>, %c: memref<2x10x656xi8>) {
  // expected-error @+1 {{kv_quant must be #attn.quant<f8E4M3FN, per_block<1xC>> with C dividing head_dim_v and f32 scales}}
  attn.quantize.mla_append ins(%x : memref<2x1x576xbf16>) positions(%p : memref<2xi32>) outs(%c : memref<2x10x656xi8>) {head_dim_v = 512, rope_dim = 64, kv_quant = #attn.quant<i8, per_block<1x128>>}
  return
}

// -----

func.func @mla_src_size(%x: memref<2x1x512xbf16>, %p: memref<2xi32>, %c: memref<2x10x656xi8>) {
  // expected-error @+1 {{'src' token size (512) must equal head_dim_v + rope_dim = 576}}
  attn.quantize.mla_append ins(%x : memref<2x1x512xbf16>) positions(%p : memref<2xi32>) outs(%c : memref<2x10x656xi8>) {head_dim_v = 512, rope_dim = 64, kv_quant = #attn.quant<f8E4M3FN, per_block<1x128>>}
  return
}

// -----

func.func @mla_bytes(%x: memref<2x1x576xbf16>, %p: memref<2xi32>, %c: memref<2x10x576xi8>) {
  // expected-error @+1 {{'cache' must be [B, T, Dv + 4·Dv/C + 2·rope_dim bytes] = [2, 10, 656], got [2, 10, 576]}}
  attn.quantize.mla_append ins(%x : memref<2x1x576xbf16>) positions(%p : memref<2xi32>) outs(%c : memref<2x10x576xi8>) {head_dim_v = 512, rope_dim = 64, kv_quant = #attn.quant<f8E4M3FN, per_block<1x128>>}
  return
}

// -----

func.func @mla_too_many(%x: memref<2x11x576xf32>, %p: memref<2xi32>, %c: memref<2x10x656xi8>) {
  // expected-error @+1 {{cannot append 11 tokens to a cache of 10}}
  attn.quantize.mla_append ins(%x : memref<2x11x576xf32>) positions(%p : memref<2xi32>) outs(%c : memref<2x10x656xi8>) {head_dim_v = 512, rope_dim = 64, kv_quant = #attn.quant<f8E4M3FN, per_block<1x128>>}
  return
}

// -----

func.func @mla_positions(%x: memref<2x1x576xf16>, %p: memref<3xi32>, %c: memref<2x10x656xi8>) {
  // expected-error @+1 {{'positions' must be one position per batch [B] = [2], got [3]}}
  attn.quantize.mla_append ins(%x : memref<2x1x576xf16>) positions(%p : memref<3xi32>) outs(%c : memref<2x10x656xi8>) {head_dim_v = 512, rope_dim = 64, kv_quant = #attn.quant<f8E4M3FN, per_block<1x128>>}
  return
}

// -----

func.func @hadamard_group(%x: memref<2x1x4x64xbf16>, %p: memref<2xi32>, %c: memref<2x100x4x64xi8>, %s: memref<2x100x4x2xf32>) {
  // expected-error @+1 {{hadamard mixes all 64 elements of a head's row: its scale groups must hold whole rows (per_token, per_token_head, per_block<1 x c> with c a multiple of head_dim, or a static granularity)}}
  attn.quantize.append ins(%x : memref<2x1x4x64xbf16>) positions(%p : memref<2xi32>) outs(%c, %s : memref<2x100x4x64xi8>, memref<2x100x4x2xf32>) {quant = #attn.quant<i8, per_group<32>>, hadamard}
  return
}

// -----

func.func @hadamard_dim(%x: memref<2x3x4x96xf32>, %q: memref<2x3x4x96xi8>, %s: memref<2x3x4xf32>) {
  // expected-error @+1 {{hadamard needs a static head_dim that is a power of two ≥ 8, got 96}}
  attn.quantize.dynamic ins(%x : memref<2x3x4x96xf32>) outs(%q, %s : memref<2x3x4x96xi8>, memref<2x3x4xf32>) {quant = #attn.quant<i8, per_token_head>, hadamard}
  return
}
