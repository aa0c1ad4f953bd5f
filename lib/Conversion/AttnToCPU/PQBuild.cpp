//===- PQBuild.cpp - lowering of attn.pq.lut and attn.pq.encode -----------===//
//
// What this file is: the two NoMAD steps that are not lookups, as plain loops (they run once per
// query or once per key, not once per (query, key)):
//   * attn.pq.lut — dot products of each sub-query with its 16..64 centroids, quantized to u8 with
//     a per-sub-quantizer minimum and one shared step so that sums of entries dequantize with one
//     affine map: score ≈ step · Σ lut + Σ_s min_s, step = max_s (max_s − min_s) / 255;
//   * attn.pq.encode — nearest centroid (L2, lowest index on ties) of each key sub-vector, written
//     into the blocked, transposed code cache (4-bit codes: key j of a block in the low nibble of
//     byte j mod 16 for j < 16, the high nibble for j ≥ 16).
//
//===----------------------------------------------------------------------===//

#include "CPUCodegen.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::cpu;

/// Σ_j a(j) · b(j) over j < n, accumulated in order from 0 (mul then add, no contraction).
static Value dotLoop(ImplicitLocOpBuilder &b, int64_t n,
                     function_ref<std::pair<Value, Value>(ImplicitLocOpBuilder &, Value)> ab,
                     bool squaredDistance) {
  Value zero = floatConst(b, b.getF32Type(), 0.0);
  auto loop = scf::ForOp::create(
      b, idx(b, 0), idx(b, n), idx(b, 1), ValueRange{zero},
      [&](OpBuilder &nested, Location l, Value j, ValueRange acc) {
        ImplicitLocOpBuilder nb(l, nested);
        auto [x, y] = ab(nb, j);
        Value term;
        if (squaredDistance) {
          Value diff = arith::SubFOp::create(nb, x, y);
          term = arith::MulFOp::create(nb, diff, diff);
        } else {
          term = arith::MulFOp::create(nb, x, y);
        }
        scf::YieldOp::create(nb, ValueRange{arith::AddFOp::create(nb, acc[0], term)});
      });
  return loop.getResult(0);
}

static Value loadF32(ImplicitLocOpBuilder &b, Value m, ValueRange indices) {
  Value v = memref::LoadOp::create(b, m, indices);
  if (!v.getType().isF32())
    v = arith::ExtFOp::create(b, b.getF32Type(), v);
  return v;
}

LogicalResult cpu::emitLUT(ImplicitLocOpBuilder &b, PQAttr pq, Value query, Value codebooks,
                           Value lut, Value params) {
  FailureOr<int64_t> sub = staticDim(b, codebooks, 1, "number of sub-quantizers");
  if (failed(sub))
    return failure();
  int64_t numSub = *sub, c = pq.getCentroids(), dsub = pq.getDsub();
  Type f32 = b.getF32Type();
  Value numQ = dim(b, query, 0);
  Value ratio = arith::DivUIOp::create(b, numQ, dim(b, codebooks, 0));
  // Dot products and per-sub-quantizer minima of one query head.
  Value dots = memref::AllocaOp::create(b, MemRefType::get({numSub, c}, f32));
  Value mins = memref::AllocaOp::create(b, MemRefType::get({numSub}, f32));

  forLoop(b, idx(b, 0), numQ, 1, [&](ImplicitLocOpBuilder &b, Value hq) {
    Value h = arith::DivUIOp::create(b, hq, ratio);
    Value zero = floatConst(b, f32, 0.0);
    auto pass1 = scf::ForOp::create(
        b, idx(b, 0), idx(b, numSub), idx(b, 1), ValueRange{zero, zero},
        [&](OpBuilder &nested, Location l, Value s, ValueRange acc) {
          ImplicitLocOpBuilder nb(l, nested);
          Value inf = floatConst(nb, f32, std::numeric_limits<double>::infinity());
          Value ninf = floatConst(nb, f32, -std::numeric_limits<double>::infinity());
          auto minmax = scf::ForOp::create(
              nb, idx(nb, 0), idx(nb, c), idx(nb, 1), ValueRange{inf, ninf},
              [&](OpBuilder &n2, Location l2, Value ci, ValueRange mm) {
                ImplicitLocOpBuilder bb(l2, n2);
                Value base = arith::MulIOp::create(bb, s, idx(bb, dsub));
                Value dot = dotLoop(
                    bb, dsub,
                    [&](ImplicitLocOpBuilder &b3, Value j) {
                      Value qj = loadF32(b3, query, {hq, arith::AddIOp::create(b3, base, j)});
                      Value cj = loadF32(b3, codebooks, {h, s, ci, j});
                      return std::make_pair(qj, cj);
                    },
                    /*squaredDistance=*/false);
                memref::StoreOp::create(bb, dot, dots, ValueRange{s, ci});
                scf::YieldOp::create(bb, ValueRange{arith::MinimumFOp::create(bb, mm[0], dot),
                                                    arith::MaximumFOp::create(bb, mm[1], dot)});
              });
          Value mn = minmax.getResult(0), mx = minmax.getResult(1);
          memref::StoreOp::create(nb, mn, mins, ValueRange{s});
          Value range = arith::MaximumFOp::create(nb, acc[0], arith::SubFOp::create(nb, mx, mn));
          scf::YieldOp::create(nb, ValueRange{range, arith::AddFOp::create(nb, acc[1], mn)});
        });
    Value range = pass1.getResult(0), biasSum = pass1.getResult(1);
    Value step = arith::DivFOp::create(b, range, floatConst(b, f32, 255.0));
    Value positive = arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, range, zero);
    Value inv = arith::SelectOp::create(
        b, positive, arith::DivFOp::create(b, floatConst(b, f32, 255.0), range), zero);
    memref::StoreOp::create(b, step, params, ValueRange{hq, idx(b, 0)});
    memref::StoreOp::create(b, biasSum, params, ValueRange{hq, idx(b, 1)});
    forLoop(b, idx(b, 0), idx(b, numSub), 1, [&](ImplicitLocOpBuilder &b, Value s) {
      Value mn = memref::LoadOp::create(b, mins, ValueRange{s});
      forLoop(b, idx(b, 0), idx(b, c), 1, [&](ImplicitLocOpBuilder &b, Value ci) {
        Value dot = memref::LoadOp::create(b, dots, ValueRange{s, ci});
        Value x = arith::MulFOp::create(b, arith::SubFOp::create(b, dot, mn), inv);
        Value r = math::FloorOp::create(b, arith::AddFOp::create(b, x, floatConst(b, f32, 0.5)));
        r = arith::MinimumFOp::create(b, r, floatConst(b, f32, 255.0));
        Value q = arith::FPToUIOp::create(b, b.getI32Type(), r);
        memref::StoreOp::create(b, arith::TruncIOp::create(b, b.getI8Type(), q), lut,
                                ValueRange{hq, s, ci});
      });
    });
  });
  return success();
}

