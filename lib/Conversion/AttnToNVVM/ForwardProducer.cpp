//===- ForwardProducer.cpp - the forward kernel's producer warpgroup ------===//
//
// What this file is: the producer of the forward kernels whose producer role is still the
// transitional `attnk.forward.producer` (persistent prefill, bf16 caches, zero points, 8-bit K
// read from the stages): thread 0 streams K/V tiles with TMA into `stages` mbarrier-guarded
// shared-memory stages; the warpgroup converts each tile into a conversion buffer (the tile
// conversions, dequantTile and transposeTile, are the lowering of `attnk.convert_tile` in
// lib/Conversion/AttnKernelToNVVM/ConvertLowering.cpp), zeroes keys past the sequence length,
// stages the per-token scales (loadScales, stageScales: also the lowering of
// `attnk.forward.key_scales` / `forward.stage_scales`), and signals the consumers. bf16 caches
// skip the conversion: TMA fills the swizzled layout the consumers read (buildDirectProducer).
// With a persistent grid (prefill) the rings run on across work items (Ctx::ring, fillSlot).
// The other producers are written in ring, TMA and conversion ops
// (lib/Conversion/AttnToKernel/BuildForwardProducer.cpp).
//
//===----------------------------------------------------------------------===//

#include "ForwardKernelImpl.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::nvvm;
using P = LLVM::ICmpPredicate;

Value mlir::attn::nvvm::scaleIndex(KernelBuilder &k, Granularity g, Value b, Value len,
                                   int64_t heads, Value head, Value token, int64_t blockRows) {
  switch (g) {
  case Granularity::per_token_head:
    return k.add(k.mul(k.add(k.mul(b, len), token), heads), head);
  case Granularity::per_block: {
    Value blocks = k.mul(b, k.ceilDiv(len, blockRows));
    return k.add(k.mul(k.add(blocks, k.udiv(token, blockRows)), heads), head);
  }
  case Granularity::per_token:
    return k.add(k.mul(b, len), token);
  case Granularity::per_head:
    return head;
  default:
    return k.i32(0);
  }
}

Value mlir::attn::nvvm::pageOf(KernelBuilder &k, Value table, int64_t maxBlocks, Value blocks,
                               int64_t pageSize, Value b, Value token) {
  Value blk = k.udiv(token, pageSize);
  Value n = blocks ? blocks : k.i32(maxBlocks);
  Value last = blocks ? k.add(blocks, -1) : k.i32(maxBlocks - 1);
  blk = k.select(k.cmp(P::ult, blk, n), blk, last);
  Value entry = k.add(blocks ? k.mul(b, blocks) : k.mul(b, maxBlocks), blk);
  return k.loadInvariant(k.i32(), k.gep(table, k.mul(k.sext64(entry), int64_t(4))));
}

Value mlir::attn::nvvm::pageRow(KernelBuilder &k, Value page, int64_t pageSize, int64_t numPages,
                                Value token, Value valid, Value numSlots) {
  if (valid) // a token outside the sequence (an empty one) reads page 0
    page = k.select(valid, page, k.i32(0));
  if (numPages > 0) // an entry past the pool (or negative) reads page num_pages − 1
    page = k.select(k.cmp(P::ult, page, k.i32(numPages)), page, k.i32(numPages - 1));
  if (numSlots) { // the same with the pool's size known at launch (num_slots = num_pages · P)
    Value pages = k.lshr(numSlots, llvm::Log2_64(pageSize));
    page = k.select(k.cmp(P::ult, page, pages), page, k.add(pages, -1));
  }
  return k.add(k.mul(page, pageSize), k.band(token, pageSize - 1));
}

Value mlir::attn::nvvm::pagedRow(KernelBuilder &k, Value table, int64_t maxBlocks, Value blocks,
                                 int64_t pageSize, int64_t numPages, Value b, Value token,
                                 Value valid) {
  return pageRow(k, pageOf(k, table, maxBlocks, blocks, pageSize, b, token), pageSize, numPages,
                 token, valid);
}

Value mlir::attn::nvvm::tableBlocks(KernelBuilder &k, Ctx &c) {
  if (!c.p.paged() || c.p.maxBlocks > 0)
    return {};
  return k.lshr(c.kvLen, llvm::Log2_64(c.p.pageSize));
}

