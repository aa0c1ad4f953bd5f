//===- KernelLowering.cpp - attnk.kernel to llvm.func ---------------------===//
//
// What this file is: the lowering of the kernel container `attnk.kernel` to an `llvm.func` in
// the same place of its `gpu.module`: `nvvm.kernel`, `nvvm.maxntid = [threads, 1, 1]`,
// `nvvm.cluster_dim` where the launch's cluster is not 1 × 1 × 1, memref
// parameters as global pointers, tensor maps as by-value grid constants, `griddepcontrol.wait`
// first when the kernel is launched as a programmatic dependent, the launch metadata as
// `attn.launch` (the JSON the metadata writer makes of the kernel's `metadata` and launch ABI;
// the forward kernel carries convert-attn-to-nvvm's as `attn.launch` already), and the closing
// `llvm.return`.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"

#include "attn/Dialect/AttnKernel/IR/AttnKernel.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace mlir::attnk;

namespace {
struct KernelLowering : OpConversionPattern<KernelOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(KernelOp op, OpAdaptor,
                                ConversionPatternRewriter &rewriter) const override {
    MLIRContext *ctx = op.getContext();
    Block &body = op.getBody().front();
    TypeConverter::SignatureConversion sig(body.getNumArguments());
    if (failed(getTypeConverter()->convertSignatureArgs(body.getArgumentTypes(), sig)))
      return rewriter.notifyMatchFailure(op, "parameter types without a lowering");
    auto fnTy = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), sig.getConvertedTypes());
    auto fn = LLVM::LLVMFuncOp::create(rewriter, op.getLoc(), op.getSymName(), fnTy);
    fn->setAttr("nvvm.kernel", UnitAttr::get(ctx));
    fn->setAttr("nvvm.maxntid",
                rewriter.getDenseI32ArrayAttr({static_cast<int32_t>(op.getThreads()), 1, 1}));
    // A kernel launched in clusters of a fixed shape declares it (.reqnctapercluster).
    if (LaunchAttr launch = op.getLaunchAttr();
        launch && llvm::any_of(launch.getCluster(), [](int64_t d) { return d != 1; }))
      fn->setAttr("nvvm.cluster_dim",
                  rewriter.getDenseI32ArrayAttr(llvm::to_vector(llvm::map_range(
                      launch.getCluster(), [](int64_t d) { return static_cast<int32_t>(d); }))));
    if (DictionaryAttr metadata = op.getMetadataAttr())
      fn->setAttr("attn.launch",
                  rewriter.getStringAttr(launchDocumentJSON(
                      metadata, {launchKernelJSON(op.getSymName(), op.getLaunchAttr())})));
    else if (auto json = op->getAttrOfType<StringAttr>("attn.launch"))
      fn->setAttr("attn.launch", json);
    // A tensor map is passed by value: a 128-byte, 64-byte-aligned grid constant.
    for (BlockArgument a : body.getArguments())
      if (isa<TensorMapType>(a.getType())) {
        unsigned i = a.getArgNumber();
        fn.setArgAttr(i, "llvm.byval",
                      TypeAttr::get(LLVM::LLVMArrayType::get(rewriter.getI8Type(), 128)));
        fn.setArgAttr(i, "nvvm.grid_constant", UnitAttr::get(ctx));
        fn.setArgAttr(i, "llvm.align", rewriter.getI64IntegerAttr(64));
      }
    rewriter.inlineRegionBefore(op.getBody(), fn.getBody(), fn.getBody().end());
    Block *entry =
        rewriter.applySignatureConversion(&fn.getBody().front(), sig, getTypeConverter());
    rewriter.setInsertionPointToStart(entry);
    if (op.getProgrammatic())
      NVVM::GriddepcontrolOp::create(rewriter, op.getLoc(), NVVM::GridDepActionKind::wait);
    rewriter.setInsertionPointToEnd(entry);
    LLVM::ReturnOp::create(rewriter, op.getLoc(), ValueRange{});
    rewriter.eraseOp(op);
    return success();
  }
};
} // namespace

void mlir::attnk::populateKernelPatterns(const TypeConverter &tc, RewritePatternSet &patterns) {
  patterns.add<KernelLowering>(tc, patterns.getContext());
}

void mlir::attnk::markNoAlias(ConversionPatternRewriter &rewriter, Operation *op,
                              ValueRange params) {
  auto fn = op->getParentOfType<LLVM::LLVMFuncOp>();
  if (!fn)
    return;
  rewriter.modifyOpInPlace(fn, [&] {
    for (Value v : params)
      if (auto a = dyn_cast<BlockArgument>(v); a && a.getOwner() == &fn.getBody().front())
        fn.setArgAttr(a.getArgNumber(), "llvm.noalias", UnitAttr::get(op->getContext()));
  });
}
