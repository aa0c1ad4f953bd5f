//===- ForwardKernelImpl.h - the forward kernel's shared parts -*- C++ -*-===//
//
// What this file is: the state the producer (ForwardProducer.cpp), the consumers
// (ForwardConsumer.cpp; their softmax ForwardSoftmax.cpp, their output stores ForwardStore.cpp,
// their merges ForwardMerge.cpp) and the kernel frame (ForwardKernel.cpp) of the forward kernel
// (`<name>_decode`, `<name>_prefill`) share — the kernel's values (Ctx), shared-memory
// addressing and the 128-byte swizzle — and the producer's and consumers' entry points. Private
// to this folder.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_LIB_CONVERSION_ATTNTONVVM_FORWARDKERNELIMPL_H
#define ATTN_LIB_CONVERSION_ATTNTONVVM_FORWARDKERNELIMPL_H

#include "ForwardPlan.h"
#include "KernelBuilder.h"

#include <cmath>

namespace mlir::attn::nvvm {

inline constexpr double kLog2e = 1.4426950408889634;

/// Values every part of the kernel uses.
struct Ctx {
  const ForwardPlan &p;
  ForwardPlan::Smem sm;
  Value kMap = {}, vMap = {}, q = {}, kScale = {}, vScale = {}, lens = {}, alibi = {}, out = {},
        ws = {}, batch = {}, kvLen = {}, numSplits = {}, qScale = {}, kZero = {}, vZero = {};
  /// A paged cache's block table [B, max_blocks] and its pool's rows, num_pages · P (null when
  /// contiguous).
  Value blockTable = {}, numSlots = {};
  /// Attention sinks [Hq] f32 and the log-sum-exp output [B, Sq, Hq] f32 (null without).
  Value sinks = {}, lse = {};
  Value tid = {}, split = {}, grp = {}, bIdx = {}, hkv = {}, headBase = {},
        base = {} /*aligned shared base*/;
  Value len = {}, tile0 = {}, numTiles = {};
  /// First query token of this CTA's rows (prefill chunks; 0 for decode).
  Value qBase = {};
  /// The query length when it is dynamic (prefill only: kernel parameter `q_len`; for a ragged
  /// batch the most of any sequence).
  Value qLenArg = {};
  /// A ragged batch: the parameters cu_seqlens_q [B + 1] and total_q, and the work item's
  /// sequence's first packed row and query count (setupRaggedRows). Null otherwise.
  Value cuSeqlensQ = {}, totalQ = {}, qRow0 = {}, seqQLen = {};
  /// Persistent grid: the tiles this CTA streamed before the current work item (the pipeline's
  /// rings and mbarrier phases run on across items), and the parity of the partial tiles it met
  /// (bf16's tail barrier). Null otherwise.
  Value tileBase = {}, tailParity = {};
  /// Persistent grid with two sets of query tiles: the byte offset of the current item's set
  /// (null: the one set).
  Value qSetOff = {};

  /// Position of the item's tile j in the CTA's stream of tiles (ring slots and phases).
  Value ring(KernelBuilder &k, Value j) const { return tileBase ? k.add(tileBase, j) : j; }

