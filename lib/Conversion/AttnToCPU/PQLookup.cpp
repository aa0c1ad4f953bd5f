//===- PQLookup.cpp - lowering of attn.pq.scores (in-register lookups) ----===//
//
// What this file is: the hot loop of NoMAD — scores of every key by looking up, per
// sub-quantizer, the query's u8 table with the key's code, accumulated in u16. One generator for
// the SIMD targets (the lookup intrinsic and register width come from the ISA table) and one for
// the scalar reference path. Both produce bit-identical u16 sums and f32 scores.
//
//   block of 32 keys, 16 centroids (4-bit codes), R = register bytes / 16 sub-quantizer rows:
//     codes  = load R rows × 16 bytes          byte j of a row: key j (low nibble), key j+16 (high)
//     table  = load R LUT rows × 16 bytes
//     lo, hi = codes & 0xF, codes >> 4         → keys 0..15, keys 16..31
//     A     += lookup(table, lo) as u16 lanes  (byte 2i + 256 · byte 2i+1, wraps)
//     B     += lookup(table, lo) as u16 >> 8   (byte 2i+1; avx2: vpmaddubsw with bytes (0, 1))
//   after all rows: even keys = A − (B << 8), odd keys = B; fold the R rows; interleave.
//
// avx2 (R = 2) runs the sub-quantizer loop as straight-line code up to 32 steps (dsub ≥ 2 at
// head_dim 128), else unrolled 4 times, stores each full block without moving data between its
// 128-bit rows (storeRows), and software-pipelines the blocks: block i − 1's epilogue follows
// block i's first 4 steps (pipelinedBlocks). Measured against the instruction mix alone on Zen 3
// (scripts/bench/scan_ceiling.cpp), the step is bound by vector issue and the epilogue by its
// latency; docs/benchmarks/cpu-nomad.md has the numbers.
//
// avx512_vnni (16 centroids) instead transposes each 4 rows in-register so that a 32-bit lane
// holds one key's 4 codes, looks up the 4 rows' tables with one vpermb and adds each key's 4
// bytes into its i32 lane with vpdpbusd: 8 µops per 4 rows × 32 keys instead of 11 (dotBlock).
//
//===----------------------------------------------------------------------===//

#include "CPUCodegen.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::cpu;

