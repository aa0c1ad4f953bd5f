//===- BuildQuantize.cpp - the kernel level of the quantize kernels -------===//
//
// What this file is: how `attn.quantize.append` (new K/V tokens into a quantized cache at
// per-batch positions), `attn.quantize.append_paged` (new rows into a paged cache at the slots of
// a slot mapping) and `attn.quantize.dynamic` (activations such as Q) become a kernel on
// sm_90a: planning (which variants exist, how lanes map onto scale groups), the kernel level of
// `<name>_quantize` (attnk.group_index, load_groups, convert_tile, hadamard, group_scales,
// quantize_tile, store_groups) and its launch metadata. A memory-bound kernel: the loads of every
// slot are issued before any group is reduced. The arithmetic is qattn.quant's
// (docs/QuantSchemes.md) with the kernel policy for non-finite inputs: NaN quantizes as 0, ±inf
// saturate, and neither enters a scale.
//
//===----------------------------------------------------------------------===//

#include "Build.h"
#include "QuantizePlan.h"

#include "attn/Dialect/AttnKernel/IR/AttnKernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::attn;
using attn_abi::Param;
using namespace mlir::attn::kernel;

/// Elements a thread may hold for one group (registers).
static constexpr int64_t kMaxElemsPerThread = 128;

static std::string granularityText(QuantAttr q) {
  switch (q.getGranularity()) {
  case Granularity::per_group:
    return llvm::formatv("per_group<{0}>", q.getGroupSize()).str();
  case Granularity::per_block:
    return llvm::formatv("per_block<{0} x {1}>", q.getBlockRows(), q.getBlockCols()).str();
  default:
    return stringifyGranularity(q.getGranularity()).str();
  }
}

FailureOr<QuantizePlan> mlir::attn::kernel::planQuantize(Operation *op) {
  bool ok = true;
  auto fail = [&]() -> InFlightDiagnostic {
    ok = false;
    return op->emitError() << "not supported yet by the sm_90a kernels: ";
  };
  QuantizePlan p;
  p.name = op->getParentOfType<func::FuncOp>().getSymName().str();
  MemRefType srcT, dstT;
  QuantAttr q;
  if (auto a = dyn_cast<QuantizeAppendOp>(op)) {
    srcT = a.getSrc().getType();
    dstT = a.getCache().getType();
    q = a.getQuant();
    p.hadamard = a.getHadamard();
  } else if (auto pa = dyn_cast<QuantizeAppendPagedOp>(op)) {
    // Flat rows [T, H, D] into the pool seen as num_pages · P rows: T "sequences" of one token.
    auto flatT = cast<MemRefType>(pa.getSrc().getType());
    dstT = pa.getCache().getType();
    srcT = MemRefType::get({flatT.getDimSize(0), 1, flatT.getDimSize(1), flatT.getDimSize(2)},
                           flatT.getElementType());
    q = pa.getQuant();
    p.hadamard = pa.getHadamard();
    p.paged = true;
    p.pageSize = pa.getPageSize();
    p.numPages = dstT.isDynamicDim(0) ? -1 : dstT.getDimSize(0);
    p.slotBits = pa.getSlotMapping().getType().getElementTypeBitWidth();
  } else {
    auto d = cast<QuantizeDynamicOp>(op);
    p.append = false;
    srcT = d.getSrc().getType();
    dstT = d.getDst().getType();
    q = d.getQuant();
    p.hadamard = d.getHadamard();
  }
  if (srcT.isDynamicDim(2) || srcT.isDynamicDim(3)) {
    fail() << "a dynamic head count or head_dim (only batch and token counts may be dynamic)";
    return failure();
  }
  auto ext = [](MemRefType t, int64_t d) { return t.isDynamicDim(d) ? -1 : t.getDimSize(d); };
  p.batch = ext(srcT, 0);
  p.newTokens = ext(srcT, 1);
  p.capacity = p.paged ? (p.numPages < 0 ? -1 : p.numPages * p.pageSize) : ext(dstT, 1);
  p.heads = srcT.getDimSize(2);
  p.headDim = srcT.getDimSize(3);
  Type se = srcT.getElementType();
  p.src = se.isBF16() ? QSrc::BF16 : se.isF16() ? QSrc::F16 : QSrc::F32;
  Type ce = q.getElementType();
  p.asym = q.isAsymmetric();
  if (ce.isSignlessInteger(8))
    p.code = QCode::I8;
  else if (ce.isUnsignedInteger(8) && p.asym)
    p.code = QCode::U8;
  else if (isa<Float8E4M3FNType>(ce) && !p.asym)
    p.code = QCode::E4M3;
  else
    fail() << "codes of type " << ce << (p.asym ? " asymmetric" : " symmetric")
           << " (i8 or e4m3 symmetric; i8 or ui8 asymmetric)";
  Type st = q.getScaleType();
  p.scale = st.isF32() ? QScale::F32 : st.isF16() ? QScale::F16 : QScale::BF16;
  p.quant = q;
  p.gran = q.getGranularity();
  p.granText = granularityText(q);
  p.groupElems = q.getGroupElems(p.heads, p.headDim); // static granularities go row by row
  // 16-byte loads where the group allows it.
  p.vec = 16 / p.srcBytes();
  while (p.groupElems % p.vec)
    p.vec /= 2;
  int64_t vecs = p.groupElems / p.vec;
  p.lanes = 32;
  while (vecs % p.lanes)
    p.lanes /= 2;
  p.chunks = vecs / p.lanes;
  p.unroll = std::max<int64_t>(1, 4 / p.chunks);
  if (p.chunks * p.vec > kMaxElemsPerThread)
    fail() << "a scale group of " << p.groupElems << " elements (at most "
           << 32 * kMaxElemsPerThread << ")";
  if (p.vec * p.srcBytes() < 4)
    fail() << "a scale group of " << p.groupElems << " elements (a multiple of " << 4 / p.srcBytes()
           << ")";
  if (!ok)
    return failure();
  return p;
}

