//===- BuildForwardProducer.cpp - the forward kernel's producer region ----===//
//
// What this file is: the producer role of the forward-attention kernel at the kernel level, for
// the kernels whose producer converts K/V tiles into a buffer ring without a persistent grid
// (decode with int8 / e4m3 caches, symmetric): thread 0 fills the stage ring with TMA
// (`ring.acquire … expect_tx`, `attnk.tma_load` of the K and V halves, `ring.commit`), and
// the warpgroups, tile after tile (`scf.for`), wait for a stage (`ring.wait`), take a
// conversion buffer pair (`ring.acquire` of the K and V conversion rings, which share their
// barriers), convert K and V into it (`attnk.convert_tile`: dequantization, int8 K copied for
// int8 queries, 8-bit Vᵀ; rows past the sequence end zeroed in the partial tile), stage the
// tile's scales, hand the buffers to the consumers (`ring.commit`), give the stage back
// (`ring.release` over the producer's named barrier) and refill it with the tile `stages`
// ahead. Other forward kernels keep the transitional `attnk.forward.producer`.
//
//===----------------------------------------------------------------------===//

#include "Build.h"

#include "../AttnToNVVM/ForwardPlan.h"

#include "attn/Dialect/AttnKernel/IR/AttnKernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::nvvm;
using arith::CmpIPredicate;

bool mlir::attn::kernel::producerHasRegion(const ForwardPlan &p) {
  // Int8 K copied for int8 queries into rows wider than its own (head_dim 64 into the 128-byte
  // rows of the s8 WGMMA's layout) is not a tile-for-tile conversion yet.
  bool widenedCopy = p.qk8() && p.qkRowBytes() != p.headDim;
  return !p.persistent && !p.directKV() && !p.kDirect() && !p.zeroPoints && !widenedCopy;
}

namespace {
/// The values the producer region is written over, and i32 arithmetic on them.
struct ProducerBuilder {
  OpBuilder &b;
  Location loc;
  const ForwardPlan &p;
  ValueRange params, rings, work;
  DictionaryAttr plan;
  AttentionOp op;

  Value c(int64_t v) { return arith::ConstantIntOp::create(b, loc, v, 32); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value add(Value x, int64_t y) { return y == 0 ? x : add(x, c(y)); }
  Value mul(Value x, int64_t y) { return y == 1 ? x : arith::MulIOp::create(b, loc, x, c(y)); }
  Value cmp(CmpIPredicate pred, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, pred, x, y);
  }
  /// (x / n) mod 2: the parity of a ring's phase, as an i32 0 or 1.
  Value parity(Value x, int64_t n) {
    return arith::AndIOp::create(b, loc, arith::DivUIOp::create(b, loc, x, c(n)), c(1));
  }
  /// The i1 phase of a parity word; `flip` inverts it (an empty barrier's first pass).
  Value phase(Value word, bool flip = false) {
    if (flip)
      word = arith::XOrIOp::create(b, loc, word, c(1));
    return arith::TruncIOp::create(b, loc, b.getI1Type(), word);
  }
  Value rem(Value x, int64_t n) { return arith::RemUIOp::create(b, loc, x, c(n)); }

  Value tid() { return work[0]; }
  Value bIdx() { return work[4]; }
  Value hkv() { return work[5]; }
  Value len() { return work[7]; }
  Value tile0() { return work[8]; }
  Value numTiles() { return work[9]; }

  /// Thread 0 loads tile `tile`'s K and V into stage `slot` of the stage ring.
  void issueTile(Value slot, Value tile);
  /// Converts K and V of `stage` into the conversion buffers; rows at or past `rowsValid`
  /// zeroed when `masked`.
  void convert(Value stage, ValueRange bufs, Value rowsValid, bool masked);
  /// The tile loop's body for tile `j` with the current tile's scales `sc`; yields the next's.
  SmallVector<Value> tileStep(Value j, ValueRange sc, Value isLeader);
  void build();
};
} // namespace

