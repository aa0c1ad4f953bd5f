// RUN: attn-opt %s --convert-attn-to-cpu | FileCheck %s --check-prefix=VBMI
// RUN: attn-opt %s --emit=asm | FileCheck %s --check-prefix=ASM
// 64 centroids (8-bit codes): vpermi2b over two 64-entry tables; 32 centroids: vpermb.
// VBMI-LABEL: func.func @wide
// VBMI: llvm.call_intrinsic "llvm.x86.avx512.vpermi2var.qi.512"({{.*}}) : (vector<64xi8>, vector<64xi8>, vector<64xi8>) -> vector<64xi8>
// VBMI: llvm.call_intrinsic "llvm.x86.avx512.permvar.qi.512"({{.*}}) : (vector<64xi8>, vector<64xi8>) -> vector<64xi8>
func.func @wide(%l64: memref<1x64x64xui8>, %l32: memref<1x64x32xui8>, %p: memref<1x2xf32>,
                %codes: memref<1x4x64x32xui8>, %n: index, %s: memref<1x128xui16>) {
  attn.pq.scores ins(%l64, %p, %codes : memref<1x64x64xui8>, memref<1x2xf32>, memref<1x4x64x32xui8>)
      length(%n) outs(%s : memref<1x128xui16>) {pq = #attn.pq<dsub = 2, centroids = 64>, target = #attn.target<avx512_vbmi>}
  attn.pq.scores ins(%l32, %p, %codes : memref<1x64x32xui8>, memref<1x2xf32>, memref<1x4x64x32xui8>)
      length(%n) outs(%s : memref<1x128xui16>) {pq = #attn.pq<dsub = 2, centroids = 32>, target = #attn.target<avx512_vbmi>}
  return
}
// ASM-DAG: vpermb {{.*}}%zmm
// ASM-DAG: vpermt2b {{.*}}%zmm
