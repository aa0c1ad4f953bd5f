// --emit=ptx of a decode spec: the PTX has the Hopper instructions the kernel is built from, and
// -o writes the launch metadata beside it; --emit=launch prints the metadata; --emit=cubin runs
// ptxas (when the toolkit is there).
// RUN: attn-opt %s --emit=ptx | FileCheck %s
// RUN: attn-opt %s --emit=ptx | FileCheck %s --check-prefix=RS
// RUN: attn-opt %s --emit=ptx -o %t.ptx && FileCheck %s --check-prefix=META < %t.ptx.launch.json
// RUN: attn-opt %s --emit=launch | FileCheck %s --check-prefix=META
// RUN: attn-opt %s --emit=ptx | FileCheck %s --check-prefix=CLUSTER

// CHECK: .target sm_90a
// CHECK: .entry decode_decode(
// CHECK-NEXT: .param .align 64 .b8 decode_decode_param_0[128],
// CHECK: .maxntid 512, 1, 1
// (thread 0's mbarrier.init and first TMA loads sit in a block ptxas places at the end)
// CHECK: setmaxnreg.dec.sync.aligned.u32 56;
// CHECK: mbarrier.try_wait.parity.shared.b64
// CHECK: prmt.b32
// CHECK: fence.proxy.async.shared::cta
// CHECK: mbarrier.arrive.expect_tx.shared.b64
// CHECK: cp.async.bulk.tensor.4d.shared::cta.global.tile.mbarrier::complete_tx::bytes
// CHECK: setmaxnreg.inc.sync.aligned.u32 200;
// CHECK: wgmma.fence.sync.aligned
// CHECK: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// CHECK: wgmma.commit_group.sync.aligned
// CHECK: wgmma.wait_group.sync.aligned 0
// CHECK: ex2.approx.ftz.f32
// The consumers trigger the programmatic dependent (the combine) once they are done.
// CHECK: griddepcontrol.launch_dependents;
// O += P·V: A (P) from registers, B (V) transposed (MN-major), in its own block of the PTX.
// RS: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}}, {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, %rd{{[0-9]+}}, p, 1, 1, 1;
// CHECK: .entry decode_combine(
// CHECK: griddepcontrol.wait;
// CHECK: shfl.sync.bfly
// CHECK: .entry decode_combine_wide(
// CHECK: .maxntid 512, 1, 1
// CHECK: griddepcontrol.wait;
// CHECK: bar.sync 0;

// Split-KV merged in a cluster of the splits: the producers join the consumers' two cluster
// barriers; a cluster that is not num_splits CTAs traps (LLVM puts that block last); the
// consumers park their state, read every split's through distributed shared memory, and wait
// for their peers before exiting.
// CLUSTER: %cluster_nctarank;
// CLUSTER: barrier.cluster.arrive.aligned;
// CLUSTER-NEXT: barrier.cluster.wait.aligned;
// CLUSTER-NEXT: barrier.cluster.arrive.aligned;
// CLUSTER-NEXT: barrier.cluster.wait.aligned;
// CLUSTER: %cluster_nctarank;
// CLUSTER: barrier.cluster.arrive.aligned;
// CLUSTER-NEXT: barrier.cluster.wait.aligned;
// CLUSTER: %cluster_ctarank;
// CLUSTER: mapa.shared::cluster.u32
// CLUSTER: ld.shared::cluster.f32
// CLUSTER: barrier.cluster.arrive.aligned;
// CLUSTER-NEXT: barrier.cluster.wait.aligned;
// CLUSTER: griddepcontrol.launch_dependents;
// CLUSTER: trap;
// CLUSTER: .entry decode_combine(

// (keys come out sorted)
// META: "format": "attn-launch-v1"
// META: "cluster_splits": 2
// META: "name": "decode_decode"
// META: "smem_bytes": 216192
// META: "min_splits": 2
// META: "name": "decode_combine"
// META: "programmatic": true
// META: "block": [
// META-NEXT: 512,
// META: "grid": [
// META-NEXT: "rows",
// META: "min_splits": 17
// META: "name": "decode_combine_wide"
// META: "programmatic": true
// META: "kv_dtype": "i8"
// META: "q_heads": 16
// META: "pack_q_heads": 16
// META: "split_kv": 4
// META: "workspace_floats_per_split": 6240
func.func @decode(%q: memref<32x3x16x128xbf16>, %k: memref<32x8192x1x128xi8>, %v: memref<32x8192x1x128xi8>,
                  %ks: memref<32x8192x1xf32>, %vs: memref<32x8192x1xf32>, %o: memref<32x3x16x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<32x3x16x128xbf16>, memref<32x8192x1x128xi8>, memref<32x8192x1x128xi8>)
      k_scale(%ks : memref<32x8192x1xf32>) v_scale(%vs : memref<32x8192x1xf32>) outs(%o : memref<32x3x16x128xbf16>)
      {k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>, target = #attn.target<sm_90a>}
  return
}
