// convert-attn-to-nvvm: the decode kernel's NVVM building blocks for each KV type (int8 with
// per-(token, head) scales, e4m3 with per-token scales, bf16), the schedule honoured (register
// budgets, tile_n as the WGMMA N of S and the K step count of P·V), and the split-KV combine.
// RUN: attn-opt %s -split-input-file --attn-select-schedule --attn-build-kernel --convert-attn-to-nvvm --convert-attnk-to-nvvm | FileCheck %s

// CHECK-LABEL: gpu.module @attn_kernels [#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx86">]
// CHECK: llvm.mlir.global external @__attn_dynamic_smem() {addr_space = 3 : i32, alignment = 1024 : i64}
// CHECK: llvm.func @mqa_i8_decode(%{{.*}}: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant}, %{{.*}}: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant}
// CHECK-SAME: attn.launch = "{{.*}}\22pack_q_heads\22: 16,
// CHECK-SAME: nvvm.kernel, nvvm.maxntid = array<i32: 512, 1, 1>, nvvm.minctasm = 1 : i32
// seq_lens: read only through a non-null pointer (null: every batch element uses the whole cache).
// CHECK: %[[LENP:.*]] = llvm.ptrtoint %{{.*}} : !llvm.ptr<1> to i64
// CHECK: %[[NULL:.*]] = llvm.icmp "eq" %[[LENP]], %{{.*}} : i64
// CHECK: scf.if %[[NULL]] -> (i32) {
// CHECK: } else {
// CHECK: llvm.load {{.*}}invariant{{.*}} : !llvm.ptr<1> -> i32
// Barriers: 2 stages + 2 full + 2 empty conversion buffers.
// CHECK-COUNT-6: nvvm.mbarrier.init
// CHECK: nvvm.fence.mbarrier.init
// Thread 0 issues the first tiles' TMA loads of K and V right away, before the query tile's
// loads and the CTA barrier.
// CHECK: nvvm.mbarrier.arrive.expect_tx
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}} box[{{.*}}] {isCTAOnly = true}
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}} box[{{.*}}] {isCTAOnly = true}
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK: nvvm.barrier id
// Producer warpgroups: fewer registers, int8 → bf16 through prmt.
// CHECK: nvvm.setmaxregister  decrease 56
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: llvm.call_intrinsic "llvm.nvvm.prmt"
// CHECK: nvvm.mbarrier.arrive
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %{{.*}}
// Two consumer warpgroups (alternate tiles): S = Q·Kᵀ (8 k-steps of 16 over head_dim 128),
// softmax in ex2, O += P·V with P from registers (inline PTX: NVVM's op has no register A) over
// 128 keys; then they merge their partial states through shared memory.
// CHECK: nvvm.setmaxregister  increase 200
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-8: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>, D[<f32>, {{<zero>|<one>}}], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK-COUNT-8: llvm.inline_asm has_side_effects "{ .reg .pred p; setp.ne.b32 p, 1, 0; wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 1; }"
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %{{.*}}
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %{{.*}}
// CHECK: llvm.func @mqa_i8_combine(%{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: i32, %{{.*}}: i32)
// CHECK-NOT: func.func @mqa_i8
func.func @mqa_i8(%q: memref<?x3x16x128xbf16>, %k: memref<?x?x1x128xi8>, %v: memref<?x?x1x128xi8>,
                  %ks: memref<?x?x1xf32>, %vs: memref<?x?x1xf32>, %lens: memref<?xi32>,
                  %o: memref<?x3x16x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<?x3x16x128xbf16>, memref<?x?x1x128xi8>, memref<?x?x1x128xi8>)
      k_scale(%ks : memref<?x?x1xf32>) v_scale(%vs : memref<?x?x1xf32>) seq_lens(%lens : memref<?xi32>)
      outs(%o : memref<?x3x16x128xbf16>)
      {k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>,
       target = #attn.target<sm_90a>, softmax_scale = 0.125 : f32}
  return
}

