//===- Quantize.cpp - lowering of attn.quantize.append / .dynamic for CPUs -===//
//
// What this file is: the CPU quantize kernels as plain loops — per token, per scale group of the
// token's H·D row: reduce (amax, or min/max when asymmetric) over the finite values, compute the
// scale (rounded to the scheme's scale type) and zero point, then write the codes; static
// granularities (per_tensor, per_head, per_channel) read their calibrated scales instead. The
// arithmetic is qattn.quant's (docs/QuantSchemes.md), the same as the GPU kernels
// (AttnToNVVM/QuantizeKernel.cpp): x · (1/s) rounded half away from zero and clamped, or rounded to
// e4m3 (ties to even, saturating at ±448, done here in integer arithmetic since LLVM has no fp8).
// Non-finite inputs: NaN quantizes as 0, ±inf saturate, neither enters a scale. With `hadamard`
// each head's row is first rotated (x·H, the normalized Walsh–Hadamard matrix, qattn.quant.hadamard's
// butterflies in the same order) into a scratch row, non-finite inputs as 0. Appended tokens
// whose cache position falls outside [0, capacity) are not written. Also attn.quantize.mla_append:
// the same tile arithmetic (e4m3, 1 x C tiles) written into FlashMLA's byte format.
//
//===----------------------------------------------------------------------===//

#include "CPUCodegen.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::cpu;

namespace {
/// Everything the loops need about the scheme (its arithmetic is QuantAttr's).
struct Scheme {
  QuantAttr q;
  Granularity gran;
  bool asym, e4m3, u8;
  Type scaleType;
  int64_t heads, headDim, groupElems;
  double lo() const { return q.getCodeMin(); }
  double hi() const { return q.getCodeMax(); }
  double minScale() const { return q.getMinScale(); }
  bool dynamicScales() const { return !q.hasStaticScales(); }
  int64_t rowElems() const { return heads * headDim; }
  int64_t groupsPerToken() const { return rowElems() / groupElems; }
};
} // namespace

/// A 1-D view of an identity-layout memref.
static Value flat(ImplicitLocOpBuilder &b, Value m) {
  auto t = cast<MemRefType>(m.getType());
  if (t.getRank() == 1)
    return m;
  SmallVector<ReassociationIndices> all(1);
  for (int64_t d = 0; d < t.getRank(); ++d)
    all[0].push_back(d);
  return memref::CollapseShapeOp::create(b, m, all);
}

static Value index(ImplicitLocOpBuilder &b, Value v) {
  return arith::IndexCastOp::create(b, b.getIndexType(), v);
}

static Value mulAdd(ImplicitLocOpBuilder &b, Value x, Value y, Value z) {
  return arith::AddIOp::create(b, arith::MulIOp::create(b, x, y), z);
}

/// f32 → float8 E4M3FN bits: round to nearest even, saturate at ±448 (inputs are not NaN).
static Value toE4M3(ImplicitLocOpBuilder &b, Value y) {
  Type i32 = b.getI32Type();
  Value bits = arith::BitcastOp::create(b, i32, y);
  Value sign = arith::AndIOp::create(b, arith::ShRUIOp::create(b, bits, intConst(b, i32, 24)),
                                     intConst(b, i32, 0x80));
  Value a = arith::AndIOp::create(b, bits, intConst(b, i32, 0x7FFFFFFF));
  // Subnormal codes (|y| < 2^-6): multiples of 2^-9.
  Value ay = arith::BitcastOp::create(b, b.getF32Type(), a);
  Value sub = arith::FPToSIOp::create(
      b, i32, math::RoundEvenOp::create(b, arith::MulFOp::create(b, ay, floatConst(b, ay.getType(), 512.0))));
  // Normal codes: drop 20 mantissa bits with ties to even, rebias the exponent (127 → 7).
  Value odd = arith::AndIOp::create(b, arith::ShRUIOp::create(b, a, intConst(b, i32, 20)),
                                    intConst(b, i32, 1));
  Value r = arith::AddIOp::create(b, arith::AddIOp::create(b, a, intConst(b, i32, 0x7FFFF)), odd);
  Value n = arith::SubIOp::create(b, arith::ShRUIOp::create(b, r, intConst(b, i32, 20)),
                                  intConst(b, i32, 120 << 3));
  n = arith::MinSIOp::create(b, n, intConst(b, i32, 0x7E));
  Value isSub = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, a, intConst(b, i32, 0x3C800000));
  Value code = arith::OrIOp::create(b, arith::SelectOp::create(b, isSub, sub, n), sign);
  return arith::TruncIOp::create(b, b.getI8Type(), code);
}

