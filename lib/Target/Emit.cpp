//===- Emit.cpp - attn-opt --emit: from a module to an artifact -----------===//
//
// What this file is: the dispatcher behind `--emit=ptx|cubin|obj|asm|header`. It checks that every
// attn op of the module can go to the requested artifact (target kind, lowering available) and
// produces it: CPU modules through convert-attn-to-cpu and lib/Target/CPU; GPU variants, which
// have no lowering yet, are refused with a located "not supported yet" diagnostic naming the
// variant — never an empty or fake artifact. Before anything is built, every attn op's placement
// and function name are checked (checkKernelPlacement) and a GPU module of several specs is
// refused.
//
//===----------------------------------------------------------------------===//

#include "attn/Target/Emit.h"

#include "attn/Conversion/Passes.h"
#include "attn/Dialect/Attn/IR/Attn.h"
#include "attn/Target/CPU.h"
#include "attn/Target/GPU.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/SmallVectorExtras.h"


using namespace mlir;
using namespace mlir::attn;

StringRef mlir::attn::stringifyEmitFormat(EmitFormat f) {
  switch (f) {
  case EmitFormat::MLIR:
    return "mlir";
  case EmitFormat::PTX:
    return "ptx";
  case EmitFormat::Cubin:
    return "cubin";
  case EmitFormat::Object:
    return "obj";
  case EmitFormat::Assembly:
    return "asm";
  case EmitFormat::Header:
    return "header";
  case EmitFormat::Launch:
    return "launch";
  }
  llvm_unreachable("unknown emit format");
}

/// Rank of an x86 ISA in "a function using both needs the wider": scalar < avx2 < avx512 < vbmi.
static int x86Rank(TargetKind t) {
  switch (t) {
  case TargetKind::avx2:
    return 1;
  case TargetKind::avx512:
    return 2;
  case TargetKind::avx512_vbmi:
    return 3;
  default:
    return 0;
  }
}

/// Header, object or assembly for a module whose attn ops all have CPU targets.
static LogicalResult emitCPU(ModuleOp module, EmitFormat format, llvm::raw_ostream &os,
                             PassManagerSetup setup) {
  llvm::StringMap<TargetKind> isaOf;
  for (auto fn : module.getOps<func::FuncOp>()) {
    std::optional<TargetKind> isa;
    WalkResult r = fn.walk([&](Operation *op) {
      std::optional<TargetKind> t = getOpTarget(op);
      if (!t || !llvm::isa<AttnDialect>(op->getDialect()))
        return WalkResult::advance();
      if (isa && (*isa == TargetKind::neon) != (*t == TargetKind::neon)) {
        op->emitError() << "one function holds one architecture; this op targets "
                        << stringifyTargetKind(*t) << ", another " << stringifyTargetKind(*isa);
        return WalkResult::interrupt();
      }
      if (!isa || x86Rank(*t) > x86Rank(*isa))
        isa = t;
      return WalkResult::advance();
    });
    if (r.wasInterrupted())
      return failure();
    if (isa)
      isaOf[fn.getSymName()] = *isa;
  }
  if (format == EmitFormat::Header)
    return emitCPUHeader(module, isaOf, os);

  OwningOpRef<ModuleOp> clone = module.clone();
  SymbolTable symbols(*clone);
  for (auto fn : llvm::make_early_inc_range(clone->getOps<func::FuncOp>()))
    if (!fn.isDeclaration() &&
        failed(symbols.rename(fn, (Twine(kKernelSymbolPrefix) + fn.getSymName()).str())))
      return fn.emitError() << "cannot rename the kernel's internal symbol";
  PassManager pm(module.getContext());
  if (setup && failed(setup(pm)))
    return failure();
  pm.addPass(createConvertAttnToCPU());
  buildCPUToLLVMPipeline(pm);
  if (failed(pm.run(*clone)))
    return failure();
  // convert-attn-to-cpu moves the ops of a kernel that holds several into `<kernel>.op<i>`
  // functions: they take their kernel's ISA.
  for (auto fn : clone->getOps<LLVM::LLVMFuncOp>()) {
    StringRef name = fn.getSymName();
    if (!name.consume_front(kKernelSymbolPrefix))
      continue;
    auto [kernel, index] = name.rsplit(".op");
    auto isa = isaOf.find(kernel);
    if (!index.empty() && llvm::all_of(index, llvm::isDigit) && isa != isaOf.end())
      isaOf[name] = isa->getValue();
  }
  return emitCPUObject(*clone, isaOf, format == EmitFormat::Assembly, os);
}

