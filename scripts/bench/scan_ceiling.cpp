// scan_ceiling.cpp — the AVX2 4-bit scan's instruction mix alone, in core cycles per 32-key
// block, beside attn.pq.scores (u16 sums) and FAISS's accumulate_to_mem in one process on one
// pinned core: how far each kernel is from what the core can do with its instructions.
//
// Per (t, dsub) at head_dim 128: m = 128 / dsub sub-quantizers, m / 2 steps per block of two
// sub-quantizer rows (32 code bytes, 32 LUT bytes). One step, inline asm (AT&T):
//   shift   and, shift, and (nibbles); 2 × vpshufb; 2 × vpsrlw 8; 4 × vpaddw: the 11 vector
//           µops both kernels issued per step (FAISS 1.15.1; attn.pq.scores before vpmaddubsw)
//   madd    the same with vpmaddubsw against bytes (0, 1) in place of the two vpsrlw 8 (the same
//           u16 values; attn.pq.scores on avx2 now)
// Probes (cycles per block; *_madd: the madd step):
//   probe_reg[_madd]    steps from registers only (codes and tables stay in registers): the
//                       core's throughput for the mix, no loads, no epilogue
//   probe_mem[_madd]    the same steps loading each step's code bytes (streamed in our layout,
//                       t / 32 blocks, the scan's bytes) and LUT bytes
//   probe_full[_madd]   probe_mem plus the block epilogue attn.pq.scores emits on avx2 (row
//                       folds, even keys, unpack, two 32-byte stores): the scan hand-written,
//                       its u16 sums checked equal to ours
//   probe_faiss_epilogue[_madd]  probe_mem plus FAISS's 10-µop epilogue (combine2x2; its sums
//                       are in FAISS's order, not compared)
//   probe_pipelined[_madd]  probe_full with each block's epilogue after the first 4 steps of the
//                       next block (as attn.pq.scores on avx2 now), checked equal to ours
//   probe_reg_mulhi, probe_full_mulhi  the madd step with the nibble shift as vpmulhuw by 2^12
// Kernels: nomad_cpb (attn.pq.scores into u16), faiss_cpb (accumulate_to_mem_impl<AVX2>, bbs 32,
// same codes repacked by pq4_pack_codes, sums checked equal), base_cpb (the same scan from a
// baseline attn-opt, when built with one).
// Cycles: rdtsc ticks ÷ ticks per core cycle, measured in the same round by a chain of dependent
// 64-bit adds (1 cycle each); clock_ghz is the core clock that implies. Medians of `reps`
// round-robin rounds, each timed run right after an untimed run of the same function.
//
// Built and run by `scripts/bench-cpu-faiss --ceiling [--baseline-attn-opt OLD] --core C`
// (kernels from attn-opt, FAISS from the faiss-cpu wheel); the binary: bench REPS [t,t,...].
#include "bench_kernels.h"

#include <faiss/impl/fast_scan/fast_scan.h>
#include <faiss/utils/simd_levels.h>

#include <x86intrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace {
alignas(32) const uint8_t kLowNibble[32] = {15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15,
                                            15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15,
                                            15, 15, 15, 15, 15, 15, 15, 15, 15, 15};
const uint16_t kMulShift4 = 1 << 12;
alignas(32) const uint8_t kOddByte[32] = {0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1,
                                          0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1};

// One step on codes C and tables T: ymm1/ymm2 = A/B of the low nibbles (keys 0..15 of each row),
// ymm3/ymm4 = A/B of the high nibbles (keys 16..31); ymm0 = 0x0F bytes, ymm13 = bytes (0, 1).
#define PQ_NIBBLES(C, T)                                                                         \
  "vpand %%ymm0, " C ", %%ymm5\n\t"                                                             \
  "vpsrlw $4, " C ", %%ymm6\n\t"                                                                \
  "vpand %%ymm0, %%ymm6, %%ymm6\n\t"                                                            \
  "vpshufb %%ymm5, " T ", %%ymm5\n\t"                                                           \
  "vpshufb %%ymm6, " T ", %%ymm6\n\t"
