// RUN: attn-opt %s --convert-attn-to-cpu -split-input-file -verify-diagnostics
// RUN: not attn-opt %s --convert-attn-to-cpu=isa=sm_90a 2>&1 | FileCheck %s --check-prefix=ISA
// The CPU lowering refuses what it cannot lower, on the op, with the reason.

// ISA: convert-attn-to-cpu: unknown CPU isa 'sm_90a'

func.func @attention_on_cpu(%q: memref<1x1x4x64xf32>, %k: memref<1x100x1x64xf32>, %v: memref<1x100x1x64xf32>, %o: memref<1x1x4x64xf32>) {
  // expected-error @+1 {{not supported yet: convert-attn-to-cpu lowers the NoMAD attn.pq.* ops and attn.quantize.*, not 'attn.attention' on avx2}}
  attn.attention decode ins(%q, %k, %v : memref<1x1x4x64xf32>, memref<1x100x1x64xf32>, memref<1x100x1x64xf32>) outs(%o : memref<1x1x4x64xf32>) {target = #attn.target<avx2>}
  return
}

// -----

// The slot-mapped paged cache write has no CPU kernel.
func.func @paged_append_on_cpu(%x: memref<?x2x64xbf16>, %m: memref<?xi64>, %c: memref<?x16x2x64xi8>, %s: memref<?x16x2xf32>) {
  // expected-error @+1 {{not supported yet by convert-attn-to-cpu: attn.quantize.append_paged (a slot-mapped write into a paged cache) has an sm_90a kernel only}}
  attn.quantize.append_paged ins(%x : memref<?x2x64xbf16>) slot_mapping(%m : memref<?xi64>) outs(%c, %s : memref<?x16x2x64xi8>, memref<?x16x2xf32>) {page_size = 16, quant = #attn.quant<i8, per_token_head>, target = #attn.target<avx2>}
  return
}

// -----

// A paged K/V cache on a CPU target: refused like any attn.attention there.
func.func @paged_attention_on_cpu(%q: memref<2x1x4x64xf32>, %k: memref<16x16x1x64xf32>, %v: memref<16x16x1x64xf32>, %bt: memref<2x8xi32>, %o: memref<2x1x4x64xf32>) {
  // expected-error @+1 {{not supported yet: convert-attn-to-cpu lowers the NoMAD attn.pq.* ops and attn.quantize.*, not 'attn.attention' on avx2}}
  attn.attention decode ins(%q, %k, %v : memref<2x1x4x64xf32>, memref<16x16x1x64xf32>, memref<16x16x1x64xf32>) block_table(%bt : memref<2x8xi32>) outs(%o : memref<2x1x4x64xf32>) {page_size = 16, target = #attn.target<avx2>}
  return
}

// -----

func.func @no_target(%l: memref<1x64x16xui8>, %p: memref<1x2xf32>, %c: memref<1x4x64x16xui8>, %n: index, %s: memref<1x128xf32>) {
  // expected-error @+1 {{no target: write target = #attn.target<...>, run attn-normalize{target=...} or pass isa=...}}
  attn.pq.scores ins(%l, %p, %c : memref<1x64x16xui8>, memref<1x2xf32>, memref<1x4x64x16xui8>) length(%n) outs(%s : memref<1x128xf32>) {pq = #attn.pq<dsub = 2>}
  return
}

