//===- Patterns.h - the pattern families of convert-attnk-to-nvvm -*- C++ -*-===//
//
// What this file is: the entry points of the pattern families that lower the kernel level
// (`attnk`) to the LLVM and NVVM dialects — one family per file — and the type converter they
// share: memref kernel parameters become global pointers, warp-distributed register tiles
// (`!attnk.groups`) the scalars or vectors each thread holds. Private to this folder.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_LIB_CONVERSION_ATTNKERNELTONVVM_PATTERNS_H
#define ATTN_LIB_CONVERSION_ATTNKERNELTONVVM_PATTERNS_H

#include "mlir/Transforms/DialectConversion.h"

namespace mlir::attnk {

/// memref → !llvm.ptr<1>; i32 stays; `!attnk.tensor_map` → !llvm.ptr (a by-value parameter's
/// address); `!attnk.ring` → !llvm.ptr<3> (its first stage); `!attnk.groups` → the thread's registers (see
/// QuantizeLowering.cpp); vector<I x V x E> (a thread's loaded chunks) → I vector<V x E>.
class KernelTypeConverter : public TypeConverter {
public:
  explicit KernelTypeConverter(MLIRContext *ctx);
};

/// `attnk.kernel` → `llvm.func` (KernelLowering.cpp).
void populateKernelPatterns(const TypeConverter &tc, RewritePatternSet &patterns);
/// `attnk.warp_specialize`, `attnk.ring.alloc` (PipelineLowering.cpp).
void populatePipelinePatterns(const TypeConverter &tc, RewritePatternSet &patterns);
/// The forward kernel's `attnk.forward.*` ops (ForwardLowering.cpp).
void populateForwardPatterns(const TypeConverter &tc, RewritePatternSet &patterns);
/// The aligned shared-memory base of a lowered ring (its address is that base plus the ring's
/// offset); null if `ring` is not one.
Value ringSharedBase(Value ring);
/// `attnk.merge.combine` → the combine kernel's body (MergeLowering.cpp).
void populateMergePatterns(const TypeConverter &tc, RewritePatternSet &patterns);
/// `attnk.group_index`, `load_groups`, `convert_tile` on groups, `group_scales`,
/// `quantize_tile`, `store_groups` (QuantizeLowering.cpp).
void populateQuantizePatterns(const TypeConverter &tc, RewritePatternSet &patterns);

} // namespace mlir::attnk

#endif // ATTN_LIB_CONVERSION_ATTNKERNELTONVVM_PATTERNS_H
