// RUN: attn-opt %s --convert-attn-to-cpu | FileCheck %s --check-prefix=VNNI
// RUN: attn-opt %s --emit=asm | FileCheck %s --check-prefix=ASM
// avx512_vnni, 16 centroids: per 4 sub-quantizer rows, a vpermb transposes the 64 code bytes (a
// 32-bit lane per key), two vpermb look up the low / high nibbles in the 4 rows' tables and two
// vpdpbusd add each key's 4 bytes; no pshufb, no u16 even/odd accumulators.
// VNNI-LABEL: func.func @scores16
// VNNI-NOT: pshuf
// VNNI: scf.for {{.*}} iter_args({{.*}}) -> (vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xi32>)
// VNNI: llvm.call_intrinsic "llvm.x86.avx512.permvar.qi.512"({{.*}}) : (vector<64xi8>, vector<64xi8>) -> vector<64xi8>
// VNNI: arith.andi
// VNNI: arith.ori
// VNNI: arith.shrui
// VNNI: llvm.call_intrinsic "llvm.x86.avx512.permvar.qi.512"
// VNNI: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"({{.*}}) : (vector<16xi32>, vector<64xi8>, vector<64xi8>) -> vector<16xi32>
// VNNI: llvm.call_intrinsic "llvm.x86.avx512.permvar.qi.512"
// VNNI: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// VNNI: arith.trunci {{.*}} : vector<16xi32> to vector<16xi16>
// 4 sub-quantizers (dsub 4, head_dim 16): one accumulator pair.
// VNNI-LABEL: func.func @four_rows
// VNNI: scf.for {{.*}} -> (vector<16xi32>, vector<16xi32>)
func.func @scores16(%lut: memref<2x128x16xui8>, %p: memref<2x2xf32>, %codes: memref<1x?x128x16xui8>,
                    %n: index, %s: memref<2x?xf32>) {
  attn.pq.scores ins(%lut, %p, %codes : memref<2x128x16xui8>, memref<2x2xf32>, memref<1x?x128x16xui8>)
      length(%n) outs(%s : memref<2x?xf32>) {pq = #attn.pq<dsub = 1, centroids = 16>, target = #attn.target<avx512_vnni>}
  return
}
func.func @four_rows(%lut: memref<1x4x16xui8>, %p: memref<1x2xf32>, %codes: memref<1x?x4x16xui8>,
                     %n: index, %s: memref<1x?xui16>) {
  attn.pq.scores ins(%lut, %p, %codes : memref<1x4x16xui8>, memref<1x2xf32>, memref<1x?x4x16xui8>)
      length(%n) outs(%s : memref<1x?xui16>) {pq = #attn.pq<dsub = 4, centroids = 16>, target = #attn.target<avx512_vnni>}
  return
}
// ASM-LABEL: scores16:
// ASM-NOT: vpshufb
// ASM: vpermb
// ASM: vpdpbusd {{.*}}%zmm
// ASM-LABEL: four_rows:
// ASM: vpdpbusd {{.*}}%zmm
