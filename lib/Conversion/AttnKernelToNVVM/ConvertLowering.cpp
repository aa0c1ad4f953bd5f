//===- ConvertLowering.cpp - the producer's tile conversion to NVVM -------===//
//
// What this file is: the lowering of `attnk.convert_tile` from one shared-memory stage into
// another (the producer's conversion of a K or V tile; ComputeOps.td), the one place where the
// forward kernels dequantize a tile: int8 / uint8 / e4m3 codes → bf16 (exact, through the 2^23
// float magic or f16x2), int8 → f16 for int8 queries' P·V, int8 K copied into the 128-byte
// swizzled layout of the s8 WGMMA, and (`transpose`) 8-bit V into the Vᵀ of the 8-bit P·V.
// Each producer thread takes 16-byte chunks of the stage and writes them into the swizzled
// buffer; `rows(%n)` zeroes the keys at or past %n; zero points (one f32 per producer thread)
// are staged as per-row constants and subtracted with the magic. The transitional
// `attnk.forward.producer` (lib/Conversion/AttnToNVVM/ForwardProducer.cpp) calls the same
// dequantTile / transposeTile.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"

#include "../AttnToNVVM/ForwardKernelImpl.h"

#include "attn/Dialect/AttnKernel/IR/AttnKernel.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::nvvm;
using P = LLVM::ICmpPredicate;

//===----------------------------------------------------------------------===//
// Dequantization functors: one 16-byte chunk of a stage → bf16x2 words.
//===----------------------------------------------------------------------===//

/// Four bytes → four exact f32 through the 2^23 magic: the float 0x4B000000 | u is 2^23 + u, so
/// subtracting `magic` gives u − (magic − 2^23). Signed codes flip their sign bit first (u = b +
/// 128) and use magic 2^23 + 128; asymmetric ones fold their zero point into it (2^23 + 128 + z,
/// or 2^23 + z for unsigned codes), giving b − z — exact, and exact again in bf16 (|b − z| ≤ 255).
static SmallVector<Value> int8x4ToF32(KernelBuilder &k, Value word, bool isSigned, Value magic) {
  Value u = isSigned ? k.bxor(word, k.i32(static_cast<int32_t>(0x80808080u))) : word;
  SmallVector<Value> out;
  for (int i = 0; i < 4; ++i) {
    Value bits = k.prmt(u, k.i32(0x4B000000), 0x7440 | i);
    out.push_back(k.fsub(k.bitcast(k.f32(), bits), magic));
  }
  return out;
}

/// Four signed bytes → two f16x2 words, exactly: the f16 0x64 | u is 1024 + u, so a byte
/// permute places u = b + 128 under that exponent and one f16x2 subtraction of 1152 leaves b.
static SmallVector<Value> int8x4ToF16x2(KernelBuilder &k, Value word) {
  Value u = k.bxor(word, k.i32(static_cast<int32_t>(0x80808080u)));
  Type v2f16 = VectorType::get({2}, k.builder().getF16Type());
  Value bias = k.bitcast(v2f16, k.i32(0x64806480)); // {1152, 1152}
  SmallVector<Value> out;
  for (int64_t sel : {0x4140, 0x4342}) { // {u0, 0x64, u1, 0x64}, {u2, 0x64, u3, 0x64}
    Value h = k.bitcast(v2f16, k.prmt(u, k.i32(0x64646464), sel));
    out.push_back(k.bitcast(k.i32(), LLVM::FSubOp::create(k.builder(), k.getLoc(), h, bias)));
  }
  return out;
}

/// Two e4m3 bytes (low half of `half16`) → bf16x2, exactly (through f16x2).
static Value e4m3x2ToBF16x2(KernelBuilder &k, Value half16) {
  Type v2f16 = VectorType::get({2}, k.builder().getF16Type());
  Value h = k.intrinsic("llvm.nvvm.e4m3x2.to.f16x2.rn", v2f16, {half16});
  Value f = LLVM::FPExtOp::create(k.builder(), k.getLoc(), k.vec2f32Type(), h);
  Value bf = LLVM::FPTruncOp::create(k.builder(), k.getLoc(),
                                     VectorType::get({2}, k.builder().getBF16Type()), f);
  return k.bitcast(k.i32(), bf);
}

