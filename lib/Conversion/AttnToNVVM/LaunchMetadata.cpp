//===- LaunchMetadata.cpp - launch metadata of the attention kernels ------===//
//
// What this file is: the launch metadata (docs/GPUDecode.md) of a decode or prefill plan: the
// attention kernel, its wide-batch companion and, for decode, the split-KV combine kernels that
// attn-build-kernel builds at the kernel level (their entries are what their `#attnk.launch`
// says: attnk::launchKernelJSON).
//
//===----------------------------------------------------------------------===//

#include "ForwardPlan.h"

#include "attn/Dialect/AttnKernel/IR/AttnKernel.h"

#include "llvm/Support/JSON.h"

#include <tuple>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::nvvm;
using attn_abi::Param;
using G = attn_abi::GridSymbol;

/// A grid symbol's name in the launch ABI table.
static const char *sym(G s) { return attn_abi::kGridSymbols[size_t(s)].name; }

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

std::string mlir::attn::nvvm::launchMetadataJSON(const ForwardPlan &p,
                                                 ArrayRef<llvm::json::Object> combine) {
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
  Array kernels{
      Object{{"name", p.kernelName()},
             {"role", "decode"},
             {"block", Array{p.threads(), 1, 1}},
             {"cluster", Array{1, 1, 1}},
             {"smem_bytes", p.smemBytes()},
             {"grid", p.persistent ? Array{sym(G::PersistentCtas), 1, 1}
                                   : Array{sym(p.prefill ? G::QChunks : G::NumSplits),
                                           sym(G::Groups), sym(G::Batch)}},
             {"params",
              attnk::launchParamsJSON(
                  {Param::KMap, Param::VMap, Param::Q, Param::KScale, Param::VScale, Param::SeqLens,
                   Param::Alibi, Param::Out, Param::Workspace, Param::Batch, Param::KvLen,
                   Param::NumSplits, Param::QScale, Param::KZero, Param::VZero})}}};
  for (const llvm::json::Object &k : combine) // the split-KV combine kernels (decode)
    kernels.push_back(llvm::json::Object(k));
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
    (*kernels[0].getAsObject())["params"].getAsArray()->push_back(attn_abi::name(Param::QLen));
  if (p.paged()) { // the block table and the pool's rows follow (the two-CTA companion takes
                   // the same parameters)
    for (Param a : {Param::BlockTable, Param::NumSlots}) {
      (*kernels[0].getAsObject())["params"].getAsArray()->push_back(attn_abi::name(a));
      if (p.wide)
        (*kernels.back().getAsObject())["params"].getAsArray()->push_back(attn_abi::name(a));
    }
    // The pool of pages: the tensor maps cover it as [1, num_pages · P, Hkv, D].
    root["paged"] = Object{{"page_size", p.pageSize},
                           {"max_blocks", p.maxBlocks},
                           {"num_pages", p.numPages}};
  }
  // Sinks and the LSE output follow (decode; a spec without them reads as before).
  for (auto [on, param, key] : {std::tuple{p.sinks, Param::Sinks, "sinks"},
                                std::tuple{p.lse, Param::Lse, "lse"}}) {
    if (!on)
      continue;
    (*kernels[0].getAsObject())["params"].getAsArray()->push_back(attn_abi::name(param));
    if (p.wide)
      (*kernels.back().getAsObject())["params"].getAsArray()->push_back(attn_abi::name(param));
    (*root["problem"].getAsObject())[key] = true;
  }
  if (p.ragged) { // a ragged prefill's packed rows follow (absent without)
    for (Param a : {Param::CuSeqlensQ, Param::TotalQ})
      (*kernels[0].getAsObject())["params"].getAsArray()->push_back(attn_abi::name(a));
    (*root["problem"].getAsObject())["ragged"] = true;
  }
  if (p.softcap > 0) // logit soft-capping (absent without)
    (*root["problem"].getAsObject())["softcap"] = p.softcap;
  if (p.windowed()) // the sliding window [left, right] (absent without)
    (*root["problem"].getAsObject())["window"] = llvm::json::Array{p.windowLeft, p.windowRight};
  root["kernels"] = std::move(kernels);
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  return s;
}
