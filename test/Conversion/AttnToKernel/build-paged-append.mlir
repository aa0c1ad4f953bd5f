// attn.quantize.append_paged through the kernel level: attn-build-kernel makes `<f>_quantize`
// over T sequences of one token (the row count and the pool's slot count are the parameters),
// its store takes the rows from the slot mapping; convert-attnk-to-nvvm loads the token's slot
// (i64, or i32 sign-extended), keeps a row whose slot is in [0, num_slots) and writes its codes at
// slot · H · D + group · C of the pool and its scale at slot · groups_per_token + group.
// RUN: attn-opt %s -split-input-file --attn-build-kernel | FileCheck %s --check-prefix=KL
// RUN: attn-opt %s -split-input-file --attn-build-kernel --convert-attnk-to-nvvm | FileCheck %s

// KL: attnk.kernel @kv_paged_quantize(%[[SRC:.+]]: memref<?x8x128xbf16>, %[[SLOTS:.+]]: memref<?xi64>, %[[DST:.+]]: memref<?x16x8x128xi8>, %[[SC:.+]]: memref<?x16x8xf32>, %{{.+}}: memref<?xi8>, %[[T:.+]]: i32, %[[NS:.+]]: i32) threads = 128 attributes {launch = #attnk.launch<quantize, grid = ["slot_quantize_ctas", 1, 1], block = [128, 1, 1], cluster = [1, 1, 1], smem = 0, params = ["src", "slot_mapping", "dst", "scales", "zeros", "num_tokens", "num_slots"]>, metadata = {problem = {{.*}}kind = "quantize_append_paged", num_pages = -1 : i64, num_tokens = -1 : i64, page_size = 16 : i64{{.*}}slot_dtype = "i64"
// KL-NEXT: %[[ONE:.+]] = arith.constant 1 : i32
// KL-NEXT: %[[G0:.+]], %[[T0:.+]], %[[I0:.+]], %[[R0:.+]] = attnk.group_index %[[T]], %[[ONE]] slot 0 of 4 lanes = 16 groups_per_token = 8
// KL-NEXT: attnk.load_groups %[[SRC]][%[[T0]], %[[I0]]] lane(%[[R0]]) lanes = 16 : memref<?x8x128xbf16> -> vector<1x8xbf16>
// KL: %[[S0:.+]] = attnk.group_scales
// KL-NEXT: %[[Q0:.+]] = attnk.quantize_tile
// KL-NEXT: attnk.store_groups %[[Q0]], %[[DST]][%[[G0]], %[[T0]], %[[I0]]] lane(%[[R0]]) tokens(%[[T]], %[[ONE]]) capacity(%[[NS]]) slots(%[[SLOTS]] : memref<?xi64>) scale(%[[S0]] into %[[SC]] : memref<?x16x8xf32>)

