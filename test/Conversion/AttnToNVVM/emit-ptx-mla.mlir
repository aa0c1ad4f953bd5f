// --emit=ptx of the FlashMLA-style FP8 sparse MLA decode with the 2-CTA crossover: the PTX asks
// for a 2-CTA cluster, maps the peer's shared memory (mapa), writes dequantized K/V into it with
// st.async completing the peer's transaction barrier, releases buffers in both CTAs (remote
// mbarrier arrives), and synchronizes the cluster before and after; -o writes
// the launch metadata (cluster [2, 1, 1], grid [heads / 64, s_q, batch]).
// The K/V buffers are in the unswizzled interleaved layout: the WGMMA descriptors of K
// (K-major, LBO 1024 / SBO 128 bytes: (64 << 16) | (8 << 32) = 34363932672) and of V
// (MN-major, LBO 128 / SBO 1024: (8 << 16) | (64 << 32) = 274878431232) have layout type 0.
// RUN: attn-opt %s --attn-select-schedule --emit=ptx | FileCheck %s
// RUN: attn-opt %s --attn-select-schedule --emit=ptx -o %t.ptx && FileCheck %s --check-prefix=META < %t.ptx.launch.json

// CHECK: .entry mla_mla(
// CHECK: .maxntid 384, 1, 1
// CHECK: .reqnctapercluster 2, 1, 1
// CHECK: mapa.shared::cluster.u32
// CHECK: barrier.cluster.arrive.aligned;
// CHECK-NEXT: barrier.cluster.wait.aligned;
// CHECK: setmaxnreg.dec.sync.aligned.u32 120;
// CHECK: cvt.rn.f16x2.e4m3x2
// CHECK: cvt.rn.bf16x2.f32
// CHECK: st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32
// CHECK: setmaxnreg.inc.sync.aligned.u32 216;
// CHECK: or.b64 {{.*}}, 34363932672;
// CHECK: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// CHECK: or.b64 {{.*}}, 274878431232;
// CHECK: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
// CHECK: mbarrier.arrive.shared::cluster.b64
// CHECK: barrier.cluster.arrive.aligned;
// CHECK-NEXT: barrier.cluster.wait.aligned;

// META: "format": "attn-launch-v1"
// META: "block": [
// META-NEXT: 384,
// META: "cluster": [
// META-NEXT: 2,
// META: "grid": [
// META-NEXT: 2,
// META-NEXT: "sq",
// META-NEXT: "batch"
// META: "name": "mla_mla"
// META: "params": [
// META-NEXT: "q",
// META-NEXT: "kv",
// META-NEXT: "indices",
// META-NEXT: "seq_lens",
// META-NEXT: "out",
// META-NEXT: "batch",
// META-NEXT: "sq",
// META-NEXT: "kv_len",
// META-NEXT: "topk"
// META: "smem_bytes": 231552
// META: "kind": "mla_decode"
// META: "token_bytes": 656
// META: "crossover": true
func.func @mla(%q: memref<?x2x128x576xbf16>, %kv: memref<?x?x656xi8>, %idx: memref<?x2x?xi32>,
               %o: memref<?x2x128x512xbf16>) {
  attn.mla_decode ins(%q, %kv : memref<?x2x128x576xbf16>, memref<?x?x656xi8>)
      indices(%idx : memref<?x2x?xi32>) outs(%o : memref<?x2x128x512xbf16>)
      {head_dim_v = 512 : i64, rope_dim = 64 : i64, kv_quant = #attn.quant<f8E4M3FN, per_block<1x128>>,
       target = #attn.target<sm_90a>}
  return
}
