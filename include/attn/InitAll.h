//===- InitAll.h - register every attn dialect and pass ---------*- C++ -*-===//
//
// What this file is: the one place that lists what attn-opt (and the Python package's tools) load:
// our dialects (the spec level `attn` and the kernel level `attnk`), the upstream dialects a spec
// or a lowering uses, and all our passes.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_INITALL_H
#define ATTN_INITALL_H

#include "mlir/IR/DialectRegistry.h"

namespace mlir::attn {
void registerAllDialects(DialectRegistry &registry);
void registerAllPasses();
} // namespace mlir::attn

#endif // ATTN_INITALL_H
