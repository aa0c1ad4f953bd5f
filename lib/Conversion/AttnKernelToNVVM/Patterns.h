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

namespace mlir::attn::nvvm {
class KernelBuilder;
} // namespace mlir::attn::nvvm

namespace mlir::attnk {

/// memref → !llvm.ptr<1>; i32 stays; `!attnk.tensor_map` → !llvm.ptr (a by-value parameter's
/// address); `!attnk.ring` → !llvm.ptr<3> (its first stage); `!attnk.stage` → i32 (its byte
/// offset from the aligned shared base); `!attnk.groups` → the thread's registers (see
/// QuantizeLowering.cpp); vector<I x V x E> (a thread's loaded chunks) → I vector<V x E>;
/// `!attnk.acc<64xNxE>` → the thread's N / 2 accumulator registers; a row vector of an
/// accumulator (vector<64xf32>) → the thread's two rows (r0, r0 + 8); `!attnk.rows` → where those
/// rows live (ten i32, and two i1 when `partial`).
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
/// The forward kernel's consumer ops: `attnk.forward.consumer`, `forward.merge_warpgroups`,
/// `forward.epilogue` (ConsumerLowering.cpp).
void populateConsumerPatterns(const TypeConverter &tc, RewritePatternSet &patterns);
/// The online softmax's `attnk.softmax_finish` (SoftmaxLowering.cpp).
void populateSoftmaxPatterns(const TypeConverter &tc, RewritePatternSet &patterns);
/// The MLA decode kernel's `attnk.mla.*` ops (MLALowering.cpp).
void populateMLAPatterns(const TypeConverter &tc, RewritePatternSet &patterns);
/// Marks the kernel parameters among `params` (block arguments of `op`'s enclosing LLVM function)
/// `llvm.noalias` (KernelLowering.cpp).
void markNoAlias(ConversionPatternRewriter &rewriter, Operation *op, ValueRange params);
/// The aligned shared-memory base of a lowered ring (its address is that base plus the ring's
/// offset); null if `ring` is not one.
Value ringSharedBase(Value ring);
/// `attnk.ring.acquire` / `commit` / `wait` / `release`, `attnk.subtile` (RingLowering.cpp).
void populateRingPatterns(const TypeConverter &tc, RewritePatternSet &patterns);
/// `attnk.tma_load` (TmaLowering.cpp).
void populateTmaPatterns(const TypeConverter &tc, RewritePatternSet &patterns);
/// `attnk.convert_tile` from a stage into a stage (ConvertLowering.cpp).
void populateConvertPatterns(const TypeConverter &tc, RewritePatternSet &patterns);

/// Where a ring lives: the aligned shared base, its first stage's offset `at`, the bytes between
/// stages, its full and empty barriers' offsets and its consumers (RingLowering.cpp).
struct RingLayout {
  Value base;
  int64_t at = 0, stride = 0, full = 0, empty = 0, consumers = 0;
  /// The address of barrier full[stage] (or empty[stage]).
  Value barrier(attn::nvvm::KernelBuilder &k, Value stage, bool fullBarrier) const;
};
/// The layout of `ring` (an unconverted value defined by `attnk.ring.alloc` with its offsets
/// and barriers), or failure.
FailureOr<RingLayout> ringLayout(ConversionPatternRewriter &rewriter, Value ring);
/// The layout of the ring a stage (or a subtile of one) belongs to and the stage's index.
FailureOr<std::pair<RingLayout, Value>> stageBarrierOf(ConversionPatternRewriter &rewriter,
                                                       Value stage);
/// The byte offset of `stage` (an unconverted stage value) given its lowered value `offset`:
/// a stage of the second or later ring of a ring op lowers to the first ring's offset, to which
/// this adds the distance between the rings.
Value stageOffsetOf(attn::nvvm::KernelBuilder &k, Value stage, Value offset);
/// The aligned shared base of the ring a stage belongs to; null if unknown.
Value stageSharedBase(ConversionPatternRewriter &rewriter, Value stage);
/// `attnk.merge.combine` → the combine kernel's body (MergeLowering.cpp).
void populateMergePatterns(const TypeConverter &tc, RewritePatternSet &patterns);
/// `attnk.group_index`, `load_groups`, `convert_tile` on groups, `group_scales`,
/// `quantize_tile`, `store_groups` (QuantizeLowering.cpp).
void populateQuantizePatterns(const TypeConverter &tc, RewritePatternSet &patterns);

} // namespace mlir::attnk

#endif // ATTN_LIB_CONVERSION_ATTNKERNELTONVVM_PATTERNS_H
