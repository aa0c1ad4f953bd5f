//===- CombineKernel.cpp - split-KV combine kernel and launch metadata ----===//
//
// What this file is: the generator of `<name>_combine` — one warp per packed query row merges the
// split-KV partials (O, m, l) of `<name>_decode` with weights 2^(m_s − max m), divides by the
// weighted sum of l and writes bf16 — and the launch metadata (docs/GPUDecode.md) of a plan.
//
//===----------------------------------------------------------------------===//

#include "DecodePlan.h"
#include "KernelBuilder.h"

#include "llvm/Support/JSON.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::nvvm;
using P = LLVM::ICmpPredicate;

void mlir::attn::nvvm::buildCombineKernel(OpBuilder &b, Location loc, gpu::GPUModuleOp module,
                                          const DecodePlan &p) {
  MLIRContext *ctx = b.getContext();
  Type glob = LLVM::LLVMPointerType::get(ctx, kGlobal);
  Type i32 = b.getI32Type();
  auto fn = declareKernel(b, loc, module, p.name + "_combine", {glob, glob, i32, i32}, 128);
  OpBuilder::InsertionGuard g(b);
  Block *entry = fn.addEntryBlock(b);
  b.setInsertionPointToStart(entry);
  KernelBuilder k(b, loc);
  Value ws = fn.getArgument(0), out = fn.getArgument(1), numSplits = fn.getArgument(3);

  Value tid = k.tidX();
  Value warp = k.lshr(tid, 5), lane = k.band(tid, 31);
  Value row = k.add(k.mul(k.ctaidX(), 4), warp);
  Value grp = k.ctaidY(), bIdx = k.ctaidZ();
  int64_t D = p.headDim, R = p.rows(), W = p.workspaceFloatsPerSplit();
  int64_t perLane = (D / 4 + 31) / 32; // float4 columns per lane

  k.ifThen(k.cmp(P::slt, row, k.i32(R)), [&] {
    Value slot0 = k.mul(k.add(k.mul(bIdx, p.groups()), grp), numSplits);
    auto splitBase = [&](Value s) { return k.mul(k.sext64(k.add(slot0, s)), W * 4); };
    Value mOff = k.mul(k.sext64(k.add(row, R * D)), int64_t(4));
    Value negInf = k.f32(-INFINITY);
    // Pass 1: the largest running max.
    Value mMax = k.forLoop(k.i32(0), numSplits, 1, {negInf}, [&](Value s, ValueRange st) {
      Value m = k.load(k.f32(), k.gep(ws, k.add(splitBase(s), mOff)));
      return SmallVector<Value>{k.fmax(st[0], m)};
    })[0];
    Value mUse = k.select(k.fcmp(LLVM::FCmpPredicate::oeq, mMax, negInf), k.f32(0), mMax);
    // Pass 2: weighted sums of O and l.
    SmallVector<Value> inits(1 + 4 * perLane, k.f32(0));
    SmallVector<Value> acc = k.forLoop(k.i32(0), numSplits, 1, inits, [&](Value s, ValueRange st) {
      Value base = splitBase(s);
      Value m = k.load(k.f32(), k.gep(ws, k.add(base, mOff)));
      Value l = k.load(k.f32(), k.gep(ws, k.add(base, k.add(mOff, R * 4))));
      Value w = k.exp2(k.fsub(m, mUse));
      SmallVector<Value> next = {k.fma(w, l, st[0])};
      for (int64_t t = 0; t < perLane; ++t) {
        Value c4 = k.smin(k.add(lane, t * 32), k.i32(D / 4 - 1));
        Value off = k.add(base, k.mul(k.sext64(k.add(k.mul(row, D), k.mul(c4, 4))), int64_t(4)));
        Value v = k.load(VectorType::get({4}, k.f32()), k.gep(ws, off), 16);
        for (int e = 0; e < 4; ++e)
          next.push_back(k.fma(w, k.extract(v, e), st[1 + 4 * t + e]));
      }
      return next;
    });
    Value inv = k.select(k.fcmp(LLVM::FCmpPredicate::ogt, acc[0], k.f32(0)),
                         k.fdiv(k.f32(1.0), acc[0]), k.f32(0));
    Value qi = k.udiv(row, p.pack);
    Value hkv = k.udiv(grp, p.groupsPerKv());
    Value head = k.add(k.add(k.mul(hkv, p.groupSize()), k.mul(k.urem(grp, p.groupsPerKv()), p.pack)),
                       k.urem(row, p.pack));
    Value rowBase = k.add(k.mul(k.add(k.mul(bIdx, p.qLen), qi), p.qHeads), head);
    for (int64_t t = 0; t < perLane; ++t) {
      Value c4 = k.add(lane, t * 32);
      k.ifThen(k.cmp(P::slt, c4, k.i32(D / 4)), [&] {
        Value w0 = k.packBF16x2(k.fmul(acc[1 + 4 * t], inv), k.fmul(acc[2 + 4 * t], inv));
        Value w1 = k.packBF16x2(k.fmul(acc[3 + 4 * t], inv), k.fmul(acc[4 + 4 * t], inv));
        Value v = k.vector({w0, w1});
        Value off = k.mul(k.sext64(k.add(k.mul(rowBase, D), k.mul(c4, 4))), int64_t(2));
        k.store(v, k.gep(out, off), 8);
      });
    }
  });
  LLVM::ReturnOp::create(b, loc, ValueRange{});
}

