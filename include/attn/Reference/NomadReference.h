//===- NomadReference.h - plain C++ reference of the NoMAD kernels -*- C++ -*-===//
//
// What this file is: a header-only, dependency-free C++ reference of what the attn.pq.* ops
// compute, written loop by loop in the same floating-point order as the lowering, so that tests
// can demand exact equality of codes, LUT entries and u16 accumulators (compile with
// -ffp-contract=off). Also the fp32/fp64 attention references (quantized scores → softmax → P·V,
// and dense q·k attention) the tests and scripts/bench-cpu compare against.
// Layouts are those of the ops (docs/generated/AttnDialect.md), row-major.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_REFERENCE_NOMADREFERENCE_H
#define ATTN_REFERENCE_NOMADREFERENCE_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace attn::ref {

/// IEEE binary16 bits of `f`, rounded to nearest even (the f16 values of attn.pq.attention);
/// portable, no _Float16 needed.
inline uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000, mant = x & 0x7fffff;
  const int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  if (exp >= 31)
    return static_cast<uint16_t>(sign | 0x7c00);
  uint32_t m = mant, shift = 13, base = 0;
  if (exp <= 0) { // subnormal half
    if (exp < -10)
      return static_cast<uint16_t>(sign);
    m |= 0x800000;
    shift = static_cast<uint32_t>(14 - exp);
  } else {
    base = static_cast<uint32_t>(exp) << 10;
  }
  uint32_t h = base + (m >> shift);
  const uint32_t rem = m & ((1u << shift) - 1), halfway = 1u << (shift - 1);
  if (rem > halfway || (rem == halfway && (h & 1)))
    ++h;
  return static_cast<uint16_t>(sign | h);
}
/// The value of IEEE binary16 bits.
inline float halfToFloat(uint16_t h) {
  const int exp = (h >> 10) & 31, mant = h & 1023;
  float v = exp == 0 ? std::ldexp(static_cast<float>(mant), -24)
            : exp == 31 ? INFINITY
                        : std::ldexp(static_cast<float>(1024 + mant), exp - 25);
  return (h & 0x8000) ? -v : v;
}

struct PQShape {
  int64_t headDim, dsub, centroids;
  int64_t numSub() const { return headDim / dsub; }
  /// Bytes of one sub-quantizer row of a 32-key code block.
  int64_t rowBytes() const { return centroids == 16 ? 16 : 32; }
};

/// lut [Hq][S][C] and params [Hq][2] = (step, bias) from query [Hq][D], codebooks [H][S][C][dsub].
inline void buildLUT(const PQShape &p, const float *query, int64_t hq, const float *codebooks,
                     int64_t h, uint8_t *lut, float *params) {
  const int64_t s = p.numSub(), c = p.centroids, ratio = hq / h;
  std::vector<float> dots(s * c), mins(s);
  for (int64_t q = 0; q < hq; ++q) {
    const float *cb = codebooks + (q / ratio) * s * c * p.dsub;
    float range = 0.f, bias = 0.f;
    for (int64_t i = 0; i < s; ++i) {
      float mn = std::numeric_limits<float>::infinity(), mx = -mn;
      for (int64_t k = 0; k < c; ++k) {
        float dot = 0.f;
        for (int64_t j = 0; j < p.dsub; ++j)
          dot = dot + query[q * p.headDim + i * p.dsub + j] * cb[(i * c + k) * p.dsub + j];
        dots[i * c + k] = dot;
        mn = std::min(mn, dot);
        mx = std::max(mx, dot);
      }
      mins[i] = mn;
      range = std::max(range, mx - mn);
      bias = bias + mn;
    }
    const float step = range / 255.f, inv = range > 0.f ? 255.f / range : 0.f;
    params[2 * q] = step;
    params[2 * q + 1] = bias;
    for (int64_t i = 0; i < s; ++i)
      for (int64_t k = 0; k < c; ++k) {
        float r = std::floor((dots[i * c + k] - mins[i]) * inv + 0.5f);
        r = std::min(r, 255.f);
        lut[(q * s + i) * c + k] = static_cast<uint8_t>(static_cast<uint32_t>(r));
      }
  }
}

/// Code of key t (cache position) for sub-quantizer i of head hh; codes [H][NB][S][R].
inline int codeAt(const PQShape &p, const uint8_t *codes, int64_t nb, int64_t hh, int64_t t,
                  int64_t i) {
  const int64_t r = p.rowBytes(), blk = t / 32, j = t % 32;
  const uint8_t *row = codes + ((hh * nb + blk) * p.numSub() + i) * r;
  if (p.centroids != 16)
    return row[j];
  return j < 16 ? (row[j] & 15) : (row[j - 16] >> 4);
}

