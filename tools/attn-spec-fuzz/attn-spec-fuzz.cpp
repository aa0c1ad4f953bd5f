//===- attn-spec-fuzz.cpp - structure-aware fuzzing of specs to artifacts -===//
//
// What this file is: a seeded, deterministic generator-based fuzzer. SpecGenerator writes
// well-formed modules across the dimensions a user controls (extents, dynamic dims, layouts,
// memory spaces, placement, function names, schedule fields, aliasing); each goes through
// attn-opt's --emit path in-process (GPU specs to their launch metadata, and every Nth to PTX;
// CPU specs to the C header, and every Nth to an object), and these properties are checked:
//   1. nothing crashes (a crash or a sanitizer report fails the run);
//   2. a refused spec has an error diagnostic located in the input (file:line:col);
//   3. an accepted spec gives a non-empty artifact whose parameters match the spec: the launch
//      metadata's problem extents (batch, q_len, heads, head_dim, kv_len; -1 where dynamic) and
//      kernel names, the PTX's entry, the header's wrapper name and parameter count;
//   4. a spec the generator made hostile in a way no target takes (a zero or > 2^31 - 1 extent,
//      a non-identity layout, a memory space, a misplaced op, a name that is no identifier, a
//      zero schedule field, an aliased output, a grid beyond its limits) is refused.
// Prints a one-line summary; exits 1 on any violation.
//
//===----------------------------------------------------------------------===//

#include "SpecGenerator.h"

#include "attn/InitAll.h"
#include "attn/Target/Emit.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using attnfuzz::GeneratedSpec;

static llvm::cl::opt<uint64_t> numRuns("runs", llvm::cl::init(2000),
                                       llvm::cl::desc("number of specs to generate"));
static llvm::cl::opt<uint64_t> seed("seed", llvm::cl::init(1), llvm::cl::desc("RNG seed"));
static llvm::cl::opt<unsigned> codegenEvery(
    "codegen-every", llvm::cl::init(100),
    llvm::cl::desc("full code generation (PTX, CPU object) for every Nth accepted spec; 0: never"));
static llvm::cl::opt<bool> dumpFailures("dump-failures", llvm::cl::init(false),
                                        llvm::cl::desc("print specs that violate a property"));
static llvm::cl::opt<std::string> lastInput(
    "last-input", llvm::cl::init(""),
    llvm::cl::desc("write each spec to this file before running it (a crash's reproducer)"));

