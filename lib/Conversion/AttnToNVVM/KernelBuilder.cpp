//===- KernelBuilder.cpp - building blocks of the Hopper kernels ----------===//
//
// What this file is: the implementation of KernelBuilder.h — how each kernel-level building block
// (mbarrier, TMA load, WGMMA descriptor and instruction, shuffle, barrier, loop) is spelled in the
// LLVM and NVVM dialects.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::attn::nvvm;

LLVM::LLVMFuncOp mlir::attn::nvvm::declareKernel(OpBuilder &b, Location loc,
                                                 gpu::GPUModuleOp module, StringRef name,
                                                 ArrayRef<Type> args, int64_t threads,
                                                 int64_t minBlocks) {
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToEnd(module.getBody());
  MLIRContext *ctx = b.getContext();
  auto fnTy = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), args);
  auto fn = LLVM::LLVMFuncOp::create(b, loc, name, fnTy);
  fn->setAttr("nvvm.kernel", UnitAttr::get(ctx));
  fn->setAttr("nvvm.maxntid", b.getDenseI32ArrayAttr({static_cast<int32_t>(threads), 1, 1}));
  if (minBlocks > 0)
    fn->setAttr("nvvm.minctasm", b.getI32IntegerAttr(minBlocks));
  return fn;
}

Value KernelBuilder::intrinsic(StringRef name, Type result, ValueRange args) {
  return LLVM::CallIntrinsicOp::create(b, loc, result, b.getStringAttr(name), args).getResult(0);
}

void KernelBuilder::intrinsicVoid(StringRef name, ValueRange args) {
  LLVM::CallIntrinsicOp::create(b, loc, b.getStringAttr(name), args);
}

SmallVector<Value, 4> KernelBuilder::ldmatrixX4Trans(Value p) {
  Type t = LLVM::LLVMStructType::getLiteral(b.getContext(), {i32(), i32(), i32(), i32()});
  Value s = intrinsic("llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16", t, {p});
  SmallVector<Value, 4> out;
  for (int64_t i = 0; i < 4; ++i)
    out.push_back(LLVM::ExtractValueOp::create(b, loc, s, i));
  return out;
}

Value KernelBuilder::packBF16x2(Value lo, Value hi, bool f16) {
  Type half = f16 ? Type(b.getF16Type()) : Type(b.getBF16Type());
  Value bf = LLVM::FPTruncOp::create(b, loc, VectorType::get({2}, half), vector({lo, hi}));
  return bitcast(i32(), bf);
}

Value KernelBuilder::vector(ArrayRef<Value> v) {
  auto type = VectorType::get({static_cast<int64_t>(v.size())}, v.front().getType());
  Value r = LLVM::UndefOp::create(b, loc, type);
  for (auto [i, x] : llvm::enumerate(v))
    r = LLVM::InsertElementOp::create(b, loc, r, x, i32(i));
  return r;
}

Value KernelBuilder::shflXor(Value v, int64_t mask) {
  return NVVM::ShflOp::create(b, loc, v.getType(), i32(-1), v, i32(mask), i32(0x1f),
                              NVVM::ShflKind::bfly, UnitAttr());
}

void KernelBuilder::butterflies(MutableArrayRef<Value> xs, size_t bit) {
  for (size_t i = 0; i < xs.size(); ++i)
    if (!(i & bit)) {
      Value a = xs[i], c = xs[i | bit];
      xs[i] = fadd(a, c);
      xs[i | bit] = fsub(a, c);
    }
}

void KernelBuilder::laneButterflies(MutableArrayRef<Value> xs, int64_t mask, Value upper) {
  Value sign = select(upper, f32(-1.0), f32(1.0));
  for (Value &v : xs)
    v = fma(v, sign, shflXor(v, mask));
}

Value KernelBuilder::shflIdx(Value v, Value lane) {
  return NVVM::ShflOp::create(b, loc, v.getType(), i32(-1), v, lane, i32(0x1f), NVVM::ShflKind::idx,
                              UnitAttr());
}

void KernelBuilder::barrier(int64_t id, int64_t threads) {
  if (threads == 0) {
    NVVM::BarrierOp::create(b, loc, Type(), i32(id), Value(), NVVM::BarrierReductionAttr(),
                            Value());
    return;
  }
  barrierSync(i32(id), threads);
}

