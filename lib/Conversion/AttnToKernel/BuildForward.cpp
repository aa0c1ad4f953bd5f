//===- BuildForward.cpp - the kernel level of the forward kernel ---------===//
//
// What this file is: the forward-attention kernel of a scheduled attn.attention op
// (`<name>_decode`, its two-CTA companion `<name>_decode_2cta`, `<name>_prefill`) at the kernel
// level: an `attnk.kernel` with the launch ABI's parameters (the K and V tensor maps, the
// buffers, the extents), its shared-memory rings (`attnk.ring.alloc`: the TMA stages, and the
// conversion buffers the producer writes), the CTA's work and prologue, and
// `attnk.warp_specialize` with the producer (BuildForwardProducer.cpp) and consumer roles (the
// tile loop, the merge of two decode warpgroups, the epilogue) and their register budgets. The
// plan (ForwardPlan.h, resolved by planForward) travels as the forward ops' `plan`.
//
//===----------------------------------------------------------------------===//

#include "Build.h"

#include "../AttnToNVVM/ForwardPlan.h"

#include "attn/Dialect/AttnKernel/IR/AttnKernel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::nvvm;

static attnk::Swizzle swizzleOf(int64_t bytes) {
  switch (bytes) {
  case 32:
    return attnk::Swizzle::swizzle_32b;
  case 64:
    return attnk::Swizzle::swizzle_64b;
  case 128:
    return attnk::Swizzle::swizzle_128b;
  default:
    return attnk::Swizzle::none;
  }
}

/// The launch ABI's parameter types (docs/GPUDecode.md): tensor maps of K and V, q, k_scale,
/// v_scale, seq_lens, alibi, out, workspace, batch, kv_len, num_splits, q_scale, k_zero, v_zero
/// and, for a dynamic prefill query length, q_len; for a paged cache, block_table and
/// num_slots; then sinks and lse when the spec has them, and for a ragged batch cu_seqlens_q and
/// total_q. Buffers the spec does not have are typed
/// as the kernel reads them (null at launch).
static SmallVector<Type> forwardParams(AttentionOp op, const ForwardPlan &p) {
  MLIRContext *ctx = op.getContext();
  Type kvElem = op.getK().getType().getElementType();
  Type i32 = IntegerType::get(ctx, 32), f32 = Float32Type::get(ctx);
  auto map = [&](int64_t swizzleBytes) -> Type {
    return attnk::TensorMapType::get(ctx, {1, p.boxRows(), 1, p.tmaBoxColumns()}, kvElem,
                                     swizzleOf(swizzleBytes));
  };
  auto buf = [](Value v, Type elem) -> Type {
    return v ? v.getType() : MemRefType::get({ShapedType::kDynamic}, elem);
  };
  SmallVector<Type> t = {map(p.kSwizzleBytes()),
                         map(p.vSwizzleBytes()),
                         op.getQ().getType(),
                         buf(op.getKScale(), f32),
                         buf(op.getVScale(), f32),
                         buf(op.getSeqLens(), i32),
                         buf(op.getAlibi(), f32),
                         op.getOut().getType(),
                         MemRefType::get({ShapedType::kDynamic}, f32),
                         i32,
                         i32,
                         i32,
                         buf(op.getQScale(), f32),
                         buf(op.getKZero(), kvElem),
                         buf(op.getVZero(), kvElem)};
  if (p.qLen < 0)
    t.push_back(i32);
  if (p.paged()) { // block_table [B, max_blocks] i32, num_slots (the pool's rows)
    t.push_back(op.getBlockTable().getType());
    t.push_back(i32);
  }
  if (p.sinks) // sinks [Hq] f32
    t.push_back(op.getSinks().getType());
  if (p.lse) // lse [B, Sq, Hq] f32
    t.push_back(op.getLse().getType());
  if (p.ragged) { // cu_seqlens_q [B + 1] i32, total_q (the packed rows)
    t.push_back(op.getCuSeqlensQ().getType());
    t.push_back(i32);
  }
  return t;
}

