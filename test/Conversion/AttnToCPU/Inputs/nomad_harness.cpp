// nomad_harness.cpp — runs the NoMAD kernels that attn-opt compiled (kernels.h + kernels.o from
// nomad_kernels.mlir.in) against the C++ reference (include/attn/Reference/NomadReference.h):
// codes, LUT entries and u16 accumulators must match exactly; f32 scores bit for bit; attention
// outputs within 1e-4 (relative to the largest output) of an fp64 softmax over the same quantized
// scores. The error against dense attention is printed, not bounded. Built by run_nomad.py with
// -DATTN_D, -DATTN_DSUB, -DATTN_C; prints one PASS or FAIL line per case and exits non-zero on FAIL.
#include "kernels.h"

#include "attn/Reference/NomadReference.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

using namespace attn::ref;

static int failures = 0;
#define CHECK(cond, ...)                                                                           \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      std::printf("FAIL " __VA_ARGS__);                                                            \
      std::printf("\n");                                                                           \
      ++failures;                                                                                  \
    }                                                                                              \
  } while (0)

// Every kernel returns 0 after running; anything else (a refused call) is a failure.
#define RAN(call)                                                                                  \
  do {                                                                                             \
    int32_t status_ = (call);                                                                      \
    CHECK(status_ == 0, "%s returned %d", #call, (int)status_);                                    \
  } while (0)

static float relErr(const std::vector<float> &got, const std::vector<float> &want) {
  float diff = 0, scale = 1e-6f;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i]))
      return INFINITY;
    diff = std::max(diff, std::fabs(got[i] - want[i]));
    scale = std::max(scale, std::fabs(want[i]));
  }
  return diff / scale;
}