/// The bf16x2 words of one 16-byte stage chunk (8 words for 8-bit types, 4 for bf16); `magic`
/// is int8x4ToF32's, per row. `f16`: signed int8 codes as f16x2 words (plan.pvF16).
static SmallVector<Value> dequantChunk(KernelBuilder &k, KVType kv, Value v4, bool isSigned,
                                       Value magic, bool f16) {
  SmallVector<Value> words;
  for (int w = 0; w < 4; ++w) {
    Value x = k.extract(v4, w);
    switch (kv) {
    case KVType::BF16:
      words.push_back(x);
      break;
    case KVType::I8: {
      if (f16) {
        SmallVector<Value> h = int8x4ToF16x2(k, x);
        words.append(h.begin(), h.end());
        break;
      }
      SmallVector<Value> f = int8x4ToF32(k, x, isSigned, magic);
      words.push_back(k.packBF16x2(f[0], f[1]));
      words.push_back(k.packBF16x2(f[2], f[3]));
      break;
    }
    case KVType::F8E4M3:
      words.push_back(e4m3x2ToBF16x2(k, k.trunc(k.i16(), x)));
      words.push_back(e4m3x2ToBF16x2(k, k.trunc(k.i16(), k.lshr(x, 16))));
      break;
    }
  }
  return words;
}

/// Where a producer thread's 16-byte chunks of one stage tile (K or V) sit: thread t handles
/// chunks t, t + producerThreads, ...: its row advances by producerThreads / (chunks per row)
/// each step and its column chunk stays, so the addresses are a per-thread base plus
/// compile-time offsets.
namespace {
struct TileChunks {
  int64_t n = 0, rowStep = 0, pt = 0;
  Value row0, src0, outChunk0;
  TileChunks(KernelBuilder &k, Ctx &c, Value stageOff, bool copyBytes) {
    const ForwardPlan &p = c.p;
    int64_t e = p.kvElemBytes();
    int64_t chunksPerRow = p.headDim * e / 16;
    pt = p.producerThreads();
    rowStep = pt / chunksPerRow;
    n = p.tileN * chunksPerRow / pt;
    Value tid = p.leanProducer() ? k.tidXHere() : c.tid; // read per tile, not hoisted
    row0 = k.udiv(tid, chunksPerRow);
    Value colChunk = k.urem(tid, chunksPerRow); // 16-byte chunk of the stage row
    src0 = k.add(stageOff, k.mul(tid, 16));
    // First bf16 chunk (8 elements) this thread writes: element column colChunk·16/e. Copying
    // int8 K for the s8 WGMMA keeps the bytes: chunk colChunk of a 128-byte row.
    outChunk0 = copyBytes ? colChunk : k.udiv(k.mul(colChunk, 16), 8 * e);
  }
  Value row(KernelBuilder &k, int64_t it) const { return k.add(row0, it * rowStep); }
  Value load(KernelBuilder &k, Ctx &c, int64_t it) const {
    return k.load(k.vec4Type(), sptr(k, c, k.add(src0, it * pt * 16)), 16);
  }
};
} // namespace

/// Chunk `it` (loaded as `v4`) of a stage tile, dequantized with `magic` (int8x4ToF32's) or
/// copied, into its place in a swizzled conversion buffer; with `masked`, rows at or past
/// `rowsValid` become zeros (keys past the length must not poison P·V with NaN/Inf).
static void storeChunk(KernelBuilder &k, Ctx &c, const TileChunks &t, int64_t it, Value v4,
                       Value magic, Value convOff, Value rowsValid, bool masked, bool copyBytes) {
  const ForwardPlan &p = c.p;
  Value row = t.row(k, it);
  // An 8-bit chunk widens into two bf16 chunks, 2c and 2c + 1 of the row. A quarter-warp (one
  // 128-byte shared-memory wavefront per 16-byte store) holds the 8 chunks c of one row at
  // head_dim ≥ 128, and chunks c and c + 4 land in the same swizzle slot of two column blocks: a
  // 2-way bank conflict on every store. The threads with c mod 8 ≥ 4 therefore write 2c + 1
  // first (their input's two halves swapped), so each store hits 8 distinct slots.
  Value swap;
  if (!copyBytes && p.kvElemBytes() == 1) {
    swap = k.cmp(P::ne, k.band(t.outChunk0, 8), 0);
    SmallVector<Value> x;
    for (int w = 0; w < 4; ++w)
      x.push_back(k.extract(v4, w));
    v4 = k.vector({k.select(swap, x[2], x[0]), k.select(swap, x[3], x[1]),
                   k.select(swap, x[0], x[2]), k.select(swap, x[1], x[3])});
  }
  SmallVector<Value> words;
  if (copyBytes)
    for (int w = 0; w < 4; ++w)
      words.push_back(k.extract(v4, w));
  else
    words = dequantChunk(k, p.kv, v4, !p.unsignedCodes, magic, p.pvF16());
  if (masked) {
    Value valid = k.cmp(P::slt, row, rowsValid);
    for (Value &w : words)
      w = k.select(valid, w, k.i32(0));
  }
  for (size_t o = 0; o < words.size() / 4; ++o) {
    Value chunk = k.add(t.outChunk0, (int64_t)o);
    if (swap)
      chunk = k.add(t.outChunk0, k.select(swap, k.i32(1 - int64_t(o)), k.i32(int64_t(o))));
    Value dst = k.add(convOff, swizzledChunk(k, row, chunk, p.tileN));
    k.store(k.vector(ArrayRef<Value>(words).slice(4 * o, 4)), sptr(k, c, dst), 16);
  }
}

