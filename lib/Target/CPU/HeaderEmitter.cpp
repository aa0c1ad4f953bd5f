//===- HeaderEmitter.cpp - the C header of CPU kernels --------------------===//
//
// What this file is: `--emit=header` for CPU targets. For every kernel function it writes a
// comment stating each buffer's element type, shape, layout (row-major, contiguous), alignment and
// whether the kernel reads or writes it; the declaration of the C-interface symbol the object
// exports; and a `static inline` wrapper with the kernel's own name that takes plain pointers
// (plus one int64_t per dynamic extent) and builds the memref descriptors.
//
//===----------------------------------------------------------------------===//

#include "attn/Target/CPU.h"

#include "attn/Conversion/CPUExtentChecks.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::attn;

/// The C type that stores one element of `t`.
static FailureOr<std::string> cType(Type t) {
  if (t.isF32())
    return std::string("float");
  if (t.isF64())
    return std::string("double");
  if (t.isF16() || t.isBF16())
    return std::string("uint16_t"); // IEEE half / bfloat16 bits
  if (isa<Float8E4M3FNType, Float8E5M2Type>(t))
    return std::string("uint8_t"); // fp8 bits
  if (t.isIndex())
    return std::string("int64_t");
  if (auto it = dyn_cast<IntegerType>(t)) {
    unsigned w = it.getWidth() == 4 ? 8 : it.getWidth();
    if (w != 8 && w != 16 && w != 32 && w != 64)
      return failure();
    return (it.isUnsigned() ? "uint" : "int") + std::to_string(w) + "_t";
  }
  return failure();
}

/// True when an attn op in `fn` writes `arg`.
static bool isWritten(func::FuncOp fn, Value arg) {
  bool written = false;
  fn.walk([&](MemoryEffectOpInterface op) {
    SmallVector<MemoryEffects::EffectInstance> effects;
    op.getEffects(effects);
    for (auto &e : effects)
      if (e.getValue() == arg && isa<MemoryEffects::Write>(e.getEffect()))
        written = true;
  });
  return written;
}

/// Run-time checks: the comment lines listing the kernel's numbered extent checks, and the
/// wrapper's code that refuses what the kernel's prologue refuses (same statuses) before it
/// builds any descriptor. `extents[i]` holds the C expressions of buffer argument i's extents.
static void emitExtentChecks(ArrayRef<cpu::ExtentCheck> checks, llvm::raw_ostream &comment,
                             std::string &code, func::FuncOp fn,
                             ArrayRef<SmallVector<std::string>> extents) {
  comment << " * Returns 0 after running; without running anything, -1 when a buffer is null with a\n"
          << " * nonzero size, an extent is negative or a buffer exceeds 2^48 bytes, or k when extent\n"
          << " * check k fails" << (checks.empty() ? " (this kernel has none).\n" : ":\n");
  for (auto [k, c] : llvm::enumerate(checks))
    comment << " *   check " << k + 1 << ": " << cpu::formatExtentCheck(c) << "  (" << c.why
            << ")\n";
  for (BlockArgument arg : fn.getArguments()) {
    auto mt = dyn_cast<MemRefType>(arg.getType());
    if (!mt)
      continue;
    std::string name = "arg" + std::to_string(arg.getArgNumber());
    int64_t elem = std::max<int64_t>(1, (mt.getElementTypeBitWidth() + 7) / 8);
    std::string sizes = "0";
    if (mt.getRank() > 0) {
      sizes = name + "_extents";
      code += "  const int64_t " + sizes + "[" + std::to_string(mt.getRank()) + "] = {" +
              llvm::join(extents[arg.getArgNumber()], ", ") + "};\n";
    }
    code += "  if (!attn_buffer_ok(" + name + ", " + std::to_string(elem) + ", " +
            std::to_string(mt.getRank()) + ", " + sizes + "))\n    return " +
            std::to_string(cpu::kBadBufferStatus) + ";\n";
  }
  for (auto [k, c] : llvm::enumerate(checks))
    code += "  if (!(" + cpu::formatExtentCheck(c) + "))\n    return " + std::to_string(k + 1) +
            ";\n";
}

