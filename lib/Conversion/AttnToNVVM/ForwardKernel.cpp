//===- ForwardKernel.cpp - the warp-specialized Hopper forward kernel -----===//
//
// What this file is: the builders of the forward-attention kernel's frame, `<name>_decode`
// (decode schedules) and `<name>_prefill` (below), that the kernel level's forward ops lower to
// (lib/Conversion/AttnKernelToNVVM/ForwardLowering.cpp): for decode one CTA per (KV split, group
// of packed query heads, batch element), 128 · (producers + consumers) threads in
// warp-specialized warpgroups — the CTA's work and key tiles, the aligned shared base, the
// mbarriers, the query tile, and the roles (split by attnk.warp_specialize):
//
//   producer warpgroups (setmaxnreg.dec; ForwardProducer.cpp): TMA streams K/V tiles into `stages`
//     mbarrier-guarded shared-memory stages; the warpgroup dequantizes each tile (int8 / e4m3 →
//     bf16, exact) into 128-byte-swizzled bf16 buffers — or copies int8 K, or transposes e4m3 V
//     for fp8 —, zeroes keys past the sequence length, stages the scales, and signals the
//     consumers; bf16 caches need no conversion (the WGMMAs read the stages);
//   consumer warpgroups (setmaxnreg.inc; ForwardConsumer.cpp): S = Q·Kᵀ, masks, online softmax,
//     O += P·V on WGMMA, and the epilogue (O / l as bf16, or the split-KV partial (O, m, l) that
//     `<name>_combine` merges).
//
// Prefill (`<name>_prefill`, plan.prefill) is the same kernel with grid x over query chunks
// instead of KV splits: each consumer warpgroup owns a 64-row query tile and both take every key
// tile. docs/GPUDecode.md is the contract with the launcher.
//
//===----------------------------------------------------------------------===//

#include "ForwardKernelImpl.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::nvvm;
using P = LLVM::ICmpPredicate;

//===----------------------------------------------------------------------===//
// The kernel
//===----------------------------------------------------------------------===//

/// Copies 16-byte chunk `chunk` of the packed query rows of query tile `t` into its swizzled
/// shared-memory tile (rows past `rows`, and prefill tokens past q_len, are zeros): a load and a
/// store, or (`async`) a cp.async into the set of query tiles at byte offset `setOff`.
static void storeQueryChunk(KernelBuilder &k, Ctx &c, Value t, Value chunk, bool async = false,
                            Value setOff = {}) {
  const ForwardPlan &p = c.p;
  int64_t qBytes = p.qk8() ? 1 : 2;
  int64_t chunksPerRow = p.headDim * qBytes / 16;
  Value row = k.udiv(chunk, chunksPerRow);
  Value ch = k.urem(chunk, chunksPerRow);
  Value rowC = k.smin(row, k.i32(p.rows() - 1));
  Value qi = k.udiv(rowC, p.pack);
  Value tokValid;
  if (p.prefill) {
    Value tok = k.add(k.add(c.qBase, k.mul(t, p.qChunk)), qi);
    tokValid = k.cmp(P::slt, tok, c.qLen(k));
    qi = k.smin(tok, c.qLenMinus1(k));
  }
  Value head = k.add(c.headBase, k.urem(rowC, p.pack));
  Value elem =
      k.add(k.mul(k.add(k.mul(k.add(c.qRowBase(k), qi), p.qHeads), head), p.headDim),
            k.mul(ch, 16 / qBytes));
  Value src = k.gep(c.q, k.mul(k.sext64(elem), qBytes));
  Value valid = k.cmp(P::slt, row, k.i32(p.rows()));
  if (tokValid)
    valid = k.band(valid, tokValid);
  Value tileOff = k.add(k.mul(t, p.qTileBytes()), c.sm.q);
  if (setOff)
    tileOff = k.add(tileOff, setOff);
  Value dst = sptr(k, c, k.add(tileOff, swizzledChunk(k, row, ch, 64)));
  if (async) {
    k.cpAsync16(dst, src, k.select(valid, k.i32(16), k.i32(0)));
    return;
  }
  Value v = k.loadInvariant(k.vec4Type(), src, 16);
  v = k.select(valid, v, k.vector({k.i32(0), k.i32(0), k.i32(0), k.i32(0)}));
  k.store(v, dst, 16);
}

