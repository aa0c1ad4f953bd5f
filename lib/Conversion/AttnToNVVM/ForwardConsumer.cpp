//===- ForwardConsumer.cpp - the forward kernel's consumer warpgroups -----===//
//
// What this file is: the consumers of `<name>_decode` / `<name>_prefill` (ForwardKernel.cpp):
// S = Q·Kᵀ on WGMMA (bf16; s8 for int8 queries; e4m3 for fp8), S scaled by the query and key
// scales, masks (length, causal) and ALiBi, online softmax in the log2 domain, P packed in
// registers (bf16; f16 with int8 queries; e4m3 for fp8; u8 with a scale per row and tile for
// full_int8) and O += P·V on
// WGMMA with A from registers (full_int8: into s32, added to O in float); the
// intra-warpgroup overlap and pingpong of FA3 for prefill; and the epilogue (O / l as bf16, stored
// by ForwardStore.cpp; for split-KV the merges of ForwardMerge.cpp).
//
//===----------------------------------------------------------------------===//

#include "ForwardKernelImpl.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::nvvm;
using P = LLVM::ICmpPredicate;

//===----------------------------------------------------------------------===//
// Consumer
//===----------------------------------------------------------------------===//

namespace {
/// Tile j of the work item is tile g = ring(j) of the CTA's stream (g = j without a persistent
/// grid): its stage, buffer and mbarrier phases follow g.
struct TileRef {
  Value g, stage, buf, kAddr, vAddr, scOff, tileStart;
};
/// full_int8: P's scale per row of this tile — {255 / max, max / 255} of the row's P · s_v
/// (the tile's P̂ = round(P · s_v · 255 / max) fills u8's range; 0 for a row with nothing).
struct RowScale {
  Value inv[2], c[2];
};
/// Half-int8 with per_block V scales (vRefStep): s_ref, P's factor r = 2^log2R and 1 / r, and
/// the ratio O is rescaled by.
struct VRef {
  Value sRef, log2R, invR, ratioO;
};

/// The consumer warpgroups of one kernel: the thread's rows (setUpRows), the pieces of one K/V
/// tile's work (wait, Q·Kᵀ, softmax, P·V, release), the loop that puts them in order —
/// overlapped (FA3, prefill) or one tile at a time — and the epilogue.
class ConsumerBuilder {
public:
  ConsumerBuilder(KernelBuilder &k, Ctx &c) : k(k), c(c), p(c.p) {}

  /// The whole role for one work item: loop, final state, merge, store.
  void build() {
    buildLoop(/*finish=*/true);
    if (p.consumerWGs == 2 && !p.prefill)
      fin = mergeConsumers(k, c, wg, ct, fin);
    store();
  }

  /// The tile loop and its state (attnk.forward.consumer): {m0, m1, l0, l1, O...}, O's unit
  /// and the thread's rows (rowValues), which the merge and the store read; with `finish` the
  /// final state (finishRows; else attnk.softmax_finish's lowering finishes it).
  ConsumerState buildLoop(bool finish) {
    setUpRows();
    if (p.overlap)
      overlappedLoop();
    else
      tileLoop();
    if (finish)
      finishRows();
    return {fin, rowValues(), vTile ? svLast : k.f32(1.0)};
  }

  /// The store of a final state (attnk.forward.epilogue): {m0, m1, l0, l1, O...} on the rows
  /// the loop computed (rowValues' order).
  void buildEpilogue(ArrayRef<Value> rows, ArrayRef<Value> state, Value unit) {
    restoreRows(rows);
    fin.assign(state.begin(), state.end());
    svLast = unit;
    store();
  }

private:
  KernelBuilder &k;
  Ctx &c;
  const ForwardPlan &p;
  // The thread: its index among the consumers, warpgroup, index in the warpgroup, fragment rows.
  Value ctAll, wg, ct;
  Frag f;
  // Its two rows: query token, head, query scale, and (prefill) whether the row exists.
  Value qi[2], head[2], qScale[2];
  Value rowValid[2] = {Value(), Value()};
  Value qBase, maskFrom, maskBelow, negInf, qAddr;
  // Accumulator registers of S and of O; the loop state before the first tile.
  int64_t nS = 0, nO = 0;
  SmallVector<Value> inits;
  // Where K and V are read from, and the conversion buffers (see setUpRows).
  bool direct = false, kFromStage = false;
  int64_t nConv = 0;
  // How O carries V's scale (see vScaleOf) and what the loops carry after P's words.
  bool vTile = false, vRef = false;
  int64_t nWords = 0, nTail = 0;
  // The final loop state {m0, m1, l0, l1, O...} and (vTile) O's V-scale unit.
  SmallVector<Value> fin;
  Value svLast;

