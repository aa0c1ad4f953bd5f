//===- AttnKernelTypes.cpp - attnk types -----------------------------------===//
//
// What this file is: parsing, printing and verification of the kernel-level types — rings,
// stages and tensor maps (`ROWSxCOLSxELEM, swizzle`) and the warpgroup fragments (`!attnk.acc`,
// `!attnk.frag`) — and the byte sizes the shared-memory plan reads from them.
//
//===----------------------------------------------------------------------===//

#include "attn/Dialect/AttnKernel/IR/AttnKernel.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::attnk;

#define GET_TYPEDEF_CLASSES
#include "attn/Dialect/AttnKernel/IR/AttnKernelOpsTypes.cpp.inc"

void AttnKernelDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "attn/Dialect/AttnKernel/IR/AttnKernelOpsTypes.cpp.inc"
      >();
}

int64_t mlir::attnk::getSwizzleBytes(Swizzle s) {
  switch (s) {
  case Swizzle::none:
    return 0;
  case Swizzle::swizzle_32b:
    return 32;
  case Swizzle::swizzle_64b:
    return 64;
  case Swizzle::swizzle_128b:
    return 128;
  }
  return 0;
}

namespace {
/// `DIMSxELEM` (static extents only).
ParseResult parseTile(AsmParser &p, SmallVectorImpl<int64_t> &shape, Type &elem) {
  if (p.parseDimensionList(shape, /*allowDynamic=*/false, /*withTrailingX=*/true) ||
      p.parseType(elem))
    return failure();
  return success();
}

void printTile(AsmPrinter &p, ArrayRef<int64_t> shape, Type elem) {
  for (int64_t d : shape)
    p << d << 'x';
  p << elem;
}

ParseResult parseSwizzle(AsmParser &p, Swizzle &s) {
  SMLoc loc = p.getCurrentLocation();
  StringRef kw;
  if (p.parseKeyword(&kw))
    return failure();
  std::optional<Swizzle> v = symbolizeSwizzle(kw);
  if (!v)
    return p.emitError(loc) << "expected none, swizzle_32b, swizzle_64b or swizzle_128b, got '"
                            << kw << "'";
  s = *v;
  return success();
}

ParseResult parseKeyInt(AsmParser &p, StringRef key, int64_t &v) {
  return failure(p.parseComma() || p.parseKeyword(key) || p.parseEqual() || p.parseInteger(v));
}

unsigned elemBits(Type t) { return t.isIntOrFloat() ? t.getIntOrFloatBitWidth() : 0; }

/// The rules of a tile-shaped type and the words of its diagnostics: a shared-memory tile
/// (rings and stages: rank 2, rows within one swizzle span or whole spans) or a TMA box (rank
/// 1 to 5, extents ≤ 256, the innermost extent within the span).
struct TileRules {
  bool box;
  const char *rankMsg, *extentMsg, *elemMsg, *rowMsg;
  size_t minRank, maxRank;
  int64_t maxExtent;
};
constexpr TileRules kSmemTile{false,
                              "a shared-memory tile has rank 2, got rank ",
                              "tile extents must be in [1, 65536], got ",
                              "tile element type must have 8, 16 or 32 bits, got ",
                              "a tile row must be a multiple of 16 bytes, got ",
                              2,
                              2,
                              65536};
constexpr TileRules kBoxTile{true,
                             "a tensor map box has 1 to 5 dimensions, got ",
                             "a tensor map box extent must be in [1, 256], got ",
                             "tensor map element type must have 8, 16 or 32 bits, got ",
                             "the box's innermost extent must be a multiple of 16 bytes, got ",
                             1,
                             5,
                             256};

/// Checks a tile-shaped type (ring, stage, tensor map) against its rules: rank, extents, an
/// 8/16/32-bit element type, an innermost extent of whole 16-byte chunks, and its swizzle span.
LogicalResult verifyTile(function_ref<InFlightDiagnostic()> emitError, const TileRules &r,
                         ArrayRef<int64_t> shape, Type elem, Swizzle swizzle) {
  if (shape.size() < r.minRank || shape.size() > r.maxRank)
    return emitError() << r.rankMsg << shape.size();
  for (int64_t d : shape)
    if (d < 1 || d > r.maxExtent)
      return emitError() << r.extentMsg << d;
  unsigned bits = elemBits(elem);
  if (bits != 8 && bits != 16 && bits != 32)
    return emitError() << r.elemMsg << elem;
  int64_t rowBytes = shape.back() * bits / 8;
  if (rowBytes % 16 != 0)
    return emitError() << r.rowMsg << rowBytes;
  int64_t span = getSwizzleBytes(swizzle);
  if (r.box && span && rowBytes > span)
    return emitError() << "the box's innermost " << rowBytes << " bytes exceed the "
                       << stringifySwizzle(swizzle) << " span of " << span << " bytes";
  if (!r.box && span && rowBytes > span && rowBytes % span != 0)
    return emitError() << "a row of " << rowBytes << " bytes is neither within one "
                       << stringifySwizzle(swizzle) << " span nor a whole number of them";
  return success();
}
} // namespace

