// --emit=ptx of a prefill spec with FA3's persistent grid: one CTA per SM (launch grid symbol
// persistent_ctas) walks the work items by %nctaid.x, and the pipeline's rings run on across
// items. On three stages (bf16's default: 230528 bytes of shared memory) each consumer
// warpgroup reloads its own query tile between its named barriers (6 and 7); on two, a second
// set of query tiles fits, and the consumers copy the next item's queries into it (cp.async,
// zero-filled past the rows) while they work on the current one.
// RUN: attn-opt %s --attn-select-schedule --emit=ptx | FileCheck %s
// RUN: attn-opt %s --attn-select-schedule --emit=ptx | FileCheck %s --check-prefix=ONE
// RUN: attn-opt %s --attn-select-schedule --emit=launch | FileCheck %s --check-prefix=META
// RUN: sed 's/persistent = true/persistent = true, stages = 2/' %s \
// RUN:   | attn-opt --attn-select-schedule --emit=ptx | FileCheck %s --check-prefix=TWO
// RUN: sed 's/persistent = true/persistent = true, stages = 2/' %s \
// RUN:   | attn-opt --attn-select-schedule --emit=launch | FileCheck %s --check-prefix=TWO-META

// ONE-NOT: cp.async.cg

// CHECK: .entry pf_pers_prefill(
// CHECK-DAG: mov.u32 {{.*}}%nctaid.x;
// CHECK-DAG: bar.sync {{.*}}, 128;
// CHECK: cp.async.bulk.tensor.4d.shared::cta.global.tile.mbarrier::complete_tx::bytes
// CHECK: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// The epilogue: a 4 × 4 transpose of bf16 pairs over each quad (shfl.xor 2, then 1) gives each
// thread whole 8-column chunks, stored as 16 bytes — 4 chunks of 2 rows per thread at
// head_dim 128 — with no staging through shared memory (which spills in the item loop).
// CHECK: shfl.sync.bfly.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, 2, 31, -1;
// CHECK: shfl.sync.bfly.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, 1, 31, -1;
// CHECK-COUNT-8: st.global.v4.b32 [{{%rd[0-9]+}}{{(\+[0-9]+)?}}], {
// CHECK-NOT: st.global.v4.b32

// The first item's queries, then (every item) the wait for its copies, the fence that makes
// them visible to the WGMMAs, the warpgroup's barrier, and the next item's copies into the
// other set.
// TWO: .entry pf_pers_prefill(
// TWO-COUNT-8: cp.async.cg.shared.global [{{%rd[0-9]+}}], [{{%rd[0-9]+}}], 16, {{%r[0-9]+}};
// TWO-NEXT: cp.async.commit_group;
// TWO: cp.async.wait_group 0;
// TWO-NEXT: fence.proxy.async.shared::cta;
// TWO-NEXT: bar.sync {{%r[0-9]+}}, 128;
// TWO-COUNT-8: cp.async.cg.shared.global
// TWO-NEXT: cp.async.commit_group;
// TWO: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16

// 128-byte-aligned map: two sets of 2 query tiles of 64 × 128 bf16 (65536 bytes) + 2 stages of
// K and V (131072) + mbarriers, and 1 KiB to align the base.
// TWO-META: "smem_bytes": 197760

// META: "grid": [
// META-NEXT: "persistent_ctas",
// META-NEXT: 1,
// META-NEXT: 1
// META-NEXT: ],
// META: "smem_bytes": 230528

func.func @pf_pers(%q: memref<?x?x8x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>,
                   %o: memref<?x?x8x128xbf16>) {
  attn.attention prefill ins(%q, %k, %v : memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>)
      outs(%o : memref<?x?x8x128xbf16>)
      {causal, target = #attn.target<sm_90a>, schedule = #attn.schedule<persistent = true>}
  return
}