// -----

// e4m3 K/V: two values per cvt through f16x2; head_dim 64 gives 4 S steps, and the spec's own
// schedule (tile_n 64, 3 stages, budgets 56/224) is what the kernel uses.
// CHECK-LABEL: llvm.func @gqa_fp8_decode
// CHECK-COUNT-7: nvvm.mbarrier.init
// CHECK: nvvm.setmaxregister  decrease 56
// CHECK: llvm.call_intrinsic "llvm.nvvm.e4m3x2.to.f16x2.rn"
// CHECK: nvvm.setmaxregister  increase 224
// CHECK-COUNT-4: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>
// CHECK-COUNT-4: llvm.inline_asm has_side_effects {{.*}}m64n64k16.f32.bf16.bf16
// CHECK-NOT: llvm.inline_asm has_side_effects {{.*}}wgmma
// CHECK: llvm.func @gqa_fp8_combine
func.func @gqa_fp8(%q: memref<?x1x32x64xbf16>, %k: memref<?x?x4x64xf8E4M3FN>, %v: memref<?x?x4x64xf8E4M3FN>,
                   %ks: memref<?x?xf32>, %vs: memref<?x?xf32>, %slopes: memref<32xf32>,
                   %o: memref<?x1x32x64xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<?x1x32x64xbf16>, memref<?x?x4x64xf8E4M3FN>, memref<?x?x4x64xf8E4M3FN>)
      k_scale(%ks : memref<?x?xf32>) v_scale(%vs : memref<?x?xf32>) alibi(%slopes : memref<32xf32>)
      outs(%o : memref<?x1x32x64xbf16>)
      {causal, k_quant = #attn.quant<f8E4M3FN, per_token>, v_quant = #attn.quant<f8E4M3FN, per_token>,
       target = #attn.target<sm_90a>, softmax_scale = 0.125 : f32,
       schedule = #attn.schedule<pack_q_heads = 8, split_kv = 4, tile_n = 64, stages = 3,
                                 roles = [producer<warpgroups = 1, regs = 56>, consumer<warpgroups = 1, regs = 224>]>}
  return
}

// -----

// bf16 K/V: no dequantization (no prmt, no cvt from e4m3): TMA loads 64-column boxes (two per
// tensor at head_dim 128) into the stages the WGMMAs read, and the consumers release them.
// CHECK-LABEL: llvm.func @mha_bf16_decode
// CHECK-NOT: llvm.nvvm.prmt
// CHECK-NOT: e4m3x2
// CHECK-COUNT-4: nvvm.cp.async.bulk.tensor.shared.cluster.global
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>
// CHECK: llvm.func @mha_bf16_combine
func.func @mha_bf16(%q: memref<2x1x8x128xbf16>, %k: memref<2x4096x8x128xbf16>, %v: memref<2x4096x8x128xbf16>,
                    %o: memref<2x1x8x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<2x1x8x128xbf16>, memref<2x4096x8x128xbf16>, memref<2x4096x8x128xbf16>)
      outs(%o : memref<2x1x8x128xbf16>) {target = #attn.target<sm_90a>, softmax_scale = 0.125 : f32}
  return
}

// -----

