//===- DecodeReferenceTest.cpp - tests of the host side of attn-bench -----===//
//
// What this file is: unit tests of attn/Reference/DecodeReference.h: exact e4m3 and bf16
// conversions (all 256 codes, ties to even, saturation), the i8 / f8 / bf16 K/V quantizers per
// granularity, seeded inputs, and the fp64 decode reference on cases computed by hand (one key,
// softmax weights, causal visibility, ALiBi, GQA head mapping, empty sequences, chunk merging).
//
//===----------------------------------------------------------------------===//

#include "attn/Reference/DecodeReference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

using namespace attn::ref;

TEST(E4M3, KnownCodes) {
  EXPECT_EQ(e4m3ToFloat(0x00), 0.0f);
  EXPECT_TRUE(std::signbit(e4m3ToFloat(0x80)));
  EXPECT_EQ(e4m3ToFloat(0x38), 1.0f);
  EXPECT_EQ(e4m3ToFloat(0x7E), 448.0f);
  EXPECT_EQ(e4m3ToFloat(0xFE), -448.0f);
  EXPECT_EQ(e4m3ToFloat(0x08), std::ldexp(1.0f, -6)); // smallest normal
  EXPECT_EQ(e4m3ToFloat(0x01), std::ldexp(1.0f, -9)); // smallest subnormal
  EXPECT_EQ(e4m3ToFloat(0x07), 7 * std::ldexp(1.0f, -9));
  EXPECT_EQ(e4m3ToFloat(0x3C), 1.5f);
  EXPECT_TRUE(std::isnan(e4m3ToFloat(0x7F)));
  EXPECT_TRUE(std::isnan(e4m3ToFloat(0xFF)));
  EXPECT_EQ(floatToE4M3(1.0f), 0x38);
  EXPECT_EQ(floatToE4M3(-2.0f), 0xC0);
  EXPECT_EQ(floatToE4M3(0.0f), 0x00);
  EXPECT_EQ(floatToE4M3(-0.0f), 0x80);
}

TEST(E4M3, ExhaustiveRoundTrip) {
  for (int c = 0; c < 256; ++c) {
    const uint8_t code = static_cast<uint8_t>(c);
    const float v = e4m3ToFloat(code);
    if ((c & 0x7F) == 0x7F) {
      EXPECT_TRUE(std::isnan(v)) << c;
      EXPECT_EQ(floatToE4M3(v) & 0x7F, 0x7F) << c;
      continue;
    }
    EXPECT_EQ(floatToE4M3(v), code) << "code " << c << " value " << v;
  }
  EXPECT_EQ(floatToE4M3(std::numeric_limits<float>::quiet_NaN()), 0x7F);
  EXPECT_EQ(floatToE4M3(-std::numeric_limits<float>::quiet_NaN()), 0xFF);
}

TEST(E4M3, TiesToEvenAndNearest) {
  // Every midpoint between neighbouring finite codes rounds to the code with an even mantissa;
  // a hair either side rounds to the nearer one.
  for (int c = 0; c < 0x7E; ++c) {
    const float lo = e4m3ToFloat(static_cast<uint8_t>(c)),
                hi = e4m3ToFloat(static_cast<uint8_t>(c + 1));
    const float mid = 0.5f * (lo + hi);
    const uint8_t even = (c & 1) ? static_cast<uint8_t>(c + 1) : static_cast<uint8_t>(c);
    EXPECT_EQ(floatToE4M3(mid), even) << "between codes " << c << " and " << c + 1;
    EXPECT_EQ(floatToE4M3(-mid), even | 0x80) << c;
    EXPECT_EQ(floatToE4M3(std::nextafter(mid, 0.0f)), c) << c;
    EXPECT_EQ(floatToE4M3(std::nextafter(mid, 1000.0f)), c + 1) << c;
  }
  // Below half the smallest subnormal: zero; exactly half: ties to even (zero).
  EXPECT_EQ(floatToE4M3(std::ldexp(1.0f, -11)), 0x00);
  EXPECT_EQ(floatToE4M3(std::ldexp(1.0f, -10)), 0x00);
  EXPECT_EQ(floatToE4M3(std::ldexp(1.5f, -10)), 0x01);
  // Brute force: the result is a nearest code for a sweep of magnitudes.
  for (float x = 1e-4f; x < 448.0f; x *= 1.0137f) {
    const float got = e4m3ToFloat(floatToE4M3(x));
    for (int c = 0; c < 0x7F; ++c)
      ASSERT_LE(std::fabs(got - x), std::fabs(e4m3ToFloat(static_cast<uint8_t>(c)) - x)) << x;
  }
}