/// f32 → bfloat16 bits (i16), ties to even; NaN becomes 0x7FFF.
static Value toBF16Bits(ImplicitLocOpBuilder &b, Value x) {
  Type i32 = b.getI32Type();
  Value bits = arith::BitcastOp::create(b, i32, x);
  Value odd = arith::AndIOp::create(b, arith::ShRUIOp::create(b, bits, intConst(b, i32, 16)),
                                    intConst(b, i32, 1));
  Value r = arith::AddIOp::create(b, arith::AddIOp::create(b, bits, intConst(b, i32, 0x7FFF)), odd);
  Value nan = arith::CmpFOp::create(b, arith::CmpFPredicate::UNO, x, x);
  r = arith::SelectOp::create(b, nan, intConst(b, i32, 0x7FFF0000), r);
  return arith::TruncIOp::create(b, b.getI16Type(),
                                 arith::ShRUIOp::create(b, r, intConst(b, i32, 16)));
}

/// Loops over batch × new tokens and runs `body(b, batch index, token index, cache row)` for the
/// tokens whose row (positions[b] + t, or t without positions) falls inside [0, capacity).
static void forEachAppendedRow(
    ImplicitLocOpBuilder &b, Value positions, Value batch, Value newTokens, Value capacity,
    function_ref<void(ImplicitLocOpBuilder &, Value, Value, Value)> body) {
  forLoop(b, idx(b, 0), batch, 1, [&](ImplicitLocOpBuilder &b1, Value bi) {
    Value start = idx(b1, 0);
    if (positions)
      start = index(b1, memref::LoadOp::create(b1, positions, ValueRange{bi}));
    forLoop(b1, idx(b1, 0), newTokens, 1, [&](ImplicitLocOpBuilder &b2, Value ti) {
      Value row = arith::AddIOp::create(b2, start, ti);
      Value inRange = arith::AndIOp::create(
          b2, arith::CmpIOp::create(b2, arith::CmpIPredicate::sge, row, idx(b2, 0)),
          arith::CmpIOp::create(b2, arith::CmpIPredicate::slt, row, capacity));
      scf::IfOp::create(b2, inRange, [&](OpBuilder &ob, Location l) {
        ImplicitLocOpBuilder b3(l, ob);
        body(b3, bi, ti, row);
        scf::YieldOp::create(b3);
      });
    });
  });
}

/// A scale as stored: rounded to nearest, then up one ulp when that fell below the f32 value
/// (a stored scale never makes a value of its group saturate).
static Value storedScale(ImplicitLocOpBuilder &nb, Type scaleType, Value s32) {
  if (scaleType.isF32())
    return s32;
  Type i16 = nb.getI16Type();
  Value h;
  if (scaleType.isF16()) {
    h = arith::TruncFOp::create(nb, scaleType, s32);
  } else { // bf16 by hand (scales are finite), not through a compiler-rt call
    h = arith::BitcastOp::create(nb, scaleType, toBF16Bits(nb, s32));
  }
  Value below = arith::CmpFOp::create(nb, arith::CmpFPredicate::OLT,
                                      arith::ExtFOp::create(nb, nb.getF32Type(), h), s32);
  Value hb = arith::BitcastOp::create(nb, i16, h);
  Value up = arith::AddIOp::create(nb, hb, intConst(nb, i16, 1));
  return arith::BitcastOp::create(nb, scaleType, arith::SelectOp::create(nb, below, up, hb));
}

