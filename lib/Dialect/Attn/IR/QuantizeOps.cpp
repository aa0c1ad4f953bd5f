//===- QuantizeOps.cpp - verifiers of the attn.quantize.* ops -------------===//
//
// What this file is: the checks of `attn.quantize.append` (new K/V tokens into a quantized cache),
// `attn.quantize.append_paged` (new K/V rows into a paged cache through a slot mapping),
// `attn.quantize.dynamic` (per-token activation quantization) and `attn.quantize.mla_append` (new
// MLA tokens into the FP8 token format): shapes, element types, and which granularities each op
// can compute.
//
//===----------------------------------------------------------------------===//

#include "VerifyUtils.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::vutil;

/// `hadamard` on a quantize op: each head's row of D (a power of two) is rotated, so a scale
/// group must hold whole rows.
static LogicalResult verifyHadamard(Operation *op, MemRefType srcT, QuantAttr quant) {
  int64_t d = srcT.getDimSize(srcT.getRank() - 1);
  if (ShapedType::isDynamic(d) || d < 8 || !llvm::isPowerOf2_64(d))
    return op->emitOpError() << "hadamard needs a static head_dim that is a power of two ≥ 8, got "
                             << (ShapedType::isDynamic(d) ? std::string("?") : std::to_string(d));
  Granularity g = quant.getGranularity();
  bool wholeRows = g == Granularity::per_group ? false
                   : g == Granularity::per_block ? quant.getBlockCols() % d == 0
                                                 : true;
  if (!wholeRows)
    return op->emitOpError() << "hadamard mixes all " << d
                             << " elements of a head's row: its scale groups must hold whole "
                                "rows (per_token, per_token_head, per_block<1 x c> with c a "
                                "multiple of head_dim, or a static granularity)";
  return success();
}

/// A scale of per_block<r x c> with r > 1 covers tokens not yet appended.
static LogicalResult verifyTokenByToken(Operation *op, QuantAttr quant) {
  if (quant.getGranularity() == Granularity::per_block && quant.getBlockRows() > 1)
    return op->emitOpError() << "per_block<" << quant.getBlockRows() << "x" << quant.getBlockCols()
                             << "> cannot be appended token by token: a block's scale depends on "
                                "tokens not yet appended";
  return success();
}

/// The element types every append checks: a float source, codes of the scheme's type.
static LogicalResult verifyAppendTypes(Operation *op, MemRefType srcT, MemRefType cacheT,
                                       QuantAttr quant) {
  if (!isFloatActivation(srcT.getElementType()))
    return op->emitOpError() << "'src' must hold bf16, f16 or f32, got " << srcT.getElementType();
  if (cacheT.getElementType() != quant.getElementType())
    return op->emitOpError() << "'cache' element type " << cacheT.getElementType()
                             << " does not match the scheme's " << quant.getElementType();
  return success();
}

/// The scaling every append checks: scales computable token by token, and the rotation.
static LogicalResult verifyAppendScaling(Operation *op, MemRefType srcT, QuantAttr quant,
                                         bool hadamard) {
  if (failed(verifyTokenByToken(op, quant)))
    return failure();
  return hadamard ? verifyHadamard(op, srcT, quant) : success();
}

LogicalResult QuantizeAppendOp::verify() {
  if (failed(vutil::verifyBuffers(*this)))
    return failure();
  auto srcT = getSrc().getType(), cacheT = getCache().getType();
  QuantAttr quant = getQuant();
  if (failed(verifyAppendTypes(*this, srcT, cacheT, quant)))
    return failure();
  if (!dimsAgree(srcT.getDimSize(0), cacheT.getDimSize(0)) ||
      !dimsAgree(srcT.getDimSize(2), cacheT.getDimSize(2)) ||
      !dimsAgree(srcT.getDimSize(3), cacheT.getDimSize(3)))
    return emitOpError() << "'src' " << shapeStr(srcT.getShape()) << " and 'cache' "
                         << shapeStr(cacheT.getShape())
                         << " must agree on batch, heads and head_dim";
  int64_t snew = srcT.getDimSize(1), smax = cacheT.getDimSize(1);
  if (!ShapedType::isDynamic(snew) && !ShapedType::isDynamic(smax) && snew > smax)
    return emitOpError() << "cannot append " << snew << " tokens to a cache of " << smax;
  if (failed(expectShape(*this, "positions", getPositions(), {srcT.getDimSize(0)},
                         "one position per batch [B]")))
    return failure();
  if (failed(verifyAppendScaling(*this, srcT, quant, bool(getHadamard()))))
    return failure();
  return verifyScaleOperands(*this, "cache", cacheT.getShape(), quant, "quant", getScales(),
                             "scales", getZeros(), "zeros");
}

