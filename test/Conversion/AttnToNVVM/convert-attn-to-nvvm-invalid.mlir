// convert-attn-to-nvvm refuses what its generators do not implement, on the op, with the reason.
// RUN: attn-opt %s -split-input-file -verify-diagnostics --attn-select-schedule --attn-build-kernel --convert-attn-to-nvvm

// FA3's persistent grid walks prefill work items; decode's grid is its KV splits.
func.func @decode_persistent(%q: memref<1x1x8x128xbf16>, %k: memref<1x128x8x128xbf16>, %v: memref<1x128x8x128xbf16>,
                             %o: memref<1x1x8x128xbf16>) {
  // expected-error @+1 {{not supported yet by convert-attn-to-nvvm: a persistent grid for decode (prefill only: decode's grid is its KV splits)}}
  attn.attention decode ins(%q, %k, %v : memref<1x1x8x128xbf16>, memref<1x128x8x128xbf16>, memref<1x128x8x128xbf16>)
      outs(%o : memref<1x1x8x128xbf16>) {target = #attn.target<sm_90a>, schedule = #attn.schedule<persistent = true>}
  return
}

// -----

// Pingpong orders the overlapped loop's WGMMAs: without intra_wg_overlap there is none to order.
func.func @prefill_pingpong(%q: memref<1x128x8x128xbf16>, %k: memref<1x128x8x128xbf16>, %v: memref<1x128x8x128xbf16>,
                            %o: memref<1x128x8x128xbf16>) {
  // expected-error @+1 {{not supported yet by convert-attn-to-nvvm: pingpong without intra_wg_overlap in prefill}}
  attn.attention prefill ins(%q, %k, %v : memref<1x128x8x128xbf16>, memref<1x128x8x128xbf16>, memref<1x128x8x128xbf16>)
      outs(%o : memref<1x128x8x128xbf16>) {target = #attn.target<sm_90a>, schedule = #attn.schedule<pingpong = true, intra_wg_overlap = false>}
  return
}

// -----

// Intra-warpgroup overlap is a prefill schedule: decode's consumers take alternate tiles.
func.func @decode_overlap(%q: memref<1x1x8x128xbf16>, %k: memref<1x128x8x128xbf16>, %v: memref<1x128x8x128xbf16>,
                          %o: memref<1x1x8x128xbf16>) {
  // expected-error @+1 {{not supported yet by convert-attn-to-nvvm: intra_wg_overlap for decode (prefill only}}
  attn.attention decode ins(%q, %k, %v : memref<1x1x8x128xbf16>, memref<1x128x8x128xbf16>, memref<1x128x8x128xbf16>)
      outs(%o : memref<1x1x8x128xbf16>) {target = #attn.target<sm_90a>, schedule = #attn.schedule<intra_wg_overlap = true>}
  return
}

// -----

// fp8 prefill: e4m3 Q·Kᵀ and P·V. The queries need per-row scales and V one scale per key
// tile (P·V cannot scale keys one by one).
func.func @prefill_fp8_scales(%q: memref<1x128x8x128xf8E4M3FN>, %k: memref<1x128x8x128xf8E4M3FN>, %v: memref<1x128x8x128xf8E4M3FN>,
                              %qs: memref<1x128xf32>, %ks: memref<1x128xf32>, %vs: memref<1x128xf32>,
                              %o: memref<1x128x8x128xbf16>) {
  // expected-error @+2 {{not supported yet by convert-attn-to-nvvm: f8E4M3FN queries other than per_token_head or per_block<r x head_dim> with f32 q_scale}}
  // expected-error @+1 {{not supported yet by convert-attn-to-nvvm: fp8 prefill with per_token V scales (one V scale per 128-key tile: per_block<r x head_dim> with r a multiple of 128, per_head or per_tensor)}}
  attn.attention prefill ins(%q, %k, %v : memref<1x128x8x128xf8E4M3FN>, memref<1x128x8x128xf8E4M3FN>, memref<1x128x8x128xf8E4M3FN>)
      q_scale(%qs : memref<1x128xf32>) k_scale(%ks : memref<1x128xf32>) v_scale(%vs : memref<1x128xf32>)
      outs(%o : memref<1x128x8x128xbf16>)
      {q_quant = #attn.quant<f8E4M3FN, per_token>, k_quant = #attn.quant<f8E4M3FN, per_token>,
       v_quant = #attn.quant<f8E4M3FN, per_token>, target = #attn.target<sm_90a>}
  return
}

// -----

// V blocks of 64 tokens would change scale inside a 128-key tile.
func.func @prefill_fp8_blocks(%q: memref<1x128x8x128xf8E4M3FN>, %k: memref<1x128x8x128xf8E4M3FN>, %v: memref<1x128x8x128xf8E4M3FN>,
                              %qs: memref<1x128x8xf32>, %ks: memref<1x1x8x1xf32>, %vs: memref<1x2x8x1xf32>,
                              %o: memref<1x128x8x128xbf16>) {
  // expected-error @+1 {{not supported yet by convert-attn-to-nvvm: fp8 prefill with per_block<64x128> V scales (one V scale per 128-key tile: per_block<r x head_dim> with r a multiple of 128, per_head or per_tensor)}}
  attn.attention prefill ins(%q, %k, %v : memref<1x128x8x128xf8E4M3FN>, memref<1x128x8x128xf8E4M3FN>, memref<1x128x8x128xf8E4M3FN>)
      q_scale(%qs : memref<1x128x8xf32>) k_scale(%ks : memref<1x1x8x1xf32>) v_scale(%vs : memref<1x2x8x1xf32>)
      outs(%o : memref<1x128x8x128xbf16>)
      {q_quant = #attn.quant<f8E4M3FN, per_token_head>, k_quant = #attn.quant<f8E4M3FN, per_block<128x128>>,
       v_quant = #attn.quant<f8E4M3FN, per_block<64x128>>, target = #attn.target<sm_90a>}
  return
}

// -----

// P·V on e4m3 reads Vᵀ rows of 128 keys.
func.func @prefill_fp8_tile64(%q: memref<1x128x8x128xf8E4M3FN>, %k: memref<1x128x8x128xf8E4M3FN>, %v: memref<1x128x8x128xf8E4M3FN>,
                              %qs: memref<1x128x8xf32>, %ks: memref<1x1x8x1xf32>, %vs: memref<1x1x8x1xf32>,
                              %o: memref<1x128x8x128xbf16>) {
  // expected-error @+1 {{not supported yet by convert-attn-to-nvvm: fp8 prefill with tile_n 64 (128 only)}}
  attn.attention prefill ins(%q, %k, %v : memref<1x128x8x128xf8E4M3FN>, memref<1x128x8x128xf8E4M3FN>, memref<1x128x8x128xf8E4M3FN>)
      q_scale(%qs : memref<1x128x8xf32>) k_scale(%ks : memref<1x1x8x1xf32>) v_scale(%vs : memref<1x1x8x1xf32>)
      outs(%o : memref<1x128x8x128xbf16>)
      {q_quant = #attn.quant<f8E4M3FN, per_token_head>, k_quant = #attn.quant<f8E4M3FN, per_block<128x128>>,
       v_quant = #attn.quant<f8E4M3FN, per_block<128x128>>, target = #attn.target<sm_90a>,
       schedule = #attn.schedule<tile_n = 64>}
  return
}

// -----

// fp8 GEMMs are a prefill mode: decode takes bf16 or int8 queries (over an e4m3 cache too).
func.func @decode_fp8_q(%q: memref<1x1x8x128xf8E4M3FN>, %k: memref<1x128x8x128xf8E4M3FN>, %v: memref<1x128x8x128xf8E4M3FN>,
                        %qs: memref<1x1x8xf32>, %ks: memref<1x128x8xf32>, %vs: memref<1x128x8xf32>,
                        %o: memref<1x1x8x128xbf16>) {
  // expected-error @+1 {{not supported yet by convert-attn-to-nvvm: f8E4M3FN queries for decode (fp8 GEMMs are a prefill mode; decode takes bf16 or i8 queries)}}
  attn.attention decode ins(%q, %k, %v : memref<1x1x8x128xf8E4M3FN>, memref<1x128x8x128xf8E4M3FN>, memref<1x128x8x128xf8E4M3FN>)
      q_scale(%qs : memref<1x1x8xf32>) k_scale(%ks : memref<1x128x8xf32>) v_scale(%vs : memref<1x128x8xf32>)
      outs(%o : memref<1x1x8x128xbf16>)
      {q_quant = #attn.quant<f8E4M3FN, per_token_head>, k_quant = #attn.quant<f8E4M3FN, per_token_head>,
       v_quant = #attn.quant<f8E4M3FN, per_token_head>, target = #attn.target<sm_90a>}
  return
}

// -----

// Mode fp8 names e4m3 GEMMs: with bf16 queries the cache would only be upcast.
func.func @prefill_fp8_bf16_q(%q: memref<1x128x8x64xbf16>, %k: memref<1x128x8x64xf8E4M3FN>, %v: memref<1x128x8x64xf8E4M3FN>,
                              %ks: memref<1x128x8xf32>, %vs: memref<8xf32>, %o: memref<1x128x8x64xbf16>) {
  // expected-error @+1 {{not supported yet by convert-attn-to-nvvm: mode fp8 for prefill with 'bf16' queries (the fp8 GEMMs take f8E4M3FN queries with q_scale)}}
  attn.attention prefill ins(%q, %k, %v : memref<1x128x8x64xbf16>, memref<1x128x8x64xf8E4M3FN>, memref<1x128x8x64xf8E4M3FN>)
      k_scale(%ks : memref<1x128x8xf32>) v_scale(%vs : memref<8xf32>)
      outs(%o : memref<1x128x8x64xbf16>)
      {k_quant = #attn.quant<f8E4M3FN, per_token_head>, v_quant = #attn.quant<f8E4M3FN, per_head>,
       target = #attn.target<sm_90a>}
  return
}

// -----

// fp8 prefill takes head_dim 64 or 128.
func.func @prefill_fp8_d256(%q: memref<1x128x8x256xf8E4M3FN>, %k: memref<1x128x8x256xf8E4M3FN>, %v: memref<1x128x8x256xf8E4M3FN>,
                           %qs: memref<1x128x8xf32>, %ks: memref<1x128x8xf32>, %vs: memref<8xf32>,
                           %o: memref<1x128x8x256xbf16>) {
  // expected-error @+2 {{not supported yet by convert-attn-to-nvvm: fp8 prefill with head_dim 256 (64 or 128)}}
  // expected-error @+1 {{not supported yet by convert-attn-to-nvvm: fp8 prefill with tile_n 64 (128 only)}}
  attn.attention prefill ins(%q, %k, %v : memref<1x128x8x256xf8E4M3FN>, memref<1x128x8x256xf8E4M3FN>, memref<1x128x8x256xf8E4M3FN>)
      q_scale(%qs : memref<1x128x8xf32>) k_scale(%ks : memref<1x128x8xf32>) v_scale(%vs : memref<8xf32>)
      outs(%o : memref<1x128x8x256xbf16>)
      {q_quant = #attn.quant<f8E4M3FN, per_token_head>, k_quant = #attn.quant<f8E4M3FN, per_token_head>,
       v_quant = #attn.quant<f8E4M3FN, per_head>, target = #attn.target<sm_90a>}
  return
}

// -----

func.func @prefill_split(%q: memref<1x128x8x128xbf16>, %k: memref<1x128x8x128xbf16>, %v: memref<1x128x8x128xbf16>,
                         %o: memref<1x128x8x128xbf16>) {
  // expected-error @+1 {{not supported yet by convert-attn-to-nvvm: split_kv 4 for prefill (one split: the query chunks fill the GPU)}}
  attn.attention prefill ins(%q, %k, %v : memref<1x128x8x128xbf16>, memref<1x128x8x128xbf16>, memref<1x128x8x128xbf16>)
      outs(%o : memref<1x128x8x128xbf16>) {target = #attn.target<sm_90a>, schedule = #attn.schedule<split_kv = 4>}
  return
}

// -----

func.func @per_group(%q: memref<?x1x8x128xbf16>, %k: memref<?x?x1x128xi8>, %v: memref<?x?x1x128xi8>,
                     %ks: memref<?x?x1x2xf32>, %vs: memref<?x?x1x2xf32>, %o: memref<?x1x8x128xbf16>) {
  // expected-error @+1 {{not supported yet by convert-attn-to-nvvm: K/V granularity per_group (per_token_head, per_token, per_head or per_tensor; prefill with i8 or f8E4M3FN queries also per_block<r x head_dim>)}}
  attn.attention decode ins(%q, %k, %v : memref<?x1x8x128xbf16>, memref<?x?x1x128xi8>, memref<?x?x1x128xi8>)
      k_scale(%ks : memref<?x?x1x2xf32>) v_scale(%vs : memref<?x?x1x2xf32>)
      outs(%o : memref<?x1x8x128xbf16>)
      {k_quant = #attn.quant<i8, per_group<64>>, v_quant = #attn.quant<i8, per_group<64>>,
       target = #attn.target<sm_90a>}
  return
}

// -----

func.func @qlen16(%q: memref<?x16x4x128xbf16>, %k: memref<?x?x1x128xbf16>, %v: memref<?x?x1x128xbf16>,
                  %o: memref<?x16x4x128xbf16>) {
  // expected-error @+1 {{not supported yet by convert-attn-to-nvvm: q_len 16 (decode kernels take 1 to 8 new tokens)}}
  attn.attention decode ins(%q, %k, %v : memref<?x16x4x128xbf16>, memref<?x?x1x128xbf16>, memref<?x?x1x128xbf16>)
      outs(%o : memref<?x16x4x128xbf16>) {target = #attn.target<sm_90a>}
  return
}

// -----

func.func @f32_out(%q: memref<?x1x8x128xbf16>, %k: memref<?x?x1x128xbf16>, %v: memref<?x?x1x128xbf16>,
                   %o: memref<?x1x8x128xf32>) {
  // expected-error @+1 {{not supported yet by convert-attn-to-nvvm: output of type 'f32' (bf16 output only)}}
  attn.attention decode ins(%q, %k, %v : memref<?x1x8x128xbf16>, memref<?x?x1x128xbf16>, memref<?x?x1x128xbf16>)
      outs(%o : memref<?x1x8x128xf32>) {target = #attn.target<sm_90a>}
  return
}

// -----

func.func @too_much_smem(%q: memref<?x1x8x256xbf16>, %k: memref<?x?x1x256xi8>, %v: memref<?x?x1x256xi8>,
                         %ks: memref<?x?x1xf32>, %vs: memref<?x?x1xf32>, %o: memref<?x1x8x256xbf16>) {
  // expected-error @+1 {{not supported yet by convert-attn-to-nvvm: this schedule needs 560256 bytes of shared memory (head_dim 256, tile_n 128, stages 4); an sm_90a CTA has 232448: lower tile_n or stages}}
  attn.attention decode ins(%q, %k, %v : memref<?x1x8x256xbf16>, memref<?x?x1x256xi8>, memref<?x?x1x256xi8>)
      k_scale(%ks : memref<?x?x1xf32>) v_scale(%vs : memref<?x?x1xf32>)
      outs(%o : memref<?x1x8x256xbf16>)
      {k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>,
       target = #attn.target<sm_90a>, schedule = #attn.schedule<tile_n = 128, stages = 4>}
  return
}

// -----

func.func @four_consumers(%q: memref<?x1x8x128xbf16>, %k: memref<?x?x1x128xbf16>, %v: memref<?x?x1x128xbf16>,
                          %o: memref<?x1x8x128xbf16>) {
  // expected-error @+1 {{not supported yet by convert-attn-to-nvvm: warp roles other than one or two producer and one to three consumer warpgroups}}
  attn.attention decode ins(%q, %k, %v : memref<?x1x8x128xbf16>, memref<?x?x1x128xbf16>, memref<?x?x1x128xbf16>)
      outs(%o : memref<?x1x8x128xbf16>)
      {target = #attn.target<sm_90a>,
       schedule = #attn.schedule<roles = [producer<warpgroups = 1, regs = 24>, consumer<warpgroups = 4, regs = 112>]>}
  return
}

// -----

// Three consumer warpgroups: prefill only (decode merges exactly two), without the overlap.
func.func @three_consumers(%q: memref<?x1x8x128xbf16>, %k: memref<?x?x1x128xbf16>, %v: memref<?x?x1x128xbf16>,
                           %o: memref<?x1x8x128xbf16>) {
  // expected-error @+1 {{not supported yet by convert-attn-to-nvvm: three consumer warpgroups for decode}}
  attn.attention decode ins(%q, %k, %v : memref<?x1x8x128xbf16>, memref<?x?x1x128xbf16>, memref<?x?x1x128xbf16>)
      outs(%o : memref<?x1x8x128xbf16>)
      {target = #attn.target<sm_90a>,
       schedule = #attn.schedule<roles = [producer<warpgroups = 1, regs = 24>, consumer<warpgroups = 3, regs = 160>]>}
  return
}

// -----

func.func @three_consumers_overlap(%q: memref<?x300x8x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>,
                                   %o: memref<?x300x8x128xbf16>) {
  // expected-error @+1 {{not supported yet by convert-attn-to-nvvm: three consumer warpgroups for intra_wg_overlap}}
  attn.attention prefill ins(%q, %k, %v : memref<?x300x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>)
      outs(%o : memref<?x300x8x128xbf16>)
      {target = #attn.target<sm_90a>,
       schedule = #attn.schedule<intra_wg_overlap = true, pingpong = false, stages = 2, roles = [producer<warpgroups = 1, regs = 32>, consumer<warpgroups = 3, regs = 160>]>}
  return
}

// -----

func.func @too_many_registers(%q: memref<?x1x8x128xbf16>, %k: memref<?x?x1x128xbf16>, %v: memref<?x?x1x128xbf16>,
                              %o: memref<?x1x8x128xbf16>) {
  // expected-error @+1 {{not supported yet by convert-attn-to-nvvm: register budgets 1 × 80 + 2 × 216 per thread: the 384 threads enter with 168 registers each, 504 per producer/consumer set}}
  attn.attention decode ins(%q, %k, %v : memref<?x1x8x128xbf16>, memref<?x?x1x128xbf16>, memref<?x?x1x128xbf16>)
      outs(%o : memref<?x1x8x128xbf16>)
      {target = #attn.target<sm_90a>,
       schedule = #attn.schedule<roles = [producer<warpgroups = 1, regs = 80>, consumer<warpgroups = 2, regs = 216>]>}
  return
}

// -----

// Three CTAs per SM: attn-select-schedule's default warp roles do not fit (it fills roles for
// ctas_per_sm 2 only); the error is on the op, from the schedule pass.
func.func @three_ctas(%q: memref<?x3x16x128xi8>, %qs: memref<?x3x16xf32>, %k: memref<?x?x1x128xi8>, %v: memref<?x?x1x128xi8>,
                      %ks: memref<?x?x1xf32>, %vs: memref<?x?x1xf32>, %o: memref<?x3x16x128xbf16>) {
  // expected-error @+1 {{'attn.attention' op the spec's schedule fields with the defaults: warp roles need 65536 registers per CTA, 196608 for 3 CTAs per SM, more than the SM's register file (65536)}}
  attn.attention decode ins(%q, %k, %v : memref<?x3x16x128xi8>, memref<?x?x1x128xi8>, memref<?x?x1x128xi8>)
      q_scale(%qs : memref<?x3x16xf32>) k_scale(%ks : memref<?x?x1xf32>) v_scale(%vs : memref<?x?x1xf32>)
      outs(%o : memref<?x3x16x128xbf16>)
      {q_quant = #attn.quant<i8, per_token_head>, k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>,
       target = #attn.target<sm_90a>, schedule = #attn.schedule<ctas_per_sm = 3>}
  return
}

// -----

// Two CTAs per SM share its 228 KiB of shared memory (1 KiB reserved per CTA).
func.func @two_ctas_smem(%q: memref<?x3x16x128xi8>, %qs: memref<?x3x16xf32>, %k: memref<?x?x1x128xi8>, %v: memref<?x?x1x128xi8>,
                         %ks: memref<?x?x1xf32>, %vs: memref<?x?x1xf32>, %o: memref<?x3x16x128xbf16>) {
  // expected-error @+1 {{not supported yet by convert-attn-to-nvvm: ctas_per_sm 2 with 175232 bytes of shared memory per CTA (tile_n 128, stages 2): an SM has 233472 (and reserves 1024 per CTA); lower tile_n, stages or ctas_per_sm}}
  attn.attention decode ins(%q, %k, %v : memref<?x3x16x128xi8>, memref<?x?x1x128xi8>, memref<?x?x1x128xi8>)
      q_scale(%qs : memref<?x3x16xf32>) k_scale(%ks : memref<?x?x1xf32>) v_scale(%vs : memref<?x?x1xf32>)
      outs(%o : memref<?x3x16x128xbf16>)
      {q_quant = #attn.quant<i8, per_token_head>, k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>,
       target = #attn.target<sm_90a>,
       schedule = #attn.schedule<tile_n = 128, ctas_per_sm = 2>}
  return
}

// -----

// MLA: the kernel is DeepSeek's shape (Dv 512 + 64 RoPE, 1 x 128 tile scales); others are refused.
func.func @mla_dims(%q: memref<1x1x64x288xbf16>, %kv: memref<1x4096x288xbf16>, %o: memref<1x1x64x256xbf16>) {
  // expected-error @+1 {{not supported yet by convert-attn-to-nvvm: MLA with head_dim_v 256 and rope_dim 32 (DeepSeek's 512 + 64 only)}}
  attn.mla_decode ins(%q, %kv : memref<1x1x64x288xbf16>, memref<1x4096x288xbf16>)
      outs(%o : memref<1x1x64x256xbf16>) {head_dim_v = 256, rope_dim = 32, target = #attn.target<sm_90a>}
  return
}

// -----

func.func @mla_tile64(%q: memref<1x1x64x576xbf16>, %kv: memref<1x4096x672xi8>, %o: memref<1x1x64x512xbf16>) {
  // expected-error @+1 {{not supported yet by convert-attn-to-nvvm: tile scales over 64 values (128: one per producer thread)}}
  attn.mla_decode ins(%q, %kv : memref<1x1x64x576xbf16>, memref<1x4096x672xi8>)
      outs(%o : memref<1x1x64x512xbf16>) {head_dim_v = 512, rope_dim = 64,
       kv_quant = #attn.quant<f8E4M3FN, per_block<1x64>>, target = #attn.target<sm_90a>}
  return
}

// -----

func.func @mla_regs(%q: memref<1x1x64x576xbf16>, %kv: memref<1x4096x576xbf16>, %o: memref<1x1x64x512xbf16>) {
  // expected-error @+1 {{not supported yet by convert-attn-to-nvvm: register budgets producer 200 + consumers 152 and 160 (multiples of 8 in [24, 256]; the 384 threads enter with 168 each: at most 504 together)}}
  attn.mla_decode ins(%q, %kv : memref<1x1x64x576xbf16>, memref<1x4096x576xbf16>)
      outs(%o : memref<1x1x64x512xbf16>) {head_dim_v = 512, rope_dim = 64, target = #attn.target<sm_90a>,
       schedule = #attn.schedule<roles = [producer<warpgroups = 1, regs = 200>, consumer<warpgroups = 1, regs = 152>, consumer<warpgroups = 1, regs = 160>]>}
  return
}

// -----

func.func @mla_tiles(%q: memref<1x1x64x576xbf16>, %kv: memref<1x4096x576xbf16>, %o: memref<1x1x64x512xbf16>) {
  // expected-error @+1 {{not supported yet by convert-attn-to-nvvm: tile_n 128 and stages 3 (blocks of 64 keys in 2 buffers)}}
  attn.mla_decode ins(%q, %kv : memref<1x1x64x576xbf16>, memref<1x4096x576xbf16>)
      outs(%o : memref<1x1x64x512xbf16>) {head_dim_v = 512, rope_dim = 64, target = #attn.target<sm_90a>,
       schedule = #attn.schedule<tile_n = 128, stages = 3>}
  return
}

// -----

// ui8 codes are asymmetric: without zero points they are refused, not read as signed int8.
func.func @u8_cache(%q: memref<?x1x8x128xbf16>, %k: memref<?x?x1x128xui8>, %v: memref<?x?x1x128xui8>,
                    %ks: memref<?x?x1xf32>, %vs: memref<?x?x1xf32>, %o: memref<?x1x8x128xbf16>) {
  // expected-error @+1 {{not supported yet by convert-attn-to-nvvm: ui8 K/V without zero points}}
  attn.attention decode ins(%q, %k, %v : memref<?x1x8x128xbf16>, memref<?x?x1x128xui8>, memref<?x?x1x128xui8>)
      k_scale(%ks : memref<?x?x1xf32>) v_scale(%vs : memref<?x?x1xf32>)
      outs(%o : memref<?x1x8x128xbf16>)
      {k_quant = #attn.quant<ui8, per_token_head>, v_quant = #attn.quant<ui8, per_token_head>,
       target = #attn.target<sm_90a>}
  return
}

// -----

// int8 queries take head_dim 64 or 128.
func.func @q_i8_d256(%q: memref<?x1x8x256xi8>, %qs: memref<?x1x8xf32>, %k: memref<?x?x1x256xi8>,
                     %v: memref<?x?x1x256xi8>, %ks: memref<?x?x1xf32>, %vs: memref<?x?x1xf32>,
                     %o: memref<?x1x8x256xbf16>) {
  // expected-error @+1 {{not supported yet by convert-attn-to-nvvm: int8 queries with head_dim 256 (64 or 128)}}
  attn.attention decode ins(%q, %k, %v : memref<?x1x8x256xi8>, memref<?x?x1x256xi8>, memref<?x?x1x256xi8>)
      q_scale(%qs : memref<?x1x8xf32>) k_scale(%ks : memref<?x?x1xf32>) v_scale(%vs : memref<?x?x1xf32>)
      outs(%o : memref<?x1x8x256xbf16>)
      {q_quant = #attn.quant<i8, per_token_head>, k_quant = #attn.quant<i8, per_token_head>,
       v_quant = #attn.quant<i8, per_token_head>, target = #attn.target<sm_90a>}
  return
}

// -----

func.func @q_i8_per_tensor(%q: memref<?x1x8x128xi8>, %qs: memref<1xf32>, %k: memref<?x?x1x128xi8>,
                           %v: memref<?x?x1x128xi8>, %ks: memref<?x?x1xf32>, %vs: memref<?x?x1xf32>,
                           %o: memref<?x1x8x128xbf16>) {
  // expected-error @+1 {{not supported yet by convert-attn-to-nvvm: int8 queries other than symmetric per_token_head or per_token with f32 scales}}
  attn.attention decode ins(%q, %k, %v : memref<?x1x8x128xi8>, memref<?x?x1x128xi8>, memref<?x?x1x128xi8>)
      q_scale(%qs : memref<1xf32>) k_scale(%ks : memref<?x?x1xf32>) v_scale(%vs : memref<?x?x1xf32>)
      outs(%o : memref<?x1x8x128xbf16>)
      {q_quant = #attn.quant<i8, per_tensor>, k_quant = #attn.quant<i8, per_token_head>,
       v_quant = #attn.quant<i8, per_token_head>, target = #attn.target<sm_90a>}
  return
}

// -----

// A per_token scale group of 64 heads × 128 = 8192 elements does not fit one warp's registers.
func.func @quantize_group_too_large(%x: memref<?x1x64x128xbf16>, %p: memref<?xi32>, %c: memref<?x?x64x128xi8>, %s: memref<?x?xf32>) {
  // expected-error @+1 {{not supported yet by the sm_90a kernels: a scale group of 8192 elements (at most 4096)}}
  attn.quantize.append ins(%x : memref<?x1x64x128xbf16>) positions(%p : memref<?xi32>) outs(%c, %s : memref<?x?x64x128xi8>, memref<?x?xf32>) {quant = #attn.quant<i8, per_token>, target = #attn.target<sm_90a>}
  return
}

// -----

func.func @quantize_i4(%x: memref<2x3x4x64xf32>, %y: memref<2x3x4x64xi4>, %s: memref<2x3x4xf32>) {
  // expected-error @+1 {{not supported yet by the sm_90a kernels: codes of type 'i4' symmetric (i8 or e4m3 symmetric; i8 or ui8 asymmetric)}}
  attn.quantize.dynamic ins(%x : memref<2x3x4x64xf32>) outs(%y, %s : memref<2x3x4x64xi4>, memref<2x3x4xf32>) {quant = #attn.quant<i4, per_token_head>, target = #attn.target<sm_90a>}
  return
}

// -----

func.func @zero_k_only(%q: memref<?x1x8x128xbf16>, %k: memref<?x?x1x128xi8>, %v: memref<?x?x1x128xi8>,
                       %ks: memref<?x?x1xf32>, %vs: memref<?x?x1xf32>, %kz: memref<?x?x1xi8>,
                       %o: memref<?x1x8x128xbf16>) {
  // expected-error @+1 {{not supported yet by convert-attn-to-nvvm: zero points on only one of K and V (both asymmetric, or neither)}}
  attn.attention decode ins(%q, %k, %v : memref<?x1x8x128xbf16>, memref<?x?x1x128xi8>, memref<?x?x1x128xi8>)
      k_scale(%ks : memref<?x?x1xf32>) v_scale(%vs : memref<?x?x1xf32>) k_zero(%kz : memref<?x?x1xi8>)
      outs(%o : memref<?x1x8x128xbf16>)
      {k_quant = #attn.quant<i8, per_token_head, asymmetric>, v_quant = #attn.quant<i8, per_token_head>,
       target = #attn.target<sm_90a>}
  return
}

// -----

func.func @zero_i32(%q: memref<?x1x8x128xbf16>, %k: memref<?x?x1x128xi8>, %v: memref<?x?x1x128xi8>,
                    %ks: memref<?x?x1xf32>, %vs: memref<?x?x1xf32>, %kz: memref<?x?x1xi32>,
                    %vz: memref<?x?x1xi32>, %o: memref<?x1x8x128xbf16>) {
  // expected-error @+1 {{not supported yet by convert-attn-to-nvvm: zero points of a type other than the codes' ('i8')}}
  attn.attention decode ins(%q, %k, %v : memref<?x1x8x128xbf16>, memref<?x?x1x128xi8>, memref<?x?x1x128xi8>)
      k_scale(%ks : memref<?x?x1xf32>) v_scale(%vs : memref<?x?x1xf32>)
      k_zero(%kz : memref<?x?x1xi32>) v_zero(%vz : memref<?x?x1xi32>)
      outs(%o : memref<?x1x8x128xbf16>)
      {k_quant = #attn.quant<i8, per_token_head, asymmetric>, v_quant = #attn.quant<i8, per_token_head, asymmetric>,
       target = #attn.target<sm_90a>}
  return
}

// -----

func.func @zero_with_i8_queries(%q: memref<?x1x8x128xi8>, %qs: memref<?x1x8xf32>, %k: memref<?x?x1x128xi8>,
                                %v: memref<?x?x1x128xi8>, %ks: memref<?x?x1xf32>, %vs: memref<?x?x1xf32>,
                                %kz: memref<?x?x1xi8>, %vz: memref<?x?x1xi8>, %o: memref<?x1x8x128xbf16>) {
  // expected-error @+1 {{not supported yet by convert-attn-to-nvvm: asymmetric K/V with int8 queries (bf16 queries only)}}
  attn.attention decode ins(%q, %k, %v : memref<?x1x8x128xi8>, memref<?x?x1x128xi8>, memref<?x?x1x128xi8>)
      q_scale(%qs : memref<?x1x8xf32>) k_scale(%ks : memref<?x?x1xf32>) v_scale(%vs : memref<?x?x1xf32>)
      k_zero(%kz : memref<?x?x1xi8>) v_zero(%vz : memref<?x?x1xi8>)
      outs(%o : memref<?x1x8x128xbf16>)
      {q_quant = #attn.quant<i8, per_token_head>, k_quant = #attn.quant<i8, per_token_head, asymmetric>,
       v_quant = #attn.quant<i8, per_token_head, asymmetric>, target = #attn.target<sm_90a>}
  return
}

// -----

// Per-warpgroup consumer budgets are an MLA schedule; the decode kernel's consumers take one.
func.func @decode_two_consumer_entries(%q: memref<1x1x8x128xbf16>, %k: memref<1x64x1x128xbf16>, %v: memref<1x64x1x128xbf16>,
                                       %o: memref<1x1x8x128xbf16>) {
  // expected-error @+1 {{not supported yet by convert-attn-to-nvvm: one register budget per consumer warpgroup (decode and prefill consumers take one consumer entry)}}
  attn.attention decode ins(%q, %k, %v : memref<1x1x8x128xbf16>, memref<1x64x1x128xbf16>, memref<1x64x1x128xbf16>)
      outs(%o : memref<1x1x8x128xbf16>) {target = #attn.target<sm_90a>,
       schedule = #attn.schedule<roles = [producer<warpgroups = 1, regs = 56>, consumer<warpgroups = 1, regs = 200>, consumer<warpgroups = 1, regs = 200>]>}
  return
}

// -----

// full_int8 quantizes P for int8 tensor cores in prefill; decode reads the cache's bytes.
func.func @decode_full_int8(%q: memref<2x3x16x128xi8>, %k: memref<2x100x1x128xi8>, %v: memref<2x100x1x128xi8>,
                            %qs: memref<2x3x16xf32>, %ks: memref<2x100x1xf32>, %vs: memref<2x100x1xf32>,
                            %o: memref<2x3x16x128xbf16>) {
  // expected-error @+1 {{not supported yet by convert-attn-to-nvvm: mode full_int8 for decode (P·V on int8 tensor cores is a prefill mode; decode is bound by the cache's bytes: use half_int8)}}
  attn.attention decode ins(%q, %k, %v : memref<2x3x16x128xi8>, memref<2x100x1x128xi8>, memref<2x100x1x128xi8>)
      q_scale(%qs : memref<2x3x16xf32>) k_scale(%ks : memref<2x100x1xf32>) v_scale(%vs : memref<2x100x1xf32>)
      outs(%o : memref<2x3x16x128xbf16>)
      {mode = #attn.mode<full_int8>, q_quant = #attn.quant<i8, per_token_head>, k_quant = #attn.quant<i8, per_token_head>,
       v_quant = #attn.quant<i8, per_token_head>, target = #attn.target<sm_90a>}
  return
}

// -----

// full_int8's P·V on s8 reads Vᵀ rows of 128 keys.
func.func @prefill_full_int8_tile64(%q: memref<1x128x8x128xi8>, %k: memref<1x128x8x128xi8>, %v: memref<1x128x8x128xi8>,
                                    %qs: memref<1x128x8xf32>, %ks: memref<1x128x8xf32>, %vs: memref<1x128x8xf32>,
                                    %o: memref<1x128x8x128xbf16>) {
  // expected-error @+1 {{not supported yet by convert-attn-to-nvvm: full_int8 prefill with tile_n 64 (128 only: P·V on s8 reads Vᵀ rows of 128 keys)}}
  attn.attention prefill ins(%q, %k, %v : memref<1x128x8x128xi8>, memref<1x128x8x128xi8>, memref<1x128x8x128xi8>)
      q_scale(%qs : memref<1x128x8xf32>) k_scale(%ks : memref<1x128x8xf32>) v_scale(%vs : memref<1x128x8xf32>)
      outs(%o : memref<1x128x8x128xbf16>)
      {mode = #attn.mode<full_int8>, q_quant = #attn.quant<i8, per_token_head>, k_quant = #attn.quant<i8, per_token_head>,
       v_quant = #attn.quant<i8, per_token_head>, target = #attn.target<sm_90a>,
       schedule = #attn.schedule<tile_n = 64>}
  return
}

// -----

// Paged pools take every scale granularity the contiguous decode kernels do, zero points
// included; one scale and zero point per group of channels is refused for both.
func.func @decode_paged_asym_group(%q: memref<4x1x16x128xbf16>, %k: memref<256x64x1x128xui8>, %v: memref<256x64x1x128xui8>,
                                   %ks: memref<256x64x1x4xf32>, %vs: memref<256x64x1x4xf32>,
                                   %kz: memref<256x64x1x4xui8>, %vz: memref<256x64x1x4xui8>,
                                   %pages: memref<4x32xi32>, %o: memref<4x1x16x128xbf16>) {
  // expected-error @+1 {{not supported yet by convert-attn-to-nvvm: K/V granularity per_group}}
  attn.attention decode ins(%q, %k, %v : memref<4x1x16x128xbf16>, memref<256x64x1x128xui8>, memref<256x64x1x128xui8>)
      k_scale(%ks : memref<256x64x1x4xf32>) v_scale(%vs : memref<256x64x1x4xf32>)
      k_zero(%kz : memref<256x64x1x4xui8>) v_zero(%vz : memref<256x64x1x4xui8>)
      block_table(%pages : memref<4x32xi32>) outs(%o : memref<4x1x16x128xbf16>)
      {page_size = 64, k_quant = #attn.quant<ui8, per_group<32>, asymmetric>,
       v_quant = #attn.quant<ui8, per_group<32>, asymmetric>, target = #attn.target<sm_90a>}
  return
}

// -----

// A page of one int8 token of head_dim 64 is 64 bytes: TMA writes shared memory in 128-byte units.
func.func @decode_paged_page1_d64(%q: memref<4x1x8x64xbf16>, %k: memref<512x1x1x64xi8>, %v: memref<512x1x1x64xi8>,
                                  %ks: memref<512x1x1xf32>, %vs: memref<512x1x1xf32>,
                                  %pages: memref<4x128xi32>, %o: memref<4x1x8x64xbf16>) {
  // expected-error @+1 {{not supported yet by convert-attn-to-nvvm: a paged K/V cache (block_table, page_size = 1) at head_dim 64: a page of 64 bytes is not a whole number of the 128-byte units a TMA copy writes}}
  attn.attention decode ins(%q, %k, %v : memref<4x1x8x64xbf16>, memref<512x1x1x64xi8>, memref<512x1x1x64xi8>)
      k_scale(%ks : memref<512x1x1xf32>) v_scale(%vs : memref<512x1x1xf32>)
      block_table(%pages : memref<4x128xi32>) outs(%o : memref<4x1x8x64xbf16>)
      {page_size = 1, k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>,
       target = #attn.target<sm_90a>}
  return
}

// -----

// bf16 tiles land in the 128-byte swizzle, whose atom is 8 rows.
func.func @decode_paged_bf16_page4(%q: memref<4x1x8x128xbf16>, %k: memref<512x4x2x128xbf16>, %v: memref<512x4x2x128xbf16>,
                                   %pages: memref<4x64xi32>, %o: memref<4x1x8x128xbf16>) {
  // expected-error @+1 {{not supported yet by convert-attn-to-nvvm: a paged K/V cache (block_table, page_size = 4) of bf16 pages of fewer than 8 tokens (a box of K/V rows takes whole 8-row atoms of the 128-byte swizzle)}}
  attn.attention decode ins(%q, %k, %v : memref<4x1x8x128xbf16>, memref<512x4x2x128xbf16>, memref<512x4x2x128xbf16>)
      block_table(%pages : memref<4x64xi32>) outs(%o : memref<4x1x8x128xbf16>)
      {page_size = 4, target = #attn.target<sm_90a>}
  return
}

// -----

// Prefill reads bf16 pages in place too: the same 8-row atoms.
func.func @prefill_paged_bf16_page4(%q: memref<2x128x8x128xbf16>, %k: memref<64x4x8x128xbf16>, %v: memref<64x4x8x128xbf16>,
                                    %pages: memref<2x64xi32>, %o: memref<2x128x8x128xbf16>) {
  // expected-error @+1 {{not supported yet by convert-attn-to-nvvm: a paged K/V cache (block_table, page_size = 4) of bf16 pages of fewer than 8 tokens (a box of K/V rows takes whole 8-row atoms of the 128-byte swizzle)}}
  attn.attention prefill ins(%q, %k, %v : memref<2x128x8x128xbf16>, memref<64x4x8x128xbf16>, memref<64x4x8x128xbf16>)
      block_table(%pages : memref<2x64xi32>) outs(%o : memref<2x128x8x128xbf16>)
      {causal, page_size = 4, target = #attn.target<sm_90a>}
  return
}
