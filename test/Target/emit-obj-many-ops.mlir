// RUN: attn-opt %s --emit=obj -o %t.o
// RUN: llvm-nm %t.o | FileCheck %s
// RUN: attn-opt %s --emit=header | FileCheck %s --check-prefix=HEADER
// A function of several attn ops: each op is compiled as its own never-inlined function (LLVM's
// optimizer is superlinear in the size of one function), under a symbol no user function can
// take; the kernel and its C interface stay what the header declares. The C interface is the
// entry point (descriptor pointers, passed on to each op), its checks the unoptimized
// `__attn_many.check<j>` (16 descriptors or 32 extent relations each; nine buffers take one), and
// `__attn_many` forwards the unpacked ABI to it.

// CHECK-DAG: T __attn_many
// CHECK-DAG: {{[tT]}} __attn_many.check0
// CHECK-NOT: __attn_many.check1
// CHECK-DAG: {{[tT]}} __attn_many.op0
// CHECK-DAG: {{[tT]}} __attn_many.op1
// CHECK-DAG: {{[tT]}} __attn_many.op2
// CHECK-DAG: T _mlir_ciface___attn_many{{$}}

// HEADER: static inline int32_t many(const uint16_t *arg0, int8_t *arg1, float *arg2, const uint16_t *arg3, int8_t *arg4, float *arg5, const uint16_t *arg6, int8_t *arg7, float *arg8)
// HEADER-NOT: op0
func.func @many(%x0: memref<1x8x4x64xbf16>, %y0: memref<1x8x4x64xi8>, %s0: memref<1x8xf32>,
                %x1: memref<1x8x4x64xbf16>, %y1: memref<1x8x4x64xi8>, %s1: memref<1x8xf32>,
                %x2: memref<1x8x4x64xbf16>, %y2: memref<1x8x4x64xi8>, %s2: memref<1x8xf32>) {
  attn.quantize.dynamic ins(%x0 : memref<1x8x4x64xbf16>) outs(%y0, %s0 : memref<1x8x4x64xi8>, memref<1x8xf32>) {quant = #attn.quant<i8, per_token>, target = #attn.target<avx512>}
  attn.quantize.dynamic ins(%x1 : memref<1x8x4x64xbf16>) outs(%y1, %s1 : memref<1x8x4x64xi8>, memref<1x8xf32>) {quant = #attn.quant<i8, per_token>, target = #attn.target<avx512>}
  attn.quantize.dynamic ins(%x2 : memref<1x8x4x64xbf16>) outs(%y2, %s2 : memref<1x8x4x64xi8>, memref<1x8xf32>) {quant = #attn.quant<i8, per_token>, target = #attn.target<avx512>}
  return
}
