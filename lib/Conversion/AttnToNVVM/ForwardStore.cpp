//===- ForwardStore.cpp - the forward kernel's output stores --------------===//
//
// What this file is: how `<name>_decode` / `<name>_prefill` writes its finished, normalized O
// (one split; split-KV partials and merges: ForwardMerge.cpp) — prefill through the freed query
// tile in whole row chunks, prefill on the persistent grid in 16-byte chunks after a transpose
// over each quad, decode word by word from the accumulator fragment; and decode's log-sum-exp
// output.
//
//===----------------------------------------------------------------------===//

#include "ForwardKernelImpl.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::nvvm;
using P = LLVM::ICmpPredicate;

/// O's accumulator pair i, i + 1 (row r) times the row's 1 / l, as bf16x2.
static Value normalizedPair(KernelBuilder &k, ArrayRef<Value> o, const Value inv[2], int64_t i,
                            int r) {
  return k.packBF16x2(k.fmul(o[i], inv[r]), k.fmul(o[i + 1], inv[r]));
}

// Prefill without the persistent grid: O leaves through this warpgroup's query tile, which no
// WGMMA reads any more. Each warp writes its 16 rows there in the tile's swizzled layout
// (conflict-free 4-byte stores from the accumulator fragment), then reads them back as 16-byte
// chunks and stores whole 128-byte row segments — 4 times fewer global stores than one word
// per store, and no half-written sectors, whose drain held the warps at exit
// (docs/benchmarks/gpu-prefill.md). An 8-bit query tile holds half of O's row: two
// passes.
static void storeStaged(KernelBuilder &k, Ctx &c, Value wg, ArrayRef<Value> o, const Value inv[2],
                        Value qBase, const Frag &f) {
  const ForwardPlan &p = c.p;
  int64_t nO = o.size();
  int64_t tileBytes = p.qTileBytes(), rowBytes = tileBytes / 64;
  int64_t chunks = p.headDim * 2 / 16, perPass = rowBytes / 16;
  Value tile = k.add(k.mul(wg, tileBytes), c.sm.q);
  // The warp's first row and the lane, from the fragment's row and column (live through the
  // loop anyway: values kept from before it would cost registers there).
  Value warpRow = k.band(f.r[0], ~int64_t(15));
  Value ln = k.bor(k.shl(k.band(f.r[0], 7), 2), k.lshr(f.colBase, 1));
  k.barrierSync(k.add(wg, 6), 128); // every warp is past its last Q·Kᵀ
  for (int64_t pass = 0; pass < chunks / perPass; ++pass) {
    for (int64_t i = 0; i < nO; i += 2) {
      int64_t chunk = i / 4; // 8 columns per chunk: column (i / 4) · 8 + colBase
      if (chunk / perPass != pass)
        continue;
      int r = accRow(i);
      Value w = normalizedPair(k, o, inv, i, r);
      Value off = k.add(swizzledChunk(k, f.r[r], k.i32(chunk % perPass), 64), k.shl(f.colBase, 1));
      k.store(w, sptr(k, c, k.add(tile, off)));
    }
    k.syncWarp();
    // The warp's 16 rows × perPass chunks, 32 at a time.
    for (int64_t it = 0; it < 16 * perPass / 32; ++it) {
      Value idx = k.add(ln, it * 32);
      Value row = k.add(warpRow, k.udiv(idx, perPass));
      Value cc = k.urem(idx, perPass);
      Value v = k.load(k.vec4Type(), sptr(k, c, k.add(tile, swizzledChunk(k, row, cc, 64))), 16);
      Value tok = k.add(qBase, k.udiv(row, p.pack));
      Value ok = k.band(k.cmp(P::slt, row, k.i32(p.rows())), k.cmp(P::slt, tok, c.qLen(k)));
      k.ifThen(ok, [&] {
        Value head = k.add(c.headBase, k.urem(row, p.pack));
        Value col = k.add(k.mul(cc, 8), pass * perPass * 8);
        k.store(v, outAt(k, c, outRowOffset(k, c, tok, head), col), 16);
      });
    }
    k.syncWarp();
  }
}

