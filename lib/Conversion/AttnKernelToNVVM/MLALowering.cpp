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
template <typename OpT>
FailureOr<MLAPlan> readPlan(OpT op) {
  return mlaPlanFromAttr(op.getPlan(), [op]() mutable { return op.emitOpError(); });
}

/// The builders' state of a step op: parameters, aligned shared base, work values.
template <typename OpT, typename Adaptor>
LogicalResult bindStep(OpT op, Adaptor adaptor, MLACtx &c) {
  bindMLAParams(c, adaptor.getParams());
  c.base = ringSharedBase(adaptor.getRings()[0]);
  if (!c.base)
    return op.emitOpError("needs rings allocated in the kernel's shared memory");
  bindMLAWork(c, adaptor.getWork());
  return success();
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
    FailureOr<MLAPlan> p = readPlan(op);
    if (failed(p))
      return failure();
    MLACtx c{*p, p->smem()};
    if (failed(bindStep(op, adaptor, c)))
      return failure();
    // q, kv, indices, seq_lens and out do not alias.
    if (auto fn = op->getParentOfType<LLVM::LLVMFuncOp>())
      rewriter.modifyOpInPlace(fn, [&] {
        for (Value v : adaptor.getParams().take_front(5))
          if (auto a = dyn_cast<BlockArgument>(v); a && a.getOwner() == &fn.getBody().front())
            fn.setArgAttr(a.getArgNumber(), "llvm.noalias", UnitAttr::get(op.getContext()));
      });
    KernelBuilder k(rewriter, op.getLoc());
    rewriter.replaceOp(op, buildMLAPrologue(k, c));
    return success();
  }
};

template <typename OpT>
struct RoleLowering : OpConversionPattern<OpT> {
  using OpConversionPattern<OpT>::OpConversionPattern;
  using Adaptor = typename OpConversionPattern<OpT>::OpAdaptor;
  LogicalResult matchAndRewrite(OpT op, Adaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    FailureOr<MLAPlan> p = readPlan(op);
    if (failed(p))
      return failure();
    MLACtx c{*p, p->smem()};
    if (failed(bindStep(op, adaptor, c)))
      return failure();
    KernelBuilder k(rewriter, op.getLoc());
    if constexpr (std::is_same_v<OpT, MLAProducerOp>)
      buildMLAProducerRole(k, c);
    else
      buildMLAConsumerRoles(k, c);
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
