//===- MergeLowering.cpp - attnk.merge.combine to NVVM --------------------===//
//
// What this file is: the lowering of `attnk.merge.combine`, the body of the split-KV combine
// kernels, which merge the partials (O, m, l) of a split-KV attention kernel with weights
// 2^(m_s − max m), divide by the weighted sum of l and write bf16. Two forms, picked by the
// launcher from the split count (the metadata's `min_splits`):
//   narrow (2 to 16 splits): one warp per packed row, every split's loads issued at once (one
//     round trip to L2);
//   wide (more): one packed row per CTA, sixteen warps each a sixteenth of the splits, merged by
//     the first warp through shared memory.
// With an `lse` operand either form also writes the merged row's natural log-sum-exp.
// The kernel around it (attnk.kernel ... programmatic) begins with griddepcontrol.wait:
// launchers start it as the programmatic dependent (PDL) of the attention kernel.
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

/// The dynamic shared-memory symbol of the module (the attention kernels declare the same).
static constexpr const char *kSharedSymbol = "__attn_dynamic_smem";

static void ensureSharedSymbol(OpBuilder &b, Location loc, Operation *module) {
  if (SymbolTable::lookupSymbolIn(module, kSharedSymbol))
    return;
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(&module->getRegion(0).front());
  auto arrTy = LLVM::LLVMArrayType::get(b.getI8Type(), 0);
  LLVM::GlobalOp::create(b, loc, arrTy, /*isConstant=*/false, LLVM::Linkage::External,
                         kSharedSymbol, Attribute(), /*alignment=*/1024, /*addrSpace=*/kShared);
}

namespace {
/// The problem of one merge.combine, from its output type and attributes.
struct Geometry {
  int64_t qLen, qHeads, kvHeads, pack, D;
  explicit Geometry(MergeCombineOp op) {
    auto out = cast<MemRefType>(op.getOut().getType());
    qLen = out.getDimSize(1);
    qHeads = out.getDimSize(2);
    D = out.getDimSize(3);
    kvHeads = op.getKvHeads();
    pack = op.getPack();
  }
  int64_t rows() const { return qLen * pack; }
  int64_t groupSize() const { return qHeads / kvHeads; }
  int64_t groupsPerKv() const { return groupSize() / pack; }
  int64_t groups() const { return kvHeads * groupsPerKv(); }
  /// Floats of one split's partial (O, m, l), padded to 4 (16-byte aligned O rows).
  int64_t workspaceFloatsPerSplit() const { return (rows() * (D + 2) + 3) / 4 * 4; }
};

/// What both forms share: where packed row `row`'s partials and output live.
struct Rows {
  KernelBuilder &k;
  const Geometry &p;
  Value ws, out, numSplits, grp, bIdx, row;
  Value lse; // [B, q_len, heads] f32, or null
  int64_t D, R, W;
  Value active, rowc, slot0, mOff, negInf;

