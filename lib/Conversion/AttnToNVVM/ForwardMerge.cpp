//===- ForwardMerge.cpp - merges of partial softmax states ----------------===//
//
// What this file is: where `<name>_decode` combines partial (m, l, O) states: its two consumer
// warpgroups' (through shared memory), and the split-KV epilogue — a split's partial written to
// the workspace for the combine kernels (CombineKernel.cpp), or the splits of one (group, batch)
// merged inside the kernel when it runs in a cluster of them (distributed shared memory).
//
//===----------------------------------------------------------------------===//

#include "ForwardKernelImpl.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::nvvm;
using P = LLVM::ICmpPredicate;

/// Two partial states (m0, m1, l0, l1, O...) of the same rows and fragment layout merged: each
/// row rescaled to the common max (mergeRow) and the O fragments added.
static SmallVector<Value> mergeStates(KernelBuilder &k, ValueRange st, ArrayRef<Value> other) {
  SmallVector<Value> out(st.begin(), st.end());
  Value a[2], b[2];
  for (int r = 0; r < 2; ++r) {
    RowMerge mr = mergeRow(k, st[r], st[2 + r], other[r], other[2 + r]);
    a[r] = mr.a;
    b[r] = mr.b;
    out[r] = mr.m;
    out[2 + r] = mr.l;
  }
  for (size_t i = 4; i < st.size(); ++i) {
    int64_t r = accRow(int64_t(i) - 4);
    out[i] = k.fma(st[i], a[r], k.fmul(other[i], b[r]));
  }
  return out;
}

/// Two consumer warpgroups hold partial (m, l, O) over disjoint tiles with the same fragment
/// layout: warpgroup 1 parks its state in shared memory (thread-major, conflict-free; the
/// pipeline buffers are free once both loops are done) and warpgroup 0 rescales both to the
/// common max and adds. Returns warpgroup 0's merged state (warpgroup 1's is not used after).
SmallVector<Value> mlir::attn::nvvm::mergeConsumers(KernelBuilder &k, Ctx &c, Value wg, Value ct,
                                                    SmallVector<Value> st) {
  int64_t n = st.size(); // m0, m1, l0, l1, O...
  // The pipeline buffers (stages, then conversion buffers) are idle once both loops are done.
  Value slot = k.add(k.i32(c.sm.stage), k.mul(ct, 4));
  auto addr = [&](int64_t i) { return sptr(k, c, k.add(slot, i * 128 * 4)); };
  // Both loops done first: until then the producer may still convert (and TMA still land) in
  // the buffers the state goes to.
  k.barrier(2, 256);
  k.ifThen(k.cmp(P::eq, wg, 1), [&] {
    for (int64_t i = 0; i < n; ++i)
      k.store(st[i], addr(i));
  });
  k.barrier(2, 256);
  SmallVector<Value> merged = k.ifThenElse(
      k.cmp(P::eq, wg, 0), TypeRange(ValueRange(st)),
      [&] {
        SmallVector<Value> other(n);
        for (int64_t i = 0; i < n; ++i)
          other[i] = k.load(k.f32(), addr(i));
        return mergeStates(k, st, other);
      },
      [&] { return SmallVector<Value>(st.begin(), st.end()); });
  return merged;
}

/// The split-KV partial of warpgroup 0's merged state (O unnormalized, m, l) into the workspace,
/// for the combine kernel.
void mlir::attn::nvvm::storePartial(KernelBuilder &k, Ctx &c, Value ct, ArrayRef<Value> fin,
                                    const Value rowOk[2], const Frag &f) {
  const ForwardPlan &p = c.p;
  int64_t nO = p.headDim / 2;
  Value m[2] = {fin[0], fin[1]}, l[2] = {fin[2], fin[3]};
  ArrayRef<Value> o = fin.drop_front(4);
  int64_t W = p.workspaceFloatsPerSplit();
  Value slot = k.add(k.mul(k.add(k.mul(c.bIdx, p.groups()), c.grp), c.numSplits), c.split);
  Value base64 = k.mul(k.sext64(slot), W * 4);
  Value isQuadLead = k.cmp(P::eq, k.band(ct, 3), 0);
  for (int r = 0; r < 2; ++r) {
    k.ifThen(rowOk[r], [&] {
      Value rowOff = k.add(base64, k.mul(k.sext64(f.r[r]), p.headDim * 4));
      for (int64_t i = 0; i < nO; i += 2) {
        if (accRow(i) != r)
          continue;
        Value col = k.add(f.colBase, (i / 4) * 8);
        Value v = k.vector({o[i], o[i + 1]});
        k.store(v, k.gep(c.ws, k.add(rowOff, k.mul(k.sext64(col), int64_t(4)))), 8);
      }
      k.ifThen(isQuadLead, [&] {
        Value mOff =
            k.add(base64, k.mul(k.sext64(k.add(f.r[r], p.rows() * p.headDim)), int64_t(4)));
        k.store(m[r], k.gep(c.ws, mOff));
        k.store(l[r], k.gep(c.ws, k.add(mOff, p.rows() * 4)));
      });
    });
  }
}

