//===- AttnKernelOps.td - attnk op definitions -------------*- tablegen -*-===//
//
// What this file is: the root of the kernel-level op definitions. Each op family has its own
// file: PipelineOps.td (the kernel, warp specialization, the ring protocol, TMA loads),
// ComputeOps.td (tile conversion, WGMMA, online softmax, output rescale, split merge, tile store)
// QuantizeOps.td (the quantize kernel's groups, scales and codes), ForwardOps.td (the
// forward-attention kernel's work, prologue and roles) and MLAOps.td (the MLA decode kernel's).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNK_OPS_TD
#define ATTNK_OPS_TD

include "attn/Dialect/AttnKernel/IR/AttnKernelDialect.td"
include "attn/Dialect/AttnKernel/IR/AttnKernelAttrs.td"
include "attn/Dialect/AttnKernel/IR/AttnKernelTypes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"

def AttnKernel_RowVector : VectorOfRankAndType<[1], [F32]>;

// Attributes of the spec level the kernel level reuses (as constraints, so that the generated
// reference of this dialect does not repeat the spec level's enums).
class AttnKernel_SpecAttr<string cls, string desc>
    : Attr<CPred<"::llvm::isa<::mlir::attn::" # cls # ">($_self)">, desc> {
  let storageType = "::mlir::attn::" # cls;
  let returnType = storageType;
  let convertFromStorage = "$_self";
}
def AttnKernel_QuantArray
    : TypedArrayAttrBase<AttnKernel_SpecAttr<"QuantAttr", "#attn.quant">, "quantization schemes">;
def AttnKernel_RoleArray
    : TypedArrayAttrBase<AttnKernel_SpecAttr<"WarpRoleAttr", "#attn.role">, "warp roles">;

include "attn/Dialect/AttnKernel/IR/PipelineOps.td"
include "attn/Dialect/AttnKernel/IR/ComputeOps.td"
include "attn/Dialect/AttnKernel/IR/QuantizeOps.td"
include "attn/Dialect/AttnKernel/IR/ForwardOps.td"
include "attn/Dialect/AttnKernel/IR/MLAOps.td"

#endif // ATTNK_OPS_TD
