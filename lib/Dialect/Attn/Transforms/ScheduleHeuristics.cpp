//===- ScheduleHeuristics.cpp - the decisions of attn-select-schedule -----===//
//
// What this file is: the schedule heuristic as pure functions (see ScheduleHeuristics.h and
// docs/Schedules.md). No MLIR here, so the runtime and the unit tests link it alone.
//
//===----------------------------------------------------------------------===//

#include "attn/Dialect/Attn/Transforms/ScheduleHeuristics.h"

#include <algorithm>

using namespace mlir::attn;

static int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t mlir::attn::selectPackQHeads(const AttentionShape &s, const GPUInfo &gpu) {
  if (s.kvHeads <= 0 || s.qHeads % s.kvHeads != 0 || s.qLen <= 0)
    return 1;
  int64_t ratio = s.qHeads / s.kvHeads;
  int64_t best = 1;
  for (int64_t p = 1; p <= ratio; ++p)
    if (ratio % p == 0 && p * s.qLen <= gpu.wgmmaM)
      best = p;
  return best;
}

int64_t mlir::attn::selectTileN(const AttentionShape &s) {
  // K and V tiles of 128 keys fit two pipeline stages in shared memory up to head_dim 128;
  // head_dim 256 halves the tile to stay within the 227 KiB of one SM.
  return s.headDim <= 128 ? 128 : 64;
}

int64_t mlir::attn::selectSplitKv(int64_t ctas, int64_t kvLen, int64_t tileN, const GPUInfo &gpu) {
  if (ctas <= 0 || kvLen <= 0)
    return 1;
  int64_t maxSplits = std::max<int64_t>(1, ceilDiv(kvLen, tileN));
  if (ctas >= gpu.numSMs)
    return 1;
  return std::min(ceilDiv(gpu.numSMs, ctas), maxSplits);
}

DecodeSchedule mlir::attn::selectDecodeSchedule(const AttentionShape &s, const GPUInfo &gpu) {
  DecodeSchedule d;
  d.packQHeads = selectPackQHeads(s, gpu);
  d.tileN = selectTileN(s);
  d.stages = 2;
  bool known = s.batch > 0 && s.kvLen >= 0;
  int64_t groups = s.kvHeads > 0 ? (s.qHeads / s.kvHeads) / d.packQHeads : 1;
  d.ctasPerSplit = known ? s.batch * s.kvHeads * groups : 0;
  d.splitKv = known ? selectSplitKv(d.ctasPerSplit, s.kvLen, d.tileN, gpu) : 0;
  return d;
}