  /// The thread's two rows (query token, head, scales, masks, ALiBi), the loop's initial
  /// state and the plan's decisions the tile steps share.
  void setUpRows() {
    // Consumer warpgroup wg (0 .. consumerWGs-1) takes tiles j ≡ wg (mod consumerWGs), and with
    // them the conversion buffer j mod 2 = wg: while one warpgroup runs its softmax the other's
    // WGMMAs keep the tensor cores busy. Their partial (m, l, O) merge through shared memory.
    ctAll = k.add(c.tid, -p.producerThreads());
    wg = k.warpUniform(k.lshr(ctAll, 7));
    ct = k.band(ctAll, 127);
    Value warp = k.lshr(ct, 5), lane = k.band(ct, 31);
    f.r[0] = k.add(k.mul(warp, 16), k.lshr(lane, 2));
    f.r[1] = k.add(f.r[0], 8);
    f.colBase = k.mul(k.band(lane, 3), 2);
    // Prefill: this warpgroup's own query tile (decode: the one tile both share).
    qBase = p.prefill ? k.add(c.qBase, k.mul(wg, p.qChunk)) : c.qBase;
    for (int r = 0; r < 2; ++r) {
      Value row = k.smin(f.r[r], k.i32(p.rows() - 1));
      qi[r] = k.udiv(row, p.pack);
      if (p.prefill) { // the chunk's tokens; the last chunk may be short
        qi[r] = k.smin(k.add(qBase, qi[r]), c.qLenMinus1(k));
        rowValid[r] = k.band(k.cmp(P::slt, f.r[r], k.i32(p.rows())),
                             k.cmp(P::slt, k.add(qBase, k.udiv(f.r[r], p.pack)), c.qLen(k)));
      }
      head[r] = k.add(c.headBase, k.urem(row, p.pack));
      if (p.qk8()) { // q_scale as K's, over [B, q_len, Hq] (ragged: [1, total_q, Hq])
        Value idx = p.ragged ? scaleIndex(k, p.qGran, k.i32(0), c.totalQ, p.qHeads, head[r],
                                          k.add(c.qRow0, qi[r]), p.qBlock)
                             : scaleIndex(k, p.qGran, c.bIdx, c.qLen(k), p.qHeads, head[r],
                                          qi[r], p.qBlock);
        qScale[r] = k.loadInvariant(k.f32(), k.gep(c.qScale, k.mul(k.sext64(idx), int64_t(4))));
        if (p.parkQScales()) // this thread's own slots: reloaded per tile (softmax)
          k.store(qScale[r], sptr(k, c, k.add(k.mul(ctAll, 8), c.sm.qScales + 4 * r)));
      }
      Value pos = k.add(k.sub(c.len, c.qLen(k)), qi[r]);
      f.rowLimit[r] = p.causal ? pos : k.add(c.len, -1);
      if (p.rightWindow()) // keys up to windowRight past the row's position
        f.rowLimit[r] = k.smin(k.add(pos, p.windowRight), f.rowLimit[r]);
      if (p.windowLeft >= 0) // and from windowLeft before it
        f.rowFirst[r] = k.sub(pos, k.i32(p.windowLeft));
      if (p.alibi) {
        Value slope =
            k.loadInvariant(k.f32(), k.gep(c.alibi, k.mul(k.sext64(head[r]), int64_t(4))));
        f.alibiA[r] = k.fmul(slope, k.f32(kLog2e));
        f.alibiB[r] = k.fmul(k.f32(-1.0), k.fmul(f.alibiA[r], k.sitofp(pos)));
      }
    }
    setUpTileDecisions();
    // Keys past this bound need masking: the smallest row limit.
    maskFrom = p.causal ? k.sub(c.len, c.qLen(k)) : k.add(c.len, -1);
    if (p.prefill && p.causal)
      maskFrom = k.add(maskFrom, qBase);
    if (p.windowed()) {
      // This warpgroup's first and last query positions (decode: the CTA's).
      Value pos0 = k.sub(c.len, c.qLen(k));
      Value lastQ = p.prefill ? k.smin(k.add(qBase, p.qChunk - 1), c.qLenMinus1(k))
                              : k.i32(p.qLen - 1);
      if (p.prefill)
        pos0 = k.add(pos0, qBase);
      if (p.rightWindow())
        maskFrom = k.smin(k.add(pos0, p.windowRight), maskFrom);
      // Keys before this bound need masking: the largest row start (the last query's).
      if (p.windowLeft >= 0)
        maskBelow = k.sub(k.add(k.sub(c.len, c.qLen(k)), lastQ), k.i32(p.windowLeft));
    }

    negInf = k.f32(-INFINITY);
    inits = {negInf, negInf, k.f32(0), k.f32(0)};
    for (int64_t i = 0; i < nO; ++i)
      inits.push_back(k.f32(0));
    qAddr = k.sharedAddr(sptr(k, c, c.qSetOff ? k.add(c.qSetOff, c.sm.q) : k.i32(c.sm.q)));
    if (p.prefill)
      qAddr = k.add(qAddr, k.mul(wg, p.qTileBytes()));
  }

  /// The thread's rows as an `!attnk.rows` value lowers (its type's order): warpgroup, index
  /// in it, fragment rows, column base, query tokens, heads, first query token and, prefill
  /// (`partial`), whether each row exists.
  SmallVector<Value> rowValues() const {
    SmallVector<Value> v = {wg,    ct,    f.r[0],  f.r[1],  f.colBase,
                            qi[0], qi[1], head[0], head[1], qBase};
    if (p.prefill)
      v.append({rowValid[0], rowValid[1]});
    return v;
  }
  void restoreRows(ArrayRef<Value> v) {
    wg = v[0], ct = v[1], f.r[0] = v[2], f.r[1] = v[3], f.colBase = v[4];
    qi[0] = v[5], qi[1] = v[6], head[0] = v[7], head[1] = v[8], qBase = v[9];
    if (p.prefill)
      rowValid[0] = v[10], rowValid[1] = v[11];
    setUpTileDecisions();
  }