  Rows(KernelBuilder &k, const Geometry &p, Value ws, Value out, Value numSplits, Value row)
      : k(k), p(p), ws(ws), out(out), numSplits(numSplits), grp(k.ctaidY()), bIdx(k.ctaidZ()),
        row(row), D(p.D), R(p.rows()), W(p.workspaceFloatsPerSplit()) {
    active = k.cmp(P::slt, row, k.i32(R));
    rowc = k.smin(row, k.i32(R - 1)); // rows past R compute on row R − 1 and write nothing
    slot0 = k.mul(k.add(k.mul(bIdx, p.groups()), grp), numSplits);
    mOff = k.mul(k.sext64(k.add(rowc, R * D)), int64_t(4));
    negInf = k.f32(-INFINITY);
  }
  /// Byte offset of split s's partial.
  Value splitBase(Value s) { return k.mul(k.sext64(k.add(slot0, s)), W * 4); }
  /// The output row (batch, query token, head) of the packed row.
  /// Lane 0 of the calling warp writes the row's log-sum-exp (max m + log2 of the merged sum,
  /// in base e; −inf for a row without keys) when the op has an lse and the row exists.
  void storeLse(Value lane, Value mMax, Value lSum) {
    if (!lse)
      return;
    Value v = k.select(k.fcmp(LLVM::FCmpPredicate::ogt, lSum, k.f32(0)),
                       k.fmul(k.fadd(mMax, k.log2(lSum)), k.f32(M_LN2)), negInf);
    k.ifThen(k.band(active, k.cmp(P::eq, lane, 0)),
             [&] { k.store(v, k.gep(lse, k.mul(k.sext64(outRow()), int64_t(4)))); });
  }
  Value outRow() {
    Value qi = k.udiv(row, p.pack);
    Value hkv = k.udiv(grp, p.groupsPerKv());
    Value head =
        k.add(k.add(k.mul(hkv, p.groupSize()), k.mul(k.urem(grp, p.groupsPerKv()), p.pack)),
              k.urem(row, p.pack));
    return k.add(k.mul(k.add(k.mul(bIdx, p.qLen), qi), p.qHeads), head);
  }
};
} // namespace

/// Narrow: warp w of the CTA merges packed row 4 · ctaid.x + w; lane l owns the row's D/32
/// columns from l · D/32 and holds split l's m and l. All 16 splits' O loads are issued before
/// the first use (splits past the last repeat it — cache hits — with weight 0).
static void lowerNarrow(KernelBuilder &k, const Geometry &p, Value ws, Value out,
                        Value numSplits, Value lse) {
  constexpr int64_t kSplits = MergeCombineOp::kNarrowSplits;
  Value tid = k.tidX();
  Value lane = k.band(tid, 31);
  Rows r(k, p, ws, out, numSplits, k.add(k.mul(k.ctaidX(), 4), k.lshr(tid, 5)));
  r.lse = lse;
  int64_t D = r.D, nf = D / 32, vec = std::min<int64_t>(nf, 4), chunks = nf / vec;
  Value last = k.add(r.numSplits, -1);
  Value col = k.mul(lane, nf);
  Type vt = VectorType::get({vec}, k.f32());
  SmallVector<Value> vs; // vs[j · chunks + c]: split j, columns col + 4c ..
  for (int64_t j = 0; j < kSplits; ++j) {
    Value base = r.splitBase(k.smin(k.i32(j), last));
    for (int64_t c = 0; c < chunks; ++c) {
      Value off = k.mul(k.sext64(k.add(k.mul(r.rowc, D), k.add(col, c * vec))), int64_t(4));
      vs.push_back(k.load(vt, k.gep(r.ws, k.add(base, off)), 4 * vec));
    }
  }
  Value valid = k.cmp(P::slt, lane, r.numSplits);
  Value base = r.splitBase(k.smin(lane, last));
  Value m = k.select(valid, k.load(k.f32(), k.gep(r.ws, k.add(base, r.mOff))), r.negInf);
  Value l = k.load(k.f32(), k.gep(r.ws, k.add(base, k.add(r.mOff, r.R * 4))));
  Value mMax = m;
  for (int64_t x = 16; x >= 1; x /= 2)
    mMax = k.fmax(mMax, k.shflXor(mMax, x));
  Value mUse = k.select(k.fcmp(LLVM::FCmpPredicate::oeq, mMax, r.negInf), k.f32(0), mMax);
  Value w = k.select(valid, k.exp2(k.fsub(m, mUse)), k.f32(0));
  Value lSum = k.fmul(w, l);
  for (int64_t x = 16; x >= 1; x /= 2)
    lSum = k.fadd(lSum, k.shflXor(lSum, x));
  SmallVector<Value> acc(nf, k.f32(0));
  for (int64_t j = 0; j < kSplits; ++j) {
    Value wj = k.shflIdx(w, k.i32(j)); // 0 past the last split (lanes ≥ num_splits)
    for (int64_t e = 0; e < nf; ++e)
      acc[e] = k.fma(wj, k.extract(vs[j * chunks + e / vec], e % vec), acc[e]);
  }
  Value inv = k.select(k.fcmp(LLVM::FCmpPredicate::ogt, lSum, k.f32(0)), k.fdiv(k.f32(1.0), lSum),
                       k.f32(0));
  r.storeLse(lane, mMax, lSum);
  k.ifThen(r.active, [&] {
    SmallVector<Value> words;
    for (int64_t e = 0; e < nf; e += 2)
      words.push_back(k.packBF16x2(k.fmul(acc[e], inv), k.fmul(acc[e + 1], inv)));
    Value off = k.mul(k.sext64(k.add(k.mul(r.outRow(), D), col)), int64_t(2));
    for (size_t i = 0; i < words.size(); i += 4) {
      size_t n = std::min<size_t>(4, words.size() - i);
      Value v = n == 1 ? words[i] : k.vector(ArrayRef<Value>(words).slice(i, n));
      k.store(v, k.gep(r.out, k.add(off, int64_t(8 * i))), 4 * n);
    }
  });
}

