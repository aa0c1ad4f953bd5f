//===- QuantizePlan.h - one Hopper quantize kernel, fully decided -*- C++ -*-===//
//
// What this file is: what the kernel an `attn.quantize.append`, `attn.quantize.append_paged` or
// `attn.quantize.dynamic` op becomes on sm_90a — source and code types, the scale groups of the
// granularity, and how threads map onto them — as BuildQuantize.cpp decides it before building
// the kernel level, and its entry points. Private to this folder.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_LIB_CONVERSION_ATTNTOKERNEL_QUANTIZEPLAN_H
#define ATTN_LIB_CONVERSION_ATTNTOKERNEL_QUANTIZEPLAN_H

#include "attn/Dialect/Attn/IR/Attn.h"
#include "attn/Dialect/AttnKernel/IR/AttnKernel.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

#include <string>

namespace mlir::attn::kernel {

enum class QSrc { BF16, F16, F32 };
enum class QCode { I8, U8, E4M3 };
enum class QScale { F32, F16, BF16 };

/// A quantize kernel. Every token row (H · D elements, contiguous) splits into scale groups of
/// `groupElems` consecutive elements; `lanes` lanes of a warp share one group, each holding
/// `chunks` vectors of `vec` elements; a warp handles 32 / lanes groups `unroll` times over.
struct QuantizePlan {
  std::string name;
  bool append = true; ///< quantize.append (positions, cache capacity) or quantize.dynamic.
  /// quantize.append_paged: rows [T, H, D] into a pool of pages [num_pages, P, H, D] at the
  /// slots of a slot mapping (i64, or i32 when `slotBits` is 32); batch is T, newTokens 1,
  /// capacity the pool's rows.
  bool paged = false;
  int64_t pageSize = 0, numPages = -1, slotBits = 64;
  QSrc src = QSrc::BF16;
  QCode code = QCode::I8;
  bool asym = false;
  /// Each head's row rotated by the Walsh–Hadamard matrix before quantizing (`hadamard`; the
  /// verifier makes every scale group whole rows).
  bool hadamard = false;
  /// Scales are computed in f32 and stored (and used) rounded to this type.
  QScale scale = QScale::F32;
  Granularity gran = Granularity::per_token_head;
  std::string granText; ///< the granularity as the spec writes it, for the metadata.
  // Problem (-1: known at launch).
  int64_t batch = -1, newTokens = -1, capacity = -1, heads = 1, headDim = 128;
  // Mapping.
  int64_t groupElems = 128, vec = 8, lanes = 16, chunks = 1, unroll = 4;

  /// The scheme; the arithmetic below is its (QuantAttr's).
  QuantAttr quant;
  /// Scales computed from the data (token-local granularities) rather than read (static ones).
  bool dynamicScales() const { return !quant.hasStaticScales(); }
  int64_t rowElems() const { return heads * headDim; }
  int64_t groupsPerToken() const { return rowElems() / groupElems; }
  int64_t groupsPerWarp() const { return 32 / lanes; }
  int64_t groupsPerCTA() const { return 4 * groupsPerWarp() * unroll; }
  int64_t srcBytes() const { return src == QSrc::F32 ? 4 : 2; }
  int64_t scaleBytes() const { return scale == QScale::F32 ? 4 : 2; }
  /// The smallest scale: 1e-8, or 2^-24 (the smallest f16) for f16 scales.
  double minScale() const { return quant.getMinScale(); }
  /// Code range [lo, hi] (e4m3: ±448).
  double lo() const { return quant.getCodeMin(); }
  double hi() const { return quant.getCodeMax(); }
};

/// Resolves a quantize op for sm_90a, or reports (on the op) why it has no GPU kernel yet.
FailureOr<QuantizePlan> planQuantize(Operation *op);
/// Adds the kernel level of `<name>_quantize` (an `attnk.kernel` with its launch metadata) at
/// the end of `module`.
void buildQuantizeKernel(OpBuilder &b, Location loc, gpu::GPUModuleOp module, Operation *op,
                         const QuantizePlan &p);
/// The launch ABI of the plan's kernel and its metadata (problem, schedule:
/// docs/GPUQuantize.md).
attnk::LaunchAttr quantizeLaunch(Builder &b, const QuantizePlan &p);
DictionaryAttr quantizeMetadata(Builder &b, const QuantizePlan &p);

} // namespace mlir::attn::kernel

#endif // ATTN_LIB_CONVERSION_ATTNTOKERNEL_QUANTIZEPLAN_H
