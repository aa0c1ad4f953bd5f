//===- KernelChecks.cpp - where an attn op may sit to become a kernel -----===//
//
// What this file is: the checks every artifact path (--emit, convert-attn-to-nvvm) makes before
// turning an attn op into a kernel: the op sits in a func.func directly in the top-level module,
// the function's name can become a symbol and C text, and a GPU function holds nothing the
// lowering would drop.
//
//===----------------------------------------------------------------------===//

#include "attn/Dialect/Attn/IR/Attn.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::attn;

bool mlir::attn::isKernelIdentifier(StringRef name) {
  // C keywords and the names the generated header itself defines.
  static const llvm::StringSet<> reserved = {
      "auto",     "break",    "case",     "char",       "const",    "continue", "default",
      "do",       "double",   "else",     "enum",       "extern",   "float",    "for",
      "goto",     "if",       "inline",   "int",        "long",     "register", "restrict",
      "return",   "short",    "signed",   "sizeof",     "static",   "struct",   "switch",
      "typedef",  "union",    "unsigned", "void",       "volatile", "while",    "bool",
      "true",     "false",    "nullptr",  "alignas",    "alignof",  "typeof",   "main",
      "_Bool",    "_Complex", "_Atomic",  "_Noreturn",  "_Alignas", "_Alignof", "asm"};
  if (name.empty() || name.size() > kMaxKernelNameLength || reserved.contains(name))
    return false;
  if (!llvm::isAlpha(name.front()) && name.front() != '_')
    return false;
  if (name.starts_with("__") || name.starts_with("attn_") || name.starts_with("_mlir"))
    return false; // reserved to the implementation and to the generated code's own symbols
  return llvm::all_of(name, [](char c) { return llvm::isAlnum(c) || c == '_'; });
}

LogicalResult mlir::attn::checkKernelFunctionName(func::FuncOp fn) {
  if (isKernelIdentifier(fn.getSymName()))
    return success();
  std::string shown; // escaped: the name may hold newlines or terminal controls
  llvm::raw_string_ostream os(shown);
  llvm::printEscapedString(fn.getSymName(), os);
  return fn.emitError() << "function name '" << shown << "' cannot name a kernel: it becomes a symbol and C text, so it must "
                           "be an identifier ([A-Za-z_][A-Za-z0-9_]*, at most "
                        << kMaxKernelNameLength
                        << " characters, not a C keyword, not starting with '__', 'attn_' or "
                           "'_mlir')";
}

LogicalResult mlir::attn::checkKernelPlacement(Operation *op, ModuleOp top, bool gpu) {
  auto fn = dyn_cast_or_null<func::FuncOp>(op->getParentOp());
  if (!fn && !gpu)
    fn = op->getParentOfType<func::FuncOp>();
  if (!fn) {
    Operation *parent = op->getParentOp();
    return op->emitError() << "an attn op becomes a kernel only inside a func.func"
                           << (gpu ? " (directly in its body)" : "") << "; this one is in '"
                           << (parent ? parent->getName().getStringRef() : "nothing") << "'";
  }
  if (fn->getParentOp() != top.getOperation())
    return op->emitError() << "the function '" << fn.getSymName()
                           << "' of this attn op is not at the top level of the module (it is in "
                              "'"
                           << fn->getParentOp()->getName() << "'): kernels come from top-level "
                                                              "functions only";
  if (failed(checkKernelFunctionName(fn)))
    return failure();
  if (!gpu)
    return success();
  // A GPU function becomes its kernels and is removed: anything besides the op and the return
  // would be dropped without a word.
  if (!fn.getBody().hasOneBlock())
    return fn.emitError() << "a GPU kernel function has one block";
  for (Operation &other : fn.getBody().front()) {
    if (&other == op || isa<func::ReturnOp>(other))
      continue;
    return other.emitError() << "'" << other.getName()
                             << "' in a GPU kernel function: such a function holds its attn op "
                                "and the return only (the function becomes the kernel; nothing "
                                "else would run)";
  }
  if (fn.getNumResults() != 0)
    return fn.emitError() << "a GPU kernel function returns nothing; results go to output "
                             "buffers";
  return success();
}