  /// The plan's decisions the tile steps and the store share (no IR).
  void setUpTileDecisions() {
    nS = p.tileN / 2;
    nO = p.headDim / 2;
    // The pieces of one K/V tile's work; the loops below put them in order. K is read where TMA
    // put it (bf16 caches; int8 K under int8 queries in prefill: kDirect) or from a conversion
    // buffer; V from the stage (bf16) or a conversion buffer. What is read from a stage is
    // released through the stage's empty barrier, a conversion buffer through its own.
    direct = p.directKV();
    kFromStage = direct || p.kDirect();
    nConv = p.convBufs();
    // plan.vTileScale: O is kept in units of a V scale (the P·V WGMMA cannot apply it). With one
    // V scale per head or tensor the epilogue multiplies by it. With per_block scales (vTile) the
    // scale O is in rides at the end of the loop state and the epilogue multiplies by the last:
    //  - fp8: the last tile added's; alpha also carries s_v,prev / s_v,t (vScaleRatio). Its P
    //    must not take a factor < 1 (e4m3 would round the row maximum's P, which 256 · P keeps
    //    exact);
    //  - half-int8 (vRef): s_ref, the largest tile scale so far. Tile t's P take r = s_v,t / s_ref
    //    through exp2's argument (vRefStep, before the softmax) and O is rescaled by
    //    s_ref,old / s_ref only when s_ref grows — on most tiles every alpha stays 1 and the
    //    vote-skip below fires, where the ratio of two tiles' scales rescaled O on every tile.
    vTile = p.vTileScale() && !p.vScaleInEpilogue();
    vRef = vTile && !p.fp8;
    nWords = p.pv8() ? nS / 4 : nS / 2; // P's A-fragment words per tile
    // What the loops carry after P's words: the V scale of the tile (vTile), full_int8 P's row
    // scales.
    nTail = vTile ? 1 : p.fullI8 ? 2 : 0;
  }

  TileRef tileRef(Value j) {
    TileRef t;
    t.g = c.ring(k, j);
    t.tileStart = k.mul(k.add(c.tile0, j), p.tileN);
    t.stage = k.urem(t.g, p.stages);
    Value stageOff = ringOffset(k, t.stage, c.sm.stage, c.sm.stageStride);
    Value convOff;
    if (nConv) {
      t.buf = k.urem(t.g, nConv);
      convOff = ringOffset(k, t.buf, c.sm.conv, c.sm.convStride);
      t.scOff = ringOffset(k, t.buf, c.sm.scales, c.sm.scaleStride);
    }
    t.kAddr = k.sharedAddr(sptr(k, c, kFromStage ? stageOff : convOff));
    t.vAddr = k.sharedAddr(direct ? sptr(k, c, k.add(stageOff, c.sm.stageV))
                                  : sptr(k, c, k.add(convOff, c.sm.convV)));
    return t;
  }

  void wait(int64_t bar0, Value idx, int64_t ring, Value g) {
    k.mbarrierWait(sptr(k, c, k.add(k.mul(idx, 8), bar0)), k.band(k.udiv(g, ring), 1));
  }

  void arrive(int64_t bar0, Value idx) {
    k.mbarrierArrive(sptr(k, c, k.add(k.mul(idx, 8), bar0)));
  }

  // K (and for bf16 and non-kDirect conversion, V with it) is there; kDirect's V and the staged
  // scales come with the conversion buffer (waitV, before the softmax).
  void waitK(const TileRef &t) {
    if (kFromStage)
      wait(c.sm.fullStage(0), t.stage, p.stages, t.g);
    else
      wait(c.sm.fullConv(0, p.stages), t.buf, nConv, t.g);
  }

  void waitV(const TileRef &t) {
    if (p.kDirect())
      wait(c.sm.fullConv(0, p.stages), t.buf, nConv, t.g);
  }

  void releaseK(const TileRef &t) { // after Q·Kᵀ
    if (p.kDirect())
      arrive(c.sm.emptyStage(0, p.stages), t.stage);
  }

  void releaseV(const TileRef &t) { // after P·V
    if (direct)
      arrive(c.sm.emptyStage(0, p.stages), t.stage);
    else
      arrive(c.sm.emptyConv(0, p.stages), t.buf);
  }