Value mlir::attn::nvvm::scaleIndex(KernelBuilder &k, Ctx &c, Granularity g, Value token,
                                   int64_t blockRows, Value page) {
  const ForwardPlan &p = c.p;
  bool followsToken = g == Granularity::per_token_head || g == Granularity::per_token ||
                      g == Granularity::per_block;
  if (!p.paged() || !followsToken)
    return scaleIndex(k, g, c.bIdx, c.kvLen, p.kvHeads, c.hkv, token, blockRows);
  // A paged cache's scales are stored per page: the pool's rows, as one sequence of
  // num_pages · P tokens (a per_block block lies within one page). `page`: the token's page,
  // looked up before (else read here).
  if (!page)
    page = pageOf(k, c.blockTable, p.maxBlocks, tableBlocks(k, c), p.pageSize, c.bIdx, token);
  Value row = pageRow(k, page, p.pageSize, std::max<int64_t>(p.numPages, 0), token,
                      k.cmp(P::slt, token, c.len), p.numPages < 0 ? c.numSlots : Value());
  return scaleIndex(k, g, k.i32(0), c.kvLen, p.kvHeads, c.hkv, row, blockRows);
}

/// Loads the K and V scales of key `token` (clamped into [0, len) so the address is valid) and,
/// for asymmetric caches, its zero points as int8x4ToF32's magic constants: {ks, vs, kz, vz}.
SmallVector<Value> mlir::attn::nvvm::loadScales(KernelBuilder &k, Ctx &c, Value token, Value page,
                                                bool zeroCodes) {
  const ForwardPlan &p = c.p;
  if (!p.hasScales())
    return {k.f32(0), k.f32(0)};
  Value t = k.smax(k.smin(token, k.add(c.len, -1)), k.i32(0));
  auto ld = [&](Value base, Granularity g, int64_t blockRows) {
    Value idx = k.sext64(scaleIndex(k, c, g, t, blockRows, page));
    return k.loadInvariant(k.f32(), k.gep(base, k.mul(idx, int64_t(4))));
  };
  // plan.vScaleInEpilogue: nothing reads a staged V scale (and a loop-invariant one would hold
  // a register of the producer's few).
  SmallVector<Value> out = {ld(c.kScale, p.kGran, p.kBlock), p.vScaleInEpilogue()
                                                                 ? k.f32(1.0)
                                                                 : ld(c.vScale, p.vGran, p.vBlock)};
  if (p.zeroPoints) {
    auto magic = [&](Value base, Granularity g) {
      Value z = k.loadInvariant(k.builder().getI8Type(),
                                k.gep(base, k.sext64(scaleIndex(k, c, g, t, 1, page))), 1);
      Value zf = p.unsignedCodes
                     ? LLVM::UIToFPOp::create(k.builder(), k.getLoc(), k.f32(), z).getResult()
                     : k.sitofp(z);
      return zeroCodes ? zf : k.fadd(zf, k.f32(p.unsignedCodes ? 8388608.0 : 8388736.0));
    };
    out.push_back(magic(c.kZero, p.kGran));
    out.push_back(magic(c.vZero, p.vGran));
  }
  return out;
}

/// Thread 0: loads tile `tile`'s K and V into stage `stage`, completing on `bar` (default: the
/// stage's full barrier). Direct (bf16) tiles come as D/64 boxes of 64 columns, each a column
/// block of the 128-byte-swizzled layout the WGMMAs read; a box of fewer rows than the tile
/// (plan.tmaBoxRows) is loaded tile_n / rows times.
/// A paged cache: the page of each box of tile `tile` (one page per box), read from the block
/// table; empty when contiguous.
static SmallVector<Value> tilePages(KernelBuilder &k, Ctx &c, Value tile) {
  const ForwardPlan &p = c.p;
  SmallVector<Value> pages;
  for (int64_t r0 = 0; p.paged() && r0 < p.tileN; r0 += p.boxRows())
    pages.push_back(pageOf(k, c.blockTable, p.maxBlocks, tableBlocks(k, c), p.pageSize, c.bIdx,
                           k.add(k.mul(tile, p.tileN), r0)));
  return pages;
}

