//===- EmitPassManagerSetupTest.cpp - emitArtifact as a library call ------===//
//
// What this file is: unit tests of emitArtifact's pass-manager hook. A program that never
// registers MLIR's pass-manager command-line flags (this test, like the fuzzers) gets its
// artifact; a setup hook sees every pass manager of the lowering, and its failure stops the
// emission.
//
//===----------------------------------------------------------------------===//

#include "attn/InitAll.h"
#include "attn/Target/Emit.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {

/// A small GPU decode spec (bf16 MQA) and a CPU one (AVX2 product-quantized attention).
constexpr const char *kGPUSpec = R"mlir(
func.func @decode(%q: memref<1x1x8x64xbf16>, %k: memref<1x256x1x64xbf16>,
                  %v: memref<1x256x1x64xbf16>, %o: memref<1x1x8x64xbf16>) {
  attn.attention decode ins(%q, %k, %v : memref<1x1x8x64xbf16>, memref<1x256x1x64xbf16>,
      memref<1x256x1x64xbf16>) outs(%o : memref<1x1x8x64xbf16>) {target = #attn.target<sm_90a>}
  return
}
)mlir";

constexpr const char *kCPUSpec = R"mlir(
func.func @pq(%q: memref<8x128xf32>, %codebooks: memref<2x128x16x1xf32>,
              %codes: memref<2x512x128x16xui8>, %values: memref<16384x2x128xf16>, %len: index,
              %o: memref<8x128xf32>) {
  attn.pq.attention ins(%q, %codebooks, %codes, %values : memref<8x128xf32>,
      memref<2x128x16x1xf32>, memref<2x512x128x16xui8>, memref<16384x2x128xf16>)
      length(%len) outs(%o : memref<8x128xf32>)
      {pq = #attn.pq<dsub = 1, centroids = 16>, target = #attn.target<avx2>}
  return
}
)mlir";

class EmitPassManagerSetup : public ::testing::Test {
protected:
  EmitPassManagerSetup() : context(makeRegistry(), MLIRContext::Threading::DISABLED) {
    context.getDiagEngine().registerHandler([this](Diagnostic &d) {
      diagnostics += d.str() + "\n";
      return success();
    });
  }
  static DialectRegistry makeRegistry() {
    DialectRegistry registry;
    attn::registerAllDialects(registry);
    return registry;
  }
  OwningOpRef<ModuleOp> parse(const char *text) {
    return parseSourceString<ModuleOp>(text, ParserConfig(&context));
  }
  /// Parses `text` and emits `format` into `artifact`, `setup` preparing each pass manager.
  LogicalResult emit(const char *text, attn::EmitFormat format, std::string &artifact,
                     attn::PassManagerSetup setup = {}) {
    OwningOpRef<ModuleOp> module = parse(text);
    EXPECT_TRUE(module) << diagnostics;
    if (!module)
      return failure();
    llvm::raw_string_ostream os(artifact);
    return attn::emitArtifact(*module, format, os, nullptr, setup);
  }

  MLIRContext context;
  std::string diagnostics;
};

TEST_F(EmitPassManagerSetup, PTXWithoutRegisteredFlags) {
  std::string ptx;
  ASSERT_TRUE(succeeded(emit(kGPUSpec, attn::EmitFormat::PTX, ptx))) << diagnostics;
  EXPECT_NE(ptx.find(".entry"), std::string::npos);
}

TEST_F(EmitPassManagerSetup, SetupSeesBothGPUPipelines) {
  std::string plain, hooked;
  ASSERT_TRUE(succeeded(emit(kGPUSpec, attn::EmitFormat::PTX, plain))) << diagnostics;
  unsigned seen = 0;
  auto count = [&](PassManager &) {
    ++seen;
    return success();
  };
  ASSERT_TRUE(succeeded(emit(kGPUSpec, attn::EmitFormat::PTX, hooked, count))) << diagnostics;
  EXPECT_EQ(seen, 2u); // spec to NVVM, NVVM to the gpu.binary
  EXPECT_EQ(plain, hooked);
}

TEST_F(EmitPassManagerSetup, SetupSeesTheCPUPipeline) {
  std::string object;
  unsigned seen = 0;
  auto count = [&](PassManager &) {
    ++seen;
    return success();
  };
  ASSERT_TRUE(succeeded(emit(kCPUSpec, attn::EmitFormat::Assembly, object, count)))
      << diagnostics;
  EXPECT_EQ(seen, 1u);
  EXPECT_FALSE(object.empty());
}

TEST_F(EmitPassManagerSetup, FailingSetupStopsTheEmission) {
  std::string ptx;
  auto refuse = [&](PassManager &pm) {
    return emitError(UnknownLoc::get(pm.getContext())) << "setup refused";
  };
  EXPECT_TRUE(failed(emit(kGPUSpec, attn::EmitFormat::PTX, ptx, refuse)));
  EXPECT_TRUE(ptx.empty());
  EXPECT_NE(diagnostics.find("setup refused"), std::string::npos) << diagnostics;
}

} // namespace
