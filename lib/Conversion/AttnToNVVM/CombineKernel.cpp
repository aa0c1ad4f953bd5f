//===- CombineKernel.cpp - split-KV combine kernels and launch metadata ---===//
//
// What this file is: the generators of the split-KV combine kernels, which merge the partials
// (O, m, l) of `<name>_decode` with weights 2^(m_s − max m), divide by the weighted sum of l and
// write bf16 — and the launch metadata (docs/GPUDecode.md) of a plan. Two kernels, picked by the
// launcher from the split count (the metadata's `min_splits`):
//   `<name>_combine` (2 to kNarrowSplits splits): one warp per packed row, every split's loads
//     issued at once (one round trip to L2);
//   `<name>_combine_wide` (more): one packed row per CTA, sixteen warps each a sixteenth of
//     the splits, merged by the first warp through shared memory.
// Both begin with griddepcontrol.wait: launchers start them as programmatic dependents (PDL) of
// the decode kernel, which triggers them as its consumers finish.
//
//===----------------------------------------------------------------------===//

#include "ForwardPlan.h"
#include "KernelBuilder.h"

#include "llvm/Support/JSON.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::nvvm;
using P = LLVM::ICmpPredicate;

/// The narrow kernel takes up to this many splits (measured on the H100, docs/benchmarks/
/// gpu-decode.md: it is faster up to 16 splits, the wide one past that).
static constexpr int64_t kNarrowSplits = 16;
/// The wide kernel: one packed row per CTA (grid x: the rows), its splits spread over 16 warps,
/// so a row's 17–66+ partials are read by 16 warps at once and the grid covers the SMs (with 4
/// rows × 4 warps per CTA, 24 CTAs took 7.2 µs at 66 splits under Nsight Compute, now 5.5–5.9).
static constexpr int64_t kWideRowWarps = 16;
static constexpr int64_t kWideThreads = 32 * kWideRowWarps;

namespace {
/// What both kernels share: where packed row `row`'s partials and output live.
struct Rows {
  KernelBuilder &k;
  const ForwardPlan &p;
  Value ws, out, numSplits, grp, bIdx, row;
  int64_t D, R, W;
  Value active, rowc, slot0, mOff, negInf;

  Rows(KernelBuilder &k, const ForwardPlan &p, LLVM::LLVMFuncOp fn, Value row)
      : k(k), p(p), ws(fn.getArgument(0)), out(fn.getArgument(1)), numSplits(fn.getArgument(3)),
        grp(k.ctaidY()), bIdx(k.ctaidZ()), row(row), D(p.headDim), R(p.rows()),
        W(p.workspaceFloatsPerSplit()) {
    active = k.cmp(P::slt, row, k.i32(R));
    rowc = k.smin(row, k.i32(R - 1)); // rows past R compute on row R − 1 and write nothing
    slot0 = k.mul(k.add(k.mul(bIdx, p.groups()), grp), numSplits);
    mOff = k.mul(k.sext64(k.add(rowc, R * D)), int64_t(4));
    negInf = k.f32(-INFINITY);
  }
  /// Byte offset of split s's partial.
  Value splitBase(Value s) { return k.mul(k.sext64(k.add(slot0, s)), W * 4); }
  /// The output row (batch, query token, head) of the packed row.
  Value outRow() {
    Value qi = k.udiv(row, p.pack);
    Value hkv = k.udiv(grp, p.groupsPerKv());
    Value head =
        k.add(k.add(k.mul(hkv, p.groupSize()), k.mul(k.urem(grp, p.groupsPerKv()), p.pack)),
              k.urem(row, p.pack));
    return k.add(k.mul(k.add(k.mul(bIdx, p.qLen), qi), p.qHeads), head);
  }
};

/// Declares `<name><suffix>` (workspace, out, batch, num_splits) and opens its body, which starts
/// by waiting for the decode kernel (a no-op unless launched as its programmatic dependent).
LLVM::LLVMFuncOp openCombine(OpBuilder &b, Location loc, gpu::GPUModuleOp module,
                             const ForwardPlan &p, StringRef suffix, int64_t threads) {
  Type glob = LLVM::LLVMPointerType::get(b.getContext(), kGlobal);
  Type i32 = b.getI32Type();
  auto fn = declareKernel(b, loc, module, (p.name + suffix).str(), {glob, glob, i32, i32}, threads);
  Block *entry = fn.addEntryBlock(b);
  b.setInsertionPointToStart(entry);
  NVVM::GriddepcontrolOp::create(b, loc, NVVM::GridDepActionKind::wait);
  return fn;
}
} // namespace

