//===- ForwardPlan.h - one Hopper forward kernel, decided -------*- C++ -*-===//
//
// What this file is: the kernel-level description of a forward-attention kernel (decode and
// prefill: one generator under different schedules) — every decision of the spec and its schedule
// resolved to numbers (packing, tiles, stages, roles, the shared memory map) — that the generator in
// ForwardKernel.cpp turns into NVVM, and that the launch metadata (LaunchMetadata.cpp,
// docs/GPUDecode.md) is written from. Decode's split-KV combine kernels are built at the kernel
// level by attn-build-kernel. Private to this folder.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_LIB_CONVERSION_ATTNTONVVM_FORWARDPLAN_H
#define ATTN_LIB_CONVERSION_ATTNTONVVM_FORWARDPLAN_H

#include "attn/Dialect/Attn/IR/Attn.h"
#include "attn/Dialect/Attn/Transforms/ForwardSharedMemory.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <memory>
#include <string>

namespace mlir::attn::nvvm {

enum class KVType { I8, F8E4M3, BF16 };

struct ForwardPlan {
  std::string name;
  // Problem (-1: known at launch).
  int64_t batch = -1, qLen = 1, qHeads = 1, kvHeads = 1, headDim = 128, kvLen = -1;
  KVType kv = KVType::BF16;
  /// int8 queries with per-(token, head) scales: S = s_q · s_k · (q̂·k̂) on s8 WGMMA (K is copied,
  /// not dequantized; head_dim 128 only).
  bool qI8 = false;
  /// Asymmetric K/V (zero points of the code type, the scales' granularity): the producer
  /// converts k̂ − z exactly (bf16 holds every integer in [−255, 255]). `unsignedCodes`: ui8.
  bool zeroPoints = false, unsignedCodes = false;
  /// Prefill mode fp8: e4m3 queries, K and V; S = s_q · s_k · (q̂·k̂) on e4m3 WGMMA reading K
  /// from the TMA stage; the producer transposes V into Vᵀ (keys permuted to match P's register
  /// fragment); P·256 is packed to e4m3 in registers and O += P̂·V̂ᵀ runs on e4m3 WGMMA, V's
  /// per-tile scale folded into O's rescale (head_dim 128, tile_n 128).
  bool fp8 = false;
  /// Prefill mode full_int8 (int8 queries, qI8): Q·Kᵀ on s8 WGMMA as for half_int8, then P
  /// (times each key's V scale) quantized to u8 with one scale per row and tile (its maximum
  /// / 255) and O += (P̂·V̂ᵀ) · scale on u8 × s8 WGMMA with s32 accumulators, V transposed by
  /// the producer as for fp8 (head_dim 128, tile_n 128).
  bool fullI8 = false;
  /// The arithmetic mode (`mode`, or the one the element types imply), for the launch metadata.
  std::string mode = "bf16";
  /// P·V on 8-bit tensor cores (fp8, full_int8): K read from the TMA stage, V transposed into
  /// one-byte Vᵀ buffers (keys permuted to match P's register fragment).
  bool pv8() const { return fp8 || fullI8; }
  /// Tokens per scale of per_block<r x D> granularities (1 otherwise): queries (fp8), K and V.
  int64_t qBlock = 1, kBlock = 1, vBlock = 1;
  /// The query scales' granularity (qk8): per_token_head [B, S, Hq], per_token [B, S] (int8
  /// queries) or per_block [B, ceil(S/r), Hq, 1] (fp8).
  Granularity qGran = Granularity::per_token_head;
  /// Prefill: the q_len query tokens are cut into chunks of `qChunk` tokens (pack · qChunk ≤ 64
  /// rows, one WGMMA tile); one CTA per (consumerWGs chunks, group, batch): each consumer
  /// warpgroup owns one chunk's query tile and both run over every key tile the CTA's queries
  /// see (the K/V tile in shared memory feeds 128 rows), one split.
  bool prefill = false;
  int64_t qChunk = 1;
  /// Prefill, schedule `intra_wg_overlap`: a consumer issues tile j's Q·Kᵀ together with tile
  /// j−1's P·V and runs the softmax of S_j while P·V_{j−1} is in flight (FA3).
  bool overlap = false;
  /// Prefill with the overlap and two consumers, schedule `pingpong` (FA3): the consumers take
  /// turns issuing their WGMMAs (named barriers 4 and 5), so one's softmax runs under the
  /// other's GEMMs.
  bool pingpong = false;
  /// Prefill, schedule `persistent` (FA3): one CTA per SM (grid x `persistent_ctas`) walks the
  /// work items (query chunk, group, batch element), longest first; the producer streams the
  /// next item's tiles while the consumers finish the current one.
  bool persistent = false;
  /// Query tiles in shared memory: one per consumer for prefill, one for decode.
  int64_t qTiles() const { return prefill ? consumerWGs : 1; }
  /// Bytes of one row of a Q·Kᵀ operand in shared memory (the query tile, K copied or
  /// converted by the producer): head_dim elements, and at least one 128-byte swizzle row — an
  /// 8-bit head_dim of 64 fills half of each row, and the WGMMAs read only that half.
  int64_t qkRowBytes() const { return std::max<int64_t>(128, headDim * (qk8() ? 1 : 2)); }
  /// Bytes of one 64-row query tile.
  int64_t qTileBytes() const { return 64 * qkRowBytes(); }
  /// Sets of qTiles() query tiles: 2 with a persistent grid where shared memory allows — the
  /// consumers copy the next work item's queries (cp.async) into the other set while they work
  /// on the current item, so no item waits for its queries' DRAM round trip; 1 otherwise.
  int64_t qBuffers = 1;
  /// Query tokens per CTA.
  int64_t ctaTokens() const { return prefill ? qChunk * consumerWGs : qLen; }
  Granularity kGran = Granularity::per_tensor, vGran = Granularity::per_tensor;
  bool causal = false, alibi = false, seqLens = false;
  /// Decode: attention sinks ([Hq] f32 logits, attnk.softmax_sink) and the log-sum-exp output
  /// ([B, Sq, Hq] f32): each adds a kernel parameter after the others.
  bool sinks = false, lse = false;
  /// Decode: logit soft-capping (`softcap` on attn.attention; 0: none): each base-2 logit s
  /// becomes C · tanh(s / C) with C = softcap · log2(e), before ALiBi and the masks.
  double softcap = 0.0;
  /// A sliding window (`window` on attn.attention; −1: unbounded on that side): the
  /// query at position i sees keys [i − windowLeft, i + windowRight] (the spec's bounds; with
  /// `causal` the causal mask bounds the right side). The key tiles wholly before the first
  /// query's window are skipped (setupWorkTiles), the first tiles of the window are masked from
  /// below.
  int64_t windowLeft = -1, windowRight = -1;
  bool windowed() const { return windowLeft >= 0 || windowRight >= 0; }
  /// The last key a row sees lies `windowRight` past its position (not causal, right ≥ 0).
  bool rightWindow() const { return !causal && windowRight >= 0; }
  /// Q, K and V hold rotated rows (x·H, H the normalized Walsh–Hadamard matrix of order headDim):
  /// the consumers multiply O by H before the epilogue (`hadamard` on attn.attention).
  bool hadamard = false;
  double softmaxScale = 0.0;
  // Schedule.
  int64_t pack = 1, tileN = 128, stages = 2, splitKv = 0 /*0: auto*/;
  int64_t producerRegs = 80, consumerRegs = 208, producerWGs = 1, consumerWGs = 2;
  /// CTAs built to share one SM (`.minnctapersm`): each thread enters with 65536 / (threads ·
  /// ctasPerSm) registers.
  int64_t ctasPerSm = 1;
  /// Rows of one TMA box (0: tile_n): a tile is loaded as tile_n / this many boxes, so kernels
  /// of different tile_n can share the tensor maps (the wide-batch companion below).
  int64_t tmaBoxRows = 0;
  int64_t boxRows() const { return tmaBoxRows ? tmaBoxRows : tileN; }
  /// A paged K/V cache (block_table, page_size): tokens per page (0: contiguous K/V), entries
  /// of the block table per sequence, and pages in the pool (-1: known at launch). The tensor
  /// maps cover the pool as [1, num_pages · P, Hkv, D]; a box never straddles two pages
  /// (boxRows() divides P), and the K/V scales are stored per page.
  int64_t pageSize = 0, maxBlocks = 0, numPages = -1;
  bool paged() const { return pageSize > 0; }
  /// Prefill over a ragged batch (`cu_seqlens_q` on attn.attention): q and out pack the rows of
  /// every sequence along Sq; the kernel's q_len is the most of any sequence (the grid's query
  /// chunks), and cu_seqlens_q [B + 1] and total_q (the packed rows, which every row is clamped
  /// into) are its last parameters.
  bool ragged = false;
  /// The kernel's parameters: the launch ABI's fifteen, q_len when it is dynamic, block_table
  /// and num_slots (the pool's rows, num_pages · P) when paged, then sinks and lse when the spec
  /// has them, and cu_seqlens_q and total_q when ragged.
  size_t numParams() const { return raggedParam() + (ragged ? 2 : 0); }
  /// The index of block_table (num_slots follows it), sinks and lse among them (where the plan
  /// has them).
  size_t blockTableParam() const { return 15 + (qLen < 0 ? 1 : 0); }
  size_t sinksParam() const { return blockTableParam() + (paged() ? 2 : 0); }
  size_t lseParam() const { return sinksParam() + (sinks ? 1 : 0); }
  size_t raggedParam() const { return lseParam() + (lse ? 1 : 0); }
  /// This plan is the companion `<name>_decode_2cta` (two CTAs per SM), launched instead of
  /// `<name>_decode` when the batch, known only at launch, makes more than one wave of CTAs.
  bool wideBatch = false;
  /// Decode with a dynamic batch whose two-CTA schedule fits: the companion's plan.
  std::shared_ptr<const ForwardPlan> wide;
  /// Decode: split counts up to this one merge inside the decode kernel — launched with a
  /// cluster of `num_splits` CTAs along x, the splits exchange their partials through
  /// distributed shared memory and each writes part of the output, so no combine kernel runs.
  /// 0 for prefill (one split) and the persistent grid.
  int64_t clusterSplits() const { return prefill || persistent ? 0 : kMaxClusterSplits; }
  /// Two: a pair of one-CTA-per-SM CTAs always finds a free pair of SMs, and on the H100 2 splits
  /// merged in the cluster beat the combine kernel (Table 3 4096 × 64: 36.3 against 38.0 µs);
  /// clusters of 4 or 8 such CTAs do not all fit the GPCs at once — 8192 × 32 (4 splits) and
  /// 16384 × 16 (8) ran in two waves, 66 and 71 µs against 37 µs (docs/benchmarks/gpu-decode.md).
  /// The kernel merges any cluster of its splits (checked at 2, 3 and 8).
  static constexpr int64_t kMaxClusterSplits = 2;
  int64_t producerThreads() const { return 128 * producerWGs; }
  /// A producer of at most 32 registers (three consumer warpgroups): it recomputes its chunk
  /// addresses per tile and converts one chunk at a time — hoisted addresses and two chunks in
  /// flight spill it.
  bool leanProducer() const { return producerRegs <= 32; }
  int64_t threads() const { return 128 * (producerWGs + consumerWGs); }

