// RUN: attn-opt %s | attn-opt | FileCheck %s
// attn.quantize.append_paged prints and parses back: i64 and i32 slot mappings, per-page scales
// of every token-local granularity, zero points, hadamard and a target.

// CHECK-LABEL: func.func @i8_per_token_head
// CHECK: attn.quantize.append_paged ins(%{{.*}} : memref<?x8x128xbf16>) slot_mapping(%{{.*}} : memref<?xi64>) outs(%{{.*}}, %{{.*}} : memref<?x16x8x128xi8>, memref<?x16x8xf32>) {page_size = 16 : i64, quant = #attn.quant<i8, per_token_head, symmetric>, target = #attn.target<sm_90a>}
func.func @i8_per_token_head(%x: memref<?x8x128xbf16>, %m: memref<?xi64>, %c: memref<?x16x8x128xi8>, %s: memref<?x16x8xf32>) {
  attn.quantize.append_paged ins(%x : memref<?x8x128xbf16>) slot_mapping(%m : memref<?xi64>) outs(%c, %s : memref<?x16x8x128xi8>, memref<?x16x8xf32>) {page_size = 16, quant = #attn.quant<i8, per_token_head, symmetric>, target = #attn.target<sm_90a>}
  return
}

// CHECK-LABEL: func.func @ui8_per_group_zeros
// CHECK: slot_mapping(%{{.*}} : memref<7xi32>)
// CHECK-SAME: zeros(%{{.*}} : memref<32x64x4x4xui8>) {page_size = 64 : i64, quant = #attn.quant<ui8, per_group<32>, asymmetric>}
func.func @ui8_per_group_zeros(%x: memref<7x4x128xf16>, %m: memref<7xi32>, %c: memref<32x64x4x128xui8>, %s: memref<32x64x4x4xf32>, %z: memref<32x64x4x4xui8>) {
  attn.quantize.append_paged ins(%x : memref<7x4x128xf16>) slot_mapping(%m : memref<7xi32>) outs(%c, %s : memref<32x64x4x128xui8>, memref<32x64x4x4xf32>) zeros(%z : memref<32x64x4x4xui8>) {page_size = 64, quant = #attn.quant<ui8, per_group<32>, asymmetric>}
  return
}

// CHECK-LABEL: func.func @e4m3_per_token_hadamard
// CHECK: {hadamard, page_size = 1 : i64, quant = #attn.quant<f8E4M3FN, per_token, symmetric>}
func.func @e4m3_per_token_hadamard(%x: memref<?x2x64xbf16>, %m: memref<?xi64>, %c: memref<?x1x2x64xf8E4M3FN>, %s: memref<?x1xf32>) {
  attn.quantize.append_paged ins(%x : memref<?x2x64xbf16>) slot_mapping(%m : memref<?xi64>) outs(%c, %s : memref<?x1x2x64xf8E4M3FN>, memref<?x1xf32>) {hadamard, page_size = 1, quant = #attn.quant<f8E4M3FN, per_token>}
  return
}
