// RUN: attn-opt %s --convert-attn-to-cpu=isa=avx2 -split-input-file | FileCheck %s --check-prefix=AVX2
// RUN: attn-opt %s --convert-attn-to-cpu=isa=avx512 -split-input-file | FileCheck %s --check-prefix=AVX512
// RUN: attn-opt %s --convert-attn-to-cpu=isa=neon -split-input-file | FileCheck %s --check-prefix=NEON
// RUN: attn-opt %s --convert-attn-to-cpu=isa=scalar -split-input-file | FileCheck %s --check-prefix=SCALAR
// RUN: attn-opt %s --convert-attn-to-cpu=isa=avx2 --attn-cpu-to-llvm -split-input-file | FileCheck %s --check-prefix=LLVM
// convert-attn-to-cpu: the lookups are explicit intrinsics per ISA, accumulated in u16.

// AVX2-LABEL: func.func @scores
// Memref arguments become signless, fully dynamic (the prologue checks the descriptors) and
// C-callable; the kernel returns a status. The body sees the original types again.
// AVX2-SAME: memref<?x?x?xi8, strided<[?, ?, ?], offset: ?>>{{.*}}memref<?x?x?x?xi8, strided<[?, ?, ?, ?], offset: ?>>{{.*}} -> i32 attributes {llvm.emit_c_interface}
// AVX2: memref.reinterpret_cast %arg0 to offset: [0], sizes: [4, 128, 16], strides: [2048, 16, 1]{{.*}} to memref<4x128x16xi8>
// AVX2: cf.cond_br
// Full blocks first, software pipelined: the block loop carries the previous block's four
// accumulators. 128 sub-quantizers = 64 steps of two rows: 4 straight-line steps, then the
// previous block's scores (stored at block max(blk - 1, 0)), then the other 60 steps in a loop
// unrolled 4 times.
// AVX2: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args({{.*}}) -> (vector<16xi16>, vector<16xi16>, vector<16xi16>, vector<16xi16>)
// AVX2: %[[ODD:.+]] = arith.constant dense<[0, 1, 0, 1, {{.*}}]> : vector<32xi8>
// Two sub-quantizer rows of codes and of LUT per 256-bit register.
// AVX2: %[[CODES:.+]] = vector.load %{{.*}} : memref<1x?x2048xi8>, vector<32xi8>
// AVX2: %[[LUT:.+]] = vector.load %{{.*}} : memref<4x2048xi8>, vector<32xi8>
// lo = codes & 0xF (keys 0..15), hi = codes >> 4 (keys 16..31)
// AVX2: %[[LO:.+]] = arith.andi %[[CODES]], %{{.*}} : vector<32xi8>
// AVX2: %[[HI:.+]] = arith.shrui %[[CODES]], %{{.*}} : vector<32xi8>
// AVX2: %[[RLO:.+]] = llvm.call_intrinsic "llvm.x86.avx2.pshuf.b"(%[[LUT]], %[[LO]]) : (vector<32xi8>, vector<32xi8>) -> vector<32xi8>
// AVX2: llvm.call_intrinsic "llvm.x86.avx2.pshuf.b"(%[[LUT]], %[[HI]])
// A += bytes as u16 lanes; B += the odd bytes, by vpmaddubsw against bytes (0, 1) (not a shift)
// AVX2: %[[W:.+]] = vector.bitcast %[[RLO]] : vector<32xi8> to vector<16xi16>
// AVX2: arith.addi %{{.*}}, %[[W]] : vector<16xi16>
// AVX2-NOT: arith.shrui %[[W]]
// AVX2: llvm.call_intrinsic "llvm.x86.avx2.pmadd.ub.sw"(%[[RLO]], %[[ODD]]) : (vector<32xi8>, vector<32xi8>) -> vector<16xi16>
// The other three straight-line steps, the previous block's 32 scores, the loop.
// AVX2-COUNT-6: llvm.call_intrinsic "llvm.x86.avx2.pshuf.b"({{.*}}) : (vector<32xi8>, vector<32xi8>) -> vector<32xi8>
// AVX2-NOT: scf.for
// AVX2: arith.maxsi
// AVX2-COUNT-8: vector.store {{.*}} : memref<4x?xf32>, vector<4xf32>
// AVX2: scf.for %{{.*}} = %c8{{.*}} to %c128{{.*}} step %c8{{.*}} iter_args
// AVX2-COUNT-8: llvm.call_intrinsic "llvm.x86.avx2.pshuf.b"({{.*}}) : (vector<32xi8>, vector<32xi8>) -> vector<32xi8>
// AVX2: scf.yield
// AVX2: scf.yield
// The last full block after the loop.
// AVX2: scf.if
// Rows folded first: X = [Alo Ahi] = a blend + a lane swap of the low and high nibbles' A
// (Y the same from B), then even keys = X - (Y << 8).
// AVX2: %[[XB:.+]] = vector.shuffle %[[ACC:.+]]#0, %[[ACC]]#2 [0, 1, 2, 3, 4, 5, 6, 7, 24, 25, 26, 27, 28, 29, 30, 31] : vector<16xi16>, vector<16xi16>
// AVX2: %[[XS:.+]] = vector.shuffle %[[ACC]]#0, %[[ACC]]#2 [8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23]
// AVX2: %[[X:.+]] = arith.addi %[[XB]], %[[XS]] : vector<16xi16>
// AVX2: vector.shuffle %[[ACC]]#1, %[[ACC]]#3
// AVX2: %[[Y:.+]] = arith.addi {{.*}} : vector<16xi16>
// AVX2: %[[Y8:.+]] = arith.shli %[[Y]], %{{.*}} : vector<16xi16>
// AVX2: %[[E:.+]] = arith.subi %[[X]], %[[Y8]] : vector<16xi16>
// A full block interleaves even and odd keys within 128-bit rows only: keys [0..7 | 16..23] and
// [8..15 | 24..31]; the f32 scores come from a second unpack with 0x4B00 (19200) as the high
// half: float 2^23 + u, minus 2^23 (0x4B000000), · step + bias, one 16-byte store per row.
// AVX2: %[[U0:.+]] = vector.shuffle %[[E]], %[[Y]] [0, 16, 1, 17, 2, 18, 3, 19, 8, 24, 9, 25, 10, 26, 11, 27]
// AVX2: vector.shuffle %[[E]], %[[Y]] [4, 20, 5, 21, 6, 22, 7, 23, 12, 28, 13, 29, 14, 30, 15, 31]
// AVX2: %[[MAGIC:.+]] = arith.constant dense<19200> : vector<16xi16>
// AVX2: %[[TWO23:.+]] = arith.constant dense<0x4B000000> : vector<8xf32>
// AVX2: %[[P:.+]] = vector.shuffle %[[U0]], %[[MAGIC]] [0, 16, 1, 17, 2, 18, 3, 19, 8, 24, 9, 25, 10, 26, 11, 27]
// AVX2: %[[PF:.+]] = vector.bitcast %[[P]] : vector<16xi16> to vector<8xf32>
// AVX2: %[[F:.+]] = arith.subf %[[PF]], %[[TWO23]] : vector<8xf32>
// AVX2: arith.mulf %[[F]]
// AVX2: arith.addf
// AVX2-COUNT-2: vector.store {{.*}} : memref<4x?xf32>, vector<4xf32>
// AVX2-NOT: vector.maskedstore
// AVX2-COUNT-6: vector.store {{.*}} : memref<4x?xf32>, vector<4xf32>
// The partial last block: the same loop, the sums in key order (one interleave), then
// score = step · u16 + bias through a masked store of the valid keys.
// AVX2: scf.if
// AVX2: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c8 iter_args
// AVX2: vector.shuffle %{{.*}}, %{{.*}} [0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31]
// AVX2: arith.uitofp {{.*}} : vector<32xi16> to vector<32xf32>
// AVX2: arith.mulf
// AVX2: arith.addf
// AVX2: vector.maskedstore {{.*}} : memref<4x?xf32>, vector<32xi1>, vector<32xf32>
// AVX2-NOT: attn.pq

