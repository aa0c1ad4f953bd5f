//===- PQAttention.cpp - lowering of attn.pq.attention --------------------===//
//
// What this file is: the complete NoMAD decode of one query token — the LUT and score generators
// of PQBuild.cpp / PQLookup.cpp into heap buffers, a numerically stable softmax per query head
// (vectorized Cephes-style exp), then P·V over dense values (f32, f16, or i8 with
// per-(token, head) scales), 8 f32 lanes at a time, per KV head for its GQA group of query heads
// together: each value chunk is loaded (and widened) once per group, not once per query head.
// An empty key range yields zeros.
//
//===----------------------------------------------------------------------===//

#include "CPUCodegen.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::cpu;

namespace {
constexpr int64_t kLanes = 8;

/// exp(x) on f32 lanes: range reduction x = n·ln2 + r, degree-6 polynomial on r (Cephes expf,
/// relative error ~1e-7), 2^n built in the exponent bits. Inputs are clamped to [-87.3, 88.7].
Value expVec(ImplicitLocOpBuilder &b, Value x) {
  auto ft = cast<VectorType>(x.getType());
  auto it = VectorType::get(ft.getShape(), b.getI32Type());
  auto c = [&](double v) { return splat(b, ft, v); };
  x = arith::MinimumFOp::create(b, arith::MaximumFOp::create(b, x, c(-87.33654)), c(88.72283));
  Value fx = math::FloorOp::create(
      b, arith::AddFOp::create(b, arith::MulFOp::create(b, x, c(1.44269504088896341)), c(0.5)));
  Value r = arith::SubFOp::create(b, x, arith::MulFOp::create(b, fx, c(0.693359375)));
  r = arith::SubFOp::create(b, r, arith::MulFOp::create(b, fx, c(-2.12194440e-4)));
  Value y = c(1.9875691500E-4);
  for (double k : {1.3981999507E-3, 8.3334519073E-3, 4.1665795894E-2, 1.6666665459E-1,
                   5.0000001201E-1})
    y = vector::FMAOp::create(b, y, r, c(k));
  Value r2 = arith::MulFOp::create(b, r, r);
  y = arith::AddFOp::create(b, vector::FMAOp::create(b, y, r2, r), c(1.0));
  Value n = arith::FPToSIOp::create(b, it, fx);
  Value biased = arith::AddIOp::create(b, n, splat(b, it, 127));
  Value bits = arith::ShLIOp::create(b, biased, splat(b, it, 23));
  return arith::MulFOp::create(b, y, vector::BitCastOp::create(b, ft, bits));
}

Value splatScalar(ImplicitLocOpBuilder &b, VectorType t, Value s) {
  return vector::BroadcastOp::create(b, t, s);
}

/// Softmax of one query head's scores row `hq` over [0, len): p = exp(scale · (s − max)) stored
/// in place (masked lanes 0), 1 / Σp (0 for an empty range) stored in `inv[hq]`.
void emitSoftmaxRow(ImplicitLocOpBuilder &b, Value scores, Value inv, Value hq, Value len,
                    double scaleValue) {
  Type f32 = b.getF32Type();
  auto vecF = VectorType::get({kLanes}, f32);
  auto maskT = VectorType::get({kLanes}, b.getI1Type());
  Value ninf = floatConst(b, f32, -std::numeric_limits<double>::infinity());
  Value zeroF = floatConst(b, f32, 0.0);
  auto chunkMask = [&](ImplicitLocOpBuilder &b, Value t) {
    return vector::CreateMaskOp::create(b, maskT, ValueRange{arith::SubIOp::create(b, len, t)});
  };
  auto maxLoop = scf::ForOp::create(
      b, idx(b, 0), len, idx(b, kLanes), ValueRange{splatScalar(b, vecF, ninf)},
      [&](OpBuilder &n, Location l, Value t, ValueRange acc) {
        ImplicitLocOpBuilder nb(l, n);
        Value x = vector::MaskedLoadOp::create(nb, vecF, scores, ValueRange{hq, t},
                                               chunkMask(nb, t), splatScalar(nb, vecF, ninf));
        scf::YieldOp::create(nb, ValueRange{arith::MaximumFOp::create(nb, acc[0], x)});
      });
  Value rowMax =
      vector::ReductionOp::create(b, vector::CombiningKind::MAXIMUMF, maxLoop.getResult(0));
  Value scale = splat(b, vecF, scaleValue);
  auto sumLoop = scf::ForOp::create(
      b, idx(b, 0), len, idx(b, kLanes), ValueRange{splatScalar(b, vecF, zeroF)},
      [&](OpBuilder &n, Location l, Value t, ValueRange acc) {
        ImplicitLocOpBuilder nb(l, n);
        Value mask = chunkMask(nb, t);
        Value x = vector::MaskedLoadOp::create(nb, vecF, scores, ValueRange{hq, t}, mask,
                                               splatScalar(nb, vecF, zeroF));
        Value shifted = arith::SubFOp::create(nb, x, splatScalar(nb, vecF, rowMax));
        Value p = expVec(nb, arith::MulFOp::create(nb, shifted, scale));
        p = arith::SelectOp::create(nb, mask, p, splatScalar(nb, vecF, zeroF));
        vector::MaskedStoreOp::create(nb, scores, ValueRange{hq, t}, mask, p);
        scf::YieldOp::create(nb, ValueRange{arith::AddFOp::create(nb, acc[0], p)});
      });
  Value sum = vector::ReductionOp::create(b, vector::CombiningKind::ADD, sumLoop.getResult(0));
  Value nonEmpty = arith::CmpIOp::create(b, arith::CmpIPredicate::sgt, len, idx(b, 0));
  Value r = arith::SelectOp::create(
      b, nonEmpty, arith::DivFOp::create(b, floatConst(b, f32, 1.0), sum), zeroF);
  memref::StoreOp::create(b, r, inv, ValueRange{hq});
}

/// P·V of `group` query heads hq0 .. hq0 + group − 1 that share KV head h: one pass over the
/// valid tokens per slice of `width` 8-lane chunks of Dv, each token's value chunk loaded (and
/// widened) once and multiplied into all group heads' accumulators; out = acc · inv[hq].
void emitGroupPV(ImplicitLocOpBuilder &b, Value scores, Value inv, Value values, Value vScale,
                 Value out, Value h, Value hq0, Value len, int64_t group, int64_t width,
                 int64_t chunks) {
  Type f32 = b.getF32Type();
  auto vecF = VectorType::get({kLanes}, f32);
  Type elem = cast<MemRefType>(values.getType()).getElementType();
  SmallVector<Value> heads;
  for (int64_t g = 0; g < group; ++g)
    heads.push_back(arith::AddIOp::create(b, hq0, idx(b, g)));
  for (int64_t c0 = 0; c0 < chunks; c0 += width) {
    SmallVector<Value> init(group * width, splatScalar(b, vecF, floatConst(b, f32, 0.0)));
    auto pv = scf::ForOp::create(
        b, idx(b, 0), len, idx(b, 1), init,
        [&](OpBuilder &n, Location l, Value t, ValueRange acc) {
          ImplicitLocOpBuilder nb(l, n);
          Value s = vScale ? memref::LoadOp::create(nb, vScale, ValueRange{t, h}) : Value();
          SmallVector<Value> pb;
          for (int64_t g = 0; g < group; ++g) {
            Value p = memref::LoadOp::create(nb, scores, ValueRange{heads[g], t});
            if (s)
              p = arith::MulFOp::create(nb, p, s);
            pb.push_back(splatScalar(nb, vecF, p));
          }
          SmallVector<Value> next(group * width);
          for (int64_t k = 0; k < width; ++k) {
            auto vt = VectorType::get({kLanes}, elem);
            Value v = vector::LoadOp::create(nb, vt, values,
                                             ValueRange{t, h, idx(nb, (c0 + k) * kLanes)});
            if (elem.isF16())
              v = arith::ExtFOp::create(nb, vecF, v);
            else if (elem.isInteger(8))
              v = arith::SIToFPOp::create(nb, vecF, v);
            for (int64_t g = 0; g < group; ++g)
              next[g * width + k] = vector::FMAOp::create(nb, pb[g], v, acc[g * width + k]);
          }
          scf::YieldOp::create(nb, next);
        });
    for (int64_t g = 0; g < group; ++g) {
      Value r = splatScalar(b, vecF, memref::LoadOp::create(b, inv, ValueRange{heads[g]}));
      for (int64_t k = 0; k < width; ++k)
        vector::StoreOp::create(b, arith::MulFOp::create(b, pv.getResult(g * width + k), r), out,
                                ValueRange{heads[g], idx(b, (c0 + k) * kLanes)});
    }
  }
}

/// Chunks per pass for `group` heads: the largest divisor of `chunks` whose group · width
/// accumulators fit the register budget (at least 1).
int64_t sliceWidth(int64_t chunks, int64_t group, int64_t budget) {
  int64_t best = 1;
  for (int64_t w = 1; w <= chunks; ++w)
    if (chunks % w == 0 && group * w <= budget)
      best = w;
  return best;
}
} // namespace