namespace {
/// Keys of one code block and the u16 lanes of one 16-byte half-row.
constexpr int64_t kBlock = 32;

/// Collapses the two innermost dims of an identity-layout memref so that one vector load may span
/// several sub-quantizer rows: [.., S, R] → [.., S·R].
Value collapseInner(ImplicitLocOpBuilder &b, Value m) {
  auto t = cast<MemRefType>(m.getType());
  int64_t rank = t.getRank();
  SmallVector<ReassociationIndices> groups;
  for (int64_t i = 0; i < rank - 2; ++i)
    groups.push_back({i});
  groups.push_back({rank - 2, rank - 1});
  return memref::CollapseShapeOp::create(b, m, groups);
}

Value lookup(ImplicitLocOpBuilder &b, StringRef intrinsic, VectorType t, ValueRange args) {
  return LLVM::CallIntrinsicOp::create(b, t, b.getStringAttr(intrinsic), args)->getResult(0);
}

Value slice(ImplicitLocOpBuilder &b, Value v, int64_t offset, int64_t size) {
  return vector::ExtractStridedSliceOp::create(b, v, ArrayRef<int64_t>{offset},
                                               ArrayRef<int64_t>{size}, ArrayRef<int64_t>{1});
}

/// From the two accumulators of one lookup stream (rows × keysPerRow keys), the u16 sum of each
/// key over all rows, in key order: vector<keysPerRow x i16>.
Value finalize(ImplicitLocOpBuilder &b, Value a, Value bAcc, int64_t rows, int64_t keysPerRow) {
  auto t = cast<VectorType>(a.getType());
  Value even = arith::SubIOp::create(b, a, arith::ShLIOp::create(b, bAcc, splat(b, t, 8)));
  int64_t lanes = keysPerRow / 2;
  Value e = slice(b, even, 0, lanes), o = slice(b, bAcc, 0, lanes);
  for (int64_t r = 1; r < rows; ++r) {
    e = arith::AddIOp::create(b, e, slice(b, even, r * lanes, lanes));
    o = arith::AddIOp::create(b, o, slice(b, bAcc, r * lanes, lanes));
  }
  SmallVector<int64_t> interleave;
  for (int64_t j = 0; j < lanes; ++j) {
    interleave.push_back(j);
    interleave.push_back(lanes + j);
  }
  return vector::ShuffleOp::create(b, e, o, interleave);
}

/// The 8-lane (16-byte, one sub-quantizer row) blocks `blocks` of the concatenation of x and y.
Value pickBlocks(ImplicitLocOpBuilder &b, Value x, Value y, ArrayRef<int64_t> blocks) {
  SmallVector<int64_t> mask;
  for (int64_t blk : blocks)
    for (int64_t i = 0; i < 8; ++i)
      mask.push_back(8 * blk + i);
  return vector::ShuffleOp::create(b, x, y, mask);
}

/// Sum of two block selections of (x, y): one of them a blend (no lane crossing) where possible.
Value addBlocks(ImplicitLocOpBuilder &b, Value x, Value y, ArrayRef<int64_t> p,
                ArrayRef<int64_t> q) {
  return arith::AddIOp::create(b, pickBlocks(b, x, y, p), pickBlocks(b, x, y, q));
}

/// The rows of a 2-row (256-bit) register folded: from the accumulators (A, B) of keys 0..15 and
/// of keys 16..31, the even keys E = X - (Y << 8) and the odd keys O = Y of X = [Alo Ahi],
/// Y = [Blo Bhi] (a blend, a lane swap and an add each): E = [keys 0, 2, .., 14 | 16, .., 30].
std::pair<Value, Value> foldRows2(ImplicitLocOpBuilder &b, ValueRange accs) {
  auto t = cast<VectorType>(accs[0].getType());
  // Blocks 0, 1: x's rows; 2, 3: y's. {0, 3} keeps lanes (a blend), {1, 2} swaps them.
  Value x = addBlocks(b, accs[0], accs[2], {0, 3}, {1, 2});
  Value y = addBlocks(b, accs[1], accs[3], {0, 3}, {1, 2});
  return {arith::SubIOp::create(b, x, arith::ShLIOp::create(b, y, splat(b, t, 8))), y};
}

/// The 16-centroid epilogue of a 2- or 4-row register: from the accumulators (A, B) of the low
/// nibbles (keys 0..15) and of the high nibbles (keys 16..31), the 32 u16 sums in key order.
/// Sums the rows with whole-row shuffles first, then forms the even keys (A - (B << 8)) once on
/// the folded sums and interleaves even and odd keys once:
///   2 rows (256-bit): X = [Alo Ahi], Y = [Blo Bhi] (a blend, a lane swap and an add each);
///                     X -= Y << 8; unpack low/high words of (X, Y).
///   4 rows (512-bit): W = [Alo Ahi Blo Bhi] in 3 adds of row shuffles; one word permute
///                     (vpermw) gives the pairs (A_k, B_k) of keys 2k, 2k+1 as one u32 lane;
///                     lane -= (lane >> 16) << 8 (word shift), which leaves B_k's word as it is.
/// Every step is a wrapping u16 add, subtract or move, so the sums equal finalize()'s bit for bit.
Value foldNibbles(ImplicitLocOpBuilder &b, const ISA &isa, ValueRange accs, int64_t rows) {
  auto t = cast<VectorType>(accs[0].getType());
  SmallVector<int64_t> mask;
  for (int64_t half = 0; half < 2; ++half)
    for (int64_t j = 0; j < 8; ++j) {
      mask.push_back(8 * half + j);
      mask.push_back(16 + 8 * half + j);
    }
  if (rows == 2) {
    auto [even, odd] = foldRows2(b, accs);
    return vector::ShuffleOp::create(b, even, odd, mask);
  }
  // 4 rows: blocks 0..3 of the first operand, 4..7 of the second.
  Value zLo = addBlocks(b, accs[0], accs[1], {0, 1, 6, 7}, {2, 3, 4, 5}); // [A02 A13 B02 B13]
  Value zHi = addBlocks(b, accs[2], accs[3], {0, 1, 6, 7}, {2, 3, 4, 5});
  Value w = addBlocks(b, zLo, zHi, {0, 5, 2, 7}, {1, 4, 3, 6}); // [Alo Ahi Blo Bhi]
  Value pairs;
  if (isa.permute16.empty()) {
    pairs = vector::ShuffleOp::create(b, w, w, mask);
  } else {
    SmallVector<Attribute> order;
    for (int64_t m : mask)
      order.push_back(b.getI16IntegerAttr(m));
    Value idxV = arith::ConstantOp::create(b, t, DenseElementsAttr::get(t, order));
    pairs = lookup(b, isa.permute16, t, {w, idxV});
  }
  auto u32 = VectorType::get({t.getNumElements() / 2}, b.getI32Type());
  Value odd = arith::ShRUIOp::create(b, vector::BitCastOp::create(b, u32, pairs), splat(b, u32, 16));
  Value shifted = arith::ShLIOp::create(b, vector::BitCastOp::create(b, t, odd), splat(b, t, 8));
  return arith::SubIOp::create(b, pairs, shifted);
}

/// Dequantizes (or keeps raw) the 32 u16 sums of a block and stores them: all 32 with a plain
/// store (`len` null: a full block), else the first len − 32·blk with a masked one. AVX2 has no
/// 16-bit masked store; LLVM splits one into 32 tested scalar stores, so full blocks avoid it.
void storeBlock(ImplicitLocOpBuilder &b, Value sums, Value scores, Value hq, Value blk, Value len,
                Value delta, Value bias, bool rawU16) {
  Value base = arith::MulIOp::create(b, blk, idx(b, kBlock));
  Value value = sums;
  if (!rawU16) {
    auto f32x32 = VectorType::get({kBlock}, b.getF32Type());
    Value f = arith::UIToFPOp::create(b, f32x32, sums);
    Value d = vector::BroadcastOp::create(b, f32x32, delta);
    Value c = vector::BroadcastOp::create(b, f32x32, bias);
    value = arith::AddFOp::create(b, arith::MulFOp::create(b, f, d), c);
  }
  if (!len) {
    vector::StoreOp::create(b, value, scores, ValueRange{hq, base});
    return;
  }
  Value remaining = arith::SubIOp::create(b, len, base);
  auto maskT = VectorType::get({kBlock}, b.getI1Type());
  Value mask = vector::CreateMaskOp::create(b, maskT, ValueRange{remaining});
  vector::MaskedStoreOp::create(b, scores, ValueRange{hq, base}, mask, value);
}

/// In-lane (128-bit) interleave of the u16 lanes of x and y: the low four of each row (`high`
/// false, punpcklwd) or the high four (punpckhwd).
Value unpack16(ImplicitLocOpBuilder &b, Value x, Value y, bool high) {
  int64_t n = cast<VectorType>(x.getType()).getNumElements();
  SmallVector<int64_t> mask;
  for (int64_t row = 0; row < n / 8; ++row)
    for (int64_t j = 0; j < 4; ++j) {
      mask.push_back(8 * row + 4 * high + j);
      mask.push_back(n + 8 * row + 4 * high + j);
    }
  return vector::ShuffleOp::create(b, x, y, mask);
}

/// Stores a full block of a 2-row register from its folded even and odd keys (foldRows2) with
/// in-lane shuffles only: unpack(E, O) gives keys [0..7 | 16..23] and [8..15 | 24..31], each
/// 128-bit row stored at its keys (u16). For f32 scores the u16 lanes are unpacked once more with
/// 0x4B00 above them: the float 2^23 + u exactly, which minus 2^23 is uitofp(u) bit for bit, then
/// · step + bias as in storeBlock — in place of a zero-extension and a conversion per 8 keys.
void storeRows(ImplicitLocOpBuilder &b, Value even, Value odd, Value scores, Value hq, Value blk,
               Value delta, Value bias, bool rawU16) {
  Value base = arith::MulIOp::create(b, blk, idx(b, kBlock));
  Value halves[2] = {unpack16(b, even, odd, false), unpack16(b, even, odd, true)};
  auto store = [&](Value v, int64_t key) {
    vector::StoreOp::create(b, v, scores,
                            ValueRange{hq, arith::AddIOp::create(b, base, idx(b, key))});
  };
  if (rawU16) {
    for (int64_t row = 0; row < 2; ++row)
      for (int64_t h = 0; h < 2; ++h)
        store(slice(b, halves[h], 8 * row, 8), 16 * row + 8 * h);
    return;
  }
  auto i16v = VectorType::get({16}, b.getI16Type());
  auto f32v = VectorType::get({8}, b.getF32Type());
  Value magic = splat(b, i16v, 0x4B00);
  Value two23 = splat(b, f32v, 8388608.0);
  Value d = vector::BroadcastOp::create(b, f32v, delta);
  Value c = vector::BroadcastOp::create(b, f32v, bias);
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t q = 0; q < 2; ++q) {
      Value bits = vector::BitCastOp::create(b, f32v, unpack16(b, halves[h], magic, q));
      Value f = arith::SubFOp::create(b, bits, two23);
      Value v = arith::AddFOp::create(b, arith::MulFOp::create(b, f, d), c);
      for (int64_t row = 0; row < 2; ++row)
        store(slice(b, v, 4 * row, 4), 16 * row + 8 * h + 4 * q);
    }
}

