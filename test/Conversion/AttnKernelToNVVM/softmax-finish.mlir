// attnk.softmax_finish after the consumer's tile loop of a `hadamard` spec (V rotated by the
// Walsh–Hadamard matrix H): attn-build-kernel puts it between the loop and the merge of the two
// decode warpgroups, on the loop's O, row sums and rows. Lowered, O · H takes the loop's O
// registers (in-thread butterflies, then lanes 1 and 2 of the quad, chosen by the rows' column
// base), then each row sum of the loop is reduced over the quad (shfl.xor 1, 2) and takes √128;
// the merge parks that reduced sum.
// RUN: attn-opt %s --attn-select-schedule --attn-build-kernel --mlir-print-ir-after=attn-build-kernel --convert-attn-to-nvvm --convert-attnk-to-nvvm 2>&1 | FileCheck %s

// CHECK-LABEL: IR Dump After AttnBuildKernel
// CHECK: %[[S:[^:]+]]:5 = attnk.forward.consumer {{.*}} : !attnk.acc<64x128xf32>, vector<64xf32>, vector<64xf32>, f32, !attnk.rows{{$}}
// CHECK-NEXT: %[[O:[^,]+]], %[[L:[^ ]+]] = attnk.softmax_finish %[[S]]#0, %[[S]]#2 rows(%[[S]]#4 : !attnk.rows) {hadamard} : !attnk.acc<64x128xf32>, vector<64xf32>
// CHECK-NEXT: attnk.forward.merge_warpgroups %[[O]], %[[S]]#1, %[[L]] rows(%[[S]]#4 : !attnk.rows) in

// CHECK-LABEL: llvm.func @had_decode(
// The rows' column base: 2 · (lane mod 4).
// CHECK: nvvm.setmaxregister  increase
// CHECK: %[[C3:.+]] = llvm.mlir.constant(3 : i32) : i32
// CHECK-NEXT: %[[LQ:.+]] = llvm.and %{{.+}}, %[[C3]] : i32
// CHECK-NEXT: %[[C2:.+]] = llvm.mlir.constant(2 : i32) : i32
// CHECK-NEXT: %[[CB:.+]] = llvm.mul %[[LQ]], %[[C2]] : i32
// CHECK: %[[FIN:[^:]+]]:68 = scf.for
// O · H: the first in-thread butterfly on the loop's O registers 0 and 1 (FIN#4, FIN#5).
// CHECK: %[[B0:.+]] = llvm.fadd %[[FIN]]#4, %[[FIN]]#5 : f32
// CHECK-NEXT: %[[B1:.+]] = llvm.fsub %[[FIN]]#4, %[[FIN]]#5 : f32
// The lane butterflies: the lane's side from the column base.
// CHECK: %[[SIDE:.+]] = llvm.and %[[CB]], %{{.+}} : i32
// CHECK: nvvm.shfl.sync  bfly
// Row sum 0 of the loop (FIN#2) over the quad, then × √128.
// CHECK: %[[X1:.+]] = nvvm.shfl.sync  bfly %{{.+}}, %[[FIN]]#2, %{{.+}}, %{{.+}} : f32 -> f32
// CHECK-NEXT: %[[L1:.+]] = llvm.fadd %[[FIN]]#2, %[[X1]] : f32
// CHECK: %[[X2:.+]] = nvvm.shfl.sync  bfly %{{.+}}, %[[L1]], %{{.+}}, %{{.+}} : f32 -> f32
// CHECK-NEXT: %[[L2:.+]] = llvm.fadd %[[L1]], %[[X2]] : f32
// CHECK-NEXT: %[[RT:.+]] = llvm.mlir.constant(11.3137{{[0-9]+}} : f32) : f32
// CHECK-NEXT: %[[L0:.+]] = llvm.fmul %[[L2]], %[[RT]] : f32
// The merge parks m0, m1, then the finished l0.
// CHECK: scf.if
// CHECK: llvm.store %[[FIN]]#0,
// CHECK: llvm.store %[[FIN]]#1,
// CHECK: llvm.store %[[L0]],
func.func @had(%q: memref<?x3x16x128xbf16>, %k: memref<?x?x1x128xi8>, %v: memref<?x?x1x128xi8>, %ks: memref<?x?x1xf32>, %vs: memref<?x?x1xf32>, %lens: memref<?xi32>, %o: memref<?x3x16x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<?x3x16x128xbf16>, memref<?x?x1x128xi8>, memref<?x?x1x128xi8>)
      k_scale(%ks : memref<?x?x1xf32>) v_scale(%vs : memref<?x?x1xf32>)
      seq_lens(%lens : memref<?xi32>)
      outs(%o : memref<?x3x16x128xbf16>)
      {causal, hadamard, target = #attn.target<sm_90a>, k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>}
  return
}
