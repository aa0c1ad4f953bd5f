//===- ComputeOps.cpp - conversion, GEMM, softmax, merge -------------------===//
//
// What this file is: the verifiers of the kernel level's compute ops: `attnk.convert_tile` (the
// dequantization's schemes, operands and element types), `attnk.wgmma` (shapes and types as the
// PTX ISA allows them), `attnk.wgmma_wait`, the online-softmax step and its finish
// (`attnk.softmax_finish`), the output rescale, the
// split merges and the tile store.
//
//===----------------------------------------------------------------------===//

#include "attn/Dialect/AttnKernel/IR/AttnKernel.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::attnk;

namespace {
/// Rows × columns and element type of a tile-valued operand (stage, frag, acc).
struct TileInfo {
  int64_t rows = 0, cols = 0;
  Type elem;
};

std::optional<TileInfo> tileInfo(Type t) {
  if (auto s = dyn_cast<StageType>(t))
    return TileInfo{s.getShape()[0], s.getShape()[1], s.getElementType()};
  if (auto f = dyn_cast<FragType>(t))
    return TileInfo{f.getM(), f.getK(), f.getElementType()};
  if (auto a = dyn_cast<AccType>(t))
    return TileInfo{a.getM(), a.getN(), a.getElementType()};
  return std::nullopt;
}

/// The element type of a scale or zero-point operand: memref, vector or stage.
Type operandElementType(Type t) {
  if (auto s = dyn_cast<ShapedType>(t))
    return s.getElementType();
  if (auto s = dyn_cast<StageType>(t))
    return s.getElementType();
  return {};
}

bool isDequantCode(Type t) { return t.isInteger(8) || isa<Float8E4M3FNType>(t); }

bool isRowVectorOf(Type t, int64_t rows) {
  auto v = dyn_cast<VectorType>(t);
  return v && v.getRank() == 1 && v.getDimSize(0) == rows;
}
} // namespace

//===----------------------------------------------------------------------===//
// ConvertTileOp
//===----------------------------------------------------------------------===//

/// A quantize kernel's widening: a thread's loaded chunks → an f32 group.
static LogicalResult verifyWidening(ConvertTileOp op, VectorType in) {
  auto out = dyn_cast_or_null<GroupsType>(op.getResult() ? op.getResult().getType() : Type());
  if (!out || op.getDest() || op.getQuantAttr() || !op.getScales().empty() ||
      !op.getZeroPoints().empty() || op.getTranspose())
    return op.emitOpError("widens loaded chunks into an f32 groups value, without schemes");
  if (!out.getElementType().isF32() || out.getChunks() != in.getDimSize(0) ||
      out.getVec() != in.getDimSize(1))
    return op.emitOpError("widens ")
           << in.getDimSize(0) << " chunks of " << in.getDimSize(1)
           << " elements into f32 groups of as many, got " << out;
  return success();
}

