//===- ForwardSharedMemory.h - the forward kernel's shared memory -*- C++ -*-===//
//
// What this file is: the one computation of the dynamic shared memory of the sm_90a
// forward-attention kernel (decode and prefill): where every ring, stage, buffer and mbarrier
// lives and how many bytes the kernel requests. attn-select-schedule's fit checks and the NVVM
// lowering's layout both call layoutForwardSharedMemory. Plain C++ (no MLIR), like the schedule
// heuristic beside it.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_DIALECT_ATTN_TRANSFORMS_FORWARDSHAREDMEMORY_H
#define ATTN_DIALECT_ATTN_TRANSFORMS_FORWARDSHAREDMEMORY_H

#include "attn/Dialect/Attn/Transforms/ScheduleHeuristics.h"

#include <cstdint>

namespace mlir::attn {

/// Byte offsets from the kernel's 1024-aligned shared-memory base, in this order: the query
/// tiles, the K+V pipeline stages TMA fills, the converted-tile buffers, their K and V scales,
/// the zero-point constants, the parked query scales and the mbarriers. A ring's buffer i starts
/// at its base + i · stride; V follows K at +stageV (stages) and +convV (buffers).
struct ForwardSharedLayout {
  int64_t q = 0, stage = 0, stageStride = 0, stageV = 0, conv = 0, convStride = 0, convV = 0,
          scales = 0, scaleStride = 0, zeros = 0, qScales = 0, bars = 0, total = 0;
  /// Converted-tile buffers: none when the WGMMAs read the stages (bf16 cache), three when K is
  /// read from the stages (only V converted), else two.
  int64_t nConv = 0;
  // The mbarriers inside `bars`: full per stage, full and empty per conversion buffer, then
  // (bf16 cache, or K read from the stages) empty per stage — the consumers release what they
  // read from a stage — and (bf16 cache) `tail`, on which the partial tile's loads complete (the
  // producer zeroes its V rows past the end, then arrives on full).
  int64_t fullStage(int64_t s) const { return bars + 8 * s; }
  int64_t fullConv(int64_t b, int64_t stages) const { return bars + 8 * (stages + b); }
  int64_t emptyConv(int64_t b, int64_t stages) const { return bars + 8 * (stages + nConv + b); }
  int64_t emptyStage(int64_t s, int64_t stages) const {
    return bars + 8 * (stages + 2 * nConv + s);
  }
  int64_t tail(int64_t stages) const { return bars + 8 * (2 * stages + 2 * nConv); }
  /// Dynamic shared memory the kernel requests: the map plus 1 KiB to align the base.
  int64_t bytes() const { return total + 1024; }
};

/// The layout for `s` with `tileN` keys per tile and `stages` K+V stages. With `s.int8QK` or
/// `s.fp8` the query tiles (and copied K buffers) hold one byte per element; a row of them spans
/// at least one 128-byte swizzle row. A bf16 cache (kvElemBytes 2) has no conversion buffers or
/// scales: the WGMMAs read the stages TMA fills. `kDirect` (prefill with int8 queries and the
/// overlap) and `s.pv8()`: K is read from the stages too and three buffers hold the converted V
/// (bf16, or 8-bit Vᵀ for fp8 and full_int8); with int8 queries (half-int8) 8 bytes per consumer
/// thread (`s.queryTiles` warpgroups) hold its rows' query scales. With `s.zeroPoints` a K and a
/// V zero-point constant per key follow the scales.
ForwardSharedLayout layoutForwardSharedMemory(const AttentionShape &s, int64_t tileN,
                                              int64_t stages, bool kDirect = false);

} // namespace mlir::attn

#endif // ATTN_DIALECT_ATTN_TRANSFORMS_FORWARDSHAREDMEMORY_H
