// RUN: attn-opt %s --attn-select-schedule -split-input-file -verify-diagnostics | FileCheck %s
// RUN: attn-opt %s --attn-select-schedule=num-sms=16 -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=SM16
// attn-select-schedule: decode packs query heads into the 64-row tile and splits K/V to fill
// the SMs; prefill gets the same structure over query chunks (bf16, fp8 and half-int8: three
// consumer warpgroups, on FA3's persistent grid by the rule of @prefill_persistent_default;
// FA3's intra-warpgroup overlap and pingpong where a spec fixes one of their fields); MLA gets
// crossover on FP8 caches with 128 heads.

// Table-3 row ctx 8192 × batch 16: 16 heads × 3 tokens = 48 rows -> pack 16; 16 CTAs on 132 SMs
// -> 8 splits (floor(132 / 16): one wave); on 16 SMs no split is needed.
// CHECK-LABEL: func.func @mqa_decode
// CHECK: schedule = #attn.schedule<pack_q_heads = 16, split_kv = 8, tile_m = 64, tile_n = 128, stages = 2, roles = [producer<warpgroups = 2, regs = 56>, consumer<warpgroups = 2, regs = 200>]>
// SM16-LABEL: func.func @mqa_decode
// SM16: pack_q_heads = 16, split_kv = 1,
func.func @mqa_decode(%q: memref<16x3x16x128xbf16>, %k: memref<16x8192x1x128xi8>, %v: memref<16x8192x1x128xi8>,
                      %ks: memref<16x8192x1xf32>, %vs: memref<16x8192x1xf32>, %o: memref<16x3x16x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<16x3x16x128xbf16>, memref<16x8192x1x128xi8>, memref<16x8192x1x128xi8>)
      k_scale(%ks : memref<16x8192x1xf32>) v_scale(%vs : memref<16x8192x1xf32>) outs(%o : memref<16x3x16x128xbf16>)
      {k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>, target = #attn.target<sm_90a>}
  return
}

// -----

// Table-3 row ctx 1024 × batch 256 with int8 queries: 256 CTAs take two waves at one CTA per SM,
// so the schedule is built for two per SM (tile_n 64, one producer and one consumer warpgroup);
// on 16 SMs as well. With bf16 queries the two-CTA schedule does not fit (K converted to bf16).
// CHECK-LABEL: func.func @mqa_decode_wide_batch
// CHECK: schedule = #attn.schedule<pack_q_heads = 16, split_kv = 1, tile_m = 64, tile_n = 64, stages = 2, roles = [producer<warpgroups = 1, regs = 56>, consumer<warpgroups = 1, regs = 200>], ctas_per_sm = 2>
// CHECK-LABEL: func.func @mqa_decode_wide_batch_bf16_queries
// CHECK: schedule = #attn.schedule<pack_q_heads = 16, split_kv = 1, tile_m = 64, tile_n = 128, stages = 2, roles = [producer<warpgroups = 2, regs = 56>, consumer<warpgroups = 2, regs = 200>]>
// SM16-LABEL: func.func @mqa_decode_wide_batch
// SM16: ctas_per_sm = 2>
func.func @mqa_decode_wide_batch(%q: memref<256x3x16x128xi8>, %qs: memref<256x3x16xf32>, %k: memref<256x1024x1x128xi8>, %v: memref<256x1024x1x128xi8>,
                                 %ks: memref<256x1024x1xf32>, %vs: memref<256x1024x1xf32>, %o: memref<256x3x16x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<256x3x16x128xi8>, memref<256x1024x1x128xi8>, memref<256x1024x1x128xi8>)
      q_scale(%qs : memref<256x3x16xf32>) k_scale(%ks : memref<256x1024x1xf32>) v_scale(%vs : memref<256x1024x1xf32>) outs(%o : memref<256x3x16x128xbf16>)
      {q_quant = #attn.quant<i8, per_token_head>, k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>, target = #attn.target<sm_90a>}
  return
}
func.func @mqa_decode_wide_batch_bf16_queries(%q: memref<256x3x16x128xbf16>, %k: memref<256x1024x1x128xi8>, %v: memref<256x1024x1x128xi8>,
                                              %ks: memref<256x1024x1xf32>, %vs: memref<256x1024x1xf32>, %o: memref<256x3x16x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<256x3x16x128xbf16>, memref<256x1024x1x128xi8>, memref<256x1024x1x128xi8>)
      k_scale(%ks : memref<256x1024x1xf32>) v_scale(%vs : memref<256x1024x1xf32>) outs(%o : memref<256x3x16x128xbf16>)
      {k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>, target = #attn.target<sm_90a>}
  return
}

