//===- ForwardSharedMemory.cpp - the forward kernel's shared memory -------===//
//
// What this file is: layoutForwardSharedMemory (ForwardSharedMemory.h), the shared-memory map of
// the sm_90a forward-attention kernel that the schedule's fit checks and the lowering share.
//
//===----------------------------------------------------------------------===//

#include "attn/Dialect/Attn/Transforms/ForwardSharedMemory.h"

#include <algorithm>

using namespace mlir::attn;

static int64_t alignUp(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

ForwardSharedLayout mlir::attn::layoutForwardSharedMemory(const AttentionShape &s, int64_t tileN,
                                                          int64_t stages, bool kDirect) {
  bool qk8 = s.int8QK || s.fp8;
  // bf16 caches: the WGMMAs read the TMA stages themselves (no conversion buffers, no scales).
  bool directKV = s.kvElemBytes == 2;
  // Half-int8 with the overlap: each consumer thread parks its two rows' query scales.
  bool parkQScales = kDirect && s.int8QK && !s.pv8();
  kDirect = kDirect || s.pv8(); // fp8 and full_int8 always read K from the stages
  // A row of Q (and of copied K) spans at least one 128-byte swizzle row (8-bit head_dim 64).
  int64_t qkRowBytes = std::max<int64_t>(128, s.headDim * (qk8 ? 1 : 2));
  int64_t stageTileBytes = tileN * s.headDim * s.kvElemBytes;

  ForwardSharedLayout m;
  int64_t off = 0;
  m.q = off;
  off += s.queryBuffers * s.queryTiles * 64 * qkRowBytes;
  m.stage = off;
  m.stageStride = alignUp(2 * stageTileBytes, 1024);
  m.stageV = stageTileBytes;
  off += stages * m.stageStride;
  m.conv = off;
  m.scales = off;
  m.nConv = directKV ? 0 : kDirect ? 3 : 2;
  if (m.nConv) { // conversion buffers (K unless read from the stage, then bf16 V) and scales
    m.convV = kDirect ? 0 : tileN * qkRowBytes;                       // 8-bit Q·Kᵀ: K in 8 bits
    m.convStride = m.convV + tileN * s.headDim * (s.pv8() ? 1 : 2); // V: bf16, or 8-bit Vᵀ
    off += m.nConv * m.convStride;
    m.scales = off;
    m.scaleStride = 2 * tileN * 4;
    off += m.nConv * m.scaleStride;
  }
  m.zeros = off; // K then V: per key, the magic constant whose subtraction gives k̂ − z
  if (s.zeroPoints)
    off += 2 * tileN * 4;
  m.qScales = off; // two floats per consumer thread
  if (parkQScales)
    off += s.queryTiles * 128 * 8;
  m.bars = off;
  off += 8 * (stages + 2 * m.nConv + (directKV || kDirect ? stages : 0) + (directKV ? 1 : 0));
  m.total = alignUp(off, 128);
  return m;
}
