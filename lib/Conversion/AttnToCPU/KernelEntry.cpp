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
#include "llvm/Support/MathExtras.h"

#include <set>

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

/// True (i1) when the descriptor `md` of `arg` describes a buffer of type `t`. Checks whose answer
/// the type decides (strides and byte counts of static extents) are not emitted.
Value descriptorOk(ImplicitLocOpBuilder &b, Value arg, MemRefType t,
                   memref::ExtractStridedMetadataOp md) {
  Value zero = idx(b, 0), one = idx(b, 1), limit = idx(b, kMaxBufferBytes);
  Value ok = cmp(b, Pred::eq, md.getOffset(), zero);
  // The row-major stride and the byte count so far: constants while every extent is static.
  std::optional<int64_t> cStride = 1, cBytes = elementBytes(t);
  Value stride, bytes;
  auto asValue = [&](std::optional<int64_t> c, Value v) { return c ? idx(b, *c) : v; };
  for (int64_t d = t.getRank() - 1; d >= 0; --d) {
    Value size = md.getSizes()[d];
    int64_t n = t.getDimSize(d), product;
    ok = both(b, ok,
              t.isDynamicDim(d) ? cmp(b, Pred::ule, size, limit)
                                : cmp(b, Pred::eq, size, idx(b, n)));
    ok = both(b, ok, cmp(b, Pred::eq, md.getStrides()[d], asValue(cStride, stride)));
    // A static extent keeps the running products static while they stay within the limit
    // (fitsBufferLimit checked static shapes; a larger one can only hold 0 elements).
    if (!t.isDynamicDim(d) && cStride && cBytes && !llvm::MulOverflow(*cBytes, n, product) &&
        product <= kMaxBufferBytes) {
      cBytes = product;
      cStride = *cStride * n;
      continue;
    }
    // bytes · size ≤ 2^48, checked by division before multiplying (an empty buffer passes).
    Value curBytes = asValue(cBytes, bytes), curStride = asValue(cStride, stride);
    Value divisor = arith::MaxUIOp::create(b, size, one);
    ok = both(b, ok, cmp(b, Pred::ule, curBytes, arith::DivUIOp::create(b, limit, divisor)));
    bytes = arith::MulIOp::create(b, curBytes, size);
    stride = arith::MulIOp::create(b, curStride, size);
    cBytes.reset();
    cStride.reset();
  }
  Value ptr = memref::ExtractAlignedPointerAsIndexOp::create(b, arg);
  Value nonNull = cmp(b, Pred::ne, ptr, zero);
  if (cBytes)
    return *cBytes == 0 ? ok : both(b, ok, nonNull);
  return both(b, ok, arith::OrIOp::create(b, nonNull, cmp(b, Pred::eq, bytes, zero)));
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

/// The fully dynamic strided memref type a kernel takes a buffer of type `t` as.
MemRefType dynamicType(MemRefType t) {
  SmallVector<int64_t> dyn(t.getRank(), ShapedType::kDynamic);
  return MemRefType::get(dyn, t.getElementType(),
                         StridedLayoutAttr::get(t.getContext(), ShapedType::kDynamic, dyn),
                         t.getMemorySpace());
}

/// The LLVM struct of a memref descriptor of rank `rank` (what `_mlir_ciface_` pointers point to).
Type descriptorType(MLIRContext *ctx, int64_t rank) {
  Type ptr = LLVM::LLVMPointerType::get(ctx), i64 = IntegerType::get(ctx, 64);
  SmallVector<Type> fields = {ptr, ptr, i64};
  if (rank > 0)
    fields.append(2, LLVM::LLVMArrayType::get(i64, rank));
  return LLVM::LLVMStructType::getLiteral(ctx, fields);
}

/// A buffer argument as the prologue sees it: its value (fully dynamic), the type the body
/// expects, its descriptor's fields and the number of the kernel argument it is.
struct Buffer {
  Value value;
  MemRefType type;
  memref::ExtractStridedMetadataOp md;
  unsigned argNumber;
};

/// The buffer `ptr` points to the descriptor of, as a memref of the fully dynamic form of `t`,
/// with its descriptor's fields; `load` is set to the load that reads the descriptor.
Buffer loadBuffer(ImplicitLocOpBuilder &b, Value ptr, MemRefType t, unsigned argNumber,
                  Operation **load = nullptr) {
  auto d = LLVM::LoadOp::create(b, descriptorType(b.getContext(), t.getRank()), ptr);
  if (load)
    *load = d;
  Value m = UnrealizedConversionCastOp::create(b, dynamicType(t), d.getResult()).getResult(0);
  return {m, t, memref::ExtractStridedMetadataOp::create(b, m), argNumber};
}

/// True (i1) when every descriptor of `buffers` is well formed; records their extents in `sizesOf`
/// (indexed by kernel argument number).
Value descriptorsOk(ImplicitLocOpBuilder &b, ArrayRef<Buffer> buffers,
                    MutableArrayRef<SmallVector<Value>> sizesOf) {
  Value ok = intConst(b, b.getI1Type(), 1);
  for (Buffer buf : buffers) {
    sizesOf[buf.argNumber].assign(buf.md.getSizes().begin(), buf.md.getSizes().end());
    ok = both(b, ok, descriptorOk(b, buf.value, buf.type, buf.md));
  }
  return ok;
}

/// `first` + k when `checks[k-1]` is the first relation to fail, else 0 (i32).
Value relationStatus(ImplicitLocOpBuilder &b, ArrayRef<ExtentCheck> checks, int64_t first,
                     ArrayRef<SmallVector<Value>> sizesOf) {
  Type i32 = b.getI32Type();
  Value status = intConst(b, i32, 0);
  for (int64_t k = static_cast<int64_t>(checks.size()) - 1; k >= 0; --k)
    status = arith::SelectOp::create(b, relationHolds(b, checks[k], sizesOf), status,
                                     intConst(b, i32, first + k + 1));
  return status;
}

/// kBadBufferStatus when a buffer's descriptor is malformed, else k when `checks[k-1]` is the
/// first relation to fail, else 0 (i32). `numArgs`: the kernel's argument count.
Value entryStatus(ImplicitLocOpBuilder &b, ArrayRef<Buffer> buffers, ArrayRef<ExtentCheck> checks,
                  unsigned numArgs) {
  SmallVector<SmallVector<Value>> sizesOf(numArgs);
  Value ok = descriptorsOk(b, buffers, sizesOf);
  return arith::SelectOp::create(b, ok, relationStatus(b, checks, 0, sizesOf),
                                 intConst(b, b.getI32Type(), kBadBufferStatus));
}

/// Refuses kernel shapes the entry cannot guard: results, several blocks, non-identity layouts,
/// static buffers beyond the byte limit.
LogicalResult checkKernelShape(func::FuncOp fn) {
  if (fn.getNumResults() != 0)
    return fn.emitError() << "kernel functions return nothing; results go to output buffers";
  if (!fn.getBody().hasOneBlock())
    return fn.emitError() << "not supported yet: a kernel function of more than one block";
  for (BlockArgument arg : fn.getArguments()) {
    auto t = dyn_cast<MemRefType>(arg.getType());
    if (!t)
      continue;
    if (!t.getLayout().isIdentity())
      return fn.emitError() << "kernel buffers must have the identity (row-major) layout";
    if (t.hasStaticShape() && !fitsBufferLimit(t))
      return fn.emitError() << "argument " << arg.getArgNumber() << " (" << t
                            << ") is larger than the 2^48 bytes a kernel buffer may hold";
  }
  return success();
}

/// Splits `fn`'s entry block at `at` into the prologue, which keeps the static allocas, and the
/// body it returns.
Block *splitBody(func::FuncOp fn, Block::iterator at) {
  Block &entry = fn.getBody().front();
  Block *body = entry.splitBlock(at);
  // Static allocas stay in the entry block (LLVM keeps them in the frame, not on a dynamic stack).
  for (Operation &op : llvm::make_early_inc_range(*body))
    if (auto a = dyn_cast<memref::AllocaOp>(op); a && a->getNumOperands() == 0)
      a->moveBefore(&entry, entry.end());
  return body;
}

/// Ends the prologue's block (`b` at its end) with a branch to `body` when `status` is 0 and a
/// return of `status` otherwise; the body's returns return 0.
void branchOnStatus(ImplicitLocOpBuilder &b, func::FuncOp fn, Block *body, Value status) {
  Block *from = b.getInsertionBlock();
  Type i32 = b.getI32Type();
  Block *refuse = b.createBlock(&fn.getBody(), fn.getBody().end());
  func::ReturnOp::create(b, ValueRange{status});
  b.setInsertionPointToEnd(from);
  cf::CondBranchOp::create(b, cmp(b, Pred::eq, status, intConst(b, i32, 0)), body, ValueRange{},
                           refuse, ValueRange{});
  for (auto ret : llvm::make_early_inc_range(body->getOps<func::ReturnOp>())) {
    if (ret.getNumOperands() != 0)
      continue;
    ImplicitLocOpBuilder rb(ret.getLoc(), ret);
    func::ReturnOp::create(rb, ValueRange{intConst(rb, i32, 0)});
    ret.erase();
  }
}
} // namespace

