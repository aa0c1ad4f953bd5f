// RUN: attn-opt %s -split-input-file -verify-diagnostics
// One case per diagnostic of attn.quantize.append_paged (new K/V rows into a paged cache at the
// slots of a slot mapping).

func.func @src_type(%x: memref<?x4x64xi8>, %m: memref<?xi64>, %c: memref<?x16x4x64xi8>, %s: memref<?x16x4xf32>) {
  // expected-error @+1 {{'src' must hold bf16, f16 or f32, got 'i8'}}
  attn.quantize.append_paged ins(%x : memref<?x4x64xi8>) slot_mapping(%m : memref<?xi64>) outs(%c, %s : memref<?x16x4x64xi8>, memref<?x16x4xf32>) {page_size = 16, quant = #attn.quant<i8, per_token_head>}
  return
}

// -----

func.func @src_rank(%x: memref<?x1x4x64xbf16>, %m: memref<?xi64>, %c: memref<?x16x4x64xi8>, %s: memref<?x16x4xf32>) {
  // expected-error @+1 {{operand #0 must be}}
  attn.quantize.append_paged ins(%x : memref<?x1x4x64xbf16>) slot_mapping(%m : memref<?xi64>) outs(%c, %s : memref<?x16x4x64xi8>, memref<?x16x4xf32>) {page_size = 16, quant = #attn.quant<i8, per_token_head>}
  return
}

// -----

func.func @slot_type(%x: memref<?x4x64xbf16>, %m: memref<?xf32>, %c: memref<?x16x4x64xi8>, %s: memref<?x16x4xf32>) {
  // expected-error @+1 {{operand #1 must be}}
  attn.quantize.append_paged ins(%x : memref<?x4x64xbf16>) slot_mapping(%m : memref<?xf32>) outs(%c, %s : memref<?x16x4x64xi8>, memref<?x16x4xf32>) {page_size = 16, quant = #attn.quant<i8, per_token_head>}
  return
}

// -----

func.func @cache_type(%x: memref<?x4x64xbf16>, %m: memref<?xi64>, %c: memref<?x16x4x64xui8>, %s: memref<?x16x4xf32>) {
  // expected-error @+1 {{'cache' element type 'ui8' does not match the scheme's 'i8'}}
  attn.quantize.append_paged ins(%x : memref<?x4x64xbf16>) slot_mapping(%m : memref<?xi64>) outs(%c, %s : memref<?x16x4x64xui8>, memref<?x16x4xf32>) {page_size = 16, quant = #attn.quant<i8, per_token_head>}
  return
}

// -----

func.func @page_range(%x: memref<?x4x64xbf16>, %m: memref<?xi64>, %c: memref<?x512x4x64xi8>, %s: memref<?x512x4xf32>) {
  // expected-error @+1 {{page_size must be a power of two in [1, 256], got 512}}
  attn.quantize.append_paged ins(%x : memref<?x4x64xbf16>) slot_mapping(%m : memref<?xi64>) outs(%c, %s : memref<?x512x4x64xi8>, memref<?x512x4xf32>) {page_size = 512, quant = #attn.quant<i8, per_token_head>}
  return
}

// -----

func.func @page_pow2(%x: memref<?x4x64xbf16>, %m: memref<?xi64>, %c: memref<?x12x4x64xi8>, %s: memref<?x12x4xf32>) {
  // expected-error @+1 {{page_size must be a power of two in [1, 256], got 12}}
  attn.quantize.append_paged ins(%x : memref<?x4x64xbf16>) slot_mapping(%m : memref<?xi64>) outs(%c, %s : memref<?x12x4x64xi8>, memref<?x12x4xf32>) {page_size = 12, quant = #attn.quant<i8, per_token_head>}
  return
}

// -----

func.func @page_extent(%x: memref<?x4x64xbf16>, %m: memref<?xi64>, %c: memref<8x32x4x64xi8>, %s: memref<8x32x4xf32>) {
  // expected-error @+1 {{'cache' holds pages [num_pages, page_size, H, D]: its dim 1 must be page_size = 16, got [8, 32, 4, 64]}}
  attn.quantize.append_paged ins(%x : memref<?x4x64xbf16>) slot_mapping(%m : memref<?xi64>) outs(%c, %s : memref<8x32x4x64xi8>, memref<8x32x4xf32>) {page_size = 16, quant = #attn.quant<i8, per_token_head>}
  return
}

// -----

func.func @page_dynamic(%x: memref<?x4x64xbf16>, %m: memref<?xi64>, %c: memref<8x?x4x64xi8>, %s: memref<8x?x4xf32>) {
  // expected-error @+1 {{its dim 1 must be page_size = 16, got [8, ?, 4, 64]}}
  attn.quantize.append_paged ins(%x : memref<?x4x64xbf16>) slot_mapping(%m : memref<?xi64>) outs(%c, %s : memref<8x?x4x64xi8>, memref<8x?x4xf32>) {page_size = 16, quant = #attn.quant<i8, per_token_head>}
  return
}

// -----

func.func @agree(%x: memref<?x8x64xbf16>, %m: memref<?xi64>, %c: memref<?x16x4x64xi8>, %s: memref<?x16x4xf32>) {
  // expected-error @+1 {{'src' [?, 8, 64] and 'cache' [?, 16, 4, 64] must agree on heads and head_dim}}
  attn.quantize.append_paged ins(%x : memref<?x8x64xbf16>) slot_mapping(%m : memref<?xi64>) outs(%c, %s : memref<?x16x4x64xi8>, memref<?x16x4xf32>) {page_size = 16, quant = #attn.quant<i8, per_token_head>}
  return
}

// -----

func.func @slots_extent(%x: memref<3x4x64xbf16>, %m: memref<4xi64>, %c: memref<?x16x4x64xi8>, %s: memref<?x16x4xf32>) {
  // expected-error @+1 {{'slot_mapping' must be one slot per row [T] = [3], got [4]}}
  attn.quantize.append_paged ins(%x : memref<3x4x64xbf16>) slot_mapping(%m : memref<4xi64>) outs(%c, %s : memref<?x16x4x64xi8>, memref<?x16x4xf32>) {page_size = 16, quant = #attn.quant<i8, per_token_head>}
  return
}

// -----

func.func @per_block_rows(%x: memref<?x4x64xbf16>, %m: memref<?xi64>, %c: memref<?x16x4x64xi8>, %s: memref<?x8x4x1xf32>) {
  // expected-error @+1 {{per_block<2x64> cannot be appended token by token: a block's scale depends on tokens not yet appended}}
  attn.quantize.append_paged ins(%x : memref<?x4x64xbf16>) slot_mapping(%m : memref<?xi64>) outs(%c, %s : memref<?x16x4x64xi8>, memref<?x8x4x1xf32>) {page_size = 16, quant = #attn.quant<i8, per_block<2x64>>}
  return
}

// -----

func.func @scales_per_page(%x: memref<?x4x64xbf16>, %m: memref<?xi64>, %c: memref<?x16x4x64xi8>, %s: memref<?x4xf32>) {
  // expected-error @+1 {{'scales' must have the per_token_head scale shape [?, 16, 4] of 'cache', got [?, 4]}}
  attn.quantize.append_paged ins(%x : memref<?x4x64xbf16>) slot_mapping(%m : memref<?xi64>) outs(%c, %s : memref<?x16x4x64xi8>, memref<?x4xf32>) {page_size = 16, quant = #attn.quant<i8, per_token_head>}
  return
}

// -----

func.func @group_scales(%x: memref<?x4x64xbf16>, %m: memref<?xi64>, %c: memref<?x16x4x64xi8>, %s: memref<?x16x4xf32>) {
  // expected-error @+1 {{'scales' must have the per_group scale shape [?, 16, 4, 2] of 'cache', got [?, 16, 4]}}
  attn.quantize.append_paged ins(%x : memref<?x4x64xbf16>) slot_mapping(%m : memref<?xi64>) outs(%c, %s : memref<?x16x4x64xi8>, memref<?x16x4xf32>) {page_size = 16, quant = #attn.quant<i8, per_group<32>>}
  return
}

// -----

func.func @zeros_missing(%x: memref<?x4x64xbf16>, %m: memref<?xi64>, %c: memref<?x16x4x64xi8>, %s: memref<?x16x4xf32>) {
  // expected-error @+1 {{asymmetric 'quant' needs a 'zeros'}}
  attn.quantize.append_paged ins(%x : memref<?x4x64xbf16>) slot_mapping(%m : memref<?xi64>) outs(%c, %s : memref<?x16x4x64xi8>, memref<?x16x4xf32>) {page_size = 16, quant = #attn.quant<i8, per_token_head, asymmetric>}
  return
}

// -----

func.func @zeros_symmetric(%x: memref<?x4x64xbf16>, %m: memref<?xi64>, %c: memref<?x16x4x64xi8>, %s: memref<?x16x4xf32>, %z: memref<?x16x4xi8>) {
  // expected-error @+1 {{'zeros' given but 'quant'}}
  attn.quantize.append_paged ins(%x : memref<?x4x64xbf16>) slot_mapping(%m : memref<?xi64>) outs(%c, %s : memref<?x16x4x64xi8>, memref<?x16x4xf32>) zeros(%z : memref<?x16x4xi8>) {page_size = 16, quant = #attn.quant<i8, per_token_head>}
  return
}

// -----

func.func @hadamard_groups(%x: memref<?x4x64xbf16>, %m: memref<?xi64>, %c: memref<?x16x4x64xi8>, %s: memref<?x16x4x2xf32>) {
  // expected-error @+1 {{hadamard mixes all 64 elements of a head's row}}
  attn.quantize.append_paged ins(%x : memref<?x4x64xbf16>) slot_mapping(%m : memref<?xi64>) outs(%c, %s : memref<?x16x4x64xi8>, memref<?x16x4x2xf32>) {page_size = 16, quant = #attn.quant<i8, per_group<32>>, hadamard}
  return
}
