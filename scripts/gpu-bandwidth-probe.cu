// What this file is: the read-bandwidth ceiling of the GPU at decode's sizes. It times kernels
// that only read memory (no attention) the way attn-bench times a decode kernel: back-to-back
// launches between CUDA events, median of 50 after 10 warm-ups, the input rotating over 4 copies
// so the 50 MiB L2 holds none of it. Two access patterns:
//   vec  - every thread streams 16-byte loads (8 in flight) over its CTA's contiguous chunk;
//   bulk - decode's pattern: one thread per CTA issues cp.async.bulk copies of `chunk` bytes into
//          a ring of `stages` shared-memory buffers on mbarriers, one consumer warp releases them.
//   bulk_kv - decode's exact layout at 2048 x 128: K and V arrays (+ per-token scales), each
//          stage one copy from each, optionally held `hold` cycles before release (the time a
//          decode producer spends converting a tile).
//   tma_kv - bulk_kv with K and V loaded through tensor maps as the decode kernel loads them
//          (cp.async.bulk.tensor: 4-D [d, heads, seq, batch] with boxes [128, 1, 128, 1], or 2-D
//          [d, batch * seq] with boxes [128, rows]; u8, no swizzle, L2 promotion 256 B).
//   pages_kv - bulk_kv over a paged cache: K, V and their scales are pools of pages of `page`
//          tokens, a CTA reads its sequence's pages through a page table (in sequence order, or
//          shuffled over the whole pool as an allocator hands them out), each stage 128 tokens =
//          128 / page bulk copies per operand. Same bytes as bulk_kv; the difference between the
//          two orders is what scattering the pages costs the DRAM, with no attention work.
//   prefill_tiles (`bwprobe prefill`, alone) - prefill's bf16 K/V tiles from the L2 at the
//          8192 x 4 row of Tables 1/2, over 128-, 64-, 32- and 16-token pages: tensor-map boxes
//          of one page issued by one thread, against 16-byte cp.async gathers by a warpgroup.
// The plain readers (vec, bulk, memcpy) also run at the byte counts of the paged bench's rows,
// the read ceiling each row's times are set against (docs/benchmarks/gpu-paged.md).
// Each CTA reads a contiguous 1/grid of the buffer, as a decode CTA reads its batch's K and V.
// Prints one JSON line per configuration. docs/benchmarks/gpu-decode.md has the
// results and the command:
//   nvcc -O3 -arch=sm_90a -o /tmp/bwprobe scripts/gpu-bandwidth-probe.cu -lcuda && /tmp/bwprobe
//   /tmp/bwprobe prefill       # prefill_tiles only (docs/benchmarks/gpu-prefill.md)
#include <cuda.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#define CK(x)                                                                                   \
  do {                                                                                          \
    cudaError_t e_ = (x);                                                                       \
    if (e_ != cudaSuccess) {                                                                    \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));      \
      return 1;                                                                                 \
    }                                                                                           \
  } while (0)

__global__ void emptyKernel(int *out) {
  if (threadIdx.x == 1023) out[0] = 1;
}

__global__ void readVec(const int4 *__restrict__ p, size_t n16PerCta, int *out) {
  const int4 *base = p + blockIdx.x * n16PerCta;
  int acc = 0;
  for (size_t i = threadIdx.x; i < n16PerCta; i += size_t(blockDim.x) * 8) {
    int4 v[8];
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      size_t j = i + size_t(u) * blockDim.x;
      v[u] = j < n16PerCta ? __ldcs(base + j) : make_int4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < 8; ++u)
      acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  if (acc == 0x12345679)
    out[blockIdx.x] = acc;
}

