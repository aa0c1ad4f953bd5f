//===- QuantizeLowering.cpp - the quantize ops to NVVM --------------------===//
//
// What this file is: the lowering of the quantize-kernel ops — `attnk.group_index`,
// `attnk.load_groups`, `attnk.convert_tile` of loaded chunks (widening), `attnk.hadamard`,
// `attnk.group_scales`, `attnk.quantize_tile` and `attnk.store_groups`. An f32
// `!attnk.groups` value is, per thread, its lane's elements as loaded (what the scale
// reductions read through a finiteness test, which NaN fails too) followed by the same with NaN
// as 0 (what the codes are made of); a codes value is one i8 per element. Each op emits its
// part in the order the kernel runs it; values every op derives from the thread id (warp, lane)
// are recomputed where needed, and LLVM's CSE keeps the first.
//
// The whole-token row forms (`group_index whole_tokens`, `attnk.token_rows`, loads from and
// stores into a token's row, contiguous groups: MLA's cache quantization) are patterns of their
// own. A contiguous f32 groups value is its lane's elements once, as loaded (widened as each
// 16-byte vector arrives); the scales and codes take NaN as 0 where they read them (the second
// select of a value is CSE's); contiguous codes and bf16 values are i32 words.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"

#include "../AttnToNVVM/KernelBuilder.h"
#include "attn/Dialect/AttnKernel/IR/AttnKernel.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attnk;
using namespace mlir::attn::nvvm;
using P = LLVM::ICmpPredicate;
using FP = LLVM::FCmpPredicate;

namespace {
/// The two halves of an f32 groups value: as loaded, and with NaN as 0.
struct Values {
  SmallVector<Value> x, xc;
  explicit Values(ValueRange regs) {
    size_t n = regs.size() / 2;
    x.assign(regs.begin(), regs.begin() + n);
    xc.assign(regs.begin() + n, regs.end());
  }
  SmallVector<Value> flat() const {
    SmallVector<Value> all(x);
    all.append(xc.begin(), xc.end());
    return all;
  }
};

Value fabs(KernelBuilder &k, Value x) { return LLVM::FAbsOp::create(k.builder(), k.getLoc(), x); }
Value fmin(KernelBuilder &k, Value x, Value y) {
  return LLVM::MinNumOp::create(k.builder(), k.getLoc(), x, y);
}
Value clampF(KernelBuilder &k, Value x, double lo, double hi) {
  return fmin(k, k.fmax(x, k.f32(lo)), k.f32(hi));
}

/// A scale as stored (`scaleT`: rounded to nearest, then up one ulp if that fell below the f32
/// value, so no value saturates) and as used (f32, the stored value).
Value storedScale(KernelBuilder &k, Type scaleT, Value s32) {
  if (scaleT.isF32())
    return s32;
  OpBuilder &b = k.builder();
  Value h = LLVM::FPTruncOp::create(b, k.getLoc(), scaleT, s32);
  Value below = k.fcmp(FP::olt, LLVM::FPExtOp::create(b, k.getLoc(), k.f32(), h), s32);
  Value bits = k.bitcast(k.i16(), h);
  return k.bitcast(scaleT, k.select(below, k.add(bits, 1), bits));
}
Value usedScale(KernelBuilder &k, Type scaleT, Value stored) {
  return scaleT.isF32() ? stored
                        : LLVM::FPExtOp::create(k.builder(), k.getLoc(), k.f32(), stored).getResult();
}

/// Element of the group held in register j of the lane of rank `lane`.
Value elemIndex(KernelBuilder &k, GroupsType t, Value lane, int64_t j) {
  int64_t V = t.getVec(), L = t.getLanes();
  return k.add(k.mul(k.add(lane, (j / V) * L), V), j % V);
}

/// The number of groups: batch · new_tokens · groups per token.
/// The lane × register walk of the group loads and stores: a lane's registers are `chunks`
/// vectors. Strided groups: chunk c is elements (lane + c·lanes)·vec onwards past the group's
/// first element `first` (i64), `elemBytes` each, from `ptr`. Contiguous groups: the lane's
/// bytes start at lane·laneBytes past `ptr`, chunk c at c·chunkBytes past those. `visit` gets
/// the chunk and its address (built where it asks for it).
struct ChunkWalk {
  int64_t chunks, lanes = 1, vec = 1, elemBytes = 1;
  bool contiguous = false;
  int64_t laneBytes = 0, chunkBytes = 0;
};
void walkChunks(KernelBuilder &k, const ChunkWalk &w, Value ptr, Value first, Value lane,
                function_ref<void(int64_t, function_ref<Value()>)> visit) {
  Value laneBase = w.contiguous ? k.gep(ptr, k.zext64(k.mul(lane, w.laneBytes))) : Value();
  for (int64_t c = 0; c < w.chunks; ++c) {
    if (w.contiguous) {
      visit(c, [&] { return k.gep(laneBase, c * w.chunkBytes); });
      continue;
    }
    Value e = k.add(first, k.zext64(k.mul(k.add(lane, c * w.lanes), w.vec)));
    visit(c, [&] { return k.gep(ptr, k.mul(e, w.elemBytes)); });
  }
}

Value numGroups(KernelBuilder &k, Value batch, Value newTokens, int64_t groupsPerToken) {
  return k.mul(k.mul(batch, newTokens), k.i32(groupsPerToken));
}

struct GroupIndexLowering : OpConversionPattern<GroupIndexOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(GroupIndexOp op, OpAdaptor a,
                                ConversionPatternRewriter &rewriter) const override {
    if (op.getWholeTokens())
      return rewriter.notifyMatchFailure(op, "a whole-token index");
    KernelBuilder k(rewriter, op.getLoc());
    int64_t L = op.getLanes(), S = 32 / L, gpt = op.getGroupsPerToken();
    Value tid = k.tidX();
    Value warp = k.lshr(tid, 5), lane = k.band(tid, 31);
    Value slot = k.udiv(lane, L), sub = k.urem(lane, L);
    Value last = k.add(numGroups(k, a.getBatch(), a.getNewTokens(), gpt), -1);
    Value warpBase = k.mul(k.add(k.mul(k.ctaidX(), 4), warp), op.getSlots() * S);
    Value g = k.add(k.add(warpBase, op.getSlot() * S), slot);
    Value gl = k.smin(g, last); // a clamped, always valid address for the tail
    Value tok = k.udiv(gl, gpt), gin = k.urem(gl, gpt);
    rewriter.replaceOp(op, {g, tok, gin, sub});
    return success();
  }
};