int main() {
  const PQShape p{ATTN_D, ATTN_DSUB, ATTN_C};
  const int64_t d = p.headDim, s = p.numSub(), c = p.centroids, r = p.rowBytes();
  const int64_t h = 2, hq = 8; // GQA 4:1
  const float scale = 1.f / std::sqrt(static_cast<float>(d));
  const char *dists[] = {"gaussian", "clustered", "outliers"};
  std::mt19937 rng(1234);
  std::normal_distribution<float> normal;
  float worstDense = 0;
  int cases = 0;

  for (int64_t t : {0, 1, 31, 32, 33, 100, 1000}) {
    for (int dist = 0; dist < 3; ++dist) {
      ++cases;
      const int64_t nb = (t + 31) / 32 + 1; // one spare block beyond the keys
      std::vector<float> cb(h * s * c * p.dsub), keys(t * h * d), q(hq * d), vals(t * h * d);
      for (auto &x : cb)
        x = normal(rng);
      for (int64_t i = 0; i < t; ++i)
        for (int64_t hh = 0; hh < h; ++hh)
          for (int64_t sub = 0; sub < s; ++sub) {
            int64_t k = rng() % c;
            for (int64_t j = 0; j < p.dsub; ++j) {
              float &x = keys[(i * h + hh) * d + sub * p.dsub + j];
              if (dist == 1) // near a centroid
                x = cb[((hh * s + sub) * c + k) * p.dsub + j] + 0.05f * normal(rng);
              else
                x = normal(rng) * (dist == 2 && sub * p.dsub + j < 4 ? 20.f : 1.f);
            }
          }
      for (auto &x : q)
        x = normal(rng);
      for (auto &x : vals)
        x = normal(rng);
      const char *dn = dists[dist];

      // Encode: in bulk, one key at a time, and by the reference — identical caches.
      std::vector<uint8_t> bulk(h * nb * s * r, 0), single(h * nb * s * r, 0), want(h * nb * s * r, 0);
      RAN(pq_encode(keys.data(), cb.data(), 0, bulk.data(), t, h, h, h, nb));
      for (int64_t i = 0; i < t; ++i)
        RAN(pq_encode(keys.data() + i * h * d, cb.data(), i, single.data(), 1, h, h, h, nb));
      encode(p, keys.data(), t, h, cb.data(), 0, want.data(), nb);
      CHECK(bulk == want, "encode(bulk) t=%lld %s", (long long)t, dn);
      CHECK(single == want, "encode(one at a time) t=%lld %s", (long long)t, dn);

      // LUT and its (step, bias).
      std::vector<uint8_t> lut(hq * s * c), lutWant(hq * s * c);
      std::vector<float> params(hq * 2), paramsWant(hq * 2);
      RAN(pq_lut(q.data(), cb.data(), lut.data(), params.data(), hq, h, hq, hq));
      buildLUT(p, q.data(), hq, cb.data(), h, lutWant.data(), paramsWant.data());
      CHECK(lut == lutWant && params == paramsWant, "lut t=%lld %s", (long long)t, dn);

      // u16 accumulators (exact) and f32 scores (bit for bit); nothing written past the keys.
      const int64_t cap = t + 7;
      std::vector<uint16_t> acc(hq * cap, 0xBEEF), accWant(hq * cap, 0xBEEF);
      RAN(pq_scores_u16(lut.data(), params.data(), want.data(), t, acc.data(), hq, hq, h, nb, hq, cap));
      scoresU16(p, lut.data(), hq, want.data(), h, nb, t, accWant.data(), cap);
      CHECK(acc == accWant, "u16 accumulators t=%lld %s", (long long)t, dn);
      std::vector<float> sc(hq * cap, -7.f), scWant(hq * cap, -7.f);
      RAN(pq_scores(lut.data(), params.data(), want.data(), t, sc.data(), hq, hq, h, nb, hq, cap));
      for (int64_t qq = 0; qq < hq; ++qq)
        for (int64_t i = 0; i < t; ++i)
          scWant[qq * cap + i] = dequantize(accWant[qq * cap + i], &params[2 * qq]);
      CHECK(std::memcmp(sc.data(), scWant.data(), sc.size() * 4) == 0, "f32 scores t=%lld %s",
            (long long)t, dn);

      // Attention over f32, f16 and i8 (per-(token, head) scales) values.
      std::vector<uint16_t> vh(vals.size());
      std::vector<float> vhf(vals.size()), vsc(t * h), vi8f(vals.size());
      std::vector<int8_t> vi8(vals.size());
      for (size_t i = 0; i < vals.size(); ++i)
        vhf[i] = halfToFloat(vh[i] = floatToHalf(vals[i]));
      for (int64_t i = 0; i < t * h; ++i) {
        float amax = 0;
        for (int64_t j = 0; j < d; ++j)
          amax = std::max(amax, std::fabs(vals[i * d + j]));
        vsc[i] = amax > 0 ? amax / 127.f : 1.f;
        for (int64_t j = 0; j < d; ++j) {
          vi8[i * d + j] = static_cast<int8_t>(std::lround(vals[i * d + j] / vsc[i]));
          vi8f[i * d + j] = vi8[i * d + j] * vsc[i];
        }
      }
      struct Variant {
        const char *name;
        const std::vector<float> *ref;
      } variants[] = {{"f32", &vals}, {"f16", &vhf}, {"i8", &vi8f}};
      for (const Variant &v : variants) {
        std::vector<float> out(hq * d, NAN), outWant(hq * d), dense(hq * d);
        if (v.ref == &vals)
          RAN(pq_attention_f32(q.data(), cb.data(), want.data(), vals.data(), t, out.data(), hq, h, h,
                           nb, t, h, hq));
        else if (v.ref == &vhf)
          RAN(pq_attention_f16(q.data(), cb.data(), want.data(), vh.data(), t, out.data(), hq, h, h,
                           nb, t, h, hq));
        else
          RAN(pq_attention_i8(q.data(), cb.data(), want.data(), vi8.data(), vsc.data(), t, out.data(),
                          hq, h, h, nb, t, h, t, h, hq));
        for (int64_t qq = 0; qq < hq; ++qq) {
          attendFromScores(&scWant[qq * cap], t, scale, v.ref->data(), h, qq / (hq / h), d,
                           &outWant[qq * d]);
          attendDense(&q[qq * d], keys.data(), t, h, qq / (hq / h), d, scale, v.ref->data(), d,
                      &dense[qq * d]);
        }
        float e = relErr(out, outWant);
        CHECK(e <= 1e-4f, "attention(%s) t=%lld %s: relative error %.3g > 1e-4", v.name,
              (long long)t, dn, e);
        if (t > 0)
          worstDense = std::max(worstDense, relErr(out, dense));
        if (t == 0)
          for (float x : out)
            CHECK(x == 0.f, "attention(%s) over no keys must be zero", v.name);
      }
    }
  }

  // A length beyond the cache is clamped to the cache: nothing past `cap` is written.
  {
    const int64_t nb = 2, cap = 40;
    std::vector<uint8_t> lut(hq * s * c, 1), codes(h * nb * s * r, 0x11);
    std::vector<float> params(hq * 2, 1.f);
    std::vector<uint16_t> acc(hq * cap + 16, 0xBEEF);
    RAN(pq_scores_u16(lut.data(), params.data(), codes.data(), 1 << 20, acc.data(), hq, hq, h, nb, hq,
                  cap));
    bool ok = true;
    for (int64_t i = 0; i < hq * cap; ++i)
      ok &= acc[i] == s;
    for (int64_t i = hq * cap; i < hq * cap + 16; ++i)
      ok &= acc[i] == 0xBEEF;
    CHECK(ok, "length clamp");
    ++cases;
  }
  if (failures == 0)
    std::printf("PASS D=%d dsub=%d C=%d: %d cases (max relative error vs dense attention %.3g)\n",
                ATTN_D, ATTN_DSUB, ATTN_C, cases, worstDense);
  return failures == 0 ? 0 : 1;
}