void KernelBuilder::fenceProxyAsyncShared() {
  NVVM::FenceProxyOp::create(b, loc, NVVM::ProxyKind::async_shared,
                             NVVM::SharedSpaceAttr::get(ctx(), NVVM::SharedSpace::shared_cta));
}

void KernelBuilder::fenceMbarrierInit() { NVVM::FenceMbarrierInitOp::create(b, loc); }

void KernelBuilder::cpAsync16(Value dstShared, Value srcGlobal, Value srcBytes) {
  NVVM::CpAsyncOp::create(b, loc, dstShared, srcGlobal, b.getI32IntegerAttr(16),
                          NVVM::LoadCacheModifierKindAttr::get(ctx(), NVVM::LoadCacheModifierKind::CG),
                          srcBytes);
}

void KernelBuilder::cpAsyncCommit() { NVVM::CpAsyncCommitGroupOp::create(b, loc); }

void KernelBuilder::cpAsyncWaitAll() { NVVM::CpAsyncWaitGroupOp::create(b, loc, 0); }

void KernelBuilder::mbarrierInit(Value bar, int64_t count) {
  NVVM::MBarrierInitOp::create(b, loc, bar, i32(count), Value());
}

void KernelBuilder::barrierSync(Value id, int64_t threads) {
  NVVM::BarrierOp::create(b, loc, Type(), id, i32(threads), NVVM::BarrierReductionAttr(), Value());
}

void KernelBuilder::barrierArrive(Value id, int64_t threads) {
  NVVM::BarrierArriveOp::create(b, loc, TypeRange{}, id, i32(threads));
}

void KernelBuilder::mbarrierArrive(Value bar) {
  NVVM::MBarrierArriveOp::create(b, loc, Type(), bar, Value());
}

void KernelBuilder::mbarrierArriveExpectTx(Value bar, int64_t bytes) {
  NVVM::MBarrierArriveExpectTxOp::create(b, loc, Type(), bar, i32(bytes), NVVM::MemScopeKind::CTA,
                                         false, Value());
}

void KernelBuilder::mbarrierWait(Value bar, Value parity) {
  NVVM::MBarrierTryWaitParityOp::create(b, loc, bar, parity, i32(0));
}

Value KernelBuilder::mbarrierTestWait(Value bar, Value parity) {
  return LLVM::InlineAsmOp::create(
             b, loc, i32(), ValueRange{sharedAddr(bar), parity},
             "{ .reg .pred p; mbarrier.test_wait.parity.shared::cta.b64 p, [$1], $2; "
             "selp.u32 $0, 1, 0, p; }",
             "=r,r,r,~{memory}", /*has_side_effects=*/true, /*is_align_stack=*/false,
             LLVM::tailcallkind::TailCallKind::None, LLVM::AsmDialectAttr(), ArrayAttr())
      .getResult(0);
}

void KernelBuilder::asmVoid(StringRef ptx, StringRef constraints, ValueRange operands) {
  LLVM::InlineAsmOp::create(b, loc, TypeRange{}, operands, ptx, constraints,
                            /*has_side_effects=*/true, /*is_align_stack=*/false,
                            LLVM::tailcallkind::TailCallKind::None, LLVM::AsmDialectAttr(),
                            ArrayAttr());
}

Value KernelBuilder::tanhApprox(Value x) {
  return LLVM::InlineAsmOp::create(b, loc, f32(), ValueRange{x}, "tanh.approx.f32 $0, $1;",
                                   "=f,f", /*has_side_effects=*/false, /*is_align_stack=*/false,
                                   LLVM::tailcallkind::TailCallKind::None, LLVM::AsmDialectAttr(),
                                   ArrayAttr())
      .getResult(0);
}

Value KernelBuilder::mapaShared(Value addr, Value rank) {
  auto op = LLVM::InlineAsmOp::create(
      b, loc, i32(), ValueRange{addr, rank}, "mapa.shared::cluster.u32 $0, $1, $2;", "=r,r,r",
      /*has_side_effects=*/false, /*is_align_stack=*/false, LLVM::tailcallkind::TailCallKind::None,
      LLVM::AsmDialectAttr(), ArrayAttr());
  return op.getResult(0);
}

