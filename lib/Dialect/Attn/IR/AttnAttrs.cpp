//===- AttnAttrs.cpp - parsing, printing and verifying attn attributes ----===//
//
// What this file is: the hand-written halves of the attributes declared in AttnAttrs.td: the custom
// syntax of #attn.quant and #attn.schedule, every attribute verifier, and small queries (scale
// shape of a granularity, register budget of a schedule).
//
//===----------------------------------------------------------------------===//

#include "attn/Dialect/Attn/IR/Attn.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;

#include "attn/Dialect/Attn/IR/AttnEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "attn/Dialect/Attn/IR/AttnAttrs.cpp.inc"

void AttnDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "attn/Dialect/Attn/IR/AttnAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// QuantAttr
//===----------------------------------------------------------------------===//

static bool isQuantElementType(Type t) {
  if (auto it = dyn_cast<IntegerType>(t)) {
    if (it.getWidth() == 8)
      return it.isSignless() || it.isUnsigned();
    return it.getWidth() == 4 && it.isSignless();
  }
  return isa<Float8E4M3FNType, Float8E5M2Type>(t);
}

LogicalResult QuantAttr::verify(function_ref<InFlightDiagnostic()> emitError, Type elementType,
                                Granularity granularity, int64_t groupSize, int64_t blockRows,
                                int64_t blockCols, Symmetry symmetry, Type scaleType) {
  if (!isQuantElementType(elementType))
    return emitError() << "quantized element type must be i8, ui8, i4, f8E4M3FN or f8E5M2, got "
                       << elementType;
  if (symmetry == Symmetry::asymmetric && !isa<IntegerType>(elementType))
    return emitError() << "asymmetric quantization needs an integer element type, got "
                       << elementType;
  if (!scaleType.isF32() && !scaleType.isF16() && !scaleType.isBF16())
    return emitError() << "scale type must be f32, f16 or bf16, got " << scaleType;
  if (granularity == Granularity::per_group && groupSize <= 0)
    return emitError() << "per_group size must be positive, got " << groupSize;
  if (granularity == Granularity::per_block && (blockRows <= 0 || blockCols <= 0))
    return emitError() << "per_block extents must be positive, got " << blockRows << "x"
                       << blockCols;
  return success();
}

Attribute QuantAttr::parse(AsmParser &parser, Type) {
  MLIRContext *ctx = parser.getContext();
  SMLoc loc = parser.getCurrentLocation();
  Type elementType;
  StringRef granKw;
  if (parser.parseLess() || parser.parseType(elementType) || parser.parseComma())
    return {};
  SMLoc granLoc = parser.getCurrentLocation();
  if (parser.parseKeyword(&granKw))
    return {};
  std::optional<Granularity> gran = symbolizeGranularity(granKw);
  if (!gran) {
    parser.emitError(granLoc) << "unknown granularity '" << granKw
                              << "'; expected per_tensor, per_token, per_head, per_token_head, "
                                 "per_group<g>, per_block<r x c> or per_channel";
    return {};
  }
  int64_t groupSize = 0, blockRows = 0, blockCols = 0;
  if (*gran == Granularity::per_group) {
    if (parser.parseLess() || parser.parseInteger(groupSize) || parser.parseGreater())
      return {};
  } else if (*gran == Granularity::per_block) {
    SmallVector<int64_t> dims;
    SMLoc dimLoc = parser.getCurrentLocation();
    if (parser.parseLess() ||
        parser.parseDimensionList(dims, /*allowDynamic=*/false, /*withTrailingX=*/false) ||
        parser.parseGreater())
      return {};
    if (dims.size() != 2) {
      parser.emitError(dimLoc) << "per_block takes two extents <rows x cols>";
      return {};
    }
    blockRows = dims[0];
    blockCols = dims[1];
  }
  Symmetry symmetry = Symmetry::symmetric;
  Type scaleType = Float32Type::get(ctx);
  while (succeeded(parser.parseOptionalComma())) {
    SMLoc kwLoc = parser.getCurrentLocation();
    StringRef kw;
    if (parser.parseKeyword(&kw))
      return {};
    if (kw == "scale") {
      if (parser.parseEqual() || parser.parseType(scaleType))
        return {};
    } else if (std::optional<Symmetry> s = symbolizeSymmetry(kw)) {
      symmetry = *s;
    } else {
      parser.emitError(kwLoc) << "expected 'symmetric', 'asymmetric' or 'scale = <type>', got '"
                              << kw << "'";
      return {};
    }
  }
  if (parser.parseGreater())
    return {};
  return QuantAttr::getChecked([&] { return parser.emitError(loc); }, ctx, elementType, *gran,
                               groupSize, blockRows, blockCols, symmetry, scaleType);
}