LogicalResult ConvertTileOp::verify() {
  if (auto v = dyn_cast<VectorType>(getSource().getType()))
    return verifyWidening(*this, v);
  if (auto g = dyn_cast<GroupsType>(getSource().getType())) {
    auto out = dyn_cast_or_null<GroupsType>(getResult() ? getResult().getType() : Type());
    if (getQuant() || getDest() || !g.getContiguous() || !g.getElementType().isF32() || !out ||
        out != GroupsType::get(getContext(), g.getElems(), BFloat16Type::get(getContext()),
                               g.getLanes(), g.getVec(), true))
      return emitOpError("rounds contiguous f32 groups to bf16 groups of the same layout, "
                         "without schemes");
    return success();
  }
  if (bool(getDest()) == bool(getResult()))
    return emitOpError("needs either an `into` stage or a result, not both or neither");
  if ((getValidRows() || getRoleAttr()) && !getDest())
    return emitOpError("`rows` and `role` go with a stage to stage conversion");
  if (getResult() && isa<GroupsType>(getResult().getType()))
    return emitOpError("produces a groups value only from loaded chunks");
  Type outType = getDest() ? getDest().getType() : getResult().getType();
  TileInfo in = *tileInfo(getSource().getType()), out = *tileInfo(outType);
  bool fromAcc = isa<AccType>(getSource().getType());
  if (getTranspose()) {
    if (!getDest() || !isa<StageType>(getSource().getType()))
      return emitOpError("transpose converts a stage into a stage");
    std::swap(out.rows, out.cols);
  }
  if (in.rows != out.rows || in.cols != out.cols)
    return emitOpError("converts a ")
           << in.rows << "x" << in.cols << " tile into a " << (getTranspose() ? out.cols : out.rows)
           << "x" << (getTranspose() ? out.rows : out.cols) << " tile";
  if (fromAcc != isa<AccType>(outType))
    return emitOpError("an accumulator converts into an accumulator, and only an accumulator does");

  SmallVector<attn::QuantAttr> quants;
  if (getQuantAttr())
    for (Attribute a : getQuantAttr())
      quants.push_back(cast<attn::QuantAttr>(a));
  if (quants.size() > 2)
    return emitOpError("takes at most two schemes (the two operands of a GEMM), got ")
           << quants.size();
  if (getScales().size() != (getPart() == ConvertPart::codes ? 0 : quants.size()))
    return emitOpError("needs one scale operand per scheme")
           << (getPart() == ConvertPart::codes ? " except with part = codes (none)" : "")
           << ", got " << getScales().size();
  size_t asym = llvm::count_if(quants, [](attn::QuantAttr q) { return q.isAsymmetric(); });
  size_t wantZeros = getPart() == ConvertPart::scales ? 0 : asym;
  if (getZeroPoints().size() != wantZeros)
    return emitOpError("needs one zero-point operand per asymmetric scheme (")
           << wantZeros << "), got " << getZeroPoints().size();

  if (fromAcc) {
    if (getPart() != ConvertPart::scales || quants.empty())
      return emitOpError("on an accumulator applies scales only: part = scales and a scheme");
    if (!out.elem.isF32())
      return emitOpError("result accumulator must be f32, got ") << out.elem;
  } else if (!quants.empty()) {
    if (getPart() == ConvertPart::scales)
      return emitOpError("part = scales applies to an accumulator");
    if (quants.size() != 1)
      return emitOpError("a tile of codes has one scheme, got ") << quants.size();
    attn::QuantAttr q = quants.front();
    if (q.getElementType() != in.elem)
      return emitOpError("source element type ")
             << in.elem << " is not the scheme's " << q.getElementType();
    if (!isDequantCode(in.elem))
      return emitOpError("not supported yet: dequantizing ") << in.elem << " (i8, ui8, f8E4M3FN)";
    if (!out.elem.isBF16() && !out.elem.isF16())
      return emitOpError("dequantizes to bf16 or f16, got ") << out.elem;
  }
  for (auto [q, s] : llvm::zip(quants, getScales()))
    if (operandElementType(s.getType()) != q.getScaleType())
      return emitOpError("scale operand type ")
             << s.getType() << " does not hold the scheme's " << q.getScaleType() << " scales";
  auto asymQuants =
      llvm::make_filter_range(quants, [](attn::QuantAttr q) { return q.isAsymmetric(); });
  // A stage → stage conversion may take its zero points as one f32 per producer thread: thread
  // t's is the zero point of the tile's row t (a code, exact in f32).
  for (auto [q, z] : llvm::zip(asymQuants, getZeroPoints()))
    if (operandElementType(z.getType()) != q.getElementType() &&
        !(getDest() && z.getType().isF32()))
      return emitOpError("zero-point operand type ")
             << z.getType() << " does not hold " << q.getElementType() << " codes"
             << (getDest() ? " (or, per producer thread, its row's zero point as f32)" : "");
  return success();
}

//===----------------------------------------------------------------------===//
// WgmmaOp, WgmmaWaitOp
//===----------------------------------------------------------------------===//