LogicalResult mlir::attn::emitArtifact(ModuleOp module, EmitFormat format, llvm::raw_ostream &os,
                                       std::string *launchJSON, PassManagerSetup setup) {
  if (format == EmitFormat::MLIR)
    return success(); // printed by the MLIR driver itself
  AttnDialect *dialect = module.getContext()->getLoadedDialect<AttnDialect>();
  SmallVector<Operation *> kernels;
  module.walk([&](Operation *op) {
    if (dialect && op->getDialect() == dialect)
      kernels.push_back(op);
  });
  if (kernels.empty())
    return module.emitError() << "nothing to emit: the module holds no attn op";

  bool wantsGPU = format == EmitFormat::PTX || format == EmitFormat::Cubin ||
                  format == EmitFormat::Launch;
  bool wantsCPU = format == EmitFormat::Object || format == EmitFormat::Assembly;
  bool ok = true, anyGPU = false;
  for (Operation *op : kernels) {
    std::optional<TargetKind> target = getOpTarget(op);
    if (!target) {
      op->emitError() << "no target: write target = #attn.target<...> or run "
                         "attn-normalize{target=...}";
      ok = false;
      continue;
    }
    if ((wantsGPU && !isGPUTarget(*target)) || (wantsCPU && isGPUTarget(*target))) {
      op->emitError() << "--emit=" << stringifyEmitFormat(format) << " needs a "
                      << (wantsGPU ? "GPU (sm_90a)" : "CPU") << " target, but this op targets "
                      << stringifyTargetKind(*target);
      ok = false;
      continue;
    }
    anyGPU |= isGPUTarget(*target);
  }
  if (!ok)
    return failure();
  // Placement and names, for every op before any kernel is built.
  llvm::SmallPtrSet<Operation *, 8> gpuParents; // one report per GPU function
  for (Operation *op : kernels) {
    bool gpu = isGPUTarget(*getOpTarget(op));
    if (gpu && !gpuParents.insert(op->getParentOp()).second)
      continue;
    ok &= succeeded(checkKernelPlacement(op, module, gpu));
  }
  if (!ok)
    return failure();
  if (!wantsGPU) // the header and the object take every defined function
    for (auto fn : module.getOps<func::FuncOp>())
      if (!fn.isDeclaration() && failed(checkKernelFunctionName(fn)))
        return failure();
  if (wantsGPU) {
    // One GPU spec per artifact: refuse a module of many before building any of them.
    auto gpuOps = llvm::filter_to_vector(
        kernels, [](Operation *op) { return isGPUTarget(*getOpTarget(op)); });
    if (gpuOps.size() > 1)
      return gpuOps[1]->emitError()
             << "not supported yet: " << gpuOps.size()
             << " GPU kernel specs in one module; --emit=" << stringifyEmitFormat(format)
             << " takes one function with one attn op per file (this is the second)";
  }
  if (!wantsGPU && !anyGPU)
    return emitCPU(module, format, os, setup);
  if (!wantsGPU) {
    for (Operation *op : kernels)
      if (isGPUTarget(*getOpTarget(op)))
        op->emitError() << "--emit=" << stringifyEmitFormat(format)
                        << " needs a CPU target, but this op targets sm_90a";
    return failure();
  }
  std::string artifact, launch;
  GPUArtifact kind = format == EmitFormat::Cubin    ? GPUArtifact::Cubin
                     : format == EmitFormat::Launch ? GPUArtifact::LaunchOnly
                                                    : GPUArtifact::PTX;
  if (failed(compileGPU(module, kind, artifact, launch, setup)))
    return failure();
  if (format == EmitFormat::Launch) {
    os << launch;
    return success();
  }
  os << artifact;
  if (launchJSON)
    *launchJSON = launch;
  return success();
}
