// --emit=ptx of half_int8 prefill specs (P·V in f16). By default half-int8 is scheduled like
// bf16 and fp8: three consumer warpgroups of 160 registers and a producer of 32 on two stages,
// without the overlap. With FA3's intra-warpgroup overlap asked for, a V scale that is one per key
// tile (per_block rows a multiple of tile_n, per_head) gets bf16's two-consumer schedule
// (pingpong, three stages, one producer warpgroup), V's scale folded into O's rescale instead of
// multiplying every P, and each consumer thread's query scales parked in shared memory and
// reloaded per tile.
// RUN: attn-opt %s -split-input-file --attn-normalize --attn-select-schedule | FileCheck %s --check-prefix=SCHED
// RUN: attn-opt %s -split-input-file --attn-normalize --attn-select-schedule --emit=ptx | FileCheck %s
// RUN: attn-opt %s -split-input-file --attn-normalize --attn-select-schedule --emit=launch | FileCheck %s --check-prefix=META

// SCHED-LABEL: func.func @pf_h8_block(
// SCHED: tile_n = 128, stages = 3, roles = [producer<warpgroups = 1, regs = 40>, consumer<warpgroups = 2, regs = 232>], pingpong = true, intra_wg_overlap = true
// SCHED-LABEL: func.func @pf_h8_vhead(
// SCHED: stages = 3, {{.*}}pingpong = true, intra_wg_overlap = true
// The default: three consumers.
// SCHED-LABEL: func.func @pf_h8_token(
// SCHED: tile_n = 128, stages = 2, roles = [producer<warpgroups = 1, regs = 32>, consumer<warpgroups = 3, regs = 160>], pingpong = false, intra_wg_overlap = false
// SCHED-LABEL: func.func @pf_h8_qtoken(
// SCHED: stages = 2, roles = [producer<warpgroups = 1, regs = 32>, consumer<warpgroups = 3, regs = 160>], pingpong = false, intra_wg_overlap = false

// CHECK-LABEL: .entry pf_h8_block_prefill(
// The consumers park their two query scales, then reload them per tile (prologue and loop);
// per_block V: O is kept in units of the largest V tile scale so far (s_ref): per tile two lg2
// give log2(s_v / s_ref) for exp2's argument before the softmax, no division in the loop — only
// the epilogue's two s_ref / l.
// The producer turns V's int8 codes into f16 (byte permute under the exponent of 1024, then
// one f16x2 subtraction of 1152 per pair); P·V runs in f16.
// CHECK: setmaxnreg.dec.sync.aligned.u32 40;
// CHECK: prmt.b32 {{.*}}, 1684300900, 0x4140U;
// CHECK: add.rn.f16x2
// CHECK: setmaxnreg.inc.sync.aligned.u32 232;
// CHECK: st.shared.v2.b32 {{\[}}[[SLOT:%rd[0-9]+\+[0-9]+]]{{\]}}
// CHECK: wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8
// CHECK-COUNT-2: lg2.approx.ftz.f32
// CHECK: ld.shared.v2.b32 {{.*}}, {{\[}}[[SLOT]]{{\]}}
// CHECK: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
// CHECK-NOT: div.rn.f32
// CHECK-COUNT-2: lg2.approx.ftz.f32
// CHECK-NOT: div.rn.f32
// CHECK: ld.shared.v2.b32 {{.*}}, {{\[}}[[SLOT]]{{\]}}
// CHECK-NOT: div.rn.f32
// A tile that moves no row maximum (every alpha 1) skips O's rescale: one vote per tile.
// CHECK-NOT: div.rn.f32
// CHECK: vote.sync.any.pred
// CHECK-NOT: div.rn.f32
// CHECK: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
// CHECK-COUNT-2: div.rn.f32
// CHECK-NOT: div.rn.f32
// CHECK-LABEL: .entry pf_h8_vhead_prefill(
// per_head V: no ratio in the loop; the epilogue multiplies by the one scale.
// CHECK-COUNT-2: div.rn.f32
// CHECK-NOT: div.rn.f32
// CHECK-LABEL: .entry pf_h8_token_prefill(
// per_token query scales (q_scale [B, S], vLLM's dynamic activation scales): one scale for all
// the heads of a token, loaded at b · S + token — both rows of a consumer thread, which belong to
// one token, share the load — before the first Q·Kᵀ.
// CHECK-LABEL: .entry pf_h8_qtoken_prefill(
// CHECK: setmaxnreg.inc.sync.aligned.u32 160;
// CHECK: ld.global.nc.b32 [[QS:%r[0-9]+]],
// CHECK-NOT: ld.global.nc.b32
// CHECK: wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8

