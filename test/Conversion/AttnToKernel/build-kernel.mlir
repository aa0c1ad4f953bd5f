// attn-build-kernel builds the kernel level of the kernels that go through it: a quantize spec
// (attn.quantize.append / .dynamic / .mla_append) becomes `<f>_quantize` (its host function
// goes), a split-KV decode spec gets its two combine kernels (the attention op stays for
// convert-attn-to-nvvm); prefill is left alone.
// RUN: attn-opt %s -split-input-file --attn-select-schedule --attn-build-kernel | FileCheck %s

// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK-NOT: func.func @kv_append
// CHECK: gpu.module @attn_kernels [#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx86">]
// CHECK-NEXT: attnk.kernel @kv_append_quantize(%[[SRC:.+]]: memref<?x?x8x128xbf16>, %[[POS:.+]]: memref<?xi32>, %[[DST:.+]]: memref<?x?x8x128xi8>, %[[SC:.+]]: memref<?x?x8xf32>, %{{.+}}: memref<?xi8>, %[[B:.+]]: i32, %[[N:.+]]: i32, %[[CAP:.+]]: i32) threads = 128 attributes {launch = #attnk.launch<quantize, grid = ["quantize_ctas", 1, 1], block = [128, 1, 1], cluster = [1, 1, 1], smem = 0, params = ["src", "positions", "dst", "scales", "zeros", "batch", "new_tokens", "capacity"]>, metadata = {problem = {{.*}}kind = "quantize_append"{{.*}}, schedule = {group_elems = 128 : i64, groups_per_cta = 32 : i64, groups_per_token = 8 : i64, lanes_per_group = 16 : i64, vector_elems = 8 : i64}}} {
// The four slots' loads come first.
// CHECK-NEXT: %[[G0:.+]], %[[T0:.+]], %[[I0:.+]], %[[R0:.+]] = attnk.group_index %[[B]], %[[N]] slot 0 of 4 lanes = 16 groups_per_token = 8
// CHECK-NEXT: %[[X0:.+]] = attnk.load_groups %[[SRC]][%[[T0]], %[[I0]]] lane(%[[R0]]) lanes = 16 : memref<?x?x8x128xbf16> -> vector<1x8xbf16>
// CHECK: attnk.group_index %[[B]], %[[N]] slot 3 of 4
// CHECK-NEXT: attnk.load_groups
// Slot 0: widen, scale, codes, store codes and scale.
// CHECK-NEXT: %[[W0:.+]] = attnk.convert_tile %[[X0]] : vector<1x8xbf16> -> !attnk.groups<128xf32, lanes = 16, vec = 8>
// CHECK-NEXT: %[[S0:.+]] = attnk.group_scales %[[W0]] {quant = #attn.quant<i8, per_token_head, symmetric>}
// CHECK-NEXT: %[[Q0:.+]] = attnk.quantize_tile %[[W0]] scales(%[[S0]] : f32)
// CHECK-NEXT: attnk.store_groups %[[Q0]], %[[DST]][%[[G0]], %[[T0]], %[[I0]]] lane(%[[R0]]) tokens(%[[B]], %[[N]]) capacity(%[[CAP]]) positions(%[[POS]] : memref<?xi32>) scale(%[[S0]] into %[[SC]] : memref<?x?x8xf32>)
// CHECK-COUNT-3: attnk.store_groups
// CHECK-NEXT: }
func.func @kv_append(%x: memref<?x?x8x128xbf16>, %p: memref<?xi32>, %c: memref<?x?x8x128xi8>,
                     %s: memref<?x?x8xf32>) {
  attn.quantize.append ins(%x : memref<?x?x8x128xbf16>) positions(%p : memref<?xi32>)
      outs(%c, %s : memref<?x?x8x128xi8>, memref<?x?x8xf32>)
      {quant = #attn.quant<i8, per_token_head>, target = #attn.target<sm_90a>}
  return
}

// -----

// The plan every forward op carries is printed once, as an alias.
// CHECK: #plan = {{{.*}}consumerWGs = 2 : i64{{.*}}persistent = false{{.*}}prefill = false{{.*}}}
// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK: func.func @mqa_i8(
// CHECK: attn.attention decode
// The forward kernel first: tensor-map parameters, the CTA's work, the rings (TMA stages, then the
// converted K and V), the prologue's tile values, and the two roles reading the same rings.
// CHECK: gpu.module @attn_kernels
// CHECK-NEXT: attnk.kernel @mqa_i8_decode(%[[KMAP:[^:]+]]: !attnk.tensor_map<1x128x1x128xi8, none>, %[[VMAP:[^:]+]]: !attnk.tensor_map<1x128x1x128xi8, none>, %[[Q:[^:]+]]: memref<?x3x16x128xbf16>, {{.*}}) threads = 512 {
// CHECK-NEXT: %[[W:[^:]+]]:7 = attnk.forward.work {plan = #plan} : i32, i32, i32, i32, i32, i32, i32
// CHECK-NEXT: %[[ST:.+]] = attnk.ring.alloc at 16384 stride 32768 barriers [[SF:[0-9]+]], [[SE:[0-9]+]] : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 256>
// CHECK-NEXT: %[[CK:.+]] = attnk.ring.alloc at 81920 stride 65536 barriers [[CF:[0-9]+]], [[CE:[0-9]+]] : !attnk.ring<128x128xbf16, stages = 2, swizzle_128b, producers = 256, consumers = 128>
// CHECK-NEXT: %[[CV:.+]] = attnk.ring.alloc at 114688 stride 65536 barriers [[CF]], [[CE]] : !attnk.ring<128x128xbf16, stages = 2, swizzle_128b, producers = 256, consumers = 128>
// CHECK-NEXT: %[[T:[^:]+]]:3 = attnk.forward.prologue params(%[[KMAP]], %[[VMAP]], %[[Q]], {{.*}}) rings(%[[ST]], %[[CK]], %[[CV]] : {{.*}}) work(%[[W]]#0, {{.*}}, %[[W]]#6) {plan = #plan} : i32, i32, i32
// CHECK-NEXT: attnk.warp_specialize attributes {ctas_per_sm = 1 : i64}
// CHECK-NEXT: #attn.role<producer, warpgroups = 2, regs = 56> {
// The producer: thread 0 fills the stages [stages, tiles) the prologue did not; per tile the
// stage it waits for is converted into the buffer pair it acquired (K and V rings, one
// acquire), the pair is committed and the stage released, then refilled by TMA into its halves.
// CHECK: scf.if
// CHECK: scf.for
// CHECK: %[[F:.+]] = attnk.ring.acquire %[[ST]][%{{.+}}] expect_tx 32768
// CHECK: %[[FK:.+]] = attnk.subtile %[[F]][0]
// CHECK-NEXT: attnk.tma_load %[[KMAP]][%[[W]]#4, %[[ROW:.+]], %[[W]]#5, %{{.+}}] #attnk.addressing<contiguous> into %[[FK]]
// CHECK-NEXT: %[[FV:.+]] = attnk.subtile %[[F]][1]
// CHECK-NEXT: attnk.tma_load %[[VMAP]][%[[W]]#4, %[[ROW]], %[[W]]#5, %{{.+}}] #attnk.addressing<contiguous> into %[[FV]]
// CHECK-NEXT: attnk.ring.commit %[[ST]][%[[F]]]
// CHECK: scf.for %[[J:.+]] = %{{.+}} to %[[T]]#2 step
// CHECK: %[[FULL:.+]] = attnk.ring.wait %[[ST]][%[[S:.+]]] phase
// CHECK-NEXT: %[[BUF:[^:]+]]:2 = attnk.ring.acquire %[[CK]], %[[CV]][%{{.+}}] phase
// CHECK: scf.if
// CHECK-NEXT: %[[K:.+]] = attnk.subtile %[[FULL]][0]
// CHECK-NEXT: attnk.convert_tile %[[K]] into %[[BUF]]#0 rows(%{{.+}}) {part = #attnk.part<codes>, quant = [#attn.quant<i8, per_token_head, symmetric>], role = #attn.role<producer, warpgroups = 2, regs = 56>}
// CHECK-NEXT: %[[V:.+]] = attnk.subtile %[[FULL]][1]
// CHECK-NEXT: attnk.convert_tile %[[V]] into %[[BUF]]#1 rows(
// CHECK: } else {
// CHECK: attnk.forward.stage_scales
// CHECK-NEXT: attnk.ring.commit %[[CK]], %[[CV]][%[[BUF]]#0, %[[BUF]]#1]
// CHECK-NEXT: attnk.ring.release %[[ST]][%[[FULL]]] {named_barrier = 1 : i64}
// CHECK: attnk.ring.acquire %[[ST]][%[[S]]] expect_tx 32768
// The consumer: the tile loop's state (O, row maxima, row sums, O's unit, the thread's rows),
// the softmax's finish (the quad's row sums), the two warpgroups' states merged in the idle
// stage ring, the merged state stored.
// CHECK: #attn.role<consumer, warpgroups = 2, regs = 200> {
// CHECK-NEXT: %[[S:[^:]+]]:5 = attnk.forward.consumer params(%[[KMAP]], %[[VMAP]], %[[Q]], {{.*}}) rings(%[[ST]], %[[CK]], %[[CV]] : {{.*}}) work(%[[W]]#0, {{.*}}, %[[T]]#2) {plan = #plan} : !attnk.acc<64x128xf32>, vector<64xf32>, vector<64xf32>, f32, !attnk.rows
// CHECK-NEXT: %[[FO:[^,]+]], %[[FL:[^ ]+]] = attnk.softmax_finish %[[S]]#0, %[[S]]#2 rows(%[[S]]#4 : !attnk.rows) : !attnk.acc<64x128xf32>, vector<64xf32>
// CHECK-NEXT: %[[MO:[^,]+]], %[[MM:[^,]+]], %[[ML:[^ ]+]] = attnk.forward.merge_warpgroups %[[FO]], %[[S]]#1, %[[FL]] rows(%[[S]]#4 : !attnk.rows) in %[[ST]] {plan = #plan} : !attnk.acc<64x128xf32>, vector<64xf32>, !attnk.ring<256x128xi8
// CHECK-NEXT: attnk.forward.epilogue %[[MO]], %[[MM]], %[[ML]], %[[S]]#3 rows(%[[S]]#4 : !attnk.rows) in %[[ST]] work(%[[W]]#0, {{.*}}, %[[T]]#2) {plan = #plan} : !attnk.acc<64x128xf32>, vector<64xf32>, !attnk.ring<256x128xi8
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: attnk.kernel @mqa_i8_combine(%[[WS:.+]]: memref<?xf32>, %[[OUT:.+]]: memref<?x3x16x128xbf16>, %{{.+}}: i32, %[[N:.+]]: i32) threads = 128 programmatic attributes {launch = #attnk.launch<combine, grid = ["row_blocks", "groups", "batch"], block = [128, 1, 1], cluster = [1, 1, 1], smem = {{[0-9]+}}, params = ["workspace", "out", "batch", "num_splits"], programmatic, extra = {min_splits = 2 : i64}>} {
// CHECK-NEXT: attnk.merge.combine %[[WS]] into %[[OUT]] splits(%[[N]]) narrow kv_heads = 1 pack = 16 : memref<?xf32>, memref<?x3x16x128xbf16>
// CHECK-NEXT: }
// CHECK-NEXT: attnk.kernel @mqa_i8_combine_wide(%[[WS2:.+]]: memref<?xf32>, %[[OUT2:.+]]: memref<?x3x16x128xbf16>, %{{.+}}: i32, %[[N2:.+]]: i32) threads = 512 programmatic attributes {launch = #attnk.launch<combine, grid = ["rows", "groups", "batch"], block = [512, 1, 1], cluster = [1, 1, 1], smem = {{[0-9]+}}, params = ["workspace", "out", "batch", "num_splits"], programmatic, extra = {min_splits = 17 : i64}>} {
// CHECK-NEXT: attnk.merge.combine %[[WS2]] into %[[OUT2]] splits(%[[N2]]) wide kv_heads = 1 pack = 16
func.func @mqa_i8(%q: memref<?x3x16x128xbf16>, %k: memref<?x?x1x128xi8>, %v: memref<?x?x1x128xi8>,
                  %ks: memref<?x?x1xf32>, %vs: memref<?x?x1xf32>, %o: memref<?x3x16x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<?x3x16x128xbf16>, memref<?x?x1x128xi8>, memref<?x?x1x128xi8>)
      k_scale(%ks : memref<?x?x1xf32>) v_scale(%vs : memref<?x?x1xf32>)
      outs(%o : memref<?x3x16x128xbf16>)
      {k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>,
       target = #attn.target<sm_90a>}
  return
}

// -----

// Prefill has no combine kernel. Its persistent grid: the work is the thread id alone, the
// prologue yields no tile values and the roles take the thread id (each work item sets up its
// own ids); bf16 K/V: the WGMMAs read the stages, no conversion ring.
// CHECK: #plan = {{{.*}}persistent = true{{.*}}prefill = true{{.*}}}
// CHECK-LABEL: func.func @pf
// CHECK: attn.attention prefill
// CHECK: gpu.module @attn_kernels
// CHECK-NEXT: attnk.kernel @pf_prefill(%[[KMAP:[^:]+]]: !attnk.tensor_map<1x128x1x64xbf16, swizzle_128b>, {{.*}}) threads = 512 {
// CHECK-NEXT: %[[TID:.+]] = attnk.forward.work {plan = #plan} : i32
// CHECK-NEXT: %[[ST:.+]] = attnk.ring.alloc at 98304 stride {{[0-9]+}} barriers {{[0-9]+}}, {{[0-9]+}} : !attnk.ring<256x128xbf16, stages = 2, swizzle_128b, producers = 1, consumers = 384>
// CHECK-NEXT: attnk.forward.prologue params(%[[KMAP]], {{.*}}) rings(%[[ST]] : {{.*}}) work(%[[TID]]) {plan = #plan}{{$}}
// CHECK-NEXT: attnk.warp_specialize
// CHECK-NEXT: #attn.role<producer, warpgroups = 1, regs = 32> {
// CHECK-NEXT: attnk.forward.producer params(%[[KMAP]], {{.*}}) rings(%[[ST]] : {{.*}}) work(%[[TID]])
// CHECK: #attn.role<consumer, warpgroups = 3, regs = 160> {
// CHECK-NEXT: attnk.forward.consumer params(%[[KMAP]], {{.*}}) rings(%[[ST]] : {{.*}}) work(%[[TID]]) {plan = #plan}{{$}}
// CHECK-NEXT: }
// CHECK-NOT: attnk.kernel
func.func @pf(%q: memref<1x128x8x128xbf16>, %k: memref<1x128x8x128xbf16>, %v: memref<1x128x8x128xbf16>,
              %o: memref<1x128x8x128xbf16>) {
  attn.attention prefill ins(%q, %k, %v : memref<1x128x8x128xbf16>, memref<1x128x8x128xbf16>, memref<1x128x8x128xbf16>)
      outs(%o : memref<1x128x8x128xbf16>) {target = #attn.target<sm_90a>}
  return
}

// -----

// MLA's cache quantization: a warp per token; in the token's rows, the latent tile's values feed
// the scale and the codes, the scale is stored into the row after the codes (at 512), and the
// first 8 lanes round the RoPE part (from element 512) into the row after the scales (at 528).
// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK-NOT: func.func @mla_q
// CHECK: attnk.kernel @mla_q_quantize(%[[SRC:.+]]: memref<?x?x576xf16>, %[[POS:.+]]: memref<?xi32>, %[[CACHE:.+]]: memref<?x?x656xi8>, %[[B:.+]]: i32, %[[N:.+]]: i32, %[[CAP:.+]]: i32) threads = 128 attributes {launch = #attnk.launch<quantize, grid = ["token_ctas", 1, 1], block = [128, 1, 1], cluster = [1, 1, 1], smem = 0, params = ["src", "positions", "cache", "batch", "new_tokens", "capacity"]>, metadata = {problem = {{.*}}kind = "quantize_mla"{{.*}}src_dtype = "f16"{{.*}}, schedule = {tokens_per_cta = 4 : i64}}} {
// CHECK-NEXT: %{{.+}}, %[[TOK:.+]], %{{.+}}, %[[L:.+]] = attnk.group_index %[[B]], %[[N]] slot 0 of 1 lanes = 8 groups_per_token = 4 whole_tokens
// CHECK-NEXT: attnk.token_rows %[[SRC]][%[[TOK]]], %[[CACHE]] positions(%[[POS]] : memref<?xi32>) tokens(%[[B]], %[[N]]) capacity(%[[CAP]]) : memref<?x?x576xf16>, memref<?x?x656xi8> {
// CHECK-NEXT: ^bb0(%[[X:.+]]: memref<576xf16>, %[[ROW:.+]]: memref<656xi8>):
// CHECK-NEXT: %[[V:.+]] = attnk.load_groups %[[X]] lane(%[[L]]) lanes = 8 : memref<576xf16> -> !attnk.groups<128xf32, lanes = 8, vec = 8, contiguous>
// CHECK-NEXT: %[[S:.+]] = attnk.group_scales %[[V]] {quant = #attn.quant<f8E4M3FN, per_block<1x128>, symmetric>}
// CHECK-NEXT: %[[Q:.+]] = attnk.quantize_tile %[[V]] scales(%[[S]] : f32)
// CHECK-NEXT: attnk.store_groups %[[Q]], %[[ROW]] lane(%[[L]]) scale(%[[S]] into %[[ROW]] : memref<656xi8>) scale_offset = 512
// CHECK: %[[FIRST:.+]] = arith.cmpi ult, %[[L]], %{{.+}} : i32
// CHECK-NEXT: scf.if %[[FIRST]] {
// CHECK-NEXT: %[[R:.+]] = attnk.load_groups %[[X]] lane(%[[L]]) lanes = 8 offset = 512 : memref<576xf16> -> !attnk.groups<64xf32, lanes = 8, vec = 8, contiguous>
// CHECK-NEXT: %[[RB:.+]] = attnk.convert_tile %[[R]] : !attnk.groups<64xf32, lanes = 8, vec = 8, contiguous> -> !attnk.groups<64xbf16, lanes = 8, vec = 8, contiguous>
// CHECK-NEXT: attnk.store_groups %[[RB]], %[[ROW]] lane(%[[L]]) offset = 528 : !attnk.groups<64xbf16, lanes = 8, vec = 8, contiguous>, memref<656xi8>
func.func @mla_q(%x: memref<?x?x576xf16>, %p: memref<?xi32>, %c: memref<?x?x656xi8>) {
  attn.quantize.mla_append ins(%x : memref<?x?x576xf16>) positions(%p : memref<?xi32>)
      outs(%c : memref<?x?x656xi8>)
      {head_dim_v = 512 : i64, rope_dim = 64 : i64,
       kv_quant = #attn.quant<f8E4M3FN, per_block<1x128>>, target = #attn.target<sm_90a>}
  return
}
