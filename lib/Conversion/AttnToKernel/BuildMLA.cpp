//===- BuildMLA.cpp - the kernel level of the MLA decode kernel -----------===//
//
// What this file is: the MLA decode kernel of a scheduled attn.mla_decode op (`<name>_mla`) at
// the kernel level: an `attnk.kernel` with the launch ABI's parameters (q, the cache, indices,
// seq_lens, out and the extents; the kernel gathers tokens with 16-byte loads, so it takes no
// tensor maps) and its launch metadata (`#attnk.launch`, `metadata`), its shared-memory rings
// (`attnk.ring.alloc`: the two key/value stages the producer fills, P handed from consumer 0 to
// consumer 1), the CTA's work and prologue, and `attnk.warp_specialize` with the producer and
// consumer roles. The plan (MLAPlan.h, resolved by planMLA) travels as the MLA ops' `plan`.
//
//===----------------------------------------------------------------------===//

#include "Build.h"

#include "../AttnToNVVM/MLAPlan.h"

#include "attn/Dialect/AttnKernel/IR/AttnKernel.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::nvvm;

attnk::LaunchAttr mlir::attn::kernel::mlaLaunch(Builder &b, const MLAPlan &p) {
  using attn_abi::Param;
  using G = attn_abi::GridSymbol;
  return kernel::makeLaunch(b, "mla_decode",
                            {b.getI64IntegerAttr(p.headGroups()), kernel::gridSymbol(b, G::Sq),
                             kernel::gridSymbol(b, G::Batch)},
                            MLAPlan::threads(), p.smemBytes(),
                            {Param::Q, Param::Kv, Param::Indices, Param::SeqLens, Param::Out,
                             Param::Batch, Param::Sq, Param::KvLen, Param::Topk},
                            /*programmatic=*/false, /*extra=*/{}, p.clusterSize());
}

DictionaryAttr mlir::attn::kernel::mlaMetadata(Builder &b, const MLAPlan &p) {
  MetadataBuilder m{b};
  return b.getDictionaryAttr(
      {m.dict("problem",
              {m.str("kind", "mla_decode"), m.num("batch", p.batch), m.num("sq", p.sq),
               m.num("heads", p.heads), m.num("kv_len", p.kvLen), m.num("topk", p.topk),
               m.flag("sparse", p.sparse), m.num("head_dim_v", p.dv), m.num("rope_dim", p.rope),
               m.str("kv_format", p.fp8 ? "fp8_tiles" : "bf16"), m.num("quant_tile", p.quantTile),
               m.num("token_bytes", p.tokenBytes()), m.flag("causal", p.causal),
               m.flag("seq_lens", p.seqLens),
               b.getNamedAttr("softmax_scale", b.getF64FloatAttr(p.softmaxScale))}),
       m.dict("schedule",
              {m.flag("crossover", p.crossover), m.num("heads_per_cta", MLAPlan::kHeadsPerCTA),
               m.num("block_keys", MLAPlan::kBlock), m.num("buffers", 2),
               m.num("producer_regs", p.producerRegs),
               b.getNamedAttr("consumer_regs",
                              b.getArrayAttr({b.getI64IntegerAttr(p.consumerRegs),
                                              b.getI64IntegerAttr(p.consumer1Regs)}))})});
}

/// The launch ABI's parameter types (docs/GPUMLA.md): q, kv, indices, seq_lens, out, batch, sq,
/// kv_len, topk. Buffers the spec does not have are typed as the kernel reads them (null at
/// launch).
static SmallVector<Type> mlaParams(MLADecodeOp op) {
  Type i32 = IntegerType::get(op.getContext(), 32);
  auto buf = [&](Value v) -> Type {
    return v ? v.getType() : MemRefType::get({ShapedType::kDynamic}, i32);
  };
  return {op.getQ().getType(),
          op.getKv().getType(),
          buf(op.getIndices()),
          buf(op.getSeqLens()),
          op.getOut().getType(),
          i32,
          i32,
          i32,
          i32};
}