  // S = Q · Kᵀ: K-major A (64 × D) and B (tileN × D), 16 columns of D per step; one commit
  // group, not waited for.
  SmallVector<Value> issueS(const TileRef &t) {
    k.wgmmaFence();
    SmallVector<Value> acc(nS);
    if (p.qk8()) {
      // int8 / fp8: one 128-byte swizzle atom per row, 32 columns (bytes) of D per step; S in
      // s32 (int8) or f32 (e4m3).
      // K read from the stage at head_dim 64: 64-byte rows, TMA's 64-byte swizzle (8-row atoms
      // of 512 bytes).
      bool kSw64 = kFromStage && p.kSwizzleBytes() == 64;
      auto kLayout = kSw64 ? KernelBuilder::WgmmaLayout::Swizzle64
                           : KernelBuilder::WgmmaLayout::Swizzle128;
      Value qLo = k.wgmmaDescriptorLo(qAddr, 16), kLo = k.wgmmaDescriptorLo(t.kAddr, 16);
      for (int64_t kk = 0; kk < p.headDim / 32; ++kk) {
        Value da = k.wgmmaDescriptorAt(qLo, kk * 32, 1024);
        Value db = k.wgmmaDescriptorAt(kLo, kk * 32, kSw64 ? 512 : 1024, kLayout);
        acc = k.wgmmaSS8(acc, da, db, p.tileN, /*accumulate=*/kk > 0, /*fp8=*/p.fp8);
      }
    } else {
      Value qLo = k.wgmmaDescriptorLo(qAddr, 16), kLo = k.wgmmaDescriptorLo(t.kAddr, 16);
      for (int64_t kk = 0; kk < p.headDim / 16; ++kk) {
        int64_t aOff = (kk / 4) * 64 * 128 + (kk % 4) * 32;
        int64_t bOff = (kk / 4) * p.tileN * 128 + (kk % 4) * 32;
        Value da = k.wgmmaDescriptorAt(qLo, aOff, 1024);
        Value db = k.wgmmaDescriptorAt(kLo, bOff, 1024);
        acc = k.wgmmaSS(acc, da, db, p.tileN, /*accumulate=*/kk > 0, /*transB=*/false);
      }
    }
    k.wgmmaCommit();
    return acc;
  }

  // After the wait: int8 S to float times each row's query scale (the key scale follows in
  // softmaxTile), then the scaled, masked softmax: {m0, m1, l0, l1, P words..., alpha0, alpha1},
  // or with `packP` false the nS P floats instead of the words.
  SmallVector<Value> softmax(SmallVector<Value> acc, const TileRef &t, Value mOld[2],
                             Value lOld[2], bool packP = true, Value log2R = {},
                             Value invR = {}) {
    // One factor per row: the query scale, and with one K scale per tile (staged for key 0,
    // times softmax_scale · log2 e) that too; bf16: softmax_scale · log2 e. With
    // plan.rawRowMax softmaxTile applies it, else S is scaled here (then per key there).
    Value rowF[2] = {qScale[0], qScale[1]};
    if (p.parkQScales())
      for (int r = 0; r < 2; ++r)
        rowF[r] = k.load(k.f32(), sptr(k, c, k.add(k.mul(ctAll, 8), c.sm.qScales + 4 * r)));
    if (p.kTileScale()) {
      Value ks = k.load(k.f32(), sptr(k, c, t.scOff));
      rowF[0] = k.fmul(rowF[0], ks);
      rowF[1] = k.fmul(rowF[1], ks);
    }
    if (!p.hasScales())
      rowF[0] = rowF[1] = k.f32(p.softmaxScale * kLog2e);
    if (p.qk8() && !p.rawRowMax())
      for (int64_t i = 0; i < nS; ++i)
        acc[i] = k.fmul(p.qI8 ? k.sitofp(acc[i]) : acc[i], rowF[accRow(i)]);
    else if (p.qI8) // s32 → f32; s_q goes into exp2's FFMA
      for (int64_t i = 0; i < nS; ++i)
        acc[i] = k.sitofp(acc[i]);
    ArrayRef<Value> rowFactors = p.rawRowMax() ? ArrayRef<Value>(rowF) : ArrayRef<Value>();
    // fp8 and full_int8 pack P themselves (pack8): the softmax leaves it in floats.
    packP = packP && !p.pv8();
    Value needMask = k.cmp(P::sgt, k.add(t.tileStart, p.tileN - 1), maskFrom);
    if (maskBelow)
      needMask = k.bor(needMask, k.cmp(P::slt, t.tileStart, maskBelow));
    int64_t nP = packP ? nS / 2 : nS;
    SmallVector<Type> types(4 + nP, k.f32());
    if (packP)
      for (int64_t i = 0; i < nP; ++i)
        types[4 + i] = k.i32();
    types.push_back(k.f32());
    types.push_back(k.f32());
    auto pack = [&](const SoftmaxOut &o) {
      SmallVector<Value> v = {o.m[0], o.m[1], o.l[0], o.l[1]};
      v.append(o.pWords.begin(), o.pWords.end());
      v.push_back(o.alpha[0]);
      v.push_back(o.alpha[1]);
      return v;
    };
    return k.ifThenElse(
        needMask, types,
        [&] {
          return pack(
              softmaxTile(k, c, f, acc, t.scOff, t.tileStart, mOld, lOld, true, packP, rowFactors,
                          log2R, invR));
        },
        [&] {
          return pack(softmaxTile(k, c, f, acc, t.scOff, t.tileStart, mOld, lOld, false, packP,
                                  rowFactors, log2R, invR));
        });
  }

