//===- BuildKernel.cpp - the attn-build-kernel pass -----------------------===//
//
// What this file is: `attn-build-kernel` — builds, from scheduled sm_90a specs, the kernels that
// go through the kernel level (`attnk`, docs/KernelIR.md) into `gpu.module @attn_kernels`:
//
//   kernel level (this pass, then convert-attnk-to-nvvm):
//     attn.quantize.append / .dynamic → <f>_quantize          (BuildQuantize.cpp)
//     attn.quantize.mla_append        → <f>_quantize          (BuildMLAQuantize.cpp)
//     attn.mla_decode                 → <f>_mla               (BuildMLA.cpp)
//     attn.attention                  → <f>_decode, <f>_decode_2cta, <f>_prefill (BuildForward.cpp)
//     attn.attention decode           → <f>_combine, <f>_combine_wide (BuildCombine.cpp)
//
// A quantize or MLA op's host function is removed (its kernel is complete, with its launch
// metadata); an attention op stays for
// convert-attn-to-nvvm, which checks it, attaches the launch metadata to its forward kernel
// and removes the host function.
//
//===----------------------------------------------------------------------===//

#include "attn/Conversion/Passes.h"

#include "Build.h"
#include "QuantizePlan.h"

#include "../AttnToNVVM/ForwardPlan.h"
#include "../AttnToNVVM/MLAPlan.h"

#include "attn/Dialect/AttnKernel/IR/AttnKernel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNBUILDKERNEL
#include "attn/Conversion/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::kernel;

/// The module's `gpu.module @attn_kernels` (NVVM target sm_90a, PTX 8.6), created if missing.
static gpu::GPUModuleOp getOrCreateKernelModule(OpBuilder &b, ModuleOp module) {
  MLIRContext *ctx = b.getContext();
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(), UnitAttr::get(ctx));
  if (auto m = module.lookupSymbol<gpu::GPUModuleOp>("attn_kernels"))
    return m;
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToEnd(module.getBody());
  auto target =
      NVVM::NVVMTargetAttr::get(ctx, /*optLevel=*/3, "nvptx64-nvidia-cuda", "sm_90a", "+ptx86");
  return gpu::GPUModuleOp::create(b, module.getLoc(), "attn_kernels", b.getArrayAttr({target}));
}

/// A quantize or MLA op's kernel may be built: it is placed as a kernel spec and alone in its
/// function.
static LogicalResult checkQuantizePlacement(Operation *op, ModuleOp module) {
  if (failed(checkKernelPlacement(op, module, /*gpu=*/true)))
    return failure();
  int64_t attnOps = 0;
  op->getParentOp()->walk([&](Operation *o) { attnOps += isa<AttnDialect>(o->getDialect()); });
  if (attnOps != 1)
    return op->emitError() << "not supported yet by the sm_90a kernels: a GPU function holds one "
                              "attn op (this one holds "
                           << attnOps << ")";
  return success();
}

/// An attention op's kernels, in launch order: the forward kernel, (decode) the combine kernels
/// and the two-CTA companion. Where the op is not one the sm_90a kernels take, nothing is built
/// for the forward kernel: convert-attn-to-nvvm, which plans it again, says why.
static void buildAttentionKernels(OpBuilder &b, ModuleOp module, gpu::GPUModuleOp kernels,
                                  AttentionOp op) {
  FailureOr<nvvm::ForwardPlan> plan = failure();
  {
    ScopedDiagnosticHandler quiet(op.getContext(), [](Diagnostic &) { return success(); });
    if (succeeded(checkKernelPlacement(op, module, /*gpu=*/true)))
      plan = nvvm::planForward(op);
  }
  if (succeeded(plan))
    buildForwardKernel(b, kernels, op, *plan);
  buildCombineKernels(b, kernels, op);
  if (succeeded(plan) && plan->wide)
    buildForwardKernel(b, kernels, op, *plan->wide);
}

namespace {
struct AttnBuildKernelPass : public attn::impl::AttnBuildKernelBase<AttnBuildKernelPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<Operation *> quantizeOps;
    SmallVector<AttentionOp> attentionOps;
    module.walk([&](Operation *op) {
      std::optional<TargetKind> t = getOpTarget(op);
      if (!isa<AttnDialect>(op->getDialect()) || !t || !isGPUTarget(*t))
        return;
      if (isa<QuantizeAppendOp, QuantizeAppendPagedOp, QuantizeDynamicOp, QuantizeMLAAppendOp,
              MLADecodeOp>(op))
        quantizeOps.push_back(op);
      else if (auto att = dyn_cast<AttentionOp>(op))
        attentionOps.push_back(att);
    });
    bool ok = true;
    SmallVector<std::pair<Operation *, QuantizePlan>> plans;
    SmallVector<std::pair<QuantizeMLAAppendOp, MLAQuantizePlan>> mlaPlans;
    SmallVector<std::pair<MLADecodeOp, nvvm::MLAPlan>> decodePlans;
    for (Operation *op : quantizeOps) {
      if (failed(checkQuantizePlacement(op, module))) {
        ok = false;
      } else if (auto decode = dyn_cast<MLADecodeOp>(op)) {
        FailureOr<nvvm::MLAPlan> plan = failure();
        if (succeeded(nvvm::checkLaunchLimits(op)))
          plan = nvvm::planMLA(decode);
        ok &= succeeded(plan);
        if (succeeded(plan))
          decodePlans.push_back({decode, *plan});
      } else if (auto mla = dyn_cast<QuantizeMLAAppendOp>(op)) {
        FailureOr<MLAQuantizePlan> plan = planMLAQuantize(mla);
        ok &= succeeded(plan);
        if (succeeded(plan))
          mlaPlans.push_back({mla, *plan});
      } else {
        FailureOr<QuantizePlan> plan = planQuantize(op);
        ok &= succeeded(plan);
        if (succeeded(plan))
          plans.push_back({op, *plan});
      }
    }
    if (!ok)
      return signalPassFailure();
    if (plans.empty() && mlaPlans.empty() && decodePlans.empty() && attentionOps.empty())
      return;
    OpBuilder b(&getContext());
    gpu::GPUModuleOp kernels = getOrCreateKernelModule(b, module);
    for (auto &[op, plan] : plans) {
      auto fn = cast<func::FuncOp>(op->getParentOp());
      buildQuantizeKernel(b, fn.getLoc(), kernels, op, plan);
      fn.erase();
    }
    for (auto &[op, plan] : mlaPlans) {
      auto fn = cast<func::FuncOp>(op->getParentOp());
      buildMLAQuantizeKernel(b, fn.getLoc(), kernels, op, plan);
      fn.erase();
    }
    for (auto &[op, plan] : decodePlans) {
      auto fn = cast<func::FuncOp>(op->getParentOp());
      buildMLAKernel(b, fn.getLoc(), kernels, op, plan);
      fn.erase();
    }
    for (AttentionOp op : attentionOps)
      buildAttentionKernels(b, module, kernels, op);
  }
};
} // namespace
