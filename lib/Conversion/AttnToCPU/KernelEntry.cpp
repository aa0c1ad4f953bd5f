//===- KernelEntry.cpp - the checking prologue of CPU kernels -------------===//
//
// What this file is: what makes a lowered CPU kernel refuse arguments it would address outside of.
// The kernel takes its buffers as fully dynamic strided memrefs (the C interface is unchanged: one
// descriptor per buffer) and returns an i32 status. A prologue reads every descriptor — extents,
// strides, offset, aligned pointer — and checks it against the buffer's type (static extents
// equal, dynamic ones in [0, 2^48], row-major strides, offset 0, at most 2^48 bytes, non-null
// unless empty), then evaluates the spec's extent relations (ExtentChecks.cpp). Any failure
// returns -1 (a malformed descriptor) or the number of the first failing relation, without
// running anything; otherwise the unchanged body runs on reinterpret_casts to the original types
// (static shapes, identity layout) and the kernel returns 0.
//
//===----------------------------------------------------------------------===//

#include "CPUCodegen.h"

#include "attn/Conversion/CPUExtentChecks.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::cpu;

namespace {
using Pred = arith::CmpIPredicate;

Value cmp(ImplicitLocOpBuilder &b, Pred p, Value x, Value y) {
  return arith::CmpIOp::create(b, p, x, y);
}
Value both(ImplicitLocOpBuilder &b, Value x, Value y) { return arith::AndIOp::create(b, x, y); }

int64_t elementBytes(MemRefType t) {
  Type e = t.getElementType();
  return e.isIndex() ? 8 : std::max<int64_t>(1, (e.getIntOrFloatBitWidth() + 7) / 8);
}

/// `arg` (fully dynamic, described by `md`) as a memref of its original type `t`: a
/// reinterpret_cast with static extents and strides where `t` has them, so the body's address
/// arithmetic stays what it was (a memref.cast would be folded away into the loads).
Value asOriginal(ImplicitLocOpBuilder &b, Value arg, MemRefType t,
                 memref::ExtractStridedMetadataOp md) {
  SmallVector<OpFoldResult> sizes, strides(t.getRank());
  for (int64_t d = 0; d < t.getRank(); ++d)
    sizes.push_back(t.isDynamicDim(d) ? OpFoldResult(md.getSizes()[d])
                                      : OpFoldResult(b.getIndexAttr(t.getDimSize(d))));
  // Dynamic strides come from the descriptor, as they did before (the prologue checks them).
  auto [staticStrides, offset] = t.getStridesAndOffset();
  for (int64_t d = 0; d < t.getRank(); ++d)
    strides[d] = ShapedType::isDynamic(staticStrides[d])
                     ? OpFoldResult(md.getStrides()[d])
                     : OpFoldResult(b.getIndexAttr(staticStrides[d]));
  return memref::ReinterpretCastOp::create(b, t, arg, b.getIndexAttr(0), sizes, strides);
}

/// True when a static `t` holds at most kMaxBufferBytes (checked before each multiplication).
bool fitsBufferLimit(MemRefType t) {
  int64_t bytes = elementBytes(t);
  for (int64_t n : t.getShape()) {
    if (n > 0 && bytes > kMaxBufferBytes / n)
      return false;
    bytes *= n;
  }
  return true;
}

/// True (i1) when the descriptor `md` of `arg` describes a buffer of type `t`.
Value descriptorOk(ImplicitLocOpBuilder &b, Value arg, MemRefType t,
                   memref::ExtractStridedMetadataOp md) {
  Value zero = idx(b, 0), one = idx(b, 1), limit = idx(b, kMaxBufferBytes);
  Value ok = cmp(b, Pred::eq, md.getOffset(), zero);
  Value stride = one, bytes = idx(b, elementBytes(t));
  for (int64_t d = t.getRank() - 1; d >= 0; --d) {
    Value size = md.getSizes()[d];
    ok = both(b, ok,
              t.isDynamicDim(d) ? cmp(b, Pred::ule, size, limit)
                                : cmp(b, Pred::eq, size, idx(b, t.getDimSize(d))));
    ok = both(b, ok, cmp(b, Pred::eq, md.getStrides()[d], stride));
    // bytes · size ≤ 2^48, checked by division before multiplying (an empty buffer passes).
    Value divisor = arith::MaxUIOp::create(b, size, one);
    ok = both(b, ok, cmp(b, Pred::ule, bytes, arith::DivUIOp::create(b, limit, divisor)));
    bytes = arith::MulIOp::create(b, bytes, size);
    stride = arith::MulIOp::create(b, stride, size);
  }
  Value ptr = memref::ExtractAlignedPointerAsIndexOp::create(b, arg);
  Value usable = arith::OrIOp::create(b, cmp(b, Pred::ne, ptr, zero), cmp(b, Pred::eq, bytes, zero));
  return both(b, ok, usable);
}

Value termValue(ImplicitLocOpBuilder &b, const ExtentTerm &t,
                ArrayRef<SmallVector<Value>> sizesOf) {
  if (t.isConstant())
    return idx(b, t.constant);
  Value v = sizesOf[t.arg][t.dim];
  return t.scale == 1 ? v : arith::MulIOp::create(b, v, idx(b, t.scale)).getResult();
}

Value relationHolds(ImplicitLocOpBuilder &b, const ExtentCheck &c,
                    ArrayRef<SmallVector<Value>> sizesOf) {
  Value l = termValue(b, c.lhs, sizesOf), r = termValue(b, c.rhs, sizesOf);
  switch (c.relation) {
  case ExtentRelation::Equal:
    return cmp(b, Pred::eq, l, r);
  case ExtentRelation::AtMost:
    return cmp(b, Pred::sle, l, r);
  case ExtentRelation::Positive:
    return cmp(b, Pred::sge, l, idx(b, 1));
  case ExtentRelation::MultipleOf: {
    // Evaluated even when an earlier check failed: never divide by zero.
    Value safe = arith::MaxUIOp::create(b, r, idx(b, 1));
    return cmp(b, Pred::eq, arith::RemUIOp::create(b, l, safe), idx(b, 0));
  }
  }
  llvm_unreachable("unknown relation");
}
} // namespace

