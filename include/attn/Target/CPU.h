//===- CPU.h - objects and C headers for CPU targets ------------*- C++ -*-===//
//
// What this file is: the CPU back end of `--emit`: the C header that states every kernel's
// signature and buffer layouts, and relocatable objects (or assembly) compiled in-process with
// LLVM's TargetMachine from a module lowered by convert-attn-to-cpu + attn-cpu-to-llvm.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TARGET_CPU_H
#define ATTN_TARGET_CPU_H

#include "attn/Dialect/Attn/IR/Attn.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::attn {

/// Prefix of the internal symbol of kernel `name`; the header's inline `name(...)` calls
/// `_mlir_ciface_<prefix><name>`.
inline constexpr llvm::StringLiteral kKernelSymbolPrefix = "__attn_";

/// Writes a C header for every function of `module` (before lowering: memref arguments with
/// their original element types). `isaOf` gives each function's target for the comments.
LogicalResult emitCPUHeader(ModuleOp module, const llvm::StringMap<TargetKind> &isaOf,
                            llvm::raw_ostream &os);

/// Compiles an LLVM-dialect module to an object file (or assembly when `assembly`) for the target
/// family of the given per-function ISAs (all x86-64 or all AArch64).
LogicalResult emitCPUObject(ModuleOp llvmModule, const llvm::StringMap<TargetKind> &isaOf,
                            bool assembly, llvm::raw_ostream &os);

} // namespace mlir::attn

#endif // ATTN_TARGET_CPU_H
