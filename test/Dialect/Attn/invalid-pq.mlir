// RUN: attn-opt %s -split-input-file -verify-diagnostics
// One case per diagnostic of the NoMAD attn.pq.* ops.

func.func @gpu(%k: memref<1x2x128xf32>, %cb: memref<2x128x16x1xf32>, %c: memref<2x4x128x16xui8>, %p: index) {
  // expected-error @+1 {{NoMAD ops are CPU kernels; target sm_90a cannot run them}}
  attn.pq.encode ins(%k, %cb : memref<1x2x128xf32>, memref<2x128x16x1xf32>) offset(%p) outs(%c : memref<2x4x128x16xui8>) {pq = #attn.pq<dsub = 1>, target = #attn.target<sm_90a>}
  return
}

// -----

func.func @vbmi(%k: memref<1x2x128xf32>, %cb: memref<2x128x64x1xf32>, %c: memref<2x4x128x32xui8>, %p: index) {
  // expected-error @+1 {{64 centroids need 64-byte table lookups (vpermb): target avx512_vbmi, avx512_vnni or scalar, got avx2}}
  attn.pq.encode ins(%k, %cb : memref<1x2x128xf32>, memref<2x128x64x1xf32>) offset(%p) outs(%c : memref<2x4x128x32xui8>) {pq = #attn.pq<dsub = 1, centroids = 64>, target = #attn.target<avx2>}
  return
}

// -----

func.func @dsub(%k: memref<1x2x100xf32>, %cb: memref<2x12x16x8xf32>, %c: memref<2x4x12x16xui8>, %p: index) {
  // expected-error @+1 {{head_dim 100 is not a multiple of dsub 8}}
  attn.pq.encode ins(%k, %cb : memref<1x2x100xf32>, memref<2x12x16x8xf32>) offset(%p) outs(%c : memref<2x4x12x16xui8>) {pq = #attn.pq<dsub = 8>}
  return
}

// -----

func.func @codebooks(%k: memref<1x2x128xf32>, %cb: memref<2x128x16x1xf32>, %c: memref<2x4x64x16xui8>, %p: index) {
  // expected-error @+1 {{'codebooks' must be [H, S, C, dsub] = [2, 64, 16, 2], got [2, 128, 16, 1]}}
  attn.pq.encode ins(%k, %cb : memref<1x2x128xf32>, memref<2x128x16x1xf32>) offset(%p) outs(%c : memref<2x4x64x16xui8>) {pq = #attn.pq<dsub = 2>}
  return
}

// -----

func.func @codes(%k: memref<1x2x128xf32>, %cb: memref<2x128x16x1xf32>, %c: memref<2x4x128x32xui8>, %p: index) {
  // expected-error @+1 {{'codes' must be [H, NB, S, R] = [2, 4, 128, 16], got [2, 4, 128, 32]}}
  attn.pq.encode ins(%k, %cb : memref<1x2x128xf32>, memref<2x128x16x1xf32>) offset(%p) outs(%c : memref<2x4x128x32xui8>) {pq = #attn.pq<dsub = 1>}
  return
}

// -----

func.func @gqa(%q: memref<3x128xf32>, %cb: memref<2x128x16x1xf32>, %l: memref<3x128x16xui8>, %pp: memref<3x2xf32>) {
  // expected-error @+1 {{the 3 query heads are not a multiple of the 2 KV heads of the codebooks}}
  attn.pq.lut ins(%q, %cb : memref<3x128xf32>, memref<2x128x16x1xf32>) outs(%l, %pp : memref<3x128x16xui8>, memref<3x2xf32>) {pq = #attn.pq<dsub = 1>}
  return
}

// -----

func.func @lut(%q: memref<4x128xf32>, %cb: memref<2x128x16x1xf32>, %l: memref<4x64x16xui8>, %pp: memref<4x2xf32>) {
  // expected-error @+1 {{'lut' must be [Hq, S, C] = [4, 128, 16], got [4, 64, 16]}}
  attn.pq.lut ins(%q, %cb : memref<4x128xf32>, memref<2x128x16x1xf32>) outs(%l, %pp : memref<4x64x16xui8>, memref<4x2xf32>) {pq = #attn.pq<dsub = 1>}
  return
}

// -----

func.func @params(%q: memref<4x128xf32>, %cb: memref<2x128x16x1xf32>, %l: memref<4x128x16xui8>, %pp: memref<4x1xf32>) {
  // expected-error @+1 {{'lut_params' must be (scale, bias) [Hq, 2] = [4, 2], got [4, 1]}}
  attn.pq.lut ins(%q, %cb : memref<4x128xf32>, memref<2x128x16x1xf32>) outs(%l, %pp : memref<4x128x16xui8>, memref<4x1xf32>) {pq = #attn.pq<dsub = 1>}
  return
}

// -----

func.func @scores_gpu(%l: memref<4x128x16xui8>, %pp: memref<4x2xf32>, %c: memref<2x4x128x16xui8>, %n: index, %s: memref<4x128xf32>) {
  // expected-error @+1 {{NoMAD ops are CPU kernels; target sm_90a cannot run them}}
  attn.pq.scores ins(%l, %pp, %c : memref<4x128x16xui8>, memref<4x2xf32>, memref<2x4x128x16xui8>) length(%n) outs(%s : memref<4x128xf32>) {pq = #attn.pq<dsub = 1>, target = #attn.target<sm_90a>}
  return
}

// -----

func.func @scores_keys(%l: memref<4x128x16xui8>, %pp: memref<4x2xf32>, %c: memref<2x4x128x16xui8>, %n: index, %s: memref<4x200xf32>) {
  // expected-error @+1 {{'scores' holds 200 keys but 'codes' only 4 blocks of 32}}
  attn.pq.scores ins(%l, %pp, %c : memref<4x128x16xui8>, memref<4x2xf32>, memref<2x4x128x16xui8>) length(%n) outs(%s : memref<4x200xf32>) {pq = #attn.pq<dsub = 1>}
  return
}

// -----

func.func @scores_shape(%l: memref<4x128x16xui8>, %pp: memref<4x2xf32>, %c: memref<2x4x128x16xui8>, %n: index, %s: memref<2x128xf32>) {
  // expected-error @+1 {{'scores' must be [Hq, T] = [4, 128], got [2, 128]}}
  attn.pq.scores ins(%l, %pp, %c : memref<4x128x16xui8>, memref<4x2xf32>, memref<2x4x128x16xui8>) length(%n) outs(%s : memref<2x128xf32>) {pq = #attn.pq<dsub = 1>}
  return
}

// -----

func.func @values(%q: memref<4x128xf32>, %cb: memref<2x128x16x1xf32>, %c: memref<2x4x128x16xui8>, %v: memref<128x1x128xf32>, %n: index, %o: memref<4x128xf32>) {
  // expected-error @+1 {{'values' must be [T, H, Dv] = [128, 2, 128], got [128, 1, 128]}}
  attn.pq.attention ins(%q, %cb, %c, %v : memref<4x128xf32>, memref<2x128x16x1xf32>, memref<2x4x128x16xui8>, memref<128x1x128xf32>) length(%n) outs(%o : memref<4x128xf32>) {pq = #attn.pq<dsub = 1>}
  return
}

// -----

func.func @out(%q: memref<4x128xf32>, %cb: memref<2x128x16x1xf32>, %c: memref<2x4x128x16xui8>, %v: memref<128x2x64xf32>, %n: index, %o: memref<4x128xf32>) {
  // expected-error @+1 {{'out' must be [Hq, Dv] = [4, 64], got [4, 128]}}
  attn.pq.attention ins(%q, %cb, %c, %v : memref<4x128xf32>, memref<2x128x16x1xf32>, memref<2x4x128x16xui8>, memref<128x2x64xf32>) length(%n) outs(%o : memref<4x128xf32>) {pq = #attn.pq<dsub = 1>}
  return
}

// -----

func.func @tokens(%q: memref<4x128xf32>, %cb: memref<2x128x16x1xf32>, %c: memref<2x4x128x16xui8>, %v: memref<200x2x128xf32>, %n: index, %o: memref<4x128xf32>) {
  // expected-error @+1 {{'values' holds 200 tokens but 'codes' only 4 blocks of 32}}
  attn.pq.attention ins(%q, %cb, %c, %v : memref<4x128xf32>, memref<2x128x16x1xf32>, memref<2x4x128x16xui8>, memref<200x2x128xf32>) length(%n) outs(%o : memref<4x128xf32>) {pq = #attn.pq<dsub = 1>}
  return
}

// -----

func.func @int8_quant(%q: memref<4x128xf32>, %cb: memref<2x128x16x1xf32>, %c: memref<2x4x128x16xui8>, %v: memref<128x2x128xi8>, %n: index, %o: memref<4x128xf32>) {
  // expected-error @+1 {{i8 values need v_quant = #attn.quant<i8, per_token_head>}}
  attn.pq.attention ins(%q, %cb, %c, %v : memref<4x128xf32>, memref<2x128x16x1xf32>, memref<2x4x128x16xui8>, memref<128x2x128xi8>) length(%n) outs(%o : memref<4x128xf32>) {pq = #attn.pq<dsub = 1>}
  return
}

// -----

func.func @int8_scale(%q: memref<4x128xf32>, %cb: memref<2x128x16x1xf32>, %c: memref<2x4x128x16xui8>, %v: memref<128x2x128xi8>, %n: index, %o: memref<4x128xf32>) {
  // expected-error @+1 {{i8 values need a 'v_scale' operand [T, H]}}
  attn.pq.attention ins(%q, %cb, %c, %v : memref<4x128xf32>, memref<2x128x16x1xf32>, memref<2x4x128x16xui8>, memref<128x2x128xi8>) length(%n) outs(%o : memref<4x128xf32>) {pq = #attn.pq<dsub = 1>, v_quant = #attn.quant<i8, per_token_head>}
  return
}

// -----

func.func @int8_scale_shape(%q: memref<4x128xf32>, %cb: memref<2x128x16x1xf32>, %c: memref<2x4x128x16xui8>, %v: memref<128x2x128xi8>, %vs: memref<128x1xf32>, %n: index, %o: memref<4x128xf32>) {
  // expected-error @+1 {{'v_scale' must be per-(token, head) scales [T, H] = [128, 2], got [128, 1]}}
  attn.pq.attention ins(%q, %cb, %c, %v : memref<4x128xf32>, memref<2x128x16x1xf32>, memref<2x4x128x16xui8>, memref<128x2x128xi8>) v_scale(%vs : memref<128x1xf32>) length(%n) outs(%o : memref<4x128xf32>) {pq = #attn.pq<dsub = 1>, v_quant = #attn.quant<i8, per_token_head>}
  return
}

// -----

func.func @float_scale(%q: memref<4x128xf32>, %cb: memref<2x128x16x1xf32>, %c: memref<2x4x128x16xui8>, %v: memref<128x2x128xf32>, %vs: memref<128x2xf32>, %n: index, %o: memref<4x128xf32>) {
  // expected-error @+1 {{v_quant and v_scale apply to i8 values only}}
  attn.pq.attention ins(%q, %cb, %c, %v : memref<4x128xf32>, memref<2x128x16x1xf32>, memref<2x4x128x16xui8>, memref<128x2x128xf32>) v_scale(%vs : memref<128x2xf32>) length(%n) outs(%o : memref<4x128xf32>) {pq = #attn.pq<dsub = 1>}
  return
}
