//===- DecodeReference.cpp - host side of the GPU decode checks -----------===//
//
// What this file is: the implementation of attn/Reference/DecodeReference.h — number-format
// conversions, K/V quantizers, seeded inputs and the fp64 decode attention reference (a split-KV
// style merge of per-chunk partial softmaxes, so that two long sequences still use every core).
//
//===----------------------------------------------------------------------===//

#include "attn/Reference/DecodeReference.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <thread>

using namespace attn::ref;

//===----------------------------------------------------------------------===//
// Threads
//===----------------------------------------------------------------------===//

unsigned attn::ref::defaultThreads() {
  if (const char *env = std::getenv("ATTN_THREADS")) {
    long n = std::strtol(env, nullptr, 10);
    if (n >= 1 && n <= 4096)
      return static_cast<unsigned>(n);
  }
  unsigned n = std::thread::hardware_concurrency();
  return n ? n : 1;
}

void attn::ref::parallelFor(size_t n, unsigned threads, const std::function<void(size_t)> &fn) {
  if (threads == 0)
    threads = defaultThreads();
  if (n <= 1 || threads <= 1) {
    for (size_t i = 0; i < n; ++i)
      fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < n; i = next++)
      fn(i);
  };
  std::vector<std::thread> pool;
  size_t extra = std::min<size_t>(threads, n) - 1;
  pool.reserve(extra);
  for (size_t t = 0; t < extra; ++t)
    pool.emplace_back(worker);
  worker();
  for (std::thread &t : pool)
    t.join();
}

//===----------------------------------------------------------------------===//
// Number formats
//===----------------------------------------------------------------------===//

uint16_t attn::ref::floatToBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) // NaN: keep the sign, make it quiet
    return static_cast<uint16_t>((x >> 16) | 0x40);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

