//===- AttnOptMain.cpp - the attn-opt driver ------------------------------===//
//
// What this file is: mlir-opt's driver plus things of ours. `--version` names attn-opt and the
// LLVM/MLIR it was built against. `--emit=<kind>` runs the pass pipeline given on the command line
// and then hands the module to emitArtifact (lib/Target/Emit.cpp) instead of printing MLIR.
// `--help` lists our options and passes first and hides LLVM's internal options (--help-hidden
// shows them). The input is read once (at most kMaxInputBytes, so that /dev/zero or an endless
// pipe is refused instead of filling memory), refused when it holds a NUL byte (MLIR's lexer stops
// there and would ignore the rest) or nests deeper than kMaxNesting, and compiled on a thread
// with a large stack, so that no input can overflow the parser's recursion.
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
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/PrettyStackTrace.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/thread.h"

using namespace mlir;
using namespace mlir::attn;

/// Our options and passes: `--help` prints this category first (categories sort by name).
static llvm::cl::OptionCategory attnCategory("Attn-opt options and passes");

static llvm::cl::opt<EmitFormat> emitFormat(
    "emit", llvm::cl::desc("What to produce after the pass pipeline"),
    llvm::cl::init(EmitFormat::MLIR), llvm::cl::cat(attnCategory),
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
  // --mlir-print-ir-*, the crash reproducer and the other pass-manager flags apply to the
  // command-line pipeline and to every pipeline emitArtifact runs inside (registered by
  // registerCLIOptions in parseOptions).
  auto applyFlags = [](PassManager &pm) { return applyPassManagerCLOptions(pm); };
  PassManager pm(&context);
  if (failed(applyFlags(pm)) || failed(config.setupPassPipeline(pm)) || failed(pm.run(*module)))
    return failure();
  return emitArtifact(*module, emitFormat, os, &launch, applyFlags);
}

/// The --emit path: like MlirOptMain (honours -split-input-file and -verify-diagnostics) but
/// ends in emitArtifact instead of printing MLIR. Diagnostics go to stderr.
static LogicalResult runEmit(std::unique_ptr<llvm::MemoryBuffer> input, StringRef outputFilename,
                             DialectRegistry &registry, const MlirOptMainConfig &config) {
  std::string error;
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

/// Deepest nesting of brackets ((), [], {}, <>) an input may have. Real specs stay far below;
/// the parser, verifier and printer recurse once per level.
static constexpr int64_t kMaxNesting = 1000;
/// Stack of the compile thread: kMaxNesting levels take a few MiB even in sanitizer builds.
static constexpr unsigned kCompileStackBytes = 256u << 20;

/// Largest input attn-opt reads, in bytes: specs are kilobytes.
static constexpr size_t kMaxInputBytes = size_t(256) << 20;

/// The input file (`-`: stdin), read through a bounded loop: more than kMaxInputBytes (an endless
/// source such as /dev/zero included) or a directory is an error, not an allocation failure.
static std::unique_ptr<llvm::MemoryBuffer> readInput(StringRef filename, std::string &error) {
  bool isStdin = filename == "-";
  std::string shown = isStdin ? "<stdin>" : filename.str();
  llvm::sys::fs::file_t fd = llvm::sys::fs::getStdinHandle();
  if (!isStdin) {
    if (llvm::sys::fs::is_directory(filename)) {
      error = ("cannot read input file '" + filename + "': it is a directory").str();
      return nullptr;
    }
    llvm::Expected<llvm::sys::fs::file_t> opened = llvm::sys::fs::openNativeFileForRead(filename);
    if (!opened) {
      error = ("cannot open input file '" + filename + "': " + toString(opened.takeError())).str();
      return nullptr;
    }
    fd = *opened;
  }
  std::string data;
  char chunk[1 << 16];
  while (true) {
    llvm::Expected<size_t> n = llvm::sys::fs::readNativeFile(fd, chunk);
    if (!n) {
      error = "cannot read input file '" + shown + "': " + toString(n.takeError());
      break;
    }
    if (*n == 0)
      break;
    if (data.size() + *n > kMaxInputBytes) {
      error = ("input file '" + shown + "' is larger than " + Twine(kMaxInputBytes >> 20) +
               " MiB; attn-opt reads at most that")
                  .str();
      break;
    }
    data.append(chunk, *n);
  }
  if (!isStdin)
    llvm::sys::fs::closeFile(fd);
  if (!error.empty())
    return nullptr;
  return llvm::MemoryBuffer::getMemBufferCopy(data, isStdin ? "<stdin>" : filename);
}

/// Fails with a located error when `buffer` holds a NUL byte or nests brackets deeper than
/// kMaxNesting (strings and `//` comments skipped; `->` is no bracket).
static LogicalResult checkInput(const llvm::MemoryBuffer &buffer) {
  StringRef text = buffer.getBuffer();
  auto refuse = [&](size_t at, const Twine &message) {
    llvm::SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBuffer(buffer.getMemBufferRef()),
                                 SMLoc());
    sourceMgr.PrintMessage(llvm::errs(), SMLoc::getFromPointer(text.data() + at),
                           llvm::SourceMgr::DK_Error, message);
    return failure();
  };
  if (size_t nul = text.find('\0'); nul != StringRef::npos)
    return refuse(nul, "the input holds a NUL byte: MLIR text ends there, and what follows "
                       "would be ignored");
  int64_t depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {
      for (++i; i < text.size() && text[i] != '"' && text[i] != '\n'; ++i)
        i += text[i] == '\\';
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      i = std::min(text.size(), text.find('\n', i)) - 1;
    } else if (c == '(' || c == '[' || c == '{' || c == '<') {
      if (++depth <= kMaxNesting)
        continue;
      return refuse(i, "nesting deeper than " + Twine(kMaxNesting) +
                           " levels of brackets; attn-opt takes at most " + Twine(kMaxNesting));
    } else if (c == ')' || c == ']' || c == '}' || (c == '>' && (i == 0 || text[i - 1] != '-'))) {
      depth = std::max<int64_t>(0, depth - 1);
    }
  }
  return success();
}