/// Copies the packed query rows into the swizzled Q tiles: the first 256 threads, 64 × D / 8
/// chunks of 16 bytes per tile.
static void loadQueries(KernelBuilder &k, Ctx &c) {
  const ForwardPlan &p = c.p;
  int64_t chunksPerRow = p.headDim * (p.qk8() ? 1 : 2) / 16;
  k.ifThen(k.cmp(P::ult, c.tid, 256), [&] {
    for (int64_t t = 0; t < p.qTiles(); ++t)
      for (int64_t it = 0; it < 64 * chunksPerRow / 256; ++it)
        storeQueryChunk(k, c, k.i32(t), k.add(c.tid, it * 256));
  });
}

/// Persistent grid: consumer warpgroup `wg` copies its own query tile (thread `ct` of 128) of
/// the work set up in `c`, into the set of query tiles at byte offset `setOff` (null: the
/// first), with loads and stores or (`async`) cp.async.
static void loadQueryTile(KernelBuilder &k, Ctx &c, Value wg, Value ct, bool async = false,
                          Value setOff = {}) {
  const ForwardPlan &p = c.p;
  int64_t chunksPerRow = p.headDim * (p.qk8() ? 1 : 2) / 16;
  for (int64_t it = 0; it < 64 * chunksPerRow / 128; ++it)
    storeQueryChunk(k, c, wg, k.add(ct, it * 128), async, setOff);
}

void mlir::attn::nvvm::ensureSharedSymbol(OpBuilder &b, Location loc, gpu::GPUModuleOp module) {
  if (SymbolTable::lookupSymbolIn(module, kSharedSymbol))
    return;
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(module.getBody());
  auto arrTy = LLVM::LLVMArrayType::get(b.getI8Type(), 0);
  LLVM::GlobalOp::create(b, loc, arrTy, /*isConstant=*/false, LLVM::Linkage::External,
                         kSharedSymbol, Attribute(), /*alignment=*/1024, /*addrSpace=*/kShared);
}

/// The work of one CTA (or, with a persistent grid, of one work item): grid x (the KV split, or
/// for prefill the query chunk), y (the head group) and z (the batch element); null: the CTA's
/// ctaid.
static void setupWorkIds(KernelBuilder &k, Ctx &c, Value x, Value y, Value z) {
  const ForwardPlan &p = c.p;
  c.split = x ? x : k.ctaidX();
  c.qBase = k.i32(0);
  if (p.prefill) { // grid x: query chunks (one split)
    // Causal: the block scheduler starts low ctaid.x first, so chunk nctaid.x − 1 − ctaid.x
    // puts the chunks with the most keys first and the short ones in the grid's tail.
    if (p.causal && !x)
      c.split = k.sub(k.add(k.nctaidX(), -1), c.split);
    c.qBase = k.mul(c.split, p.ctaTokens());
    c.split = k.i32(0);
  }
  c.grp = y ? y : k.ctaidY();
  c.bIdx = z ? z : k.ctaidZ();
  c.hkv = k.udiv(c.grp, p.groupsPerKv());
  c.headBase = k.add(k.mul(c.hkv, p.groupSize()), k.mul(k.urem(c.grp, p.groupsPerKv()), p.pack));
}

/// A ragged batch: the batch element's packed query rows, [cu_seqlens_q[b], cu_seqlens_q[b + 1])
/// clamped into the packed rows [0, total_q) and to at most q_len queries (a sequence starting
/// past the rows has none; its first row stays a valid address).
static void setupRaggedRows(KernelBuilder &k, Ctx &c) {
  if (!c.p.ragged)
    return;
  auto at = [&](Value i) {
    return k.loadInvariant(k.i32(), k.gep(c.cuSeqlensQ, k.mul(k.sext64(i), int64_t(4))));
  };
  Value start = k.smax(at(c.bIdx), k.i32(0));
  Value end = k.smin(at(k.add(c.bIdx, 1)), c.totalQ);
  c.seqQLen = k.smin(k.smax(k.sub(end, start), k.i32(0)), c.qLenArg);
  c.qRow0 = k.smin(start, k.smax(k.add(c.totalQ, -1), k.i32(0)));
}