namespace {
/// The operands of the quantize op as the kernel's parameters take them.
struct QuantizeOperands {
  Value src, positions, dst, scales, zeros; ///< positions: the slot mapping of a paged append
  explicit QuantizeOperands(Operation *op) {
    if (auto a = dyn_cast<QuantizeAppendOp>(op)) {
      src = a.getSrc();
      positions = a.getPositions();
      dst = a.getCache();
      scales = a.getScales();
      zeros = a.getZeros();
    } else if (auto pa = dyn_cast<QuantizeAppendPagedOp>(op)) {
      src = pa.getSrc();
      positions = pa.getSlotMapping();
      dst = pa.getCache();
      scales = pa.getScales();
      zeros = pa.getZeros();
    } else {
      auto d = cast<QuantizeDynamicOp>(op);
      src = d.getSrc();
      dst = d.getDst();
      scales = d.getScales();
      zeros = d.getZeros();
    }
  }
};
} // namespace

void mlir::attn::kernel::buildQuantizeKernel(OpBuilder &b, Location loc, gpu::GPUModuleOp module,
                                             Operation *op, const QuantizePlan &p) {
  OpBuilder::InsertionGuard g(b);
  MLIRContext *ctx = b.getContext();
  QuantizeOperands ops(op);
  Type i32 = b.getI32Type();
  Type codeT = p.quant.getElementType();
  auto dynI32 = MemRefType::get({ShapedType::kDynamic}, i32);
  auto dynCodes = MemRefType::get({ShapedType::kDynamic}, codeT);
  // Parameters: src, positions, dst, scales, zeros, batch, new_tokens, capacity (the launch ABI;
  // a parameter the op has no operand for keeps its slot with a generic type). A paged append:
  // src, slot_mapping, dst, scales, zeros, num_tokens, num_slots.
  SmallVector<Type> params = {ops.src.getType(),
                              ops.positions ? ops.positions.getType() : Type(dynI32),
                              ops.dst.getType(),
                              ops.scales.getType(),
                              ops.zeros ? ops.zeros.getType() : Type(dynCodes),
                              i32,
                              i32};
  if (!p.paged)
    params.push_back(i32);
  b.setInsertionPointToEnd(module.getBody());
  auto kernel = attnk::KernelOp::create(b, loc, b.getStringAttr(p.name + "_quantize"),
                                        b.getI64IntegerAttr(128), UnitAttr(), quantizeLaunch(b, p),
                                        quantizeMetadata(b, p));
  Block *body = b.createBlock(&kernel.getBody());
  for (Type t : params)
    body->addArgument(t, loc);
  Value src = body->getArgument(0), pos = body->getArgument(1), dst = body->getArgument(2),
        scales = body->getArgument(3), zeros = body->getArgument(4), batch = body->getArgument(5);
  // A paged append's tokens are T sequences of one token, its capacity the pool's rows.
  Value newTokens =
      p.paged ? Value(arith::ConstantIntOp::create(b, loc, 1, 32)) : body->getArgument(6);
  Value capacity = body->getArgument(p.paged ? 6 : 7);

  Type srcElem = cast<MemRefType>(ops.src.getType()).getElementType();
  auto chunks = VectorType::get({p.chunks, p.vec}, srcElem);
  auto f32Groups = attnk::GroupsType::get(ctx, p.groupElems, b.getF32Type(), p.lanes, p.vec, false);
  auto codeGroups = attnk::GroupsType::get(ctx, p.groupElems, codeT, p.lanes, p.vec, false);
  bool perChannel = p.gran == Granularity::per_channel;
  Type scaleT = perChannel ? Type(f32Groups) : Type(b.getF32Type());

  // Every slot's loads first.
  struct Slot {
    attnk::GroupIndexOp index;
    Value raw;
  };
  SmallVector<Slot> slots;
  for (int64_t u = 0; u < p.unroll; ++u) {
    auto index = attnk::GroupIndexOp::create(b, loc, SmallVector<Type>(4, i32), batch, newTokens, u,
                                             p.unroll, p.lanes, p.groupsPerToken());
    Value raw = attnk::LoadGroupsOp::create(b, loc, chunks, src, index.getToken(),
                                            index.getGroupInToken(), index.getLaneRank(), p.lanes);
    slots.push_back({index, raw});
  }
  for (Slot &s : slots) {
    Value lane = s.index.getLaneRank(), gin = s.index.getGroupInToken();
    Value x = attnk::ConvertTileOp::create(b, loc, f32Groups, s.raw, Value(), ValueRange{},
                                           ValueRange{}, Value(), ArrayAttr(), attn::WarpRoleAttr(),
                                           attnk::ConvertPart::full, false)
                  .getResult();
    if (p.hadamard)
      x = attnk::HadamardOp::create(b, loc, f32Groups, x, lane, p.headDim);
    bool read = !p.dynamicScales();
    auto sc = attnk::GroupScalesOp::create(
        b, loc, scaleT, p.asym ? scaleT : Type(), x, read ? gin : Value(),
        read && perChannel ? lane : Value(), read ? scales : Value(),
        read && p.asym ? zeros : Value(), p.quant);
    Value codes = attnk::QuantizeTileOp::create(b, loc, codeGroups, x, sc.getScale(),
                                                sc.getZeroPoint(), p.quant);
    attnk::StoreGroupsOp::create(
        b, loc, codes, dst, s.index.getGroup(), s.index.getToken(), gin, lane, batch, newTokens,
        capacity, p.append && !p.paged ? pos : Value(), p.paged ? pos : Value(),
        read ? Value() : sc.getScale(), read ? Value() : scales, read ? Value() : sc.getZeroPoint(),
        read || !p.asym ? Value() : zeros);
  }
}

