//===- MLAKernel.cpp - the Hopper MLA decode kernel (FlashMLA-style) ------===//
//
// What this file is: the builders of `<name>_mla`, the sm_90a kernel of `attn.mla_decode`, that
// the lowering of its kernel-level ops (attnk.mla.*, MLALowering.cpp) calls. One CTA per (group of
// 64 query heads, query token, batch element); 384 threads in three warpgroups:
//
//   producer (warpgroup 0, setmaxnreg.dec): for each block of 64 keys (top-k entries, or cache
//     positions when dense) gathers the tokens with 16-byte loads, dequantizes the e4m3 part with
//     its 1×C tile scale into bf16 (e4m3 → f16 → f32 · scale → bf16), copies the bf16 RoPE part,
//     and writes one of two interleaved [64 × Dk] buffers (16-byte chunk c of token t at
//     c·64·16 + t·16: no swizzle, so the 8 tokens of a store's lane group fill one 128-byte
//     line — a warp's st.async to the peer touches 4 lines, not 32), plus a mask row (0 or
//     −inf per key: invalid index, past the length, causal). With `crossover` the CTAs of a
//     2-CTA cluster (the two head groups of one query token) each convert half of the block and
//     write it into both CTAs' buffers — their own with st.shared, the peer's with st.async,
//     whose bytes complete a transaction barrier there;
//   consumer 0 (warpgroup 1): S = Q·Kᵀ (m64n64, K = Dk) on WGMMA, online softmax in the log2
//     domain, P to shared memory for consumer 1, O[:, :Dv/2] += P·V with P from registers;
//   consumer 1 (warpgroup 2): O[:, Dv/2:] += P·V with P from shared memory (SS WGMMA), rescaled
//     by consumer 0's row factors.
//
// V is the first Dv columns of the same buffer (MN-major B operand). Buffers are released
// through "empty" mbarriers that, with crossover, both CTAs' consumers arrive on (remote
// arrives), since each producer writes into both CTAs. docs/GPUMLA.md is the launcher contract.
//
//===----------------------------------------------------------------------===//

#include "ForwardKernelImpl.h"
#include "MLAPlan.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::nvvm;
using P = LLVM::ICmpPredicate;

Value MLACtx::ptr(KernelBuilder &k, Value off) { return k.gep(base, off); }
Value MLACtx::ptr(KernelBuilder &k, int64_t off) { return k.gep(base, off); }
Value MLACtx::addr(KernelBuilder &k, int64_t off) { return k.sharedAddr(ptr(k, off)); }

static constexpr int64_t kB = MLAPlan::kBlock;

namespace {
/// Where thread t of a consumer warpgroup sits in an m64nN accumulator: rows r0 and r0 + 8,
/// columns colBase + 8·j + {0, 1}; the quad's first lane writes per-row values.
struct AccGeom {
  Value ct, rows[2], colBase, quadLead;
};
} // namespace

static AccGeom accGeom(KernelBuilder &k, Value tid) {
  AccGeom f;
  f.ct = k.band(tid, 127);
  Value warp = k.lshr(f.ct, 5), lane = k.band(f.ct, 31);
  f.rows[0] = k.add(k.mul(warp, 16), k.lshr(lane, 2));
  f.rows[1] = k.add(f.rows[0], 8);
  f.colBase = k.mul(k.band(lane, 3), 2);
  f.quadLead = k.cmp(P::eq, k.band(lane, 3), 0);
  return f;
}

/// Key (cache position) of entry `e`: its index (sparse; -1 past top-k) or `e` itself (dense).
static Value loadKey(KernelBuilder &k, MLACtx &c, Value e) {
  if (!c.p.sparse)
    return e;
  // indices[b, qi, e], loaded only for entries inside top-k.
  Value ec = k.smax(k.smin(e, k.add(c.topk, -1)), k.i32(0));
  Value row = k.add(k.mul(c.bIdx, c.sq), c.qi);
  Value off = k.add(k.mul(k.sext64(row), k.sext64(c.topk)), k.sext64(ec));
  return k.ifThenElse(k.cmp(P::slt, e, c.entries), TypeRange{k.i32()},
                      [&] {
                        return SmallVector<Value>{
                            k.loadInvariant(k.i32(), k.gep(c.idx, k.mul(off, int64_t(4))))};
                      },
                      [&] { return SmallVector<Value>{k.i32(-1)}; })[0];
}

/// Whether entry `e` with key `key` is attended (i1): inside the entries, and for sparse a
/// position in [0, len) (and at most the causal limit).
static Value keyOk(KernelBuilder &k, MLACtx &c, Value e, Value key) {
  Value ok = k.cmp(P::slt, e, c.entries);
  if (!c.p.sparse)
    return ok;
  ok = k.band(ok, k.band(k.cmp(P::sge, key, 0), k.cmp(P::slt, key, c.len)));
  if (c.p.causal)
    ok = k.band(ok, k.cmp(P::sle, key, c.limit));
  return ok;
}