/// Split-KV merged inside a cluster (the launcher gives each cluster the num_splits CTAs of one
/// (group, batch) along x, so the cluster rank is the split): each split parks warpgroup 0's
/// merged state in its own idle pipeline buffers (thread-major, as mergeConsumers); after a
/// cluster barrier, warpgroup 0 of rank r merges its own state with every peer's, read through
/// distributed shared memory (weights 2^(m_s − max m), as the combine kernels), and writes the
/// column groups g ≡ r (mod num_splits) as bf16; a second barrier keeps each CTA's shared memory
/// alive until its peers have read it. The producers take part in both barriers.
void mlir::attn::nvvm::clusterMerge(KernelBuilder &k, Ctx &c, Value wg, Value ct,
                                    ArrayRef<Value> fin, const Value rowOk[2], const Value qi[2],
                                    const Value head[2], const Frag &f) {
  const ForwardPlan &p = c.p;
  int64_t nO = p.headDim / 2, groups = nO / 4;
  Value n = c.numSplits;
  // A cluster that is not the splits of one (group, batch) would merge the wrong partials.
  k.ifThen(k.cmp(P::ne, k.clusterSize(), n), [&] { k.trap(); });
  Value slot = k.add(k.i32(c.sm.stage), k.mul(ct, 4));
  Value isWg0 = k.cmp(P::eq, wg, 0);
  k.ifThen(isWg0, [&] {
    for (size_t i = 0; i < fin.size(); ++i)
      k.store(fin[i], sptr(k, c, k.add(slot, int64_t(i) * 128 * 4)));
  });
  k.clusterSync();
  k.ifThen(isWg0, [&] {
    Value rank = k.clusterRank();
    Value own = k.sharedAddr(sptr(k, c, slot));
    // The CTA's own state is in registers; each peer's (ranks rank + 1, ..., rank + n − 1, mod n)
    // is loaded whole before any of it is used: one round trip through distributed shared
    // memory per peer, not one per column group.
    SmallVector<Value> init(fin.begin(), fin.end());
    SmallVector<Value> acc = k.forLoop(k.i32(1), n, 1, init, [&](Value j, ValueRange st) {
      Value peer = k.mapaShared(own, k.urem(k.add(rank, j), n));
      SmallVector<Value> other;
      for (size_t i = 0; i < fin.size(); ++i)
        other.push_back(k.loadClusterF32(k.add(peer, k.i32(int64_t(i) * 128 * 4))));
      return mergeStates(k, st, other);
    });
    if (c.lse) { // every rank merged the whole rows: rank 0 writes their log-sum-exp
      Value m[2] = {acc[0], acc[1]}, l[2] = {acc[2], acc[3]};
      Value isRank0 = k.cmp(P::eq, rank, 0);
      Value ok[2] = {k.band(rowOk[0], isRank0), k.band(rowOk[1], isRank0)};
      storeLse(k, c, ct, m, l, ok, qi, head);
    }
    for (int r = 0; r < 2; ++r) {
      Value inv = k.select(k.fcmp(LLVM::FCmpPredicate::ogt, acc[2 + r], k.f32(0)),
                           k.fdiv(k.f32(1.0), acc[2 + r]), k.f32(0));
      k.ifThen(rowOk[r], [&] {
        Value base64 = outRowOffset(k, c, qi[r], head[r]);
        for (int64_t g = 0; g < groups; ++g)
          k.ifThen(k.cmp(P::eq, k.urem(k.i32(g), n), rank), [&] {
            int64_t i = 4 * g + 2 * r; // accRow(i) == r
            Value w = k.packBF16x2(k.fmul(acc[4 + i], inv), k.fmul(acc[5 + i], inv));
            k.store(w, outAt(k, c, base64, k.add(f.colBase, g * 8)));
          });
      });
    }
  });
  k.clusterSync();
}
