//===- VerifyUtils.h - checks shared by the attn op verifiers ---*- C++ -*-===//
//
// What this file is: the checks every op family repeats — shapes that may hold dynamic extents,
// "operand X must be [..]" messages, and the scale / zero-point operands a quantization scheme
// requires. Private to lib/Dialect/Attn/IR.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_LIB_DIALECT_ATTN_IR_VERIFYUTILS_H
#define ATTN_LIB_DIALECT_ATTN_IR_VERIFYUTILS_H

#include "attn/Dialect/Attn/IR/Attn.h"

#include <string>

namespace mlir::attn::vutil {

/// Two extents agree when equal or when either is dynamic.
inline bool dimsAgree(int64_t a, int64_t b) {
  return a == b || ShapedType::isDynamic(a) || ShapedType::isDynamic(b);
}
bool shapesAgree(ArrayRef<int64_t> a, ArrayRef<int64_t> b);

/// Largest static extent of a kernel buffer: GPU kernels index batches, tokens, heads and
/// columns with 32-bit integers, and the CPU kernels share the limit.
constexpr int64_t kMaxExtent = (int64_t(1) << 31) - 1;
/// Largest buffer, in bytes, any target addresses (2^48: the virtual address space).
constexpr int64_t kMaxBufferBytes = int64_t(1) << 48;
/// Largest page of a paged K/V cache (vLLM, FlashInfer and FA3 use 1 to 256 tokens).
constexpr int64_t kMaxPageSize = 256;

/// What every attn op's buffer operands must be, whatever the target: the identity (row-major,
/// contiguous) layout, the default memory space, static extents in [1, kMaxExtent] and at most
/// kMaxBufferBytes; and no buffer the op writes may also be passed as another operand.
LogicalResult verifyBuffers(Operation *op);

/// "[2, ?, 16]".
std::string shapeStr(ArrayRef<int64_t> shape);

/// Fails with "'<name>' must be <what> = [...], got [...]" when `v`'s shape does not agree.
LogicalResult expectShape(Operation *op, StringRef name, Value v, ArrayRef<int64_t> expected,
                          StringRef what);

/// bf16, f16 or f32.
bool isFloatActivation(Type t);

/// Checks the element type of operand `name` against its optional scheme `quant` (named
/// `quantName`): a quantized element type needs a scheme, a scheme needs its element type.
LogicalResult verifyQuantElement(Operation *op, StringRef name, Type elem, QuantAttr quant,
                                 StringRef quantName);

/// Checks the scale and zero-point operands of a [B, S, H, D] tensor quantized with `quant`
/// (which may be null: then neither operand may be present).
LogicalResult verifyScaleOperands(Operation *op, StringRef tensorName, ArrayRef<int64_t> bshd,
                                  QuantAttr quant, StringRef quantName, Value scale,
                                  StringRef scaleName, Value zero, StringRef zeroName);

/// The FP8 MLA token format's scheme: `#attn.quant<f8E4M3FN, per_block<1xC>>`, C dividing
/// head_dim_v, f32 scales, symmetric (attn.mla_decode, attn.quantize.mla_append).
LogicalResult verifyMLACacheQuant(Operation *op, QuantAttr quant, int64_t headDimV);
/// Bytes of one FP8 MLA token: Dv codes, Dv/C f32 scales, rope_dim bf16 values.
inline int64_t mlaTokenBytes(QuantAttr quant, int64_t headDimV, int64_t ropeDim) {
  return headDimV + 4 * (headDimV / quant.getBlockCols()) + 2 * ropeDim;
}

} // namespace mlir::attn::vutil

#endif // ATTN_LIB_DIALECT_ATTN_IR_VERIFYUTILS_H