/// 16 e4m3 bytes times `scale` → 8 bf16x2 words (e4m3 → f16x2 → f32, scaled, rounded to bf16).
static SmallVector<Value> dequantE4M3x16(KernelBuilder &k, Value v4, Value scale) {
  OpBuilder &b = k.builder();
  Type v2f16 = VectorType::get({2}, b.getF16Type());
  Type v2bf16 = VectorType::get({2}, b.getBF16Type());
  Value s2 = k.vector({scale, scale});
  SmallVector<Value> words;
  for (int w = 0; w < 4; ++w) {
    Value x = k.extract(v4, w);
    for (Value h16 : {k.trunc(k.i16(), x), k.trunc(k.i16(), k.lshr(x, 16))}) {
      Value h = k.intrinsic("llvm.nvvm.e4m3x2.to.f16x2.rn", v2f16, {h16});
      Value f = LLVM::FPExtOp::create(b, k.getLoc(), k.vec2f32Type(), h);
      f = LLVM::FMulOp::create(b, k.getLoc(), f, s2);
      words.push_back(k.bitcast(k.i32(), LLVM::FPTruncOp::create(b, k.getLoc(), v2bf16, f)));
    }
  }
  return words;
}

//===----------------------------------------------------------------------===//
// Producer
//===----------------------------------------------------------------------===//

namespace {
/// 16 bytes of a token row a producer thread moves: from its Dv base (row + seg·Dv-bytes/4) or
/// its RoPE base (row + ropeOff + 32·seg) plus `off`, to one bf16 chunk (copied) or two (e4m3,
/// scaled). Non-RoPE destinations are constant: column block `blk` past the thread's first
/// (2·seg) and chunk `low` in the row's swizzle group.
struct Piece {
  bool rope;
  int64_t off, blk, low;
  bool fp8;
};
/// One batch of loads in flight: the pieces of one token for one round (r) of a block.
struct Unit {
  int64_t round;
  SmallVector<Piece> pieces;
};
} // namespace

namespace {
/// The producer warpgroup of the MLA kernel: gathers each block's tokens (top-k indices or a
/// dense range), dequantizes them into bf16 and writes the interleaved K/V buffer (with
/// crossover, its half of the tokens into both CTAs' buffers) and the block's key mask.
class MLAProducer {
public:
  MLAProducer(KernelBuilder &k, MLACtx &c) : k(k), c(c), p(c.p) {}

  void build() {
    // A round is 32 tokens: lane l of warp w takes token w·8 + l mod 8 and its segment
    // s = l / 8 (a quarter of the row: 128 e4m3 bytes sharing one tile scale, or 256 bf16
    // bytes, plus a quarter of the RoPE part). This CTA converts one round per block (its half,
    // with crossover) or two. The loads are software-pipelined: the next unit's loads (the next
    // block's first, after the last unit) are issued before this unit is converted, so one
    // gather round trip hides behind the conversion instead of adding to it.
    Value warp = k.lshr(c.tid, 5), lane = k.band(c.tid, 31);
    seg = k.lshr(lane, 3);
    slot = k.add(k.mul(warp, 8), k.band(lane, 7));
    tok0 = p.crossover ? k.mul(c.rank, kB / 2) : k.i32(0);
    maskTok = k.band(c.tid, kB - 1); // threads 0–63 write the mask row, every key
    int64_t ropeOff = p.fp8 ? p.dv + 4 * (p.dv / p.quantTile) : 2 * p.dv;
    zero4 = k.vector({k.i32(0), k.i32(0), k.i32(0), k.i32(0)});
    negInf = k.f32(-INFINITY);

    SmallVector<Piece> dvPieces;
    for (int64_t i = 0; i < (p.fp8 ? 8 : 16); ++i)
      dvPieces.push_back(p.fp8 ? Piece{false, 16 * i, i / 4, (2 * i) % 8, true}
                               : Piece{false, 16 * i, i / 8, i % 8, false});
    for (int64_t r = 0; r < rounds; ++r) {
      Unit u{r, {}};
      for (int64_t i = 0; i < 8; ++i)
        u.pieces.push_back(dvPieces[i]);
      for (int64_t i = 0; i < 2; ++i) // RoPE chunks dv/8 + 2·seg + i
        u.pieces.push_back(Piece{true, 16 * i, 0, 0, false});
      units.push_back(u);
      if (!p.fp8) // the second half of a bf16 row
        units.push_back(Unit{r, SmallVector<Piece>(dvPieces.begin() + 8, dvPieces.end())});
    }
    segDv = k.zext64(k.mul(seg, p.fp8 ? p.dv / 4 : p.dv / 2));
    segRope = k.zext64(k.add(k.mul(seg, 32), ropeOff));
    segScale = k.zext64(k.add(k.mul(seg, 4), p.dv));
    // Carried: keys of the next block (one per round) and of the one after, the mask key of this
    // block and the next, and the loads of this block's first unit.
    SmallVector<Value> init;
    for (int64_t r = 0; r < rounds; ++r)
      init.push_back(loadKey(k, c, k.add(k.i32(kB), tokenOf(r))));
    init.push_back(loadKey(k, c, maskTok));
    SmallVector<Value> keys0;
    for (int64_t r = 0; r < rounds; ++r)
      keys0.push_back(loadKey(k, c, tokenOf(r)));
    SmallVector<Value> first = issue(units[0], k.i32(0), keys0[0]);
    init.append(keys0.begin(), keys0.end());
    init.append(first.begin(), first.end());

    k.forLoop(k.i32(0), c.numBlocks, 1, init,
              [&](Value j, ValueRange st) { return convertBlock(j, st); });
  }

private:
  KernelBuilder &k;
  MLACtx &c;
  const MLAPlan &p;
  // This thread's segment of a token row and its token slot in a round; rounds per block.
  Value seg, slot;
  int64_t rounds = p.crossover ? 1 : 2;
  Value tok0, maskTok, zero4, negInf;
  SmallVector<Unit> units;
  static constexpr int64_t nv = 11; // the most vectors of a unit (10) and the scale
  // Byte offsets of this segment's Dv values, RoPE part and tile scale within a token row.
  Value segDv, segRope, segScale;

