// The MLA decode kernel's ops parse, verify and print back: a kernel with the launch ABI's
// buffers and extents, its two rings placed in shared memory, the CTA's work, the prologue's
// key values (with crossover: also the cluster rank and the peer's base) reaching both roles,
// and the cluster's closing barrier; without crossover the prologue yields the keys only.
// RUN: attn-opt %s -split-input-file | FileCheck %s
// RUN: attn-opt %s -split-input-file | attn-opt -split-input-file | FileCheck %s
// RUN: attn-opt %s -split-input-file --mlir-print-op-generic | attn-opt -split-input-file | FileCheck %s

// CHECK-LABEL: gpu.module @crossover
// CHECK: attnk.kernel @f_mla(%[[Q:[^:]+]]: memref<?x1x128x576xbf16>, {{.*}}, %[[TOPK:[^:]+]]: i32) threads = 384 {
// CHECK-NEXT: %[[TID:[^,]+]], %[[GRP:[^,]+]], %[[QI:[^,]+]], %[[B:[^ ]+]] = attnk.mla.work {plan = {crossover = true}}
// CHECK-NEXT: %[[KV:.+]] = attnk.ring.alloc at 73728 : !attnk.ring<64x576xbf16, stages = 2, none, producers = 128, consumers = 4>
// CHECK-NEXT: %[[P:.+]] = attnk.ring.alloc at 221184 : !attnk.ring<64x64xbf16, stages = 1, swizzle_128b, producers = 128, consumers = 128>
// CHECK-NEXT: %[[K:.+]]:6 = attnk.mla.prologue params(%[[Q]], {{.*}}, %[[TOPK]] : {{.*}}) rings(%[[KV]], %[[P]] : {{.*}}) work(%[[TID]], %[[GRP]], %[[QI]], %[[B]]) {plan = {crossover = true}} : i32, i32, i32, i32, i32, i32
// CHECK-NEXT: attnk.warp_specialize attributes {ctas_per_sm = 1 : i64}
// CHECK-NEXT: #attn.role<producer, warpgroups = 1, regs = 120> {
// CHECK-NEXT: attnk.mla.producer params(%[[Q]], {{.*}}) rings(%[[KV]], %[[P]] : {{.*}}) work(%[[TID]], %[[GRP]], %[[QI]], %[[B]], %[[K]]#0, %[[K]]#1, %[[K]]#2, %[[K]]#3, %[[K]]#4, %[[K]]#5) {plan = {crossover = true}}
// CHECK: #attn.role<consumer, warpgroups = 2, regs = 168> {
// CHECK-NEXT: attnk.mla.consumers params(%[[Q]], {{.*}}) rings(%[[KV]], %[[P]] : {{.*}}) work(%[[TID]], {{.*}}, %[[K]]#5) {plan = {crossover = true}}
// CHECK: attnk.mla.cluster_sync
gpu.module @crossover {
  attnk.kernel @f_mla(%q: memref<?x1x128x576xbf16>, %kv: memref<?x?x656xi8>, %idx: memref<?x1x?xi32>,
                      %lens: memref<?xi32>, %out: memref<?x1x128x512xbf16>, %b: i32, %sq: i32,
                      %n: i32, %topk: i32) threads = 384 {
    %w:4 = attnk.mla.work {plan = {crossover = true}}
    %kvr = attnk.ring.alloc at 73728 : !attnk.ring<64x576xbf16, stages = 2, none, producers = 128, consumers = 4>
    %pr = attnk.ring.alloc at 221184 : !attnk.ring<64x64xbf16, stages = 1, swizzle_128b, producers = 128, consumers = 128>
    %k:6 = attnk.mla.prologue params(%q, %kv, %idx, %lens, %out, %b, %sq, %n, %topk : memref<?x1x128x576xbf16>, memref<?x?x656xi8>, memref<?x1x?xi32>, memref<?xi32>, memref<?x1x128x512xbf16>, i32, i32, i32, i32)
        rings(%kvr, %pr : !attnk.ring<64x576xbf16, stages = 2, none, producers = 128, consumers = 4>, !attnk.ring<64x64xbf16, stages = 1, swizzle_128b, producers = 128, consumers = 128>)
        work(%w#0, %w#1, %w#2, %w#3) {plan = {crossover = true}} : i32, i32, i32, i32, i32, i32
    attnk.warp_specialize
      #attn.role<producer, warpgroups = 1, regs = 120> {
        attnk.mla.producer params(%q, %kv, %idx, %lens, %out, %b, %sq, %n, %topk : memref<?x1x128x576xbf16>, memref<?x?x656xi8>, memref<?x1x?xi32>, memref<?xi32>, memref<?x1x128x512xbf16>, i32, i32, i32, i32)
            rings(%kvr, %pr : !attnk.ring<64x576xbf16, stages = 2, none, producers = 128, consumers = 4>, !attnk.ring<64x64xbf16, stages = 1, swizzle_128b, producers = 128, consumers = 128>)
            work(%w#0, %w#1, %w#2, %w#3, %k#0, %k#1, %k#2, %k#3, %k#4, %k#5) {plan = {crossover = true}}
      }
      #attn.role<consumer, warpgroups = 2, regs = 168> {
        attnk.mla.consumers params(%q, %kv, %idx, %lens, %out, %b, %sq, %n, %topk : memref<?x1x128x576xbf16>, memref<?x?x656xi8>, memref<?x1x?xi32>, memref<?xi32>, memref<?x1x128x512xbf16>, i32, i32, i32, i32)
            rings(%kvr, %pr : !attnk.ring<64x576xbf16, stages = 2, none, producers = 128, consumers = 4>, !attnk.ring<64x64xbf16, stages = 1, swizzle_128b, producers = 128, consumers = 128>)
            work(%w#0, %w#1, %w#2, %w#3, %k#0, %k#1, %k#2, %k#3, %k#4, %k#5) {plan = {crossover = true}}
      }
    attnk.mla.cluster_sync
  }
}

// -----

// CHECK-LABEL: gpu.module @single
// CHECK: %[[K:.+]]:4 = attnk.mla.prologue {{.*}} {plan = {crossover = false}} : i32, i32, i32, i32
// CHECK: attnk.mla.producer {{.*}} work({{.*}}, %[[K]]#3) {plan = {crossover = false}}
// CHECK-NOT: attnk.mla.cluster_sync
gpu.module @single {
  attnk.kernel @g_mla(%q: memref<?x1x64x576xbf16>, %kv: memref<?x?x576xbf16>, %idx: memref<?xi32>,
                      %lens: memref<?xi32>, %out: memref<?x1x64x512xbf16>, %b: i32, %sq: i32,
                      %n: i32, %topk: i32) threads = 384 {
    %w:4 = attnk.mla.work {plan = {crossover = false}}
    %kvr = attnk.ring.alloc at 73728 : !attnk.ring<64x576xbf16, stages = 2, none, producers = 128, consumers = 2>
    %k:4 = attnk.mla.prologue params(%q, %kv, %idx, %lens, %out, %b, %sq, %n, %topk : memref<?x1x64x576xbf16>, memref<?x?x576xbf16>, memref<?xi32>, memref<?xi32>, memref<?x1x64x512xbf16>, i32, i32, i32, i32)
        rings(%kvr : !attnk.ring<64x576xbf16, stages = 2, none, producers = 128, consumers = 2>)
        work(%w#0, %w#1, %w#2, %w#3) {plan = {crossover = false}} : i32, i32, i32, i32
    attnk.warp_specialize
      #attn.role<producer, warpgroups = 1, regs = 120> {
        attnk.mla.producer params(%q, %kv, %idx, %lens, %out, %b, %sq, %n, %topk : memref<?x1x64x576xbf16>, memref<?x?x576xbf16>, memref<?xi32>, memref<?xi32>, memref<?x1x64x512xbf16>, i32, i32, i32, i32)
            rings(%kvr : !attnk.ring<64x576xbf16, stages = 2, none, producers = 128, consumers = 2>)
            work(%w#0, %w#1, %w#2, %w#3, %k#0, %k#1, %k#2, %k#3) {plan = {crossover = false}}
      }
      #attn.role<consumer, warpgroups = 2, regs = 168> {
        attnk.mla.consumers params(%q, %kv, %idx, %lens, %out, %b, %sq, %n, %topk : memref<?x1x64x576xbf16>, memref<?x?x576xbf16>, memref<?xi32>, memref<?xi32>, memref<?x1x64x512xbf16>, i32, i32, i32, i32)
            rings(%kvr : !attnk.ring<64x576xbf16, stages = 2, none, producers = 128, consumers = 2>)
            work(%w#0, %w#1, %w#2, %w#3, %k#0, %k#1, %k#2, %k#3) {plan = {crossover = false}}
      }
  }
}