/// The key tiles of the work set up by setupWorkIds.
static void setupWorkTiles(KernelBuilder &k, Ctx &c) {
  const ForwardPlan &p = c.p;
  Type i32 = k.i32();
  // This CTA's keys: tiles [tile0, tile0 + numTiles) of the batch element's length.
  c.len = c.kvLen;
  if (p.seqLens) {
    // A null seq_lens pointer means every batch element uses the whole cache (docs/GPUDecode.md).
    Value l = k.ifThenElse(
        k.isNull(c.lens), TypeRange{i32}, [&] { return SmallVector<Value>{c.kvLen}; },
        [&] {
          return SmallVector<Value>{
              k.loadInvariant(i32, k.gep(c.lens, k.mul(k.sext64(c.bIdx), int64_t(4))))};
        })[0];
    c.len = k.smax(k.smin(l, c.kvLen), k.i32(0));
  }
  Value tiles = k.ceilDiv(c.len, p.tileN);
  if (p.prefill && (p.causal || p.rightWindow())) {
    // Keys past the chunk's last query (and its right window) are masked for every row: skip
    // their tiles.
    Value lastQ = k.smin(k.add(c.qBase, p.ctaTokens() - 1), c.qLenMinus1(k));
    Value lastKey = k.add(k.sub(c.len, c.qLen(k)), lastQ);
    if (p.rightWindow())
      lastKey = k.smin(k.add(lastKey, p.windowRight), k.add(c.len, -1));
    tiles = k.ceilDiv(k.smax(k.add(lastKey, 1), k.i32(0)), p.tileN);
  }
  // A left window: keys before the first query's window (prefill: the chunk's first query's)
  // are masked for every row, their tiles are skipped (a paged cache's pages there are never
  // read); the splits share the rest.
  Value first = k.i32(0);
  if (p.windowLeft >= 0) {
    Value pos0 = k.sub(c.len, c.qLen(k));
    if (p.prefill)
      pos0 = k.add(pos0, c.qBase);
    Value firstKey = k.sub(pos0, k.i32(p.windowLeft));
    first = k.udiv(k.smax(firstKey, k.i32(0)), k.i32(p.tileN));
    first = k.smin(first, tiles);
  }
  Value span = p.windowLeft >= 0 ? k.sub(tiles, first) : tiles;
  Value perSplit = k.udiv(k.add(span, k.add(c.numSplits, -1)), c.numSplits);
  c.tile0 = k.mul(c.split, perSplit);
  if (p.windowLeft >= 0)
    c.tile0 = k.add(first, c.tile0);
  Value end = k.smin(k.add(c.tile0, perSplit), tiles);
  c.numTiles = k.smax(k.sub(end, c.tile0), k.i32(0));
  if (p.ragged) // a query chunk past the sequence's queries has no work
    c.numTiles = k.select(k.cmp(P::slt, c.qBase, c.seqQLen), c.numTiles, k.i32(0));
}

/// Persistent grid (prefill): the ids of work item `item` of q_chunks × groups × batch, the
/// query chunks with the most keys (the last, when causal) first.
static void setupWorkItemIds(KernelBuilder &k, Ctx &c, Value item) {
  const ForwardPlan &p = c.p;
  Value gb = k.mul(k.i32(p.groups()), c.batch);
  Value chunks = k.ceilDiv(c.chunkedQLen(k), p.ctaTokens());
  Value chunk = k.sub(k.add(chunks, -1), k.udiv(item, gb));
  Value rest = k.urem(item, gb);
  Value grp = k.urem(rest, p.groups()), b = k.udiv(rest, p.groups());
  setupWorkIds(k, c, chunk, grp, b);
  setupRaggedRows(k, c);
}

void mlir::attn::nvvm::bindForwardParams(Ctx &c, ValueRange params) {
  c.kMap = params[0];
  c.vMap = params[1];
  c.q = params[2];
  c.kScale = params[3];
  c.vScale = params[4];
  c.lens = params[5];
  c.alibi = params[6];
  c.out = params[7];
  c.ws = params[8];
  c.batch = params[9];
  c.kvLen = params[10];
  c.numSplits = params[11];
  c.qScale = params[12];
  c.kZero = params[13];
  c.vZero = params[14];
  if (c.p.qLen < 0)
    c.qLenArg = params[15];
  if (c.p.paged()) {
    c.blockTable = params[c.p.blockTableParam()];
    c.numSlots = params[c.p.blockTableParam() + 1];
  }
  if (c.p.sinks)
    c.sinks = params[c.p.sinksParam()];
  if (c.p.lse)
    c.lse = params[c.p.lseParam()];
  if (c.p.ragged) {
    c.cuSeqlensQ = params[c.p.raggedParam()];
    c.totalQ = params[c.p.raggedParam() + 1];
  }
}