LogicalResult cpu::guardKernelEntry(func::FuncOp fn, ArrayRef<ExtentCheck> checks) {
  if (failed(checkKernelShape(fn)))
    return failure();
  MLIRContext *ctx = fn.getContext();
  Block &entry = fn.getBody().front();
  ImplicitLocOpBuilder b(fn.getLoc(), ctx);
  b.setInsertionPointToStart(&entry);

  // Buffers become fully dynamic strided memrefs; the body keeps the original types.
  SmallVector<Buffer> buffers;
  for (BlockArgument arg : entry.getArguments()) {
    auto t = dyn_cast<MemRefType>(arg.getType());
    if (!t)
      continue;
    arg.setType(dynamicType(t));
    auto md = memref::ExtractStridedMetadataOp::create(b, arg);
    Value original = asOriginal(b, arg, t, md);
    arg.replaceAllUsesExcept(original,
                             SmallPtrSet<Operation *, 2>{md, original.getDefiningOp()});
    buffers.push_back({arg, t, md, arg.getArgNumber()});
  }
  Block *body = splitBody(fn, b.getInsertionPoint());
  b.setInsertionPointToEnd(&entry);
  branchOnStatus(b, fn, body, entryStatus(b, buffers, checks, entry.getNumArguments()));
  SmallVector<Type> inputs(entry.getArgumentTypes());
  fn.setFunctionType(FunctionType::get(ctx, inputs, {b.getI32Type()}));
  return success();
}