#define PQ_SHIFT(C, T)                                                                           \
  PQ_NIBBLES(C, T)                                                                               \
  "vpaddw %%ymm5, %%ymm1, %%ymm1\n\t"                                                           \
  "vpsrlw $8, %%ymm5, %%ymm5\n\t"                                                               \
  "vpaddw %%ymm5, %%ymm2, %%ymm2\n\t"                                                           \
  "vpaddw %%ymm6, %%ymm3, %%ymm3\n\t"                                                           \
  "vpsrlw $8, %%ymm6, %%ymm6\n\t"                                                               \
  "vpaddw %%ymm6, %%ymm4, %%ymm4\n\t"
#define PQ_MADD(C, T)                                                                            \
  PQ_NIBBLES(C, T)                                                                               \
  "vpaddw %%ymm5, %%ymm1, %%ymm1\n\t"                                                           \
  "vpmaddubsw %%ymm13, %%ymm5, %%ymm5\n\t"                                                      \
  "vpaddw %%ymm5, %%ymm2, %%ymm2\n\t"                                                           \
  "vpaddw %%ymm6, %%ymm3, %%ymm3\n\t"                                                           \
  "vpmaddubsw %%ymm13, %%ymm6, %%ymm6\n\t"                                                      \
  "vpaddw %%ymm6, %%ymm4, %%ymm4\n\t"
// PQ_MADD with the nibble shift as a multiply-high too: vpmulhuw by 2^12 (ymm14) = u16 >> 4.
#define PQ_MULHI(C, T)                                                                           \
  "vpand %%ymm0, " C ", %%ymm5\n\t"                                                             \
  "vpmulhuw %%ymm14, " C ", %%ymm6\n\t"                                                         \
  "vpand %%ymm0, %%ymm6, %%ymm6\n\t"                                                            \
  "vpshufb %%ymm5, " T ", %%ymm5\n\t"                                                           \
  "vpshufb %%ymm6, " T ", %%ymm6\n\t"                                                           \
  "vpaddw %%ymm5, %%ymm1, %%ymm1\n\t"                                                           \
  "vpmaddubsw %%ymm13, %%ymm5, %%ymm5\n\t"                                                      \
  "vpaddw %%ymm5, %%ymm2, %%ymm2\n\t"                                                           \
  "vpaddw %%ymm6, %%ymm3, %%ymm3\n\t"                                                           \
  "vpmaddubsw %%ymm13, %%ymm6, %%ymm6\n\t"                                                      \
  "vpaddw %%ymm6, %%ymm4, %%ymm4\n\t"
// A step after loading its 32 code bytes and 32 LUT bytes at byte offset OFF.
#define PQ_LOADED(OPS, OFF)                                                                      \
  "vmovdqu " #OFF "(%[c]), %%ymm7\n\t"                                                          \
  "vmovdqu " #OFF "(%%r8), %%ymm8\n\t" OPS("%%ymm7", "%%ymm8")
#define PQ_ZERO                                                                                  \
  "vpxor %%xmm1, %%xmm1, %%xmm1\n\t"                                                            \
  "vpxor %%xmm2, %%xmm2, %%xmm2\n\t"                                                            \
  "vpxor %%xmm3, %%xmm3, %%xmm3\n\t"                                                            \
  "vpxor %%xmm4, %%xmm4, %%xmm4\n\t"
// attn.pq.scores' avx2 epilogue (as attn-opt emits it): fold rows, even keys, unpack, store.
#define PQ_EPILOGUE                                                                              \
  "vpblendd $240, %%ymm3, %%ymm1, %%ymm5\n\t"                                                   \
  "vperm2i128 $33, %%ymm3, %%ymm1, %%ymm1\n\t"                                                  \
  "vpaddw %%ymm1, %%ymm5, %%ymm1\n\t"                                                           \
  "vpblendd $240, %%ymm4, %%ymm2, %%ymm3\n\t"                                                   \
  "vperm2i128 $33, %%ymm4, %%ymm2, %%ymm2\n\t"                                                  \
  "vpaddw %%ymm2, %%ymm3, %%ymm2\n\t"                                                           \
  "vpsllw $8, %%ymm2, %%ymm3\n\t"                                                               \
  "vpsubw %%ymm3, %%ymm1, %%ymm1\n\t"                                                           \
  "vpunpcklwd %%ymm2, %%ymm1, %%ymm3\n\t"                                                       \
  "vpunpckhwd %%ymm2, %%ymm1, %%ymm1\n\t"                                                       \
  "vinserti128 $1, %%xmm1, %%ymm3, %%ymm2\n\t"                                                  \
  "vmovdqu %%ymm2, (%[o])\n\t"                                                                  \
  "vperm2i128 $49, %%ymm1, %%ymm3, %%ymm1\n\t"                                                  \
  "vmovdqu %%ymm1, 32(%[o])\n\t"                                                                \
  "add $64, %[o]\n\t"
