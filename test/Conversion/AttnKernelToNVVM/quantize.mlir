// The quantize ops lower to one slot of the quantize kernel, with the data flow of the kernel
// level kept: the loaded chunk is widened, the scale is reduced from the loaded values (through
// the finiteness test), its reciprocal multiplies the NaN-as-0 values, the codes stored are the
// rounded products, and the scale stored is the scale computed.
// RUN: attn-opt %s -split-input-file --convert-attnk-to-nvvm | FileCheck %s

// CHECK-LABEL: llvm.func @q(
// CHECK-SAME: %[[SRC:[^:]+]]: !llvm.ptr<1>, %[[POS:[^:]+]]: !llvm.ptr<1>, %[[DST:[^:]+]]: !llvm.ptr<1>, %[[SC:[^:]+]]: !llvm.ptr<1>, %{{[^:]+}}: !llvm.ptr<1>, %[[B:[^:]+]]: i32, %[[N:[^:]+]]: i32, %[[CAP:[^:]+]]: i32)
// group_index: the lane's rank in its group and the clamped group.
// CHECK: %[[TID:.+]] = nvvm.read.ptx.sreg.tid.x
// CHECK: %[[LANE:.+]] = llvm.and %[[TID]]
// CHECK: %[[SLOT:.+]] = llvm.udiv %[[LANE]]
// CHECK: %[[RANK:.+]] = llvm.urem %[[LANE]]
// CHECK: %[[NB:.+]] = llvm.mul %[[B]], %[[N]]
// CHECK: nvvm.read.ptx.sreg.ctaid.x
// CHECK: %[[G:.+]] = llvm.add %{{.+}}, %[[SLOT]] : i32
// CHECK: %[[GL:.+]] = llvm.select %{{.+}}, %[[G]], %{{.+}} : i1, i32
// CHECK: %[[TOK:.+]] = llvm.udiv %[[GL]]
// CHECK: %[[GIN:.+]] = llvm.urem %[[GL]]
// load_groups: one 16-byte load from the source.
// CHECK: %[[ADDR:.+]] = llvm.getelementptr %[[SRC]]
// CHECK: %[[RAW:.+]] = llvm.load %[[ADDR]] invariant {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// convert_tile: widened, and NaN as 0.
// CHECK: %[[F:.+]] = llvm.fpext %[[RAW]] : vector<8xbf16> to vector<8xf32>
// CHECK: %[[X0:.+]] = llvm.extractelement %[[F]]
// CHECK: %[[NAN0:.+]] = llvm.fcmp "uno" %[[X0]], %[[X0]]
// CHECK: %[[XC0:.+]] = llvm.select %[[NAN0]], %{{.+}}, %[[X0]]
// group_scales: amax over the finite loaded values, across 16 lanes, / 127, at least 1e-8.
// CHECK: %[[A0:.+]] = llvm.intr.fabs(%[[X0]])
// CHECK-COUNT-4: nvvm.shfl.sync  bfly
// CHECK: %[[AMAX:.+]] = llvm.intr.maxnum
// CHECK-NEXT: %[[Q127:.+]] = llvm.mlir.constant(1.270000e+02 : f32)
// CHECK-NEXT: %[[DIV:.+]] = llvm.fdiv %[[AMAX]], %[[Q127]]
// CHECK: %[[S:.+]] = llvm.intr.maxnum(%[[DIV]], %{{.+}})
// quantize_tile: the scale computed feeds the reciprocal that multiplies the NaN-as-0 value.
// CHECK: %[[INV:.+]] = llvm.call_intrinsic "llvm.nvvm.rcp.rn.f"(%[[S]])
// CHECK: %[[Y0:.+]] = llvm.fmul %[[XC0]], %[[INV]]
// CHECK: %[[LO:.+]] = llvm.intr.maxnum(%[[Y0]], %{{.+}})
// CHECK: %[[HI:.+]] = llvm.intr.minnum(%[[LO]], %{{.+}})
// CHECK: %[[HALF:.+]] = llvm.intr.copysign(%{{.+}}, %[[HI]])
// CHECK: %[[R:.+]] = llvm.fadd %[[HI]], %[[HALF]]
// CHECK: %[[I:.+]] = llvm.fptosi %[[R]] : f32 to i32
// CHECK: %[[C0:.+]] = llvm.trunc %[[I]] : i32 to i8
// store_groups: row positions[b] + t, in range; the codes stored are the converted ones; lane 0
// stores the scale computed.
// CHECK: %[[BIDX:.+]] = llvm.udiv %[[TOK]], %[[N]]
// CHECK: %[[T:.+]] = llvm.urem %[[TOK]], %[[N]]
// CHECK: %[[P:.+]] = llvm.load %{{.+}} invariant {alignment = 4 : i64} : !llvm.ptr<1> -> i32
// CHECK: %[[ROW:.+]] = llvm.add %[[P]], %[[T]]
// CHECK: %[[INB:.+]] = llvm.icmp "slt" %[[G]]
// CHECK: %[[INR:.+]] = llvm.icmp "slt" %[[ROW]], %[[CAP]]
// CHECK: scf.if
// CHECK: %[[V:.+]] = llvm.insertelement %[[C0]], %{{.+}}[%{{.+}} : i32] : vector<8xi8>
// CHECK: %[[OUT:.+]] = llvm.getelementptr %[[DST]]
// CHECK: llvm.store %{{.+}}, %[[OUT]] {alignment = 8 : i64} : vector<8xi8>, !llvm.ptr<1>
// CHECK: llvm.icmp "eq" %[[RANK]]
// CHECK: %[[SADDR:.+]] = llvm.getelementptr %[[SC]]
// CHECK: llvm.store %[[S]], %[[SADDR]] {alignment = 4 : i64} : f32, !llvm.ptr<1>
// CHECK: llvm.return
gpu.module @attn_kernels {
attnk.kernel @q(%src: memref<?x?x8x128xbf16>, %pos: memref<?xi32>, %dst: memref<?x?x8x128xi8>, %sc: memref<?x?x8xf32>, %zp: memref<?xi8>, %b: i32, %n: i32, %cap: i32) threads = 128 {
  %g, %tok, %gin, %r = attnk.group_index %b, %n slot 0 of 1 lanes = 16 groups_per_token = 8
  %x = attnk.load_groups %src[%tok, %gin] lane(%r) lanes = 16 : memref<?x?x8x128xbf16> -> vector<1x8xbf16>
  %w = attnk.convert_tile %x : vector<1x8xbf16> -> !attnk.groups<128xf32, lanes = 16, vec = 8>
  %s = attnk.group_scales %w {quant = #attn.quant<i8, per_token_head>} : !attnk.groups<128xf32, lanes = 16, vec = 8> -> f32
  %q = attnk.quantize_tile %w scales(%s : f32) {quant = #attn.quant<i8, per_token_head>} : !attnk.groups<128xf32, lanes = 16, vec = 8> -> !attnk.groups<128xi8, lanes = 16, vec = 8>
  attnk.store_groups %q, %dst[%g, %tok, %gin] lane(%r) tokens(%b, %n) capacity(%cap) positions(%pos : memref<?xi32>) scale(%s into %sc : memref<?x?x8xf32>) : !attnk.groups<128xi8, lanes = 16, vec = 8>, memref<?x?x8x128xi8>
}
}

// -----

// Static asymmetric per_head scales are read (scale and zero point at the group's head), the
// zero point is added before clamping.
// CHECK-LABEL: llvm.func @static_asym(
// CHECK-SAME: %{{[^:]+}}: !llvm.ptr<1>, %[[SC:[^:]+]]: !llvm.ptr<1>, %[[ZP:[^:]+]]: !llvm.ptr<1>
// CHECK: %[[SADDR:.+]] = llvm.getelementptr %[[SC]]
// CHECK: %[[S:.+]] = llvm.load %[[SADDR]] invariant {alignment = 4 : i64} : !llvm.ptr<1> -> f32
// CHECK: %[[ZADDR:.+]] = llvm.getelementptr %[[ZP]]
// CHECK: %[[ZB:.+]] = llvm.load %[[ZADDR]] invariant {alignment = 1 : i64} : !llvm.ptr<1> -> i8
// CHECK: %[[Z:.+]] = llvm.uitofp %[[ZB]] : i8 to f32
// CHECK: %[[INV:.+]] = llvm.call_intrinsic "llvm.nvvm.rcp.rn.f"(%[[S]])
// CHECK: %[[Y:.+]] = llvm.fmul %{{.+}}, %[[INV]]
// CHECK: llvm.fadd %[[Y]], %[[Z]]
gpu.module @k {
attnk.kernel @static_asym(%src: memref<?x?x8x128xbf16>, %sc: memref<8xf32>, %zp: memref<8xui8>, %tok: i32, %gin: i32, %r: i32) threads = 128 {
  %x = attnk.load_groups %src[%tok, %gin] lane(%r) lanes = 16 : memref<?x?x8x128xbf16> -> vector<1x8xbf16>
  %w = attnk.convert_tile %x : vector<1x8xbf16> -> !attnk.groups<128xf32, lanes = 16, vec = 8>
  %s, %z = attnk.group_scales %w[%gin] from(%sc : memref<8xf32>) zero_points(%zp : memref<8xui8>) {quant = #attn.quant<ui8, per_head, asymmetric>} : !attnk.groups<128xf32, lanes = 16, vec = 8> -> f32, f32
  %q = attnk.quantize_tile %w scales(%s : f32) zero_points(%z : f32) {quant = #attn.quant<ui8, per_head, asymmetric>} : !attnk.groups<128xf32, lanes = 16, vec = 8> -> !attnk.groups<128xui8, lanes = 16, vec = 8>
}
}

// -----

// attnk.hadamard: non-finite values become 0, lane butterflies pick their side from the lane's
// rank, every value ends multiplied by 1/√64, and the scale reduction reads the rotated values.
// CHECK-LABEL: llvm.func @had(
// CHECK-SAME: %[[R:[^:]+]]: i32)
// CHECK: %[[F:.+]] = llvm.fpext %{{.+}} : vector<8xf16> to vector<8xf32>
// CHECK: %[[X0:.+]] = llvm.extractelement %[[F]]
// CHECK: %[[A0:.+]] = llvm.intr.fabs(%[[X0]])
// CHECK: %[[FIN0:.+]] = llvm.fcmp "olt" %[[A0]]
// CHECK: llvm.select %[[FIN0]], %[[X0]], %{{.+}} : i1, f32
// CHECK: %[[BIT:.+]] = llvm.and %[[R]], %{{.+}} : i32
// CHECK: %[[UP:.+]] = llvm.icmp "ne" %[[BIT]]
// CHECK: llvm.select %[[UP]]
// CHECK: nvvm.shfl.sync  bfly
// CHECK: %[[NORM:.+]] = llvm.mlir.constant(1.250000e-01 : f32)
// CHECK-NEXT: %[[Y0:.+]] = llvm.fmul %{{.+}}, %[[NORM]]
// CHECK: llvm.intr.fabs(%[[Y0]])
gpu.module @k {
attnk.kernel @had(%src: memref<?x?x1x64xf16>, %tok: i32, %gin: i32, %r: i32) threads = 128 {
  %x = attnk.load_groups %src[%tok, %gin] lane(%r) lanes = 8 : memref<?x?x1x64xf16> -> vector<1x8xf16>
  %w = attnk.convert_tile %x : vector<1x8xf16> -> !attnk.groups<64xf32, lanes = 8, vec = 8>
  %h = attnk.hadamard %w lane(%r) size = 64 : !attnk.groups<64xf32, lanes = 8, vec = 8>
  %s = attnk.group_scales %h {quant = #attn.quant<i8, per_token_head>} : !attnk.groups<64xf32, lanes = 8, vec = 8> -> f32
}
}