void ProducerBuilder::issueTile(Value slot, Value tile) {
  auto stageRing = cast<attnk::RingType>(rings[0].getType());
  int64_t half = p.tileN, rows = p.boxRows();
  auto acquire = attnk::RingAcquireOp::create(
      b, loc, TypeRange{stageRing.getStageType()}, ValueRange{rings[0]}, slot, Value(),
      b.getI64IntegerAttr(2 * p.stageTileBytes()));
  Value st = acquire.getBuffers()[0];
  auto sub = [&](Value of, int64_t index, int64_t n) -> Value {
    auto from = cast<attnk::StageType>(of.getType());
    auto t = attnk::StageType::get(b.getContext(), {n, from.getShape()[1]}, from.getElementType(),
                                   from.getSwizzle());
    return attnk::SubtileOp::create(b, loc, t, of, b.getI64IntegerAttr(index));
  };
  Value row = mul(tile, p.tileN);
  // A paged cache: the row is the sequence's token, the block table gives its page.
  auto addressing =
      p.paged() ? attnk::AddressingAttr::get(b.getContext(), attnk::AddressingKind::paged,
                                             p.pageSize)
                : attnk::AddressingAttr::get(b.getContext(), attnk::AddressingKind::contiguous, 0);
  Value table = p.paged() ? params.back() : Value();
  for (int64_t r0 = 0; r0 < half; r0 += rows) {
    // Coordinates outermost first: batch element, key row, KV head, column.
    SmallVector<Value> coords = {bIdx(), add(row, r0), hkv(), c(0)};
    for (int kv = 0; kv < 2; ++kv) {
      // Each half (and box) named where its copy is issued.
      Value halfStage = sub(st, kv, half);
      Value dest = rows == half ? halfStage : sub(halfStage, r0 / rows, rows);
      attnk::TmaLoadOp::create(b, loc, params[kv], coords, dest, addressing, table, Value());
    }
  }
  attnk::RingCommitOp::create(b, loc, ValueRange{rings[0]}, ValueRange{st});
}

void ProducerBuilder::convert(Value stage, ValueRange bufs, Value rowsValid, bool masked) {
  MLIRContext *ctx = b.getContext();
  auto role = WarpRoleAttr::get(ctx, RoleKind::producer, p.producerWGs, p.producerRegs);
  auto stageType = cast<attnk::StageType>(stage.getType());
  auto halfType = attnk::StageType::get(ctx, {p.tileN, stageType.getShape()[1]},
                                        stageType.getElementType(), stageType.getSwizzle());
  auto one = [&](int64_t index, Value dest, QuantAttr q, bool transpose) {
    Value src = attnk::SubtileOp::create(b, loc, halfType, stage, b.getI64IntegerAttr(index));
    attnk::ConvertTileOp::create(
        b, loc, Type(), src, dest, ValueRange{}, ValueRange{}, masked ? rowsValid : Value(),
        q ? b.getArrayAttr({q}) : ArrayAttr(), role,
        attnk::ConvertPartAttr::get(ctx, q ? attnk::ConvertPart::codes : attnk::ConvertPart::full),
        transpose ? b.getUnitAttr() : UnitAttr());
  };
  // K: dequantized, or (int8 queries) its bytes copied into the swizzled layout.
  Type kElem = cast<attnk::StageType>(bufs[0].getType()).getElementType();
  bool kCodes = kElem.isBF16() || kElem.isF16();
  one(0, bufs[0], kCodes ? op.getKQuantAttr() : QuantAttr(), false);
  // V: dequantized, or (fp8, full_int8) transposed into 8-bit Vᵀ.
  one(1, bufs[1], p.pv8() ? QuantAttr() : op.getVQuantAttr(), p.pv8());
}

