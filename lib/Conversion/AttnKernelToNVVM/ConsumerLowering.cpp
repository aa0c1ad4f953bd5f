//===- ConsumerLowering.cpp - the forward kernel's consumer role ----------===//
//
// What this file is: the lowering of the forward kernel's consumer ops (ForwardOps.td) through
// the builders of lib/Conversion/AttnToNVVM/ForwardConsumer.cpp and ForwardMerge.cpp:
// `attnk.forward.consumer` → the tile loop and the warpgroup's final state (or, with a
// persistent grid, the whole role); `attnk.forward.merge_warpgroups` → the merge of two decode
// warpgroups' states through shared memory; `attnk.forward.epilogue` → the store of the final
// state (output, cluster merge or split partial) and the trigger of programmatic dependents.
//
// The final state travels as typed values: an `!attnk.acc<64xNxf32>` is, per thread, its N / 2
// accumulator registers, a row vector (`vector<64xf32>`) the thread's two rows, an `!attnk.rows`
// where those rows live (warpgroup, index in it, fragment rows, query tokens, heads; see
// ConsumerState). The rows are the loop's result, so the merge and the epilogue read the values
// where the loop computed them.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"

#include "../AttnToNVVM/ForwardKernelImpl.h"

#include "attn/Dialect/AttnKernel/IR/AttnKernel.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

#include <memory>

using namespace mlir;
using namespace mlir::attnk;
using namespace mlir::attn::nvvm;

namespace {
/// A consumer op's builders' state: its plan and the Ctx bound to it (which refers to the plan).
struct BoundConsumer {
  ForwardPlan plan;
  Ctx c;
  explicit BoundConsumer(const ForwardPlan &p) : plan(p), c{plan, plan.smem()} {}
  BoundConsumer(const BoundConsumer &) = delete;
  BoundConsumer &operator=(const BoundConsumer &) = delete;
};

/// The builders' state of a consumer op: plan, the kernel's parameters, the aligned shared base
/// (of `ring`, lowered) and the work values; null after a diagnostic on the op.
std::unique_ptr<BoundConsumer> bindConsumer(Operation *op, DictionaryAttr planAttr,
                                            ValueRange params, Value ring, ValueRange work) {
  FailureOr<ForwardPlan> p = forwardPlanFromAttr(planAttr, [op] { return op->emitOpError(); });
  if (failed(p))
    return nullptr;
  auto bound = std::make_unique<BoundConsumer>(*p);
  Ctx &c = bound->c;
  unsigned want = c.p.numParams();
  if (params.size() != want) {
    op->emitOpError("takes the forward kernel's ") << want << " parameters, got " << params.size();
    return nullptr;
  }
  bindForwardParams(c, params);
  c.base = ring ? ringSharedBase(ring) : Value();
  if (!c.base) {
    op->emitOpError("needs rings allocated in the kernel's shared memory");
    return nullptr;
  }
  bindForwardWork(c, work);
  return bound;
}

/// The lowered kernel's parameters: the entry block arguments of the enclosing function.
ValueRange kernelParams(Operation *op) {
  auto fn = op->getParentOfType<LLVM::LLVMFuncOp>();
  if (!fn || fn.getBody().empty())
    return {};
  return fn.getBody().front().getArguments();
}

/// One value per lowered operand (every operand of these ops lowers to one value but the state).
SmallVector<Value> flat(ArrayRef<ValueRange> ranges) {
  SmallVector<Value> out;
  for (ValueRange r : ranges)
    llvm::append_range(out, r);
  return out;
}

/// {m0, m1, l0, l1, O...}: the builders' form of a final state.
SmallVector<Value> stateOf(ValueRange acc, ValueRange rowMax, ValueRange rowSum) {
  SmallVector<Value> fin(rowMax.begin(), rowMax.end());
  llvm::append_range(fin, rowSum);
  llvm::append_range(fin, acc);
  return fin;
}

/// `attnk.forward.consumer`: the tile loop; its results are the final state's registers.
struct ConsumerLowering : OpConversionPattern<ForwardConsumerOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ForwardConsumerOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    ValueRange rings = adaptor.getRings();
    std::unique_ptr<BoundConsumer> bound =
        bindConsumer(op, op.getPlan(), adaptor.getParams(), rings.empty() ? Value() : rings[0],
                     adaptor.getWork());
    if (!bound)
      return failure();
    KernelBuilder k(rewriter, op.getLoc());
    if (bound->plan.persistent) {
      buildForwardConsumerRole(k, bound->c);
      rewriter.eraseOp(op);
      return success();
    }
    ConsumerState st = buildConsumerLoop(k, bound->c);
    size_t nO = bound->plan.headDim / 2;
    ArrayRef<Value> fin = st.fin;
    SmallVector<Value> o(fin.slice(4, nO)), m(fin.take_front(2)), l(fin.slice(2, 2));
    rewriter.replaceOpWithMultiple(op, {o, m, l, {st.unit}, st.rows});
    return success();
  }
};