/// dotBlock: the 16-centroid loop of one block on a target with vpermb and vpdpbusd. Per step of
/// 4 sub-quantizer rows (64 code bytes, row r byte j = key j | key j+16 << 4):
///   x      = vpermb(codes, T)         T[4j + r] = 16r + j: byte 4j + r ← row r byte j
///   lo, hi = (x & 15) | O, ((x >> 4) & 15) | O     O[4j + r] = 16r: row r's table
///   L     += vpdpbusd(vpermb(tables, lo), 1)       lane j: key j's 4 looked-up bytes
///   H     += vpdpbusd(vpermb(tables, hi), 1)       lane j: key j + 16's
/// with `tables` the 4 rows' 16-entry tables (64 contiguous LUT bytes). Two accumulator pairs
/// (alternate steps) when the rows allow, to halve the vpdpbusd dependency chain. The i32 sums
/// are exact; truncated to u16 they equal the other paths' (wrapping) u16 sums.
Value dotBlock(ImplicitLocOpBuilder &b, const ISA &isa, int64_t numSub, Value lutRows,
               Value codeRows, Value hq, Value h, Value blk) {
  auto i8v = VectorType::get({64}, b.getI8Type());
  auto i32v = VectorType::get({16}, b.getI32Type());
  SmallVector<Attribute> transpose, rowTable;
  for (int64_t i = 0; i < 64; ++i) {
    transpose.push_back(b.getI8IntegerAttr(16 * (i % 4) + i / 4));
    rowTable.push_back(b.getI8IntegerAttr(16 * (i % 4)));
  }
  Value perm = arith::ConstantOp::create(b, i8v, DenseElementsAttr::get(i8v, transpose));
  Value offs = arith::ConstantOp::create(b, i8v, DenseElementsAttr::get(i8v, rowTable));
  Value ones = splat(b, i8v, 1), low = splat(b, i8v, 15), four = splat(b, i8v, 4);
  int64_t pairs = numSub % 8 == 0 ? 2 : 1;
  SmallVector<Value> init(2 * pairs, splat(b, i32v, 0));
  auto loop = scf::ForOp::create(
      b, idx(b, 0), idx(b, numSub), idx(b, 4 * pairs), init,
      [&](OpBuilder &nested, Location loc, Value s0, ValueRange accs) {
        ImplicitLocOpBuilder nb(loc, nested);
        SmallVector<Value> next;
        for (int64_t p = 0; p < pairs; ++p) {
          Value off = arith::MulIOp::create(nb, arith::AddIOp::create(nb, s0, idx(nb, 4 * p)),
                                            idx(nb, 16));
          Value codesV = vector::LoadOp::create(nb, i8v, codeRows, ValueRange{h, blk, off});
          Value table = vector::LoadOp::create(nb, i8v, lutRows, ValueRange{hq, off});
          Value x = lookup(nb, isa.permute64, i8v, {codesV, perm});
          Value lo = arith::OrIOp::create(nb, arith::AndIOp::create(nb, x, low), offs);
          Value hi = arith::OrIOp::create(
              nb, arith::AndIOp::create(nb, arith::ShRUIOp::create(nb, x, four), low), offs);
          Value indices[2] = {lo, hi};
          for (int64_t i = 0; i < 2; ++i) {
            Value r = lookup(nb, isa.permute64, i8v, {table, indices[i]});
            next.push_back(lookup(nb, isa.dot4, i32v, {accs[2 * p + i], r, ones}));
          }
        }
        scf::YieldOp::create(nb, next);
      });
  ValueRange accs = loop.getResults();
  auto i16v = VectorType::get({16}, b.getI16Type());
  Value half[2];
  for (int64_t i = 0; i < 2; ++i) {
    Value sum = accs[i];
    for (int64_t p = 1; p < pairs; ++p)
      sum = arith::AddIOp::create(b, sum, accs[2 * p + i]);
    half[i] = arith::TruncIOp::create(b, i16v, sum);
  }
  SmallVector<int64_t> concat;
  for (int64_t i = 0; i < kBlock; ++i)
    concat.push_back(i);
  return vector::ShuffleOp::create(b, half[0], half[1], concat);
}

