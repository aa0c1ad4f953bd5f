// RUN: attn-opt %s --emit=obj -split-input-file -verify-diagnostics -o /dev/null
// RUN: attn-opt %s --emit=header -split-input-file -verify-diagnostics -o /dev/null
// CPU kernels: the op sits in a top-level func.func (loops around it are fine, they are
// lowered too), and every function's name is pasted into the C header and becomes a symbol:
// only identifiers get there.

%q = memref.alloc() : memref<4x128xf32>
%cb = memref.alloc() : memref<1x128x16x1xf32>
%l = memref.alloc() : memref<4x128x16xui8>
%pp = memref.alloc() : memref<4x2xf32>
// expected-error @+1 {{an attn op becomes a kernel only inside a func.func; this one is in 'builtin.module'}}
attn.pq.lut ins(%q, %cb : memref<4x128xf32>, memref<1x128x16x1xf32>) outs(%l, %pp : memref<4x128x16xui8>, memref<4x2xf32>) {pq = #attn.pq<dsub = 1>, target = #attn.target<avx2>}

// -----

module {
  module @inner {
    func.func @lut(%q: memref<4x128xf32>, %cb: memref<1x128x16x1xf32>, %l: memref<4x128x16xui8>, %pp: memref<4x2xf32>) {
      // expected-error @+1 {{the function 'lut' of this attn op is not at the top level of the module}}
      attn.pq.lut ins(%q, %cb : memref<4x128xf32>, memref<1x128x16x1xf32>) outs(%l, %pp : memref<4x128x16xui8>, memref<4x2xf32>) {pq = #attn.pq<dsub = 1>, target = #attn.target<avx2>}
      return
    }
  }
}

// -----

// expected-error @+1 {{function name 'x); int evil(void' cannot name a kernel}}
func.func @"x); int evil(void"(%q: memref<4x128xf32>, %cb: memref<1x128x16x1xf32>, %l: memref<4x128x16xui8>, %pp: memref<4x2xf32>) {
  attn.pq.lut ins(%q, %cb : memref<4x128xf32>, memref<1x128x16x1xf32>) outs(%l, %pp : memref<4x128x16xui8>, memref<4x2xf32>) {pq = #attn.pq<dsub = 1>, target = #attn.target<avx2>}
  return
}

// -----

func.func @lut(%q: memref<4x128xf32>, %cb: memref<1x128x16x1xf32>, %l: memref<4x128x16xui8>, %pp: memref<4x2xf32>) {
  attn.pq.lut ins(%q, %cb : memref<4x128xf32>, memref<1x128x16x1xf32>) outs(%l, %pp : memref<4x128x16xui8>, memref<4x2xf32>) {pq = #attn.pq<dsub = 1>, target = #attn.target<avx2>}
  return
}
// A function without attn op is still declared in the header.
// expected-error @+1 {{cannot name a kernel: it becomes a symbol and C text}}
func.func @"x\0A#include <evil.h>"() {
  return
}

// -----

// expected-error @+1 {{function name 'int' cannot name a kernel}}
func.func @int(%q: memref<4x128xf32>, %cb: memref<1x128x16x1xf32>, %l: memref<4x128x16xui8>, %pp: memref<4x2xf32>) {
  attn.pq.lut ins(%q, %cb : memref<4x128xf32>, memref<1x128x16x1xf32>) outs(%l, %pp : memref<4x128x16xui8>, memref<4x2xf32>) {pq = #attn.pq<dsub = 1>, target = #attn.target<avx2>}
  return
}

// -----

// A name the C library declares: the header's `static inline` function would clash with it (or,
// without the library header, replace `malloc` in every file that includes the header).
// expected-error @+1 {{function name 'malloc' cannot name a kernel: it becomes a symbol and C text, so it must be an identifier ([A-Za-z_][A-Za-z0-9_]*, at most 128 characters, not a C keyword or a name the C library declares or reserves}}
func.func @malloc(%q: memref<4x128xf32>, %cb: memref<1x128x16x1xf32>, %l: memref<4x128x16xui8>, %pp: memref<4x2xf32>) {
  attn.pq.lut ins(%q, %cb : memref<4x128xf32>, memref<1x128x16x1xf32>) outs(%l, %pp : memref<4x128x16xui8>, memref<4x2xf32>) {pq = #attn.pq<dsub = 1>, target = #attn.target<avx2>}
  return
}

// -----

// expected-error @+1 {{function name 'int32_t' cannot name a kernel}}
func.func @int32_t(%q: memref<4x128xf32>, %cb: memref<1x128x16x1xf32>, %l: memref<4x128x16xui8>, %pp: memref<4x2xf32>) {
  attn.pq.lut ins(%q, %cb : memref<4x128xf32>, memref<1x128x16x1xf32>) outs(%l, %pp : memref<4x128x16xui8>, memref<4x2xf32>) {pq = #attn.pq<dsub = 1>, target = #attn.target<avx2>}
  return
}

// -----

// expected-error @+1 {{function name 'sqrtf' cannot name a kernel}}
func.func @sqrtf(%q: memref<4x128xf32>, %cb: memref<1x128x16x1xf32>, %l: memref<4x128x16xui8>, %pp: memref<4x2xf32>) {
  attn.pq.lut ins(%q, %cb : memref<4x128xf32>, memref<1x128x16x1xf32>) outs(%l, %pp : memref<4x128x16xui8>, memref<4x2xf32>) {pq = #attn.pq<dsub = 1>, target = #attn.target<avx2>}
  return
}