TEST(E4M3, Saturates) {
  for (float x : {448.0f, 449.0f, 464.0f, 480.0f, 1e6f, 3e38f, INFINITY}) {
    EXPECT_EQ(floatToE4M3(x), 0x7E) << x;
    EXPECT_EQ(floatToE4M3(-x), 0xFE) << x;
  }
  EXPECT_EQ(floatToE4M3(447.0f), 0x7E); // nearest is 448
  EXPECT_EQ(floatToE4M3(420.0f), 0x7D); // 416 (0x7D) is nearer than 448
}

TEST(BF16, RoundsToNearestEven) {
  auto bits = [](uint32_t x) {
    float f;
    std::memcpy(&f, &x, 4);
    return f;
  };
  EXPECT_EQ(floatToBf16(1.0f), 0x3F80);
  EXPECT_EQ(floatToBf16(bits(0x3F808000)), 0x3F80); // tie, even stays
  EXPECT_EQ(floatToBf16(bits(0x3F818000)), 0x3F82); // tie, odd rounds up
  EXPECT_EQ(floatToBf16(bits(0x3F808001)), 0x3F81);
  EXPECT_EQ(floatToBf16(bits(0x7F7FFFFF)), 0x7F80); // rounds to inf
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(NAN))));
  EXPECT_EQ(bf16ToFloat(0xC040), -3.0f);
  EXPECT_EQ(roundToBf16(1.00390625f), 1.0f);
}

TEST(I8, QuantizeOneValue) {
  EXPECT_EQ(quantizeI8(2.5f, 1.0f), 3); // half away from zero
  EXPECT_EQ(quantizeI8(-2.5f, 1.0f), -3);
  EXPECT_EQ(quantizeI8(0.49f, 1.0f), 0);
  EXPECT_EQ(quantizeI8(200.0f, 1.0f), 127);
  EXPECT_EQ(quantizeI8(-200.0f, 1.0f), -127); // symmetric: never -128
  EXPECT_EQ(quantizeI8(1.0f, 0.5f), 2);
  EXPECT_EQ(groupScale(0.0f, KvType::I8), kMinScale);
  EXPECT_EQ(groupScale(127.0f, KvType::I8), 1.0f);
  EXPECT_EQ(groupScale(448.0f, KvType::F8E4M3), 1.0f);
}

TEST(Quantize, PerTokenHeadI8) {
  // B=1, S=2, H=2, D=3.
  const KvShape s{1, 2, 2, 3};
  const float x[] = {1.0f,           -2.0f, 0.5f,  /*h1*/ 0.0f,   0.0f,   0.0f,
                     /*t1 h0*/ 3.0f, 1.5f,  -1.0f, /*h1*/ -0.25f, 0.125f, 0.0f};
  QuantizedKv q;
  quantizeKv(x, s, KvType::I8, Granularity::PerTokenHead, q, 2);
  ASSERT_EQ(q.scales.size(), 4u);
  EXPECT_FLOAT_EQ(q.scales[0], 2.0f / 127);
  EXPECT_EQ(q.scales[1], kMinScale); // all-zero group
  EXPECT_FLOAT_EQ(q.scales[2], 3.0f / 127);
  EXPECT_FLOAT_EQ(q.scales[3], 0.25f / 127);
  EXPECT_EQ(static_cast<int8_t>(q.codes[1]), -127);
  EXPECT_EQ(static_cast<int8_t>(q.codes[0]), quantizeI8(1.0f, q.scales[0]));
  for (int i = 3; i < 6; ++i)
    EXPECT_EQ(q.codes[i], 0);
  EXPECT_EQ(static_cast<int8_t>(q.codes[6]), 127);
  EXPECT_EQ(static_cast<int8_t>(q.codes[9]), -127);
  std::vector<float> back(12);
  dequantizeKv(q, s, back.data(), 2);
  for (int i = 0; i < 12; ++i)
    EXPECT_NEAR(back[i], x[i], 0.5f * q.scales[size_t(i / 3)] * 1.0001f) << i;
}