  // O += P · V: A = P from registers, B = V (tileN × D) MN-major, 16 keys per step — or, fp8
  // and full_int8, B = Vᵀ (D × tileN) K-major, 32 keys per step; one commit group, not waited
  // for. full_int8 returns the tile's own s32 product (`o` is not read: see addPV).
  SmallVector<Value> issuePV(SmallVector<Value> o, ArrayRef<Value> pWords, const TileRef &t,
                             bool fence = true) {
    if (fence)
      k.wgmmaFence();
    if (p.fullI8)
      o.assign(nO, LLVM::UndefOp::create(k.builder(), k.getLoc(), k.i32()));
    Value vLo = k.wgmmaDescriptorLo(t.vAddr, p.pv8() ? 16 : p.tileN * 128);
    if (p.pv8())
      for (int64_t kk = 0; kk < p.tileN / 32; ++kk) {
        Value db = k.wgmmaDescriptorAt(vLo, kk * 32, 1024);
        o = k.wgmmaRS(o, pWords.slice(4 * kk, 4), db, p.headDim, false,
                      p.fp8 ? KernelBuilder::RSTypes::E4M3 : KernelBuilder::RSTypes::U8S8,
                      /*accumulate=*/p.fp8 || kk > 0);
      }
    else
      for (int64_t kk = 0; kk < p.tileN / 16; ++kk) {
        Value db = k.wgmmaDescriptorAt(vLo, kk * 16 * 128, 1024);
        o = k.wgmmaRS(o, pWords.slice(4 * kk, 4), db, p.headDim, true,
                      p.pvF16() ? KernelBuilder::RSTypes::F16 : KernelBuilder::RSTypes::BF16);
      }
    k.wgmmaCommit();
    return o;
  }

  RowScale rowScaleP(ArrayRef<Value> pf) {
    RowScale rs;
    SmallVector<Value> vals[2];
    for (int64_t i = 0; i < nS; ++i)
      vals[accRow(i)].push_back(pf[i]);
    for (int r = 0; r < 2; ++r) {
      Value mx = reduceTree(k, vals[r], true);
      mx = k.fmax(mx, k.shflXor(mx, 1));
      mx = k.fmax(mx, k.shflXor(mx, 2));
      rs.inv[r] = k.select(k.fcmp(LLVM::FCmpPredicate::ogt, mx, k.f32(0)), k.fdiv(k.f32(255.0), mx),
                           k.f32(0));
      rs.c[r] = k.fmul(mx, k.f32(1.0 / 255.0));
    }
    return rs;
  }

  // fp8 / full_int8: P's 8-bit A fragments (k-step kk: 4 words of 4 keys each, one row per word)
  // from the nS floats of the S fragment, in register order — the producer stored Vᵀ with its
  // keys permuted to match. full_int8 scales each row by `inv`.
  SmallVector<Value> pack8(ArrayRef<Value> pf, const RowScale *rs) {
    SmallVector<Value> words;
    for (int64_t b = 0; b < nS; b += 16)
      for (int64_t w : {0, 2, 8, 10})
        words.push_back(rs ? k.packU8x4(pf[b + w], pf[b + w + 1], pf[b + w + 4], pf[b + w + 5],
                                        rs->inv[accRow(b + w)])
                           : k.packE4M3x4(pf[b + w], pf[b + w + 1], pf[b + w + 4], pf[b + w + 5]));
    return words;
  }

  // full_int8: O += (P̂ · V̂ᵀ) · c per row, the tile's s32 product in float.
  void addPV(SmallVector<Value> &o, ArrayRef<Value> acc, ArrayRef<Value> c2) {
    for (int64_t i = 0; i < nO; ++i)
      o[i] = k.fma(k.sitofp(acc[i]), c2[accRow(i)], o[i]);
  }

  // The words of P (and, full_int8, its row scales appended) as the loop carries them.
  SmallVector<Value> packP8(ArrayRef<Value> pf) {
    if (!p.fullI8)
      return pack8(pf, nullptr);
    RowScale rs = rowScaleP(pf);
    SmallVector<Value> out = pack8(pf, &rs);
    out.push_back(rs.c[0]);
    out.push_back(rs.c[1]);
    return out;
  }

  // plan.vTileScale: V's scale of tile t (one per tile; the producer staged it per key).
  Value vScaleOf(const TileRef &t) {
    return k.load(k.f32(), sptr(k, c, k.add(t.scOff, p.tileN * 4)));
  }

  VRef vRefStep(const TileRef &t, Value sRefOld) {
    Value sv = vScaleOf(t);
    // s_ref starts at 0: the first tile sets it (O is still 0, so the tiny ratioO is exact).
    // The logarithms take at least the smallest normal float: lg2.approx.ftz would give −inf
    // for 0 and for subnormal scales, and −inf − (−inf) is NaN.
    Value grows = k.fcmp(LLVM::FCmpPredicate::ogt, sv, sRefOld);
    Value tiny = k.f32(std::numeric_limits<float>::min());
    Value lsv = k.log2(k.fmax(sv, tiny)), lref = k.log2(k.fmax(sRefOld, tiny));
    Value d = k.fmax(k.fsub(lsv, lref), k.f32(-24.0)); // log2 r, clamped: 2^-24 of O is noise
    VRef v;
    v.sRef = k.select(grows, sv, sRefOld);
    v.ratioO = k.select(grows, k.exp2(k.fsub(lref, lsv)), k.f32(1.0));
    v.log2R = k.select(grows, k.f32(0.0), d);
    v.invR = k.select(grows, k.f32(1.0), k.exp2(k.fsub(k.f32(0.0), d)));
    return v;
  }