//===----------------------------------------------------------------------===//
// Kernels of several ops
//===----------------------------------------------------------------------===//

namespace {
/// Buffers per descriptor-checking function and relations per relation-checking function of a
/// kernel of several ops: bounded, so that no function grows with the kernel (LLVM's greedy
/// register allocator, which runs on `optnone` functions too, takes superlinear time in the size
/// of one function).
constexpr size_t kBuffersPerCheck = 16, kRelationsPerCheck = 32;

/// Makes each buffer argument of the entry block `entry` (`b` at its start) a pointer to its
/// memref descriptor: the block reads the descriptor and rebuilds the buffer of the argument's
/// type, which replaces every use of the argument that `keepPointer` does not claim. `each` sees
/// every such argument with its original type.
void readDescriptors(ImplicitLocOpBuilder &b, Block &entry,
                     function_ref<bool(OpOperand &)> keepPointer,
                     function_ref<void(BlockArgument, MemRefType)> each = {}) {
  Type ptr = LLVM::LLVMPointerType::get(b.getContext());
  for (BlockArgument arg : entry.getArguments()) {
    auto t = dyn_cast<MemRefType>(arg.getType());
    if (!t)
      continue;
    arg.setType(ptr);
    Operation *load;
    Buffer buf = loadBuffer(b, arg, t, arg.getArgNumber(), &load);
    Value original = asOriginal(b, buf.value, t, buf.md);
    arg.replaceUsesWithIf(original, [&](OpOperand &use) {
      return use.getOwner() != load && !keepPointer(use);
    });
    if (each)
      each(arg, t);
  }
}

/// Makes the buffer arguments of `callee` pointers to memref descriptors: its entry block reads
/// each descriptor and rebuilds the buffer of the argument's type.
void takeDescriptorPointers(func::FuncOp callee) {
  Block &entry = callee.getBody().front();
  ImplicitLocOpBuilder b(callee.getLoc(), callee.getContext());
  b.setInsertionPointToStart(&entry);
  readDescriptors(b, entry, [](OpOperand &) { return false; });
  SmallVector<Type> inputs(entry.getArgumentTypes());
  callee.setFunctionType(
      FunctionType::get(callee.getContext(), inputs, callee.getFunctionType().getResults()));
}

/// A new function `name` after `after`, private unless `isPublic`, with an entry block.
func::FuncOp addFunction(OpBuilder &b, Operation *after, Location loc, StringRef name,
                         TypeRange inputs, TypeRange results, bool isPublic) {
  b.setInsertionPointAfter(after);
  auto f = func::FuncOp::create(b, loc, name, b.getFunctionType(inputs, results));
  if (!isPublic)
    f.setPrivate();
  f.addEntryBlock();
  return f;
}

/// The kernel's buffer arguments as its entry sees them: their types, argument numbers and
/// descriptor pointers.
struct KernelBuffers {
  SmallVector<MemRefType> types;
  SmallVector<unsigned> argNumbers;
  SmallVector<Value> pointers;
};

/// One part of a kernel's checks: `<kernel>.check<j>` and the descriptor pointers it takes.
struct CheckPart {
  func::FuncOp fn;
  SmallVector<Value> operands;
};

/// `<kernel>.check<part>(descriptor pointers of buffers[which]) -> i32`, after `after`, compiled
/// without optimization (a straight line of compares, run once per call); `status` computes its
/// result from the buffers it reads.
CheckPart buildCheckPart(func::FuncOp fn, Operation *after, size_t part,
                         const KernelBuffers &buffers, ArrayRef<size_t> which,
                         function_ref<Value(ImplicitLocOpBuilder &, ArrayRef<Buffer>)> status) {
  OpBuilder ob(fn.getContext());
  Type ptr = LLVM::LLVMPointerType::get(fn.getContext());
  SmallVector<Type> inputs(which.size(), ptr);
  func::FuncOp check =
      addFunction(ob, after, fn.getLoc(), (fn.getSymName() + ".check" + Twine(part)).str(), inputs,
                  {ob.getI32Type()}, /*isPublic=*/false);
  check->setAttr("passthrough", ob.getArrayAttr({ob.getStringAttr("noinline"),
                                                 ob.getStringAttr("optnone")}));
  ImplicitLocOpBuilder b(fn.getLoc(), ob);
  b.setInsertionPointToStart(&check.getBody().front());
  SmallVector<Buffer> read;
  CheckPart result{check, {}};
  for (auto [i, w] : llvm::enumerate(which)) {
    read.push_back(loadBuffer(b, check.getArgument(i), buffers.types[w], buffers.argNumbers[w]));
    result.operands.push_back(buffers.pointers[w]);
  }
  func::ReturnOp::create(b, status(b, read));
  return result;
}

/// The kernel's checks in parts of bounded size, in the order they decide the status: the
/// descriptors (-1 or 0) in groups of kBuffersPerCheck buffers, then the relations (the number of
/// the first failing one, or 0) in groups of kRelationsPerCheck, each part reading only the
/// buffers its relations name. The first nonzero status is the single-op prologue's status.
SmallVector<CheckPart> buildCheckParts(func::FuncOp fn, const KernelBuffers &buffers,
                                       ArrayRef<ExtentCheck> checks) {
  SmallVector<CheckPart> parts;
  Operation *after = fn;
  unsigned numArgs = fn.getNumArguments();
  auto add = [&](ArrayRef<size_t> which, auto status) {
    parts.push_back(buildCheckPart(fn, after, parts.size(), buffers, which, status));
    after = parts.back().fn;
  };
  for (size_t first = 0; first < buffers.types.size(); first += kBuffersPerCheck) {
    SmallVector<size_t> which;
    for (size_t i = first; i < std::min(first + kBuffersPerCheck, buffers.types.size()); ++i)
      which.push_back(i);
    add(which, [&](ImplicitLocOpBuilder &b, ArrayRef<Buffer> read) -> Value {
      SmallVector<SmallVector<Value>> sizesOf(numArgs);
      Type i32 = b.getI32Type();
      return arith::SelectOp::create(b, descriptorsOk(b, read, sizesOf), intConst(b, i32, 0),
                                     intConst(b, i32, kBadBufferStatus));
    });
  }
  DenseMap<unsigned, size_t> bufferOfArg;
  for (auto [i, arg] : llvm::enumerate(buffers.argNumbers))
    bufferOfArg[arg] = i;
  for (size_t first = 0; first < checks.size(); first += kRelationsPerCheck) {
    ArrayRef<ExtentCheck> group = checks.slice(first, std::min(kRelationsPerCheck,
                                                               checks.size() - first));
    std::set<size_t> named;
    for (const ExtentCheck &c : group)
      for (const ExtentTerm *t : {&c.lhs, &c.rhs})
        if (!t->isConstant())
          named.insert(bufferOfArg.at(t->arg));
    SmallVector<size_t> which(named.begin(), named.end());
    add(which, [&](ImplicitLocOpBuilder &b, ArrayRef<Buffer> read) -> Value {
      SmallVector<SmallVector<Value>> sizesOf(numArgs);
      for (Buffer buf : read)
        sizesOf[buf.argNumber].assign(buf.md.getSizes().begin(), buf.md.getSizes().end());
      return relationStatus(b, group, static_cast<int64_t>(first), sizesOf);
    });
  }
  return parts;
}

/// Ends the entry's prologue (`b` at its end): calls each check part in order, returns the first
/// nonzero status, and branches to `body` when every part returned 0.
void callCheckParts(ImplicitLocOpBuilder &b, func::FuncOp fn, Block *body,
                    ArrayRef<CheckPart> parts) {
  Type i32 = b.getI32Type();
  if (parts.empty())
    return branchOnStatus(b, fn, body, intConst(b, i32, 0));
  for (const CheckPart &part : parts.drop_back()) {
    Value status = func::CallOp::create(b, part.fn, part.operands).getResult(0);
    Block *from = b.getInsertionBlock();
    Block *refuse = b.createBlock(&fn.getBody(), fn.getBody().end());
    func::ReturnOp::create(b, ValueRange{status});
    Block *next = b.createBlock(&fn.getBody(), fn.getBody().end());
    b.setInsertionPointToEnd(from);
    cf::CondBranchOp::create(b, cmp(b, Pred::eq, status, intConst(b, i32, 0)), next,
                             ValueRange{}, refuse, ValueRange{});
    b.setInsertionPointToEnd(next);
  }
  const CheckPart &last = parts.back();
  branchOnStatus(b, fn, body, func::CallOp::create(b, last.fn, last.operands).getResult(0));
}

/// The kernel under its MLIR name: the unpacked memref ABI of a single-op kernel (fully dynamic
/// strided buffers), forwarding to `entry` with pointers to its descriptors.
void buildUnpackedWrapper(func::FuncOp entry, StringRef name, ArrayRef<Type> argTypes) {
  MLIRContext *ctx = entry.getContext();
  OpBuilder ob(ctx);
  SmallVector<Type> inputs;
  for (Type t : argTypes)
    inputs.push_back(isa<MemRefType>(t) ? Type(dynamicType(cast<MemRefType>(t))) : t);
  func::FuncOp wrapper = addFunction(ob, entry, entry.getLoc(), name, inputs,
                                     {ob.getI32Type()}, /*isPublic=*/true);
  ImplicitLocOpBuilder b(entry.getLoc(), ob);
  b.setInsertionPointToStart(&wrapper.getBody().front());
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  Value one = intConst(b, b.getI64Type(), 1);
  SmallVector<Value> operands;
  for (BlockArgument arg : wrapper.getArguments()) {
    auto t = dyn_cast<MemRefType>(arg.getType());
    if (!t) {
      operands.push_back(arg);
      continue;
    }
    Type desc = descriptorType(ctx, t.getRank());
    Value fields = UnrealizedConversionCastOp::create(b, desc, arg).getResult(0);
    Value slot = LLVM::AllocaOp::create(b, ptr, desc, one);
    LLVM::StoreOp::create(b, fields, slot);
    operands.push_back(slot);
  }
  func::ReturnOp::create(b, func::CallOp::create(b, entry, operands).getResults());
}
} // namespace

