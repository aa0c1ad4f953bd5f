//===- Attn.h - the attn dialect, its attributes and ops --------*- C++ -*-===//
//
// What this file is: the one header to include for the attn dialect in C++: the dialect class,
// enums, attributes (#attn.quant, #attn.schedule, ...) and ops, all generated from the .td files
// beside it.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_DIALECT_ATTN_IR_ATTN_H
#define ATTN_DIALECT_ATTN_IR_ATTN_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "attn/Dialect/Attn/IR/AttnOpsDialect.h.inc"
#include "attn/Dialect/Attn/IR/AttnEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "attn/Dialect/Attn/IR/AttnAttrs.h.inc"

#define GET_OP_CLASSES
#include "attn/Dialect/Attn/IR/AttnOps.h.inc"

namespace mlir::func {
class FuncOp;
} // namespace mlir::func

namespace mlir::attn {
/// The fields of #attn.schedule as plain values (0 / null: not decided), to edit a schedule and
/// build a new one: the parser and attn-select-schedule both go through it.
struct ScheduleFields {
  int64_t packQHeads = 0, splitKv = 0, tileM = 0, tileN = 0, stages = 0, ctasPerSm = 0;
  ArrayAttr roles;
  SmallVector<int64_t> cluster;
  BoolAttr crossover, pingpong, intraWgOverlap, persistent;

  ScheduleFields() = default;
  explicit ScheduleFields(ScheduleAttr s);
  ScheduleAttr get(MLIRContext *ctx) const;
  ScheduleAttr getChecked(function_ref<InFlightDiagnostic()> emitError, MLIRContext *ctx) const;
};

/// True for the GPU targets (sm_90a).
inline bool isGPUTarget(TargetKind t) { return t == TargetKind::sm_90a; }
/// The target written on an attn op, if any.
std::optional<TargetKind> getOpTarget(Operation *op);

/// Longest function name a kernel takes (kernel symbols add suffixes and prefixes to it).
constexpr size_t kMaxKernelNameLength = 128;
/// True when `name` can name a kernel: a C identifier of at most kMaxKernelNameLength characters
/// that is no C keyword and does not start with '__', 'attn_' or '_mlir' (KernelChecks.cpp).
bool isKernelIdentifier(StringRef name);
/// Fails with a located error unless `fn`'s name isKernelIdentifier.
LogicalResult checkKernelFunctionName(func::FuncOp fn);
/// Fails with a located error unless attn op `op` can become a kernel: it sits in a func.func at
/// the top level of `top` whose name isKernelIdentifier; for a GPU target (`gpu`) directly in the
/// function's body, next to nothing but the return.
LogicalResult checkKernelPlacement(Operation *op, ModuleOp top, bool gpu);
} // namespace mlir::attn

#endif // ATTN_DIALECT_ATTN_IR_ATTN_H