/// `attnk.forward.merge_warpgroups`: warpgroup 1's state parked in the idle stage ring,
/// warpgroup 0's merged with it.
struct MergeWarpgroupsLowering : OpConversionPattern<ForwardMergeWarpgroupsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ForwardMergeWarpgroupsOp op, OneToNOpAdaptor a,
                                ConversionPatternRewriter &rewriter) const override {
    FailureOr<ForwardPlan> p =
        forwardPlanFromAttr(op.getPlan(), [op]() mutable { return op.emitOpError(); });
    if (failed(p))
      return failure();
    Ctx c{*p, p->smem()};
    c.base = ringSharedBase(a.getRing().front());
    if (!c.base)
      return op.emitOpError("needs a ring allocated in the kernel's shared memory");
    KernelBuilder k(rewriter, op.getLoc());
    // The thread's warpgroup and index in it: the first two of its rows.
    ValueRange rows = a.getRows();
    Value wg = rows[0], ct = rows[1];
    SmallVector<Value> fin = stateOf(a.getAcc(), a.getRowMax(), a.getRowSum());
    fin = mergeConsumers(k, c, wg, ct, fin);
    ArrayRef<Value> merged = fin;
    SmallVector<Value> o(merged.drop_front(4)), m(merged.take_front(2)), l(merged.slice(2, 2));
    rewriter.replaceOpWithMultiple(op, {o, m, l});
    return success();
  }
};

/// `attnk.forward.epilogue`: the store of the final state, then the trigger of dependents.
struct EpilogueLowering : OpConversionPattern<ForwardEpilogueOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ForwardEpilogueOp op, OneToNOpAdaptor a,
                                ConversionPatternRewriter &rewriter) const override {
    std::unique_ptr<BoundConsumer> bound =
        bindConsumer(op, op.getPlan(), kernelParams(op), a.getRing().front(), flat(a.getWork()));
    if (!bound)
      return failure();
    KernelBuilder k(rewriter, op.getLoc());
    // The LSE output is the op's operand (the kernel's parameter of that name).
    bound->c.lse = a.getLse().empty() ? Value() : a.getLse().front();
    SmallVector<Value> fin = stateOf(a.getAcc(), a.getRowMax(), a.getRowSum());
    SmallVector<Value> rows(a.getRows());
    buildConsumerStore(k, bound->c, rows, fin, a.getUnit().front());
    triggerDependents(k, bound->c);
    rewriter.eraseOp(op);
    return success();
  }
};
} // namespace

void mlir::attnk::populateConsumerPatterns(const TypeConverter &tc, RewritePatternSet &patterns) {
  patterns.add<ConsumerLowering, MergeWarpgroupsLowering, EpilogueLowering>(tc,
                                                                            patterns.getContext());
}
