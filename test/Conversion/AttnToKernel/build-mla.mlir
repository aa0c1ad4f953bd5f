// attn-build-kernel builds the MLA decode kernel at the kernel level: an attnk.kernel with the
// launch ABI (#attnk.launch: grid [heads / 64, sq, batch], a 2-CTA cluster with crossover) and
// the spec's metadata, the key/value and P rings, the CTA's work and prologue, one producer
// warpgroup and two consumer warpgroups (whose role keeps the 168 registers the 384 threads
// enter with), and the cluster's closing barrier; the host function is removed.
// convert-attnk-to-nvvm: the kernel's buffers are noalias, it asks for its cluster shape, the
// prologue's thread id splits the roles (producer: setmaxnreg.dec 120 first; consumers: no
// setmaxnreg before the consumers' split, where consumer 0 raises its own budget to 216), and the cluster barrier closes.
// RUN: attn-opt %s --attn-select-schedule --attn-build-kernel | FileCheck %s
// RUN: attn-opt %s --attn-select-schedule --attn-build-kernel --convert-attnk-to-nvvm | FileCheck %s --check-prefix=NVVM

// CHECK: #mla_plan = {{{.*}}crossover = true{{.*}}}
// CHECK-NOT: func.func @mla
// CHECK: attnk.kernel @mla_mla(%[[Q:[^:]+]]: memref<?x2x128x576xbf16>, %[[KV:[^:]+]]: memref<?x?x656xi8>, %{{[^:]+}}: memref<?x2x?xi32>, %{{[^:]+}}: memref<?xi32>, %{{[^:]+}}: memref<?x2x128x512xbf16>, {{.*}}) threads = 384
// CHECK-SAME: launch = #attnk.launch<mla_decode, grid = [2, "sq", "batch"], block = [384, 1, 1], cluster = [2, 1, 1], smem = 231552, params = ["q", "kv", "indices", "seq_lens", "out", "batch", "sq", "kv_len", "topk"]>
// CHECK-SAME: kind = "mla_decode"
// CHECK-SAME: consumer_regs = [216, 168], crossover = true
// CHECK-NEXT: %[[TID:[^,]+]], %[[GRP:[^,]+]], %[[QI:[^,]+]], %[[B:[^ ]+]] = attnk.mla.work {plan = #mla_plan}
// CHECK-NEXT: %[[KVR:.+]] = attnk.ring.alloc at 73728 : !attnk.ring<64x576xbf16, stages = 2, none, producers = 128, consumers = 4>
// CHECK-NEXT: %[[PR:.+]] = attnk.ring.alloc at 221184 : !attnk.ring<64x64xbf16, stages = 1, swizzle_128b, producers = 128, consumers = 128>
// CHECK-NEXT: %[[K:.+]]:6 = attnk.mla.prologue params(%[[Q]], %[[KV]], {{.*}}) rings(%[[KVR]], %[[PR]] : {{.*}}) work(%[[TID]], %[[GRP]], %[[QI]], %[[B]])
// CHECK-NEXT: attnk.warp_specialize attributes {ctas_per_sm = 1 : i64}
// CHECK-NEXT: #attn.role<producer, warpgroups = 1, regs = 120> {
// CHECK-NEXT: attnk.mla.producer params(%[[Q]], {{.*}}) rings(%[[KVR]], %[[PR]] : {{.*}}) work(%[[TID]], %[[GRP]], %[[QI]], %[[B]], %[[K]]#0, {{.*}}, %[[K]]#5)
// CHECK: #attn.role<consumer, warpgroups = 2, regs = 168> {
// CHECK-NEXT: attnk.mla.consumers params(%[[Q]], {{.*}}) rings(%[[KVR]], %[[PR]] : {{.*}}) work(%[[TID]], {{.*}}, %[[K]]#5)
// CHECK: attnk.mla.cluster_sync

// NVVM: llvm.func @mla_mla(%{{[^:]+}}: !llvm.ptr<1> {llvm.noalias}, {{.*}}) attributes {attn.launch = "{{.*}}mla_decode{{.*}}", nvvm.cluster_dim = array<i32: 2, 1, 1>, nvvm.kernel, nvvm.maxntid = array<i32: 384, 1, 1>, nvvm.minctasm = 1 : i32}
// NVVM-NEXT: %[[TID:.+]] = nvvm.read.ptx.sreg.tid.x : i32
// NVVM: nvvm.cluster.arrive {aligned}
// NVVM-NEXT: nvvm.cluster.wait {aligned}
// NVVM-NEXT: %[[T2:.+]] = nvvm.read.ptx.sreg.tid.x : i32
// NVVM-NEXT: %[[C128:.+]] = llvm.mlir.constant(128 : i32) : i32
// NVVM-NEXT: %[[FIRST:.+]] = llvm.icmp "ult" %[[T2]], %[[C128]] : i32
// NVVM-NEXT: scf.if %[[FIRST]] {
// NVVM-NEXT: nvvm.setmaxregister  decrease 120
// NVVM-NOT: nvvm.setmaxregister
// NVVM: %{{.+}}:130 = scf.if %{{.+}} -> (f32
// NVVM-NEXT: nvvm.setmaxregister  increase 216
// NVVM: nvvm.cluster.arrive {aligned}
// NVVM-NEXT: nvvm.cluster.wait {aligned}
// NVVM-NEXT: llvm.return
func.func @mla(%q: memref<?x2x128x576xbf16>, %kv: memref<?x?x656xi8>, %idx: memref<?x2x?xi32>,
               %o: memref<?x2x128x512xbf16>) {
  attn.mla_decode ins(%q, %kv : memref<?x2x128x576xbf16>, memref<?x?x656xi8>)
      indices(%idx : memref<?x2x?xi32>) outs(%o : memref<?x2x128x512xbf16>)
      {head_dim_v = 512 : i64, rope_dim = 64 : i64, kv_quant = #attn.quant<f8E4M3FN, per_block<1x128>>,
       target = #attn.target<sm_90a>}
  return
}