/// Sub-quantizer steps the 16-centroid avx2 loop runs as straight-line code (at most), and its
/// unroll factor beyond that. Measured on Zen 3 (same process, interleaved): the u16 scan
/// 1.00–1.13× the rolled loop (which LLVM unrolls twice) at dsub 1 and 2, f32 scores with
/// storeRows 1.02–1.27×; llvm-mca 22 for Sapphire Rapids agrees (docs/benchmarks/cpu-nomad.md).
constexpr int64_t kStraightSteps = 32;
constexpr int64_t kUnroll = 4;

/// avx2: B += the odd byte of each u16 lane as vpmaddubsw(bytes, (0, 1)) = 0 · even + 1 · odd,
/// the same u16 value as lanes >> 8 (no saturation: at most 255). Per step of two rows the
/// 16-centroid loop then issues one vector shift (the nibble split) instead of three; on Zen 3
/// shifts and vpshufb share two pipes and the multiply runs on the other two: the step's
/// instruction mix alone runs in 3.0 instead of 3.25 cycles (scripts/bench/scan_ceiling.cpp,
/// docs/benchmarks/cpu-nomad.md).
constexpr StringLiteral kOddBytesAVX2 = "llvm.x86.avx2.pmadd.ub.sw";

/// Steps of a straight-line avx2 block after which the previous block's epilogue is emitted
/// (emitScores' software-pipelined block loop).
constexpr int64_t kPipelineSteps = 4;