  // fp8: O's unit becomes tile t's scale, unless that is below 2^-20 of the unit: then the
  // tile is added in the current unit — exact for an all-zero block (a 0 or subnormal scale;
  // the kernel runs flush-to-zero, so a subnormal one counts as 0), an overestimate only for
  // nonzero codes under so small a scale. Where the unit stays the ratio is exactly 1 (the
  // vote-skip needs it): no 0 / 0 and no division by 0, whatever the first tiles' scales;
  // elsewhere an approximate division (2 ulp) is plenty.
  Value normalOrZero(Value x) {
    return k.select(
        k.fcmp(LLVM::FCmpPredicate::oge, x, k.f32(std::numeric_limits<float>::min())), x,
        k.f32(0.0));
  }

  Value vScaleRatio(const TileRef &t, Value unitPrev, Value &unit) {
    Value sv = normalOrZero(vScaleOf(t));
    unit = k.select(k.fcmp(LLVM::FCmpPredicate::oge, sv, k.fmul(unitPrev, k.f32(0x1p-20))), sv,
                    unitPrev);
    return k.select(k.fcmp(LLVM::FCmpPredicate::oeq, unit, unitPrev), k.f32(1.0),
                    k.fdivApprox(unitPrev, unit));
  }

  // What O's rescale before tile t's P·V carries besides alpha — the change of O's V-scale
  // unit, null without per_block V scales — and O's unit after it (`vr` from vRefStep).
  Value unitRatio(const VRef &vr, const TileRef &t, Value unitPrev, Value &unit) {
    if (vRef) {
      unit = vr.sRef;
      return vr.ratioO;
    }
    return vTile ? vScaleRatio(t, unitPrev, unit) : Value();
  }

