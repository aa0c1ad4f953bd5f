//===- ForwardOps.cpp - verifiers of the forward kernel's frame and roles -===//
//
// What this file is: the verifiers of `attnk.forward.work`, `attnk.forward.prologue`,
// `attnk.forward.producer`, `attnk.forward.consumer` and the producer's transitional steps
// (`attnk.forward.key_scales`, `attnk.forward.stage_scales`) and of the consumer's epilogue
// (`attnk.forward.merge_warpgroups`, `attnk.forward.epilogue`) (ForwardOps.td): the work values
// each takes or yields follow from the plan's `persistent` flag — without a persistent grid the
// CTA's seven work ids and the prologue's three tile values, with one only the thread id; the
// consumer's final state is O (an f32 accumulator of head_dim columns) and its row vectors, and
// the thread's rows (`!attnk.rows`) are `partial` exactly for a prefill plan.
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

/// Work values yielded by `attnk.forward.work` and by `attnk.forward.prologue`: the sequence
/// length, first tile and tile count, and for a ragged batch (the plan's `ragged`) the
/// sequence's first packed query row and its query count.
static constexpr unsigned kWorkIds = 7;
static unsigned tileValues(DictionaryAttr plan) {
  auto ragged = plan.getAs<BoolAttr>("ragged");
  return ragged && ragged.getValue() ? 5 : 3;
}

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
  unsigned want = getPlan().getAs<BoolAttr>("persistent").getValue() ? 0 : tileValues(getPlan());
  if (getTiles().size() != want)
    return emitOpError("yields ") << want << " tile value(s) with this plan, got "
                                  << getTiles().size();
  return success();
}

LogicalResult ForwardProducerOp::verify() {
  return verifyStep(*this, getPlan(), getParams(), getWork(), tileValues(getPlan()));
}

/// The producer's transitional steps: as the roles, and `args` of the op's kind.
static LogicalResult verifyProducerStep(Operation *op, DictionaryAttr plan, ValueRange params,
                                        ValueRange work, TypeRange args, ArrayRef<Type> want) {
  if (failed(verifyStep(op, plan, params, work, tileValues(plan))))
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
  // Asymmetric caches (the plan's zeroPoints): the K and V zero points follow, as f32.
  auto zp = dyn_cast_or_null<BoolAttr>(getPlan().get("zeroPoints"));
  size_t results = zp && zp.getValue() ? 4 : 2;
  if (getScales().size() != results)
    return emitOpError("yields the K and V scales") << (results == 4 ? " and zero points" : "")
                                                    << ", got " << getScales().size() << " results";
  // A paged cache: the key's page too, looked up before (attnk.page_lookup).
  SmallVector<Type> want = {b.getI32Type()};
  if (getPlan().get("pageSize"))
    want.push_back(b.getI32Type());
  return verifyProducerStep(*this, getPlan(), getParams(), getWork(), getArgs().getTypes(), want);
}

LogicalResult ForwardStageScalesOp::verify() {
  Builder b(getContext());
  return verifyProducerStep(*this, getPlan(), getParams(), getWork(), getArgs().getTypes(),
                            {b.getF32Type(), b.getF32Type(), b.getI32Type()});
}

/// The consumer's final state: O as an f32 accumulator of the plan's head_dim columns (where the
/// plan names it) and row vectors of its rows.
static LogicalResult verifyState(Operation *op, DictionaryAttr plan, Type acc, Type rowMax,
                                 Type rowSum) {
  auto a = dyn_cast<AccType>(acc);
  if (!a || !a.getElementType().isF32())
    return op->emitOpError("takes O as an f32 accumulator, got ") << acc;
  if (auto d = plan.getAs<IntegerAttr>("headDim"); d && a.getN() != d.getInt())
    return op->emitOpError("takes O with the plan's head_dim (")
           << d.getInt() << ") columns, got " << a.getN();
  for (Type t : {rowMax, rowSum}) {
    auto v = dyn_cast<VectorType>(t);
    if (!v || v.getRank() != 1 || v.getDimSize(0) != a.getM())
      return op->emitOpError("takes row vectors of O's ") << a.getM() << " rows, got " << t;
  }
  return success();
}

