//===- AttnToNVVM.cpp - the convert-attn-to-nvvm pass ---------------------===//
//
// What this file is: `convert-attn-to-nvvm` — finishes each function holding one
// `attn.attention` op for sm_90a in the `gpu.module @attn_kernels` (NVVM target sm_90a): it checks
// that the variant is one the generators implement (and says which part is not, on the op,
// otherwise), resolves the spec and its schedule into a ForwardPlan (planForward, which
// attn-build-kernel also calls to build the forward kernel at the kernel level), and attaches the
// launch metadata to the forward kernel that attn-build-kernel built (`launch` of its
// attnk.kernel). Ops that cannot become kernels (placement, names, launch limits) are refused
// first. The host function is removed: the launcher (attn-bench, qattn) drives the kernels through
// the runtime.
//
//===----------------------------------------------------------------------===//

#include "attn/Conversion/Passes.h"

#include "ForwardPlan.h"

#include "attn/Dialect/Attn/Transforms/ScheduleHeuristics.h"
#include "attn/Dialect/AttnKernel/IR/AttnKernel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <functional>
#include <limits>

namespace mlir::attn {
#define GEN_PASS_DEF_CONVERTATTNTONVVM
#include "attn/Conversion/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::nvvm;

namespace {
/// Collects "not supported yet" reasons for one op.
struct Checker {
  Operation *op;
  bool ok = true;
  InFlightDiagnostic fail() {
    ok = false;
    return op->emitError() << "not supported yet by convert-attn-to-nvvm: ";
  }
};
} // namespace

/// fp8 prefill (plan.fp8): what the e4m3 GEMMs need beyond the element types.
static void checkFp8Prefill(Checker &c, AttentionOp op, ForwardPlan &p) {
  QuantAttr qq = op.getQQuantAttr();
  bool qBlock =
      qq && qq.getGranularity() == Granularity::per_block && qq.getBlockCols() == p.headDim;
  if (!op.getQScale() || !qq || !qq.getScaleType().isF32() ||
      (qq.getGranularity() != Granularity::per_token_head && !qBlock))
    c.fail() << "f8E4M3FN queries other than per_token_head or per_block<r x head_dim> with f32 "
                "q_scale";
  else if (qBlock) {
    p.qGran = Granularity::per_block;
    p.qBlock = qq.getBlockRows();
  }
  if (!isa<Float8E4M3FNType>(op.getK().getType().getElementType()))
    c.fail() << "f8E4M3FN queries with a " << op.getK().getType().getElementType()
             << " K cache (f8E4M3FN K and V)";
  if (p.headDim != 64 && p.headDim != 128)
    c.fail() << "fp8 prefill with head_dim " << p.headDim << " (64 or 128)";
}

/// A decode kernel whose batch is known only at launch may run more than one wave of CTAs: where
/// attn-select-schedule would build a static batch of that size for two CTAs per SM
/// (selectCtasPerSm) and the spec left ctas_per_sm open, the plan gets a companion kernel with
/// that schedule (tile_n 64, two stages, one producer warpgroup of 56 registers and one consumer
/// of 200), which launchers take when one split's CTAs exceed the SMs. Both kernels then load
/// tiles as 64-row TMA boxes, so they share the tensor maps.
static void addWideBatchCompanion(ForwardPlan &p, ScheduleAttr s) {
  if (p.prefill || p.batch >= 0 || s.getCtasPerSm() != 0 || p.tileN % 64)
    return;
  GPUInfo gpu;
  if (selectCtasPerSm(p.sharedMemoryShape(), std::numeric_limits<int64_t>::max(), gpu) != 2)
    return;
  ForwardPlan w = p;
  w.wideBatch = true;
  w.ctasPerSm = 2;
  w.tileN = w.tmaBoxRows = TwoCtaSchedule::tileN;
  if (p.paged()) // a box never straddles two pages
    w.tmaBoxRows = std::min(w.tileN, p.pageSize);
  w.stages = TwoCtaSchedule::stages;
  w.producerWGs = w.consumerWGs = 1;
  w.producerRegs = TwoCtaSchedule::producerRegs;
  w.consumerRegs = TwoCtaSchedule::consumerRegs;
  if (2 * (w.smemBytes() + 1024) > kSharedBytesPerSmSm90)
    return;
  p.tmaBoxRows = w.tmaBoxRows;
  p.wide = std::make_shared<const ForwardPlan>(std::move(w));
}

/// A paged K/V cache (block_table, page_size): the decode and prefill kernels read it — K/V boxes of
/// min(P, tile_n) rows whose row the block table gives, token-local scales (and zero points)
/// per page; a table of
/// a dynamic width (max_blocks) has kv_len / P entries per sequence. What they do not read yet
/// is refused here. False when refused.
static bool planPaged(Checker &c, AttentionOp op, ForwardPlan &p) {
  int64_t page = op.getPageSizeAttr().getInt();
  auto table = cast<MemRefType>(op.getBlockTable().getType());
  std::string what = "a paged K/V cache (block_table, page_size = " + std::to_string(page) + ")";
  if ((p.directKV() || p.kDirect()) && page < 8) // the WGMMAs read the stage's tiles
    c.fail() << what << " of " << (p.directKV() ? "bf16" : "int8 K (read by the Q·Kᵀ WGMMA)")
             << " pages of fewer than 8 tokens (a box of K/V rows takes whole 8-row atoms of the "
             << (p.directKV() ? "128-byte swizzle)" : "swizzle)");
  else if (page * p.headDim * p.kvElemBytes() % 128 != 0)
    c.fail() << what << " at head_dim " << p.headDim << ": a page of "
             << page * p.headDim * p.kvElemBytes()
             << " bytes is not a whole number of the 128-byte units a TMA copy writes";
  if (!c.ok)
    return false;
  p.pageSize = page;
  // A dynamic max_blocks (-1) is the launch's kv_len / P: kv_len is max_blocks · P.
  p.maxBlocks = table.isDynamicDim(1) ? -1 : table.getDimSize(1);
  p.numPages = op.getK().getType().isDynamicDim(0) ? -1 : op.getK().getType().getDimSize(0);
  p.kvLen = ShapedType::isDynamic(op.getKVLength()) ? -1 : op.getKVLength();
  return true;
}

/// Launch limits of the sm_90a kernels, for the extents known at compile time (the launcher
/// checks those known at launch): rows of every buffer (all extents but the last) are indexed
/// with 32-bit integers, and grid y and z (heads and batch of attention, query tokens and batch
/// of MLA) take at most 65535 CTAs.
LogicalResult mlir::attn::nvvm::checkLaunchLimits(Operation *op) {
  constexpr int64_t kMaxRows = std::numeric_limits<int32_t>::max(), kMaxGridYZ = 65535;
  for (OpOperand &use : op->getOpOperands()) {
    auto mt = dyn_cast<MemRefType>(use.get().getType());
    if (!mt || mt.getRank() < 2)
      continue;
    int64_t rows = 1;
    bool known = true, overflow = false;
    for (int64_t d : mt.getShape().drop_back()) {
      known &= !ShapedType::isDynamic(d);
      overflow |= known && llvm::MulOverflow(rows, d, rows);
    }
    if (known && (overflow || rows > kMaxRows))
      return op->emitError() << "not supported by the sm_90a kernels: operand #"
                             << use.getOperandNumber() << " (" << mt << ") has more than "
                             << kMaxRows << " rows (the kernels index rows with 32-bit integers)";
  }
  auto gridYZ = [&](StringRef what, StringRef axis, int64_t n) -> LogicalResult {
    if (ShapedType::isDynamic(n) || n <= kMaxGridYZ)
      return success();
    return op->emitError() << "not supported by the sm_90a kernels: " << what << " " << n
                           << " (grid " << axis << " takes at most " << kMaxGridYZ << " CTAs)";
  };
  if (auto att = dyn_cast<AttentionOp>(op)) {
    auto qT = att.getQ().getType();
    return success(succeeded(gridYZ("batch", "z", att.getNumSequences())) &&
                   succeeded(gridYZ("query heads", "y", qT.getDimSize(2))));
  }
  if (auto mla = dyn_cast<MLADecodeOp>(op)) {
    auto qT = mla.getQ().getType();
    return success(succeeded(gridYZ("batch", "z", qT.getDimSize(0))) &&
                   succeeded(gridYZ("query tokens", "y", qT.getDimSize(1))));
  }
  return success();
}

/// Bytes of the split-KV workspace a batch needs (one sequence of a dynamic batch: split
/// partials of every packed row), checked against a bound no launch of these kernels comes
/// near; and splits beyond the key tiles of a static kv_len, which would get no keys.
static void checkSplits(Checker &c, const ForwardPlan &p) {
  if (p.prefill || p.splitKv < 1)
    return;
  if (p.kvLen > 0 && p.splitKv > (p.kvLen + p.tileN - 1) / p.tileN)
    c.fail() << "split_kv " << p.splitKv << " with kv_len " << p.kvLen << " and tile_n "
             << p.tileN << " (at most one split per key tile: "
             << (p.kvLen + p.tileN - 1) / p.tileN << ")";
  constexpr int64_t kMaxWorkspaceBytes = int64_t(1) << 34;
  int64_t bytes = 4 * p.workspaceFloatsPerSplit();
  int64_t batch = std::max<int64_t>(1, p.batch); // a dynamic batch: the bound for one sequence
  if (llvm::MulOverflow(bytes, p.splitKv, bytes) || llvm::MulOverflow(bytes, p.groups(), bytes) ||
      llvm::MulOverflow(bytes, batch, bytes) || bytes > kMaxWorkspaceBytes)
    c.fail() << "a split-KV workspace of more than " << kMaxWorkspaceBytes << " bytes (split_kv "
             << p.splitKv << ", batch " << (p.batch > 0 ? std::to_string(p.batch) : "1 of ?")
             << ", " << p.groups() << " head groups)";
}

/// The queries' and the output's element types, head_dim and (decode) q_len.
static void planQueryAndOutput(Checker &c, AttentionOp op, ForwardPlan &p) {
  auto qT = op.getQ().getType(), vT = op.getV().getType(), oT = op.getOut().getType();
  auto kT = op.getK().getType();
  if (qT.getElementType().isSignlessInteger(8)) {
    // half_int8 with int8 queries: Q·Kᵀ on int8 tensor cores, S scaled by s_q · s_k.
    p.qI8 = true;
    QuantAttr qq = op.getQQuantAttr();
    if (!op.getQScale() || !qq ||
        (qq.getGranularity() != Granularity::per_token_head &&
         qq.getGranularity() != Granularity::per_token) ||
        qq.isAsymmetric() || !qq.getScaleType().isF32())
      c.fail() << "int8 queries other than symmetric per_token_head or per_token with f32 scales";
    else
      p.qGran = qq.getGranularity();
    if (!kT.getElementType().isSignlessInteger(8))
      c.fail() << "int8 queries with a " << kT.getElementType() << " K cache (int8 K only)";
    if (p.headDim != 64 && p.headDim != 128)
      c.fail() << "int8 queries with head_dim " << p.headDim << " (64 or 128)";
  } else if (isa<Float8E4M3FNType>(qT.getElementType())) {
    // fp8 prefill: both GEMMs on e4m3 tensor cores (checkFp8Prefill checks the rest).
    p.fp8 = true;
    if (!p.prefill)
      c.fail() << "f8E4M3FN queries for decode (fp8 GEMMs are a prefill mode; decode takes bf16 "
                  "or i8 queries)";
  } else if (!qT.getElementType().isBF16()) {
    c.fail() << "queries of type " << qT.getElementType()
             << " (bf16, i8 with q_scale, or f8E4M3FN with q_scale for prefill)";
  }
  if (!oT.getElementType().isBF16())
    c.fail() << "output of type " << oT.getElementType() << " (bf16 output only)";
  if (p.headDim != 64 && p.headDim != 128 && p.headDim != 256)
    c.fail() << "head_dim " << p.headDim << " (64, 128 or 256)";
  if (vT.getDimSize(3) != p.headDim)
    c.fail() << "a value head_dim different from the key head_dim";
  if (!p.prefill && p.qLen > 8)
    c.fail() << "q_len " << p.qLen << " (decode kernels take 1 to 8 new tokens)";
}

/// The K/V cache's element type and zero points, and the arithmetic mode.
static void planCacheAndMode(Checker &c, AttentionOp op, ForwardPlan &p) {
  auto qT = op.getQ().getType(), kT = op.getK().getType(), vT = op.getV().getType();
  Type kE = kT.getElementType();
  p.zeroPoints = op.getKZero() || op.getVZero();
  if (p.zeroPoints) {
    if (!op.getKZero() || !op.getVZero())
      c.fail() << "zero points on only one of K and V (both asymmetric, or neither)";
    else if (op.getKZero().getType().getElementType() != kE ||
             op.getVZero().getType().getElementType() != kE)
      c.fail() << "zero points of a type other than the codes' (" << kE << ")";
    if (p.qI8)
      c.fail() << "asymmetric K/V with int8 queries (bf16 queries only)";
  }
  if (kE != vT.getElementType())
    c.fail() << "K and V of different element types";
  if (kE.isSignlessInteger(8)) {
    p.kv = KVType::I8;
  } else if (kE.isUnsignedInteger(8)) { // ui8 codes are asymmetric: k̂ − z with z in [0, 255]
    p.kv = KVType::I8;
    p.unsignedCodes = true;
    if (!p.zeroPoints)
      c.fail() << "ui8 K/V without zero points";
  } else if (isa<Float8E4M3FNType>(kE)) {
    p.kv = KVType::F8E4M3;
  } else if (kE.isBF16()) {
    p.kv = KVType::BF16;
  } else {
    c.fail() << "K/V of type " << kE << " (i8, ui8 with zero points, f8E4M3FN or bf16)";
  }
  if (p.zeroPoints && p.kv != KVType::I8)
    c.fail() << "zero points on a " << kE << " cache (i8 / ui8 only)";
  FailureOr<Mode> mode = op.getEffectiveMode();
  if (succeeded(mode))
    p.mode = stringifyMode(*mode).str();
  if (succeeded(mode) && *mode == Mode::full_int8) {
    // Both GEMMs on int8 tensor cores: P quantized to u8 per row and tile, V transposed.
    p.fullI8 = true;
    if (!p.prefill)
      c.fail() << "mode full_int8 for decode (P·V on int8 tensor cores is a prefill mode; "
                  "decode is bound by the cache's bytes: use half_int8)";
    if (!p.qI8)
      c.fail() << "mode full_int8 with " << qT.getElementType()
               << " queries (int8 queries with per_token_head or per_token q_scale)";
  }
  if (p.prefill && succeeded(mode)) {
    // Prefill modes name the GEMMs' arithmetic: only what the kernel does is accepted.
    if (*mode == Mode::fp8 && !p.fp8)
      c.fail() << "mode fp8 for prefill with " << qT.getElementType()
               << " queries (the fp8 GEMMs take f8E4M3FN queries with q_scale)";
    if (p.fp8 && *mode != Mode::fp8)
      c.fail() << "f8E4M3FN queries in mode " << stringifyMode(*mode) << " (fp8 only)";
    if (*mode == Mode::half_int8 && !p.qI8)
      c.fail() << "mode half_int8 for prefill with " << qT.getElementType()
               << " queries (Q·Kᵀ on s8 WGMMA needs int8 queries with per_token_head scales)";
  }
}

/// The granularities of the K/V scales (and, fp8, of the query scales).
static void planScales(Checker &c, AttentionOp op, ForwardPlan &p) {
  if (p.hasScales()) {
    for (QuantAttr qa : {op.getKQuantAttr(), op.getVQuantAttr()}) {
      if (!qa) {
        c.fail() << "a quantized K/V cache without k_quant/v_quant";
        continue;
      }
      Granularity g = qa.getGranularity();
      // per_block<r x D> (one scale per r tokens of a head): prefill with 8-bit queries
      // (half_int8, full_int8, fp8).
      bool block = g == Granularity::per_block && p.prefill && p.qk8() &&
                   qa.getBlockCols() == p.headDim;
      if (g != Granularity::per_token_head && g != Granularity::per_token &&
          g != Granularity::per_head && g != Granularity::per_tensor && !block)
        c.fail() << "K/V granularity " << stringifyGranularity(g)
                 << " (per_token_head, per_token, per_head or per_tensor; prefill with i8 or "
                    "f8E4M3FN queries also per_block<r x head_dim>)";
      if (!qa.getScaleType().isF32())
        c.fail() << "scales of type " << qa.getScaleType() << " (f32 scales only)";
    }
    if (c.ok) {
      p.kGran = op.getKQuantAttr().getGranularity();
      p.vGran = op.getVQuantAttr().getGranularity();
      if (p.kGran == Granularity::per_block)
        p.kBlock = op.getKQuantAttr().getBlockRows();
      if (p.vGran == Granularity::per_block)
        p.vBlock = op.getVQuantAttr().getBlockRows();
    }
  }
  if (p.fp8)
    checkFp8Prefill(c, op, p);
}

/// The warp roles: warpgroups per role, and register budgets within what the threads enter
/// with.
static void planWarpRoles(Checker &c, ScheduleAttr s, ForwardPlan &p) {
  WarpRoleAttr prod = s.getRole(RoleKind::producer), cons = s.getRole(RoleKind::consumer);
  if (s.getRoleList(RoleKind::consumer).size() > 1)
    c.fail() << "one register budget per consumer warpgroup (decode and prefill consumers take "
                "one consumer entry)";
  else if (!prod || !cons || prod.getWarpgroups() < 1 || prod.getWarpgroups() > 2 ||
           cons.getWarpgroups() < 1 || cons.getWarpgroups() > 3)
    c.fail() << "warp roles other than one or two producer and one to three consumer warpgroups";
  else {
    p.producerRegs = prod.getRegs();
    p.consumerRegs = cons.getRegs();
    p.producerWGs = prod.getWarpgroups();
    p.consumerWGs = cons.getWarpgroups();
    if (p.tileN * p.headDim * p.kvElemBytes() / 16 % p.producerThreads() != 0)
      c.fail() << p.producerWGs << " producer warpgroups for a tile of "
               << p.tileN * p.headDim * p.kvElemBytes() << " bytes (16 per thread per step)";
    // setmaxnreg only moves registers within what the CTA got at launch: every thread enters
    // with min(255, 65536 / threads) rounded down to a multiple of 8.
    int64_t entry = std::min<int64_t>(255, 65536 / (p.threads() * p.ctasPerSm)) / 8 * 8;
    int64_t wgs = p.producerWGs + p.consumerWGs;
    if (p.producerWGs * p.producerRegs + p.consumerWGs * p.consumerRegs > wgs * entry)
      c.fail() << "register budgets " << p.producerWGs << " × " << p.producerRegs << " + "
               << p.consumerWGs << " × " << p.consumerRegs << " per thread: the " << p.threads()
               << " threads enter with " << entry << " registers each, " << wgs * entry
               << " per producer/consumer set"
               << (p.ctasPerSm > 1 ? " (with ctas_per_sm " + std::to_string(p.ctasPerSm) + ")"
                                   : std::string());
  }
}

/// The schedule's flags (overlap, pingpong, persistent grid), query chunks, tile_n, stages and
/// packing, each checked against what the generators build.
static void planScheduleFields(Checker &c, ScheduleAttr s, ForwardPlan &p) {
  p.overlap = s.getIntraWgOverlap() && s.getIntraWgOverlap().getValue();
  p.pingpong = s.getPingpong() && s.getPingpong().getValue();
  if (p.pingpong && !(p.prefill && p.overlap))
    c.fail() << "pingpong without intra_wg_overlap in prefill (the consumers take turns issuing "
                "the overlapped loop's WGMMAs)";
  if (p.overlap && !p.prefill)
    c.fail() << "intra_wg_overlap for decode (prefill only: decode's two consumer warpgroups "
                "take alternate tiles and overlap each other)";
  p.persistent = s.getPersistent() && s.getPersistent().getValue();
  if (s.getClusterSize() != 1 || s.hasCrossover())
    c.fail() << "clusters or crossover";
  if (p.persistent && !p.prefill)
    c.fail() << "a persistent grid for decode (prefill only: decode's grid is its KV splits)";
  if (p.consumerWGs == 3 && (!p.prefill || p.overlap))
    c.fail() << "three consumer warpgroups for " << (!p.prefill ? "decode" : "intra_wg_overlap")
             << " (prefill only, without the overlap: each warpgroup owns a query tile and all "
                "three run over every key tile)";
  if (p.pingpong && p.consumerWGs != 2)
    c.fail() << "pingpong with " << p.consumerWGs
             << " consumer warpgroup(s) (two take turns issuing their WGMMAs)";
  if (p.prefill) {
    // Query chunks: pack · qChunk rows fill (at most) one 64-row WGMMA tile; one split.
    p.qChunk =
        std::max<int64_t>(1, p.qLen < 0 ? 64 / p.pack : std::min<int64_t>(p.qLen, 64 / p.pack));
    if (p.splitKv > 1)
      c.fail() << "split_kv " << p.splitKv
               << " for prefill (one split: the query chunks fill "
                  "the GPU)";
    p.splitKv = 1;
    if (s.getTileM() != 64)
      c.fail() << "tile_m " << s.getTileM() << " (64: one query tile per CTA)";
  }
  if (p.tileN != 32 && p.tileN != 64 && p.tileN != 128)
    c.fail() << "tile_n " << p.tileN << " (32, 64 or 128)";
  if (p.fp8) {
    // P·V on e4m3 reads Vᵀ rows of 128 keys, and V's scale multiplies each tile's product.
    if (p.tileN != 128)
      c.fail() << "fp8 prefill with tile_n " << p.tileN << " (128 only)";
    bool tileScale = p.vGran == Granularity::per_head || p.vGran == Granularity::per_tensor ||
                     (p.vGran == Granularity::per_block && p.vBlock % p.tileN == 0);
    if (!tileScale)
      c.fail() << "fp8 prefill with "
               << (p.vGran == Granularity::per_block ? "per_block<" + std::to_string(p.vBlock) +
                                                           "x" + std::to_string(p.headDim) + ">"
                                                     : stringifyGranularity(p.vGran).str())
               << " V scales (one V scale per " << p.tileN
               << "-key tile: per_block<r x head_dim> with r a multiple of " << p.tileN
               << ", per_head or per_tensor)";
  }
  if (p.fullI8 && p.tileN != 128)
    c.fail() << "full_int8 prefill with tile_n " << p.tileN
             << " (128 only: P·V on s8 reads Vᵀ rows of 128 keys)";
  if (p.stages < 1 || p.stages > 4)
    c.fail() << "stages " << p.stages << " (1 to 4)";
  if (p.groupSize() % p.pack != 0 || p.rows() > 64)
    c.fail() << "pack_q_heads " << p.pack << " (a divisor of " << p.groupSize()
             << " with pack · q_len ≤ 64)";
}

/// Shared memory: the two decode consumers' merge space, a second set of query tiles for a
/// persistent grid where it fits, and the CTA's and the SM's limits.
static void planSharedMemory(Checker &c, ForwardPlan &p) {
  // Two consumer warpgroups merge through the idle pipeline buffers.
  ForwardPlan::Smem sm = p.smem();
  if (!p.prefill && p.consumerWGs == 2 && (4 + p.headDim / 2) * 128 * 4 > sm.bars - sm.stage) {
    c.fail() << "two consumer warpgroups with this tile: their merge needs "
             << (4 + p.headDim / 2) * 512 << " bytes of pipeline buffers";
    return;
  }
  if (p.persistent) { // a second set of query tiles for the next work item, when it fits
    ForwardPlan two = p;
    two.qBuffers = 2;
    if (two.smemBytes() <= kMaxSharedBytesSm90)
      p.qBuffers = 2;
  }
  if (p.ctasPerSm > 1 && p.ctasPerSm * (p.smemBytes() + 1024) > kSharedBytesPerSmSm90) {
    c.fail() << "ctas_per_sm " << p.ctasPerSm << " with " << p.smemBytes()
             << " bytes of shared memory per CTA (tile_n " << p.tileN << ", stages " << p.stages
             << "): an SM has " << kSharedBytesPerSmSm90
             << " (and reserves 1024 per CTA); lower tile_n, stages or ctas_per_sm";
    return;
  }
  if (p.smemBytes() > kMaxSharedBytesSm90) {
    c.fail() << "this schedule needs " << p.smemBytes() << " bytes of shared memory (head_dim "
             << p.headDim << ", tile_n " << p.tileN << ", stages " << p.stages
             << "); an sm_90a CTA has " << kMaxSharedBytesSm90 << ": lower tile_n or stages";
    return;
  }
}

FailureOr<ForwardPlan> mlir::attn::nvvm::planForward(AttentionOp op) {
  Checker c{op};
  ForwardPlan p;
  p.name = op->getParentOfType<func::FuncOp>().getSymName().str();
  auto qT = op.getQ().getType(), kT = op.getK().getType(), oT = op.getOut().getType();
  p.prefill = op.getKind() == AttentionKind::prefill;
  bool prefill = op.getKind() == AttentionKind::prefill;
  for (int64_t d : {1, 2, 3})
    if (((d > 1 || !prefill) && (qT.isDynamicDim(d) || oT.isDynamicDim(d))) ||
        (d > 1 && kT.isDynamicDim(d)))
      c.fail() << (prefill ? "a dynamic head count or head_dim (batch, the query length and the "
                             "K/V length may be dynamic)"
                           : "a dynamic query length, head count or head_dim (only batch and the "
                             "K/V length may be dynamic)");
  if (!c.ok)
    return failure();
  // A ragged batch packs its queries along Sq: its q_len (the most of any sequence) is known at
  // launch, B is the table's rows or k's dim 0.
  p.ragged = op.isRagged();
  int64_t seqs = op.getNumSequences();
  p.batch = ShapedType::isDynamic(seqs) ? -1 : seqs;
  // -1: prefill, a kernel parameter
  p.qLen = qT.isDynamicDim(1) || p.ragged ? -1 : qT.getDimSize(1);
  p.qHeads = qT.getDimSize(2);
  p.kvHeads = kT.getDimSize(2);
  p.headDim = qT.getDimSize(3);
  p.kvLen = kT.isDynamicDim(1) ? -1 : kT.getDimSize(1);
  planQueryAndOutput(c, op, p);
  planCacheAndMode(c, op, p);
  planScales(c, op, p);
  if (op.isPaged() && !planPaged(c, op, p))
    return failure();
  p.causal = op.getCausal();
  p.alibi = static_cast<bool>(op.getAlibi());
  p.sinks = static_cast<bool>(op.getSinks());
  p.lse = static_cast<bool>(op.getLse());
  p.softcap = op.getSoftcapAttr() ? op.getSoftcapAttr().getValueAsDouble() : 0.0;
  if (std::optional<ArrayRef<int64_t>> w = op.getWindow(); w && w->size() == 2) {
    p.windowLeft = (*w)[0];
    p.windowRight = (*w)[1];
  }
  p.hadamard = op.getHadamard();
  p.seqLens = static_cast<bool>(op.getSeqLens());
  p.softmaxScale = op.getSoftmaxScaleAttr() ? op.getSoftmaxScaleAttr().getValueAsDouble()
                                            : 1.0 / std::sqrt(static_cast<double>(p.headDim));

  ScheduleAttr s = op.getScheduleAttr();
  if (!s || !s.getPackQHeads() || !s.getTileN() || !s.getStages() || !s.getSplitKv() ||
      !s.getRoles()) {
    c.fail() << "an incomplete schedule: run attn-select-schedule first";
    return failure();
  }
  p.pack = s.getPackQHeads();
  p.tileN = s.getTileN();
  p.stages = s.getStages();
  p.splitKv = s.isSplitAuto() ? 0 : s.getSplitKv();
  p.ctasPerSm = s.getCtasPerSm() ? s.getCtasPerSm() : 1;
  planWarpRoles(c, s, p);
  planScheduleFields(c, s, p);
  if (c.ok)
    checkSplits(c, p);
  if (!c.ok)
    return failure();
  planSharedMemory(c, p);
  if (!c.ok)
    return failure();
  if (p.paged() && p.pageSize < p.tileN) // tile_n / P boxes of one page each
    p.tmaBoxRows = p.pageSize;
  addWideBatchCompanion(p, s);
  return p;
}

/// The `kernels[]` entries of a decode plan's combine kernels, from their launch ABIs
/// (attn-build-kernel built them; none for prefill).
static SmallVector<llvm::json::Object> combineLaunches(gpu::GPUModuleOp module,
                                                       const ForwardPlan &plan) {
  SmallVector<llvm::json::Object> out;
  if (plan.prefill)
    return out;
  for (const char *suffix : {"_combine", "_combine_wide"}) {
    auto k = module.lookupSymbol<attnk::KernelOp>(plan.name + suffix);
    out.push_back(attnk::launchKernelJSON(k.getSymName(), k.getLaunchAttr()));
  }
  return out;
}

namespace {
struct ConvertAttnToNVVMPass : public attn::impl::ConvertAttnToNVVMBase<ConvertAttnToNVVMPass> {
  using ConvertAttnToNVVMBase::ConvertAttnToNVVMBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<Operation *> gpuOps;
    module.walk([&](Operation *op) {
      if (!isa<AttnDialect>(op->getDialect()))
        return;
      std::optional<TargetKind> t = getOpTarget(op);
      if (t && isGPUTarget(*t))
        gpuOps.push_back(op);
    });
    if (gpuOps.empty())
      return;
    bool ok = true;
    SmallVector<std::pair<func::FuncOp, ForwardPlan>, 1> plans;
    llvm::SmallPtrSet<Operation *, 8> parents;
    for (Operation *op : gpuOps) {
      auto att = dyn_cast<AttentionOp>(op);
      bool quantize =
          isa<QuantizeAppendOp, QuantizeAppendPagedOp, QuantizeDynamicOp, QuantizeMLAAppendOp>(op);
      bool mla = isa<MLADecodeOp>(op);
      if (!att && !quantize && !mla) {
        op->emitError() << "not supported yet by convert-attn-to-nvvm: '" << op->getName()
                        << "' for sm_90a (attn.attention, attn.mla_decode and attn.quantize.* "
                           "are lowered)";
        ok = false;
        continue;
      }
      if (!parents.insert(op->getParentOp()).second) { // reported with the first
        ok = false;
        continue;
      }
      if (failed(checkKernelPlacement(op, module, /*gpu=*/true)) ||
          failed(checkLaunchLimits(op))) {
        ok = false;
        continue;
      }
      auto fn = cast<func::FuncOp>(op->getParentOp());
      int64_t attnOps = 0;
      fn.walk([&](Operation *o) { attnOps += isa<AttnDialect>(o->getDialect()); });
      if (attnOps != 1) {
        op->emitError() << "not supported yet by convert-attn-to-nvvm: a GPU function holds one "
                           "attn op (this one holds "
                        << attnOps << ")";
        ok = false;
        continue;
      }
      FailureOr<ForwardPlan> plan =
          quantize || mla ? FailureOr<ForwardPlan>(failure()) : planForward(att);
      // The kernel level's kernels (attn-build-kernel): quantize, the forward kernel and
      // decode's combine kernels.
      auto kernels = module.lookupSymbol<gpu::GPUModuleOp>("attn_kernels");
      auto built = [&](const std::string &name) {
        return kernels && isa_and_nonnull<attnk::KernelOp>(kernels.lookupSymbol(name));
      };
      if (quantize || mla ||
          (succeeded(plan) &&
           (!built(plan->kernelName()) || (!plan->prefill && !built(plan->name + "_combine"))))) {
        op->emitError() << (quantize ? "attn.quantize.* is"
                            : mla    ? "attn.mla_decode is"
                                     : "the forward kernel and its split-KV combine kernels are")
                        << " built at the kernel level: run attn-build-kernel before "
                           "convert-attn-to-nvvm";
        plan = failure();
      }
      if (failed(plan)) {
        ok = false;
        continue;
      }
      plans.push_back({fn, *plan});
    }
    if (!ok)
      return signalPassFailure();

