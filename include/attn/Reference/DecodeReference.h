//===- DecodeReference.h - host side of the GPU decode checks ----*- C++ -*-===//
//
// What this file is: the host-side pieces attn-bench uses to check a GPU decode kernel, as plain
// C++17 with no MLIR/LLVM (it also builds with just g++ on the GPU machine): exact bf16 and
// float8 e4m3 (OCP E4M3FN) conversions, the K/V quantizers of docs/GPUDecode.md (i8 symmetric,
// f8E4M3FN, bf16; per_token_head / per_token / per_head / per_tensor scales), seeded input
// generation that does not depend on the thread count, and a multithreaded fp64 decode attention
// reference implementing the "Semantics" section of docs/GPUDecode.md.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_REFERENCE_DECODEREFERENCE_H
#define ATTN_REFERENCE_DECODEREFERENCE_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace attn::ref {

//===----------------------------------------------------------------------===//
// Number formats
//===----------------------------------------------------------------------===//

/// bfloat16 bits of `f`, rounded to nearest even; NaN stays a (quiet) NaN, overflow gives ±inf.
uint16_t floatToBf16(float f);
float bf16ToFloat(uint16_t bits);
/// `f` rounded to the nearest bf16 value.
inline float roundToBf16(float f) { return bf16ToFloat(floatToBf16(f)); }

/// Largest finite float8 e4m3 (E4M3FN) value.
constexpr float kE4M3Max = 448.0f;
/// E4M3FN code of `f`: round to nearest even, finite values and ±inf beyond ±448 saturate to
/// ±448 (0x7E / 0xFE, like cvt.rn.satfinite), NaN gives 0x7F (sign kept), -0 gives 0x80.
uint8_t floatToE4M3(float f);
/// Value of an E4M3FN code: 1 sign, 4 exponent bits (bias 7), 3 mantissa bits, subnormals
/// m·2^-9, no infinities, S.1111.111 is NaN.
float e4m3ToFloat(uint8_t code);

//===----------------------------------------------------------------------===//
// K/V quantization
//===----------------------------------------------------------------------===//

enum class KvType { I8, F8E4M3, BF16 };
enum class Granularity { PerTokenHead, PerToken, PerHead, PerTensor, None, PerBlock };

/// "i8" / "f8E4M3FN" / "bf16" and "per_token_head" / "per_token" / "per_head" / "per_tensor" /
/// "none" / "per_block" (the spellings of the launch metadata); false for anything else.
bool parseKvType(const std::string &s, KvType &out);
bool parseGranularity(const std::string &s, Granularity &out);
const char *kvTypeName(KvType t);
const char *granularityName(Granularity g);
/// Bytes of one stored K/V element (1 for i8 and e4m3, 2 for bf16).
int kvElementBytes(KvType t);

/// A K or V cache [B, S, H, D] (row-major).
struct KvShape {
  int64_t batch = 1, len = 1, heads = 1, dim = 1;
  /// Tokens of one head that share a scale under PerBlock (per_block<r x D>: [B, ceil(S/r), H]).
  int64_t blockRows = 1;
  size_t elements() const { return size_t(batch) * size_t(len) * size_t(heads) * size_t(dim); }
};

/// Number of f32 scales of a granularity: [B,S,H], [B,S], [H], [1], [B,ceil(S/r),H] (PerBlock),
/// or 0 for None.
size_t scaleCount(const KvShape &s, Granularity g);
/// Index into the scale array of the element at (b, t, h).
size_t scaleIndex(const KvShape &s, Granularity g, int64_t b, int64_t t, int64_t h);

/// Smallest scale the quantizers produce: a group whose amax is 0 (or below kMinScale·qmax)
/// gets scale kMinScale, so every code is finite and an all-zero group quantizes to zeros.
constexpr float kMinScale = 1e-8f;
/// i8 quantization of one value: clamp(round-half-away-from-zero(x / scale), -127, 127).
int8_t quantizeI8(float x, float scale);
/// Scale of a group with absolute maximum `amax` for `type` (amax/127 for i8, amax/448 for
/// e4m3), at least kMinScale.
float groupScale(float amax, KvType type);

struct QuantizedKv {
  KvType type = KvType::I8;
  Granularity granularity = Granularity::PerTokenHead;
  /// kvElementBytes(type) bytes per element: i8 two's complement, e4m3 codes, bf16 little-endian.
  std::vector<uint8_t> codes;
  /// scaleCount(shape, granularity) scales (empty for bf16).
  std::vector<float> scales;
  /// Asymmetric i8 / ui8 codes: one zero point per scale, as a byte of the codes' type (empty
  /// when symmetric). With `unsignedCodes` the codes and zero points are ui8.
  std::vector<uint8_t> zeros;
  bool unsignedCodes = false;
};

/// Quantizes `x` ([B,S,H,D]) per `type` and `g` (g must be None exactly for BF16): scales from the
/// absolute maximum of each group (all S tokens of the cache, not only those below seq_lens).
/// `asymmetric` (I8 only; docs/QuantSchemes.md): s = max((max − min) / 255, kMinScale) over the
/// group with 0 included, z = clamp(round(q_min − min / s)), x̂ = clamp(round(x · (1/s) + z)), in
/// [−128, 127], or [0, 255] with `unsignedCodes`.
void quantizeKv(const float *x, const KvShape &shape, KvType type, Granularity g, QuantizedKv &out,
                unsigned threads = 0, bool asymmetric = false, bool unsignedCodes = false);