LogicalResult cpu::guardKernelEntry(func::FuncOp fn, ArrayRef<ExtentCheck> checks) {
  MLIRContext *ctx = fn.getContext();
  if (fn.getNumResults() != 0)
    return fn.emitError() << "kernel functions return nothing; results go to output buffers";
  if (!fn.getBody().hasOneBlock())
    return fn.emitError() << "not supported yet: a kernel function of more than one block";
  Block &entry = fn.getBody().front();
  ImplicitLocOpBuilder b(fn.getLoc(), ctx);
  b.setInsertionPointToStart(&entry);

  // Buffers become fully dynamic strided memrefs; the body keeps the original types.
  SmallVector<SmallVector<Value>> sizesOf(entry.getNumArguments());
  SmallVector<std::tuple<BlockArgument, MemRefType, memref::ExtractStridedMetadataOp>> buffers;
  for (BlockArgument arg : entry.getArguments()) {
    auto t = dyn_cast<MemRefType>(arg.getType());
    if (!t)
      continue;
    if (!t.getLayout().isIdentity())
      return fn.emitError() << "kernel buffers must have the identity (row-major) layout";
    if (t.hasStaticShape() && !fitsBufferLimit(t))
      return fn.emitError() << "argument " << arg.getArgNumber() << " (" << t
                            << ") is larger than the 2^48 bytes a kernel buffer may hold";
    SmallVector<int64_t> dyn(t.getRank(), ShapedType::kDynamic);
    auto dynT = MemRefType::get(dyn, t.getElementType(),
                                StridedLayoutAttr::get(ctx, ShapedType::kDynamic, dyn),
                                t.getMemorySpace());
    arg.setType(dynT);
    auto md = memref::ExtractStridedMetadataOp::create(b, arg);
    Value original = asOriginal(b, arg, t, md);
    arg.replaceAllUsesExcept(original,
                             SmallPtrSet<Operation *, 2>{md, original.getDefiningOp()});
    sizesOf[arg.getArgNumber()].assign(md.getSizes().begin(), md.getSizes().end());
    buffers.push_back({arg, t, md});
  }
  Block *body = entry.splitBlock(b.getInsertionPoint());
  // Static allocas stay in the entry block (LLVM keeps them in the frame, not on a dynamic stack).
  for (Operation &op : llvm::make_early_inc_range(*body))
    if (auto a = dyn_cast<memref::AllocaOp>(op); a && a->getNumOperands() == 0)
      a->moveBefore(&entry, entry.end());

  b.setInsertionPointToEnd(&entry);
  Value ok = intConst(b, b.getI1Type(), 1);
  for (auto [arg, t, md] : buffers)
    ok = both(b, ok, descriptorOk(b, arg, t, md));
  Type i32 = b.getI32Type();
  Value status = intConst(b, i32, 0);
  for (int64_t k = static_cast<int64_t>(checks.size()) - 1; k >= 0; --k)
    status = arith::SelectOp::create(b, relationHolds(b, checks[k], sizesOf), status,
                                     intConst(b, i32, k + 1));
  status = arith::SelectOp::create(b, ok, status, intConst(b, i32, kBadBufferStatus));
  Block *refuse = b.createBlock(&fn.getBody(), fn.getBody().end());
  func::ReturnOp::create(b, ValueRange{status});
  b.setInsertionPointToEnd(&entry);
  cf::CondBranchOp::create(b, cmp(b, Pred::eq, status, intConst(b, i32, 0)), body, ValueRange{},
                           refuse, ValueRange{});

  for (auto ret : llvm::make_early_inc_range(body->getOps<func::ReturnOp>())) {
    if (ret.getNumOperands() != 0)
      continue;
    ImplicitLocOpBuilder rb(ret.getLoc(), ret);
    func::ReturnOp::create(rb, ValueRange{intConst(rb, i32, 0)});
    ret.erase();
  }
  SmallVector<Type> inputs(entry.getArgumentTypes());
  fn.setFunctionType(FunctionType::get(ctx, inputs, {i32}));
  return success();
}
