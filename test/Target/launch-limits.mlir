// RUN: attn-opt %s --emit=launch -split-input-file -verify-diagnostics -o /dev/null
// RUN: attn-opt %s -split-input-file -verify-diagnostics --attn-select-schedule --attn-build-kernel --convert-attn-to-nvvm=metadata-only -o /dev/null
// Launch limits of the sm_90a kernels, checked at compile time for the extents a spec fixes:
// grid y and z (query heads and batch) take at most 65535 CTAs, rows of every buffer are
// indexed with 32-bit integers, a split-KV count gets at least one key tile per split and a
// workspace of at most 2^34 bytes.

func.func @batch_grid_z(%q: memref<65536x1x8x128xbf16>, %k: memref<65536x256x1x128xbf16>, %v: memref<65536x256x1x128xbf16>, %o: memref<65536x1x8x128xbf16>) {
  // expected-error @+1 {{not supported by the sm_90a kernels: batch 65536 (grid z takes at most 65535 CTAs)}}
  attn.attention decode ins(%q, %k, %v : memref<65536x1x8x128xbf16>, memref<65536x256x1x128xbf16>, memref<65536x256x1x128xbf16>) outs(%o : memref<65536x1x8x128xbf16>) {target = #attn.target<sm_90a>}
  return
}

// -----

func.func @heads_grid_y(%q: memref<1x1x131072x128xbf16>, %k: memref<1x256x1x128xbf16>, %v: memref<1x256x1x128xbf16>, %o: memref<1x1x131072x128xbf16>) {
  // expected-error @+1 {{not supported by the sm_90a kernels: query heads 131072 (grid y takes at most 65535 CTAs)}}
  attn.attention decode ins(%q, %k, %v : memref<1x1x131072x128xbf16>, memref<1x256x1x128xbf16>, memref<1x256x1x128xbf16>) outs(%o : memref<1x1x131072x128xbf16>) {target = #attn.target<sm_90a>}
  return
}

// -----

func.func @rows_beyond_i32(%q: memref<16384x1x8x128xbf16>, %k: memref<16384x262144x1x128xbf16>, %v: memref<16384x262144x1x128xbf16>, %o: memref<16384x1x8x128xbf16>) {
  // expected-error @+1 {{not supported by the sm_90a kernels: operand #1 ('memref<16384x262144x1x128xbf16>') has more than 2147483647 rows (the kernels index rows with 32-bit integers)}}
  attn.attention decode ins(%q, %k, %v : memref<16384x1x8x128xbf16>, memref<16384x262144x1x128xbf16>, memref<16384x262144x1x128xbf16>) outs(%o : memref<16384x1x8x128xbf16>) {target = #attn.target<sm_90a>}
  return
}

// -----

func.func @split_beyond_tiles(%q: memref<1x1x8x128xbf16>, %k: memref<1x256x1x128xbf16>, %v: memref<1x256x1x128xbf16>, %o: memref<1x1x8x128xbf16>) {
  // expected-error @+1 {{split_kv 100 with kv_len 256 and tile_n 128 (at most one split per key tile: 2)}}
  attn.attention decode ins(%q, %k, %v : memref<1x1x8x128xbf16>, memref<1x256x1x128xbf16>, memref<1x256x1x128xbf16>) outs(%o : memref<1x1x8x128xbf16>) {target = #attn.target<sm_90a>, schedule = #attn.schedule<split_kv = 100>}
  return
}

// -----

func.func @workspace(%q: memref<?x1x8x128xbf16>, %k: memref<?x?x1x128xbf16>, %v: memref<?x?x1x128xbf16>, %o: memref<?x1x8x128xbf16>) {
  // expected-error @+1 {{a split-KV workspace of more than 17179869184 bytes (split_kv 1099511627776, batch 1 of ?, 1 head groups)}}
  attn.attention decode ins(%q, %k, %v : memref<?x1x8x128xbf16>, memref<?x?x1x128xbf16>, memref<?x?x1x128xbf16>) outs(%o : memref<?x1x8x128xbf16>) {target = #attn.target<sm_90a>, schedule = #attn.schedule<split_kv = 1099511627776>}
  return
}

// -----

func.func @mla_batch(%q: memref<70000x1x64x576xbf16>, %kv: memref<70000x100x576xbf16>, %o: memref<70000x1x64x512xbf16>) {
  // expected-error @+1 {{not supported by the sm_90a kernels: batch 70000 (grid z takes at most 65535 CTAs)}}
  attn.mla_decode ins(%q, %kv : memref<70000x1x64x576xbf16>, memref<70000x100x576xbf16>) outs(%o : memref<70000x1x64x512xbf16>) {head_dim_v = 512 : i64, rope_dim = 64 : i64, target = #attn.target<sm_90a>}
  return
}