  Value tokenOf(int64_t r) { return k.add(k.add(tok0, slot), 32 * r); }

  // The loads of unit `u` of block `j` with the key of its token: 16-byte vectors and the tile
  // scale, zeros for a skipped key.
  SmallVector<Value> issue(const Unit &u, Value j, Value key) {
    Value ok = keyOk(k, c, k.add(k.mul(j, kB), tokenOf(u.round)), key);
    SmallVector<Type> types(u.pieces.size(), k.vec4Type());
    types.push_back(k.f32());
    SmallVector<Value> v = k.ifThenElse(
        ok, types,
        [&] {
          Value rowOff = k.mul(k.add(k.mul(k.sext64(c.bIdx), k.sext64(c.kvLen)), k.sext64(key)),
                               p.tokenBytes());
          Value row = k.gep(c.kv, rowOff);
          Value dvBase = k.gep(row, segDv), ropeBase = k.gep(row, segRope);
          SmallVector<Value> out;
          for (const Piece &pc : u.pieces)
            out.push_back(k.loadInvariant(k.vec4Type(),
                                          k.gep(pc.rope ? ropeBase : dvBase, pc.off), 16));
          out.push_back(p.fp8 ? k.loadInvariant(k.f32(), k.gep(row, segScale)) : k.f32(0));
          return out;
        },
        [&] {
          SmallVector<Value> out(u.pieces.size(), zero4);
          out.push_back(k.f32(0));
          return out;
        });
    while (static_cast<int64_t>(v.size()) < nv) // pad to a fixed carried width
      v.insert(v.end() - 1, zero4);
    return v;
  }