TEST(Quantize, GranularitiesShareScalesAsDocumented) {
  // B=2, S=2, H=2, D=2, values chosen so that each group has a distinct amax.
  const KvShape s{2, 2, 2, 2};
  std::vector<float> x(s.elements());
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = (i % 2 ? -1.0f : 1.0f) * float(i + 1);
  QuantizedKv q;
  quantizeKv(x.data(), s, KvType::I8, Granularity::PerToken, q);
  ASSERT_EQ(q.scales.size(), 4u); // [B, S]
  EXPECT_FLOAT_EQ(q.scales[0], 4.0f / 127);
  EXPECT_FLOAT_EQ(q.scales[3], 16.0f / 127);
  quantizeKv(x.data(), s, KvType::I8, Granularity::PerHead, q);
  ASSERT_EQ(q.scales.size(), 2u); // [H]
  EXPECT_FLOAT_EQ(q.scales[0], 14.0f / 127);
  EXPECT_FLOAT_EQ(q.scales[1], 16.0f / 127);
  quantizeKv(x.data(), s, KvType::I8, Granularity::PerTensor, q);
  ASSERT_EQ(q.scales.size(), 1u);
  EXPECT_FLOAT_EQ(q.scales[0], 16.0f / 127);
  EXPECT_EQ(static_cast<int8_t>(q.codes[15]), -127);
  EXPECT_EQ(scaleIndex(s, Granularity::PerTokenHead, 1, 1, 1), 7u);
  EXPECT_EQ(scaleIndex(s, Granularity::PerToken, 1, 0, 1), 2u);
  EXPECT_EQ(scaleIndex(s, Granularity::PerHead, 1, 0, 1), 1u);
  EXPECT_EQ(scaleCount(s, Granularity::None), 0u);
}

TEST(Quantize, PerBlockSharesAScalePerBlockOfTokensOfAHead) {
  // B=2, S=5, H=2, D=2 in blocks of 2 tokens: [B, ceil(5/2) = 3, H] scales, the last block short.
  KvShape s{2, 5, 2, 2};
  s.blockRows = 2;
  std::vector<float> x(s.elements());
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = float(i + 1);
  QuantizedKv q;
  quantizeKv(x.data(), s, KvType::F8E4M3, Granularity::PerBlock, q);
  ASSERT_EQ(scaleCount(s, Granularity::PerBlock), 12u);
  ASSERT_EQ(q.scales.size(), 12u);
  // Element ((b·S + t)·H + h)·D + d holds its index + 1. Block 0 of head 1 (batch 0): tokens 0
  // and 1, elements 2, 3, 6, 7: amax 8.
  EXPECT_EQ(scaleIndex(s, Granularity::PerBlock, 0, 1, 1), 1u);
  EXPECT_FLOAT_EQ(q.scales[1], 8.0f / 448);
  // Block 2 of head 0 (batch 1): token 4 alone, elements 36 and 37: amax 38.
  EXPECT_EQ(scaleIndex(s, Granularity::PerBlock, 1, 4, 0), 10u);
  EXPECT_FLOAT_EQ(q.scales[10], 38.0f / 448);
  std::vector<float> back(x.size());
  dequantizeKv(q, s, back.data());
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_NEAR(back[i], x[i], x[i] / 16 + 1e-6f) << i; // e4m3: 3 mantissa bits
  Granularity g;
  ASSERT_TRUE(parseGranularity("per_block", g));
  EXPECT_EQ(g, Granularity::PerBlock);
  EXPECT_STREQ(granularityName(g), "per_block");
}

