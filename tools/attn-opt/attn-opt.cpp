//===- attn-opt.cpp - the attn-opt tool -----------------------------------===//
//
// What this file is: the thin main of attn-opt. What it registers is listed in attn/InitAll.h;
// the driver (mlir-opt options, --emit, --version) is lib/Tools/AttnOptMain.cpp.
//
//===----------------------------------------------------------------------===//

#include "attn/InitAll.h"
#include "attn/Tools/AttnOptMain.h"

#include "mlir/IR/DialectRegistry.h"
#include "llvm/Support/InitLLVM.h"

int main(int argc, char **argv) {
  // A crash prints what crashed and where instead of a bare signal.
  llvm::InitLLVM initLLVM(argc, argv);
  mlir::DialectRegistry registry;
  mlir::attn::registerAllDialects(registry);
  mlir::attn::registerAllPasses();
  return mlir::attn::attnOptMain(argc, argv, registry);
}
