// Attention sinks and the log-sum-exp output of a split-KV int8 decode spec. attn-build-kernel
// puts attnk.softmax_sink between the merge of the two decode warpgroups and the epilogue, on the
// merged state and the CTA's split; the epilogue and both combine kernels take the lse output.
// Lowered: the sink of the row's head is loaded from the sinks parameter, scaled by log2(e) and,
// on split 0 only (−inf elsewhere), joins the row maximum and the denominator: m' = max(m, σ),
// l' = l · 2^(m − m') + 2^(σ − m'), O · 2^(m − m'). The one-split store writes the row's
// (m' + log2 l') · ln 2 into the lse parameter from the first thread of its quad; the combine
// kernel writes the merged rows' from its own lse parameter.
// RUN: attn-opt %s --attn-select-schedule --attn-build-kernel --mlir-print-ir-after=attn-build-kernel --convert-attn-to-nvvm --convert-attnk-to-nvvm 2>&1 | FileCheck %s

// CHECK-LABEL: IR Dump After AttnBuildKernel
// CHECK: attnk.kernel @sl_decode({{.*}}, %[[SINKS:[^:]+]]: memref<8xf32>, %[[LSE:[^:]+]]: memref<?x1x8xf32>)
// CHECK: %[[W:[^:]+]]:7 = attnk.forward.work
// CHECK: %[[O:[^,]+]], %[[M:[^,]+]], %[[L:[^ ]+]] = attnk.forward.merge_warpgroups
// CHECK-NEXT: %[[O2:[^,]+]], %[[M2:[^,]+]], %[[L2:[^ ]+]] = attnk.softmax_sink %[[O]], %[[M]], %[[L]] sinks(%[[SINKS]] : memref<8xf32>) split(%[[W]]#1) rows(%{{.+}} : !attnk.rows) : !attnk.acc<64x128xf32>, vector<64xf32>
// CHECK-NEXT: attnk.forward.epilogue %[[O2]], %[[M2]], %[[L2]], {{.*}} lse(%[[LSE]] : memref<?x1x8xf32>)
// CHECK: attnk.kernel @sl_combine({{.*}}, %[[CL:[^:]+]]: memref<?x1x8xf32>) threads = 128 programmatic attributes {launch = #attnk.launch<combine, {{.*}} params = ["workspace", "out", "batch", "num_splits", "lse"]
// CHECK-NEXT: attnk.merge.combine %{{.+}} into %{{.+}} lse(%[[CL]] : memref<?x1x8xf32>)
// CHECK: attnk.kernel @sl_combine_wide({{.*}}) threads = 512 programmatic attributes {launch = #attnk.launch<combine, {{.*}} params = ["workspace", "out", "batch", "num_splits", "lse"]

