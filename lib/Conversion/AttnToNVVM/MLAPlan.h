//===- MLAPlan.h - one Hopper MLA decode kernel, fully decided --*- C++ -*-===//
//
// What this file is: the kernel-level description of the kernel an `attn.mla_decode` op lowers to
// on sm_90a (`<name>_mla`) — problem sizes, cache format, sparse or dense, the 2-CTA crossover,
// register budgets and the shared-memory map — the entry point that plans it, the plan as the
// `plan` dictionary of the kernel level's MLA ops (attn-build-kernel, BuildMLA.cpp) and back,
// and the builders (MLAKernel.cpp) the lowering of those ops (MLALowering.cpp) calls: the CTA's
// work, the prologue, the producer role and the consumer roles. Private to the conversions.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_LIB_CONVERSION_ATTNTONVVM_MLAPLAN_H
#define ATTN_LIB_CONVERSION_ATTNTONVVM_MLAPLAN_H

#include "KernelBuilder.h"

#include "attn/Dialect/Attn/IR/Attn.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

#include <string>

namespace mlir::attn::nvvm {

/// One CTA: 64 query heads of one query token of one batch element, all its keys in blocks of 64
/// tokens. Warpgroup 0 produces (gathers, dequantizes into bf16, interleaves), warpgroups 1 and 2
/// consume (1: S = Q·Kᵀ, softmax, O[:, :Dv/2]; 2: O[:, Dv/2:] from the P that 1 writes).
struct MLAPlan {
  static constexpr int64_t kHeadsPerCTA = 64, kBlock = 64;
  std::string name;
  // Problem (-1: known at launch).
  int64_t batch = -1, sq = -1, heads = 128, kvLen = -1, topk = -1;
  int64_t dv = 512, rope = 64, quantTile = 128;
  /// FP8 cache (Dv e4m3, Dv/quantTile f32 scales, rope bf16 per token) or a bf16 [T, Dk] cache.
  bool fp8 = true;
  bool sparse = true, causal = false, seqLens = false;
  /// Two CTAs (a cluster) share each dequantized block: each converts half of its tokens and
  /// writes them into both CTAs' shared memory (st.async).
  bool crossover = false;
  double softmaxScale = 0.0;
  /// Registers of the producer, consumer 0 (S, softmax, O left) and consumer 1 (O right).
  int64_t producerRegs = 120, consumerRegs = 216, consumer1Regs = 168;
  static constexpr int64_t kEntryRegs = 168; // 65536 / 384, a multiple of 8

  int64_t dk() const { return dv + rope; }
  int64_t tokenBytes() const { return fp8 ? dv + 4 * (dv / quantTile) + 2 * rope : 2 * dk(); }
  int64_t clusterSize() const { return crossover ? 2 : 1; }
  int64_t headGroups() const { return heads / kHeadsPerCTA; }
  static constexpr int64_t threads() { return 384; }
  std::string kernelName() const { return name + "_mla"; }

  /// Shared memory (offsets from a 1024-aligned base).
  struct Smem {
    int64_t q = 0, kv = 0, kvStride = 0, p = 0, alpha = 0, rowSum = 0, mask = 0, bars = 0,
            total = 0;
    // mbarriers: full[2] (the producer's arrivals), remote[2] (the peer's st.async bytes),
    // empty[2] (consumer releases, from both CTAs), pFull, pEmpty, lFull (row sums).
    int64_t full(int64_t i) const { return bars + 8 * i; }
    int64_t remote(int64_t i) const { return bars + 16 + 8 * i; }
    int64_t empty(int64_t i) const { return bars + 32 + 8 * i; }
    int64_t pFull() const { return bars + 48; }
    int64_t pEmpty() const { return bars + 56; }
    int64_t lFull() const { return bars + 64; }
  };
  Smem smem() const {
    Smem m;
    m.q = 0;
    m.kv = kHeadsPerCTA * dk() * 2;
    m.kvStride = kBlock * dk() * 2;
    m.p = m.kv + 2 * m.kvStride;
    m.alpha = m.p + kHeadsPerCTA * kBlock * 2;
    m.rowSum = m.alpha + kHeadsPerCTA * 4;
    m.mask = m.rowSum + kHeadsPerCTA * 4;
    m.bars = m.mask + 2 * kBlock * 4;
    m.total = (m.bars + 72 + 127) / 128 * 128;
    return m;
  }
  /// Dynamic shared memory to request: the map plus 1 KiB to align the base.
  int64_t smemBytes() const { return smem().total + 1024; }
};

/// Resolves an `attn.mla_decode` for sm_90a, or reports (on the op) why it has no kernel yet.
FailureOr<MLAPlan> planMLA(MLADecodeOp op);

/// The plan as the MLA ops' `plan` dictionary, and back (a diagnostic through `err` where an
/// entry is missing or the plan is not one the builders take).
DictionaryAttr mlaPlanToAttr(MLIRContext *ctx, const MLAPlan &p);
FailureOr<MLAPlan> mlaPlanFromAttr(DictionaryAttr d, function_ref<InFlightDiagnostic()> err);

/// The builders' state: the plan, the kernel's parameters (q, kv, indices, seq_lens, out; sq,
/// kv_len, topk), the CTA's work, the aligned shared base and the CTA's keys.
struct MLACtx {
  const MLAPlan &p;
  MLAPlan::Smem sm;
  Value q = {}, kv = {}, idx = {}, lens = {}, out = {}, sq = {}, kvLen = {}, topk = {};
  Value tid = {}, grp = {}, qi = {}, bIdx = {}, rank = {}, base = {}, peerBase = {};
  /// Keys of this CTA's query token: the length, the last visible key, the entries (top-k
  /// entries or cache positions) and their blocks.
  Value len = {}, limit = {}, entries = {}, numBlocks = {};

  Value ptr(KernelBuilder &k, Value off);
  Value ptr(KernelBuilder &k, int64_t off);
  Value addr(KernelBuilder &k, int64_t off);
};

/// Parameters of the kernel (docs/GPUMLA.md): q, kv, indices, seq_lens, out, batch, sq, kv_len,
/// topk.
inline constexpr unsigned kMLAParams = 9;
/// Work values: the CTA's (tid, head group, query token, batch element), then the prologue's
/// keys (length, limit, entries, blocks) and, with crossover, the cluster rank and the peer's
/// shared base.
inline constexpr unsigned kMLAWorkIds = 4, kMLAKeyValues = 4, kMLACrossoverValues = 2;

/// tid, ctaid.x, ctaid.y, ctaid.z.
SmallVector<Value> buildMLAWork(KernelBuilder &k);
void bindMLAParams(MLACtx &c, ValueRange params);
void bindMLAWork(MLACtx &c, ValueRange work);
/// The cluster rank and the peer's base (crossover), the CTA's keys, the mbarriers, the query
/// tile into shared memory and the CTA (or cluster) barrier; returns the keys, then rank and
/// peer base.
SmallVector<Value> buildMLAPrologue(KernelBuilder &k, MLACtx &c);
/// The producer warpgroup's program (its register budget is set by the warp specialization).
void buildMLAProducerRole(KernelBuilder &k, MLACtx &c);
/// The consumer warpgroups' program: consumer 0 and 1, each with its register budget, then the
/// epilogue both run.
void buildMLAConsumerRoles(KernelBuilder &k, MLACtx &c);

} // namespace mlir::attn::nvvm

#endif // ATTN_LIB_CONVERSION_ATTNTONVVM_MLAPLAN_H