LogicalResult WgmmaOp::verify() {
  TileInfo a = *tileInfo(getA().getType());
  StageType bType = getB().getType();
  AccType acc = getAcc().getType();
  Type ta = a.elem, tb = bType.getElementType(), td = acc.getElementType();
  bool a16 = ta.isBF16() || ta.isF16();
  bool aF8 = isa<Float8E4M3FNType, Float8E5M2Type>(ta),
       bF8 = isa<Float8E4M3FNType, Float8E5M2Type>(tb);
  bool ok = (a16 && ta == tb && td.isF32()) || (aF8 && bF8 && td.isF32()) ||
            (ta.isInteger(8) && tb.isInteger(8) && td.isSignlessInteger(32));
  if (!ok)
    return emitOpError("no WGMMA multiplies ")
           << ta << " by " << tb << " into " << td
           << " (bf16/f16 -> f32, e4m3/e5m2 -> f32, i8/ui8 -> i32)";
  if ((getTransposeA() || getTransposeB()) && !a16)
    return emitOpError("transposed operands exist for 16-bit types only (PTX imm-trans)");
  if (getTransposeA() && isa<FragType>(getA().getType()))
    return emitOpError("transpose_a applies to a shared-memory A");
  int64_t m = a.rows, k = a.cols;
  if (getTransposeA())
    std::swap(m, k);
  int64_t n = bType.getShape()[0], kb = bType.getShape()[1];
  if (getTransposeB())
    std::swap(n, kb);
  if (m != acc.getM() || n != acc.getN())
    return emitOpError("A·Bᵀ is ")
           << m << "x" << n << ", the accumulator " << acc.getM() << "x" << acc.getN();
  if (k != kb)
    return emitOpError("A has K = ") << k << ", B has K = " << kb;
  int64_t step = a16 ? 16 : 32;
  if (k % step != 0)
    return emitOpError("K = ") << k << " is not a multiple of the instruction's K = " << step;
  if (ta.isInteger(8) && n > 24 && n % 16 != 0)
    return emitOpError("8-bit integer WGMMAs take N = 8, 16, 24 or a multiple of 16, got ") << n;
  return success();
}

LogicalResult WgmmaWaitOp::verify() {
  if (getPending() < 0 || getPending() > 7)
    return emitOpError("pending must be in [0, 7], got ") << getPending();
  return success();
}

//===----------------------------------------------------------------------===//
// Softmax, rescale, merge, store
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxStepOp::verify() {
  AccType s = getScores().getType();
  FragType p = getP().getType();
  if (!s.getElementType().isF32())
    return emitOpError("scores must be an f32 accumulator, got ") << s.getElementType();
  if (!isRowVectorOf(getRowMax().getType(), s.getM()))
    return emitOpError("row statistics need one value per score row (") << s.getM() << ")";
  if (p.getM() != s.getM() || p.getK() != s.getN())
    return emitOpError("P is ") << p.getM() << "x" << p.getK() << ", the scores " << s.getM() << "x"
                                << s.getN();
  if (p.getElementType().isInteger(8))
    return emitOpError("not supported yet: integer P");
  if (getAlibi() && !isRowVectorOf(getAlibi().getType(), s.getM()))
    return emitOpError("alibi needs one slope per score row");
  if (!(getScaleLog2().convertToFloat() > 0))
    return emitOpError("scale_log2 must be positive");
  return success();
}

LogicalResult SoftmaxFinishOp::verify() {
  AccType o = getAcc().getType();
  if (!o.getElementType().isF32())
    return emitOpError("finishes an f32 accumulator, got ") << o.getElementType();
  if (!isRowVectorOf(getRowSum().getType(), o.getM()))
    return emitOpError("needs one row sum per accumulator row (") << o.getM() << ")";
  if (getHadamard() && !llvm::isPowerOf2_64(o.getN()))
    return emitOpError("with hadamard, O's columns must be a power of two, got ") << o.getN();
  return success();
}

LogicalResult SoftmaxSinkOp::verify() {
  AccType o = getAcc().getType();
  if (!o.getElementType().isF32())
    return emitOpError("takes an f32 accumulator, got ") << o.getElementType();
  if (!isRowVectorOf(getRowMax().getType(), o.getM()))
    return emitOpError("needs one row maximum and sum per accumulator row (") << o.getM() << ")";
  if (cast<RowsType>(getRows().getType()).getPartial())
    return emitOpError("folds sinks into decode rows; prefill's partial rows are not supported");
  return success();
}