LogicalResult cpu::emitEncode(ImplicitLocOpBuilder &b, PQAttr pq, Value keys, Value codebooks,
                              Value offset, Value codes) {
  FailureOr<int64_t> sub = staticDim(b, codebooks, 1, "number of sub-quantizers");
  if (failed(sub))
    return failure();
  int64_t numSub = *sub, c = pq.getCentroids(), dsub = pq.getDsub();
  bool fourBit = c == 16;
  Type f32 = b.getF32Type(), i8 = b.getI8Type();
  Value capacity = arith::MulIOp::create(b, dim(b, codes, 1), idx(b, 32));
  Value numKeys = dim(b, keys, 0);
  Value numHeads = dim(b, keys, 1);

  forLoop(b, idx(b, 0), numKeys, 1, [&](ImplicitLocOpBuilder &b, Value i) {
    Value pos = arith::AddIOp::create(b, offset, i);
    Value inRange = arith::AndIOp::create(
        b, arith::CmpIOp::create(b, arith::CmpIPredicate::sge, pos, idx(b, 0)),
        arith::CmpIOp::create(b, arith::CmpIPredicate::slt, pos, capacity));
    scf::IfOp::create(b, inRange, [&](OpBuilder &nested, Location l) {
      ImplicitLocOpBuilder b(l, nested);
      Value blk = arith::DivUIOp::create(b, pos, idx(b, 32));
      Value j = arith::RemUIOp::create(b, pos, idx(b, 32));
      forLoop(b, idx(b, 0), numHeads, 1, [&](ImplicitLocOpBuilder &b, Value h) {
        forLoop(b, idx(b, 0), idx(b, numSub), 1, [&](ImplicitLocOpBuilder &b, Value s) {
          Value base = arith::MulIOp::create(b, s, idx(b, dsub));
          Value inf = floatConst(b, f32, std::numeric_limits<double>::infinity());
          Value zeroIdx = idx(b, 0);
          auto best = scf::ForOp::create(
              b, idx(b, 0), idx(b, c), idx(b, 1), ValueRange{inf, zeroIdx},
              [&](OpBuilder &n2, Location l2, Value ci, ValueRange acc) {
                ImplicitLocOpBuilder bb(l2, n2);
                Value d = dotLoop(
                    bb, dsub,
                    [&](ImplicitLocOpBuilder &b3, Value jj) {
                      Value k = loadF32(b3, keys, {i, h, arith::AddIOp::create(b3, base, jj)});
                      Value cb = loadF32(b3, codebooks, {h, s, ci, jj});
                      return std::make_pair(k, cb);
                    },
                    /*squaredDistance=*/true);
                Value better = arith::CmpFOp::create(bb, arith::CmpFPredicate::OLT, d, acc[0]);
                scf::YieldOp::create(bb, ValueRange{arith::SelectOp::create(bb, better, d, acc[0]),
                                                    arith::SelectOp::create(bb, better, ci, acc[1])});
              });
          Value code = arith::IndexCastUIOp::create(b, i8, best.getResult(1));
          if (!fourBit) {
            memref::StoreOp::create(b, code, codes, ValueRange{h, blk, s, j});
            return;
          }
          Value col = arith::RemUIOp::create(b, j, idx(b, 16));
          Value old = memref::LoadOp::create(b, codes, ValueRange{h, blk, s, col});
          Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, j, idx(b, 16));
          Value low = arith::OrIOp::create(
              b, arith::AndIOp::create(b, old, intConst(b, i8, 0xF0)), code);
          Value high = arith::OrIOp::create(
              b, arith::AndIOp::create(b, old, intConst(b, i8, 0x0F)),
              arith::ShLIOp::create(b, code, intConst(b, i8, 4)));
          memref::StoreOp::create(b, arith::SelectOp::create(b, first, low, high), codes,
                                  ValueRange{h, blk, s, col});
        });
      });
      scf::YieldOp::create(b);
    });
  });
  return success();
}