/// x = scale · (x̂ − z) in f32 (z = 0 when symmetric; bf16 codes are widened as they are).
void dequantizeKv(const QuantizedKv &q, const KvShape &shape, float *out, unsigned threads = 0);

/// Fills the codes of the cache slots past each batch element's length (t ≥ lens[b]) with NaN
/// where the type has one (bf16 0x7FC0, e4m3 0x7F; i8 codes are left as they are): they are not
/// part of any sequence, and a kernel that lets them reach P · V then fails its check.
void poisonPastLengths(QuantizedKv &q, const KvShape &shape, const std::vector<int32_t> &lens);

//===----------------------------------------------------------------------===//
// Inputs
//===----------------------------------------------------------------------===//

/// Fills x[0..n) with N(0,1) samples (Box-Muller over splitmix64). The samples depend on
/// (seed, stream, index) only, not on `threads`.
void fillGaussian(float *x, size_t n, uint64_t seed, uint64_t stream, unsigned threads = 0);
/// The outlier channels of `--data outliers`: `count` distinct channels spread over [0, dim),
/// channel j = (j·dim/count + 3) mod dim.
std::vector<int64_t> outlierChannels(int64_t dim, int count = 4);
/// Multiplies those channels of every row of x ([rows, dim]) by `factor`.
void scaleChannels(float *x, size_t rows, int64_t dim, const std::vector<int64_t> &channels,
                   float factor);
/// x ← x · H for every row of x ([rows, dim]): H the normalized Walsh–Hadamard matrix of order
/// `dim` (a power of two; Sylvester order, H = Hᵀ = H⁻¹), the rotation of `hadamard` attention.
/// Applying it twice gives x back (up to rounding).
void hadamardRows(float *x, size_t rows, int64_t dim);

enum class SeqLenMode { Full, Random, Ragged };
bool parseSeqLenMode(const std::string &s, SeqLenMode &out);
const char *seqLenModeName(SeqLenMode m);
/// Per-batch lengths in [0, kvLen]: Full = kvLen everywhere; Random = uniform with batch 0 forced
/// to kvLen; Ragged = batches 0..3 get kvLen, 0, 1, kvLen−1 (clamped to [0, kvLen]), the rest are
/// uniform.
std::vector<int32_t> makeSeqLens(int64_t batch, int64_t kvLen, SeqLenMode mode, uint64_t seed);

/// ALiBi slopes 2^(−8(h+1)/Hq), h = 0..Hq−1.
std::vector<float> alibiSlopes(int64_t qHeads);

//===----------------------------------------------------------------------===//
// The reference
//===----------------------------------------------------------------------===//

struct DecodeProblem {
  int64_t batch = 1, qLen = 1, qHeads = 1, kvHeads = 1, headDim = 1, kvLen = 0;
  bool causal = false, alibi = false;
  double softmaxScale = 1;
  /// Logit soft-capping (0: none): s ← softcap · tanh(s / softcap) after the scale, before
  /// ALiBi and the masks (FlashAttention-3's convention).
  double softcap = 0;
  /// Sliding window (−1: unbounded on that side): query pos_i sees keys
  /// pos_i − windowLeft ≤ t ≤ pos_i + windowRight.
  int64_t windowLeft = -1, windowRight = -1;
};

/// out[B,Sq,Hq,D] = decode attention of q[B,Sq,Hq,D] over k, v [B,Skv,Hkv,D] (query head h reads
/// KV head h / (Hq/Hkv)), per docs/GPUDecode.md: L_b = seqLens[b] (all Skv when null; clamped to
/// [0, Skv]), pos_i = L_b − Sq + i, s = scale·q·k_t − slope_h·(pos_i − t) (slopes only with
/// `alibi`; null slopes mean none), causal: t ≤ pos_i; a query with no visible key gets 0.
/// Computed in fp64 (q, k, v read as f32), parallel over (batch, KV head, key chunk).
/// Optional parts of a decode reference: attention sinks (`sinks` [Hq]: logit s_h joins each
/// row's softmax denominator as e^(s_h − m), with no value row) and the log-sum-exp output
/// (`lse` [B, Sq, Hq]: log(e^(s_h) + Σ_t e^(s_t)) over the visible keys, natural log; −inf for a
/// row with no visible key and no sink). Null: none.
struct DecodeExtras {
  const float *sinks = nullptr;
  float *lse = nullptr;
};
void decodeReference(const DecodeProblem &p, const float *q, const float *k, const float *v,
                     const int32_t *seqLens, const float *slopes, float *out, unsigned threads = 0,
                     const DecodeExtras &extras = {});

/// ‖got − want‖₂ / ‖want‖₂ over the elements where `got` is not NaN (the absolute ‖got − want‖₂
/// when ‖want‖₂ = 0); `nan` counts the NaN elements of `got`.
double relativeError(const float *got, const float *want, size_t n, size_t *nan = nullptr);

//===----------------------------------------------------------------------===//
// Threads
//===----------------------------------------------------------------------===//

/// std::thread::hardware_concurrency(), at least 1 (ATTN_THREADS overrides).
unsigned defaultThreads();
/// Calls fn(i) for i in [0, n) on up to `threads` threads (0 = defaultThreads()); items are
/// handed out dynamically. Runs inline when n or threads is 1.
void parallelFor(size_t n, unsigned threads, const std::function<void(size_t)> &fn);

} // namespace attn::ref

#endif // ATTN_REFERENCE_DECODEREFERENCE_H
