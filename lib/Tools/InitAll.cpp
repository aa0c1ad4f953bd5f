//===- InitAll.cpp - register every attn dialect and pass -----------------===//
//
// What this file is: the implementation of attn/InitAll.h — the single list of what attn-opt loads.
//
//===----------------------------------------------------------------------===//

#include "attn/InitAll.h"

#include "attn/Conversion/Passes.h"
#include "attn/Dialect/Attn/IR/Attn.h"
#include "attn/Dialect/Attn/Transforms/Passes.h"
#include "attn/Dialect/AttnKernel/IR/AttnKernel.h"
#include "attn/Target/GPU.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Transforms/Passes.h"

void mlir::attn::registerAllDialects(DialectRegistry &registry) {
  registry.insert<AttnDialect, attnk::AttnKernelDialect, func::FuncDialect, arith::ArithDialect,
                  memref::MemRefDialect, scf::SCFDialect, vector::VectorDialect, math::MathDialect,
                  LLVM::LLVMDialect, cf::ControlFlowDialect, gpu::GPUDialect, NVVM::NVVMDialect>();
  // sm_90a: the NVVM target (PTX through LLVM's NVPTX back end, cubins through ptxas) and the
  // translations gpu-module-to-binary needs.
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
}

void mlir::attn::registerAllPasses() {
  registerAttnPasses();
  registerAttnConversionPasses();
  registerCPUToLLVMPipeline();
  registerNVVMToLLVMPipeline();
  registerGpuModuleToBinaryPass();
  registerConvertNVVMToLLVMPass();
  registerSCFToControlFlowPass();
  // Generic cleanups users combine with ours.
  registerCanonicalizerPass();
  registerCSEPass();
}