void mlir::attn::nvvm::bindForwardWork(Ctx &c, ValueRange work) {
  c.tid = work[0];
  if (c.p.persistent)
    return;
  c.split = work[1];
  c.qBase = work[2];
  c.grp = work[3];
  c.bIdx = work[4];
  c.hkv = work[5];
  c.headBase = work[6];
  if (work.size() > 7) {
    c.len = work[7];
    c.tile0 = work[8];
    c.numTiles = work[9];
  }
  if (work.size() > 10) { // a ragged batch's rows (the prologue's last two values)
    c.qRow0 = work[10];
    c.seqQLen = work[11];
  }
}

/// Thread 0: the mbarriers of the stages and conversion buffers with their arrival counts.
static void initBarriers(KernelBuilder &k, Ctx &c) {
  const ForwardPlan &p = c.p;
  for (int64_t s = 0; s < p.stages; ++s)
    k.mbarrierInit(sptr(k, c, c.sm.fullStage(s)), 1);
  // Decode: the one consumer that took the tile releases it; prefill: all of them.
  int64_t releases = 128 * (p.prefill ? p.consumerWGs : 1);
  for (int64_t bf = 0; bf < p.convBufs(); ++bf) {
    k.mbarrierInit(sptr(k, c, c.sm.fullConv(bf, p.stages)), p.producerThreads());
    k.mbarrierInit(sptr(k, c, c.sm.emptyConv(bf, p.stages)), releases);
  }
  if (p.directKV() || p.kDirect())
    for (int64_t s = 0; s < p.stages; ++s)
      k.mbarrierInit(sptr(k, c, c.sm.emptyStage(s, p.stages)), releases);
  if (p.directKV())
    k.mbarrierInit(sptr(k, c, c.sm.tail(p.stages)), 1);
}

/// Persistent grid: every warpgroup walks the CTA's work items (item = ctaid.x + n · nctaid.x)
/// in the same order; the rings continue across items (tileBase), so the producer runs ahead
/// into the next item while the consumers finish the last one. Carried: the tiles streamed so
/// far and (`tail`, bf16 producer) the partial tiles' parity.
static void forEachWorkItem(KernelBuilder &k, Ctx &c, bool tail,
                            llvm::function_ref<void(Value item, Value total)> body) {
  const ForwardPlan &p = c.p;
  Value total = k.mul(k.mul(k.ceilDiv(c.chunkedQLen(k), p.ctaTokens()), p.groups()), c.batch);
  SmallVector<Value> init = {k.i32(0)};
  if (tail)
    init.push_back(k.i32(0));
  k.forLoop(k.ctaidX(), total, k.nctaidX(), init, [&](Value item, ValueRange st) {
    setupWorkItemIds(k, c, item);
    setupWorkTiles(k, c);
    c.tileBase = st[0];
    c.tailParity = tail ? st[1] : Value();
    body(item, total);
    SmallVector<Value> next = {k.add(st[0], c.numTiles)};
    if (tail) { // the item's last tile is partial when it runs past the length
      Value partial = k.band(k.cmp(P::sgt, c.numTiles, k.i32(0)),
                             k.cmp(P::sgt, k.mul(k.add(c.tile0, c.numTiles), p.tileN), c.len));
      next.push_back(k.bxor(st[1], k.select(partial, k.i32(1), k.i32(0))));
    }
    return next;
  });
}