/// A thread's rows: `partial` (a row may not exist) exactly where the plan is prefill's.
static LogicalResult verifyRows(Operation *op, DictionaryAttr plan, RowsType rows) {
  auto prefill = plan.getAs<BoolAttr>("prefill");
  if (prefill && rows.getPartial() != prefill.getValue())
    return op->emitOpError("takes rows ")
           << (prefill.getValue() ? "with" : "without") << " 'partial' with a "
           << (prefill.getValue() ? "prefill" : "decode") << " plan, got " << Type(rows);
  return success();
}

LogicalResult ForwardConsumerOp::verify() {
  if (failed(verifyStep(*this, getPlan(), getParams(), getWork(), tileValues(getPlan()))))
    return failure();
  bool persistent = getPlan().getAs<BoolAttr>("persistent").getValue();
  unsigned want = persistent ? 0 : 5;
  if (getState().size() != want)
    return emitOpError("yields ") << want << " state value(s) with this plan, got "
                                  << getState().size();
  if (persistent)
    return success();
  TypeRange t = getState().getTypes();
  if (failed(verifyState(*this, getPlan(), t[0], t[1], t[2])))
    return failure();
  auto rows = dyn_cast<RowsType>(t[4]);
  if (!t[3].isF32() || !rows)
    return emitOpError("yields O's unit (f32) and the thread's rows (!attnk.rows) last");
  return verifyRows(*this, getPlan(), rows);
}

/// The epilogue ops run without a persistent grid (whose role op keeps its epilogue).
static LogicalResult verifyNotPersistent(Operation *op, DictionaryAttr plan) {
  FailureOr<bool> persistent = planPersistent(op, plan);
  if (failed(persistent))
    return failure();
  if (*persistent)
    return op->emitOpError("is not part of a persistent-grid kernel (its consumer op stores)");
  return success();
}

LogicalResult ForwardMergeWarpgroupsOp::verify() {
  if (failed(verifyNotPersistent(*this, getPlan())) ||
      failed(verifyState(*this, getPlan(), getAcc().getType(), getRowMax().getType(),
                         getRowSum().getType())))
    return failure();
  auto wgs = getPlan().getAs<IntegerAttr>("consumerWGs");
  auto prefill = getPlan().getAs<BoolAttr>("prefill");
  if ((wgs && wgs.getInt() != 2) || (prefill && prefill.getValue()))
    return emitOpError("merges the two consumer warpgroups of a decode plan");
  if (getRows().getType().getPartial())
    return emitOpError("takes a decode warpgroup's rows, without 'partial'");
  return success();
}

/// Parameters of the forward kernel's launch ABI (without, with a dynamic q_len).
static constexpr unsigned kForwardParams = 15;

LogicalResult ForwardEpilogueOp::verify() {
  if (failed(verifyNotPersistent(*this, getPlan())) ||
      failed(verifyState(*this, getPlan(), getAcc().getType(), getRowMax().getType(),
                         getRowSum().getType())) ||
      failed(verifyRows(*this, getPlan(), getRows().getType())))
    return failure();
  if (getWork().size() != kWorkIds + tileValues(getPlan()))
    return emitOpError("takes ") << kWorkIds + tileValues(getPlan()) << " work values, got "
                                 << getWork().size();
  if (getLse() && getRows().getType().getPartial())
    return emitOpError("stores an lse for decode rows; prefill's partial rows are not supported");
  auto kernel = (*this)->getParentOfType<KernelOp>();
  if (!kernel || kernel.getBody().empty() ||
      kernel.getBody().front().getNumArguments() < kForwardParams)
    return emitOpError("reads the launch parameters of an enclosing forward kernel (")
           << kForwardParams << " or more)";
  return success();
}