struct LoadGroupsLowering : OpConversionPattern<LoadGroupsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(LoadGroupsOp op, OpAdaptor a,
                                ConversionPatternRewriter &rewriter) const override {
    auto src = cast<MemRefType>(op.getSrc().getType());
    if (src.getRank() == 1)
      return rewriter.notifyMatchFailure(op, "a load from a token's row");
    KernelBuilder k(rewriter, op.getLoc());
    auto res = cast<VectorType>(op.getResult().getType());
    int64_t I = res.getDimSize(0), V = res.getDimSize(1), L = op.getLanes(), C = I * V * L;
    int64_t r = src.getRank(); // [batch, tokens, heads, D] or a paged append's [tokens, heads, D]
    int64_t HD = src.getDimSize(r - 2) * src.getDimSize(r - 1);
    int64_t bytes = src.getElementTypeBitWidth() / 8;
    Type vecT = VectorType::get({V}, res.getElementType());
    Value base = k.add(k.mul(k.zext64(a.getToken()), HD), k.zext64(k.mul(a.getGroup(), C)));
    SmallVector<Value> raw;
    walkChunks(k, {I, L, V, bytes}, a.getSrc(), base, a.getLane(), [&](int64_t, auto addr) {
      raw.push_back(k.loadInvariant(vecT, addr(), V * bytes));
    });
    rewriter.replaceOpWithMultiple(op, {raw});
    return success();
  }
};