/// `pages`: a paged cache's pages of the tile's boxes, looked up before (tilePages; empty: read
/// here, right before the copies).
static void issueTile(KernelBuilder &k, Ctx &c, Value stage, Value tile, Value bar = {},
                      ArrayRef<Value> pages = {}) {
  const ForwardPlan &p = c.p;
  Value stageOff = ringOffset(k, stage, c.sm.stage, c.sm.stageStride);
  if (!bar)
    bar = sptr(k, c, k.add(k.mul(stage, 8), c.sm.fullStage(0)));
  k.mbarrierArriveExpectTx(bar, 2 * p.stageTileBytes());
  int64_t cols = p.tmaBoxColumns(), rows = p.boxRows();
  // A paged cache: each box's row in the pool, from the block table (one page per box).
  SmallVector<Value> boxPages(pages);
  if (boxPages.empty())
    boxPages = tilePages(k, c, tile);
  SmallVector<Value> pagedRows;
  for (int64_t r0 = 0; p.paged() && r0 < p.tileN; r0 += rows)
    pagedRows.push_back(pageRow(k, boxPages[r0 / rows], p.pageSize, -1,
                                k.add(k.mul(tile, p.tileN), r0), Value()));
  for (int64_t blk = 0; blk < p.headDim / cols; ++blk) {
    for (int64_t r0 = 0; r0 < p.tileN; r0 += rows) {
      SmallVector<Value> coords = {k.i32(blk * cols), c.hkv, k.add(k.mul(tile, p.tileN), r0),
                                   c.bIdx};
      if (p.paged())
        coords = {k.i32(blk * cols), c.hkv, pagedRows[r0 / rows], k.i32(0)};
      int64_t off = (blk * p.tileN + r0) * cols * p.kvElemBytes();
      k.tmaLoad(sptr(k, c, k.add(stageOff, off)), c.kMap, coords, bar);
      k.tmaLoad(sptr(k, c, k.add(stageOff, c.sm.stageV + off)), c.vMap, coords, bar);
    }
  }
}

/// The empty barrier of stage `slot`, which ring position g fills, and the parity of the phase
/// that completes when the consumers release its previous use g − stages.
static std::pair<Value, Value> previousUse(KernelBuilder &k, Ctx &c, Value g, Value slot) {
  Value phase = k.band(k.add(k.udiv(g, c.p.stages), 1), 1);
  return {sptr(k, c, k.add(k.mul(slot, 8), c.sm.emptyStage(0, c.p.stages))), phase};
}

/// The stage that tile s (< stages) of the work item fills. With a persistent grid the ring runs
/// on from earlier items: a stage the consumers read (bf16, kDirect's K) is waited for until they
/// released its previous tile.
static Value fillSlot(KernelBuilder &k, Ctx &c, Value s) {
  const ForwardPlan &p = c.p;
  if (!c.tileBase)
    return s;
  Value g = c.ring(k, s);
  Value slot = k.urem(g, p.stages);
  if (p.directKV() || p.kDirect())
    k.ifThen(k.cmp(P::sge, g, k.i32(p.stages)), [&] {
      auto [bar, phase] = previousUse(k, c, g, slot);
      k.mbarrierWait(bar, phase);
    });
  return slot;
}

/// Whether `tile` holds the sequence end short of a whole tile.
static Value isPartialTile(KernelBuilder &k, Ctx &c, Value tile) {
  return k.cmp(P::slt, k.sub(c.len, k.mul(tile, c.p.tileN)), k.i32(c.p.tileN));
}

/// issueTile, except that a bf16 cache's partial tile completes on the tail barrier (the
/// producer zeroes its V rows past the end before arriving on the stage's full barrier;
/// buildDirectProducer).
static void issueLoads(KernelBuilder &k, Ctx &c, Value slot, Value tile,
                       ArrayRef<Value> pages = {}) {
  const ForwardPlan &p = c.p;
  if (!p.directKV())
    return issueTile(k, c, slot, tile, {}, pages);
  k.ifThenElse(
      isPartialTile(k, c, tile), TypeRange{},
      [&] {
        issueTile(k, c, slot, tile, sptr(k, c, c.sm.tail(p.stages)), pages);
        return SmallVector<Value>();
      },
      [&] {
        issueTile(k, c, slot, tile, {}, pages);
        return SmallVector<Value>();
      });
}

/// The calling thread issues the loads of tiles [from, to) of the work item's first `stages`.
static void fillPipeline(KernelBuilder &k, Ctx &c, int64_t from, int64_t to) {
  Value n = k.smin(c.numTiles, k.i32(to));
  k.forLoop(k.i32(from), n, 1, {}, [&](Value s, ValueRange) {
    issueLoads(k, c, fillSlot(k, c, s), k.add(c.tile0, s));
    return SmallVector<Value>();
  });
}

