// RUN: attn-opt %s --convert-attn-to-cpu | FileCheck %s
// RUN: attn-opt %s --emit=header | FileCheck %s --check-prefix=HEADER
// A CPU kernel's checking prologue: every buffer arrives as a fully dynamic strided memref whose
// descriptor is checked against the buffer's type (offset 0, static extents, dynamic ones within
// 2^48, row-major strides, at most 2^48 bytes, non-null unless empty), then the spec's extent
// relations over the dynamic extents are evaluated; the kernel returns -1, the number of the first
// failing relation, or — after running the unchanged body on the original types — 0.

// CHECK-LABEL: func.func @qdyn
// CHECK-SAME: (%[[SRC:.+]]: memref<?x?x?x?xf32, strided<[?, ?, ?, ?], offset: ?>>, %[[DST:.+]]: memref<?x?x?x?xi8, strided<[?, ?, ?, ?], offset: ?>>, %{{.+}}: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>) -> i32
// CHECK: %{{.*}}, %[[OFF:.+]], %[[SIZES:.+]]:4, %[[STRIDES:.+]]:4 = memref.extract_strided_metadata %[[SRC]]
// CHECK: %[[ORIG:.+]] = memref.reinterpret_cast %[[SRC]] to offset: [0], sizes: [%[[SIZES]]#0, %[[SIZES]]#1, 2, 64], strides: [%[[STRIDES]]#0, 128, 64, 1] {{.*}} to memref<?x?x2x64xf32>
// CHECK: %{{.*}}, %{{.*}}, %[[DSIZES:.+]]:4, %{{.*}}:4 = memref.extract_strided_metadata %[[DST]]
// Descriptor checks: offset 0, a static extent, row-major strides, null pointers.
// CHECK: arith.cmpi eq, %[[OFF]], %c0
// CHECK: arith.cmpi eq, %[[SIZES]]#3, %c64
// CHECK: arith.cmpi eq, %[[STRIDES]]#3, %c1
// CHECK: memref.extract_aligned_pointer_as_index %[[SRC]]
// Relation 1: dst's batch equals src's.
// CHECK: %[[R1:.+]] = arith.cmpi eq, %[[DSIZES]]#0, %[[SIZES]]#0 : index
// CHECK: %[[S1:.+]] = arith.select %[[R1]], %{{.*}}, %c1_i32 : i32
// CHECK: %[[S:.+]] = arith.select %{{.*}}, %[[S1]], %c-1_i32 : i32
// CHECK: %[[GO:.+]] = arith.cmpi eq, %[[S]], %c0_i32
// CHECK: cf.cond_br %[[GO]], ^[[BODY:.+]], ^[[REFUSE:.+]]
// CHECK: ^[[BODY]]:
// CHECK: memref.collapse_shape %[[ORIG]]
// CHECK: return %{{.*}} : i32
// CHECK: ^[[REFUSE]]:
// CHECK-NEXT: return %[[S]] : i32

