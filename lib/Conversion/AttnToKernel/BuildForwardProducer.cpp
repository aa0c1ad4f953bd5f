//===- BuildForwardProducer.cpp - the forward kernel's producer region ----===//
//
// What this file is: the producer role of the forward-attention kernel at the kernel level, for
// the kernels whose producer converts K/V tiles into a buffer ring without a persistent grid
// (decode with int8 / e4m3 caches, symmetric, and paged asymmetric int8 / uint8 caches): thread 0
// fills the stage ring with TMA
// (`ring.acquire … expect_tx`, `attnk.tma_load` of the K and V halves, `ring.commit`), and
// the warpgroups, tile after tile (`scf.for`), wait for a stage (`ring.wait`), take a
// conversion buffer pair (`ring.acquire` of the K and V conversion rings, which share their
// barriers), convert K and V into it (`attnk.convert_tile`: dequantization, int8 K copied for
// int8 queries, 8-bit Vᵀ; rows past the sequence end zeroed in the partial tile; zero points
// subtracted, each thread passing its row's), stage the
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
  // Zero points: paged caches only (contiguous asymmetric caches keep the transitional producer).
  return !p.persistent && !p.directKV() && !p.kDirect() && (!p.zeroPoints || p.paged()) &&
         !widenedCopy;
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
  /// x clamped into [0, len) (the key whose scales a thread loads) when paged: its page is looked
  /// up outside attnk.forward.key_scales, which clamps it again.
  Value clampKey(Value x) {
    if (!p.paged())
      return x;
    Value last = arith::AddIOp::create(b, loc, len(), c(-1));
    return arith::MaxSIOp::create(b, loc, arith::MinSIOp::create(b, loc, x, last), c(0));
  }
  /// A paged cache: the page of token `tok` of the CTA's sequence (attnk.page_lookup).
  Value pageOf(Value tok) {
    Value blocks;
    if (dynamicTable())
      blocks = arith::ShRUIOp::create(b, loc, kvLen(), c(llvm::Log2_64(p.pageSize)));
    return attnk::PageLookupOp::create(b, loc, b.getI32Type(), blockTable(), bIdx(), tok, blocks,
                                       b.getI64IntegerAttr(p.pageSize));
  }
  /// The values key_scales yields: the K and V scales, then (asymmetric) the zero points.
  size_t nScales() const { return p.zeroPoints ? 4 : 2; }
  /// The scales of key `tok` (clamped), in page `page` when paged; asymmetric, its K and V zero
  /// points (f32) after them, read at the same clamped pool row.
  ValueRange keyScales(Value tok, Value page) {
    SmallVector<Value> args = {tok};
    if (page)
      args.push_back(page);
    SmallVector<Type> types(nScales(), b.getF32Type());
    return attnk::ForwardKeyScalesOp::create(b, loc, types, args, params, rings, work, plan)
        .getScales();
  }
  /// Whether the pages of a refill are looked up before the tile's conversion (a paged cache of
  /// at most 16 boxes per K or V tile: one lane of the warp each); otherwise the lowering of
  /// the copies reads them.
  bool pagesAhead() const { return p.paged() && p.tileN / p.boxRows() <= 16; }

  // The kernel's parameters, in forwardParams' order (BuildForward.cpp).
  Value kvLen() { return params[10]; }
  Value numSplits() { return params[11]; }
  Value blockTable() { return params[p.blockTableParam()]; }
  /// A block table of a run-time width (kv_len / P entries per sequence).
  bool dynamicTable() { return cast<MemRefType>(blockTable().getType()).isDynamicDim(1); }

  Value tid() { return work[0]; }
  Value bIdx() { return work[4]; }
  Value hkv() { return work[5]; }
  Value len() { return work[7]; }
  Value tile0() { return work[8]; }
  Value numTiles() { return work[9]; }

  /// Thread 0 loads tile `tile`'s K and V into stage `slot` of the stage ring; `pages`: a paged
  /// cache's page of each box, looked up before (empty: the copies read the block table).
  void issueTile(Value slot, Value tile, ValueRange pages = {});
  /// Converts K and V of `stage` into the conversion buffers; rows at or past `rowsValid`
  /// zeroed when `masked`; `zeros`: the K and V zero points of the thread's row (asymmetric).
  void convert(Value stage, ValueRange bufs, Value rowsValid, bool masked, ValueRange zeros);
  /// The tile loop's body for tile `j` with the current tile's scales `sc` (paged: and the page
  /// of the thread's key in the next tile); yields the next's.
  SmallVector<Value> tileStep(Value j, ValueRange sc, Value isLeader);
  /// A paged cache, pagesAhead: lane i of each warp looks the page of box i of tile `tile` up
  /// (one register per thread while the tile converts, where thread 0 holding them all would
  /// spill), and before the refill every warp gathers them from its lanes.
  Value refillPage(Value tile);
  SmallVector<Value> gatherPages(Value page);
  void build();
};
} // namespace

void ProducerBuilder::issueTile(Value slot, Value tile, ValueRange pages) {
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
  // A table of a dynamic width: the pages looked up here (the copies' lowering reads a table of
  // a static width only).
  SmallVector<Value> looked;
  if (p.paged() && pages.empty() && dynamicTable()) {
    for (int64_t r0 = 0; r0 < half; r0 += rows)
      looked.push_back(pageOf(add(row, r0)));
    pages = looked;
  }
  Value table = p.paged() && pages.empty() ? blockTable() : Value();
  for (int64_t r0 = 0; r0 < half; r0 += rows) {
    // Coordinates outermost first: batch element, key row, KV head, column.
    SmallVector<Value> coords = {bIdx(), add(row, r0), hkv(), c(0)};
    ValueRange boxPage = pages.empty() ? ValueRange() : pages.slice(r0 / rows, 1);
    for (int kv = 0; kv < 2; ++kv) {
      // Each half (and box) named where its copy is issued.
      Value halfStage = sub(st, kv, half);
      Value dest = rows == half ? halfStage : sub(halfStage, r0 / rows, rows);
      attnk::TmaLoadOp::create(b, loc, params[kv], coords, dest, addressing, table, Value(),
                               boxPage);
    }
  }
  attnk::RingCommitOp::create(b, loc, ValueRange{rings[0]}, ValueRange{st});
}