/// Wide, the weighted sums: warp q merges splits [q · c, (q + 1) · c) with
/// c = ceil(num_splits / 16); returns {Σ w · l, w · O over the lane's float4 columns}.
static SmallVector<Value> wideWarpSums(KernelBuilder &k, Rows &r, Value lane, Value q,
                                       Value mUse, Value sBeg, Value sEnd, int64_t perLane) {
  Value ws = r.ws, numSplits = r.numSplits, mOff = r.mOff;
  int64_t D = r.D, R = r.R;
  auto colOff = [&](int64_t t) {
    Value c4 = k.smin(k.add(lane, t * 32), k.i32(D / 4 - 1));
    return k.mul(k.sext64(k.add(k.mul(r.rowc, D), k.mul(c4, 4))), int64_t(4));
  };
  // Each lane weighs its splits (w = 2^(m − max), 0 past the warp's last split) and broadcasts
  // the weights; every lane adds w · O over its columns, 8 splits' loads at once.
  SmallVector<Value> inits(1 + 4 * perLane, k.f32(0));
  return k.forLoop(sBeg, sEnd, 32, inits, [&](Value s0, ValueRange st) {
    Value s = k.add(s0, lane);
    Value valid = k.cmp(P::slt, s, sEnd);
    Value base = r.splitBase(k.smin(s, k.add(numSplits, -1)));
    Value m = k.load(k.f32(), k.gep(ws, k.add(base, mOff)));
    Value l = k.load(k.f32(), k.gep(ws, k.add(base, k.add(mOff, R * 4))));
    Value w = k.select(valid, k.exp2(k.fsub(m, mUse)), k.f32(0));
    SmallVector<Value> next(st.begin(), st.end());
    next[0] = k.fma(w, l, st[0]);
    // Groups of 8 past the warp's last split are skipped (a warp-uniform branch).
    for (int64_t j0 = 0; j0 < 32; j0 += 8) {
      SmallVector<Value> o(next.begin() + 1, next.end());
      SmallVector<Value> upd = k.ifThenElse(
          k.cmp(P::slt, k.add(s0, j0), sEnd), TypeRange(ValueRange(o)),
          [&] {
            SmallVector<Value> wj, vs, cur(o);
            for (int64_t j = j0; j < j0 + 8; ++j) {
              wj.push_back(k.shflIdx(w, k.i32(j)));
              Value bj = r.splitBase(k.smin(k.add(s0, j), k.add(numSplits, -1)));
              for (int64_t t = 0; t < perLane; ++t)
                vs.push_back(
                    k.load(VectorType::get({4}, k.f32()), k.gep(ws, k.add(bj, colOff(t))), 16));
            }
            for (int64_t j = 0; j < 8; ++j)
              for (int64_t t = 0; t < perLane; ++t)
                for (int e = 0; e < 4; ++e)
                  cur[4 * t + e] = k.fma(wj[j], k.extract(vs[j * perLane + t], e), cur[4 * t + e]);
            return cur;
          },
          [&] { return o; });
      std::copy(upd.begin(), upd.end(), next.begin() + 1);
    }
    return next;
  });
}