float attn::ref::bf16ToFloat(uint16_t bits) {
  uint32_t x = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint8_t attn::ref::floatToE4M3(float f) {
  const uint8_t sign = std::signbit(f) ? 0x80 : 0x00;
  if (std::isnan(f))
    return sign | 0x7f;
  const float a = std::fabs(f);
  if (a >= kE4M3Max) // includes inf: saturate
    return sign | 0x7e;
  // nearbyint rounds to nearest even in the default rounding mode; every scaling below is by a
  // power of two and exact.
  if (a < 0x1p-6f) { // subnormal: m · 2^-9, m = 0..8 (8 is the smallest normal, code 0x08)
    const float m = std::nearbyint(a * 512.0f);
    return sign | static_cast<uint8_t>(m);
  }
  int e2;
  std::frexp(a, &e2);                             // a = f · 2^e2, f in [0.5, 1)
  int e = e2 - 1;                                 // a in [2^e, 2^(e+1))
  float n = std::nearbyint(std::ldexp(a, 3 - e)); // in [8, 16]
  if (n == 16.0f) {
    n = 8.0f;
    ++e;
  }
  // a < 448 = 1.75·2^8 keeps e ≤ 8 and, for e = 8, n ≤ 14 (448 itself, code 0x7E).
  return sign | static_cast<uint8_t>(((e + 7) << 3) | (static_cast<int>(n) - 8));
}

float attn::ref::e4m3ToFloat(uint8_t code) {
  const int e = (code >> 3) & 15, m = code & 7;
  float v;
  if (e == 15 && m == 7)
    v = std::numeric_limits<float>::quiet_NaN();
  else if (e == 0)
    v = std::ldexp(static_cast<float>(m), -9);
  else
    v = std::ldexp(static_cast<float>(8 + m), e - 10);
  return (code & 0x80) ? -v : v;
}

//===----------------------------------------------------------------------===//
// K/V quantization
//===----------------------------------------------------------------------===//

bool attn::ref::parseKvType(const std::string &s, KvType &out) {
  if (s == "i8")
    out = KvType::I8;
  else if (s == "f8E4M3FN")
    out = KvType::F8E4M3;
  else if (s == "bf16")
    out = KvType::BF16;
  else
    return false;
  return true;
}

bool attn::ref::parseGranularity(const std::string &s, Granularity &out) {
  if (s == "per_token_head")
    out = Granularity::PerTokenHead;
  else if (s == "per_token")
    out = Granularity::PerToken;
  else if (s == "per_head")
    out = Granularity::PerHead;
  else if (s == "per_tensor")
    out = Granularity::PerTensor;
  else if (s == "none")
    out = Granularity::None;
  else if (s == "per_block")
    out = Granularity::PerBlock;
  else
    return false;
  return true;
}

const char *attn::ref::kvTypeName(KvType t) {
  switch (t) {
  case KvType::I8:
    return "i8";
  case KvType::F8E4M3:
    return "f8E4M3FN";
  case KvType::BF16:
    return "bf16";
  }
  return "?";
}

const char *attn::ref::granularityName(Granularity g) {
  switch (g) {
  case Granularity::PerTokenHead:
    return "per_token_head";
  case Granularity::PerToken:
    return "per_token";
  case Granularity::PerHead:
    return "per_head";
  case Granularity::PerTensor:
    return "per_tensor";
  case Granularity::None:
    return "none";
  case Granularity::PerBlock:
    return "per_block";
  }
  return "?";
}

int attn::ref::kvElementBytes(KvType t) { return t == KvType::BF16 ? 2 : 1; }

size_t attn::ref::scaleCount(const KvShape &s, Granularity g) {
  switch (g) {
  case Granularity::PerTokenHead:
    return size_t(s.batch) * size_t(s.len) * size_t(s.heads);
  case Granularity::PerToken:
    return size_t(s.batch) * size_t(s.len);
  case Granularity::PerHead:
    return size_t(s.heads);
  case Granularity::PerTensor:
    return 1;
  case Granularity::None:
    return 0;
  case Granularity::PerBlock:
    return size_t(s.batch) * size_t((s.len + s.blockRows - 1) / s.blockRows) * size_t(s.heads);
  }
  return 0;
}

size_t attn::ref::scaleIndex(const KvShape &s, Granularity g, int64_t b, int64_t t, int64_t h) {
  switch (g) {
  case Granularity::PerTokenHead:
    return (size_t(b) * size_t(s.len) + size_t(t)) * size_t(s.heads) + size_t(h);
  case Granularity::PerToken:
    return size_t(b) * size_t(s.len) + size_t(t);
  case Granularity::PerHead:
    return size_t(h);
  case Granularity::PerTensor:
    return 0;
  case Granularity::None:
    return 0;
  case Granularity::PerBlock: {
    const size_t blocks = size_t((s.len + s.blockRows - 1) / s.blockRows);
    return (size_t(b) * blocks + size_t(t / s.blockRows)) * size_t(s.heads) + size_t(h);
  }
  }
  return 0;
}

int8_t attn::ref::quantizeI8(float x, float scale) {
  float r = std::round(x * (1.0f / scale)); // halves away from zero; x · (1/s) as the kernels do
  r = std::min(127.0f, std::max(-127.0f, r));
  return static_cast<int8_t>(r);
}

float attn::ref::groupScale(float amax, KvType type) {
  float qmax = type == KvType::F8E4M3 ? kE4M3Max : 127.0f;
  float s = amax / qmax;
  return s >= kMinScale ? s : kMinScale; // also catches NaN amax
}

void attn::ref::quantizeKv(const float *x, const KvShape &shape, KvType type, Granularity g,
                           QuantizedKv &out, unsigned threads, bool asymmetric,
                           bool unsignedCodes) {
  out.type = type;
  out.unsignedCodes = asymmetric && unsignedCodes;
  out.zeros.clear();
  out.granularity = type == KvType::BF16 ? Granularity::None : g;
  const size_t n = shape.elements();
  const size_t rows = size_t(shape.batch) * size_t(shape.len); // (b, t) rows of H·D elements
  const size_t rowElems = size_t(shape.heads) * size_t(shape.dim);
  out.codes.assign(n * kvElementBytes(type), 0);
  out.scales.clear();
  if (type == KvType::BF16) {
    parallelFor(rows, threads, [&](size_t r) {
      for (size_t i = r * rowElems; i < (r + 1) * rowElems; ++i) {
        uint16_t bits = floatToBf16(x[i]);
        out.codes[2 * i] = static_cast<uint8_t>(bits & 0xff);
        out.codes[2 * i + 1] = static_cast<uint8_t>(bits >> 8);
      }
    });
    return;
  }
  // Pass 1: the minimum and maximum of each group (0 included): partial values per (row, head),
  // then a reduction into the groups.
  std::vector<float> pmin(rows * size_t(shape.heads), 0.0f), pmax(pmin.size(), 0.0f);
  parallelFor(rows, threads, [&](size_t r) {
    for (int64_t h = 0; h < shape.heads; ++h) {
      float lo = 0, hi = 0;
      const float *p = x + r * rowElems + size_t(h) * size_t(shape.dim);
      for (int64_t d = 0; d < shape.dim; ++d) {
        lo = std::min(lo, p[d]);
        hi = std::max(hi, p[d]);
      }
      pmin[r * size_t(shape.heads) + size_t(h)] = lo;
      pmax[r * size_t(shape.heads) + size_t(h)] = hi;
    }
  });
  std::vector<float> gmin(scaleCount(shape, g), 0.0f), gmax(gmin.size(), 0.0f);
  for (size_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < shape.heads; ++h) {
      size_t slot =
          scaleIndex(shape, g, int64_t(r / size_t(shape.len)), int64_t(r % size_t(shape.len)), h);
      gmin[slot] = std::min(gmin[slot], pmin[r * size_t(shape.heads) + size_t(h)]);
      gmax[slot] = std::max(gmax[slot], pmax[r * size_t(shape.heads) + size_t(h)]);
    }
  out.scales.resize(gmin.size());
  const bool asym = asymmetric && type == KvType::I8;
  const float qlo = out.unsignedCodes ? 0.0f : -128.0f, qhi = out.unsignedCodes ? 255.0f : 127.0f;
  std::vector<float> zf(asym ? gmin.size() : 0, 0.0f);
  for (size_t i = 0; i < gmin.size(); ++i) {
    if (!asym) {
      out.scales[i] = groupScale(std::max(-gmin[i], gmax[i]), type);
      continue;
    }
    float s = (gmax[i] - gmin[i]) / 255.0f;
    out.scales[i] = s >= kMinScale ? s : kMinScale;
    zf[i] = std::min(qhi, std::max(qlo, std::round(qlo - gmin[i] / out.scales[i])));
  }
  if (asym) {
    out.zeros.resize(zf.size());
    for (size_t i = 0; i < zf.size(); ++i)
      out.zeros[i] = static_cast<uint8_t>(static_cast<int>(zf[i]) & 0xff);
  }
  // Pass 2: the codes.
  parallelFor(rows, threads, [&](size_t r) {
    const int64_t b = int64_t(r / size_t(shape.len)), t = int64_t(r % size_t(shape.len));
    for (int64_t h = 0; h < shape.heads; ++h) {
      const size_t si = scaleIndex(shape, g, b, t, h);
      const float scale = out.scales[si];
      const size_t base = r * rowElems + size_t(h) * size_t(shape.dim);
      for (int64_t d = 0; d < shape.dim; ++d) {
        const float xi = x[base + size_t(d)];
        if (asym) {
          float c = std::round(xi * (1.0f / scale) + zf[si]);
          out.codes[base + size_t(d)] =
              static_cast<uint8_t>(static_cast<int>(std::min(qhi, std::max(qlo, c))) & 0xff);
          continue;
        }
        out.codes[base + size_t(d)] = type == KvType::I8
                                          ? static_cast<uint8_t>(quantizeI8(xi, scale))
                                          : floatToE4M3(xi * (1.0f / scale));
      }
    }
  });
}

void attn::ref::dequantizeKv(const QuantizedKv &q, const KvShape &shape, float *out,
                             unsigned threads) {
  const size_t rows = size_t(shape.batch) * size_t(shape.len);
  const size_t rowElems = size_t(shape.heads) * size_t(shape.dim);
  parallelFor(rows, threads, [&](size_t r) {
    const int64_t b = int64_t(r / size_t(shape.len)), t = int64_t(r % size_t(shape.len));
    for (int64_t h = 0; h < shape.heads; ++h) {
      const size_t base = r * rowElems + size_t(h) * size_t(shape.dim);
      if (q.type == KvType::BF16) {
        for (int64_t d = 0; d < shape.dim; ++d) {
          size_t i = base + size_t(d);
          out[i] = bf16ToFloat(static_cast<uint16_t>(q.codes[2 * i] | (q.codes[2 * i + 1] << 8)));
        }
        continue;
      }
      const size_t si = scaleIndex(shape, q.granularity, b, t, h);
      const float scale = q.scales[si];
      auto intCode = [&](uint8_t byte) {
        return q.unsignedCodes ? static_cast<float>(byte)
                               : static_cast<float>(static_cast<int8_t>(byte));
      };
      const float zero = q.zeros.empty() ? 0.0f : intCode(q.zeros[si]);
      for (int64_t d = 0; d < shape.dim; ++d) {
        size_t i = base + size_t(d);
        float c = q.type == KvType::I8 ? intCode(q.codes[i]) : e4m3ToFloat(q.codes[i]);
        out[i] = scale * (c - zero);
      }
    }
  });
}

//===----------------------------------------------------------------------===//
// Inputs
//===----------------------------------------------------------------------===//

namespace {
uint64_t splitmix64(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
/// Uniform in (0, 1]: 53 random bits.
double uniform01(uint64_t &state) {
  return (static_cast<double>(splitmix64(state) >> 11) + 1.0) * 0x1p-53;
}
constexpr size_t kChunk = 1 << 14; // elements per independently seeded chunk
} // namespace

void attn::ref::fillGaussian(float *x, size_t n, uint64_t seed, uint64_t stream, unsigned threads) {
  const size_t chunks = (n + kChunk - 1) / kChunk;
  parallelFor(chunks, threads, [&](size_t c) {
    uint64_t state = seed ^ (stream * 0xd1b54a32d192ed03ull);
    state ^= splitmix64(state) + c * 0x9e3779b97f4a7c15ull;
    splitmix64(state);
    const size_t end = std::min(n, (c + 1) * kChunk);
    for (size_t i = c * kChunk; i < end; i += 2) {
      double u1 = uniform01(state), u2 = uniform01(state);
      double r = std::sqrt(-2.0 * std::log(u1)), th = 6.283185307179586 * u2;
      x[i] = static_cast<float>(r * std::cos(th));
      if (i + 1 < end)
        x[i + 1] = static_cast<float>(r * std::sin(th));
    }
  });
}

std::vector<int64_t> attn::ref::outlierChannels(int64_t dim, int count) {
  std::vector<int64_t> channels;
  for (int j = 0; j < count && dim > 0; ++j) {
    int64_t c = (int64_t(j) * dim / count + 3) % dim;
    if (std::find(channels.begin(), channels.end(), c) == channels.end())
      channels.push_back(c);
  }
  return channels;
}

void attn::ref::scaleChannels(float *x, size_t rows, int64_t dim,
                              const std::vector<int64_t> &channels, float factor) {
  for (size_t r = 0; r < rows; ++r)
    for (int64_t c : channels)
      x[r * size_t(dim) + size_t(c)] *= factor;
}

void attn::ref::hadamardRows(float *x, size_t rows, int64_t dim) {
  assert(dim > 0 && (dim & (dim - 1)) == 0 && "hadamardRows needs a power of two");
  const float norm = float(1.0 / std::sqrt(double(dim)));
  for (size_t r = 0; r < rows; ++r) {
    float *row = x + r * size_t(dim);
    for (int64_t h = 1; h < dim; h *= 2)
      for (int64_t i = 0; i < dim; i += 2 * h)
        for (int64_t j = i; j < i + h; ++j) {
          float a = row[j], b = row[j + h];
          row[j] = a + b;
          row[j + h] = a - b;
        }
    for (int64_t j = 0; j < dim; ++j)
      row[j] *= norm;
  }
}

bool attn::ref::parseSeqLenMode(const std::string &s, SeqLenMode &out) {
  if (s == "full")
    out = SeqLenMode::Full;
  else if (s == "random")
    out = SeqLenMode::Random;
  else if (s == "ragged")
    out = SeqLenMode::Ragged;
  else
    return false;
  return true;
}

const char *attn::ref::seqLenModeName(SeqLenMode m) {
  switch (m) {
  case SeqLenMode::Full:
    return "full";
  case SeqLenMode::Random:
    return "random";
  case SeqLenMode::Ragged:
    return "ragged";
  }
  return "?";
}

void attn::ref::poisonPastLengths(QuantizedKv &q, const KvShape &shape,
                                  const std::vector<int32_t> &lens) {
  if (q.type == KvType::I8)
    return;
  const size_t e = q.type == KvType::BF16 ? 2 : 1;
  const size_t row = size_t(shape.heads) * size_t(shape.dim) * e;
  for (int64_t b = 0; b < shape.batch; ++b)
    for (int64_t t = std::max<int64_t>(lens[size_t(b)], 0); t < shape.len; ++t) {
      uint8_t *dst = q.codes.data() + (size_t(b) * size_t(shape.len) + size_t(t)) * row;
      for (size_t i = 0; i < row; i += e) {
        dst[i] = e == 2 ? 0xC0 : 0x7F; // bf16 0x7FC0 little-endian, or e4m3 0x7F
        if (e == 2)
          dst[i + 1] = 0x7F;
      }
    }
}

std::vector<int32_t> attn::ref::makeSeqLens(int64_t batch, int64_t kvLen, SeqLenMode mode,
                                            uint64_t seed) {
  std::vector<int32_t> lens(size_t(std::max<int64_t>(batch, 0)), static_cast<int32_t>(kvLen));
  if (mode == SeqLenMode::Full)
    return lens;
  uint64_t state = seed ^ 0x5eed1e45ull;
  auto uniform = [&] { // in [0, kvLen]
    return static_cast<int32_t>(splitmix64(state) % static_cast<uint64_t>(kvLen + 1));
  };
  const int64_t fixed[] = {kvLen, 0, 1, kvLen - 1};
  for (size_t b = 0; b < lens.size(); ++b) {
    int64_t v = uniform();
    if (b == 0)
      v = kvLen;
    else if (mode == SeqLenMode::Ragged && b < 4)
      v = fixed[b];
    lens[b] = static_cast<int32_t>(std::min(kvLen, std::max<int64_t>(0, v)));
  }
  return lens;
}

std::vector<float> attn::ref::alibiSlopes(int64_t qHeads) {
  std::vector<float> slopes(size_t(std::max<int64_t>(qHeads, 0)));
  for (int64_t h = 0; h < qHeads; ++h)
    slopes[size_t(h)] = static_cast<float>(std::exp2(-8.0 * double(h + 1) / double(qHeads)));
  return slopes;
}

//===----------------------------------------------------------------------===//
// The reference
//===----------------------------------------------------------------------===//

namespace {
/// Per-row softmax partial of one key chunk: running max, sum and unnormalized output.
struct Partial {
  double m = -std::numeric_limits<double>::infinity();
  double l = 0;
};
} // namespace

void attn::ref::decodeReference(const DecodeProblem &p, const float *q, const float *k,
                                const float *v, const int32_t *seqLens, const float *slopes,
                                float *out, unsigned threads, const DecodeExtras &extras) {
  if (threads == 0)
    threads = defaultThreads();
  const int64_t B = p.batch, Sq = p.qLen, Hq = p.qHeads, Hkv = p.kvHeads, D = p.headDim;
  const int64_t ratio = Hq / Hkv, R = ratio * Sq; // rows per (b, KV head)
  const size_t kvRow = size_t(Hkv) * size_t(D);   // floats between consecutive tokens
  auto lenOf = [&](int64_t b) {
    int64_t L = seqLens ? int64_t(seqLens[b]) : p.kvLen;
    return std::min(p.kvLen, std::max<int64_t>(0, L));
  };
  // Chunks of keys, so that a few long sequences still fill every thread.
  int64_t maxLen = 0;
  for (int64_t b = 0; b < B; ++b)
    maxLen = std::max(maxLen, lenOf(b));
  const int64_t pairs = B * Hkv;
  int64_t wantChunks = std::max<int64_t>(1, (4 * int64_t(threads) + pairs - 1) / pairs);
  int64_t chunkLen =
      std::max<int64_t>(256, (maxLen + wantChunks - 1) / std::max<int64_t>(wantChunks, 1));
  chunkLen = std::min<int64_t>(chunkLen, 2048);
  const int64_t chunks = std::max<int64_t>(1, (maxLen + chunkLen - 1) / chunkLen);
  // partial state [pair][chunk][row] and accumulators [pair][chunk][row][D]
  std::vector<Partial> part(size_t(pairs * chunks * R));
  std::vector<double> acc(size_t(pairs * chunks * R) * size_t(D), 0.0);

  parallelFor(size_t(pairs * chunks), threads, [&](size_t task) {
    const int64_t pair = int64_t(task) / chunks, c = int64_t(task) % chunks;
    const int64_t b = pair / Hkv, g = pair % Hkv, L = lenOf(b);
    const int64_t t0 = c * chunkLen, t1 = std::min(L, t0 + chunkLen);
    if (t0 >= t1)
      return;
    const int64_t n = t1 - t0;
    // rows r = i · ratio + j: query token i, query head h = g · ratio + j
    std::vector<double> qd(size_t(R * D)), s(size_t(R * n));
    std::vector<int64_t> pos(static_cast<size_t>(R));
    std::vector<double> slope(static_cast<size_t>(R), 0.0);
    for (int64_t r = 0; r < R; ++r) {
      const int64_t i = r / ratio, h = g * ratio + r % ratio;
      const float *qr =
          q + ((size_t(b) * size_t(Sq) + size_t(i)) * size_t(Hq) + size_t(h)) * size_t(D);
      for (int64_t d = 0; d < D; ++d)
        qd[size_t(r * D + d)] = double(qr[d]) * p.softmaxScale;
      pos[size_t(r)] = L - Sq + i;
      if (p.alibi && slopes)
        slope[size_t(r)] = double(slopes[h]);
    }
    const double ninf = -std::numeric_limits<double>::infinity();
    for (int64_t t = t0; t < t1; ++t) {
      const float *kt =
          k + (size_t(b) * size_t(p.kvLen) + size_t(t)) * kvRow + size_t(g) * size_t(D);
      for (int64_t r = 0; r < R; ++r) {
        double &out_s = s[size_t(r * n + (t - t0))];
        const int64_t ps = pos[size_t(r)];
        if ((p.causal && t > ps) || (p.windowLeft >= 0 && t < ps - p.windowLeft) ||
            (p.windowRight >= 0 && t > ps + p.windowRight)) {
          out_s = ninf;
          continue;
        }
        const double *qr = &qd[size_t(r * D)];
        double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
        int64_t d = 0;
        for (; d + 4 <= D; d += 4) {
          a0 += qr[d] * double(kt[d]);
          a1 += qr[d + 1] * double(kt[d + 1]);
          a2 += qr[d + 2] * double(kt[d + 2]);
          a3 += qr[d + 3] * double(kt[d + 3]);
        }
        for (; d < D; ++d)
          a0 += qr[d] * double(kt[d]);
        double x = (a0 + a1) + (a2 + a3);
        if (p.softcap > 0)
          x = p.softcap * std::tanh(x / p.softcap);
        out_s = x - slope[size_t(r)] * double(pos[size_t(r)] - t);
      }
    }
    Partial *pp = &part[size_t(task) * size_t(R)];
    double *ac = &acc[size_t(task) * size_t(R) * size_t(D)];
    for (int64_t r = 0; r < R; ++r) {
      double m = ninf;
      for (int64_t j = 0; j < n; ++j)
        m = std::max(m, s[size_t(r * n + j)]);
      pp[r].m = m;
      double l = 0;
      if (m != ninf)
        for (int64_t j = 0; j < n; ++j) {
          double &e = s[size_t(r * n + j)];
          e = std::exp(e - m); // exp(-inf) = 0 for invisible keys
          l += e;
        }
      pp[r].l = l;
    }
    for (int64_t t = t0; t < t1; ++t) {
      const float *vt =
          v + (size_t(b) * size_t(p.kvLen) + size_t(t)) * kvRow + size_t(g) * size_t(D);
      for (int64_t r = 0; r < R; ++r) {
        if (pp[r].m == ninf)
          continue;
        const double e = s[size_t(r * n + (t - t0))];
        if (e == 0)
          continue;
        double *ar = ac + r * D;
        for (int64_t d = 0; d < D; ++d)
          ar[d] += e * double(vt[d]);
      }
    }
  });

  // Merge the chunks of each (b, KV head) row and write out[b, i, h, :].
  parallelFor(size_t(pairs), threads, [&](size_t pair) {
    const int64_t b = int64_t(pair) / Hkv, g = int64_t(pair) % Hkv;
    for (int64_t r = 0; r < R; ++r) {
      const int64_t i = r / ratio, h = g * ratio + r % ratio;
      float *o = out + ((size_t(b) * size_t(Sq) + size_t(i)) * size_t(Hq) + size_t(h)) * size_t(D);
      const double ninf = -std::numeric_limits<double>::infinity();
      const double sink = extras.sinks ? double(extras.sinks[h]) : ninf;
      float *lse =
          extras.lse ? extras.lse + (size_t(b) * size_t(Sq) + size_t(i)) * size_t(Hq) + size_t(h)
                     : nullptr;
      double M = ninf;
      for (int64_t c = 0; c < chunks; ++c)
        M = std::max(M, part[(pair * size_t(chunks) + size_t(c)) * size_t(R) + size_t(r)].m);
      if (M == ninf) { // no visible key: O = 0, the log-sum-exp is the sink's logit alone
        std::fill(o, o + D, 0.0f);
        if (lse)
          *lse = static_cast<float>(sink);
        continue;
      }
      M = std::max(M, sink);
      std::vector<double> sum(size_t(D), 0.0);
      double l = sink == ninf ? 0.0 : std::exp(sink - M);
      for (int64_t c = 0; c < chunks; ++c) {
        const size_t idx = (pair * size_t(chunks) + size_t(c)) * size_t(R) + size_t(r);
        const Partial &pc = part[idx];
        if (pc.m == -std::numeric_limits<double>::infinity())
          continue;
        const double w = std::exp(pc.m - M);
        l += w * pc.l;
        for (int64_t d = 0; d < D; ++d)
          sum[size_t(d)] += w * acc[idx * size_t(D) + size_t(d)];
      }
      for (int64_t d = 0; d < D; ++d)
        o[d] = static_cast<float>(sum[size_t(d)] / l);
      if (lse)
        *lse = static_cast<float>(M + std::log(l));
    }
  });
}

double attn::ref::relativeError(const float *got, const float *want, size_t n, size_t *nan) {
  double num = 0, den = 0;
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(got[i])) {
      ++bad;
      continue;
    }
    double d = double(got[i]) - double(want[i]);
    num += d * d;
    den += double(want[i]) * double(want[i]);
  }
  if (nan)
    *nan = bad;
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}