//===----------------------------------------------------------------------===//
// RingType
//===----------------------------------------------------------------------===//

Type RingType::parse(AsmParser &p) {
  SmallVector<int64_t> shape;
  Type elem;
  int64_t stages = 0, producers = 0, consumers = 0;
  Swizzle swizzle;
  if (p.parseLess() || parseTile(p, shape, elem) || parseKeyInt(p, "stages", stages) ||
      p.parseComma() || parseSwizzle(p, swizzle) || parseKeyInt(p, "producers", producers) ||
      parseKeyInt(p, "consumers", consumers) || p.parseGreater())
    return {};
  return getChecked([&] { return p.emitError(p.getNameLoc()); }, p.getContext(), shape, elem,
                    stages, swizzle, producers, consumers);
}

void RingType::print(AsmPrinter &p) const {
  p << '<';
  printTile(p, getShape(), getElementType());
  p << ", stages = " << getStages() << ", " << stringifySwizzle(getSwizzle())
    << ", producers = " << getProducers() << ", consumers = " << getConsumers() << '>';
}

LogicalResult RingType::verify(function_ref<InFlightDiagnostic()> emitError,
                               ArrayRef<int64_t> shape, Type elem, int64_t stages, Swizzle swizzle,
                               int64_t producers, int64_t consumers) {
  if (failed(verifyTile(emitError, kSmemTile, shape, elem, swizzle)))
    return failure();
  if (stages < 1 || stages > 8)
    return emitError() << "a ring has 1 to 8 stages, got " << stages;
  if (producers < 1 || consumers < 1)
    return emitError() << "a ring needs at least one producer and one consumer arrival";
  int64_t bytes = stages * (shape[0] * shape[1] * elemBits(elem) / 8 + 16);
  if (bytes > kMaxSharedBytes)
    return emitError() << "the ring needs " << bytes << " bytes of shared memory, more than the "
                       << kMaxSharedBytes << " an sm_90 CTA has";
  return success();
}

StageType RingType::getStageType() const {
  return StageType::get(getContext(), getShape(), getElementType(), getSwizzle());
}

int64_t RingType::getStageBytes() const { return getStageType().getBytes(); }

//===----------------------------------------------------------------------===//
// StageType
//===----------------------------------------------------------------------===//

Type StageType::parse(AsmParser &p) {
  SmallVector<int64_t> shape;
  Type elem;
  Swizzle swizzle;
  if (p.parseLess() || parseTile(p, shape, elem) || p.parseComma() || parseSwizzle(p, swizzle) ||
      p.parseGreater())
    return {};
  return getChecked([&] { return p.emitError(p.getNameLoc()); }, p.getContext(), shape, elem,
                    swizzle);
}

void StageType::print(AsmPrinter &p) const {
  p << '<';
  printTile(p, getShape(), getElementType());
  p << ", " << stringifySwizzle(getSwizzle()) << '>';
}

LogicalResult StageType::verify(function_ref<InFlightDiagnostic()> emitError,
                                ArrayRef<int64_t> shape, Type elem, Swizzle swizzle) {
  return verifyTile(emitError, kSmemTile, shape, elem, swizzle);
}

int64_t StageType::getBytes() const {
  return getShape()[0] * getShape()[1] * elemBits(getElementType()) / 8;
}

//===----------------------------------------------------------------------===//
// TensorMapType
//===----------------------------------------------------------------------===//

