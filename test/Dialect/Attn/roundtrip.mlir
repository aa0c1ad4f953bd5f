// RUN: attn-opt %s | attn-opt | FileCheck %s
// RUN: attn-opt %s --mlir-print-op-generic | attn-opt | FileCheck %s
// Every attribute and op form prints back to what it parses.

// CHECK-LABEL: func.func private @attrs
// CHECK-SAME: a = #attn.quant<i8, per_tensor, symmetric>
// CHECK-SAME: b = #attn.quant<ui8, per_group<32>, asymmetric, scale = bf16>
// CHECK-SAME: c = #attn.quant<i4, per_channel, symmetric>
// CHECK-SAME: d = #attn.quant<f8E5M2, per_block<1x128>, symmetric, scale = f16>
// CHECK-SAME: e = #attn.schedule<>
// CHECK-SAME: f = #attn.schedule<pack_q_heads = 4, split_kv = auto, tile_m = 64, tile_n = 176, stages = 3, roles = [producer<warpgroups = 1, regs = 24>, consumer<warpgroups = 2, regs = 240>], cluster = [2, 1, 1], crossover = false, pingpong = true, intra_wg_overlap = false, persistent = true, ctas_per_sm = 1>
// CHECK-SAME: g = #attn.pq<dsub = 4, centroids = 32>
// CHECK-SAME: h = #attn.mode<full_int8>
// CHECK-SAME: i = #attn.target<avx512_vbmi>
// CHECK-SAME: j = #attn.role<consumer, warpgroups = 2, regs = 232>
func.func private @attrs() attributes {
  a = #attn.quant<i8, per_tensor>,
  b = #attn.quant<ui8, per_group<32>, asymmetric, scale = bf16>,
  c = #attn.quant<i4, per_channel, symmetric>,
  d = #attn.quant<f8E5M2, per_block<1 x 128>, scale = f16>,
  e = #attn.schedule<>,
  f = #attn.schedule<persistent = true, crossover = false, cluster = [2, 1, 1], pingpong = true,
      intra_wg_overlap = false, stages = 3, tile_n = 176, tile_m = 64, split_kv = auto, pack_q_heads = 4,
      roles = [producer<warpgroups = 1, regs = 24>, consumer<warpgroups = 2, regs = 240>],
      ctas_per_sm = 1>,
  g = #attn.pq<dsub = 4, centroids = 32>,
  h = #attn.mode<full_int8>,
  i = #attn.target<avx512_vbmi>,
  j = #attn.role<consumer, warpgroups = 2, regs = 232>
}

