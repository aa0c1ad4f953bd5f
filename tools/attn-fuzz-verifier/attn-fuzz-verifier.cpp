//===- attn-fuzz-verifier.cpp - deterministic mutation fuzzing of specs ---===//
//
// What this file is: a seeded, deterministic mutation fuzzer of the attn parser, verifiers and
// spec-level passes. It splits seed files on `// -----`, mutates the chunks (byte flips, span
// deletion and duplication, dictionary tokens, interesting integers, truncation), and for every
// mutant checks three properties in-process:
//   1. parsing either succeeds or reports at least one error diagnostic (no silent rejection);
//   2. a module that parses and verifies prints to text that parses and verifies again;
//   3. a module holding kernel-level (attnk) ops goes through convert-attnk-to-nvvm, which either
//      succeeds or reports an error;
//   4. attn-normalize + attn-select-schedule, then attn-build-kernel on the result (and, for
//      every Nth module, convert-attnk-to-nvvm after it), and --emit=launch/header (for every
//      Nth module ptx and obj through LLVM) either succeed or report an error.
// A crash, a sanitizer report or a hang (caught by lit's timeout) fails the run; so does a
// violated property. Prints a one-line summary.
//
//===----------------------------------------------------------------------===//

#include "attn/Conversion/Passes.h"
#include "attn/Dialect/Attn/IR/Attn.h"
#include "attn/Dialect/Attn/Transforms/Passes.h"
#include "attn/Dialect/AttnKernel/IR/AttnKernel.h"
#include "attn/InitAll.h"
#include "attn/Target/Emit.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <random>

using namespace mlir;

static llvm::cl::list<std::string> inputFiles(llvm::cl::Positional, llvm::cl::OneOrMore,
                                              llvm::cl::desc("<seed files>"));
static llvm::cl::opt<unsigned> numMutations("mutations", llvm::cl::init(100000),
                                            llvm::cl::desc("number of mutants to run"));
static llvm::cl::opt<unsigned> seed("seed", llvm::cl::init(1), llvm::cl::desc("RNG seed"));
static llvm::cl::opt<unsigned> codegenEvery(
    "codegen-every", llvm::cl::init(50),
    llvm::cl::desc("run the full CPU code generation (--emit=obj) on every Nth accepted module; "
                   "the others stop at --emit=header"));
static llvm::cl::opt<std::string> lastInput(
    "last-input", llvm::cl::init(""),
    llvm::cl::desc("write each input to this file before running it, so that a crash leaves "
                   "its reproducer behind"));
static llvm::cl::opt<bool> dumpFailures("dump-failures", llvm::cl::init(false),
                                        llvm::cl::desc("print inputs that violate a property"));

/// Tokens that steer mutants towards the attn grammar's corners.
static const char *const kDictionary[] = {
    "<", ">", ",", "=", "[", "]", "(", ")", "?", "x", ":", "%q", "#attn.quant<", "#attn.schedule<",
    "#attn.pq<", "#attn.mode<", "#attn.target<", "per_group<", "per_block<", "asymmetric",
    "symmetric", "scale = f16", "i4", "ui8", "f8E5M2", "f8E4M3FN", "bf16", "f32", "i1", "index",
    "memref<", "memref<?x?x?x?xi8>", "split_kv = auto", "roles = [",
    "producer<warpgroups = 1, regs = 24>", "consumer<warpgroups = 4, regs = 256>", "cluster = [",
    "crossover = true", "causal", "decode", "prefill", "sm_90a", "avx2", "neon", "avx512_vbmi",
    "pack_q_heads = ", "tile_n = ", "stages = ", "dsub = ", "centroids = ", "block = ",
    "head_dim_v = ", "rope_dim = ", "// -----", "\"", "{", "}", "}}", "attn.attention",
    "attn.pq.scores", "attn.mla_decode", "attn.quantize.append", "attn.quantize.mla_append",
    // The kernel level (attnk): its types, forms and the ops of the combine and quantize kernels.
    "!attnk.groups<", "!attnk.stage<", "!attnk.ring<", "!attnk.acc<", "!attnk.frag<", "narrow",
    "wide", "threads = ", "programmatic", "attnk.kernel", "attnk.merge.combine",
    "attnk.quantize_tile", "attnk.load_groups", "attnk.group_scales", "attnk.store_groups",
    "attnk.hadamard", "attnk.group_index", "attnk.token_rows", "whole_tokens", "contiguous",
    "offset = ", "scale_offset = ", "#attnk.launch<", "grid = [", "params = [", "metadata = {",
    "extra = {", "!attnk.rows", "<partial>", "rows(", "attnk.softmax_finish", "{hadamard}",
    "attnk.forward.merge_warpgroups", "attnk.forward.epilogue"};

static const char *const kIntegers[] = {"0",  "1",   "-1",  "2",    "3",   "7",   "8",
                                        "16", "31",  "32",  "63",   "64",  "65",  "127",
                                        "128", "255", "256", "1024", "4096", "65536",
                                        "2147483647", "2147483648", "-9223372036854775808",
                                        "9223372036854775807", "99999999999999999999999"};