/// Tiles the kernel's prologue loads (issuePipelineFill) when there is no persistent grid: every
/// stage for decode; for prefill only the first, whose K the first Q·Kᵀ waits for beside the
/// query rows' first load from DRAM — the producer issues the rest after the CTA barrier.
static int64_t prologueTiles(const ForwardPlan &p) { return p.prefill ? 1 : p.stages; }

void mlir::attn::nvvm::issuePipelineFill(KernelBuilder &k, Ctx &c) {
  fillPipeline(k, c, 0, prologueTiles(c.p));
}

/// The producer of a bf16 cache (plan.directKV): thread 0 keeps `stages` tiles in flight,
/// refilling a stage once every consumer released it. Keys in [len, kv_len) hold whatever the
/// cache holds (TMA zero-fills only past kv_len), and P · V would turn a NaN or Inf there into
/// a NaN even with P = 0: the one partial tile completes on the tail barrier instead, the
/// warpgroup zeroes its V rows past the end, and only then arrives on the stage's full barrier.
static void buildDirectProducer(KernelBuilder &k, Ctx &c) {
  const ForwardPlan &p = c.p;
  Value isLeader = k.cmp(P::eq, c.tid, 0);
  Value tailBar = sptr(k, c, c.sm.tail(p.stages));
  // The rest of the first `stages` tiles (all of them with a persistent grid).
  k.ifThen(isLeader, [&] { fillPipeline(k, c, c.tileBase ? 0 : prologueTiles(p), p.stages); });
  int64_t rowBytes = 128; // a row of one 64-column block
  int64_t blocks = p.headDim / 64;
  k.forLoop(k.i32(0), c.numTiles, 1, {}, [&](Value j, ValueRange) {
    Value g = c.ring(k, j);
    Value s = k.urem(g, p.stages);
    Value tile = k.add(c.tile0, j);
    Value rowsValid = k.sub(c.len, k.mul(tile, p.tileN));
    k.ifThen(isPartialTile(k, c, tile), [&] {
      // At most one partial tile per CTA — per work item with a persistent grid.
      k.mbarrierWait(tailBar, c.tailParity ? c.tailParity : k.i32(0));
      Value vOff = k.add(ringOffset(k, s, c.sm.stage, c.sm.stageStride), c.sm.stageV);
      // 16-byte chunks of the rows [rowsValid, tileN) of every column block.
      Value first = k.mul(rowsValid, rowBytes / 16);
      Value zero = k.vector({k.i32(0), k.i32(0), k.i32(0), k.i32(0)});
      for (int64_t blk = 0; blk < blocks; ++blk)
        k.forLoop(k.add(first, c.tid), k.i32(p.tileN * rowBytes / 16), p.producerThreads(), {},
                  [&](Value ch, ValueRange) {
                    Value off = k.add(k.mul(ch, 16), k.add(vOff, blk * p.tileN * rowBytes));
                    k.store(zero, sptr(k, c, off), 16);
                    return SmallVector<Value>();
                  });
      k.fenceProxyAsyncShared();
      k.barrier(1, p.producerThreads());
      k.ifThen(isLeader,
               [&] { k.mbarrierArrive(sptr(k, c, k.add(k.mul(s, 8), c.sm.fullStage(0)))); });
    });
    Value next = k.add(j, p.stages);
    k.ifThen(k.band(isLeader, k.cmp(P::slt, next, c.numTiles)), [&] {
      // A paged cache: the tile's pages are read before the wait for the consumers' release,
      // so that the copies do not wait for the block table after it.
      SmallVector<Value> pages = tilePages(k, c, k.add(c.tile0, next));
      Value phase = k.band(k.udiv(g, p.stages), 1);
      k.mbarrierWait(sptr(k, c, k.add(k.mul(s, 8), c.sm.emptyStage(0, p.stages))), phase);
      issueLoads(k, c, s, k.add(c.tile0, next), pages);
    });
    return SmallVector<Value>();
  });
}

