// bench_cpu.cpp — one-thread NoMAD benchmark behind scripts/bench-cpu. Links the kernels attn-opt
// compiled (bench_kernels.h/.o; the table of ISAs and dsub values is bench_table.inc) and OpenBLAS,
// and prints one JSON object per (t, dsub, isa, keys) with:
//   nomad_scores_us   LUT build + lookup scores of one query (what FAISS's k=1 search times)
//   nomad_lookup_us   lookup scores alone, from a built LUT (nomad_lookup_min_us: fastest run)
//   sgemv_us          OpenBLAS cblas_sgemv scores over f32 keys [t][d]
//   nomad_decode_us   attn.pq.attention with f16 values (LUT, scores, softmax, P·V)
//   nomad_decode_f32v_us  the same with f32 values
//   dense_decode_us   dense f32 decode: sgemv scores, softmax, sgemv P·V
//   rel_err           ‖o_nomad − o_dense‖ / ‖o_dense‖ (f32 values), top32_overlap of scores
// Times are medians of `reps` runs after warm-up. Keys are Gaussian or clustered (64 centers), the
// query an independent Gaussian vector;
// codebooks are trained by k-means on the keys themselves (as a calibration pass would).
#include "bench_kernels.h"

#include "attn/Reference/NomadReference.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <vector>

static double nowUs() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
/// Median time of `reps` runs; `fastest` (optional) gets the fastest run — on a shared host, what
/// interference left alone.
static double medianUs(const std::function<void()> &f, int reps, double *fastest = nullptr) {
  f();
  f();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    double t0 = nowUs();
    f();
    t.push_back(nowUs() - t0);
  }
  std::sort(t.begin(), t.end());
  if (fastest)
    *fastest = t.front();
  return t[t.size() / 2];
}

/// k-means (Lloyd, k-means++-style seeding by sampling) per sub-quantizer of one head.
static std::vector<float> trainCodebooks(const std::vector<float> &keys, int64_t t, int64_t d,
                                         int64_t dsub, int64_t c, std::mt19937 &rng) {
  const int64_t s = d / dsub, n = std::min<int64_t>(t, 8192);
  std::vector<float> cb(s * c * dsub);
  std::vector<int> assign(n);
  for (int64_t sub = 0; sub < s; ++sub) {
    auto x = [&](int64_t i, int64_t j) { return keys[i * d + sub * dsub + j]; };
    for (int64_t k = 0; k < c; ++k)
      for (int64_t j = 0; j < dsub; ++j)
        cb[(sub * c + k) * dsub + j] = x(rng() % n, j);
    for (int it = 0; it < 12; ++it) {
      std::vector<double> sum(c * dsub, 0.0);
      std::vector<int64_t> cnt(c, 0);
      for (int64_t i = 0; i < n; ++i) {
        float best = INFINITY;
        int bk = 0;
        for (int64_t k = 0; k < c; ++k) {
          float dd = 0;
          for (int64_t j = 0; j < dsub; ++j) {
            float df = x(i, j) - cb[(sub * c + k) * dsub + j];
            dd += df * df;
          }
          if (dd < best)
            best = dd, bk = static_cast<int>(k);
        }
        assign[i] = bk;
        cnt[bk]++;
        for (int64_t j = 0; j < dsub; ++j)
          sum[bk * dsub + j] += x(i, j);
      }
      for (int64_t k = 0; k < c; ++k)
        for (int64_t j = 0; j < dsub; ++j)
          cb[(sub * c + k) * dsub + j] = cnt[k] ? static_cast<float>(sum[k * dsub + j] / cnt[k])
                                                : x(rng() % n, j);
    }
  }
  return cb;
}

/// The dense peer's softmax numerator, vectorized by GCC through glibc's libmvec (fast-math lets
/// it call the SIMD expf), so the dense decode is not handicapped by a scalar exp loop.
#pragma GCC push_options
#pragma GCC optimize("fast-math")
static float expSum(const float *s, float *p, int64_t t, float mx) {
  float sum = 0.f;
  for (int64_t i = 0; i < t; ++i) {
    p[i] = std::exp(s[i] - mx);
    sum += p[i];
  }
  return sum;
}
#pragma GCC pop_options

