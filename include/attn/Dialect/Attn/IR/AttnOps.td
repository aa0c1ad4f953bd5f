//===- AttnOps.td - attn op definitions --------------------*- tablegen -*-===//
//
// What this file is: the root of the op definitions. Each op family has its own file:
// AttentionOps.td (attention, MLA decode), QuantizeOps.td (KV append, dynamic quantization),
// PQOps.td (NoMAD product quantization).
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_OPS_TD
#define ATTN_OPS_TD

include "attn/Dialect/Attn/IR/AttnDialect.td"
include "attn/Dialect/Attn/IR/AttnAttrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// Memref operand classes with their memory effect, shared by every family.
class Attn_In<TypeConstraint t, string desc> : Arg<t, desc, [MemRead]>;
class Attn_Out<TypeConstraint t, string desc> : Arg<t, desc, [MemWrite]>;
class Attn_InOut<TypeConstraint t, string desc> : Arg<t, desc, [MemRead, MemWrite]>;
def Attn_Rank4 : MemRefRankOf<[AnyType], [4]>;

include "attn/Dialect/Attn/IR/AttentionOps.td"
include "attn/Dialect/Attn/IR/QuantizeOps.td"
include "attn/Dialect/Attn/IR/PQOps.td"

#endif // ATTN_OPS_TD