/// convert_tile of loaded chunks: f32 values, and the same with NaN as 0.
struct WidenLowering : OpConversionPattern<ConvertTileOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ConvertTileOp op, OneToNOpAdaptor a,
                                ConversionPatternRewriter &rewriter) const override {
    if (!isa<VectorType>(op.getSource().getType()))
      return rewriter.notifyMatchFailure(op, "not a widening of loaded chunks");
    KernelBuilder k(rewriter, op.getLoc());
    Value zero = k.f32(0);
    Values v(ValueRange{});
    for (Value r : a.getSource()) {
      auto vt = cast<VectorType>(r.getType());
      Value f = vt.getElementType().isF32()
                    ? r
                    : LLVM::FPExtOp::create(rewriter, op.getLoc(),
                                            VectorType::get(vt.getShape(), k.f32()), r)
                          .getResult();
      for (int64_t e = 0; e < vt.getDimSize(0); ++e) {
        Value x = k.extract(f, e);
        v.x.push_back(x);
        v.xc.push_back(k.select(k.fcmp(FP::uno, x, x), zero, x));
      }
    }
    rewriter.replaceOpWithMultiple(op, {v.flat()});
    return success();
  }
};

/// x ← x·H on each head's row, non-finite values as 0 first. Element e of the group is x[j] with
/// e = (lane + (j / V) · L) · V + j mod V: a butterfly over an element bit below V pairs
/// registers, one over the next log2 L bits the lanes (shfl.xor; the upper lane keeps partner −
/// own, exactly a − b), one above registers j / V apart — bit by bit upwards as
/// qattn.quant.hadamard goes, so the values agree to the last bit.
struct HadamardLowering : OpConversionPattern<HadamardOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(HadamardOp op, OneToNOpAdaptor a,
                                ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    GroupsType t = op.getTile().getType();
    int64_t V = t.getVec(), L = t.getLanes(), size = op.getSize();
    Value lane = a.getLane().front();
    Value zero = k.f32(0), inf = k.f32(INFINITY);
    SmallVector<Value> xs = Values(a.getTile()).x;
    for (Value &v : xs)
      v = k.select(k.fcmp(FP::olt, fabs(k, v), inf), v, zero);
    for (int64_t bit = 1; bit < size; bit *= 2) {
      if (bit >= V && bit < V * L)
        k.laneButterflies(xs, bit / V, k.cmp(P::ne, k.band(lane, bit / V), 0));
      else
        k.butterflies(xs, size_t(bit < V ? bit : bit / L));
    }
    Value norm = k.f32(static_cast<float>(1.0 / std::sqrt(double(size))));
    for (Value &v : xs)
      v = k.fmul(v, norm);
    SmallVector<Value> all(xs);
    all.append(xs.begin(), xs.end());
    rewriter.replaceOpWithMultiple(op, {all});
    return success();
  }
};
} // namespace

