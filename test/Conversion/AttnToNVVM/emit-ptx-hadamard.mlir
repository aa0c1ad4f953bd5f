// --emit=ptx of a `hadamard` spec (Q, K and V rotated by the Walsh–Hadamard matrix H): after the
// loop the consumers multiply O by H — in-register butterflies, and two shfl.xor stages (lanes 1
// and 2 of the quad) of D/2 values each, where the upper lane keeps partner − own — and the row
// sums take H's 1/√D as × √D (l divides O). The launch metadata says the inputs are rotated.
// RUN: attn-opt %s --emit=ptx | FileCheck %s
// RUN: attn-opt %s --emit=launch | FileCheck %s --check-prefix=META
// The rotation's shuffles are all the kernel adds: 2 · D/2 = 128 against the unrotated spec.
// RUN: attn-opt %s --emit=ptx | grep -c shfl.sync.bfly > %t.rotated
// RUN: sed 's/hadamard, //' %s | attn-opt --emit=ptx | grep -c shfl.sync.bfly > %t.plain
// RUN: %python -c "import sys; r, p = (int(open(f).read()) for f in sys.argv[1:]); print('extra', r - p)" %t.rotated %t.plain | FileCheck %s --check-prefix=COUNT

// CHECK: .entry had_decode(
// CHECK: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// CHECK: selp.f32 {{.*}}, 0fBF800000, 0f3F800000,
// CHECK: shfl.sync.bfly.b32 {{.*}}, 1, 31, -1;
// CHECK: selp.f32 {{.*}}, 0f3F800000, 0fBF800000,
// CHECK: shfl.sync.bfly.b32 {{.*}}, 2, 31, -1;
// CHECK: mul.rn.f32 {{.*}}, 0f413504F3;
// META: "hadamard": true
// COUNT: extra 128

func.func @had(%q: memref<?x3x16x128xbf16>, %k: memref<?x?x1x128xi8>, %v: memref<?x?x1x128xi8>, %ks: memref<?x?x1xf32>, %vs: memref<?x?x1xf32>, %lens: memref<?xi32>, %o: memref<?x3x16x128xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<?x3x16x128xbf16>, memref<?x?x1x128xi8>, memref<?x?x1x128xi8>)
      k_scale(%ks : memref<?x?x1xf32>) v_scale(%vs : memref<?x?x1xf32>)
      seq_lens(%lens : memref<?xi32>)
      outs(%o : memref<?x3x16x128xbf16>)
      {causal, hadamard, target = #attn.target<sm_90a>, k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>}
  return
}