__device__ __forceinline__ uint32_t smemAddr(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbarWait(uint32_t bar, uint32_t parity) {
  asm volatile("{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
               " @!p bra W;\n}\n" ::"r"(bar), "r"(parity) : "memory");
}

// The producer's side of stage s for load i: waits until the stage is free and arms its full
// barrier for `bytes` bytes of copies.
__device__ __forceinline__ void acquireStage(uint32_t full0, uint32_t empty0, int s, size_t i,
                                             int stages, int bytes) {
  mbarWait(empty0 + 8 * s, uint32_t((i / stages) & 1) ^ 1u);
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(full0 + 8 * s),
               "r"(bytes) : "memory");
}
// One 1-D bulk copy of `bytes` bytes from global memory into shared memory at `dst`, completing on
// the mbarrier `bar`.
__device__ __forceinline__ void bulkLoad(uint32_t dst, const void *src, int bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, "
               "[%3];" ::"r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}

// Thread 0 initializes the ring's `stages` full and empty mbarriers (one arrival each).
__device__ void initRing(uint32_t full0, uint32_t empty0, int stages) {
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(full0 + 8 * s));
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(empty0 + 8 * s));
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
}

// The consumer warp: waits for each of `n` stages, reads a word of it, works `hold` cycles on it
// (decode's conversion), and releases it.
__device__ int consumeRing(const char *smem, int stageBytes, size_t n, int stages, uint32_t full0,
                           uint32_t empty0, int hold) {
  int acc = 0;
  for (size_t i = 0; i < n; ++i) {
    int s = int(i % stages);
    mbarWait(full0 + 8 * s, uint32_t((i / stages) & 1));
    acc ^= reinterpret_cast<const int *>(smem + size_t(s) * stageBytes)[threadIdx.x];
    for (long long t0 = clock64(); clock64() - t0 < hold;)
      ;
    __syncwarp();
    if (threadIdx.x == 32)
      asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(empty0 + 8 * s) : "memory");
  }
  return acc;
}

// Shared memory: `stages` buffers of `chunk` bytes, then 2*stages mbarriers.
__global__ void readBulk(const char *__restrict__ p, size_t bytesPerCta, int chunk, int stages,
                         int *out) {
  extern __shared__ __align__(128) char smem[];
  uint64_t *bars = reinterpret_cast<uint64_t *>(smem + size_t(stages) * chunk);
  const uint32_t full0 = smemAddr(bars), empty0 = smemAddr(bars + stages);
  initRing(full0, empty0, stages);
  const char *base = p + blockIdx.x * bytesPerCta;
  const size_t n = bytesPerCta / chunk;
  int acc = 0;
  if (threadIdx.x == 0) {  // producer
    for (size_t i = 0; i < n; ++i) {
      int s = int(i % stages);
      acquireStage(full0, empty0, s, i, stages, chunk);
      bulkLoad(smemAddr(smem + size_t(s) * chunk), base + i * chunk, chunk, full0 + 8 * s);
    }
  } else if (threadIdx.x >= 32 && threadIdx.x < 64) {  // consumer warp
    acc = consumeRing(smem, chunk, n, stages, full0, empty0, 0);
  }
  if (acc == 0x12345679)
    out[blockIdx.x] = acc;
}


// Decode's layout: K and V are two arrays, a CTA reads its batch's rows of both, and (optional)
// the per-token K and V scales from two more; each stage is one `half`-byte copy from K and one
// from V (+ two `scaleBytes` copies).
__global__ void readBulkKV(const char *__restrict__ k, const char *__restrict__ v,
                           const char *__restrict__ ks, const char *__restrict__ vs,
                           size_t bytesPerCta, int half, int scaleBytes, int stages, int hold,
                           int *out) {
  extern __shared__ __align__(128) char smem[];
  const int stageBytes = 2 * half + 2 * scaleBytes;
  uint64_t *bars = reinterpret_cast<uint64_t *>(smem + size_t(stages) * stageBytes);
  const uint32_t full0 = smemAddr(bars), empty0 = smemAddr(bars + stages);
  initRing(full0, empty0, stages);
  const size_t n = bytesPerCta / half;
  const size_t sPer = n * scaleBytes;
  int acc = 0;
  if (threadIdx.x == 0) {
    for (size_t i = 0; i < n; ++i) {
      int s = int(i % stages);
      acquireStage(full0, empty0, s, i, stages, stageBytes);
      const char *src[4] = {k + blockIdx.x * bytesPerCta + i * half,
                            v + blockIdx.x * bytesPerCta + i * half,
                            ks + blockIdx.x * sPer + i * scaleBytes,
                            vs + blockIdx.x * sPer + i * scaleBytes};
      int len[4] = {half, half, scaleBytes, scaleBytes};
      uint32_t dst = smemAddr(smem + size_t(s) * stageBytes);
      for (int c = 0; c < (scaleBytes ? 4 : 2); ++c) {
        bulkLoad(dst, src[c], len[c], full0 + 8 * s);
        dst += len[c];
      }
    }
  } else if (threadIdx.x >= 32 && threadIdx.x < 64) {
    acc = consumeRing(smem, stageBytes, n, stages, full0, empty0, hold);
  }
  if (acc == 0x12345679)
    out[blockIdx.x] = acc;
}