// FAISS's AVX2 epilogue (accumulate_to_mem, bbs 32): even keys before the folds, combine2x2 (a
// lane permute, a blend and an add) per accumulator pair, two 32-byte stores; its sums come out
// in the order its code packing defines, not in key order (not compared).
#define PQ_EPILOGUE_FAISS                                                                        \
  "vpsllw $8, %%ymm2, %%ymm5\n\t"                                                               \
  "vpsubw %%ymm5, %%ymm1, %%ymm1\n\t"                                                           \
  "vpsllw $8, %%ymm4, %%ymm6\n\t"                                                               \
  "vpsubw %%ymm6, %%ymm3, %%ymm3\n\t"                                                           \
  "vperm2i128 $33, %%ymm2, %%ymm1, %%ymm5\n\t"                                                  \
  "vpblendd $240, %%ymm2, %%ymm1, %%ymm1\n\t"                                                   \
  "vpaddw %%ymm5, %%ymm1, %%ymm1\n\t"                                                           \
  "vperm2i128 $33, %%ymm4, %%ymm3, %%ymm6\n\t"                                                  \
  "vpblendd $240, %%ymm4, %%ymm3, %%ymm3\n\t"                                                   \
  "vpaddw %%ymm6, %%ymm3, %%ymm3\n\t"                                                           \
  "vmovdqu %%ymm1, (%[o])\n\t"                                                                  \
  "vmovdqu %%ymm3, 32(%[o])\n\t"                                                                \
  "add $64, %[o]\n\t"

#define PQ_CLOBBERS                                                                              \
  "r8", "r9", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",   \
      "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "memory", "cc"
#define PQ_CONSTANTS                                                                             \
  "vmovdqa %[mask], %%ymm0\n\t"                                                                 \
  "vmovdqa %[odd], %%ymm13\n\t"                                                                 \
  "vpbroadcastw %[shift4], %%ymm14\n\t"

/// `nb` blocks of `quads` × 4 steps from registers only: the codes and tables of the first two
/// steps stay in ymm9..ymm12 (`out` is not written).
#define PQ_REG(NAME, OPS)                                                                        \
  __attribute__((noinline)) void NAME(const uint8_t *codes, const uint8_t *lut, uint16_t *,     \
                                      int64_t nb, int64_t quads) {                               \
    asm volatile(PQ_CONSTANTS "vmovdqu (%[c]), %%ymm9\n\t"                                        \
                              "vmovdqu 32(%[c]), %%ymm10\n\t"                                     \
                              "vmovdqu (%[l]), %%ymm11\n\t"                                       \
                              "vmovdqu 32(%[l]), %%ymm12\n\t"                                     \
                              "1:\n\t" PQ_ZERO "mov %[q], %%r9\n\t"                                \
                              "2:\n\t" OPS("%%ymm9", "%%ymm11") OPS("%%ymm10", "%%ymm12")          \
                                  OPS("%%ymm9", "%%ymm11") OPS("%%ymm10", "%%ymm12")             \
                              "dec %%r9\n\t"                                                      \
                              "jnz 2b\n\t"                                                        \
                              "dec %[nb]\n\t"                                                     \
                              "jnz 1b\n\t"                                                        \
                              "vzeroupper\n\t"                                                    \
                 : [nb] "+r"(nb)                                                                 \
                 : [c] "r"(codes), [l] "r"(lut), [q] "r"(quads), [mask] "m"(kLowNibble),         \
                   [odd] "m"(kOddByte), [shift4] "m"(kMulShift4)                                \
                 : PQ_CLOBBERS);                                                                 \
  }