void QuantAttr::print(AsmPrinter &p) const {
  p << "<" << getElementType() << ", " << stringifyGranularity(getGranularity());
  if (getGranularity() == Granularity::per_group)
    p << "<" << getGroupSize() << ">";
  if (getGranularity() == Granularity::per_block)
    p << "<" << getBlockRows() << "x" << getBlockCols() << ">";
  p << ", " << stringifySymmetry(getSymmetry());
  if (!getScaleType().isF32())
    p << ", scale = " << getScaleType();
  p << ">";
}

static int64_t ceilDivDyn(int64_t a, int64_t b) {
  // Not (a + b - 1) / b: per_block extents may be as large as int64_t holds.
  return ShapedType::isDynamic(a) ? ShapedType::kDynamic : a / b + (a % b != 0);
}

SmallVector<int64_t> QuantAttr::getScaleShape(ArrayRef<int64_t> bshd) const {
  assert(bshd.size() == 4 && "scale shapes are defined for [B, S, H, D] tensors");
  int64_t b = bshd[0], s = bshd[1], h = bshd[2], d = bshd[3];
  switch (getGranularity()) {
  case Granularity::per_tensor:
    return {1};
  case Granularity::per_token:
    return {b, s};
  case Granularity::per_head:
    return {h};
  case Granularity::per_token_head:
    return {b, s, h};
  case Granularity::per_group:
    return {b, s, h, ceilDivDyn(d, getGroupSize())};
  case Granularity::per_block:
    return {b, ceilDivDyn(s, getBlockRows()), h, ceilDivDyn(d, getBlockCols())};
  case Granularity::per_channel:
    return {h, d};
  }
  llvm_unreachable("unknown granularity");
}

unsigned QuantAttr::getStorageBits() const {
  return getElementType().getIntOrFloatBitWidth();
}

bool QuantAttr::isTokenLocal() const {
  switch (getGranularity()) {
  case Granularity::per_token:
  case Granularity::per_token_head:
  case Granularity::per_group:
    return true;
  case Granularity::per_block:
    return getBlockRows() == 1;
  default:
    return false;
  }
}

bool QuantAttr::hasStaticScales() const {
  Granularity g = getGranularity();
  return g == Granularity::per_tensor || g == Granularity::per_head ||
         g == Granularity::per_channel;
}

double QuantAttr::getCodeMin() const {
  Type t = getElementType();
  if (isa<Float8E4M3FNType>(t))
    return -448;
  if (isa<Float8E5M2Type>(t))
    return -57344;
  unsigned bits = t.getIntOrFloatBitWidth();
  if (t.isUnsignedInteger())
    return 0;
  double half = std::ldexp(1.0, static_cast<int>(bits) - 1);
  return isAsymmetric() ? -half : -(half - 1);
}

double QuantAttr::getCodeMax() const {
  Type t = getElementType();
  if (isa<Float8E4M3FNType>(t))
    return 448;
  if (isa<Float8E5M2Type>(t))
    return 57344;
  unsigned bits = t.getIntOrFloatBitWidth();
  return t.isUnsignedInteger() ? std::ldexp(1.0, static_cast<int>(bits)) - 1
                               : std::ldexp(1.0, static_cast<int>(bits) - 1) - 1;
}

double QuantAttr::getMinScale() const { return getScaleType().isF16() ? 0x1p-24 : 1e-8; }

int64_t QuantAttr::getGroupElems(int64_t heads, int64_t headDim) const {
  switch (getGranularity()) {
  case Granularity::per_token:
    return heads * headDim;
  case Granularity::per_group:
    return getGroupSize();
  case Granularity::per_block:
    return getBlockCols();
  default:
    return headDim;
  }
}

//===----------------------------------------------------------------------===//
// WarpRoleAttr
//===----------------------------------------------------------------------===//

LogicalResult WarpRoleAttr::verify(function_ref<InFlightDiagnostic()> emitError, RoleKind kind,
                                   int64_t warpgroups, int64_t regs) {
  if (warpgroups < 1 || warpgroups > 4)
    return emitError() << stringifyRoleKind(kind) << " warpgroups must be in [1, 4], got "
                       << warpgroups;
  if (regs < 24 || regs > 256 || regs % 8 != 0)
    return emitError() << stringifyRoleKind(kind)
                       << " regs must be a multiple of 8 in [24, 256] (setmaxnreg), got " << regs;
  return success();
}

