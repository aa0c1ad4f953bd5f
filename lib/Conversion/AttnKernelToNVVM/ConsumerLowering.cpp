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
// accumulator registers, a row vector (`vector<64xf32>`) the thread's two rows. The thread's
// rows (fragment rows, query tokens, heads) are the loop's: the loop's lowering records them
// under its warpgroup value, and the merge and the epilogue of that warpgroup value read them,
// so that the instructions stay where the loop put them (recomputed in the epilogue, values the
// loop does not use would move past it). An epilogue without a lowered loop computes them.
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
/// The rows each lowered tile loop computed, by its (lowered) warpgroup value.
using RowTable = llvm::DenseMap<Value, SmallVector<Value>>;

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
  ConsumerLowering(const TypeConverter &tc, MLIRContext *ctx, std::shared_ptr<RowTable> rows)
      : OpConversionPattern(tc, ctx), rows(std::move(rows)) {}
  std::shared_ptr<RowTable> rows;
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
    (*rows)[st.wg] = SmallVector<Value>(fin.drop_front(4 + nO));
    rewriter.replaceOpWithMultiple(op, {o, m, l, {st.unit}, {st.wg}});
    return success();
  }
};

/// `attnk.forward.merge_warpgroups`: warpgroup 1's state parked in the idle stage ring,
/// warpgroup 0's merged with it.
struct MergeWarpgroupsLowering : OpConversionPattern<ForwardMergeWarpgroupsOp> {
  MergeWarpgroupsLowering(const TypeConverter &tc, MLIRContext *ctx, std::shared_ptr<RowTable> rows)
      : OpConversionPattern(tc, ctx), rows(std::move(rows)) {}
  std::shared_ptr<RowTable> rows;
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
    c.tid = a.getThread().front();
    KernelBuilder k(rewriter, op.getLoc());
    // The thread's index in its warpgroup: the loop's (the last of its rows), or derived here.
    Value wg = a.getWarpgroup().front(), ct;
    if (auto it = rows->find(wg); it != rows->end())
      ct = it->second.back();
    else
      ct = k.band(k.add(c.tid, -p->producerThreads()), 127);
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
  EpilogueLowering(const TypeConverter &tc, MLIRContext *ctx, std::shared_ptr<RowTable> rows)
      : OpConversionPattern(tc, ctx), rows(std::move(rows)) {}
  std::shared_ptr<RowTable> rows;
  LogicalResult matchAndRewrite(ForwardEpilogueOp op, OneToNOpAdaptor a,
                                ConversionPatternRewriter &rewriter) const override {
    std::unique_ptr<BoundConsumer> bound =
        bindConsumer(op, op.getPlan(), kernelParams(op), a.getRing().front(), flat(a.getWork()));
    if (!bound)
      return failure();
    KernelBuilder k(rewriter, op.getLoc());
    SmallVector<Value> fin = stateOf(a.getAcc(), a.getRowMax(), a.getRowSum());
    Value wg = a.getWarpgroup().front();
    if (auto it = rows->find(wg); it != rows->end())
      llvm::append_range(fin, it->second);
    buildConsumerStore(k, bound->c, wg, fin, a.getUnit().front());
    triggerDependents(k, bound->c);
    rewriter.eraseOp(op);
    return success();
  }
};
} // namespace

void mlir::attnk::populateConsumerPatterns(const TypeConverter &tc, RewritePatternSet &patterns) {
  auto rows = std::make_shared<RowTable>();
  patterns.add<ConsumerLowering, MergeWarpgroupsLowering, EpilogueLowering>(
      tc, patterns.getContext(), rows);
}
