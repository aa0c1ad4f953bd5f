// Without attn-select-schedule the conversion does not guess: it asks for the pass.
// RUN: attn-opt %s -verify-diagnostics --convert-attn-to-nvvm

func.func @unscheduled(%q: memref<?x1x8x128xbf16>, %k: memref<?x?x1x128xbf16>, %v: memref<?x?x1x128xbf16>,
                       %o: memref<?x1x8x128xbf16>) {
  // expected-error @+1 {{not supported yet by convert-attn-to-nvvm: an incomplete schedule: run attn-select-schedule first}}
  attn.attention decode ins(%q, %k, %v : memref<?x1x8x128xbf16>, memref<?x?x1x128xbf16>, memref<?x?x1x128xbf16>)
      outs(%o : memref<?x1x8x128xbf16>) {target = #attn.target<sm_90a>}
  return
}