    MLIRContext *ctx = &getContext();
    OpBuilder b(ctx);
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(), UnitAttr::get(ctx));
    auto gpuModule = module.lookupSymbol<gpu::GPUModuleOp>("attn_kernels");
    if (!gpuModule) {
      b.setInsertionPointToEnd(module.getBody());
      auto target =
          NVVM::NVVMTargetAttr::get(ctx, /*optLevel=*/3, "nvptx64-nvidia-cuda", "sm_90a", "+ptx86");
      gpuModule =
          gpu::GPUModuleOp::create(b, module.getLoc(), "attn_kernels", b.getArrayAttr({target}));
    }
    // The forward kernels are attnk.kernel ops (attn-build-kernel): the launch metadata (with
    // the combine kernels' launch ABIs) goes on the main one as `attn.launch`, which
    // convert-attnk-to-nvvm carries to the llvm.func; metadata-only, they give way to a
    // declaration of the main one. The host function goes.
    for (auto &[fn, plan] : plans) {
      auto kernel = gpuModule.lookupSymbol<attnk::KernelOp>(plan.kernelName());
      std::string json = launchMetadataJSON(plan, combineLaunches(gpuModule, plan));
      if (!metadataOnly) {
        kernel->setAttr("attn.launch", b.getStringAttr(json));
        fn.erase();
        continue;
      }
      kernel.erase();
      if (plan.wide)
        gpuModule.lookupSymbol(plan.wide->kernelName())->erase();
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToEnd(gpuModule.getBody());
      auto decl =
          LLVM::LLVMFuncOp::create(b, fn.getLoc(), plan.kernelName(),
                                   LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {}));
      decl->setAttr("attn.launch", b.getStringAttr(json));
      fn.erase();
    }
  }
};
} // namespace