// AVX512-LABEL: func.func @scores
// AVX512: vector.load {{.*}} vector<64xi8>
// AVX512: llvm.call_intrinsic "llvm.x86.avx512.pshuf.b.512"({{.*}}) : (vector<64xi8>, vector<64xi8>) -> vector<64xi8>
// AVX512: vector.bitcast {{.*}} : vector<64xi8> to vector<32xi16>
// Four rows folded by row shuffles into W = [Alo Ahi Blo Bhi], one vpermw pairs keys 2k, 2k+1
// as (A, B) in one u32 lane, then A -= B << 8 within the lane.
// AVX512: vector.shuffle {{.*}} [0, 1, 2, 3, 4, 5, 6, 7, 40, 41, 42, 43, 44, 45, 46, 47, 16, 17, 18, 19, 20, 21, 22, 23, 56, 57, 58, 59, 60, 61, 62, 63] : vector<32xi16>, vector<32xi16>
// AVX512: %[[W:.+]] = arith.addi {{.*}} : vector<32xi16>
// AVX512-NEXT: arith.constant
// AVX512-NEXT: %[[P:.+]] = llvm.call_intrinsic "llvm.x86.avx512.permvar.hi.512"(%[[W]], %{{.*}}) : (vector<32xi16>, vector<32xi16>) -> vector<32xi16>
// AVX512: %[[P32:.+]] = vector.bitcast %[[P]] : vector<32xi16> to vector<16xi32>
// AVX512: %[[B:.+]] = arith.shrui %[[P32]], %{{.*}} : vector<16xi32>
// AVX512: %[[B16:.+]] = vector.bitcast %[[B]] : vector<16xi32> to vector<32xi16>
// AVX512: %[[B8:.+]] = arith.shli %[[B16]], %{{.*}} : vector<32xi16>
// AVX512: arith.subi %[[P]], %[[B8]] : vector<32xi16>