LogicalResult cpu::emitAttention(ImplicitLocOpBuilder &b, const ISA &isa, PQAttentionOp op,
                                 Value query, Value codebooks, Value codes, Value values,
                                 Value vScale, Value length, Value out) {
  PQAttr pq = op.getPq();
  auto valuesT = cast<MemRefType>(values.getType());
  int64_t dv = valuesT.getDimSize(2), numSub = cast<MemRefType>(codebooks.getType()).getDimSize(1);
  int64_t headDim = cast<MemRefType>(query.getType()).getDimSize(1);
  if (ShapedType::isDynamic(dv) || dv % kLanes != 0 || ShapedType::isDynamic(numSub) ||
      ShapedType::isDynamic(headDim))
    return op.emitError() << "not supported yet: NoMAD attention needs static head dims with "
                             "head_dim_v a multiple of "
                          << kLanes;
  Type f32 = b.getF32Type();
  double scaleValue = op.getSoftmaxScaleAttr()
                          ? op.getSoftmaxScaleAttr().getValueAsDouble()
                          : 1.0 / std::sqrt(static_cast<double>(headDim));

  // Scratch: LUTs, their (step, bias), the scores (then probabilities) of every head and the
  // reciprocal of each head's probability sum.
  Value numQ = dim(b, query, 0);
  int64_t c = pq.getCentroids();
  Value lut = memref::AllocOp::create(
      b, MemRefType::get({ShapedType::kDynamic, numSub, c}, b.getI8Type()), ValueRange{numQ});
  Value params = memref::AllocOp::create(b, MemRefType::get({ShapedType::kDynamic, 2}, f32),
                                         ValueRange{numQ});
  Value capacity = arith::MulIOp::create(b, dim(b, codes, 1), idx(b, 32));
  Value scores = memref::AllocOp::create(
      b, MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic}, f32),
      ValueRange{numQ, capacity});
  Value inv =
      memref::AllocOp::create(b, MemRefType::get({ShapedType::kDynamic}, f32), ValueRange{numQ});
  if (failed(emitLUT(b, pq, query, codebooks, lut, params)))
    return failure();
  Value len = validKeys(b, length, codes, dim(b, values, 0));
  if (failed(emitScores(b, isa, pq, lut, params, codes, len, scores, /*rawU16=*/false,
                        op.getLoc())))
    return failure();
  forLoop(b, idx(b, 0), numQ, 1, [&](ImplicitLocOpBuilder &b, Value hq) {
    emitSoftmaxRow(b, scores, inv, hq, len, scaleValue);
  });

  // P·V per KV head, its query heads in groups of `group` (the whole GQA group when its size is
  // static and small, else 4) and then one at a time, so that each value is read once per group.
  int64_t staticQ = cast<MemRefType>(query.getType()).getDimSize(0);
  int64_t staticH = cast<MemRefType>(codes.getType()).getDimSize(0);
  int64_t staticRatio = !ShapedType::isDynamic(staticQ) && !ShapedType::isDynamic(staticH) &&
                                staticH > 0 && staticQ % staticH == 0
                            ? staticQ / staticH
                            : 0;
  int64_t maxGroup = 4, chunks = dv / kLanes;
  int64_t group = staticRatio > 0 && staticRatio <= maxGroup ? staticRatio : maxGroup;
  int64_t budget = isa.vecBytes >= 64 ? 24 : 12; // accumulators: 16 or 32 vector registers
  Value numH = dim(b, codes, 0);
  Value ratio = arith::DivUIOp::create(b, numQ, numH);
  Value groups = arith::DivUIOp::create(b, ratio, idx(b, group));
  forLoop(b, idx(b, 0), numH, 1, [&](ImplicitLocOpBuilder &b, Value h) {
    Value first = arith::MulIOp::create(b, h, ratio);
    forLoop(b, idx(b, 0), groups, 1, [&](ImplicitLocOpBuilder &b, Value g) {
      Value hq0 = arith::AddIOp::create(b, first, arith::MulIOp::create(b, g, idx(b, group)));
      emitGroupPV(b, scores, inv, values, vScale, out, h, hq0, len, group,
                  sliceWidth(chunks, group, budget), chunks);
    });
    if (staticRatio > 0 && staticRatio % group == 0)
      return;
    Value done = arith::AddIOp::create(b, first, arith::MulIOp::create(b, groups, idx(b, group)));
    forLoop(b, done, arith::AddIOp::create(b, first, ratio), 1,
            [&](ImplicitLocOpBuilder &b, Value hq) {
              emitGroupPV(b, scores, inv, values, vScale, out, h, hq, len, 1,
                          sliceWidth(chunks, 1, budget), chunks);
            });
  });
  memref::DeallocOp::create(b, inv);
  memref::DeallocOp::create(b, scores);
  memref::DeallocOp::create(b, params);
  memref::DeallocOp::create(b, lut);
  return success();
}
