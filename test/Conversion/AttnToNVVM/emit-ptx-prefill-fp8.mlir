// --emit=ptx of an fp8 prefill spec: both GEMMs on e4m3 tensor cores (Q·Kᵀ with A and B in
// shared memory, P·V with P packed to e4m3 in registers), V transposed by the producer (matrix
// loads, byte permutes, matrix stores), and launch metadata naming the per_block scales and the
// 128-byte swizzles.
// RUN: attn-opt %s --attn-normalize --attn-select-schedule --emit=ptx | FileCheck %s
// RUN: attn-opt %s --attn-normalize --attn-select-schedule --emit=launch | FileCheck %s --check-prefix=META
// RUN: attn-opt %s --attn-normalize --attn-select-schedule | FileCheck %s --check-prefix=SCHED
// RUN: attn-opt %s --attn-normalize --attn-select-schedule --emit=ptx | FileCheck %s --check-prefix=VUNIT
// RUN: attn-opt %s --attn-normalize --attn-select-schedule --emit=ptx | FileCheck %s --check-prefix=SS
// RUN: attn-opt %s --attn-normalize --attn-select-schedule --emit=ptx | FileCheck %s --check-prefix=NOREFILL
// RUN: sed 's/{causal, /{/' %s | attn-opt --attn-normalize --attn-select-schedule | FileCheck %s --check-prefix=PSCHED
// RUN: sed 's/{causal, /{/' %s | attn-opt --attn-normalize --attn-select-schedule --emit=ptx | FileCheck %s --check-prefix=REFILL

// Non-causal (keys unknown): the persistent grid on three stages. Its producer's leader waits
// for the next tile's stage, and only tests (mbarrier.test_wait) those of the tiles after it;
// one CTA per item (the causal spec) has no such test.
// PSCHED: stages = 3, {{.*}}persistent = true>
// REFILL: .entry pf_fp8_prefill(
// REFILL: mbarrier.test_wait.parity.shared::cta.b64
// NOREFILL-NOT: mbarrier.test_wait

// fp8 keeps O in units of the last V tile's scale (half-int8's s_ref would put a factor below 1
// on an e4m3 P): O's rescale divides the two tiles' scales (approximately; exactly 1 where the
// unit stays) before the vote, and no lg2.
// VUNIT-NOT: lg2.approx
// VUNIT: setp.ge.f32 {{.*}}, 0f00800000;
// VUNIT: div.approx.ftz.f32
// VUNIT: vote.sync.any.pred
// VUNIT-NOT: lg2.approx

// Q·Kᵀ: A (Q) and B (K, read where TMA put it) both from shared memory descriptors.
// SS: wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {{.*}}}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, p, 1, 1;

// SCHED: mode = #attn.mode<fp8>
// SCHED-SAME: tile_n = 128, stages = 2, roles = [producer<warpgroups = 1, regs = 32>, consumer<warpgroups = 3, regs = 160>], pingpong = false, intra_wg_overlap = false

// CHECK: .entry pf_fp8_prefill(
// The prologue loads the first tile only (its K and V: two TMA copies) beside the query rows;
// the producer issues the other stages after the CTA barrier.
// CHECK-COUNT-2: cp.async.bulk.tensor.4d.shared::cta.global.tile.mbarrier::complete_tx::bytes
// CHECK-NOT: cp.async.bulk.tensor
// CHECK: bar.sync 0;
// CHECK: setmaxnreg.dec.sync.aligned.u32 32;
// CHECK: cp.async.bulk.tensor.4d.shared::cta.global.tile.mbarrier::complete_tx::bytes
// The producer's transpose of V: 16-bit transposing matrix loads of the stage, byte permutes
// pairing the two 8-key halves (selectors per lane), matrix stores of Vᵀ rows.
// CHECK: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// CHECK: prmt.b32 {{.*}}, %r{{[0-9]+}};
// CHECK: stmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK: setmaxnreg.inc.sync.aligned.u32 160;
// Each k-step's descriptor is the tile's first one plus the step's offset in 16-byte units (the
// address field never carries): one instruction per step, no shift or mask.
// CHECK: or.b64 {{%rd[0-9]+}}, [[QLO:%rd[0-9]+]], 4611686293305360384;
// CHECK: or.b64 {{%rd[0-9]+}}, [[QLO]], 4611686293305360386;
// CHECK: cvt.rn.satfinite.e4m3x2.f32
// The P·V WGMMA: A (P) from four registers, B (Vᵀ) K-major (no transpose immediate).
// CHECK: wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {{.*}}}, {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, %rd{{[0-9]+}}, p, 1, 1;
// The epilogue stages O through the warpgroup's query tile once every warp is past its last
// Q·Kᵀ, and stores whole 16-byte chunks of rows; an 8-bit query tile holds half a row of O, so
// the second pass writes 128 bytes further along the rows.
// CHECK: bar.sync {{%r[0-9]+}}, 128;
// CHECK: st.shared.b32
// CHECK: bar.warp.sync -1;
// CHECK: ld.shared.v4.b32 {[[V:%r[0-9]+]],
// CHECK: st.global.v4.b32 [{{%rd[0-9]+}}], {[[V]],
// CHECK: bar.warp.sync -1;
// CHECK: st.shared.b32
// CHECK: bar.warp.sync -1;
// CHECK: st.global.v4.b32 [{{%rd[0-9]+}}+128],

// META: "k_block_rows": 128,
// META: "q_block_rows": 64,
// META-NEXT: "q_dtype": "f8E4M3FN",
// META-NEXT: "q_heads": 16,
// META-NEXT: "q_len": -1,
// META-NEXT: "q_quant": "per_block",
// META: "v_block_rows": 256,
// META-NEXT: "v_quant": "per_block",
// META: "tensor_maps": {
// META-NEXT: "k": {
// META-NEXT: "box": [
// META-NEXT: 128,
// META: "dtype": "u8",
// META-NEXT: "swizzle": 128
// META: "v": {
// META: "dtype": "u8",
// META-NEXT: "swizzle": 128

func.func @pf_fp8(%q: memref<?x?x16x128xf8E4M3FN>, %k: memref<?x?x1x128xf8E4M3FN>, %v: memref<?x?x1x128xf8E4M3FN>,
                  %qs: memref<?x?x16x1xf32>, %ks: memref<?x?x1x1xf32>, %vs: memref<?x?x1x1xf32>,
                  %o: memref<?x?x16x128xbf16>) {
  attn.attention prefill ins(%q, %k, %v : memref<?x?x16x128xf8E4M3FN>, memref<?x?x1x128xf8E4M3FN>, memref<?x?x1x128xf8E4M3FN>)
      q_scale(%qs : memref<?x?x16x1xf32>) k_scale(%ks : memref<?x?x1x1xf32>) v_scale(%vs : memref<?x?x1x1xf32>)
      outs(%o : memref<?x?x16x128xbf16>)
      {causal, q_quant = #attn.quant<f8E4M3FN, per_block<64x128>>, k_quant = #attn.quant<f8E4M3FN, per_block<128x128>>,
       v_quant = #attn.quant<f8E4M3FN, per_block<256x128>>, target = #attn.target<sm_90a>}
  return
}