/// The rings of the plan's shared-memory map: the TMA stages (K then V rows), and where the
/// producer converts, the converted K (bf16, or int8 copied for int8 queries; none when the
/// WGMMAs read K from the stage) and V (bf16, f16 for int8 queries, 8-bit Vᵀ for fp8 and
/// full_int8).
static SmallVector<Value> allocRings(OpBuilder &b, Location loc, AttentionOp op,
                                     const ForwardPlan &p) {
  MLIRContext *ctx = b.getContext();
  ForwardPlan::Smem sm = p.smem();
  Type kvElem = op.getK().getType().getElementType();
  int64_t releases = 128 * (p.prefill ? p.consumerWGs : 1);
  // A ring at `off`, stages `stride` bytes apart, its full and empty barriers at `bars`.
  auto alloc = [&](int64_t off, int64_t stride, std::pair<int64_t, int64_t> bars, int64_t rows,
                   int64_t cols, Type elem, int64_t stages, attnk::Swizzle swz, int64_t producers,
                   int64_t consumers) -> Value {
    auto t = attnk::RingType::get(ctx, {rows, cols}, elem, stages, swz, producers, consumers);
    return attnk::RingAllocOp::create(b, loc, t, b.getI64IntegerAttr(off),
                                      b.getI64IntegerAttr(stride), b.getI64IntegerAttr(bars.first),
                                      b.getI64IntegerAttr(bars.second));
  };
  SmallVector<Value> rings;
  bool stageRead = p.directKV() || p.kDirect();
  rings.push_back(alloc(sm.stage, sm.stageStride,
                        {sm.fullStage(0), sm.emptyStage(0, p.stages)}, 2 * p.tileN, p.headDim,
                        kvElem, p.stages, swizzleOf(p.kSwizzleBytes()), 1,
                        stageRead ? releases : p.producerThreads()));
  if (!p.convBufs())
    return rings;
  // The converted K and V of a buffer share its barriers.
  std::pair<int64_t, int64_t> convBars = {sm.fullConv(0, p.stages), sm.emptyConv(0, p.stages)};
  auto swz128 = attnk::Swizzle::swizzle_128b;
  if (!p.kDirect()) {
    bool copied = p.qk8();
    rings.push_back(alloc(sm.conv, sm.convStride, convBars, p.tileN,
                          copied ? p.qkRowBytes() : p.headDim,
                          copied ? Type(b.getI8Type()) : Type(b.getBF16Type()), p.convBufs(),
                          swz128, p.producerThreads(), releases));
  }
  if (p.pv8())
    rings.push_back(alloc(sm.conv + sm.convV, sm.convStride, convBars, p.headDim, p.tileN, kvElem,
                          p.convBufs(), swizzleOf(p.vSwizzleBytes()), p.producerThreads(),
                          releases));
  else
    rings.push_back(alloc(sm.conv + sm.convV, sm.convStride, convBars, p.tileN, p.headDim,
                          p.pvF16() ? Type(b.getF16Type()) : Type(b.getBF16Type()),
                          p.convBufs(), swz128, p.producerThreads(), releases));
  return rings;
}

/// One role's region: the role op over the parameters, rings and work values.
template <typename RoleOp>
static void buildRole(OpBuilder &b, Location loc, Region &region, ValueRange params,
                      ValueRange rings, ValueRange work, DictionaryAttr plan) {
  OpBuilder::InsertionGuard g(b);
  b.createBlock(&region);
  RoleOp::create(b, loc, params, rings, work, plan);
}