/// Wide, the end: warp 0 merges the sixteen warps' slots (factors 2^(m_q − max), 0 for a warp
/// without keys) and writes the row.
static void wideMergeWarps(KernelBuilder &k, Rows &r, Value smem, Value lane, int64_t perLane) {
  constexpr int64_t kWarps = MergeCombineOp::kWideWarps;
  int64_t D = r.D, stride = (D + 4) * 4;
  Value negInf = r.negInf;
  auto slotOff = [&](Value slot) { return k.mul(slot, stride); };
  Value m[kWarps], mAll = negInf;
  for (int64_t i = 0; i < kWarps; ++i) {
    m[i] = k.load(k.f32(), k.gep(smem, k.add(slotOff(k.i32(i)), D * 4)));
    mAll = k.fmax(mAll, m[i]);
  }
  Value mAllUse = k.select(k.fcmp(LLVM::FCmpPredicate::oeq, mAll, negInf), k.f32(0), mAll);
  Value lSum = k.f32(0);
  SmallVector<Value> o(4 * perLane, k.f32(0));
  for (int64_t i = 0; i < kWarps; ++i) {
    Value si = slotOff(k.i32(i));
    Value f = k.select(k.fcmp(LLVM::FCmpPredicate::oeq, m[i], negInf), k.f32(0),
                       k.exp2(k.fsub(m[i], mAllUse)));
    lSum = k.fma(f, k.load(k.f32(), k.gep(smem, k.add(si, D * 4 + 4))), lSum);
    for (int64_t t = 0; t < perLane; ++t) {
      Value c4 = k.smin(k.add(lane, t * 32), k.i32(D / 4 - 1));
      Value v = k.load(VectorType::get({4}, k.f32()), k.gep(smem, k.add(si, k.mul(c4, 16))), 16);
      for (int e = 0; e < 4; ++e)
        o[4 * t + e] = k.fma(f, k.extract(v, e), o[4 * t + e]);
    }
  }
  Value inv = k.select(k.fcmp(LLVM::FCmpPredicate::ogt, lSum, k.f32(0)), k.fdiv(k.f32(1.0), lSum),
                       k.f32(0));
  Value rowBase = r.outRow();
  for (int64_t t = 0; t < perLane; ++t) {
    Value c4 = k.add(lane, t * 32);
    k.ifThen(k.cmp(P::slt, c4, k.i32(D / 4)), [&] {
      Value w0 = k.packBF16x2(k.fmul(o[4 * t], inv), k.fmul(o[4 * t + 1], inv));
      Value w1 = k.packBF16x2(k.fmul(o[4 * t + 2], inv), k.fmul(o[4 * t + 3], inv));
      Value off = k.mul(k.sext64(k.add(k.mul(rowBase, D), k.mul(c4, 4))), int64_t(2));
      k.store(k.vector({w0, w1}), k.gep(r.out, off), 8);
    });
  }
  r.storeLse(lane, mAll, lSum);
}

