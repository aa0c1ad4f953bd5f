// attnk.kernel becomes an llvm.func kernel in place (parameters as global pointers, block size,
// griddepcontrol.wait first when launched as a programmatic dependent, launch metadata), and
// attnk.merge.combine the merge of the split partials: each split's weight 2^(m_s − max m)
// (0 past the last split) multiplies its O and its l, the output is O / Σ w·l rounded to bf16.
// RUN: attn-opt %s -split-input-file --convert-attnk-to-nvvm | FileCheck %s

// CHECK-LABEL: gpu.module @attn_kernels
// CHECK-NEXT: llvm.func @d_combine(%[[WS:[^:]+]]: !llvm.ptr<1>, %[[OUT:[^:]+]]: !llvm.ptr<1>, %{{[^:]+}}: i32, %[[N:[^:]+]]: i32) attributes {nvvm.kernel, nvvm.maxntid = array<i32: 128, 1, 1>}
// CHECK-NEXT: nvvm.griddepcontrol  wait
// Lane s holds split s's m (−∞ past the last split) and l.
// CHECK: %[[LANE:.+]] = llvm.and %{{.+}}, %{{.+}} : i32
// CHECK: %[[VALID:.+]] = llvm.icmp "slt" %[[LANE]], %[[N]]
// CHECK: %[[MLOAD:.+]] = llvm.load %{{.+}} {alignment = 4 : i64} : !llvm.ptr<1> -> f32
// CHECK: %[[M:.+]] = llvm.select %[[VALID]], %[[MLOAD]], %{{.+}} : i1, f32
// CHECK: %[[L:.+]] = llvm.load %{{.+}} {alignment = 4 : i64} : !llvm.ptr<1> -> f32
// The weight: 2^(m − max over the warp), 0 for lanes past the last split; Σ w · l over the warp.
// CHECK: %[[MMAX:.+]] = llvm.select %{{.+}}, %{{.+}}, %{{.+}} : i1, f32
// CHECK-NEXT: %[[D:.+]] = llvm.fsub %[[M]], %[[MMAX]]
// CHECK-NEXT: %[[E:.+]] = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"(%[[D]])
// CHECK: %[[W:.+]] = llvm.select %[[VALID]], %[[E]], %{{.+}} : i1, f32
// CHECK-NEXT: %[[WL:.+]] = llvm.fmul %[[W]], %[[L]]
// CHECK: llvm.fadd %[[WL]], %{{.+}} : f32
// Split 0's weight, broadcast, multiplies split 0's O.
// CHECK: %[[W0:.+]] = nvvm.shfl.sync  idx %{{.+}}, %[[W]], %{{.+}}, %{{.+}} : f32 -> f32
// CHECK: llvm.intr.fma(%[[W0]], %{{.+}}, %{{.+}})
// CHECK: %[[RCP:.+]] = llvm.fdiv %{{.+}}, %{{.+}} : f32
// CHECK: %[[INV:.+]] = llvm.select %{{.+}}, %[[RCP]], %{{.+}} : i1, f32
// The stored words are the normalized sums, rounded to bf16, into the output.
// CHECK: scf.if
// CHECK: %[[O0:.+]] = llvm.fmul %{{.+}}, %[[INV]]
// CHECK: %[[P:.+]] = llvm.insertelement %[[O0]]
// CHECK: %[[BF:.+]] = llvm.fptrunc %{{.+}} : vector<2xf32> to vector<2xbf16>
// CHECK: %[[WORD:.+]] = llvm.bitcast %[[BF]] : vector<2xbf16> to i32
// CHECK: %[[DST:.+]] = llvm.getelementptr %[[OUT]]
// CHECK: llvm.store %[[WORD]], %[[DST]] {alignment = 4 : i64} : i32, !llvm.ptr<1>
// CHECK: llvm.return
gpu.module @attn_kernels {
  attnk.kernel @d_combine(%ws: memref<?xf32>, %out: memref<?x1x16x64xbf16>, %b: i32, %n: i32) threads = 128 programmatic {
    attnk.merge.combine %ws into %out splits(%n) narrow kv_heads = 2 pack = 8 : memref<?xf32>, memref<?x1x16x64xbf16>
  }
}

// -----

// The wide form: the dynamic shared memory symbol is declared once, the warps meet behind a CTA
// barrier; a kernel without `programmatic` does not wait, and its metadata and launch ABI become
// the launch JSON: the spec's entries, then the kernel's entry (name, block, extra entries).
// CHECK-LABEL: gpu.module @attn_kernels
// CHECK: llvm.mlir.global external @__attn_dynamic_smem() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>
// CHECK: llvm.func @d_combine_wide({{.*}}) attributes {attn.launch = "{\0A  \22arch\22: 90,\0A  \22format\22: \22attn-launch-v1\22,\0A  \22kernels\22: [\0A    {\0A      \22block\22: [\0A        512,\0A        1,\0A        1\0A      ],{{.*}}\22grid\22: [\0A        \22rows\22,{{.*}}\22min_splits\22: 17,\0A      \22name\22: \22d_combine_wide\22,\0A      \22params\22: [\0A        \22workspace\22,{{.*}}\22smem_bytes\22: 1024\0A    }\0A  ],\0A  \22problem\22: {\0A    \22kind\22: \22test\22\0A  }\0A}\0A", nvvm.kernel, nvvm.maxntid = array<i32: 512, 1, 1>}
// CHECK-NOT: griddepcontrol
// CHECK: scf.for
// CHECK: llvm.mlir.addressof @__attn_dynamic_smem
// CHECK: nvvm.barrier
// CHECK: llvm.return
gpu.module @attn_kernels {
  attnk.kernel @d_combine_wide(%ws: memref<?xf32>, %out: memref<?x1x16x128xbf16>, %b: i32, %n: i32) threads = 512 attributes {launch = #attnk.launch<combine, grid = ["rows", "groups", "batch"], block = [512, 1, 1], cluster = [1, 1, 1], smem = 1024, params = ["workspace", "out", "batch", "num_splits"], extra = {min_splits = 17 : i64}>, metadata = {problem = {kind = "test"}}} {
    attnk.merge.combine %ws into %out splits(%n) wide kv_heads = 2 pack = 8 : memref<?xf32>, memref<?x1x16x128xbf16>
  }
}