/// `nb` blocks streaming the codes ([blk][m][16], 32 bytes a step) and the LUT (32 bytes a step,
/// the same m × 16 bytes for every block), then the block epilogue EPI (may be empty).
#define PQ_MEM(NAME, OPS, EPI)                                                                   \
  __attribute__((noinline)) void NAME(const uint8_t *codes, const uint8_t *lut, uint16_t *out,  \
                                      int64_t nb, int64_t quads) {                               \
    asm volatile(PQ_CONSTANTS "1:\n\t" PQ_ZERO "mov %[l], %%r8\n\t"                               \
                              "mov %[q], %%r9\n\t"                                                \
                              "2:\n\t" PQ_LOADED(OPS, 0) PQ_LOADED(OPS, 32) PQ_LOADED(OPS, 64)    \
                                  PQ_LOADED(OPS, 96)                                             \
                              "add $128, %[c]\n\t"                                                \
                              "add $128, %%r8\n\t"                                                \
                              "dec %%r9\n\t"                                                      \
                              "jnz 2b\n\t" EPI "dec %[nb]\n\t"                                   \
                              "jnz 1b\n\t"                                                        \
                              "vzeroupper\n\t"                                                    \
                 : [nb] "+r"(nb), [c] "+r"(codes), [o] "+r"(out)                                 \
                 : [l] "r"(lut), [q] "r"(quads), [mask] "m"(kLowNibble), [odd] "m"(kOddByte),    \
                   [shift4] "m"(kMulShift4)                                                      \
                 : PQ_CLOBBERS);                                                                 \
  }


// PQ_EPILOGUE on the previous block's accumulators, kept in ymm9..ymm12 (temporary ymm14).
#define PQ_EPILOGUE_PREV                                                                         \
  "vpblendd $240, %%ymm11, %%ymm9, %%ymm14\n\t"                                                 \
  "vperm2i128 $33, %%ymm11, %%ymm9, %%ymm9\n\t"                                                 \
  "vpaddw %%ymm9, %%ymm14, %%ymm9\n\t"                                                          \
  "vpblendd $240, %%ymm12, %%ymm10, %%ymm11\n\t"                                                \
  "vperm2i128 $33, %%ymm12, %%ymm10, %%ymm10\n\t"                                               \
  "vpaddw %%ymm10, %%ymm11, %%ymm10\n\t"                                                        \
  "vpsllw $8, %%ymm10, %%ymm11\n\t"                                                             \
  "vpsubw %%ymm11, %%ymm9, %%ymm9\n\t"                                                          \
  "vpunpcklwd %%ymm10, %%ymm9, %%ymm11\n\t"                                                     \
  "vpunpckhwd %%ymm10, %%ymm9, %%ymm9\n\t"                                                      \
  "vinserti128 $1, %%xmm9, %%ymm11, %%ymm10\n\t"                                                \
  "vmovdqu %%ymm10, (%[o])\n\t"                                                                 \
  "vperm2i128 $49, %%ymm9, %%ymm11, %%ymm9\n\t"                                                 \
  "vmovdqu %%ymm9, 32(%[o])\n\t"                                                                \
  "add $64, %[o]\n\t"
#define PQ_KEEP                                                                                  \
  "vmovdqa %%ymm1, %%ymm9\n\t"                                                                  \
  "vmovdqa %%ymm2, %%ymm10\n\t"                                                                 \
  "vmovdqa %%ymm3, %%ymm11\n\t"                                                                 \
  "vmovdqa %%ymm4, %%ymm12\n\t"