/// The rings of the plan's shared-memory map: two key/value stages of 64 interleaved bf16
/// tokens (the producer's 128 threads arrive; each CTA's two consumers release, from both CTAs
/// with crossover) and P (consumer 0's 128 threads write it, consumer 1's release it).
static SmallVector<Value> allocRings(OpBuilder &b, Location loc, const MLAPlan &p) {
  MLIRContext *ctx = b.getContext();
  MLAPlan::Smem sm = p.smem();
  Type bf16 = b.getBF16Type();
  auto kv = attnk::RingType::get(ctx, {MLAPlan::kBlock, p.dk()}, bf16, 2, attnk::Swizzle::none, 128,
                                 2 * p.clusterSize());
  auto pRing = attnk::RingType::get(ctx, {MLAPlan::kHeadsPerCTA, MLAPlan::kBlock}, bf16, 1,
                                    attnk::Swizzle::swizzle_128b, 128, 128);
  // Stride and barriers default (PipelineOps.td): stages back to back, barriers after them.
  auto alloc = [&](attnk::RingType t, int64_t offset) -> Value {
    return attnk::RingAllocOp::create(b, loc, t, b.getI64IntegerAttr(offset), IntegerAttr(),
                                      IntegerAttr(), IntegerAttr());
  };
  return {alloc(kv, sm.kv), alloc(pRing, sm.p)};
}

void mlir::attn::kernel::buildMLAKernel(OpBuilder &b, Location loc, gpu::GPUModuleOp module,
                                        MLADecodeOp op, const MLAPlan &p) {
  OpBuilder::InsertionGuard g(b);
  MLIRContext *ctx = b.getContext();
  b.setInsertionPointToEnd(module.getBody());
  auto kernel = attnk::KernelOp::create(b, loc, b.getStringAttr(p.kernelName()),
                                        b.getI64IntegerAttr(MLAPlan::threads()), UnitAttr(),
                                        mlaLaunch(b, p), mlaMetadata(b, p));
  Block *body = b.createBlock(&kernel.getBody());
  for (Type t : mlaParams(op))
    body->addArgument(t, loc);
  ValueRange params = body->getArguments();
  DictionaryAttr plan = mlaPlanToAttr(ctx, p);

  Type i32 = b.getI32Type();
  auto work = attnk::MLAWorkOp::create(b, loc, i32, i32, i32, i32, plan);
  SmallVector<Value> rings = allocRings(b, loc, p);
  SmallVector<Type> keyTypes(kMLAKeyValues + (p.crossover ? kMLACrossoverValues : 0), i32);
  auto prologue =
      attnk::MLAPrologueOp::create(b, loc, keyTypes, params, rings, work->getResults(), plan);
  SmallVector<Value> roleWork(work->getResults());
  llvm::append_range(roleWork, prologue.getKeys());

  // The consumer role keeps the budget the 384 threads enter with: each consumer sets its own.
  auto ws = attnk::WarpSpecializeOp::create(
      b, loc,
      b.getArrayAttr(
          {attn::WarpRoleAttr::get(ctx, attn::RoleKind::producer, 1, p.producerRegs),
           attn::WarpRoleAttr::get(ctx, attn::RoleKind::consumer, 2, MLAPlan::kEntryRegs)}),
      b.getI64IntegerAttr(1), /*roleRegions=*/2);
  {
    OpBuilder::InsertionGuard rg(b);
    b.createBlock(&ws.getRoleRegions()[0]);
    attnk::MLAProducerOp::create(b, loc, params, rings, roleWork, plan);
    b.createBlock(&ws.getRoleRegions()[1]);
    attnk::MLAConsumersOp::create(b, loc, params, rings, roleWork, plan);
  }
  if (p.crossover)
    attnk::MLAClusterSyncOp::create(b, loc);
}