namespace {
/// A group's shuffle reduction over its lanes (max, or min).
Value reduceLanes(KernelBuilder &k, Value v, int64_t lanes, bool isMax) {
  for (int64_t m = 1; m < lanes; m *= 2) {
    Value o = k.shflXor(v, m);
    v = isMax ? k.fmax(v, o) : fmin(k, v, o);
  }
  return v;
}

/// Scales computed from the values: {scale, zero point (asymmetric)}.
SmallVector<Value> computeScales(KernelBuilder &k, attn::QuantAttr q, int64_t lanes,
                                 ArrayRef<Value> x) {
  Type scaleT = q.getScaleType();
  double lo = q.getCodeMin(), hi = q.getCodeMax();
  Value zero = k.f32(0), inf = k.f32(INFINITY);
  if (!q.isAsymmetric()) {
    Value amax = zero;
    for (Value v : x) {
      Value a = fabs(k, v);
      amax = k.fmax(amax, k.select(k.fcmp(FP::olt, a, inf), a, zero));
    }
    amax = reduceLanes(k, amax, lanes, true);
    Value s = k.fmax(k.fdiv(amax, k.f32(hi)), k.f32(q.getMinScale()));
    return {usedScale(k, scaleT, storedScale(k, scaleT, s))};
  }
  Value mn = zero, mx = zero;
  for (Value v : x) {
    Value fin = k.select(k.fcmp(FP::olt, fabs(k, v), inf), v, zero);
    mn = fmin(k, mn, fin);
    mx = k.fmax(mx, fin);
  }
  mn = reduceLanes(k, mn, lanes, false);
  mx = reduceLanes(k, mx, lanes, true);
  Value s = k.fmax(k.fdiv(k.fsub(mx, mn), k.f32(hi - lo)), k.f32(q.getMinScale()));
  s = usedScale(k, scaleT, storedScale(k, scaleT, s));
  Value round = LLVM::RoundOp::create(k.builder(), k.getLoc(), k.fsub(k.f32(lo), k.fdiv(mn, s)));
  return {s, clampF(k, round, lo, hi)};
}

struct GroupScalesLowering : OpConversionPattern<GroupScalesOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(GroupScalesOp op, OneToNOpAdaptor a,
                                ConversionPatternRewriter &rewriter) const override {
    GroupsType t = op.getTile().getType();
    if (t.getContiguous())
      return rewriter.notifyMatchFailure(op, "contiguous groups");
    KernelBuilder k(rewriter, op.getLoc());
    attn::QuantAttr q = op.getQuant();
    Values v(a.getTile());
    if (!q.hasStaticScales()) {
      SmallVector<Value> r = computeScales(k, q, t.getLanes(), v.x);
      SmallVector<SmallVector<Value>> results = {{r[0]}};
      if (r.size() > 1)
        results.push_back({r[1]});
      rewriter.replaceOpWithMultiple(op, results);
      return success();
    }
    // Read: per_tensor [1], per_head [H], per_channel [H, D]; a group is one head's row.
    attn::Granularity g = q.getGranularity();
    bool perChannel = g == attn::Granularity::per_channel;
    Type scaleT = q.getScaleType();
    int64_t scaleBytes = scaleT.getIntOrFloatBitWidth() / 8;
    Value gin = a.getGroup().front(), scales = a.getScaleSrc().front();
    Value lane = perChannel ? a.getLane().front() : Value();
    size_t n = v.x.size();
    SmallVector<Value> sc(n), zp(n);
    for (size_t j = 0; j < n; ++j) {
      Value index = g == attn::Granularity::per_tensor ? k.i32(0)
                    : !perChannel ? gin
                                  : k.add(k.mul(gin, t.getElems()), elemIndex(k, t, lane, j));
      if (j > 0 && !perChannel) {
        sc[j] = sc[0];
        zp[j] = zp[0];
        continue;
      }
      sc[j] = usedScale(k, scaleT,
                        k.loadInvariant(scaleT, k.gep(scales, k.mul(k.zext64(index), scaleBytes)),
                                        scaleBytes));
      if (q.isAsymmetric()) {
        Value z = k.loadInvariant(k.builder().getI8Type(),
                                  k.gep(a.getZeroSrc().front(), k.zext64(index)), 1);
        zp[j] = q.getElementType().isUnsignedInteger(8)
                    ? LLVM::UIToFPOp::create(rewriter, op.getLoc(), k.f32(), z).getResult()
                    : LLVM::SIToFPOp::create(rewriter, op.getLoc(), k.f32(), z).getResult();
      }
    }
    auto pack = [&](ArrayRef<Value> per) {
      if (!perChannel)
        return SmallVector<Value>{per[0]};
      SmallVector<Value> all(per);
      all.append(per.begin(), per.end());
      return all;
    };
    SmallVector<SmallVector<Value>> results = {pack(sc)};
    if (q.isAsymmetric())
      results.push_back(pack(zp));
    rewriter.replaceOpWithMultiple(op, results);
    return success();
  }
};

