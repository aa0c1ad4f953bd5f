// --emit=ptx of a full_int8 prefill spec: both GEMMs on int8 tensor cores — Q·Kᵀ on s8 × s8,
// P quantized to u8 with one scale per row and tile (FFMA with 1.5 · 2^23, then byte permutes)
// and P·V on u8 × s8 into a fresh s32 product added to O in float — with V transposed by the
// producer as for fp8, and the launch metadata naming the mode.
// RUN: attn-opt %s --attn-normalize --attn-select-schedule --emit=ptx | FileCheck %s
// RUN: attn-opt %s --attn-normalize --attn-select-schedule --emit=launch | FileCheck %s --check-prefix=META
// RUN: attn-opt %s --attn-normalize --attn-select-schedule | FileCheck %s --check-prefix=SCHED

// No overlap by default: with it the consumers spill (docs/Schedules.md).
// SCHED: mode = #attn.mode<full_int8>
// SCHED-SAME: tile_n = 128, stages = 2, roles = [producer<warpgroups = 1, regs = 72>, consumer<warpgroups = 2, regs = 216>], pingpong = false, intra_wg_overlap = false

// CHECK: .entry pf_fi8_prefill(
// CHECK: setmaxnreg.dec.sync.aligned.u32 72;
// The producer's transpose of V: 16-bit transposing matrix loads of the stage, byte permutes
// pairing the two 8-key halves (selectors per lane), matrix stores of Vᵀ rows.
// CHECK: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// CHECK: prmt.b32 {{.*}}, %r{{[0-9]+}};
// CHECK: stmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK: setmaxnreg.inc.sync.aligned.u32 216;
// P's row scale (255 / its maximum), then its u8 words.
// CHECK: mov.b32 [[C255:%r[0-9]+]], 0f437F0000;
// CHECK: div.rn.f32 {{.*}}, [[C255]],
// CHECK: fma.rn.f32 t0, {{.*}}, 0f4B400000;
// CHECK: prmt.b32 lo, t0, t1, 0x0040;
// The first k-step of P·V starts a fresh s32 product (scale-d 0), the others accumulate.
// CHECK: setp.ne.b32 p, 0, 0; wgmma.mma_async.sync.aligned.m64n128k32.s32.u8.s8 {{.*}}}, {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, %rd{{[0-9]+}}, p;
// CHECK: setp.ne.b32 p, 1, 0; wgmma.mma_async.sync.aligned.m64n128k32.s32.u8.s8
// CHECK: cvt.rn.f32.s32
// Q·Kᵀ (placed after P·V: LLVM rotates the tile loop).
// CHECK: wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8

// META: "mode": "full_int8",
// META: "q_dtype": "i8",
// META: "q_quant": "per_token_head",
// META: "v": {
// META: "dtype": "u8",
// META-NEXT: "swizzle": 128

func.func @pf_fi8(%q: memref<?x?x16x128xi8>, %k: memref<?x?x1x128xi8>, %v: memref<?x?x1x128xi8>,
                  %qs: memref<?x?x16xf32>, %ks: memref<?x?x1xf32>, %vs: memref<?x?x1xf32>,
                  %o: memref<?x?x16x128xbf16>) {
  attn.attention prefill ins(%q, %k, %v : memref<?x?x16x128xi8>, memref<?x?x1x128xi8>, memref<?x?x1x128xi8>)
      q_scale(%qs : memref<?x?x16xf32>) k_scale(%ks : memref<?x?x1xf32>) v_scale(%vs : memref<?x?x1xf32>)
      outs(%o : memref<?x?x16x128xbf16>)
      {causal, mode = #attn.mode<full_int8>, q_quant = #attn.quant<i8, per_token_head>,
       k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>,
       target = #attn.target<sm_90a>}
  return
}
