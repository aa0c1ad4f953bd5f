//===- BuildMLAQuantize.cpp - the kernel level of MLA's cache quantization ===//
//
// What this file is: how `attn.quantize.mla_append` (new latent tokens into FlashMLA's FP8
// token format) becomes `<name>_quantize` on sm_90a at the kernel level: one warp per new token
// (`attnk.group_index whole_tokens`, 4 per CTA), `attnk.token_rows` resolving its source row and
// cache row, the latent part as contiguous groups of one 1 × 128 tile per 8 lanes (16
// consecutive values per lane: `load_groups`, `group_scales`, `quantize_tile` to e4m3,
// `store_groups` of the codes and the tile's f32 scale), then the RoPE part on lanes 0–7
// rounded to bf16 (`convert_tile`). The arithmetic is qattn.mla.pack_fp8's, bit for bit
// (scripts/gpu-mla.py check). Also its plan, launch ABI and metadata (docs/GPUMLA.md).
//
//===----------------------------------------------------------------------===//

#include "Build.h"

#include "attn/Dialect/AttnKernel/IR/AttnKernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::attn;
using attn_abi::Param;
using namespace mlir::attn::kernel;

FailureOr<MLAQuantizePlan> mlir::attn::kernel::planMLAQuantize(QuantizeMLAAppendOp op) {
  MLAQuantizePlan p;
  p.name = op->getParentOfType<func::FuncOp>().getSymName().str();
  auto srcT = cast<MemRefType>(op.getSrc().getType());
  auto cacheT = cast<MemRefType>(op.getCache().getType());
  p.dv = op.getHeadDimV();
  p.rope = op.getRopeDim();
  p.quantTile = op.getKvQuant().getBlockCols();
  if (p.dv != 512 || p.rope != 64 || p.quantTile != 128)
    return op->emitError() << "not supported yet by the sm_90a kernels: MLA tokens of " << p.dv
                           << " + " << p.rope << " values with 1 x " << p.quantTile
                           << " tiles (512 + 64 with 1 x 128 tiles only)";
  p.batch = srcT.isDynamicDim(0) ? -1 : srcT.getDimSize(0);
  p.newTokens = srcT.isDynamicDim(1) ? -1 : srcT.getDimSize(1);
  p.capacity = cacheT.isDynamicDim(1) ? -1 : cacheT.getDimSize(1);
  p.srcElem = srcT.getElementType();
  return p;
}

/// The RoPE part: lanes 0–7 round 8 values each to bf16 after the latent codes and scales.
static void buildRope(OpBuilder &b, Location loc, const MLAQuantizePlan &p, Value x, Value row,
                      Value lane) {
  MLIRContext *ctx = b.getContext();
  int64_t lanes = p.rope / 8, vec = 16 / p.srcBytes();
  Value firstLanes =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, lane,
                            arith::ConstantIntOp::create(b, loc, b.getI32Type(), lanes));
  auto ifOp = scf::IfOp::create(b, loc, firstLanes, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  auto f32 = attnk::GroupsType::get(ctx, p.rope, b.getF32Type(), lanes, vec, true);
  auto bf16 = attnk::GroupsType::get(ctx, p.rope, b.getBF16Type(), lanes, vec, true);
  Value r = attnk::LoadGroupsOp::create(b, loc, f32, x, Value(), Value(), lane, lanes, p.dv);
  Value rb = attnk::ConvertTileOp::create(b, loc, bf16, r, Value(), ValueRange{}, ValueRange{},
                                          Value(), ArrayAttr(), attn::WarpRoleAttr(),
                                          attnk::ConvertPart::full, false)
                 .getResult();
  attnk::StoreGroupsOp::create(b, loc, rb, row, Value(), Value(), Value(), lane, Value(), Value(),
                               Value(), Value(), Value(), Value(), Value(), Value(), Value(),
                               p.ropeOffset(), 0);
}