/// Codes: x · (1/s) (+ z), clamped, rounded half away from zero as trunc(y + copysign(0.5⁻, y))
/// — exact for every float, with 0.5⁻ = 0.49999997 the float just below one half; e4m3 by
/// cvt.rn.satfinite.e4m3x2.f32 (first operand → high byte).
struct QuantizeTileLowering : OpConversionPattern<QuantizeTileOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(QuantizeTileOp op, OneToNOpAdaptor a,
                                ConversionPatternRewriter &rewriter) const override {
    if (op.getTile().getType().getContiguous())
      return rewriter.notifyMatchFailure(op, "contiguous groups");
    KernelBuilder k(rewriter, op.getLoc());
    attn::QuantAttr q = op.getQuant();
    bool e4m3 = isa<Float8E4M3FNType>(q.getElementType());
    bool perChannel = q.getGranularity() == attn::Granularity::per_channel;
    double lo = q.getCodeMin(), hi = q.getCodeMax();
    Values v(a.getTile());
    ValueRange scale = a.getScale(), zeros = a.getZeroPoint();
    auto at = [&](ValueRange r, size_t j) { return perChannel ? r[j] : r[0]; };
    Type i8 = rewriter.getI8Type();
    SmallVector<Value> codes;
    Value inv;
    for (size_t j = 0; j < v.xc.size(); ++j) {
      if (!inv || perChannel) // = 1.0f / s, correctly rounded
        inv = k.intrinsic("llvm.nvvm.rcp.rn.f", k.f32(), {at(scale, j)});
      Value y = k.fmul(v.xc[j], inv);
      if (e4m3) {
        codes.push_back(y);
        continue;
      }
      if (q.isAsymmetric())
        y = k.fadd(y, at(zeros, j));
      y = clampF(k, y, lo, hi);
      Value half = LLVM::CopySignOp::create(rewriter, op.getLoc(), k.f32(0.49999997f), y);
      Value r = LLVM::FPToSIOp::create(rewriter, op.getLoc(), k.i32(), k.fadd(y, half));
      codes.push_back(k.trunc(i8, r));
    }
    if (e4m3) {
      SmallVector<Value> bytes;
      for (size_t j = 0; j < codes.size(); j += 2) {
        Value pair = k.intrinsic("llvm.nvvm.ff.to.e4m3x2.rn", k.i16(), {codes[j + 1], codes[j]});
        bytes.push_back(k.trunc(i8, pair));
        bytes.push_back(k.trunc(i8, k.lshr(pair, int64_t(8))));
      }
      codes = bytes;
    }
    rewriter.replaceOpWithMultiple(op, {codes});
    return success();
  }
};

struct StoreGroupsLowering : OpConversionPattern<StoreGroupsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(StoreGroupsOp op, OneToNOpAdaptor a,
                                ConversionPatternRewriter &rewriter) const override {
    auto dest = cast<MemRefType>(op.getDest().getType());
    if (dest.getRank() != 4)
      return rewriter.notifyMatchFailure(op, "a store into a token's row");
    KernelBuilder k(rewriter, op.getLoc());
    GroupsType t = op.getCodes().getType();
    int64_t V = t.getVec(), L = t.getLanes(), C = t.getElems(), I = t.getChunks();
    int64_t HD = dest.getDimSize(2) * dest.getDimSize(3), gpt = HD / C;
    auto one = [](ValueRange r) { return r.empty() ? Value() : r.front(); };
    Value tok = one(a.getToken()), gin = one(a.getGroupInToken()), sub = one(a.getLane());
    Value newTokens = one(a.getNewTokens()), capacity = one(a.getCapacity());
    Value dst = one(a.getDest()), pos = one(a.getPositions());
    ValueRange codes = a.getCodes();
    Value slot, bIdx, row, inRange; // the token's slot (paged), or its batch element and row
    if (Value slots = one(a.getSlots())) {
      // A paged cache: the row is the token's slot, any i64; outside [0, capacity) is skipped.
      Value total = numGroups(k, one(a.getBatch()), newTokens, gpt);
      Type slotT = cast<MemRefType>(op.getSlots().getType()).getElementType();
      int64_t slotBytes = slotT.getIntOrFloatBitWidth() / 8;
      slot = k.loadInvariant(slotT, k.gep(slots, k.mul(k.zext64(tok), slotBytes)), slotBytes);
      if (slotBytes == 4)
        slot = LLVM::SExtOp::create(rewriter, op.getLoc(), k.i64(), slot);
      inRange =
          k.band(k.cmp(P::slt, one(a.getGroup()), total),
                 k.band(k.cmp(P::sge, slot, k.i64(0)), k.cmp(P::slt, slot, k.zext64(capacity))));
    } else {
      bIdx = k.udiv(tok, newTokens);
      Value i = k.urem(tok, newTokens);
      row = i;
      if (pos)
        row = k.add(k.loadInvariant(k.i32(), k.gep(pos, k.mul(k.zext64(bIdx), int64_t(4)))), i);
      Value total = numGroups(k, one(a.getBatch()), newTokens, gpt);
      inRange = k.band(k.cmp(P::slt, one(a.getGroup()), total),
                       k.band(k.cmp(P::sge, row, k.i32(0)), k.cmp(P::slt, row, capacity)));
    }
    k.ifThen(inRange, [&] {
      Value tokRow =
          slot ? slot : k.add(k.mul(k.zext64(bIdx), k.zext64(capacity)), k.zext64(row));
      Value base = k.add(k.mul(tokRow, HD), k.zext64(k.mul(gin, C)));
      walkChunks(k, {I, L, V}, dst, base, sub, [&](int64_t c, auto addr) {
        SmallVector<Value> v(codes.begin() + c * V, codes.begin() + (c + 1) * V);
        Value vec = k.vector(v);
        k.store(vec, addr(), V);
      });
      Value scale = one(a.getScale());
      if (!scale)
        return;
      k.ifThen(k.cmp(P::eq, sub, k.i32(0)), [&] {
        Type scaleT = cast<MemRefType>(op.getScaleDest().getType()).getElementType();
        int64_t scaleBytes = scaleT.getIntOrFloatBitWidth() / 8;
        Value idx = k.add(k.mul(tokRow, gpt), k.zext64(gin));
        k.store(storedScale(k, scaleT, scale),
                k.gep(one(a.getScaleDest()), k.mul(idx, scaleBytes)), scaleBytes);
        if (Value z = one(a.getZeroPoint()))
          k.store(k.trunc(rewriter.getI8Type(),
                          LLVM::FPToSIOp::create(rewriter, op.getLoc(), k.i32(), z)),
                  k.gep(one(a.getZeroDest()), idx), 1);
      });
    });
    rewriter.eraseOp(op);
    return success();
  }
};
} // namespace

