//===- CPUExtentChecks.h - run-time extent checks of CPU kernels -*- C++ -*-===//
//
// What this file is: the extent relations a CPU kernel's attn ops need between the extents of its
// arguments (which dims of which operands must agree, which must be at least one, ...), derived
// from the ops the way their verifiers derive them, over the extents the spec leaves dynamic.
// Every entry point checks the same numbered list: the kernel's prologue (convert-attn-to-cpu),
// the generated C header's wrapper and the Python wrapper (both read it from the header).
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CONVERSION_CPUEXTENTCHECKS_H
#define ATTN_CONVERSION_CPUEXTENTCHECKS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>

namespace mlir::attn::cpu {

/// The largest buffer a kernel takes, in bytes (2^48, beyond any address space in use): every
/// extent, and every product of extents, a kernel computes then fits an int64_t with room to spare.
inline constexpr int64_t kMaxBufferBytes = int64_t(1) << 48;

/// Status a kernel (and the header's wrapper) returns when a buffer descriptor is malformed:
/// a negative or too large extent, a static extent that differs from the type's, strides that
/// are not row-major, a nonzero offset or a null buffer of nonzero size. Nothing runs.
inline constexpr int32_t kBadBufferStatus = -1;

/// Status a kernel returns when the scratch memory it allocates (`malloc`) is not available:
/// nothing after the allocation ran, and the output buffers hold what they held (or part of one
/// earlier op's results, in a kernel of several ops).
inline constexpr int32_t kOutOfMemoryStatus = -2;

/// `scale` × extent `dim` of function argument `arg`, or `constant` when `arg` < 0.
struct ExtentTerm {
  int64_t arg = -1, dim = 0, scale = 1, constant = 0;
  bool isConstant() const { return arg < 0; }
};

enum class ExtentRelation {
  Equal,      ///< lhs == rhs
  AtMost,     ///< lhs <= rhs
  Positive,   ///< lhs >= 1 (rhs unused)
  MultipleOf, ///< lhs % rhs == 0 (rhs is checked positive before)
};

/// One check; at least one side refers to a dynamic extent. Check k of a kernel (1-based) failing
/// makes the kernel return k without running.
struct ExtentCheck {
  ExtentTerm lhs, rhs;
  ExtentRelation relation;
  std::string why; ///< e.g. "attn.quantize.dynamic: 'dst' dim 0 must equal 'src' dim 0"
};

/// The checks of `fn`'s attn ops, in op order. Fails with a located error when a relation needs a
/// dynamic extent of an operand that is not an argument of `fn` (it cannot be checked on entry).
FailureOr<SmallVector<ExtentCheck>> collectExtentChecks(func::FuncOp fn);

/// `arg1_dim0 == arg0_dim0`, `arg4_dim1 <= arg2_dim1 * 32`, `arg1_dim0 >= 1`,
/// `arg0_dim0 % arg1_dim0 == 0`: valid C over the header wrapper's extent parameters, and the
/// form the Python wrapper evaluates.
std::string formatExtentCheck(const ExtentCheck &check);

} // namespace mlir::attn::cpu

#endif // ATTN_CONVERSION_CPUEXTENTCHECKS_H