LogicalResult RescaleOutputOp::verify() {
  if (!getAcc().getType().getElementType().isF32())
    return emitOpError("rescales an f32 accumulator");
  if (!isRowVectorOf(getFactor().getType(), getAcc().getType().getM()))
    return emitOpError("needs one factor per accumulator row");
  return success();
}

LogicalResult MergeClusterOp::verify() {
  if (getSplits() < 2 || getSplits() > 8)
    return emitOpError("merges 2 to 8 CTAs of a (portable) cluster, got ") << getSplits();
  if (!getAcc().getType().getElementType().isF32())
    return emitOpError("merges f32 accumulators");
  if (!isRowVectorOf(getRowMax().getType(), getAcc().getType().getM()))
    return emitOpError("row statistics need one value per accumulator row");
  return success();
}

int64_t MergeCombineOp::getThreads(CombineForm form) {
  return form == CombineForm::narrow ? 128 : 32 * kWideWarps;
}

int64_t MergeCombineOp::getSharedBytes(CombineForm form, int64_t d) {
  // The wide form: one slot per warp of O[0 .. D), max and sum, 16-byte aligned.
  return form == CombineForm::narrow ? 0 : kWideWarps * (d + 4) * 4;
}

LogicalResult MergeCombineOp::verify() {
  auto out = cast<MemRefType>(getOut().getType());
  for (int64_t d : {1, 2, 3})
    if (out.isDynamicDim(d))
      return emitOpError("needs a static query length, head count and head_dim, got ") << out;
  int64_t qLen = out.getDimSize(1), heads = out.getDimSize(2), d = out.getDimSize(3);
  int64_t kvHeads = getKvHeads(), pack = getPack();
  if (d % 64 != 0)
    return emitOpError("needs a head_dim that is a multiple of 64, got ") << d;
  if (kvHeads < 1 || heads % kvHeads != 0)
    return emitOpError("needs kv_heads dividing the ") << heads << " query heads, got " << kvHeads;
  if (pack < 1 || (heads / kvHeads) % pack != 0 || pack * qLen > 64)
    return emitOpError("needs pack dividing the ")
           << heads / kvHeads << " query heads per KV head with pack · q_len ≤ 64, got " << pack;
  if (Value lse = getLse()) {
    auto t = cast<MemRefType>(lse.getType());
    int64_t want[] = {out.getDimSize(0), qLen, heads};
    for (int64_t i = 0; i < 3; ++i)
      if (!t.isDynamicDim(i) && !ShapedType::isDynamic(want[i]) && t.getDimSize(i) != want[i])
        return emitOpError("needs an lse of shape [batch, q_len, heads] of the output ")
               << out << ", got " << t;
  }
  auto kernel = (*this)->getParentOfType<KernelOp>();
  if (kernel && kernel.getThreads() != getThreads(getForm()))
    return emitOpError("of form ") << stringifyCombineForm(getForm()) << " runs on "
                                   << getThreads(getForm()) << " threads, the kernel has "
                                   << kernel.getThreads();
  return success();
}

LogicalResult StoreTileOp::verify() {
  auto dest = cast<MemRefType>(getDest().getType());
  if (static_cast<int64_t>(getIndices().size()) != dest.getRank())
    return emitOpError("needs one index per destination dimension (")
           << dest.getRank() << "), got " << getIndices().size();
  Type elem = dest.getElementType();
  if (auto acc = dyn_cast<AccType>(getValue().getType())) {
    if (!acc.getElementType().isF32())
      return emitOpError("stores an f32 accumulator (convert an i32 one with "
                         "attnk.convert_tile first)");
    if (dest.getRank() < 2)
      return emitOpError("stores a tile into a destination of rank 2 or more");
    if (!elem.isBF16() && !elem.isF16() && !elem.isF32())
      return emitOpError("stores into bf16, f16 or f32, got ") << elem;
  } else if (!elem.isF32()) {
    return emitOpError("stores a row vector into f32, got ") << elem;
  }
  return success();
}