// NEON-LABEL: func.func @scores
// NEON: llvm.call_intrinsic "llvm.aarch64.neon.tbl1.v16i8"({{.*}}) : (vector<16xi8>, vector<16xi8>) -> vector<16xi8>
// NEON: vector.bitcast {{.*}} : vector<16xi8> to vector<8xi16>

// SCALAR-LABEL: func.func @scores
// SCALAR-NOT: llvm.call_intrinsic
// SCALAR: memref.load {{.*}} : memref<1x?x128x16xi8>
// SCALAR: arith.select
// SCALAR: arith.extui {{.*}} : i8 to i32
// SCALAR: arith.trunci {{.*}} : i32 to i16
// SCALAR: arith.uitofp {{.*}} : i16 to f32

// LLVM-LABEL: llvm.func @scores
// LLVM: llvm.call_intrinsic "llvm.x86.avx2.pshuf.b"
// LLVM-LABEL: llvm.func @_mlir_ciface_scores
func.func @scores(%lut: memref<4x128x16xui8>, %p: memref<4x2xf32>, %codes: memref<1x?x128x16xui8>,
                  %n: index, %s: memref<4x?xf32>) {
  attn.pq.scores ins(%lut, %p, %codes : memref<4x128x16xui8>, memref<4x2xf32>, memref<1x?x128x16xui8>)
      length(%n) outs(%s : memref<4x?xf32>) {pq = #attn.pq<dsub = 1>}
  return
}

// -----

// u16 sums over 64 sub-quantizers (dsub 2 at head_dim 128): 32 steps of two rows, straight-line
// code in the block loop (no loop over the sub-quantizers), software pipelined: the loop carries
// the previous block's four accumulators and stores that block's sums (its four 128-bit rows,
// keys 0..7, 8..15, 16..23, 24..31, apart; at block max(blk - 1, 0)) after the first 4 steps of
// its own block; the last full block's sums follow the loop.
// AVX2-LABEL: func.func @scan_straight
// AVX2: scf.for
// AVX2: scf.for %[[BLK:.+]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[P0:.+]] = %{{.*}}, %[[P1:.+]] = %{{.*}}, %[[P2:.+]] = %{{.*}}, %[[P3:.+]] = %{{.*}}) -> (vector<16xi16>, vector<16xi16>, vector<16xi16>, vector<16xi16>)
// AVX2-NOT: scf.for
// AVX2-COUNT-8: llvm.call_intrinsic "llvm.x86.avx2.pshuf.b"
// AVX2-NOT: llvm.call_intrinsic "llvm.x86.avx2.pshuf.b"
// AVX2: %[[PREV:.+]] = arith.subi %[[BLK]], %{{.*}} : index
// AVX2: arith.maxsi %[[PREV]], %{{.*}} : index
// AVX2: vector.shuffle %[[P0]], %[[P2]]
// AVX2: vector.shuffle %[[P1]], %[[P3]]
// AVX2-COUNT-4: vector.store {{.*}} : memref<1x?xi16>, vector<8xi16>
// AVX2-COUNT-56: llvm.call_intrinsic "llvm.x86.avx2.pshuf.b"
// AVX2-NOT: scf.for
// AVX2: scf.yield
// AVX2: scf.if
// AVX2: %[[E:.+]] = arith.subi {{.*}} : vector<16xi16>
// AVX2: %[[U0:.+]] = vector.shuffle %[[E]], %[[Y:.+]] [0, 16, 1, 17, 2, 18, 3, 19, 8, 24, 9, 25, 10, 26, 11, 27]
// AVX2: %[[U1:.+]] = vector.shuffle %[[E]], %[[Y]] [4, 20, 5, 21, 6, 22, 7, 23, 12, 28, 13, 29, 14, 30, 15, 31]
// AVX2: %[[K0:.+]] = vector.extract_strided_slice %[[U0]] {offsets = [0], sizes = [8], strides = [1]}
// AVX2: vector.store %[[K0]], {{.*}} : memref<1x?xi16>, vector<8xi16>
// AVX2: %[[K8:.+]] = vector.extract_strided_slice %[[U1]] {offsets = [0], sizes = [8], strides = [1]}
// AVX2: vector.store %[[K8]], {{.*}} : memref<1x?xi16>, vector<8xi16>
// AVX2: %[[K16:.+]] = vector.extract_strided_slice %[[U0]] {offsets = [8], sizes = [8], strides = [1]}
// AVX2: vector.store %[[K16]], {{.*}} : memref<1x?xi16>, vector<8xi16>
// AVX2: %[[K24:.+]] = vector.extract_strided_slice %[[U1]] {offsets = [8], sizes = [8], strides = [1]}
// AVX2: vector.store %[[K24]], {{.*}} : memref<1x?xi16>, vector<8xi16>
// AVX2: scf.if
// AVX2-NOT: scf.for
// AVX2: vector.maskedstore {{.*}} : memref<1x?xi16>, vector<32xi1>, vector<32xi16>
func.func @scan_straight(%lut: memref<1x64x16xui8>, %p: memref<1x2xf32>,
                         %codes: memref<1x?x64x16xui8>, %n: index, %s: memref<1x?xui16>) {
  attn.pq.scores ins(%lut, %p, %codes : memref<1x64x16xui8>, memref<1x2xf32>, memref<1x?x64x16xui8>)
      length(%n) outs(%s : memref<1x?xui16>) {pq = #attn.pq<dsub = 2>}
  return
}


// -----

// attn.quantize.append (asymmetric ui8, per_group<64>): per group, a min/max reduction over the
// finite values, the scale and zero point written at the cache row positions[b] + t, then the
// codes x · (1/s) + z rounded half away from zero and clamped to [0, 255]; rows outside the
// cache are skipped. The same scalar loops on every ISA.
// AVX2-LABEL: func.func @append_asym
// AVX2: memref.collapse_shape {{.*}} : memref<?x?x4x128xbf16> into memref<?xbf16>
// AVX2: memref.load {{.*}} : memref<?xi32>
// AVX2: arith.cmpi slt
// AVX2: scf.if
// AVX2: arith.cmpf uno
// AVX2: arith.minnumf
// AVX2: arith.maxnumf
// AVX2: arith.divf
// AVX2: memref.store {{.*}} : memref<?xf32>
// AVX2: math.round
// AVX2: memref.store {{.*}} : memref<?xi8>
// AVX2: arith.mulf
// AVX2: math.round
// AVX2: arith.fptosi
// AVX2: memref.store {{.*}} : memref<?xi8>
// AVX2-NOT: attn.quantize
// NEON-LABEL: func.func @append_asym
// NEON-NOT: llvm.call_intrinsic
// NEON: math.round
// LLVM-LABEL: llvm.func @append_asym
// LLVM: llvm.intr.round
func.func @append_asym(%x: memref<?x?x4x128xbf16>, %p: memref<?xi32>, %c: memref<?x?x4x128xui8>,
                       %s: memref<?x?x4x2xf32>, %z: memref<?x?x4x2xui8>) {
  attn.quantize.append ins(%x : memref<?x?x4x128xbf16>) positions(%p : memref<?xi32>)
      outs(%c, %s : memref<?x?x4x128xui8>, memref<?x?x4x2xf32>) zeros(%z : memref<?x?x4x2xui8>)
      {quant = #attn.quant<ui8, per_group<64>, asymmetric>}
  return
}

// -----

// attn.quantize.dynamic to e4m3 with f16 scales: amax / 448 rounded to f16, and the e4m3 bits
// made in integer arithmetic (ties to even, saturating at 0x7E) since LLVM has no fp8 type.
// AVX2-LABEL: func.func @dynamic_e4m3
// AVX2: math.absf
// AVX2: arith.truncf {{.*}} : f32 to f16
// AVX2: memref.store {{.*}} : memref<24xf16>
// AVX2: math.roundeven
// AVX2: arith.constant 524287 : i32
// AVX2: arith.constant 960 : i32
// AVX2: arith.minsi {{.*}}, %c126_i32
// AVX2: memref.store {{.*}} : memref<3072xi8>
func.func @dynamic_e4m3(%x: memref<2x3x4x128xf32>, %c: memref<2x3x4x128xf8E4M3FN>,
                        %s: memref<2x3x4xf16>) {
  attn.quantize.dynamic ins(%x : memref<2x3x4x128xf32>)
      outs(%c, %s : memref<2x3x4x128xf8E4M3FN>, memref<2x3x4xf16>)
      {quant = #attn.quant<f8E4M3FN, per_token_head, scale = f16>}
  return
}

// -----

// attn.quantize.dynamic with `hadamard`: the token's row (4 heads × 128) copied with non-finite
// values as 0 into a scratch row, seven butterfly stages (pairs h = 1 … 64 apart) of adds and
// subtracts, × 1/√128, and the groups read the scratch row instead of the source.
// AVX2-LABEL: func.func @dynamic_hadamard
// AVX2: memref.alloca() : memref<512xf32>
// AVX2-COUNT-7: arith.subf {{.*}} : f32
// AVX2: arith.constant 0.0883883461 : f32
// AVX2: arith.mulf
// AVX2: memref.load %{{.*}} : memref<512xf32>
// AVX2: math.absf
func.func @dynamic_hadamard(%x: memref<2x3x4x128xbf16>, %c: memref<2x3x4x128xi8>,
                            %s: memref<2x3x4xf32>) {
  attn.quantize.dynamic ins(%x : memref<2x3x4x128xbf16>)
      outs(%c, %s : memref<2x3x4x128xi8>, memref<2x3x4xf32>)
      {quant = #attn.quant<i8, per_token_head>, hadamard}
  return
}

// -----

// attn.quantize.mla_append: per 1 x 128 tile an amax over the finite values, the f32 scale
// written as 4 bytes, the e4m3 codes of x · (1/s); then the RoPE values rounded to bf16 as 2
// bytes each — all into the token's row of the byte cache (rows outside it skipped).
// AVX2-LABEL: func.func @mla_append
// AVX2: memref.collapse_shape {{.*}} : memref<?x?x656xi8> into memref<?xi8>
// AVX2: scf.if
// AVX2: math.absf
// AVX2: arith.maxnumf
// AVX2: arith.divf
// AVX2: arith.bitcast {{.*}} : f32 to i32
// AVX2: memref.store {{.*}} : memref<?xi8>
// AVX2: math.roundeven
// AVX2: memref.store {{.*}} : memref<?xi8>
// AVX2: arith.cmpf uno
// AVX2: arith.trunci {{.*}} : i32 to i16
// AVX2-NOT: attn.quantize
func.func @mla_append(%x: memref<?x?x576xbf16>, %p: memref<?xi32>, %c: memref<?x?x656xi8>) {
  attn.quantize.mla_append ins(%x : memref<?x?x576xbf16>) positions(%p : memref<?xi32>)
      outs(%c : memref<?x?x656xi8>)
      {head_dim_v = 512 : i64, rope_dim = 64 : i64, kv_quant = #attn.quant<f8E4M3FN, per_block<1x128>>}
  return
}
