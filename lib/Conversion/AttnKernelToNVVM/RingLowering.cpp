//===- RingLowering.cpp - the ring protocol to NVVM -----------------------===//
//
// What this file is: the lowering of the ring protocol (PipelineOps.td). A stage value becomes
// its byte offset from the kernel's aligned shared-memory base (an i32): stage `s` of a ring
// allocated `at` A with `stride` S is at A + s · S, and `attnk.subtile` adds its band's offset.
// Rings entered together lower to the first ring's offset, to which the users of another ring's
// stage add the distance of the rings (stageOffsetOf), where they use it.
// `ring.acquire` waits on `empty[s]` (mbarrier.try_wait.parity; none without `phase`) and, with
// `expect_tx`, arrives on `full[s]` announcing the TMA bytes before any copy is issued;
// `ring.wait` waits on `full[s]`; `ring.commit` is `fence.proxy.async` + an arrival on `full[s]`
// for a stage written by threads and nothing for a TMA-filled one (its acquire arrived);
// `ring.release` arrives on `empty[s]`, or with `named_barrier` is `bar.sync` over the ring's
// consumer threads. Barrier `x[s]` is at the ring.alloc's barrier offset + 8 · s.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"

#include "../AttnToNVVM/ForwardKernelImpl.h"

#include "attn/Dialect/AttnKernel/IR/AttnKernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;
using namespace mlir::attnk;
using attn::nvvm::KernelBuilder;

FailureOr<RingLayout> mlir::attnk::ringLayout(ConversionPatternRewriter &rewriter, Value ring) {
  auto alloc = ring.getDefiningOp<RingAllocOp>();
  if (!alloc || !alloc.getOffset() || !alloc.getFullBarriers())
    return failure();
  RingLayout l;
  l.base = ringSharedBase(rewriter.getRemappedValue(ring));
  if (!l.base)
    return failure();
  auto type = cast<RingType>(ring.getType());
  l.at = static_cast<int64_t>(*alloc.getOffset());
  l.stride = alloc.getStride() ? static_cast<int64_t>(*alloc.getStride())
                               : llvm::alignTo(type.getStageBytes(), 1024);
  l.full = static_cast<int64_t>(*alloc.getFullBarriers());
  l.empty = static_cast<int64_t>(*alloc.getEmptyBarriers());
  l.consumers = type.getConsumers();
  return l;
}

Value RingLayout::barrier(KernelBuilder &k, Value stage, bool fullBarrier) const {
  return k.gep(base, k.add(k.mul(stage, 8), fullBarrier ? full : empty));
}

/// The ring op that returned `stage` (through subtiles), and the index of the stage among its
/// results.
static std::pair<Operation *, unsigned> enterOf(Value stage) {
  while (auto sub = stage.getDefiningOp<SubtileOp>())
    stage = sub.getSource();
  auto res = dyn_cast<OpResult>(stage);
  if (!res || !isa<RingAcquireOp, RingWaitOp>(res.getOwner()))
    return {nullptr, 0};
  return {res.getOwner(), res.getResultNumber()};
}

Value mlir::attnk::stageSharedBase(ConversionPatternRewriter &rewriter, Value stage) {
  auto [enter, index] = enterOf(stage);
  if (!enter)
    return {};
  FailureOr<RingLayout> l = ringLayout(rewriter, enter->getOperand(index));
  return succeeded(l) ? l->base : Value();
}

FailureOr<std::pair<RingLayout, Value>>
mlir::attnk::stageBarrierOf(ConversionPatternRewriter &rewriter, Value stage) {
  auto [enter, index] = enterOf(stage);
  if (!enter)
    return failure();
  auto acquire = dyn_cast<RingAcquireOp>(enter);
  Value ring = acquire ? acquire.getRings()[index] : cast<RingWaitOp>(enter).getRings()[index];
  Value index32 = acquire ? acquire.getStage() : cast<RingWaitOp>(enter).getStage();
  FailureOr<RingLayout> l = ringLayout(rewriter, ring);
  if (failed(l))
    return failure();
  return std::make_pair(*l, rewriter.getRemappedValue(index32));
}

/// The i32 parity word of an i1 phase: the i32 `x & 1` it was truncated from (or that XOR 1,
/// recomputed here), else the phase zero-extended.
static Value parityWord(KernelBuilder &k, Value phase) {
  auto trunc = phase.getDefiningOp<arith::TruncIOp>();
  Value word = trunc ? trunc.getIn() : Value();
  auto isOne = [](Value v) {
    auto c = v.getDefiningOp<arith::ConstantIntOp>();
    return c && c.value() == 1;
  };
  auto isBit = [&](Value v) {
    auto a = v ? v.getDefiningOp<arith::AndIOp>() : arith::AndIOp();
    return a && isOne(a.getRhs());
  };
  if (word && word.getType() == k.i32()) {
    if (isBit(word))
      return word;
    auto x = word.getDefiningOp<arith::XOrIOp>();
    if (x && isBit(x.getLhs()) && isOne(x.getRhs()))
      return k.bxor(x.getLhs(), k.i32(1));
  }
  return LLVM::ZExtOp::create(k.builder(), k.getLoc(), k.i32(), phase);
}