  // O *= alpha (· ratio, the change of O's V-scale unit) before tile t's P·V.
  void rescale(SmallVector<Value> &o, Value alpha[2], Value ratio) {
    if (ratio) {
      alpha[0] = k.fmul(alpha[0], ratio);
      alpha[1] = k.fmul(alpha[1], ratio);
    }
    auto scaled = [&] {
      SmallVector<Value> r(o);
      for (int64_t i = 0; i < nO; ++i)
        r[i] = k.fmul(r[i], alpha[accRow(i)]);
      return r;
    };
    if (!p.prefill) {
      o = scaled();
      return;
    }
    // Prefill: once the row maxima settle most tiles leave every alpha at exactly 1, so the
    // warp skips the multiplications (a warp-uniform branch; exact: x · 1 = x).
    Value one = k.f32(1.0);
    Value moved = k.voteAny(k.bor(k.fcmp(LLVM::FCmpPredicate::une, alpha[0], one),
                                  k.fcmp(LLVM::FCmpPredicate::une, alpha[1], one)));
    o = k.ifThenElse(moved, TypeRange(ValueRange(o)), scaled, [&] { return o; });
  }
  /// FA3's intra-warpgroup overlap (prefill): the first tile's Q·Kᵀ and softmax, then per
  /// tile j Q·Kᵀ of j beside P·V of j − 1, then the last P·V.
  void overlappedLoop() {
    // FA3's intra-warpgroup overlap (prefill): tile j's Q·Kᵀ and tile j−1's P·V are in flight
    // together, and the softmax of S_j runs while P·V_{j−1} does; O is rescaled once that is
    // done. The first tile's S and softmax come before the loop, the last P·V after it.
    Value any = k.cmp(P::sgt, c.numTiles, k.i32(0));
    SmallVector<Type> proTypes(4, k.f32());
    for (int64_t i = 0; i < nWords; ++i)
      proTypes.push_back(k.i32());
    proTypes.append(nTail, k.f32());
    SmallVector<Value> pro = k.ifThenElse(
        any, proTypes,
        [&] {
          TileRef t = tileRef(k.i32(0));
          waitK(t);
          SmallVector<Value> acc = issueS(t);
          k.wgmmaWait(0);
          releaseK(t);
          waitV(t);
          Value m[2] = {negInf, negInf}, l[2] = {k.f32(0), k.f32(0)};
          VRef vr = vRef ? vRefStep(t, k.f32(0)) : VRef();
          SmallVector<Value> sm = softmax(acc, t, m, l, true, vr.log2R, vr.invR);
          SmallVector<Value> out(sm.begin(), sm.begin() + 4); // alpha: O is zero
          if (!p.pv8()) {
            out.append(sm.begin() + 4, sm.begin() + 4 + nWords);
          } else {
            SmallVector<Value> words = packP8(ArrayRef<Value>(sm).slice(4, nS));
            out.append(words.begin(), words.end());
          }
          if (vTile) // O's unit (fp8: a subnormal first scale counts as 0, as in vScaleRatio)
            out.push_back(vRef ? vr.sRef : normalOrZero(vScaleOf(t)));
          return out;
        },
        [&] {
          SmallVector<Value> none = {negInf, negInf, k.f32(0), k.f32(0)};
          for (int64_t i = 0; i < nWords; ++i)
            none.push_back(k.i32(0));
          if (vTile)
            none.push_back(k.f32(1));
          none.append(p.fullI8 ? 2 : 0, k.f32(0));
          return none;
        });
    // Carried: m0, m1, l0, l1, O..., P words of the previous tile, then its V scale (vTile) or
    // P's row scales (full_int8).
    SmallVector<Value> init(pro.begin(), pro.begin() + 4);
    for (int64_t i = 0; i < nO; ++i)
      init.push_back(k.f32(0));
    init.append(pro.begin() + 4, pro.end());
    // Pingpong (FA3): the two consumers take turns issuing their loop WGMMAs. Consumer wg syncs
    // on named barrier 4 + wg before issuing and arrives on the other's after; consumer 1
    // opens consumer 0's first turn and leaves out its own last arrive, so every arrive meets
    // a sync (both run the same numTiles − 1 iterations).
    Value myBar, otherBar;
    if (p.pingpong) {
      myBar = k.add(wg, 4);
      otherBar = k.sub(k.i32(5), wg);
      k.ifThen(k.band(k.cmp(P::eq, wg, 1), k.cmp(P::sgt, c.numTiles, k.i32(1))),
               [&] { k.barrierArrive(k.i32(4), 256); });
    }
    SmallVector<Value> loop = k.forLoop(k.i32(1), c.numTiles, 1, init, [&](Value j, ValueRange st) {
      TileRef t = tileRef(j), prev = tileRef(k.add(j, -1));
      waitK(t);
      if (p.pingpong)
        k.barrierSync(myBar, 256);
      SmallVector<Value> acc = issueS(t);
      SmallVector<Value> o(st.begin() + 4, st.begin() + 4 + nO);
      SmallVector<Value> pv =
          issuePV(o, SmallVector<Value>(st.begin() + 4 + nO, st.begin() + 4 + nO + nWords), prev,
                  /*fence=*/false); // issueS's fence covers O and P
      if (!p.fullI8)
        o = pv;
      if (p.pingpong) {
        Value notLast = k.cmp(P::ne, j, k.add(c.numTiles, -1));
        k.ifThen(k.bor(k.cmp(P::eq, wg, 0), notLast), [&] { k.barrierArrive(otherBar, 256); });
      }
      k.wgmmaWait(1); // S_j is done, P·V_{j−1} may still run
      releaseK(t);
      waitV(t);
      Value mOld[2] = {st[0], st[1]}, lOld[2] = {st[2], st[3]};
      VRef vr = vRef ? vRefStep(t, st.back()) : VRef();
      // P_j stays in floats until P·V_{j−1} is done: its packed words are the next A operand
      // and share (through the loop phi) the registers P·V_{j−1} is reading — written any
      // earlier, ptxas serializes the WGMMAs.
      SmallVector<Value> sm = softmax(acc, t, mOld, lOld, /*packP=*/false, vr.log2R, vr.invR);
      k.wgmmaWait(0);
      releaseV(prev);
      if (p.fullI8)
        addPV(o, pv, SmallVector<Value>{st[st.size() - 2], st[st.size() - 1]});
      Value alpha[2] = {sm[4 + nS], sm[5 + nS]};
      Value sv;
      rescale(o, alpha, unitRatio(vr, t, st.back(), sv));
      SmallVector<Value> next(sm.begin(), sm.begin() + 4);
      next.append(o.begin(), o.end());
      if (p.pv8()) {
        SmallVector<Value> words = packP8(ArrayRef<Value>(sm).slice(4, nS));
        next.append(words.begin(), words.end());
      } else {
        for (int64_t i = 0; i < nS; i += 2)
          next.push_back(k.packBF16x2Ordered(sm[4 + i], sm[5 + i], /*f16=*/p.pvF16()));
      }
      if (vTile)
        next.push_back(sv);
      return next;
    });
    SmallVector<Value> o(loop.begin() + 4, loop.begin() + 4 + nO);
    SmallVector<Value> last = k.ifThenElse(
        any, TypeRange(ValueRange(o)),
        [&] {
          TileRef t = tileRef(k.add(c.numTiles, -1));
          SmallVector<Value> out = issuePV(
              o, SmallVector<Value>(loop.begin() + 4 + nO, loop.begin() + 4 + nO + nWords), t);
          k.wgmmaWait(0);
          releaseV(t);
          if (!p.fullI8)
            return out;
          SmallVector<Value> sum = o;
          addPV(sum, out, ArrayRef<Value>(loop).take_back(2));
          return sum;
        },
        [&] { return o; });
    fin.assign(loop.begin(), loop.begin() + 4);
    fin.append(last.begin(), last.end());
    if (vTile)
      svLast = loop.back();
  }

