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
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir::attn {

enum class EmitFormat { MLIR, PTX, Cubin, Object, Assembly, Header, Launch };

llvm::StringRef stringifyEmitFormat(EmitFormat f);

/// Writes the artifact of `module` to `os`. Emits located diagnostics and fails when an op of the
/// module cannot be compiled to `format` (no lowering yet, wrong target, missing toolkit).
/// For PTX and cubin, `launchJSON` (when given) receives the kernels' launch metadata.
LogicalResult emitArtifact(ModuleOp module, EmitFormat format, llvm::raw_ostream &os,
                           std::string *launchJSON = nullptr);

} // namespace mlir::attn

#endif // ATTN_TARGET_EMIT_H