/// The persistent grid's refill after tile j (kDirect, stages ≥ 3): the consumers release a
/// stage once their Q·Kᵀ read its K, and a leader that waited for that inside its warp would
/// hold the warp's share of the next transposes — and at the producer barrier the whole
/// producer — behind the slowest consumer (ncu, fp8 at 1024 keys: 29% of the producer's samples
/// at that barrier, the consumers' waits for Vᵀ retrying 113 K times over 264 K tiles). So the
/// leader issues the next tile j + 1 if not yet issued (waiting: the producer needs it next), then
/// the tiles after it, up to `stages` − 1 ahead, while their stages are free (mbarrier test_wait),
/// stopping at the first that is not. At a work item's start it issues tile 0 only
/// (buildProducer), so the next item's loads never wait for the previous item's last Q·Kᵀ.
/// `issued` counts the item's tiles issued before; returns it after (leader's; others carry it).
static Value refillAhead(KernelBuilder &k, Ctx &c, Value isLeader, Value j, Value issued) {
  const ForwardPlan &p = c.p;
  // Issues tile t if its stage is free now; i32 1 if it did.
  auto tryIssue = [&](Value t) {
    Value g = c.ring(k, t), slot = k.urem(g, p.stages);
    auto [bar, phase] = previousUse(k, c, g, slot);
    Value free = k.select(k.cmp(P::sge, g, k.i32(p.stages)), k.mbarrierTestWait(bar, phase),
                          k.i32(1));
    k.ifThen(k.cmp(P::ne, free, 0), [&] { issueTile(k, c, slot, k.add(c.tile0, t)); });
    return SmallVector<Value>{free};
  };
  SmallVector<Type> i32 = {k.i32()};
  auto leader = [&] {
    Value next = k.add(j, 1);
    Value must =
        k.band(k.cmp(P::slt, issued, k.add(next, 1)), k.cmp(P::slt, next, c.numTiles));
    k.ifThen(must, [&] { issueTile(k, c, fillSlot(k, c, next), k.add(c.tile0, next)); });
    Value n = k.select(must, k.add(next, 1), issued);
    Value go = k.i32(1), limit = k.smin(c.numTiles, k.add(j, p.stages));
    for (int64_t i = 0; i < p.stages - 2; ++i) {
      Value ok = k.band(k.cmp(P::ne, go, 0), k.cmp(P::slt, n, limit));
      go = k.ifThenElse(
                ok, i32, [&] { return tryIssue(n); },
                [&] { return SmallVector<Value>{k.i32(0)}; })
               .front();
      n = k.add(n, go);
    }
    return SmallVector<Value>{n};
  };
  return k.ifThenElse(isLeader, i32, leader, [&] { return SmallVector<Value>{issued}; }).front();
}

void mlir::attn::nvvm::stageScales(KernelBuilder &k, Ctx &c, Value ks, Value vs, Value buf) {
  const ForwardPlan &p = c.p;
  double kFactor = p.softmaxScale * kLog2e;
  // K pre-multiplied by softmax_scale · log2(e); bf16 caches get the bare factors.
  k.ifThen(k.cmp(P::slt, c.tid, p.tileN), [&] {
    Value scOff = ringOffset(k, buf, c.sm.scales, c.sm.scaleStride);
    Value ksv = p.hasScales() ? k.fmul(ks, k.f32(kFactor)) : k.f32(kFactor);
    Value vsv = p.hasScales() ? vs : k.f32(1.0);
    k.store(ksv, sptr(k, c, k.add(scOff, k.mul(c.tid, 4))));
    k.store(vsv, sptr(k, c, k.add(scOff, k.add(k.mul(c.tid, 4), p.tileN * 4))));
  });
}