/// Registers the command-line options and parses them. LLVM's own options (registered before
/// this runs) are hidden; the pass list joins our category.
static std::pair<std::string, std::string> parseOptions(int argc, char **argv,
                                                        DialectRegistry &registry) {
  SmallVector<llvm::cl::Option *> internal;
  for (auto &entry : llvm::cl::getRegisteredOptions())
    internal.push_back(entry.second);
  std::string header =
      registerCLIOptions("attn-opt: compiler for quantized attention kernels\n", registry);
  for (llvm::cl::Option *o : internal) {
    bool generic = llvm::any_of(o->Categories, [](llvm::cl::OptionCategory *c) {
      return c->getName() == "Generic Options";
    });
    if (!generic && o != &emitFormat && o->getOptionHiddenFlag() == llvm::cl::NotHidden)
      o->setHiddenFlag(llvm::cl::Hidden);
  }
  if (llvm::cl::Option *passes = llvm::cl::getRegisteredOptions().lookup("attn-normalize"))
    passes->addCategory(attnCategory);
  return parseCLIOptions(argc, argv, header);
}

/// Everything after option parsing, on the compile thread.
static LogicalResult run(StringRef inputFilename, StringRef outputFilename,
                         DialectRegistry &registry, int argc, char **argv) {
  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();
  if (config.shouldShowDialects() || config.shouldListPasses())
    return MlirOptMain(argc, argv, inputFilename, outputFilename, registry);
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input = readInput(inputFilename, error);
  if (!input) {
    llvm::errs() << "attn-opt: " << error << "\n";
    return failure();
  }
  if (failed(checkInput(*input)))
    return failure();
  if (emitFormat != EmitFormat::MLIR)
    return runEmit(std::move(input), outputFilename, registry, config);
  std::unique_ptr<llvm::ToolOutputFile> output = openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::errs() << "attn-opt: " << error << "\n";
    return failure();
  }
  if (failed(MlirOptMain(output->os(), std::move(input), registry, config)))
    return failure();
  output->keep();
  return success();
}

int mlir::attn::attnOptMain(int argc, char **argv, DialectRegistry &registry) {
  llvm::setBugReportMsg("attn-opt crashed: this is a bug in attn-opt, not in the input. Please "
                        "report it with the input file and the command line above.\n");
  llvm::cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "attn-opt " << ATTN_VERSION << " (built with LLVM/MLIR " << LLVM_VERSION_STRING
       << ")\n";
  });
  auto [inputFilename, outputFilename] = parseOptions(argc, argv, registry);
  LogicalResult result = failure();
  llvm::thread compile(std::optional<unsigned>(kCompileStackBytes), [&] {
    result = run(inputFilename, outputFilename, registry, argc, argv);
  });
  compile.join();
  return asMainReturnCode(result);
}
