// --emit=ptx of a prefill spec with FA3's persistent grid: one CTA per SM (launch grid symbol
// persistent_ctas) walks the work items by %nctaid.x; each consumer warpgroup reloads its own
// query tile between its named barriers (6 and 7), and the pipeline's rings run on across items.
// RUN: attn-opt %s --attn-select-schedule --emit=ptx | FileCheck %s
// RUN: attn-opt %s --attn-select-schedule --emit=launch | FileCheck %s --check-prefix=META

// CHECK: .entry pf_pers_prefill(
// CHECK-DAG: mov.u32 {{.*}}%nctaid.x;
// CHECK-DAG: bar.sync {{.*}}, 128;
// CHECK: cp.async.bulk.tensor.4d.shared::cta.global.tile.mbarrier::complete_tx::bytes
// CHECK: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// The epilogue stores O word by word (staging it through the query tile spills in the item
// loop): no 16-byte row chunks.
// CHECK-NOT: st.global.v4.b32

// META: "grid": [
// META-NEXT: "persistent_ctas",
// META-NEXT: 1,
// META-NEXT: 1
// META-NEXT: ],

func.func @pf_pers(%q: memref<?x?x8x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>,
                   %o: memref<?x?x8x128xbf16>) {
  attn.attention prefill ins(%q, %k, %v : memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>)
      outs(%o : memref<?x?x8x128xbf16>)
      {causal, target = #attn.target<sm_90a>, schedule = #attn.schedule<persistent = true>}
  return
}
