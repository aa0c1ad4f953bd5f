//===- LaunchAttr.cpp - the launch ABI of a kernel and its metadata JSON --===//
//
// What this file is: `#attnk.launch` — its syntax, its rules, and the metadata writer that turns
// the launch attributes of a spec's kernels and the spec's `metadata` dictionary into the JSON
// the runtime, qattn and attn-bench read (`attn-launch-v1`, docs/GPUDecode.md). Keys are
// written sorted (llvm::json), so the bytes do not depend on the order attributes are built in.
//
//===----------------------------------------------------------------------===//

#include "attn/Dialect/AttnKernel/IR/AttnKernel.h"
#include "attn/Runtime/LaunchABI.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::attnk;

namespace {
ParseResult parseExtents(AsmParser &p, StringRef key, SmallVectorImpl<int64_t> &out) {
  return failure(p.parseComma() || p.parseKeyword(key) || p.parseEqual() ||
                 p.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&]() -> ParseResult {
                   return p.parseInteger(out.emplace_back());
                 }));
}
void printExtents(AsmPrinter &p, StringRef key, ArrayRef<int64_t> v) {
  p << ", " << key << " = [";
  llvm::interleaveComma(v, p);
  p << ']';
}
} // namespace

Attribute LaunchAttr::parse(AsmParser &p, Type) {
  std::string role;
  ArrayAttr grid, params;
  SmallVector<int64_t> block, cluster;
  int64_t smem = 0;
  bool programmatic = false;
  DictionaryAttr extra = DictionaryAttr::get(p.getContext());
  if (p.parseLess() || p.parseKeywordOrString(&role) || p.parseComma() || p.parseKeyword("grid") ||
      p.parseEqual() || p.parseAttribute(grid) || parseExtents(p, "block", block) ||
      parseExtents(p, "cluster", cluster) || p.parseComma() || p.parseKeyword("smem") ||
      p.parseEqual() || p.parseInteger(smem) || p.parseComma() || p.parseKeyword("params") ||
      p.parseEqual() || p.parseAttribute(params))
    return {};
  while (succeeded(p.parseOptionalComma())) {
    if (succeeded(p.parseOptionalKeyword("programmatic"))) {
      programmatic = true;
      continue;
    }
    if (p.parseKeyword("extra") || p.parseEqual() || p.parseAttribute(extra))
      return {};
  }
  if (p.parseGreater())
    return {};
  return getChecked([&] { return p.emitError(p.getNameLoc()); }, p.getContext(), StringRef(role),
                    grid, ArrayRef<int64_t>(block), ArrayRef<int64_t>(cluster), smem, params,
                    programmatic, extra);
}

void LaunchAttr::print(AsmPrinter &p) const {
  p << '<' << getRole() << ", grid = " << getGrid();
  printExtents(p, "block", getBlock());
  printExtents(p, "cluster", getCluster());
  p << ", smem = " << getSmem() << ", params = " << getParams();
  if (getProgrammatic())
    p << ", programmatic";
  if (!getExtra().empty())
    p << ", extra = " << getExtra();
  p << '>';
}

LogicalResult LaunchAttr::verify(function_ref<InFlightDiagnostic()> emitError, StringRef role,
                                 ArrayAttr grid, ArrayRef<int64_t> block, ArrayRef<int64_t> cluster,
                                 int64_t smem, ArrayAttr params, bool, DictionaryAttr) {
  if (role.empty() || !llvm::isAlpha(role.front()) ||
      !llvm::all_of(role, [](char c) { return llvm::isAlnum(c) || c == '_'; }))
    return emitError() << "a launch's role is an identifier, got \"" << role << "\"";
  if (grid.size() != 3 || !llvm::all_of(grid, [](Attribute a) {
        auto i = dyn_cast<IntegerAttr>(a);
        return isa<StringAttr>(a) || (i && i.getInt() >= 1);
      }))
    return emitError() << "a grid is three extents, each a positive number or a symbol, got "
                       << grid;
  for (Attribute a : grid) {
    attn_abi::GridSymbol symbol;
    if (auto s = dyn_cast<StringAttr>(a); s && !attn_abi::findGridSymbol(s.getValue(), symbol))
      return emitError() << "unknown grid symbol " << s
                         << " (the launch ABI table, include/attn/Runtime/LaunchABI.json, has "
                            "none of that name)";
  }
  auto positive3 = [](ArrayRef<int64_t> v) {
    return v.size() == 3 && llvm::all_of(v, [](int64_t x) { return x >= 1; });
  };
  if (!positive3(block) || !positive3(cluster))
    return emitError() << "block and cluster are three positive extents each";
  if (smem < 0)
    return emitError() << "shared memory of " << smem << " bytes";
  if (!llvm::all_of(params, [](Attribute a) { return isa<StringAttr>(a); }))
    return emitError() << "parameters are named by strings, got " << params;
  for (Attribute a : params) {
    attn_abi::Param param;
    if (!attn_abi::findParam(cast<StringAttr>(a).getValue(), param))
      return emitError() << "unknown kernel parameter " << a
                         << " (the launch ABI table, include/attn/Runtime/LaunchABI.json, has "
                            "none of that name)";
  }
  return success();
}

static llvm::json::Value attrToJSON(Attribute a) {
  if (auto b = dyn_cast<BoolAttr>(a))
    return b.getValue();
  if (auto i = dyn_cast<IntegerAttr>(a))
    return i.getInt();
  if (auto f = dyn_cast<FloatAttr>(a))
    return f.getValueAsDouble();
  if (auto s = dyn_cast<StringAttr>(a))
    return s.str();
  if (auto arr = dyn_cast<ArrayAttr>(a)) {
    llvm::json::Array out;
    for (Attribute e : arr)
      out.push_back(attrToJSON(e));
    return out;
  }
  if (auto d = dyn_cast<DictionaryAttr>(a)) {
    llvm::json::Object out;
    for (NamedAttribute n : d)
      out[n.getName().str()] = attrToJSON(n.getValue());
    return out;
  }
  std::string text; // anything else (no launcher reads it): its MLIR form
  llvm::raw_string_ostream os(text);
  a.print(os);
  return text;
}

llvm::json::Object mlir::attnk::launchKernelJSON(StringRef name, LaunchAttr launch) {
  llvm::json::Object k{{"name", name.str()},
                       {"role", launch.getRole().str()},
                       {"block", llvm::json::Array(launch.getBlock())},
                       {"cluster", llvm::json::Array(launch.getCluster())},
                       {"smem_bytes", launch.getSmem()},
                       {"grid", attrToJSON(launch.getGrid())},
                       {"params", attrToJSON(launch.getParams())}};
  if (launch.getProgrammatic())
    k["programmatic"] = true;
  for (NamedAttribute n : launch.getExtra())
    k[n.getName().str()] = attrToJSON(n.getValue());
  return k;
}

llvm::json::Array mlir::attnk::launchParamsJSON(ArrayRef<attn_abi::Param> params) {
  llvm::json::Array names;
  for (attn_abi::Param p : params)
    names.push_back(attn_abi::name(p));
  return names;
}

std::string mlir::attnk::launchDocumentJSON(DictionaryAttr metadata,
                                            ArrayRef<llvm::json::Object> kernels) {
  llvm::json::Object root{{"format", "attn-launch-v1"}, {"arch", 90}};
  for (NamedAttribute n : metadata)
    root[n.getName().str()] = attrToJSON(n.getValue());
  llvm::json::Array ks;
  for (const llvm::json::Object &k : kernels)
    ks.push_back(llvm::json::Object(k));
  root["kernels"] = std::move(ks);
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  return s;
}
