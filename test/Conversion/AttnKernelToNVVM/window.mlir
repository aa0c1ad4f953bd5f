// A sliding window (left 127, right 0) on a bf16 decode spec: attn-build-kernel puts `window` in
// the forward ops' plan; lowered, the CTA's first key tile is the first query's window start
// max(len − q_len − 127, 0) / tile_n, the split's tiles are counted from it and the tile loop
// starts there; a tile is masked when it starts before the last row's window start, and then
// each row's lower limit (its position − 127) feeds the mask's select beside the upper limit.
// RUN: attn-opt %s --attn-select-schedule --attn-build-kernel --mlir-print-ir-after=attn-build-kernel --convert-attn-to-nvvm --convert-attnk-to-nvvm 2>&1 | FileCheck %s

// CHECK-LABEL: IR Dump After AttnBuildKernel
// CHECK: #plan = {{{.*}}window = array<i64: 127, 0>{{.*}}}

// CHECK-LABEL: llvm.func @win_decode(
// CHECK: %[[R:.+]] = llvm.mlir.constant(127 : i32) : i32
// CHECK-NEXT: %[[UP:.+]] = llvm.add %[[LEN:.+]], %[[R]] : i32
// CHECK-NEXT: %[[TN0:.+]] = llvm.mlir.constant(128 : i32) : i32
// CHECK-NEXT: %[[TILES:.+]] = llvm.udiv %[[UP]], %[[TN0]] : i32
// CHECK: %[[L:.+]] = llvm.mlir.constant(127 : i32) : i32
// CHECK-NEXT: %[[FK:.+]] = llvm.sub %[[POS0:.+]], %[[L]] : i32
// CHECK: %[[FKC:.+]] = llvm.select %{{.+}}, %[[FK]], %{{.+}} : i1, i32
// CHECK-NEXT: %[[TN:.+]] = llvm.mlir.constant(128 : i32) : i32
// CHECK-NEXT: %[[F0:.+]] = llvm.udiv %[[FKC]], %[[TN]] : i32
// CHECK: %[[FIRST:.+]] = llvm.select %{{.+}}, %[[F0]], %[[TILES]] : i1, i32
// CHECK: %[[PER:.+]] = llvm.udiv %{{.+}}, %{{.+}} : i32
// CHECK-NEXT: %[[OFF:.+]] = llvm.mul %{{.+}}, %[[PER]] : i32
// CHECK-NEXT: %[[TILE0:.+]] = llvm.add %[[FIRST]], %[[OFF]] : i32
// CHECK: scf.for %[[J:.+]] = %{{.+}} to %{{.+}} step %{{.+}} : i32 {
// CHECK-NEXT: llvm.add %[[TILE0]], %[[J]] : i32
// CHECK: %[[NEED:.+]] = llvm.or %[[ABOVE:.+]], %[[BELOW:.+]] : i1
// CHECK-NEXT: scf.if %[[NEED]] -> (f32
// CHECK: %[[KEY:.+]] = llvm.add %{{.+}}, %{{.+}} : i32
// CHECK-NEXT: %[[LE:.+]] = llvm.icmp "sle" %[[KEY]], %{{.+}} : i32
// CHECK-NEXT: %[[GE:.+]] = llvm.icmp "sge" %[[KEY]], %[[ROWFIRST:.+]] : i32
// CHECK-NEXT: %[[SEEN:.+]] = llvm.and %[[LE]], %[[GE]] : i1
// CHECK-NEXT: llvm.select %[[SEEN]], %{{.+}}, %{{.+}} : i1, f32
func.func @win(%q: memref<?x1x8x128xbf16>, %k: memref<?x?x2x128xbf16>, %v: memref<?x?x2x128xbf16>, %lens: memref<?xi32>, %o: memref<?x1x8x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<?x1x8x128xbf16>, memref<?x?x2x128xbf16>, memref<?x?x2x128xbf16>)
      seq_lens(%lens : memref<?xi32>) outs(%o : memref<?x1x8x128xbf16>)
      {window = array<i64: 127, 0>, target = #attn.target<sm_90a>}
  return
}