TEST(Quantize, E4M3AndBf16) {
  const KvShape s{1, 1, 1, 4};
  const float x[] = {2.0f, -1.0f, 0.01f, 0.5f};
  QuantizedKv q;
  quantizeKv(x, s, KvType::F8E4M3, Granularity::PerTokenHead, q);
  ASSERT_EQ(q.scales.size(), 1u);
  EXPECT_FLOAT_EQ(q.scales[0], 2.0f / 448);
  EXPECT_EQ(q.codes[0], 0x7E);
  EXPECT_EQ(q.codes[1], floatToE4M3(-1.0f / q.scales[0]));
  std::vector<float> back(4);
  dequantizeKv(q, s, back.data());
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(back[i], x[i], std::fabs(x[i]) / 16 + 1e-6f) << i; // 3 mantissa bits
  quantizeKv(x, s, KvType::BF16, Granularity::None, q);
  EXPECT_TRUE(q.scales.empty());
  ASSERT_EQ(q.codes.size(), 8u);
  EXPECT_EQ(q.codes[0] | (q.codes[1] << 8), 0x4000); // 2.0, little-endian
  dequantizeKv(q, s, back.data());
  EXPECT_EQ(back[2], roundToBf16(0.01f));
}

TEST(Quantize, AsymmetricI8AndU8) {
  // One-sided data: [0.5, 3] per row, where asymmetric codes use the whole range.
  const KvShape s{1, 2, 1, 4};
  const float x[] = {0.5f, 1.0f, 2.0f, 3.0f, 3.0f, 2.5f, 0.5f, 1.5f};
  for (bool u8 : {false, true}) {
    QuantizedKv q;
    quantizeKv(x, s, KvType::I8, Granularity::PerTokenHead, q, 1, /*asymmetric=*/true, u8);
    ASSERT_EQ(q.scales.size(), 2u);
    ASSERT_EQ(q.zeros.size(), 2u);
    EXPECT_EQ(q.unsignedCodes, u8);
    EXPECT_FLOAT_EQ(q.scales[0], 3.0f / 255); // min 0 (zero kept representable), max 3
    // z = q_min − min / s: the code of 0 is q_min; the code of 3 is q_max.
    EXPECT_EQ(q.zeros[0], u8 ? 0 : 0x80);
    EXPECT_EQ(q.codes[3], u8 ? 255 : 127);
    std::vector<float> back(8);
    dequantizeKv(q, s, back.data());
    for (int i = 0; i < 8; ++i)
      EXPECT_NEAR(back[i], x[i], q.scales[size_t(i / 4)]) << i; // within one step
  }
}

TEST(Inputs, SeededAndIndependentOfThreads) {
  std::vector<float> a(100003), b(100003), c(100003);
  fillGaussian(a.data(), a.size(), 7, 2, 1);
  fillGaussian(b.data(), b.size(), 7, 2, 5);
  fillGaussian(c.data(), c.size(), 7, 3, 5);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  double mean = 0, var = 0;
  for (float x : a)
    mean += x;
  mean /= double(a.size());
  for (float x : a)
    var += (x - mean) * (x - mean);
  var /= double(a.size());
  EXPECT_NEAR(mean, 0.0, 0.02);
  EXPECT_NEAR(var, 1.0, 0.03);
  EXPECT_EQ(outlierChannels(128), (std::vector<int64_t>{3, 35, 67, 99}));
  EXPECT_EQ(outlierChannels(4), (std::vector<int64_t>{3, 0, 1, 2}));
  std::vector<float> slopes = alibiSlopes(8);
  EXPECT_FLOAT_EQ(slopes[0], 0.5f);
  EXPECT_FLOAT_EQ(slopes[7], 1.0f / 256);
}

