//===- CPUCodegen.h - shared pieces of the attn-to-CPU lowering -*- C++ -*-===//
//
// What this file is: what the CPU lowering's generators share — the ISA table (vector width and
// lookup intrinsics per target), small builders for constants and loops, and the entry points of
// each generator (PQLookup.cpp, PQBuild.cpp, PQAttention.cpp, Quantize.cpp). Private to this folder.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_LIB_CONVERSION_ATTNTOCPU_CPUCODEGEN_H
#define ATTN_LIB_CONVERSION_ATTNTOCPU_CPUCODEGEN_H

#include "attn/Dialect/Attn/IR/Attn.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::attn::cpu {

/// What one target offers the lookup loop.
struct ISA {
  TargetKind kind;
  /// Bytes of one SIMD register used for lookups (0: scalar code).
  int64_t vecBytes;
  /// In-lane 16-entry byte lookup (pshufb / tbl); empty for scalar.
  StringRef lookup16;
  /// 64-entry and 128-entry byte permutes (AVX-512 VBMI); empty elsewhere.
  StringRef permute64, permute128;
  /// u8 × s8 four-byte dot product accumulated into i32 lanes (AVX-512 VNNI vpdpbusd); when set,
  /// 16-centroid lookups go through vpermb + vpdpbusd instead of pshufb (PQLookup.cpp).
  StringRef dot4 = {};
  /// Variable permute of 32 u16 lanes (AVX-512BW vpermw); empty: the lookup epilogue shuffles.
  StringRef permute16 = {};

  bool isScalar() const { return vecBytes == 0; }
  static ISA get(TargetKind kind);
};

/// Handy builders on an ImplicitLocOpBuilder.
Value idx(ImplicitLocOpBuilder &b, int64_t v);
Value intConst(ImplicitLocOpBuilder &b, Type t, int64_t v);
Value floatConst(ImplicitLocOpBuilder &b, Type t, double v);
/// A vector constant with every lane equal to `v` (integer or float element type).
Value splat(ImplicitLocOpBuilder &b, VectorType t, double v);
/// min(max(v, lo), hi) on index values.
Value clampIndex(ImplicitLocOpBuilder &b, Value v, Value lo, Value hi);
/// Runs `body(iv)` in an scf.for over [lb, ub) with step `step`.
void forLoop(ImplicitLocOpBuilder &b, Value lb, Value ub, int64_t step,
             function_ref<void(ImplicitLocOpBuilder &, Value)> body);
/// Dimension `d` of a memref value as an index (constant when static).
Value dim(ImplicitLocOpBuilder &b, Value memref, int64_t d);

/// Extent `d` of `memref` when static; otherwise a located "not supported yet" naming `what`.
FailureOr<int64_t> staticDim(ImplicitLocOpBuilder &b, Value memref, int64_t d, StringRef what);

/// Number of valid keys: length clamped to [0, min(32 · NB, capacity)].
Value validKeys(ImplicitLocOpBuilder &b, Value length, Value codes, Value capacity);

/// Lowered bodies. Each writes the op's results; memrefs are the (signless) function arguments.
LogicalResult emitLUT(ImplicitLocOpBuilder &b, PQAttr pq, Value query, Value codebooks, Value lut,
                      Value params);
LogicalResult emitScores(ImplicitLocOpBuilder &b, const ISA &isa, PQAttr pq, Value lut,
                         Value params, Value codes, Value length, Value scores, bool rawU16,
                         Location loc);
LogicalResult emitEncode(ImplicitLocOpBuilder &b, PQAttr pq, Value keys, Value codebooks,
                         Value offset, Value codes);
LogicalResult emitAttention(ImplicitLocOpBuilder &b, const ISA &isa, PQAttentionOp op,
                            Value query, Value codebooks, Value codes, Value values, Value vScale,
                            Value length, Value out);
/// attn.quantize.append (`positions` given) or attn.quantize.dynamic (`positions` null, `dst` of
/// the source's shape): scalar loops (Quantize.cpp). `hadamard`: rows rotated first.
LogicalResult emitQuantize(ImplicitLocOpBuilder &b, Value src, Value positions, Value dst,
                           Value scales, Value zeros, QuantAttr quant, bool hadamard);
/// attn.quantize.mla_append: new MLA tokens into the FP8 byte format (Quantize.cpp).
LogicalResult emitQuantizeMLA(ImplicitLocOpBuilder &b, Value src, Value positions, Value cache,
                              int64_t dv, int64_t rope, int64_t tile);

struct ExtentCheck;
/// Makes `fn` (lowered, one block) a checked kernel: fully dynamic strided buffer arguments, an
/// i32 result, and a prologue that returns -1 for a malformed descriptor or k when `checks[k-1]`
/// fails, before anything runs (KernelEntry.cpp); the body returns 0.
LogicalResult guardKernelEntry(func::FuncOp fn, ArrayRef<ExtentCheck> checks);
/// The same for a kernel whose ops were outlined into `callees` (one call each): the kernel
/// becomes `_mlir_ciface_<name>` taking pointers to memref descriptors (no call passes every
/// descriptor unpacked), its prologue calls to the never-optimized `<name>.check<j>` (the checks
/// in parts of bounded size), the callees take descriptor pointers too, and `<name>` is a wrapper
/// with the unpacked ABI of other kernels.
LogicalResult guardMultiOpKernel(func::FuncOp fn, ArrayRef<ExtentCheck> checks,
                                 ArrayRef<func::FuncOp> callees);

} // namespace mlir::attn::cpu

#endif // ATTN_LIB_CONVERSION_ATTNTOCPU_CPUCODEGEN_H
