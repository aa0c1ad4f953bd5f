// The kernel-level dialect parses, verifies and prints back what it parsed: every type, every
// attribute form and every op, in the shape of an int8-KV decode kernel (a TMA producer, two
// consumer warpgroups) and of the split merges.
// RUN: attn-opt %s -split-input-file | FileCheck %s
// RUN: attn-opt %s -split-input-file | attn-opt -split-input-file | FileCheck %s
// RUN: attn-opt %s -split-input-file --mlir-print-op-generic | attn-opt -split-input-file | FileCheck %s
// RUN: attn-opt %s -split-input-file | FileCheck %s --check-prefix=SPACING --strict-whitespace

// CHECK-LABEL: func.func @decode_int8
// CHECK: %[[K:.+]] = attnk.ring.alloc : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 2>
// CHECK: %[[KB:.+]] = attnk.ring.alloc : !attnk.ring<128x128xbf16, stages = 2, swizzle_128b, producers = 4, consumers = 2>
// CHECK: attnk.warp_specialize attributes {ctas_per_sm = 1 : i64}
// CHECK-NEXT: #attn.role<producer, warpgroups = 1, regs = 40> {
// CHECK: %[[ST:.+]] = attnk.ring.acquire %[[K]][%{{.+}}] phase %{{.+}} expect_tx 16384 : !attnk.ring<128x128xi8
// CHECK: attnk.tma_load %{{.+}}[%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}] #attnk.addressing<contiguous> into %[[ST]] : !attnk.tensor_map<1x128x1x128xi8, swizzle_128b>, !attnk.stage<128x128xi8, swizzle_128b>
// CHECK: attnk.ring.commit %[[K]][%[[ST]]]
// CHECK: %[[FULL:.+]] = attnk.ring.wait %[[K]]
// CHECK: %[[DST:.+]] = attnk.ring.acquire %[[KB]]
// CHECK: attnk.convert_tile %[[FULL]] into %[[DST]] scales(%{{.+}} : vector<128xf32>) {quant = [#attn.quant<i8, per_token_head, symmetric>]} : !attnk.stage<128x128xi8, swizzle_128b> into !attnk.stage<128x128xbf16, swizzle_128b>
// CHECK: attnk.ring.release %[[K]][%[[FULL]]]
// CHECK: attnk.ring.commit %[[KB]][%[[DST]]]
// CHECK: #attn.role<consumer, warpgroups = 2, regs = 232> {
// CHECK: %[[KT:.+]] = attnk.ring.wait %[[KB]]
// CHECK: %[[S:.+]] = attnk.wgmma %{{.+}}, %[[KT]], %{{.+}} : !attnk.stage<64x128xbf16, swizzle_128b>, !attnk.stage<128x128xbf16, swizzle_128b>, !attnk.acc<64x128xf32>
// CHECK: %[[S2:.+]] = attnk.wgmma_wait %[[S]] pending = 0 : !attnk.acc<64x128xf32>
// CHECK: attnk.ring.release %[[KB]][%[[KT]]]
// CHECK: %[[P:.+]], %[[M1:.+]], %[[L1:.+]], %[[C:.+]] = attnk.softmax_step %[[S2]], %{{.+}}, %{{.+}} scale_log2 = 1.250000e-01 key_limit(%{{.+}}) causal(%{{.+}}) alibi(%{{.+}} : vector<64xf32>) : !attnk.acc<64x128xf32>, vector<64xf32> -> !attnk.frag<64x128xbf16>
// CHECK: %[[O1:.+]] = attnk.rescale_output %{{.+}}, %[[C]] : !attnk.acc<64x128xf32>, vector<64xf32>
// CHECK: %[[O2:.+]] = attnk.wgmma %[[P]], %{{.+}}, %[[O1]] {transpose_b} : !attnk.frag<64x128xbf16>, !attnk.stage<128x128xbf16, swizzle_128b>, !attnk.acc<64x128xf32>
// CHECK: %[[O4:.+]], %[[L2:.+]] = attnk.softmax_finish %[[O2]], %[[L1]] rows(%{{.+}} : !attnk.rows) {hadamard} : !attnk.acc<64x128xf32>, vector<64xf32>
// CHECK: %[[O3:.+]] = attnk.rescale_output %[[O4]], %[[L2]] {reciprocal}
// CHECK: attnk.store_tile %[[O3]], %{{.+}}[%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}] rows(%{{.+}}) : !attnk.acc<64x128xf32>, memref<?x?x16x128xbf16>
func.func @decode_int8(%kmap: !attnk.tensor_map<1x128x1x128xi8, swizzle_128b>,
                       %q: !attnk.stage<64x128xbf16, swizzle_128b>,
                       %v: !attnk.stage<128x128xbf16, swizzle_128b>,
                       %ks: vector<128xf32>, %acc: !attnk.acc<64x128xf32>,
                       %m: vector<64xf32>, %l: vector<64xf32>, %slopes: vector<64xf32>,
                       %out: memref<?x?x16x128xbf16>, %i: i32, %ph: i1, %n: i32, %c0: index,
                       %rows: !attnk.rows) {
  %k = attnk.ring.alloc : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 2>
  %kb = attnk.ring.alloc : !attnk.ring<128x128xbf16, stages = 2, swizzle_128b, producers = 4, consumers = 2>
  attnk.warp_specialize attributes {ctas_per_sm = 1}
    #attn.role<producer, warpgroups = 1, regs = 40> {
      %st = attnk.ring.acquire %k[%i] phase %ph expect_tx 16384 : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 2>
      attnk.tma_load %kmap[%i, %i, %i, %i] #attnk.addressing<contiguous> into %st
          : !attnk.tensor_map<1x128x1x128xi8, swizzle_128b>, !attnk.stage<128x128xi8, swizzle_128b>
      attnk.ring.commit %k[%st] : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 2>
      %full = attnk.ring.wait %k[%i] phase %ph : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 2>
      %dst = attnk.ring.acquire %kb[%i] phase %ph : !attnk.ring<128x128xbf16, stages = 2, swizzle_128b, producers = 4, consumers = 2>
      attnk.convert_tile %full into %dst scales(%ks : vector<128xf32>)
          {quant = [#attn.quant<i8, per_token_head>]}
          : !attnk.stage<128x128xi8, swizzle_128b> into !attnk.stage<128x128xbf16, swizzle_128b>
      attnk.ring.release %k[%full] : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 2>
      attnk.ring.commit %kb[%dst] : !attnk.ring<128x128xbf16, stages = 2, swizzle_128b, producers = 4, consumers = 2>
    }
    #attn.role<consumer, warpgroups = 2, regs = 232> {
      %kt = attnk.ring.wait %kb[%i] phase %ph : !attnk.ring<128x128xbf16, stages = 2, swizzle_128b, producers = 4, consumers = 2>
      %s = attnk.wgmma %q, %kt, %acc : !attnk.stage<64x128xbf16, swizzle_128b>, !attnk.stage<128x128xbf16, swizzle_128b>, !attnk.acc<64x128xf32>
      %s2 = attnk.wgmma_wait %s pending = 0 : !attnk.acc<64x128xf32>
      attnk.ring.release %kb[%kt] : !attnk.ring<128x128xbf16, stages = 2, swizzle_128b, producers = 4, consumers = 2>
      %p, %m1, %l1, %c = attnk.softmax_step %s2, %m, %l scale_log2 = 0.125 key_limit(%n) causal(%i)
          alibi(%slopes : vector<64xf32>) : !attnk.acc<64x128xf32>, vector<64xf32> -> !attnk.frag<64x128xbf16>
      %o1 = attnk.rescale_output %acc, %c : !attnk.acc<64x128xf32>, vector<64xf32>
      %o2 = attnk.wgmma %p, %v, %o1 {transpose_b} : !attnk.frag<64x128xbf16>, !attnk.stage<128x128xbf16, swizzle_128b>, !attnk.acc<64x128xf32>
      %o4, %l2 = attnk.softmax_finish %o2, %l1 rows(%rows : !attnk.rows) {hadamard} : !attnk.acc<64x128xf32>, vector<64xf32>
      %o3 = attnk.rescale_output %o4, %l2 {reciprocal} : !attnk.acc<64x128xf32>, vector<64xf32>
      attnk.store_tile %o3, %out[%c0, %c0, %c0, %c0] rows(%n) : !attnk.acc<64x128xf32>, memref<?x?x16x128xbf16>
    }
  return
}