  /// Block j with the loop state st: waits for the buffer, converts and stores each unit while
  /// the next unit's loads are in flight, writes the mask row and arrives on the block's
  /// full barrier; returns the next state.
  SmallVector<Value> convertBlock(Value j, ValueRange st) {
    ValueRange nextKeys = st.take_front(rounds);
    Value maskKey = st[rounds];
    ValueRange curKeys = st.slice(rounds + 1, rounds);
    SmallVector<Value> data(st.begin() + 2 * rounds + 1, st.end());
    Value buf = k.band(j, 1);
    Value e0 = k.mul(j, kB);
    Value bufOff = k.add(k.mul(buf, c.sm.kvStride), c.sm.kv);
    Value remoteBar = p.crossover ? k.add(c.peerBase, k.add(k.mul(buf, 8), c.sm.remote(0)))
                                  : Value();
    // Keys two blocks ahead and the next mask key load while this block converts.
    SmallVector<Value> keys2;
    for (int64_t r = 0; r < rounds; ++r)
      keys2.push_back(loadKey(k, c, k.add(k.add(e0, 2 * kB), tokenOf(r))));
    Value nextMaskKey = loadKey(k, c, k.add(k.add(e0, kB), maskTok));
    SmallVector<Value> nextFirst;
    for (size_t ui = 0; ui < units.size(); ++ui) {
      const Unit &u = units[ui];
      SmallVector<Value> pending = ui + 1 < units.size()
                                       ? issue(units[ui + 1], j, curKeys[units[ui + 1].round])
                                       : issue(units[0], k.add(j, 1), nextKeys[0]);
      if (ui == 0) {
        Value use = k.lshr(j, 1);
        k.mbarrierWait(c.ptr(k, k.add(k.mul(buf, 8), c.sm.empty(0))),
                       k.bxor(k.band(use, 1), k.i32(1)));
        if (p.crossover)
          k.ifThen(k.cmp(P::eq, c.tid, 0), [&] {
            k.mbarrierArriveExpectTx(c.ptr(k, k.add(k.mul(buf, 8), c.sm.remote(0))),
                                     kB / 2 * p.dk() * 2);
          });
      }
      // Destinations (interleaved layout, MLAPlan): 16-byte chunk (blk, low) of this thread's
      // segment of token t is rowBase + (8·blk + low)·kB·16. The 8 tokens of a segment's lanes
      // fill 128 contiguous bytes per store — one line, locally and through st.async.
      Value t = tokenOf(u.round);
      Value tOff = k.add(bufOff, k.mul(t, 16));
      Value rowBase = k.add(tOff, k.mul(seg, 16 * kB * 16));
      auto put = [&](Value off, Value v4) {
        k.store(v4, c.ptr(k, off), 16);
        if (p.crossover)
          k.stAsync(k.add(c.peerBase, off), v4, remoteBar);
      };
      auto dst = [&](int64_t blk, int64_t low) {
        return k.add(rowBase, (8 * blk + low) * kB * 16);
      };
      for (size_t i = 0; i < u.pieces.size(); ++i) {
        const Piece &pc = u.pieces[i];
        if (pc.rope) {
          Value chunk = k.add(k.mul(seg, 2), p.dv / 8 + pc.off / 16);
          put(k.add(tOff, k.mul(chunk, kB * 16)), data[i]);
        } else if (!pc.fp8) {
          put(dst(pc.blk, pc.low), data[i]);
        } else {
          SmallVector<Value> w = dequantE4M3x16(k, data[i], data.back());
          put(dst(pc.blk, pc.low), k.vector(ArrayRef<Value>(w).take_front(4)));
          put(dst(pc.blk, pc.low + 1), k.vector(ArrayRef<Value>(w).drop_front(4)));
        }
      }
      if (ui + 1 < units.size())
        data = pending;
      else
        nextFirst = pending;
    }
    k.ifThen(k.cmp(P::ult, c.tid, kB), [&] {
      Value ok = keyOk(k, c, k.add(e0, maskTok), maskKey);
      k.store(k.select(ok, k.f32(0), negInf),
              c.ptr(k, k.add(k.add(k.mul(buf, kB * 4), c.sm.mask), k.mul(c.tid, 4))));
    });
    k.fenceProxyAsyncShared();
    k.mbarrierArrive(c.ptr(k, k.add(k.mul(buf, 8), c.sm.full(0))));
    SmallVector<Value> next(keys2.begin(), keys2.end());
    next.push_back(nextMaskKey);
    next.append(nextKeys.begin(), nextKeys.end());
    next.append(nextFirst.begin(), nextFirst.end());
    return next;
  }
};
} // namespace

static void buildMLAProducer(KernelBuilder &k, MLACtx &c) { MLAProducer(k, c).build(); }

//===----------------------------------------------------------------------===//
// Consumers
//===----------------------------------------------------------------------===//


namespace {
/// Consumer `which` (0: S, softmax, left half of O; 1: right half of O). Its register budget is
/// set first thing: ptxas plans each warpgroup's WGMMA pipeline in the region it dominates.
class MLAConsumer {
public:
  MLAConsumer(KernelBuilder &k, MLACtx &c, int64_t which) : k(k), c(c), p(c.p), which(which) {}

  /// The consumer's loop over the key blocks: {l0, l1, O...} (consumer 1: l = 0).
  SmallVector<Value> build() {
    int64_t regs = which == 0 ? p.consumerRegs : p.consumer1Regs;
    if (regs != MLAPlan::kEntryRegs)
      NVVM::SetMaxRegisterOp::create(k.builder(), k.getLoc(), regs,
                                     regs > MLAPlan::kEntryRegs
                                         ? NVVM::SetMaxRegisterAction::increase
                                         : NVVM::SetMaxRegisterAction::decrease);
    cw = k.i32(which);
    AccGeom f = accGeom(k, c.tid);
    ct = f.ct;
    colBase = f.colBase;
    quadLead = f.quadLead;
    rows[0] = f.rows[0];
    rows[1] = f.rows[1];
    negInf = k.f32(-INFINITY);
    qAddr = c.addr(k, c.sm.q);
    pAddr = c.addr(k, c.sm.p);
    SmallVector<Value> zeros(nO, k.f32(0));
    return which == 0 ? softmaxLoop(zeros) : outputLoop(zeros);
  }

private:
  KernelBuilder &k;
  MLACtx &c;
  const MLAPlan &p;
  int64_t which;
  // The named barrier of this warpgroup (minus one), the thread's place in the fragment.
  Value cw, ct, colBase, quadLead;
  Value rows[2];
  int64_t nS = kB / 2, halfV = p.dv / 2, nO = halfV / 2;
  Value negInf, qAddr, pAddr;
  double scaleLog2 = p.softmaxScale * kLog2e;

