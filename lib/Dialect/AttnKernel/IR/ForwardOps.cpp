//===- ForwardOps.cpp - verifiers of the forward kernel's frame and roles -===//
//
// What this file is: the verifiers of `attnk.forward.work`, `attnk.forward.prologue`,
// `attnk.forward.producer`, `attnk.forward.consumer` and the producer's transitional steps
// (`attnk.forward.key_scales`, `attnk.forward.stage_scales`) (ForwardOps.td): the work values each
// takes or yields follow from the plan's `persistent` flag — without a persistent grid the
// CTA's seven work ids and the prologue's three tile values, with one only the thread id.
//
//===----------------------------------------------------------------------===//

#include "attn/Dialect/AttnKernel/IR/AttnKernel.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::attnk;

/// The plan's `persistent` flag, or a diagnostic.
static FailureOr<bool> planPersistent(Operation *op, DictionaryAttr plan) {
  auto p = plan.getAs<BoolAttr>("persistent");
  if (!p)
    return op->emitOpError("needs a plan with a boolean 'persistent' entry");
  return p.getValue();
}

/// Work values yielded by `attnk.forward.work` and by `attnk.forward.prologue`.
static constexpr unsigned kWorkIds = 7, kTileValues = 3;

LogicalResult ForwardWorkOp::verify() {
  FailureOr<bool> persistent = planPersistent(*this, getPlan());
  if (failed(persistent))
    return failure();
  unsigned want = *persistent ? 1 : kWorkIds;
  if (getWork().size() != want)
    return emitOpError("yields ") << want << " work value(s) with this plan, got "
                                  << getWork().size();
  return success();
}

/// Operand checks shared by the prologue and the roles: `work` values, and the two tensor maps
/// first among the parameters.
static LogicalResult verifyStep(Operation *op, DictionaryAttr plan, ValueRange params,
                                ValueRange work, unsigned tileValues) {
  FailureOr<bool> persistent = planPersistent(op, plan);
  if (failed(persistent))
    return failure();
  unsigned want = *persistent ? 1 : kWorkIds + tileValues;
  if (work.size() != want)
    return op->emitOpError("takes ") << want << " work value(s) with this plan, got "
                                     << work.size();
  if (params.size() < 2 || !isa<TensorMapType>(params[0].getType()) ||
      !isa<TensorMapType>(params[1].getType()))
    return op->emitOpError("takes the K and V tensor maps as its first two parameters");
  return success();
}

LogicalResult ForwardPrologueOp::verify() {
  if (failed(verifyStep(*this, getPlan(), getParams(), getWork(), 0)))
    return failure();
  unsigned want = getPlan().getAs<BoolAttr>("persistent").getValue() ? 0 : kTileValues;
  if (getTiles().size() != want)
    return emitOpError("yields ") << want << " tile value(s) with this plan, got "
                                  << getTiles().size();
  return success();
}

LogicalResult ForwardProducerOp::verify() {
  return verifyStep(*this, getPlan(), getParams(), getWork(), kTileValues);
}

/// The producer's transitional steps: as the roles, and `args` of the op's kind.
static LogicalResult verifyProducerStep(Operation *op, DictionaryAttr plan, ValueRange params,
                                        ValueRange work, TypeRange args, ArrayRef<Type> want) {
  if (failed(verifyStep(op, plan, params, work, kTileValues)))
    return failure();
  if (TypeRange(want) != args) {
    std::string s;
    llvm::raw_string_ostream os(s);
    llvm::interleaveComma(want, os);
    return op->emitOpError("takes args (") << s << ")";
  }
  return success();
}

LogicalResult ForwardKeyScalesOp::verify() {
  Builder b(getContext());
  if (getScales().size() != 2)
    return emitOpError("yields the K and V scales, got ") << getScales().size() << " results";
  return verifyProducerStep(*this, getPlan(), getParams(), getWork(), getArgs().getTypes(),
                            {b.getI32Type()});
}

LogicalResult ForwardStageScalesOp::verify() {
  Builder b(getContext());
  return verifyProducerStep(*this, getPlan(), getParams(), getWork(), getArgs().getTypes(),
                            {b.getF32Type(), b.getF32Type(), b.getI32Type()});
}

LogicalResult ForwardConsumerOp::verify() {
  return verifyStep(*this, getPlan(), getParams(), getWork(), kTileValues);
}
