//===- AttnToCPU.cpp - the convert-attn-to-cpu pass -----------------------===//
//
// What this file is: the pass driver of the CPU lowering — picks the ISA per op, makes the memref
// arguments of each kernel function signless (ui8 → i8, ui16 → i16, f8 → i8) and C-callable,
// dispatches each attn op to its generator (PQLookup.cpp, PQBuild.cpp, PQAttention.cpp,
// Quantize.cpp) and refuses the variants that have no CPU lowering. Also the ISA table and the small builders the generators share, and
// the `attn-cpu-to-llvm` pipeline that finishes the job.
//
//===----------------------------------------------------------------------===//

#include "attn/Conversion/Passes.h"

#include "CPUCodegen.h"

#include "attn/Conversion/CPUExtentChecks.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/TypeSwitch.h"

#define DEBUG_TYPE "convert-attn-to-cpu"

namespace mlir::attn {
#define GEN_PASS_DEF_CONVERTATTNTOCPU
#include "attn/Conversion/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::cpu;

//===----------------------------------------------------------------------===//
// ISA table and shared builders
//===----------------------------------------------------------------------===//

ISA ISA::get(TargetKind kind) {
  switch (kind) {
  case TargetKind::avx2:
    return {kind, 32, "llvm.x86.avx2.pshuf.b", "", ""};
  case TargetKind::avx512:
    return {kind, 64, "llvm.x86.avx512.pshuf.b.512", "", "", "",
            "llvm.x86.avx512.permvar.hi.512"};
  case TargetKind::avx512_vbmi:
    return {kind, 64, "llvm.x86.avx512.pshuf.b.512", "llvm.x86.avx512.permvar.qi.512",
            "llvm.x86.avx512.vpermi2var.qi.512", "", "llvm.x86.avx512.permvar.hi.512"};
  case TargetKind::avx512_vnni:
    return {kind, 64, "llvm.x86.avx512.pshuf.b.512", "llvm.x86.avx512.permvar.qi.512",
            "llvm.x86.avx512.vpermi2var.qi.512", "llvm.x86.avx512.vpdpbusd.512",
            "llvm.x86.avx512.permvar.hi.512"};
  case TargetKind::neon:
    return {kind, 16, "llvm.aarch64.neon.tbl1.v16i8", "", ""};
  case TargetKind::scalar:
  case TargetKind::sm_90a:
    return {kind, 0, "", "", ""};
  }
  llvm_unreachable("unknown target");
}

Value cpu::idx(ImplicitLocOpBuilder &b, int64_t v) {
  return arith::ConstantIndexOp::create(b, v);
}

Value cpu::intConst(ImplicitLocOpBuilder &b, Type t, int64_t v) {
  return arith::ConstantOp::create(b, t, b.getIntegerAttr(t, v));
}

Value cpu::floatConst(ImplicitLocOpBuilder &b, Type t, double v) {
  return arith::ConstantOp::create(b, t, b.getFloatAttr(t, v));
}

Value cpu::splat(ImplicitLocOpBuilder &b, VectorType t, double v) {
  Type e = t.getElementType();
  Attribute a = isa<FloatType>(e) ? Attribute(b.getFloatAttr(e, v))
                                  : Attribute(b.getIntegerAttr(e, static_cast<int64_t>(v)));
  return arith::ConstantOp::create(b, t, DenseElementsAttr::get(t, a));
}

Value cpu::clampIndex(ImplicitLocOpBuilder &b, Value v, Value lo, Value hi) {
  return arith::MinSIOp::create(b, arith::MaxSIOp::create(b, v, lo), hi);
}

void cpu::forLoop(ImplicitLocOpBuilder &b, Value lb, Value ub, int64_t step,
                  function_ref<void(ImplicitLocOpBuilder &, Value)> body) {
  scf::ForOp::create(b, lb, ub, idx(b, step), ValueRange{},
                     [&](OpBuilder &nested, Location loc, Value iv, ValueRange) {
                       ImplicitLocOpBuilder nb(loc, nested);
                       body(nb, iv);
                       scf::YieldOp::create(nb);
                     });
}

Value cpu::dim(ImplicitLocOpBuilder &b, Value memref, int64_t d) {
  auto t = cast<MemRefType>(memref.getType());
  if (!t.isDynamicDim(d))
    return idx(b, t.getDimSize(d));
  return memref::DimOp::create(b, memref, d);
}

FailureOr<int64_t> cpu::staticDim(ImplicitLocOpBuilder &b, Value memref, int64_t d,
                                  StringRef what) {
  auto t = cast<MemRefType>(memref.getType());
  if (t.isDynamicDim(d))
    return emitError(b.getLoc()) << "not supported yet: a dynamic " << what;
  return t.getDimSize(d);
}

Value cpu::validKeys(ImplicitLocOpBuilder &b, Value length, Value codes, Value capacity) {
  Value blockKeys = arith::MulIOp::create(b, dim(b, codes, 1), idx(b, 32));
  Value hi = arith::MinSIOp::create(b, blockKeys, capacity);
  return clampIndex(b, length, idx(b, 0), hi);
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

/// ui8 → i8, ui16 → i16, f8 → i8 (its bits) in a memref type; other types unchanged.
static Type signless(Type t) {
  auto m = dyn_cast<MemRefType>(t);
  if (!m)
    return t;
  if (isa<Float8E4M3FNType, Float8E5M2Type>(m.getElementType()))
    return MemRefType::get(m.getShape(), IntegerType::get(t.getContext(), 8), m.getLayout(),
                           m.getMemorySpace());
  auto it = dyn_cast<IntegerType>(m.getElementType());
  if (!it || it.isSignless())
    return t;
  return MemRefType::get(m.getShape(), IntegerType::get(t.getContext(), it.getWidth()),
                         m.getLayout(), m.getMemorySpace());
}

namespace {
struct ConvertAttnToCPUPass : public attn::impl::ConvertAttnToCPUBase<ConvertAttnToCPUPass> {
  using ConvertAttnToCPUBase::ConvertAttnToCPUBase;

  void getDependentDialects(DialectRegistry &registry) const override {
    ConvertAttnToCPUBase::getDependentDialects(registry);
    registry.insert<cf::ControlFlowDialect>(); // the kernels' checking prologue branches
  }

  LogicalResult lowerOp(Operation *op, TargetKind target) {
    ISA isaInfo = ISA::get(target);
    ImplicitLocOpBuilder b(op->getLoc(), op);
    return llvm::TypeSwitch<Operation *, LogicalResult>(op)
        .Case([&](PQLutOp o) {
          return emitLUT(b, o.getPq(), o.getQuery(), o.getCodebooks(), o.getLut(),
                         o.getLutParams());
        })
        .Case([&](PQScoresOp o) {
          bool raw = !o.getScores().getType().getElementType().isF32();
          return emitScores(b, isaInfo, o.getPq(), o.getLut(), o.getLutParams(), o.getCodes(),
                            o.getLength(), o.getScores(), raw, o.getLoc());
        })
        .Case([&](PQEncodeOp o) {
          return emitEncode(b, o.getPq(), o.getKeys(), o.getCodebooks(), o.getOffset(),
                            o.getCodes());
        })
        .Case([&](PQAttentionOp o) {
          return emitAttention(b, isaInfo, o, o.getQuery(), o.getCodebooks(), o.getCodes(),
                               o.getValues(), o.getVScale(), o.getLength(), o.getOut());
        })
        .Case([&](QuantizeAppendOp o) {
          return emitQuantize(b, o.getSrc(), o.getPositions(), o.getCache(), o.getScales(),
                              o.getZeros(), o.getQuant(), o.getHadamard());
        })
        .Case([&](QuantizeDynamicOp o) {
          return emitQuantize(b, o.getSrc(), Value(), o.getDst(), o.getScales(), o.getZeros(),
                              o.getQuant(), o.getHadamard());
        })
        .Case([&](QuantizeAppendPagedOp o) {
          return o->emitError() << "not supported yet by convert-attn-to-cpu: "
                                   "attn.quantize.append_paged (a slot-mapped write into a paged "
                                   "cache) has an sm_90a kernel only";
        })
        .Case([&](QuantizeMLAAppendOp o) {
          return emitQuantizeMLA(b, o.getSrc(), o.getPositions(), o.getCache(), o.getHeadDimV(),
                                 o.getRopeDim(), o.getKvQuant().getBlockCols());
        })
        .Default([&](Operation *o) {
          return o->emitError() << "not supported yet: convert-attn-to-cpu lowers the NoMAD "
                                   "attn.pq.* ops and attn.quantize.*, not '"
                                << o->getName() << "' on " << stringifyTargetKind(target);
        });
  }

  /// When the lowering of one op allocated scratch on the heap (memref.alloc in `block`, which
  /// ends in a return of nothing), runs what follows the allocations only when each succeeded
  /// (non-null, or of no elements) and makes the return return kOutOfMemoryStatus otherwise, 0
  /// after running. Returns whether the block returns a status now.
  static bool guardAllocations(Block &block) {
    SmallVector<memref::AllocOp> allocs(block.getOps<memref::AllocOp>());
    auto ret = dyn_cast<func::ReturnOp>(block.getTerminator());
    if (allocs.empty() || !ret || ret.getNumOperands() != 0)
      return false;
    ImplicitLocOpBuilder b(allocs.back().getLoc(), allocs.back());
    b.setInsertionPointAfter(allocs.back());
    Value ok = intConst(b, b.getI1Type(), 1), zero = idx(b, 0);
    for (memref::AllocOp a : allocs) {
      Value ptr = memref::ExtractAlignedPointerAsIndexOp::create(b, a);
      Value n = idx(b, 1);
      for (int64_t d = 0; d < a.getType().getRank(); ++d)
        n = arith::MulIOp::create(b, n, dim(b, a, d));
      Value usable = arith::OrIOp::create(
          b, arith::CmpIOp::create(b, arith::CmpIPredicate::ne, ptr, zero),
          arith::CmpIOp::create(b, arith::CmpIPredicate::eq, n, zero));
      ok = arith::AndIOp::create(b, ok, usable);
    }
    // What runs on the scratch: everything up to its first dealloc (or the return).
    Operation *end = ret;
    for (Operation &op : llvm::make_range(std::next(b.getInsertionPoint()), block.end()))
      if (llvm::isa<memref::DeallocOp>(op)) {
        end = &op;
        break;
      }
    Type i32 = b.getI32Type();
    auto guarded = scf::IfOp::create(b, TypeRange{i32}, ok, /*withElseRegion=*/true);
    Block *then = guarded.thenBlock();
    then->getOperations().splice(then->begin(), block.getOperations(),
                                 std::next(guarded->getIterator()), end->getIterator());
    // Static allocas stay at the top level, where they become frame slots.
    for (Operation &op : llvm::make_early_inc_range(*then))
      if (auto a = dyn_cast<memref::AllocaOp>(op); a && a->getNumOperands() == 0)
        a->moveBefore(guarded);
    b.setInsertionPointToEnd(then);
    scf::YieldOp::create(b, ValueRange{intConst(b, i32, 0)});
    b.setInsertionPointToEnd(guarded.elseBlock());
    scf::YieldOp::create(b, ValueRange{intConst(b, i32, kOutOfMemoryStatus)});
    ret->setOperands(guarded.getResults());
    return true;
  }

  /// Moves the `index`-th attn op of a kernel that holds several into its own private,
  /// never-inlined function `<kernel>.op<index>` (a name no user function can take) and returns
  /// the moved op; `call` is set to the call that replaces it. LLVM's optimizer and register
  /// allocator take superlinear time in the size of one function; the kernel keeps the checks
  /// of every op's extents (in `<kernel>.check<j>`, parts of bounded size, not optimized) and
  /// takes and passes descriptor pointers, so no function but the kernel grows with the number
  /// of ops, and the kernel only by one call each (guardMultiOpKernel; compile times in
  /// docs/CPU.md). `--emit=obj` gives the callees the kernel's ISA.
  /// The callee goes after `after` (the kernel, then the previous callee): in program order.
  Operation *outlineOp(func::FuncOp fn, Operation *op, size_t index, Operation *&after,
                       func::CallOp &call) {
    OpBuilder b(fn->getContext());
    b.setInsertionPointAfter(after);
    std::string name = (fn.getSymName() + ".op" + Twine(index)).str();
    auto callee = func::FuncOp::create(b, op->getLoc(), name,
                                       b.getFunctionType(op->getOperandTypes(), {}));
    callee.setPrivate();
    callee->setAttr("passthrough", b.getArrayAttr({b.getStringAttr("noinline")}));
    after = callee;
    Block *entry = callee.addEntryBlock();
    IRMapping map;
    map.map(op->getOperands(), entry->getArguments());
    b.setInsertionPointToStart(entry);
    Operation *moved = b.clone(*op, map);
    func::ReturnOp::create(b, op->getLoc());
    b.setInsertionPoint(op);
    call = func::CallOp::create(b, op->getLoc(), callee, op->getOperands());
    op->erase();
    return moved;
  }

  LogicalResult lowerFunction(func::FuncOp fn, std::optional<TargetKind> override) {
    SmallVector<Operation *> ops;
    fn.walk([&](Operation *op) {
      if (llvm::isa<AttnDialect>(op->getDialect()))
        ops.push_back(op);
    });
    // Functions without attn ops (the kernels' outlined callees among them) stay as they are.
    if (fn.isDeclaration() || ops.empty())
      return success();
    // A kernel becomes a C entry point with its own calling convention (a status result).
    if (!SymbolTable::symbolKnownUseEmpty(fn, getOperation()))
      return fn.emitError() << "not supported yet: a kernel function called from another "
                               "function; only entry points are lowered";
    // The extent relations refer to the ops and the original argument types: collect them first.
    FailureOr<SmallVector<ExtentCheck>> checks = collectExtentChecks(fn);
    if (failed(checks))
      return failure();
    // Resolve every target first: a function lowers to one object for one ISA family.
    SmallVector<TargetKind> targets;
    for (Operation *op : ops) {
      std::optional<TargetKind> t = override ? override : getOpTarget(op);
      if (!t)
        return op->emitError() << "no target: write target = #attn.target<...>, run "
                                  "attn-normalize{target=...} or pass isa=...";
      if (isGPUTarget(*t))
        return op->emitError() << "convert-attn-to-cpu needs a CPU target, but this op targets "
                               << stringifyTargetKind(*t);
      targets.push_back(*t);
    }
    // Make memref arguments signless; the attn ops are erased below, so their (unsigned)
    // operand constraints do not matter in between.
    SmallVector<Type> inputs;
    for (BlockArgument arg : fn.getArguments()) {
      arg.setType(signless(arg.getType()));
      inputs.push_back(arg.getType());
    }
    fn.setFunctionType(FunctionType::get(&getContext(), inputs, fn.getResultTypes()));
    fn->setAttr("llvm.emit_c_interface", UnitAttr::get(&getContext()));
    if (ops.size() == 1) {
      if (failed(lowerOp(ops.front(), targets.front())))
        return failure();
      ops.front()->erase();
      guardAllocations(fn.getBody().front());
      return guardKernelEntry(fn, *checks);
    }
    Operation *after = fn;
    SmallVector<func::FuncOp> callees;
    for (auto [i, op] : llvm::enumerate(ops)) {
      func::CallOp call;
      Operation *lowered = outlineOp(fn, op, i, after, call);
      auto callee = cast<func::FuncOp>(after);
      callees.push_back(callee);
      if (failed(lowerOp(lowered, targets[i])))
        return failure();
      lowered->erase();
      // A callee that allocates scratch returns a status; the kernel returns it when not 0.
      if (guardAllocations(callee.getBody().front())) {
        callee.setFunctionType(FunctionType::get(&getContext(), callee.getArgumentTypes(),
                                                 {IntegerType::get(&getContext(), 32)}));
        OpBuilder cb(call);
        func::CallOp::create(cb, call.getLoc(), callee, call.getOperands());
        call.erase();
      }
    }
    return guardMultiOpKernel(fn, *checks, callees);
  }

  void runOnOperation() override {
    std::optional<TargetKind> override;
    if (!isa.empty()) {
      override = symbolizeTargetKind(isa);
      if (!override || isGPUTarget(*override)) {
        getOperation().emitError() << "convert-attn-to-cpu: unknown CPU isa '" << isa
                                   << "'; expected scalar, avx2, avx512, avx512_vbmi, "
                                      "avx512_vnni or neon";
        return signalPassFailure();
      }
    }
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (failed(lowerFunction(fn, override)))
        return signalPassFailure();
  }
};
} // namespace

void mlir::attn::buildCPUToLLVMPipeline(OpPassManager &pm) {
  pm.addPass(memref::createExpandStridedMetadataPass()); // collapse_shape → reinterpret_cast
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void mlir::attn::registerCPUToLLVMPipeline() {
  PassPipelineRegistration<>("attn-cpu-to-llvm",
                             "Lower the output of convert-attn-to-cpu to the LLVM dialect",
                             buildCPUToLLVMPipeline);
}