  void waitFull(Value buf, Value phase) {
    k.mbarrierWait(c.ptr(k, k.add(k.mul(buf, 8), c.sm.full(0))), phase);
    if (p.crossover)
      k.mbarrierWait(c.ptr(k, k.add(k.mul(buf, 8), c.sm.remote(0))), phase);
  }
  // One release per warpgroup, once all its WGMMAs have read the buffer: here and, with
  // crossover, in the peer (whose producer also writes into this CTA's buffer).
  void release(Value buf) {
    NVVM::BarrierOp::create(k.builder(), k.getLoc(), Type(), k.add(cw, 1), k.i32(128),
                            NVVM::BarrierReductionAttr(), Value());
    k.ifThen(k.cmp(P::eq, ct, 0), [&] {
      int64_t off = c.sm.empty(0);
      k.mbarrierArrive(c.ptr(k, k.add(k.mul(buf, 8), off)));
      if (p.crossover)
        k.mbarrierArriveCluster(k.add(c.peerBase, k.add(k.mul(buf, 8), off)));
    });
  }
  Value vDesc(Value bufOff, int64_t kk, Value half) {
    // V rows (tokens) kk·16 .. +16 of this warpgroup's Dv/2 columns, MN-major interleaved: core
    // matrices of 8 tokens × 8 columns; the next 8 tokens 128 bytes on (LBO), the next 8
    // columns kB·16 (SBO).
    Value a = k.add(c.addr(k, 0), k.add(bufOff, k.mul(half, halfV / 8 * kB * 16)));
    return k.wgmmaDescriptor(k.add(a, kk * 16 * 16), 128, kB * 16,
                             KernelBuilder::WgmmaLayout::Interleave);
  }

  /// Consumer 0: per block S = Q·Kᵀ, the online softmax, P and the row factors handed to
  /// consumer 1, and the left half of O += P·V.
  SmallVector<Value> softmaxLoop(SmallVector<Value> &zeros) {
    SmallVector<Value> inits = {negInf, negInf, k.f32(0), k.f32(0)};
    inits.append(zeros);
    SmallVector<Value> st = k.forLoop(k.i32(0), c.numBlocks, 1, inits,
                                      [&](Value j, ValueRange st) { return softmaxBlock(j, st); });
    return SmallVector<Value>(st.begin() + 2, st.end());
  }

