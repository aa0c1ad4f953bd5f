// The forward kernel's consumer role lowered to NVVM, its final state followed as values: the
// tile loop (attnk.forward.consumer) yields O, the row maxima and sums, O's unit and the
// thread's rows (`!attnk.rows`: warpgroup, index in it, fragment rows, ...); the softmax's
// finish (attnk.softmax_finish) reduces the row sums over the quad; the merge of the
// two decode warpgroups (attnk.forward.merge_warpgroups) parks warpgroup 1's loop state in the
// stage ring, at the slot of the rows' thread index, between two barriers of the 256 consumer
// threads and merges it into warpgroup 0's; the epilogue (attnk.forward.epilogue) stores the
// merged state for one split (num_splits, parameter 11), normalized by the merged row sums,
// from warpgroup 0's rows only (the rows' warpgroup and fragment rows: the loop's values), then
// triggers the dependents.
// RUN: attn-opt %s --attn-select-schedule --attn-build-kernel --mlir-print-ir-after=attn-build-kernel --convert-attn-to-nvvm --convert-attnk-to-nvvm 2>&1 | FileCheck %s

// CHECK-LABEL: IR Dump After AttnBuildKernel
// CHECK: %[[ST:.+]] = attnk.ring.alloc at 16384 stride
// CHECK: #attn.role<consumer, warpgroups = 2, regs = 200> {
// CHECK-NEXT: %[[S:[^:]+]]:5 = attnk.forward.consumer {{.*}} : !attnk.acc<64x128xf32>, vector<64xf32>, vector<64xf32>, f32, !attnk.rows{{$}}
// CHECK-NEXT: %[[FO:[^,]+]], %[[FL:[^ ]+]] = attnk.softmax_finish %[[S]]#0, %[[S]]#2 rows(%[[S]]#4 : !attnk.rows) : !attnk.acc<64x128xf32>, vector<64xf32>
// CHECK-NEXT: %[[MO:[^,]+]], %[[MM:[^,]+]], %[[ML:[^ ]+]] = attnk.forward.merge_warpgroups %[[FO]], %[[S]]#1, %[[FL]] rows(%[[S]]#4 : !attnk.rows) in %[[ST]]
// CHECK-NEXT: attnk.forward.epilogue %[[MO]], %[[MM]], %[[ML]], %[[S]]#3 rows(%[[S]]#4 : !attnk.rows) in %[[ST]]

// CHECK-LABEL: llvm.func @mqa_i8_decode(
// CHECK: %[[BASE:.+]] = llvm.getelementptr %{{.+}}[%{{.+}}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
// CHECK: nvvm.setmaxregister  increase 200
// The thread's warpgroup: warp-uniform, and the first tile of its alternate tiles.
// CHECK: %[[WG:.+]] = nvvm.shfl.sync  idx %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : i32 -> i32
// The thread's index in the warpgroup and its first fragment row (16 · warp + lane / 4).
// CHECK-NEXT: %[[C127:.+]] = llvm.mlir.constant(127 : i32) : i32
// CHECK-NEXT: %[[CT:.+]] = llvm.and %{{.+}}, %[[C127]] : i32
// CHECK: %[[R0:.+]] = llvm.add %{{.+}}, %{{.+}} : i32
// CHECK-NEXT: %[[C8:.+]] = llvm.mlir.constant(8 : i32) : i32
// CHECK-NEXT: %[[R1:.+]] = llvm.add %[[R0]], %[[C8]] : i32
// CHECK: %[[FIN:[^:]+]]:68 = scf.for %{{.+}} = %[[WG]] to
// Row sums over the quad (l0 = FIN#2).
// CHECK: nvvm.shfl.sync  bfly %{{.+}}, %[[FIN]]#2,
// Merge: warpgroup 1 parks its state (m0 first) at 16384 + 4 · thread.
// CHECK: %[[SLOT0:.+]] = llvm.mlir.constant(16384 : i32) : i32
// CHECK-NEXT: %[[C4:.+]] = llvm.mlir.constant(4 : i32) : i32
// CHECK-NEXT: %[[CT4:.+]] = llvm.mul %[[CT]], %[[C4]] : i32
// CHECK-NEXT: %[[SLOT:.+]] = llvm.add %[[SLOT0]], %[[CT4]] : i32
// CHECK-NEXT: %[[B1:.+]] = llvm.mlir.constant(2 : i32) : i32
// CHECK-NEXT: %[[N1:.+]] = llvm.mlir.constant(256 : i32) : i32
// CHECK-NEXT: nvvm.barrier id = %[[B1]] number_of_threads = %[[N1]]
// CHECK-NEXT: %[[ONE:.+]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT: %[[PARK:.+]] = llvm.icmp "eq" %[[WG]], %[[ONE]] : i32
// CHECK-NEXT: scf.if %[[PARK]] {
// CHECK-NEXT: %[[AT:.+]] = llvm.getelementptr %[[BASE]][%[[SLOT]]]
// CHECK-NEXT: llvm.store %[[FIN]]#0, %[[AT]]
// CHECK: nvvm.barrier id = %{{.+}} number_of_threads = %{{.+}}
// CHECK: %[[IS0:.+]] = llvm.icmp "eq" %[[WG]], %{{.+}} : i32
// CHECK-NEXT: %[[M:[^:]+]]:68 = scf.if %[[IS0]]
// CHECK: llvm.load %{{.+}} : !llvm.ptr<3> -> f32
// Epilogue: warpgroup 0's rows, one split: O / l of the merged state into `out`.
// CHECK: %[[W0:.+]] = llvm.icmp "eq" %[[WG]], %{{.+}} : i32
// CHECK-NEXT: %[[C48:.+]] = llvm.mlir.constant(48 : i32) : i32
// CHECK-NEXT: %[[IN0:.+]] = llvm.icmp "slt" %[[R0]], %[[C48]] : i32
// CHECK-NEXT: %[[ROW0:.+]] = llvm.and %[[W0]], %[[IN0]] : i1
// CHECK: %[[IN1:.+]] = llvm.icmp "slt" %[[R1]], %{{.+}} : i32
// CHECK: %[[SINGLE:.+]] = llvm.icmp "eq" %arg11, %{{.+}} : i32
// CHECK-NEXT: scf.if %[[SINGLE]] {
// CHECK: %[[INV:.+]] = llvm.fdiv %{{.+}}, %[[M]]#2 : f32
// CHECK: scf.if %[[ROW0]] {
// CHECK: llvm.fmul %[[M]]#4, %{{.+}} : f32
// CHECK: llvm.getelementptr %arg7[
// CHECK: } else {
// CHECK: nvvm.griddepcontrol  launch_dependents
// CHECK-NEXT: }
// CHECK: llvm.return
func.func @mqa_i8(%q: memref<?x3x16x128xbf16>, %k: memref<?x?x1x128xi8>, %v: memref<?x?x1x128xi8>,
                  %ks: memref<?x?x1xf32>, %vs: memref<?x?x1xf32>, %o: memref<?x3x16x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<?x3x16x128xbf16>, memref<?x?x1x128xi8>, memref<?x?x1x128xi8>)
      k_scale(%ks : memref<?x?x1xf32>) v_scale(%vs : memref<?x?x1xf32>)
      outs(%o : memref<?x3x16x128xbf16>)
      {k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>,
       target = #attn.target<sm_90a>}
  return
}