namespace {
/// group_index whole_tokens: warp w of CTA x holds token 4x + w; the lane rank is the lane.
struct WholeTokenIndexLowering : OpConversionPattern<GroupIndexOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(GroupIndexOp op, OpAdaptor,
                                ConversionPatternRewriter &rewriter) const override {
    if (!op.getWholeTokens())
      return rewriter.notifyMatchFailure(op, "not a whole-token index");
    KernelBuilder k(rewriter, op.getLoc());
    Value tid = k.tidX();
    Value warp = k.lshr(tid, 5), lane = k.band(tid, 31);
    Value tok = k.add(k.mul(k.ctaidX(), 4), warp);
    Value gin = k.udiv(lane, int64_t(op.getLanes()));
    Value g = k.add(k.mul(tok, int64_t(op.getGroupsPerToken())), gin);
    rewriter.replaceOp(op, {g, tok, gin, lane});
    return success();
  }
};

/// token_rows: the token's batch element and cache row, then the body on the two rows.
struct TokenRowsLowering : OpConversionPattern<TokenRowsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(TokenRowsOp op, OpAdaptor a,
                                ConversionPatternRewriter &rewriter) const override {
    Block *body = &op.getBody().front();
    TypeConverter::SignatureConversion sig(body->getNumArguments());
    if (failed(getTypeConverter()->convertSignatureArgs(body->getArgumentTypes(), sig)))
      return rewriter.notifyMatchFailure(op, "row types without a lowering");
    body = rewriter.applySignatureConversion(body, sig, getTypeConverter());
    KernelBuilder k(rewriter, op.getLoc());
    auto src = cast<MemRefType>(op.getSrc().getType());
    int64_t dk = src.getDimSize(2), eb = src.getElementTypeBitWidth() / 8;
    int64_t rowBytes = cast<MemRefType>(op.getCache().getType()).getDimSize(2);
    Value tok = a.getToken(), newTokens = a.getNewTokens(), capacity = a.getCapacity();
    Value bIdx = k.udiv(tok, k.smax(newTokens, k.i32(1)));
    Value i = k.urem(tok, k.smax(newTokens, k.i32(1)));
    Value valid = k.cmp(P::slt, tok, k.mul(a.getBatch(), newTokens));
    k.ifThen(valid, [&] {
      Value row = k.add(
          k.loadInvariant(k.i32(), k.gep(a.getPositions(), k.mul(k.zext64(bIdx), int64_t(4)))), i);
      Value inCache = k.band(k.cmp(P::sge, row, 0), k.cmp(P::slt, row, capacity));
      // The whole warp takes the same branch: the body may shuffle.
      k.ifThen(inCache, [&] {
        Value srcRow = k.gep(a.getSrc(), k.mul(k.mul(k.zext64(tok), dk), eb));
        Value dstRow =
            k.gep(a.getCache(),
                  k.mul(k.add(k.mul(k.zext64(bIdx), k.zext64(capacity)), k.zext64(row)), rowBytes));
        rewriter.inlineBlockBefore(body, rewriter.getInsertionBlock(), rewriter.getInsertionPoint(),
                                   {srcRow, dstRow});
      });
    });
    rewriter.eraseOp(op);
    return success();
  }
};

