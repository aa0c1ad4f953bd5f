// RUN: attn-opt %s --attn-normalize=target=sm_90a -split-input-file -verify-diagnostics | FileCheck %s
// RUN: not attn-opt %s --attn-normalize -split-input-file 2>&1 | FileCheck %s --check-prefix=NOTARGET
// RUN: not attn-opt %s --attn-normalize=target=gfx942 2>&1 | FileCheck %s --check-prefix=BADTARGET
// attn-normalize: defaults become explicit; a missing target is an error.

// BADTARGET: attn-normalize: unknown target 'gfx942'

// CHECK-LABEL: func.func @infer_mode
// mode inferred from i8 K/V and bf16 Q, scale = 1/sqrt(128), target from the option.
// CHECK: attn.attention decode
// CHECK-SAME: mode = #attn.mode<half_int8>
// CHECK-SAME: softmax_scale = 0.0883883461 : f32
// CHECK-SAME: target = #attn.target<sm_90a>
// NOTARGET: error: no target: write target = #attn.target<...> or run attn-normalize{target=...}
func.func @infer_mode(%q: memref<1x1x8x128xbf16>, %k: memref<1x64x1x128xi8>, %v: memref<1x64x1x128xi8>,
                      %ks: memref<1x64x1xf32>, %vs: memref<1x64x1xf32>, %o: memref<1x1x8x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<1x1x8x128xbf16>, memref<1x64x1x128xi8>, memref<1x64x1x128xi8>)
      k_scale(%ks : memref<1x64x1xf32>) v_scale(%vs : memref<1x64x1xf32>) outs(%o : memref<1x1x8x128xbf16>)
      {k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>}
  return
}

// -----