/// PQ_MEM with each block's epilogue run after the first 4 steps of the next block (software
/// pipelined; the last block's after the loop): its inputs are complete when it issues.
#define PQ_PIPELINED(NAME, OPS)                                                                  \
  __attribute__((noinline)) void NAME(const uint8_t *codes, const uint8_t *lut, uint16_t *out,  \
                                      int64_t nb, int64_t quads) {                               \
    asm volatile(PQ_CONSTANTS PQ_ZERO "mov %[l], %%r8\n\t"                                        \
                                      "mov %[q], %%r9\n\t"                                        \
                                      "3:\n\t" PQ_LOADED(OPS, 0) PQ_LOADED(OPS, 32)                 \
                                          PQ_LOADED(OPS, 64) PQ_LOADED(OPS, 96)                  \
                                      "add $128, %[c]\n\t"                                        \
                                      "add $128, %%r8\n\t"                                        \
                                      "dec %%r9\n\t"                                              \
                                      "jnz 3b\n\t" PQ_KEEP "dec %[nb]\n\t"                       \
                                      "jz 4f\n\t"                                                 \
                                      "1:\n\t" PQ_ZERO "mov %[l], %%r8\n\t"                        \
                                      "mov %[q], %%r9\n\t" PQ_LOADED(OPS, 0) PQ_LOADED(OPS, 32)    \
                                          PQ_LOADED(OPS, 64) PQ_LOADED(OPS, 96)                  \
                                              PQ_EPILOGUE_PREV "add $128, %[c]\n\t"              \
                                      "add $128, %%r8\n\t"                                        \
                                      "dec %%r9\n\t"                                              \
                                      "jz 5f\n\t"                                                 \
                                      "2:\n\t" PQ_LOADED(OPS, 0) PQ_LOADED(OPS, 32)                 \
                                          PQ_LOADED(OPS, 64) PQ_LOADED(OPS, 96)                  \
                                      "add $128, %[c]\n\t"                                        \
                                      "add $128, %%r8\n\t"                                        \
                                      "dec %%r9\n\t"                                              \
                                      "jnz 2b\n\t"                                                \
                                      "5:\n\t" PQ_KEEP "dec %[nb]\n\t"                            \
                                      "jnz 1b\n\t"                                                \
                                      "4:\n\t" PQ_EPILOGUE_PREV "vzeroupper\n\t"                  \
                 : [nb] "+r"(nb), [c] "+r"(codes), [o] "+r"(out)                                 \
                 : [l] "r"(lut), [q] "r"(quads), [mask] "m"(kLowNibble), [odd] "m"(kOddByte),    \
                   [shift4] "m"(kMulShift4)                                                      \
                 : PQ_CLOBBERS);                                                                 \
  }

PQ_REG(probeReg, PQ_SHIFT)
PQ_MEM(probeMem, PQ_SHIFT, "")
PQ_MEM(probeFull, PQ_SHIFT, PQ_EPILOGUE)
PQ_MEM(probeFaissEpilogue, PQ_SHIFT, PQ_EPILOGUE_FAISS)
PQ_REG(probeRegMadd, PQ_MADD)
PQ_MEM(probeMemMadd, PQ_MADD, "")
PQ_MEM(probeFullMadd, PQ_MADD, PQ_EPILOGUE)
PQ_REG(probeRegMulhi, PQ_MULHI)
PQ_MEM(probeFullMulhi, PQ_MULHI, PQ_EPILOGUE)
PQ_MEM(probeFaissEpilogueMadd, PQ_MADD, PQ_EPILOGUE_FAISS)
PQ_PIPELINED(probePipelined, PQ_SHIFT)
PQ_PIPELINED(probePipelinedMadd, PQ_MADD)

using ProbeFn = void (*)(const uint8_t *, const uint8_t *, uint16_t *, int64_t, int64_t);
struct Probe {
  const char *name;
  ProbeFn fn;
  bool keyOrder; // writes the u16 sums in key order (compared with ours)
};
const Probe kProbes[] = {
    {"probe_reg", probeReg, false},
    {"probe_mem", probeMem, false},
    {"probe_full", probeFull, true},
    {"probe_faiss_epilogue", probeFaissEpilogue, false},
    {"probe_reg_madd", probeRegMadd, false},
    {"probe_mem_madd", probeMemMadd, false},
    {"probe_full_madd", probeFullMadd, true},
    {"probe_reg_mulhi", probeRegMulhi, false},
    {"probe_full_mulhi", probeFullMulhi, true},
    {"probe_faiss_epilogue_madd", probeFaissEpilogueMadd, false},
    {"probe_pipelined", probePipelined, true},
    {"probe_pipelined_madd", probePipelinedMadd, true},
};

