//===- AttnOptMain.cpp - the attn-opt driver ------------------------------===//
//
// What this file is: mlir-opt's driver plus two things of ours. `--version` names attn-opt and the
// LLVM/MLIR it was built against. `--emit=<kind>` runs the pass pipeline given on the command line
// and then hands the module to emitArtifact (lib/Target/Emit.cpp) instead of printing MLIR.
//
//===----------------------------------------------------------------------===//

#include "attn/Tools/AttnOptMain.h"

#include "attn/Target/Emit.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/ToolUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
using namespace mlir::attn;

static llvm::cl::opt<EmitFormat> emitFormat(
    "emit", llvm::cl::desc("What to produce after the pass pipeline"),
    llvm::cl::init(EmitFormat::MLIR),
    llvm::cl::values(clEnumValN(EmitFormat::MLIR, "mlir", "the module as MLIR (default)"),
                     clEnumValN(EmitFormat::PTX, "ptx", "PTX for sm_90a"),
                     clEnumValN(EmitFormat::Cubin, "cubin", "a cubin for sm_90a (needs ptxas)"),
                     clEnumValN(EmitFormat::Object, "obj", "a relocatable CPU object file"),
                     clEnumValN(EmitFormat::Assembly, "asm", "CPU assembly (what --emit=obj encodes)"),
                     clEnumValN(EmitFormat::Header, "header",
                                "a C header with every kernel's signature and buffer layouts"),
                     clEnumValN(EmitFormat::Launch, "launch",
                                "the GPU kernels' launch metadata (JSON; --emit=ptx|cubin -o F "
                                "also writes it to F.launch.json)")));

/// Compiles one buffer (a whole file or one `// -----` chunk): parse, run the command-line
/// pipeline, emit the artifact into `os`.
static LogicalResult compileChunk(llvm::SourceMgr &sourceMgr, MLIRContext &context,
                                  const MlirOptMainConfig &config, llvm::raw_ostream &os,
                                  std::string &launch) {
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return failure();
  PassManager pm(&context);
  if (failed(config.setupPassPipeline(pm)) || failed(pm.run(*module)))
    return failure();
  return emitArtifact(*module, emitFormat, os, &launch);
}

/// The --emit path: like MlirOptMain (honours -split-input-file and -verify-diagnostics) but
/// ends in emitArtifact instead of printing MLIR. Diagnostics go to stderr.
static LogicalResult runEmit(StringRef inputFilename, StringRef outputFilename,
                             DialectRegistry &registry, const MlirOptMainConfig &config) {
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input = openInputFile(inputFilename, &error);
  if (!input) {
    llvm::errs() << "attn-opt: " << error << "\n";
    return failure();
  }
  std::unique_ptr<llvm::ToolOutputFile> output = openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::errs() << "attn-opt: " << error << "\n";
    return failure();
  }
  std::string launch;
  auto processChunk = [&](std::unique_ptr<llvm::MemoryBuffer> chunk,
                          llvm::raw_ostream &os) -> LogicalResult {
    MLIRContext context(registry);
    context.loadAllAvailableDialects();
    // A generic dump of the refused op adds nothing to a located message about its variant.
    context.printOpOnDiagnostic(false);
    llvm::SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(std::move(chunk), SMLoc());
    if (!config.shouldVerifyDiagnostics()) {
      SourceMgrDiagnosticHandler handler(sourceMgr, &context);
      return compileChunk(sourceMgr, context, config, os, launch);
    }
    SourceMgrDiagnosticVerifierHandler handler(sourceMgr, &context,
                                               config.verifyDiagnosticsLevel());
    (void)compileChunk(sourceMgr, context, config, os, launch);
    return handler.verify();
  };
  if (failed(splitAndProcessBuffer(std::move(input), processChunk, output->os(),
                                   config.inputSplitMarker(), config.outputSplitMarker())))
    return failure();
  output->keep();
  // GPU artifacts written to a file get their launch metadata beside them.
  if (!launch.empty() && outputFilename != "-") {
    std::unique_ptr<llvm::ToolOutputFile> meta =
        openOutputFile((outputFilename + ".launch.json").str(), &error);
    if (!meta) {
      llvm::errs() << "attn-opt: " << error << "\n";
      return failure();
    }
    meta->os() << launch;
    meta->keep();
  }
  return success();
}

int mlir::attn::attnOptMain(int argc, char **argv, DialectRegistry &registry) {
  llvm::cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "attn-opt " << ATTN_VERSION << " (built with LLVM/MLIR " << LLVM_VERSION_STRING
       << ")\n";
  });
  auto [inputFilename, outputFilename] = registerAndParseCLIOptions(
      argc, argv, "attn-opt: compiler for quantized attention kernels\n", registry);
  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();
  if (emitFormat == EmitFormat::MLIR)
    return asMainReturnCode(MlirOptMain(argc, argv, inputFilename, outputFilename, registry));
  return asMainReturnCode(runEmit(inputFilename, outputFilename, registry, config));
}
