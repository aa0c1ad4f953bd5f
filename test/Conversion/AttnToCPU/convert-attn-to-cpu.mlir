// RUN: attn-opt %s --convert-attn-to-cpu=isa=avx2 -split-input-file | FileCheck %s --check-prefix=AVX2
// RUN: attn-opt %s --convert-attn-to-cpu=isa=avx512 -split-input-file | FileCheck %s --check-prefix=AVX512
// RUN: attn-opt %s --convert-attn-to-cpu=isa=neon -split-input-file | FileCheck %s --check-prefix=NEON
// RUN: attn-opt %s --convert-attn-to-cpu=isa=scalar -split-input-file | FileCheck %s --check-prefix=SCALAR
// RUN: attn-opt %s --convert-attn-to-cpu=isa=avx2 --attn-cpu-to-llvm -split-input-file | FileCheck %s --check-prefix=LLVM
// convert-attn-to-cpu: the lookups are explicit intrinsics per ISA, accumulated in u16.

// AVX2-LABEL: func.func @scores
// Memref arguments become signless and C-callable.
// AVX2-SAME: memref<4x128x16xi8>{{.*}}memref<1x?x128x16xi8>{{.*}} attributes {llvm.emit_c_interface}
// Two sub-quantizer rows of codes and of LUT per 256-bit register.
// AVX2: %[[CODES:.+]] = vector.load %{{.*}} : memref<1x?x2048xi8>, vector<32xi8>
// AVX2: %[[LUT:.+]] = vector.load %{{.*}} : memref<4x2048xi8>, vector<32xi8>
// lo = codes & 0xF (keys 0..15), hi = codes >> 4 (keys 16..31)
// AVX2: %[[LO:.+]] = arith.andi %[[CODES]], %{{.*}} : vector<32xi8>
// AVX2: %[[HI:.+]] = arith.shrui %[[CODES]], %{{.*}} : vector<32xi8>
// AVX2: %[[RLO:.+]] = llvm.call_intrinsic "llvm.x86.avx2.pshuf.b"(%[[LUT]], %[[LO]]) : (vector<32xi8>, vector<32xi8>) -> vector<32xi8>
// AVX2: llvm.call_intrinsic "llvm.x86.avx2.pshuf.b"(%[[LUT]], %[[HI]])
// A += bytes as u16 lanes; B += lanes >> 8 (the odd bytes)
// AVX2: %[[W:.+]] = vector.bitcast %[[RLO]] : vector<32xi8> to vector<16xi16>
// AVX2: arith.addi %{{.*}}, %[[W]] : vector<16xi16>
// AVX2: arith.shrui %[[W]], %{{.*}} : vector<16xi16>
// even keys = A - (B << 8)
// AVX2: arith.shli
// AVX2: arith.subi {{.*}} : vector<16xi16>
// AVX2: vector.shuffle {{.*}} [0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15]
// score = step · u16 + bias, valid keys only
// AVX2: arith.uitofp {{.*}} : vector<32xi16> to vector<32xf32>
// AVX2: arith.mulf
// AVX2: arith.addf
// AVX2: vector.maskedstore {{.*}} : memref<4x?xf32>, vector<32xi1>, vector<32xf32>
// AVX2-NOT: attn.pq

// AVX512-LABEL: func.func @scores
// AVX512: vector.load {{.*}} vector<64xi8>
// AVX512: llvm.call_intrinsic "llvm.x86.avx512.pshuf.b.512"({{.*}}) : (vector<64xi8>, vector<64xi8>) -> vector<64xi8>
// AVX512: vector.bitcast {{.*}} : vector<64xi8> to vector<32xi16>

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

