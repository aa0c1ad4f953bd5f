//===- QuantizeOps.cpp - quantization of scale groups ---------------------===//
//
// What this file is: the verifiers of the quantize-kernel ops — `attnk.group_index`,
// `attnk.load_groups`, `attnk.hadamard`, `attnk.group_scales` (computed or read, per the
// scheme), `attnk.quantize_tile` (codes of the scheme's type), `attnk.store_groups` and
// `attnk.token_rows`, with the forms of a whole-token row kernel (contiguous groups).
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
  if (getWholeTokens() && (getSlots() != 1 || getGroupsPerToken() * getLanes() != 32u))
    return emitOpError("with whole_tokens a warp holds one token: one slot and 32 lanes per "
                       "token, got ")
           << getSlots() << " slots of " << getGroupsPerToken() << " groups × " << getLanes()
           << " lanes";
  return success();
}

/// load_groups from a token's row: contiguous f32 groups read in 16-byte vectors.
static LogicalResult verifyRowLoad(LoadGroupsOp op, MemRefType src) {
  auto res = dyn_cast<GroupsType>(op.getResult().getType());
  if (op.getToken() || op.getGroup())
    return op.emitOpError("reads a token's row without indices");
  if (!res || !res.getContiguous() || !res.getElementType().isF32())
    return op.emitOpError("reads a row into contiguous f32 groups, got ")
           << op.getResult().getType();
  int64_t bytes = src.getElementTypeBitWidth() / 8;
  if (res.getVec() * bytes != 16 || res.getLanes() != int64_t(op.getLanes()))
    return op.emitOpError("reads 16-byte vectors of ")
           << 16 / bytes << " elements on " << op.getLanes() << " lanes, got " << res;
  if (src.isDynamicDim(0) || int64_t(op.getOffset()) + res.getElems() > src.getDimSize(0))
    return op.emitOpError("a group of ") << res.getElems() << " elements at " << op.getOffset()
                                         << " is not within the row " << src;
  return success();
}

LogicalResult LoadGroupsOp::verify() {
  auto src = cast<MemRefType>(getSrc().getType());
  if (!validLanes(getLanes()))
    return emitOpError("needs a power of two of at most 32 lanes per group, got ") << getLanes();
  if (src.getRank() == 1)
    return verifyRowLoad(*this, src);
  auto res = dyn_cast<VectorType>(getResult().getType());
  if (!res || !getToken() || !getGroup() || getOffset() != 0)
    return emitOpError("loads from [token, group] of a [batch, tokens, heads, D] source into "
                       "vector chunks");
  if (res.getElementType() != src.getElementType())
    return emitOpError("loads ") << src.getElementType() << " elements, not "
                                 << res.getElementType();
  int64_t bytes = res.getDimSize(1) * src.getElementTypeBitWidth() / 8;
  if (bytes < 4 || bytes > 16 || !llvm::isPowerOf2_64(bytes))
    return emitOpError("loads vectors of 4, 8 or 16 bytes, got ") << bytes;
  int64_t r = src.getRank(); // [batch, tokens, heads, D] or [tokens, heads, D]
  if (src.isDynamicDim(r - 2) || src.isDynamicDim(r - 1))
    return emitOpError("needs a static head count and head_dim, got ") << src;
  int64_t group = res.getDimSize(0) * res.getDimSize(1) * getLanes();
  int64_t row = src.getDimSize(r - 2) * src.getDimSize(r - 1);
  if (row % group != 0)
    return emitOpError("a group of ")
           << group << " elements does not divide a token's row of " << row;
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
  if (t.getContiguous() && (read || q.isAsymmetric()))
    return emitOpError("computes symmetric scales only for contiguous groups");
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
  if (out != GroupsType::get(getContext(), in.getElems(), code, in.getLanes(), in.getVec(),
                             in.getContiguous()))
    return emitOpError("returns the scheme's ") << code << " codes in the layout of its source";
  if (in.getContiguous() && !isa<Float8E4M3FNType>(code))
    return emitOpError("not supported yet: ") << code << " codes of contiguous groups (f8E4M3FN)";
  if (bool(getZeroPoint()) != q.isAsymmetric())
    return emitOpError("takes a zero point exactly when the scheme is asymmetric");
  Type want = scaleTypeFor(q, in);
  if (getScale().getType() != want || (getZeroPoint() && getZeroPoint().getType() != want))
    return emitOpError("takes ") << want << " scales for a "
                                 << stringifyGranularity(q.getGranularity()) << " scheme";
  return success();
}

/// store_groups into a token's cache row: contiguous words, the f32 scale into the same row.
static LogicalResult verifyRowStore(StoreGroupsOp op, MemRefType dest) {
  GroupsType t = op.getCodes().getType();
  if (op.getGroup() || op.getBatch() || op.getCapacity() || op.getPositions() || op.getSlots() ||
      op.getZeroPoint())
    return op.emitOpError("writes a token's row without indices, token counts, positions, slots "
                          "or zero points");
  if (!t.getContiguous())
    return op.emitOpError("writes contiguous groups into a row, got ") << t;
  int64_t laneBytes = t.getLaneElems() * t.getElementType().getIntOrFloatBitWidth() / 8;
  int64_t groupBytes = t.getLanes() * laneBytes;
  if (dest.isDynamicDim(0) || int64_t(op.getOffset()) + groupBytes > dest.getDimSize(0))
    return op.emitOpError("a group's ")
           << groupBytes << " bytes at " << op.getOffset() << " are not within the row " << dest;
  if (op.getScale() &&
      (op.getScaleDest() != op.getDest() || t.getLanes() < 4 ||
       int64_t(op.getScaleOffset()) + 4 * (32 / t.getLanes()) > dest.getDimSize(0)))
    return op.emitOpError("writes the f32 scales of groups of at least 4 lanes within the row");
  return success();
}

LogicalResult StoreGroupsOp::verify() {
  GroupsType t = getCodes().getType();
  auto dest = cast<MemRefType>(getDest().getType());
  if (dest.getRank() == 1)
    return verifyRowStore(*this, dest);
  if (!getGroup() || !getBatch() || !getCapacity() || getOffset() != 0 || getScaleOffset() != 0)
    return emitOpError("writes [group, token, group in token] of a [batch, capacity, heads, D] "
                       "cache: needs the indices, tokens(...) and capacity(...)");
  if (t.getElementType() != dest.getElementType())
    return emitOpError("stores ") << t.getElementType() << " codes into " << dest;
  if (getZeroPoint() && !getScale())
    return emitOpError("stores a zero point only with its scale");
  if (getSlots() && getPositions())
    return emitOpError("takes the rows from positions(...) or from slots(...), not both");
  return success();
}

LogicalResult TokenRowsOp::verify() {
  auto src = cast<MemRefType>(getSrc().getType()), cache = cast<MemRefType>(getCache().getType());
  if (src.isDynamicDim(2) || cache.isDynamicDim(2))
    return emitOpError("needs static row lengths, got ") << src << " and " << cache;
  Block &body = getBody().front();
  auto row = [](MemRefType t) { return MemRefType::get({t.getDimSize(2)}, t.getElementType()); };
  if (body.getNumArguments() != 2 || body.getArgument(0).getType() != row(src) ||
      body.getArgument(1).getType() != row(cache))
    return emitOpError("body takes the rows ") << row(src) << " and " << row(cache);
  return success();
}