// CHECK-LABEL: llvm.func @kv_paged_quantize(
// CHECK-SAME: %[[SRC:[^:]+]]: !llvm.ptr<1>, %[[SLOTS:[^:]+]]: !llvm.ptr<1>, %[[DST:[^:]+]]: !llvm.ptr<1>, %[[SC:[^:]+]]: !llvm.ptr<1>, %{{[^:]+}}: !llvm.ptr<1>, %[[T:[^:]+]]: i32, %[[NS:[^:]+]]: i32)
// The group, its token and its group in the token (the clamped group).
// CHECK: %[[GL:.+]] = llvm.select %{{.+}}, %[[G:[^,]+]], %{{.+}} : i1, i32
// CHECK: %[[TOK:.+]] = llvm.udiv %[[GL]]
// CHECK: %[[GIN:.+]] = llvm.urem %[[GL]]
// The token's slot: slot_mapping[token], 8 bytes each (after slot 0's codes).
// CHECK: llvm.fptosi
// CHECK: %{{.+}} = llvm.mul %[[T]], %{{.+}} : i32
// CHECK: %[[TOK64:.+]] = llvm.zext %[[TOK]] : i32 to i64
// CHECK-NEXT: %[[EIGHT:.+]] = llvm.mlir.constant(8 : i64) : i64
// CHECK-NEXT: %[[SOFF:.+]] = llvm.mul %[[TOK64]], %[[EIGHT]] : i64
// CHECK-NEXT: %[[SADDR:.+]] = llvm.getelementptr %[[SLOTS]][%[[SOFF]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i8
// CHECK-NEXT: %[[SLOT:.+]] = llvm.load %[[SADDR]] invariant {alignment = 8 : i64} : !llvm.ptr<1> -> i64
// In range: a group of the launch, 0 <= slot < num_slots (64-bit compares).
// CHECK-NEXT: %[[INB:.+]] = llvm.icmp "slt" %[[G]]
// CHECK-NEXT: %[[ZERO:.+]] = llvm.mlir.constant(0 : i64) : i64
// CHECK-NEXT: %[[GE:.+]] = llvm.icmp "sge" %[[SLOT]], %[[ZERO]] : i64
// CHECK-NEXT: %[[CAP:.+]] = llvm.zext %[[NS]] : i32 to i64
// CHECK-NEXT: %[[LT:.+]] = llvm.icmp "slt" %[[SLOT]], %[[CAP]] : i64
// CHECK-NEXT: %[[IN:.+]] = llvm.and %[[GE]], %[[LT]] : i1
// CHECK-NEXT: %[[OK:.+]] = llvm.and %[[INB]], %[[IN]] : i1
// CHECK-NEXT: scf.if %[[OK]] {
// Codes at slot · 1024 + group · 128 (+ the lane's elements) of the pool.
// CHECK-NEXT: %[[HD:.+]] = llvm.mlir.constant(1024 : i64) : i64
// CHECK-NEXT: %[[ROW:.+]] = llvm.mul %[[SLOT]], %[[HD]] : i64
// CHECK-NEXT: %[[C:.+]] = llvm.mlir.constant(128 : i32) : i32
// CHECK-NEXT: %[[GC:.+]] = llvm.mul %[[GIN]], %[[C]] : i32
// CHECK-NEXT: %[[GC64:.+]] = llvm.zext %[[GC]] : i32 to i64
// CHECK-NEXT: %[[BASE:.+]] = llvm.add %[[ROW]], %[[GC64]] : i64
// CHECK: %[[E:.+]] = llvm.add %[[BASE]], %{{.+}} : i64
// CHECK: %[[OUT:.+]] = llvm.getelementptr %[[DST]][%[[E]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i8
// CHECK-NEXT: llvm.store %{{.+}}, %[[OUT]] {alignment = 8 : i64} : vector<8xi8>, !llvm.ptr<1>
// The scale at slot · 8 + group (f32).
// CHECK: scf.if
// CHECK-NEXT: %[[GPT:.+]] = llvm.mlir.constant(8 : i64) : i64
// CHECK-NEXT: %[[SROW:.+]] = llvm.mul %[[SLOT]], %[[GPT]] : i64
// CHECK-NEXT: %[[GIN64:.+]] = llvm.zext %[[GIN]] : i32 to i64
// CHECK-NEXT: %[[IDX:.+]] = llvm.add %[[SROW]], %[[GIN64]] : i64
// CHECK-NEXT: %[[FOUR:.+]] = llvm.mlir.constant(4 : i64) : i64
// CHECK-NEXT: %[[SB:.+]] = llvm.mul %[[IDX]], %[[FOUR]] : i64
// CHECK-NEXT: %[[SOUT:.+]] = llvm.getelementptr %[[SC]][%[[SB]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i8
// CHECK-NEXT: llvm.store %{{.+}}, %[[SOUT]] {alignment = 4 : i64} : f32, !llvm.ptr<1>
func.func @kv_paged(%src: memref<?x8x128xbf16>, %slots: memref<?xi64>, %dst: memref<?x16x8x128xi8>, %scales: memref<?x16x8xf32>) {
  attn.quantize.append_paged ins(%src : memref<?x8x128xbf16>) slot_mapping(%slots : memref<?xi64>)
      outs(%dst, %scales : memref<?x16x8x128xi8>, memref<?x16x8xf32>)
      {page_size = 16, quant = #attn.quant<i8, per_token_head>, target = #attn.target<sm_90a>}
  return
}

// -----

// i32 slots are sign-extended before the range test (a -1 stays negative); zero points of an
// asymmetric per_group scheme go to the same slot.
// KL: attnk.kernel @kv_paged32_quantize({{.*}}memref<?xi32>{{.*}}slot_dtype = "i32"
// KL: attnk.store_groups {{.*}} slots(%{{.+}} : memref<?xi32>) scale({{.*}}) zero_point(
// CHECK-LABEL: llvm.func @kv_paged32_quantize(
// CHECK-SAME: %{{[^:]+}}: !llvm.ptr<1>, %[[SLOTS:[^:]+]]: !llvm.ptr<1>,
// CHECK: %[[SADDR:.+]] = llvm.getelementptr %[[SLOTS]][%{{.+}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i8
// CHECK-NEXT: %[[S32:.+]] = llvm.load %[[SADDR]] invariant {alignment = 4 : i64} : !llvm.ptr<1> -> i32
// CHECK-NEXT: %[[SLOT:.+]] = llvm.sext %[[S32]] : i32 to i64
// CHECK: llvm.icmp "sge" %[[SLOT]], %{{.+}} : i64
// CHECK: llvm.mul %[[SLOT]], %{{.+}} : i64
func.func @kv_paged32(%src: memref<?x8x128xbf16>, %slots: memref<?xi32>, %dst: memref<?x64x8x128xui8>, %scales: memref<?x64x8x2xf32>, %zeros: memref<?x64x8x2xui8>) {
  attn.quantize.append_paged ins(%src : memref<?x8x128xbf16>) slot_mapping(%slots : memref<?xi32>)
      outs(%dst, %scales : memref<?x64x8x128xui8>, memref<?x64x8x2xf32>) zeros(%zeros : memref<?x64x8x2xui8>)
      {page_size = 64, quant = #attn.quant<ui8, per_group<64>, asymmetric>, target = #attn.target<sm_90a>}
  return
}
