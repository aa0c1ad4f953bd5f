//===- Build.h - attn-build-kernel's builders ------------------*- C++ -*-===//
//
// What this file is: the builders of attn-build-kernel, one per spec op family that goes through
// the kernel level (BuildForward.cpp, BuildCombine.cpp, BuildMLA.cpp, BuildMLAQuantize.cpp,
// BuildQuantize.cpp through QuantizePlan.h). Private to this folder.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_LIB_CONVERSION_ATTNTOKERNEL_BUILD_H
#define ATTN_LIB_CONVERSION_ATTNTOKERNEL_BUILD_H

#include "attn/Dialect/Attn/IR/Attn.h"
#include "attn/Dialect/AttnKernel/IR/AttnKernel.h"
#include "attn/Runtime/LaunchABI.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

#include <string>

namespace mlir::attn::nvvm {
struct ForwardPlan;
struct MLAPlan;
} // namespace mlir::attn::nvvm

namespace mlir::attn::kernel {

/// Entries of a kernel's `metadata` dictionary (what the launch JSON's problem and schedule
/// objects hold), one builder per value kind.
struct MetadataBuilder {
  Builder &b;
  NamedAttribute num(StringRef key, int64_t v) {
    return b.getNamedAttr(key, b.getI64IntegerAttr(v));
  }
  NamedAttribute str(StringRef key, StringRef v) { return b.getNamedAttr(key, b.getStringAttr(v)); }
  NamedAttribute flag(StringRef key, bool v) { return b.getNamedAttr(key, b.getBoolAttr(v)); }
  NamedAttribute dict(StringRef key, ArrayRef<NamedAttribute> v) {
    return b.getNamedAttr(key, b.getDictionaryAttr(v));
  }
};

/// The launch ABI of a kernel of `threads` threads in a `cluster` × 1 × 1 cluster: `grid`
/// (numbers and symbols), dynamic shared memory, parameters (launch ABI table entries), PDL and
/// further kernel entries.
attnk::LaunchAttr makeLaunch(Builder &b, StringRef role, ArrayRef<Attribute> grid, int64_t threads,
                             int64_t smem, ArrayRef<attn_abi::Param> params,
                             bool programmatic = false, ArrayRef<NamedAttribute> extra = {},
                             int64_t cluster = 1);
/// A grid extent naming symbol `s` of the launch ABI table.
Attribute gridSymbol(Builder &b, attn_abi::GridSymbol s);

/// Adds `<name>_combine` and `<name>_combine_wide` (attnk.merge.combine) for a split-KV decode
/// op at the end of `module`; returns false, building nothing, where the op has no such kernels
/// (prefill) or is not one convert-attn-to-nvvm accepts (which then says why).
bool buildCombineKernels(OpBuilder &b, gpu::GPUModuleOp module, AttentionOp op);

/// Adds the forward kernel of `plan` (planForward of `op`; `<name>_decode`, `_decode_2cta` or
/// `_prefill`) at the end of `module` (BuildForward.cpp).
void buildForwardKernel(OpBuilder &b, gpu::GPUModuleOp module, AttentionOp op,
                        const nvvm::ForwardPlan &plan);

/// Whether the forward kernel of `plan` has its producer written in ring, TMA and conversion
/// ops (BuildForwardProducer.cpp); the others keep the transitional `attnk.forward.producer`.
bool producerHasRegion(const nvvm::ForwardPlan &plan);
/// The producer role's program into the current block: `params`, `rings` and `work` are the
/// forward kernel's (BuildForward.cpp), `planAttr` the forward ops' plan.
void buildForwardProducer(OpBuilder &b, Location loc, AttentionOp op, const nvvm::ForwardPlan &p,
                          ValueRange params, ValueRange rings, ValueRange work,
                          DictionaryAttr planAttr);
/// Adds `<name>_mla`, the MLA decode kernel of `plan` (planMLA of `op`), at the end of `module`
/// (BuildMLA.cpp).
void buildMLAKernel(OpBuilder &b, Location loc, gpu::GPUModuleOp module, MLADecodeOp op,
                    const nvvm::MLAPlan &p);
/// Its launch ABI and metadata (problem, schedule: docs/GPUMLA.md).
attnk::LaunchAttr mlaLaunch(Builder &b, const nvvm::MLAPlan &p);
DictionaryAttr mlaMetadata(Builder &b, const nvvm::MLAPlan &p);

/// The kernel of `attn.quantize.mla_append` (`<name>_quantize`, BuildMLAQuantize.cpp): one warp
/// per new token, 4 per CTA; lane l quantizes values 16l .. 16l+15 (8 lanes share a tile's scale
/// through shuffles) and lanes 0–7 round the RoPE part.
struct MLAQuantizePlan {
  static constexpr int64_t kTokensPerCTA = 4;
  std::string name;
  int64_t batch = -1, newTokens = -1, capacity = -1, dv = 512, rope = 64, quantTile = 128;
  Type srcElem;
  int64_t srcBytes() const { return srcElem.getIntOrFloatBitWidth() / 8; }
  /// Bytes of one cache token: the codes, one f32 scale per tile, the RoPE part in bf16.
  int64_t tokenBytes() const { return dv + 4 * (dv / quantTile) + 2 * rope; }
  int64_t ropeOffset() const { return dv + 4 * (dv / quantTile); }
};

/// Resolves an `attn.quantize.mla_append` for sm_90a, or reports why it has no kernel yet.
FailureOr<MLAQuantizePlan> planMLAQuantize(QuantizeMLAAppendOp op);
/// Adds the kernel level of `<name>_quantize` (with its launch metadata) at the end of `module`.
void buildMLAQuantizeKernel(OpBuilder &b, Location loc, gpu::GPUModuleOp module,
                            QuantizeMLAAppendOp op, const MLAQuantizePlan &p);
/// Its launch ABI and metadata (problem, schedule: docs/GPUMLA.md).
attnk::LaunchAttr mlaQuantizeLaunch(Builder &b, const MLAQuantizePlan &p);
DictionaryAttr mlaQuantizeMetadata(Builder &b, const MLAQuantizePlan &p);

} // namespace mlir::attn::kernel

#endif // ATTN_LIB_CONVERSION_ATTNTOKERNEL_BUILD_H