  /// Consumer 0's work on block j with the loop state st = {m0, m1, l0, l1, O...}.
  SmallVector<Value> softmaxBlock(Value j, ValueRange st) {
    Value buf = k.band(j, 1);
    Value bufOff = k.add(k.mul(buf, c.sm.kvStride), c.sm.kv);
    waitFull(buf, k.band(k.lshr(j, 1), 1));
    Value kAddr = k.add(c.addr(k, 0), bufOff);
    // Each step's descriptors are a base descriptor plus the step's offset (address field
    // in 16-byte units, no carry: shared memory is < 256 KiB). K (K-major, interleaved):
    // the next 8 tokens 128 bytes on (SBO), the next 8 columns kB·16 (LBO). Q (128-byte
    // swizzle) is derived from a swizzled descriptor of K's address minus the distance —
    // which depends on the buffer, so the 36 Q descriptors are not hoisted out of the loop
    // into (spilled) registers.
    Value kDesc = k.wgmmaDescriptor(kAddr, kB * 16, 128, KernelBuilder::WgmmaLayout::Interleave);
    Value qFrom = k.sub(k.wgmmaDescriptor(kAddr, 16, 1024),
                        k.zext64(k.lshr(k.sub(kAddr, qAddr), 4)));
    k.wgmmaFence();
    SmallVector<Value> acc(nS);
    for (int64_t kk = 0; kk < p.dk() / 16; ++kk) {
      int64_t qOff = (kk / 4) * MLAPlan::kHeadsPerCTA * 128 + (kk % 4) * 32;
      Value kd = k.add(kDesc, k.i64(kk * 2 * kB * 16 >> 4));
      acc = k.wgmmaSS(acc, k.add(qFrom, k.i64(qOff >> 4)), kd, kB, /*accumulate=*/kk > 0,
                      /*transB=*/false);
    }
    k.wgmmaCommit();
    k.wgmmaWait(0);
    // Scale, mask (per key, from the producer), online softmax in the log2 domain.
    Value maskOff = k.add(k.mul(buf, kB * 4), c.sm.mask);
    SmallVector<Value> s(nS), rowVals[2];
    for (int64_t cb = 0; cb < kB / 8; ++cb) {
      Value col = k.add(colBase, cb * 8);
      Value m2 = k.load(k.vec2f32Type(), c.ptr(k, k.add(maskOff, k.mul(col, 4))), 8);
      for (int64_t i = 4 * cb; i < 4 * cb + 4; ++i) {
        s[i] = k.fma(acc[i], k.f32(scaleLog2), k.extract(m2, i % 2));
        rowVals[accRow(i)].push_back(s[i]);
      }
    }
    Value mNew[2], mUse[2], alpha[2];
    for (int r = 0; r < 2; ++r) {
      Value mx = reduceTree(k, rowVals[r], true);
      mx = k.fmax(mx, k.shflXor(mx, 1));
      mx = k.fmax(mx, k.shflXor(mx, 2));
      mNew[r] = k.fmax(st[r], mx);
      mUse[r] = k.select(k.fcmp(LLVM::FCmpPredicate::oeq, mNew[r], negInf), k.f32(0),
                         mNew[r]);
      alpha[r] = k.exp2(k.fsub(st[r], mUse[r]));
    }
    SmallVector<Value> pr(nS), sums[2];
    for (int64_t i = 0; i < nS; ++i) {
      pr[i] = k.exp2(k.fsub(s[i], mUse[accRow(i)]));
      sums[accRow(i)].push_back(pr[i]);
    }
    // Row sums now: the probabilities are dead before the P·V WGMMA.
    Value lNew[2] = {k.fma(st[2], alpha[0], reduceTree(k, sums[0], false)),
                     k.fma(st[3], alpha[1], reduceTree(k, sums[1], false))};
    SmallVector<Value> words;
    for (int64_t i = 0; i < nS; i += 2)
      words.push_back(k.packBF16x2(pr[i], pr[i + 1]));
    // P and the row factors for consumer 1, once it has read the previous ones.
    k.mbarrierWait(c.ptr(k, c.sm.pEmpty()), k.bxor(k.band(j, 1), k.i32(1)));
    for (int64_t i = 0; i < nS; i += 2) {
      int64_t r = accRow(i), cb = i / 4;
      Value off = k.add(k.mul(rows[r], 128),
                        k.add(k.shl(k.bxor(k.i32(cb), k.band(rows[r], 7)), 4),
                              k.mul(colBase, 2)));
      k.store(words[i / 2], c.ptr(k, k.add(off, c.sm.p)));
    }
    k.ifThen(quadLead, [&] {
      for (int r = 0; r < 2; ++r)
        k.store(alpha[r], c.ptr(k, k.add(k.mul(rows[r], 4), c.sm.alpha)));
    });
    k.fenceProxyAsyncShared();
    k.mbarrierArrive(c.ptr(k, c.sm.pFull()));
    SmallVector<Value> o(st.begin() + 4, st.end());
    for (int64_t i = 0; i < nO; ++i)
      o[i] = k.fmul(o[i], alpha[accRow(i)]);
    k.wgmmaFence();
    for (int64_t kk = 0; kk < kB / 16; ++kk)
      o = k.wgmmaRS(o, ArrayRef<Value>(words).slice(4 * kk, 4), vDesc(bufOff, kk, k.i32(0)),
                    halfV, /*transB=*/true);
    k.wgmmaCommit();
    k.wgmmaWait(0);
    release(buf);
    SmallVector<Value> r = {mNew[0], mNew[1], lNew[0], lNew[1]};
    r.append(o.begin(), o.end());
    return r;
  }

  /// Consumer 1: per block the right half of O += P·V, P read from shared memory.
  SmallVector<Value> outputLoop(SmallVector<Value> &zeros) {
    SmallVector<Value> st = k.forLoop(k.i32(0), c.numBlocks, 1, zeros,
                                      [&](Value j, ValueRange st) {
      Value buf = k.band(j, 1);
      Value bufOff = k.add(k.mul(buf, c.sm.kvStride), c.sm.kv);
      k.mbarrierWait(c.ptr(k, c.sm.pFull()), k.band(j, 1));
      waitFull(buf, k.band(k.lshr(j, 1), 1));
      Value alpha[2];
      for (int r = 0; r < 2; ++r)
        alpha[r] = k.load(k.f32(), c.ptr(k, k.add(k.mul(rows[r], 4), c.sm.alpha)));
      SmallVector<Value> o(st.begin(), st.end());
      for (int64_t i = 0; i < nO; ++i)
        o[i] = k.fmul(o[i], alpha[accRow(i)]);
      k.wgmmaFence();
      for (int64_t kk = 0; kk < kB / 16; ++kk)
        o = k.wgmmaSS(o, k.wgmmaDescriptor(k.add(pAddr, kk * 32), 16, 1024),
                      vDesc(bufOff, kk, k.i32(1)), halfV, /*accumulate=*/true,
                      /*transB=*/true);
      k.wgmmaCommit();
      k.wgmmaWait(0);
      k.mbarrierArrive(c.ptr(k, c.sm.pEmpty()));
      release(buf);
      return o;
    });
    SmallVector<Value> fin = {k.f32(0), k.f32(0)};
    fin.append(st.begin(), st.end());
    return fin;
  }
};
} // namespace

