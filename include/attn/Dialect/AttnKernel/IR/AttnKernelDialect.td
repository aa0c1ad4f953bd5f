//===- AttnKernelDialect.td - the attnk dialect definition -*- tablegen -*-===//
//
// What this file is: the declaration of the `attnk` dialect (the kernel level of the Hopper
// back end: warp roles, shared-memory rings, TMA loads, tile conversion, WGMMA, online softmax)
// and the base classes of its ops, types and attributes.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNK_DIALECT_TD
#define ATTNK_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def AttnKernel_Dialect : Dialect {
  let name = "attnk";
  let cppNamespace = "::mlir::attnk";
  let summary = "Kernel level of the sm_90a back end: warp roles, rings, TMA, tile conversion, WGMMA";
  let description = [{
    `attnk` is what a kernel engineer draws on a whiteboard for one Hopper (sm_90a) attention or
    quantization kernel, as typed, verified ops: warp-specialized roles with their register
    budgets (`attnk.warp_specialize`), shared-memory rings of stages with their full/empty
    mbarriers and swizzle (`!attnk.ring`, `!attnk.stage`) and the protocol that hands stages
    from producer to consumer (`attnk.ring.acquire` / `commit` / `wait` / `release`), TMA tile
    loads with their addressing (`attnk.tma_load`), the one op that dequantizes
    (`attnk.convert_tile`), warpgroup GEMMs (`attnk.wgmma`), the online-softmax step, the output
    rescale, the merge of KV splits and the tile store.

    It sits between the spec level (`attn`, what the user writes) and NVVM: layouts and swizzles
    live in the types, so the lowering derives WGMMA descriptors, TMA boxes and barrier byte
    counts from them instead of from flags. See docs/KernelIR.md.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let dependentDialects = ["::mlir::attn::AttnDialect"];
  let extraClassDeclaration = [{
    void registerTypes();
    void registerAttributes();
  }];
}

class AttnKernel_Op<string mnemonic, list<Trait> traits = []>
    : Op<AttnKernel_Dialect, mnemonic, traits>;

#endif // ATTNK_DIALECT_TD