// CHECK-LABEL: func.func @keep_written
// Values written in the spec are kept.
// CHECK: attn.attention prefill
// CHECK-SAME: mode = #attn.mode<full_int8>
// CHECK-SAME: softmax_scale = 5.000000e-01 : f32, target = #attn.target<sm_90a>
func.func @keep_written(%q: memref<1x16x8x64xi8>, %k: memref<1x64x8x64xi8>, %v: memref<1x64x8x64xi8>,
                        %qs: memref<1xf32>, %ks: memref<1xf32>, %vs: memref<1xf32>, %o: memref<1x16x8x64xbf16>) {
  attn.attention prefill ins(%q, %k, %v : memref<1x16x8x64xi8>, memref<1x64x8x64xi8>, memref<1x64x8x64xi8>)
      q_scale(%qs : memref<1xf32>) k_scale(%ks : memref<1xf32>) v_scale(%vs : memref<1xf32>) outs(%o : memref<1x16x8x64xbf16>)
      {q_quant = #attn.quant<i8, per_tensor>, k_quant = #attn.quant<i8, per_tensor>, v_quant = #attn.quant<i8, per_tensor>,
       mode = #attn.mode<full_int8>, softmax_scale = 0.5 : f32}
  return
}

// -----

// CHECK-LABEL: func.func @cpu_target_kept
// An op's own target wins over the option; PQ attention gets its scale too.
// CHECK: attn.pq.attention
// CHECK-SAME: softmax_scale = 1.250000e-01 : f32, target = #attn.target<neon>
func.func @cpu_target_kept(%q: memref<4x64xf32>, %cb: memref<1x64x16x1xf32>, %c: memref<1x4x64x16xui8>,
                           %v: memref<128x1x64xf32>, %n: index, %o: memref<4x64xf32>) {
  attn.pq.attention ins(%q, %cb, %c, %v : memref<4x64xf32>, memref<1x64x16x1xf32>, memref<1x4x64x16xui8>, memref<128x1x64xf32>)
      length(%n) outs(%o : memref<4x64xf32>) {pq = #attn.pq<dsub = 1>, target = #attn.target<neon>}
  return
}

// -----

// Setting the target can make an op invalid: NoMAD ops cannot run on the GPU.
func.func @gpu_pq(%k: memref<1x1x64xf32>, %cb: memref<1x64x16x1xf32>, %c: memref<1x4x64x16xui8>, %p: index) {
  // expected-error @+1 {{NoMAD ops are CPU kernels; target sm_90a cannot run them}}
  attn.pq.encode ins(%k, %cb : memref<1x1x64xf32>, memref<1x64x16x1xf32>) offset(%p) outs(%c : memref<1x4x64x16xui8>) {pq = #attn.pq<dsub = 1>}
  return
}

// -----

// A quantize op and the attention reading what it wrote disagree on the rotation: a warning at
// the attention, a note at the quantize op (the rows may be rotated elsewhere, so not an error).
func.func @rotated_k_plain_attention(%xk: memref<1x64x1x128xbf16>, %pos: memref<1xi32>,
    %q: memref<1x64x16x128xi8>, %k: memref<1x64x1x128xi8>, %v: memref<1x64x1x128xi8>,
    %qs: memref<1x64x16xf32>, %ks: memref<1x64x1xf32>, %vs: memref<1x64x1xf32>, %o: memref<1x64x16x128xbf16>) {
  // expected-note @+1 {{the attn.quantize.append writing 'k'}}
  attn.quantize.append ins(%xk : memref<1x64x1x128xbf16>) positions(%pos : memref<1xi32>)
      outs(%k, %ks : memref<1x64x1x128xi8>, memref<1x64x1xf32>) {quant = #attn.quant<i8, per_token_head>, hadamard}
  // expected-warning @+1 {{'k' is written rotated by attn.quantize.append {hadamard}, but this attention has no `hadamard`}}
  attn.attention prefill ins(%q, %k, %v : memref<1x64x16x128xi8>, memref<1x64x1x128xi8>, memref<1x64x1x128xi8>)
      q_scale(%qs : memref<1x64x16xf32>) k_scale(%ks : memref<1x64x1xf32>) v_scale(%vs : memref<1x64x1xf32>)
      outs(%o : memref<1x64x16x128xbf16>)
      {q_quant = #attn.quant<i8, per_token_head>, k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>}
  return
}

// -----

func.func @plain_q_rotated_attention(%xq: memref<1x64x16x128xbf16>,
    %q: memref<1x64x16x128xi8>, %k: memref<1x64x1x128xi8>, %v: memref<1x64x1x128xi8>,
    %qs: memref<1x64x16xf32>, %ks: memref<1x64x1xf32>, %vs: memref<1x64x1xf32>, %o: memref<1x64x16x128xbf16>) {
  // expected-note @+1 {{the attn.quantize.dynamic writing 'q'}}
  attn.quantize.dynamic ins(%xq : memref<1x64x16x128xbf16>)
      outs(%q, %qs : memref<1x64x16x128xi8>, memref<1x64x16xf32>) {quant = #attn.quant<i8, per_token_head>}
  // expected-warning @+1 {{this attention has `hadamard` (its q, k and v hold rotated rows), but 'q' is written unrotated by attn.quantize.dynamic}}
  attn.attention prefill ins(%q, %k, %v : memref<1x64x16x128xi8>, memref<1x64x1x128xi8>, memref<1x64x1x128xi8>)
      q_scale(%qs : memref<1x64x16xf32>) k_scale(%ks : memref<1x64x1xf32>) v_scale(%vs : memref<1x64x1xf32>)
      outs(%o : memref<1x64x16x128xbf16>)
      {hadamard, q_quant = #attn.quant<i8, per_token_head>, k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>}
  return
}

// -----

// CHECK-LABEL: func.func @rotated_everywhere
// Q, K and V rotated by their quantize ops and by the attention: no diagnostic.
func.func @rotated_everywhere(%xq: memref<1x64x16x128xbf16>, %xk: memref<1x64x1x128xbf16>, %pos: memref<1xi32>,
    %q: memref<1x64x16x128xi8>, %k: memref<1x64x1x128xi8>, %v: memref<1x64x1x128xi8>,
    %qs: memref<1x64x16xf32>, %ks: memref<1x64x1xf32>, %vs: memref<1x64x1xf32>, %o: memref<1x64x16x128xbf16>) {
  attn.quantize.dynamic ins(%xq : memref<1x64x16x128xbf16>)
      outs(%q, %qs : memref<1x64x16x128xi8>, memref<1x64x16xf32>) {quant = #attn.quant<i8, per_token_head>, hadamard}
  attn.quantize.append ins(%xk : memref<1x64x1x128xbf16>) positions(%pos : memref<1xi32>)
      outs(%k, %ks : memref<1x64x1x128xi8>, memref<1x64x1xf32>) {quant = #attn.quant<i8, per_token_head>, hadamard}
  attn.quantize.append ins(%xk : memref<1x64x1x128xbf16>) positions(%pos : memref<1xi32>)
      outs(%v, %vs : memref<1x64x1x128xi8>, memref<1x64x1xf32>) {quant = #attn.quant<i8, per_token_head>, hadamard}
  attn.attention prefill ins(%q, %k, %v : memref<1x64x16x128xi8>, memref<1x64x1x128xi8>, memref<1x64x1x128xi8>)
      q_scale(%qs : memref<1x64x16xf32>) k_scale(%ks : memref<1x64x1xf32>) v_scale(%vs : memref<1x64x1xf32>)
      outs(%o : memref<1x64x16x128xbf16>)
      {hadamard, q_quant = #attn.quant<i8, per_token_head>, k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>}
  return
}

// -----

// A paged cache: the defaults are filled in as for a contiguous one; the block table stays.
// CHECK-LABEL: func.func @paged_defaults
// CHECK: attn.attention decode
// CHECK-SAME: block_table(%{{.*}} : memref<?x8xi32>)
// CHECK-SAME: mode = #attn.mode<fp8>, page_size = 64 : i64
// CHECK-SAME: softmax_scale = 0.0883883461 : f32
// CHECK-SAME: target = #attn.target<sm_90a>
func.func @paged_defaults(%q: memref<?x1x8x128xbf16>, %k: memref<100x64x1x128xf8E4M3FN>, %v: memref<100x64x1x128xf8E4M3FN>,
                          %ks: memref<100x64x1xf32>, %vs: memref<100x64x1xf32>, %bt: memref<?x8xi32>,
                          %o: memref<?x1x8x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<?x1x8x128xbf16>, memref<100x64x1x128xf8E4M3FN>, memref<100x64x1x128xf8E4M3FN>)
      k_scale(%ks : memref<100x64x1xf32>) v_scale(%vs : memref<100x64x1xf32>) block_table(%bt : memref<?x8xi32>)
      outs(%o : memref<?x1x8x128xbf16>)
      {page_size = 64, k_quant = #attn.quant<f8E4M3FN, per_token_head>, v_quant = #attn.quant<f8E4M3FN, per_token_head>}
  return
}
