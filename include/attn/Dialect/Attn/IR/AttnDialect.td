//===- AttnDialect.td - the attn dialect definition --------*- tablegen -*-===//
//
// What this file is: the declaration of the `attn` dialect itself (name, C++ namespace, summary) and
// the base class every attn op derives from. Attributes live in AttnAttrs.td, ops in AttnOps.td and
// the files it includes (one per op family).
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_DIALECT_TD
#define ATTN_DIALECT_TD

include "mlir/IR/OpBase.td"

def Attn_Dialect : Dialect {
  let name = "attn";
  let cppNamespace = "::mlir::attn";
  let summary = "Specs of quantized attention kernels (GPU: Hopper sm_90a; CPU: AVX2, AVX-512, NEON)";
  let description = [{
    The `attn` dialect is what a user of attn-opt writes: one op per kernel, carrying everything a
    kernel engineer decides by hand as attributes — the quantization scheme of each operand
    (`#attn.quant`), the arithmetic mode (`#attn.mode`), the target (`#attn.target`) and the schedule
    (`#attn.schedule`: query-head packing, split-KV, tiles, pipeline stages, warp roles, cluster shape,
    crossover). Operands are memrefs in the layouts written in each op's description.

    Specs are verified when parsed; `attn-normalize` makes defaults explicit and `attn-select-schedule`
    fills a missing schedule. Lowerings (`convert-attn-to-nvvm`, `convert-attn-to-cpu`) consume the
    normalized, scheduled form. A variant without a lowering is rejected with "not supported yet".
  }];
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
  }];
}

class Attn_Op<string mnemonic, list<Trait> traits = []>
    : Op<Attn_Dialect, mnemonic, traits>;

#endif // ATTN_DIALECT_TD