/// `<name>_combine`: warp w of the CTA merges packed row 4 · ctaid.x + w; lane l owns the row's
/// D/32 columns from l · D/32 and holds split l's m and l. All kNarrowSplits splits' O loads are
/// issued before the first use (splits past the last repeat it — cache hits — with weight 0).
static void buildNarrowCombine(OpBuilder &b, Location loc, gpu::GPUModuleOp module,
                               const ForwardPlan &p) {
  OpBuilder::InsertionGuard g(b);
  auto fn = openCombine(b, loc, module, p, "_combine", 128);
  KernelBuilder k(b, loc);
  Value tid = k.tidX();
  Value lane = k.band(tid, 31);
  Rows r(k, p, fn, k.add(k.mul(k.ctaidX(), 4), k.lshr(tid, 5)));
  int64_t D = r.D, nf = D / 32, vec = std::min<int64_t>(nf, 4), chunks = nf / vec;
  Value last = k.add(r.numSplits, -1);
  Value col = k.mul(lane, nf);
  Type vt = VectorType::get({vec}, k.f32());
  SmallVector<Value> vs; // vs[j · chunks + c]: split j, columns col + 4c ..
  for (int64_t j = 0; j < kNarrowSplits; ++j) {
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
  for (int64_t j = 0; j < kNarrowSplits; ++j) {
    Value wj = k.shflIdx(w, k.i32(j)); // 0 past the last split (lanes ≥ num_splits)
    for (int64_t e = 0; e < nf; ++e)
      acc[e] = k.fma(wj, k.extract(vs[j * chunks + e / vec], e % vec), acc[e]);
  }
  Value inv = k.select(k.fcmp(LLVM::FCmpPredicate::ogt, lSum, k.f32(0)), k.fdiv(k.f32(1.0), lSum),
                       k.f32(0));
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
  LLVM::ReturnOp::create(b, loc, ValueRange{});
}

/// `<name>_combine_wide`: packed row ctaid.x; warp q merges splits [q · c, (q + 1) · c) with
/// c = ceil(num_splits / 16), and warp 0 merges the sixteen.
static void buildWideCombine(OpBuilder &b, Location loc, gpu::GPUModuleOp module,
                             const ForwardPlan &p) {
  OpBuilder::InsertionGuard g(b);
  auto fn = openCombine(b, loc, module, p, "_combine_wide", kWideThreads);
  ensureSharedSymbol(b, loc, module);
  KernelBuilder k(b, loc);
  Value tid = k.tidX();
  Value lane = k.band(tid, 31), q = k.lshr(tid, 5);
  Rows r(k, p, fn, k.ctaidX());
  Value ws = r.ws, out = r.out, numSplits = r.numSplits, active = r.active, negInf = r.negInf;
  Value mOff = r.mOff;
  int64_t D = r.D, R = r.R;
  int64_t perLane = (D / 4 + 31) / 32; // float4 columns per lane
  auto colOff = [&](int64_t t) {
    Value c4 = k.smin(k.add(lane, t * 32), k.i32(D / 4 - 1));
    return k.mul(k.sext64(k.add(k.mul(r.rowc, D), k.mul(c4, 4))), int64_t(4));
  };
  Value chunk = k.udiv(k.add(numSplits, kWideRowWarps - 1), k.i32(kWideRowWarps));
  Value sBeg = k.smin(k.mul(q, chunk), numSplits), sEnd = k.smin(k.add(sBeg, chunk), numSplits);
  // The warp's splits go over its lanes: lane l reads m and l of splits sBeg + l, + 32, …
  auto laneSplit = [&](Value s0, Value &valid) {
    Value s = k.add(s0, lane);
    valid = k.cmp(P::slt, s, sEnd);
    return k.smin(s, k.add(numSplits, -1));
  };
  Value mMax = k.forLoop(sBeg, sEnd, 32, {negInf}, [&](Value s0, ValueRange st) {
    Value valid;
    Value m = k.load(k.f32(), k.gep(ws, k.add(r.splitBase(laneSplit(s0, valid)), mOff)));
    return SmallVector<Value>{k.select(valid, k.fmax(st[0], m), st[0])};
  })[0];
  for (int64_t x = 16; x >= 1; x /= 2)
    mMax = k.fmax(mMax, k.shflXor(mMax, x));
  Value mUse = k.select(k.fcmp(LLVM::FCmpPredicate::oeq, mMax, negInf), k.f32(0), mMax);
  // Weighted sums: each lane weighs its splits (w = 2^(m − max), 0 past the warp's last split)
  // and broadcasts the weights; every lane adds w · O over its columns, 8 splits' loads at once.
  SmallVector<Value> inits(1 + 4 * perLane, k.f32(0));
  SmallVector<Value> acc = k.forLoop(sBeg, sEnd, 32, inits, [&](Value s0, ValueRange st) {
    Value valid;
    Value base = r.splitBase(laneSplit(s0, valid));
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
  for (int64_t x = 16; x >= 1; x /= 2)
    acc[0] = k.fadd(acc[0], k.shflXor(acc[0], x));

  // The warps' (max, sum, O) meet in shared memory: slot q holds O[0 .. D) at float 0, the max
  // at D and the sum at D + 1 (stride D + 4: 16-byte aligned).
  Value smem = k.dynamicShared(kSharedSymbol);
  int64_t stride = (D + 4) * 4;
  auto slotOff = [&](Value slot) { return k.mul(slot, stride); };
  Value mySlot = slotOff(q);
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

  // Warp 0 merges the sixteen: factors 2^(m_q − max) (0 for a warp without keys).
  k.ifThen(k.band(active, k.cmp(P::eq, q, 0)), [&] {
    Value m[kWideRowWarps], mAll = negInf;
    for (int64_t i = 0; i < kWideRowWarps; ++i) {
      m[i] = k.load(k.f32(), k.gep(smem, k.add(slotOff(k.i32(i)), D * 4)));
      mAll = k.fmax(mAll, m[i]);
    }
    Value mAllUse = k.select(k.fcmp(LLVM::FCmpPredicate::oeq, mAll, negInf), k.f32(0), mAll);
    Value lSum = k.f32(0);
    SmallVector<Value> o(4 * perLane, k.f32(0));
    for (int64_t i = 0; i < kWideRowWarps; ++i) {
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
        k.store(k.vector({w0, w1}), k.gep(out, off), 8);
      });
    }
  });
  LLVM::ReturnOp::create(b, loc, ValueRange{});
}

void mlir::attn::nvvm::buildCombineKernel(OpBuilder &b, Location loc, gpu::GPUModuleOp module,
                                          const ForwardPlan &p) {
  buildNarrowCombine(b, loc, module, p);
  buildWideCombine(b, loc, module, p);
}

static const char *kvName(const ForwardPlan &p) {
  switch (p.kv) {
  case KVType::I8:
    return p.unsignedCodes ? "ui8" : "i8";
  case KVType::F8E4M3:
    return "f8E4M3FN";
  case KVType::BF16:
    return "bf16";
  }
  return "?";
}

std::string mlir::attn::nvvm::launchMetadataJSON(const ForwardPlan &p) {
  using llvm::json::Array;
  using llvm::json::Object;
  std::string kq = p.hasScales() ? stringifyGranularity(p.kGran).str() : "none";
  std::string vq = p.hasScales() ? stringifyGranularity(p.vGran).str() : "none";
  const char *mapType = p.kv == KVType::BF16 ? "bf16" : "u8";
  auto map = [&](int64_t swizzle) {
    return Object{{"dtype", mapType},
                  {"box", Array{p.tmaBoxColumns(), 1, p.boxRows(), 1}},
                  {"swizzle", swizzle}};
  };
  Object root{{"format", "attn-launch-v1"},
              {"arch", 90},
              {"problem", Object{{"kind", p.prefill ? "prefill" : "decode"},
                                 {"mode", p.mode},
                                 {"batch", p.batch},
                                 {"q_len", p.qLen},
                                 {"q_heads", p.qHeads},
                                 {"kv_heads", p.kvHeads},
                                 {"q_dtype", p.qI8   ? "i8"
                                             : p.fp8 ? "f8E4M3FN"
                                                     : "bf16"},
                                 {"q_quant", p.qk8() ? stringifyGranularity(p.qGran) : "none"},
                                 {"q_block_rows", p.qBlock},
                                 {"head_dim", p.headDim},
                                 {"kv_len", p.kvLen},
                                 {"kv_dtype", kvName(p)},
                                 {"zero_points", p.zeroPoints},
                                 {"k_quant", kq},
                                 {"v_quant", vq},
                                 {"k_block_rows", p.kBlock},
                                 {"v_block_rows", p.vBlock},
                                 {"out_dtype", "bf16"},
                                 {"causal", p.causal},
                                 {"alibi", p.alibi},
                                 {"hadamard", p.hadamard},
                                 {"seq_lens", p.seqLens},
                                 {"softmax_scale", p.softmaxScale}}},
              {"schedule", Object{{"pack_q_heads", p.pack},
                                  {"rows_per_cta", p.ctaTokens() * p.pack},
                                  {"q_chunk", p.ctaTokens()},
                                  {"groups", p.groups()},
                                  {"tile_n", p.tileN},
                                  {"stages", p.stages},
                                  {"split_kv", p.splitKv},
                                  {"producer_regs", p.producerRegs},
                                  {"consumer_regs", p.consumerRegs},
                                  {"consumer_warpgroups", p.consumerWGs},
                                  {"ctas_per_sm", p.ctasPerSm}}},
              {"workspace_floats_per_split", p.workspaceFloatsPerSplit()},
              {"tensor_maps", Object{{"k", map(p.kSwizzleBytes())}, {"v", map(p.vSwizzleBytes())}}},
              {"kernels", Array{}}};
  // Role "decode" is the attention kernel, for prefill too (grid x: its query chunks).
  Array kernels{Object{
      {"name", p.kernelName()},
      {"role", "decode"},
      {"block", Array{p.threads(), 1, 1}},
      {"cluster", Array{1, 1, 1}},
      {"smem_bytes", p.smemBytes()},
      {"grid", p.persistent ? Array{"persistent_ctas", 1, 1}
                            : Array{p.prefill ? "q_chunks" : "num_splits", "groups", "batch"}},
      {"params",
       Array{"k_map", "v_map", "q", "k_scale", "v_scale", "seq_lens", "alibi", "out", "workspace",
             "batch", "kv_len", "num_splits", "q_scale", "k_zero", "v_zero"}}}};
  if (!p.prefill) {
    auto combine = [&](StringRef suffix, int64_t minSplits, int64_t threads, int64_t smem,
                       StringRef rowsSymbol) {
      kernels.push_back(Object{{"name", p.name + suffix.str()},
                               {"role", "combine"},
                               {"min_splits", minSplits},
                               {"block", Array{threads, 1, 1}},
                               {"cluster", Array{1, 1, 1}},
                               {"smem_bytes", smem},
                               {"programmatic", true},
                               {"grid", Array{rowsSymbol, "groups", "batch"}},
                               {"params", Array{"workspace", "out", "batch", "num_splits"}}});
    };
    combine("_combine", 2, 128, 0, "row_blocks"); // 4 rows per CTA
    combine("_combine_wide", kNarrowSplits + 1, kWideThreads, kWideRowWarps * (p.headDim + 4) * 4,
            "rows"); // one row per CTA
  }
  if (p.clusterSplits()) // 2 .. cluster_splits splits: one cluster of the splits, no combine
    (*kernels[0].getAsObject())["cluster_splits"] = p.clusterSplits();
  if (p.wide) { // launched instead of the first decode kernel when one split's CTAs exceed the SMs
    const ForwardPlan &w = *p.wide;
    Object wide = *kernels[0].getAsObject();
    wide.erase("cluster_splits");
    wide["name"] = w.kernelName();
    wide["block"] = Array{w.threads(), 1, 1};
    wide["smem_bytes"] = w.smemBytes();
    wide["ctas_per_sm"] = w.ctasPerSm;
    wide["tile_n"] = w.tileN;
    kernels.push_back(std::move(wide));
  }
  if (p.qLen < 0) // a dynamic query length (prefill) is the kernel's last parameter
    (*kernels[0].getAsObject())["params"].getAsArray()->push_back("q_len");
  root["kernels"] = std::move(kernels);
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  return s;
}
