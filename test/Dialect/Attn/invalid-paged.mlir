// RUN: attn-opt %s -split-input-file -verify-diagnostics
// One case per diagnostic of the paged K/V layout of attn.attention (block_table, page_size):
// verifyPagedLayout in AttentionOps.cpp, and the scale, causal and schedule checks that read it.

func.func @page_not_pow2(%q: memref<2x1x8x64xbf16>, %k: memref<64x48x2x64xbf16>, %v: memref<64x48x2x64xbf16>, %bt: memref<2x4xi32>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{page_size must be a power of two, got 48}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<64x48x2x64xbf16>, memref<64x48x2x64xbf16>) block_table(%bt : memref<2x4xi32>) outs(%o : memref<2x1x8x64xbf16>) {page_size = 48}
  return
}

// -----

func.func @page_too_large(%q: memref<2x1x8x64xbf16>, %k: memref<64x512x2x64xbf16>, %v: memref<64x512x2x64xbf16>, %bt: memref<2x4xi32>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{page_size must be in [1, 256], got 512}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<64x512x2x64xbf16>, memref<64x512x2x64xbf16>) block_table(%bt : memref<2x4xi32>) outs(%o : memref<2x1x8x64xbf16>) {page_size = 512}
  return
}

// -----

func.func @page_zero(%q: memref<2x1x8x64xbf16>, %k: memref<64x16x2x64xbf16>, %v: memref<64x16x2x64xbf16>, %bt: memref<2x4xi32>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{page_size must be in [1, 256], got 0}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<64x16x2x64xbf16>, memref<64x16x2x64xbf16>) block_table(%bt : memref<2x4xi32>) outs(%o : memref<2x1x8x64xbf16>) {page_size = 0}
  return
}

// -----

func.func @page_size_without_table(%q: memref<2x1x8x64xbf16>, %k: memref<2x16x2x64xbf16>, %v: memref<2x16x2x64xbf16>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{page_size = 16 needs a block_table operand (the pages of each sequence)}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<2x16x2x64xbf16>, memref<2x16x2x64xbf16>) outs(%o : memref<2x1x8x64xbf16>) {page_size = 16}
  return
}

// -----

func.func @table_without_page_size(%q: memref<2x1x8x64xbf16>, %k: memref<64x16x2x64xbf16>, %v: memref<64x16x2x64xbf16>, %bt: memref<2x4xi32>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{a block_table needs page_size = P, the tokens of one page (a power of two, 1 to 256)}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<64x16x2x64xbf16>, memref<64x16x2x64xbf16>) block_table(%bt : memref<2x4xi32>) outs(%o : memref<2x1x8x64xbf16>)
  return
}

// -----

func.func @table_batch(%q: memref<2x1x8x64xbf16>, %k: memref<64x16x2x64xbf16>, %v: memref<64x16x2x64xbf16>, %bt: memref<3x4xi32>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{'block_table' must be one row of pages per sequence [B, max_blocks] = [2, 4], got [3, 4]}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<64x16x2x64xbf16>, memref<64x16x2x64xbf16>) block_table(%bt : memref<3x4xi32>) outs(%o : memref<2x1x8x64xbf16>) {page_size = 16}
  return
}

// -----

func.func @table_element_type(%q: memref<2x1x8x64xbf16>, %k: memref<64x16x2x64xbf16>, %v: memref<64x16x2x64xbf16>, %bt: memref<2x4xi64>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{operand #3 must be 2D memref of 32-bit signless integer values, but got 'memref<2x4xi64>'}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<64x16x2x64xbf16>, memref<64x16x2x64xbf16>) block_table(%bt : memref<2x4xi64>) outs(%o : memref<2x1x8x64xbf16>) {page_size = 16}
  return
}

// -----

func.func @k_page_extent(%q: memref<2x1x8x64xbf16>, %k: memref<64x32x2x64xbf16>, %v: memref<64x32x2x64xbf16>, %bt: memref<2x4xi32>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{'k' holds pages [num_pages, page_size, Hkv, D]: its dim 1 must be page_size = 16, got [64, 32, 2, 64]}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<64x32x2x64xbf16>, memref<64x32x2x64xbf16>) block_table(%bt : memref<2x4xi32>) outs(%o : memref<2x1x8x64xbf16>) {page_size = 16}
  return
}

// -----

func.func @v_page_dynamic(%q: memref<2x1x8x64xbf16>, %k: memref<64x16x2x64xbf16>, %v: memref<64x?x2x64xbf16>, %bt: memref<2x4xi32>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{'v' holds pages [num_pages, page_size, Hkv, Dv]: its dim 1 must be page_size = 16, got [64, ?, 2, 64]}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<64x16x2x64xbf16>, memref<64x?x2x64xbf16>) block_table(%bt : memref<2x4xi32>) outs(%o : memref<2x1x8x64xbf16>) {page_size = 16}
  return
}

// -----

func.func @page_counts(%q: memref<2x1x8x64xbf16>, %k: memref<64x16x2x64xbf16>, %v: memref<63x16x2x64xbf16>, %bt: memref<2x4xi32>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{k and v must hold the same number of pages, got [64, 63]}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<64x16x2x64xbf16>, memref<63x16x2x64xbf16>) block_table(%bt : memref<2x4xi32>) outs(%o : memref<2x1x8x64xbf16>) {page_size = 16}
  return
}

// -----