/// The SIMD loop over the sub-quantizers of one block; returns its accumulators: A, B of keys
/// 0..15 and A, B of keys 16..31 (16 centroids), else A, B. `afterFirst`, when set, is emitted
/// after the first kPipelineSteps steps (which a rolled loop then runs before it, straight-line).
SmallVector<Value> simdAccs(ImplicitLocOpBuilder &b, const ISA &isa, PQAttr pq, int64_t numSub,
                            Value lutRows, Value codeRows, Value hq, Value h, Value blk,
                            function_ref<void(ImplicitLocOpBuilder &)> afterFirst = nullptr) {
  int64_t w = isa.vecBytes;
  bool fourBit = pq.getCentroids() == 16;
  int64_t rowBytes = fourBit ? 16 : kBlock; // code bytes of one sub-quantizer row
  int64_t rowsPerVec = w / rowBytes;
  int64_t c = pq.getCentroids();
  auto i8v = VectorType::get({w}, b.getI8Type());
  auto i16v = VectorType::get({w / 2}, b.getI16Type());
  int64_t numAcc = fourBit ? 4 : 2;
  SmallVector<Value> init(numAcc, splat(b, i16v, 0));
  // avx2: the odd bytes of the looked-up u16 lanes by vpmaddubsw against bytes (0, 1) instead of
  // a 16-bit shift (see kOddBytesAVX2).
  Value oddBytes;
  if (fourBit && isa.kind == TargetKind::avx2) {
    SmallVector<Attribute> sel;
    for (int64_t i = 0; i < w; ++i)
      sel.push_back(b.getI8IntegerAttr(i % 2));
    oddBytes = arith::ConstantOp::create(b, i8v, DenseElementsAttr::get(i8v, sel));
  }

  // One step: rowsPerVec sub-quantizer rows from row s on.
  auto step = [&](ImplicitLocOpBuilder &nb, Value s, ValueRange accs) {
    Value codeOff = arith::MulIOp::create(nb, s, idx(nb, rowBytes));
    Value codesV = vector::LoadOp::create(nb, i8v, codeRows, ValueRange{h, blk, codeOff});
    SmallVector<Value> results;
    if (fourBit) {
      Value lutOff = arith::MulIOp::create(nb, s, idx(nb, 16));
      Value table = vector::LoadOp::create(nb, i8v, lutRows, ValueRange{hq, lutOff});
      Value lo = arith::AndIOp::create(nb, codesV, splat(nb, i8v, 15));
      Value hi = arith::ShRUIOp::create(nb, codesV, splat(nb, i8v, 4));
      results.push_back(lookup(nb, isa.lookup16, i8v, {table, lo}));
      results.push_back(lookup(nb, isa.lookup16, i8v, {table, hi}));
    } else {
      // Two rows of 32 one-byte codes; the second row indexes the second table.
      SmallVector<Attribute> offsets;
      for (int64_t i = 0; i < w; ++i)
        offsets.push_back(nb.getI8IntegerAttr(i < kBlock ? 0 : c));
      Value rowOffset = arith::ConstantOp::create(nb, i8v, DenseElementsAttr::get(i8v, offsets));
      Value index = arith::OrIOp::create(nb, codesV, rowOffset);
      Value lutOff = arith::MulIOp::create(nb, s, idx(nb, c));
      if (c == 32) {
        Value table = vector::LoadOp::create(nb, i8v, lutRows, ValueRange{hq, lutOff});
        results.push_back(lookup(nb, isa.permute64, i8v, {table, index}));
      } else {
        Value t0 = vector::LoadOp::create(nb, i8v, lutRows, ValueRange{hq, lutOff});
        Value lutOff1 = arith::AddIOp::create(nb, lutOff, idx(nb, c));
        Value t1 = vector::LoadOp::create(nb, i8v, lutRows, ValueRange{hq, lutOff1});
        results.push_back(lookup(nb, isa.permute128, i8v, {t0, index, t1}));
      }
    }
    SmallVector<Value> next;
    for (auto [i, r] : llvm::enumerate(results)) {
      Value lanes = vector::BitCastOp::create(nb, i16v, r);
      next.push_back(arith::AddIOp::create(nb, accs[2 * i], lanes));
      Value odd = oddBytes ? lookup(nb, kOddBytesAVX2, i16v, {r, oddBytes})
                           : arith::ShRUIOp::create(nb, lanes, splat(nb, i16v, 8)).getResult();
      next.push_back(arith::AddIOp::create(nb, accs[2 * i + 1], odd));
    }
    return next;
  };

  int64_t steps = numSub / rowsPerVec, unroll = 1;
  if (fourBit && w == 32)
    unroll = steps <= kStraightSteps ? steps : steps % kUnroll == 0 ? kUnroll : 1;
  if (unroll == steps) {
    SmallVector<Value> accs = init;
    for (int64_t s = 0; s < numSub; s += rowsPerVec) {
      if (afterFirst && s == kPipelineSteps * rowsPerVec)
        afterFirst(b);
      accs = step(b, idx(b, s), accs);
    }
    return accs;
  }
  // With `afterFirst`, the first kPipelineSteps steps run before the loop (straight-line).
  int64_t first = 0;
  if (afterFirst) {
    first = kPipelineSteps * rowsPerVec;
    for (int64_t s = 0; s < first; s += rowsPerVec)
      init = step(b, idx(b, s), init);
    afterFirst(b);
  }
  auto loop = scf::ForOp::create(
      b, idx(b, first), idx(b, numSub), idx(b, rowsPerVec * unroll), init,
      [&](OpBuilder &nested, Location loc, Value s, ValueRange accs) {
        ImplicitLocOpBuilder nb(loc, nested);
        SmallVector<Value> next(accs);
        for (int64_t u = 0; u < unroll; ++u) {
          Value row = u ? arith::AddIOp::create(nb, s, idx(nb, u * rowsPerVec)).getResult() : s;
          next = step(nb, row, next);
        }
        scf::YieldOp::create(nb, next);
      });
  return SmallVector<Value>(loop.getResults());
}

