// The forward kernel's ops parse, verify and print back: a kernel with tensor-map parameters,
// rings placed in shared memory (`at`), the CTA's work, the prologue's tile values reaching both
// roles, and a persistent-grid kernel whose roles take the thread id only.
// RUN: attn-opt %s -split-input-file | FileCheck %s
// RUN: attn-opt %s -split-input-file | attn-opt -split-input-file | FileCheck %s
// RUN: attn-opt %s -split-input-file --mlir-print-op-generic | attn-opt -split-input-file | FileCheck %s

// CHECK-LABEL: gpu.module @decode
// CHECK: attnk.kernel @f_decode(%[[KMAP:[^:]+]]: !attnk.tensor_map<1x128x1x128xi8, none>, %[[VMAP:[^:]+]]: !attnk.tensor_map<1x128x1x128xi8, none>, %[[Q:[^:]+]]: memref<?x1x8x128xbf16>, %[[N:[^:]+]]: i32) threads = 384 {
// CHECK-NEXT: %[[W:[^:]+]]:7 = attnk.forward.work {plan = {persistent = false}} : i32, i32, i32, i32, i32, i32, i32
// CHECK-NEXT: %[[ST:.+]] = attnk.ring.alloc at 16384 : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>
// CHECK-NEXT: %[[CV:.+]] = attnk.ring.alloc at 81920 : !attnk.ring<128x128xbf16, stages = 2, swizzle_128b, producers = 128, consumers = 128>
// CHECK-NEXT: %[[T:[^:]+]]:3 = attnk.forward.prologue params(%[[KMAP]], %[[VMAP]], %[[Q]], %[[N]] : {{.*}}) rings(%[[ST]], %[[CV]] : {{.*}}) work(%[[W]]#0, %[[W]]#1, {{.*}}, %[[W]]#6) {plan = {persistent = false}} : i32, i32, i32
// CHECK-NEXT: attnk.warp_specialize attributes {ctas_per_sm = 1 : i64}
// CHECK-NEXT: #attn.role<producer, warpgroups = 1, regs = 40> {
// CHECK-NEXT: attnk.forward.producer params(%[[KMAP]], %[[VMAP]], %[[Q]], %[[N]] : {{.*}}) rings(%[[ST]], %[[CV]] : {{.*}}) work(%[[W]]#0, %[[W]]#1, {{.*}}, %[[W]]#6, %[[T]]#0, %[[T]]#1, %[[T]]#2) {plan = {persistent = false}}
// CHECK: #attn.role<consumer, warpgroups = 2, regs = 232> {
// CHECK-NEXT: %{{.+}}:5 = attnk.forward.consumer params(%[[KMAP]], {{.*}}) rings(%[[ST]], %[[CV]] : {{.*}}) work(%[[W]]#0, {{.*}}, %[[T]]#2) {plan = {persistent = false}} : !attnk.acc<64x128xf32>, vector<64xf32>, vector<64xf32>, f32, !attnk.rows
gpu.module @decode {
  attnk.kernel @f_decode(%kmap: !attnk.tensor_map<1x128x1x128xi8, none>, %vmap: !attnk.tensor_map<1x128x1x128xi8, none>,
                         %q: memref<?x1x8x128xbf16>, %n: i32) threads = 384 {
    %w:7 = attnk.forward.work {plan = {persistent = false}} : i32, i32, i32, i32, i32, i32, i32
    %st = attnk.ring.alloc at 16384 : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>
    %cv = attnk.ring.alloc at 81920 : !attnk.ring<128x128xbf16, stages = 2, swizzle_128b, producers = 128, consumers = 128>
    %t:3 = attnk.forward.prologue params(%kmap, %vmap, %q, %n : !attnk.tensor_map<1x128x1x128xi8, none>, !attnk.tensor_map<1x128x1x128xi8, none>, memref<?x1x8x128xbf16>, i32)
        rings(%st, %cv : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>, !attnk.ring<128x128xbf16, stages = 2, swizzle_128b, producers = 128, consumers = 128>)
        work(%w#0, %w#1, %w#2, %w#3, %w#4, %w#5, %w#6) {plan = {persistent = false}} : i32, i32, i32
    attnk.warp_specialize
      #attn.role<producer, warpgroups = 1, regs = 40> {
        attnk.forward.producer params(%kmap, %vmap, %q, %n : !attnk.tensor_map<1x128x1x128xi8, none>, !attnk.tensor_map<1x128x1x128xi8, none>, memref<?x1x8x128xbf16>, i32)
            rings(%st, %cv : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>, !attnk.ring<128x128xbf16, stages = 2, swizzle_128b, producers = 128, consumers = 128>)
            work(%w#0, %w#1, %w#2, %w#3, %w#4, %w#5, %w#6, %t#0, %t#1, %t#2) {plan = {persistent = false}}
      }
      #attn.role<consumer, warpgroups = 2, regs = 232> {
        %s:5 = attnk.forward.consumer params(%kmap, %vmap, %q, %n : !attnk.tensor_map<1x128x1x128xi8, none>, !attnk.tensor_map<1x128x1x128xi8, none>, memref<?x1x8x128xbf16>, i32)
            rings(%st, %cv : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>, !attnk.ring<128x128xbf16, stages = 2, swizzle_128b, producers = 128, consumers = 128>)
            work(%w#0, %w#1, %w#2, %w#3, %w#4, %w#5, %w#6, %t#0, %t#1, %t#2) {plan = {persistent = false}}
            : !attnk.acc<64x128xf32>, vector<64xf32>, vector<64xf32>, f32, !attnk.rows
      }
  }
}

// -----

// CHECK-LABEL: gpu.module @persistent
// CHECK: %[[TID:.+]] = attnk.forward.work {plan = {persistent = true}} : i32
// CHECK: attnk.forward.prologue params({{.*}}) rings({{.*}}) work(%[[TID]]) {plan = {persistent = true}}
// CHECK-NOT: : i32
// CHECK: attnk.forward.producer params({{.*}}) rings({{.*}}) work(%[[TID]]) {plan = {persistent = true}}
gpu.module @persistent {
  attnk.kernel @f_prefill(%kmap: !attnk.tensor_map<1x128x1x64xbf16, swizzle_128b>, %vmap: !attnk.tensor_map<1x128x1x64xbf16, swizzle_128b>) threads = 384 {
    %tid = attnk.forward.work {plan = {persistent = true}} : i32
    %st = attnk.ring.alloc at 32768 : !attnk.ring<256x128xbf16, stages = 2, swizzle_128b, producers = 1, consumers = 256>
    attnk.forward.prologue params(%kmap, %vmap : !attnk.tensor_map<1x128x1x64xbf16, swizzle_128b>, !attnk.tensor_map<1x128x1x64xbf16, swizzle_128b>)
        rings(%st : !attnk.ring<256x128xbf16, stages = 2, swizzle_128b, producers = 1, consumers = 256>) work(%tid) {plan = {persistent = true}}
    attnk.warp_specialize
      #attn.role<producer, warpgroups = 1, regs = 24> {
        attnk.forward.producer params(%kmap, %vmap : !attnk.tensor_map<1x128x1x64xbf16, swizzle_128b>, !attnk.tensor_map<1x128x1x64xbf16, swizzle_128b>)
            rings(%st : !attnk.ring<256x128xbf16, stages = 2, swizzle_128b, producers = 1, consumers = 256>) work(%tid) {plan = {persistent = true}}
      }
      #attn.role<consumer, warpgroups = 2, regs = 240> {
        attnk.forward.consumer params(%kmap, %vmap : !attnk.tensor_map<1x128x1x64xbf16, swizzle_128b>, !attnk.tensor_map<1x128x1x64xbf16, swizzle_128b>)
            rings(%st : !attnk.ring<256x128xbf16, stages = 2, swizzle_128b, producers = 1, consumers = 256>) work(%tid) {plan = {persistent = true}}
      }
  }
}

