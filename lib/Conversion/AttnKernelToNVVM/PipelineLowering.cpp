//===- PipelineLowering.cpp - warp roles and rings to NVVM ----------------===//
//
// What this file is: the lowering of the pipeline ops that structure a kernel:
// `attnk.warp_specialize` (two roles: the first role's warpgroups take the first threads; each
// role sets its register budget with `setmaxnreg` — a producer decreases, a consumer increases
// (a consumer whose budget is the one the threads enter with keeps it) — then runs its region; the
// kernel gets `.minnctapersm` = ctas_per_sm) and `attnk.ring.alloc` (the shared-memory address of
// the ring's first stage: the kernel's dynamic shared memory aligned to 1024 bytes, computed by the
// kernel's first ring, plus the ring's offset).
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"

#include "../AttnToNVVM/ForwardKernelImpl.h"

#include "attn/Dialect/AttnKernel/IR/AttnKernel.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace mlir::attnk;
using attn::nvvm::KernelBuilder;

namespace {
struct WarpSpecializeLowering : OpConversionPattern<WarpSpecializeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(WarpSpecializeOp op, OpAdaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto roles = llvm::to_vector(op.getRoles().getAsRange<attn::WarpRoleAttr>());
    if (roles.size() != 2)
      return rewriter.notifyMatchFailure(op, "lowered for two roles");
    auto fn = op->getParentOfType<LLVM::LLVMFuncOp>();
    if (!fn)
      return rewriter.notifyMatchFailure(op, "outside a lowered kernel");
    rewriter.modifyOpInPlace(fn, [&] {
      fn->setAttr("nvvm.minctasm", rewriter.getI32IntegerAttr(op.getCtasPerSm()));
    });
    KernelBuilder k(rewriter, op.getLoc());
    // What each thread enters with: the SM's registers shared by the CTAs' threads.
    int64_t threads = 0;
    for (attn::WarpRoleAttr role : roles)
      threads += role.getWarpgroups() * kThreadsPerWarpgroup;
    int64_t entry = kRegistersPerSM / (threads * op.getCtasPerSm()) / 8 * 8;
    auto enter = [&](attn::WarpRoleAttr role, Region &region) {
      bool producer = role.getKind() == attn::RoleKind::producer;
      auto action =
          producer ? NVVM::SetMaxRegisterAction::decrease : NVVM::SetMaxRegisterAction::increase;
      if (producer || role.getRegs() != entry)
        NVVM::SetMaxRegisterOp::create(rewriter, op.getLoc(), role.getRegs(), action);
      rewriter.inlineBlockBefore(&region.front(), rewriter.getInsertionBlock(),
                                 rewriter.getInsertionPoint());
      return SmallVector<Value>();
    };
    Value firstRole = k.cmp(LLVM::ICmpPredicate::ult, k.tidX(),
                            roles[0].getWarpgroups() * kThreadsPerWarpgroup);
    k.ifThenElse(
        firstRole, TypeRange{}, [&] { return enter(roles[0], op.getRoleRegions()[0]); },
        [&] { return enter(roles[1], op.getRoleRegions()[1]); });
    rewriter.eraseOp(op);
    return success();
  }
};

struct RingAllocLowering : OpConversionPattern<RingAllocOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(RingAllocOp op, OpAdaptor,
                                ConversionPatternRewriter &rewriter) const override {
    std::optional<uint64_t> offset = op.getOffset();
    if (!offset)
      return op.emitOpError("needs its shared-memory offset (`at`) to be lowered");
    auto module = op->getParentOfType<gpu::GPUModuleOp>();
    if (!module)
      return rewriter.notifyMatchFailure(op, "outside a gpu.module");
    KernelBuilder k(rewriter, op.getLoc());
    auto first = *op->getBlock()->getOps<RingAllocOp>().begin();
    Value base;
    if (first == op) {
      attn::nvvm::ensureSharedSymbol(rewriter, op.getLoc(), module);
      base = attn::nvvm::buildAlignedSharedBase(k);
    } else {
      base = ringSharedBase(rewriter.getRemappedValue(first.getRing()));
    }
    if (!base)
      return rewriter.notifyMatchFailure(op, "the first ring is not lowered");
    rewriter.replaceOp(op, k.gep(base, static_cast<int64_t>(*offset)));
    return success();
  }
};
} // namespace

Value mlir::attnk::ringSharedBase(Value ring) {
  auto gep = ring ? ring.getDefiningOp<LLVM::GEPOp>() : LLVM::GEPOp();
  return gep ? gep.getBase() : Value();
}

void mlir::attnk::populatePipelinePatterns(const TypeConverter &tc, RewritePatternSet &patterns) {
  patterns.add<WarpSpecializeLowering, RingAllocLowering>(tc, patterns.getContext());
}
