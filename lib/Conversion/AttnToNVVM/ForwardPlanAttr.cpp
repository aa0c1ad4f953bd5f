//===- ForwardPlanAttr.cpp - a ForwardPlan as an attribute and back -------===//
//
// What this file is: the forward kernel's plan (ForwardPlan.h) written as the `plan` dictionary
// of the kernel level's forward ops (attn-build-kernel) and read back by their lowerings
// (convert-attnk-to-nvvm): every field that decides the kernel, one entry each.
//
//===----------------------------------------------------------------------===//

#include "ForwardPlan.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <variant>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::nvvm;

namespace {
/// One entry of the plan dictionary: its name and the field it holds.
using Member =
    std::variant<int64_t ForwardPlan::*, bool ForwardPlan::*, Granularity ForwardPlan::*,
                 std::string ForwardPlan::*, double ForwardPlan::*, KVType ForwardPlan::*>;
struct Field {
  const char *name;
  Member member;
};
#define F(f)                                                                                       \
  Field { #f, &ForwardPlan::f }
const Field kFields[] = {
    F(batch),       F(qLen),      F(qHeads),     F(kvHeads),      F(headDim),      F(kvLen),
    F(qBlock),      F(kBlock),    F(vBlock),     F(qChunk),       F(qBuffers),     F(pack),
    F(tileN),       F(stages),    F(splitKv),    F(producerRegs), F(consumerRegs), F(producerWGs),
    F(consumerWGs), F(ctasPerSm), F(tmaBoxRows), F(qI8),          F(zeroPoints),   F(unsignedCodes),
    F(fp8),         F(fullI8),    F(prefill),    F(overlap),      F(pingpong),     F(persistent),
    F(causal),      F(alibi),     F(seqLens),    F(hadamard),     F(wideBatch),    F(qGran),
    F(kGran),       F(vGran),     F(name),       F(mode),         F(softmaxScale), F(kv)};
#undef F

constexpr std::pair<KVType, StringRef> kKVNames[] = {
    {KVType::I8, "i8"}, {KVType::F8E4M3, "f8E4M3FN"}, {KVType::BF16, "bf16"}};

template <class... Ts> struct Overloaded : Ts... { using Ts::operator()...; };
template <class... Ts> Overloaded(Ts...) -> Overloaded<Ts...>;
} // namespace

/// The entries of a paged cache (ForwardPlan::pageSize, maxBlocks, numPages).
static SmallVector<std::pair<StringRef, int64_t>, 3> pagedFields(const ForwardPlan &p) {
  return {{"pageSize", p.pageSize}, {"maxBlocks", p.maxBlocks}, {"numPages", p.numPages}};
}

DictionaryAttr mlir::attn::nvvm::forwardPlanToAttr(MLIRContext *ctx, const ForwardPlan &p) {
  Builder b(ctx);
  SmallVector<NamedAttribute> entries;
  for (const Field &f : kFields) {
    Attribute a = std::visit(
        Overloaded{[&](int64_t ForwardPlan::*m) -> Attribute { return b.getI64IntegerAttr(p.*m); },
                   [&](bool ForwardPlan::*m) -> Attribute { return b.getBoolAttr(p.*m); },
                   [&](Granularity ForwardPlan::*m) -> Attribute {
                     return b.getStringAttr(stringifyGranularity(p.*m));
                   },
                   [&](std::string ForwardPlan::*m) -> Attribute { return b.getStringAttr(p.*m); },
                   [&](double ForwardPlan::*m) -> Attribute { return b.getF64FloatAttr(p.*m); },
                   [&](KVType ForwardPlan::*m) -> Attribute {
                     for (auto [kv, name] : kKVNames)
                       if (kv == p.*m)
                         return b.getStringAttr(name);
                     return {};
                   }},
        f.member);
    entries.push_back(b.getNamedAttr(f.name, a));
  }
  // A paged cache's entries, only when paged (a contiguous plan reads as before).
  if (p.paged())
    for (auto [name, v] : pagedFields(p))
      entries.push_back(b.getNamedAttr(name, b.getI64IntegerAttr(v)));
  // Sinks and the LSE output likewise only when the spec has them.
  if (p.sinks)
    entries.push_back(b.getNamedAttr("sinks", b.getBoolAttr(true)));
  if (p.lse)
    entries.push_back(b.getNamedAttr("lse", b.getBoolAttr(true)));
  if (p.ragged) // a ragged batch likewise (cu_seqlens_q)
    entries.push_back(b.getNamedAttr("ragged", b.getBoolAttr(true)));
  if (p.softcap > 0)
    entries.push_back(b.getNamedAttr("softcap", b.getF64FloatAttr(p.softcap)));
  if (p.windowed()) // the sliding window's [left, right] (absent without)
    entries.push_back(
        b.getNamedAttr("window", b.getDenseI64ArrayAttr({p.windowLeft, p.windowRight})));
  return b.getDictionaryAttr(entries);
}

/// Reads one entry into its field; false where it is missing or not a valid value.
static bool readField(DictionaryAttr d, const Field &f, ForwardPlan &p) {
  return std::visit(Overloaded{[&](int64_t ForwardPlan::*m) {
                                 auto a = d.getAs<IntegerAttr>(f.name);
                                 if (a)
                                   p.*m = a.getInt();
                                 return bool(a);
                               },
                               [&](bool ForwardPlan::*m) {
                                 auto a = d.getAs<BoolAttr>(f.name);
                                 if (a)
                                   p.*m = a.getValue();
                                 return bool(a);
                               },
                               [&](Granularity ForwardPlan::*m) {
                                 auto a = d.getAs<StringAttr>(f.name);
                                 std::optional<Granularity> g =
                                     a ? symbolizeGranularity(a.getValue()) : std::nullopt;
                                 if (g)
                                   p.*m = *g;
                                 return g.has_value();
                               },
                               [&](std::string ForwardPlan::*m) {
                                 auto a = d.getAs<StringAttr>(f.name);
                                 if (a)
                                   p.*m = a.str();
                                 return bool(a);
                               },
                               [&](double ForwardPlan::*m) {
                                 auto a = d.getAs<FloatAttr>(f.name);
                                 if (a)
                                   p.*m = a.getValueAsDouble();
                                 return bool(a);
                               },
                               [&](KVType ForwardPlan::*m) {
                                 auto a = d.getAs<StringAttr>(f.name);
                                 for (auto [kv, name] : kKVNames)
                                   if (a && a.getValue() == name) {
                                     p.*m = kv;
                                     return true;
                                   }
                                 return false;
                               }},
                    f.member);
}

FailureOr<ForwardPlan>
mlir::attn::nvvm::forwardPlanFromAttr(DictionaryAttr d, function_ref<InFlightDiagnostic()> err) {
  ForwardPlan p;
  for (const Field &f : kFields)
    if (!readField(d, f, p)) {
      err() << "forward plan without a valid '" << f.name << "' entry";
      return failure();
    }
  // What the builders divide by or index with: the values planForward accepts.
  bool ok = (p.tileN == 32 || p.tileN == 64 || p.tileN == 128) &&
            (p.headDim == 64 || p.headDim == 128 || p.headDim == 256) && p.stages >= 1 &&
            p.stages <= 4 && p.pack >= 1 && p.kvHeads >= 1 && p.qHeads >= 1 &&
            p.qHeads % p.kvHeads == 0 && (p.qHeads / p.kvHeads) % p.pack == 0 &&
            p.producerWGs >= 1 && p.producerWGs <= 2 && p.consumerWGs >= 1 && p.consumerWGs <= 3 &&
            p.qChunk >= 1 && p.qBlock >= 1 && p.kBlock >= 1 && p.vBlock >= 1 && p.ctasPerSm >= 1 &&
            p.qBuffers >= 1 && p.qBuffers <= 2 &&
            (p.tmaBoxRows == 0 || p.tileN % p.tmaBoxRows == 0) &&
            (p.prefill ? p.qLen != 0 : p.qLen >= 1) && p.rows() <= 64;
  if (!ok) {
    err() << "forward plan outside what the kernel builds (tile_n, head_dim, stages, packing, "
             "warpgroups or query rows)";
    return failure();
  }
  if (auto a = d.getAs<BoolAttr>("sinks"))
    p.sinks = a.getValue();
  if (auto a = d.getAs<BoolAttr>("lse"))
    p.lse = a.getValue();
  if (auto a = d.getAs<BoolAttr>("ragged"))
    p.ragged = a.getValue();
  if (p.ragged && (!p.prefill || p.qLen >= 0)) {
    err() << "forward plan with 'ragged' needs prefill with a dynamic q_len";
    return failure();
  }
  if (auto a = d.getAs<FloatAttr>("softcap"))
    p.softcap = a.getValueAsDouble();
  if (!(p.softcap >= 0) || !std::isfinite(p.softcap)) {
    err() << "forward plan with a 'softcap' that is not a finite positive number";
    return failure();
  }
  if (Attribute a = d.get("window")) {
    auto w = dyn_cast<DenseI64ArrayAttr>(a);
    if (!w || w.size() != 2 || w[0] < -1 || w[1] < -1) {
      err() << "forward plan with a 'window' that is not array<i64: left, right> (each >= -1)";
      return failure();
    }
    p.windowLeft = w[0];
    p.windowRight = w[1];
  }
  if ((p.sinks || p.lse || p.softcap > 0) && p.prefill) {
    err() << "forward plan with sinks, lse or softcap needs decode";
    return failure();
  }
  if (auto page = d.getAs<IntegerAttr>("pageSize")) {
    auto blocks = d.getAs<IntegerAttr>("maxBlocks");
    auto pages = d.getAs<IntegerAttr>("numPages");
    p.pageSize = page.getInt();
    p.maxBlocks = blocks ? blocks.getInt() : 0;
    p.numPages = pages ? pages.getInt() : 0;
    if (p.pageSize < 1 || !llvm::isPowerOf2_64(p.pageSize) || p.maxBlocks == 0 ||
        p.maxBlocks < -1 ||
        p.numPages == 0 || p.numPages < -1 || p.pageSize % p.boxRows() != 0) {
      err() << "forward plan with a paged cache needs a power-of-two 'pageSize' that the box "
               "rows divide, 'maxBlocks' and 'numPages' >= 1 (or -1: known at launch)";
      return failure();
    }
  }
  return p;
}