/// Wide: packed row ctaid.x; warp q merges its share of the splits, warp 0 the sixteen.
static void lowerWide(KernelBuilder &k, const Geometry &p, Value ws, Value out, Value numSplits,
                      Value lse) {
  constexpr int64_t kWarps = MergeCombineOp::kWideWarps;
  Value tid = k.tidX();
  Value lane = k.band(tid, 31), q = k.lshr(tid, 5);
  Rows r(k, p, ws, out, numSplits, k.ctaidX());
  r.lse = lse;
  Value negInf = r.negInf, mOff = r.mOff;
  int64_t D = r.D;
  int64_t perLane = (D / 4 + 31) / 32; // float4 columns per lane
  Value chunk = k.udiv(k.add(numSplits, kWarps - 1), k.i32(kWarps));
  Value sBeg = k.smin(k.mul(q, chunk), numSplits), sEnd = k.smin(k.add(sBeg, chunk), numSplits);
  // The warp's splits go over its lanes: lane l reads m of splits sBeg + l, + 32, …
  Value mMax = k.forLoop(sBeg, sEnd, 32, {negInf}, [&](Value s0, ValueRange st) {
    Value s = k.add(s0, lane);
    Value valid = k.cmp(P::slt, s, sEnd);
    Value split = k.smin(s, k.add(numSplits, -1));
    Value m = k.load(k.f32(), k.gep(ws, k.add(r.splitBase(split), mOff)));
    return SmallVector<Value>{k.select(valid, k.fmax(st[0], m), st[0])};
  })[0];
  for (int64_t x = 16; x >= 1; x /= 2)
    mMax = k.fmax(mMax, k.shflXor(mMax, x));
  Value mUse = k.select(k.fcmp(LLVM::FCmpPredicate::oeq, mMax, negInf), k.f32(0), mMax);
  SmallVector<Value> acc = wideWarpSums(k, r, lane, q, mUse, sBeg, sEnd, perLane);
  for (int64_t x = 16; x >= 1; x /= 2)
    acc[0] = k.fadd(acc[0], k.shflXor(acc[0], x));

  // The warps' (max, sum, O) meet in shared memory: slot q holds O[0 .. D) at float 0, the max
  // at D and the sum at D + 1 (stride D + 4: 16-byte aligned).
  Value smem = k.dynamicShared(kSharedSymbol);
  Value mySlot = k.mul(q, (D + 4) * 4);
  for (int64_t t = 0; t < perLane; ++t) {
    Value c4 = k.add(lane, t * 32);
    k.ifThen(k.cmp(P::slt, c4, k.i32(D / 4)), [&] {
      Value v = k.vector({acc[1 + 4 * t], acc[2 + 4 * t], acc[3 + 4 * t], acc[4 + 4 * t]});
      k.store(v, k.gep(smem, k.add(mySlot, k.mul(c4, 16))), 16);
    });
  }
  k.ifThen(k.cmp(P::eq, lane, 0), [&] {
    k.store(mMax, k.gep(smem, k.add(mySlot, D * 4)));
    k.store(acc[0], k.gep(smem, k.add(mySlot, D * 4 + 4)));
  });
  k.barrier(0, 0);
  k.ifThen(k.band(r.active, k.cmp(P::eq, q, 0)), [&] { wideMergeWarps(k, r, smem, lane, perLane); });
}

namespace {
struct MergeCombineLowering : OpConversionPattern<MergeCombineOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(MergeCombineOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Geometry p(op);
    if (op.getForm() == CombineForm::wide) {
      Operation *module = op->getParentOp();
      while (module && !isa<gpu::GPUModuleOp>(module))
        module = module->getParentOp();
      if (!module)
        return rewriter.notifyMatchFailure(op, "not inside a gpu.module");
      ensureSharedSymbol(rewriter, op.getLoc(), module);
    }
    KernelBuilder k(rewriter, op.getLoc());
    if (op.getForm() == CombineForm::narrow)
      lowerNarrow(k, p, adaptor.getWorkspace(), adaptor.getOut(), adaptor.getSplits(),
                  adaptor.getLse());
    else
      lowerWide(k, p, adaptor.getWorkspace(), adaptor.getOut(), adaptor.getSplits(),
                adaptor.getLse());
    rewriter.eraseOp(op);
    return success();
  }
};
} // namespace

void mlir::attnk::populateMergePatterns(const TypeConverter &tc, RewritePatternSet &patterns) {
  patterns.add<MergeCombineLowering>(tc, patterns.getContext());
}