// The out batch is still the sequences' (the table's rows), not the pool's pages.
func.func @out_batch(%q: memref<2x1x8x64xbf16>, %k: memref<64x16x2x64xbf16>, %v: memref<64x16x2x64xbf16>, %bt: memref<2x4xi32>, %o: memref<3x1x8x64xbf16>) {
  // expected-error @+1 {{q, k, v and out must have the same batch size, got [2, 64, 64, 3]}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<64x16x2x64xbf16>, memref<64x16x2x64xbf16>) block_table(%bt : memref<2x4xi32>) outs(%o : memref<3x1x8x64xbf16>) {page_size = 16}
  return
}

// -----

// A scale block of 32 rows over pages of 16 tokens has no page to live in.
func.func @block_straddles_pages(%q: memref<2x1x8x64xbf16>, %k: memref<64x16x2x64xi8>, %v: memref<64x16x2x64xi8>, %ks: memref<64x1x2x1xf32>, %vs: memref<64x16x2xf32>, %bt: memref<2x4xi32>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{'k_quant' #attn.quant<i8, per_block<32x64>, symmetric> cannot be stored per page: a block of 32 rows straddles pages of 16 tokens (block rows must divide page_size)}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<64x16x2x64xi8>, memref<64x16x2x64xi8>) k_scale(%ks : memref<64x1x2x1xf32>) v_scale(%vs : memref<64x16x2xf32>) block_table(%bt : memref<2x4xi32>) outs(%o : memref<2x1x8x64xbf16>)
      {page_size = 16, k_quant = #attn.quant<i8, per_block<32 x 64>>, v_quant = #attn.quant<i8, per_token_head>}
  return
}

// -----

func.func @v_block_straddles_pages(%q: memref<2x1x8x64xbf16>, %k: memref<64x16x2x64xi8>, %v: memref<64x16x2x64xi8>, %ks: memref<64x16x2xf32>, %vs: memref<64x1x2x1xf32>, %bt: memref<2x4xi32>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{'v_quant' #attn.quant<i8, per_block<24x64>, symmetric> cannot be stored per page: a block of 24 rows straddles pages of 16 tokens (block rows must divide page_size)}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<64x16x2x64xi8>, memref<64x16x2x64xi8>) k_scale(%ks : memref<64x16x2xf32>) v_scale(%vs : memref<64x1x2x1xf32>) block_table(%bt : memref<2x4xi32>) outs(%o : memref<2x1x8x64xbf16>)
      {page_size = 16, k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_block<24 x 64>>}
  return
}

// -----

// Scales are stored per page: per_token_head is [num_pages, page_size, Hkv], not [B, Skv, Hkv].
func.func @scales_not_per_page(%q: memref<2x1x8x64xbf16>, %k: memref<64x16x2x64xi8>, %v: memref<64x16x2x64xi8>, %ks: memref<2x64x2xf32>, %vs: memref<64x16x2xf32>, %bt: memref<2x4xi32>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{'k_scale' must have the per_token_head scale shape [64, 16, 2] of 'k', got [2, 64, 2]}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<64x16x2x64xi8>, memref<64x16x2x64xi8>) k_scale(%ks : memref<2x64x2xf32>) v_scale(%vs : memref<64x16x2xf32>) block_table(%bt : memref<2x4xi32>) outs(%o : memref<2x1x8x64xbf16>)
      {page_size = 16, k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>}
  return
}

// -----

// Zero points likewise.
func.func @zeros_not_per_page(%q: memref<2x1x8x64xbf16>, %k: memref<64x16x2x64xui8>, %v: memref<64x16x2x64xui8>, %ks: memref<64x16xf32>, %vs: memref<64x16xf32>, %kz: memref<2x64xui8>, %vz: memref<64x16xui8>, %bt: memref<2x4xi32>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{'k_zero' shape [2, 64] must equal the 'k_scale' shape [64, 16]}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<64x16x2x64xui8>, memref<64x16x2x64xui8>) k_scale(%ks : memref<64x16xf32>) v_scale(%vs : memref<64x16xf32>) k_zero(%kz : memref<2x64xui8>) v_zero(%vz : memref<64x16xui8>) block_table(%bt : memref<2x4xi32>) outs(%o : memref<2x1x8x64xbf16>)
      {page_size = 16, k_quant = #attn.quant<ui8, per_token, asymmetric>, v_quant = #attn.quant<ui8, per_token, asymmetric>}
  return
}

// -----

// A sequence holds at most max_blocks · page_size = 2 · 16 keys.
func.func @causal_past_table(%q: memref<2x40x8x64xbf16>, %k: memref<64x16x2x64xbf16>, %v: memref<64x16x2x64xbf16>, %bt: memref<2x2xi32>, %o: memref<2x40x8x64xbf16>) {
  // expected-error @+1 {{causal attention needs q_len ≤ kv_len, got 40 > 32}}
  attn.attention prefill ins(%q, %k, %v : memref<2x40x8x64xbf16>, memref<64x16x2x64xbf16>, memref<64x16x2x64xbf16>) block_table(%bt : memref<2x2xi32>) outs(%o : memref<2x40x8x64xbf16>) {causal, page_size = 16}
  return
}

// -----

func.func @tile_across_pages(%q: memref<2x1x8x64xbf16>, %k: memref<64x32x2x64xbf16>, %v: memref<64x32x2x64xbf16>, %bt: memref<2x4xi32>, %o: memref<2x1x8x64xbf16>) {
  // expected-error @+1 {{tile_n = 48 and page_size = 32: a key tile must cover whole pages or lie within one page (one must divide the other)}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<64x32x2x64xbf16>, memref<64x32x2x64xbf16>) block_table(%bt : memref<2x4xi32>) outs(%o : memref<2x1x8x64xbf16>) {page_size = 32, schedule = #attn.schedule<tile_n = 48>}
  return
}