namespace {
class Mutator {
public:
  explicit Mutator(unsigned seed) : rng(seed) {}

  std::string mutate(const std::string &in) {
    std::string s = in;
    unsigned rounds = 1 + pick(4);
    for (unsigned r = 0; r < rounds; ++r)
      applyOne(s);
    return s;
  }

private:
  std::mt19937_64 rng;
  size_t pick(size_t n) { return n ? static_cast<size_t>(rng() % n) : 0; }

  void applyOne(std::string &s) {
    if (s.empty()) {
      s = kDictionary[pick(std::size(kDictionary))];
      return;
    }
    size_t pos = pick(s.size());
    switch (pick(8)) {
    case 0: // flip a byte
      s[pos] = static_cast<char>(pick(256));
      break;
    case 1: { // delete a span
      size_t len = 1 + pick(std::min<size_t>(32, s.size() - pos));
      s.erase(pos, len);
      break;
    }
    case 2: { // duplicate a span
      size_t len = 1 + pick(std::min<size_t>(64, s.size() - pos));
      s.insert(pos, s.substr(pos, len));
      break;
    }
    case 3: // insert a dictionary token
      s.insert(pos, kDictionary[pick(std::size(kDictionary))]);
      break;
    case 4: { // replace the next integer with an interesting one
      size_t start = s.find_first_of("0123456789", pos);
      if (start == std::string::npos)
        break;
      size_t end = s.find_first_not_of("0123456789", start);
      s.replace(start, (end == std::string::npos ? s.size() : end) - start,
                kIntegers[pick(std::size(kIntegers))]);
      break;
    }
    case 5: // truncate
      s.resize(pos);
      break;
    case 6: { // swap two lines
      size_t a = s.rfind('\n', pos), b = s.find('\n', pos + 1);
      if (a == std::string::npos || b == std::string::npos)
        break;
      size_t c = s.find('\n', b + 1);
      if (c == std::string::npos)
        break;
      std::string l1 = s.substr(a + 1, b - a - 1), l2 = s.substr(b + 1, c - b - 1);
      s.replace(a + 1, c - a - 1, l2 + "\n" + l1);
      break;
    }
    default: { // replace a keyword-ish identifier with a dictionary token
      size_t start = s.find_first_of("abcdefghijklmnopqrstuvwxyz_", pos);
      if (start == std::string::npos)
        break;
      size_t end = s.find_first_not_of("abcdefghijklmnopqrstuvwxyz_0123456789", start);
      s.replace(start, (end == std::string::npos ? s.size() : end) - start,
                kDictionary[pick(std::size(kDictionary))]);
      break;
    }
    }
  }
};

struct Stats {
  unsigned inputs = 0, parsed = 0, rejected = 0, pipelineOk = 0, pipelineRejected = 0;
  unsigned kernelOk = 0, kernelRejected = 0, skipped = 0;
  unsigned violations = 0;
};
} // namespace

/// Runs `passes` on a copy of `module`: success, or failure with a new error diagnostic.
static void runOnCopy(ModuleOp module, function_ref<void(PassManager &)> passes,
                      const unsigned &errors, Stats &stats,
                      function_ref<void(StringRef)> violation) {
  OwningOpRef<ModuleOp> copy = module.clone();
  PassManager pm(module.getContext());
  passes(pm);
  unsigned before = errors;
  if (succeeded(pm.run(*copy))) {
    ++stats.kernelOk;
    return;
  }
  ++stats.kernelRejected;
  if (errors == before)
    violation("kernel-level pass failed without a diagnostic");
}

/// Whether the module holds an op of the kernel level.
static bool hasKernelOps(ModuleOp module) {
  return module
      .walk([](Operation *op) {
        return isa_and_nonnull<attnk::AttnKernelDialect>(op->getDialect()) ? WalkResult::interrupt()
                                                                           : WalkResult::advance();
      })
      .wasInterrupted();
}

/// Whether the text uses a result of number > 65535 (`%x#N`): MLIR's parser (upstream, not this
/// project) allocates a forward reference's result group up to N and runs out of memory.
static bool hasHugeResultNumber(StringRef text) {
  for (size_t i = text.find('#'); i != StringRef::npos; i = text.find('#', i + 1)) {
    StringRef digits = text.drop_front(i + 1).take_while(llvm::isDigit);
    uint64_t n;
    if (i > 0 && (llvm::isAlnum(text[i - 1]) || text[i - 1] == '_') && !digits.empty() &&
        (digits.size() > 9 || (!digits.getAsInteger(10, n) && n > 65535)))
      return true;
  }
  return false;
}

