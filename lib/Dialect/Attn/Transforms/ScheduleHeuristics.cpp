//===- ScheduleHeuristics.cpp - the decisions of attn-select-schedule -----===//
//
// What this file is: the schedule heuristic as pure functions (see ScheduleHeuristics.h and
// docs/Schedules.md). No MLIR here, so the runtime and the unit tests link it alone.
//
//===----------------------------------------------------------------------===//

#include "attn/Dialect/Attn/Transforms/ScheduleHeuristics.h"
#include "attn/Dialect/Attn/Transforms/ForwardSharedMemory.h"

#include <algorithm>
#include <cstdint>

using namespace mlir::attn;

static int64_t ceilDiv(int64_t a, int64_t b) { return a / b + (a % b != 0); }
/// a · b, saturated at INT64_MAX (non-negative operands): extents up to 2^31 multiply past it.
static int64_t mulSat(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

int64_t mlir::attn::selectPackQHeads(const AttentionShape &s, const GPUInfo &gpu) {
  if (s.kvHeads <= 0 || s.qHeads % s.kvHeads != 0 || s.qLen <= 0)
    return 1;
  int64_t ratio = s.qHeads / s.kvHeads;
  // Candidates stop at the tile's rows: the loop is bounded by wgmmaM, not by the ratio.
  int64_t best = 1, limit = std::min(ratio, gpu.wgmmaM / s.qLen);
  for (int64_t p = 1; p <= limit; ++p)
    if (ratio % p == 0)
      best = p;
  return best;
}

int64_t mlir::attn::selectTileN(const AttentionShape &s) {
  // Long tiles amortize the per-tile softmax bookkeeping; shared memory bounds them: int8/fp8
  // caches get 128 keys up to head_dim 128 and 64 at 256, bf16 caches half of that.
  for (int64_t n : {128, 64, 32})
    if (layoutForwardSharedMemory(s, n, 2).bytes() <= kMaxSharedBytesSm90)
      return n;
  return 32;
}

/// Time of `ctas × splits` CTAs that each read 1/splits of the keys, in units of one unsplit CTA:
/// the waves the SMs run (one CTA per SM each), each wave a 1/splits share of the cache.
static double splitCost(int64_t ctas, int64_t splits, int64_t numSMs) {
  return double(ceilDiv(mulSat(ctas, splits), numSMs)) / double(splits);
}

int64_t mlir::attn::splitKvKeys(int64_t kvLen, int64_t qLen, int64_t windowLeft) {
  return windowLeft >= 0 ? std::min(kvLen, windowLeft + qLen) : kvLen;
}

int64_t mlir::attn::selectSplitKv(int64_t ctas, int64_t kvLen, int64_t tileN, const GPUInfo &gpu) {
  if (ctas <= 0 || kvLen <= 0 || gpu.numSMs <= 0)
    return 1;
  int64_t tiles = std::max<int64_t>(1, ceilDiv(kvLen, tileN));
  // The largest count that still fits one wave: a second, partial wave would cost a whole extra
  // CTA time (measured on the H100: 5 splits of 32 CTAs ran in two waves, 4 fill 128 SMs).
  int64_t oneWave = ctas >= gpu.numSMs ? 1 : std::min(gpu.numSMs / ctas, tiles);
  // Long caches over a grid that leaves SMs idle (104 CTAs on 132 SMs) or ends in a partial
  // wave (192 CTAs: 1.45 waves run as 2) split further so the waves come out even, as long as
  // every split keeps kMinTilesPerSplit tiles to amortize its merge. Taken only where it saves
  // over 10%, so the one-wave rule above stands wherever it is near even.
  int64_t most = std::min<int64_t>(tiles / kMinTilesPerSplit, kMaxBalancedSplits);
  double best = splitCost(ctas, oneWave, gpu.numSMs);
  for (int64_t s = 1; s <= most; ++s)
    best = std::min(best, splitCost(ctas, s, gpu.numSMs));
  if (splitCost(ctas, oneWave, gpu.numSMs) <= 1.1 * best)
    return oneWave;
  for (int64_t s = 1; s <= most; ++s) // the fewest splits within 2% of the best
    if (splitCost(ctas, s, gpu.numSMs) <= 1.02 * best)
      return s;
  return oneWave;
}

int64_t mlir::attn::selectCtasPerSm(const AttentionShape &s, int64_t ctas, const GPUInfo &gpu) {
  if (ctas <= gpu.numSMs || s.headDim > 128 || s.kvElemBytes != 1 || !s.int8QK || s.zeroPoints)
    return 1;
  // The lowering's bound: each CTA's shared memory plus the 1 KiB the SM reserves per CTA.
  // (bf16 queries convert K to bf16 too: 116864 bytes at head_dim 128, 2304 too many.)
  int64_t bytes =
      layoutForwardSharedMemory(s, TwoCtaSchedule::tileN, TwoCtaSchedule::stages).bytes();
  return 2 * (bytes + 1024) <= kSharedBytesPerSmSm90 ? 2 : 1;
}

DecodeSchedule mlir::attn::selectDecodeSchedule(const AttentionShape &s, const GPUInfo &gpu) {
  DecodeSchedule d;
  d.packQHeads = selectPackQHeads(s, gpu);
  d.tileN = selectTileN(s);
  // Two stages: a third (which fits with int8 Q·Kᵀ, whose K buffers stay int8) measured slower
  // on the H100 Table-3 rows (41.4 vs 38.9 µs at 1024 × 256; docs/benchmarks/gpu-decode.md).
  d.stages = 2;
  bool known = s.batch > 0 && s.kvLen >= 0;
  int64_t groups = s.kvHeads > 0 ? (s.qHeads / s.kvHeads) / d.packQHeads : 1;
  d.ctasPerSplit = known ? mulSat(mulSat(s.batch, s.kvHeads), groups) : 0;
  d.splitKv = known ? selectSplitKv(d.ctasPerSplit, s.kvLen, d.tileN, gpu) : 0;
  return d;
}
