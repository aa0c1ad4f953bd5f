//===- Passes.td - attn dialect-level passes ---------------*- tablegen -*-===//
//
// What this file is: the passes that work on specs before any lowering — `attn-normalize` (make
// defaults explicit, check the spec is complete) and `attn-select-schedule` (fill the schedule).
// Conversions to NVVM and to CPU code are declared in include/attn/Conversion/Passes.td.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TRANSFORMS_PASSES_TD
#define ATTN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def AttnNormalize : Pass<"attn-normalize", "ModuleOp"> {
  let summary = "Make every implicit default of a spec explicit and check the spec is complete";
  let description = [{
    For every attn op: infers `mode` from the element types, writes `softmax_scale = 1/sqrt(D)`
    when absent, and sets the `target` from the pass option when the op has none. Fails with a
    located error when an op still has no target — the lowering passes need one. Warns where an
    `attn.quantize.append` / `.dynamic` writing an attention's q, k or v memref rotates its rows
    (`hadamard`) and the attention does not, or the reverse (rows rotated elsewhere — folded into
    weights — are invisible to the spec, so this is not an error).

    Example: `attn-opt --attn-normalize="target=sm_90a" spec.mlir`.
  }];
  let options = [
    Option<"defaultTarget", "target", "std::string", /*default=*/"\"\"",
           "Target given to ops that have none (sm_90a, avx2, avx512, avx512_vbmi, avx512_vnni, "
           "neon, scalar)">
  ];
}

def AttnSelectSchedule : Pass<"attn-select-schedule", "ModuleOp"> {
  let summary = "Fill missing schedule fields (packing, split-KV, tiles, stages, roles, cluster)";
  let description = [{
    Decides every schedule field the spec left out with the heuristic documented in
    docs/Schedules.md (unit-tested in unittests/ScheduleHeuristicsTest.cpp; the defaults stated
    here are checked against the pass by test/Docs/schedule-defaults.test):

    * decode: pack the query heads of one KV head into the 64-row WGMMA tile (the largest divisor
      of Hq/Hkv whose rows fit), then split the K/V sequence until the grid covers the SMs
      (`num-sms`), at most one split per `tile_n` keys;
    * prefill: one 64-row query tile per consumer warpgroup and one K/V split. bf16, fp8 and
      half-int8 up to head_dim 128 run three consumer warpgroups (192 query rows per CTA) beside
      one producer warpgroup on two stages, on FA3's persistent grid up to 2048 keys (fp8 and
      half-int8 with one K and one V scale per key tile: at any length without `causal`, up to
      4096 keys with it; fp8 at head_dim 128 then on three stages); full_int8 runs two consumer
      warpgroups, head_dim 256 one. A spec that fixes `roles`, `intra_wg_overlap`, `pingpong`
      or `persistent = true` gets two consumer warpgroups instead (bf16: with FA3's
      intra-warpgroup overlap and pingpong on three stages);
    * MLA decode: 64 query heads per CTA, crossover on a 2-CTA cluster when Hq is a multiple of 128
      and the cache is FP8.

    Fields written in the spec are kept; a `split_kv = auto` with dynamic lengths stays `auto`
    and is resolved at launch by the same function. Runs `attn-normalize`'s checks first: an op
    must have a target.
  }];
  let options = [
    Option<"numSMs", "num-sms", "int64_t", /*default=*/"132",
           "Streaming multiprocessors of the target GPU (H100 SXM: 132)">
  ];
}

#endif // ATTN_TRANSFORMS_PASSES_TD
