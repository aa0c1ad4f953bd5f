/* What this file is: the single-core read bandwidth of a buffer read again and again (the access
 * pattern of NoMAD's code-block scan), to bound what any lookup kernel can reach on a core.
 * Usage: read_bandwidth [MiB ...] (default 4 64); prints one JSON object per size with the best
 * pass over 40 repetitions. Build: cc -O2 -march=native read_bandwidth.c -o read_bandwidth. */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  int nsizes = argc > 1 ? argc - 1 : 2;
  for (int s = 0; s < nsizes; ++s) {
    size_t mib = argc > 1 ? (size_t)atol(argv[s + 1]) : (s == 0 ? 4 : 64);
    size_t bytes = mib << 20;
    uint8_t *buf = aligned_alloc(64, bytes);
    memset(buf, 1, bytes);
    double best = 1e30;
    unsigned long long sink = 0;
    for (int rep = 0; rep < 40; ++rep) {
      double t0 = now();
#ifdef __AVX512F__
      __m512i acc0 = _mm512_setzero_si512(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
      for (size_t i = 0; i < bytes; i += 256) {
        acc0 = _mm512_xor_si512(acc0, _mm512_load_si512(buf + i));
        acc1 = _mm512_xor_si512(acc1, _mm512_load_si512(buf + i + 64));
        acc2 = _mm512_xor_si512(acc2, _mm512_load_si512(buf + i + 128));
        acc3 = _mm512_xor_si512(acc3, _mm512_load_si512(buf + i + 192));
      }
      acc0 = _mm512_xor_si512(_mm512_xor_si512(acc0, acc1), _mm512_xor_si512(acc2, acc3));
      sink += (unsigned long long)_mm512_reduce_add_epi64(acc0);
#else
      __m256i acc0 = _mm256_setzero_si256(), acc1 = acc0;
      for (size_t i = 0; i < bytes; i += 64) {
        acc0 = _mm256_xor_si256(acc0, _mm256_load_si256((const __m256i *)(buf + i)));
        acc1 = _mm256_xor_si256(acc1, _mm256_load_si256((const __m256i *)(buf + i + 32)));
      }
      acc0 = _mm256_xor_si256(acc0, acc1);
      sink += (unsigned long long)_mm256_extract_epi64(acc0, 0);
#endif
      double dt = now() - t0;
      if (dt < best)
        best = dt;
    }
    printf("{\"mib\": %zu, \"best_us\": %.1f, \"gb_per_s\": %.2f, \"sink\": %llu}\n", mib,
           best * 1e6, bytes / best / 1e9, sink & 1);
    free(buf);
  }
  return 0;
}