Value mlir::attnk::stageOffsetOf(KernelBuilder &k, Value stage, Value offset) {
  auto res = dyn_cast<OpResult>(stage);
  if (!res || res.getResultNumber() == 0 || !isa<RingAcquireOp, RingWaitOp>(res.getOwner()))
    return offset;
  Operation *enter = res.getOwner();
  auto first = enter->getOperand(0).getDefiningOp<RingAllocOp>();
  auto own = enter->getOperand(res.getResultNumber()).getDefiningOp<RingAllocOp>();
  return k.add(offset, static_cast<int64_t>(*own.getOffset()) -
                           static_cast<int64_t>(*first.getOffset()));
}

namespace {
/// `ring.acquire` / `ring.wait`: the wait, the acquire's expect_tx arrival, the stage offsets.
template <typename OpT>
struct RingEnterLowering : OpConversionPattern<OpT> {
  using OpConversionPattern<OpT>::OpConversionPattern;
  using Adaptor = typename OpConversionPattern<OpT>::OpAdaptor;
  LogicalResult matchAndRewrite(OpT op, Adaptor a,
                                ConversionPatternRewriter &rewriter) const override {
    constexpr bool isAcquire = std::is_same_v<OpT, RingAcquireOp>;
    SmallVector<RingLayout> layouts;
    for (Value r : op.getRings()) {
      FailureOr<RingLayout> l = ringLayout(rewriter, r);
      if (failed(l))
        return op.emitOpError("needs rings allocated with their offsets and barriers");
      layouts.push_back(*l);
    }
    KernelBuilder k(rewriter, op.getLoc());
    Value stage = a.getStage();
    // The stage's offset (every ring's stage lowers to the first ring's offset; its users add
    // the distance of the rings: stageOffsetOf). A TMA fill computes it first; a waiting op
    // after the waits of the ring ops that follow it (the waits are issued back to back).
    Value offset;
    if (op.getExpectTx())
      offset = attn::nvvm::ringOffset(k, stage, layouts[0].at, layouts[0].stride);
    if (Value phase = a.getPhase()) {
      Value bar = layouts[0].barrier(k, stage, /*fullBarrier=*/!isAcquire);
      k.mbarrierWait(bar, parityWord(k, phase));
    }
    if (std::optional<uint64_t> tx = op.getExpectTx())
      k.mbarrierArriveExpectTx(layouts[0].barrier(k, stage, true), static_cast<int64_t>(*tx));
    if (!offset) {
      OpBuilder::InsertionGuard g(rewriter);
      // Past the ring ops of the run and the offsets the earlier ones placed (LLVM ops: the
      // kernel level has none of its own there).
      Operation *next = op->getNextNode();
      while (next && ((isa<RingAcquireOp, RingWaitOp>(next) && !next->hasAttr("expect_tx")) ||
                      isa<LLVM::LLVMDialect>(next->getDialect())))
        next = next->getNextNode();
      if (next)
        rewriter.setInsertionPoint(next);
      KernelBuilder at(rewriter, op.getLoc());
      offset = attn::nvvm::ringOffset(at, stage, layouts[0].at, layouts[0].stride);
    }
    rewriter.replaceOp(op, SmallVector<Value>(layouts.size(), offset));
    return success();
  }
};

/// `ring.commit`: a thread-written stage's fence and arrival; nothing after expect_tx.
struct RingCommitLowering : OpConversionPattern<RingCommitOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(RingCommitOp op, OpAdaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto acquire = op.getBuffers()[0].getDefiningOp<RingAcquireOp>();
    if (!acquire.getExpectTx()) {
      FailureOr<std::pair<RingLayout, Value>> bar = stageBarrierOf(rewriter, op.getBuffers()[0]);
      if (failed(bar))
        return op.emitOpError("needs rings allocated with their offsets and barriers");
      KernelBuilder k(rewriter, op.getLoc());
      k.fenceProxyAsyncShared();
      k.mbarrierArrive(bar->first.barrier(k, bar->second, true));
    }
    rewriter.eraseOp(op);
    return success();
  }
};

/// `ring.release`: an arrival on the empty barrier, or the named barrier of the readers.
struct RingReleaseLowering : OpConversionPattern<RingReleaseOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(RingReleaseOp op, OpAdaptor,
                                ConversionPatternRewriter &rewriter) const override {
    FailureOr<std::pair<RingLayout, Value>> bar = stageBarrierOf(rewriter, op.getBuffers()[0]);
    if (failed(bar))
      return op.emitOpError("needs rings allocated with their offsets and barriers");
    KernelBuilder k(rewriter, op.getLoc());
    if (std::optional<uint64_t> id = op.getNamedBarrier())
      k.barrier(static_cast<int64_t>(*id), bar->first.consumers);
    else
      k.mbarrierArrive(bar->first.barrier(k, bar->second, false));
    rewriter.eraseOp(op);
    return success();
  }
};

/// `attnk.subtile`: the band's byte offset added to the stage's.
struct SubtileLowering : OpConversionPattern<SubtileOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(SubtileOp op, OpAdaptor a,
                                ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    int64_t band = static_cast<int64_t>(op.getIndex()) * op.getResult().getType().getBytes();
    rewriter.replaceOp(op, k.add(stageOffsetOf(k, op.getSource(), a.getSource()), band));
    return success();
  }
};
} // namespace

void mlir::attnk::populateRingPatterns(const TypeConverter &tc, RewritePatternSet &patterns) {
  patterns.add<RingEnterLowering<RingAcquireOp>, RingEnterLowering<RingWaitOp>,
               RingCommitLowering, RingReleaseLowering, SubtileLowering>(tc,
                                                                         patterns.getContext());
}