SmallVector<Value> ProducerBuilder::tileStep(Value j, ValueRange sc, Value isLeader) {
  Value s = rem(j, p.stages);
  Value phaseS = parity(j, p.stages);
  Value buf = rem(j, p.convBufs());
  Value phaseB = parity(j, p.convBufs());
  Value tile = add(tile0(), j);
  Value tileStart = mul(tile, p.tileN);
  // The next tile's scales load while this one converts.
  Value nextTok = add(add(tileStart, p.tileN), tid());
  auto scN = attnk::ForwardKeyScalesOp::create(b, loc, TypeRange{b.getF32Type(), b.getF32Type()},
                                               ValueRange{nextTok}, params, rings, work, plan);
  // The two waits are issued back to back (their phases first).
  Value fullPhase = phase(phaseS), emptyPhase = phase(phaseB, /*flip=*/true);
  auto stageRing = cast<attnk::RingType>(rings[0].getType());
  auto full = attnk::RingWaitOp::create(b, loc, TypeRange{stageRing.getStageType()},
                                        ValueRange{rings[0]}, s, fullPhase, IntegerAttr());
  ValueRange convRings = rings.drop_front();
  SmallVector<Type> convTypes;
  for (Value r : convRings)
    convTypes.push_back(cast<attnk::RingType>(r.getType()).getStageType());
  auto bufs = attnk::RingAcquireOp::create(b, loc, convTypes, convRings, buf, emptyPhase,
                                           IntegerAttr());
  Value stage = full.getBuffers()[0];
  Value rowsValid = arith::SubIOp::create(b, loc, len(), tileStart);
  // Only the tile holding the sequence end needs zeroed rows.
  auto partial = scf::IfOp::create(b, loc, TypeRange{}, cmp(CmpIPredicate::slt, rowsValid,
                                                            c(p.tileN)),
                                   /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(partial.thenBlock());
    convert(stage, bufs.getBuffers(), rowsValid, true);
    b.setInsertionPointToStart(partial.elseBlock());
    convert(stage, bufs.getBuffers(), rowsValid, false);
  }
  attnk::ForwardStageScalesOp::create(b, loc, ValueRange{sc[0], sc[1], buf}, params, rings, work,
                                      plan);
  attnk::RingCommitOp::create(b, loc, convRings, bufs.getBuffers());
  attnk::RingReleaseOp::create(b, loc, ValueRange{rings[0]}, ValueRange{stage},
                               b.getI64IntegerAttr(1));
  // Every producer thread is done with stage s: thread 0 refills it with tile j + stages.
  Value next = add(j, p.stages);
  Value go = arith::AndIOp::create(b, loc, isLeader, cmp(CmpIPredicate::slt, next, numTiles()));
  auto refill = scf::IfOp::create(b, loc, TypeRange{}, go, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(refill.thenBlock());
    issueTile(s, add(tile0(), next));
  }
  return SmallVector<Value>(scN.getScales());
}

void ProducerBuilder::build() {
  Value isLeader = cmp(CmpIPredicate::eq, tid(), c(0));
  // The rest of the first `stages` tiles (prefill's prologue loads only the first).
  auto fill = scf::IfOp::create(b, loc, TypeRange{}, isLeader, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(fill.thenBlock());
    Value n = arith::MinSIOp::create(b, loc, numTiles(), c(p.stages));
    scf::ForOp::create(b, loc, c(p.prefill ? 1 : p.stages), n, c(1), ValueRange{},
                       [&](OpBuilder &, Location, Value s, ValueRange) {
                         issueTile(s, add(tile0(), s));
                         scf::YieldOp::create(b, loc);
                       });
  }
  Value tok0 = add(mul(tile0(), p.tileN), tid());
  auto sc0 = attnk::ForwardKeyScalesOp::create(b, loc, TypeRange{b.getF32Type(), b.getF32Type()},
                                               ValueRange{tok0}, params, rings, work, plan);
  scf::ForOp::create(b, loc, c(0), numTiles(), c(1), sc0.getScales(),
                     [&](OpBuilder &, Location, Value j, ValueRange sc) {
                       scf::YieldOp::create(b, loc, tileStep(j, sc, isLeader));
                     });
  if (p.clusterSplits()) {
    // The producers' part of the consumers' in-cluster merge: its two cluster barriers.
    Value splits = cmp(CmpIPredicate::sgt, params[11], c(1));
    Value cluster =
        cmp(CmpIPredicate::sgt, NVVM::ClusterDim::create(b, loc, b.getI32Type()), c(1));
    Value multi = arith::AndIOp::create(b, loc, splits, cluster);
    auto merge = scf::IfOp::create(b, loc, TypeRange{}, multi, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(merge.thenBlock());
    for (int i = 0; i < 2; ++i) {
      NVVM::ClusterArriveOp::create(b, loc, b.getUnitAttr());
      NVVM::ClusterWaitOp::create(b, loc, b.getUnitAttr());
    }
  }
}

void mlir::attn::kernel::buildForwardProducer(OpBuilder &b, Location loc, AttentionOp op,
                                              const ForwardPlan &p, ValueRange params,
                                              ValueRange rings, ValueRange work,
                                              DictionaryAttr plan) {
  ProducerBuilder{b, loc, p, params, rings, work, plan, op}.build();
}