// -----

// The producer's transitional scale steps.
// CHECK-LABEL: func.func @producer_scales
// CHECK: %[[S:.+]]:2 = attnk.forward.key_scales args(%{{.+}} : i32) params(%{{.+}}, %{{.+}} : {{.*}}) rings(%{{.+}} : {{.*}}) work(%{{.+}}) {plan = {persistent = true}} : f32, f32
// CHECK: attnk.forward.stage_scales args(%[[S]]#0, %[[S]]#1, %{{.+}} : f32, f32, i32) params({{.*}}) rings({{.*}}) work(%{{.+}}) {plan = {persistent = true}}
func.func @producer_scales(%kmap: !attnk.tensor_map<1x128x1x128xi8, none>, %vmap: !attnk.tensor_map<1x128x1x128xi8, none>,
                           %r: !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>, %tid: i32, %tok: i32) {
  %s:2 = attnk.forward.key_scales args(%tok : i32) params(%kmap, %vmap : !attnk.tensor_map<1x128x1x128xi8, none>, !attnk.tensor_map<1x128x1x128xi8, none>)
      rings(%r : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>) work(%tid) {plan = {persistent = true}} : f32, f32
  attnk.forward.stage_scales args(%s#0, %s#1, %tok : f32, f32, i32) params(%kmap, %vmap : !attnk.tensor_map<1x128x1x128xi8, none>, !attnk.tensor_map<1x128x1x128xi8, none>)
      rings(%r : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>) work(%tid) {plan = {persistent = true}}
  return
}

// -----

// A K/V stage and a converted K and V buffer pair (rings sharing their barriers), the
// acquire's expect_tx covering the TMA loads into the stage's halves.
// CHECK-LABEL: func.func @kv_rings
// CHECK: %[[ST:.+]] = attnk.ring.alloc at 0 stride 65536 barriers 196608, 196656 : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 256>
// CHECK: %[[CK:.+]] = attnk.ring.alloc at 131072 stride 65536 barriers 196624, 196640
// CHECK: %[[CV:.+]] = attnk.ring.alloc at 163840 stride 65536 barriers 196624, 196640
// CHECK: %[[F:.+]] = attnk.ring.acquire %[[ST]][%{{.+}}] expect_tx 32768 : !attnk.ring<256x128xi8
// CHECK: %[[K:.+]] = attnk.subtile %[[F]][0] : !attnk.stage<256x128xi8, none> -> !attnk.stage<128x128xi8, none>
// CHECK: %[[V:.+]] = attnk.subtile %[[F]][1]
// CHECK: attnk.tma_load %{{.+}}[%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}] #attnk.addressing<contiguous> into %[[K]]
// CHECK: attnk.tma_load %{{.+}}[%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}] #attnk.addressing<contiguous> into %[[V]]
// CHECK: attnk.ring.commit %[[ST]][%[[F]]]
// CHECK: %[[FULL:.+]] = attnk.ring.wait %[[ST]][%{{.+}}] phase %{{.+}}
// CHECK: %[[BUF:[^:]+]]:2 = attnk.ring.acquire %[[CK]], %[[CV]][%{{.+}}] phase %{{.+}} : !attnk.ring<128x128xbf16, {{.*}}>, !attnk.ring<128x128xbf16
// CHECK: attnk.convert_tile %{{.+}} into %[[BUF]]#0 rows(%{{.+}}) {part = #attnk.part<codes>, quant = [#attn.quant<i8, per_token_head, symmetric>], role = #attn.role<producer, warpgroups = 2, regs = 56>}
// CHECK: attnk.ring.commit %[[CK]], %[[CV]][%[[BUF]]#0, %[[BUF]]#1]
// CHECK: attnk.ring.release %[[ST]][%[[FULL]]] {named_barrier = 1 : i64}
func.func @kv_rings(%kmap: !attnk.tensor_map<1x128x1x128xi8, none>, %vmap: !attnk.tensor_map<1x128x1x128xi8, none>,
                    %i: i32, %ph: i1, %n: i32) {
  %st = attnk.ring.alloc at 0 stride 65536 barriers 196608, 196656 : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 256>
  %ck = attnk.ring.alloc at 131072 stride 65536 barriers 196624, 196640 : !attnk.ring<128x128xbf16, stages = 2, swizzle_128b, producers = 256, consumers = 128>
  %cv = attnk.ring.alloc at 163840 stride 65536 barriers 196624, 196640 : !attnk.ring<128x128xbf16, stages = 2, swizzle_128b, producers = 256, consumers = 128>
  %f = attnk.ring.acquire %st[%i] expect_tx 32768 : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 256>
  %k = attnk.subtile %f[0] : !attnk.stage<256x128xi8, none> -> !attnk.stage<128x128xi8, none>
  %v = attnk.subtile %f[1] : !attnk.stage<256x128xi8, none> -> !attnk.stage<128x128xi8, none>
  attnk.tma_load %kmap[%i, %i, %i, %i] #attnk.addressing<contiguous> into %k : !attnk.tensor_map<1x128x1x128xi8, none>, !attnk.stage<128x128xi8, none>
  attnk.tma_load %vmap[%i, %i, %i, %i] #attnk.addressing<contiguous> into %v : !attnk.tensor_map<1x128x1x128xi8, none>, !attnk.stage<128x128xi8, none>
  attnk.ring.commit %st[%f] : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 256>
  %full = attnk.ring.wait %st[%i] phase %ph : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 256>
  %bk, %bv = attnk.ring.acquire %ck, %cv[%i] phase %ph : !attnk.ring<128x128xbf16, stages = 2, swizzle_128b, producers = 256, consumers = 128>, !attnk.ring<128x128xbf16, stages = 2, swizzle_128b, producers = 256, consumers = 128>
  %kk = attnk.subtile %full[0] : !attnk.stage<256x128xi8, none> -> !attnk.stage<128x128xi8, none>
  %vv = attnk.subtile %full[1] : !attnk.stage<256x128xi8, none> -> !attnk.stage<128x128xi8, none>
  attnk.convert_tile %kk into %bk rows(%n) {part = #attnk.part<codes>, quant = [#attn.quant<i8, per_token_head>], role = #attn.role<producer, warpgroups = 2, regs = 56>}
      : !attnk.stage<128x128xi8, none> into !attnk.stage<128x128xbf16, swizzle_128b>
  attnk.convert_tile %vv into %bv {part = #attnk.part<codes>, quant = [#attn.quant<i8, per_token_head>], role = #attn.role<producer, warpgroups = 2, regs = 56>}
      : !attnk.stage<128x128xi8, none> into !attnk.stage<128x128xbf16, swizzle_128b>
  attnk.ring.commit %ck, %cv[%bk, %bv] : !attnk.ring<128x128xbf16, stages = 2, swizzle_128b, producers = 256, consumers = 128>, !attnk.ring<128x128xbf16, stages = 2, swizzle_128b, producers = 256, consumers = 128>
  attnk.ring.release %st[%full] {named_barrier = 1 : i64} : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 256>
  return
}

// -----

// The consumer role without a persistent grid: the tile loop's final state (O, row maxima, row
// sums, O's unit, the thread's warpgroup) flows through the merge of two decode warpgroups
// into the epilogue, which reads the kernel's launch parameters. A plan (a dictionary with the
// entries attn-build-kernel writes) prints once, as the alias `#plan`.
// CHECK: #plan = {consumerRegs = 200 : i64, consumerWGs = 2 : i64, headDim = 128 : i64, name = "d", persistent = false, prefill = false, producerRegs = 56 : i64}
// CHECK-LABEL: gpu.module @epilogue
// CHECK: %[[ST:.+]] = attnk.ring.alloc at 16384
// CHECK: %[[S:[^:]+]]:5 = attnk.forward.consumer params(%{{.+}}, %{{.+}} : {{.*}}) rings(%[[ST]] : {{.*}}) work(%[[W0:[^,]+]], {{.*}}) {plan = #plan} : !attnk.acc<64x128xf32>, vector<64xf32>, vector<64xf32>, f32, !attnk.rows
// CHECK-NEXT: %[[MO:[^,]+]], %[[MM:[^,]+]], %[[ML:[^ ]+]] = attnk.forward.merge_warpgroups %[[S]]#0, %[[S]]#1, %[[S]]#2 rows(%[[S]]#4 : !attnk.rows) in %[[ST]] {plan = #plan} : !attnk.acc<64x128xf32>, vector<64xf32>, !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>
// CHECK-NEXT: attnk.forward.epilogue %[[MO]], %[[MM]], %[[ML]], %[[S]]#3 rows(%[[S]]#4 : !attnk.rows) in %[[ST]] work(%[[W0]], {{.*}}) {plan = #plan} : !attnk.acc<64x128xf32>, vector<64xf32>, !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>
#plan = {consumerRegs = 200 : i64, consumerWGs = 2 : i64, headDim = 128 : i64, name = "d", persistent = false, prefill = false, producerRegs = 56 : i64}
gpu.module @epilogue {
  attnk.kernel @d_decode(%kmap: !attnk.tensor_map<1x128x1x128xi8, none>, %vmap: !attnk.tensor_map<1x128x1x128xi8, none>,
                         %q: memref<?x1x8x128xbf16>, %ks: memref<?xf32>, %vs: memref<?xf32>, %lens: memref<?xi32>,
                         %alibi: memref<?xf32>, %out: memref<?x1x8x128xbf16>, %ws: memref<?xf32>, %b: i32, %n: i32,
                         %splits: i32, %qs: memref<?xf32>, %kz: memref<?xi8>, %vz: memref<?xi8>) threads = 384 {
    %w:7 = attnk.forward.work {plan = #plan} : i32, i32, i32, i32, i32, i32, i32
    %st = attnk.ring.alloc at 16384 : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>
    %s:5 = attnk.forward.consumer params(%kmap, %vmap : !attnk.tensor_map<1x128x1x128xi8, none>, !attnk.tensor_map<1x128x1x128xi8, none>)
        rings(%st : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>)
        work(%w#0, %w#1, %w#2, %w#3, %w#4, %w#5, %w#6, %n, %n, %n) {plan = #plan}
        : !attnk.acc<64x128xf32>, vector<64xf32>, vector<64xf32>, f32, !attnk.rows
    %o, %m, %l = attnk.forward.merge_warpgroups %s#0, %s#1, %s#2 rows(%s#4 : !attnk.rows) in %st {plan = #plan}
        : !attnk.acc<64x128xf32>, vector<64xf32>, !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>
    attnk.forward.epilogue %o, %m, %l, %s#3 rows(%s#4 : !attnk.rows) in %st work(%w#0, %w#1, %w#2, %w#3, %w#4, %w#5, %w#6, %n, %n, %n)
        {plan = #plan} : !attnk.acc<64x128xf32>, vector<64xf32>, !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>
  }
}

// -----

// Prefill's rows are `partial` (a row of the last query chunk may not exist): the loop's rows
// reach the epilogue without a merge.
// CHECK-LABEL: gpu.module @prefill_rows
// CHECK: %[[S:[^:]+]]:5 = attnk.forward.consumer {{.*}} : !attnk.acc<64x64xf32>, vector<64xf32>, vector<64xf32>, f32, !attnk.rows<partial>
// CHECK-NEXT: attnk.forward.epilogue %[[S]]#0, %[[S]]#1, %[[S]]#2, %[[S]]#3 rows(%[[S]]#4 : !attnk.rows<partial>) in
gpu.module @prefill_rows {
  attnk.kernel @p_prefill(%kmap: !attnk.tensor_map<1x128x1x64xbf16, swizzle_128b>, %vmap: !attnk.tensor_map<1x128x1x64xbf16, swizzle_128b>,
                          %q: memref<?x1x8x64xbf16>, %ks: memref<?xf32>, %vs: memref<?xf32>, %lens: memref<?xi32>,
                          %alibi: memref<?xf32>, %out: memref<?x1x8x64xbf16>, %ws: memref<?xf32>, %b: i32, %n: i32,
                          %splits: i32, %qs: memref<?xf32>, %kz: memref<?xi8>, %vz: memref<?xi8>) threads = 384 {
    %w:7 = attnk.forward.work {plan = {headDim = 64 : i64, persistent = false, prefill = true}} : i32, i32, i32, i32, i32, i32, i32
    %st = attnk.ring.alloc at 16384 : !attnk.ring<256x64xbf16, stages = 2, swizzle_128b, producers = 1, consumers = 256>
    %s:5 = attnk.forward.consumer params(%kmap, %vmap : !attnk.tensor_map<1x128x1x64xbf16, swizzle_128b>, !attnk.tensor_map<1x128x1x64xbf16, swizzle_128b>)
        rings(%st : !attnk.ring<256x64xbf16, stages = 2, swizzle_128b, producers = 1, consumers = 256>)
        work(%w#0, %w#1, %w#2, %w#3, %w#4, %w#5, %w#6, %n, %n, %n) {plan = {headDim = 64 : i64, persistent = false, prefill = true}}
        : !attnk.acc<64x64xf32>, vector<64xf32>, vector<64xf32>, f32, !attnk.rows<partial>
    attnk.forward.epilogue %s#0, %s#1, %s#2, %s#3 rows(%s#4 : !attnk.rows<partial>) in %st work(%w#0, %w#1, %w#2, %w#3, %w#4, %w#5, %w#6, %n, %n, %n)
        {plan = {headDim = 64 : i64, persistent = false, prefill = true}} : !attnk.acc<64x64xf32>, vector<64xf32>, !attnk.ring<256x64xbf16, stages = 2, swizzle_128b, producers = 1, consumers = 256>
  }
}
