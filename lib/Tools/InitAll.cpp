//===- InitAll.cpp - register every attn dialect and pass -----------------===//
//
// What this file is: the implementation of attn/InitAll.h — the single list of what attn-opt loads.
//
//===----------------------------------------------------------------------===//

#include "attn/InitAll.h"

#include "attn/Dialect/Attn/IR/Attn.h"
#include "attn/Conversion/Passes.h"
#include "attn/Dialect/Attn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Transforms/Passes.h"

void mlir::attn::registerAllDialects(DialectRegistry &registry) {
  registry.insert<AttnDialect, func::FuncDialect, arith::ArithDialect, memref::MemRefDialect,
                  scf::SCFDialect, vector::VectorDialect, math::MathDialect, LLVM::LLVMDialect,
                  cf::ControlFlowDialect>();
}

void mlir::attn::registerAllPasses() {
  registerAttnPasses();
  registerAttnConversionPasses();
  registerCPUToLLVMPipeline();
  // Generic cleanups users combine with ours.
  registerCanonicalizerPass();
  registerCSEPass();
}