/// Whether the full blocks of the 16-centroid avx2 loop over `numSub` sub-quantizers are software
/// pipelined (pipelinedBlocks): more than kPipelineSteps steps of two rows.
bool pipelines(const ISA &isa, PQAttr pq, int64_t numSub) {
  return pq.getCentroids() == 16 && isa.vecBytes == 32 && numSub / 2 > kPipelineSteps;
}

/// The full blocks of a 2-row (avx2) register, software pipelined: the epilogue of block i − 1
/// (row folds, unpacks, stores) follows the first kPipelineSteps steps of block i, and the last
/// block's follows the loop. Each block's epilogue is a chain of about 10 cycles (a lane permute,
/// an add, a shift, a subtract, an unpack, a lane permute) that, emitted right after its own
/// steps, does not overlap the next block on Zen 3 (scripts/bench/scan_ceiling.cpp: 54–55 against
/// 59 cycles per block at dsub 4). Block 0's slot first receives the folded zero accumulators,
/// then its sums.
void pipelinedBlocks(ImplicitLocOpBuilder &b, const ISA &isa, PQAttr pq, int64_t numSub,
                     Value lutRows, Value codeRows, Value scores, Value hq, Value h,
                     Value fullBlocks, Value delta, Value bias, bool rawU16) {
  auto i16v = VectorType::get({16}, b.getI16Type());
  SmallVector<Value> zeros(4, splat(b, i16v, 0));
  auto loop = scf::ForOp::create(
      b, idx(b, 0), fullBlocks, idx(b, 1), zeros,
      [&](OpBuilder &nested, Location loc, Value blk, ValueRange prev) {
        ImplicitLocOpBuilder nb(loc, nested);
        auto storePrev = [&](ImplicitLocOpBuilder &sb) {
          Value before = arith::MaxSIOp::create(sb, arith::SubIOp::create(sb, blk, idx(sb, 1)),
                                                idx(sb, 0));
          auto [even, odd] = foldRows2(sb, prev);
          storeRows(sb, even, odd, scores, hq, before, delta, bias, rawU16);
        };
        SmallVector<Value> accs =
            simdAccs(nb, isa, pq, numSub, lutRows, codeRows, hq, h, blk, storePrev);
        scf::YieldOp::create(nb, accs);
      });
  Value any = arith::CmpIOp::create(b, arith::CmpIPredicate::ugt, fullBlocks, idx(b, 0));
  scf::IfOp::create(b, any, [&](OpBuilder &nested, Location loc) {
    ImplicitLocOpBuilder nb(loc, nested);
    auto [even, odd] = foldRows2(nb, loop.getResults());
    storeRows(nb, even, odd, scores, hq, arith::SubIOp::create(nb, fullBlocks, idx(nb, 1)),
              delta, bias, rawU16);
    scf::YieldOp::create(nb);
  });
}

