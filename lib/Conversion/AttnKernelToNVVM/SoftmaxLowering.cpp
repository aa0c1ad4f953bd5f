//===- SoftmaxLowering.cpp - the online softmax's ops ---------------------===//
//
// What this file is: the lowering of the online softmax's ops to NVVM: `attnk.softmax_finish`
// (after a warpgroup's last tile: O · H for a rotated V, then the row sums reduced over the quad
// of threads that shares a row) and `attnk.softmax_sink` (the attention sinks folded into split
// 0's final state as a key without a value row). An `!attnk.acc<64xNxf32>` is a thread's N / 2 registers, a row
// vector its two rows (r0, r0 + 8), an `!attnk.rows` where they live (ConsumerLowering.cpp).
// finishSoftmaxRows is also what the persistent forward kernel's consumer role calls
// (ForwardConsumer.cpp).
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"

#include "../AttnToNVVM/ForwardKernelImpl.h"

#include "attn/Dialect/AttnKernel/IR/AttnKernel.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attnk;
using namespace mlir::attn::nvvm;

/// O · H_D (the unnormalized Walsh–Hadamard matrix: V was rotated) on the m64nD accumulator
/// fragment `o`: one butterfly stage per bit of the column, (i / 4) · 8 + colBase + (i mod 2).
/// Column bit 0 and bits 3.. are register bits 0 and 2.., a pair (a, b) → (a + b, a − b) in the
/// thread; bits 1–2 are the lane's place in its quad, exchanged by shfl.xor, the upper lane
/// keeping partner − own. The 1/√D that normalizes H is left to the row sums.
static void hadamardFragment(KernelBuilder &k, Value colBase, MutableArrayRef<Value> o) {
  k.butterflies(o, 1);
  for (size_t bit = 4; bit < o.size(); bit <<= 1)
    k.butterflies(o, bit);
  for (int64_t mask : {1, 2})
    k.laneButterflies(o, mask, k.cmp(LLVM::ICmpPredicate::ne, k.band(colBase, 2 * mask), 0));
}

void mlir::attn::nvvm::finishSoftmaxRows(KernelBuilder &k, Value colBase, bool hadamard,
                                         MutableArrayRef<Value> o, MutableArrayRef<Value> l) {
  // Rotated V: O · H before anything else (merges and the epilogue are linear in O).
  if (hadamard)
    hadamardFragment(k, colBase, o);
  // Row sums are per thread until here: reduce over the quad that shares a row (and, rotated,
  // take H's 1/√D: O / l is all that leaves, partials and merges included).
  double d = double(2 * o.size());
  for (int r = 0; r < 2; ++r) {
    l[r] = k.fadd(l[r], k.shflXor(l[r], 1));
    l[r] = k.fadd(l[r], k.shflXor(l[r], 2));
    if (hadamard)
      l[r] = k.fmul(l[r], k.f32(std::sqrt(d)));
  }
}

/// The sink logit of each row's head (`sinks` [Hq] f32, in base 2) joins the state where
/// `split` is 0 as a key whose value row is 0; elsewhere it is −∞, which leaves the state as it
/// is (mergeRow: weight 1 for the state, 0 for the sink; a row without keys stays empty).
static void foldSinks(KernelBuilder &k, Value sinks, Value split, const Value head[2],
                      MutableArrayRef<Value> o, MutableArrayRef<Value> m,
                      MutableArrayRef<Value> l) {
  Value first = k.cmp(LLVM::ICmpPredicate::eq, split, 0);
  Value a[2];
  for (int r = 0; r < 2; ++r) {
    Value s = k.loadInvariant(k.f32(), k.gep(sinks, k.mul(k.sext64(head[r]), int64_t(4))));
    Value sigma = k.select(first, k.fmul(s, k.f32(kLog2e)), k.f32(-INFINITY));
    RowMerge mr = mergeRow(k, m[r], l[r], sigma, k.f32(1.0));
    m[r] = mr.m;
    l[r] = mr.l;
    a[r] = mr.a;
  }
  for (size_t i = 0; i < o.size(); ++i)
    o[i] = k.fmul(o[i], a[accRow(int64_t(i))]);
}

namespace {
/// `attnk.softmax_sink` → foldSinks on the thread's registers.
struct SoftmaxSinkLowering : OpConversionPattern<SoftmaxSinkOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(SoftmaxSinkOp op, OneToNOpAdaptor a,
                                ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    SmallVector<Value> o(a.getAcc()), m(a.getRowMax()), l(a.getRowSum());
    ValueRange rows = a.getRows();
    if (rows.size() <= kRowsHead + 1 || m.size() != 2 || l.size() != 2 ||
        a.getSinks().size() != 1 || a.getSplit().size() != 1)
      return rewriter.notifyMatchFailure(op, "operands not in their lowered form");
    Value head[2] = {rows[kRowsHead], rows[kRowsHead + 1]};
    foldSinks(k, a.getSinks().front(), a.getSplit().front(), head, o, m, l);
    rewriter.replaceOpWithMultiple(op, {o, m, l});
    return success();
  }
};

/// `attnk.softmax_finish` → finishSoftmaxRows on the thread's registers.
struct SoftmaxFinishLowering : OpConversionPattern<SoftmaxFinishOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(SoftmaxFinishOp op, OneToNOpAdaptor a,
                                ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    SmallVector<Value> o(a.getAcc()), l(a.getRowSum());
    ValueRange rows = a.getRows();
    if (rows.size() <= kRowsColBase || l.size() != 2)
      return rewriter.notifyMatchFailure(op, "operands not in their lowered form");
    finishSoftmaxRows(k, rows[kRowsColBase], op.getHadamard(), o, l);
    rewriter.replaceOpWithMultiple(op, {o, l});
    return success();
  }
};
} // namespace

void mlir::attnk::populateSoftmaxPatterns(const TypeConverter &tc, RewritePatternSet &patterns) {
  patterns.add<SoftmaxFinishLowering, SoftmaxSinkLowering>(tc, patterns.getContext());
}
