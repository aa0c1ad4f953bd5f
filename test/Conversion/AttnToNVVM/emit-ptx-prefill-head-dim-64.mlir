// --emit=ptx of 8-bit Q·Kᵀ prefill at head_dim 64, where a row of Q or K is 64 bytes: half of
// the 128-byte swizzle row the head_dim-128 kernels use.
// - int8 queries (half-int8, the default three consumers): the query tile and the producer's
//   copy of K keep 128-byte swizzle rows, half filled; Q·Kᵀ is two s8 K-steps of 32 bytes.
// - fp8 (and full_int8, and half-int8 with FA3's overlap): K is read where TMA put it, in
//   64-byte rows with TMA's 64-byte swizzle — the WGMMA's B descriptor takes layout type 2
//   (bits 62–63) and a stride of 512 bytes per 8 rows — and V comes in plain 64-byte rows,
//   which the producer transposes.
// RUN: attn-opt %s -split-input-file --attn-normalize --attn-select-schedule --emit=ptx | FileCheck %s
// RUN: attn-opt %s -split-input-file --attn-normalize --attn-select-schedule --emit=launch | FileCheck %s --check-prefix=META
// RUN: attn-opt %s -split-input-file --attn-normalize --attn-select-schedule --emit=ptx | FileCheck %s --check-prefix=SW64

// CHECK-LABEL: .entry pf_h8_d64_prefill(
// CHECK: setmaxnreg.inc.sync.aligned.u32 160;
// CHECK: wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16
// CHECK-COUNT-2: wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8
// CHECK-NOT: wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8
// CHECK-LABEL: .entry pf_fp8_d64_prefill(
// CHECK: setmaxnreg.inc.sync.aligned.u32 160;
// CHECK: wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3
// CHECK-COUNT-2: wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3
// CHECK-NOT: wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3

// K's B descriptor in the fp8 kernel, high word 2 << 62 | (512 >> 4) << 32; none in the int8
// one (K copied into 128-byte rows).
// SW64-LABEL: .entry pf_h8_d64_prefill(
// SW64-NOT: -9223371899415822336
// SW64-LABEL: .entry pf_fp8_d64_prefill(
// SW64: -9223371899415822336

// META: "head_dim": 64,
// META: "k": {
// META-NEXT: "box": [
// META-NEXT: 64,
// META: "swizzle": 0
// META: "head_dim": 64,
// META: "k": {
// META-NEXT: "box": [
// META-NEXT: 64,
// META: "swizzle": 64
// META: "v": {
// META: "swizzle": 0

func.func @pf_h8_d64(%q: memref<?x?x16x64xi8>, %k: memref<?x?x4x64xi8>, %v: memref<?x?x4x64xi8>,
                     %qs: memref<?x?x16xf32>, %ks: memref<?x?x4xf32>, %vs: memref<?x?x4xf32>,
                     %o: memref<?x?x16x64xbf16>) {
  attn.attention prefill ins(%q, %k, %v : memref<?x?x16x64xi8>, memref<?x?x4x64xi8>, memref<?x?x4x64xi8>)
      q_scale(%qs : memref<?x?x16xf32>) k_scale(%ks : memref<?x?x4xf32>) v_scale(%vs : memref<?x?x4xf32>)
      outs(%o : memref<?x?x16x64xbf16>)
      {causal, q_quant = #attn.quant<i8, per_token_head>, k_quant = #attn.quant<i8, per_token_head>,
       v_quant = #attn.quant<i8, per_token_head>, target = #attn.target<sm_90a>}
  return
}

// -----

func.func @pf_fp8_d64(%q: memref<?x?x16x64xf8E4M3FN>, %k: memref<?x?x4x64xf8E4M3FN>, %v: memref<?x?x4x64xf8E4M3FN>,
                      %qs: memref<?x?x16x1xf32>, %ks: memref<?x?x4x1xf32>, %vs: memref<?x?x4x1xf32>,
                      %o: memref<?x?x16x64xbf16>) {
  attn.attention prefill ins(%q, %k, %v : memref<?x?x16x64xf8E4M3FN>, memref<?x?x4x64xf8E4M3FN>, memref<?x?x4x64xf8E4M3FN>)
      q_scale(%qs : memref<?x?x16x1xf32>) k_scale(%ks : memref<?x?x4x1xf32>) v_scale(%vs : memref<?x?x4x1xf32>)
      outs(%o : memref<?x?x16x64xbf16>)
      {causal, q_quant = #attn.quant<f8E4M3FN, per_block<64x64>>, k_quant = #attn.quant<f8E4M3FN, per_block<128x64>>,
       v_quant = #attn.quant<f8E4M3FN, per_block<128x64>>, target = #attn.target<sm_90a>}
  return
}
