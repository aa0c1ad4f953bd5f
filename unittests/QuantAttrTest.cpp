//===- QuantAttrTest.cpp - tests of #attn.quant and #attn.schedule --------===//
//
// What this file is: unit tests of the attribute C++ API: scale shapes per granularity, parsing
// and printing of the custom syntaxes, and the verifier diagnostics of bad attributes.
//
//===----------------------------------------------------------------------===//

#include "attn/Dialect/Attn/IR/Attn.h"
#include "attn/InitAll.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::attn;

namespace {
class AttrTest : public ::testing::Test {
protected:
  AttrTest() {
    DialectRegistry registry;
    registerAllDialects(registry);
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();
  }
  /// Parses an attribute; returns null and records the diagnostic on failure.
  Attribute parse(StringRef text) {
    lastError.clear();
    ScopedDiagnosticHandler h(&ctx, [&](Diagnostic &d) {
      lastError = d.str();
      return success();
    });
    return parseAttribute(text, &ctx);
  }
  std::string print(Attribute a) {
    std::string s;
    llvm::raw_string_ostream os(s);
    a.print(os);
    return s;
  }
  MLIRContext ctx;
  std::string lastError;
};

constexpr int64_t kDyn = ShapedType::kDynamic;
} // namespace

TEST_F(AttrTest, ScaleShapePerGranularity) {
  SmallVector<int64_t> bshd = {2, 100, 4, 128};
  auto shapeOf = [&](StringRef quant) {
    auto q = dyn_cast_or_null<QuantAttr>(parse(quant));
    EXPECT_TRUE(q) << lastError;
    return q ? q.getScaleShape(bshd) : SmallVector<int64_t>{};
  };
  EXPECT_EQ(shapeOf("#attn.quant<i8, per_tensor>"), (SmallVector<int64_t>{1}));
  EXPECT_EQ(shapeOf("#attn.quant<i8, per_token>"), (SmallVector<int64_t>{2, 100}));
  EXPECT_EQ(shapeOf("#attn.quant<i8, per_head>"), (SmallVector<int64_t>{4}));
  EXPECT_EQ(shapeOf("#attn.quant<i8, per_token_head>"), (SmallVector<int64_t>{2, 100, 4}));
  EXPECT_EQ(shapeOf("#attn.quant<i8, per_group<32>>"), (SmallVector<int64_t>{2, 100, 4, 4}));
  // 100 tokens in blocks of 64 rows -> 2 row blocks (ceil).
  EXPECT_EQ(shapeOf("#attn.quant<f8E4M3FN, per_block<64x128>>"),
            (SmallVector<int64_t>{2, 2, 4, 1}));
  EXPECT_EQ(shapeOf("#attn.quant<i8, per_channel>"), (SmallVector<int64_t>{4, 128}));
}

TEST_F(AttrTest, DynamicExtentsPropagate) {
  auto q = cast<QuantAttr>(parse("#attn.quant<i8, per_block<16x64>>"));
  EXPECT_EQ(q.getScaleShape({kDyn, kDyn, 8, 128}), (SmallVector<int64_t>{kDyn, kDyn, 8, 2}));
}

TEST_F(AttrTest, QuantRoundTripsAndDefaults) {
  Attribute a = parse("#attn.quant<ui8, per_group<64>, asymmetric, scale = f16>");
  ASSERT_TRUE(a) << lastError;
  EXPECT_EQ(print(a), "#attn.quant<ui8, per_group<64>, asymmetric, scale = f16>");
  auto q = cast<QuantAttr>(parse("#attn.quant<i4, per_token>"));
  EXPECT_EQ(q.getSymmetry(), Symmetry::symmetric);
  EXPECT_TRUE(q.getScaleType().isF32());
  EXPECT_EQ(q.getStorageBits(), 4u);
}

TEST_F(AttrTest, QuantRejectsNonsense) {
  EXPECT_FALSE(parse("#attn.quant<f32, per_token>"));
  EXPECT_NE(lastError.find("quantized element type"), std::string::npos) << lastError;
  EXPECT_FALSE(parse("#attn.quant<f8E4M3FN, per_token, asymmetric>"));
  EXPECT_NE(lastError.find("integer element type"), std::string::npos) << lastError;
  EXPECT_FALSE(parse("#attn.quant<i8, per_group<0>>"));
  EXPECT_FALSE(parse("#attn.quant<i8, per_row>"));
  EXPECT_NE(lastError.find("unknown granularity"), std::string::npos) << lastError;
}

TEST_F(AttrTest, ScheduleFieldsAndQueries) {
  auto s = dyn_cast_or_null<ScheduleAttr>(
      parse("#attn.schedule<split_kv = auto, roles = [producer<warpgroups = 1, regs = 24>, "
            "consumer<warpgroups = 2, regs = 240>], cluster = [2, 1], crossover = true>"));
  ASSERT_TRUE(s) << lastError;
  EXPECT_TRUE(s.isSplitAuto());
  EXPECT_EQ(s.getClusterSize(), 2);
  EXPECT_TRUE(s.hasCrossover());
  ASSERT_TRUE(s.getRole(RoleKind::consumer));
  EXPECT_EQ(s.getRole(RoleKind::consumer).getRegs(), 240);
  EXPECT_EQ(s.getPackQHeads(), 0); // not decided
}

TEST_F(AttrTest, ScheduleRegisterBudget) {
  // 128 threads × (24 + 2 × 256) = 68608 > 65536.
  EXPECT_FALSE(parse("#attn.schedule<roles = [producer<warpgroups = 1, regs = 24>, "
                     "consumer<warpgroups = 2, regs = 256>]>"));
  EXPECT_NE(lastError.find("register file"), std::string::npos) << lastError;
}

TEST_F(AttrTest, PQCodeLayout) {
  auto pq = cast<PQAttr>(parse("#attn.pq<dsub = 2>"));
  EXPECT_EQ(pq.getCentroids(), 16);
  EXPECT_EQ(pq.getCodeBits(), 4);
  EXPECT_EQ(pq.getCodeRowBytes(), 16);
  auto wide = cast<PQAttr>(parse("#attn.pq<dsub = 1, centroids = 64>"));
  EXPECT_EQ(wide.getCodeRowBytes(), 32);
}