  int64_t groupSize() const { return qHeads / kvHeads; }
  int64_t rows() const { return (prefill ? qChunk : qLen) * pack; }
  int64_t qChunks() const { return prefill ? (qLen + ctaTokens() - 1) / ctaTokens() : 1; }
  /// `<name>_decode`, or `<name>_prefill` for prefill (which has no combine kernel).
  std::string kernelName() const {
    return name + (prefill ? "_prefill" : wideBatch ? "_decode_2cta" : "_decode");
  }
  int64_t groupsPerKv() const { return groupSize() / pack; }
  int64_t groups() const { return kvHeads * groupsPerKv(); }
  int64_t kvElemBytes() const { return kv == KVType::BF16 ? 2 : 1; }
  bool hasScales() const { return kv != KVType::BF16; }
  /// bf16 caches need no conversion: TMA writes K/V tiles straight into the 128-byte-swizzled
  /// layout the WGMMAs read (boxes of 64 columns), the consumers read the pipeline stages and
  /// release them, and the producer warpgroup only issues loads and zeroes the V rows past the
  /// sequence end of the one partial tile.
  bool directKV() const { return kv == KVType::BF16; }
  /// Prefill with int8 queries (half_int8) and the intra-warpgroup overlap, and fp8 and
  /// full_int8: the 8-bit WGMMA reads K's bytes straight from the TMA stage (one 128-byte
  /// swizzled row per key; the consumers release the stage after Q·Kᵀ), and the producer
  /// converts only V, into three buffers, so a consumer holding two leaves it one to convert
  /// ahead into (half-int8 with the overlap: 0.58–0.79× cuDNN against 0.55–0.68× on the two
  /// K+V buffers; without the overlap no faster than copying K — docs/benchmarks/gpu-prefill.md).
  bool kDirect() const { return prefill && ((qI8 && overlap) || pv8()); }
  /// One scale per tile of a granularity: per_head, per_tensor, per_block rows a multiple of
  /// tile_n.
  bool tileUniform(Granularity g, int64_t blockRows) const {
    return g == Granularity::per_head || g == Granularity::per_tensor ||
           (g == Granularity::per_block && blockRows % tileN == 0);
  }
  /// Prefill with 8-bit Q·Kᵀ (half_int8, full_int8, fp8) and one K scale per tile: the
  /// consumers fold it into each row's query scale instead of scaling S per key.
  bool kTileScale() const { return prefill && qk8() && hasScales() && tileUniform(kGran, kBlock); }
  /// Prefill with one V scale per tile (fp8 always; half_int8 with such a granularity): P·V
  /// runs on the bare codes and V's scale is folded into O's rescale — O is kept in units of
  /// the last tile's V scale — instead of multiplying every P by its key's scale. full_int8
  /// folds V's scale into P's quantization instead.
  bool vTileScale() const {
    return prefill && hasScales() && !fullI8 && tileUniform(vGran, vBlock);
  }
  /// vTileScale with one V scale per head or tensor: the epilogue multiplies O by it, read from
  /// global memory, and the producer stages none.
  bool vScaleInEpilogue() const { return vTileScale() && vGran != Granularity::per_block; }
  /// S has a factor per row (bf16: softmax_scale · log2 e; int8 / fp8 queries: s_q, with one K
  /// scale per tile also s_k · ...) and there is no ALiBi: the softmax takes the row maximum
  /// before that factor (after any per-key K scale) and folds it into exp2's FFMA.
  bool rawRowMax() const {
    return !alibi && softcap == 0 && (!hasScales() || kTileScale() || qk8());
  }
  /// One byte per element in the query tile (int8 or fp8 Q·Kᵀ).
  bool qk8() const { return qI8 || fp8; }
  /// Converted-tile buffers (fp8 / full_int8: one-byte Vᵀ): none when the WGMMAs read the
  /// stages, three with kDirect, else two.
  int64_t convBufs() const { return directKV() ? 0 : kDirect() ? 3 : 2; }
  /// Int8 queries (half-int8, decode and prefill; symmetric int8 V, the only V they take): P·V
  /// in f16 rather than bf16. V's codes become f16 exactly with a byte permute and one f16x2
  /// subtraction per pair (bf16's 7 mantissa bits cannot hold them: it takes an f32 detour and
  /// a pack), and P ∈ [0, 1] keeps 11 significant bits instead of 8.
  bool pvF16() const { return qI8 && !fullI8 && kv == KVType::I8 && !zeroPoints; }
  /// Half-int8 with the overlap: each consumer thread parks its two rows' query scales in shared
  /// memory and reloads them per tile, freeing two registers of the overlapped loop (which
  /// otherwise spills under pingpong).
  bool parkQScales() const { return kDirect() && qI8 && !pv8(); }
  /// Columns of one TMA box (64 bf16 = one 128-byte swizzle span when direct) and the swizzles.
  int64_t tmaBoxColumns() const { return directKV() ? 64 : headDim; }
  /// K read from the stage by the 8-bit WGMMA (kDirect) takes one swizzle row per key: 128 bytes
  /// at head_dim 128, 64 at 64 (SWIZZLE_64B). An 8-bit V transposed by the producer (pv8) comes
  /// 128-byte swizzled at head_dim 128 and in plain 64-byte rows at 64.
  int64_t kSwizzleBytes() const {
    return directKV() ? 128 : kDirect() ? std::min<int64_t>(128, headDim) : 0;
  }
  int64_t vSwizzleBytes() const { return directKV() || (pv8() && headDim == 128) ? 128 : 0; }
  /// Floats of one split's partial (O, m, l), padded to 4 so every O row stays 16-byte aligned
  /// for the combine's vector loads.
  int64_t workspaceFloatsPerSplit() const {
    return (ctaTokens() * pack * (headDim + 2) + 3) / 4 * 4; // rows() · (D + 2) for decode
  }