/// A chain of `iters` × 64 dependent adds: 64 · iters core cycles.
__attribute__((noinline)) uint64_t addChain(int64_t iters) {
  uint64_t x = 0;
#define ADD4 "add $1, %[x]\n\tadd $1, %[x]\n\tadd $1, %[x]\n\tadd $1, %[x]\n\t"
#define ADD16 ADD4 ADD4 ADD4 ADD4
  asm volatile("1:\n\t" ADD16 ADD16 ADD16 ADD16 "dec %[n]\n\t"
               "jnz 1b\n\t"
               : [x] "+r"(x), [n] "+r"(iters)
               :
               : "cc");
  return x;
}

template <typename T> struct Aligned {
  explicit Aligned(size_t n)
      : p(static_cast<T *>(std::aligned_alloc(64, (n * sizeof(T) + 63) / 64 * 64))), n(n) {
    std::memset(p, 0, n * sizeof(T));
  }
  ~Aligned() { std::free(p); }
  Aligned(const Aligned &) = delete;
  Aligned &operator=(const Aligned &) = delete;
  T *p;
  size_t n;
};

struct Scan {
  int dsub;
  int32_t (*scan)(const uint8_t *, const float *, const uint8_t *, int64_t, uint16_t *, int64_t,
                  int64_t);
  decltype(scan) base = nullptr; // the same kernel from a baseline attn-opt (BENCH_BASE)
};
#ifdef BENCH_BASE
#include "bench_base.h"
#define ENTRY(ISA, DSUB)                                                                         \
  Scan{std::string(#ISA) == "avx2" ? DSUB : 0, scan_##ISA##_##DSUB,                            \
       reinterpret_cast<decltype(Scan::scan)>(&scanbase_##ISA##_##DSUB)}
#else
#define ENTRY(ISA, DSUB) Scan{std::string(#ISA) == "avx2" ? DSUB : 0, scan_##ISA##_##DSUB}
#endif

/// Our block layout [blk][sub][16] → FAISS's flat codes [key][sub / 2].
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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// One (t, dsub) cell: the kernels, the probes and the clock chain timed round-robin; prints one
/// JSON line; false when a check fails.
bool runCell(const Scan &e, int64_t t, int reps, std::mt19937 &rng) {
  const int64_t m = 128 / e.dsub, nb = t / 32, quads = m / 8;
  Aligned<uint8_t> codes(nb * m * 16), lut(m * 16), packedLut(m * 16);
  for (size_t i = 0; i < codes.n; ++i)
    codes.p[i] = rng();
  for (size_t i = 0; i < lut.n; ++i)
    lut.p[i] = rng();
  std::vector<uint8_t> flat = flatCodes(codes.p, t, m);
  Aligned<uint8_t> faissCodes(nb * 32 * m / 2);
  faiss::pq4_pack_codes(flat.data(), t, m, nb * 32, 32, m, faissCodes.p);
  faiss::pq4_pack_LUT(1, m, lut.p, packedLut.p);
  Aligned<uint16_t> ours(t), accu(t), base(t), probe(t);
  float params[2] = {1, 0};

  std::vector<std::string> names = {"nomad", "faiss"};
  std::vector<std::function<void()>> fns = {
      [&] { e.scan(lut.p, params, codes.p, t, ours.p, nb, t); },
      [&] {
        faiss::accumulate_to_mem_impl<faiss::SIMDLevel::AVX2>(1, nb * 32, m, faissCodes.p,
                                                              packedLut.p, accu.p);
      },
  };
  if (e.base) {
    names.push_back("base");
    fns.push_back([&] { e.base(lut.p, params, codes.p, t, base.p, nb, t); });
  }
  for (const Probe &p : kProbes) {
    names.push_back(p.name);
    fns.push_back([&] { p.fn(codes.p, lut.p, probe.p, nb, quads); });
  }
  const int64_t chainIters = 2000; // 128 000 cycles
  fns.push_back([&] { addChain(chainIters); });
  const size_t n = fns.size(), chain = n - 1;

  std::vector<std::vector<double>> cycles(n);
  std::vector<double> ghz;
  for (int w = 0; w < 2; ++w)
    for (auto &f : fns)
      f();
  for (int r = 0; r < reps; ++r) {
    std::vector<uint64_t> ticks(n);
    auto c0 = std::chrono::steady_clock::now();
    uint64_t r0 = __rdtsc();
    for (size_t i = 0; i < n; ++i) {
      fns[i]();
      _mm_lfence();
      uint64_t a = __rdtsc();
      _mm_lfence();
      fns[i]();
      _mm_lfence();
      ticks[i] = __rdtsc() - a;
    }
    double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - c0)
                    .count();
    double ticksPerCycle = double(ticks[chain]) / (64.0 * chainIters);
    ghz.push_back((__rdtsc() - r0) / ns / ticksPerCycle);
    for (size_t i = 0; i < chain; ++i)
      cycles[i].push_back(ticks[i] / ticksPerCycle / nb);
  }

  // Checks: FAISS's and the baseline's u16 sums against ours; the key-order probes too.
  e.scan(lut.p, params, codes.p, t, ours.p, nb, t);
  faiss::accumulate_to_mem_impl<faiss::SIMDLevel::AVX2>(1, nb * 32, m, faissCodes.p, packedLut.p,
                                                        accu.p);
  bool scanEqual = std::equal(ours.p, ours.p + t, accu.p);
  if (e.base) {
    e.base(lut.p, params, codes.p, t, base.p, nb, t);
    scanEqual &= std::equal(ours.p, ours.p + t, base.p);
  }
  bool probeEqual = true;
  for (const Probe &p : kProbes)
    if (p.keyOrder) {
      std::fill(probe.p, probe.p + t, 0);
      p.fn(codes.p, lut.p, probe.p, nb, quads);
      probeEqual &= std::equal(ours.p, ours.p + t, probe.p);
    }

  std::string row = "{\"t\": " + std::to_string(t) + ", \"dsub\": " + std::to_string(e.dsub) +
                    ", \"isa\": \"avx2\", \"steps\": " + std::to_string(m / 2) +
                    ", \"reps\": " + std::to_string(reps);
  char buf[96];
  std::vector<double> med(chain);
  for (size_t i = 0; i < chain; ++i) {
    med[i] = median(cycles[i]);
    std::snprintf(buf, sizeof buf, ", \"%s_cpb\": %.2f", names[i].c_str(), med[i]);
    row += buf;
  }
  std::snprintf(buf, sizeof buf, ", \"clock_ghz\": %.3f, \"scan_ratio\": %.3f", median(ghz),
                med[1] / med[0]);
  row += buf;
  if (e.base) {
    std::snprintf(buf, sizeof buf, ", \"base_scan_ratio\": %.3f", med[1] / med[2]);
    row += buf;
  }
  row += std::string(", \"scan_equal\": ") + (scanEqual ? "true" : "false") +
         ", \"probe_equal\": " + (probeEqual ? "true" : "false") + "}";
  std::printf("%s\n", row.c_str());
  std::fflush(stdout);
  if (!scanEqual || !probeEqual)
    std::fprintf(stderr, "error: u16 sums differ (t=%lld dsub=%d): kernels %s, probes %s\n",
                 (long long)t, e.dsub, scanEqual ? "equal" : "differ",
                 probeEqual ? "equal" : "differ");
  return scanEqual && probeEqual;
}
} // namespace

int main(int argc, char **argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 51;
  std::vector<int64_t> lengths = {4096, 16384, 65536};
  if (argc > 2) {
    lengths.clear();
    for (char *p = std::strtok(argv[2], ","); p; p = std::strtok(nullptr, ","))
      lengths.push_back(std::atoll(p));
  }
  if (reps < 1) {
    std::fprintf(stderr, "error: reps must be at least 1\n");
    return 2;
  }
  if (!__builtin_cpu_supports("avx2") ||
      !faiss::SIMDConfig::is_simd_level_available(faiss::SIMDLevel::AVX2)) {
    std::fprintf(stderr, "error: the probe needs AVX2 (CPU and FAISS)\n");
    return 2;
  }
  faiss::SIMDConfig::set_level(faiss::SIMDLevel::AVX2);
  std::vector<Scan> scans = {
#include "bench_table.inc"
  };
  std::mt19937 rng(7);
  bool ok = true;
  for (int64_t t : lengths) {
    if (t <= 0 || t % 32) {
      std::fprintf(stderr, "error: key count %lld is not a positive multiple of 32\n",
                   (long long)t);
      return 2;
    }
    for (const Scan &e : scans)
      if (e.dsub)
        ok &= runCell(e, t, reps, rng);
  }
  return ok ? 0 : 1;
}