/// One block through simdAccs and its epilogue; returns the 32 sums in key order.
Value simdBlock(ImplicitLocOpBuilder &b, const ISA &isa, PQAttr pq, int64_t numSub, Value lutRows,
                Value codeRows, Value hq, Value h, Value blk) {
  bool fourBit = pq.getCentroids() == 16;
  if (fourBit && !isa.dot4.empty())
    return dotBlock(b, isa, numSub, lutRows, codeRows, hq, h, blk);
  int64_t rowsPerVec = isa.vecBytes / (fourBit ? 16 : kBlock);
  SmallVector<Value> accs = simdAccs(b, isa, pq, numSub, lutRows, codeRows, hq, h, blk);
  if (fourBit && (rowsPerVec == 2 || rowsPerVec == 4))
    return foldNibbles(b, isa, accs, rowsPerVec);
  if (fourBit) {
    Value lo = finalize(b, accs[0], accs[1], rowsPerVec, 16);
    Value hi = finalize(b, accs[2], accs[3], rowsPerVec, 16);
    SmallVector<int64_t> concat;
    for (int64_t i = 0; i < kBlock; ++i)
      concat.push_back(i);
    return vector::ShuffleOp::create(b, lo, hi, concat);
  }
  return finalize(b, accs[0], accs[1], rowsPerVec, kBlock);
}
} // namespace