/// Runs one input through parse, round trip, passes and emit; records property violations.
static void runOne(const std::string &text, DialectRegistry &registry, Stats &stats) {
  if (hasHugeResultNumber(text)) {
    ++stats.skipped;
    return;
  }
  ++stats.inputs;
  if (!lastInput.empty()) {
    std::error_code ec;
    llvm::raw_fd_ostream os(lastInput, ec);
    os << text;
  }
  // Dialects load on demand (the parser for what the text names, passes for what they create):
  // loading all of them (GPU, NVVM, ...) for each of 100 000 contexts dominated the run time.
  MLIRContext ctx(registry, MLIRContext::Threading::DISABLED);
  unsigned errors = 0;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    if (d.getSeverity() == DiagnosticSeverity::Error)
      ++errors;
    return success();
  });
  auto violation = [&](StringRef what) {
    ++stats.violations;
    if (dumpFailures)
      llvm::errs() << "=== property violated: " << what << "\n" << text << "\n";
  };

  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, ParserConfig(&ctx));
  if (!module) {
    ++stats.rejected;
    if (errors == 0)
      violation("rejected without a diagnostic");
    return;
  }
  ++stats.parsed;

  std::string printed;
  llvm::raw_string_ostream os(printed);
  module->print(os);
  unsigned before = errors;
  OwningOpRef<ModuleOp> again = parseSourceString<ModuleOp>(printed, ParserConfig(&ctx));
  if (!again || errors != before) {
    violation("printed module does not parse again");
    return;
  }

  // The kernel level's own inputs: straight to NVVM.
  if (hasKernelOps(*module))
    runOnCopy(
        *module, [](PassManager &pm) { pm.addPass(attn::createConvertAttnKernelToNVVM()); }, errors,
        stats, violation);

  PassManager pm(&ctx);
  attn::AttnNormalizeOptions opts;
  opts.defaultTarget = "sm_90a";
  pm.addPass(attn::createAttnNormalize(opts));
  pm.addPass(attn::createAttnSelectSchedule());
  before = errors;
  if (failed(pm.run(*module))) {
    ++stats.pipelineRejected;
    if (errors == before)
      violation("pass pipeline failed without a diagnostic");
    return;
  }
  ++stats.pipelineOk;
  if (failed(verify(*module)))
    violation("pass pipeline produced an invalid module");
  bool codegen = codegenEvery && stats.pipelineOk % codegenEvery == 0;
  // The scheduled spec through the kernel level (the pass manager verifies what
  // attn-build-kernel builds); every `codegen-every`-th also to NVVM (--emit=launch/ptx below
  // lowers the kernels of a GPU spec that passes the placement checks anyway).
  runOnCopy(
      *module,
      [codegen](PassManager &pm) {
        pm.addPass(attn::createAttnBuildKernel());
        if (codegen)
          pm.addPass(attn::createConvertAttnKernelToNVVM());
      },
      errors, stats, violation);
  // Every module goes through the GPU lowering up to its launch metadata (convert-attn-to-nvvm:
  // refusals, plans, kernel IR) and the header; full LLVM code generation (PTX, objects) only
  // every `codegen-every`-th.
  for (attn::EmitFormat f : {codegen ? attn::EmitFormat::PTX : attn::EmitFormat::Launch,
                             attn::EmitFormat::Header,
                             codegen ? attn::EmitFormat::Object : attn::EmitFormat::Header}) {
    std::string artifact;
    llvm::raw_string_ostream aos(artifact);
    before = errors;
    if (failed(attn::emitArtifact(*module, f, aos)) && errors == before)
      violation("emit failed without a diagnostic");
  }
}

/// Splits a file on `// -----` lines, as --split-input-file does.
static std::vector<std::string> splitChunks(StringRef buffer) {
  std::vector<std::string> chunks;
  SmallVector<StringRef> parts;
  buffer.split(parts, "// -----");
  for (StringRef p : parts)
    if (!p.trim().empty())
      chunks.push_back(p.str());
  return chunks;
}

int main(int argc, char **argv) {
  llvm::cl::ParseCommandLineOptions(argc, argv, "attn mutation fuzzer\n");
  DialectRegistry registry;
  attn::registerAllDialects(registry);

  std::vector<std::string> seeds;
  for (const std::string &path : inputFiles) {
    auto buf = llvm::MemoryBuffer::getFile(path);
    if (!buf) {
      llvm::errs() << "attn-fuzz-verifier: cannot read " << path << "\n";
      return 2;
    }
    for (std::string &c : splitChunks((*buf)->getBuffer()))
      seeds.push_back(std::move(c));
  }
  if (seeds.empty()) {
    llvm::errs() << "attn-fuzz-verifier: no seed inputs\n";
    return 2;
  }

  Stats stats;
  for (const std::string &s : seeds) // the seeds themselves first
    runOne(s, registry, stats);
  Mutator mutator(seed);
  std::mt19937_64 pickSeed(seed * 7919u + 1);
  for (unsigned i = 0; i < numMutations; ++i)
    runOne(mutator.mutate(seeds[pickSeed() % seeds.size()]), registry, stats);

  llvm::outs() << "seeds: " << seeds.size() << " inputs: " << stats.inputs
               << " parsed: " << stats.parsed << " rejected: " << stats.rejected
               << " pipeline-ok: " << stats.pipelineOk
               << " pipeline-rejected: " << stats.pipelineRejected
               << " kernel-ok: " << stats.kernelOk << " kernel-rejected: " << stats.kernelRejected
               << " skipped: " << stats.skipped << " violations: " << stats.violations << "\n";
  return stats.violations == 0 ? 0 : 1;
}