static SmallVector<Value> buildMLAConsumer(KernelBuilder &k, MLACtx &c, int64_t which) {
  return MLAConsumer(k, c, which).build();
}

/// After both consumers' loops: O / l as bf16 into each warpgroup's half of out[b, qi, head, :].
/// Row sums (per thread until here) are reduced over the quad by consumer 0 and handed to
/// consumer 1 through shared memory and an mbarrier.
static void buildMLAEpilogue(KernelBuilder &k, MLACtx &c, ArrayRef<Value> fin) {
  const MLAPlan &p = c.p;
  Value isS = k.cmp(P::ult, c.tid, 256);
  AccGeom f = accGeom(k, c.tid);
  Value colBase = f.colBase, quadLead = f.quadLead;
  Value rows[2] = {f.rows[0], f.rows[1]};
  int64_t halfV = p.dv / 2, nO = halfV / 2;
  Value l[2];
  for (int r = 0; r < 2; ++r) {
    l[r] = k.fadd(fin[r], k.shflXor(fin[r], 1));
    l[r] = k.fadd(l[r], k.shflXor(l[r], 2));
  }
  SmallVector<Value> got = k.ifThenElse(
      isS, TypeRange{k.f32(), k.f32()},
      [&] {
        k.ifThen(quadLead, [&] {
          for (int r = 0; r < 2; ++r)
            k.store(l[r], c.ptr(k, k.add(k.mul(rows[r], 4), c.sm.rowSum)));
        });
        k.mbarrierArrive(c.ptr(k, c.sm.lFull()));
        return SmallVector<Value>{l[0], l[1]};
      },
      [&] {
        k.mbarrierWait(c.ptr(k, c.sm.lFull()), k.i32(0));
        SmallVector<Value> v;
        for (int r = 0; r < 2; ++r)
          v.push_back(k.load(k.f32(), c.ptr(k, k.add(k.mul(rows[r], 4), c.sm.rowSum))));
        return v;
      });
  ArrayRef<Value> o = fin.drop_front(2);
  Value half = k.select(isS, k.i64(0), k.i64(halfV * 2));
  for (int r = 0; r < 2; ++r) {
    Value inv = k.select(k.fcmp(LLVM::FCmpPredicate::ogt, got[r], k.f32(0)),
                         k.fdiv(k.f32(1.0), got[r]), k.f32(0));
    Value head = k.add(k.mul(c.grp, MLAPlan::kHeadsPerCTA), rows[r]);
    Value rowIdx = k.add(k.mul(k.add(k.mul(c.bIdx, c.sq), c.qi), p.heads), head);
    Value base = k.add(k.mul(k.sext64(rowIdx), p.dv * 2), half);
    for (int64_t i = 0; i < nO; i += 2) {
      if (accRow(i) != r)
        continue;
      Value w = k.packBF16x2(k.fmul(o[i], inv), k.fmul(o[i + 1], inv));
      Value col = k.add(k.zext64(k.mul(colBase, 2)), k.i64(2 * (i / 4) * 8));
      k.store(w, k.gep(c.out, k.add(base, col)));
    }
  }
}

//===----------------------------------------------------------------------===//
// The kernel's steps (attnk.mla.*, MLALowering.cpp)
//===----------------------------------------------------------------------===//

SmallVector<Value> mlir::attn::nvvm::buildMLAWork(KernelBuilder &k) {
  return {k.tidX(), k.ctaidX(), k.ctaidY(), k.ctaidZ()};
}

void mlir::attn::nvvm::bindMLAParams(MLACtx &c, ValueRange params) {
  c.q = params[0];
  c.kv = params[1];
  c.idx = params[2];
  c.lens = params[3];
  c.out = params[4];
  c.sq = params[6];
  c.kvLen = params[7];
  c.topk = params[8];
}

