// RUN: attn-opt %s --attn-select-schedule | FileCheck %s
// attn-select-schedule does bounded work whatever the extents: a head ratio of 2^30 takes as
// long as a ratio of 64 (the packing candidates stop at the tile's 64 rows).

// CHECK-LABEL: func.func @huge_ratio
// CHECK: schedule = #attn.schedule<pack_q_heads = 64,
func.func @huge_ratio(%q: memref<1x1x1073741824x128xbf16>, %k: memref<1x256x1x128xbf16>, %v: memref<1x256x1x128xbf16>, %o: memref<1x1x1073741824x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<1x1x1073741824x128xbf16>, memref<1x256x1x128xbf16>, memref<1x256x1x128xbf16>) outs(%o : memref<1x1x1073741824x128xbf16>) {target = #attn.target<sm_90a>}
  return
}
