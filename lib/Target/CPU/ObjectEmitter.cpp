//===- ObjectEmitter.cpp - CPU object files through LLVM's TargetMachine --===//
//
// What this file is: translation of a lowered module to LLVM IR, per-function target CPU and
// features from the ISA each kernel was lowered for, LLVM's O3 pipeline, and code generation to
// an ELF object or assembly — all in-process, no external tools.
//
//   ISA          triple                     cpu         extra features
//   scalar       x86_64-unknown-linux-gnu   x86-64      —
//   avx2         x86_64-unknown-linux-gnu   x86-64-v3   (AVX2, FMA, F16C)
//   avx512       x86_64-unknown-linux-gnu   x86-64-v4   (AVX-512 F/BW/DQ/VL)
//   avx512_vbmi  x86_64-unknown-linux-gnu   x86-64-v4   +avx512vbmi
//   avx512_vnni  x86_64-unknown-linux-gnu   x86-64-v4   +avx512vbmi,+avx512vnni
//   neon         aarch64-unknown-linux-gnu  generic     +neon
//
//===----------------------------------------------------------------------===//

#include "attn/Target/CPU.h"

#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/StandardInstrumentations.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Triple.h"

using namespace mlir;
using namespace mlir::attn;

namespace {
struct CPUSpec {
  const char *triple, *cpu, *features;
};

CPUSpec specFor(TargetKind isa) {
  switch (isa) {
  case TargetKind::avx2:
    return {"x86_64-unknown-linux-gnu", "x86-64-v3", ""};
  case TargetKind::avx512:
    return {"x86_64-unknown-linux-gnu", "x86-64-v4", ""};
  case TargetKind::avx512_vbmi:
    return {"x86_64-unknown-linux-gnu", "x86-64-v4", "+avx512vbmi"};
  case TargetKind::avx512_vnni:
    return {"x86_64-unknown-linux-gnu", "x86-64-v4", "+avx512vbmi,+avx512vnni"};
  case TargetKind::neon:
    return {"aarch64-unknown-linux-gnu", "generic", "+neon"};
  default:
    return {"x86_64-unknown-linux-gnu", "x86-64", ""};
  }
}

/// LLVM's O3 pipeline, honouring `optnone` (the check functions of a kernel of several ops: straight
/// lines of compares, run once per call).
void optimize(llvm::Module &m, llvm::TargetMachine *tm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassInstrumentationCallbacks pic;
  llvm::OptNoneInstrumentation optNone(/*DebugLogging=*/false);
  optNone.registerCallbacks(pic);
  llvm::PipelineTuningOptions tuning;
  tuning.LoopUnrolling = true;
  tuning.LoopInterleaving = true;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  llvm::PassBuilder pb(tm, tuning, std::nullopt, &pic);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(m, mam);
}

void initializeTargets() {
  static bool done = [] {
    llvm::InitializeAllTargetInfos();
    llvm::InitializeAllTargets();
    llvm::InitializeAllTargetMCs();
    llvm::InitializeAllAsmPrinters();
    return true;
  }();
  (void)done;
}
} // namespace

LogicalResult mlir::attn::emitCPUObject(ModuleOp module, const llvm::StringMap<TargetKind> &isaOf,
                                        bool assembly, llvm::raw_ostream &os) {
  // One object, one architecture: pick it from the kernels' ISAs.
  std::optional<StringRef> triple;
  for (const auto &entry : isaOf) {
    StringRef t = specFor(entry.getValue()).triple;
    if (triple && *triple != t)
      return module.emitError() << "one object holds one architecture, but the kernels target "
                                   "both x86-64 and AArch64; split them into two modules";
    triple = t;
  }
  if (!triple)
    triple = specFor(TargetKind::scalar).triple;

  initializeTargets();
  std::string error;
  llvm::Triple llvmTriple(*triple);
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(llvmTriple, error);
  if (!target)
    return module.emitError() << "LLVM has no back end for " << *triple << ": " << error;
  // The module-level machine uses the baseline CPU; each function gets its own ISA below.
  CPUSpec base = specFor(llvmTriple.isAArch64() ? TargetKind::neon : TargetKind::scalar);
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      llvmTriple, base.cpu, base.features, llvm::TargetOptions(), llvm::Reloc::PIC_));
  if (!tm)
    return module.emitError() << "cannot create a target machine for " << *triple;

  registerBuiltinDialectTranslation(*module.getContext());
  registerLLVMDialectTranslation(*module.getContext());
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule = translateModuleToLLVMIR(module, llvmContext, "attn");
  if (!llvmModule)
    return module.emitError() << "translation to LLVM IR failed";
  llvmModule->setTargetTriple(llvmTriple);
  llvmModule->setDataLayout(tm->createDataLayout());
  for (llvm::Function &f : *llvmModule) {
    if (f.isDeclaration())
      continue;
    StringRef name = f.getName();
    name.consume_front("_mlir_ciface_");
    name.consume_front(kKernelSymbolPrefix);
    // `<kernel>.check<j>` and `<kernel>.op<i>` (a kernel of several ops) belong to their kernel;
    // anything else gets the object's baseline.
    auto it = isaOf.find(name);
    if (it == isaOf.end())
      it = isaOf.find(name.split('.').first);
    CPUSpec spec = it == isaOf.end() ? base : specFor(it->getValue());
    f.addFnAttr("target-cpu", spec.cpu);
    if (*spec.features)
      f.addFnAttr("target-features", spec.features);
  }
  optimize(*llvmModule, tm.get());
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream bufferStream(buffer);
  llvm::legacy::PassManager codegen;
  if (tm->addPassesToEmitFile(codegen, bufferStream, nullptr,
                              assembly ? llvm::CodeGenFileType::AssemblyFile
                                       : llvm::CodeGenFileType::ObjectFile))
    return module.emitError() << "LLVM cannot emit " << (assembly ? "assembly" : "objects")
                              << " for " << *triple;
  codegen.run(*llvmModule);
  os.write(buffer.data(), buffer.size());
  return success();
}