/// Producer: dequantizes (or, with `copyBytes`, copies) one stage tile (K or V) into a swizzled
/// conversion buffer, rows at or past `rowsValid` zeroed when `masked`.
void mlir::attn::nvvm::dequantTile(KernelBuilder &k, Ctx &c, Value stageOff, Value convOff,
                                   Value rowsValid, bool masked, bool copyBytes,
                                   int64_t zeroOff) {
  TileChunks t(k, c, stageOff, copyBytes);
  // The thread's chunks are loaded kBatch at a time before any of them is converted and stored:
  // the loads then overlap (ptxas keeps shared loads behind earlier shared stores it cannot
  // tell apart). Two at a time fit the producer's 56 registers without spilling; with zero
  // points (a staged constant per row), or in a lean producer, only one does.
  const int64_t kBatch = zeroOff < 0 && !c.p.leanProducer() ? 2 : 1;
  for (int64_t it0 = 0; it0 < t.n; it0 += kBatch) {
    SmallVector<Value> v4s, magics;
    for (int64_t it = it0; it < std::min(t.n, it0 + kBatch); ++it) {
      v4s.push_back(t.load(k, c, it));
      // Symmetric codes: one constant; zero points: the row's staged constant.
      if (!copyBytes)
        magics.push_back(zeroOff < 0 ? k.f32(8388736.0)
                                     : k.load(k.f32(), sptr(k, c, k.add(k.mul(t.row(k, it), 4),
                                                                        zeroOff))));
    }
    for (int64_t it = it0; it < std::min(t.n, it0 + kBatch); ++it)
      storeChunk(k, c, t, it, v4s[it - it0], copyBytes ? Value() : magics[it - it0], convOff,
                 rowsValid, masked, copyBytes);
  }
}

/// head_dim 64: lane l mod 16 of a half warp takes dimensions 4l .. 4l + 3 of a 16-key group
/// (lane / 16 picks one of the warp's two groups) from V's plain 64-byte rows: 16 conflict-free
/// 4-byte loads, three prmt per output word, four 16-byte chunks written in an order rotated by
/// (l / 2) mod 4 so that each quarter-warp's stores hit eight distinct chunks.
static void transposeTilePrmt(KernelBuilder &k, Ctx &c, Value stageOff, Value convOff,
                              Value rowsValid, bool masked) {
  const ForwardPlan &p = c.p;
  int64_t warps = p.producerThreads() / 32, groups = p.tileN / 16;
  // The thread's addresses are recomputed per tile (a few integer ops) rather than held across
  // the tile loop: hoisted, they spill the producer's registers.
  Value tid = k.tidXHere();
  Value lane = k.band(tid, 31), warp = k.lshr(tid, 5);
  Value rot = k.band(k.lshr(lane, 1), 3);
  Value sub = k.lshr(lane, 4);
  lane = k.band(lane, 15);
  for (int64_t it = 0; it < groups / (warps * 2); ++it) {
    Value g = k.add(k.mul(k.add(warp, it * warps), 2), sub);
    SmallVector<Value> w(16);
    for (int64_t kappa = 0; kappa < 16; ++kappa) {
      Value key = k.add(k.mul(g, 16), kappa);
      // Stage byte (key, 4·lane): word `lane` of the plain 64-byte row.
      Value off = k.add(k.mul(key, 64), k.shl(lane, 2));
      w[kappa] = k.load(k.i32(), sptr(k, c, k.add(stageOff, off)));
      if (masked)
        w[kappa] = k.select(k.cmp(P::slt, key, rowsValid), w[kappa], k.i32(0));
    }
    for (int64_t step = 0; step < 4; ++step) {
      Value d = k.band(k.add(rot, step), 3);
      Value sel = k.add(k.mul(d, 17), 64); // bytes d of a and of b: d | (4 + d) << 4
      SmallVector<Value> out;
      for (int64_t t = 0; t < 4; ++t) {
        Value lo = k.prmt(w[2 * t], w[2 * t + 1], sel);
        Value hi = k.prmt(w[2 * t + 8], w[2 * t + 9], sel);
        out.push_back(k.prmt(lo, hi, 0x5410));
      }
      Value n = k.add(k.shl(lane, 2), d); // Vᵀ row (dimension)
      Value dst = k.add(k.mul(n, 128), k.shl(k.bxor(g, k.band(n, 7)), 4));
      k.store(k.vector(out), sptr(k, c, k.add(convOff, dst)), 16);
    }
  }
}

