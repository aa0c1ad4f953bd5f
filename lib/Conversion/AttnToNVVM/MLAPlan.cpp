//===- MLAPlan.cpp - planning and describing the MLA decode kernel --------===//
//
// What this file is: `planMLA`, which resolves an `attn.mla_decode` for sm_90a into an MLAPlan (or
// says on the op which part MLAKernel.cpp does not implement), and `mlaLaunchJSON`, the launch
// metadata written beside the PTX (docs/GPUMLA.md).
//
//===----------------------------------------------------------------------===//

#include "MLAPlan.h"

#include "attn/Dialect/Attn/Transforms/ScheduleHeuristics.h"
#include "attn/Dialect/AttnKernel/IR/AttnKernel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::nvvm;
using attn_abi::Param;

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

std::string mlir::attn::nvvm::mlaLaunchJSON(const MLAPlan &p) {
  using llvm::json::Array;
  using llvm::json::Object;
  using G = attn_abi::GridSymbol;
  llvm::json::Value grid = Array{p.headGroups(), attn_abi::kGridSymbols[size_t(G::Sq)].name,
                                 attn_abi::kGridSymbols[size_t(G::Batch)].name};
  Object root{
      {"format", "attn-launch-v1"},
      {"arch", 90},
      {"problem",
       Object{{"kind", "mla_decode"}, {"batch", p.batch}, {"sq", p.sq}, {"heads", p.heads},
              {"kv_len", p.kvLen}, {"topk", p.topk}, {"sparse", p.sparse},
              {"head_dim_v", p.dv}, {"rope_dim", p.rope},
              {"kv_format", p.fp8 ? "fp8_tiles" : "bf16"}, {"quant_tile", p.quantTile},
              {"token_bytes", p.tokenBytes()}, {"causal", p.causal}, {"seq_lens", p.seqLens},
              {"softmax_scale", p.softmaxScale}}},
      {"schedule", Object{{"crossover", p.crossover}, {"heads_per_cta", MLAPlan::kHeadsPerCTA},
                          {"block_keys", MLAPlan::kBlock}, {"buffers", 2},
                          {"producer_regs", p.producerRegs},
                          {"consumer_regs", Array{p.consumerRegs, p.consumer1Regs}}}},
      {"kernels",
       Array{Object{{"name", p.kernelName()},
                    {"role", "mla_decode"},
                    {"block", Array{MLAPlan::threads(), 1, 1}},
                    {"cluster", Array{p.clusterSize(), 1, 1}},
                    {"smem_bytes", p.smemBytes()},
                    {"grid", std::move(grid)},
                    {"params", attnk::launchParamsJSON(
                                   {Param::Q, Param::Kv, Param::Indices, Param::SeqLens, Param::Out,
                                    Param::Batch, Param::Sq, Param::KvLen, Param::Topk})}}}}};
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  return s;
}
