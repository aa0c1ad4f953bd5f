//===- AttnKernelDialect.cpp - the attnk dialect ---------------------------===//
//
// What this file is: registration of the kernel-level dialect (ops, types, attributes) and the
// generated op and attribute definitions, and the printed alias of a kernel's plan
// (`#plan = {...}`, printed once). Types live in AttnKernelTypes.cpp; op verifiers in one
// file per op family: PipelineOps.cpp, ComputeOps.cpp and QuantizeOps.cpp.
//
//===----------------------------------------------------------------------===//

#include "attn/Dialect/AttnKernel/IR/AttnKernel.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::attnk;

#include "attn/Dialect/AttnKernel/IR/AttnKernelEnums.cpp.inc"
#include "attn/Dialect/AttnKernel/IR/AttnKernelOpsDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "attn/Dialect/AttnKernel/IR/AttnKernelAttrs.cpp.inc"

namespace {
/// Printed aliases: the `plan` dictionary that every op of a forward (or MLA) kernel carries is
/// printed once at the top of the module as `#plan = {...}` (`#mla_plan = {...}`), and each op
/// refers to it by name. Plans are recognized by the entries their writers always put in
/// (ForwardPlanAttr.cpp, MLAPlan.cpp); two kernels' plans become `#plan`, `#plan1`, ...
struct AttnKernelAsmInterface : OpAsmDialectInterface {
  using OpAsmDialectInterface::OpAsmDialectInterface;
  AliasResult getAlias(Attribute attr, raw_ostream &os) const override {
    auto dict = dyn_cast<DictionaryAttr>(attr);
    if (!dict || !dict.get("producerRegs") || !dict.get("consumerRegs") || !dict.get("name"))
      return AliasResult::NoAlias;
    os << (dict.get("topk") ? "mla_plan" : "plan");
    return AliasResult::OverridableAlias;
  }
};
} // namespace

void AttnKernelDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "attn/Dialect/AttnKernel/IR/AttnKernelOps.cpp.inc"
      >();
  registerTypes();
  registerAttributes();
  addInterfaces<AttnKernelAsmInterface>();
}

void AttnKernelDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "attn/Dialect/AttnKernel/IR/AttnKernelAttrs.cpp.inc"
      >();
}

LogicalResult AddressingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                     AddressingKind kind, int64_t pageSize) {
  if (kind == AddressingKind::paged && pageSize <= 0)
    return emitError() << "paged addressing needs a positive page size, got " << pageSize;
  if (kind != AddressingKind::paged && pageSize != 0)
    return emitError() << "only paged addressing has a page size";
  return success();
}

/// `: RING, RING...` of the ring ops; the stage types follow from the rings.
static ParseResult parseRingStages(OpAsmParser &parser, SmallVectorImpl<Type> &rings,
                                   SmallVectorImpl<Type> &stages) {
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseTypeList(rings))
    return failure();
  for (Type t : rings) {
    auto ring = dyn_cast<RingType>(t);
    if (!ring)
      return parser.emitError(loc) << "expected !attnk.ring types, got " << t;
    stages.push_back(ring.getStageType());
  }
  return success();
}

static void printRingStages(OpAsmPrinter &p, Operation *, TypeRange rings, TypeRange) {
  llvm::interleaveComma(rings, p, [&](Type t) { p.printType(t); });
}

/// The form of `attnk.merge.combine` as a bare keyword (`narrow`, `wide`): the attribute's own
/// printer leads with a space, which the op's format already puts before it.
static ParseResult parseCombineForm(OpAsmParser &parser, CombineFormAttr &form) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseKeyword(&keyword))
    return failure();
  std::optional<CombineForm> value = symbolizeCombineForm(keyword);
  if (!value)
    return parser.emitError(loc) << "expected a combine form (narrow or wide), got '" << keyword
                                 << "'";
  form = CombineFormAttr::get(parser.getContext(), *value);
  return success();
}

static void printCombineForm(OpAsmPrinter &printer, Operation *, CombineFormAttr form) {
  printer << stringifyCombineForm(form.getValue());
}

#define GET_OP_CLASSES
#include "attn/Dialect/AttnKernel/IR/AttnKernelOps.cpp.inc"