// The persistent grid: O leaves as 16-byte stores straight from registers. The four threads
// of a quad hold columns 2t, 2t + 1 of every 8-column chunk of their row; a 4 × 4 transpose
// over the quad (two shfl.xor stages, 2 shuffles each per four chunks) gives thread t all
// of chunk 4g + t, so each warp store writes whole 32-byte sectors (no smem, no barrier).
static void storeQuads(KernelBuilder &k, Ctx &c, ArrayRef<Value> o, const Value inv[2],
                       const Value rowOk[2], const Value qi[2], const Value head[2],
                       const Frag &f) {
  const ForwardPlan &p = c.p;
  Value t = k.lshr(f.colBase, 1); // lane mod 4
  Value hi2 = k.cmp(P::ne, k.band(t, 2), k.i32(0)), hi1 = k.cmp(P::ne, k.band(t, 1), k.i32(0));
  int64_t groups = p.headDim / 32; // four 8-column chunks each
  for (int r = 0; r < 2; ++r) {
    SmallVector<Value> vecs;
    for (int64_t g = 0; g < groups; ++g) {
      Value a[4];
      for (int64_t cc = 0; cc < 4; ++cc) {
        int64_t i = (4 * g + cc) * 4 + 2 * r; // accCol(i) = chunk · 8 + colBase, row r
        a[cc] = normalizedPair(k, o, inv, i, r);
      }
      // a[c] of thread t is M[t][c]; afterwards a[s] = M[s][t] (blocks of 2 × 2, then within).
      for (int64_t kk = 0; kk < 2; ++kk) {
        Value recv = k.shflXor(k.select(hi2, a[kk], a[kk + 2]), 2);
        a[kk + 2] = k.select(hi2, a[kk + 2], recv);
        a[kk] = k.select(hi2, recv, a[kk]);
      }
      for (int64_t kk = 0; kk < 4; kk += 2) {
        Value recv = k.shflXor(k.select(hi1, a[kk], a[kk + 1]), 1);
        a[kk + 1] = k.select(hi1, a[kk + 1], recv);
        a[kk] = k.select(hi1, recv, a[kk]);
      }
      vecs.push_back(k.vector({a[0], a[1], a[2], a[3]}));
    }
    k.ifThen(rowOk[r], [&] {
      Value base64 = outRowOffset(k, c, qi[r], head[r]);
      for (int64_t g = 0; g < groups; ++g) {
        Value col = k.mul(k.add(t, 4 * g), 8);
        k.store(vecs[g], outAt(k, c, base64, col), 16);
      }
    });
  }
}

void mlir::attn::nvvm::storeLse(KernelBuilder &k, Ctx &c, Value ct, const Value m[2],
                                 const Value l[2], const Value rowOk[2], const Value qi[2],
                                 const Value head[2]) {
  if (!c.lse)
    return;
  Value lead = k.cmp(P::eq, k.band(ct, 3), 0);
  for (int r = 0; r < 2; ++r) {
    Value v = k.select(k.fcmp(LLVM::FCmpPredicate::ogt, l[r], k.f32(0)),
                       k.fmul(k.fadd(m[r], k.log2(l[r])), k.f32(M_LN2)), k.f32(-INFINITY));
    k.ifThen(k.band(rowOk[r], lead), [&] {
      Value row = k.add(k.mul(k.add(c.qRowBase(k), qi[r]), c.p.qHeads), head[r]);
      k.store(v, k.gep(c.lse, k.mul(k.sext64(row), int64_t(4))));
    });
  }
}

void mlir::attn::nvvm::storeOutput(KernelBuilder &k, Ctx &c, Value wg, ArrayRef<Value> o,
                                   const Value inv[2], const Value rowOk[2], const Value qi[2],
                                   const Value head[2], Value qBase, const Frag &f) {
  const ForwardPlan &p = c.p;
  if (p.prefill && !p.persistent) // (persistent: its item loop would spill 100 bytes)
    return storeStaged(k, c, wg, o, inv, qBase, f);
  if (p.prefill)
    return storeQuads(k, c, o, inv, rowOk, qi, head, f);
  for (int r = 0; r < 2; ++r) {
    k.ifThen(rowOk[r], [&] {
      Value base64 = outRowOffset(k, c, qi[r], head[r]);
      for (int64_t i = 0; i < int64_t(o.size()); i += 2) {
        if (accRow(i) != r)
          continue;
        Value w = normalizedPair(k, o, inv, i, r);
        k.store(w, outAt(k, c, base64, k.add(f.colBase, (i / 4) * 8)));
      }
    });
  }
}
