// --emit=cubin assembles the PTX with the toolkit's ptxas into an sm_90a ELF.
// REQUIRES: ptxas
// RUN: attn-opt %s --emit=cubin -o %t.cubin && od -c -N 4 %t.cubin | FileCheck %s
// RUN: test -s %t.cubin.launch.json
// CHECK: 177   E   L   F
func.func @decode(%q: memref<?x1x8x64xbf16>, %k: memref<?x?x1x64xf8E4M3FN>, %v: memref<?x?x1x64xf8E4M3FN>,
                  %ks: memref<?x?xf32>, %vs: memref<?x?xf32>, %o: memref<?x1x8x64xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<?x1x8x64xbf16>, memref<?x?x1x64xf8E4M3FN>, memref<?x?x1x64xf8E4M3FN>)
      k_scale(%ks : memref<?x?xf32>) v_scale(%vs : memref<?x?xf32>) outs(%o : memref<?x1x8x64xbf16>)
      {k_quant = #attn.quant<f8E4M3FN, per_token>, v_quant = #attn.quant<f8E4M3FN, per_token>, target = #attn.target<sm_90a>}
  return
}
