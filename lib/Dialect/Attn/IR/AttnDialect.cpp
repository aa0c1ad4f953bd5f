//===- AttnDialect.cpp - the attn dialect ---------------------------------===//
//
// What this file is: dialect registration (ops and attributes) and the generated op definitions.
// Op verifiers live in one file per op family: AttentionOps.cpp, QuantizeOps.cpp, PQOps.cpp.
//
//===----------------------------------------------------------------------===//

#include "attn/Dialect/Attn/IR/Attn.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"

using namespace mlir;
using namespace mlir::attn;

#include "attn/Dialect/Attn/IR/AttnOpsDialect.cpp.inc"

void AttnDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "attn/Dialect/Attn/IR/AttnOps.cpp.inc"
      >();
  registerAttributes();
}

std::optional<TargetKind> mlir::attn::getOpTarget(Operation *op) {
  if (auto t = op->getAttrOfType<TargetKindAttr>("target"))
    return t.getValue();
  return std::nullopt;
}

#define GET_OP_CLASSES
#include "attn/Dialect/Attn/IR/AttnOps.cpp.inc"