void mlir::attn::kernel::buildMLAQuantizeKernel(OpBuilder &b, Location loc, gpu::GPUModuleOp module,
                                                QuantizeMLAAppendOp op, const MLAQuantizePlan &p) {
  OpBuilder::InsertionGuard g(b);
  MLIRContext *ctx = b.getContext();
  Type i32 = b.getI32Type();
  auto srcT = cast<MemRefType>(op.getSrc().getType());
  auto cacheT = cast<MemRefType>(op.getCache().getType());
  // Parameters: src, positions, cache, batch, new_tokens, capacity (the launch ABI).
  SmallVector<Type> params = {srcT, op.getPositions().getType(), cacheT, i32, i32, i32};
  b.setInsertionPointToEnd(module.getBody());
  auto kernel = attnk::KernelOp::create(b, loc, b.getStringAttr(p.name + "_quantize"),
                                        b.getI64IntegerAttr(128), UnitAttr(),
                                        mlaQuantizeLaunch(b, p), mlaQuantizeMetadata(b, p));
  Block *body = b.createBlock(&kernel.getBody());
  for (Type t : params)
    body->addArgument(t, loc);
  Value src = body->getArgument(0), pos = body->getArgument(1), cache = body->getArgument(2),
        batch = body->getArgument(3), newTokens = body->getArgument(4),
        capacity = body->getArgument(5);

  int64_t tiles = p.dv / p.quantTile, lanes = 32 / tiles, vec = 16 / p.srcBytes();
  auto index = attnk::GroupIndexOp::create(b, loc, SmallVector<Type>(4, i32), batch, newTokens, 0,
                                           1, lanes, tiles, /*whole_tokens=*/true);
  Value lane = index.getLaneRank();
  auto rows = attnk::TokenRowsOp::create(b, loc, src, index.getToken(), cache, pos, batch,
                                         newTokens, capacity);
  Block *rowBody = b.createBlock(&rows.getBody());
  Value x = rowBody->addArgument(MemRefType::get({srcT.getDimSize(2)}, p.srcElem), loc);
  Value row = rowBody->addArgument(MemRefType::get({cacheT.getDimSize(2)}, b.getI8Type()), loc);
  QuantAttr q = op.getKvQuant();
  auto f32 = attnk::GroupsType::get(ctx, p.quantTile, b.getF32Type(), lanes, vec, true);
  auto codes = attnk::GroupsType::get(ctx, p.quantTile, q.getElementType(), lanes, vec, true);
  Value v = attnk::LoadGroupsOp::create(b, loc, f32, x, Value(), Value(), lane, lanes, 0);
  Value s = attnk::GroupScalesOp::create(b, loc, b.getF32Type(), Type(), v, Value(), Value(),
                                         Value(), Value(), q)
                .getScale();
  Value c = attnk::QuantizeTileOp::create(b, loc, codes, v, s, Value(), q);
  attnk::StoreGroupsOp::create(b, loc, c, row, Value(), Value(), Value(), lane, Value(), Value(),
                               Value(), Value(), Value(), s, row, Value(), Value(), 0, p.dv);
  buildRope(b, loc, p, x, row, lane);
}

attnk::LaunchAttr mlir::attn::kernel::mlaQuantizeLaunch(Builder &b, const MLAQuantizePlan &p) {
  return makeLaunch(b, "quantize",
                    {gridSymbol(b, attn_abi::GridSymbol::TokenCtas), b.getI64IntegerAttr(1),
                     b.getI64IntegerAttr(1)},
                    128, 0,
                    {Param::Src, Param::Positions, Param::Cache, Param::Batch, Param::NewTokens,
                     Param::Capacity});
}

DictionaryAttr mlir::attn::kernel::mlaQuantizeMetadata(Builder &b, const MLAQuantizePlan &p) {
  MetadataBuilder m{b};
  StringRef srcName = p.srcElem.isBF16() ? "bf16" : p.srcElem.isF16() ? "f16" : "f32";
  return b.getDictionaryAttr(
      {m.dict("problem", {m.str("kind", "quantize_mla"), m.num("batch", p.batch),
                          m.num("new_tokens", p.newTokens), m.num("capacity", p.capacity),
                          m.num("head_dim_v", p.dv), m.num("rope_dim", p.rope),
                          m.num("quant_tile", p.quantTile), m.num("token_bytes", p.tokenBytes()),
                          m.str("src_dtype", srcName)}),
       m.dict("schedule", {m.num("tokens_per_cta", MLAQuantizePlan::kTokensPerCTA)})});
}