void mlir::attn::nvvm::bindMLAWork(MLACtx &c, ValueRange work) {
  c.tid = work[0];
  c.grp = work[1];
  c.qi = work[2];
  c.bIdx = work[3];
  if (work.size() < kMLAWorkIds + kMLAKeyValues)
    return;
  c.len = work[4];
  c.limit = work[5];
  c.entries = work[6];
  c.numBlocks = work[7];
  if (work.size() < kMLAWorkIds + kMLAKeyValues + kMLACrossoverValues)
    return;
  c.rank = work[8];
  c.peerBase = work[9];
}

/// This query token's keys: the batch element's length (seq_lens, clamped to the cache), the
/// last key it sees (causal: the cache ends with the Sq new tokens) and the entries to visit.
static void buildKeys(KernelBuilder &k, MLACtx &c) {
  const MLAPlan &p = c.p;
  Type i32 = k.i32();
  c.len = c.kvLen;
  if (p.seqLens)
    c.len = k.ifThenElse(
        k.isNull(c.lens), TypeRange{i32}, [&] { return SmallVector<Value>{c.kvLen}; },
        [&] {
          Value l = k.loadInvariant(i32, k.gep(c.lens, k.mul(k.sext64(c.bIdx), int64_t(4))));
          return SmallVector<Value>{k.smax(k.smin(l, c.kvLen), k.i32(0))};
        })[0];
  c.limit = p.causal ? k.add(k.sub(c.len, c.sq), c.qi) : k.add(c.len, -1);
  c.entries = p.sparse ? c.topk : k.smax(k.smin(c.len, k.add(c.limit, 1)), k.i32(0));
  c.numBlocks = k.ceilDiv(c.entries, kB);
}

SmallVector<Value> mlir::attn::nvvm::buildMLAPrologue(KernelBuilder &k, MLACtx &c) {
  const MLAPlan &p = c.p;
  if (p.crossover) {
    c.rank = k.clusterRank();
    c.peerBase = k.mapaShared(k.sharedAddr(c.base), k.bxor(c.rank, k.i32(1)));
  }
  buildKeys(k, c);
  k.ifThen(k.cmp(P::eq, c.tid, 0), [&] {
    for (int64_t i = 0; i < 2; ++i) {
      k.mbarrierInit(c.ptr(k, c.sm.full(i)), 128);
      k.mbarrierInit(c.ptr(k, c.sm.remote(i)), 1);
      k.mbarrierInit(c.ptr(k, c.sm.empty(i)), 2 * p.clusterSize());
    }
    k.mbarrierInit(c.ptr(k, c.sm.pFull()), 128);
    k.mbarrierInit(c.ptr(k, c.sm.pEmpty()), 128);
    k.mbarrierInit(c.ptr(k, c.sm.lFull()), 128);
    k.fenceMbarrierInit();
  });
  // Q: 64 heads × Dk, swizzled like K (72 chunks of 8 bf16 per row; 12 per thread).
  int64_t chunksPerRow = p.dk() / 8;
  for (int64_t it = 0; it < MLAPlan::kHeadsPerCTA * chunksPerRow / p.threads(); ++it) {
    Value chunk = k.add(c.tid, it * p.threads());
    Value row = k.udiv(chunk, chunksPerRow), ch = k.urem(chunk, chunksPerRow);
    Value head = k.add(k.mul(c.grp, MLAPlan::kHeadsPerCTA), row);
    Value rowIdx = k.add(k.mul(k.add(k.mul(c.bIdx, c.sq), c.qi), p.heads), head);
    Value elem = k.add(k.mul(k.sext64(rowIdx), p.dk()), k.zext64(k.mul(ch, 8)));
    Value v = k.loadInvariant(k.vec4Type(), k.gep(c.q, k.mul(elem, int64_t(2))), 16);
    k.store(v, c.ptr(k, k.add(k.i32(c.sm.q), swizzledChunk(k, row, ch, 64))), 16);
  }
  k.fenceProxyAsyncShared();
  // Every CTA of the cluster has initialized its barriers before any remote arrive or store.
  if (p.crossover)
    k.clusterSync();
  else
    k.barrier(0, 0);
  SmallVector<Value> out = {c.len, c.limit, c.entries, c.numBlocks};
  if (p.crossover)
    out.append({c.rank, c.peerBase});
  return out;
}

void mlir::attn::nvvm::buildMLAProducerRole(KernelBuilder &k, MLACtx &c) { buildMLAProducer(k, c); }

void mlir::attn::nvvm::buildMLAConsumerRoles(KernelBuilder &k, MLACtx &c) {
  SmallVector<Type> types(2 + c.p.dv / 4, k.f32());
  SmallVector<Value> fin = k.ifThenElse(
      k.cmp(P::ult, c.tid, 256), types, [&] { return buildMLAConsumer(k, c, 0); },
      [&] { return buildMLAConsumer(k, c, 1); });
  buildMLAEpilogue(k, c, fin);
}
