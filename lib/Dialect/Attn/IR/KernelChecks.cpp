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

namespace {
/// True for the identifiers the C standard library declares (C11 7.1.3) and type names (`*_t`,
/// which POSIX reserves: `int32_t`, `size_t`, ...): the header defines a `static inline` function
/// of the kernel's name, which must neither clash with a library header the user includes nor
/// replace a library function (a kernel named `malloc` would shadow it in every file that
/// includes the header).
bool isCLibraryName(StringRef name) {
  static const llvm::StringSet<> library = {
      // <stdlib.h>
      "abort", "abs", "aligned_alloc", "atexit", "at_quick_exit", "atof", "atoi", "atol",
      "atoll", "bsearch", "calloc", "div", "exit", "_Exit", "free", "getenv", "labs", "ldiv",
      "llabs", "lldiv", "malloc", "mblen", "mbstowcs", "mbtowc", "qsort", "quick_exit", "rand",
      "realloc", "srand", "system", "wctomb", "EXIT_FAILURE", "EXIT_SUCCESS", "RAND_MAX",
      "MB_CUR_MAX", "NULL", "posix_memalign", "alloca",
      // <stdio.h>
      "clearerr", "fclose", "feof", "ferror", "fflush", "fgetc", "fgetpos", "fgets", "fopen",
      "fprintf", "fputc", "fputs", "fread", "freopen", "fscanf", "fseek", "fsetpos", "ftell",
      "fwrite", "getc", "getchar", "gets", "perror", "printf", "putc", "putchar", "puts",
      "remove", "rename", "rewind", "scanf", "setbuf", "setvbuf", "snprintf", "sprintf",
      "sscanf", "tmpfile", "tmpnam", "ungetc", "vfprintf", "vfscanf", "vprintf", "vscanf",
      "vsnprintf", "vsprintf", "vsscanf", "FILE", "EOF", "BUFSIZ", "FILENAME_MAX", "FOPEN_MAX",
      "L_tmpnam", "SEEK_CUR", "SEEK_END", "SEEK_SET", "TMP_MAX", "stdin", "stdout", "stderr",
      "_IOFBF", "_IOLBF", "_IONBF", "fileno", "fdopen", "popen", "pclose", "getline",
      // <math.h> (the f and l variants are matched below)
      "acos", "asin", "atan", "atan2", "cos", "sin", "tan", "acosh", "asinh", "atanh", "cosh",
      "sinh", "tanh", "exp", "exp2", "expm1", "frexp", "ilogb", "ldexp", "log", "log10", "log1p",
      "log2", "logb", "modf", "scalbn", "scalbln", "cbrt", "fabs", "hypot", "pow", "sqrt", "erf",
      "erfc", "lgamma", "tgamma", "ceil", "floor", "nearbyint", "rint", "lrint", "llrint",
      "round", "lround", "llround", "trunc", "fmod", "remainder", "remquo", "copysign", "nan",
      "nextafter", "nexttoward", "fdim", "fmax", "fmin", "fma", "signbit", "fpclassify",
      "HUGE_VAL", "HUGE_VALF", "HUGE_VALL", "INFINITY", "NAN",
      // <time.h>, <signal.h>, <setjmp.h>, <stdarg.h>, <assert.h>, <errno.h>, <stddef.h>,
      // <locale.h>, <complex.h>, <stdalign.h>, <stdnoreturn.h>, <threads.h>, <wchar.h>
      "asctime", "clock", "ctime", "difftime", "gmtime", "localtime", "mktime", "time",
      "timespec_get", "CLOCKS_PER_SEC", "signal", "raise", "setjmp", "longjmp", "va_arg",
      "va_copy", "va_end", "va_start", "va_list", "assert", "static_assert", "errno",
      "offsetof", "setlocale", "localeconv", "complex", "imaginary", "I", "noreturn",
      "thread_local", "call_once", "btowc", "wctob", "mbrlen", "mbrtowc", "wcrtomb", "mbsinit",
      "fwide", "getwc", "putwc", "ungetwc", "WEOF", "WCHAR_MAX", "WCHAR_MIN",
      // <string.h>, <ctype.h>
      "memchr", "memcmp", "memcpy", "memmove", "memset", "strcat", "strchr", "strcmp", "strcoll",
      "strcpy", "strcspn", "strdup", "strerror", "strftime", "strlen", "strncat", "strncmp",
      "strncpy", "strndup", "strpbrk", "strrchr", "strspn", "strstr", "strtod", "strtof",
      "strtok", "strtol", "strtold", "strtoll", "strtoul", "strtoull", "strxfrm", "isalnum",
      "isalpha", "isblank", "iscntrl", "isdigit", "isgraph", "islower", "isprint", "ispunct",
      "isspace", "isupper", "isxdigit", "tolower", "toupper", "isfinite", "isinf", "isnan",
      "isnormal",
      // <stdint.h>, <limits.h>
      "INT8_MAX", "INT16_MAX", "INT32_MAX", "INT64_MAX", "INT8_MIN", "INT16_MIN", "INT32_MIN",
      "INT64_MIN", "UINT8_MAX", "UINT16_MAX", "UINT32_MAX", "UINT64_MAX", "SIZE_MAX",
      "INTPTR_MAX", "INT_MAX", "INT_MIN", "UINT_MAX", "LONG_MAX", "LONG_MIN", "CHAR_BIT",
      "INT64_C", "UINT64_C", "INT32_C", "UINT32_C"};
  if (library.contains(name))
    return true;
  // <math.h>'s float and long double variants (sinf, sinl, ...).
  if ((name.ends_with("f") || name.ends_with("l")) && name.size() > 2 &&
      library.contains(name.drop_back()))
    return true;
  // Types (`*_t`: C's int32_t, size_t, ...; POSIX reserves the suffix).
  if (name.ends_with("_t"))
    return true;
  return false;
}
} // namespace

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
  if (name.empty() || name.size() > kMaxKernelNameLength || reserved.contains(name) ||
      isCLibraryName(name))
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
                        << " characters, not a C keyword or a name the C library declares or "
                           "reserves, not starting with '__', 'attn_' or '_mlir')";
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