// -----

// Fields written in the spec are kept; split_kv is recomputed for the packing the spec fixed
// (pack 2 of 8 -> 4 groups × 2 KV heads × batch 1 = 8 CTAs -> 16 splits; bf16 at head_dim 256
// -> tile_n 64: the WGMMAs read the TMA stages, no conversion buffers).
// CHECK-LABEL: func.func @partial
// CHECK: schedule = #attn.schedule<pack_q_heads = 2, split_kv = 16, tile_m = 64, tile_n = 64, stages = 3, roles = [producer<warpgroups = 1, regs = 96>, consumer<warpgroups = 1, regs = 240>]>
func.func @partial(%q: memref<1x1x16x256xbf16>, %k: memref<1x4096x2x256xbf16>, %v: memref<1x4096x2x256xbf16>,
                   %o: memref<1x1x16x256xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<1x1x16x256xbf16>, memref<1x4096x2x256xbf16>, memref<1x4096x2x256xbf16>)
      outs(%o : memref<1x1x16x256xbf16>)
      {target = #attn.target<sm_90a>, schedule = #attn.schedule<pack_q_heads = 2, stages = 3, split_kv = auto>}
  return
}

// -----

// Dynamic batch and length: split_kv stays `auto`, resolved at launch.
// CHECK-LABEL: func.func @dynamic
// CHECK: schedule = #attn.schedule<pack_q_heads = 8, split_kv = auto,
func.func @dynamic(%q: memref<?x1x8x128xbf16>, %k: memref<?x?x1x128xbf16>, %v: memref<?x?x1x128xbf16>,
                   %o: memref<?x1x8x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<?x1x8x128xbf16>, memref<?x?x1x128xbf16>, memref<?x?x1x128xbf16>)
      outs(%o : memref<?x1x8x128xbf16>) {target = #attn.target<sm_90a>}
  return
}

// -----

