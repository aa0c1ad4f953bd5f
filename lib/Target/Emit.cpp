//===- Emit.cpp - attn-opt --emit: from a module to an artifact -----------===//
//
// What this file is: the dispatcher behind `--emit=ptx|cubin|obj|header`. It checks that every
// attn op of the module can go to the requested artifact (target kind, lowering available) and
// produces it. No lowering has landed yet, so every attn op is refused with a located
// "not supported yet" diagnostic naming the variant: never an empty or fake artifact.
//
//===----------------------------------------------------------------------===//

#include "attn/Target/Emit.h"

#include "attn/Dialect/Attn/IR/Attn.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::attn;

StringRef mlir::attn::stringifyEmitFormat(EmitFormat f) {
  switch (f) {
  case EmitFormat::MLIR:
    return "mlir";
  case EmitFormat::PTX:
    return "ptx";
  case EmitFormat::Cubin:
    return "cubin";
  case EmitFormat::Object:
    return "obj";
  case EmitFormat::Header:
    return "header";
  }
  llvm_unreachable("unknown emit format");
}

/// A short description of the kernel variant an op asks for, for diagnostics.
static std::string describeVariant(Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](AttentionOp a) {
        os << stringifyAttentionKind(a.getKind());
        if (FailureOr<Mode> m = a.getEffectiveMode(); succeeded(m))
          os << ", mode " << stringifyMode(*m);
        if (QuantAttr k = a.getKQuantAttr())
          os << ", " << k.getElementType() << " K/V " << stringifyGranularity(k.getGranularity());
      })
      .Case([&](MLADecodeOp m) {
        os << (m.getKvQuantAttr() ? "fp8 cache" : "bf16 cache")
           << (m.getIndices() ? ", sparse" : ", dense");
      })
      .Case([&](QuantizeAppendOp q) { os << stringifyGranularity(q.getQuant().getGranularity()); })
      .Case([&](QuantizeDynamicOp q) {
        os << stringifyGranularity(q.getQuant().getGranularity());
      })
      .Default([&](Operation *o) {
        if (auto pq = o->getAttrOfType<PQAttr>("pq"))
          os << "dsub " << pq.getDsub() << ", " << pq.getCentroids() << " centroids";
      });
  return s;
}

LogicalResult mlir::attn::emitArtifact(ModuleOp module, EmitFormat format, llvm::raw_ostream &) {
  if (format == EmitFormat::MLIR)
    return success(); // printed by the MLIR driver itself
  AttnDialect *dialect = module.getContext()->getLoadedDialect<AttnDialect>();
  SmallVector<Operation *> kernels;
  module.walk([&](Operation *op) {
    if (dialect && op->getDialect() == dialect)
      kernels.push_back(op);
  });
  if (kernels.empty())
    return module.emitError() << "nothing to emit: the module holds no attn op";

  bool wantsGPU = format == EmitFormat::PTX || format == EmitFormat::Cubin;
  bool wantsCPU = format == EmitFormat::Object;
  bool ok = true;
  for (Operation *op : kernels) {
    std::optional<TargetKind> target = getOpTarget(op);
    if (!target) {
      op->emitError() << "no target: write target = #attn.target<...> or run "
                         "attn-normalize{target=...}";
      ok = false;
      continue;
    }
    if ((wantsGPU && !isGPUTarget(*target)) || (wantsCPU && isGPUTarget(*target))) {
      op->emitError() << "--emit=" << stringifyEmitFormat(format) << " needs a "
                      << (wantsGPU ? "GPU (sm_90a)" : "CPU") << " target, but this op targets "
                      << stringifyTargetKind(*target);
      ok = false;
      continue;
    }
    op->emitError() << "not supported yet: no lowering of '" << op->getName() << "' ("
                    << describeVariant(op) << ") to " << stringifyEmitFormat(format) << " for "
                    << stringifyTargetKind(*target);
    ok = false;
  }
  return success(ok);
}