/// head_dim 128: Vᵀ (transposeTile) by FA3's fp8 route, ldmatrix.trans / prmt / stmatrix. Per warp
/// and 16-key group g, four steps J each take chunks 2J, 2J + 1 (dimensions 32J .. 32J + 31):
/// - one `ldmatrix.x4.trans` of the matrices (keys 8h .. 8h + 7, chunk 2J + jl), matrix
///   2jl + h: lane l gets, of each, keys 2(l mod 4) and 2(l mod 4) + 1 at dimensions 2(l / 4) and
///   2(l / 4) + 1 of the chunk;
/// - two prmt per chunk pair the halves: selector 0x6420 gives the even dimension's word (keys
///   2t, 2t + 1, 2t + 8, 2t + 9 with t = l mod 4 — P's fragment order), 0x7531 the odd one;
/// - one `stmatrix.x4` writes the four words, matrix row p (lane p of the quad rows) being
///   dimension 2p + e of the chunk. Lanes of rows p ≥ 4 swap the two selectors (e = 1 for
///   matrix 0 and 2), so each matrix's eight rows cover all residues mod 8 of the swizzle:
///   conflict-free stores, as the loads are (eight keys, eight chunk positions).
/// Group g = warp + warps · it: its 2048-byte stage offset is an add, its Vᵀ chunk an XOR on
/// the lane's precomputed address (the bits are disjoint); J is an XOR on the stage address and
/// an add of 4096 on Vᵀ's. With `masked`, each word's bytes of keys at or past `rowsValid`
/// become zeros.
static void transposeTileMatrices(KernelBuilder &k, Ctx &c, Value stageOff, Value convOff,
                                  Value rowsValid, bool masked) {
  const ForwardPlan &p = c.p;
  int64_t warps = p.producerThreads() / 32, groups = p.tileN / 16;
  assert(groups % warps == 0 && llvm::isPowerOf2_64(warps) && "groups split evenly over warps");
  Value tid = k.tidXHere();
  Value lane = k.band(tid, 31), warp = k.lshr(tid, 5);
  Value row = k.band(lane, 7), mat = k.lshr(lane, 3);
  Value h = k.band(mat, 1), jl = k.lshr(mat, 1);
  // ldmatrix: this lane's row is key 16·warp + 8h + row, chunk jl (J = 0) at position jl ^ row.
  Value ldOff = k.add(k.add(stageOff, k.shl(warp, 11)),
                      k.bor(k.add(k.shl(h, 10), k.shl(row, 7)), k.shl(k.bxor(jl, row), 4)));
  // stmatrix: this lane's row is Vᵀ row n = 16 jl + 2 row + e (J = 0), chunk warp.
  Value e = k.bxor(k.lshr(row, 2), h);
  Value n = k.add(k.add(k.shl(jl, 4), k.shl(row, 1)), e);
  Value stOff = k.add(k.add(convOff, k.shl(n, 7)), k.shl(k.bxor(warp, k.band(n, 7)), 4));
  // Rows p ≥ 4 of the fragment (lanes 16..31) take the odd dimension into matrices 0 and 2.
  Value selA = k.add(k.mul(k.lshr(lane, 4), 0x1111), 0x6420);
  Value selB = k.bxor(selA, k.i32(0x1111));
  for (int64_t it = 0; it < groups / warps; ++it) {
    Value mask;
    if (masked) {
      // Keys 16g + 2t + {0, 1, 8, 9} of this lane's words: bytes 0..3.
      Value g = k.add(warp, it * warps);
      Value left = k.sub(rowsValid, k.add(k.shl(g, 4), k.shl(k.band(lane, 3), 1)));
      mask = k.i32(0);
      int64_t firstKey[4] = {0, 1, 8, 9};
      for (int64_t b = 0; b < 4; ++b)
        mask = k.bor(mask, k.select(k.cmp(P::sgt, left, k.i32(firstKey[b])),
                                    k.i32(int64_t(0xFF) << (8 * b)), k.i32(0)));
    }
    Value st = it == 0 ? stOff : k.bxor(stOff, k.i32(16 * warps * it));
    for (int64_t J = 0; J < 4; ++J) {
      Value ld = k.add(J == 0 ? ldOff : k.bxor(ldOff, k.i32(32 * J)), 2048 * warps * it);
      SmallVector<Value, 4> r = k.ldmatrixX4Trans(sptr(k, c, ld));
      SmallVector<Value, 4> w = {k.prmt(r[0], r[1], selA), k.prmt(r[0], r[1], selB),
                                 k.prmt(r[2], r[3], selA), k.prmt(r[2], r[3], selB)};
      if (masked)
        for (Value &x : w)
          x = k.band(x, mask);
      k.stmatrixX4(sptr(k, c, k.add(st, 4096 * J)), w);
    }
  }
}

