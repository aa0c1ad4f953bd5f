// RUN: attn-opt %s --convert-attn-to-cpu -split-input-file -verify-diagnostics
// What a kernel's prologue cannot check is refused when compiling.

func.func @not_an_argument(%src: memref<?x?x2x64xf32>, %n: index, %scales: memref<?x?x2xf32>) {
  %dst = memref.alloc(%n, %n) : memref<?x?x2x64xi8>
  // expected-error @+1 {{not supported yet: 'dst' has a dynamic extent but is not an argument of the kernel function}}
  attn.quantize.dynamic ins(%src : memref<?x?x2x64xf32>) outs(%dst, %scales : memref<?x?x2x64xi8>, memref<?x?x2xf32>)
      {quant = #attn.quant<i8, per_token_head>, target = #attn.target<avx2>}
  return
}

// -----

// A static buffer over 2^48 bytes is refused by the op's verifier before any lowering.
func.func @huge(%src: memref<1048576x1048576x2x64xf32>, %dst: memref<1048576x1048576x2x64xi8>,
                %scales: memref<1048576x1048576x2xf32>) {
  // expected-error @+1 {{operand #0 ('memref<1048576x1048576x2x64xf32>') spans more than 281474976710656 bytes}}
  attn.quantize.dynamic ins(%src : memref<1048576x1048576x2x64xf32>)
      outs(%dst, %scales : memref<1048576x1048576x2x64xi8>, memref<1048576x1048576x2xf32>)
      {quant = #attn.quant<i8, per_token_head>, target = #attn.target<avx2>}
  return
}

// -----

// expected-error @+1 {{not supported yet: a kernel function called from another function}}
func.func @callee(%src: memref<1x1x2x64xf32>, %dst: memref<1x1x2x64xi8>, %scales: memref<1x1x2xf32>) {
  attn.quantize.dynamic ins(%src : memref<1x1x2x64xf32>) outs(%dst, %scales : memref<1x1x2x64xi8>, memref<1x1x2xf32>)
      {quant = #attn.quant<i8, per_token_head>, target = #attn.target<avx2>}
  return
}
func.func @caller(%src: memref<1x1x2x64xf32>, %dst: memref<1x1x2x64xi8>, %scales: memref<1x1x2xf32>) {
  func.call @callee(%src, %dst, %scales) : (memref<1x1x2x64xf32>, memref<1x1x2x64xi8>, memref<1x1x2xf32>) -> ()
  return
}
