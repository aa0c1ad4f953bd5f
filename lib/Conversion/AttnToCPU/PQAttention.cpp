//===- PQAttention.cpp - lowering of attn.pq.attention --------------------===//
//
// What this file is: the complete NoMAD decode of one query token — the LUT and score generators
// of PQBuild.cpp / PQLookup.cpp into heap buffers, then per query head a numerically stable
// softmax (vectorized Cephes-style exp) and P·V over dense values (f32, f16, or i8 with
// per-(token, head) scales), 8 f32 lanes at a time. An empty key range yields zeros.
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
  auto vecF = VectorType::get({kLanes}, f32);
  auto maskT = VectorType::get({kLanes}, b.getI1Type());
  double scaleValue = op.getSoftmaxScaleAttr()
                          ? op.getSoftmaxScaleAttr().getValueAsDouble()
                          : 1.0 / std::sqrt(static_cast<double>(headDim));

  // Scratch: LUTs, their (step, bias), and the scores (then probabilities) of every head.
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
  if (failed(emitLUT(b, pq, query, codebooks, lut, params)))
    return failure();
  Value len = validKeys(b, length, codes, dim(b, values, 0));
  if (failed(emitScores(b, isa, pq, lut, params, codes, len, scores, /*rawU16=*/false,
                        op.getLoc())))
    return failure();

  Value ratio = arith::DivUIOp::create(b, numQ, dim(b, codes, 0));
  Value ninf = floatConst(b, f32, -std::numeric_limits<double>::infinity());
  Value zeroF = floatConst(b, f32, 0.0);
  forLoop(b, idx(b, 0), numQ, 1, [&](ImplicitLocOpBuilder &b, Value hq) {
    Value h = arith::DivUIOp::create(b, hq, ratio);
    auto chunkMask = [&](ImplicitLocOpBuilder &b, Value t) {
      return vector::CreateMaskOp::create(b, maskT,
                                          ValueRange{arith::SubIOp::create(b, len, t)});
    };
    // Row maximum.
    auto maxLoop = scf::ForOp::create(
        b, idx(b, 0), len, idx(b, kLanes), ValueRange{splatScalar(b, vecF, ninf)},
        [&](OpBuilder &n, Location l, Value t, ValueRange acc) {
          ImplicitLocOpBuilder nb(l, n);
          Value x = vector::MaskedLoadOp::create(nb, vecF, scores, ValueRange{hq, t},
                                                 chunkMask(nb, t), splatScalar(nb, vecF, ninf));
          scf::YieldOp::create(nb, ValueRange{arith::MaximumFOp::create(nb, acc[0], x)});
        });
    Value rowMax = vector::ReductionOp::create(b, vector::CombiningKind::MAXIMUMF,
                                               maxLoop.getResult(0));
    // p = exp(scale · (s − max)), stored in place; masked lanes contribute 0 to the sum.
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
    Value inv = arith::SelectOp::create(
        b, nonEmpty, arith::DivFOp::create(b, floatConst(b, f32, 1.0), sum), zeroF);

    // P·V: Dv / 8 accumulators of 8 lanes, one pass over the valid tokens.
    int64_t chunks = dv / kLanes;
    SmallVector<Value> init(chunks, splatScalar(b, vecF, zeroF));
    Type elem = valuesT.getElementType();
    auto pv = scf::ForOp::create(
        b, idx(b, 0), len, idx(b, 1), init,
        [&](OpBuilder &n, Location l, Value t, ValueRange acc) {
          ImplicitLocOpBuilder nb(l, n);
          Value p = memref::LoadOp::create(nb, scores, ValueRange{hq, t});
          if (vScale)
            p = arith::MulFOp::create(nb, p, memref::LoadOp::create(nb, vScale, ValueRange{t, h}));
          Value pb = splatScalar(nb, vecF, p);
          SmallVector<Value> next;
          for (int64_t k = 0; k < chunks; ++k) {
            auto vt = VectorType::get({kLanes}, elem);
            Value v = vector::LoadOp::create(nb, vt, values, ValueRange{t, h, idx(nb, k * kLanes)});
            if (elem.isF16())
              v = arith::ExtFOp::create(nb, vecF, v);
            else if (elem.isInteger(8))
              v = arith::SIToFPOp::create(nb, vecF, v);
            next.push_back(vector::FMAOp::create(nb, pb, v, acc[k]));
          }
          scf::YieldOp::create(nb, next);
        });
    Value invB = splatScalar(b, vecF, inv);
    for (int64_t k = 0; k < chunks; ++k)
      vector::StoreOp::create(b, arith::MulFOp::create(b, pv.getResult(k), invB), out,
                              ValueRange{hq, idx(b, k * kLanes)});
  });
  memref::DeallocOp::create(b, scores);
  memref::DeallocOp::create(b, params);
  memref::DeallocOp::create(b, lut);
  return success();
}