TEST(Inputs, SeqLens) {
  EXPECT_EQ(makeSeqLens(3, 10, SeqLenMode::Full, 1), (std::vector<int32_t>{10, 10, 10}));
  std::vector<int32_t> r = makeSeqLens(50, 10, SeqLenMode::Random, 1);
  EXPECT_EQ(r[0], 10);
  bool varied = false;
  for (int32_t l : r) {
    EXPECT_GE(l, 0);
    EXPECT_LE(l, 10);
    varied |= l != 10;
  }
  EXPECT_TRUE(varied);
  EXPECT_EQ(r, makeSeqLens(50, 10, SeqLenMode::Random, 1));
  std::vector<int32_t> g = makeSeqLens(6, 10, SeqLenMode::Ragged, 3);
  EXPECT_EQ(g[0], 10);
  EXPECT_EQ(g[1], 0);
  EXPECT_EQ(g[2], 1);
  EXPECT_EQ(g[3], 9);
  EXPECT_EQ(makeSeqLens(4, 0, SeqLenMode::Ragged, 3), (std::vector<int32_t>{0, 0, 0, 0}));
}

namespace {
DecodeProblem problem(int64_t batch, int64_t qLen, int64_t hq, int64_t hkv, int64_t d,
                      int64_t kvLen) {
  DecodeProblem p;
  p.batch = batch;
  p.qLen = qLen;
  p.qHeads = hq;
  p.kvHeads = hkv;
  p.headDim = d;
  p.kvLen = kvLen;
  return p;
}
} // namespace

TEST(Reference, OneKeyGivesItsValue) {
  DecodeProblem p = problem(1, 1, 2, 1, 4, 1);
  const float q[] = {1, 2, 3, 4, -1, 0, 5, 2};
  const float k[] = {0.5f, 0.25f, -1, 2};
  const float v[] = {3, -1, 0.5f, 7};
  float out[8];
  decodeReference(p, q, k, v, nullptr, nullptr, out);
  for (int h = 0; h < 2; ++h)
    for (int d = 0; d < 4; ++d)
      EXPECT_EQ(out[h * 4 + d], v[d]);
}

TEST(Reference, SoftmaxWeightsByHand) {
  // q·k = 0 and ln 3 (scale 1): weights 1/4 and 3/4.
  DecodeProblem p = problem(1, 1, 1, 1, 2, 2);
  const float q[] = {1, 0};
  const float k[] = {0, 0, std::log(3.0f), 0};
  const float v[] = {4, 8, 0, -4};
  float out[2];
  decodeReference(p, q, k, v, nullptr, nullptr, out);
  const double e = std::exp(double(std::log(3.0f)));
  EXPECT_NEAR(out[0], 4.0 / (1 + e), 1e-6);
  EXPECT_NEAR(out[1], (8.0 - 4.0 * e) / (1 + e), 1e-6);
  // The softmax scale multiplies q·k.
  p.softmaxScale = 0.0;
  decodeReference(p, q, k, v, nullptr, nullptr, out);
  EXPECT_FLOAT_EQ(out[0], 2.0f);
  EXPECT_FLOAT_EQ(out[1], 2.0f);
}

TEST(Reference, CausalVisibilityAndEmpty) {
  // Sq = 2 queries over L = 2 keys: query 0 sits at position 0 and sees only key 0.
  DecodeProblem p = problem(1, 2, 1, 1, 1, 3);
  p.causal = true;
  p.softmaxScale = 0; // uniform weights over visible keys
  const float q[] = {1, 1};
  const float k[] = {1, 1, 1};
  const float v[] = {2, 4, 100}; // key 2 lies beyond seq_lens
  const int32_t lens[] = {2};
  float out[2];
  decodeReference(p, q, k, v, lens, nullptr, out);
  EXPECT_FLOAT_EQ(out[0], 2.0f);
  EXPECT_FLOAT_EQ(out[1], 3.0f);
  // L = 1 < Sq: query 0 sits at position -1 and sees nothing; query 1 sees key 0.
  const int32_t one[] = {1};
  decodeReference(p, q, k, v, one, nullptr, out);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_FLOAT_EQ(out[1], 2.0f);
  // Empty sequence: zeros, causal or not.
  const int32_t none[] = {0};
  p.causal = false;
  decodeReference(p, q, k, v, none, nullptr, out);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[1], 0.0f);
  // Not causal: every query sees all L keys.
  decodeReference(p, q, k, v, lens, nullptr, out);
  EXPECT_FLOAT_EQ(out[0], 3.0f);
  EXPECT_FLOAT_EQ(out[1], 3.0f);
}