// int8 queries over an int8 cache: Q·Kᵀ on s8 WGMMA (k = 32, s32 accumulators) straight from the
// int8 K buffer (the producer copies K and converts only V, to f16), then S in float times
// s_q · s_k; P·V in f16 with a register A.
// The batch is dynamic, so the module also holds the two-CTA-per-SM companion
// `q_i8_decode_2cta` (tile_n 64) for batches of more than one wave; both load 64-row TMA boxes
// (two per 128-key tile of the first) and share the tensor maps.
// CHECK-LABEL: llvm.func @q_i8_decode
// CHECK-SAME: \22ctas_per_sm\22: 2,{{.*}}\22name\22: \22q_i8_decode_2cta\22
// CHECK-SAME: \22box\22: [\0A        128,\0A        1,\0A        64,\0A        1\0A      ]
// CHECK-SAME: nvvm.maxntid = array<i32: 512, 1, 1>, nvvm.minctasm = 1 : i32
// CHECK: llvm.fsub {{.*}} : vector<2xf16>
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 32>, D[<s32>, <zero>], A[<s8>, <one>, <row>], B[<s8>, <one>, <col>]
// CHECK-COUNT-3: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 32>, D[<s32>, <one>]
// CHECK: llvm.sitofp
// CHECK: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
// CHECK: llvm.func @q_i8_combine
// CHECK: llvm.func @q_i8_decode_2cta(
// CHECK-SAME: nvvm.maxntid = array<i32: 256, 1, 1>, nvvm.minctasm = 2 : i32
// CHECK: nvvm.setmaxregister  decrease 56
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 32>, D[<s32>, <zero>]
func.func @q_i8(%q: memref<?x3x16x128xi8>, %qs: memref<?x3x16xf32>, %k: memref<?x?x1x128xi8>,
                %v: memref<?x?x1x128xi8>, %ks: memref<?x?x1xf32>, %vs: memref<?x?x1xf32>,
                %o: memref<?x3x16x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<?x3x16x128xi8>, memref<?x?x1x128xi8>, memref<?x?x1x128xi8>)
      q_scale(%qs : memref<?x3x16xf32>) k_scale(%ks : memref<?x?x1xf32>) v_scale(%vs : memref<?x?x1xf32>)
      outs(%o : memref<?x3x16x128xbf16>)
      {q_quant = #attn.quant<i8, per_token_head>, k_quant = #attn.quant<i8, per_token_head>,
       v_quant = #attn.quant<i8, per_token_head>, target = #attn.target<sm_90a>, softmax_scale = 0.125 : f32}
  return
}

// -----

// ctas_per_sm = 2: ptxas is told (.minnctapersm 2), so each of the 256 threads enters with 128
// registers, which setmaxnreg moves to the consumer; the metadata says so.
// CHECK-LABEL: llvm.func @two_ctas_decode
// CHECK-SAME: attn.launch = "{{.*}}\22ctas_per_sm\22: 2,
// CHECK-SAME: nvvm.kernel, nvvm.maxntid = array<i32: 256, 1, 1>, nvvm.minctasm = 2 : i32
// CHECK: nvvm.setmaxregister  decrease 56
// CHECK: nvvm.setmaxregister  increase 200
// CHECK-NOT: llvm.func @two_ctas_decode_2cta
func.func @two_ctas(%q: memref<?x3x16x128xi8>, %qs: memref<?x3x16xf32>, %k: memref<?x?x1x128xi8>,
                    %v: memref<?x?x1x128xi8>, %ks: memref<?x?x1xf32>, %vs: memref<?x?x1xf32>,
                    %o: memref<?x3x16x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<?x3x16x128xi8>, memref<?x?x1x128xi8>, memref<?x?x1x128xi8>)
      q_scale(%qs : memref<?x3x16xf32>) k_scale(%ks : memref<?x?x1xf32>) v_scale(%vs : memref<?x?x1xf32>)
      outs(%o : memref<?x3x16x128xbf16>)
      {q_quant = #attn.quant<i8, per_token_head>, k_quant = #attn.quant<i8, per_token_head>,
       v_quant = #attn.quant<i8, per_token_head>, target = #attn.target<sm_90a>,
       schedule = #attn.schedule<ctas_per_sm = 2>}
  return
}

// -----

