// bench_faiss.cpp — NoMAD lookups against FAISS's 4-bit fast-scan, behind scripts/bench-cpu-faiss.
// Links the kernels attn-opt compiled (bench_kernels.h/.o; bench_table.inc lists ISA × dsub) and
// FAISS's libfaiss.so (faiss-cpu wheel; headers of the same release). Same codebook (trained by
// FAISS's ProductQuantizer on the keys) and the same 4-bit codes (ours, repacked with
// pq4_pack_codes) on both sides; one thread, runs of the two sides interleaved. One JSON object
// per (t, dsub, isa):
//   nomad_search_us   attn.pq.lut + attn.pq.scores (f32) of one query
//   faiss_search_us   IndexPQFastScan::search(k = 1), fastest median of implem 12/14 × bbs
//                     32/64/128 (faiss_search_best names it; faiss_search_all lists every one)
//   nomad_scan_us     attn.pq.scores into u16 sums from a built u8 LUT
//   faiss_scan_us     accumulate_to_mem (bbs 32) from the same u8 LUT, packed by pq4_pack_LUT
//   scan_equal        every u16 sum of the two scans equal
//   *_min_us, scan_min_ratio, search_min_ratio   the same from the fastest runs (what
//                     interference on a shared host left alone)
//   search_ratio, scan_ratio   FAISS time ÷ ours (> 1: ours faster)
//   base_*            the same for kernels of a baseline attn-opt (--baseline-attn-opt), run in
//                     the same rounds
// Times are medians of `reps` interleaved runs after warm-up, each right after an untimed run of
// the same function (cache-warm, as far as the codes fit).
#include "bench_kernels.h"

#include <faiss/IndexFastScan.h>
#include <faiss/index_factory.h>
#include <faiss/impl/fast_scan/fast_scan.h>
#include <faiss/utils/simd_levels.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace {
double nowUs() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// Runs every function `reps` times round-robin (two warm-up rounds first) and returns each one's
/// median (and in `fastest` its fastest run): the sides see the same interference on a shared host.
/// Each timed run follows an untimed run of the same function, so that every side finds its own
/// data in cache as far as it fits, whatever ran before it in the round.
std::vector<double> interleavedMedians(const std::vector<std::function<void()>> &fns, int reps,
                                       std::vector<double> &fastest) {
  for (int w = 0; w < 2; ++w)
    for (auto &f : fns)
      f();
  std::vector<std::vector<double>> t(fns.size());
  for (int r = 0; r < reps; ++r)
    for (size_t i = 0; i < fns.size(); ++i) {
      fns[i]();
      double t0 = nowUs();
      fns[i]();
      t[i].push_back(nowUs() - t0);
    }
  std::vector<double> med;
  for (auto &v : t) {
    std::sort(v.begin(), v.end());
    med.push_back(v[v.size() / 2]);
    fastest.push_back(v.front());
  }
  return med;
}

/// 64-byte aligned storage for every buffer the kernels touch (FAISS keeps its codes in 64-byte
/// aligned tables; std::vector's 16-byte alignment would split a 32-byte load in two every
/// other row).
template <typename T> struct Aligned {
  static_assert(std::is_trivial_v<T>);
  explicit Aligned(size_t n)
      : n(n), p(static_cast<T *>(std::aligned_alloc(64, (n * sizeof(T) + 63) / 64 * 64))) {
    std::memset(p, 0, n * sizeof(T));
  }
  ~Aligned() { std::free(p); }
  Aligned(const Aligned &) = delete;
  Aligned &operator=(const Aligned &) = delete;
  T *data() const { return p; }
  T *begin() const { return p; }
  T *end() const { return p + n; }
  T &operator[](size_t i) const { return p[i]; }
  size_t n;
  T *p;
};

struct Entry {
  const char *isa;
  int dsub;
  // The header's wrappers return the kernels' status (0: ran; non-zero: arguments refused).
  int32_t (*lut)(const float *, const float *, uint8_t *, float *);
  int32_t (*scores)(const uint8_t *, const float *, const uint8_t *, int64_t, float *, int64_t,
                    int64_t);
  int32_t (*scan)(const uint8_t *, const float *, const uint8_t *, int64_t, uint16_t *, int64_t,
                  int64_t);
  int32_t (*encode)(const float *, const float *, int64_t, uint8_t *, int64_t, int64_t);
  // The same kernels from a baseline compiler (BENCH_BASE), or null. A baseline from before the
  // kernels returned a status has void wrappers: BASE() casts either kind to these types, and
  // their results are not read.
  decltype(lut) baseLut = nullptr;
  decltype(scores) baseScores = nullptr;
  decltype(scan) baseScan = nullptr;
};