// -----

// CHECK-LABEL: func.func @int8_queries
// CHECK: %[[S:.+]] = attnk.wgmma %{{.+}}, %{{.+}}, %{{.+}} : !attnk.stage<64x128xi8, swizzle_128b>, !attnk.stage<128x128xi8, swizzle_128b>, !attnk.acc<64x128xi32>
// CHECK: attnk.convert_tile %[[S]] scales(%{{.+}}, %{{.+}} : vector<64xf32>, vector<128xf32>) {part = #attnk.part<scales>, quant = [#attn.quant<i8, per_token_head, symmetric>, #attn.quant<i8, per_token_head, symmetric>]} : !attnk.acc<64x128xi32> -> !attnk.acc<64x128xf32>
// CHECK: attnk.convert_tile %{{.+}} zero_points(%{{.+}} : vector<128xui8>) {part = #attnk.part<codes>, quant = [#attn.quant<ui8, per_token, asymmetric>]} : !attnk.stage<64x128xui8, swizzle_128b> -> !attnk.frag<64x128xf16>
// CHECK: attnk.convert_tile %{{.+}} into %{{.+}} {transpose} : !attnk.stage<128x64xf8E4M3FN, swizzle_64b> into !attnk.stage<64x128xf8E4M3FN, swizzle_128b>
// CHECK: attnk.convert_tile %{{.+}} scales(%{{.+}} : memref<?x?x4xf32>) {quant = [#attn.quant<f8E4M3FN, per_token_head, symmetric>]} : !attnk.frag<64x64xf8E4M3FN> -> !attnk.frag<64x64xbf16>
func.func @int8_queries(%q: !attnk.stage<64x128xi8, swizzle_128b>, %k: !attnk.stage<128x128xi8, swizzle_128b>,
                        %acc: !attnk.acc<64x128xi32>, %qs: vector<64xf32>, %ks: vector<128xf32>,
                        %u: !attnk.stage<64x128xui8, swizzle_128b>, %uz: vector<128xui8>,
                        %vt: !attnk.stage<128x64xf8E4M3FN, swizzle_64b>, %vk: !attnk.stage<64x128xf8E4M3FN, swizzle_128b>,
                        %f8: !attnk.frag<64x64xf8E4M3FN>, %f8s: memref<?x?x4xf32>) {
  %s = attnk.wgmma %q, %k, %acc : !attnk.stage<64x128xi8, swizzle_128b>, !attnk.stage<128x128xi8, swizzle_128b>, !attnk.acc<64x128xi32>
  %sf = attnk.convert_tile %s scales(%qs, %ks : vector<64xf32>, vector<128xf32>)
      {part = #attnk.part<scales>, quant = [#attn.quant<i8, per_token_head>, #attn.quant<i8, per_token_head>]}
      : !attnk.acc<64x128xi32> -> !attnk.acc<64x128xf32>
  %uf = attnk.convert_tile %u zero_points(%uz : vector<128xui8>)
      {part = #attnk.part<codes>, quant = [#attn.quant<ui8, per_token, asymmetric>]}
      : !attnk.stage<64x128xui8, swizzle_128b> -> !attnk.frag<64x128xf16>
  attnk.convert_tile %vt into %vk {transpose} : !attnk.stage<128x64xf8E4M3FN, swizzle_64b> into !attnk.stage<64x128xf8E4M3FN, swizzle_128b>
  %f = attnk.convert_tile %f8 scales(%f8s : memref<?x?x4xf32>) {quant = [#attn.quant<f8E4M3FN, per_token_head>]}
      : !attnk.frag<64x64xf8E4M3FN> -> !attnk.frag<64x64xbf16>
  return
}

// -----

// CHECK-LABEL: func.func @paged_and_gathered
// CHECK: attnk.tma_load %{{.+}}[%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}] #attnk.addressing<paged, page = 64> into %{{.+}} block_table(%{{.+}} : memref<?x?xi32>)
// CHECK: attnk.tma_load %{{.+}}[%{{.+}}, %{{.+}}] #attnk.addressing<gathered> into %{{.+}} indices(%{{.+}} : vector<64xi32>)
func.func @paged_and_gathered(%map: !attnk.tensor_map<1x64x1x128xi8, swizzle_128b>,
                              %rows: !attnk.tensor_map<1x128xf8E4M3FN, swizzle_128b>,
                              %bt: memref<?x?xi32>, %idx: vector<64xi32>, %i: i32, %ph: i1) {
  %k = attnk.ring.alloc : !attnk.ring<128x128xi8, stages = 3, swizzle_128b, producers = 1, consumers = 1>
  %g = attnk.ring.alloc : !attnk.ring<64x128xf8E4M3FN, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  %st = attnk.ring.acquire %k[%i] phase %ph expect_tx 16384 : !attnk.ring<128x128xi8, stages = 3, swizzle_128b, producers = 1, consumers = 1>
  attnk.tma_load %map[%i, %i, %i, %i] #attnk.addressing<paged, page = 64> into %st block_table(%bt : memref<?x?xi32>)
      : !attnk.tensor_map<1x64x1x128xi8, swizzle_128b>, !attnk.stage<128x128xi8, swizzle_128b>
  attnk.ring.commit %k[%st] : !attnk.ring<128x128xi8, stages = 3, swizzle_128b, producers = 1, consumers = 1>
  %gs = attnk.ring.acquire %g[%i] phase %ph expect_tx 8192 : !attnk.ring<64x128xf8E4M3FN, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  attnk.tma_load %rows[%i, %i] #attnk.addressing<gathered> into %gs indices(%idx : vector<64xi32>)
      : !attnk.tensor_map<1x128xf8E4M3FN, swizzle_128b>, !attnk.stage<64x128xf8E4M3FN, swizzle_128b>
  attnk.ring.commit %g[%gs] : !attnk.ring<64x128xf8E4M3FN, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  return
}

// -----

// CHECK-LABEL: func.func @merges
// CHECK: attnk.merge.cluster %{{.+}}, %{{.+}}, %{{.+}} splits = 2 scale_log2 = 1.250000e-01 : !attnk.acc<64x128xf32>, vector<64xf32>
// CHECK: attnk.store_tile %{{.+}}, %{{.+}}[%{{.+}}, %{{.+}}] : vector<64xf32>, memref<?x?xf32>
func.func @merges(%o: !attnk.acc<64x128xf32>, %m: vector<64xf32>, %l: vector<64xf32>,
                  %lse_out: memref<?x?xf32>, %c0: index) {
  %o2, %m2, %l2 = attnk.merge.cluster %o, %m, %l splits = 2 scale_log2 = 0.125 : !attnk.acc<64x128xf32>, vector<64xf32>
  attnk.store_tile %m2, %lse_out[%c0, %c0] : vector<64xf32>, memref<?x?xf32>
  return
}

// -----

// The combine kernels of a split-KV decode (narrow and wide form), programmatic dependents.
// CHECK-LABEL: attnk.kernel @d_combine(
// CHECK-SAME: %[[WS:.+]]: memref<?xf32>, %[[OUT:.+]]: memref<?x1x16x128xbf16>, %{{.+}}: i32, %[[N:.+]]: i32) threads = 128 programmatic {
// CHECK-NEXT: attnk.merge.combine %[[WS]] into %[[OUT]] splits(%[[N]]) narrow kv_heads = 2 pack = 8 : memref<?xf32>, memref<?x1x16x128xbf16>
// CHECK: attnk.kernel @d_combine_wide({{.*}}) threads = 512 programmatic {
// CHECK-NEXT: attnk.merge.combine %{{.+}} into %{{.+}} splits(%{{.+}}) wide kv_heads = 2 pack = 8
// One space before the form, as the other keywords have.
// SPACING: attnk.merge.combine %{{[a-z0-9]+}} into %{{[a-z0-9]+}} splits(%{{[a-z0-9]+}}) narrow kv_heads = 2 pack = 8 :
// SPACING: attnk.merge.combine %{{[a-z0-9]+}} into %{{[a-z0-9]+}} splits(%{{[a-z0-9]+}}) wide kv_heads = 2 pack = 8 :
attnk.kernel @d_combine(%ws: memref<?xf32>, %out: memref<?x1x16x128xbf16>, %b: i32, %n: i32) threads = 128 programmatic {
  attnk.merge.combine %ws into %out splits(%n) narrow kv_heads = 2 pack = 8 : memref<?xf32>, memref<?x1x16x128xbf16>
}
attnk.kernel @d_combine_wide(%ws: memref<?xf32>, %out: memref<?x1x16x128xbf16>, %b: i32, %n: i32) threads = 512 programmatic {
  attnk.merge.combine %ws into %out splits(%n) wide kv_heads = 2 pack = 8 : memref<?xf32>, memref<?x1x16x128xbf16>
}
// With the log-sum-exp output.
// CHECK-LABEL: attnk.kernel @d_lse_combine(
// CHECK-NEXT: attnk.merge.combine %{{.+}} into %{{.+}} lse(%{{.+}} : memref<?x1x16xf32>) splits(%{{.+}}) narrow kv_heads = 2 pack = 8 : memref<?xf32>, memref<?x1x16x128xbf16>
attnk.kernel @d_lse_combine(%ws: memref<?xf32>, %out: memref<?x1x16x128xbf16>, %b: i32, %n: i32, %lse: memref<?x1x16xf32>) threads = 128 programmatic {
  attnk.merge.combine %ws into %out lse(%lse : memref<?x1x16xf32>) splits(%n) narrow kv_heads = 2 pack = 8 : memref<?xf32>, memref<?x1x16x128xbf16>
}

// Attention sinks folded into a final state where the split is 0.
// CHECK-LABEL: func.func @sink
// CHECK: %{{.+}}, %{{.+}}, %{{.+}} = attnk.softmax_sink %{{.+}}, %{{.+}}, %{{.+}} sinks(%{{.+}} : memref<16xf32>) split(%{{.+}}) rows(%{{.+}} : !attnk.rows) : !attnk.acc<64x128xf32>, vector<64xf32>
func.func @sink(%o: !attnk.acc<64x128xf32>, %m: vector<64xf32>, %l: vector<64xf32>, %s: memref<16xf32>, %split: i32, %rows: !attnk.rows) {
  %o1, %m1, %l1 = attnk.softmax_sink %o, %m, %l sinks(%s : memref<16xf32>) split(%split) rows(%rows : !attnk.rows) : !attnk.acc<64x128xf32>, vector<64xf32>
  return
}

// -----

// A quantize kernel's slot: group, loads, widening, rotation, scales, codes, store; and the
// static (read) scales of a per_channel asymmetric scheme.
// CHECK-LABEL: attnk.kernel @q_quantize(
// CHECK-SAME: threads = 128 attributes {launch = #attnk.launch<quantize, grid = ["quantize_ctas", 1, 1], block = [128, 1, 1], cluster = [1, 1, 1], smem = 0, params = ["src", "positions", "dst", "scales", "zeros", "batch", "new_tokens", "capacity"]>, metadata = {problem = {kind = "quantize_append"}}}
// CHECK: %[[G0:[^,]+]], %[[G1:[^,]+]], %[[G2:[^,]+]], %[[G3:[^ ]+]] = attnk.group_index %{{.+}}, %{{.+}} slot 0 of 2 lanes = 16 groups_per_token = 8
// CHECK: %[[X:.+]] = attnk.load_groups %{{.+}}[%[[G1]], %[[G2]]] lane(%[[G3]]) lanes = 16 : memref<?x?x8x128xbf16> -> vector<1x8xbf16>
// CHECK: %[[W:.+]] = attnk.convert_tile %[[X]] : vector<1x8xbf16> -> !attnk.groups<128xf32, lanes = 16, vec = 8>
// CHECK: %[[R:.+]] = attnk.hadamard %[[W]] lane(%[[G3]]) size = 128 : !attnk.groups<128xf32, lanes = 16, vec = 8>
// CHECK: %[[S:.+]] = attnk.group_scales %[[R]] {quant = #attn.quant<i8, per_token_head, symmetric>} : !attnk.groups<128xf32, lanes = 16, vec = 8> -> f32
// CHECK: %[[Q:.+]] = attnk.quantize_tile %[[R]] scales(%[[S]] : f32) {quant = #attn.quant<i8, per_token_head, symmetric>} : !attnk.groups<128xf32, lanes = 16, vec = 8> -> !attnk.groups<128xi8, lanes = 16, vec = 8>
// CHECK: attnk.store_groups %[[Q]], %{{.+}}[%[[G0]], %[[G1]], %[[G2]]] lane(%[[G3]]) tokens(%{{.+}}, %{{.+}}) capacity(%{{.+}}) positions(%{{.+}} : memref<?xi32>) scale(%[[S]] into %{{.+}} : memref<?x?x8xf32>) : !attnk.groups<128xi8, lanes = 16, vec = 8>, memref<?x?x8x128xi8>
attnk.kernel @q_quantize(%src: memref<?x?x8x128xbf16>, %pos: memref<?xi32>, %dst: memref<?x?x8x128xi8>, %sc: memref<?x?x8xf32>, %zp: memref<?xi8>, %b: i32, %n: i32, %cap: i32) threads = 128 attributes {launch = #attnk.launch<quantize, grid = ["quantize_ctas", 1, 1], block = [128, 1, 1], cluster = [1, 1, 1], smem = 0, params = ["src", "positions", "dst", "scales", "zeros", "batch", "new_tokens", "capacity"]>, metadata = {problem = {kind = "quantize_append"}}} {
  %g, %tok, %gin, %r = attnk.group_index %b, %n slot 0 of 2 lanes = 16 groups_per_token = 8
  %x = attnk.load_groups %src[%tok, %gin] lane(%r) lanes = 16 : memref<?x?x8x128xbf16> -> vector<1x8xbf16>
  %w = attnk.convert_tile %x : vector<1x8xbf16> -> !attnk.groups<128xf32, lanes = 16, vec = 8>
  %h = attnk.hadamard %w lane(%r) size = 128 : !attnk.groups<128xf32, lanes = 16, vec = 8>
  %s = attnk.group_scales %h {quant = #attn.quant<i8, per_token_head>} : !attnk.groups<128xf32, lanes = 16, vec = 8> -> f32
  %q = attnk.quantize_tile %h scales(%s : f32) {quant = #attn.quant<i8, per_token_head>} : !attnk.groups<128xf32, lanes = 16, vec = 8> -> !attnk.groups<128xi8, lanes = 16, vec = 8>
  attnk.store_groups %q, %dst[%g, %tok, %gin] lane(%r) tokens(%b, %n) capacity(%cap) positions(%pos : memref<?xi32>) scale(%s into %sc : memref<?x?x8xf32>) : !attnk.groups<128xi8, lanes = 16, vec = 8>, memref<?x?x8x128xi8>
}

// CHECK-LABEL: func.func @static_scales
// CHECK: %[[S:.+]], %[[Z:.+]] = attnk.group_scales %{{.+}}[%{{.+}}] lane(%{{.+}}) from(%{{.+}} : memref<8x128xf32>) zero_points(%{{.+}} : memref<8x128xui8>) {quant = #attn.quant<ui8, per_channel, asymmetric>} : !attnk.groups<128xf32, lanes = 32, vec = 4> -> !attnk.groups<128xf32, lanes = 32, vec = 4>, !attnk.groups<128xf32, lanes = 32, vec = 4>
// CHECK: attnk.quantize_tile %{{.+}} scales(%[[S]] : !attnk.groups<128xf32, lanes = 32, vec = 4>) zero_points(%[[Z]] : !attnk.groups<128xf32, lanes = 32, vec = 4>)
func.func @static_scales(%x: !attnk.groups<128xf32, lanes = 32, vec = 4>, %gin: i32, %r: i32, %sc: memref<8x128xf32>, %zp: memref<8x128xui8>) {
  %s, %z = attnk.group_scales %x[%gin] lane(%r) from(%sc : memref<8x128xf32>) zero_points(%zp : memref<8x128xui8>) {quant = #attn.quant<ui8, per_channel, asymmetric>} : !attnk.groups<128xf32, lanes = 32, vec = 4> -> !attnk.groups<128xf32, lanes = 32, vec = 4>, !attnk.groups<128xf32, lanes = 32, vec = 4>
  %q = attnk.quantize_tile %x scales(%s : !attnk.groups<128xf32, lanes = 32, vec = 4>) zero_points(%z : !attnk.groups<128xf32, lanes = 32, vec = 4>) {quant = #attn.quant<ui8, per_channel, asymmetric>} : !attnk.groups<128xf32, lanes = 32, vec = 4> -> !attnk.groups<128xui8, lanes = 32, vec = 4>
  return
}

// -----

// A whole-token row kernel (MLA's cache quantization): a warp per token, the token's rows, the
// latent tile as contiguous groups (e4m3 codes and the scale into the row), the RoPE part
// rounded to bf16 on the first lanes.
// CHECK-LABEL: attnk.kernel @m_quantize(
// CHECK-SAME: attributes {launch = #attnk.launch<quantize, grid = ["token_ctas", 1, 1], block = [128, 1, 1], cluster = [1, 1, 1], smem = 0, params = ["src", "positions", "cache", "batch", "new_tokens", "capacity"]>}
// CHECK: %[[G:[^,]+]], %[[TOK:[^,]+]], %[[GIN:[^,]+]], %[[L:[^ ]+]] = attnk.group_index %{{.+}}, %{{.+}} slot 0 of 1 lanes = 8 groups_per_token = 4 whole_tokens
// CHECK: attnk.token_rows %{{.+}}[%[[TOK]]], %{{.+}} positions(%{{.+}} : memref<?xi32>) tokens(%{{.+}}, %{{.+}}) capacity(%{{.+}}) : memref<?x?x576xbf16>, memref<?x?x656xi8> {
// CHECK-NEXT: ^bb0(%[[X:.+]]: memref<576xbf16>, %[[ROW:.+]]: memref<656xi8>):
// CHECK: %[[V:.+]] = attnk.load_groups %[[X]] lane(%[[L]]) lanes = 8 : memref<576xbf16> -> !attnk.groups<128xf32, lanes = 8, vec = 8, contiguous>
// CHECK: %[[S:.+]] = attnk.group_scales %[[V]] {quant = #attn.quant<f8E4M3FN, per_block<1x128>, symmetric>} : !attnk.groups<128xf32, lanes = 8, vec = 8, contiguous> -> f32
// CHECK: %[[Q:.+]] = attnk.quantize_tile %[[V]] scales(%[[S]] : f32)
// CHECK-SAME: -> !attnk.groups<128xf8E4M3FN, lanes = 8, vec = 8, contiguous>
// CHECK: attnk.store_groups %[[Q]], %[[ROW]] lane(%[[L]]) scale(%[[S]] into %[[ROW]] : memref<656xi8>) scale_offset = 512 : !attnk.groups<128xf8E4M3FN, lanes = 8, vec = 8, contiguous>, memref<656xi8>
// CHECK: %[[R:.+]] = attnk.load_groups %[[X]] lane(%[[L]]) lanes = 8 offset = 512 : memref<576xbf16> -> !attnk.groups<64xf32, lanes = 8, vec = 8, contiguous>
// CHECK: %[[RB:.+]] = attnk.convert_tile %[[R]] : !attnk.groups<64xf32, lanes = 8, vec = 8, contiguous> -> !attnk.groups<64xbf16, lanes = 8, vec = 8, contiguous>
// CHECK: attnk.store_groups %[[RB]], %[[ROW]] lane(%[[L]]) offset = 528 : !attnk.groups<64xbf16, lanes = 8, vec = 8, contiguous>, memref<656xi8>
attnk.kernel @m_quantize(%src: memref<?x?x576xbf16>, %pos: memref<?xi32>, %cache: memref<?x?x656xi8>, %b: i32, %n: i32, %cap: i32) threads = 128 attributes {launch = #attnk.launch<quantize, grid = ["token_ctas", 1, 1], block = [128, 1, 1], cluster = [1, 1, 1], smem = 0, params = ["src", "positions", "cache", "batch", "new_tokens", "capacity"]>} {
  %g, %tok, %gin, %l = attnk.group_index %b, %n slot 0 of 1 lanes = 8 groups_per_token = 4 whole_tokens
  attnk.token_rows %src[%tok], %cache positions(%pos : memref<?xi32>) tokens(%b, %n) capacity(%cap) : memref<?x?x576xbf16>, memref<?x?x656xi8> {
  ^bb0(%x: memref<576xbf16>, %row: memref<656xi8>):
    %v = attnk.load_groups %x lane(%l) lanes = 8 : memref<576xbf16> -> !attnk.groups<128xf32, lanes = 8, vec = 8, contiguous>
    %s = attnk.group_scales %v {quant = #attn.quant<f8E4M3FN, per_block<1x128>>} : !attnk.groups<128xf32, lanes = 8, vec = 8, contiguous> -> f32
    %q = attnk.quantize_tile %v scales(%s : f32) {quant = #attn.quant<f8E4M3FN, per_block<1x128>>} : !attnk.groups<128xf32, lanes = 8, vec = 8, contiguous> -> !attnk.groups<128xf8E4M3FN, lanes = 8, vec = 8, contiguous>
    attnk.store_groups %q, %row lane(%l) scale(%s into %row : memref<656xi8>) scale_offset = 512 : !attnk.groups<128xf8E4M3FN, lanes = 8, vec = 8, contiguous>, memref<656xi8>
    %c8 = arith.constant 8 : i32
    %first = arith.cmpi ult, %l, %c8 : i32
    scf.if %first {
      %r = attnk.load_groups %x lane(%l) lanes = 8 offset = 512 : memref<576xbf16> -> !attnk.groups<64xf32, lanes = 8, vec = 8, contiguous>
      %rb = attnk.convert_tile %r : !attnk.groups<64xf32, lanes = 8, vec = 8, contiguous> -> !attnk.groups<64xbf16, lanes = 8, vec = 8, contiguous>
      attnk.store_groups %rb, %row lane(%l) offset = 528 : !attnk.groups<64xbf16, lanes = 8, vec = 8, contiguous>, memref<656xi8>
    }
  }
}