Value KernelBuilder::loadClusterF32(Value addr) {
  return LLVM::InlineAsmOp::create(
             b, loc, f32(), ValueRange{addr}, "ld.shared::cluster.f32 $0, [$1];", "=f,r,~{memory}",
             /*has_side_effects=*/true, /*is_align_stack=*/false,
             LLVM::tailcallkind::TailCallKind::None, LLVM::AsmDialectAttr(), ArrayAttr())
      .getResult(0);
}

void KernelBuilder::stAsync(Value addr, Value v4, Value bar) {
  asmVoid("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [$0], {$1, $2, $3, $4}, "
          "[$5];",
          "r,r,r,r,r,r,~{memory}",
          ValueRange{addr, extract(v4, 0), extract(v4, 1), extract(v4, 2), extract(v4, 3), bar});
}

void KernelBuilder::mbarrierArriveCluster(Value bar) {
  asmVoid("mbarrier.arrive.shared::cluster.b64 _, [$0];", "r,~{memory}", ValueRange{bar});
}

void KernelBuilder::tmaLoad(Value dst, Value map, ValueRange coords, Value bar) {
  NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
      b, loc, dst, map, coords, bar, ValueRange{}, Value(), Value(), NVVM::TMALoadMode::TILE,
      /*isCTAOnly=*/true, NVVM::CTAGroupKindAttr(), Value());
}

Value KernelBuilder::wgmmaDescriptor(Value sharedAddress, int64_t lbo, int64_t sbo,
                                     WgmmaLayout layout) {
  return wgmmaDescriptorAt(wgmmaDescriptorLo(sharedAddress, lbo), 0, sbo, layout);
}

// Bits 0–13: address >> 4; 16–29: leading byte offset >> 4; 32–45: stride byte offset >> 4;
// 62–63: layout type (WgmmaLayout). Base offset (49–51) is 0: swizzled tiles are 1024-aligned.
Value KernelBuilder::wgmmaDescriptorLo(Value sharedAddress, int64_t lbo) {
  return bor(band(lshr(sharedAddress, 4), 0x3FFF), i32(int32_t((lbo >> 4) & 0x3FFF) << 16));
}

Value KernelBuilder::wgmmaDescriptorAt(Value lo, int64_t byteOffset, int64_t sbo,
                                       WgmmaLayout layout) {
  assert(byteOffset % 16 == 0 && "WGMMA descriptors address 16-byte units");
  if (byteOffset)
    lo = add(lo, byteOffset >> 4);
  uint64_t high = (uint64_t(sbo >> 4) & 0x3FFF) << 32 | static_cast<uint64_t>(layout) << 62;
  return bor(zext64(lo), i64(static_cast<int64_t>(high)));
}

Type KernelBuilder::accStructType(int64_t n, Type field) {
  SmallVector<Type> fields(n / 2, field);
  return LLVM::LLVMStructType::getLiteral(ctx(), fields);
}

Value KernelBuilder::packStruct(Type t, ArrayRef<Value> values) {
  Value s = LLVM::UndefOp::create(b, loc, t);
  for (auto [i, v] : llvm::enumerate(values))
    s = LLVM::InsertValueOp::create(b, loc, s, v, ArrayRef<int64_t>{static_cast<int64_t>(i)});
  return s;
}

SmallVector<Value> KernelBuilder::unpackStruct(Value s, int64_t n) {
  SmallVector<Value> out;
  for (int64_t i = 0; i < n; ++i)
    out.push_back(LLVM::ExtractValueOp::create(b, loc, s, ArrayRef<int64_t>{i}));
  return out;
}

SmallVector<Value> KernelBuilder::wgmmaShared(ArrayRef<Value> acc, Value descA, Value descB,
                                              int64_t n, int64_t kDim, NVVM::WGMMATypes ab,
                                              NVVM::WGMMATypes d, Type field, bool accumulate,
                                              bool transB) {
  Type st = accStructType(n, field);
  Value in = accumulate ? packStruct(st, acc) : LLVM::UndefOp::create(b, loc, st).getResult();
  auto shape = NVVM::MMAShapeAttr::get(ctx(), 64, n, kDim);
  Value out = NVVM::WgmmaMmaAsyncOp::create(
      b, loc, st, in, descA, descB, shape, ab, ab, d,
      accumulate ? NVVM::WGMMAScaleOut::one : NVVM::WGMMAScaleOut::zero, NVVM::WGMMAScaleIn::one,
      NVVM::WGMMAScaleIn::one, NVVM::MMALayout::row,
      transB ? NVVM::MMALayout::row : NVVM::MMALayout::col, NVVM::MMAIntOverflowAttr());
  return unpackStruct(out, n / 2);
}