/// The normalized Walsh-Hadamard rotation of each head's `dim` elements of the f32 row
/// `scratch` (`rowElemCount` elements, also as the index `rowElems`), in place.
static void rotateHeads(ImplicitLocOpBuilder &nb, Value scratch, Value rowElems,
                        int64_t rowElemCount, int64_t dim) {
  Type f32 = nb.getF32Type();
  // Stage `span` pairs (j, j + span), j = (i' / span) · 2 span + i' mod span for i' < D/2 in
  // every head's row (i = row · D/2 + i').
  for (int64_t span = 1; span < dim; span *= 2)
    forLoop(nb, idx(nb, 0), idx(nb, rowElemCount / 2), 1,
            [&](ImplicitLocOpBuilder &b5, Value i) {
              Value within = arith::RemUIOp::create(b5, i, idx(b5, dim / 2));
              Value rowBase = arith::MulIOp::create(
                  b5, arith::DivUIOp::create(b5, i, idx(b5, dim / 2)), idx(b5, dim));
              Value j = arith::AddIOp::create(
                  b5, rowBase,
                  mulAdd(b5, arith::DivUIOp::create(b5, within, idx(b5, span)), idx(b5, 2 * span),
                         arith::RemUIOp::create(b5, within, idx(b5, span))));
              Value j2 = arith::AddIOp::create(b5, j, idx(b5, span));
              Value x = memref::LoadOp::create(b5, scratch, ValueRange{j});
              Value y = memref::LoadOp::create(b5, scratch, ValueRange{j2});
              memref::StoreOp::create(b5, arith::AddFOp::create(b5, x, y), scratch, ValueRange{j});
              memref::StoreOp::create(b5, arith::SubFOp::create(b5, x, y), scratch, ValueRange{j2});
            });
  Value norm = floatConst(nb, f32, static_cast<float>(1.0 / std::sqrt(double(dim))));
  forLoop(nb, idx(nb, 0), rowElems, 1, [&](ImplicitLocOpBuilder &b5, Value e) {
    Value x = memref::LoadOp::create(b5, scratch, ValueRange{e});
    memref::StoreOp::create(b5, arith::MulFOp::create(b5, x, norm), scratch, ValueRange{e});
  });
}