TEST(Reference, AlibiAndHeadMapping) {
  // 2 query heads over 1 KV head, zero scores: only the ALiBi bias differs. Query at position 1:
  // key 0 gets -slope, key 1 gets 0.
  DecodeProblem p = problem(1, 1, 2, 1, 1, 2);
  p.alibi = true;
  const float q[] = {0, 0};
  const float k[] = {0, 0};
  const float v[] = {1, 0};
  const float slopes[] = {0.5f, 2.0f};
  float out[2];
  decodeReference(p, q, k, v, nullptr, slopes, out);
  EXPECT_NEAR(out[0], std::exp(-0.5) / (std::exp(-0.5) + 1), 1e-7);
  EXPECT_NEAR(out[1], std::exp(-2.0) / (std::exp(-2.0) + 1), 1e-7);
  // GQA: query heads 0,1 read KV head 0 and heads 2,3 read KV head 1.
  DecodeProblem g = problem(1, 1, 4, 2, 1, 1);
  const float q4[] = {1, 1, 1, 1};
  const float k2[] = {1, 1};
  const float v2[] = {10, 20};
  float out4[4];
  decodeReference(g, q4, k2, v2, nullptr, nullptr, out4);
  EXPECT_EQ(out4[0], 10.0f);
  EXPECT_EQ(out4[1], 10.0f);
  EXPECT_EQ(out4[2], 20.0f);
  EXPECT_EQ(out4[3], 20.0f);
}

TEST(Reference, SinksAndLogSumExp) {
  // q·k = 0 and ln 3 (scale 1) with a sink logit of ln 2 for head 0 and none for head 1 (−inf):
  // head 0's denominator is 1 + 3 + 2, head 1's 1 + 3.
  DecodeProblem p = problem(1, 1, 2, 1, 2, 2);
  const float q[] = {1, 0, 1, 0};
  const float k[] = {0, 0, std::log(3.0f), 0};
  const float v[] = {4, 8, 0, -4};
  const float sinks[] = {std::log(2.0f), -INFINITY};
  float out[4], lse[2];
  DecodeExtras extras;
  extras.sinks = sinks;
  extras.lse = lse;
  decodeReference(p, q, k, v, nullptr, nullptr, out, 1, extras);
  EXPECT_NEAR(out[0], 4.0 / 6, 1e-6);
  EXPECT_NEAR(out[1], (8.0 - 12.0) / 6, 1e-6);
  EXPECT_NEAR(lse[0], std::log(6.0), 1e-6);
  EXPECT_NEAR(out[2], 4.0 / 4, 1e-6);
  EXPECT_NEAR(lse[1], std::log(4.0), 1e-6);
  // No visible key: O is 0 and the log-sum-exp is the sink's logit (−inf without one).
  const int32_t none[] = {0};
  decodeReference(p, q, k, v, none, nullptr, out, 1, extras);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_NEAR(lse[0], std::log(2.0), 1e-6);
  EXPECT_TRUE(std::isinf(lse[1]) && lse[1] < 0);
}

TEST(Reference, SoftcapBoundsTheLogits) {
  // q·k = 0 and 4 (scale 1), softcap 2: logits 0 and 2·tanh(2).
  DecodeProblem p = problem(1, 1, 1, 1, 1, 2);
  p.softcap = 2.0;
  const float q[] = {1};
  const float k[] = {0, 4};
  const float v[] = {0, 1};
  float out[1];
  decodeReference(p, q, k, v, nullptr, nullptr, out);
  const double e = std::exp(2.0 * std::tanh(2.0));
  EXPECT_NEAR(out[0], e / (1 + e), 1e-6);
}

