//===- VerifyUtils.cpp - checks shared by the attn op verifiers -----------===//
//
// What this file is: the implementation of VerifyUtils.h — shape agreement and the scale /
// zero-point checks every quantized operand goes through.
//
//===----------------------------------------------------------------------===//

#include "VerifyUtils.h"

#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::attn;

bool vutil::shapesAgree(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  if (a.size() != b.size())
    return false;
  for (auto [x, y] : llvm::zip(a, b))
    if (!dimsAgree(x, y))
      return false;
  return true;
}

LogicalResult vutil::verifyBuffers(Operation *op) {
  for (OpOperand &use : op->getOpOperands()) {
    auto mt = dyn_cast<MemRefType>(use.get().getType());
    if (!mt)
      continue;
    unsigned n = use.getOperandNumber();
    if (!mt.getLayout().isIdentity())
      return op->emitOpError() << "operand #" << n << " (" << mt
                               << ") has a non-identity layout; kernel buffers are row-major and "
                                  "contiguous (copy the view into such a buffer first)";
    if (mt.getMemorySpace())
      return op->emitOpError() << "operand #" << n << " (" << mt << ") is in memory space "
                               << mt.getMemorySpace()
                               << "; kernel buffers live in the default memory space";
    // Element bits rounded up to bytes; i4 codes are stored one per byte.
    Type et = mt.getElementType();
    int64_t bytes = et.isIntOrFloat() ? std::max<int64_t>(1, (et.getIntOrFloatBitWidth() + 7) / 8) : 8;
    for (auto [d, extent] : llvm::enumerate(mt.getShape())) {
      if (ShapedType::isDynamic(extent))
        continue;
      if (extent < 1 || extent > kMaxExtent)
        return op->emitOpError() << "operand #" << n << " (" << mt << ") has extent " << extent
                                 << " in dimension " << d << "; extents must be in [1, "
                                 << kMaxExtent << "]";
      if (llvm::MulOverflow(bytes, extent, bytes) || bytes > kMaxBufferBytes)
        return op->emitOpError() << "operand #" << n << " (" << mt << ") spans more than "
                                 << kMaxBufferBytes << " bytes";
    }
  }
  auto iface = dyn_cast<MemoryEffectOpInterface>(op);
  if (!iface)
    return success();
  SmallVector<MemoryEffects::EffectInstance> effects;
  iface.getEffects(effects);
  for (MemoryEffects::EffectInstance &e : effects) {
    auto *written = e.getEffectValue<OpOperand *>();
    if (!written || !isa<MemoryEffects::Write>(e.getEffect()))
      continue;
    for (OpOperand &other : op->getOpOperands())
      if (&other != written && other.get() == written->get())
        return op->emitOpError() << "operand #" << written->getOperandNumber()
                                 << ", which the op writes, is also passed as operand #"
                                 << other.getOperandNumber()
                                 << "; an output must not alias another operand";
  }
  return success();
}

std::string vutil::shapeStr(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleaveComma(shape, os, [&](int64_t d) {
    if (ShapedType::isDynamic(d))
      os << "?";
    else
      os << d;
  });
  os << "]";
  return s;
}

LogicalResult vutil::expectShape(Operation *op, StringRef name, Value v,
                                  ArrayRef<int64_t> expected, StringRef what) {
  auto shape = cast<ShapedType>(v.getType()).getShape();
  if (shapesAgree(shape, expected))
    return success();
  return op->emitOpError() << "'" << name << "' must be " << what << " = " << shapeStr(expected)
                           << ", got " << shapeStr(shape);
}

bool vutil::isFloatActivation(Type t) { return t.isBF16() || t.isF16() || t.isF32(); }