// META: "k_quant": "per_block",
// META: "mode": "half_int8",
// META: "v_quant": "per_block",
// META: "k_quant": "per_token_head",
// META: "v_quant": "per_head",
// META: "q_quant": "per_token_head",
// META: "q_quant": "per_token",

func.func @pf_h8_block(%q: memref<?x?x16x128xi8>, %k: memref<?x?x1x128xi8>, %v: memref<?x?x1x128xi8>,
                       %qs: memref<?x?x16xf32>, %ks: memref<?x?x1x1xf32>, %vs: memref<?x?x1x1xf32>,
                       %o: memref<?x?x16x128xbf16>) {
  attn.attention prefill ins(%q, %k, %v : memref<?x?x16x128xi8>, memref<?x?x1x128xi8>, memref<?x?x1x128xi8>)
      q_scale(%qs : memref<?x?x16xf32>) k_scale(%ks : memref<?x?x1x1xf32>) v_scale(%vs : memref<?x?x1x1xf32>)
      outs(%o : memref<?x?x16x128xbf16>)
      {causal, q_quant = #attn.quant<i8, per_token_head>, k_quant = #attn.quant<i8, per_block<128x128>>,
       v_quant = #attn.quant<i8, per_block<256x128>>, target = #attn.target<sm_90a>,
       schedule = #attn.schedule<intra_wg_overlap = true>}
  return
}

// -----

func.func @pf_h8_vhead(%q: memref<?x?x16x128xi8>, %k: memref<?x?x1x128xi8>, %v: memref<?x?x1x128xi8>,
                       %qs: memref<?x?x16xf32>, %ks: memref<?x?x1xf32>, %vs: memref<1xf32>,
                       %o: memref<?x?x16x128xbf16>) {
  attn.attention prefill ins(%q, %k, %v : memref<?x?x16x128xi8>, memref<?x?x1x128xi8>, memref<?x?x1x128xi8>)
      q_scale(%qs : memref<?x?x16xf32>) k_scale(%ks : memref<?x?x1xf32>) v_scale(%vs : memref<1xf32>)
      outs(%o : memref<?x?x16x128xbf16>)
      {q_quant = #attn.quant<i8, per_token_head>, k_quant = #attn.quant<i8, per_token_head>,
       v_quant = #attn.quant<i8, per_head>, target = #attn.target<sm_90a>,
       schedule = #attn.schedule<intra_wg_overlap = true>}
  return
}

// -----

func.func @pf_h8_token(%q: memref<?x?x16x128xi8>, %k: memref<?x?x1x128xi8>, %v: memref<?x?x1x128xi8>,
                       %qs: memref<?x?x16xf32>, %ks: memref<?x?x1xf32>, %vs: memref<?x?x1xf32>,
                       %o: memref<?x?x16x128xbf16>) {
  attn.attention prefill ins(%q, %k, %v : memref<?x?x16x128xi8>, memref<?x?x1x128xi8>, memref<?x?x1x128xi8>)
      q_scale(%qs : memref<?x?x16xf32>) k_scale(%ks : memref<?x?x1xf32>) v_scale(%vs : memref<?x?x1xf32>)
      outs(%o : memref<?x?x16x128xbf16>)
      {q_quant = #attn.quant<i8, per_token_head>, k_quant = #attn.quant<i8, per_token_head>,
       v_quant = #attn.quant<i8, per_token_head>, target = #attn.target<sm_90a>}
  return
}

// -----

func.func @pf_h8_qtoken(%q: memref<?x?x16x128xi8>, %k: memref<?x?x1x128xi8>, %v: memref<?x?x1x128xi8>,
                        %qs: memref<?x?xf32>, %ks: memref<?x?xf32>, %vs: memref<1xf32>,
                        %o: memref<?x?x16x128xbf16>) {
  attn.attention prefill ins(%q, %k, %v : memref<?x?x16x128xi8>, memref<?x?x1x128xi8>, memref<?x?x1x128xi8>)
      q_scale(%qs : memref<?x?xf32>) k_scale(%ks : memref<?x?xf32>) v_scale(%vs : memref<1xf32>)
      outs(%o : memref<?x?x16x128xbf16>)
      {causal, q_quant = #attn.quant<i8, per_token>, k_quant = #attn.quant<i8, per_token>,
       v_quant = #attn.quant<i8, per_tensor>, target = #attn.target<sm_90a>}
  return
}