// CHECK-LABEL: func.func @full_int8_asym
// CHECK: attn.attention prefill ins(%{{.*}}, %{{.*}}, %{{.*}} : memref<?x?x8x64xi8>, memref<?x?x8x64xui8>, memref<?x?x8x64xui8>)
// CHECK-SAME: q_scale(%{{.*}} : memref<?x?x8xf32>) k_scale(%{{.*}} : memref<?x?x8xf32>) v_scale(%{{.*}} : memref<?x?x8xf32>)
// CHECK-SAME: k_zero(%{{.*}} : memref<?x?x8xi32>) v_zero(%{{.*}} : memref<?x?x8xi32>)
// CHECK-SAME: seq_lens(%{{.*}} : memref<?xi32>) alibi(%{{.*}} : memref<8xf32>)
// CHECK-SAME: outs(%{{.*}} : memref<?x?x8x64xf32>)
// CHECK-SAME: causal, hadamard
func.func @full_int8_asym(%q: memref<?x?x8x64xi8>, %k: memref<?x?x8x64xui8>, %v: memref<?x?x8x64xui8>,
                          %qs: memref<?x?x8xf32>, %ks: memref<?x?x8xf32>, %vs: memref<?x?x8xf32>,
                          %kz: memref<?x?x8xi32>, %vz: memref<?x?x8xi32>, %l: memref<?xi32>,
                          %a: memref<8xf32>, %o: memref<?x?x8x64xf32>) {
  attn.attention prefill ins(%q, %k, %v : memref<?x?x8x64xi8>, memref<?x?x8x64xui8>, memref<?x?x8x64xui8>)
      q_scale(%qs : memref<?x?x8xf32>) k_scale(%ks : memref<?x?x8xf32>) v_scale(%vs : memref<?x?x8xf32>)
      k_zero(%kz : memref<?x?x8xi32>) v_zero(%vz : memref<?x?x8xi32>) seq_lens(%l : memref<?xi32>)
      alibi(%a : memref<8xf32>) outs(%o : memref<?x?x8x64xf32>)
      {causal, hadamard, q_quant = #attn.quant<i8, per_token_head>, k_quant = #attn.quant<ui8, per_token_head, asymmetric>,
       v_quant = #attn.quant<ui8, per_token_head, asymmetric>, target = #attn.target<sm_90a>}
  return
}

// CHECK-LABEL: func.func @mla_dense
// CHECK: attn.mla_decode ins(%{{.*}}, %{{.*}} : memref<4x1x64x576xbf16>, memref<4x?x576xbf16>) seq_lens(%{{.*}} : memref<4xi32>) outs
func.func @mla_dense(%q: memref<4x1x64x576xbf16>, %kv: memref<4x?x576xbf16>, %l: memref<4xi32>,
                     %o: memref<4x1x64x512xbf16>) {
  attn.mla_decode ins(%q, %kv : memref<4x1x64x576xbf16>, memref<4x?x576xbf16>) seq_lens(%l : memref<4xi32>)
      outs(%o : memref<4x1x64x512xbf16>) {head_dim_v = 512 : i64, rope_dim = 64 : i64}
  return
}

// CHECK-LABEL: func.func @mla_quantize
// CHECK: attn.quantize.mla_append ins(%{{.*}} : memref<?x?x576xbf16>) positions(%{{.*}} : memref<?xi32>) outs(%{{.*}} : memref<?x?x656xi8>) {head_dim_v = 512 : i64, kv_quant = #attn.quant<f8E4M3FN, per_block<1x128>, symmetric>, rope_dim = 64 : i64}
func.func @mla_quantize(%x: memref<?x?x576xbf16>, %p: memref<?xi32>, %c: memref<?x?x656xi8>) {
  attn.quantize.mla_append ins(%x : memref<?x?x576xbf16>) positions(%p : memref<?xi32>)
      outs(%c : memref<?x?x656xi8>)
      {head_dim_v = 512 : i64, rope_dim = 64 : i64, kv_quant = #attn.quant<f8E4M3FN, per_block<1x128>>}
  return
}

// CHECK-LABEL: func.func @pq_int8_values
// CHECK: attn.pq.attention ins({{.*}}) v_scale(%{{.*}} : memref<?x1xf32>) length(%{{.*}}) outs
func.func @pq_int8_values(%q: memref<4x64xf32>, %cb: memref<1x64x16x1xf32>, %c: memref<1x?x64x16xui8>,
                          %v: memref<?x1x64xi8>, %vs: memref<?x1xf32>, %n: index, %o: memref<4x64xf32>) {
  attn.pq.attention ins(%q, %cb, %c, %v : memref<4x64xf32>, memref<1x64x16x1xf32>, memref<1x?x64x16xui8>, memref<?x1x64xi8>)
      v_scale(%vs : memref<?x1xf32>) length(%n) outs(%o : memref<4x64xf32>)
      {pq = #attn.pq<dsub = 1>, v_quant = #attn.quant<i8, per_token_head>, target = #attn.target<neon>}
  return
}

// CHECK-LABEL: func.func @quantize_hadamard
// CHECK: attn.quantize.dynamic {{.*}} {hadamard, quant = #attn.quant<i8, per_token_head, symmetric>}
func.func @quantize_hadamard(%x: memref<?x?x4x128xbf16>, %q: memref<?x?x4x128xi8>, %s: memref<?x?x4xf32>) {
  attn.quantize.dynamic ins(%x : memref<?x?x4x128xbf16>) outs(%q, %s : memref<?x?x4x128xi8>, memref<?x?x4xf32>) {quant = #attn.quant<i8, per_token_head>, hadamard}
  return
}

// A paged cache: pools of 16-token pages, scales per page, a block table per sequence.
// CHECK-LABEL: func.func @paged
// CHECK: attn.attention decode ins(%{{.*}}, %{{.*}}, %{{.*}} : memref<?x1x32x128xbf16>, memref<2048x16x8x128xi8>, memref<2048x16x8x128xi8>)
// CHECK-SAME: k_scale(%{{.*}} : memref<2048x16x8xf32>) v_scale(%{{.*}} : memref<2048x16x8xf32>)
// CHECK-SAME: seq_lens(%{{.*}} : memref<?xi32>) block_table(%[[BT:.*]] : memref<?x64xi32>)
// CHECK-SAME: outs(%{{.*}} : memref<?x1x32x128xbf16>)
// CHECK-SAME: page_size = 16 : i64
func.func @paged(%q: memref<?x1x32x128xbf16>, %k: memref<2048x16x8x128xi8>, %v: memref<2048x16x8x128xi8>,
                 %ks: memref<2048x16x8xf32>, %vs: memref<2048x16x8xf32>, %lens: memref<?xi32>,
                 %pages: memref<?x64xi32>, %o: memref<?x1x32x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<?x1x32x128xbf16>, memref<2048x16x8x128xi8>, memref<2048x16x8x128xi8>)
      k_scale(%ks : memref<2048x16x8xf32>) v_scale(%vs : memref<2048x16x8xf32>)
      seq_lens(%lens : memref<?xi32>) block_table(%pages : memref<?x64xi32>)
      outs(%o : memref<?x1x32x128xbf16>)
      {page_size = 16, k_quant = #attn.quant<i8, per_token_head>,
       v_quant = #attn.quant<i8, per_token_head>, target = #attn.target<sm_90a>}
  return
}

// Page size 1 (every token its own page) with a per_block scale of one row, bf16 V, prefill.
// CHECK-LABEL: func.func @paged_page_one
// CHECK: block_table(%{{.*}} : memref<4x300xi32>)
// CHECK-SAME: page_size = 1 : i64
func.func @paged_page_one(%q: memref<4x8x8x64xbf16>, %k: memref<1000x1x2x64xf8E4M3FN>, %v: memref<1000x1x2x64xf8E4M3FN>,
                          %ks: memref<1000x1x2x1xf32>, %vs: memref<1000x1x2x1xf32>, %pages: memref<4x300xi32>,
                          %o: memref<4x8x8x64xbf16>) {
  attn.attention prefill ins(%q, %k, %v : memref<4x8x8x64xbf16>, memref<1000x1x2x64xf8E4M3FN>, memref<1000x1x2x64xf8E4M3FN>)
      k_scale(%ks : memref<1000x1x2x1xf32>) v_scale(%vs : memref<1000x1x2x1xf32>)
      block_table(%pages : memref<4x300xi32>) outs(%o : memref<4x8x8x64xbf16>)
      {causal, page_size = 1, k_quant = #attn.quant<f8E4M3FN, per_block<1 x 64>>,
       v_quant = #attn.quant<f8E4M3FN, per_block<1 x 64>>}
  return
}

// Attention sinks (one logit per query head) and the log-sum-exp output [B, Sq, Hq].
// CHECK-LABEL: func.func @sinks_lse
// CHECK: sinks(%{{.*}} : memref<32xf32>)
// CHECK-SAME: outs(%{{.*}} : memref<?x1x32x128xbf16>) lse(%{{.*}} : memref<?x1x32xf32>)
func.func @sinks_lse(%q: memref<?x1x32x128xbf16>, %k: memref<?x?x8x128xi8>, %v: memref<?x?x8x128xi8>,
                     %ks: memref<?x?x8xf32>, %vs: memref<?x?x8xf32>, %s: memref<32xf32>,
                     %o: memref<?x1x32x128xbf16>, %l: memref<?x1x32xf32>) {
  attn.attention decode ins(%q, %k, %v : memref<?x1x32x128xbf16>, memref<?x?x8x128xi8>, memref<?x?x8x128xi8>)
      k_scale(%ks : memref<?x?x8xf32>) v_scale(%vs : memref<?x?x8xf32>) sinks(%s : memref<32xf32>)
      outs(%o : memref<?x1x32x128xbf16>) lse(%l : memref<?x1x32xf32>)
      {k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>,
       target = #attn.target<sm_90a>}
  return
}

// A ragged prefill: every sequence's new tokens packed along Sq of a batch of one, over a paged
// cache (B = the table's rows).
// CHECK-LABEL: func.func @ragged
// CHECK: block_table(%{{.*}} : memref<?x?xi32>) cu_seqlens_q(%{{.*}} : memref<?xi32>)
// CHECK-SAME: outs(%{{.*}} : memref<1x?x16x128xbf16>)
func.func @ragged(%q: memref<1x?x16x128xbf16>, %k: memref<?x16x2x128xbf16>, %v: memref<?x16x2x128xbf16>,
                  %lens: memref<?xi32>, %pages: memref<?x?xi32>, %cu: memref<?xi32>,
                  %o: memref<1x?x16x128xbf16>) {
  attn.attention prefill ins(%q, %k, %v : memref<1x?x16x128xbf16>, memref<?x16x2x128xbf16>, memref<?x16x2x128xbf16>)
      seq_lens(%lens : memref<?xi32>) block_table(%pages : memref<?x?xi32>) cu_seqlens_q(%cu : memref<?xi32>)
      outs(%o : memref<1x?x16x128xbf16>) {causal, page_size = 16, target = #attn.target<sm_90a>}
  return
}

// Logit soft-capping.
// CHECK-LABEL: func.func @softcap
// CHECK: softcap = 3.000000e+01 : f32
func.func @softcap(%q: memref<?x1x8x128xbf16>, %k: memref<?x?x2x128xbf16>, %v: memref<?x?x2x128xbf16>,
                   %o: memref<?x1x8x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<?x1x8x128xbf16>, memref<?x?x2x128xbf16>, memref<?x?x2x128xbf16>)
      outs(%o : memref<?x1x8x128xbf16>) {softcap = 30.0 : f32, target = #attn.target<sm_90a>}
  return
}

// Sliding window (left 127, right 0).
// CHECK-LABEL: func.func @window
// CHECK: window = array<i64: 127, 0>
func.func @window(%q: memref<?x1x8x128xbf16>, %k: memref<?x?x2x128xbf16>, %v: memref<?x?x2x128xbf16>,
                  %o: memref<?x1x8x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<?x1x8x128xbf16>, memref<?x?x2x128xbf16>, memref<?x?x2x128xbf16>)
      outs(%o : memref<?x1x8x128xbf16>) {window = array<i64: 127, 0>, target = #attn.target<sm_90a>}
  return
}
