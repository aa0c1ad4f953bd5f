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
// CHECK-NEXT: attnk.forward.consumer params(%[[KMAP]], {{.*}}) rings(%[[ST]], %[[CV]] : {{.*}}) work(%[[W]]#0, {{.*}}, %[[T]]#2) {plan = {persistent = false}}
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
        attnk.forward.consumer params(%kmap, %vmap, %q, %n : !attnk.tensor_map<1x128x1x128xi8, none>, !attnk.tensor_map<1x128x1x128xi8, none>, memref<?x1x8x128xbf16>, i32)
            rings(%st, %cv : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>, !attnk.ring<128x128xbf16, stages = 2, swizzle_128b, producers = 128, consumers = 128>)
            work(%w#0, %w#1, %w#2, %w#3, %w#4, %w#5, %w#6, %t#0, %t#1, %t#2) {plan = {persistent = false}}
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