Type TensorMapType::parse(AsmParser &p) {
  SmallVector<int64_t> box;
  Type elem;
  Swizzle swizzle;
  if (p.parseLess() || parseTile(p, box, elem) || p.parseComma() || parseSwizzle(p, swizzle) ||
      p.parseGreater())
    return {};
  return getChecked([&] { return p.emitError(p.getNameLoc()); }, p.getContext(), box, elem,
                    swizzle);
}

void TensorMapType::print(AsmPrinter &p) const {
  p << '<';
  printTile(p, getBox(), getElementType());
  p << ", " << stringifySwizzle(getSwizzle()) << '>';
}

LogicalResult TensorMapType::verify(function_ref<InFlightDiagnostic()> emitError,
                                    ArrayRef<int64_t> box, Type elem, Swizzle swizzle) {
  return verifyTile(emitError, kBoxTile, box, elem, swizzle);
}

SmallVector<int64_t, 2> TensorMapType::getTileShape() const {
  SmallVector<int64_t, 2> tile;
  ArrayRef<int64_t> box = getBox();
  tile.push_back(box.back());
  for (int64_t d : llvm::reverse(box.drop_back()))
    if (d != 1) {
      tile.push_back(d);
      break;
    }
  if (tile.size() == 1)
    tile.push_back(1);
  return {tile[1], tile[0]};
}

//===----------------------------------------------------------------------===//
// AccType and FragType
//===----------------------------------------------------------------------===//

namespace {
ParseResult parseMatrix(AsmParser &p, int64_t &rows, int64_t &cols, Type &elem) {
  SmallVector<int64_t> shape;
  SMLoc loc = p.getCurrentLocation();
  if (p.parseLess() || parseTile(p, shape, elem) || p.parseGreater())
    return failure();
  if (shape.size() != 2)
    return p.emitError(loc) << "expected ROWSxCOLSxELEM";
  rows = shape[0];
  cols = shape[1];
  return success();
}
/// The rules of a warpgroup fragment type and the words of its diagnostics: 64 rows, an element
/// type of the set, and columns a multiple of the element type's step (within [step, maxCols]).
struct FragmentRules {
  const char *rowsMsg;
  bool (*elemOk)(Type);
  const char *elemMsg;
  int64_t (*step)(Type);
  int64_t maxCols;
};
bool isAccElem(Type t) { return t.isF32() || t.isSignlessInteger(32); }
bool isWideOperand(Type t) { return t.isBF16() || t.isF16(); }
bool isOperandElem(Type t) {
  return isWideOperand(t) || isa<Float8E4M3FNType, Float8E5M2Type>(t) || t.isInteger(8);
}
constexpr FragmentRules kAccRules{"a warpgroup accumulator has 64 rows (m64nN), got ", isAccElem,
                                  "accumulator element type must be f32 or i32 (s32), got ",
                                  [](Type) -> int64_t { return 8; }, 256};
constexpr FragmentRules kFragRules{
    "a register A operand has 64 rows, got ", isOperandElem,
    "register A operand element type must be bf16, f16, f8E4M3FN, f8E5M2, i8 or ui8, got ",
    [](Type t) -> int64_t { return isWideOperand(t) ? 16 : 32; }, 0};

/// Checks an accumulator (`maxCols` 256) or a register A operand (no bound) against its rules.
LogicalResult verifyFragment(function_ref<InFlightDiagnostic()> emitError, const FragmentRules &r,
                             int64_t rows, int64_t cols, Type elem) {
  if (rows != 64)
    return emitError() << r.rowsMsg << rows;
  if (!r.elemOk(elem))
    return emitError() << r.elemMsg << elem;
  int64_t step = r.step(elem);
  if (r.maxCols && (cols < step || cols > r.maxCols || cols % step != 0))
    return emitError() << "accumulator columns must be a multiple of " << step << " in [" << step
                       << ", " << r.maxCols << "], got " << cols;
  if (cols < step || cols % step != 0)
    return emitError() << "register A operand K must be a positive multiple of " << step << " for "
                       << elem << ", got " << cols;
  return success();
}
} // namespace

Type AccType::parse(AsmParser &p) {
  int64_t m, n;
  Type elem;
  if (parseMatrix(p, m, n, elem))
    return {};
  return getChecked([&] { return p.emitError(p.getNameLoc()); }, p.getContext(), m, n, elem);
}

void AccType::print(AsmPrinter &p) const {
  p << '<' << getM() << 'x' << getN() << 'x' << getElementType() << '>';
}