// bulk_kv over pools of `page`-token pages (128-byte K and V rows, 4-byte scales): CTA b's
// logical page i is physical page table[b * pagesPerCta + i].
__global__ void readPagedKV(const char *__restrict__ k, const char *__restrict__ v,
                            const char *__restrict__ ks, const char *__restrict__ vs,
                            const int *__restrict__ table, int pagesPerCta, int page, int stages,
                            int hold, int *out) {
  extern __shared__ __align__(128) char smem[];
  const int tile = 128, perStage = tile / page;
  const int stageBytes = 2 * tile * 128 + 2 * tile * 4;
  uint64_t *bars = reinterpret_cast<uint64_t *>(smem + size_t(stages) * stageBytes);
  const uint32_t full0 = smemAddr(bars), empty0 = smemAddr(bars + stages);
  initRing(full0, empty0, stages);
  const size_t n = size_t(pagesPerCta) / perStage;
  int acc = 0;
  if (threadIdx.x == 0) {
    for (size_t i = 0; i < n; ++i) {
      int s = int(i % stages);
      acquireStage(full0, empty0, s, i, stages, stageBytes);
      uint32_t dst = smemAddr(smem + size_t(s) * stageBytes);
      for (int pg = 0; pg < perStage; ++pg) {
        size_t phys = size_t(table[size_t(blockIdx.x) * pagesPerCta + i * perStage + pg]);
        uint32_t at = dst + pg * page * 128, sat = dst + 2 * tile * 128 + pg * page * 4;
        bulkLoad(at, k + phys * page * 128, page * 128, full0 + 8 * s);
        bulkLoad(at + tile * 128, v + phys * page * 128, page * 128, full0 + 8 * s);
        bulkLoad(sat, ks + phys * page * 4, page * 4, full0 + 8 * s);
        bulkLoad(sat + tile * 4, vs + phys * page * 4, page * 4, full0 + 8 * s);
      }
    }
  } else if (threadIdx.x >= 32 && threadIdx.x < 64) {
    acc = consumeRing(smem, stageBytes, n, stages, full0, empty0, hold);
  }
  if (acc == 0x12345679)
    out[blockIdx.x] = acc;
}

