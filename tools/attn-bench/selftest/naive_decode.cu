// What this file is: a deliberately simple (slow) CUDA implementation of the decode kernel ABI of
// docs/GPUDecode.md — f_decode (TMA loads of K/V tiles through the two tensor maps, one thread per
// packed query row, online softmax, split-KV partials in the documented workspace layout) and
// f_combine — used only to check attn-bench, the runtime and the launch metadata end to end on a
// GPU before the generated kernels exist. Configured by macros (see run-selftest.sh):
//   KV: 0 i8, 1 f8E4M3FN, 2 bf16; KG / VG: 0 per_token_head, 1 per_token, 2 per_head,
//   3 per_tensor, 4 none; Q_LEN, HQ, HKV, D, TILE_N, CAUSAL, ALIBI, SEQ_LENS, SCALE; BROKEN=1
//   leaves the last packed row of every CTA unwritten (attn-bench must then FAIL).
#pragma nv_diag_suppress static_var_with_dynamic_init
#include <cuda.h>
#include <cuda/barrier>
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#ifndef BROKEN
#define BROKEN 0
#endif

using barrier = cuda::barrier<cuda::thread_scope_block>;
namespace cde = cuda::device::experimental;

constexpr int PACK = HQ / HKV, R = Q_LEN * PACK, W = R * (D + 2);
constexpr int E = KV == 2 ? 2 : 1;
constexpr float LOG2E = 1.4426950408889634f;

__device__ float scaleOf(const float *s, int gran, int b, int t, int h, int kvLen) {
  switch (gran) {
  case 0: return s[((long)b * kvLen + t) * HKV + h];
  case 1: return s[(long)b * kvLen + t];
  case 2: return s[h];
  case 3: return s[0];
  default: return 1.0f;
  }
}

__device__ float element(const unsigned char *tile, int t, int d) {
  if (KV == 2)
    return __bfloat162float(reinterpret_cast<const __nv_bfloat16 *>(tile)[t * D + d]);
  unsigned char c = tile[t * D + d];
  if (KV == 0)
    return float(static_cast<signed char>(c));
  __nv_fp8_e4m3 f;
  f.__x = c;
  return float(f);
}

extern "C" __global__ void __launch_bounds__(256)
f_decode(const __grid_constant__ CUtensorMap k_map, const __grid_constant__ CUtensorMap v_map,
         const __nv_bfloat16 *q, const float *k_scale, const float *v_scale, const int *seq_lens,
         const float *alibi, __nv_bfloat16 *out, float *ws, int batch, int kv_len,
         int num_splits) {
  extern __shared__ __align__(128) unsigned char smem[];
  unsigned char *kTile = smem, *vTile = smem + TILE_N * D * E;
  float *qs = reinterpret_cast<float *>(smem + 2 * TILE_N * D * E);
  float *acc = qs + R * D;
  __shared__ barrier bar;
  const int s = blockIdx.x, g = blockIdx.y, b = blockIdx.z, r = threadIdx.x;
  const int L = (SEQ_LENS && seq_lens) ? seq_lens[b] : kv_len;
  const int tiles = (L + TILE_N - 1) / TILE_N, perSplit = (tiles + num_splits - 1) / num_splits;
  const int tBegin = s * perSplit * TILE_N, tEnd = min(L, tBegin + perSplit * TILE_N);
  const int i = r / PACK, h = g * PACK + r % PACK, pos = L - Q_LEN + i;
  for (int x = threadIdx.x; x < R * D; x += blockDim.x) {
    int rr = x / D, d = x % D, ii = rr / PACK, hh = g * PACK + rr % PACK;
    qs[x] = __bfloat162float(q[(((long)b * Q_LEN + ii) * HQ + hh) * D + d]) * SCALE;
    acc[x] = 0;
  }
  if (threadIdx.x == 0) {
    init(&bar, blockDim.x);
    cde::fence_proxy_async_shared_cta();
  }
  __syncthreads();
  const float slope = (ALIBI && r < R) ? alibi[h] : 0.0f;
  float m = -INFINITY, l = 0;
  for (int t0 = tBegin; t0 < tEnd; t0 += TILE_N) {
    barrier::arrival_token token;
    if (threadIdx.x == 0) {
      cde::cp_async_bulk_tensor_4d_global_to_shared(kTile, &k_map, 0, g, t0, b, bar);
      cde::cp_async_bulk_tensor_4d_global_to_shared(vTile, &v_map, 0, g, t0, b, bar);
      token = cuda::device::barrier_arrive_tx(bar, 1, 2 * TILE_N * D * E);
    } else {
      token = bar.arrive();
    }
    bar.wait(std::move(token));
    if (r < R) {
      for (int t = t0; t < min(tEnd, t0 + TILE_N); ++t) {
        if (CAUSAL && t > pos)
          break;
        float ks = scaleOf(k_scale, KG, b, t, g, kv_len), dot = 0;
        for (int d = 0; d < D; ++d)
          dot += qs[r * D + d] * element(kTile, t - t0, d);
        float sc = dot * ks - slope * float(pos - t);
        float mNew = fmaxf(m, sc), corr = __expf(m - mNew), p = __expf(sc - mNew);
        float vs = scaleOf(v_scale, VG, b, t, g, kv_len);
        for (int d = 0; d < D; ++d)
          acc[r * D + d] = acc[r * D + d] * corr + p * vs * element(vTile, t - t0, d);
        l = l * corr + p;
        m = mNew;
      }
    }
    __syncthreads();
  }
  if (r >= R || (BROKEN && r == R - 1))
    return;
  if (num_splits == 1) {
    for (int d = 0; d < D; ++d)
      out[(((long)b * Q_LEN + i) * HQ + h) * D + d] =
          __float2bfloat16(l > 0 ? acc[r * D + d] / l : 0.0f);
    return;
  }
  float *part = ws + (((long)b * gridDim.y + g) * num_splits + s) * W;
  for (int d = 0; d < D; ++d)
    part[r * D + d] = acc[r * D + d];
  part[R * D + r] = m * LOG2E; // -inf stays -inf
  part[R * D + R + r] = l;
}

extern "C" __global__ void __launch_bounds__(128)
f_combine(const float *ws, __nv_bfloat16 *out, int batch, int num_splits) {
  const int r = blockIdx.x * 4 + threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = blockIdx.y, b = blockIdx.z;
  if (r >= R)
    return;
  const float *base = ws + ((long)b * gridDim.y + g) * num_splits * W;
  float M = -INFINITY;
  for (int s = 0; s < num_splits; ++s)
    M = fmaxf(M, base[s * W + R * D + r]);
  const int i = r / PACK, h = g * PACK + r % PACK;
  for (int d = lane; d < D; d += 32) {
    float o = 0, l = 0;
    if (M != -INFINITY)
      for (int s = 0; s < num_splits; ++s) {
        float ms = base[s * W + R * D + r];
        if (ms == -INFINITY)
          continue;
        float w = exp2f(ms - M);
        o += w * base[s * W + r * D + d];
        l += w * base[s * W + R * D + R + r];
      }
    out[(((long)b * Q_LEN + i) * HQ + h) * D + d] = __float2bfloat16(l > 0 ? o / l : 0.0f);
  }
}