LogicalResult QuantizeAppendPagedOp::verify() {
  if (failed(vutil::verifyBuffers(*this)))
    return failure();
  auto srcT = cast<MemRefType>(getSrc().getType()), cacheT = getCache().getType();
  QuantAttr quant = getQuant();
  if (failed(verifyAppendTypes(*this, srcT, cacheT, quant)))
    return failure();
  int64_t p = getPageSize();
  if (p < 1 || p > kMaxPageSize || !llvm::isPowerOf2_64(p))
    return emitOpError() << "page_size must be a power of two in [1, " << kMaxPageSize << "], got "
                         << p;
  if (cacheT.getDimSize(1) != p)
    return emitOpError() << "'cache' holds pages [num_pages, page_size, H, D]: its dim 1 must be "
                            "page_size = "
                         << p << ", got " << shapeStr(cacheT.getShape());
  if (!dimsAgree(srcT.getDimSize(1), cacheT.getDimSize(2)) ||
      !dimsAgree(srcT.getDimSize(2), cacheT.getDimSize(3)))
    return emitOpError() << "'src' " << shapeStr(srcT.getShape()) << " and 'cache' "
                         << shapeStr(cacheT.getShape()) << " must agree on heads and head_dim";
  if (failed(expectShape(*this, "slot_mapping", getSlotMapping(), {srcT.getDimSize(0)},
                         "one slot per row [T]")))
    return failure();
  if (failed(verifyAppendScaling(*this, srcT, quant, bool(getHadamard()))))
    return failure();
  // Scales per page: the granularity over the pool as a [num_pages, P, H, D] tensor.
  return verifyScaleOperands(*this, "cache", cacheT.getShape(), quant, "quant", getScales(),
                             "scales", getZeros(), "zeros");
}

LogicalResult QuantizeDynamicOp::verify() {
  if (failed(vutil::verifyBuffers(*this)))
    return failure();
  auto srcT = getSrc().getType(), dstT = getDst().getType();
  QuantAttr quant = getQuant();
  if (!isFloatActivation(srcT.getElementType()))
    return emitOpError() << "'src' must hold bf16, f16 or f32, got " << srcT.getElementType();
  if (dstT.getElementType() != quant.getElementType())
    return emitOpError() << "'dst' element type " << dstT.getElementType()
                         << " does not match the scheme's " << quant.getElementType();
  if (failed(expectShape(*this, "dst", getDst(), srcT.getShape(), "the shape of 'src'")))
    return failure();
  if (!quant.isTokenLocal())
    return emitOpError() << "dynamic quantization needs a token-local granularity (per_token, "
                            "per_token_head, per_group<g> or per_block<1xc>), got "
                         << stringifyGranularity(quant.getGranularity());
  if (getHadamard() && failed(verifyHadamard(*this, srcT, quant)))
    return failure();
  return verifyScaleOperands(*this, "dst", dstT.getShape(), quant, "quant", getScales(),
                             "scales", getZeros(), "zeros");
}

LogicalResult QuantizeMLAAppendOp::verify() {
  if (failed(vutil::verifyBuffers(*this)))
    return failure();
  auto srcT = cast<MemRefType>(getSrc().getType()), cacheT = cast<MemRefType>(getCache().getType());
  int64_t dv = getHeadDimV(), rope = getRopeDim();
  constexpr int64_t kMaxHeadDim = 1 << 16; // bounded before any arithmetic on them
  if (dv <= 0 || rope < 0 || dv > kMaxHeadDim || rope > kMaxHeadDim)
    return emitOpError() << "head_dim_v must be in [1, " << kMaxHeadDim << "] and rope_dim in [0, "
                         << kMaxHeadDim << "]";
  if (!isFloatActivation(srcT.getElementType()))
    return emitOpError() << "'src' must hold bf16, f16 or f32, got " << srcT.getElementType();
  QuantAttr quant = getKvQuant();
  if (failed(verifyMLACacheQuant(*this, quant, dv)))
    return failure();
  if (!dimsAgree(srcT.getDimSize(2), dv + rope))
    return emitOpError() << "'src' token size (" << srcT.getDimSize(2)
                         << ") must equal head_dim_v + rope_dim = " << dv + rope;
  if (failed(expectShape(*this, "cache", getCache(),
                         {srcT.getDimSize(0), cacheT.getDimSize(1), mlaTokenBytes(quant, dv, rope)},
                         "[B, T, Dv + 4·Dv/C + 2·rope_dim bytes]")))
    return failure();
  int64_t snew = srcT.getDimSize(1), t = cacheT.getDimSize(1);
  if (!ShapedType::isDynamic(snew) && !ShapedType::isDynamic(t) && snew > t)
    return emitOpError() << "cannot append " << snew << " tokens to a cache of " << t;
  return expectShape(*this, "positions", getPositions(), {srcT.getDimSize(0)},
                     "one position per batch [B]");
}