SmallVector<Value> KernelBuilder::wgmmaSS(ArrayRef<Value> acc, Value descA, Value descB, int64_t n,
                                          bool accumulate, bool transB) {
  return wgmmaShared(acc, descA, descB, n, 16, NVVM::WGMMATypes::bf16, NVVM::WGMMATypes::f32, f32(),
                     accumulate, transB);
}

SmallVector<Value> KernelBuilder::wgmmaSS8(ArrayRef<Value> acc, Value descA, Value descB, int64_t n,
                                           bool accumulate, bool fp8) {
  if (fp8)
    return wgmmaShared(acc, descA, descB, n, 32, NVVM::WGMMATypes::e4m3, NVVM::WGMMATypes::f32,
                       f32(), accumulate, /*transB=*/false);
  return wgmmaShared(acc, descA, descB, n, 32, NVVM::WGMMATypes::s8, NVVM::WGMMATypes::s32, i32(),
                     accumulate, /*transB=*/false);
}

Value KernelBuilder::tidXHere() {
  return LLVM::InlineAsmOp::create(b, loc, i32(), ValueRange{}, "mov.u32 $0, %tid.x;", "=r",
                                   /*has_side_effects=*/true, /*is_align_stack=*/false,
                                   LLVM::tailcallkind::TailCallKind::None, LLVM::AsmDialectAttr(),
                                   ArrayAttr())
      .getResult(0);
}

Value KernelBuilder::packE4M3x4(Value x0, Value x1, Value x2, Value x3) {
  // cvt.rn.satfinite.e4m3x2.f32 d, a, b puts a in the upper byte.
  return LLVM::InlineAsmOp::create(
             b, loc, i32(), ValueRange{x1, x0, x3, x2},
             "{ .reg .b16 lo, hi; cvt.rn.satfinite.e4m3x2.f32 lo, $1, $2; "
             "cvt.rn.satfinite.e4m3x2.f32 hi, $3, $4; mov.b32 $0, {lo, hi}; }",
             "=r,f,f,f,f", /*has_side_effects=*/true, /*is_align_stack=*/false,
             LLVM::tailcallkind::TailCallKind::None, LLVM::AsmDialectAttr(), ArrayAttr())
      .getResult(0);
}

Value KernelBuilder::packBF16x2Ordered(Value lo, Value hi, bool f16) {
  // cvt.rn.bf16x2.f32 d, a, b puts a in the upper half: hi first.
  return LLVM::InlineAsmOp::create(
             b, loc, i32(), ValueRange{hi, lo},
             f16 ? "cvt.rn.f16x2.f32 $0, $1, $2;" : "cvt.rn.bf16x2.f32 $0, $1, $2;", "=r,f,f",
             /*has_side_effects=*/true, /*is_align_stack=*/false,
             LLVM::tailcallkind::TailCallKind::None, LLVM::AsmDialectAttr(), ArrayAttr())
      .getResult(0);
}

Value KernelBuilder::packU8x4(Value x0, Value x1, Value x2, Value x3, Value scale) {
  // x · scale + 1.5 · 2^23 holds round(x · scale) in its low mantissa bits; prmt gathers byte 0
  // of each.
  return LLVM::InlineAsmOp::create(
             b, loc, i32(), ValueRange{x0, x1, x2, x3, scale},
             "{ .reg .f32 t0, t1, t2, t3; .reg .b32 lo, hi; "
             "fma.rn.f32 t0, $1, $5, 0f4B400000; fma.rn.f32 t1, $2, $5, 0f4B400000; "
             "fma.rn.f32 t2, $3, $5, 0f4B400000; fma.rn.f32 t3, $4, $5, 0f4B400000; "
             "prmt.b32 lo, t0, t1, 0x0040; prmt.b32 hi, t2, t3, 0x0040; "
             "prmt.b32 $0, lo, hi, 0x5410; }",
             "=r,f,f,f,f,f", /*has_side_effects=*/true, /*is_align_stack=*/false,
             LLVM::tailcallkind::TailCallKind::None, LLVM::AsmDialectAttr(), ArrayAttr())
      .getResult(0);
}

