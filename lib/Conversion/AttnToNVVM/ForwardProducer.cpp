//===- ForwardProducer.cpp - the forward kernel's producer warpgroup ------===//
//
// What this file is: the producer of `<name>_decode` (ForwardKernel.cpp): thread 0 streams K/V
// tiles with TMA into `stages` mbarrier-guarded shared-memory stages; the warpgroup converts each
// tile (int8 / uint8 / e4m3 → bf16, exactly; asymmetric codes minus their zero point) into one of
// two 128-byte-swizzled bf16 buffers — or, with int8 queries, copies K's bytes (prefill with the
// overlap: leaves them in the stage, where TMA swizzled them, and converts V into three buffers;
// int8 queries convert V to f16, their P·V's type),
// or, for fp8 and full_int8 prefill, leaves K in the stage and transposes V into 8-bit Vᵀ
// (transposeTile) —,
// zeroes keys past the sequence length, stages the per-token scales, and signals the consumers.
// bf16 caches skip the conversion: TMA fills the swizzled layout the consumers read
// (buildDirectProducer). With a persistent grid (prefill) the rings run on across work items
// (Ctx::ring, fillSlot).
//
//===----------------------------------------------------------------------===//

#include "ForwardKernelImpl.h"

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
static void dequantTile(KernelBuilder &k, Ctx &c, Value stageOff, Value convOff, Value rowsValid,
                        bool masked, bool copyBytes = false, int64_t zeroOff = -1) {
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
static void transposeTile(KernelBuilder &k, Ctx &c, Value stageOff, Value convOff, Value rowsValid,
                          bool masked) {
  if (c.p.headDim == 128)
    return transposeTileMatrices(k, c, stageOff, convOff, rowsValid, masked);
  transposeTilePrmt(k, c, stageOff, convOff, rowsValid, masked);
}

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

Value mlir::attn::nvvm::scaleIndex(KernelBuilder &k, Ctx &c, Granularity g, Value token,
                                   int64_t blockRows) {
  return scaleIndex(k, g, c.bIdx, c.kvLen, c.p.kvHeads, c.hkv, token, blockRows);
}

/// Loads the K and V scales of key `token` (clamped into [0, len) so the address is valid) and,
/// for asymmetric caches, its zero points as int8x4ToF32's magic constants: {ks, vs, kz, vz}.
static SmallVector<Value> loadScales(KernelBuilder &k, Ctx &c, Value token) {
  const ForwardPlan &p = c.p;
  if (!p.hasScales())
    return {k.f32(0), k.f32(0)};
  Value t = k.smax(k.smin(token, k.add(c.len, -1)), k.i32(0));
  auto ld = [&](Value base, Granularity g, int64_t blockRows) {
    Value idx = k.sext64(scaleIndex(k, c, g, t, blockRows));
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
                                k.gep(base, k.sext64(scaleIndex(k, c, g, t))), 1);
      Value zf = p.unsignedCodes
                     ? LLVM::UIToFPOp::create(k.builder(), k.getLoc(), k.f32(), z).getResult()
                     : k.sitofp(z);
      return k.fadd(zf, k.f32(p.unsignedCodes ? 8388608.0 : 8388736.0));
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
static void issueTile(KernelBuilder &k, Ctx &c, Value stage, Value tile, Value bar = {}) {
  const ForwardPlan &p = c.p;
  Value stageOff = ringOffset(k, stage, c.sm.stage, c.sm.stageStride);
  if (!bar)
    bar = sptr(k, c, k.add(k.mul(stage, 8), c.sm.fullStage(0)));
  k.mbarrierArriveExpectTx(bar, 2 * p.stageTileBytes());
  int64_t cols = p.tmaBoxColumns(), rows = p.boxRows();
  for (int64_t blk = 0; blk < p.headDim / cols; ++blk) {
    for (int64_t r0 = 0; r0 < p.tileN; r0 += rows) {
      SmallVector<Value> coords = {k.i32(blk * cols), c.hkv, k.add(k.mul(tile, p.tileN), r0),
                                   c.bIdx};
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
static void issueLoads(KernelBuilder &k, Ctx &c, Value slot, Value tile) {
  const ForwardPlan &p = c.p;
  if (!p.directKV())
    return issueTile(k, c, slot, tile);
  k.ifThenElse(
      isPartialTile(k, c, tile), TypeRange{},
      [&] {
        issueTile(k, c, slot, tile, sptr(k, c, c.sm.tail(p.stages)));
        return SmallVector<Value>();
      },
      [&] {
        issueTile(k, c, slot, tile);
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
      Value phase = k.band(k.udiv(g, p.stages), 1);
      k.mbarrierWait(sptr(k, c, k.add(k.mul(s, 8), c.sm.emptyStage(0, p.stages))), phase);
      issueLoads(k, c, s, k.add(c.tile0, next));
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
  double kFactor = p.softmaxScale * kLog2e;
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
    // Scales: K pre-multiplied by softmax_scale · log2(e); bf16 caches get the bare factors.
    k.ifThen(k.cmp(P::slt, c.tid, p.tileN), [&] {
      Value scOff = ringOffset(k, buf, c.sm.scales, c.sm.scaleStride);
      Value ksv = p.hasScales() ? k.fmul(carried[0], k.f32(kFactor)) : k.f32(kFactor);
      Value vsv = p.hasScales() ? carried[1] : k.f32(1.0);
      k.store(ksv, sptr(k, c, k.add(scOff, k.mul(c.tid, 4))));
      k.store(vsv, sptr(k, c, k.add(scOff, k.add(k.mul(c.tid, 4), p.tileN * 4))));
    });
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