// ctas_per_sm = 1 written in the spec: a dynamic batch gets no two-CTA companion, and the first
// kernel keeps its 128-row TMA boxes.
// CHECK-LABEL: llvm.func @one_cta_decode
// CHECK-SAME: \22box\22: [\0A        128,\0A        1,\0A        128,\0A        1\0A      ]
// CHECK-NOT: llvm.func @one_cta_decode_2cta
func.func @one_cta(%q: memref<?x3x16x128xi8>, %qs: memref<?x3x16xf32>, %k: memref<?x?x1x128xi8>,
                   %v: memref<?x?x1x128xi8>, %ks: memref<?x?x1xf32>, %vs: memref<?x?x1xf32>,
                   %o: memref<?x3x16x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<?x3x16x128xi8>, memref<?x?x1x128xi8>, memref<?x?x1x128xi8>)
      q_scale(%qs : memref<?x3x16xf32>) k_scale(%ks : memref<?x?x1xf32>) v_scale(%vs : memref<?x?x1xf32>)
      outs(%o : memref<?x3x16x128xbf16>)
      {q_quant = #attn.quant<i8, per_token_head>, k_quant = #attn.quant<i8, per_token_head>,
       v_quant = #attn.quant<i8, per_token_head>, target = #attn.target<sm_90a>,
       schedule = #attn.schedule<ctas_per_sm = 1>}
  return
}

// -----

