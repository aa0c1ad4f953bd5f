//===- ScheduleHeuristics.h - how attn-select-schedule decides --*- C++ -*-===//
//
// What this file is: the schedule heuristic as plain functions on plain structs, so that the pass,
// the runtime (for split_kv = auto with lengths known only at launch) and the unit tests all call
// the same code. docs/Schedules.md explains each rule.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_DIALECT_ATTN_TRANSFORMS_SCHEDULEHEURISTICS_H
#define ATTN_DIALECT_ATTN_TRANSFORMS_SCHEDULEHEURISTICS_H

#include <cstdint>

namespace mlir::attn {

/// Extents of an attention problem; kDynamicExtent where unknown at compile time.
struct AttentionShape {
  static constexpr int64_t kDynamicExtent = -1;
  int64_t batch = kDynamicExtent;
  int64_t qLen = 1;
  int64_t kvLen = kDynamicExtent;
  int64_t qHeads = 1;
  int64_t kvHeads = 1;
  int64_t headDim = 128;
  /// Bytes of one K/V element in the cache (1 for int8 / fp8, 2 for bf16).
  int64_t kvElemBytes = 1;
  /// int8 queries over an int8 K cache: Q and the K buffer stay int8 (s8 WGMMA).
  bool int8QK = false;
  /// fp8 prefill: e4m3 Q, K and V, both GEMMs on fp8 tensor cores; K read from the pipeline
  /// stages, V transposed into three e4m3 buffers.
  bool fp8 = false;
  /// full_int8 prefill (with int8QK): P·V on s8 tensor cores too; K read from the stages and V
  /// transposed into three int8 buffers, as for fp8.
  bool fullInt8 = false;
  /// P·V on 8-bit tensor cores (fp8, full_int8).
  bool pv8() const { return fp8 || fullInt8; }
  /// Asymmetric K/V: the producer stages one zero-point constant per key of K and of V.
  bool zeroPoints = false;
  /// 64-row query tiles in shared memory (prefill: one per consumer warpgroup).
  int64_t queryTiles = 1;
  /// Sets of query tiles (2: a persistent prefill grid loads the next work item's queries
  /// while it works on the current one's).
  int64_t queryBuffers = 1;
};

struct GPUInfo {
  int64_t numSMs = 132;
  /// Rows of one WGMMA M tile (one warpgroup).
  int64_t wgmmaM = 64;
};

struct DecodeSchedule {
  int64_t packQHeads = 1;
  /// Number of KV splits; 0 when the K/V length is dynamic (decided at launch).
  int64_t splitKv = 1;
  int64_t tileN = 128;
  int64_t stages = 2;
  /// CTAs in the grid before splitting: batch × KV heads × query-head groups.
  int64_t ctasPerSplit = 1;
};

/// Largest divisor of (qHeads / kvHeads) whose packed rows (pack × qLen) fit in one WGMMA M tile.
int64_t selectPackQHeads(const AttentionShape &s, const GPUInfo &gpu);

/// Shared memory of one sm_90a CTA.
inline constexpr int64_t kMaxSharedBytesSm90 = 227 * 1024;
/// Shared memory of one sm_90a SM, shared by its resident CTAs (each also holds 1 KiB reserved).
inline constexpr int64_t kSharedBytesPerSmSm90 = 228 * 1024;

/// Keys per K/V tile: the largest of 128, 64, 32 whose two-stage pipeline fits in shared memory.
int64_t selectTileN(const AttentionShape &s);

/// Splits of a long cache keep at least this many tiles each (the merge's cost stays small).
inline constexpr int64_t kMinTilesPerSplit = 16;
/// Splits the wave balancing of selectSplitKv considers at most.
inline constexpr int64_t kMaxBalancedSplits = 64;

/// The split-KV count of a decode launch of `ctas` CTAs per split. The largest count with
/// `ctas × split` within one wave of the SMs (the decode kernel runs one CTA per SM), capped so
/// that every split keeps at least one tile of `tileN` keys; for long caches where that leaves
/// SMs idle or a partial last wave, the fewest splits (each of at least kMinTilesPerSplit tiles)
/// whose waves come out even. The runtime, the torch extension and attn-bench call this for
/// dynamic lengths and batches.
int64_t selectSplitKv(int64_t ctas, int64_t kvLen, int64_t tileN, const GPUInfo &gpu);

/// The keys a decode launch's splits share, what selectSplitKv divides: with a left window
/// (`windowLeft` ≥ 0) the window_left + q_len keys that reach the last query — the kernel skips
/// the tiles before them — at most kv_len; else the whole cache.
int64_t splitKvKeys(int64_t kvLen, int64_t qLen, int64_t windowLeft);

/// The schedule of a decode kernel built for two CTAs per SM: tile_n 64 and two stages, one
/// producer warpgroup of 56 registers and one consumer of 200 (256 threads entering with 128).
/// attn-select-schedule fills it for `ctas_per_sm = 2`; convert-attn-to-nvvm builds the
/// dynamic-batch companion with it.
struct TwoCtaSchedule {
  static constexpr int64_t tileN = 64, stages = 2, producerRegs = 56, consumerRegs = 200;
};

/// CTAs per SM for a decode kernel whose grid (one split) has `ctas` CTAs: 2 when that grid is
/// known and takes more than one wave at one CTA per SM, the cache is int8 read by int8 queries
/// (no zero points) up to head_dim 128, and the two-CTA schedule (tile_n 64, two stages, one
/// producer and one consumer warpgroup) fits twice in an SM's shared memory; else 1. Measured on
/// the H100, Table 3's 1024 × 256 row (256 CTAs): 34.0 µs against 38.6 in two waves.
int64_t selectCtasPerSm(const AttentionShape &s, int64_t ctas, const GPUInfo &gpu);

/// The whole decode decision. `splitKv` is 0 when kvLen or batch is dynamic.
DecodeSchedule selectDecodeSchedule(const AttentionShape &s, const GPUInfo &gpu);

} // namespace mlir::attn

#endif // ATTN_DIALECT_ATTN_TRANSFORMS_SCHEDULEHEURISTICS_H
