//===- ForwardLowering.cpp - the forward kernel's frame and roles ---------===//
//
// What this file is: the lowering of the forward-attention kernel's ops (ForwardOps.td) through
// the builders of lib/Conversion/AttnToNVVM/ForwardKernel.cpp: each op's `plan` is read back
// into a ForwardPlan and the builders' state (Ctx) is rebuilt from the op's operands — the
// kernel's parameters, its rings (the aligned shared base) and the work values.
// `attnk.forward.work` → thread and CTA ids; `attnk.forward.prologue` → key tiles, barriers,
// first loads, query tile, CTA barrier (and the `noalias` of the buffers the kernel reads and
// writes); `attnk.forward.producer` → the producer role's program (the consumer's ops:
// ConsumerLowering.cpp);
// `attnk.forward.key_scales` / `forward.stage_scales` → a producer thread's scale loads and
// stores.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"

#include "../AttnToNVVM/ForwardKernelImpl.h"

#include "attn/Dialect/AttnKernel/IR/AttnKernel.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

#include <memory>

using namespace mlir;
using namespace mlir::attnk;
using namespace mlir::attn::nvvm;

namespace {
/// A forward op's builders' state: its plan and the Ctx bound to it (which refers to the plan).
struct BoundStep {
  ForwardPlan plan;
  Ctx c;
  explicit BoundStep(const ForwardPlan &p) : plan(p), c{plan, plan.smem()} {}
  BoundStep(const BoundStep &) = delete;
  BoundStep &operator=(const BoundStep &) = delete;
};

/// The op's plan, or a diagnostic on the op.
template <typename OpT> FailureOr<ForwardPlan> readPlan(OpT op) {
  return forwardPlanFromAttr(op.getPlan(), [op]() mutable { return op.emitOpError(); });
}

/// The builders' state of a step op: plan, parameters, aligned shared base, work values; null
/// after a diagnostic on the op.
template <typename OpT, typename Adaptor>
std::unique_ptr<BoundStep> bindCtx(OpT op, Adaptor adaptor) {
  FailureOr<ForwardPlan> p = readPlan(op);
  if (failed(p))
    return nullptr;
  auto step = std::make_unique<BoundStep>(*p);
  Ctx &c = step->c;
  ValueRange params = adaptor.getParams();
  if (params.size() != c.p.numParams() || adaptor.getRings().empty()) {
    op.emitOpError("takes the forward kernel's ")
        << c.p.numParams() << " parameters and at least one ring";
    return nullptr;
  }
  bindForwardParams(c, params);
  c.base = ringSharedBase(adaptor.getRings()[0]);
  if (!c.base) {
    op.emitOpError("needs rings allocated in the kernel's shared memory");
    return nullptr;
  }
  bindForwardWork(c, adaptor.getWork());
  return step;
}

struct WorkLowering : OpConversionPattern<ForwardWorkOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ForwardWorkOp op, OpAdaptor,
                                ConversionPatternRewriter &rewriter) const override {
    FailureOr<ForwardPlan> p = readPlan(op);
    if (failed(p))
      return failure();
    KernelBuilder k(rewriter, op.getLoc());
    rewriter.replaceOp(op, buildForwardWork(k, *p));
    return success();
  }
};

struct PrologueLowering : OpConversionPattern<ForwardPrologueOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ForwardPrologueOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    std::unique_ptr<BoundStep> step = bindCtx(op, adaptor);
    if (!step)
      return failure();
    // q, k_scale, v_scale, seq_lens, alibi, out and the workspace do not alias.
    markNoAlias(rewriter, op, adaptor.getParams().slice(2, 7));
    KernelBuilder k(rewriter, op.getLoc());
    rewriter.replaceOp(op, buildForwardPrologue(k, step->c));
    return success();
  }
};

template <typename OpT> struct RoleLowering : OpConversionPattern<OpT> {
  using OpConversionPattern<OpT>::OpConversionPattern;
  using Adaptor = typename OpConversionPattern<OpT>::OpAdaptor;
  LogicalResult matchAndRewrite(OpT op, Adaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    std::unique_ptr<BoundStep> step = bindCtx(op, adaptor);
    if (!step)
      return failure();
    KernelBuilder k(rewriter, op.getLoc());
    buildForwardProducerRole(k, step->c);
    rewriter.eraseOp(op);
    return success();
  }
};

/// `attnk.forward.key_scales`: the scales of key `args[0]` (paged: in page `args[1]`) and,
/// asymmetric, its zero points as f32 (read at the scales' clamped pool row).
struct KeyScalesLowering : OpConversionPattern<ForwardKeyScalesOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ForwardKeyScalesOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    std::unique_ptr<BoundStep> step = bindCtx(op, adaptor);
    if (!step)
      return failure();
    KernelBuilder k(rewriter, op.getLoc());
    ValueRange args = adaptor.getArgs();
    SmallVector<Value> scales = loadScales(k, step->c, args[0], args.size() > 1 ? args[1] : Value(),
                                           /*zeroCodes=*/true);
    if (scales.size() != op.getScales().size())
      return op.emitOpError("yields ")
             << op.getScales().size() << " values where the plan's cache has " << scales.size()
             << " (K and V scales, then zero points when asymmetric)";
    rewriter.replaceOp(op, scales);
    return success();
  }
};

/// `attnk.forward.stage_scales`: the K and V scales into buffer `args[2]`'s scale slots.
struct StageScalesLowering : OpConversionPattern<ForwardStageScalesOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ForwardStageScalesOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    std::unique_ptr<BoundStep> step = bindCtx(op, adaptor);
    if (!step)
      return failure();
    KernelBuilder k(rewriter, op.getLoc());
    ValueRange args = adaptor.getArgs();
    stageScales(k, step->c, args[0], args[1], args[2]);
    rewriter.eraseOp(op);
    return success();
  }
};
} // namespace

void mlir::attnk::populateForwardPatterns(const TypeConverter &tc, RewritePatternSet &patterns) {
  patterns.add<WorkLowering, PrologueLowering, RoleLowering<ForwardProducerOp>, KeyScalesLowering,
               StageScalesLowering>(tc, patterns.getContext());
}