void mlir::attn::nvvm::buildProducer(KernelBuilder &k, Ctx &c) {
  const ForwardPlan &p = c.p;
  if (p.directKV())
    return buildDirectProducer(k, c);
  Value isLeader = k.cmp(P::eq, c.tid, 0);
  // A persistent grid whose consumers read K from the stages, on three stages or more: the
  // leader refills without blocking its warp (refillAhead); the item's first tile here.
  bool ahead = c.tileBase && p.kDirect() && p.stages >= 3;
  // The rest of the first `stages` tiles (all of them with a persistent grid; with `ahead` only
  // the first).
  k.ifThen(isLeader, [&] {
    fillPipeline(k, c, c.tileBase ? 0 : prologueTiles(p), ahead ? 1 : p.stages);
  });
  SmallVector<Value> sc0 = loadScales(k, c, k.add(k.mul(c.tile0, p.tileN), c.tid));
  size_t nScales = sc0.size();
  if (ahead)
    sc0.push_back(k.i32(1)); // tiles of the item issued so far
  k.forLoop(k.i32(0), c.numTiles, 1, sc0, [&](Value j, ValueRange carried) {
    Value g = c.ring(k, j);
    Value s = k.urem(g, p.stages);
    Value phaseS = k.band(k.udiv(g, p.stages), 1);
    Value buf = k.urem(g, p.convBufs());
    Value phaseB = k.band(k.udiv(g, p.convBufs()), 1);
    Value tile = k.add(c.tile0, j);
    Value tileStart = k.mul(tile, p.tileN);
    // Prefetch the next tile's scales while this one converts.
    SmallVector<Value> scN = loadScales(k, c, k.add(k.add(tileStart, p.tileN), c.tid));
    k.mbarrierWait(sptr(k, c, k.add(k.mul(s, 8), c.sm.fullStage(0))), phaseS);
    k.mbarrierWait(sptr(k, c, k.add(k.mul(buf, 8), c.sm.emptyConv(0, p.stages))),
                   k.bxor(phaseB, k.i32(1)));
    Value stageOff = ringOffset(k, s, c.sm.stage, c.sm.stageStride);
    Value convOff = ringOffset(k, buf, c.sm.conv, c.sm.convStride);
    Value rowsValid = k.sub(c.len, tileStart);
    int64_t kZeros = -1, vZeros = -1;
    if (p.zeroPoints) {
      // Stage this tile's zero-point constants: every producer thread finished the previous
      // tile's conversion (barrier 1), so one buffer suffices.
      kZeros = c.sm.zeros;
      vZeros = c.sm.zeros + p.tileN * 4;
      k.ifThen(k.cmp(P::slt, c.tid, p.tileN), [&] {
        k.store(carried[2], sptr(k, c, k.add(k.mul(c.tid, 4), kZeros)));
        k.store(carried[3], sptr(k, c, k.add(k.mul(c.tid, 4), vZeros)));
      });
      k.barrier(3, p.producerThreads());
    }
    auto convert = [&](bool masked) {
      if (!p.kDirect()) // K's bytes: copied for the s8 WGMMA, or dequantized
        dequantTile(k, c, stageOff, convOff, rowsValid, masked, /*copyBytes=*/p.qI8, kZeros);
      if (p.pv8()) // Vᵀ for the 8-bit P·V (e4m3, or s8 under full_int8)
        transposeTile(k, c, k.add(stageOff, c.sm.stageV), k.add(convOff, c.sm.convV), rowsValid,
                      masked);
      else
        dequantTile(k, c, k.add(stageOff, c.sm.stageV), k.add(convOff, c.sm.convV), rowsValid,
                    masked, false, vZeros);
      return SmallVector<Value>();
    };
    // Only the tile holding the sequence end needs zeroed rows.
    k.ifThenElse(
        k.cmp(P::slt, rowsValid, k.i32(p.tileN)), TypeRange{}, [&] { return convert(true); },
        [&] { return convert(false); });
    stageScales(k, c, carried[0], carried[1], buf);
    k.fenceProxyAsyncShared();
    k.mbarrierArrive(sptr(k, c, k.add(k.mul(buf, 8), c.sm.fullConv(0, p.stages))));
    // Every producer thread is done with stage s: refill it. With kDirect the consumers' Q·Kᵀ
    // must have read its K too — a wait that would hold the leader's warp (and, at the next
    // barrier, the whole producer) until the slower consumer finished Q·K_jᵀ, leaving the next
    // tile's conversion too little time; so the leader refills the stage of the previous tile
    // instead, whose K the consumers released long ago (the loads still lead by stages − 1
    // tiles; with one stage there is no previous one to refill).
    k.barrier(1, p.producerThreads());
    if (ahead) {
      scN.push_back(refillAhead(k, c, isLeader, j, carried[nScales]));
      return scN;
    }
    bool lag = p.kDirect() && p.stages > 1; // refill the stage of tile u = j − 1, else of j
    Value u = lag ? k.add(j, -1) : j, next = k.add(u, p.stages);
    Value go = lag ? k.band(isLeader, k.cmp(P::sge, u, k.i32(0))) : isLeader;
    k.ifThen(k.band(go, k.cmp(P::slt, next, c.numTiles)), [&] {
      Value gu = lag ? c.ring(k, u) : g;
      Value su = lag ? k.urem(gu, p.stages) : s;
      if (p.kDirect())
        k.mbarrierWait(sptr(k, c, k.add(k.mul(su, 8), c.sm.emptyStage(0, p.stages))),
                       lag ? k.band(k.udiv(gu, p.stages), 1) : phaseS);
      issueTile(k, c, su, k.add(c.tile0, next));
    });
    return scN;
  });
}