LogicalResult cpu::emitQuantize(ImplicitLocOpBuilder &b, Value src, Value positions, Value dst,
                                Value scales, Value zeros, QuantAttr quant, bool hadamard) {
  Type f32 = b.getF32Type(), i8 = b.getI8Type();
  Type code = quant.getElementType();
  FailureOr<int64_t> h = staticDim(b, src, 2, "head count"), d = staticDim(b, src, 3, "head_dim");
  if (failed(h) || failed(d))
    return failure();
  Scheme s{quant, quant.getGranularity(), quant.isAsymmetric(), isa<Float8E4M3FNType>(code),
           code.isUnsignedInteger(8), quant.getScaleType(), *h, *d,
           quant.getGroupElems(*h, *d)};
  if (!(code.isInteger(8) || (s.e4m3 && !s.asym)) || (code.isUnsignedInteger(8) && !s.asym))
    return emitError(b.getLoc()) << "not supported yet by convert-attn-to-cpu: " << code
                                 << (s.asym ? " asymmetric" : " symmetric")
                                 << " codes (i8 or e4m3 symmetric; i8 or ui8 asymmetric)";

  Value batch = dim(b, src, 0), newTokens = dim(b, src, 1), capacity = dim(b, dst, 1);
  Value src1 = flat(b, src), dst1 = flat(b, dst), sc1 = flat(b, scales);
  Value zp1 = zeros ? flat(b, zeros) : Value();
  Value rowElems = idx(b, s.rowElems()), groupElems = idx(b, s.groupElems);
  Value zeroF = floatConst(b, f32, 0.0), inf = floatConst(b, f32, INFINITY);

  auto stored = [&](ImplicitLocOpBuilder &nb, Value s32) {
    return storedScale(nb, s.scaleType, s32);
  };
  auto used = [&](ImplicitLocOpBuilder &nb, Value st) -> Value {
    return st.getType().isF32() ? st : arith::ExtFOp::create(nb, f32, st).getResult();
  };
  auto zeroAsF32 = [&](ImplicitLocOpBuilder &nb, Value z) -> Value {
    return s.u8 ? arith::UIToFPOp::create(nb, f32, z).getResult()
                : arith::SIToFPOp::create(nb, f32, z).getResult();
  };
  auto inverse = [&](ImplicitLocOpBuilder &nb, Value sc) -> Value {
    return arith::DivFOp::create(nb, floatConst(nb, f32, 1.0), sc);
  };
  auto clampF = [&](ImplicitLocOpBuilder &nb, Value x) -> Value {
    Value lo = floatConst(nb, f32, s.lo()), hi = floatConst(nb, f32, s.hi());
    return arith::MinNumFOp::create(nb, arith::MaxNumFOp::create(nb, x, lo), hi);
  };
  // Element e of the source, as f32 with NaN → 0.
  auto loadX = [&](ImplicitLocOpBuilder &nb, Value e) -> Value {
    Value x = memref::LoadOp::create(nb, src1, ValueRange{e});
    if (!x.getType().isF32())
      x = arith::ExtFOp::create(nb, f32, x);
    Value nan = arith::CmpFOp::create(nb, arith::CmpFPredicate::UNO, x, x);
    return arith::SelectOp::create(nb, nan, zeroF, x);
  };
  auto finiteOr0 = [&](ImplicitLocOpBuilder &nb, Value x) -> Value {
    Value fin = arith::CmpFOp::create(nb, arith::CmpFPredicate::OLT, math::AbsFOp::create(nb, x), inf);
    return arith::SelectOp::create(nb, fin, x, zeroF);
  };

  // `hadamard`: the token's row, rotated head by head, in a scratch row the groups then read.
  Value scratch = hadamard ? memref::AllocaOp::create(b, MemRefType::get({s.rowElems()}, f32))
                                 .getResult()
                           : Value();
  auto rotateRow = [&](ImplicitLocOpBuilder &nb, Value srcTok) {
    Value base = arith::MulIOp::create(nb, srcTok, rowElems);
    forLoop(nb, idx(nb, 0), rowElems, 1, [&](ImplicitLocOpBuilder &b5, Value e) {
      Value x = finiteOr0(b5, loadX(b5, arith::AddIOp::create(b5, base, e)));
      memref::StoreOp::create(b5, x, scratch, ValueRange{e});
    });
    rotateHeads(nb, scratch, rowElems, s.rowElems(), s.headDim);
  };
  // Element e of group g (at `inRow` of the token's row): the source's, or the rotated row's.
  auto value = [&](ImplicitLocOpBuilder &nb, Value srcBase, Value inRow, Value e) -> Value {
    if (scratch)
      return memref::LoadOp::create(nb, scratch, ValueRange{arith::AddIOp::create(nb, inRow, e)});
    return loadX(nb, arith::AddIOp::create(nb, srcBase, e));
  };

  forEachAppendedRow(b, positions, batch, newTokens, capacity, [&](ImplicitLocOpBuilder &b3,
                                                                  Value bi, Value ti, Value row) {
        Value srcTok = mulAdd(b3, bi, newTokens, ti), dstTok = mulAdd(b3, bi, capacity, row);
        if (scratch)
          rotateRow(b3, srcTok);
        forLoop(b3, idx(b3, 0), idx(b3, s.groupsPerToken()), 1, [&](ImplicitLocOpBuilder &b4,
                                                                   Value g) {
          Value inRow = arith::MulIOp::create(b4, g, groupElems);
          Value srcBase = mulAdd(b4, srcTok, rowElems, inRow);
          Value dstBase = mulAdd(b4, dstTok, rowElems, inRow);
          Value scale, zp; // f32, one per group (null for per_channel: per element)
          if (s.dynamicScales()) {
            Value mn = zeroF, mx = zeroF;
            auto red = scf::ForOp::create(
                b4, idx(b4, 0), groupElems, idx(b4, 1), ValueRange{mn, mx},
                [&](OpBuilder &o, Location l2, Value e, ValueRange acc) {
                  ImplicitLocOpBuilder nb(l2, o);
                  Value x = finiteOr0(nb, value(nb, srcBase, inRow, e));
                  Value lo = s.asym ? arith::MinNumFOp::create(nb, acc[0], x).getResult()
                                    : acc[0];
                  Value hi = s.asym ? arith::MaxNumFOp::create(nb, acc[1], x).getResult()
                                    : arith::MaxNumFOp::create(nb, acc[1],
                                                               math::AbsFOp::create(nb, x))
                                          .getResult();
                  scf::YieldOp::create(nb, ValueRange{lo, hi});
                });
            mn = red.getResult(0);
            mx = red.getResult(1);
            Value range = s.asym ? arith::SubFOp::create(b4, mx, mn).getResult() : mx;
            Value qspan = floatConst(b4, f32, s.asym ? s.hi() - s.lo() : s.hi());
            Value s32 = arith::MaxNumFOp::create(b4, arith::DivFOp::create(b4, range, qspan),
                                                 floatConst(b4, f32, s.minScale()));
            Value st = stored(b4, s32);
            scale = used(b4, st);
            Value sIdx = mulAdd(b4, dstTok, idx(b4, s.groupsPerToken()), g);
            memref::StoreOp::create(b4, st, sc1, ValueRange{sIdx});
            if (s.asym) {
              Value z = arith::SubFOp::create(b4, floatConst(b4, f32, s.lo()),
                                              arith::DivFOp::create(b4, mn, scale));
              zp = clampF(b4, math::RoundOp::create(b4, z));
              Value zi = arith::TruncIOp::create(b4, i8, arith::FPToSIOp::create(b4, b4.getI32Type(), zp));
              memref::StoreOp::create(b4, zi, zp1, ValueRange{sIdx});
            }
          } else if (s.gran != Granularity::per_channel) {
            Value at = s.gran == Granularity::per_tensor ? idx(b4, 0) : g; // per_head: g = head
            scale = used(b4, memref::LoadOp::create(b4, sc1, ValueRange{at}));
            if (s.asym)
              zp = zeroAsF32(b4, memref::LoadOp::create(b4, zp1, ValueRange{at}));
          }
          forLoop(b4, idx(b4, 0), groupElems, 1, [&](ImplicitLocOpBuilder &b5, Value e) {
            Value x = value(b5, srcBase, inRow, e);
            Value sc = scale, z = zp;
            if (!sc) { // per_channel [H, D]: element (g, e) of the head's row
              Value at = arith::AddIOp::create(b5, inRow, e);
              sc = used(b5, memref::LoadOp::create(b5, sc1, ValueRange{at}));
              if (s.asym)
                z = zeroAsF32(b5, memref::LoadOp::create(b5, zp1, ValueRange{at}));
            }
            Value y = arith::MulFOp::create(b5, x, inverse(b5, sc));
            Value c;
            if (s.e4m3) {
              c = toE4M3(b5, y);
            } else {
              if (s.asym)
                y = arith::AddFOp::create(b5, y, z);
              Value r = clampF(b5, math::RoundOp::create(b5, y));
              c = arith::TruncIOp::create(b5, i8, arith::FPToSIOp::create(b5, b5.getI32Type(), r));
            }
            memref::StoreOp::create(b5, c, dst1,
                                    ValueRange{arith::AddIOp::create(b5, dstBase, e)});
          });
        });
  });
  return success();
}

