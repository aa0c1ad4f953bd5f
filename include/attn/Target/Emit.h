//===- Emit.h - turning a lowered module into an artifact -------*- C++ -*-===//
//
// What this file is: the plumbing behind `attn-opt --emit=...`: the artifact kinds and the entry
// point that produces one from a module. Each kind is filled by the lowering that produces it; until
// then a spec that asks for it is refused with a "not supported yet" diagnostic on its op.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TARGET_EMIT_H
#define ATTN_TARGET_EMIT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir::attn {

enum class EmitFormat { MLIR, PTX, Cubin, Object, Assembly, Header, Launch };

llvm::StringRef stringifyEmitFormat(EmitFormat f);

/// Prepares each pass manager that emitArtifact builds (the GPU lowering's two, the CPU
/// lowering's one) before its passes are added: instrumentation such as IR printing or a crash
/// reproducer. A failure stops the emission; it must carry its own diagnostic. attn-opt applies
/// MLIR's pass-manager command-line flags here (applyPassManagerCLOptions); the library never
/// reads them itself, since a program that did not register them (the fuzzers) would fail.
using PassManagerSetup = llvm::function_ref<LogicalResult(PassManager &)>;

/// Writes the artifact of `module` to `os`. Emits located diagnostics and fails when an op of the
/// module cannot be compiled to `format` (no lowering yet, wrong target, missing toolkit).
/// For PTX and cubin, `launchJSON` (when given) receives the kernels' launch metadata.
/// `setup` (when given) prepares every pass manager run on the way.
LogicalResult emitArtifact(ModuleOp module, EmitFormat format, llvm::raw_ostream &os,
                           std::string *launchJSON = nullptr, PassManagerSetup setup = {});

} // namespace mlir::attn

#endif // ATTN_TARGET_EMIT_H