// HEADER: /* qdyn — target avx2.
// HEADER:  *   check 1: arg1_dim0 == arg0_dim0  (attn.quantize.dynamic: 'dst' dim 0 must equal 'src' dim 0)
// HEADER-NEXT:  *   check 2: arg1_dim1 == arg0_dim1  (attn.quantize.dynamic: 'dst' dim 1 must equal 'src' dim 1)
// HEADER-NEXT:  *   check 3: arg2_dim0 == arg0_dim0  (attn.quantize.dynamic: 'scales' dim 0 must equal 'src' dim 0)
// HEADER-NEXT:  *   check 4: arg2_dim1 == arg0_dim1  (attn.quantize.dynamic: 'scales' dim 1 must equal 'src' dim 1)
// HEADER-NEXT:  */
// HEADER: static inline int32_t qdyn(
// HEADER:   if (!(arg2_dim1 == arg0_dim1))
// HEADER-NEXT:     return 4;
func.func @qdyn(%src: memref<?x?x2x64xf32>, %dst: memref<?x?x2x64xi8>, %scales: memref<?x?x2xf32>) {
  attn.quantize.dynamic ins(%src : memref<?x?x2x64xf32>) outs(%dst, %scales : memref<?x?x2x64xi8>, memref<?x?x2xf32>)
      {quant = #attn.quant<i8, per_token_head>, target = #attn.target<avx2>}
  return
}

// The NoMAD attention's relations: KV heads at least 1 before the query heads are divided by them,
// a positive multiple, `out` of the query's heads, no more values than the code blocks hold.
// HEADER: /* att — target avx2.
// HEADER:  *   check 1: arg1_dim0 >= 1  (attn.pq.attention: 'codebooks' dim 0 must be at least 1)
// HEADER-NEXT:  *   check 2: arg0_dim0 % arg1_dim0 == 0  (attn.pq.attention: 'query' dim 0 must be a multiple of 'codebooks' dim 0)
// HEADER:  *   check {{[0-9]+}}: arg5_dim0 == arg0_dim0  (attn.pq.attention: 'out' dim 0 must equal 'query' dim 0)
// HEADER:  *   check {{[0-9]+}}: arg3_dim0 <= arg2_dim1 * 32  (attn.pq.attention: 'values' dim 0 must be at most 'codes' dim 1 * 32)
// CHECK-LABEL: func.func @att
// CHECK: arith.maxui %{{.*}}, %c1
// CHECK: arith.remui
func.func @att(%q: memref<?x64xf32>, %b: memref<?x32x16x2xf32>, %c: memref<?x?x32x16xui8>,
               %v: memref<?x?x64xf32>, %n: index, %o: memref<?x64xf32>) {
  attn.pq.attention ins(%q, %b, %c, %v : memref<?x64xf32>, memref<?x32x16x2xf32>,
                        memref<?x?x32x16xui8>, memref<?x?x64xf32>)
      length(%n) outs(%o : memref<?x64xf32>) {pq = #attn.pq<dsub = 2>, target = #attn.target<avx2>}
  return
}

// Scratch on the heap (the attention's): what uses it runs only when every allocation succeeded;
// otherwise the kernel returns -2.
// CHECK: memref.alloc
// CHECK: %[[OK:.+]] = scf.if %{{.+}} -> (i32)
// CHECK: } else {
// CHECK-NEXT: %[[OOM:.+]] = arith.constant -2 : i32
// CHECK-NEXT: scf.yield %[[OOM]]
// CHECK: memref.dealloc
// CHECK: return %[[OK]] : i32

// A kernel of several ops: the C interface takes descriptor pointers, calls the unoptimized
// `<kernel>.check<j>` in order — the descriptors of up to 16 buffers each, then up to 32 relations
// each over the buffers they name (relations 1-4 are the quantize's, 5 on the attention's) — and
// returns the first nonzero status, then calls each op's function with its own buffers; a failing
// allocation of one op ends the kernel with its status. `<kernel>` keeps the unpacked ABI and
// forwards to the C interface.
// CHECK-LABEL: func.func @_mlir_ciface_two(
// CHECK-SAME: %[[P0:.+]]: !llvm.ptr, %[[P1:.+]]: !llvm.ptr, %[[P2:.+]]: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %[[N:.+]]: index, %[[P8:.+]]: !llvm.ptr) -> i32
// CHECK: %[[D:.+]] = call @two.check0(%[[P0]], %[[P1]], %[[P2]], {{.*}}, %[[P8]])
// CHECK: cf.cond_br %{{.+}}, ^[[REL:.+]], ^[[REFUSE_D:[a-z0-9]+]]
// CHECK: ^[[GO2:.+]]:  // pred: ^[[REL]]
// CHECK-NEXT: call @two.op0(%[[P0]], %[[P1]], %[[P2]]) : (!llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
// CHECK-NEXT: %[[S1:.+]] = call @two.op1({{.*}}%[[N]]{{.*}}) : ({{.*}}) -> i32
// CHECK: cf.cond_br %{{.+}}, ^{{.+}}, ^
// CHECK: ^[[REFUSE_D]]:
// CHECK-NEXT: return %[[D]] : i32
// CHECK: ^[[REL]]:
// CHECK-NEXT: %[[R:.+]] = call @two.check1(%[[P0]], %[[P1]], %[[P2]], {{.*}}, %[[P8]])
// CHECK: cf.cond_br %{{.+}}, ^[[GO2]], ^[[REFUSE_R:[a-z0-9]+]]
// CHECK: ^[[REFUSE_R]]:
// CHECK-NEXT: return %[[R]] : i32
// CHECK-LABEL: func.func @two(
// CHECK: call @_mlir_ciface_two(
// CHECK-LABEL: func.func private @two.check0(
// CHECK-SAME: -> i32 attributes {passthrough = ["noinline", "optnone"]}
// CHECK: arith.constant -1 : i32
// CHECK-LABEL: func.func private @two.check1(
// CHECK-SAME: -> i32 attributes {passthrough = ["noinline", "optnone"]}
// CHECK-NOT: arith.constant -1 : i32
// CHECK: arith.constant 5 : i32
// CHECK: arith.constant 4 : i32
// CHECK: arith.constant 1 : i32
// CHECK-NOT: arith.constant -1 : i32
// CHECK-LABEL: func.func private @two.op0(
// CHECK-SAME: attributes {passthrough = ["noinline"]}
// CHECK: llvm.load
// CHECK-LABEL: func.func private @two.op1(
// CHECK-SAME: -> i32 attributes {passthrough = ["noinline"]}
func.func @two(%src: memref<?x?x2x64xf32>, %dst: memref<?x?x2x64xi8>, %scales: memref<?x?x2xf32>,
               %q: memref<?x64xf32>, %b: memref<?x32x16x2xf32>, %c: memref<?x?x32x16xui8>,
               %v: memref<?x?x64xf32>, %n: index, %o: memref<?x64xf32>) {
  attn.quantize.dynamic ins(%src : memref<?x?x2x64xf32>) outs(%dst, %scales : memref<?x?x2x64xi8>, memref<?x?x2xf32>)
      {quant = #attn.quant<i8, per_token_head>, target = #attn.target<avx2>}
  attn.pq.attention ins(%q, %b, %c, %v : memref<?x64xf32>, memref<?x32x16x2xf32>,
                        memref<?x?x32x16xui8>, memref<?x?x64xf32>)
      length(%n) outs(%o : memref<?x64xf32>) {pq = #attn.pq<dsub = 2>, target = #attn.target<avx2>}
  return
}
