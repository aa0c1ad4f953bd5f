//===- MLAPlan.cpp - planning and describing the MLA decode kernel --------===//
//
// What this file is: `planMLA`, which resolves an `attn.mla_decode` for sm_90a into an MLAPlan (or
// says on the op which part MLAKernel.cpp does not implement), and the plan as the `plan`
// dictionary of the kernel level's MLA ops and back.
//
//===----------------------------------------------------------------------===//

#include "MLAPlan.h"

#include "attn/Dialect/Attn/Transforms/ScheduleHeuristics.h"
#include "attn/Dialect/AttnKernel/IR/AttnKernel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <cmath>
#include <variant>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::nvvm;
using attn_abi::Param;

/// Registers of one thread of each of the 128-thread warpgroups when they share the SM's 65536.
static constexpr int64_t kMaxThreadRegs = 65536 / 128;

FailureOr<MLAPlan> mlir::attn::nvvm::planMLA(MLADecodeOp op) {
  bool ok = true;
  auto fail = [&]() -> InFlightDiagnostic {
    ok = false;
    return op->emitError() << "not supported yet by convert-attn-to-nvvm: ";
  };
  MLAPlan p;
  p.name = op->getParentOfType<func::FuncOp>().getSymName().str();
  auto qT = op.getQ().getType(), kvT = op.getKv().getType();
  p.dv = op.getHeadDimV();
  p.rope = op.getRopeDim();
  if (p.dv != 512 || p.rope != 64)
    fail() << "MLA with head_dim_v " << p.dv << " and rope_dim " << p.rope
           << " (DeepSeek's 512 + 64 only)";
  if (qT.isDynamicDim(2) || qT.isDynamicDim(3))
    fail() << "a dynamic head count or head_dim (batch, s_q, the cache length and top-k may "
              "be dynamic)";
  if (!ok)
    return failure();
  p.batch = qT.isDynamicDim(0) ? -1 : qT.getDimSize(0);
  p.sq = qT.isDynamicDim(1) ? -1 : qT.getDimSize(1);
  p.heads = qT.getDimSize(2);
  p.kvLen = kvT.isDynamicDim(1) ? -1 : kvT.getDimSize(1);
  p.sparse = static_cast<bool>(op.getIndices());
  if (p.sparse) {
    auto idxT = cast<MemRefType>(op.getIndices().getType());
    p.topk = idxT.isDynamicDim(2) ? -1 : idxT.getDimSize(2);
  } else {
    p.topk = 0;
  }
  QuantAttr quant = op.getKvQuantAttr();
  p.fp8 = static_cast<bool>(quant);
  if (quant) {
    p.quantTile = quant.getBlockCols();
    if (p.quantTile != 128)
      fail() << "tile scales over " << p.quantTile << " values (128: one per producer thread)";
  }
  p.causal = op.getCausal();
  p.seqLens = static_cast<bool>(op.getSeqLens());
  p.softmaxScale = op.getSoftmaxScaleAttr() ? op.getSoftmaxScaleAttr().getValueAsDouble()
                                            : 1.0 / std::sqrt(static_cast<double>(p.dk()));
  ScheduleAttr s = op.getScheduleAttr();
  if (!s || !s.getCrossover() || !s.getTileN() || !s.getStages()) {
    fail() << "an incomplete schedule: run attn-select-schedule first";
    return failure();
  }
  p.crossover = s.hasCrossover();
  if (s.getTileN() != MLAPlan::kBlock || s.getStages() != 2)
    fail() << "tile_n " << s.getTileN() << " and stages " << s.getStages()
           << " (blocks of 64 keys in 2 buffers)";
  if (s.getPackQHeads() && s.getPackQHeads() != MLAPlan::kHeadsPerCTA)
    fail() << "pack_q_heads " << s.getPackQHeads() << " (64 heads per CTA)";
  if (s.getTileM() && s.getTileM() != MLAPlan::kHeadsPerCTA)
    fail() << "tile_m " << s.getTileM() << " (64 heads per CTA)";
  if (s.getClusterSize() != p.clusterSize())
    fail() << "a cluster of " << s.getClusterSize() << " CTAs with crossover "
           << (p.crossover ? "on (2 CTAs)" : "off (1 CTA)");
  if ((s.getPingpong() && s.getPingpong().getValue()) ||
      (s.getIntraWgOverlap() && s.getIntraWgOverlap().getValue()) ||
      (s.getPersistent() && s.getPersistent().getValue()) ||
      (s.getSplitKv() && !s.isSplitAuto() && s.getSplitKv() != 1) || s.getCtasPerSm() > 1)
    fail() << "pingpong, intra-warpgroup overlap, a persistent grid, split_kv or ctas_per_sm for "
              "MLA decode";
  if (s.getRoles()) {
    // One producer warpgroup; two consumer warpgroups, as one entry (the same budget) or one
    // entry each (consumer 0: S and softmax, consumer 1: P·V only).
    WarpRoleAttr prod = s.getRole(RoleKind::producer);
    SmallVector<WarpRoleAttr> cons = s.getRoleList(RoleKind::consumer);
    bool shape = prod && prod.getWarpgroups() == 1 &&
                 ((cons.size() == 1 && cons[0].getWarpgroups() == 2) || cons.size() == 2);
    if (!shape) {
      fail() << "warp roles other than one producer and two consumer warpgroups";
    } else {
      p.producerRegs = prod.getRegs();
      p.consumerRegs = cons[0].getRegs();
      p.consumer1Regs = cons.back().getRegs();
      // 384 threads enter with 168 registers each; setmaxnreg moves them between warpgroups.
      int64_t e = MLAPlan::kEntryRegs;
      int64_t regs[3] = {p.producerRegs, p.consumerRegs, p.consumer1Regs};
      if (llvm::any_of(regs, [](int64_t r) { return r < 24 || r > 256 || r % 8; }) ||
          p.producerRegs + p.consumerRegs + p.consumer1Regs > 3 * e)
        fail() << "register budgets producer " << p.producerRegs << " + consumers "
               << p.consumerRegs << " and " << p.consumer1Regs
               << " (multiples of 8 in [24, 256]; the 384 threads enter with " << e
               << " each: at most " << 3 * e << " together)";
      // The consumer role enters with that budget (each consumer then sets its own).
      else if (p.producerRegs + 2 * e > kMaxThreadRegs)
        fail() << "a producer budget of " << p.producerRegs << " registers (the consumer "
               << "warpgroups enter with " << e << " each: at most " << kMaxThreadRegs - 2 * e
               << ")";
    }
  }
  if (!ok)
    return failure();
  if (p.smemBytes() > kMaxSharedBytesSm90) {
    op->emitError() << "internal error: the MLA kernel needs " << p.smemBytes()
                    << " bytes of shared memory";
    return failure();
  }
  return p;
}