/// The consumer role's region: without a persistent grid, the tile loop, the softmax's finish
/// (the final state), the merge of two decode warpgroups, the sinks (split 0's state) and the
/// epilogue (with the LSE output); with one, the role op alone.
static void buildConsumerRole(OpBuilder &b, Location loc, Region &region, const ForwardPlan &p,
                              ValueRange params, ValueRange rings, ValueRange work,
                              DictionaryAttr plan) {
  OpBuilder::InsertionGuard g(b);
  b.createBlock(&region);
  if (p.persistent) {
    attnk::ForwardConsumerOp::create(b, loc, TypeRange{}, params, rings, work, plan);
    return;
  }
  Type f32 = b.getF32Type();
  Type acc = attnk::AccType::get(b.getContext(), 64, p.headDim, f32);
  Type row = VectorType::get({64}, f32);
  Type rowsType = attnk::RowsType::get(b.getContext(), /*partial=*/p.prefill);
  auto loop = attnk::ForwardConsumerOp::create(b, loc, TypeRange{acc, row, row, f32, rowsType},
                                               params, rings, work, plan);
  Value m = loop.getRowMax(), rows = loop.getRows();
  auto finish = attnk::SoftmaxFinishOp::create(b, loc, acc, row, loop.getOutput(), loop.getRowSum(),
                                               rows, p.hadamard);
  Value o = finish.getResult(), l = finish.getNewSum();
  if (p.consumerWGs == 2 && !p.prefill) {
    auto merged = attnk::ForwardMergeWarpgroupsOp::create(b, loc, acc, row, row, o, m, l, rows,
                                                          rings[0], plan);
    o = merged.getResult();
    m = merged.getNewMax();
    l = merged.getNewSum();
  }
  if (p.sinks) {
    auto sink = attnk::SoftmaxSinkOp::create(b, loc, acc, row, row, o, m, l,
                                             params[p.sinksParam()], work[1], rows);
    o = sink.getResult();
    m = sink.getNewMax();
    l = sink.getNewSum();
  }
  Value lse = p.lse ? params[p.lseParam()] : Value();
  attnk::ForwardEpilogueOp::create(b, loc, o, m, l, loop.getUnit(), rows, rings[0], work, lse,
                                   plan);
}

void mlir::attn::kernel::buildForwardKernel(OpBuilder &b, gpu::GPUModuleOp module, AttentionOp op,
                                            const ForwardPlan &p) {
  OpBuilder::InsertionGuard g(b);
  MLIRContext *ctx = b.getContext();
  Location loc = op->getParentOfType<func::FuncOp>().getLoc();
  b.setInsertionPointToEnd(module.getBody());
  auto kernel = attnk::KernelOp::create(b, loc, b.getStringAttr(p.kernelName()),
                                        b.getI64IntegerAttr(p.threads()), UnitAttr(),
                                        attnk::LaunchAttr(), DictionaryAttr());
  Block *body = b.createBlock(&kernel.getBody());
  for (Type t : forwardParams(op, p))
    body->addArgument(t, loc);
  ValueRange params = body->getArguments();
  DictionaryAttr plan = forwardPlanToAttr(ctx, p);

  Type i32 = b.getI32Type();
  SmallVector<Type> workTypes(p.persistent ? 1 : 7, i32);
  auto work = attnk::ForwardWorkOp::create(b, loc, workTypes, plan);
  SmallVector<Value> rings = allocRings(b, loc, op, p);
  SmallVector<Type> tileTypes(p.persistent ? 0 : p.ragged ? 5 : 3, i32);
  auto prologue = attnk::ForwardPrologueOp::create(b, loc, tileTypes, params, rings,
                                                   work.getWork(), plan);
  SmallVector<Value> roleWork(work.getWork());
  llvm::append_range(roleWork, prologue.getTiles());

  auto role = [&](attn::RoleKind kind, int64_t wgs, int64_t regs) {
    return attn::WarpRoleAttr::get(ctx, kind, wgs, regs);
  };
  auto ws = attnk::WarpSpecializeOp::create(
      b, loc,
      b.getArrayAttr({role(attn::RoleKind::producer, p.producerWGs, p.producerRegs),
                      role(attn::RoleKind::consumer, p.consumerWGs, p.consumerRegs)}),
      b.getI64IntegerAttr(p.ctasPerSm), /*roleRegions=*/2);
  if (kernel::producerHasRegion(p)) {
    OpBuilder::InsertionGuard g(b);
    b.createBlock(&ws.getRoleRegions()[0]);
    kernel::buildForwardProducer(b, loc, op, p, params, rings, roleWork, plan);
  } else {
    buildRole<attnk::ForwardProducerOp>(b, loc, ws.getRoleRegions()[0], params, rings, roleWork,
                                        plan);
  }
  buildConsumerRole(b, loc, ws.getRoleRegions()[1], p, params, rings, roleWork, plan);
}
