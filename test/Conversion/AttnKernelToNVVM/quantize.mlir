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

// -----

// The whole-token row forms (MLA's cache quantization): the warp's token and lane feed the row
// guard; the loads read the source row at lane · 16 elements, widened as each vector comes; the
// tile's amax is reduced over its 8 lanes from the NaN-as-0 values; its reciprocal scales the
// codes stored as words into the cache row; the scale computed is what the tile's first lane
// stores after the codes; the RoPE part is rounded to bf16 and stored after the scales.
// CHECK-LABEL: llvm.func @m_quantize(
// CHECK-SAME: %[[SRC:[^:]+]]: !llvm.ptr<1>, %[[POS:[^:]+]]: !llvm.ptr<1>, %[[CACHE:[^:]+]]: !llvm.ptr<1>, %[[B:[^:]+]]: i32, %[[N:[^:]+]]: i32, %[[CAP:[^:]+]]: i32)
// CHECK: %[[TID:.+]] = nvvm.read.ptx.sreg.tid.x
// CHECK: %[[WARP:.+]] = llvm.lshr %[[TID]]
// CHECK: %[[LANE:.+]] = llvm.and %[[TID]]
// CHECK: %[[CTA:.+]] = nvvm.read.ptx.sreg.ctaid.x
// CHECK: %[[C4:.+]] = llvm.mul %[[CTA]]
// CHECK: %[[TOK:.+]] = llvm.add %[[C4]], %[[WARP]] : i32
// token_rows: the batch element and the validity of the token, then its cache row.
// CHECK: %[[BIDX:.+]] = llvm.udiv %[[TOK]]
// CHECK: %[[I:.+]] = llvm.urem %[[TOK]]
// CHECK: %[[NB:.+]] = llvm.mul %[[B]], %[[N]]
// CHECK: %[[VALID:.+]] = llvm.icmp "slt" %[[TOK]], %[[NB]]
// CHECK: scf.if %[[VALID]] {
// CHECK: %[[BX:.+]] = llvm.zext %[[BIDX]] : i32 to i64
// CHECK: %[[PADDR:.+]] = llvm.getelementptr %[[POS]]
// CHECK: %[[P:.+]] = llvm.load %[[PADDR]] invariant
// CHECK: %[[ROW:.+]] = llvm.add %[[P]], %[[I]] : i32
// CHECK: %[[INCACHE:.+]] = llvm.and
// CHECK: scf.if %[[INCACHE]] {
// CHECK: %[[SROW:.+]] = llvm.getelementptr %[[SRC]]
// CHECK: %[[DROW:.+]] = llvm.getelementptr %[[CACHE]]
// load_groups: lane · 32 bytes into the source row, two 16-byte loads, each widened.
// CHECK: %[[LOFF:.+]] = llvm.mul %[[LANE]], %{{.+}} : i32
// CHECK: %[[LOFF64:.+]] = llvm.zext %[[LOFF]]
// CHECK: %[[LBASE:.+]] = llvm.getelementptr %[[SROW]][%[[LOFF64]]]
// CHECK: %[[V0:.+]] = llvm.load %[[LBASE]] invariant {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// CHECK: %[[E0:.+]] = llvm.extractelement %[[V0]]
// CHECK: %[[X0:.+]] = llvm.fpext %[[E0]] : bf16 to f32
// CHECK: llvm.load %{{.+}} invariant {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// group_scales: the NaN-as-0 value's magnitude enters the amax; 3 shuffles over 8 lanes.
// CHECK: %[[NAN0:.+]] = llvm.fcmp "uno" %[[X0]], %[[X0]]
// CHECK: %[[XC0:.+]] = llvm.select %[[NAN0]], %{{.+}}, %[[X0]]
// CHECK: %[[A0:.+]] = llvm.intr.fabs(%[[XC0]])
// CHECK-COUNT-3: nvvm.shfl.sync  bfly
// CHECK-NOT: nvvm.shfl.sync
// CHECK: %[[AMAX:.+]] = llvm.intr.maxnum
// CHECK: %[[DIV:.+]] = llvm.fdiv %[[AMAX]]
// CHECK: %[[S:.+]] = llvm.intr.maxnum(%[[DIV]], %{{.+}})
// quantize_tile: 1/s times the NaN-as-0 values, e4m3 pairs, words.
// CHECK: %[[INV:.+]] = llvm.call_intrinsic "llvm.nvvm.rcp.rn.f"(%[[S]])
// CHECK: %[[NANB:.+]] = llvm.fcmp "uno" %[[X0]], %[[X0]]
// CHECK: %[[XCB:.+]] = llvm.select %[[NANB]], %{{.+}}, %[[X0]]
// CHECK: %[[Y0:.+]] = llvm.fmul %[[XCB]], %[[INV]]
// CHECK: %[[PAIR:.+]] = llvm.call_intrinsic "llvm.nvvm.ff.to.e4m3x2.rn"(%{{.+}}, %[[Y0]])
// CHECK: %[[LOW:.+]] = llvm.zext %[[PAIR]] : i16 to i32
// CHECK: %[[W0:.+]] = llvm.or %[[LOW]], %{{.+}} : i32
// store_groups: the words at lane · 16 bytes of the cache row; the scale from the tile's first lane.
// CHECK: %[[WV:.+]] = llvm.insertelement %[[W0]]
// CHECK: %[[I3:.+]] = llvm.mlir.constant(3 : i32)
// CHECK-NEXT: %[[CODES:.+]] = llvm.insertelement %{{.+}}, %{{.+}}[%[[I3]] : i32] : vector<4xi32>
// CHECK: %[[SOFF:.+]] = llvm.mul %[[LANE]], %{{.+}} : i32
// CHECK: %[[SOFF64:.+]] = llvm.zext %[[SOFF]]
// CHECK: %[[CADDR:.+]] = llvm.getelementptr %[[DROW]][%[[SOFF64]]]
// CHECK: llvm.store %[[CODES]], %[[CADDR]] {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<1>
// CHECK: %[[FIRST:.+]] = llvm.and %[[LANE]]
// CHECK: %[[IS0:.+]] = llvm.icmp "eq" %[[FIRST]]
// CHECK: scf.if %[[IS0]] {
// CHECK: %[[C512:.+]] = llvm.mlir.constant(512 : i64)
// CHECK-NEXT: %[[SCALES:.+]] = llvm.getelementptr %[[DROW]][%[[C512]]]
// CHECK: %[[SIDX:.+]] = llvm.lshr %[[LANE]]
// CHECK: %[[SIDX64:.+]] = llvm.zext %[[SIDX]]
// CHECK: %[[SADDR:.+]] = llvm.getelementptr %[[SCALES]][%[[SIDX64]]]
// CHECK: llvm.store %[[S]], %[[SADDR]] {alignment = 4 : i64} : f32, !llvm.ptr<1>
// RoPE: lanes 0–7 load at 512 elements (1024 bytes), round pairs to bf16, store at 528.
// CHECK: %[[FIRST8:.+]] = arith.cmpi ult, %[[LANE]]
// CHECK: scf.if %[[FIRST8]] {
// CHECK: %[[C1024:.+]] = llvm.mlir.constant(1024 : i64)
// CHECK-NEXT: %[[RBASE:.+]] = llvm.getelementptr %[[SROW]][%[[C1024]]]
// CHECK: %[[ROFF:.+]] = llvm.mul %[[LANE]]
// CHECK: %[[ROFF64:.+]] = llvm.zext %[[ROFF]]
// CHECK: %[[RADDR:.+]] = llvm.getelementptr %[[RBASE]][%[[ROFF64]]]
// CHECK: %[[RV:.+]] = llvm.load %[[RADDR]] invariant {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// CHECK: %[[R0:.+]] = llvm.fpext
// CHECK: %[[R1:.+]] = llvm.fpext
// CHECK: %[[PV:.+]] = llvm.insertelement %[[R0]]
// CHECK: %[[PV2:.+]] = llvm.insertelement %[[R1]], %[[PV]]
// CHECK: %[[BF:.+]] = llvm.fptrunc %[[PV2]] : vector<2xf32> to vector<2xbf16>
// CHECK: %[[WORD:.+]] = llvm.bitcast %[[BF]] : vector<2xbf16> to i32
// CHECK: %[[RNAN:.+]] = llvm.fcmp "uno" %[[R0]], %[[R0]]
// CHECK: llvm.select %[[RNAN]], %{{.+}}, %[[WORD]] : i1, i32
// CHECK: %[[C528:.+]] = llvm.mlir.constant(528 : i64)
// CHECK-NEXT: %[[ROPE:.+]] = llvm.getelementptr %[[DROW]][%[[C528]]]
// CHECK: %[[RSOFF:.+]] = llvm.mul %[[LANE]]
// CHECK: %[[RSOFF64:.+]] = llvm.zext %[[RSOFF]]
// CHECK: %[[RSADDR:.+]] = llvm.getelementptr %[[ROPE]][%[[RSOFF64]]]
// CHECK: llvm.store %{{.+}}, %[[RSADDR]] {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<1>
attnk.kernel @m_quantize(%src: memref<?x?x576xbf16>, %pos: memref<?xi32>, %cache: memref<?x?x656xi8>, %b: i32, %n: i32, %cap: i32) threads = 128 {
  %g, %tok, %gin, %l = attnk.group_index %b, %n slot 0 of 1 lanes = 8 groups_per_token = 4 whole_tokens
  attnk.token_rows %src[%tok], %cache positions(%pos : memref<?xi32>) tokens(%b, %n) capacity(%cap) : memref<?x?x576xbf16>, memref<?x?x656xi8> {
  ^bb0(%x: memref<576xbf16>, %row: memref<656xi8>):
    %v = attnk.load_groups %x lane(%l) lanes = 8 : memref<576xbf16> -> !attnk.groups<128xf32, lanes = 8, vec = 8, contiguous>
    %s = attnk.group_scales %v {quant = #attn.quant<f8E4M3FN, per_block<1x128>>} : !attnk.groups<128xf32, lanes = 8, vec = 8, contiguous> -> f32
    %q = attnk.quantize_tile %v scales(%s : f32) {quant = #attn.quant<f8E4M3FN, per_block<1x128>>} : !attnk.groups<128xf32, lanes = 8, vec = 8, contiguous> -> !attnk.groups<128xf8E4M3FN, lanes = 8, vec = 8, contiguous>
    attnk.store_groups %q, %row lane(%l) scale(%s into %row : memref<656xi8>) scale_offset = 512 : !attnk.groups<128xf8E4M3FN, lanes = 8, vec = 8, contiguous>, memref<656xi8>
    %c8 = arith.constant 8 : i32
    %first = arith.cmpi ult, %l, %c8 : i32
    scf.if %first {
      %r = attnk.load_groups %x lane(%l) lanes = 8 offset = 512 : memref<576xbf16> -> !attnk.groups<64xf32, lanes = 8, vec = 8, contiguous>
      %rb = attnk.convert_tile %r : !attnk.groups<64xf32, lanes = 8, vec = 8, contiguous> -> !attnk.groups<64xbf16, lanes = 8, vec = 8, contiguous>
      attnk.store_groups %rb, %row lane(%l) offset = 528 : !attnk.groups<64xbf16, lanes = 8, vec = 8, contiguous>, memref<656xi8>
    }
  }
}
