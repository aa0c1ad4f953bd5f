//===- MLAOps.cpp - verifiers of the MLA decode kernel's frame and roles --===//
//
// What this file is: the verifiers of `attnk.mla.prologue`, `attnk.mla.producer` and
// `attnk.mla.consumers` (MLAOps.td): the kernel's nine parameters (five buffers, four extents),
// at least one ring, and the work values each takes or yields, which follow from the plan's
// `crossover` flag — the CTA's four ids, the prologue's four key values and, with crossover,
// the cluster rank and the peer's shared base.
//
//===----------------------------------------------------------------------===//

#include "attn/Dialect/AttnKernel/IR/AttnKernel.h"

using namespace mlir;
using namespace mlir::attnk;

static constexpr unsigned kParams = 9, kBuffers = 5, kWorkIds = 4, kKeyValues = 4,
                          kCrossoverValues = 2;

/// The prologue's results with this plan, or a diagnostic.
static FailureOr<unsigned> prologueValues(Operation *op, DictionaryAttr plan) {
  auto crossover = plan.getAs<BoolAttr>("crossover");
  if (!crossover)
    return op->emitOpError("needs a plan with a boolean 'crossover' entry");
  return kKeyValues + (crossover.getValue() ? kCrossoverValues : 0);
}

/// Operand checks shared by the prologue and the roles.
static LogicalResult verifyStep(Operation *op, DictionaryAttr plan, ValueRange params,
                                ValueRange rings, ValueRange work, bool role) {
  FailureOr<unsigned> keys = prologueValues(op, plan);
  if (failed(keys))
    return failure();
  if (params.size() != kParams)
    return op->emitOpError("takes the MLA kernel's ")
           << kParams << " parameters, got " << params.size();
  for (auto [i, v] : llvm::enumerate(params))
    if (i < kBuffers ? !isa<MemRefType>(v.getType()) : !v.getType().isInteger(32))
      return op->emitOpError("parameter #")
             << i << " must be " << (i < kBuffers ? "a memref" : "an i32") << ", got "
             << v.getType();
  if (rings.empty())
    return op->emitOpError("takes at least one ring (the kernel's shared memory)");
  unsigned want = kWorkIds + (role ? *keys : 0);
  if (work.size() != want)
    return op->emitOpError("takes ")
           << want << " work value(s) with this plan, got " << work.size();
  return success();
}

LogicalResult MLAPrologueOp::verify() {
  if (failed(verifyStep(*this, getPlan(), getParams(), getRings(), getWork(), false)))
    return failure();
  unsigned want = *prologueValues(*this, getPlan());
  if (getKeys().size() != want)
    return emitOpError("yields ") << want << " value(s) with this plan, got " << getKeys().size();
  return success();
}

LogicalResult MLAProducerOp::verify() {
  return verifyStep(*this, getPlan(), getParams(), getRings(), getWork(), true);
}

LogicalResult MLAConsumersOp::verify() {
  return verifyStep(*this, getPlan(), getParams(), getRings(), getWork(), true);
}