LogicalResult cpu::guardMultiOpKernel(func::FuncOp fn, ArrayRef<ExtentCheck> checks,
                                      ArrayRef<func::FuncOp> callees) {
  if (failed(checkKernelShape(fn)))
    return failure();
  MLIRContext *ctx = fn.getContext();
  std::string name = fn.getSymName().str();
  for (StringRef taken : {"_mlir_ciface_" + name, name + ".check0"})
    if (SymbolTable::lookupNearestSymbolFrom(fn, StringAttr::get(ctx, taken)))
      return fn.emitError() << "the kernel needs the symbol '" << taken
                            << "', which another function has";
  for (func::FuncOp callee : callees)
    takeDescriptorPointers(callee);
  // The outlined ops by name: a symbol lookup per call would scan the module each time.
  llvm::DenseSet<StringAttr> calleeNames;
  for (func::FuncOp callee : callees)
    calleeNames.insert(callee.getSymNameAttr());
  auto toCallee = [&](Operation *op) {
    auto call = dyn_cast<func::CallOp>(op);
    return call && calleeNames.contains(call.getCalleeAttr().getAttr());
  };

  // The entry point takes the C interface's descriptor pointers; the outlined ops get them as
  // they are, anything else a copy of its descriptor in the frame.
  Block &entry = fn.getBody().front();
  ImplicitLocOpBuilder b(fn.getLoc(), ctx);
  b.setInsertionPointToStart(&entry);
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  SmallVector<Type> argTypes(entry.getArgumentTypes());
  KernelBuffers buffers;
  readDescriptors(
      b, entry, [&](OpOperand &use) { return toCallee(use.getOwner()); },
      [&](BlockArgument arg, MemRefType t) {
        buffers.types.push_back(t);
        buffers.argNumbers.push_back(arg.getArgNumber());
        buffers.pointers.push_back(arg);
      });
  Block *body = splitBody(fn, b.getInsertionPoint());
  b.setInsertionPointToEnd(&entry);
  Value one = intConst(b, b.getI64Type(), 1);
  for (func::CallOp call : body->getOps<func::CallOp>()) {
    if (!toCallee(call))
      continue;
    for (OpOperand &operand : call->getOpOperands()) {
      auto t = dyn_cast<MemRefType>(operand.get().getType());
      if (!t)
        continue;
      Type desc = descriptorType(ctx, t.getRank());
      Value slot = LLVM::AllocaOp::create(b, ptr, desc, one);
      ImplicitLocOpBuilder cb(call.getLoc(), call);
      LLVM::StoreOp::create(
          cb, UnrealizedConversionCastOp::create(cb, desc, operand.get()).getResult(0), slot);
      operand.set(slot);
    }
  }
  callCheckParts(b, fn, body, buildCheckParts(fn, buffers, checks));
  // An outlined op that returns a status (its scratch allocation failed) ends the kernel.
  SmallVector<func::CallOp> failing;
  for (func::CallOp call : body->getOps<func::CallOp>())
    if (call.getNumResults() == 1 && toCallee(call))
      failing.push_back(call);
  for (func::CallOp call : failing) {
    Block *before = call->getBlock();
    Block *rest = before->splitBlock(std::next(call->getIterator()));
    Value st = call.getResult(0);
    Block *stop = b.createBlock(&fn.getBody(), fn.getBody().end());
    func::ReturnOp::create(b, ValueRange{st});
    b.setInsertionPointToEnd(before);
    cf::CondBranchOp::create(b, cmp(b, Pred::eq, st, intConst(b, b.getI32Type(), 0)), rest,
                             ValueRange{}, stop, ValueRange{});
  }
  SmallVector<Type> inputs(entry.getArgumentTypes());
  fn.setFunctionType(FunctionType::get(ctx, inputs, {b.getI32Type()}));
  fn->removeAttr("llvm.emit_c_interface");
  fn.setSymName("_mlir_ciface_" + name);
  buildUnpackedWrapper(fn, name, argTypes);
  return success();
}