/// A consumer warpgroup's work item on the persistent grid: its query tile (one set, reloaded
/// once the previous item's WGMMAs are past; or two, the next item's copied during this one),
/// then the consumers' attention.
static void buildPersistentConsumerItem(KernelBuilder &k, Ctx &c, Value item, Value total) {
  const ForwardPlan &p = c.p;
  Value wg = k.warpUniform(k.lshr(k.add(c.tid, -p.producerThreads()), 7));
  Value ct = k.band(c.tid, 127), bar = k.add(wg, 6);
  if (p.qBuffers == 1) {
    // This warpgroup's query tile: the previous item's WGMMAs read it until every
    // warp of the warpgroup is past them.
    k.barrierSync(bar, 128);
    loadQueryTile(k, c, wg, ct);
    k.fenceProxyAsyncShared();
    k.barrierSync(bar, 128);
    buildConsumer(k, c);
    return;
  }
  // Two sets of query tiles: the CTA's n-th item reads set n mod 2, which the
  // consumers filled (cp.async) during item n − 1 — the first item's, here.
  int64_t setBytes = p.qTiles() * p.qTileBytes();
  Value n = k.udiv(k.sub(item, k.ctaidX()), k.nctaidX());
  Value set = k.band(n, 1);
  k.ifThen(k.cmp(P::eq, n, 0), [&] {
    loadQueryTile(k, c, wg, ct, /*async=*/true, k.i32(0));
    k.cpAsyncCommit();
  });
  k.cpAsyncWaitAll();
  k.fenceProxyAsyncShared();
  // Every warp's copies have landed; and every warp is past the previous item's
  // WGMMAs, which read the other set.
  k.barrierSync(bar, 128);
  Value next = k.add(item, k.nctaidX());
  k.ifThen(k.cmp(P::ult, next, total), [&] {
    Ctx nc = c;
    setupWorkItemIds(k, nc, next);
    loadQueryTile(k, nc, wg, ct, /*async=*/true, k.mul(k.bxor(set, k.i32(1)), setBytes));
    k.cpAsyncCommit();
  });
  c.qSetOff = k.mul(set, setBytes);
  buildConsumer(k, c);
}

SmallVector<Value> mlir::attn::nvvm::buildForwardWork(KernelBuilder &k, const ForwardPlan &p) {
  Ctx c{p, p.smem()};
  c.tid = k.tidX();
  if (p.persistent)
    return {c.tid};
  setupWorkIds(k, c, {}, {}, {}); // the CTA's own: ctaid.x, .y, .z
  return {c.tid, c.split, c.qBase, c.grp, c.bIdx, c.hkv, c.headBase};
}

Value mlir::attn::nvvm::buildAlignedSharedBase(KernelBuilder &k) {
  // Align the dynamic shared memory to 1024 bytes (the swizzle atom).
  Value raw = k.dynamicShared(kSharedSymbol);
  Value rawAddr = k.sharedAddr(raw);
  Value pad = k.band(k.sub(k.i32(1024), k.band(rawAddr, 1023)), 1023);
  return k.gep(raw, pad);
}

SmallVector<Value> mlir::attn::nvvm::buildForwardPrologue(KernelBuilder &k, Ctx &c) {
  const ForwardPlan &p = c.p;
  if (!p.persistent) {
    setupRaggedRows(k, c);
    setupWorkTiles(k, c);
  }
  k.ifThen(k.cmp(P::eq, c.tid, 0), [&] {
    initBarriers(k, c);
    k.fenceMbarrierInit();
    if (!p.persistent)
      issuePipelineFill(k, c);
  });
  if (!p.persistent)
    loadQueries(k, c);
  k.fenceProxyAsyncShared();
  k.barrier(0, 0);
  if (p.persistent)
    return {};
  if (p.ragged)
    return {c.len, c.tile0, c.numTiles, c.qRow0, c.seqQLen};
  return {c.len, c.tile0, c.numTiles};
}

void mlir::attn::nvvm::buildForwardProducerRole(KernelBuilder &k, Ctx &c) {
  const ForwardPlan &p = c.p;
  if (p.persistent)
    forEachWorkItem(k, c, p.directKV(), [&](Value, Value) { buildProducer(k, c); });
  else
    buildProducer(k, c);
  if (p.clusterSplits()) // the two cluster barriers of the consumers' in-cluster merge
    k.ifThen(k.band(k.cmp(P::sgt, c.numSplits, 1), k.cmp(P::sgt, k.clusterSize(), 1)), [&] {
      k.clusterSync();
      k.clusterSync();
    });
}

void mlir::attn::nvvm::triggerDependents(KernelBuilder &k, Ctx &c) {
  // The combine kernel (a programmatic dependent) may be scheduled once every CTA got here
  // or exited; its griddepcontrol.wait still waits for this grid's completion. Triggering
  // at the start instead crowded its CTAs onto the first SMs to free up (slower, measured).
  if (!c.p.prefill)
    NVVM::GriddepcontrolOp::create(k.builder(), k.getLoc(),
                                   NVVM::GridDepActionKind::launch_dependents);
}

void mlir::attn::nvvm::buildForwardConsumerRole(KernelBuilder &k, Ctx &c) {
  if (c.p.persistent)
    forEachWorkItem(k, c, false, [&](Value item, Value total) {
      buildPersistentConsumerItem(k, c, item, total);
    });
  else
    buildConsumer(k, c);
  triggerDependents(k, c);
}