//===----------------------------------------------------------------------===//
// ScheduleAttr
//===----------------------------------------------------------------------===//

/// Registers of one SM's register file (per thread × threads), the bound of a warp-role budget.
static constexpr int64_t kRegisterFile = 65536;
static constexpr int64_t kThreadsPerWarpgroup = 128;
static constexpr int64_t kMaxPortableCluster = 8;

LogicalResult ScheduleAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   int64_t packQHeads, int64_t splitKv, int64_t tileM,
                                   int64_t tileN, int64_t stages, ArrayAttr roles,
                                   ArrayRef<int64_t> cluster, BoolAttr crossover, BoolAttr,
                                   BoolAttr, BoolAttr, int64_t ctasPerSm) {
  if (ctasPerSm < 0 || ctasPerSm > 4)
    return emitError() << "ctas_per_sm must be in [1, 4], got " << ctasPerSm;
  if (packQHeads < 0)
    return emitError() << "pack_q_heads must be positive, got " << packQHeads;
  if (splitKv < kAuto)
    return emitError() << "split_kv must be positive or 'auto', got " << splitKv;
  for (auto [name, v] : {std::pair<StringRef, int64_t>{"tile_m", tileM}, {"tile_n", tileN}})
    if (v < 0 || v % 8 != 0 || v > 512)
      return emitError() << name << " must be a positive multiple of 8 up to 512, got " << v;
  if (stages < 0 || stages > 8)
    return emitError() << "stages must be in [1, 8], got " << stages;
  if (roles) {
    int64_t producers = 0, consumers = 0, budget = 0;
    for (Attribute a : roles) {
      auto role = dyn_cast<WarpRoleAttr>(a);
      if (!role)
        return emitError() << "roles must be producer<...> or consumer<...> entries";
      (role.getKind() == RoleKind::producer ? producers : consumers)++;
      budget += role.getWarpgroups() * kThreadsPerWarpgroup * role.getRegs();
    }
    if (producers > 1)
      return emitError() << "roles take at most one producer entry";
    if (consumers == 0)
      return emitError() << "roles need a consumer entry";
    // Several consumer entries give each consumer warpgroup its own register budget.
    if (consumers > 1)
      for (Attribute a : roles)
        if (auto r = cast<WarpRoleAttr>(a);
            r.getKind() == RoleKind::consumer && r.getWarpgroups() != 1)
          return emitError() << "with several consumer entries each is one warpgroup (its own "
                                "register budget), got warpgroups = "
                             << r.getWarpgroups();
    int64_t ctas = std::max<int64_t>(1, ctasPerSm);
    if (budget * ctas > kRegisterFile)
      return emitError() << "warp roles need " << budget << " registers"
                         << (ctas > 1 ? " per CTA, " + std::to_string(budget * ctas) + " for " +
                                            std::to_string(ctas) + " CTAs per SM,"
                                      : std::string(","))
                         << " more than the SM's register file (" << kRegisterFile << ")";
  }
  if (!cluster.empty()) {
    if (cluster.size() > 3 || llvm::any_of(cluster, [](int64_t c) { return c < 1; }))
      return emitError() << "cluster takes 1 to 3 extents, each at least 1";
    // Saturating product: huge extents must not overflow (the fuzzer writes INT64_MAX).
    int64_t size = 1;
    for (int64_t c : cluster)
      size = c > kMaxPortableCluster || size > kMaxPortableCluster ? kMaxPortableCluster + 1
                                                                    : size * c;
    if (size > kMaxPortableCluster)
      return emitError() << "cluster of " << llvm::join(llvm::map_range(cluster, [](int64_t c) {
                                                          return std::to_string(c);
                                                        }), " × ")
                         << " CTAs exceeds the portable maximum of " << kMaxPortableCluster;
    if (crossover && crossover.getValue() && size != 2)
      return emitError() << "crossover needs a 2-CTA cluster, got " << size << " CTAs";
  }
  return success();
}

SmallVector<WarpRoleAttr> ScheduleAttr::getRoleList(RoleKind kind) const {
  SmallVector<WarpRoleAttr> out;
  if (getRoles())
    for (Attribute a : getRoles())
      if (auto r = dyn_cast<WarpRoleAttr>(a); r && r.getKind() == kind)
        out.push_back(r);
  return out;
}

WarpRoleAttr ScheduleAttr::getRole(RoleKind kind) const {
  if (!getRoles())
    return {};
  for (Attribute a : getRoles())
    if (auto r = dyn_cast<WarpRoleAttr>(a); r && r.getKind() == kind)
      return r;
  return {};
}

