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

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::nvvm;

#define ATTN_PLAN_INTS(X)                                                                         \
  X(batch) X(qLen) X(qHeads) X(kvHeads) X(headDim) X(kvLen) X(qBlock) X(kBlock) X(vBlock)          \
  X(qChunk) X(qBuffers) X(pack) X(tileN) X(stages) X(splitKv) X(producerRegs) X(consumerRegs)    \
  X(producerWGs) X(consumerWGs) X(ctasPerSm) X(tmaBoxRows)
#define ATTN_PLAN_BOOLS(X)                                                                        \
  X(qI8) X(zeroPoints) X(unsignedCodes) X(fp8) X(fullI8) X(prefill) X(overlap) X(pingpong)        \
  X(persistent) X(causal) X(alibi) X(seqLens) X(hadamard) X(wideBatch)
#define ATTN_PLAN_GRANS(X) X(qGran) X(kGran) X(vGran)

static StringRef kvName(KVType t) {
  return t == KVType::I8 ? "i8" : t == KVType::F8E4M3 ? "f8E4M3FN" : "bf16";
}

DictionaryAttr mlir::attn::nvvm::forwardPlanToAttr(MLIRContext *ctx, const ForwardPlan &p) {
  Builder b(ctx);
  SmallVector<NamedAttribute> entries;
  auto add = [&](StringRef name, Attribute a) { entries.push_back(b.getNamedAttr(name, a)); };
#define X(f) add(#f, b.getI64IntegerAttr(p.f));
  ATTN_PLAN_INTS(X)
#undef X
#define X(f) add(#f, b.getBoolAttr(p.f));
  ATTN_PLAN_BOOLS(X)
#undef X
#define X(f) add(#f, b.getStringAttr(stringifyGranularity(p.f)));
  ATTN_PLAN_GRANS(X)
#undef X
  add("name", b.getStringAttr(p.name));
  add("mode", b.getStringAttr(p.mode));
  add("kv", b.getStringAttr(kvName(p.kv)));
  add("softmaxScale", b.getF64FloatAttr(p.softmaxScale));
  return b.getDictionaryAttr(entries);
}

FailureOr<ForwardPlan> mlir::attn::nvvm::forwardPlanFromAttr(DictionaryAttr d,
                                                             function_ref<InFlightDiagnostic()> err) {
  ForwardPlan p;
  auto missing = [&](StringRef name) {
    err() << "forward plan without a valid '" << name << "' entry";
    return failure();
  };
#define X(f)                                                                                      \
  if (auto a = d.getAs<IntegerAttr>(#f))                                                          \
    p.f = a.getInt();                                                                             \
  else                                                                                            \
    return missing(#f);
  ATTN_PLAN_INTS(X)
#undef X
#define X(f)                                                                                      \
  if (auto a = d.getAs<BoolAttr>(#f))                                                             \
    p.f = a.getValue();                                                                           \
  else                                                                                            \
    return missing(#f);
  ATTN_PLAN_BOOLS(X)
#undef X
#define X(f)                                                                                      \
  if (auto a = d.getAs<StringAttr>(#f); a && symbolizeGranularity(a.getValue()))                  \
    p.f = *symbolizeGranularity(a.getValue());                                                    \
  else                                                                                            \
    return missing(#f);
  ATTN_PLAN_GRANS(X)
#undef X
  auto name = d.getAs<StringAttr>("name"), mode = d.getAs<StringAttr>("mode");
  auto kv = d.getAs<StringAttr>("kv");
  auto scale = d.getAs<FloatAttr>("softmaxScale");
  if (!name)
    return missing("name");
  if (!mode)
    return missing("mode");
  if (!scale)
    return missing("softmaxScale");
  if (!kv || (kv.getValue() != "i8" && kv.getValue() != "f8E4M3FN" && kv.getValue() != "bf16"))
    return missing("kv");
  // What the builders divide by or index with: the values planForward accepts.
  bool ok = (p.tileN == 32 || p.tileN == 64 || p.tileN == 128) &&
            (p.headDim == 64 || p.headDim == 128 || p.headDim == 256) && p.stages >= 1 &&
            p.stages <= 4 && p.pack >= 1 && p.kvHeads >= 1 && p.qHeads >= 1 && p.qHeads % p.kvHeads == 0 &&
            (p.qHeads / p.kvHeads) % p.pack == 0 && p.producerWGs >= 1 && p.producerWGs <= 2 &&
            p.consumerWGs >= 1 && p.consumerWGs <= 3 && p.qChunk >= 1 && p.qBlock >= 1 &&
            p.kBlock >= 1 && p.vBlock >= 1 && p.ctasPerSm >= 1 && p.qBuffers >= 1 &&
            p.qBuffers <= 2 && (p.tmaBoxRows == 0 || p.tileN % p.tmaBoxRows == 0) &&
            (p.prefill ? p.qLen != 0 : p.qLen >= 1) && p.rows() <= 64;
  if (!ok) {
    err() << "forward plan outside what the kernel builds (tile_n, head_dim, stages, packing, "
             "warpgroups or query rows)";
    return failure();
  }
  p.name = name.str();
  p.mode = mode.str();
  p.softmaxScale = scale.getValueAsDouble();
  p.kv = kv.getValue() == "i8" ? KVType::I8 : kv.getValue() == "bf16" ? KVType::BF16
                                                                        : KVType::F8E4M3;
  return p;
}
