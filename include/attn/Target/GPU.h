//===- GPU.h - PTX and cubin for sm_90a -------------------------*- C++ -*-===//
//
// What this file is: the GPU back end of `--emit`: runs the sm_90a lowering (attn-normalize,
// attn-select-schedule, convert-attn-to-nvvm, then NVVM → LLVM → PTX through
// gpu-module-to-binary) and returns the PTX text or the cubin (ptxas) with the kernels' launch
// metadata (docs/GPUDecode.md).
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TARGET_GPU_H
#define ATTN_TARGET_GPU_H

#include "attn/Target/Emit.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <string>

namespace mlir::attn {

/// Appends the passes that take the output of convert-attn-to-nvvm (LLVM/NVVM ops inside scf) to
/// plain LLVM/NVVM ready for gpu-module-to-binary. Also registered as `attn-nvvm-to-llvm`.
void buildNVVMToLLVMPipeline(OpPassManager &pm);
void registerNVVMToLLVMPipeline();

/// What compileGPU produces: PTX text, a cubin (ptxas), or only the launch metadata (the
/// lowering to NVVM without LLVM code generation).
enum class GPUArtifact { PTX, Cubin, LaunchOnly };

/// Compiles the sm_90a ops of `module` (a clone is lowered; `module` is untouched).
/// `launchJSON` receives the launch metadata. Located diagnostics on failure (unsupported
/// variant, no ptxas for a cubin, more than one GPU kernel in the module). `setup` (when given)
/// prepares both pass managers: spec to NVVM, and NVVM to the gpu.binary.
LogicalResult compileGPU(ModuleOp module, GPUArtifact kind, std::string &artifact,
                         std::string &launchJSON, PassManagerSetup setup = {});

} // namespace mlir::attn

#endif // ATTN_TARGET_GPU_H