LogicalResult AccType::verify(function_ref<InFlightDiagnostic()> emitError, int64_t m, int64_t n,
                              Type elem) {
  return verifyFragment(emitError, kAccRules, m, n, elem);
}

Type FragType::parse(AsmParser &p) {
  int64_t m, k;
  Type elem;
  if (parseMatrix(p, m, k, elem))
    return {};
  return getChecked([&] { return p.emitError(p.getNameLoc()); }, p.getContext(), m, k, elem);
}

void FragType::print(AsmPrinter &p) const {
  p << '<' << getM() << 'x' << getK() << 'x' << getElementType() << '>';
}

LogicalResult FragType::verify(function_ref<InFlightDiagnostic()> emitError, int64_t m, int64_t k,
                               Type elem) {
  return verifyFragment(emitError, kFragRules, m, k, elem);
}

//===----------------------------------------------------------------------===//
// GroupsType
//===----------------------------------------------------------------------===//

Type RowsType::parse(AsmParser &p) {
  bool partial = false;
  if (succeeded(p.parseOptionalLess())) {
    if (p.parseKeyword("partial") || p.parseGreater())
      return {};
    partial = true;
  }
  return get(p.getContext(), partial);
}

void RowsType::print(AsmPrinter &p) const {
  if (getPartial())
    p << "<partial>";
}

Type GroupsType::parse(AsmParser &p) {
  SmallVector<int64_t> shape;
  Type elem;
  int64_t lanes = 0, vec = 0;
  bool contiguous = false;
  SMLoc loc = p.getCurrentLocation();
  if (p.parseLess() || parseTile(p, shape, elem) || parseKeyInt(p, "lanes", lanes) ||
      parseKeyInt(p, "vec", vec))
    return {};
  if (succeeded(p.parseOptionalComma())) {
    if (p.parseKeyword("contiguous"))
      return {};
    contiguous = true;
  }
  if (p.parseGreater())
    return {};
  if (shape.size() != 1)
    return p.emitError(loc) << "expected ELEMSxTYPE", Type();
  return getChecked([&] { return p.emitError(p.getNameLoc()); }, p.getContext(), shape[0], elem,
                    lanes, vec, contiguous);
}

void GroupsType::print(AsmPrinter &p) const {
  p << '<' << getElems() << 'x' << getElementType() << ", lanes = " << getLanes()
    << ", vec = " << getVec();
  if (getContiguous())
    p << ", contiguous";
  p << '>';
}

LogicalResult GroupsType::verify(function_ref<InFlightDiagnostic()> emitError, int64_t elems,
                                 Type elem, int64_t lanes, int64_t vec, bool contiguous) {
  if (!elem.isF32() && !elem.isInteger(8) && !isa<Float8E4M3FNType>(elem) &&
      !(contiguous && elem.isBF16()))
    return emitError() << "a group holds f32 values or i8, ui8 or f8E4M3FN codes (contiguous "
                          "groups also bf16), got "
                       << elem;
  if (lanes < 1 || lanes > 32 || !llvm::isPowerOf2_64(lanes))
    return emitError() << "a group spans a power of two of at most 32 lanes, got " << lanes;
  if (vec < 1 || vec > 16 || !llvm::isPowerOf2_64(vec))
    return emitError() << "a group's vectors hold a power of two of at most 16 elements, got "
                       << vec;
  if (elems < 1 || elems % (lanes * vec) != 0)
    return emitError() << "a group of " << elems << " elements is not whole chunks of " << lanes
                       << " lanes × " << vec << " elements";
  if (contiguous && (elems / lanes) % 4 != 0)
    return emitError() << "a contiguous group holds whole i32 words of codes per lane: "
                       << elems / lanes << " elements per lane is not a multiple of 4";
  return success();
}

SmallVector<Type> GroupsType::getRegisterTypes() const {
  Type elem = getElementType();
  if (getContiguous()) {
    if (elem.isF32())
      return SmallVector<Type>(getLaneElems(), elem);
    int64_t perWord = elem.isBF16() ? 2 : 4;
    return SmallVector<Type>(getLaneElems() / perWord, IntegerType::get(getContext(), 32));
  }
  if (elem.isF32())
    return SmallVector<Type>(2 * getLaneElems(), elem);
  return SmallVector<Type>(getLaneElems(), IntegerType::get(getContext(), 8));
}