// CHECK-LABEL: llvm.func @sl_decode(
// CHECK-SAME: %[[PS:arg15]]: !llvm.ptr<1>, %[[PL:arg16]]: !llvm.ptr<1>)
// The merged state (m0, m1, l0, l1, O...), then the sink of row 0 where the split is 0.
// CHECK: %[[MS:[^:]+]]:68 = scf.if
// CHECK: %[[FIRST:.+]] = llvm.icmp "eq" %{{.+}}, %{{.+}} : i32
// CHECK: %[[SP:.+]] = llvm.getelementptr %[[PS]][%{{.+}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i8
// CHECK-NEXT: %[[S:.+]] = llvm.load %[[SP]] invariant {alignment = 4 : i64} : !llvm.ptr<1> -> f32
// CHECK-NEXT: %[[LOG2E:.+]] = llvm.mlir.constant(1.44269502 : f32) : f32
// CHECK-NEXT: %[[S2:.+]] = llvm.fmul %[[S]], %[[LOG2E]] : f32
// CHECK-NEXT: %[[NINF:.+]] = llvm.mlir.constant(0xFF800000 : f32) : f32
// CHECK-NEXT: %[[SIG:.+]] = llvm.select %[[FIRST]], %[[S2]], %[[NINF]] : i1, f32
// CHECK: %[[MNEW:.+]] = llvm.intr.maxnum(%[[MS]]#0, %[[SIG]]) : (f32, f32) -> f32
// CHECK: %[[MUSE:.+]] = llvm.select %{{.+}}, %{{.+}}, %[[MNEW]] : i1, f32
// CHECK-NEXT: %[[DM:.+]] = llvm.fsub %[[MS]]#0, %[[MUSE]] : f32
// CHECK-NEXT: %[[A:.+]] = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"(%[[DM]]) : (f32) -> f32
// CHECK-NEXT: %[[DS:.+]] = llvm.fsub %[[SIG]], %[[MUSE]] : f32
// CHECK-NEXT: %[[B:.+]] = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"(%[[DS]]) : (f32) -> f32
// CHECK-NEXT: %[[SB:.+]] = llvm.fmul %{{.+}}, %[[B]] : f32
// CHECK-NEXT: %[[LNEW:.+]] = llvm.intr.fma(%[[MS]]#2, %[[A]], %[[SB]]) : (f32, f32, f32) -> f32
// O's first register of row 0 takes the same weight.
// CHECK: llvm.fmul %[[MS]]#4, %[[A]] : f32
// One split: the log-sum-exp of row 0 from the sink-folded state, into the lse parameter.
// CHECK: %[[LG:.+]] = llvm.call_intrinsic "llvm.nvvm.lg2.approx.ftz.f"(%[[LNEW]]) : (f32) -> f32
// CHECK-NEXT: %[[SUM:.+]] = llvm.fadd %[[MNEW]], %[[LG]] : f32
// CHECK-NEXT: %[[LN2:.+]] = llvm.mlir.constant(0.693147182 : f32) : f32
// CHECK-NEXT: %[[V:.+]] = llvm.fmul %[[SUM]], %[[LN2]] : f32
// CHECK: %[[VL:.+]] = llvm.select %{{.+}}, %[[V]], %{{.+}} : i1, f32
// CHECK: scf.if
// CHECK: %[[LP:.+]] = llvm.getelementptr %[[PL]][%{{.+}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i8
// CHECK-NEXT: llvm.store %[[VL]], %[[LP]] {alignment = 4 : i64} : f32, !llvm.ptr<1>

// The combine kernel: the merged maximum plus log2 of the merged sum, into its lse parameter.
// CHECK-LABEL: llvm.func @sl_combine(
// CHECK-SAME: %[[CLP:arg4]]: !llvm.ptr<1>)
// CHECK: %[[CLG:.+]] = llvm.call_intrinsic "llvm.nvvm.lg2.approx.ftz.f"(%{{.+}}) : (f32) -> f32
// CHECK-NEXT: %[[CSUM:.+]] = llvm.fadd %{{.+}}, %[[CLG]] : f32
// CHECK-NEXT: llvm.mlir.constant(0.693147182 : f32) : f32
// CHECK-NEXT: %[[CV:.+]] = llvm.fmul %[[CSUM]], %{{.+}} : f32
// CHECK-NEXT: %[[CVL:.+]] = llvm.select %{{.+}}, %[[CV]], %{{.+}} : i1, f32
// CHECK: %[[CP:.+]] = llvm.getelementptr %[[CLP]][%{{.+}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i8
// CHECK-NEXT: llvm.store %[[CVL]], %[[CP]] {alignment = 4 : i64} : f32, !llvm.ptr<1>
func.func @sl(%q: memref<?x1x8x128xbf16>, %k: memref<?x?x2x128xi8>, %v: memref<?x?x2x128xi8>, %ks: memref<?x?x2xf32>, %vs: memref<?x?x2xf32>, %lens: memref<?xi32>, %s: memref<8xf32>, %o: memref<?x1x8x128xbf16>, %l: memref<?x1x8xf32>) {
  attn.attention decode ins(%q, %k, %v : memref<?x1x8x128xbf16>, memref<?x?x2x128xi8>, memref<?x?x2x128xi8>)
      k_scale(%ks : memref<?x?x2xf32>) v_scale(%vs : memref<?x?x2xf32>)
      seq_lens(%lens : memref<?xi32>) sinks(%s : memref<8xf32>)
      outs(%o : memref<?x1x8x128xbf16>) lse(%l : memref<?x1x8xf32>)
      {target = #attn.target<sm_90a>, k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>}
  return
}
