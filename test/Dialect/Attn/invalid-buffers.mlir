// RUN: attn-opt %s -split-input-file -verify-diagnostics
// What every attn op's buffers must be, on every target: row-major and contiguous (the identity
// layout), in the default memory space, with static extents in [1, 2^31 - 1], and no output
// passed again as another operand.

func.func @strided_k(%q: memref<1x1x8x128xbf16>, %k: memref<1x256x1x128xbf16, strided<[65536, 256, 128, 1]>>, %v: memref<1x256x1x128xbf16>, %o: memref<1x1x8x128xbf16>) {
  // expected-error @+1 {{operand #1 ('memref<1x256x1x128xbf16, strided<[65536, 256, 128, 1]>>') has a non-identity layout; kernel buffers are row-major and contiguous}}
  attn.attention decode ins(%q, %k, %v : memref<1x1x8x128xbf16>, memref<1x256x1x128xbf16, strided<[65536, 256, 128, 1]>>, memref<1x256x1x128xbf16>) outs(%o : memref<1x1x8x128xbf16>) {target = #attn.target<sm_90a>}
  return
}

// -----

func.func @permuted_v(%q: memref<1x1x8x128xbf16>, %k: memref<1x256x1x128xbf16>, %v: memref<1x256x1x128xbf16, affine_map<(a, b, c, d) -> (a, c, b, d)>>, %o: memref<1x1x8x128xbf16>) {
  // expected-error @+1 {{operand #2 ('memref<1x256x1x128xbf16, affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>>') has a non-identity layout}}
  attn.attention decode ins(%q, %k, %v : memref<1x1x8x128xbf16>, memref<1x256x1x128xbf16>, memref<1x256x1x128xbf16, affine_map<(a, b, c, d) -> (a, c, b, d)>>) outs(%o : memref<1x1x8x128xbf16>) {target = #attn.target<sm_90a>}
  return
}

// -----

func.func @memspace(%q: memref<1x1x8x128xbf16>, %k: memref<1x256x1x128xbf16>, %v: memref<1x256x1x128xbf16>, %o: memref<1x1x8x128xbf16, 3>) {
  // expected-error @+1 {{operand #3 ('memref<1x1x8x128xbf16, 3>') is in memory space 3 : i64; kernel buffers live in the default memory space}}
  attn.attention decode ins(%q, %k, %v : memref<1x1x8x128xbf16>, memref<1x256x1x128xbf16>, memref<1x256x1x128xbf16>) outs(%o : memref<1x1x8x128xbf16, 3>) {target = #attn.target<sm_90a>}
  return
}

// -----

func.func @memspace_cpu(%q: memref<4x128xf32, 257>, %cb: memref<1x128x16x1xf32>, %l: memref<4x128x16xui8>, %pp: memref<4x2xf32>) {
  // expected-error @+1 {{is in memory space 257 : i64; kernel buffers live in the default memory space}}
  attn.pq.lut ins(%q, %cb : memref<4x128xf32, 257>, memref<1x128x16x1xf32>) outs(%l, %pp : memref<4x128x16xui8>, memref<4x2xf32>) {pq = #attn.pq<dsub = 1>, target = #attn.target<avx2>}
  return
}

// -----

func.func @batch0(%q: memref<0x1x8x128xbf16>, %k: memref<0x256x1x128xbf16>, %v: memref<0x256x1x128xbf16>, %o: memref<0x1x8x128xbf16>) {
  // expected-error @+1 {{operand #0 ('memref<0x1x8x128xbf16>') has extent 0 in dimension 0; extents must be in [1, 2147483647]}}
  attn.attention decode ins(%q, %k, %v : memref<0x1x8x128xbf16>, memref<0x256x1x128xbf16>, memref<0x256x1x128xbf16>) outs(%o : memref<0x1x8x128xbf16>) {target = #attn.target<sm_90a>}
  return
}

// -----

func.func @batch_2_31(%q: memref<2147483648x1x8x128xbf16>, %k: memref<?x256x1x128xbf16>, %v: memref<?x256x1x128xbf16>, %o: memref<?x1x8x128xbf16>) {
  // expected-error @+1 {{has extent 2147483648 in dimension 0; extents must be in [1, 2147483647]}}
  attn.attention decode ins(%q, %k, %v : memref<2147483648x1x8x128xbf16>, memref<?x256x1x128xbf16>, memref<?x256x1x128xbf16>) outs(%o : memref<?x1x8x128xbf16>) {target = #attn.target<sm_90a>}
  return
}

// -----

func.func @qlen0(%q: memref<1x0x8x128xbf16>, %k: memref<1x256x1x128xbf16>, %v: memref<1x256x1x128xbf16>, %o: memref<1x0x8x128xbf16>) {
  // expected-error @+1 {{has extent 0 in dimension 1}}
  attn.attention decode ins(%q, %k, %v : memref<1x0x8x128xbf16>, memref<1x256x1x128xbf16>, memref<1x256x1x128xbf16>) outs(%o : memref<1x0x8x128xbf16>) {target = #attn.target<sm_90a>}
  return
}

// -----

func.func @heads0(%q: memref<1x1x0x128xbf16>, %k: memref<1x256x0x128xbf16>, %v: memref<1x256x0x128xbf16>, %o: memref<1x1x0x128xbf16>) {
  // expected-error @+1 {{has extent 0 in dimension 2}}
  attn.attention decode ins(%q, %k, %v : memref<1x1x0x128xbf16>, memref<1x256x0x128xbf16>, memref<1x256x0x128xbf16>) outs(%o : memref<1x1x0x128xbf16>) {target = #attn.target<sm_90a>}
  return
}

// -----

// head_dim 0 is blamed on the operand, not on a softmax_scale of 1/sqrt(0) nobody wrote.
func.func @head_dim0(%q: memref<1x1x8x0xbf16>, %k: memref<1x256x1x0xbf16>, %v: memref<1x256x1x0xbf16>, %o: memref<1x1x8x0xbf16>) {
  // expected-error @+1 {{operand #0 ('memref<1x1x8x0xbf16>') has extent 0 in dimension 3}}
  attn.attention decode ins(%q, %k, %v : memref<1x1x8x0xbf16>, memref<1x256x1x0xbf16>, memref<1x256x1x0xbf16>) outs(%o : memref<1x1x8x0xbf16>)
  return
}

// -----

func.func @kv_len_beyond_i32(%q: memref<1x1x8x128xbf16>, %k: memref<1x4294967296x1x128xbf16>, %v: memref<1x4294967296x1x128xbf16>, %o: memref<1x1x8x128xbf16>) {
  // expected-error @+1 {{has extent 4294967296 in dimension 1}}
  attn.attention decode ins(%q, %k, %v : memref<1x1x8x128xbf16>, memref<1x4294967296x1x128xbf16>, memref<1x4294967296x1x128xbf16>) outs(%o : memref<1x1x8x128xbf16>) {target = #attn.target<sm_90a>}
  return
}

// -----

func.func @too_many_bytes(%q: memref<1x1x8x128xbf16>, %k: memref<2147483647x2147483647x1x128xbf16>, %v: memref<2147483647x2147483647x1x128xbf16>, %o: memref<1x1x8x128xbf16>) {
  // expected-error @+1 {{spans more than 281474976710656 bytes}}
  attn.attention decode ins(%q, %k, %v : memref<1x1x8x128xbf16>, memref<2147483647x2147483647x1x128xbf16>, memref<2147483647x2147483647x1x128xbf16>) outs(%o : memref<1x1x8x128xbf16>)
  return
}

// -----

func.func @mla_topk0(%q: memref<1x1x64x576xbf16>, %kv: memref<1x100x576xbf16>, %i: memref<1x1x0xi32>, %o: memref<1x1x64x512xbf16>) {
  // expected-error @+1 {{has extent 0 in dimension 2}}
  attn.mla_decode ins(%q, %kv : memref<1x1x64x576xbf16>, memref<1x100x576xbf16>) indices(%i : memref<1x1x0xi32>) outs(%o : memref<1x1x64x512xbf16>) {head_dim_v = 512 : i64, rope_dim = 64 : i64}
  return
}

// -----

func.func @mla_topk_2_40(%q: memref<1x1x64x576xbf16>, %kv: memref<1x100x576xbf16>, %i: memref<1x1x1099511627776xi32>, %o: memref<1x1x64x512xbf16>) {
  // expected-error @+1 {{has extent 1099511627776 in dimension 2}}
  attn.mla_decode ins(%q, %kv : memref<1x1x64x576xbf16>, memref<1x100x576xbf16>) indices(%i : memref<1x1x1099511627776xi32>) outs(%o : memref<1x1x64x512xbf16>) {head_dim_v = 512 : i64, rope_dim = 64 : i64}
  return
}

// -----

func.func @out_aliases_q(%q: memref<1x1x8x128xbf16>, %k: memref<1x256x1x128xbf16>, %v: memref<1x256x1x128xbf16>) {
  // expected-error @+1 {{operand #3, which the op writes, is also passed as operand #0; an output must not alias another operand}}
  attn.attention decode ins(%q, %k, %v : memref<1x1x8x128xbf16>, memref<1x256x1x128xbf16>, memref<1x256x1x128xbf16>) outs(%q : memref<1x1x8x128xbf16>) {target = #attn.target<sm_90a>}
  return
}

// -----

func.func @dst_aliases_src(%x: memref<1x8x4x64xbf16>, %s: memref<1x8x4xf32>, %y: memref<1x8x4x64xi8>) {
  // expected-error @+1 {{operand #1, which the op writes, is also passed as operand #2; an output must not alias another operand}}
  attn.quantize.dynamic ins(%x : memref<1x8x4x64xbf16>) outs(%y, %y : memref<1x8x4x64xi8>, memref<1x8x4x64xi8>) {quant = #attn.quant<i8, per_token_head>, target = #attn.target<avx512>}
  return
}

// -----

// A per_block extent as large as int64_t holds: the scale shape is a rounded-up division that
// must not overflow.
func.func @huge_block(%q: memref<1x1x8x128xbf16>, %k: memref<1x256x1x128xi8>, %v: memref<1x256x1x128xi8>, %ks: memref<1x2x1xf32>, %vs: memref<1x256x1xf32>, %o: memref<1x1x8x128xbf16>) {
  // expected-error @+1 {{'k_scale' must have the per_block scale shape [1, 1, 1, 1] of 'k', got [1, 2, 1]}}
  attn.attention decode ins(%q, %k, %v : memref<1x1x8x128xbf16>, memref<1x256x1x128xi8>, memref<1x256x1x128xi8>) k_scale(%ks : memref<1x2x1xf32>) v_scale(%vs : memref<1x256x1xf32>) outs(%o : memref<1x1x8x128xbf16>) {k_quant = #attn.quant<i8, per_block<9223372036854775807x128>>, v_quant = #attn.quant<i8, per_token_head>}
  return
}
