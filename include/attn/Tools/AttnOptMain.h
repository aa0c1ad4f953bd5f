//===- AttnOptMain.h - the attn-opt driver ----------------------*- C++ -*-===//
//
// What this file is: the driver behind tools/attn-opt: mlir-opt's command line plus `--emit` and an
// attn-specific `--version`.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TOOLS_ATTNOPTMAIN_H
#define ATTN_TOOLS_ATTNOPTMAIN_H

#include "mlir/IR/DialectRegistry.h"

namespace mlir::attn {
/// Runs attn-opt; returns the process exit code.
int attnOptMain(int argc, char **argv, DialectRegistry &registry);
} // namespace mlir::attn

#endif // ATTN_TOOLS_ATTNOPTMAIN_H