int64_t ScheduleAttr::getClusterSize() const {
  int64_t size = 1;
  for (int64_t c : getCluster())
    size *= c;
  return size;
}

ScheduleFields::ScheduleFields(ScheduleAttr s)
    : packQHeads(s.getPackQHeads()), splitKv(s.getSplitKv()), tileM(s.getTileM()),
      tileN(s.getTileN()), stages(s.getStages()), ctasPerSm(s.getCtasPerSm()),
      roles(s.getRoles()), cluster(s.getCluster().begin(), s.getCluster().end()),
      crossover(s.getCrossover()), pingpong(s.getPingpong()),
      intraWgOverlap(s.getIntraWgOverlap()), persistent(s.getPersistent()) {}

ScheduleAttr ScheduleFields::get(MLIRContext *ctx) const {
  return ScheduleAttr::get(ctx, packQHeads, splitKv, tileM, tileN, stages, roles, cluster,
                           crossover, pingpong, intraWgOverlap, persistent, ctasPerSm);
}

ScheduleAttr ScheduleFields::getChecked(function_ref<InFlightDiagnostic()> emitError,
                                        MLIRContext *ctx) const {
  return ScheduleAttr::getChecked(emitError, ctx, packQHeads, splitKv, tileM, tileN, stages,
                                  roles, cluster, crossover, pingpong, intraWgOverlap, persistent,
                                  ctasPerSm);
}

static ParseResult parseBool(AsmParser &parser, BoolAttr &out) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef kw;
  if (parser.parseKeyword(&kw))
    return failure();
  if (kw != "true" && kw != "false")
    return parser.emitError(loc) << "expected 'true' or 'false', got '" << kw << "'";
  out = BoolAttr::get(parser.getContext(), kw == "true");
  return success();
}

static ParseResult parseRoles(AsmParser &parser, ArrayAttr &out) {
  SmallVector<Attribute> roles;
  auto parseOne = [&]() -> ParseResult {
    SMLoc loc = parser.getCurrentLocation();
    StringRef kw;
    int64_t wg = 0, regs = 0;
    if (parser.parseKeyword(&kw))
      return failure();
    std::optional<RoleKind> kind = symbolizeRoleKind(kw);
    if (!kind)
      return parser.emitError(loc) << "unknown warp role '" << kw
                                   << "'; expected producer or consumer";
    if (parser.parseLess() || parser.parseKeyword("warpgroups") || parser.parseEqual() ||
        parser.parseInteger(wg) || parser.parseComma() || parser.parseKeyword("regs") ||
        parser.parseEqual() || parser.parseInteger(regs) || parser.parseGreater())
      return failure();
    auto role = WarpRoleAttr::getChecked([&] { return parser.emitError(loc); },
                                         parser.getContext(), *kind, wg, regs);
    if (!role)
      return failure();
    roles.push_back(role);
    return success();
  };
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, parseOne))
    return failure();
  out = ArrayAttr::get(parser.getContext(), roles);
  return success();
}

