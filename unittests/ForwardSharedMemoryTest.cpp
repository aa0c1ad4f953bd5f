//===- ForwardSharedMemoryTest.cpp - tests of the forward kernel's layout -===//
//
// What this file is: unit tests of layoutForwardSharedMemory (ForwardSharedMemory.h), the one
// shared-memory map of the sm_90a forward-attention kernel: the offsets of the decode layouts
// the lowering builds (int8 and bf16 caches, zero points), prefill with K read from the stages,
// and, over a grid of shapes and schedules, that the regions are ordered, aligned and disjoint.
//
//===----------------------------------------------------------------------===//

#include "attn/Dialect/Attn/Transforms/ForwardSharedMemory.h"

#include <gtest/gtest.h>

using namespace mlir::attn;

namespace {

AttentionShape shape(int64_t headDim, int64_t kvElemBytes) {
  AttentionShape s;
  s.headDim = headDim;
  s.kvElemBytes = kvElemBytes;
  return s;
}

TEST(ForwardSharedMemory, Int8DecodeLayout) {
  // bf16 queries over an int8 cache, head_dim 128, 128 keys, two stages: one 16 KiB query tile,
  // two 32 KiB K+V stages, two buffers of K and V converted to bf16 (64 KiB each), their scales,
  // and 2 + 2 · 2 mbarriers.
  ForwardSharedLayout m = layoutForwardSharedMemory(shape(128, 1), 128, 2);
  EXPECT_EQ(m.q, 0);
  EXPECT_EQ(m.stage, 16384);
  EXPECT_EQ(m.stageStride, 32768);
  EXPECT_EQ(m.stageV, 16384);
  EXPECT_EQ(m.conv, 16384 + 2 * 32768);
  EXPECT_EQ(m.nConv, 2);
  EXPECT_EQ(m.convV, 128 * 256);
  EXPECT_EQ(m.convStride, 2 * 128 * 256);
  EXPECT_EQ(m.scales, m.conv + 2 * m.convStride);
  EXPECT_EQ(m.scaleStride, 1024);
  EXPECT_EQ(m.bars, m.scales + 2 * 1024);
  EXPECT_EQ(m.zeros, m.bars); // no zero points, no parked query scales
  EXPECT_EQ(m.fullStage(1), m.bars + 8);
  EXPECT_EQ(m.fullConv(0, 2), m.bars + 16);
  EXPECT_EQ(m.emptyConv(1, 2), m.bars + 40);
  EXPECT_EQ(m.total, (m.bars + 6 * 8 + 127) / 128 * 128);
  EXPECT_EQ(m.bytes(), m.total + 1024);
}

TEST(ForwardSharedMemory, Bf16DecodeReadsTheStages) {
  // bf16 cache: no conversion buffers or scales; an empty barrier per stage and the tail's.
  ForwardSharedLayout m = layoutForwardSharedMemory(shape(128, 2), 128, 2);
  EXPECT_EQ(m.nConv, 0);
  EXPECT_EQ(m.stageStride, 65536);
  EXPECT_EQ(m.conv, m.stage + 2 * 65536);
  EXPECT_EQ(m.bars, m.conv);
  EXPECT_EQ(m.emptyStage(1, 2), m.bars + 8 * 3);
  EXPECT_EQ(m.tail(2), m.bars + 8 * 4);
  EXPECT_EQ(m.total, (m.tail(2) + 8 + 127) / 128 * 128);
}

TEST(ForwardSharedMemory, ZeroPointsFollowTheScales) {
  AttentionShape s = shape(128, 1);
  ForwardSharedLayout plain = layoutForwardSharedMemory(s, 64, 2);
  s.zeroPoints = true;
  ForwardSharedLayout zp = layoutForwardSharedMemory(s, 64, 2);
  EXPECT_EQ(zp.zeros, zp.scales + 2 * zp.scaleStride);
  EXPECT_EQ(zp.bars, plain.bars + 2 * 64 * 4);
}

TEST(ForwardSharedMemory, HalfInt8PrefillWithTheOverlap) {
  // int8 queries reading K from the stages: one-byte query tiles (one per consumer), three V
  // buffers in bf16 only, the consumers' parked query scales, an empty barrier per stage.
  AttentionShape s = shape(128, 1);
  s.int8QK = true;
  s.queryTiles = 2;
  ForwardSharedLayout m = layoutForwardSharedMemory(s, 128, 3, /*kDirect=*/true);
  EXPECT_EQ(m.stage, 2 * 64 * 128);
  EXPECT_EQ(m.nConv, 3);
  EXPECT_EQ(m.convV, 0);
  EXPECT_EQ(m.convStride, 128 * 128 * 2);
  EXPECT_EQ(m.bars, m.qScales + 2 * 128 * 8);
  EXPECT_EQ(m.emptyStage(0, 3), m.bars + 8 * (3 + 6));
  // Without kDirect: K copied in 8 bits beside bf16 V, two buffers, no parked scales.
  ForwardSharedLayout copied = layoutForwardSharedMemory(s, 128, 3);
  EXPECT_EQ(copied.nConv, 2);
  EXPECT_EQ(copied.convV, 128 * 128);
  EXPECT_EQ(copied.bars, copied.qScales);
}

TEST(ForwardSharedMemory, RegionsOrderedAlignedDisjoint) {
  for (int64_t d : {64, 128, 256})
    for (int64_t e : {1, 2})
      for (int64_t n : {32, 64, 128})
        for (int64_t st : {1, 2, 3, 4})
          for (int kind = 0; kind < 4; ++kind) {
            AttentionShape s = shape(d, e);
            s.int8QK = kind == 1 && e == 1;
            s.fp8 = kind == 2 && e == 1;
            s.zeroPoints = kind == 3 && e == 1;
            s.queryTiles = kind == 0 ? 1 : 2;
            s.queryBuffers = kind == 2 ? 2 : 1;
            for (bool kDirect : {false, true}) {
              ForwardSharedLayout m = layoutForwardSharedMemory(s, n, st, kDirect);
              SCOPED_TRACE(testing::Message() << "d " << d << " e " << e << " n " << n << " st "
                                              << st << " kind " << kind << " kDirect "
                                              << kDirect);
              EXPECT_EQ(m.stage % 1024, 0); // TMA's 128-byte swizzle wants 1024-byte stages
              EXPECT_EQ(m.stageStride % 1024, 0);
              EXPECT_GE(m.stageStride, 2 * n * d * e);
              EXPECT_EQ(m.conv, m.stage + st * m.stageStride);
              EXPECT_LE(m.conv + m.nConv * m.convStride, m.scales);
              EXPECT_LE(m.scales + m.nConv * m.scaleStride, m.zeros);
              EXPECT_LE(m.zeros, m.qScales);
              EXPECT_LE(m.qScales, m.bars);
              EXPECT_EQ(m.bars % 8, 0);
              int64_t lastBar = m.nConv ? m.emptyConv(m.nConv - 1, st) : m.fullStage(st - 1);
              EXPECT_LT(lastBar + 8, m.total + 1);
              EXPECT_EQ(m.total % 128, 0);
              EXPECT_EQ(m.bytes(), m.total + 1024);
            }
          }
}

} // namespace
