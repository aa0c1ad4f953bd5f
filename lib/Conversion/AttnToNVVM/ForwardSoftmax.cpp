//===- ForwardSoftmax.cpp - the online softmax of one S tile --------------===//
//
// What this file is: softmaxTile (ForwardKernelImpl.h), the consumers' softmax step over one
// Q·Kᵀ accumulator fragment: the query, key and softmax scales, ALiBi, the length and causal
// masks, the new row maxima and sums, and P — packed for the P·V WGMMA or left in floats.
//
//===----------------------------------------------------------------------===//

#include "ForwardKernelImpl.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::nvvm;
using P = LLVM::ICmpPredicate;

static int64_t accCol(int64_t i) { return (i / 4) * 8 + (i % 2); }

SoftmaxOut mlir::attn::nvvm::softmaxTile(KernelBuilder &k, Ctx &c, const Frag &f,
                                         ArrayRef<Value> acc, Value scOff, Value tileStart,
                                         Value mOld[2], Value lOld[2], bool masked, bool packP,
                                         ArrayRef<Value> rowF, Value log2R, Value invR) {
  const ForwardPlan &p = c.p;
  int64_t nacc = p.tileN / 2;
  Value negInf = k.f32(-INFINITY);
  // Scale (and mask) column pair by column pair: each thread owns columns colBase + 8·cb + {0,1};
  // the scales are loaded where they are used to keep register pressure down.
  SmallVector<Value> s(nacc);
  SmallVector<Value> rowVals[2];
  // bf16 caches have no staged scales: every key's factor is softmax_scale · log2(e). With
  // one K scale per tile (plan.kTileScale) the caller applied it with the query scales.
  bool raw = !rowF.empty();
  bool perKeyK = p.hasScales() && !p.kTileScale();
  Value kFactor = p.hasScales() ? Value() : k.f32(p.softmaxScale * kLog2e);
  for (int64_t cb = 0; cb < p.tileN / 8; ++cb) {
    Value col = k.add(f.colBase, cb * 8);
    Value kv2 =
        perKeyK ? k.load(k.vec2f32Type(), sptr(k, c, k.add(scOff, k.mul(col, 4))), 8) : Value();
    for (int64_t i = 4 * cb; i < 4 * cb + 4; ++i) {
      Value v = perKeyK                 ? k.fmul(acc[i], k.extract(kv2, i % 2))
                : raw || p.kTileScale() ? acc[i]
                                        : k.fmul(acc[i], kFactor);
      int64_t r = accRow(i);
      if (p.softcap > 0) // C · tanh(s / C) on the base-2 logit (C = softcap · log2 e)
        v = k.fmul(k.f32(p.softcap * kLog2e),
                   k.tanhApprox(k.fmul(v, k.f32(1.0 / (p.softcap * kLog2e)))));
      Value key;
      if (p.alibi || masked)
        key = k.add(k.add(tileStart, f.colBase), accCol(i));
      if (p.alibi)
        v = k.fma(f.alibiA[r], k.sitofp(key), k.fadd(v, f.alibiB[r]));
      if (masked) {
        Value seen = k.cmp(P::sle, key, f.rowLimit[r]);
        if (f.rowFirst[r]) // a left window
          seen = k.band(seen, k.cmp(P::sge, key, f.rowFirst[r]));
        v = k.select(seen, v, negInf);
      }
      s[i] = v;
      rowVals[r].push_back(v);
    }
  }
  auto tree = [&](SmallVector<Value> vals, bool isMax) { return reduceTree(k, vals, isMax); };
  Value rowMax[2] = {tree(rowVals[0], true), tree(rowVals[1], true)};
  SoftmaxOut o;
  Value mUse[2];
  for (int r = 0; r < 2; ++r) {
    Value mx = rowMax[r];
    mx = k.fmax(mx, k.shflXor(mx, 1));
    mx = k.fmax(mx, k.shflXor(mx, 2));
    if (raw) // the factor is positive: max(f · S) = f · max(S)
      mx = k.fmul(mx, rowF[r]);
    o.m[r] = k.fmax(mOld[r], mx);
    Value isNegInf = k.fcmp(LLVM::FCmpPredicate::oeq, o.m[r], negInf);
    mUse[r] = k.select(isNegInf, k.f32(0), o.m[r]);
    o.alpha[r] = k.exp2(k.fsub(mOld[r], mUse[r]));
  }
  SmallVector<Value> sumVals[2];
  SmallVector<Value> pv(nacc);
  // One V scale per tile (plan.vTileScale) is applied in O's rescale, else P carries each key's.
  // fp8: P (and with it l) is 256 · P, exp2's argument + 8, which keeps e4m3's normal range for
  // P down to 2^-14.
  bool perKeyV = p.hasScales() && !p.vTileScale();
  Value negM[2];
  for (int r = 0; r < 2; ++r)
    negM[r] = k.fsub(log2R ? log2R : k.f32(p.fp8 ? 8.0 : 0.0), mUse[r]);
  for (int64_t cb = 0; cb < p.tileN / 8; ++cb) {
    Value vv2;
    if (perKeyV) {
      Value col = k.add(f.colBase, cb * 8);
      vv2 = k.load(k.vec2f32Type(), sptr(k, c, k.add(scOff, k.add(k.mul(col, 4), p.tileN * 4))), 8);
    }
    for (int64_t i = 4 * cb; i < 4 * cb + 4; ++i) {
      int64_t r = accRow(i);
      Value e = k.exp2(raw               ? k.fma(s[i], rowF[r], negM[r])
                       : p.fp8 || log2R ? k.fadd(s[i], negM[r])
                                         : k.fsub(s[i], mUse[r]));
      sumVals[r].push_back(e);
      pv[i] = perKeyV ? k.fmul(e, k.extract(vv2, i % 2)) : e;
    }
  }
  for (int r = 0; r < 2; ++r) {
    Value sum = tree(sumVals[r], false);
    o.l[r] = k.fma(lOld[r], o.alpha[r], invR ? k.fmul(sum, invR) : sum);
  }
  // A fragment of k-step t: {S[8t], S[8t+1]}, {S[8t+2], S[8t+3]}, {S[8t+4], ...}, {S[8t+6], ...}.
  if (!packP)
    o.pWords = std::move(pv);
  else
    for (int64_t i = 0; i < nacc; i += 2)
      o.pWords.push_back(k.packBF16x2(pv[i], pv[i + 1], /*f16=*/p.pvF16()));
  return o;
}