void ProducerBuilder::convert(Value stage, ValueRange bufs, Value rowsValid, bool masked,
                              ValueRange zeros) {
  MLIRContext *ctx = b.getContext();
  auto role = WarpRoleAttr::get(ctx, RoleKind::producer, p.producerWGs, p.producerRegs);
  auto stageType = cast<attnk::StageType>(stage.getType());
  auto halfType = attnk::StageType::get(ctx, {p.tileN, stageType.getShape()[1]},
                                        stageType.getElementType(), stageType.getSwizzle());
  auto one = [&](int64_t index, Value dest, QuantAttr q, bool transpose) {
    Value src = attnk::SubtileOp::create(b, loc, halfType, stage, b.getI64IntegerAttr(index));
    // An asymmetric scheme's zero point: the one of the thread's row, subtracted from the codes.
    ValueRange zero = q && q.isAsymmetric() ? zeros.slice(index, 1) : ValueRange{};
    attnk::ConvertTileOp::create(
        b, loc, Type(), src, dest, ValueRange{}, zero, masked ? rowsValid : Value(),
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

Value ProducerBuilder::refillPage(Value tile) {
  int64_t n = p.tileN / p.boxRows();
  Value lane = arith::RemUIOp::create(b, loc, tid(), c(32));
  Value box = arith::MinUIOp::create(b, loc, lane, c(n - 1));
  Value rows = arith::MulIOp::create(b, loc, box, c(p.boxRows()));
  return pageOf(add(mul(tile, p.tileN), rows));
}

SmallVector<Value> ProducerBuilder::gatherPages(Value page) {
  SmallVector<Value> pages;
  for (int64_t i = 0; i < p.tileN / p.boxRows(); ++i)
    pages.push_back(NVVM::ShflOp::create(b, loc, b.getI32Type(), c(-1), page, c(i), c(0x1f),
                                         NVVM::ShflKind::idx, UnitAttr()));
  return pages;
}

SmallVector<Value> ProducerBuilder::tileStep(Value j, ValueRange sc, Value isLeader) {
  Value s = rem(j, p.stages);
  Value phaseS = parity(j, p.stages);
  Value buf = rem(j, p.convBufs());
  Value phaseB = parity(j, p.convBufs());
  Value tile = add(tile0(), j);
  Value tileStart = mul(tile, p.tileN);
  // Thread 0 refills stage s with tile j + stages at the end of the step; a paged cache's pages
  // of that tile are read now, while this tile converts.
  Value next, go;
  auto refillTile = [&] {
    next = add(j, p.stages);
    go = arith::AndIOp::create(b, loc, isLeader, cmp(CmpIPredicate::slt, next, numTiles()));
  };
  Value lanePage;
  if (pagesAhead()) {
    refillTile();
    lanePage = refillPage(add(tile0(), next));
  }
  // The next tile's scales load while this one converts; paged, in the page looked up one step
  // before, while the page of the key after it is looked up (no load waits for the table).
  Value nextTok = clampKey(add(add(tileStart, p.tileN), tid()));
  SmallVector<Value> scN(keyScales(nextTok, p.paged() ? sc[nScales()] : Value()));
  if (p.paged())
    scN.push_back(pageOf(clampKey(add(add(tileStart, 2 * p.tileN), tid()))));
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
    ValueRange zeros = p.zeroPoints ? sc.slice(2, 2) : ValueRange{};
    convert(stage, bufs.getBuffers(), rowsValid, true, zeros);
    b.setInsertionPointToStart(partial.elseBlock());
    convert(stage, bufs.getBuffers(), rowsValid, false, zeros);
  }
  attnk::ForwardStageScalesOp::create(b, loc, ValueRange{sc[0], sc[1], buf}, params, rings, work,
                                      plan);
  attnk::RingCommitOp::create(b, loc, convRings, bufs.getBuffers());
  attnk::RingReleaseOp::create(b, loc, ValueRange{rings[0]}, ValueRange{stage},
                               b.getI64IntegerAttr(1));
  // Every producer thread is done with stage s: thread 0 refills it with tile j + stages.
  if (!go)
    refillTile();
  SmallVector<Value> pages;
  if (lanePage)
    pages = gatherPages(lanePage);
  auto refill = scf::IfOp::create(b, loc, TypeRange{}, go, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(refill.thenBlock());
    issueTile(s, add(tile0(), next), pages);
  }
  return scN;
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
  // The first tile's scales; paged, the page of the thread's key in the second tile too.
  Value tok0 = add(mul(tile0(), p.tileN), tid());
  Value key0 = clampKey(tok0);
  SmallVector<Value> sc0(keyScales(key0, p.paged() ? pageOf(key0) : Value()));
  if (p.paged())
    sc0.push_back(pageOf(clampKey(add(tok0, p.tileN))));
  scf::ForOp::create(b, loc, c(0), numTiles(), c(1), sc0,
                     [&](OpBuilder &, Location, Value j, ValueRange sc) {
                       scf::YieldOp::create(b, loc, tileStep(j, sc, isLeader));
                     });
  if (p.clusterSplits()) {
    // The producers' part of the consumers' in-cluster merge: its two cluster barriers.
    Value splits = cmp(CmpIPredicate::sgt, numSplits(), c(1));
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
