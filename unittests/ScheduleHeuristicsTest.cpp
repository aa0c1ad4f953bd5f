//===- ScheduleHeuristicsTest.cpp - tests of the schedule heuristic -------===//
//
// What this file is: unit tests of the rules attn-select-schedule applies (ScheduleHeuristics.h):
// query-head packing into the 64-row WGMMA tile and split-KV to fill the SMs.
//
//===----------------------------------------------------------------------===//

#include "attn/Dialect/Attn/Transforms/ScheduleHeuristics.h"
#include "attn/Dialect/Attn/Transforms/ForwardSharedMemory.h"

#include <gtest/gtest.h>

using namespace mlir::attn;

namespace {
AttentionShape decode(int64_t batch, int64_t qLen, int64_t kvLen, int64_t hq, int64_t hkv,
                      int64_t d = 128) {
  AttentionShape s;
  s.batch = batch;
  s.qLen = qLen;
  s.kvLen = kvLen;
  s.qHeads = hq;
  s.kvHeads = hkv;
  s.headDim = d;
  return s;
}
} // namespace

TEST(PackQHeads, MQAPacksAllHeadsWhenTheyFit) {
  // Table-3 rows: q_len 3, 16 query heads, 1 KV head -> 48 rows fit in 64.
  EXPECT_EQ(selectPackQHeads(decode(16, 3, 8192, 16, 1), GPUInfo{}), 16);
}

TEST(PackQHeads, LargestDivisorWhoseRowsFit) {
  // 16 heads per KV head at q_len 8: 8 × 8 = 64 rows fit, 16 × 8 = 128 do not.
  EXPECT_EQ(selectPackQHeads(decode(1, 8, 1024, 16, 1), GPUInfo{}), 8);
  // Ratio 6 at q_len 16: divisors 1, 2, 3, 6 -> 3 × 16 = 48 fits, 6 × 16 = 96 does not.
  EXPECT_EQ(selectPackQHeads(decode(1, 16, 1024, 12, 2), GPUInfo{}), 3);
}

TEST(PackQHeads, MHAHasNothingToPack) {
  EXPECT_EQ(selectPackQHeads(decode(1, 1, 1024, 32, 32), GPUInfo{}), 1);
}

TEST(PackQHeads, TooManyQueryTokensFallsBackToOne) {
  EXPECT_EQ(selectPackQHeads(decode(1, 100, 1024, 8, 1), GPUInfo{}), 1);
}

TEST(SplitKv, LargeBatchNeedsNoSplit) {
  EXPECT_EQ(selectSplitKv(/*ctas=*/256, /*kvLen=*/1024, /*tileN=*/128, GPUInfo{}), 1);
  EXPECT_EQ(selectSplitKv(132, 1 << 20, 128, GPUInfo{}), 1);
}

TEST(SplitKv, ALeftWindowSharesOnlyItsKeys) {
  EXPECT_EQ(splitKvKeys(/*kvLen=*/8192, /*qLen=*/3, /*windowLeft=*/-1), 8192);
  EXPECT_EQ(splitKvKeys(8192, 3, 127), 130);
  EXPECT_EQ(splitKvKeys(100, 3, 127), 100); // a window longer than the cache: all of it
  EXPECT_EQ(splitKvKeys(8192, 1, 0), 1);
}

TEST(SplitKv, SmallBatchSplitsToCoverTheSMs) {
  // 2 CTAs on 132 SMs -> 66 splits, each still holding many 128-key tiles.
  EXPECT_EQ(selectSplitKv(2, 131072, 128, GPUInfo{}), 66);
  // 16 CTAs -> 8 splits (128 CTAs, one wave), not 9 (144: a second, nearly empty wave).
  EXPECT_EQ(selectSplitKv(16, 8192, 128, GPUInfo{}), 8);
  GPUInfo small;
  small.numSMs = 16;
  EXPECT_EQ(selectSplitKv(16, 8192, 128, small), 1);
}

TEST(SplitKv, LongCachesBalanceTheWaves) {
  // 192 CTAs (batch 24 x 8 KV heads) at 32K keys: one split runs 1.45 waves as 2; 11 splits
  // make 2112 CTAs, 16 full waves.
  EXPECT_EQ(selectSplitKv(192, 32768, 128, GPUInfo{}), 11);
  // 104 CTAs leave 28 SMs idle in one wave; 5 splits make 520 CTAs in 3.94 waves.
  EXPECT_EQ(selectSplitKv(104, 32768, 128, GPUInfo{}), 5);
  // Short caches keep the one-wave rule: 192 CTAs over 1024 keys (8 tiles) run unsplit.
  EXPECT_EQ(selectSplitKv(192, 1024, 128, GPUInfo{}), 1);
  // Near-even grids keep it too: 256 CTAs run 1.94 waves as 2 (3% lost).
  EXPECT_EQ(selectSplitKv(256, 32768, 128, GPUInfo{}), 1);
  EXPECT_EQ(selectSplitKv(4, 65536, 128, GPUInfo{}), 33);
}

TEST(SplitKv, NeverMoreSplitsThanTiles) {
  // 1 CTA, 300 keys -> at most ceil(300 / 128) = 3 splits.
  EXPECT_EQ(selectSplitKv(1, 300, 128, GPUInfo{}), 3);
  EXPECT_EQ(selectSplitKv(1, 1, 128, GPUInfo{}), 1);
}

