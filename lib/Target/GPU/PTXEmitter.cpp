//===- PTXEmitter.cpp - PTX and cubin for sm_90a --------------------------===//
//
// What this file is: the implementation of attn/Target/GPU.h — the pass pipeline from spec to a
// gpu.binary (MLIR's gpu-module-to-binary with the NVVM target: in-process NVPTX code generation
// for PTX, the toolkit's ptxas for a cubin) and the extraction of the artifact and its launch
// metadata.
//
//===----------------------------------------------------------------------===//

#include "attn/Target/GPU.h"

#include "attn/Conversion/Passes.h"
#include "attn/Dialect/Attn/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

using namespace mlir;
using namespace mlir::attn;

void mlir::attn::buildNVVMToLLVMPipeline(OpPassManager &pm) {
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertNVVMToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}

void mlir::attn::registerNVVMToLLVMPipeline() {
  PassPipelineRegistration<>("attn-nvvm-to-llvm",
                             "Lower the output of convert-attn-to-nvvm to LLVM and NVVM ops only",
                             buildNVVMToLLVMPipeline);
}

/// The directory of the CUDA toolkit whose bin/ptxas exists, or "".
static std::string findToolkit() {
  SmallVector<std::string> candidates;
  if (const char *home = std::getenv("CUDA_HOME"))
    candidates.push_back(home);
  candidates.push_back("/usr/local/cuda");
  if (llvm::ErrorOr<std::string> p = llvm::sys::findProgramByName("ptxas"))
    candidates.push_back(llvm::sys::path::parent_path(llvm::sys::path::parent_path(*p)).str());
  for (const std::string &dir : candidates) {
    SmallString<256> ptxas(dir);
    llvm::sys::path::append(ptxas, "bin", "ptxas");
    if (llvm::sys::fs::can_execute(ptxas))
      return dir;
  }
  return "";
}

LogicalResult mlir::attn::compileGPU(ModuleOp module, GPUArtifact kind, std::string &artifact,
                                     std::string &launchJSON, PassManagerSetup setup) {
  bool cubin = kind == GPUArtifact::Cubin;
  OwningOpRef<ModuleOp> clone = module.clone();
  // Only the GPU functions: CPU functions in the same file go to --emit=obj.
  for (auto fn : llvm::make_early_inc_range(clone->getOps<func::FuncOp>())) {
    bool gpu = false;
    fn.walk([&](Operation *op) {
      if (std::optional<TargetKind> t = getOpTarget(op))
        gpu |= isGPUTarget(*t);
    });
    if (!gpu)
      fn.erase();
  }
  PassManager pm(module.getContext());
  if (setup && failed(setup(pm)))
    return failure();
  pm.addPass(createAttnNormalize());
  pm.addPass(createAttnSelectSchedule());
  ConvertAttnToNVVMOptions nvvmOptions;
  nvvmOptions.metadataOnly = kind == GPUArtifact::LaunchOnly;
  pm.addPass(createAttnBuildKernel()); // the kernels that go through the kernel level
  pm.addPass(createConvertAttnToNVVM(nvvmOptions));
  pm.addPass(createConvertAttnKernelToNVVM());
  if (failed(pm.run(*clone)))
    return failure();

  auto gpuModule = clone->lookupSymbol<gpu::GPUModuleOp>("attn_kernels");
  if (!gpuModule)
    return module.emitError() << "no GPU kernel was produced";
  SmallVector<std::string> launches;
  SmallVector<Location> where;
  gpuModule.walk([&](LLVM::LLVMFuncOp fn) {
    if (auto s = fn->getAttrOfType<StringAttr>("attn.launch")) {
      launches.push_back(s.str());
      where.push_back(fn.getLoc()); // the spec function's location
    }
  });
  if (launches.size() > 1)
    return emitError(where[1]) << "not supported yet: " << launches.size()
                               << " GPU kernel specs in one module; --emit=ptx/cubin takes one "
                                  "function with one attn op per file (this is the second)";
  if (launches.empty())
    return module.emitError() << "no GPU kernel was produced";
  launchJSON = launches.front();
  if (kind == GPUArtifact::LaunchOnly)
    return success();

  PassManager lower(module.getContext());
  if (setup && failed(setup(lower)))
    return failure();
  buildNVVMToLLVMPipeline(lower);
  GpuModuleToBinaryPassOptions opts;
  opts.compilationTarget = cubin ? "bin" : "isa";
  if (cubin) {
    opts.toolkitPath = findToolkit();
    if (opts.toolkitPath.empty())
      return module.emitError() << "--emit=cubin needs ptxas from the CUDA toolkit: none in "
                                   "$CUDA_HOME/bin, /usr/local/cuda/bin or PATH (--emit=ptx "
                                   "needs no toolkit)";
  }
  lower.addPass(createGpuModuleToBinaryPass(opts));
  if (failed(lower.run(*clone)))
    return failure();
  auto binary = clone->lookupSymbol<gpu::BinaryOp>("attn_kernels");
  if (!binary || binary.getObjects().empty())
    return module.emitError() << "gpu-module-to-binary produced no object";
  auto object = cast<gpu::ObjectAttr>(binary.getObjects()[0]);
  artifact = object.getObject().str();
  return success();
}