/// Writes the codes of keys [T][H][D] at positions offset .. offset + T − 1 (those inside the
/// cache); nearest centroid by L2, lowest index on ties.
inline void encode(const PQShape &p, const float *keys, int64_t t, int64_t h,
                   const float *codebooks, int64_t offset, uint8_t *codes, int64_t nb) {
  const int64_t s = p.numSub(), c = p.centroids, r = p.rowBytes();
  for (int64_t i = 0; i < t; ++i) {
    const int64_t pos = offset + i;
    if (pos < 0 || pos >= 32 * nb)
      continue;
    const int64_t blk = pos / 32, j = pos % 32;
    for (int64_t hh = 0; hh < h; ++hh)
      for (int64_t sub = 0; sub < s; ++sub) {
        float best = std::numeric_limits<float>::infinity();
        int64_t bestK = 0;
        for (int64_t k = 0; k < c; ++k) {
          float d = 0.f;
          for (int64_t jj = 0; jj < p.dsub; ++jj) {
            float diff = keys[(i * h + hh) * p.headDim + sub * p.dsub + jj] -
                         codebooks[((hh * s + sub) * c + k) * p.dsub + jj];
            d = d + diff * diff;
          }
          if (d < best) {
            best = d;
            bestK = k;
          }
        }
        uint8_t *row = codes + ((hh * nb + blk) * s + sub) * r;
        if (c != 16)
          row[j] = static_cast<uint8_t>(bestK);
        else if (j < 16)
          row[j] = static_cast<uint8_t>((row[j] & 0xF0) | bestK);
        else
          row[j - 16] = static_cast<uint8_t>((row[j - 16] & 0x0F) | (bestK << 4));
      }
  }
}

/// u16 accumulators [Hq][cap] of keys 0 .. len − 1.
inline void scoresU16(const PQShape &p, const uint8_t *lut, int64_t hq, const uint8_t *codes,
                      int64_t h, int64_t nb, int64_t len, uint16_t *acc, int64_t cap) {
  const int64_t s = p.numSub(), c = p.centroids, ratio = hq / h;
  for (int64_t q = 0; q < hq; ++q)
    for (int64_t t = 0; t < len; ++t) {
      uint32_t sum = 0;
      for (int64_t i = 0; i < s; ++i)
        sum += lut[(q * s + i) * c + codeAt(p, codes, nb, q / ratio, t, i)];
      acc[q * cap + t] = static_cast<uint16_t>(sum);
    }
}

/// The op's f32 scores: step · acc + bias, in that order of operations.
inline float dequantize(uint16_t acc, const float *params) {
  return static_cast<float>(acc) * params[0] + params[1];
}

/// softmax(scale · scores[0..len)) · values, in double; values [T][H][Dv] as float.
inline void attendFromScores(const float *scores, int64_t len, float scale, const float *values,
                             int64_t h, int64_t hh, int64_t dv, float *out) {
  std::fill(out, out + dv, 0.f);
  if (len == 0)
    return;
  double mx = -INFINITY, sum = 0;
  for (int64_t t = 0; t < len; ++t)
    mx = std::max(mx, static_cast<double>(scores[t]));
  std::vector<double> acc(dv, 0.0);
  for (int64_t t = 0; t < len; ++t) {
    double pr = std::exp(scale * (scores[t] - mx));
    sum += pr;
    for (int64_t d = 0; d < dv; ++d)
      acc[d] += pr * values[(t * h + hh) * dv + d];
  }
  for (int64_t d = 0; d < dv; ++d)
    out[d] = static_cast<float>(acc[d] / sum);
}

/// Dense (unquantized) attention of one query head over keys [T][H][D], in double.
inline void attendDense(const float *q, const float *keys, int64_t len, int64_t h, int64_t hh,
                        int64_t dk, float scale, const float *values, int64_t dv, float *out) {
  std::vector<float> s(std::max<int64_t>(len, 1));
  for (int64_t t = 0; t < len; ++t) {
    double dot = 0;
    for (int64_t d = 0; d < dk; ++d)
      dot += static_cast<double>(q[d]) * keys[(t * h + hh) * dk + d];
    s[t] = static_cast<float>(dot);
  }
  attendFromScores(s.data(), len, scale, values, h, hh, dv, out);
}

} // namespace attn::ref

#endif // ATTN_REFERENCE_NOMADREFERENCE_H