  /// One tile at a time: decode's warpgroups take alternate tiles, prefill's each take every
  /// tile for its own queries.
  void tileLoop() {
    // Decode: warpgroups take alternate tiles. Prefill: each takes every tile for its queries.
    Value first = p.prefill ? k.i32(0) : wg;
    int64_t step = p.prefill ? 1 : p.consumerWGs;
    if (vTile)
      inits.push_back(k.f32(0.0)); // the first tile sets O's unit (O is 0 until then)
    fin = k.forLoop(first, c.numTiles, step, inits, [&](Value j, ValueRange st) {
      TileRef t = tileRef(j);
      waitK(t);
      SmallVector<Value> acc = issueS(t);
      k.wgmmaWait(0);
      releaseK(t);
      waitV(t);
      Value mOld[2] = {st[0], st[1]}, lOld[2] = {st[2], st[3]};
      VRef vr = vRef ? vRefStep(t, st.back()) : VRef();
      SmallVector<Value> sm = softmax(acc, t, mOld, lOld, true, vr.log2R, vr.invR);
      SmallVector<Value> o(st.begin() + 4, st.begin() + 4 + nO);
      int64_t nP = p.pv8() ? nS : nS / 2; // fp8, full_int8: P in floats
      Value alpha[2] = {sm[4 + nP], sm[5 + nP]};
      Value sv;
      rescale(o, alpha, unitRatio(vr, t, st.back(), sv));
      SmallVector<Value> words = p.pv8() ? packP8(ArrayRef<Value>(sm).slice(4, nS))
                                         : SmallVector<Value>(sm.begin() + 4, sm.begin() + 4 + nP);
      SmallVector<Value> pv = issuePV(o, ArrayRef<Value>(words).take_front(nWords), t);
      k.wgmmaWait(0);
      releaseV(t);
      if (p.fullI8)
        addPV(o, pv, ArrayRef<Value>(words).take_back(2));
      else
        o = pv;
      SmallVector<Value> next = {sm[0], sm[1], sm[2], sm[3]};
      next.append(o.begin(), o.end());
      if (vTile)
        next.push_back(sv);
      return next;
    });
    if (vTile) {
      svLast = fin.back();
      fin.pop_back();
    }
  }

  /// The final state: O · H for rotated V, the row sums reduced across the quad
  /// (attnk.softmax_finish, SoftmaxLowering.cpp).
  void finishRows() {
    MutableArrayRef<Value> st(fin);
    finishSoftmaxRows(k, f.colBase, p.hadamard, st.slice(4, nO), st.slice(2, 2));
  }

  /// O / l into the output (one split) or the split's partial (a cluster merge or the combine
  /// kernel takes it), from warpgroup 0's merged state (decode) or each warpgroup's (prefill).
  void store() {
    Value l[2] = {fin[2], fin[3]};
    ArrayRef<Value> o = ArrayRef<Value>(fin).drop_front(4);
    auto valid = [&](int r) { // rowValid is set for prefill only
      return p.prefill ? rowValid[r] : k.cmp(P::slt, f.r[r], k.i32(p.rows()));
    };
    // Decode: warpgroup 0 holds the merged state. Prefill: every warpgroup writes its own rows.
    Value rowOk[2] = {p.prefill ? valid(0) : k.band(k.cmp(P::eq, wg, 0), valid(0)),
                      p.prefill ? valid(1) : k.band(k.cmp(P::eq, wg, 0), valid(1))};
    k.ifThenElse(
        k.cmp(P::eq, c.numSplits, 1), TypeRange{},
        [&] {
          Value inv[2];
          // O is in units of the V scale (vTile: fp8 the last tile's, half-int8 s_ref; fp8: l and O
          // both hold 256 · P).
          Value num = vTile ? svLast : k.f32(1.0);
          if (p.vScaleInEpilogue()) // per_head or per_tensor: any key's scale
            num = k.loadInvariant(
                k.f32(), k.gep(c.vScale, k.mul(k.sext64(scaleIndex(k, c, p.vGran, k.i32(0))),
                                               int64_t(4))));
          for (int r = 0; r < 2; ++r)
            inv[r] = k.select(k.fcmp(LLVM::FCmpPredicate::ogt, l[r], k.f32(0)), k.fdiv(num, l[r]),
                              k.f32(0));
          storeOutput(k, c, wg, o, inv, rowOk, qi, head, qBase, f);
          Value m[2] = {fin[0], fin[1]};
          storeLse(k, c, ct, m, l, rowOk, qi, head);
          return SmallVector<Value>();
        },
        [&] {
          if (p.clusterSplits()) // launched with a cluster of the splits: merge in the kernel
            k.ifThenElse(
                k.cmp(P::sgt, k.clusterSize(), 1), TypeRange{},
                [&] {
                  clusterMerge(k, c, wg, ct, fin, rowOk, qi, head, f);
                  return SmallVector<Value>();
                },
                [&] {
                  storePartial(k, c, ct, fin, rowOk, f);
                  return SmallVector<Value>();
                });
          else
            storePartial(k, c, ct, fin, rowOk, f);
          return SmallVector<Value>();
        });
  }
};
} // namespace

void mlir::attn::nvvm::buildConsumer(KernelBuilder &k, Ctx &c) { ConsumerBuilder(k, c).build(); }

ConsumerState mlir::attn::nvvm::buildConsumerLoop(KernelBuilder &k, Ctx &c) {
  return ConsumerBuilder(k, c).buildLoop(/*finish=*/false);
}

void mlir::attn::nvvm::buildConsumerStore(KernelBuilder &k, Ctx &c, ArrayRef<Value> rows,
                                          ArrayRef<Value> state, Value unit) {
  ConsumerBuilder(k, c).buildEpilogue(rows, state, unit);
}