TEST(Reference, WindowMasksBothSides) {
  // Keys 0..4 with values 0..4 and equal logits; the query at position 4 (one query, length 5).
  DecodeProblem p = problem(1, 1, 1, 1, 1, 5);
  const float q[] = {0};
  const float k[] = {1, 1, 1, 1, 1};
  const float v[] = {0, 1, 2, 3, 4};
  float out[1];
  p.windowLeft = 1; // keys 3 and 4
  decodeReference(p, q, k, v, nullptr, nullptr, out);
  EXPECT_NEAR(out[0], 3.5, 1e-6);
  p.windowLeft = 0; // key 4 alone
  decodeReference(p, q, k, v, nullptr, nullptr, out);
  EXPECT_NEAR(out[0], 4.0, 1e-6);
  // Two queries at positions 3 and 4, right bound 0 and left 2: keys 1..3 and 2..4.
  DecodeProblem p2 = problem(1, 2, 1, 1, 1, 5);
  p2.windowLeft = 2;
  p2.windowRight = 0;
  const float q2[] = {0, 0};
  float out2[2];
  decodeReference(p2, q2, k, v, nullptr, nullptr, out2);
  EXPECT_NEAR(out2[0], 2.0, 1e-6);
  EXPECT_NEAR(out2[1], 3.0, 1e-6);
  // A length of 1 with the same window: the query at position −1 sees nothing (0), the one at
  // position 0 sees key 0.
  const int32_t one[] = {1};
  decodeReference(p2, q2, k, v, one, nullptr, out2);
  EXPECT_EQ(out2[0], 0.0f);
  EXPECT_NEAR(out2[1], 0.0, 1e-6);
}

TEST(Reference, ChunkedMatchesSinglePass) {
  // Long enough for several key chunks on several threads; compared with a plain loop.
  const int64_t B = 2, Sq = 2, Hq = 4, Hkv = 2, D = 8, S = 5000;
  DecodeProblem p = problem(B, Sq, Hq, Hkv, D, S);
  p.causal = true;
  p.alibi = true;
  p.softmaxScale = 0.35;
  std::vector<float> q(size_t(B * Sq * Hq * D)), k(size_t(B * S * Hkv * D)), v(k.size());
  fillGaussian(q.data(), q.size(), 1, 1);
  fillGaussian(k.data(), k.size(), 1, 2);
  fillGaussian(v.data(), v.size(), 1, 3);
  std::vector<int32_t> lens = {5000, 3111};
  std::vector<float> slopes = alibiSlopes(Hq), out(q.size()), want(q.size());
  decodeReference(p, q.data(), k.data(), v.data(), lens.data(), slopes.data(), out.data(), 7);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < Sq; ++i)
      for (int64_t h = 0; h < Hq; ++h) {
        const int64_t g = h / (Hq / Hkv), L = lens[size_t(b)], pos = L - Sq + i;
        const float *qr = &q[size_t(((b * Sq + i) * Hq + h) * D)];
        std::vector<double> s;
        double m = -INFINITY;
        for (int64_t t = 0; t <= pos && t < L; ++t) {
          const float *kt = &k[size_t(((b * S + t) * Hkv + g) * D)];
          double dot = 0;
          for (int64_t d = 0; d < D; ++d)
            dot += double(qr[d]) * double(kt[d]);
          s.push_back(p.softmaxScale * dot - double(slopes[size_t(h)]) * double(pos - t));
          m = std::max(m, s.back());
        }
        double l = 0;
        std::vector<double> o(size_t(D), 0.0);
        for (size_t t = 0; t < s.size(); ++t) {
          double e = std::exp(s[t] - m);
          l += e;
          for (int64_t d = 0; d < D; ++d)
            o[size_t(d)] += e * double(v[size_t(((b * S + int64_t(t)) * Hkv + g) * D + d)]);
        }
        for (int64_t d = 0; d < D; ++d)
          want[size_t(((b * Sq + i) * Hq + h) * D + d)] = float(o[size_t(d)] / l);
      }
  size_t nan = 99;
  EXPECT_LT(relativeError(out.data(), want.data(), out.size(), &nan), 1e-6);
  EXPECT_EQ(nan, 0u);
}

