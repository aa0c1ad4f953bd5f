//===- AttnKernelTypesTest.cpp - tests of the attnk type functions --------===//
//
// What this file is: unit tests of what the kernel level's shared-memory plan will read from its
// types: a ring's stage type and stage bytes, a tensor map's tile shape, the swizzle span, and
// that the checked constructors refuse what the verifiers refuse.
//
//===----------------------------------------------------------------------===//

#include "attn/Dialect/AttnKernel/IR/AttnKernel.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::attnk;

namespace {
struct AttnKernelTypes : ::testing::Test {
  AttnKernelTypes() { ctx.loadDialect<AttnKernelDialect>(); }
  MLIRContext ctx;
};
} // namespace

TEST_F(AttnKernelTypes, RingStage) {
  Type i8 = IntegerType::get(&ctx, 8);
  auto ring = RingType::get(&ctx, {128, 128}, i8, 2, Swizzle::swizzle_128b, 1, 2);
  StageType stage = ring.getStageType();
  EXPECT_EQ(stage, StageType::get(&ctx, {128, 128}, i8, Swizzle::swizzle_128b));
  EXPECT_EQ(ring.getStageBytes(), 128 * 128);
  auto bf16 = StageType::get(&ctx, {64, 128}, BFloat16Type::get(&ctx), Swizzle::swizzle_128b);
  EXPECT_EQ(bf16.getBytes(), 64 * 128 * 2);
}

TEST_F(AttnKernelTypes, TensorMapTile) {
  Type i8 = IntegerType::get(&ctx, 8);
  auto kmap = TensorMapType::get(&ctx, {1, 128, 1, 128}, i8, Swizzle::swizzle_128b);
  EXPECT_EQ(kmap.getTileShape(), (SmallVector<int64_t, 2>{128, 128}));
  auto row = TensorMapType::get(&ctx, {1, 1, 64}, i8, Swizzle::none);
  EXPECT_EQ(row.getTileShape(), (SmallVector<int64_t, 2>{1, 64}));
}

TEST_F(AttnKernelTypes, SwizzleBytes) {
  EXPECT_EQ(getSwizzleBytes(Swizzle::none), 0);
  EXPECT_EQ(getSwizzleBytes(Swizzle::swizzle_32b), 32);
  EXPECT_EQ(getSwizzleBytes(Swizzle::swizzle_64b), 64);
  EXPECT_EQ(getSwizzleBytes(Swizzle::swizzle_128b), 128);
}

TEST_F(AttnKernelTypes, CheckedConstructorsRefuse) {
  std::string messages;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    messages += d.str() + "\n";
    return success();
  });
  auto loc = UnknownLoc::get(&ctx);
  auto emit = [&] { return emitError(loc); };
  Type f32 = Float32Type::get(&ctx);
  SmallVector<int64_t> tile = {256, 128};
  EXPECT_FALSE(AccType::getChecked(emit, &ctx, int64_t(64), int64_t(260), f32));
  EXPECT_TRUE(AccType::getChecked(emit, &ctx, int64_t(64), int64_t(256), f32));
  EXPECT_FALSE(RingType::getChecked(emit, &ctx, ArrayRef<int64_t>(tile),
                                    Type(BFloat16Type::get(&ctx)), int64_t(4),
                                    Swizzle::swizzle_128b, int64_t(1), int64_t(1)));
  EXPECT_NE(messages.find("accumulator columns must be a multiple of 8"), std::string::npos);
  EXPECT_NE(messages.find("the ring needs 262208 bytes"), std::string::npos);
}