LogicalResult mlir::attn::emitCPUHeader(ModuleOp module, const llvm::StringMap<TargetKind> &isaOf,
                                        llvm::raw_ostream &os) {
  std::string body;
  llvm::raw_string_ostream out(body);
  llvm::SmallSet<int64_t, 4> ranks;
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (fn.isDeclaration())
      continue;
    // The name is pasted into C text: only an identifier may get there.
    if (failed(checkKernelFunctionName(fn)))
      return failure();
    if (fn.getNumResults() != 0)
      return fn.emitError() << "kernel functions return nothing; results go to output buffers";
    std::string name = fn.getSymName().str();
    auto it = isaOf.find(name);
    out << "/* " << name << " — target "
        << (it == isaOf.end() ? "scalar" : stringifyTargetKind(it->getValue())) << ".\n"
        << " * Buffers are row-major and contiguous; any alignment works, 64 bytes is best.\n";
    SmallVector<std::string> params, descriptors, ciArgs, dynParams;
    SmallVector<SmallVector<std::string>> extents(fn.getNumArguments());
    for (BlockArgument arg : fn.getArguments()) {
      std::string argName = "arg" + std::to_string(arg.getArgNumber());
      auto mt = dyn_cast<MemRefType>(arg.getType());
      if (!mt) {
        FailureOr<std::string> ct = cType(arg.getType());
        if (failed(ct))
          return fn.emitError() << "no C type for argument of type " << arg.getType();
        out << " *   " << argName << ": " << *ct << " (" << arg.getType() << ")\n";
        params.push_back(*ct + " " + argName);
        ciArgs.push_back(argName);
        continue;
      }
      if (!mt.getLayout().isIdentity())
        return fn.emitError() << "kernel buffers must have the identity (row-major) layout";
      FailureOr<std::string> ct = cType(mt.getElementType());
      if (failed(ct))
        return fn.emitError() << "no C type for elements of " << mt;
      bool written = isWritten(fn, arg);
      out << " *   " << argName << ": " << (written ? "written" : "read   ") << " " << *ct;
      SmallVector<std::string> sizes;
      for (int64_t d = 0; d < mt.getRank(); ++d) {
        std::string size = mt.isDynamicDim(d) ? argName + "_dim" + std::to_string(d)
                                              : std::to_string(mt.getDimSize(d));
        if (mt.isDynamicDim(d))
          dynParams.push_back("int64_t " + size);
        out << "[" << size << "]";
        sizes.push_back(size);
      }
      out << "  (" << mt << ")\n";
      extents[arg.getArgNumber()] = sizes;
      params.push_back((written ? "" : "const ") + *ct + " *" + argName);
      int64_t rank = mt.getRank();
      ranks.insert(rank);
      std::string d = "  attn_memref_" + std::to_string(rank) + "d " + argName + "_desc = {(void *)" +
                      argName + ", (void *)" + argName + ", 0";
      if (rank > 0) {
        d += ", {";
        for (int64_t i = 0; i < rank; ++i)
          d += (i ? ", " : "") + sizes[i];
        d += "}, {";
        for (int64_t i = 0; i < rank; ++i) {
          std::string stride = "1";
          for (int64_t j = i + 1; j < rank; ++j)
            stride += " * " + sizes[j];
          d += (i ? ", " : "") + stride;
        }
        d += "}";
      }
      descriptors.push_back(d + "};");
      ciArgs.push_back("&" + argName + "_desc");
    }
    FailureOr<SmallVector<cpu::ExtentCheck>> checks = cpu::collectExtentChecks(fn);
    if (failed(checks))
      return failure();
    std::string checkCode;
    emitExtentChecks(*checks, out, checkCode, fn, extents);
    out << " */\n";
    std::string symbol = "_mlir_ciface_" + std::string(kKernelSymbolPrefix) + name;
    out << "int32_t " << symbol << "(";
    for (auto [i, arg] : llvm::enumerate(fn.getArguments())) {
      if (i)
        out << ", ";
      if (auto mt = dyn_cast<MemRefType>(arg.getType()))
        out << "attn_memref_" << mt.getRank() << "d *";
      else
        out << *cType(arg.getType());
    }
    out << ");\n";
    params.append(dynParams.begin(), dynParams.end());
    out << "static inline int32_t " << name << "(" << llvm::join(params, ", ") << ") {\n"
        << checkCode;
    for (const std::string &d : descriptors)
      out << d << "\n";
    out << "  return " << symbol << "(" << llvm::join(ciArgs, ", ") << ");\n}\n\n";
  }

  os << "/* Generated by attn-opt " << ATTN_VERSION << " (--emit=header). Do not edit.\n"
     << " * Link with the object from --emit=obj of the same spec. */\n"
     << "#ifndef ATTN_KERNELS_H\n#define ATTN_KERNELS_H\n\n#include <stdint.h>\n\n"
     << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
     << "/* MLIR's memref descriptor: base pointers, offset, sizes, strides (in elements). */\n";
  for (int64_t rank : ranks) {
    os << "typedef struct { void *allocated; void *aligned; int64_t offset;";
    if (rank > 0)
      os << " int64_t sizes[" << rank << "]; int64_t strides[" << rank << "];";
    os << " } attn_memref_" << rank << "d;\n";
  }
  os << "\n/* 1 when a row-major buffer of `rank` extents and `elem` bytes per element has no\n"
     << " * negative extent, holds at most 2^48 bytes and is not null unless empty. */\n"
     << "static inline int attn_buffer_ok(const void *p, int64_t elem, int rank, "
        "const int64_t *extents) {\n"
     << "  int64_t bytes = elem;\n"
     << "  for (int i = 0; i < rank; ++i) {\n"
     << "    if (extents[i] < 0 || (extents[i] > 0 && bytes > ((int64_t)1 << 48) / extents[i]))\n"
     << "      return 0;\n"
     << "    bytes *= extents[i];\n"
     << "  }\n"
     << "  return p != 0 || bytes == 0;\n"
     << "}\n";
  os << "\n" << body << "#ifdef __cplusplus\n}\n#endif\n\n#endif /* ATTN_KERNELS_H */\n";
  return success();
}