/// load_groups from a row: 16-byte vectors from offset + lane · C / L, each widened as it comes.
struct RowLoadLowering : OpConversionPattern<LoadGroupsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(LoadGroupsOp op, OpAdaptor a,
                                ConversionPatternRewriter &rewriter) const override {
    auto src = cast<MemRefType>(op.getSrc().getType());
    if (src.getRank() != 1)
      return rewriter.notifyMatchFailure(op, "not a load from a token's row");
    KernelBuilder k(rewriter, op.getLoc());
    auto t = cast<GroupsType>(op.getResult().getType());
    Type elem = src.getElementType();
    int64_t eb = src.getElementTypeBitWidth() / 8, n = t.getLaneElems(), per = 16 / eb;
    ChunkWalk w{n * eb / 16};
    w.contiguous = true;
    w.laneBytes = n * eb;
    w.chunkBytes = 16;
    SmallVector<Value> xs;
    walkChunks(k, w, k.gep(a.getSrc(), int64_t(op.getOffset()) * eb), {}, a.getLane(),
               [&](int64_t, auto addr) {
                 Value v = k.loadInvariant(VectorType::get({per}, elem), addr(), 16);
                 for (int64_t e = 0; e < per; ++e) {
                   Value x = k.extract(v, e);
                   if (!elem.isF32())
                     x = LLVM::FPExtOp::create(rewriter, op.getLoc(), k.f32(), x);
                   xs.push_back(x);
                 }
               });
    rewriter.replaceOpWithMultiple(op, {xs});
    return success();
  }
};

Value nanAsZero(KernelBuilder &k, Value x) { return k.select(k.fcmp(FP::uno, x, x), k.f32(0), x); }

/// group_scales of contiguous groups: max(amax / q_max, min_scale) over the finite values.
struct RowScalesLowering : OpConversionPattern<GroupScalesOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(GroupScalesOp op, OneToNOpAdaptor a,
                                ConversionPatternRewriter &rewriter) const override {
    GroupsType t = op.getTile().getType();
    if (!t.getContiguous())
      return rewriter.notifyMatchFailure(op, "not contiguous groups");
    KernelBuilder k(rewriter, op.getLoc());
    attn::QuantAttr q = op.getQuant();
    Value amax = k.f32(0), inf = k.f32(INFINITY);
    for (Value v : a.getTile()) {
      Value x = fabs(k, nanAsZero(k, v));
      amax = k.fmax(amax, k.select(k.fcmp(FP::olt, x, inf), x, k.f32(0)));
    }
    amax = reduceLanes(k, amax, t.getLanes(), true);
    Value s = k.fmax(k.fdiv(amax, k.f32(q.getCodeMax())), k.f32(q.getMinScale()));
    rewriter.replaceOp(op, s);
    return success();
  }
};

/// quantize_tile of contiguous groups into e4m3 codes, four to a word (first code lowest).
struct RowQuantizeLowering : OpConversionPattern<QuantizeTileOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(QuantizeTileOp op, OneToNOpAdaptor a,
                                ConversionPatternRewriter &rewriter) const override {
    if (!op.getTile().getType().getContiguous())
      return rewriter.notifyMatchFailure(op, "not contiguous groups");
    KernelBuilder k(rewriter, op.getLoc());
    Value inv = k.intrinsic("llvm.nvvm.rcp.rn.f", k.f32(), {a.getScale().front()});
    SmallVector<Value> x;
    for (Value v : a.getTile())
      x.push_back(nanAsZero(k, v));
    Type i32 = k.i32();
    SmallVector<Value> words;
    for (size_t j = 0; j + 3 < x.size(); j += 4) { // cvt.rn.satfinite.e4m3x2.f32: first → high
      Value lo = k.intrinsic("llvm.nvvm.ff.to.e4m3x2.rn", k.i16(),
                             {k.fmul(x[j + 1], inv), k.fmul(x[j], inv)});
      Value hi = k.intrinsic("llvm.nvvm.ff.to.e4m3x2.rn", k.i16(),
                             {k.fmul(x[j + 3], inv), k.fmul(x[j + 2], inv)});
      words.push_back(k.bor(LLVM::ZExtOp::create(rewriter, op.getLoc(), i32, lo),
                            k.shl(LLVM::ZExtOp::create(rewriter, op.getLoc(), i32, hi), 16)));
    }
    rewriter.replaceOpWithMultiple(op, {words});
    return success();
  }
};