  /// What the shared-memory layout depends on, as the schedule heuristic sees it.
  AttentionShape sharedMemoryShape() const {
    AttentionShape s;
    s.headDim = headDim;
    s.kvElemBytes = kvElemBytes();
    s.int8QK = qI8 && kv == KVType::I8;
    s.fp8 = fp8;
    s.fullInt8 = fullI8;
    s.zeroPoints = zeroPoints;
    s.queryTiles = qTiles();
    s.queryBuffers = qBuffers;
    return s;
  }
  /// The shared memory map (offsets from a 1024-aligned base): the layout attn-select-schedule's
  /// fit checks compute too (ForwardSharedMemory.h).
  using Smem = ForwardSharedLayout;
  Smem smem() const {
    return layoutForwardSharedMemory(sharedMemoryShape(), tileN, stages, kDirect());
  }
  /// Dynamic shared memory to request: the map plus 1 KiB to align the base.
  int64_t smemBytes() const { return smem().bytes(); }
  /// Bytes of one K (or V) tile in a pipeline stage.
  int64_t stageTileBytes() const { return tileN * headDim * kvElemBytes(); }
};

/// Resolves a scheduled attn.attention op into a plan, or says (on the op) what the sm_90a
/// kernels do not support (AttnToNVVM.cpp).
FailureOr<ForwardPlan> planForward(AttentionOp op);
/// The plan as the `plan` dictionary of the kernel level's forward ops, and back
/// (ForwardPlanAttr.cpp; `err` reports a missing or malformed entry).
DictionaryAttr forwardPlanToAttr(MLIRContext *ctx, const ForwardPlan &p);
FailureOr<ForwardPlan> forwardPlanFromAttr(DictionaryAttr d,
                                           function_ref<InFlightDiagnostic()> err);
/// The launch metadata of the plan as JSON text (docs/GPUDecode.md).
std::string launchMetadataJSON(const ForwardPlan &p, ArrayRef<llvm::json::Object> combine);

/// Name of the dynamic shared-memory symbol of the module.
inline constexpr const char *kSharedSymbol = "__attn_dynamic_smem";
/// Declares the module's dynamic shared-memory symbol (1024-aligned) unless it exists.
void ensureSharedSymbol(OpBuilder &b, Location loc, gpu::GPUModuleOp module);
/// Launch limits of the sm_90a kernels for the extents known at compile time (32-bit row
/// indices; grid y and z of at most 65535 CTAs), or a diagnostic on `op` (AttnToNVVM.cpp).
LogicalResult checkLaunchLimits(Operation *op);

} // namespace mlir::attn::nvvm

#endif // ATTN_LIB_CONVERSION_ATTNTONVVM_FORWARDPLAN_H