// attn.quantize.append on sm_90a: a 128-thread kernel; 16-byte loads of every chunk are issued
// before any reduction; a group's amax is reduced across its 16 lanes with butterfly shuffles;
// codes are x · rcp.rn(s) rounded half away from zero (trunc(y + copysign(0.5⁻, y))); one lane
// per group writes the scale at cache row positions[b] + t.
// CHECK-LABEL: llvm.func @kv_append_quantize(%{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32)
// CHECK-SAME: attn.launch = "{{.*}}\22groups_per_cta\22: 32,{{.*}}\22lanes_per_group\22: 16,
// CHECK-SAME: nvvm.kernel, nvvm.maxntid = array<i32: 128, 1, 1>
// CHECK: llvm.load {{.*}} invariant {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// CHECK-COUNT-4: nvvm.shfl.sync bfly
// CHECK: llvm.call_intrinsic "llvm.nvvm.rcp.rn.f"
// CHECK: llvm.intr.copysign
// CHECK: llvm.fptosi
// CHECK: llvm.store {{.*}} {alignment = 8 : i64} : vector<8xi8>, !llvm.ptr<1>
// CHECK: llvm.store {{.*}} {alignment = 4 : i64} : f32, !llvm.ptr<1>
func.func @kv_append(%x: memref<?x?x8x128xbf16>, %p: memref<?xi32>, %c: memref<?x?x8x128xi8>,
                     %s: memref<?x?x8xf32>) {
  attn.quantize.append ins(%x : memref<?x?x8x128xbf16>) positions(%p : memref<?xi32>)
      outs(%c, %s : memref<?x?x8x128xi8>, memref<?x?x8xf32>)
      {quant = #attn.quant<i8, per_token_head>, target = #attn.target<sm_90a>}
  return
}

// -----

// e4m3 codes come in pairs from cvt.rn.satfinite.e4m3x2.f32 (the second operand → low byte).
// CHECK-LABEL: llvm.func @q_fp8_quantize
// CHECK: llvm.call_intrinsic "llvm.nvvm.ff.to.e4m3x2.rn"
func.func @q_fp8(%x: memref<1x512x32x128xbf16>, %q: memref<1x512x32x128xf8E4M3FN>,
                 %s: memref<1x512x32xf32>) {
  attn.quantize.dynamic ins(%x : memref<1x512x32x128xbf16>)
      outs(%q, %s : memref<1x512x32x128xf8E4M3FN>, memref<1x512x32xf32>)
      {quant = #attn.quant<f8E4M3FN, per_token_head>, target = #attn.target<sm_90a>}
  return
}

// -----

// Asymmetric ui8 K/V: the zero points (params 13 and 14) are loaded with the scales and turned
// into the constant the 2^23 conversion subtracts (2^23 + z; no sign flip for unsigned codes);
// the producer stages one per key, meets at named barrier 3, and each converted row subtracts
// its own — k̂ − z, exactly, with no other change to the kernel.
// CHECK-LABEL: llvm.func @mqa_u8_asym_decode(
// CHECK-SAME: %{{.*}}: i32, %{{.*}}: !llvm.ptr<1>, %[[KZ:.*]]: !llvm.ptr<1>, %[[VZ:.*]]: !llvm.ptr<1>)
// CHECK-SAME: \22kv_dtype\22: \22ui8\22,
// CHECK-SAME: \22zero_points\22: true
// CHECK: llvm.getelementptr %[[KZ]][%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i8
// CHECK: llvm.uitofp %{{.*}} : i8 to f32
// CHECK: llvm.mlir.constant(0x4B000000 : f32)
// CHECK: llvm.getelementptr %[[VZ]]
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %{{.*}}
// CHECK: %[[MAGIC:.*]] = llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<3> -> f32
// CHECK-NOT: llvm.xor
// CHECK: llvm.call_intrinsic "llvm.nvvm.prmt"
// CHECK-NEXT: llvm.bitcast
// CHECK-NEXT: llvm.fsub %{{.*}}, %[[MAGIC]] : f32
func.func @mqa_u8_asym(%q: memref<?x3x16x128xbf16>, %k: memref<?x?x1x128xui8>, %v: memref<?x?x1x128xui8>,
                       %ks: memref<?x?x1xf32>, %vs: memref<?x?x1xf32>, %kz: memref<?x?x1xui8>,
                       %vz: memref<?x?x1xui8>, %o: memref<?x3x16x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<?x3x16x128xbf16>, memref<?x?x1x128xui8>, memref<?x?x1x128xui8>)
      k_scale(%ks : memref<?x?x1xf32>) v_scale(%vs : memref<?x?x1xf32>)
      k_zero(%kz : memref<?x?x1xui8>) v_zero(%vz : memref<?x?x1xui8>)
      outs(%o : memref<?x3x16x128xbf16>)
      {k_quant = #attn.quant<ui8, per_token_head, asymmetric>,
       v_quant = #attn.quant<ui8, per_token_head, asymmetric>, target = #attn.target<sm_90a>}
  return
}

// -----

// Prefill: the same kernel over query chunks — each consumer warpgroup owns a 64-row query tile
// of 64 / pack_q_heads tokens (MHA: 64; bf16's three consumers: a CTA of 192), all run over every
// key tile; grid x = the CTAs' chunks, one split and no combine kernel; with causal, a CTA stops
// at the tile holding its last query's diagonal (4000 queries: over the 2048 keys up to which
// bf16 takes the persistent grid).
// CHECK-LABEL: llvm.func @mha_prefill_prefill(
// CHECK-SAME: \22block\22: [\0A        512,
// CHECK-SAME: \22grid\22: [\0A        \22q_chunks\22,
// CHECK-SAME: \22kind\22: \22prefill\22,
// CHECK-SAME: \22consumer_warpgroups\22: 3,
// CHECK-SAME: \22q_chunk\22: 192,
// CHECK-SAME: \22rows_per_cta\22: 192,
// CHECK-SAME: \22split_kv\22: 1,
// CHECK-NOT: llvm.func @mha_prefill_combine
func.func @mha_prefill(%q: memref<?x4000x8x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>,
                       %o: memref<?x4000x8x128xbf16>) {
  attn.attention prefill ins(%q, %k, %v : memref<?x4000x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>)
      outs(%o : memref<?x4000x8x128xbf16>) {causal, target = #attn.target<sm_90a>}
  return
}

// -----

// A dynamic query length (prefill only) becomes the kernel's last parameter, `q_len`.
// CHECK-LABEL: llvm.func @dyn_prefill_prefill(
// CHECK-SAME: %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: i32)
// CHECK-SAME: \22v_zero\22,\0A        \22q_len\22\0A
// CHECK-SAME: \22q_len\22: -1,
func.func @dyn_prefill(%q: memref<?x?x8x128xbf16>, %k: memref<?x?x2x128xbf16>, %v: memref<?x?x2x128xbf16>,
                       %o: memref<?x?x8x128xbf16>) {
  attn.attention prefill ins(%q, %k, %v : memref<?x?x8x128xbf16>, memref<?x?x2x128xbf16>, memref<?x?x2x128xbf16>)
      outs(%o : memref<?x?x8x128xbf16>) {causal, target = #attn.target<sm_90a>}
  return
}

// -----

// FA3's intra-warpgroup overlap (schedule intra_wg_overlap) with pingpong (both bf16 defaults):
// the first tile's Q·Kᵀ and softmax before the loop; in it, the consumer's turn (bar.sync on
// its named barrier), Q·K_jᵀ and P_{j−1}·V_{j−1} committed as two groups, the other consumer's
// turn (bar.arrive), the wait for the first (S_j) before the softmax and for both before P_j is
// packed; the last P·V after it.
// CHECK-LABEL: llvm.func @overlap_prefill_prefill(
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvvm.barrier.arrive
// CHECK: scf.for
// CHECK: nvvm.barrier id = {{.*}} number_of_threads
// CHECK: nvvm.wgmma.mma_async
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: llvm.inline_asm {{.*}}wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvvm.barrier.arrive
// CHECK: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: cvt.rn.bf16x2.f32
// CHECK: scf.yield
// CHECK: llvm.inline_asm {{.*}}wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
func.func @overlap_prefill(%q: memref<2x300x8x128xbf16>, %k: memref<2x300x2x128xbf16>, %v: memref<2x300x2x128xbf16>,
                           %o: memref<2x300x8x128xbf16>) {
  attn.attention prefill ins(%q, %k, %v : memref<2x300x8x128xbf16>, memref<2x300x2x128xbf16>, memref<2x300x2x128xbf16>)
      outs(%o : memref<2x300x8x128xbf16>)
      {causal, target = #attn.target<sm_90a>, schedule = #attn.schedule<intra_wg_overlap = true, stages = 3>}
  return
}

// -----

// attn.mla_decode on sm_90a (FlashMLA's FP8 sparse decode with the crossover): one kernel, a
// 2-CTA cluster, 384 threads. The producer converts its half of each 64-key block (e4m3 → f16
// → f32 · tile scale → bf16) and writes it into both CTAs (st.shared here, st.async into the
// peer's shared memory through mapa, completing the peer's transaction barrier); consumer 0 runs
// S = Q·Kᵀ over Dk = 576 (36 WGMMA k-steps of m64n64) and the softmax, and both consumers add
// P·V into their half of O (m64n256, V transposed); buffers are released in both CTAs.
// CHECK-LABEL: llvm.func @mla_fp8_mla(%{{.*}}: !llvm.ptr<1> {llvm.noalias}, %{{.*}}: !llvm.ptr<1> {llvm.noalias}, %{{.*}}: !llvm.ptr<1> {llvm.noalias}, %{{.*}}: !llvm.ptr<1> {llvm.noalias}, %{{.*}}: !llvm.ptr<1> {llvm.noalias}, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32)
// CHECK-SAME: \22cluster\22: [\0A        2,\0A        1,\0A        1\0A      ],
// CHECK-SAME: \22kind\22: \22mla_decode\22,
// CHECK-SAME: \22crossover\22: true,
// CHECK-SAME: nvvm.cluster_dim = array<i32: 2, 1, 1>, nvvm.kernel, nvvm.maxntid = array<i32: 384, 1, 1>
// CHECK: nvvm.read.ptx.sreg.cluster.ctarank
// CHECK: mapa.shared::cluster.u32
// CHECK-COUNT-9: nvvm.mbarrier.init
// CHECK: nvvm.cluster.arrive {aligned}
// CHECK-NEXT: nvvm.cluster.wait {aligned}
// CHECK: nvvm.setmaxregister  decrease 120
// CHECK: nvvm.mbarrier.arrive.expect_tx
// CHECK: llvm.call_intrinsic "llvm.nvvm.e4m3x2.to.f16x2.rn"
// CHECK: st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>
// CHECK: nvvm.setmaxregister  increase 216
// CHECK-COUNT-36: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 64, k = 16>, D[<f32>, <{{zero|one}}>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
// CHECK: mbarrier.arrive.shared::cluster.b64
// Consumer 1: P from shared memory (SS WGMMA), V transposed.
// CHECK: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 256, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>]
// CHECK: mbarrier.arrive.shared::cluster.b64
// CHECK: nvvm.cluster.arrive {aligned}
// CHECK-NEXT: nvvm.cluster.wait {aligned}
func.func @mla_fp8(%q: memref<?x2x128x576xbf16>, %kv: memref<?x?x656xi8>, %idx: memref<?x2x2048xi32>,
                   %o: memref<?x2x128x512xbf16>) {
  attn.mla_decode ins(%q, %kv : memref<?x2x128x576xbf16>, memref<?x?x656xi8>)
      indices(%idx : memref<?x2x2048xi32>) outs(%o : memref<?x2x128x512xbf16>)
      {head_dim_v = 512 : i64, rope_dim = 64 : i64, kv_quant = #attn.quant<f8E4M3FN, per_block<1x128>>,
       target = #attn.target<sm_90a>}
  return
}

// -----

// Dense MLA over a bf16 cache (the reference variant): no cluster, no conversion, no remote
// stores; the launch metadata says so.
// CHECK-LABEL: llvm.func @mla_bf16_mla(
// CHECK-SAME: \22cluster\22: [\0A        1,
// CHECK-SAME: \22kv_format\22: \22bf16\22,
// CHECK-SAME: \22sparse\22: false,
// CHECK-NOT: nvvm.cluster_dim
// CHECK-NOT: st.async
// CHECK-NOT: llvm.nvvm.e4m3x2.to.f16x2.rn
// CHECK: llvm.return
func.func @mla_bf16(%q: memref<?x1x64x576xbf16>, %kv: memref<?x?x576xbf16>, %o: memref<?x1x64x512xbf16>) {
  attn.mla_decode ins(%q, %kv : memref<?x1x64x576xbf16>, memref<?x?x576xbf16>)
      outs(%o : memref<?x1x64x512xbf16>) {head_dim_v = 512 : i64, rope_dim = 64 : i64, causal,
       target = #attn.target<sm_90a>}
  return
}

// -----

// attn.quantize.mla_append on sm_90a: a 128-thread kernel, one warp per token; the tile amax
// reduced over 8 lanes, 1/s correctly rounded, e4m3 codes through cvt.rn.satfinite, one 16-byte
// store of codes per lane; launch metadata of kind quantize_mla.
// CHECK-LABEL: llvm.func @mla_q_quantize(%{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32)
// CHECK-SAME: \22kind\22: \22quantize_mla\22,
// CHECK-SAME: nvvm.maxntid = array<i32: 128, 1, 1>
// CHECK-COUNT-3: nvvm.shfl.sync bfly
// CHECK: llvm.call_intrinsic "llvm.nvvm.rcp.rn.f"
// CHECK: llvm.call_intrinsic "llvm.nvvm.ff.to.e4m3x2.rn"
// CHECK: llvm.store {{.*}} : vector<4xi32>, !llvm.ptr<1>
func.func @mla_q(%x: memref<?x?x576xf32>, %p: memref<?xi32>, %c: memref<?x?x656xi8>) {
  attn.quantize.mla_append ins(%x : memref<?x?x576xf32>) positions(%p : memref<?xi32>)
      outs(%c : memref<?x?x656xi8>)
      {head_dim_v = 512 : i64, rope_dim = 64 : i64, kv_quant = #attn.quant<f8E4M3FN, per_block<1x128>>,
       target = #attn.target<sm_90a>}
  return
}