/// convert_tile of contiguous f32 groups to bf16 words (cvt.rn; NaN → 0x7FFF explicitly: a bf16
/// source would otherwise keep its own NaN bits, the f32 round trip folding away).
struct RowRoundLowering : OpConversionPattern<ConvertTileOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ConvertTileOp op, OneToNOpAdaptor a,
                                ConversionPatternRewriter &rewriter) const override {
    if (!isa<GroupsType>(op.getSource().getType()))
      return rewriter.notifyMatchFailure(op, "not a rounding of groups");
    KernelBuilder k(rewriter, op.getLoc());
    ValueRange r = a.getSource();
    SmallVector<Value> w;
    for (size_t j = 0; j + 1 < r.size(); j += 2) {
      Value word = k.packBF16x2(r[j], r[j + 1]);
      for (int h = 0; h < 2; ++h) {
        Value nan = k.fcmp(FP::uno, r[j + h], r[j + h]);
        Value canon = k.bor(k.band(word, k.i32(h ? 0x0000FFFF : -65536 /* 0xFFFF0000 */)),
                            k.i32(h ? 0x7FFF0000 : 0x7FFF));
        word = k.select(nan, canon, word);
      }
      w.push_back(word);
    }
    rewriter.replaceOpWithMultiple(op, {w});
    return success();
  }
};

/// store_groups into a row: the lane's words, and the group's f32 scale from its first lane.
struct RowStoreLowering : OpConversionPattern<StoreGroupsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(StoreGroupsOp op, OneToNOpAdaptor a,
                                ConversionPatternRewriter &rewriter) const override {
    if (cast<MemRefType>(op.getDest().getType()).getRank() != 1)
      return rewriter.notifyMatchFailure(op, "not a store into a token's row");
    KernelBuilder k(rewriter, op.getLoc());
    GroupsType t = op.getCodes().getType();
    int64_t L = t.getLanes();
    int64_t laneBytes = t.getLaneElems() * t.getElementType().getIntOrFloatBitWidth() / 8;
    Value row = a.getDest().front(), lane = a.getLane().front();
    ChunkWalk w{1};
    w.contiguous = true;
    w.laneBytes = w.chunkBytes = laneBytes;
    Value words = k.vector(SmallVector<Value>(a.getCodes()));
    walkChunks(k, w, k.gep(row, int64_t(op.getOffset())), {}, lane, [&](int64_t, auto addr) {
      k.store(words, addr(), std::min<int64_t>(16, laneBytes));
    });
    if (!a.getScale().empty()) {
      Value s = a.getScale().front();
      k.ifThen(k.cmp(P::eq, k.band(lane, L - 1), 0), [&] {
        k.store(s, k.gep(k.gep(row, int64_t(op.getScaleOffset())),
                         k.zext64(k.lshr(lane, int64_t(llvm::Log2_64(L / 4))))));
      });
    }
    rewriter.eraseOp(op);
    return success();
  }
};
} // namespace

void mlir::attnk::populateQuantizePatterns(const TypeConverter &tc, RewritePatternSet &patterns) {
  patterns.add<GroupIndexLowering, LoadGroupsLowering, WidenLowering, HadamardLowering,
               GroupScalesLowering, QuantizeTileLowering, StoreGroupsLowering>(
      tc, patterns.getContext());
  patterns.add<WholeTokenIndexLowering, TokenRowsLowering, RowLoadLowering, RowScalesLowering,
               RowQuantizeLowering, RowRoundLowering, RowStoreLowering>(tc, patterns.getContext());
}