SmallVector<Value> KernelBuilder::wgmmaRS(ArrayRef<Value> acc, ArrayRef<Value> a, Value descB,
                                          int64_t n, bool transB, RSTypes types, bool accumulate) {
  // NVVM's wgmma op takes A only as a descriptor; the register form is inline PTX.
  int64_t nacc = n / 2;
  bool isInt = types == RSTypes::U8S8;
  std::string regs, cons;
  for (int64_t i = 0; i < nacc; ++i) {
    regs += (i ? ", $" : "$") + std::to_string(i);
    cons += (i ? "," : "") + std::string(isInt ? "=r" : "=f");
  }
  // 8-bit types take no transpose immediate, integer types no scale immediates either.
  std::string shape = types == RSTypes::BF16   ? "k16.f32.bf16.bf16"
                      : types == RSTypes::F16  ? "k16.f32.f16.f16"
                      : types == RSTypes::E4M3 ? "k32.f32.e4m3.e4m3"
                                               : "k32.s32.u8.s8";
  std::string imm = isInt                    ? ""
                    : types == RSTypes::E4M3 ? ", 1, 1"
                                             : (transB ? ", 1, 1, 1" : ", 1, 1, 0");
  std::string asmStr = llvm::formatv(
      "{{ .reg .pred p; setp.ne.b32 p, {9}, 0; "
      "wgmma.mma_async.sync.aligned.m64n{0}{8} {{{1}}, {{${2}, ${3}, ${4}, ${5}}, "
      "${6}, p{7}; }",
      n, regs, nacc, nacc + 1, nacc + 2, nacc + 3, nacc + 4, imm, shape, accumulate ? 1 : 0);
  cons += ",r,r,r,r,l";
  for (int64_t i = 0; i < nacc; ++i)
    cons += "," + std::to_string(i);
  SmallVector<Value> operands(a.begin(), a.end());
  operands.push_back(descB);
  operands.append(acc.begin(), acc.end());
  Type st = accStructType(n, isInt ? i32() : f32());
  auto op = LLVM::InlineAsmOp::create(b, loc, st, operands, asmStr, cons,
                                      /*has_side_effects=*/true, /*is_align_stack=*/false,
                                      LLVM::tailcallkind::TailCallKind::None,
                                      LLVM::AsmDialectAttr(), ArrayAttr());
  return unpackStruct(op.getResult(0), nacc);
}

SmallVector<Value> KernelBuilder::forLoop(Value lb, Value ub, int64_t step, ValueRange inits,
                                          LoopBody body) {
  return forLoop(lb, ub, constLike(lb, step), inits, body);
}

SmallVector<Value> KernelBuilder::forLoop(Value lb, Value ub, Value step, ValueRange inits,
                                          LoopBody body) {
  // The body builder writes the terminator: no implicit yield is created and erased, which a
  // rewriter (the attnk patterns build through one) would not be told of.
  auto forOp = scf::ForOp::create(b, loc, lb, ub, step, inits,
                                  [&](OpBuilder &, Location, Value iv, ValueRange iterArgs) {
                                    scf::YieldOp::create(b, loc, body(iv, iterArgs));
                                  });
  return SmallVector<Value>(forOp.getResults());
}

SmallVector<Value> KernelBuilder::ifThenElse(Value cond, TypeRange types,
                                             std::function<SmallVector<Value>()> thenBody,
                                             std::function<SmallVector<Value>()> elseBody) {
  // Blocks without terminators: each branch's yield is written once (see forLoop).
  auto ifOp = scf::IfOp::create(b, loc, types, cond, /*addThenBlock=*/true, /*addElseBlock=*/true);
  auto fill = [&](Region &r, const std::function<SmallVector<Value>()> &fn) {
    OpBuilder::InsertionGuard guard(b);
    Block *blk = &r.front();
    b.setInsertionPointToEnd(blk);
    SmallVector<Value> yields = fn ? fn() : SmallVector<Value>();
    scf::YieldOp::create(b, loc, yields);
  };
  fill(ifOp.getThenRegion(), thenBody);
  fill(ifOp.getElseRegion(), elseBody);
  return SmallVector<Value>(ifOp.getResults());
}

void KernelBuilder::ifThen(Value cond, std::function<void()> body) {
  ifThenElse(
      cond, TypeRange{},
      [&] {
        body();
        return SmallVector<Value>();
      },
      nullptr);
}