Attribute ScheduleAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  ScheduleFields f;
  llvm::StringSet<> seen;
  auto parseField = [&]() -> ParseResult {
    SMLoc keyLoc = parser.getCurrentLocation();
    StringRef key;
    if (parser.parseKeyword(&key))
      return failure();
    if (!seen.insert(key).second)
      return parser.emitError(keyLoc) << "schedule field '" << key << "' given twice";
    if (parser.parseEqual())
      return failure();
    // A written field is a decision: 0 would read as "not decided" and vanish silently.
    auto parsePositive = [&](int64_t &v) -> ParseResult {
      SMLoc vLoc = parser.getCurrentLocation();
      if (parser.parseInteger(v))
        return failure();
      if (v < 1)
        return parser.emitError(vLoc) << "schedule field '" << key << "' must be positive, got "
                                      << v << " (leave the field out to let "
                                      << "attn-select-schedule decide)";
      return success();
    };
    if (key == "pack_q_heads")
      return parsePositive(f.packQHeads);
    if (key == "split_kv") {
      if (succeeded(parser.parseOptionalKeyword("auto"))) {
        f.splitKv = ScheduleAttr::kAuto;
        return success();
      }
      SMLoc vLoc = parser.getCurrentLocation();
      if (parser.parseInteger(f.splitKv))
        return failure();
      if (f.splitKv < 1)
        return parser.emitError(vLoc) << "split_kv must be positive or 'auto', got " << f.splitKv;
      return success();
    }
    if (key == "tile_m")
      return parsePositive(f.tileM);
    if (key == "tile_n")
      return parsePositive(f.tileN);
    if (key == "stages")
      return parsePositive(f.stages);
    if (key == "roles")
      return parseRoles(parser, f.roles);
    if (key == "cluster") {
      SMLoc vLoc = parser.getCurrentLocation();
      if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&]() {
            int64_t c;
            if (parser.parseInteger(c))
              return failure();
            f.cluster.push_back(c);
            return success();
          }))
        return failure();
      if (f.cluster.empty())
        return parser.emitError(vLoc) << "cluster takes 1 to 3 extents, got none (leave the "
                                         "field out for no cluster)";
      return success();
    }
    if (key == "crossover")
      return parseBool(parser, f.crossover);
    if (key == "pingpong")
      return parseBool(parser, f.pingpong);
    if (key == "intra_wg_overlap")
      return parseBool(parser, f.intraWgOverlap);
    if (key == "persistent")
      return parseBool(parser, f.persistent);
    if (key == "ctas_per_sm")
      return parsePositive(f.ctasPerSm);
    return parser.emitError(keyLoc)
           << "unknown schedule field '" << key
           << "'; expected pack_q_heads, split_kv, tile_m, tile_n, stages, roles, cluster, "
              "crossover, pingpong, intra_wg_overlap, persistent or ctas_per_sm";
  };
  if (parser.parseLess())
    return {};
  if (failed(parser.parseOptionalGreater())) {
    if (parser.parseCommaSeparatedList(parseField) || parser.parseGreater())
      return {};
  }
  if (f.stages == 0 && seen.contains("stages")) {
    parser.emitError(loc) << "stages must be in [1, 8], got 0";
    return {};
  }
  if (f.ctasPerSm == 0 && seen.contains("ctas_per_sm")) {
    parser.emitError(loc) << "ctas_per_sm must be in [1, 4], got 0";
    return {};
  }
  return f.getChecked([&] { return parser.emitError(loc); }, parser.getContext());
}

void ScheduleAttr::print(AsmPrinter &p) const {
  SmallVector<std::string> fields;
  auto add = [&](StringRef key, const Twine &value) {
    fields.push_back((key + " = " + value).str());
  };
  if (getPackQHeads())
    add("pack_q_heads", Twine(getPackQHeads()));
  if (getSplitKv())
    add("split_kv", isSplitAuto() ? Twine("auto") : Twine(getSplitKv()));
  if (getTileM())
    add("tile_m", Twine(getTileM()));
  if (getTileN())
    add("tile_n", Twine(getTileN()));
  if (getStages())
    add("stages", Twine(getStages()));
  if (getRoles()) {
    std::string s = "[";
    llvm::raw_string_ostream os(s);
    llvm::interleaveComma(getRoles(), os, [&](Attribute a) {
      auto r = cast<WarpRoleAttr>(a);
      os << stringifyRoleKind(r.getKind()) << "<warpgroups = " << r.getWarpgroups()
         << ", regs = " << r.getRegs() << ">";
    });
    os << "]";
    add("roles", s);
  }
  if (!getCluster().empty()) {
    std::string s = "[";
    llvm::raw_string_ostream os(s);
    llvm::interleaveComma(getCluster(), os);
    os << "]";
    add("cluster", s);
  }
  auto addBool = [&](StringRef key, BoolAttr b) {
    if (b)
      add(key, b.getValue() ? "true" : "false");
  };
  addBool("crossover", getCrossover());
  addBool("pingpong", getPingpong());
  addBool("intra_wg_overlap", getIntraWgOverlap());
  addBool("persistent", getPersistent());
  if (getCtasPerSm())
    add("ctas_per_sm", Twine(getCtasPerSm()));
  p << "<";
  llvm::interleaveComma(fields, p);
  p << ">";
}

//===----------------------------------------------------------------------===//
// PQAttr
//===----------------------------------------------------------------------===//

LogicalResult PQAttr::verify(function_ref<InFlightDiagnostic()> emitError, int64_t dsub,
                             int64_t centroids, int64_t block) {
  if (dsub != 1 && dsub != 2 && dsub != 4 && dsub != 8)
    return emitError() << "dsub must be 1, 2, 4 or 8, got " << dsub;
  if (centroids != 16 && centroids != 32 && centroids != 64)
    return emitError() << "centroids must be 16 (4-bit codes), 32 or 64 (8-bit codes, vpermb), got "
                       << centroids;
  if (block != 32)
    return emitError() << "only 32-key code blocks are supported, got " << block;
  return success();
}