// bulk_kv's K and V copies as tensor-map loads: `rank` 4 (coordinates {0, 0, row, batch}) or 2
// ({0, batch * rowsPerCta + row}); `rows` tokens per box, `boxes` boxes per stage and operand.
__global__ void readTmaKV(const __grid_constant__ CUtensorMap tk, const __grid_constant__ CUtensorMap tv,
                          const char *__restrict__ ks, const char *__restrict__ vs, int rank,
                          int rowsPerCta, int rows, int boxes, int scaleBytes, int stages, int *out) {
  extern __shared__ __align__(128) char smem[];
  const int half = rows * boxes * 128;
  const int stageBytes = 2 * half + 2 * scaleBytes;
  uint64_t *bars = reinterpret_cast<uint64_t *>(smem + size_t(stages) * stageBytes);
  const uint32_t full0 = smemAddr(bars), empty0 = smemAddr(bars + stages);
  initRing(full0, empty0, stages);
  const size_t n = size_t(rowsPerCta) / (rows * boxes);
  const size_t sPer = n * scaleBytes;
  int acc = 0;
  if (threadIdx.x == 0) {
    for (size_t i = 0; i < n; ++i) {
      int s = int(i % stages);
      acquireStage(full0, empty0, s, i, stages, stageBytes);
      uint32_t dst = smemAddr(smem + size_t(s) * stageBytes);
      for (int op = 0; op < 2; ++op) {
        const CUtensorMap *m = op ? &tv : &tk;
        for (int b = 0; b < boxes; ++b) {
          int row = int(i) * rows * boxes + b * rows;
          if (rank == 4)
            asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes "
                         "[%0], [%1, {%2, %3, %4, %5}], [%6];" ::"r"(dst), "l"(m), "r"(0), "r"(0),
                         "r"(row), "r"(int(blockIdx.x)), "r"(full0 + 8 * s) : "memory");
          else
            asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes "
                         "[%0], [%1, {%2, %3}], [%4];" ::"r"(dst), "l"(m), "r"(0),
                         "r"(int(blockIdx.x) * rowsPerCta + row), "r"(full0 + 8 * s) : "memory");
          dst += rows * 128;
        }
      }
      for (const char *sc : {ks, vs}) {
        if (!scaleBytes)
          break;
        bulkLoad(dst, sc + blockIdx.x * sPer + i * scaleBytes, scaleBytes, full0 + 8 * s);
        dst += scaleBytes;
      }
    }
  } else if (threadIdx.x >= 32 && threadIdx.x < 64) {
    acc = consumeRing(smem, stageBytes, n, stages, full0, empty0, 0);
  }
  if (acc == 0x12345679)
    out[blockIdx.x] = acc;
}

// Prefill's K/V tiles (docs/benchmarks/gpu-prefill.md, "Paged prefill"): 128 keys of bf16 K and V
// at head_dim 128 per stage (two 64-column blocks of 128-byte rows, 128-byte swizzled, 64 KB),
// from pools of `page`-token pages through a page table, every CTA reading its sequence's tiles
// from the L2 as prefill's CTAs do. `cpAsync` 0: thread 0 issues one tensor-map box per page and
// column block (2-D map [128, pool rows], box [64, page]; `page` 128: the contiguous kernel's
// boxes); 1: the 128 threads of warps 4-7 gather the rows with 16-byte cp.async copies into the
// same swizzled layout, completing on the full barrier (cp.async.mbarrier.arrive.noinc).
// The consumer warp holds each stage `hold` cycles (the two GEMMs of a tile).
__global__ void __launch_bounds__(256) readPrefillTiles(
    const __grid_constant__ CUtensorMap tk, const __grid_constant__ CUtensorMap tv,
    const char *__restrict__ k, const char *__restrict__ v, const int *__restrict__ table,
    int seqs, int tiles, int page, int stages, int hold, int cpAsync, int *out) {
  extern __shared__ __align__(128) char smem[];  // the dynamic base: 1024-aligned (no static smem)
  const int stageBytes = 65536, perTile = 128 / page, seq = blockIdx.x % seqs;
  uint64_t *bars = reinterpret_cast<uint64_t *>(smem + size_t(stages) * stageBytes);
  const uint32_t full0 = smemAddr(bars), empty0 = smemAddr(bars + stages);
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(full0 + 8 * s),
                   "r"(cpAsync ? 128 : 1));
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(empty0 + 8 * s));
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  const int *pages = table + size_t(seq) * tiles * perTile;
  int acc = 0;
  if (!cpAsync && threadIdx.x == 0) {
    for (int i = 0; i < tiles; ++i) {
      int s = i % stages;
      acquireStage(full0, empty0, s, i, stages, stageBytes);
      uint32_t dst = smemAddr(smem + size_t(s) * stageBytes);
      for (int pg = 0; pg < perTile; ++pg) {
        int row = pages[i * perTile + pg] * page;
        for (int op = 0; op < 2; ++op)
          for (int blk = 0; blk < 2; ++blk)
            asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::"
                         "bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(dst + op * 32768 + blk * 16384 +
                                                                   pg * page * 128),
                         "l"(op ? &tv : &tk), "r"(blk * 64), "r"(row), "r"(full0 + 8 * s)
                         : "memory");
      }
    }
  } else if (cpAsync && threadIdx.x >= 128) {
    const int t = threadIdx.x - 128;
    for (int i = 0; i < tiles; ++i) {
      int s = i % stages;
      mbarWait(empty0 + 8 * s, uint32_t((i / stages) & 1) ^ 1u);
      uint32_t dst = smemAddr(smem + size_t(s) * stageBytes);
      for (int j = 0; j < 16; ++j) {
        int q = t + 128 * j, r = q >> 4, blk = (q >> 3) & 1, c = q & 7;
        size_t row = size_t(pages[i * perTile + r / page]) * page + (r & (page - 1));
        uint32_t at = dst + blk * 16384 + r * 128 + ((c ^ (r & 7)) << 4);
        size_t from = row * 256 + blk * 128 + c * 16;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(at), "l"(k + from) : "memory");
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(at + 32768), "l"(v + from)
                     : "memory");
      }
      asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(full0 + 8 * s)
                   : "memory");
    }
  } else if (threadIdx.x >= 32 && threadIdx.x < 64) {
    acc = consumeRing(smem, stageBytes, tiles, stages, full0, empty0, hold);
  }
  if (acc == 0x12345679)
    out[blockIdx.x] = acc;
}