  /// The batch element's query length as an i32 value (a constant when static).
  Value qLen(KernelBuilder &k) const {
    return seqQLen ? seqQLen : qLenArg ? qLenArg : k.i32(p.qLen);
  }
  /// Its last query (a ragged sequence without queries: 0, whose rows are all invalid).
  Value qLenMinus1(KernelBuilder &k) const {
    return seqQLen    ? k.smax(k.add(seqQLen, -1), k.i32(0))
           : qLenArg ? k.add(qLenArg, -1)
                     : k.i32(p.qLen - 1);
  }
  /// The query length the grid's query chunks cover: q_len (ragged: the most of any sequence).
  Value chunkedQLen(KernelBuilder &k) const { return qLenArg ? qLenArg : k.i32(p.qLen); }
  /// The batch element's first row of q and out along [B · Sq]: b · q_len, or the packed
  /// sequence's first row.
  Value qRowBase(KernelBuilder &k) const {
    return qRow0 ? qRow0 : qLenArg ? k.mul(bIdx, qLenArg) : k.mul(bIdx, p.qLen);
  }
};

/// Offset of buffer `i` of a ring of shared-memory buffers.
inline Value ringOffset(KernelBuilder &k, Value i, int64_t base, int64_t stride) {
  return k.add(k.mul(i, stride), base);
}

/// Shared pointer at byte offset `off` (i32 Value or constant) from the aligned base.
inline Value sptr(KernelBuilder &k, Ctx &c, Value off) { return k.gep(c.base, off); }
inline Value sptr(KernelBuilder &k, Ctx &c, int64_t off) { return k.gep(c.base, off); }

/// Byte offset of the 16-byte chunk `chunk` (8 bf16) of row `row` in the swizzled layout of a
/// [rows × D] tile: column block chunk/8 (64 elements), chunk index XOR (row mod 8).
inline Value swizzledChunk(KernelBuilder &k, Value row, Value chunk, int64_t rows) {
  Value blk = k.mul(k.lshr(chunk, 3), rows * 128);
  Value inRow = k.shl(k.bxor(k.band(chunk, 7), k.band(row, 7)), 4);
  return k.add(k.add(blk, k.mul(row, 128)), inRow);
}

/// Row (0: r0, 1: r0 + 8) of register i of an m64nN WGMMA accumulator fragment.
inline int64_t accRow(int64_t i) { return (i / 2) % 2; }

/// A balanced max (or sum) tree over `vals`: short dependency chains.
inline Value reduceTree(KernelBuilder &k, SmallVector<Value> vals, bool isMax) {
  while (vals.size() > 1) {
    SmallVector<Value> next;
    for (size_t i = 0; i + 1 < vals.size(); i += 2)
      next.push_back(isMax ? k.fmax(vals[i], vals[i + 1]) : k.fadd(vals[i], vals[i + 1]));
    if (vals.size() % 2)
      next.push_back(vals.back());
    vals = std::move(next);
  }
  return vals.front();
}

/// Per-thread geometry of the m64nN accumulator: thread t of the warpgroup owns rows r0 and r0+8
/// and, for register i, column (i/4)·8 + (t mod 4)·2 + (i mod 2), row r0 + 8·((i/2) mod 2).
struct Frag {
  Value r[2];        // packed row indices
  Value colBase;     // (lane mod 4) · 2
  Value rowLimit[2]; // last visible key per row
  Value rowFirst[2]; // first visible key per row (a left window; null without)
  Value alibiA[2];   // log2e · slope per row (0 without ALiBi)
  Value alibiB[2];   // −log2e · slope · pos per row
};

/// One row of two partial softmax states (max m, sum l) merged: the common max, the weights
/// 2^(m − max) of each (0 for a state with no keys) and the merged sum.
struct RowMerge {
  Value m, l, a, b;
};
inline RowMerge mergeRow(KernelBuilder &k, Value mA, Value lA, Value mB, Value lB) {
  RowMerge r;
  r.m = k.fmax(mA, mB);
  Value mUse = k.select(k.fcmp(LLVM::FCmpPredicate::oeq, r.m, k.f32(-INFINITY)), k.f32(0), r.m);
  r.a = k.exp2(k.fsub(mA, mUse));
  r.b = k.exp2(k.fsub(mB, mUse));
  r.l = k.fma(lA, r.a, k.fmul(lB, r.b));
  return r;
}

/// Byte offset of output row out[b, qi, head, :] (bf16) of the CTA's batch element.
inline Value outRowOffset(KernelBuilder &k, Ctx &c, Value qi, Value head) {
  Value rowBase = k.add(k.mul(k.add(c.qRowBase(k), qi), c.p.qHeads), head);
  return k.mul(k.sext64(rowBase), c.p.headDim * 2);
}

/// The output address of bf16 column `col` in the row at byte offset `rowOffset` (outRowOffset).
inline Value outAt(KernelBuilder &k, Ctx &c, Value rowOffset, Value col) {
  return k.gep(c.out, k.add(rowOffset, k.mul(k.sext64(col), int64_t(2))));
}

/// Merges of partial (m0, m1, l0, l1, O...) states (ForwardMerge.cpp). Two decode consumer
/// warpgroups over disjoint tiles: returns warpgroup 0's merged state.
SmallVector<Value> mergeConsumers(KernelBuilder &k, Ctx &c, Value wg, Value ct,
                                  SmallVector<Value> st);
/// Split-KV: warpgroup 0's merged state `fin` as this split's partial in the workspace.
void storePartial(KernelBuilder &k, Ctx &c, Value ct, ArrayRef<Value> fin, const Value rowOk[2],
                  const Frag &f);
/// Split-KV in a cluster of the splits: every CTA's consumers (and, in ForwardKernel.cpp, its
/// producers) take part; warpgroup 0 writes its share of the merged output.
void clusterMerge(KernelBuilder &k, Ctx &c, Value wg, Value ct, ArrayRef<Value> fin,
                  const Value rowOk[2], const Value qi[2], const Value head[2], const Frag &f);

/// With an lse output (c.lse), each row's natural log-sum-exp (m + log2 l) · ln 2 (−inf where l
/// is 0), stored by the first thread of the row's quad (`ct`: the thread's index in its
/// warpgroup) where rowOk (ForwardStore.cpp).
void storeLse(KernelBuilder &k, Ctx &c, Value ct, const Value m[2], const Value l[2],
              const Value rowOk[2], const Value qi[2], const Value head[2]);
/// One split's finished O (times inv[r] per row) to `out` as bf16 (ForwardStore.cpp): rows
/// rowOk; prefill also uses the warpgroup's query tile (wg) and first token (qBase).
void storeOutput(KernelBuilder &k, Ctx &c, Value wg, ArrayRef<Value> o, const Value inv[2],
                 const Value rowOk[2], const Value qi[2], const Value head[2], Value qBase,
                 const Frag &f);

/// The producer warpgroup: TMA loads of K/V tiles, their conversion to bf16, the staged scales.
void buildProducer(KernelBuilder &k, Ctx &c);
/// The K and V scales of key `token` (clamped into [0, len)) and, for asymmetric caches, its
/// zero points as the dequantization's magic constants: {ks, vs[, kz, vz]} (with `zeroCodes`,
/// the zero points themselves as f32, which the tile conversion turns into its constants).
/// `page`: a paged cache's page of the clamped token, looked up before (null: read here); the
/// zero points are read at the same clamped pool row as the scales.
SmallVector<Value> loadScales(KernelBuilder &k, Ctx &c, Value token, Value page = {},
                              bool zeroCodes = false);
/// Threads below tile_n store their key's scales (K times softmax_scale · log2(e)) into the
/// scale buffer of conversion buffer `buf`.
void stageScales(KernelBuilder &k, Ctx &c, Value ks, Value vs, Value buf);
/// The producer's tile conversions (lib/Conversion/AttnKernelToNVVM/ConvertLowering.cpp): one
/// stage tile (K or V, at byte `stageOff` of shared memory) dequantized — or with `copyBytes`
/// copied — into the swizzled buffer at `convOff`; with `masked`, rows at or past `rowsValid`
/// become zeros; `zeroOff`: the staged zero-point constants per row (-1: symmetric codes).
void dequantTile(KernelBuilder &k, Ctx &c, Value stageOff, Value convOff, Value rowsValid,
                 bool masked, bool copyBytes = false, int64_t zeroOff = -1);
/// fp8 and full_int8: one V stage tile transposed into the 8-bit Vᵀ of the 8-bit P·V.
void transposeTile(KernelBuilder &k, Ctx &c, Value stageOff, Value convOff, Value rowsValid,
                   bool masked);
/// Index (in f32 elements) of the scale of (batch `b`, `token`, `head`) of a [B, len, heads]
/// operand for a granularity (per_block: `blockRows` tokens of a head share one, [B, ceil(len /
/// r), heads]); ForwardProducer.cpp.
Value scaleIndex(KernelBuilder &k, Granularity g, Value b, Value len, int64_t heads, Value head,
                 Value token, int64_t blockRows = 1);
/// A paged cache's page of logical token `token` (≥ 0) of sequence `b`: table[b][token / P], the
/// block index clamped into the table's row of `maxBlocks` entries (or, when null, of `blocks`,
/// the kernel's kv_len / P: a dynamic max_blocks). One global load.
Value pageOf(KernelBuilder &k, Value table, int64_t maxBlocks, Value blocks, int64_t pageSize,
             Value b, Value token);
/// The row of `token` in page `page` of the pool seen as [num_pages · P] rows: page · P + token
/// mod P. With `valid` (i1) false the page is 0 (a sequence without keys reads no entry); with
/// `numPages` > 0, or `numSlots` (the pool's rows, i32, when num_pages is known at launch), the
/// page is clamped into the pool (without: a TMA load past the pool reads zeros).
Value pageRow(KernelBuilder &k, Value page, int64_t pageSize, int64_t numPages, Value token,
              Value valid, Value numSlots = {});
/// pageRow of pageOf.
Value pagedRow(KernelBuilder &k, Value table, int64_t maxBlocks, Value blocks, int64_t pageSize,
               int64_t numPages, Value b, Value token, Value valid = {});
/// A paged cache with a dynamic max_blocks: the table's entries per sequence, kv_len / P
/// (null when static or contiguous).
Value tableBlocks(KernelBuilder &k, Ctx &c);
/// The K/V scale of key `token` of this CTA's batch element and KV head; `page`: a paged cache's
/// page of the token, looked up before (null: read here).
Value scaleIndex(KernelBuilder &k, Ctx &c, Granularity g, Value token, int64_t blockRows = 1,
                 Value page = {});
/// Thread 0, in the prologue of a kernel without a persistent grid: the TMA loads of the first
/// `stages` tiles (decode) or of the first tile (prefill, whose first Q·Kᵀ waits for the query
/// rows too: all stages at once only slowed the first; the producer issues the rest), issued as
/// soon as the mbarriers are initialized — before the query tile's global loads and the CTA
/// barrier, which would otherwise delay the first bytes by a DRAM round trip. (With a
/// persistent grid the producer fills the pipeline per work item.)
void issuePipelineFill(KernelBuilder &k, Ctx &c);

/// A softmax step's result: the new row maxima, sums and correction factors, and P.
struct SoftmaxOut {
  Value m[2], l[2], alpha[2];
  SmallVector<Value> pWords; // N/16 × 4 bf16x2 A fragments (or N/2 floats with packP false)
};

/// Scales, masks, exponentiates one S tile and returns the new row state and the P fragments
/// (ForwardSoftmax.cpp).
/// With `rowF` (one factor per row: plan.rawRowMax) `acc` is unscaled: the row maximum is taken
/// on it and scaled once, and each P is exp2(fma(S, f, −m)) — one FFMA where scaling every S
/// first costs an FMUL and an FSUB. With `log2R` (half-int8's per_block V: see vRefStep) every
/// P is multiplied by r = 2^log2R ≤ 1 through exp2's argument and the row sums by `invR` = 1 / r,
/// so that l still sums the P themselves.
SoftmaxOut softmaxTile(KernelBuilder &k, Ctx &c, const Frag &f, ArrayRef<Value> acc, Value scOff,
                       Value tileStart, Value mOld[2], Value lOld[2], bool masked, bool packP,
                       ArrayRef<Value> rowF, Value log2R, Value invR);

/// The end of an online softmax (attnk.softmax_finish; lib/Conversion/AttnKernelToNVVM/
/// SoftmaxLowering.cpp): with `hadamard` O · H on the thread's accumulator registers `o` (their
/// columns from `colBase`), then the row sums `l` (r0, r0 + 8) reduced over the quad, times √D
/// with `hadamard`.
void finishSoftmaxRows(KernelBuilder &k, Value colBase, bool hadamard, MutableArrayRef<Value> o,
                       MutableArrayRef<Value> l);
/// The index of the column base among the lowered values of an `!attnk.rows` (ConsumerState),
/// and of the first of the two rows' heads.
inline constexpr unsigned kRowsColBase = 4;
inline constexpr unsigned kRowsHead = 7;

/// The consumer warpgroups (ForwardConsumer.cpp): the attention math and the epilogue.
void buildConsumer(KernelBuilder &k, Ctx &c);
/// A consumer warpgroup's loop state: {m0, m1, l0, l1, O...} (each thread's own row sums, before
/// finishSoftmaxRows), the thread's rows as an `!attnk.rows` value lowers (warpgroup, index in
/// it, fragment rows, column base, query tokens, heads, first query token[, whether each row
/// exists]) and O's unit (the V scale O is kept in, or 1). buildConsumerStore takes the same
/// rows and the finished state.
struct ConsumerState {
  SmallVector<Value> fin, rows;
  Value unit;
};
/// Without a persistent grid, buildConsumer in parts: the tile loop and its state
/// (attnk.forward.consumer), finishSoftmaxRows (attnk.softmax_finish), then, after mergeConsumers
/// where two decode warpgroups merge, the store of the state (attnk.forward.epilogue; the trigger
/// of dependents: triggerDependents).
ConsumerState buildConsumerLoop(KernelBuilder &k, Ctx &c);
void buildConsumerStore(KernelBuilder &k, Ctx &c, ArrayRef<Value> rows, ArrayRef<Value> state,
                        Value unit);
/// Decode: the programmatic dependents (the combine kernel) may be scheduled.
void triggerDependents(KernelBuilder &k, Ctx &c);

// The kernel frame (ForwardKernel.cpp), one builder per kernel-level forward op.
/// The kernel's parameters (launch ABI order: K and V tensor maps, q, k_scale, v_scale,
/// seq_lens, alibi, out, workspace, batch, kv_len, num_splits, q_scale, k_zero, v_zero[, q_len]
/// [, block_table, num_slots][, sinks][, lse]).
void bindForwardParams(Ctx &c, ValueRange params);
/// The work values of attnk.forward.work, then (not persistent) attnk.forward.prologue's.
void bindForwardWork(Ctx &c, ValueRange work);
/// attnk.forward.work: the thread id and (not persistent) the CTA's work ids.
SmallVector<Value> buildForwardWork(KernelBuilder &k, const ForwardPlan &p);
/// The dynamic shared memory's base aligned to 1024 bytes.
Value buildAlignedSharedBase(KernelBuilder &k);
/// attnk.forward.prologue: key tiles (returned: len, tile0, numTiles; none when persistent),
/// barriers, the first loads, the query tile, the CTA barrier.
SmallVector<Value> buildForwardPrologue(KernelBuilder &k, Ctx &c);
/// attnk.forward.producer: the producer role's program; attnk.forward.consumer with a
/// persistent grid: the consumer role's, over the work items (without one, the consumer op is
/// buildConsumerLoop and attnk.forward.epilogue buildConsumerStore).
void buildForwardProducerRole(KernelBuilder &k, Ctx &c);
void buildForwardConsumerRole(KernelBuilder &k, Ctx &c);

} // namespace mlir::attn::nvvm

#endif // ATTN_LIB_CONVERSION_ATTNTONVVM_FORWARDKERNELIMPL_H