static const char *kvName(const DecodePlan &p) {
  switch (p.kv) {
  case KVType::I8: return p.unsignedCodes ? "ui8" : "i8";
  case KVType::F8E4M3: return "f8E4M3FN";
  case KVType::BF16: return "bf16";
  }
  return "?";
}

std::string mlir::attn::nvvm::launchMetadataJSON(const DecodePlan &p) {
  using llvm::json::Array;
  using llvm::json::Object;
  std::string kq = p.hasScales() ? stringifyGranularity(p.kGran).str() : "none";
  std::string vq = p.hasScales() ? stringifyGranularity(p.vGran).str() : "none";
  const char *mapType = p.kv == KVType::BF16 ? "bf16" : "u8";
  auto box = [&] { return Array{p.headDim, 1, p.tileN, 1}; };
  Object root{
      {"format", "attn-launch-v1"},
      {"arch", 90},
      {"problem", Object{{"kind", p.prefill ? "prefill" : "decode"}, {"batch", p.batch},
                         {"q_len", p.qLen},
                         {"q_heads", p.qHeads}, {"kv_heads", p.kvHeads},
                         {"q_dtype", p.qI8 ? "i8" : "bf16"},
                         {"q_quant", p.qI8 ? "per_token_head" : "none"},
                         {"head_dim", p.headDim}, {"kv_len", p.kvLen}, {"kv_dtype", kvName(p)},
                         {"zero_points", p.zeroPoints},
                         {"k_quant", kq}, {"v_quant", vq}, {"out_dtype", "bf16"},
                         {"causal", p.causal}, {"alibi", p.alibi}, {"seq_lens", p.seqLens},
                         {"softmax_scale", p.softmaxScale}}},
      {"schedule", Object{{"pack_q_heads", p.pack}, {"rows_per_cta", p.ctaTokens() * p.pack},
                          {"q_chunk", p.ctaTokens()},
                          {"groups", p.groups()}, {"tile_n", p.tileN}, {"stages", p.stages},
                          {"split_kv", p.splitKv}, {"producer_regs", p.producerRegs},
                          {"consumer_regs", p.consumerRegs},
                          {"consumer_warpgroups", p.consumerWGs}}},
      {"workspace_floats_per_split", p.workspaceFloatsPerSplit()},
      {"tensor_maps", Object{{"k", Object{{"dtype", mapType}, {"box", box()}}},
                             {"v", Object{{"dtype", mapType}, {"box", box()}}}}},
      {"kernels", Array{}}};
  // Role "decode" is the attention kernel, for prefill too (grid x: its query chunks).
  Array kernels{Object{{"name", p.kernelName()},
                       {"role", "decode"},
                       {"block", Array{p.threads(), 1, 1}},
                       {"cluster", Array{1, 1, 1}},
                       {"smem_bytes", p.smemBytes()},
                       {"grid", Array{p.prefill ? "q_chunks" : "num_splits", "groups", "batch"}},
                       {"params", Array{"k_map", "v_map", "q", "k_scale", "v_scale", "seq_lens",
                                        "alibi", "out", "workspace", "batch", "kv_len",
                                        "num_splits", "q_scale", "k_zero", "v_zero"}}}};
  if (!p.prefill)
    kernels.push_back(Object{{"name", p.name + "_combine"},
                             {"role", "combine"},
                             {"block", Array{128, 1, 1}},
                             {"cluster", Array{1, 1, 1}},
                             {"smem_bytes", 0},
                             {"grid", Array{"row_blocks", "groups", "batch"}},
                             {"params", Array{"workspace", "out", "batch", "num_splits"}}});
  if (p.qLen < 0) // a dynamic query length (prefill) is the kernel's last parameter
    (*kernels[0].getAsObject())["params"].getAsArray()->push_back("q_len");
  root["kernels"] = std::move(kernels);
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  return s;
}