TEST(DecodeSchedule, Table3Rows) {
  // ctx × batch = 1024 × 256 ... 131072 × 2: one wave (1, 1, 2, 4, 8, 16, 33, 66 splits), at
  // least 128 of the 132 SMs busy.
  for (int64_t ctx = 1024, batch = 256; ctx <= 131072; ctx *= 2, batch /= 2) {
    DecodeSchedule d = selectDecodeSchedule(decode(batch, 3, ctx, 16, 1), GPUInfo{});
    EXPECT_EQ(d.packQHeads, 16) << ctx;
    EXPECT_EQ(d.ctasPerSplit, batch) << ctx;
    EXPECT_GE(d.ctasPerSplit * d.splitKv, 128) << ctx;
    if (batch < 132)
      EXPECT_LE(d.ctasPerSplit * d.splitKv, 132) << ctx;
    EXPECT_LE(d.splitKv, (ctx + d.tileN - 1) / d.tileN) << ctx;
  }
}

TEST(CtasPerSm, TwoWhenTheGridTakesMoreThanOneWave) {
  AttentionShape s = decode(256, 3, 1024, 16, 1);
  s.int8QK = true;
  EXPECT_EQ(selectCtasPerSm(s, 256, GPUInfo{}), 2); // Table 3's 1024 × 256 row
  EXPECT_EQ(selectCtasPerSm(s, 132, GPUInfo{}), 1); // one wave already
  EXPECT_EQ(selectCtasPerSm(s, 0, GPUInfo{}), 1);   // batch known only at launch
  GPUInfo big;
  big.numSMs = 300;
  EXPECT_EQ(selectCtasPerSm(s, 256, big), 1);
}

TEST(CtasPerSm, OnlyWhereTwoCTAsFit) {
  AttentionShape s = decode(256, 3, 1024, 16, 1);
  s.int8QK = true;
  // bf16 queries convert K to bf16 as well: 2 · (116864 + 1024) bytes exceed the SM's 228 KiB.
  AttentionShape bf16Q = s;
  bf16Q.int8QK = false;
  EXPECT_EQ(selectCtasPerSm(bf16Q, 256, GPUInfo{}), 1);
  AttentionShape d256 = s;
  d256.headDim = 256;
  EXPECT_EQ(selectCtasPerSm(d256, 256, GPUInfo{}), 1);
  AttentionShape bf16Cache = s;
  bf16Cache.kvElemBytes = 2;
  bf16Cache.int8QK = false;
  EXPECT_EQ(selectCtasPerSm(bf16Cache, 256, GPUInfo{}), 1);
  AttentionShape zp = s;
  zp.zeroPoints = true;
  EXPECT_EQ(selectCtasPerSm(zp, 256, GPUInfo{}), 1);
}

TEST(DecodeSchedule, DynamicLengthDefersSplit) {
  DecodeSchedule d = selectDecodeSchedule(
      decode(AttentionShape::kDynamicExtent, 1, AttentionShape::kDynamicExtent, 8, 1), GPUInfo{});
  EXPECT_EQ(d.splitKv, 0);
  EXPECT_EQ(d.packQHeads, 8);
}

TEST(TileN, HeadDim256HalvesTheTile) {
  EXPECT_EQ(selectTileN(decode(1, 1, 1, 1, 1, 64)), 128);
  EXPECT_EQ(selectTileN(decode(1, 1, 1, 1, 1, 128)), 128);
  EXPECT_EQ(selectTileN(decode(1, 1, 1, 1, 1, 256)), 64);
  // bf16 caches stage twice the bytes but need no conversion buffers (the WGMMAs read the TMA
  // stages): the same tiles.
  AttentionShape bf = decode(1, 1, 1, 1, 1, 128);
  bf.kvElemBytes = 2;
  EXPECT_EQ(selectTileN(bf), 128);
  bf.headDim = 256;
  EXPECT_EQ(selectTileN(bf), 64);
  // Two query tiles (prefill) at head_dim 128: still 128 keys.
  bf.headDim = 128;
  bf.queryTiles = 2;
  EXPECT_EQ(selectTileN(bf), 128);
  // Every choice fits one SM.
  for (int64_t d : {64, 128, 256})
    for (int64_t e : {1, 2}) {
      AttentionShape s = decode(1, 1, 1, 1, 1, d);
      s.kvElemBytes = e;
      EXPECT_LE(layoutForwardSharedMemory(s, selectTileN(s), 2).bytes(), kMaxSharedBytesSm90);
    }
  // fp8 prefill: one-byte query tiles, K read from the stages, three one-byte transposed V
  // buffers — three stages of 128 keys fit.
  AttentionShape f8 = decode(1, 1, 1, 1, 1, 128);
  f8.fp8 = true;
  f8.queryTiles = 2;
  EXPECT_EQ(selectTileN(f8), 128);
  // 2 · 8 KiB queries + 3 · 32 KiB stages + 3 · 16 KiB V buffers + 3 KiB scales + 12
  // mbarriers, rounded to 128, + 1 KiB of alignment.
  EXPECT_EQ(layoutForwardSharedMemory(f8, 128, 3).bytes(), 168064);
  // full_int8 prefill: the same layout with int8 queries (and two stages by default); half-int8
  // without the overlap copies K into two buffers beside bf16 V instead.
  AttentionShape fi8 = decode(1, 1, 1, 1, 1, 128);
  fi8.int8QK = true;
  fi8.fullInt8 = true;
  fi8.queryTiles = 2;
  EXPECT_EQ(layoutForwardSharedMemory(fi8, 128, 3).bytes(), 168064);
  // 2 · 8 KiB queries + 2 · 32 KiB stages + 3 · 16 KiB V buffers + 3 KiB scales + 10 mbarriers.
  EXPECT_EQ(layoutForwardSharedMemory(fi8, 128, 2).bytes(), 135296);
  fi8.fullInt8 = false;
  EXPECT_GT(layoutForwardSharedMemory(fi8, 128, 2).bytes(), 135296);
}