struct Entry {
  const char *isa;
  int dsub, centroids;
  std::function<void(const float *, const float *, uint8_t *, float *)> lut;
  std::function<void(const uint8_t *, const float *, const uint8_t *, int64_t, float *, int64_t,
                     int64_t)>
      scores;
  std::function<void(const float *, const float *, const uint8_t *, const uint16_t *, int64_t,
                     float *, int64_t, int64_t)>
      attnF16;
  std::function<void(const float *, const float *, const uint8_t *, const float *, int64_t,
                     float *, int64_t, int64_t)>
      attnF32;
  std::function<void(const float *, const float *, int64_t, uint8_t *, int64_t, int64_t)> encode;
};

#define ENTRY(ISA, DSUB, C)                                                                           \
  Entry{#ISA, DSUB, C,                                                                                \
        [](const float *q, const float *cb, uint8_t *lut, float *p) {                              \
          lut_##ISA##_##DSUB##_##C(q, cb, lut, p);                                                       \
        },                                                                                         \
        [](const uint8_t *lut, const float *p, const uint8_t *codes, int64_t len, float *s,        \
           int64_t nb, int64_t cap) { scores_##ISA##_##DSUB##_##C(lut, p, codes, len, s, nb, cap); },    \
        [](const float *q, const float *cb, const uint8_t *codes, const uint16_t *v, int64_t len,  \
           float *o, int64_t nb, int64_t t) {                                                      \
          attn_f16_##ISA##_##DSUB##_##C(q, cb, codes, v, len, o, nb, t);                                 \
        },                                                                                         \
        [](const float *q, const float *cb, const uint8_t *codes, const float *v, int64_t len,     \
           float *o, int64_t nb, int64_t t) {                                                      \
          attn_f32_##ISA##_##DSUB##_##C(q, cb, codes, v, len, o, nb, t);                                 \
        },                                                                                         \
        [](const float *k, const float *cb, int64_t off, uint8_t *codes, int64_t t, int64_t nb) {  \
          encode_##DSUB##_##C(k, cb, off, codes, t, nb);                                                 \
        }}

int main(int argc, char **argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 30;
  const int64_t d = 128;
  const float scale = 1.f / std::sqrt(static_cast<float>(d));
  std::vector<Entry> entries = {
#include "bench_table.inc"
  };
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  for (const char *keysKind : {"clustered", "gaussian"}) {
    for (int64_t t : {4096, 16384, 65536}) {
      // Keys, query, values.
      std::vector<float> keys(t * d), q(d), v(t * d), centers(64 * d);
      for (auto &x : centers)
        x = normal(rng);
      for (int64_t i = 0; i < t; ++i)
        for (int64_t j = 0; j < d; ++j)
          keys[i * d + j] = std::string(keysKind) == "clustered"
                                ? centers[(i % 64) * d + j] + 0.35f * normal(rng)
                                : normal(rng);
      for (auto &x : q) // an independent Gaussian query: no key is planted to dominate
        x = normal(rng);
      for (auto &x : v)
        x = normal(rng);
      std::vector<uint16_t> vh(v.size());
      for (size_t i = 0; i < v.size(); ++i)
        vh[i] = attn::ref::floatToHalf(v[i]);

      // Dense peers: OpenBLAS sgemv scores, and a full f32 decode built on it.
      std::vector<float> s(t), p(t), od(d);
      double sgemv = medianUs([&] {
        cblas_sgemv(CblasRowMajor, CblasNoTrans, t, d, 1.f, keys.data(), d, q.data(), 1, 0.f,
                    s.data(), 1);
      }, reps);
      auto denseDecode = [&] {
        cblas_sgemv(CblasRowMajor, CblasNoTrans, t, d, scale, keys.data(), d, q.data(), 1, 0.f,
                    s.data(), 1);
        float mx = *std::max_element(s.begin(), s.end());
        float sum = expSum(s.data(), p.data(), t, mx);
        cblas_sgemv(CblasRowMajor, CblasTrans, t, d, 1.f / sum, v.data(), d, p.data(), 1, 0.f,
                    od.data(), 1);
      };
      double dense = medianUs(denseDecode, reps);
      denseDecode();
      std::vector<float> denseScores = s; // scale · q·k

      for (int dsub : {1, 2, 4})
        for (int c : {16, 32, 64}) {
        bool any = false;
        for (const Entry &e : entries)
          any |= e.dsub == dsub && e.centroids == c;
        if (!any)
          continue;
        std::vector<float> cb = trainCodebooks(keys, t, d, dsub, c, rng);
        const int64_t sub = d / dsub, nb = (t + 31) / 32;
        std::vector<uint8_t> codes(nb * sub * (c == 16 ? 16 : 32), 0);
        bool encoded = false;
        for (const Entry &e : entries) {
          if (e.dsub != dsub || e.centroids != c)
            continue;
          if (!encoded) {
            e.encode(keys.data(), cb.data(), 0, codes.data(), t, nb);
            encoded = true;
          }
          std::vector<uint8_t> lut(sub * c);
          std::vector<float> params(2), ns(t), o16(d), o32(d);
          double scores = medianUs([&] {
            e.lut(q.data(), cb.data(), lut.data(), params.data());
            e.scores(lut.data(), params.data(), codes.data(), t, ns.data(), nb, t);
          }, reps);
          double lookupMin = 0;
          double lookup = medianUs(
              [&] { e.scores(lut.data(), params.data(), codes.data(), t, ns.data(), nb, t); },
              reps, &lookupMin);
          double dec16 = medianUs(
              [&] { e.attnF16(q.data(), cb.data(), codes.data(), vh.data(), t, o16.data(), nb, t); },
              reps);
          double dec32 = medianUs(
              [&] { e.attnF32(q.data(), cb.data(), codes.data(), v.data(), t, o32.data(), nb, t); },
              reps);
          // Accuracy against dense attention.
          double num = 0, den = 0;
          for (int64_t j = 0; j < d; ++j) {
            num += (o32[j] - od[j]) * (o32[j] - od[j]);
            den += od[j] * od[j];
          }
          std::vector<int64_t> a(t), b(t);
          std::iota(a.begin(), a.end(), 0);
          std::iota(b.begin(), b.end(), 0);
          auto top = [&](std::vector<int64_t> &idx, const std::vector<float> &sc) {
            std::partial_sort(idx.begin(), idx.begin() + 32, idx.end(),
                              [&](int64_t x, int64_t y) { return sc[x] > sc[y]; });
            std::sort(idx.begin(), idx.begin() + 32);
          };
          top(a, ns);
          top(b, denseScores);
          std::vector<int64_t> common;
          std::set_intersection(a.begin(), a.begin() + 32, b.begin(), b.begin() + 32,
                                std::back_inserter(common));
          std::printf("{\"t\": %lld, \"d\": %lld, \"dsub\": %d, \"centroids\": %d, \"isa\": \"%s\", \"keys\": \"%s\", "
                      "\"nomad_scores_us\": %.1f, \"nomad_lookup_us\": %.1f, "
                      "\"nomad_lookup_min_us\": %.1f, \"sgemv_us\": %.1f, "
                      "\"nomad_decode_us\": %.1f, \"nomad_decode_f32v_us\": %.1f, "
                      "\"dense_decode_us\": %.1f, \"scores_speedup\": %.2f, "
                      "\"decode_speedup\": %.2f, \"rel_err\": %.4f, \"top32_overlap\": %.3f}\n",
                      (long long)t, (long long)d, dsub, c, e.isa, keysKind, scores, lookup,
                      lookupMin, sgemv,
                      dec16, dec32, dense, sgemv / scores, dense / dec16,
                      std::sqrt(num / den), common.size() / 32.0);
          std::fflush(stdout);
        }
      }
    }
  }
  return 0;
}