/// fp8 and full_int8 (plan.pv8): transposes one V stage tile (tileN keys × 128 bytes, 128-byte
/// swizzled by TMA; at head_dim 64 plain rows of 64 bytes) into Vᵀ (head_dim rows of tileN
/// keys, 128-byte swizzled: the K-major B of the 8-bit P·V WGMMA), permuting the keys within
/// each 16-key group to match P's A fragment: the thread with S columns {2t, 2t+1, 2t+8, 2t+9}
/// of a 16-key group holds A columns 4t..4t+3, so Vᵀ row n's bytes 4t..4t+3 of 16-byte chunk g
/// are V[16g + {2t, 2t+1, 2t+8, 2t+9}][n]. With `masked`, keys at or past `rowsValid` become
/// zeros.
void mlir::attn::nvvm::transposeTile(KernelBuilder &k, Ctx &c, Value stageOff, Value convOff,
                                     Value rowsValid, bool masked) {
  if (c.p.headDim == 128)
    return transposeTileMatrices(k, c, stageOff, convOff, rowsValid, masked);
  transposeTilePrmt(k, c, stageOff, convOff, rowsValid, masked);
}

//===----------------------------------------------------------------------===//
// attnk.convert_tile: stage → stage
//===----------------------------------------------------------------------===//

/// Where a stage → stage conversion with zero points stages its rows' dequantization constants:
/// behind the conversion buffers and their scale slots (ForwardSharedLayout: conversion buffers,
/// two scale rows of tile_n floats per buffer, then the zero-point constants, K's row then V's),
/// read from the first ring its destination was acquired with; the destination's index among
/// the acquired rings picks the row. -1 when the destination is not an acquired ring stage.
static int64_t zeroStagingOffset(attnk::ConvertTileOp op) {
  auto res = dyn_cast<OpResult>(op.getDest());
  auto acquire = res ? dyn_cast<attnk::RingAcquireOp>(res.getOwner()) : nullptr;
  if (!acquire)
    return -1;
  auto first = acquire.getRings()[0].getDefiningOp<attnk::RingAllocOp>();
  if (!first || !first.getOffset() || !first.getStride())
    return -1;
  int64_t bufs = cast<attnk::RingType>(first.getType()).getStages();
  int64_t tileN = op.getDest().getType().getShape()[0];
  return static_cast<int64_t>(*first.getOffset()) +
         bufs * (static_cast<int64_t>(*first.getStride()) + 2 * tileN * 4) +
         res.getResultNumber() * tileN * 4;
}