LogicalResult cpu::emitScores(ImplicitLocOpBuilder &b, const ISA &isa, PQAttr pq, Value lut,
                              Value params, Value codes, Value length, Value scores, bool rawU16,
                              Location loc) {
  FailureOr<int64_t> sub = staticDim(b, lut, 1, "number of sub-quantizers");
  if (failed(sub))
    return failure();
  int64_t numSub = *sub;
  bool fourBit = pq.getCentroids() == 16;
  if (!isa.isScalar()) {
    int64_t rowsPerVec = isa.vecBytes / (fourBit ? 16 : kBlock);
    if (!fourBit && isa.permute64.empty())
      return emitError(loc) << "not supported yet: " << pq.getCentroids()
                            << "-centroid lookups on " << stringifyTargetKind(isa.kind);
    if (numSub % rowsPerVec != 0)
      return emitError(loc) << "not supported yet: " << numSub
                            << " sub-quantizers on " << stringifyTargetKind(isa.kind)
                            << ", which looks up " << rowsPerVec << " at a time";
  }
  Value numQ = dim(b, lut, 0);
  Value ratio = arith::DivUIOp::create(b, numQ, dim(b, codes, 0));
  Value len = validKeys(b, length, codes, dim(b, scores, 1));
  Value numBlocks = arith::CeilDivUIOp::create(b, len, idx(b, kBlock));

  forLoop(b, idx(b, 0), numQ, 1, [&](ImplicitLocOpBuilder &b, Value hq) {
    Value h = arith::DivUIOp::create(b, hq, ratio);
    Value delta, bias;
    if (!rawU16) {
      delta = memref::LoadOp::create(b, params, ValueRange{hq, idx(b, 0)});
      bias = memref::LoadOp::create(b, params, ValueRange{hq, idx(b, 1)});
    }
    if (!isa.isScalar()) {
      Value lutRows = collapseInner(b, lut);
      Value codeRows = collapseInner(b, codes);
      // Full blocks with plain stores, then the partial last block (if any) masked.
      Value fullBlocks = arith::DivUIOp::create(b, len, idx(b, kBlock));
      bool rows2 = fourBit && isa.vecBytes == 32;
      if (pipelines(isa, pq, numSub))
        pipelinedBlocks(b, isa, pq, numSub, lutRows, codeRows, scores, hq, h, fullBlocks, delta,
                        bias, rawU16);
      else
        forLoop(b, idx(b, 0), fullBlocks, 1, [&](ImplicitLocOpBuilder &b, Value blk) {
        if (rows2) {
          SmallVector<Value> accs = simdAccs(b, isa, pq, numSub, lutRows, codeRows, hq, h, blk);
          auto [even, odd] = foldRows2(b, accs);
          storeRows(b, even, odd, scores, hq, blk, delta, bias, rawU16);
          return;
        }
        Value sums = simdBlock(b, isa, pq, numSub, lutRows, codeRows, hq, h, blk);
        storeBlock(b, sums, scores, hq, blk, Value(), delta, bias, rawU16);
      });
      Value partial =
          arith::CmpIOp::create(b, arith::CmpIPredicate::ult, fullBlocks, numBlocks);
      scf::IfOp::create(b, partial, [&](OpBuilder &nested, Location l) {
        ImplicitLocOpBuilder nb(l, nested);
        Value sums = simdBlock(nb, isa, pq, numSub, lutRows, codeRows, hq, h, fullBlocks);
        storeBlock(nb, sums, scores, hq, fullBlocks, len, delta, bias, rawU16);
        scf::YieldOp::create(nb);
      });
      return;
    }
    // Scalar reference: one key at a time, same u16 sum, same float operations.
    forLoop(b, idx(b, 0), len, 1, [&](ImplicitLocOpBuilder &b, Value t) {
      Value blk = arith::DivUIOp::create(b, t, idx(b, kBlock));
      Value j = arith::RemUIOp::create(b, t, idx(b, kBlock));
      Value i32zero = intConst(b, b.getI32Type(), 0);
      auto sum = scf::ForOp::create(
          b, idx(b, 0), idx(b, numSub), idx(b, 1), ValueRange{i32zero},
          [&](OpBuilder &nested, Location l, Value s, ValueRange acc) {
            ImplicitLocOpBuilder nb(l, nested);
            Value code;
            if (fourBit) {
              Value col = arith::RemUIOp::create(nb, j, idx(nb, 16));
              Value byte = memref::LoadOp::create(nb, codes, ValueRange{h, blk, s, col});
              Value low = arith::AndIOp::create(nb, byte, intConst(nb, nb.getI8Type(), 15));
              Value high = arith::ShRUIOp::create(nb, byte, intConst(nb, nb.getI8Type(), 4));
              Value first = arith::CmpIOp::create(nb, arith::CmpIPredicate::ult, j, idx(nb, 16));
              code = arith::SelectOp::create(nb, first, low, high);
            } else {
              code = memref::LoadOp::create(nb, codes, ValueRange{h, blk, s, j});
            }
            Value codeIdx = arith::IndexCastUIOp::create(nb, nb.getIndexType(), code);
            Value entry = memref::LoadOp::create(nb, lut, ValueRange{hq, s, codeIdx});
            Value wide = arith::ExtUIOp::create(nb, nb.getI32Type(), entry);
            scf::YieldOp::create(nb, ValueRange{arith::AddIOp::create(nb, acc[0], wide)});
          });
      Value u16 = arith::TruncIOp::create(b, b.getI16Type(), sum.getResult(0));
      Value out = u16;
      if (!rawU16) {
        Value f = arith::UIToFPOp::create(b, b.getF32Type(), u16);
        out = arith::AddFOp::create(b, arith::MulFOp::create(b, f, delta), bias);
      }
      memref::StoreOp::create(b, out, scores, ValueRange{hq, t});
    });
  });
  return success();
}
