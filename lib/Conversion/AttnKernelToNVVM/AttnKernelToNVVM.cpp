//===- AttnKernelToNVVM.cpp - the convert-attnk-to-nvvm pass --------------===//
//
// What this file is: `convert-attnk-to-nvvm` — lowers every `attnk` op of the module to the LLVM
// and NVVM dialects (and scf, which attn-nvvm-to-llvm lowers with the rest) through the pattern
// families of this folder: the kernel container (KernelLowering.cpp), warp roles and rings
// (PipelineLowering.cpp), the ring protocol (RingLowering.cpp), TMA loads (TmaLowering.cpp), the
// producer's tile conversion (ConvertLowering.cpp), the forward kernel's frame and roles
// (ForwardLowering.cpp) and its consumer role (ConsumerLowering.cpp), the online softmax
// (SoftmaxLowering.cpp), the MLA decode kernel's
// (MLALowering.cpp), the split merge (MergeLowering.cpp) and quantization (QuantizeLowering.cpp).
// The type converter they share is defined here.
//
//===----------------------------------------------------------------------===//

#include "attn/Conversion/Passes.h"

#include "Patterns.h"

#include "attn/Dialect/AttnKernel/IR/AttnKernel.h"

namespace mlir::attn {
#define GEN_PASS_DEF_CONVERTATTNKERNELTONVVM
#include "attn/Conversion/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attnk;

KernelTypeConverter::KernelTypeConverter(MLIRContext *ctx) {
  addConversion([](Type t) { return t; });
  addConversion([ctx](MemRefType) -> Type { return LLVM::LLVMPointerType::get(ctx, 1); });
  addConversion([ctx](TensorMapType) -> Type { return LLVM::LLVMPointerType::get(ctx, 0); });
  addConversion([ctx](RingType) -> Type { return LLVM::LLVMPointerType::get(ctx, 3); });
  addConversion([ctx](StageType) -> Type { return IntegerType::get(ctx, 32); });
  // A thread's chunks of a warp-distributed load: one vector per chunk.
  addConversion([](VectorType t, SmallVectorImpl<Type> &out) -> std::optional<LogicalResult> {
    if (t.getRank() != 2)
      return std::nullopt;
    out.append(t.getDimSize(0), VectorType::get({t.getDimSize(1)}, t.getElementType()));
    return success();
  });
  addConversion([](AccType t, SmallVectorImpl<Type> &out) -> std::optional<LogicalResult> {
    out.append(t.getN() / 2, t.getElementType());
    return success();
  });
  addConversion([](VectorType t, SmallVectorImpl<Type> &out) -> std::optional<LogicalResult> {
    if (t.getRank() != 1 || t.getDimSize(0) != 64 || !t.getElementType().isF32())
      return std::nullopt;
    out.append(2, t.getElementType());
    return success();
  });
  // A thread's rows: ten i32 values and, for a partial tile, two i1 (ConsumerLowering.cpp).
  addConversion([ctx](RowsType t, SmallVectorImpl<Type> &out) -> std::optional<LogicalResult> {
    out.append(RowsType::kIndexValues, IntegerType::get(ctx, 32));
    if (t.getPartial())
      out.append(2, IntegerType::get(ctx, 1));
    return success();
  });
  addConversion([](GroupsType t, SmallVectorImpl<Type> &out) -> std::optional<LogicalResult> {
    out.append(t.getRegisterTypes());
    return success();
  });
}

namespace {
struct ConvertAttnKernelToNVVMPass
    : public attn::impl::ConvertAttnKernelToNVVMBase<ConvertAttnKernelToNVVMPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    KernelTypeConverter tc(ctx);
    RewritePatternSet patterns(ctx);
    populateKernelPatterns(tc, patterns);
    populatePipelinePatterns(tc, patterns);
    populateRingPatterns(tc, patterns);
    populateTmaPatterns(tc, patterns);
    populateConvertPatterns(tc, patterns);
    populateForwardPatterns(tc, patterns);
    populateConsumerPatterns(tc, patterns);
    populateSoftmaxPatterns(tc, patterns);
    populateMLAPatterns(tc, patterns);
    populateMergePatterns(tc, patterns);
    populateQuantizePatterns(tc, patterns);
    ConversionTarget target(*ctx);
    target.addIllegalDialect<AttnKernelDialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    if (failed(applyPartialConversion(getOperation(), target, std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