// A u8 tensor map over [batch][seq][128] bytes: rank 4 ([128, 1, seq, batch], box [128, 1, rows,
// 1]) or 2 ([128, batch * seq], box [128, rows]).
static bool makeMap(CUtensorMap *m, void *p, int rank, int batch, int seq, int rows) {
  cuuint64_t dims4[4] = {128, 1, cuuint64_t(seq), cuuint64_t(batch)};
  cuuint64_t str4[3] = {128, 128, cuuint64_t(seq) * 128};
  cuuint32_t box4[4] = {128, 1, cuuint32_t(rows), 1};
  cuuint64_t dims2[2] = {128, cuuint64_t(batch) * seq};
  cuuint64_t str2[1] = {128};
  cuuint32_t box2[2] = {128, cuuint32_t(rows)};
  cuuint32_t es[4] = {1, 1, 1, 1};
  CUresult r = cuTensorMapEncodeTiled(
      m, CU_TENSOR_MAP_DATA_TYPE_UINT8, rank, p, rank == 4 ? dims4 : dims2, rank == 4 ? str4 : str2,
      rank == 4 ? box4 : box2, es, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    fprintf(stderr, "cuTensorMapEncodeTiled failed: %d\n", int(r));
  return r == CUDA_SUCCESS;
}

template <typename F> static float medianUs(F launch, int copies) {
  for (int i = 0; i < 10; ++i)
    launch(i % copies);
  std::vector<cudaEvent_t> ev(51);
  for (auto &e : ev)
    cudaEventCreate(&e);
  cudaEventRecord(ev[0]);
  for (int i = 0; i < 50; ++i) {
    launch((i + 10) % copies);
    cudaEventRecord(ev[i + 1]);
  }
  cudaEventSynchronize(ev[50]);
  std::vector<float> ms(50);
  for (int i = 0; i < 50; ++i)
    cudaEventElapsedTime(&ms[i], ev[i], ev[i + 1]);
  for (auto &e : ev)
    cudaEventDestroy(e);
  std::sort(ms.begin(), ms.end());
  return 0.5f * (ms[24] + ms[25]) * 1e3f;
}

// `prefill`: readPrefillTiles at 8192 keys × 4 sequences (Table 1/2's 8192 × 4 row: 16 MB of K/V,
// L2-resident), one CTA per SM, each reading its sequence's 64 tiles; pages shuffled over the pool.
static int prefillTiles(int sms) {
  const int seqs = 4, seqLen = 8192, tiles = seqLen / 128, rows = seqs * seqLen;
  char *k = nullptr, *v = nullptr;
  int *table = nullptr, *out = nullptr;
  CK(cudaMalloc(&k, size_t(rows) * 256));
  CK(cudaMalloc(&v, size_t(rows) * 256));
  CK(cudaMemset(k, 1, size_t(rows) * 256));
  CK(cudaMemset(v, 1, size_t(rows) * 256));
  CK(cudaMalloc(&table, rows * sizeof(int)));
  CK(cudaMalloc(&out, 1 << 20));
  CK(cudaFuncSetAttribute(readPrefillTiles, cudaFuncAttributeMaxDynamicSharedMemorySize, 220 * 1024));
  for (int page : {128, 64, 32, 16}) {
    int pages = rows / page;
    std::vector<int> order(pages);
    for (int i = 0; i < pages; ++i)
      order[i] = i;
    uint64_t x = 88172645463325252ull;  // xorshift64: a fixed shuffle
    for (int i = pages - 1; page < 128 && i > 0; --i) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      std::swap(order[i], order[x % uint64_t(i + 1)]);
    }
    CK(cudaMemcpy(table, order.data(), pages * sizeof(int), cudaMemcpyHostToDevice));
    CUtensorMap mk, mv;
    for (int op = 0; op < 2; ++op) {
      cuuint64_t dims[2] = {128, cuuint64_t(rows)}, str[1] = {256};
      cuuint32_t box[2] = {64, cuuint32_t(page)}, es[2] = {1, 1};
      CUresult r = cuTensorMapEncodeTiled(
          op ? &mv : &mk, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, op ? v : k, dims, str, box, es,
          CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
          CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
      if (r != CUDA_SUCCESS) {
        fprintf(stderr, "cuTensorMapEncodeTiled failed: %d\n", int(r));
        return 1;
      }
    }
    for (int cpAsync : {0, 1})
      for (int stages : {2, 3})
        for (int hold : {0, 2000, 4000}) {
          size_t sm = size_t(stages) * 65536 + 16 * stages;
          float us = medianUs([&](int) {
            readPrefillTiles<<<sms, 256, sm>>>(mk, mv, k, v, table, seqs, tiles, page, stages,
                                               hold, cpAsync, out);
          }, 1);
          CK(cudaGetLastError());
          printf("{\"kernel\": \"prefill_tiles\", \"load\": \"%s\", \"page\": %d, \"grid\": %d, "
                 "\"stages\": %d, \"hold\": %d, \"us\": %.2f, \"us_per_tile\": %.3f, \"TBps\": "
                 "%.3f}\n", cpAsync ? "cp_async" : "tma", page, sms, stages, hold, us, us / tiles,
                 double(sms) * tiles * 65536 / (us * 1e6));
        }
  }
  CK(cudaDeviceSynchronize());
  return 0;
}

int main(int argc, char **argv) {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  if (argc > 1 && std::string(argv[1]) == "prefill")
    return prefillTiles(sms);
  // Table 3: ctx * batch = 262144 tokens, head_dim 128, int8 K and V, one f32 scale each.
  const size_t tokens = 262144, table3 = tokens * (2 * 128 + 2 * 4);
  const int copies = 4;
  // The plain readers also run at the K/V bytes of scripts/gpu-paged-bench.py's rows: bf16
  // Table 3 (262144 tokens of K and V at 256 bytes each), and GQA 8:1 at context 4096 (4 KV
  // heads) for batch 8, 64 and 256, int8 with two f32 scales per token and head, and bf16.
  auto gqa = [](size_t batch, size_t perToken) { return batch * 4096 * 4 * perToken; };
  std::vector<size_t> sizes = {table3,          size_t(1) << 30,  tokens * 512,
                               gqa(8, 264),     gqa(64, 264),     gqa(256, 264),
                               gqa(8, 512),     gqa(64, 512),     gqa(256, 512)};
  size_t maxBytes = *std::max_element(sizes.begin(), sizes.end());
  std::vector<char *> bufs(copies);
  for (auto &b : bufs) {
    CK(cudaMalloc(&b, maxBytes + (1 << 20)));
    CK(cudaMemset(b, 1, maxBytes + (1 << 20)));
  }
  int *out = nullptr;
  CK(cudaMalloc(&out, 1 << 20));
  CK(cudaFuncSetAttribute(readBulk, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  CK(cudaFuncSetAttribute(readBulkKV, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  float us = medianUs([&](int) { emptyKernel<<<128, 256>>>(out); }, copies);
  CK(cudaGetLastError());
  printf("{\"kernel\": \"empty\", \"grid\": 128, \"us\": %.2f}\n", us);
  // Decode's exact Table-3 layout (2048 x 128): K, V [128][2048][128] int8, scales [128][2048] f32.
  for (int scaled : {0, 1})
    for (int stages : {2, 3, 4})
    for (int hold : {0, 1000, 2000, 3000}) {
      size_t kvBytes = tokens * 128, per = kvBytes / 128;
      int half = 128 * 128, sb = scaled ? 128 * 4 : 0;
      size_t sm = size_t(stages) * (2 * half + 2 * sb) + 16 * stages;
      us = medianUs([&](int c) {
        readBulkKV<<<128, 64, sm>>>(bufs[c], bufs[c] + kvBytes + 4096,
                                    bufs[c] + 2 * (kvBytes + 4096),
                                    bufs[c] + 2 * (kvBytes + 4096) + tokens * 4 + 4096, per, half,
                                    sb, stages, hold, out);
      }, copies);
      CK(cudaGetLastError());
      printf("{\"kernel\": \"bulk_kv\", \"grid\": 128, \"stages\": %d, \"scales\": %d, \"hold\": %d, "
             "\"us\": %.2f, \"TBps\": %.3f}\n", stages, scaled, hold, us,
             (2.0 * kvBytes + (scaled ? 8.0 * tokens : 0)) / (us * 1e6));
    }
  // The same bytes as paged pools, pages in sequence order and shuffled (seed 0), beside bulk_kv.
  CK(cudaFuncSetAttribute(readPagedKV, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  {
    const size_t kvBytes = tokens * 128;
    int *table = nullptr;
    CK(cudaMalloc(&table, tokens * sizeof(int)));
    for (int page : {16, 32, 64, 128})
      for (int shuffled : {0, 1}) {
        int pages = int(tokens / page);
        std::vector<int> order(pages);
        for (int i = 0; i < pages; ++i)
          order[i] = i;
        uint64_t x = 88172645463325252ull;  // xorshift64: a fixed shuffle
        for (int i = pages - 1; shuffled && i > 0; --i) {
          x ^= x << 13, x ^= x >> 7, x ^= x << 17;
          std::swap(order[i], order[x % uint64_t(i + 1)]);
        }
        CK(cudaMemcpy(table, order.data(), pages * sizeof(int), cudaMemcpyHostToDevice));
        for (int stages : {2, 4})
        for (int hold : {0, 2000}) {
          size_t sm = size_t(stages) * (2 * 128 * 128 + 2 * 128 * 4) + 16 * stages;
          us = medianUs([&](int c) {
            readPagedKV<<<128, 64, sm>>>(bufs[c], bufs[c] + kvBytes + 4096,
                                         bufs[c] + 2 * (kvBytes + 4096),
                                         bufs[c] + 2 * (kvBytes + 4096) + tokens * 4 + 4096, table,
                                         pages / 128, page, stages, hold, out);
          }, copies);
          CK(cudaGetLastError());
          printf("{\"kernel\": \"pages_kv\", \"grid\": 128, \"page\": %d, \"shuffled\": %d, "
                 "\"stages\": %d, \"hold\": %d, \"us\": %.2f, \"TBps\": %.3f}\n", page, shuffled,
                 stages, hold, us, (2.0 * kvBytes + 8.0 * tokens) / (us * 1e6));
        }
      }
    CK(cudaFree(table));
  }
  // The same bytes through tensor maps (decode's loads), beside bulk_kv in the same run.
  CK(cudaFuncSetAttribute(readTmaKV, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  {
    const size_t kvBytes = tokens * 128;
    struct T { int rank, rows, boxes, stages; };
    for (T t : std::vector<T>{{4, 128, 1, 2}, {4, 128, 1, 3}, {4, 128, 1, 4}, {2, 128, 1, 2},
                              {2, 256, 1, 2}, {2, 128, 1, 4}, {4, 64, 2, 2}, {4, 32, 4, 2}}) {
      std::vector<CUtensorMap> mk(copies), mv(copies);
      for (int c = 0; c < copies; ++c)
        if (!makeMap(&mk[c], bufs[c], t.rank, 128, 2048, t.rows) ||
            !makeMap(&mv[c], bufs[c] + kvBytes + 4096, t.rank, 128, 2048, t.rows))
          return 1;
      const int sb = t.rows * t.boxes * 4;
      size_t sm = size_t(t.stages) * (2 * t.rows * t.boxes * 128 + 2 * sb) + 16 * t.stages;
      us = medianUs([&](int c) {
        readTmaKV<<<128, 64, sm>>>(mk[c], mv[c], bufs[c] + 2 * (kvBytes + 4096),
                                   bufs[c] + 2 * (kvBytes + 4096) + tokens * 4 + 4096, t.rank, 2048,
                                   t.rows, t.boxes, sb, t.stages, out);
      }, copies);
      CK(cudaGetLastError());
      printf("{\"kernel\": \"tma_kv\", \"grid\": 128, \"rank\": %d, \"box_rows\": %d, \"boxes\": %d, "
             "\"stages\": %d, \"us\": %.2f, \"TBps\": %.3f}\n", t.rank, t.rows, t.boxes, t.stages, us,
             (2.0 * kvBytes + 8.0 * tokens) / (us * 1e6));
    }
  }
  for (size_t bytes : sizes) {
    for (int grid : {128, sms, 2 * sms, 4 * sms, 8 * sms}) {
      for (int threads : {256, 512}) {
        size_t per = (bytes / grid) / 16;
        us = medianUs([&](int c) {
          readVec<<<grid, threads>>>(reinterpret_cast<const int4 *>(bufs[c]), per, out);
        }, copies);
        CK(cudaGetLastError());
        printf("{\"kernel\": \"vec\", \"bytes\": %zu, \"grid\": %d, \"threads\": %d, \"us\": %.2f, "
               "\"TBps\": %.3f}\n", bytes, grid, threads, us, per * 16.0 * grid / (us * 1e6));
      }
    }
    struct Cfg { int grid, chunk, stages; };
    std::vector<Cfg> cfgs = {{128, 32768, 4}, {128, 32768, 5}, {128, 16384, 8}, {sms, 32768, 4},
                             {2 * sms, 32768, 2}, {2 * sms, 16384, 5}, {256, 32768, 2},
                             {4 * sms, 16384, 2}};
    for (Cfg c : cfgs) {
      size_t per = (bytes / c.grid) / c.chunk * c.chunk;
      size_t sm = size_t(c.stages) * c.chunk + 16 * c.stages;
      us = medianUs([&](int k) {
        readBulk<<<c.grid, 64, sm>>>(bufs[k], per, c.chunk, c.stages, out);
      }, copies);
      CK(cudaGetLastError());
      printf("{\"kernel\": \"bulk\", \"bytes\": %zu, \"grid\": %d, \"chunk\": %d, \"stages\": %d, "
             "\"us\": %.2f, \"TBps\": %.3f}\n", bytes, c.grid, c.chunk, c.stages, us,
             per * double(c.grid) / (us * 1e6));
    }
    us = medianUs([&](int c) {
      cudaMemcpyAsync(bufs[c] + bytes / 2, bufs[c], bytes / 2, cudaMemcpyDeviceToDevice);
    }, copies);
    printf("{\"kernel\": \"memcpy_d2d\", \"bytes_read\": %zu, \"us\": %.2f, \"TBps_read_plus_write\": "
           "%.3f}\n", bytes / 2, us, bytes / (us * 1e6));
  }
  CK(cudaDeviceSynchronize());
  return 0;
}
