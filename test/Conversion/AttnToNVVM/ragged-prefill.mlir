// A ragged prefill (cu_seqlens_q): q and out pack every sequence's new tokens along Sq of a
// batch of one. The kernel's last two parameters are cu_seqlens_q and total_q, the packed
// rows; q_len is the most of any sequence. Each work item reads its sequence's offsets
// b and b + 1, clamps them into [0, total_q) and its count to q_len, and skips the key
// tiles of a query chunk past that count; the consumers address q (and out) from the
// sequence's first packed row, not from b · q_len.
// RUN: attn-opt %s --attn-normalize --attn-select-schedule --attn-build-kernel --convert-attn-to-nvvm --convert-attnk-to-nvvm | FileCheck %s
// RUN: attn-opt %s --emit=launch | FileCheck %s --check-prefix=META
// RUN: attn-opt %s --attn-normalize --attn-select-schedule --attn-build-kernel | FileCheck %s --check-prefix=KERNEL

// CHECK-LABEL: llvm.func @ragged_prefill(
// CHECK-SAME: %[[Q:arg2]]: !llvm.ptr<1>
// CHECK-SAME: %[[QLEN:arg15]]: i32
// CHECK-SAME: %[[CU:arg18]]: !llvm.ptr<1>, %[[TOTAL:arg19]]: i32)
// The producer's work item: start = max(cu[b], 0), end = min(cu[b + 1], total_q),
// count = min(max(end − start, 0), q_len), first row = min(start, max(total_q − 1, 0)).
// CHECK: %[[P0:.+]] = llvm.getelementptr %[[CU]][%{{.+}}]
// CHECK-NEXT: %[[C0:.+]] = llvm.load %[[P0]] invariant
// CHECK: %[[START:.+]] = llvm.select %{{.+}}, %[[C0]], %{{.+}} : i1, i32
// CHECK: %[[P1:.+]] = llvm.getelementptr %[[CU]][%{{.+}}]
// CHECK-NEXT: %[[C1:.+]] = llvm.load %[[P1]] invariant
// CHECK-NEXT: %[[LT:.+]] = llvm.icmp "slt" %[[C1]], %[[TOTAL]] : i32
// CHECK-NEXT: %[[END:.+]] = llvm.select %[[LT]], %[[C1]], %[[TOTAL]] : i1, i32
// CHECK-NEXT: %[[DIFF:.+]] = llvm.sub %[[END]], %[[START]] : i32
// CHECK: %[[POS:.+]] = llvm.select %{{.+}}, %[[DIFF]], %{{.+}} : i1, i32
// CHECK-NEXT: %[[LE:.+]] = llvm.icmp "slt" %[[POS]], %[[QLEN]] : i32
// CHECK-NEXT: %[[COUNT:.+]] = llvm.select %[[LE]], %[[POS]], %[[QLEN]] : i1, i32
// A chunk from q0 on has tiles only below the count.
// CHECK: %[[HAS:.+]] = llvm.icmp "slt" %{{.+}}, %[[COUNT]] : i32
// CHECK-NEXT: %[[ZERO:.+]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: %{{.+}} = llvm.select %[[HAS]], %{{.+}}, %[[ZERO]] : i1, i32
// A consumer's query tile: row (first row + token) of q.
// CHECK: llvm.add %[[TOTAL]], %{{.+}} : i32
// CHECK: %[[LAST:.+]] = llvm.select %{{.+}}, %{{.+}}, %{{.+}} : i1, i32
// CHECK-NEXT: %[[IN:.+]] = llvm.icmp "slt" %[[FIRST:.+]], %[[LAST]] : i32
// CHECK-NEXT: %[[ROW0:.+]] = llvm.select %[[IN]], %[[FIRST]], %[[LAST]] : i1, i32
// CHECK-NEXT: llvm.ptrtoint
// CHECK: %[[ROW:.+]] = llvm.add %[[ROW0]], %{{.+}} : i32
// CHECK-NEXT: llvm.mlir.constant(16 : i32)
// CHECK-NEXT: %{{.+}} = llvm.mul %[[ROW]], %{{.+}} : i32
// CHECK: llvm.getelementptr %[[Q]][%{{.+}}]

// META: "params": [
// META: "block_table",
// META-NEXT: "num_slots",
// META-NEXT: "cu_seqlens_q",
// META-NEXT: "total_q"
// META-NEXT: ],
// META: "problem": {
// META: "q_len": -1,
// META: "ragged": true,

// The kernel level: the plan says ragged; the prologue takes the two parameters.
// KERNEL: #plan = {{.*}}ragged = true
// KERNEL-LABEL: attnk.kernel @ragged_prefill(
// KERNEL-SAME: %[[CU:[^:]+]]: memref<?xi32>, %[[TOTAL:[^:]+]]: i32) threads
// KERNEL: attnk.forward.prologue params({{.*}}, %[[CU]], %[[TOTAL]] :

func.func @ragged(%q: memref<1x?x16x128xbf16>, %k: memref<?x16x1x128xbf16>, %v: memref<?x16x1x128xbf16>,
                  %lens: memref<?xi32>, %pages: memref<?x80xi32>, %cu: memref<?xi32>,
                  %o: memref<1x?x16x128xbf16>) {
  attn.attention prefill ins(%q, %k, %v : memref<1x?x16x128xbf16>, memref<?x16x1x128xbf16>, memref<?x16x1x128xbf16>)
      seq_lens(%lens : memref<?xi32>) block_table(%pages : memref<?x80xi32>) cu_seqlens_q(%cu : memref<?xi32>)
      outs(%o : memref<1x?x16x128xbf16>) {causal, page_size = 16, target = #attn.target<sm_90a>}
  return
}
