//===- QuantizeOps.cpp - quantization of scale groups ---------------------===//
//
// What this file is: the verifiers of the quantize-kernel ops — `attnk.group_index`,
// `attnk.load_groups`, `attnk.hadamard`, `attnk.group_scales` (computed or read, per the
// scheme), `attnk.quantize_tile` (codes of the scheme's type) and `attnk.store_groups`.
//
//===----------------------------------------------------------------------===//

#include "attn/Dialect/AttnKernel/IR/AttnKernel.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::attnk;

static bool validLanes(int64_t lanes) {
  return lanes >= 1 && lanes <= 32 && llvm::isPowerOf2_64(lanes);
}

LogicalResult GroupIndexOp::verify() {
  if (!validLanes(getLanes()))
    return emitOpError("needs a power of two of at most 32 lanes per group, got ") << getLanes();
  if (getSlots() < 1 || getSlot() < 0 || getSlot() >= getSlots())
    return emitOpError("slot ") << getSlot() << " is not one of " << getSlots();
  if (getGroupsPerToken() < 1)
    return emitOpError("needs at least one group per token, got ") << getGroupsPerToken();
  return success();
}

LogicalResult LoadGroupsOp::verify() {
  auto src = cast<MemRefType>(getSrc().getType());
  VectorType res = getResult().getType();
  if (!validLanes(getLanes()))
    return emitOpError("needs a power of two of at most 32 lanes per group, got ") << getLanes();
  if (res.getElementType() != src.getElementType())
    return emitOpError("loads ") << src.getElementType() << " elements, not "
                                 << res.getElementType();
  int64_t bytes = res.getDimSize(1) * src.getElementTypeBitWidth() / 8;
  if (bytes < 4 || bytes > 16 || !llvm::isPowerOf2_64(bytes))
    return emitOpError("loads vectors of 4, 8 or 16 bytes, got ") << bytes;
  if (src.isDynamicDim(2) || src.isDynamicDim(3))
    return emitOpError("needs a static head count and head_dim, got ") << src;
  int64_t group = res.getDimSize(0) * res.getDimSize(1) * getLanes();
  if ((src.getDimSize(2) * src.getDimSize(3)) % group != 0)
    return emitOpError("a group of ") << group << " elements does not divide a token's row of "
                                      << src.getDimSize(2) * src.getDimSize(3);
  return success();
}

LogicalResult HadamardOp::verify() {
  GroupsType t = getTile().getType();
  int64_t size = getSize();
  if (!t.getElementType().isF32())
    return emitOpError("rotates f32 values, got ") << t.getElementType();
  if (size < 2 || !llvm::isPowerOf2_64(size) || t.getElems() % size != 0)
    return emitOpError("rotates rows of a power of two of elements dividing the group's ")
           << t.getElems() << ", got " << size;
  return success();
}

/// The type of one scale (or zero point) of `q` for the group `t`: one f32, or per_channel one
/// per element.
static Type scaleTypeFor(attn::QuantAttr q, GroupsType t) {
  if (q.getGranularity() == attn::Granularity::per_channel)
    return t;
  return Float32Type::get(t.getContext());
}

LogicalResult GroupScalesOp::verify() {
  GroupsType t = getTile().getType();
  attn::QuantAttr q = getQuant();
  if (!t.getElementType().isF32())
    return emitOpError("reads f32 values, got ") << t.getElementType();
  bool read = q.hasStaticScales();
  if (!read && (getGroup() || getLane() || getScaleSrc() || getZeroSrc()))
    return emitOpError("computes the scales of a ") << stringifyGranularity(q.getGranularity())
                                                    << " scheme from the values: no operands";
  if (read && (!getGroup() || !getScaleSrc()))
    return emitOpError("reads the scales of a ")
           << stringifyGranularity(q.getGranularity()) << " scheme: needs [group] and from(...)";
  if (read && q.getGranularity() == attn::Granularity::per_channel && !getLane())
    return emitOpError("reads per_channel scales per element: needs lane(...)");
  if (read && bool(getZeroSrc()) != q.isAsymmetric())
    return emitOpError("reads zero points exactly when the scheme is asymmetric");
  if (read && cast<MemRefType>(getScaleSrc().getType()).getElementType() != q.getScaleType())
    return emitOpError("scales are ") << q.getScaleType() << ", not "
                                      << cast<MemRefType>(getScaleSrc().getType()).getElementType();
  if (getZeroSrc() && cast<MemRefType>(getZeroSrc().getType()).getElementType() !=
                          q.getElementType())
    return emitOpError("zero points are codes of type ") << q.getElementType();
  if (bool(getZeroPoint()) != q.isAsymmetric())
    return emitOpError("returns a zero point exactly when the scheme is asymmetric");
  Type want = scaleTypeFor(q, t);
  if (getScale().getType() != want || (getZeroPoint() && getZeroPoint().getType() != want))
    return emitOpError("returns ") << want << " scales for a "
                                   << stringifyGranularity(q.getGranularity()) << " scheme";
  return success();
}

LogicalResult QuantizeTileOp::verify() {
  GroupsType in = getTile().getType(), out = getResult().getType();
  attn::QuantAttr q = getQuant();
  if (!in.getElementType().isF32())
    return emitOpError("quantizes f32 values, got ") << in.getElementType();
  Type code = q.getElementType();
  if (!code.isInteger(8) && !isa<Float8E4M3FNType>(code))
    return emitOpError("not supported yet: ") << code << " codes (i8, ui8, f8E4M3FN)";
  if (out != GroupsType::get(getContext(), in.getElems(), code, in.getLanes(), in.getVec()))
    return emitOpError("returns the scheme's ") << code << " codes in the layout of its source";
  if (bool(getZeroPoint()) != q.isAsymmetric())
    return emitOpError("takes a zero point exactly when the scheme is asymmetric");
  Type want = scaleTypeFor(q, in);
  if (getScale().getType() != want || (getZeroPoint() && getZeroPoint().getType() != want))
    return emitOpError("takes ") << want << " scales for a "
                                 << stringifyGranularity(q.getGranularity()) << " scheme";
  return success();
}

LogicalResult StoreGroupsOp::verify() {
  GroupsType t = getCodes().getType();
  auto dest = cast<MemRefType>(getDest().getType());
  if (t.getElementType() != dest.getElementType())
    return emitOpError("stores ") << t.getElementType() << " codes into " << dest;
  if (getZeroPoint() && !getScale())
    return emitOpError("stores a zero point only with its scale");
  return success();
}