#ifdef BENCH_BASE
#include "bench_base.h"
#define ENTRY(ISA, DSUB)                                                                         \
  Entry{#ISA,                 DSUB,                     lut_##ISA##_##DSUB,                      \
        scores_##ISA##_##DSUB, scan_##ISA##_##DSUB,      encode_##DSUB,                          \
        BASE(lut, lutbase_##ISA##_##DSUB), BASE(scores, scoresbase_##ISA##_##DSUB),              \
        BASE(scan, scanbase_##ISA##_##DSUB)}
#define BASE(FIELD, F) reinterpret_cast<decltype(Entry::FIELD)>(&F)
#else
#define ENTRY(ISA, DSUB)                                                                         \
  Entry{#ISA, DSUB, lut_##ISA##_##DSUB, scores_##ISA##_##DSUB, scan_##ISA##_##DSUB, encode_##DSUB}
#endif

/// Our block layout [blk][sub][16]: byte j of a row holds key j (low nibble) and key j + 16
/// (high) → FAISS's flat codes [key][sub / 2] (sub-quantizer 2m in the low nibble).
std::vector<uint8_t> flatCodes(const uint8_t *codes, int64_t t, int64_t m) {
  std::vector<uint8_t> flat(t * (m / 2), 0);
  for (int64_t i = 0; i < t; ++i)
    for (int64_t s = 0; s < m; ++s) {
      uint8_t byte = codes[((i / 32) * m + s) * 16 + i % 16];
      uint8_t code = i % 32 < 16 ? byte & 15 : byte >> 4;
      flat[i * (m / 2) + s / 2] |= s % 2 ? code << 4 : code;
    }
  return flat;
}

/// An IndexPQFastScan of block size `bbs` (built by FAISS's index_factory: only
/// IndexFastScan's own fields are touched here, those of its ProductQuantizer changed between
/// releases), trained on `n` keys (deterministic: the same codebook for every bbs), holding the
/// given flat codes.
std::unique_ptr<faiss::IndexFastScan> makeIndex(int64_t d, int64_t m, int bbs, int64_t n,
                                                const float *keys,
                                                const std::vector<uint8_t> &flat, int64_t t) {
  std::string key = "PQ" + std::to_string(m) + "x4fs_" + std::to_string(bbs);
  std::unique_ptr<faiss::IndexFastScan> index(dynamic_cast<faiss::IndexFastScan *>(
      faiss::index_factory(d, key.c_str(), faiss::METRIC_INNER_PRODUCT)));
  if (!index || index->M != size_t(m) || index->bbs != bbs || index->ksub != 16) {
    std::fprintf(stderr, "error: FAISS headers do not match libfaiss.so (IndexFastScan layout)\n");
    std::exit(2);
  }
  index->train(n, keys);
  if (!flat.empty()) {
    size_t ntotal2 = (t + bbs - 1) / bbs * bbs;
    index->codes.resize(ntotal2 * index->M2 / 2);
    std::memset(index->codes.get(), 0, index->codes.size());
    faiss::pq4_pack_codes(flat.data(), t, m, ntotal2, bbs, index->M2, index->codes.get());
    index->ntotal = t;
    index->ntotal2 = ntotal2;
  }
  return index;
}

/// The codebook [m][16][d / m] of a trained index, read back by decoding the 16 codes whose
/// sub-quantizers all hold the same centroid.
std::vector<float> codebook(const faiss::IndexFastScan &index, int64_t d, int64_t m) {
  const int64_t dsub = d / m;
  std::vector<float> cb(m * 16 * dsub), x(d);
  std::vector<uint8_t> code(index.sa_code_size());
  for (int c = 0; c < 16; ++c) {
    std::memset(code.data(), c | c << 4, code.size());
    index.sa_decode(1, code.data(), x.data());
    for (int64_t s = 0; s < m; ++s)
      for (int64_t j = 0; j < dsub; ++j)
        cb[(s * 16 + c) * dsub + j] = x[s * dsub + j];
  }
  return cb;
}

faiss::SIMDLevel faissLevel(const std::string &isa) {
  if (isa == "scalar")
    return faiss::SIMDLevel::NONE;
  return isa == "avx2" ? faiss::SIMDLevel::AVX2 : faiss::SIMDLevel::AVX512;
}

void scanFaiss(faiss::SIMDLevel level, size_t ntotal2, int nsq, const uint8_t *codes,
               const uint8_t *lut, uint16_t *accu) {
  if (level == faiss::SIMDLevel::AVX512)
    faiss::accumulate_to_mem_impl<faiss::SIMDLevel::AVX512>(1, ntotal2, nsq, codes, lut, accu);
  else if (level == faiss::SIMDLevel::AVX2)
    faiss::accumulate_to_mem_impl<faiss::SIMDLevel::AVX2>(1, ntotal2, nsq, codes, lut, accu);
  else
    faiss::accumulate_to_mem_impl<faiss::SIMDLevel::NONE>(1, ntotal2, nsq, codes, lut, accu);
}

/// Measures one (t, dsub, isa) cell and prints its JSON line.
void runCell(const Entry &e, int64_t t, const std::vector<float> &keys,
             const std::vector<float> &q, int reps) {
  const int64_t d = 128, m = d / e.dsub, nb = (t + 31) / 32;
  faiss::SIMDLevel level = faissLevel(e.isa);
  if (!faiss::SIMDConfig::is_simd_level_available(level)) {
    std::fprintf(stderr, "skip %s: FAISS lacks the matching SIMD level\n", e.isa);
    return;
  }
  faiss::SIMDConfig::set_level(level);
  // Codebook: FAISS's PQ training on (at most 8192 of) the keys; codes: ours, repacked.
  const int64_t n = std::min<int64_t>(t, 8192);
  std::vector<float> cb = codebook(*makeIndex(d, m, 32, n, keys.data(), {}, t), d, m);
  Aligned<uint8_t> codes(nb * m * 16);
  e.encode(keys.data(), cb.data(), 0, codes.data(), t, nb);
  std::vector<uint8_t> flat = flatCodes(codes.data(), t, m);
  std::vector<std::unique_ptr<faiss::IndexFastScan>> indexes;
  for (int bbs : {32, 64, 128}) {
    indexes.push_back(makeIndex(d, m, bbs, n, keys.data(), flat, t));
    if (codebook(*indexes.back(), d, m) != cb) {
      std::fprintf(stderr, "error: FAISS trained different codebooks for one key set\n");
      std::exit(2);
    }
  }

  Aligned<uint8_t> lut(m * 16), packedLut(m * 16);
  Aligned<float> params(2), scores(t);
  Aligned<uint16_t> ours(t), accu(nb * 32);
  e.lut(q.data(), cb.data(), lut.data(), params.data());
  faiss::pq4_pack_LUT(1, m, lut.data(), packedLut.data());
  float dist[1];
  faiss::idx_t label[1];

  std::vector<std::function<void()>> fns;
  std::vector<std::string> names;
  fns.push_back([&] {
    e.lut(q.data(), cb.data(), lut.data(), params.data());
    e.scores(lut.data(), params.data(), codes.data(), t, scores.data(), nb, t);
  });
  fns.push_back([&] { e.scan(lut.data(), params.data(), codes.data(), t, ours.data(), nb, t); });
  fns.push_back([&] {
    scanFaiss(level, nb * 32, m, indexes[0]->codes.get(), packedLut.data(), accu.data());
  });
  for (auto [implem, bbsIdx] : {std::pair{12, 0}, {14, 0}, {14, 1}, {14, 2}}) {
    faiss::IndexFastScan *index = indexes[bbsIdx].get();
    names.push_back("implem" + std::to_string(implem) + "_bbs" + std::to_string(index->bbs));
    fns.push_back([index, implem, &q, &dist, &label] {
      index->implem = implem;
      index->search(1, q.data(), 1, dist, label);
    });
  }
  const size_t numFaiss = names.size();
  Aligned<uint16_t> base(t);
  if (e.baseScan) {
    fns.push_back([&] {
      e.baseLut(q.data(), cb.data(), lut.data(), params.data());
      e.baseScores(lut.data(), params.data(), codes.data(), t, scores.data(), nb, t);
    });
    fns.push_back(
        [&] { e.baseScan(lut.data(), params.data(), codes.data(), t, base.data(), nb, t); });
  }
  std::vector<double> fastest;
  std::vector<double> med = interleavedMedians(fns, reps, fastest);

  // Checks: the two scans' u16 sums, and FAISS's top-1 against ours.
  e.scan(lut.data(), params.data(), codes.data(), t, ours.data(), nb, t);
  scanFaiss(level, nb * 32, m, indexes[0]->codes.get(), packedLut.data(), accu.data());
  bool equal = std::equal(ours.begin(), ours.end(), accu.begin());
  std::string baseline;
  if (e.baseScan) {
    e.baseScan(lut.data(), params.data(), codes.data(), t, base.data(), nb, t);
    equal &= std::equal(base.begin(), base.end(), ours.begin());
  }
  e.lut(q.data(), cb.data(), lut.data(), params.data());
  e.scores(lut.data(), params.data(), codes.data(), t, scores.data(), nb, t);
  indexes[0]->implem = 12;
  indexes[0]->search(1, q.data(), 1, dist, label);
  int64_t ourTop = std::max_element(scores.begin(), scores.end()) - scores.begin();

  size_t best = 3;
  for (size_t i = 3; i < 3 + numFaiss; ++i)
    if (med[i] < med[best])
      best = i;
  if (e.baseScan) { // FAISS time ÷ the baseline's
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  ", \"base_search_us\": %.2f, \"base_scan_us\": %.2f, \"base_search_ratio\": "
                  "%.3f, \"base_scan_ratio\": %.3f",
                  med[3 + numFaiss], med[4 + numFaiss], med[best] / med[3 + numFaiss],
                  med[2] / med[4 + numFaiss]);
    baseline = buf;
  }
  std::string all;
  for (size_t i = 3; i < 3 + numFaiss; ++i)
    all += (i > 3 ? ", \"" : "\"") + names[i - 3] + "\": " + std::to_string(med[i]);
  std::printf("{\"t\": %lld, \"dsub\": %d, \"isa\": \"%s\", \"faiss_level\": \"%s\", "
              "\"nomad_search_us\": %.2f, \"faiss_search_us\": %.2f, \"faiss_search_best\": \"%s\", "
              "\"faiss_search_all\": {%s}, \"nomad_scan_us\": %.2f, \"faiss_scan_us\": %.2f, "
              "\"search_ratio\": %.3f, \"scan_ratio\": %.3f, \"scan_equal\": %s, "
              "\"top1_equal\": %s, \"reps\": %d, \"nomad_scan_min_us\": %.2f, "
              "\"faiss_scan_min_us\": %.2f, \"scan_min_ratio\": %.3f, \"search_min_ratio\": %.3f%s}\n",
              (long long)t, e.dsub, e.isa, faiss::SIMDConfig::get_level_name().c_str(), med[0],
              med[best], names[best - 3].c_str(), all.c_str(), med[1], med[2], med[best] / med[0],
              med[2] / med[1], equal ? "true" : "false", label[0] == ourTop ? "true" : "false",
              reps, fastest[1], fastest[2], fastest[2] / fastest[1],
              *std::min_element(fastest.begin() + 3, fastest.begin() + 3 + numFaiss) / fastest[0],
              baseline.c_str());
  std::fflush(stdout);
  if (!equal) {
    std::fprintf(stderr, "error: u16 sums differ from FAISS's (t=%lld dsub=%d %s)\n",
                 (long long)t, e.dsub, e.isa);
    std::exit(1);
  }
}
} // namespace

int main(int argc, char **argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 30;
  std::vector<int64_t> lengths = {4096, 16384, 65536};
  if (argc > 2) { // a comma-separated list of key counts (multiples of 32)
    lengths.clear();
    for (char *p = std::strtok(argv[2], ","); p; p = std::strtok(nullptr, ","))
      lengths.push_back(std::atoll(p));
  }
  std::vector<Entry> entries = {
#include "bench_table.inc"
  };
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  for (int64_t t : lengths) {
    if (t <= 0 || t % 32) {
      std::fprintf(stderr, "error: key count %lld is not a positive multiple of 32\n",
                   (long long)t);
      return 2;
    }
    std::vector<float> keys(t * 128), q(128);
    for (auto &x : keys)
      x = normal(rng);
    for (auto &x : q)
      x = normal(rng);
    for (const Entry &e : entries)
      runCell(e, t, keys, q, reps);
  }
  return 0;
}