namespace {
/// One entry of the plan dictionary: its name and the field it holds.
using Member =
    std::variant<int64_t MLAPlan::*, bool MLAPlan::*, double MLAPlan::*, std::string MLAPlan::*>;
struct Field {
  const char *name;
  Member member;
};
#define F(f)                                                                                       \
  Field { #f, &MLAPlan::f }
const Field kFields[] = {
    F(name),    F(batch),     F(sq),           F(heads),        F(kvLen),        F(topk),
    F(dv),      F(rope),      F(quantTile),    F(fp8),          F(sparse),       F(causal),
    F(seqLens), F(crossover), F(softmaxScale), F(producerRegs), F(consumerRegs), F(consumer1Regs)};
#undef F
} // namespace

DictionaryAttr mlir::attn::nvvm::mlaPlanToAttr(MLIRContext *ctx, const MLAPlan &p) {
  Builder b(ctx);
  SmallVector<NamedAttribute> entries;
  for (const Field &f : kFields) {
    Attribute a;
    if (auto *m = std::get_if<int64_t MLAPlan::*>(&f.member))
      a = b.getI64IntegerAttr(p.**m);
    else if (auto *m = std::get_if<bool MLAPlan::*>(&f.member))
      a = b.getBoolAttr(p.**m);
    else if (auto *m = std::get_if<double MLAPlan::*>(&f.member))
      a = b.getF64FloatAttr(p.**m);
    else
      a = b.getStringAttr(p.*std::get<std::string MLAPlan::*>(f.member));
    entries.push_back(b.getNamedAttr(f.name, a));
  }
  return b.getDictionaryAttr(entries);
}

/// Reads one entry into its field; false where it is missing or of another kind.
static bool readField(DictionaryAttr d, const Field &f, MLAPlan &p) {
  Attribute a = d.get(f.name);
  if (auto *m = std::get_if<int64_t MLAPlan::*>(&f.member)) {
    auto i = dyn_cast_or_null<IntegerAttr>(a);
    if (i)
      p.**m = i.getInt();
    return bool(i);
  }
  if (auto *m = std::get_if<bool MLAPlan::*>(&f.member)) {
    auto v = dyn_cast_or_null<BoolAttr>(a);
    if (v)
      p.**m = v.getValue();
    return bool(v);
  }
  if (auto *m = std::get_if<double MLAPlan::*>(&f.member)) {
    auto v = dyn_cast_or_null<FloatAttr>(a);
    if (v)
      p.**m = v.getValueAsDouble();
    return bool(v);
  }
  auto v = dyn_cast_or_null<StringAttr>(a);
  if (v)
    p.*std::get<std::string MLAPlan::*>(f.member) = v.str();
  return bool(v);
}

FailureOr<MLAPlan> mlir::attn::nvvm::mlaPlanFromAttr(DictionaryAttr d,
                                                     function_ref<InFlightDiagnostic()> err) {
  MLAPlan p;
  for (const Field &f : kFields)
    if (!readField(d, f, p)) {
      err() << "MLA plan without a valid '" << f.name << "' entry";
      return failure();
    }
  // What the builders index with or divide by: the values planMLA accepts.
  auto budget = [](int64_t r) { return r >= 24 && r <= 256 && r % 8 == 0; };
  bool ok = p.dv == 512 && p.rope == 64 && p.quantTile == 128 && p.heads >= MLAPlan::kHeadsPerCTA &&
            p.heads % MLAPlan::kHeadsPerCTA == 0 && budget(p.producerRegs) &&
            budget(p.consumerRegs) && budget(p.consumer1Regs) &&
            p.producerRegs + p.consumerRegs + p.consumer1Regs <= 3 * MLAPlan::kEntryRegs;
  if (!ok) {
    err() << "MLA plan outside what the kernel builds (head_dim_v 512, rope_dim 64, tiles of 128, "
             "heads a multiple of 64, register budgets)";
    return failure();
  }
  return p;
}
