// RUN: attn-opt %s --emit=ptx -split-input-file -verify-diagnostics
// RUN: not attn-opt %s --emit=cubin -split-input-file 2>&1 | FileCheck %s --check-prefix=CUBIN
// RUN: not attn-opt %s --attn-normalize=target=sm_90a --emit=header -split-input-file 2>&1 | FileCheck %s --check-prefix=HEADER
// --emit: a kernel variant without a lowering is refused with a located "not supported yet"
// naming what is missing — never an empty or fake artifact. (Decode and bf16 / int8-query
// prefill on sm_90a compile: see test/Conversion/AttnToNVVM/emit-ptx.mlir.)

func.func @prefill(%q: memref<2x64x8x128xbf16>, %k: memref<2x100x1x128xi8>, %v: memref<2x100x1x128xi8>,
                   %ks: memref<2x100x1xf32>, %vs: memref<2x100x1xf32>, %o: memref<2x64x8x128xbf16>) {
  // expected-error @+2 {{not supported yet by convert-attn-to-nvvm: mode half_int8 for prefill with 'bf16' queries (Q·Kᵀ on s8 WGMMA needs int8 queries with per_token_head scales)}}
  // CUBIN: error: not supported yet by convert-attn-to-nvvm: mode half_int8 for prefill with 'bf16' queries
  attn.attention prefill ins(%q, %k, %v : memref<2x64x8x128xbf16>, memref<2x100x1x128xi8>, memref<2x100x1x128xi8>)
      k_scale(%ks : memref<2x100x1xf32>) v_scale(%vs : memref<2x100x1xf32>) outs(%o : memref<2x64x8x128xbf16>)
      {k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>, target = #attn.target<sm_90a>}
  return
}

// -----

func.func @cpu_op_to_ptx(%k: memref<1x2x128xf32>, %cb: memref<2x128x16x1xf32>, %c: memref<2x4x128x16xui8>, %p: index) {
  // expected-error @+1 {{--emit=ptx needs a GPU (sm_90a) target, but this op targets avx2}}
  attn.pq.encode ins(%k, %cb : memref<1x2x128xf32>, memref<2x128x16x1xf32>) offset(%p) outs(%c : memref<2x4x128x16xui8>) {pq = #attn.pq<dsub = 1>, target = #attn.target<avx2>}
  return
}

// -----

func.func @no_target(%q: memref<1x1x64x576xbf16>, %kv: memref<1x100x576xbf16>, %o: memref<1x1x64x512xbf16>) {
  // expected-error @+2 {{no target: write target = #attn.target<...> or run attn-normalize{target=...}}}
  // HEADER: error: --emit=header needs a CPU target, but this op targets sm_90a
  attn.mla_decode ins(%q, %kv : memref<1x1x64x576xbf16>, memref<1x100x576xbf16>) outs(%o : memref<1x1x64x512xbf16>) {head_dim_v = 512 : i64, rope_dim = 64 : i64}
  return
}

// -----

// expected-error @+1 {{nothing to emit: the module holds no attn op}}
module {
  func.func @empty() {
    return
  }
}
