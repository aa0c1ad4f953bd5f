//===- AttnKernel.h - the attnk dialect, its types and ops -------*- C++ -*-===//
//
// What this file is: the one header to include for the kernel-level dialect `attnk` in C++: the
// dialect class, enums, attributes, types (rings, stages, tensor maps, fragments) and ops, all
// generated from the .td files beside it.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_DIALECT_ATTNKERNEL_IR_ATTNKERNEL_H
#define ATTN_DIALECT_ATTNKERNEL_IR_ATTNKERNEL_H

#include "attn/Dialect/Attn/IR/Attn.h"
#include "attn/Runtime/LaunchABI.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/Support/JSON.h"

#include "attn/Dialect/AttnKernel/IR/AttnKernelEnums.h.inc"
#include "attn/Dialect/AttnKernel/IR/AttnKernelOpsDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "attn/Dialect/AttnKernel/IR/AttnKernelAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "attn/Dialect/AttnKernel/IR/AttnKernelOpsTypes.h.inc"

#define GET_OP_CLASSES
#include "attn/Dialect/AttnKernel/IR/AttnKernelOps.h.inc"

namespace mlir::attnk {
/// Registers per SM of sm_90 (the budget `warp_specialize` checks) and threads per warpgroup.
inline constexpr int64_t kRegistersPerSM = 65536;
inline constexpr int64_t kThreadsPerWarpgroup = 128;
/// Dynamic shared memory one sm_90 CTA may use (227 KB).
inline constexpr int64_t kMaxSharedBytes = 232448;
/// Bytes of one swizzle span (0 for `none`).
int64_t getSwizzleBytes(Swizzle s);
/// The `kernels[]` entry of the launch metadata of kernel `name` with launch ABI `launch`.
llvm::json::Object launchKernelJSON(StringRef name, LaunchAttr launch);
/// The launch metadata (`attn-launch-v1` JSON) of a spec: its `metadata` entries (problem,
/// schedule, …) and the entries of its kernels, in launch order (LaunchAttr.cpp).
std::string launchDocumentJSON(DictionaryAttr metadata, ArrayRef<llvm::json::Object> kernels);
/// The `params` of a kernel's metadata entry: the names of launch ABI table entries, in order
/// (the only way the compiler names a kernel parameter outside `#attnk.launch`).
llvm::json::Array launchParamsJSON(ArrayRef<attn_abi::Param> params);
} // namespace mlir::attnk

#endif // ATTN_DIALECT_ATTNKERNEL_IR_ATTNKERNEL_H