TEST(Reference, HadamardRowsIsTheNormalizedSylvesterMatrix) {
  // Row r of the identity becomes row r of H: H[r][c] = (−1)^popcount(r & c) / √8.
  const int64_t d = 8;
  std::vector<float> x(size_t(d * d), 0.0f);
  for (int64_t r = 0; r < d; ++r)
    x[size_t(r * d + r)] = 1.0f;
  hadamardRows(x.data(), size_t(d), d);
  for (int64_t r = 0; r < d; ++r)
    for (int64_t c = 0; c < d; ++c)
      EXPECT_FLOAT_EQ(x[size_t(r * d + c)],
                      (__builtin_popcountll(uint64_t(r & c)) % 2 ? -1.0f : 1.0f) / std::sqrt(8.0f))
          << r << ", " << c;
  // An involution that keeps norms and dot products (Q·Kᵀ is unchanged by rotating both).
  std::vector<float> a(128), b(128);
  fillGaussian(a.data(), a.size(), 7, 1);
  fillGaussian(b.data(), b.size(), 7, 2);
  std::vector<float> ra = a, rb = b;
  hadamardRows(ra.data(), 1, 128);
  hadamardRows(rb.data(), 1, 128);
  double dot = 0, rdot = 0;
  for (size_t i = 0; i < 128; ++i) {
    dot += double(a[i]) * b[i];
    rdot += double(ra[i]) * rb[i];
  }
  EXPECT_NEAR(rdot, dot, 1e-4);
  hadamardRows(ra.data(), 1, 128);
  for (size_t i = 0; i < 128; ++i)
    EXPECT_NEAR(ra[i], a[i], 1e-5);
}

TEST(Reference, RelativeErrorCountsNaN) {
  const float want[] = {3, 4, 1};
  const float got[] = {3, 4, NAN};
  size_t nan = 0;
  EXPECT_EQ(relativeError(got, want, 3, &nan), 0.0);
  EXPECT_EQ(nan, 1u);
  const float off[] = {0, 0, 1};
  EXPECT_NEAR(relativeError(off, want, 3), 5.0 / std::sqrt(26.0), 1e-12);
  const float zero[] = {0, 0};
  const float small[] = {0, 1e-3f};
  EXPECT_NEAR(relativeError(small, zero, 2), 1e-3, 1e-9); // absolute when the reference is 0
}

TEST(Reference, PoisonPastLengths) {
  KvShape s{2, 3, 1, 2}; // batch 2, 3 slots, 1 head, dim 2
  std::vector<int32_t> lens = {1, 3};
  QuantizedKv bf;
  bf.type = KvType::BF16;
  bf.codes.assign(s.elements() * 2, 0);
  poisonPastLengths(bf, s, lens);
  // Batch 0: slots 1 and 2 become bf16 NaN (0x7FC0); slot 0 and all of batch 1 stay.
  for (size_t slot = 0; slot < 6; ++slot)
    for (size_t d = 0; d < 2; ++d) {
      size_t i = (slot * 2 + d) * 2;
      bool poisoned = slot == 1 || slot == 2;
      EXPECT_EQ(bf.codes[i], poisoned ? 0xC0 : 0) << slot;
      EXPECT_EQ(bf.codes[i + 1], poisoned ? 0x7F : 0) << slot;
      if (poisoned)
        EXPECT_TRUE(std::isnan(bf16ToFloat(uint16_t(bf.codes[i] | bf.codes[i + 1] << 8))));
    }
  QuantizedKv f8;
  f8.type = KvType::F8E4M3;
  f8.codes.assign(s.elements(), 0);
  poisonPastLengths(f8, s, {0, 2});
  std::vector<uint8_t> want = {0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0, 0, 0, 0, 0x7F, 0x7F};
  EXPECT_EQ(f8.codes, want);
  EXPECT_TRUE(std::isnan(e4m3ToFloat(0x7F)));
  QuantizedKv i8;
  i8.codes.assign(s.elements(), 5);
  poisonPastLengths(i8, s, {0, 0}); // int8 has no NaN: unchanged
  EXPECT_EQ(i8.codes, std::vector<uint8_t>(s.elements(), 5));
}