attnk::LaunchAttr mlir::attn::kernel::quantizeLaunch(Builder &b, const QuantizePlan &p) {
  if (p.paged)
    return makeLaunch(b, "quantize",
                      {gridSymbol(b, attn_abi::GridSymbol::SlotQuantizeCtas),
                       b.getI64IntegerAttr(1), b.getI64IntegerAttr(1)},
                      128, 0,
                      {Param::Src, Param::SlotMapping, Param::Dst, Param::Scales, Param::Zeros,
                       Param::NumTokens, Param::NumSlots});
  return makeLaunch(b, "quantize",
                    {gridSymbol(b, attn_abi::GridSymbol::QuantizeCtas), b.getI64IntegerAttr(1),
                     b.getI64IntegerAttr(1)},
                    128, 0,
                    {Param::Src, Param::Positions, Param::Dst, Param::Scales, Param::Zeros,
                     Param::Batch, Param::NewTokens, Param::Capacity});
}

DictionaryAttr mlir::attn::kernel::quantizeMetadata(Builder &b, const QuantizePlan &p) {
  MetadataBuilder m{b};
  const char *src = p.src == QSrc::BF16 ? "bf16" : p.src == QSrc::F16 ? "f16" : "f32";
  const char *code = p.code == QCode::I8 ? "i8" : p.code == QCode::U8 ? "ui8" : "f8E4M3FN";
  const char *scale = p.scale == QScale::F32 ? "f32" : p.scale == QScale::F16 ? "f16" : "bf16";
  SmallVector<NamedAttribute> problem;
  if (p.paged)
    problem = {m.str("kind", "quantize_append_paged"), m.num("num_tokens", p.batch),
               m.num("num_pages", p.numPages), m.num("page_size", p.pageSize),
               m.str("slot_dtype", p.slotBits == 32 ? "i32" : "i64")};
  else
    problem = {m.str("kind", p.append ? "quantize_append" : "quantize_dynamic"),
               m.num("batch", p.batch), m.num("new_tokens", p.newTokens),
               m.num("capacity", p.capacity)};
  problem.append({m.num("heads", p.heads), m.num("head_dim", p.headDim), m.str("src_dtype", src),
                  m.str("code_dtype", code), m.str("granularity", p.granText),
                  m.flag("symmetric", !p.asym), m.flag("dynamic_scales", p.dynamicScales()),
                  m.flag("hadamard", p.hadamard), m.str("scale_dtype", scale)});
  return b.getDictionaryAttr(
      {m.dict("problem", problem),
       m.dict("schedule",
              {m.num("group_elems", p.groupElems), m.num("groups_per_token", p.groupsPerToken()),
               m.num("groups_per_cta", p.groupsPerCTA()), m.num("lanes_per_group", p.lanes),
               m.num("vector_elems", p.vec)})});
}
