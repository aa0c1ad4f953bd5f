//===- Build.h - attn-build-kernel's builders ------------------*- C++ -*-===//
//
// What this file is: the builders of attn-build-kernel, one per spec op family that goes through
// the kernel level (BuildForward.cpp, BuildCombine.cpp, BuildQuantize.cpp through QuantizePlan.h).
// Private to this folder.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_LIB_CONVERSION_ATTNTOKERNEL_BUILD_H
#define ATTN_LIB_CONVERSION_ATTNTOKERNEL_BUILD_H

#include "attn/Dialect/Attn/IR/Attn.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir::attn::nvvm {
struct ForwardPlan;
} // namespace mlir::attn::nvvm

namespace mlir::attn::kernel {

/// Adds `<name>_combine` and `<name>_combine_wide` (attnk.merge.combine) for a split-KV decode
/// op at the end of `module`; returns false, building nothing, where the op has no such kernels
/// (prefill) or is not one convert-attn-to-nvvm accepts (which then says why).
bool buildCombineKernels(OpBuilder &b, gpu::GPUModuleOp module, AttentionOp op);

/// Adds the forward kernel of `plan` (planForward of `op`; `<name>_decode`, `_decode_2cta` or
/// `_prefill`) at the end of `module` (BuildForward.cpp).
void buildForwardKernel(OpBuilder &b, gpu::GPUModuleOp module, AttentionOp op,
                        const nvvm::ForwardPlan &plan);

} // namespace mlir::attn::kernel

#endif // ATTN_LIB_CONVERSION_ATTNTOKERNEL_BUILD_H