/// Zero points: producer thread t < tile_n stages row t's constant 2^23 + z (2^23 + 128 + z for
/// signed codes, whose sign bit int8x4ToF32 flips) at `zeroOff`; subtracted from a byte's magic
/// float it leaves q − z. The role's threads then wait for every row (named barrier 3).
static void stageZeroPoints(KernelBuilder &k, Ctx &c, Value zero, int64_t zeroOff) {
  const ForwardPlan &p = c.p;
  Value magic = k.fadd(zero, k.f32(p.unsignedCodes ? 8388608.0 : 8388736.0));
  k.ifThen(k.cmp(P::slt, c.tid, p.tileN),
           [&] { k.store(magic, sptr(k, c, k.add(k.mul(c.tid, 4), zeroOff))); });
  k.barrier(3, p.producerThreads());
}

namespace {
struct StageConvertLowering : OpConversionPattern<attnk::ConvertTileOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(attnk::ConvertTileOp op, OpAdaptor a,
                                ConversionPatternRewriter &rewriter) const override {
    auto src = dyn_cast<attnk::StageType>(op.getSource().getType());
    if (!src || !op.getDest())
      return rewriter.notifyMatchFailure(op, "not a stage to stage conversion");
    attnk::StageType dst = op.getDest().getType();
    WarpRoleAttr role = op.getRoleAttr();
    if (!role)
      return op.emitOpError("needs the `role` whose warpgroups run it to be lowered");
    Value base = attnk::stageSharedBase(rewriter, op.getDest());
    if (!base)
      return op.emitOpError("needs stages of rings allocated in the kernel's shared memory");
    // The conversion's geometry and codes, as the producer's builders read them from a plan.
    ForwardPlan p;
    Type codes = src.getElementType();
    p.tileN = src.getShape()[0];
    p.headDim = src.getShape()[1];
    p.kv = isa<Float8E4M3FNType>(codes) ? KVType::F8E4M3
           : codes.isInteger(8)        ? KVType::I8
                                       : KVType::BF16;
    p.unsignedCodes = codes.isUnsignedInteger(8);
    p.qI8 = dst.getElementType().isF16(); // int8 codes into f16 (pvF16)
    p.producerWGs = role.getWarpgroups();
    p.producerRegs = role.getRegs();
    bool copyBytes = !op.getTranspose() && dst.getElementType() == codes;
    if (p.kv == KVType::BF16 || (op.getTranspose() && p.headDim != 128 && p.headDim != 64))
      return op.emitOpError("not supported yet: lowering this stage conversion");
    // Zero points: one f32 per producer thread (its row's), staged for the converting threads.
    int64_t zeroOff = -1;
    if (!op.getZeroPoints().empty()) {
      if (op.getZeroPoints().size() != 1 || !op.getZeroPoints()[0].getType().isF32() ||
          op.getTranspose() || copyBytes || !codes.isInteger(8) ||
          dst.getElementType() != rewriter.getBF16Type())
        return op.emitOpError("not supported yet: lowering a stage conversion with zero points "
                              "other than one f32 per producer thread, of 8-bit integer codes "
                              "into bf16");
      zeroOff = zeroStagingOffset(op);
      if (zeroOff < 0)
        return op.emitOpError("with zero points needs a destination acquired from an allocated "
                              "ring (their constants follow its buffers' scales)");
    }
    Ctx c{p, ForwardPlan::Smem{}};
    c.base = base;
    KernelBuilder k(rewriter, op.getLoc());
    c.tid = k.tidX();
    Value rows = a.getValidRows();
    bool masked = bool(rows);
    Value from = attnk::stageOffsetOf(k, op.getSource(), a.getSource());
    Value into = attnk::stageOffsetOf(k, op.getDest(), a.getDest());
    if (zeroOff >= 0)
      stageZeroPoints(k, c, a.getZeroPoints()[0], zeroOff);
    if (op.getTranspose())
      transposeTile(k, c, from, into, rows, masked);
    else
      dequantTile(k, c, from, into, rows, masked, copyBytes, zeroOff);
    rewriter.eraseOp(op);
    return success();
  }
};
} // namespace

void mlir::attnk::populateConvertPatterns(const TypeConverter &tc, RewritePatternSet &patterns) {
  patterns.add<StageConvertLowering>(tc, patterns.getContext());
}
