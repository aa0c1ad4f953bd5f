// RUN: attn-opt %s --emit=ptx -split-input-file -verify-diagnostics -o /dev/null
// RUN: attn-opt %s --emit=launch -split-input-file -verify-diagnostics -o /dev/null
// Where an attn op sits decides whether it can become a kernel: inside a func.func at the top
// level of the module, alone with its return on sm_90a (the function becomes the kernel, so any
// other op would be dropped), and the function's name becomes a symbol. Everything else is
// refused on the op before any kernel is built.

%q = memref.alloc() : memref<1x1x8x128xbf16>
%k = memref.alloc() : memref<1x256x1x128xbf16>
%v = memref.alloc() : memref<1x256x1x128xbf16>
%o = memref.alloc() : memref<1x1x8x128xbf16>
// expected-error @+1 {{an attn op becomes a kernel only inside a func.func (directly in its body); this one is in 'builtin.module'}}
attn.attention decode ins(%q, %k, %v : memref<1x1x8x128xbf16>, memref<1x256x1x128xbf16>, memref<1x256x1x128xbf16>) outs(%o : memref<1x1x8x128xbf16>) {target = #attn.target<sm_90a>}

// -----

module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @g(%q: memref<1x1x8x128xbf16>, %k: memref<1x256x1x128xbf16>, %v: memref<1x256x1x128xbf16>, %o: memref<1x1x8x128xbf16>) kernel {
      // expected-error @+1 {{an attn op becomes a kernel only inside a func.func (directly in its body); this one is in 'gpu.func'}}
      attn.attention decode ins(%q, %k, %v : memref<1x1x8x128xbf16>, memref<1x256x1x128xbf16>, memref<1x256x1x128xbf16>) outs(%o : memref<1x1x8x128xbf16>) {target = #attn.target<sm_90a>}
      gpu.return
    }
  }
}

// -----

module {
  module @inner {
    func.func @nested(%q: memref<1x1x8x128xbf16>, %k: memref<1x256x1x128xbf16>, %v: memref<1x256x1x128xbf16>, %o: memref<1x1x8x128xbf16>) {
      // expected-error @+1 {{the function 'nested' of this attn op is not at the top level of the module (it is in 'builtin.module'): kernels come from top-level functions only}}
      attn.attention decode ins(%q, %k, %v : memref<1x1x8x128xbf16>, memref<1x256x1x128xbf16>, memref<1x256x1x128xbf16>) outs(%o : memref<1x1x8x128xbf16>) {target = #attn.target<sm_90a>}
      return
    }
  }
}

// -----

func.func @with_store(%q: memref<1x1x8x128xbf16>, %k: memref<1x256x1x128xbf16>, %v: memref<1x256x1x128xbf16>, %o: memref<1x1x8x128xbf16>, %x: memref<4xf32>) {
  attn.attention decode ins(%q, %k, %v : memref<1x1x8x128xbf16>, memref<1x256x1x128xbf16>, memref<1x256x1x128xbf16>) outs(%o : memref<1x1x8x128xbf16>) {target = #attn.target<sm_90a>}
  %c0 = arith.constant 0 : index
  // expected-error @-1 {{'arith.constant' in a GPU kernel function: such a function holds its attn op and the return only}}
  %f = arith.constant 1.0 : f32
  memref.store %f, %x[%c0] : memref<4xf32>
  return
}

// -----

func.func @in_loop(%q: memref<1x1x8x128xbf16>, %k: memref<1x256x1x128xbf16>, %v: memref<1x256x1x128xbf16>, %o: memref<1x1x8x128xbf16>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    // expected-error @+1 {{an attn op becomes a kernel only inside a func.func (directly in its body); this one is in 'scf.for'}}
    attn.attention decode ins(%q, %k, %v : memref<1x1x8x128xbf16>, memref<1x256x1x128xbf16>, memref<1x256x1x128xbf16>) outs(%o : memref<1x1x8x128xbf16>) {target = #attn.target<sm_90a>}
  }
  return
}

// -----

// expected-error @+1 {{function name 'has space' cannot name a kernel: it becomes a symbol and C text, so it must be an identifier}}
func.func @"has space"(%q: memref<1x1x8x128xbf16>, %k: memref<1x256x1x128xbf16>, %v: memref<1x256x1x128xbf16>, %o: memref<1x1x8x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<1x1x8x128xbf16>, memref<1x256x1x128xbf16>, memref<1x256x1x128xbf16>) outs(%o : memref<1x1x8x128xbf16>) {target = #attn.target<sm_90a>}
  return
}

// -----

// expected-error @+1 {{function name 'a.b' cannot name a kernel}}
func.func @"a.b"(%q: memref<1x1x8x128xbf16>, %k: memref<1x256x1x128xbf16>, %v: memref<1x256x1x128xbf16>, %o: memref<1x1x8x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<1x1x8x128xbf16>, memref<1x256x1x128xbf16>, memref<1x256x1x128xbf16>) outs(%o : memref<1x1x8x128xbf16>) {target = #attn.target<sm_90a>}
  return
}

// -----

// expected-error @+1 {{cannot name a kernel: it becomes a symbol and C text}}
func.func @"dé"(%q: memref<1x1x8x128xbf16>, %k: memref<1x256x1x128xbf16>, %v: memref<1x256x1x128xbf16>, %o: memref<1x1x8x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<1x1x8x128xbf16>, memref<1x256x1x128xbf16>, memref<1x256x1x128xbf16>) outs(%o : memref<1x1x8x128xbf16>) {target = #attn.target<sm_90a>}
  return
}

// -----

func.func @first(%q: memref<1x1x8x128xbf16>, %k: memref<1x256x1x128xbf16>, %v: memref<1x256x1x128xbf16>, %o: memref<1x1x8x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<1x1x8x128xbf16>, memref<1x256x1x128xbf16>, memref<1x256x1x128xbf16>) outs(%o : memref<1x1x8x128xbf16>) {target = #attn.target<sm_90a>}
  return
}
func.func @second(%q: memref<1x1x8x128xbf16>, %k: memref<1x256x1x128xbf16>, %v: memref<1x256x1x128xbf16>, %o: memref<1x1x8x128xbf16>) {
  // expected-error @+1 {{not supported yet: 3 GPU kernel specs in one module}}
  attn.attention decode ins(%q, %k, %v : memref<1x1x8x128xbf16>, memref<1x256x1x128xbf16>, memref<1x256x1x128xbf16>) outs(%o : memref<1x1x8x128xbf16>) {target = #attn.target<sm_90a>}
  return
}
func.func @third(%q: memref<1x1x8x128xbf16>, %k: memref<1x256x1x128xbf16>, %v: memref<1x256x1x128xbf16>, %o: memref<1x1x8x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<1x1x8x128xbf16>, memref<1x256x1x128xbf16>, memref<1x256x1x128xbf16>) outs(%o : memref<1x1x8x128xbf16>) {target = #attn.target<sm_90a>}
  return
}
