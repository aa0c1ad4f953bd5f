// RUN: attn-opt %s --emit=header | FileCheck %s --check-prefix=HEADER
// RUN: attn-opt %s --emit=asm | FileCheck %s --check-prefix=ASM
// RUN: attn-opt %s --emit=obj -o %t.o && llvm-nm %t.o | FileCheck %s --check-prefix=SYMS
// RUN: sed 's/avx2/neon/' %s | attn-opt - --emit=asm | FileCheck %s --check-prefix=NEON
// RUN: sed 's/avx2/avx512/' %s | attn-opt - --emit=asm | FileCheck %s --check-prefix=AVX512
// --emit=header / asm / obj for CPU targets: the header states every buffer; the machine code
// has the lookups the ISA promises.

// HEADER: typedef struct { void *allocated; void *aligned; int64_t offset; int64_t sizes[2]; int64_t strides[2]; } attn_memref_2d;
// HEADER: /* scores — target avx2.
// HEADER:  *   arg0: read    uint8_t[8][128][16]  (memref<8x128x16xui8>)
// HEADER:  *   arg2: read    uint8_t[2][arg2_dim1][128][16]  (memref<2x?x128x16xui8>)
// HEADER:  *   arg3: int64_t (index)
// HEADER:  *   arg4: written float[8][arg4_dim1]  (memref<8x?xf32>)
// The numbered extent checks over the dynamic extents, the kernel's status, and the wrapper that
// refuses what the kernel refuses before building any descriptor.
// HEADER:  *   check 1: arg4_dim1 <= arg2_dim1 * 32  (attn.pq.scores: 'scores' dim 1 must be at most 'codes' dim 1 * 32)
// HEADER-NOT: check 2
// HEADER: int32_t _mlir_ciface___attn_scores(attn_memref_3d *, attn_memref_2d *, attn_memref_4d *, int64_t, attn_memref_2d *);
// HEADER: static inline int32_t scores(const uint8_t *arg0, const float *arg1, const uint8_t *arg2, int64_t arg3, float *arg4, int64_t arg2_dim1, int64_t arg4_dim1) {
// HEADER:   const int64_t arg2_extents[4] = {2, arg2_dim1, 128, 16};
// HEADER-NEXT:   if (!attn_buffer_ok(arg2, 1, 4, arg2_extents))
// HEADER-NEXT:     return -1;
// HEADER:   if (!(arg4_dim1 <= arg2_dim1 * 32))
// HEADER-NEXT:     return 1;
// HEADER:   attn_memref_4d arg2_desc = {(void *)arg2, (void *)arg2, 0, {2, arg2_dim1, 128, 16}, {1 * arg2_dim1 * 128 * 16, 1 * 128 * 16, 1 * 16, 1}};
// HEADER:   return _mlir_ciface___attn_scores(&arg0_desc, &arg1_desc, &arg2_desc, arg3, &arg4_desc);

// ASM-LABEL: __attn_scores:
// ASM: vpshufb {{.*}}%ymm
// SYMS-DAG: T __attn_scores
// SYMS-DAG: T _mlir_ciface___attn_scores
// NEON: tbl {{v[0-9]+}}.16b, { {{v[0-9]+}}.16b }, {{v[0-9]+}}.16b
// AVX512: vpshufb {{.*}}%zmm
func.func @scores(%lut: memref<8x128x16xui8>, %p: memref<8x2xf32>, %codes: memref<2x?x128x16xui8>,
                  %n: index, %s: memref<8x?xf32>) {
  attn.pq.scores ins(%lut, %p, %codes : memref<8x128x16xui8>, memref<8x2xf32>, memref<2x?x128x16xui8>)
      length(%n) outs(%s : memref<8x?xf32>) {pq = #attn.pq<dsub = 1>, target = #attn.target<avx2>}
  return
}
