//===- PQOps.cpp - verifiers of the NoMAD attn.pq.* ops -------------------===//
//
// What this file is: the shape rules of the product-quantization family — S = D / dsub
// sub-quantizers, codebooks [H, S, C, dsub], the blocked code cache [H, NB, S, R], lookup tables
// [Hq, S, C] with Hq a multiple of H (GQA) — and which targets can run them.
//
//===----------------------------------------------------------------------===//

#include "VerifyUtils.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::vutil;

static constexpr int64_t kDyn = ShapedType::kDynamic;

static int64_t divDyn(int64_t a, int64_t b) { return ShapedType::isDynamic(a) ? kDyn : a / b; }

/// Checks shared by every PQ op: the target runs NoMAD, head_dim splits into sub-quantizers, and
/// the codebooks are [H, S, C, dsub]. Returns S (or kDynamic).
static FailureOr<int64_t> verifyPQCommon(Operation *op, PQAttr pq, int64_t headDim, int64_t heads,
                                         Value codebooks) {
  std::optional<TargetKind> target = getOpTarget(op);
  if (target && isGPUTarget(*target))
    return op->emitOpError() << "NoMAD ops are CPU kernels; target "
                             << stringifyTargetKind(*target) << " cannot run them";
  if (pq.getCentroids() > 16 && target && *target != TargetKind::avx512_vbmi &&
      *target != TargetKind::avx512_vnni && *target != TargetKind::scalar)
    return op->emitOpError() << pq.getCentroids()
                             << " centroids need 64-byte table lookups (vpermb): target "
                                "avx512_vbmi, avx512_vnni or scalar, got "
                             << stringifyTargetKind(*target);
  if (!ShapedType::isDynamic(headDim) && headDim % pq.getDsub() != 0)
    return op->emitOpError() << "head_dim " << headDim << " is not a multiple of dsub "
                             << pq.getDsub();
  int64_t s = divDyn(headDim, pq.getDsub());
  if (failed(expectShape(op, "codebooks", codebooks, {heads, s, pq.getCentroids(), pq.getDsub()},
                         "[H, S, C, dsub]")))
    return failure();
  return s;
}

static LogicalResult verifyCodes(Operation *op, PQAttr pq, Value codes, int64_t heads,
                                 int64_t s) {
  return expectShape(op, "codes", codes,
                     {heads, cast<MemRefType>(codes.getType()).getDimSize(1), s,
                      pq.getCodeRowBytes()},
                     "[H, NB, S, R]");
}

/// Query heads must be a multiple of the KV heads of the codebooks.
static LogicalResult verifyGQA(Operation *op, int64_t hq, int64_t h) {
  if (ShapedType::isDynamic(hq) || ShapedType::isDynamic(h) || (h > 0 && hq % h == 0))
    return success();
  return op->emitOpError() << "the " << hq << " query heads are not a multiple of the " << h
                           << " KV heads of the codebooks";
}

LogicalResult PQEncodeOp::verify() {
  if (failed(vutil::verifyBuffers(*this)))
    return failure();
  auto keysT = getKeys().getType();
  int64_t h = keysT.getDimSize(1);
  FailureOr<int64_t> s = verifyPQCommon(*this, getPq(), keysT.getDimSize(2), h, getCodebooks());
  if (failed(s))
    return failure();
  return verifyCodes(*this, getPq(), getCodes(), h, *s);
}

LogicalResult PQLutOp::verify() {
  if (failed(vutil::verifyBuffers(*this)))
    return failure();
  auto qT = getQuery().getType();
  int64_t hq = qT.getDimSize(0);
  int64_t h = getCodebooks().getType().getDimSize(0);
  FailureOr<int64_t> s = verifyPQCommon(*this, getPq(), qT.getDimSize(1), h, getCodebooks());
  if (failed(s) || failed(verifyGQA(*this, hq, h)))
    return failure();
  if (failed(expectShape(*this, "lut", getLut(), {hq, *s, getPq().getCentroids()}, "[Hq, S, C]")))
    return failure();
  return expectShape(*this, "lut_params", getLutParams(), {hq, 2}, "(scale, bias) [Hq, 2]");
}

LogicalResult PQScoresOp::verify() {
  if (failed(vutil::verifyBuffers(*this)))
    return failure();
  auto lutT = getLut().getType();
  auto codesT = getCodes().getType();
  int64_t hq = lutT.getDimSize(0), s = lutT.getDimSize(1), h = codesT.getDimSize(0);
  std::optional<TargetKind> target = getOpTarget(*this);
  if (target && isGPUTarget(*target))
    return emitOpError() << "NoMAD ops are CPU kernels; target " << stringifyTargetKind(*target)
                         << " cannot run them";
  if (failed(expectShape(*this, "lut", getLut(), {hq, s, getPq().getCentroids()}, "[Hq, S, C]")) ||
      failed(verifyCodes(*this, getPq(), getCodes(), h, s)) || failed(verifyGQA(*this, hq, h)) ||
      failed(expectShape(*this, "lut_params", getLutParams(), {hq, 2}, "(scale, bias) [Hq, 2]")))
    return failure();
  int64_t t = getScores().getType().getDimSize(1), nb = codesT.getDimSize(1);
  if (failed(expectShape(*this, "scores", getScores(), {hq, t}, "[Hq, T]")))
    return failure();
  if (!ShapedType::isDynamic(t) && !ShapedType::isDynamic(nb) && t > nb * getPq().getBlock())
    return emitOpError() << "'scores' holds " << t << " keys but 'codes' only " << nb << " blocks of "
                         << getPq().getBlock();
  return success();
}

LogicalResult PQAttentionOp::verify() {
  if (failed(vutil::verifyBuffers(*this)))
    return failure();
  auto qT = getQuery().getType();
  auto valuesT = getValues().getType();
  int64_t hq = qT.getDimSize(0), h = getCodebooks().getType().getDimSize(0);
  FailureOr<int64_t> s = verifyPQCommon(*this, getPq(), qT.getDimSize(1), h, getCodebooks());
  if (failed(s) || failed(verifyGQA(*this, hq, h)) ||
      failed(verifyCodes(*this, getPq(), getCodes(), h, *s)))
    return failure();
  int64_t t = valuesT.getDimSize(0), dv = valuesT.getDimSize(2);
  if (failed(expectShape(*this, "values", getValues(), {t, h, dv}, "[T, H, Dv]")) ||
      failed(expectShape(*this, "out", getOut(), {hq, dv}, "[Hq, Dv]")))
    return failure();
  int64_t nb = getCodes().getType().getDimSize(1);
  if (!ShapedType::isDynamic(t) && !ShapedType::isDynamic(nb) && t > nb * getPq().getBlock())
    return emitOpError() << "'values' holds " << t << " tokens but 'codes' only " << nb
                         << " blocks of " << getPq().getBlock();
  bool intValues = valuesT.getElementType().isInteger(8);
  QuantAttr vq = getVQuantAttr();
  if (intValues) {
    if (!vq || vq.getGranularity() != Granularity::per_token_head || vq.isAsymmetric() ||
        !vq.getElementType().isInteger(8))
      return emitOpError() << "i8 values need v_quant = #attn.quant<i8, per_token_head>";
    if (!getVScale())
      return emitOpError() << "i8 values need a 'v_scale' operand [T, H]";
    return expectShape(*this, "v_scale", getVScale(), {t, h}, "per-(token, head) scales [T, H]");
  }
  if (vq || getVScale())
    return emitOpError() << "v_quant and v_scale apply to i8 values only";
  return success();
}
