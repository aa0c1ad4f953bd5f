// What this file is: compares attn::ref::floatToE4M3 / floatToBf16 / e4m3ToFloat
// (lib/Reference/DecodeReference.cpp) bit for bit with the GPU's own conversions
// (cvt.rn.satfinite.e4m3, cvt.rn.bf16) over every float bit pattern (NaN inputs: any NaN code);
// built by make-selftest.sh, run by run-selftest.sh. Exit 0 when everything agrees.
#include "attn/Reference/DecodeReference.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

__global__ void convert(uint32_t base, uint32_t n, uint8_t *f8, uint16_t *bf) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  float x = __uint_as_float(base + i);
  f8[i] = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
  __nv_bfloat16 b = __float2bfloat16_rn(x);
  bf[i] = *reinterpret_cast<uint16_t *>(&b);
}

__global__ void decode(float *out) {
  __half_raw h = __nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(threadIdx.x), __NV_E4M3);
  out[threadIdx.x] = __half2float(__half(h));
}

int main() {
  const uint32_t chunk = 1u << 28;
  uint8_t *df8 = nullptr;
  uint16_t *dbf = nullptr;
  if (cudaMalloc(&df8, chunk) != cudaSuccess || cudaMalloc(&dbf, chunk * 2ull) != cudaSuccess) {
    std::printf("conversions_check: no GPU memory\n");
    return 2;
  }
  std::vector<uint8_t> f8(chunk);
  std::vector<uint16_t> bf(chunk);
  std::atomic<unsigned long long> badF8{0}, badBf{0};
  for (uint64_t base = 0; base < (1ull << 32); base += chunk) {
    convert<<<chunk / 256, 256>>>(uint32_t(base), chunk, df8, dbf);
    cudaMemcpy(f8.data(), df8, chunk, cudaMemcpyDeviceToHost);
    cudaMemcpy(bf.data(), dbf, chunk * 2ull, cudaMemcpyDeviceToHost);
    attn::ref::parallelFor(64, 0, [&](size_t part) {
      unsigned long long b8 = 0, bb = 0;
      for (uint32_t i = uint32_t(part) * (chunk / 64); i < uint32_t(part + 1) * (chunk / 64); ++i) {
        uint32_t bits = uint32_t(base) + i;
        float x;
        std::memcpy(&x, &bits, 4);
        uint8_t mine = attn::ref::floatToE4M3(x);
        bool f8ok = std::isnan(x) ? (mine & 0x7f) == 0x7f && (f8[i] & 0x7f) == 0x7f : mine == f8[i];
        if (!f8ok && b8++ < 3)
          std::printf("e4m3 of %08x: gpu %02x, ours %02x\n", bits, f8[i], mine);
        uint16_t mb = attn::ref::floatToBf16(x);
        bool bfok = std::isnan(x) ? std::isnan(attn::ref::bf16ToFloat(mb)) &&
                                        std::isnan(attn::ref::bf16ToFloat(bf[i]))
                                  : mb == bf[i];
        if (!bfok && bb++ < 3)
          std::printf("bf16 of %08x: gpu %04x, ours %04x\n", bits, bf[i], mb);
      }
      badF8 += b8;
      badBf += bb;
    });
  }
  float *dout = nullptr, out[256];
  cudaMalloc(&dout, sizeof(out));
  decode<<<1, 256>>>(dout);
  cudaMemcpy(out, dout, sizeof(out), cudaMemcpyDeviceToHost);
  int badDecode = 0;
  for (int c = 0; c < 256; ++c) {
    float mine = attn::ref::e4m3ToFloat(uint8_t(c));
    if (!(mine == out[c] || (std::isnan(mine) && std::isnan(out[c])))) {
      ++badDecode;
      std::printf("value of e4m3 %02x: gpu %g, ours %g\n", c, out[c], mine);
    }
  }
  std::printf("conversions_check: %llu e4m3 and %llu bf16 mismatches over 2^32 floats, %d of 256 "
              "e4m3 values differ\n",
              badF8.load(), badBf.load(), badDecode);
  return badF8 || badBf || badDecode ? 1 : 0;
}