LogicalResult vutil::verifyQuantElement(Operation *op, StringRef name, Type elem,
                                         QuantAttr quant, StringRef quantName) {
  if (!quant) {
    if (isFloatActivation(elem))
      return success();
    return op->emitOpError() << "'" << name << "' has quantized element type " << elem
                             << " but no '" << quantName << "' scheme";
  }
  if (elem != quant.getElementType())
    return op->emitOpError() << "'" << name << "' element type " << elem << " does not match '"
                             << quantName << "' element type " << quant.getElementType();
  return success();
}

LogicalResult vutil::verifyScaleOperands(Operation *op, StringRef tensorName,
                                          ArrayRef<int64_t> bshd, QuantAttr quant,
                                          StringRef quantName, Value scale, StringRef scaleName,
                                          Value zero, StringRef zeroName) {
  if (!quant) {
    if (scale)
      return op->emitOpError() << "'" << scaleName << "' given without a '" << quantName
                               << "' scheme";
    if (zero)
      return op->emitOpError() << "'" << zeroName << "' given without a '" << quantName
                               << "' scheme";
    return success();
  }
  if (!scale)
    return op->emitOpError() << "'" << quantName << "' needs a '" << scaleName << "' operand";
  int64_t d = bshd[3];
  if (quant.getGranularity() == Granularity::per_group && !ShapedType::isDynamic(d) &&
      d % quant.getGroupSize() != 0)
    return op->emitOpError() << "per_group<" << quant.getGroupSize() << "> does not divide the "
                             << "head_dim " << d << " of '" << tensorName << "'";
  if (quant.getGranularity() == Granularity::per_block && !ShapedType::isDynamic(d) &&
      d % quant.getBlockCols() != 0)
    return op->emitOpError() << "per_block columns (" << quant.getBlockCols()
                             << ") do not divide the head_dim " << d << " of '" << tensorName
                             << "'";
  SmallVector<int64_t> expected = quant.getScaleShape(bshd);
  auto scaleTy = cast<MemRefType>(scale.getType());
  if (!shapesAgree(scaleTy.getShape(), expected))
    return op->emitOpError() << "'" << scaleName << "' must have the "
                             << stringifyGranularity(quant.getGranularity())
                             << " scale shape " << shapeStr(expected) << " of '" << tensorName
                             << "', got " << shapeStr(scaleTy.getShape());
  if (scaleTy.getElementType() != quant.getScaleType())
    return op->emitOpError() << "'" << scaleName << "' element type " << scaleTy.getElementType()
                             << " does not match the scheme's scale type "
                             << quant.getScaleType();
  if (!quant.isAsymmetric()) {
    if (zero)
      return op->emitOpError() << "'" << zeroName << "' given but '" << quantName
                               << "' is symmetric";
    return success();
  }
  if (!zero)
    return op->emitOpError() << "asymmetric '" << quantName << "' needs a '" << zeroName
                             << "' operand";
  auto zeroTy = cast<MemRefType>(zero.getType());
  if (!shapesAgree(zeroTy.getShape(), scaleTy.getShape()))
    return op->emitOpError() << "'" << zeroName << "' shape " << shapeStr(zeroTy.getShape())
                             << " must equal the '" << scaleName << "' shape "
                             << shapeStr(scaleTy.getShape());
  Type zt = zeroTy.getElementType();
  if (!zt.isInteger(32) && zt != quant.getElementType() && !zt.isF32())
    return op->emitOpError() << "'" << zeroName << "' element type must be i32, f32 or "
                             << quant.getElementType() << ", got " << zt;
  return success();
}

LogicalResult mlir::attn::vutil::verifyMLACacheQuant(Operation *op, QuantAttr quant,
                                                    int64_t headDimV) {
  if (!isa<Float8E4M3FNType>(quant.getElementType()) ||
      quant.getGranularity() != Granularity::per_block || quant.getBlockRows() != 1 ||
      headDimV % quant.getBlockCols() != 0 || quant.isAsymmetric() || !quant.getScaleType().isF32())
    return op->emitOpError() << "kv_quant must be #attn.quant<f8E4M3FN, per_block<1xC>> with C "
                                "dividing head_dim_v and f32 scales";
  return success();
}