LogicalResult cpu::emitQuantizeMLA(ImplicitLocOpBuilder &b, Value src, Value positions,
                                   Value cache, int64_t dv, int64_t rope, int64_t tile) {
  Type f32 = b.getF32Type(), i8 = b.getI8Type(), i32 = b.getI32Type();
  int64_t dk = dv + rope, tiles = dv / tile, bytes = dv + 4 * tiles + 2 * rope;
  Value batch = dim(b, src, 0), newTokens = dim(b, src, 1), capacity = dim(b, cache, 1);
  Value src1 = flat(b, src), dst1 = flat(b, cache);
  Value zeroF = floatConst(b, f32, 0.0), inf = floatConst(b, f32, INFINITY);
  auto loadF32 = [&](ImplicitLocOpBuilder &nb, Value e) -> Value {
    Value x = memref::LoadOp::create(nb, src1, ValueRange{e});
    return x.getType().isF32() ? x : arith::ExtFOp::create(nb, f32, x).getResult();
  };
  // Little-endian bytes of an integer at byte offset `at`.
  auto storeBytes = [&](ImplicitLocOpBuilder &nb, Value v, int64_t n, Value at) {
    Value w = arith::ExtUIOp::create(nb, i32, v);
    for (int64_t k = 0; k < n; ++k) {
      Value byte = arith::TruncIOp::create(
          nb, i8, arith::ShRUIOp::create(nb, w, intConst(nb, i32, 8 * k)));
      memref::StoreOp::create(nb, byte, dst1, ValueRange{arith::AddIOp::create(nb, at, idx(nb, k))});
    }
  };
  forEachAppendedRow(b, positions, batch, newTokens, capacity, [&](ImplicitLocOpBuilder &b3,
                                                                  Value bi, Value ti, Value row) {
        Value srcBase = arith::MulIOp::create(b3, mulAdd(b3, bi, newTokens, ti), idx(b3, dk));
        Value dstBase = arith::MulIOp::create(b3, mulAdd(b3, bi, capacity, row), idx(b3, bytes));
        forLoop(b3, idx(b3, 0), idx(b3, tiles), 1, [&](ImplicitLocOpBuilder &b4, Value g) {
          Value tileSrc = mulAdd(b4, g, idx(b4, tile), srcBase);
          Value tileDst = mulAdd(b4, g, idx(b4, tile), dstBase);
          // amax over the finite values (NaN and ±inf do not enter the scale).
          auto red = scf::ForOp::create(
              b4, idx(b4, 0), idx(b4, tile), idx(b4, 1), ValueRange{zeroF},
              [&](OpBuilder &o, Location l2, Value e, ValueRange acc) {
                ImplicitLocOpBuilder nb(l2, o);
                Value a = math::AbsFOp::create(nb, loadF32(nb, arith::AddIOp::create(nb, tileSrc, e)));
                Value fin = arith::CmpFOp::create(nb, arith::CmpFPredicate::OLT, a, inf);
                a = arith::SelectOp::create(nb, fin, a, zeroF);
                scf::YieldOp::create(nb, ValueRange{arith::MaxNumFOp::create(nb, acc[0], a)});
              });
          Value sc = arith::MaxNumFOp::create(
              b4, arith::DivFOp::create(b4, red.getResult(0), floatConst(b4, f32, 448.0)),
              floatConst(b4, f32, 1e-8));
          Value scAt = mulAdd(b4, g, idx(b4, 4), arith::AddIOp::create(b4, dstBase, idx(b4, dv)));
          Value scBits = arith::BitcastOp::create(b4, i32, sc);
          for (int64_t k = 0; k < 4; ++k)
            memref::StoreOp::create(
                b4, arith::TruncIOp::create(b4, i8, arith::ShRUIOp::create(b4, scBits,
                                                                           intConst(b4, i32, 8 * k))),
                dst1, ValueRange{arith::AddIOp::create(b4, scAt, idx(b4, k))});
          Value inv = arith::DivFOp::create(b4, floatConst(b4, f32, 1.0), sc);
          forLoop(b4, idx(b4, 0), idx(b4, tile), 1, [&](ImplicitLocOpBuilder &b5, Value e) {
            Value x = loadF32(b5, arith::AddIOp::create(b5, tileSrc, e));
            Value nan = arith::CmpFOp::create(b5, arith::CmpFPredicate::UNO, x, x);
            x = arith::SelectOp::create(b5, nan, zeroF, x);
            Value c = toE4M3(b5, arith::MulFOp::create(b5, x, inv));
            memref::StoreOp::create(b5, c, dst1, ValueRange{arith::AddIOp::create(b5, tileDst, e)});
          });
        });
        Value ropeDst = arith::AddIOp::create(b3, dstBase, idx(b3, dv + 4 * tiles));
        forLoop(b3, idx(b3, 0), idx(b3, rope), 1, [&](ImplicitLocOpBuilder &b4, Value r) {
          Value x = loadF32(b4, arith::AddIOp::create(b4, arith::AddIOp::create(b4, srcBase,
                                                                               idx(b4, dv)), r));
          storeBytes(b4, toBF16Bits(b4, x), 2, mulAdd(b4, r, idx(b4, 2), ropeDst));
        });
  });
  return success();
}
