//===- Passes.h - attn conversions ------------------------------*- C++ -*-===//
//
// What this file is: declarations (generated from Passes.td) of the conversions out of the attn
// dialect, and the function that lowers a converted module the rest of the way to the LLVM dialect.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CONVERSION_PASSES_H
#define ATTN_CONVERSION_PASSES_H

#include "attn/Dialect/AttnKernel/IR/AttnKernel.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::attn {
#define GEN_PASS_DECL
#include "attn/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "attn/Conversion/Passes.h.inc"

/// Appends the passes that take the output of convert-attn-to-cpu (scf, vector, memref, arith,
/// math, func) to the LLVM dialect. Also registered as the pipeline `attn-cpu-to-llvm`.
void buildCPUToLLVMPipeline(OpPassManager &pm);
void registerCPUToLLVMPipeline();
} // namespace mlir::attn

#endif // ATTN_CONVERSION_PASSES_H
