//===- Normalize.cpp - the attn-normalize pass ----------------------------===//
//
// What this file is: `attn-normalize` — writes every default of a spec explicitly (mode inferred
// from element types, softmax_scale = 1/sqrt(D), target from the pass option), fails on ops
// that still lack what a lowering needs, and warns where a quantize op's rotation (`hadamard`)
// disagrees with the attention that reads what it wrote.
//
//===----------------------------------------------------------------------===//

#include "attn/Dialect/Attn/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

#define DEBUG_TYPE "attn-normalize"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNNORMALIZE
#include "attn/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

/// A quantize op writing an attention's q, k or v (the same SSA memref) that rotates its rows
/// (`hadamard`) where the attention does not, or the reverse, gives a wrong Q·Kᵀ or O — unless
/// the rows were rotated elsewhere (a rotation folded into projection weights), which the spec
/// cannot show. So a warning, at the attention, with a note at the quantize op.
static void warnRotationMismatch(AttentionOp a) {
  std::pair<StringRef, Value> operands[] = {{"q", a.getQ()}, {"k", a.getK()}, {"v", a.getV()}};
  for (auto [name, v] : operands)
    for (Operation *user : v.getUsers()) {
      std::optional<bool> rotates;
      if (auto ap = dyn_cast<QuantizeAppendOp>(user); ap && ap.getCache() == v)
        rotates = ap.getHadamard();
      else if (auto pa = dyn_cast<QuantizeAppendPagedOp>(user); pa && pa.getCache() == v)
        rotates = pa.getHadamard();
      else if (auto d = dyn_cast<QuantizeDynamicOp>(user); d && d.getDst() == v)
        rotates = d.getHadamard();
      if (!rotates || *rotates == a.getHadamard())
        continue;
      InFlightDiagnostic w = a.emitWarning();
      if (*rotates)
        w << "'" << name << "' is written rotated by " << user->getName()
          << " {hadamard}, but this attention has no `hadamard`: it takes its rows unrotated "
             "(add `hadamard` here, or drop it there, unless the other operands are rotated "
             "elsewhere)";
      else
        w << "this attention has `hadamard` (its q, k and v hold rotated rows), but '" << name
          << "' is written unrotated by " << user->getName()
          << " (add `hadamard` there, unless its input is rotated already)";
      w.attachNote(user->getLoc()) << "the " << user->getName() << " writing '" << name << "'";
    }
}

namespace {
struct NormalizePass : public attn::impl::AttnNormalizeBase<NormalizePass> {
  using AttnNormalizeBase::AttnNormalizeBase;

  void runOnOperation() override {
    std::optional<TargetKind> fallback;
    if (!defaultTarget.empty()) {
      fallback = symbolizeTargetKind(defaultTarget);
      if (!fallback) {
        getOperation().emitError() << "attn-normalize: unknown target '" << defaultTarget
                                   << "'; expected sm_90a, avx2, avx512, avx512_vbmi, "
                                      "avx512_vnni, neon or scalar";
        return signalPassFailure();
      }
    }
    Builder b(&getContext());
    bool failedAny = false;
    getOperation().walk([&](Operation *op) {
      if (op->getDialect() != op->getContext()->getLoadedDialect<AttnDialect>())
        return;
      if (!getOpTarget(op)) {
        if (!fallback) {
          op->emitError() << "no target: write target = #attn.target<...> or run "
                             "attn-normalize{target=...}";
          failedAny = true;
          return;
        }
        op->setAttr("target", TargetKindAttr::get(&getContext(), *fallback));
      }
      auto defaultScale = [&](int64_t d) -> FloatAttr {
        if (ShapedType::isDynamic(d))
          return {};
        return b.getF32FloatAttr(1.0 / std::sqrt(static_cast<double>(d)));
      };
      llvm::TypeSwitch<Operation *>(op)
          .Case([&](AttentionOp a) {
            warnRotationMismatch(a);
            if (!a.getModeAttr())
              if (FailureOr<Mode> m = a.getEffectiveMode(); succeeded(m))
                a.setModeAttr(ModeAttr::get(&getContext(), *m));
            if (!a.getSoftmaxScaleAttr())
              if (FloatAttr s = defaultScale(a.getHeadDim()))
                a.setSoftmaxScaleAttr(s);
          })
          .Case([&](MLADecodeOp m) {
            if (!m.getSoftmaxScaleAttr())
              if (FloatAttr s = defaultScale(m.getQ().getType().getDimSize(3)))
                m.setSoftmaxScaleAttr(s);
          })
          .Case([&](PQAttentionOp p) {
            if (!p.getSoftmaxScaleAttr())
              if (FloatAttr s = defaultScale(p.getQuery().getType().getDimSize(1)))
                p.setSoftmaxScaleAttr(s);
          });
      // A target set here may make the op invalid (e.g. an int8 mode on a CPU target).
      if (failed(mlir::verify(op, /*verifyRecursively=*/false)))
        failedAny = true;
    });
    if (failedAny)
      signalPassFailure();
  }
};
} // namespace