namespace {
struct Stats {
  uint64_t runs = 0, accepted = 0, refused = 0, codegen = 0, violations = 0;
};

/// Checks the launch metadata of an accepted attention spec against the spec.
std::string checkLaunch(const GeneratedSpec &g, StringRef json) {
  llvm::Expected<llvm::json::Value> v = llvm::json::parse(json);
  if (!v) {
    llvm::consumeError(v.takeError());
    return "launch metadata is not JSON";
  }
  const llvm::json::Object *root = v->getAsObject();
  const llvm::json::Object *problem = root ? root->getObject("problem") : nullptr;
  const llvm::json::Array *kernels = root ? root->getArray("kernels") : nullptr;
  if (!problem || !kernels || kernels->empty())
    return "launch metadata without problem or kernels";
  auto expect = [&](StringRef key, int64_t want) -> std::string {
    std::optional<int64_t> got = problem->getInteger(key);
    if (got && *got == want)
      return "";
    return ("launch metadata " + key + " = " + (got ? std::to_string(*got) : "missing") +
            ", spec " + std::to_string(want))
        .str();
  };
  for (auto [key, want] : {std::pair<StringRef, int64_t>{"batch", g.batch},
                           {"q_len", g.qLen},
                           {"q_heads", g.qHeads},
                           {"kv_heads", g.kvHeads},
                           {"head_dim", g.headDim},
                           {"kv_len", g.kvLen}})
    if (std::string e = expect(key, want); !e.empty())
      return e;
  for (const llvm::json::Value &k : *kernels) {
    const llvm::json::Object *ko = k.getAsObject();
    std::optional<StringRef> name = ko ? ko->getString("name") : std::nullopt;
    if (!name || !name->starts_with(g.name + "_"))
      return "a kernel not named after the function " + g.name;
  }
  return "";
}

/// Checks the C header of an accepted CPU spec: the wrapper and its parameter count.
std::string checkHeader(const GeneratedSpec &g, StringRef header) {
  std::string head = "static inline int32_t " + g.name + "(";
  size_t at = header.find(head);
  if (at == StringRef::npos)
    return "header without the wrapper " + head;
  size_t close = header.find(')', at);
  StringRef params = header.slice(at + head.size(), close);
  int64_t count = params.trim().empty() ? 0 : 1 + params.count(',');
  if (count != g.headerParams)
    return "header wrapper takes " + std::to_string(count) + " parameters, spec " +
           std::to_string(g.headerParams);
  if (header.count(head) != 1)
    return "header declares the wrapper more than once";
  return "";
}

/// Runs one spec; returns the violated property, or "".
std::string runOne(const GeneratedSpec &g, DialectRegistry &registry, bool codegen,
                   Stats &stats) {
  MLIRContext ctx(registry, MLIRContext::Threading::DISABLED);
  ctx.printOpOnDiagnostic(false);
  unsigned errors = 0, unlocated = 0;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    if (d.getSeverity() != DiagnosticSeverity::Error)
      return success();
    ++errors;
    if (!d.getLocation()->findInstanceOf<FileLineColLoc>())
      ++unlocated;
    return success();
  });
  auto refused = [&]() -> std::string {
    ++stats.refused;
    if (errors == 0)
      return "refused without an error diagnostic";
    if (unlocated)
      return "refused with an error diagnostic that has no location in the input";
    return "";
  };
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(g.text, ParserConfig(&ctx), "spec.mlir");
  if (!module)
    return refused();
  using attn::EmitFormat;
  EmitFormat format = g.gpu ? (codegen ? EmitFormat::PTX : EmitFormat::Launch)
                            : (codegen ? EmitFormat::Object : EmitFormat::Header);
  std::string artifact, launch;
  llvm::raw_string_ostream os(artifact);
  if (failed(attn::emitArtifact(*module, format, os, &launch)))
    return refused();
  ++stats.accepted;
  stats.codegen += codegen;
  if (!g.mustRefuse.empty())
    return "accepted a spec that must be refused (" + g.mustRefuse + ")";
  if (artifact.empty())
    return "accepted with an empty artifact";
  if (format == EmitFormat::Launch)
    return checkLaunch(g, artifact);
  if (format == EmitFormat::PTX) {
    if (StringRef(artifact).find(".entry " + g.name + "_") == StringRef::npos)
      return "PTX without an entry named after the function";
    return checkLaunch(g, launch);
  }
  if (format == EmitFormat::Object)
    return StringRef(artifact).starts_with("\x7f"
                                           "ELF")
               ? ""
               : "object file is not ELF";
  return checkHeader(g, artifact);
}
} // namespace

int main(int argc, char **argv) {
  llvm::cl::ParseCommandLineOptions(argc, argv, "attn structure-aware spec fuzzer\n");
  DialectRegistry registry;
  attn::registerAllDialects(registry);
  attnfuzz::SpecGenerator gen(seed);
  Stats stats;
  for (uint64_t i = 0; i < numRuns; ++i) {
    GeneratedSpec g = gen.next();
    if (!lastInput.empty()) {
      std::error_code ec;
      llvm::raw_fd_ostream os(lastInput, ec);
      os << g.text;
    }
    ++stats.runs;
    bool codegen = codegenEvery && stats.accepted % codegenEvery == codegenEvery - 1;
    std::string violation = runOne(g, registry, codegen, stats);
    if (violation.empty())
      continue;
    ++stats.violations;
    if (dumpFailures)
      llvm::errs() << "=== property violated: " << violation << "\n" << g.text << "\n";
  }
  llvm::outs() << "runs: " << stats.runs << " accepted: " << stats.accepted
               << " refused: " << stats.refused << " codegen: " << stats.codegen
               << " violations: " << stats.violations << "\n";
  return stats.violations == 0 ? 0 : 1;
}
