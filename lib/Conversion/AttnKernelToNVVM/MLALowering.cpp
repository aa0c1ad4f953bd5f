//===- MLALowering.cpp - the MLA decode kernel's frame and roles ----------===//
//
// What this file is: the lowering of the MLA decode kernel's ops (MLAOps.td) through the
// builders of lib/Conversion/AttnToNVVM/MLAKernel.cpp: each step's `plan` is read back into an
// MLAPlan and the builders' state (MLACtx) is rebuilt from the op's operands — the kernel's
// parameters, its rings (the aligned shared base) and the work values. `attnk.mla.work` →
// thread and CTA ids; `attnk.mla.prologue` → cluster rank, keys, barriers, query tile, CTA
// barrier (and the `noalias` of the buffers); `attnk.mla.producer` / `attnk.mla.consumers` →
// the roles' programs; `attnk.mla.cluster_sync` → the cluster barrier.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"

#include "../AttnToNVVM/MLAPlan.h"

#include "attn/Dialect/AttnKernel/IR/AttnKernel.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;
using namespace mlir::attnk;
using namespace mlir::attn::nvvm;

namespace {
/// The op's plan, or a diagnostic on the op.
template <typename OpT> FailureOr<MLAPlan> readPlan(OpT op) {
  return mlaPlanFromAttr(op.getPlan(), [op]() mutable { return op.emitOpError(); });
}

/// A step op's plan and the builders' state bound to it (MLACtx refers to the plan).
struct BoundStep {
  MLAPlan plan;
  MLACtx c;
  explicit BoundStep(const MLAPlan &p) : plan(p), c{plan, plan.smem()} {}
  BoundStep(const BoundStep &) = delete;
  BoundStep &operator=(const BoundStep &) = delete;
};

/// The builders' state of a step op: plan, parameters, aligned shared base, work values; null
/// after a diagnostic on the op.
template <typename OpT, typename Adaptor>
std::unique_ptr<BoundStep> bindCtx(OpT op, Adaptor adaptor) {
  FailureOr<MLAPlan> p = readPlan(op);
  if (failed(p))
    return nullptr;
  auto step = std::make_unique<BoundStep>(*p);
  bindMLAParams(step->c, adaptor.getParams());
  step->c.base = ringSharedBase(adaptor.getRings()[0]);
  if (!step->c.base) {
    op.emitOpError("needs rings allocated in the kernel's shared memory");
    return nullptr;
  }
  bindMLAWork(step->c, adaptor.getWork());
  return step;
}

struct WorkLowering : OpConversionPattern<MLAWorkOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(MLAWorkOp op, OpAdaptor,
                                ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    rewriter.replaceOp(op, buildMLAWork(k));
    return success();
  }
};

struct PrologueLowering : OpConversionPattern<MLAPrologueOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(MLAPrologueOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    std::unique_ptr<BoundStep> step = bindCtx(op, adaptor);
    if (!step)
      return failure();
    // q, kv, indices, seq_lens and out do not alias.
    markNoAlias(rewriter, op, adaptor.getParams().take_front(5));
    KernelBuilder k(rewriter, op.getLoc());
    rewriter.replaceOp(op, buildMLAPrologue(k, step->c));
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
    if constexpr (std::is_same_v<OpT, MLAProducerOp>)
      buildMLAProducerRole(k, step->c);
    else
      buildMLAConsumerRoles(k, step->c);
    rewriter.eraseOp(op);
    return success();
  }
};

struct ClusterSyncLowering : OpConversionPattern<MLAClusterSyncOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(MLAClusterSyncOp op, OpAdaptor,
                                ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    k.clusterSync();
    rewriter.eraseOp(op);
    return success();
  }
};
} // namespace

void mlir::attnk::populateMLAPatterns(const TypeConverter &tc, RewritePatternSet &patterns) {
  patterns.add<WorkLowering, PrologueLowering, RoleLowering<MLAProducerOp>,
               RoleLowering<MLAConsumersOp>, ClusterSyncLowering>(tc, patterns.getContext());
}