// Prefill: a 64-row Q tile per consumer warpgroup. bf16 up to head_dim 128: three consumers (192
// rows per CTA) of 160 registers on two stages, no overlap, one producer warpgroup that only
// issues TMA loads (at 1024 keys on the persistent grid: see @prefill_persistent_default). A
// spec that fixes a field of FA3's schedule (the persistent grid, the overlap) gets that
// schedule: two consumers with the overlap on three stages and pingpong.
// CHECK-LABEL: func.func @prefill
// CHECK: schedule = #attn.schedule<pack_q_heads = 16, split_kv = 1, tile_m = 64, tile_n = 128, stages = 2, roles = [producer<warpgroups = 1, regs = 32>, consumer<warpgroups = 3, regs = 160>], pingpong = false, intra_wg_overlap = false, persistent = true>
// CHECK: schedule = #attn.schedule<pack_q_heads = 16, split_kv = 1, tile_m = 64, tile_n = 128, stages = 3, roles = [producer<warpgroups = 1, regs = 40>, consumer<warpgroups = 2, regs = 232>], pingpong = true, intra_wg_overlap = true, persistent = true>
// CHECK: schedule = #attn.schedule<pack_q_heads = 16, split_kv = 1, tile_m = 64, tile_n = 128, stages = 3, roles = [producer<warpgroups = 1, regs = 40>, consumer<warpgroups = 2, regs = 232>], pingpong = true, intra_wg_overlap = true, persistent = false>
func.func @prefill(%q: memref<2x1024x16x128xbf16>, %k: memref<2x1024x1x128xbf16>, %v: memref<2x1024x1x128xbf16>,
                   %o: memref<2x1024x16x128xbf16>) {
  attn.attention prefill ins(%q, %k, %v : memref<2x1024x16x128xbf16>, memref<2x1024x1x128xbf16>, memref<2x1024x1x128xbf16>)
      outs(%o : memref<2x1024x16x128xbf16>) {causal, target = #attn.target<sm_90a>}
  attn.attention prefill ins(%q, %k, %v : memref<2x1024x16x128xbf16>, memref<2x1024x1x128xbf16>, memref<2x1024x1x128xbf16>)
      outs(%o : memref<2x1024x16x128xbf16>) {causal, target = #attn.target<sm_90a>, schedule = #attn.schedule<persistent = true>}
  attn.attention prefill ins(%q, %k, %v : memref<2x1024x16x128xbf16>, memref<2x1024x1x128xbf16>, memref<2x1024x1x128xbf16>)
      outs(%o : memref<2x1024x16x128xbf16>) {causal, target = #attn.target<sm_90a>, schedule = #attn.schedule<intra_wg_overlap = true>}
  return
}

// -----

// The three consumers' persistent grid (FA3's; one CTA per SM walks the work items) by the
// number of keys (kv_len, else q_len where static): non-causal fp8 and half-int8 with one K and
// one V scale per key tile at any length; the same, causal, up to 4096 keys; anything else up to
// 2048. At 1024 keys every one of them takes it; fp8 at head_dim 128 with tile scales on three
// stages.
// CHECK-LABEL: func.func @prefill_persistent_default(
// CHECK-COUNT-2: mode = #attn.mode<fp8>, {{.*}}stages = 3, roles = [producer<warpgroups = 1, regs = 32>, consumer<warpgroups = 3, regs = 160>], pingpong = false, intra_wg_overlap = false, persistent = true>
// CHECK-COUNT-3: stages = 2, roles = [producer<warpgroups = 1, regs = 32>, consumer<warpgroups = 3, regs = 160>], pingpong = false, intra_wg_overlap = false, persistent = true>
// CHECK-NOT: persistent = false
func.func @prefill_persistent_default(%q8: memref<2x1024x16x128xf8E4M3FN>, %k8: memref<2x1024x1x128xf8E4M3FN>,
    %v8: memref<2x1024x1x128xf8E4M3FN>, %qs8: memref<2x16x16x1xf32>, %ks8: memref<2x8x1x1xf32>,
    %qi: memref<2x1024x16x128xi8>, %ki: memref<2x1024x1x128xi8>, %vi: memref<2x1024x1x128xi8>,
    %qsi: memref<2x1024x16xf32>, %ksb: memref<2x8x1x1xf32>, %kst: memref<2x1024x1xf32>,
    %qb: memref<2x1024x16x128xbf16>, %kb: memref<2x1024x1x128xbf16>, %o: memref<2x1024x16x128xbf16>) {
  attn.attention prefill ins(%q8, %k8, %v8 : memref<2x1024x16x128xf8E4M3FN>, memref<2x1024x1x128xf8E4M3FN>, memref<2x1024x1x128xf8E4M3FN>)
      q_scale(%qs8 : memref<2x16x16x1xf32>) k_scale(%ks8 : memref<2x8x1x1xf32>) v_scale(%ks8 : memref<2x8x1x1xf32>)
      outs(%o : memref<2x1024x16x128xbf16>)
      {q_quant = #attn.quant<f8E4M3FN, per_block<64x128>>, k_quant = #attn.quant<f8E4M3FN, per_block<128x128>>,
       v_quant = #attn.quant<f8E4M3FN, per_block<128x128>>, mode = #attn.mode<fp8>, target = #attn.target<sm_90a>}
  attn.attention prefill ins(%q8, %k8, %v8 : memref<2x1024x16x128xf8E4M3FN>, memref<2x1024x1x128xf8E4M3FN>, memref<2x1024x1x128xf8E4M3FN>)
      q_scale(%qs8 : memref<2x16x16x1xf32>) k_scale(%ks8 : memref<2x8x1x1xf32>) v_scale(%ks8 : memref<2x8x1x1xf32>)
      outs(%o : memref<2x1024x16x128xbf16>)
      {causal, q_quant = #attn.quant<f8E4M3FN, per_block<64x128>>, k_quant = #attn.quant<f8E4M3FN, per_block<128x128>>,
       v_quant = #attn.quant<f8E4M3FN, per_block<128x128>>, mode = #attn.mode<fp8>, target = #attn.target<sm_90a>}
  attn.attention prefill ins(%qi, %ki, %vi : memref<2x1024x16x128xi8>, memref<2x1024x1x128xi8>, memref<2x1024x1x128xi8>)
      q_scale(%qsi : memref<2x1024x16xf32>) k_scale(%ksb : memref<2x8x1x1xf32>) v_scale(%ksb : memref<2x8x1x1xf32>)
      outs(%o : memref<2x1024x16x128xbf16>)
      {q_quant = #attn.quant<i8, per_token_head>, k_quant = #attn.quant<i8, per_block<128x128>>,
       v_quant = #attn.quant<i8, per_block<128x128>>, mode = #attn.mode<half_int8>, target = #attn.target<sm_90a>}
  attn.attention prefill ins(%qi, %ki, %vi : memref<2x1024x16x128xi8>, memref<2x1024x1x128xi8>, memref<2x1024x1x128xi8>)
      q_scale(%qsi : memref<2x1024x16xf32>) k_scale(%kst : memref<2x1024x1xf32>) v_scale(%kst : memref<2x1024x1xf32>)
      outs(%o : memref<2x1024x16x128xbf16>)
      {q_quant = #attn.quant<i8, per_token_head>, k_quant = #attn.quant<i8, per_token_head>,
       v_quant = #attn.quant<i8, per_token_head>, mode = #attn.mode<half_int8>, target = #attn.target<sm_90a>}
  attn.attention prefill ins(%qb, %kb, %kb : memref<2x1024x16x128xbf16>, memref<2x1024x1x128xbf16>, memref<2x1024x1x128xbf16>)
      outs(%o : memref<2x1024x16x128xbf16>) {target = #attn.target<sm_90a>}
  return
}

// -----

// At 8192 keys: one CTA per item (on two stages) for causal fp8, half-int8 with a scale per
// key, and bf16; non-causal fp8 keeps the persistent grid on three stages.
// CHECK-LABEL: func.func @prefill_persistent_long
// CHECK: mode = #attn.mode<fp8>, {{.*}}stages = 3, roles = [producer<warpgroups = 1, regs = 32>, consumer<warpgroups = 3, regs = 160>], pingpong = false, intra_wg_overlap = false, persistent = true>
// CHECK: mode = #attn.mode<fp8>, {{.*}}stages = 2, roles = [producer<warpgroups = 1, regs = 32>, consumer<warpgroups = 3, regs = 160>], pingpong = false, intra_wg_overlap = false, persistent = false>
// CHECK: mode = #attn.mode<half_int8>, {{.*}}consumer<warpgroups = 3, regs = 160>], pingpong = false, intra_wg_overlap = false, persistent = true>
// CHECK: mode = #attn.mode<half_int8>, {{.*}}consumer<warpgroups = 3, regs = 160>], pingpong = false, intra_wg_overlap = false, persistent = false>
// CHECK: consumer<warpgroups = 3, regs = 160>], pingpong = false, intra_wg_overlap = false, persistent = false>
func.func @prefill_persistent_long(%q8: memref<2x8192x16x128xf8E4M3FN>, %k8: memref<2x8192x1x128xf8E4M3FN>,
    %v8: memref<2x8192x1x128xf8E4M3FN>, %qs8: memref<2x128x16x1xf32>, %ks8: memref<2x64x1x1xf32>,
    %qi: memref<2x8192x16x128xi8>, %ki: memref<2x8192x1x128xi8>, %vi: memref<2x8192x1x128xi8>,
    %qsi: memref<2x8192x16xf32>, %ksb: memref<2x64x1x1xf32>, %kst: memref<2x8192x1xf32>,
    %qb: memref<2x8192x16x128xbf16>, %kb: memref<2x8192x1x128xbf16>, %o: memref<2x8192x16x128xbf16>) {
  attn.attention prefill ins(%q8, %k8, %v8 : memref<2x8192x16x128xf8E4M3FN>, memref<2x8192x1x128xf8E4M3FN>, memref<2x8192x1x128xf8E4M3FN>)
      q_scale(%qs8 : memref<2x128x16x1xf32>) k_scale(%ks8 : memref<2x64x1x1xf32>) v_scale(%ks8 : memref<2x64x1x1xf32>)
      outs(%o : memref<2x8192x16x128xbf16>)
      {q_quant = #attn.quant<f8E4M3FN, per_block<64x128>>, k_quant = #attn.quant<f8E4M3FN, per_block<128x128>>,
       v_quant = #attn.quant<f8E4M3FN, per_block<128x128>>, mode = #attn.mode<fp8>, target = #attn.target<sm_90a>}
  attn.attention prefill ins(%q8, %k8, %v8 : memref<2x8192x16x128xf8E4M3FN>, memref<2x8192x1x128xf8E4M3FN>, memref<2x8192x1x128xf8E4M3FN>)
      q_scale(%qs8 : memref<2x128x16x1xf32>) k_scale(%ks8 : memref<2x64x1x1xf32>) v_scale(%ks8 : memref<2x64x1x1xf32>)
      outs(%o : memref<2x8192x16x128xbf16>)
      {causal, q_quant = #attn.quant<f8E4M3FN, per_block<64x128>>, k_quant = #attn.quant<f8E4M3FN, per_block<128x128>>,
       v_quant = #attn.quant<f8E4M3FN, per_block<128x128>>, mode = #attn.mode<fp8>, target = #attn.target<sm_90a>}
  attn.attention prefill ins(%qi, %ki, %vi : memref<2x8192x16x128xi8>, memref<2x8192x1x128xi8>, memref<2x8192x1x128xi8>)
      q_scale(%qsi : memref<2x8192x16xf32>) k_scale(%ksb : memref<2x64x1x1xf32>) v_scale(%ksb : memref<2x64x1x1xf32>)
      outs(%o : memref<2x8192x16x128xbf16>)
      {q_quant = #attn.quant<i8, per_token_head>, k_quant = #attn.quant<i8, per_block<128x128>>,
       v_quant = #attn.quant<i8, per_block<128x128>>, mode = #attn.mode<half_int8>, target = #attn.target<sm_90a>}
  attn.attention prefill ins(%qi, %ki, %vi : memref<2x8192x16x128xi8>, memref<2x8192x1x128xi8>, memref<2x8192x1x128xi8>)
      q_scale(%qsi : memref<2x8192x16xf32>) k_scale(%kst : memref<2x8192x1xf32>) v_scale(%kst : memref<2x8192x1xf32>)
      outs(%o : memref<2x8192x16x128xbf16>)
      {q_quant = #attn.quant<i8, per_token_head>, k_quant = #attn.quant<i8, per_token_head>,
       v_quant = #attn.quant<i8, per_token_head>, mode = #attn.mode<half_int8>, target = #attn.target<sm_90a>}
  attn.attention prefill ins(%qb, %kb, %kb : memref<2x8192x16x128xbf16>, memref<2x8192x1x128xbf16>, memref<2x8192x1x128xbf16>)
      outs(%o : memref<2x8192x16x128xbf16>) {target = #attn.target<sm_90a>}
  return
}

// -----

// Keys unknown (q_len and kv_len dynamic): the persistent grid (three stages) for non-causal fp8
// only.
// CHECK-LABEL: func.func @prefill_persistent_dynamic
// CHECK: mode = #attn.mode<fp8>, {{.*}}stages = 3, {{.*}}persistent = true>
// CHECK: mode = #attn.mode<fp8>, {{.*}}stages = 2, {{.*}}persistent = false>
// CHECK: consumer<warpgroups = 3, regs = 160>], pingpong = false, intra_wg_overlap = false, persistent = false>
func.func @prefill_persistent_dynamic(%q8: memref<?x?x16x128xf8E4M3FN>, %k8: memref<?x?x1x128xf8E4M3FN>,
    %qs8: memref<?x?x16x1xf32>, %ks8: memref<?x?x1x1xf32>, %qb: memref<?x?x16x128xbf16>,
    %kb: memref<?x?x1x128xbf16>, %o: memref<?x?x16x128xbf16>) {
  attn.attention prefill ins(%q8, %k8, %k8 : memref<?x?x16x128xf8E4M3FN>, memref<?x?x1x128xf8E4M3FN>, memref<?x?x1x128xf8E4M3FN>)
      q_scale(%qs8 : memref<?x?x16x1xf32>) k_scale(%ks8 : memref<?x?x1x1xf32>) v_scale(%ks8 : memref<?x?x1x1xf32>)
      outs(%o : memref<?x?x16x128xbf16>)
      {q_quant = #attn.quant<f8E4M3FN, per_block<64x128>>, k_quant = #attn.quant<f8E4M3FN, per_block<128x128>>,
       v_quant = #attn.quant<f8E4M3FN, per_block<128x128>>, mode = #attn.mode<fp8>, target = #attn.target<sm_90a>}
  attn.attention prefill ins(%q8, %k8, %k8 : memref<?x?x16x128xf8E4M3FN>, memref<?x?x1x128xf8E4M3FN>, memref<?x?x1x128xf8E4M3FN>)
      q_scale(%qs8 : memref<?x?x16x1xf32>) k_scale(%ks8 : memref<?x?x1x1xf32>) v_scale(%ks8 : memref<?x?x1x1xf32>)
      outs(%o : memref<?x?x16x128xbf16>)
      {causal, q_quant = #attn.quant<f8E4M3FN, per_block<64x128>>, k_quant = #attn.quant<f8E4M3FN, per_block<128x128>>,
       v_quant = #attn.quant<f8E4M3FN, per_block<128x128>>, mode = #attn.mode<fp8>, target = #attn.target<sm_90a>}
  attn.attention prefill ins(%qb, %kb, %kb : memref<?x?x16x128xbf16>, memref<?x?x1x128xbf16>, memref<?x?x1x128xbf16>)
      outs(%o : memref<?x?x16x128xbf16>) {target = #attn.target<sm_90a>}
  return
}

// -----

// fp8 at 4096 keys, head_dim 128: the persistent grid on three stages, causal or not. A spec
// that fixes the stages keeps them; head_dim 64 (the producer's prmt transpose) stays on two.
// CHECK-LABEL: func.func @prefill_fp8_4096
// CHECK: mode = #attn.mode<fp8>, {{.*}}stages = 3, {{.*}}persistent = true>
// CHECK: mode = #attn.mode<fp8>, {{.*}}stages = 3, {{.*}}persistent = true>
// CHECK: mode = #attn.mode<fp8>, {{.*}}stages = 2, {{.*}}persistent = true>
// CHECK: mode = #attn.mode<fp8>, {{.*}}stages = 2, roles = [producer<warpgroups = 1, regs = 32>, consumer<warpgroups = 3, regs = 160>], {{.*}}persistent = true>
func.func @prefill_fp8_4096(%q8: memref<1x4096x16x128xf8E4M3FN>, %k8: memref<1x4096x1x128xf8E4M3FN>,
    %qs8: memref<1x64x16x1xf32>, %ks8: memref<1x32x1x1xf32>, %o: memref<1x4096x16x128xbf16>,
    %q6: memref<1x4096x16x64xf8E4M3FN>, %k6: memref<1x4096x1x64xf8E4M3FN>, %o6: memref<1x4096x16x64xbf16>) {
  attn.attention prefill ins(%q8, %k8, %k8 : memref<1x4096x16x128xf8E4M3FN>, memref<1x4096x1x128xf8E4M3FN>, memref<1x4096x1x128xf8E4M3FN>)
      q_scale(%qs8 : memref<1x64x16x1xf32>) k_scale(%ks8 : memref<1x32x1x1xf32>) v_scale(%ks8 : memref<1x32x1x1xf32>)
      outs(%o : memref<1x4096x16x128xbf16>)
      {q_quant = #attn.quant<f8E4M3FN, per_block<64x128>>, k_quant = #attn.quant<f8E4M3FN, per_block<128x128>>,
       v_quant = #attn.quant<f8E4M3FN, per_block<128x128>>, mode = #attn.mode<fp8>, target = #attn.target<sm_90a>}
  attn.attention prefill ins(%q8, %k8, %k8 : memref<1x4096x16x128xf8E4M3FN>, memref<1x4096x1x128xf8E4M3FN>, memref<1x4096x1x128xf8E4M3FN>)
      q_scale(%qs8 : memref<1x64x16x1xf32>) k_scale(%ks8 : memref<1x32x1x1xf32>) v_scale(%ks8 : memref<1x32x1x1xf32>)
      outs(%o : memref<1x4096x16x128xbf16>)
      {causal, q_quant = #attn.quant<f8E4M3FN, per_block<64x128>>, k_quant = #attn.quant<f8E4M3FN, per_block<128x128>>,
       v_quant = #attn.quant<f8E4M3FN, per_block<128x128>>, mode = #attn.mode<fp8>, target = #attn.target<sm_90a>}
  attn.attention prefill ins(%q8, %k8, %k8 : memref<1x4096x16x128xf8E4M3FN>, memref<1x4096x1x128xf8E4M3FN>, memref<1x4096x1x128xf8E4M3FN>)
      q_scale(%qs8 : memref<1x64x16x1xf32>) k_scale(%ks8 : memref<1x32x1x1xf32>) v_scale(%ks8 : memref<1x32x1x1xf32>)
      outs(%o : memref<1x4096x16x128xbf16>)
      {q_quant = #attn.quant<f8E4M3FN, per_block<64x128>>, k_quant = #attn.quant<f8E4M3FN, per_block<128x128>>,
       v_quant = #attn.quant<f8E4M3FN, per_block<128x128>>, mode = #attn.mode<fp8>, target = #attn.target<sm_90a>,
       schedule = #attn.schedule<stages = 2>}
  attn.attention prefill ins(%q6, %k6, %k6 : memref<1x4096x16x64xf8E4M3FN>, memref<1x4096x1x64xf8E4M3FN>, memref<1x4096x1x64xf8E4M3FN>)
      q_scale(%qs8 : memref<1x64x16x1xf32>) k_scale(%ks8 : memref<1x32x1x1xf32>) v_scale(%ks8 : memref<1x32x1x1xf32>)
      outs(%o6 : memref<1x4096x16x64xbf16>)
      {causal, q_quant = #attn.quant<f8E4M3FN, per_block<64x64>>, k_quant = #attn.quant<f8E4M3FN, per_block<128x64>>,
       v_quant = #attn.quant<f8E4M3FN, per_block<128x64>>, mode = #attn.mode<fp8>, target = #attn.target<sm_90a>}
  return
}

// -----

// MLA: FP8 cache and 128 heads -> crossover on a 2-CTA cluster; a dense cache gets no crossover.
// CHECK-LABEL: func.func @mla
// CHECK: schedule = #attn.schedule<pack_q_heads = 64, tile_m = 64, tile_n = 64, stages = 2, roles = [producer<warpgroups = 1, regs = 120>, consumer<warpgroups = 1, regs = 216>, consumer<warpgroups = 1, regs = 168>], cluster = [2, 1, 1], crossover = true>
// CHECK: schedule = #attn.schedule<pack_q_heads = 64, tile_m = 64, tile_n = 64, stages = 2, roles = [producer<warpgroups = 1, regs = 120>, consumer<warpgroups = 1, regs = 216>, consumer<warpgroups = 1, regs = 168>], cluster = [1, 1, 1], crossover = false>
func.func @mla(%q: memref<8x2x128x576xbf16>, %kv: memref<8x4096x656xi8>, %kvd: memref<8x4096x576xbf16>,
               %o: memref<8x2x128x512xbf16>) {
  attn.mla_decode ins(%q, %kv : memref<8x2x128x576xbf16>, memref<8x4096x656xi8>) outs(%o : memref<8x2x128x512xbf16>)
      {head_dim_v = 512 : i64, rope_dim = 64 : i64, kv_quant = #attn.quant<f8E4M3FN, per_block<1x128>>, target = #attn.target<sm_90a>}
  attn.mla_decode ins(%q, %kvd : memref<8x2x128x576xbf16>, memref<8x4096x576xbf16>) outs(%o : memref<8x2x128x512xbf16>)
      {head_dim_v = 512 : i64, rope_dim = 64 : i64, target = #attn.target<sm_90a>}
  return
}

// -----

// CPU attention keeps its (empty) schedule: CPU schedules come with the CPU lowering.
// CHECK-LABEL: func.func @cpu
// CHECK-NOT: schedule
// CHECK: return
func.func @cpu(%q: memref<1x1x4x64xf32>, %k: memref<1x100x1x64xf32>, %v: memref<1x100x1x64xf32>, %o: memref<1x1x4x64xf32>) {
  attn.attention decode ins(%q, %k, %v : memref<1x1x4x64xf32>, memref<1x100x1x64xf32>, memref<1x100x1x64xf32>)
      outs(%o : memref<1x1x4x64xf32>) {target = #attn.target<avx2>}
  return
}

// -----

func.func @no_target(%q: memref<1x1x4x64xbf16>, %k: memref<1x100x1x64xbf16>, %v: memref<1x100x1x64xbf16>, %o: memref<1x1x4x64xbf16>) {
  // expected-error @+1 {{no target to schedule for: write target = #attn.target<...> or run attn-normalize{target=...} first}}
  attn.attention decode ins(%q, %k, %v : memref<1x1x4x64xbf16>, memref<1x100x1x64xbf16>, memref<1x100x1x64xbf16>) outs(%o : memref<1x1x4x64xbf16>)
  return
}

// -----

func.func @dyn_heads(%q: memref<1x?x4x64xbf16>, %k: memref<1x100x1x64xbf16>, %v: memref<1x100x1x64xbf16>, %o: memref<1x?x4x64xbf16>) {
  // expected-error @+1 {{decode scheduling needs static q_len and head counts}}
  attn.attention decode ins(%q, %k, %v : memref<1x?x4x64xbf16>, memref<1x100x1x64xbf16>, memref<1x100x1x64xbf16>) outs(%o : memref<1x?x4x64xbf16>) {target = #attn.target<sm_90a>}
  return
}

// -----

// A paged cache: the keys of a sequence are max_blocks · page_size (512 · 16 = 8192), not the
// page's 16 tokens, so the Table-3 row gets @mqa_decode's schedule (8 splits, not 1).
// CHECK-LABEL: func.func @mqa_decode_paged
// CHECK: schedule = #attn.schedule<pack_q_heads = 16, split_kv = 8, tile_m = 64, tile_n = 128, stages = 2, roles = [producer<warpgroups = 2, regs = 56>, consumer<warpgroups = 2, regs = 200>]>
func.func @mqa_decode_paged(%q: memref<16x3x16x128xbf16>, %k: memref<8192x16x1x128xi8>, %v: memref<8192x16x1x128xi8>,
                            %ks: memref<8192x16x1xf32>, %vs: memref<8192x16x1xf32>, %bt: memref<16x512xi32>,
                            %o: memref<16x3x16x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<16x3x16x128xbf16>, memref<8192x16x1x128xi8>, memref<8192x16x1x128xi8>)
      k_scale(%ks : memref<8192x16x1xf32>) v_scale(%vs : memref<8192x16x1xf32>) block_table(%bt : memref<16x512xi32>)
      outs(%o : memref<16x3x16x128xbf16>)
      {page_size = 16, k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>, target = #attn.target<sm_90a>}
  return
}
