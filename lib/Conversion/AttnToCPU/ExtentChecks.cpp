//===- ExtentChecks.cpp - extent relations of the CPU kernels -------------===//
//
// What this file is: for each attn op a CPU kernel lowers, the relations between its operands'
// extents that the op's verifier states (the same expected shapes), turned into checks over the
// function arguments' dynamic extents. Relations whose extents are all static are the verifier's
// business and are not repeated. See include/attn/Conversion/CPUExtentChecks.h.
//
//===----------------------------------------------------------------------===//

#include "attn/Conversion/CPUExtentChecks.h"

#include "attn/Dialect/Attn/IR/Attn.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <limits>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::cpu;

namespace {
/// An extent in terms of the op's operands: `scale` × dim `dim` of `value`, or a constant.
struct Extent {
  Value value;
  int64_t dim = 0, scale = 1, constant = 0;
  StringRef name;
};

Extent of(Value v, int64_t d, StringRef name, int64_t scale = 1) { return {v, d, scale, 0, name}; }
Extent cst(int64_t c) { return {Value(), 0, 1, c, ""}; }

std::string describe(const Extent &e) {
  if (!e.value)
    return std::to_string(e.constant);
  std::string s = "'" + e.name.str() + "' dim " + std::to_string(e.dim);
  return e.scale == 1 ? s : s + " * " + std::to_string(e.scale);
}

/// Collects the checks of one function.
class Collector {
public:
  Collector(func::FuncOp fn, SmallVector<ExtentCheck> &out) : fn(fn), out(out) {}

  LogicalResult add(Operation *op, Extent lhs, ExtentRelation rel, Extent rhs = cst(0)) {
    FailureOr<ExtentTerm> l = resolve(op, lhs), r = resolve(op, rhs);
    if (failed(l) || failed(r))
      return failure();
    if (l->isConstant() && r->isConstant())
      return success(); // static: the op's verifier decided
    if (rel != ExtentRelation::Positive && l->arg == r->arg && l->dim == r->dim &&
        l->scale == r->scale)
      return success(); // an extent against itself
    std::string why = op->getName().getStringRef().str() + ": " + describe(lhs);
    switch (rel) {
    case ExtentRelation::Equal:
      why += " must equal " + describe(rhs);
      break;
    case ExtentRelation::AtMost:
      why += " must be at most " + describe(rhs);
      break;
    case ExtentRelation::Positive:
      why += " must be at least 1";
      break;
    case ExtentRelation::MultipleOf:
      why += " must be a multiple of " + describe(rhs);
      break;
    }
    out.push_back({*l, *r, rel, why});
    return success();
  }

  /// Every dim of `v` equals the extent given for it.
  LogicalResult shape(Operation *op, Value v, StringRef name, ArrayRef<Extent> expected) {
    for (auto [d, e] : llvm::enumerate(expected))
      if (failed(add(op, of(v, d, name), ExtentRelation::Equal, e)))
        return failure();
    return success();
  }

private:
  FailureOr<ExtentTerm> resolve(Operation *op, const Extent &e) {
    if (!e.value)
      return ExtentTerm{-1, 0, 1, e.constant};
    auto t = cast<MemRefType>(e.value.getType());
    if (!t.isDynamicDim(e.dim)) {
      int64_t product; // saturated: no extent a kernel takes comes near it
      if (llvm::MulOverflow(t.getDimSize(e.dim), e.scale, product))
        product = std::numeric_limits<int64_t>::max();
      return ExtentTerm{-1, 0, 1, product};
    }
    auto arg = dyn_cast<BlockArgument>(e.value);
    if (!arg || arg.getOwner() != &fn.getBody().front())
      return op->emitError() << "not supported yet: '" << e.name
                             << "' has a dynamic extent but is not an argument of the kernel "
                                "function, so the kernel cannot check it on entry";
    return ExtentTerm{arg.getArgNumber(), e.dim, e.scale, 0};
  }

  func::FuncOp fn;
  SmallVector<ExtentCheck> &out;
};

/// Extent `d` of a [B, S, H, D] tensor's scale operand for `quant` (QuantAttr::getScaleShape
/// over extents that may be dynamic); failure for a ceiling division of a dynamic extent.
FailureOr<SmallVector<Extent>> scaleShape(Operation *op, QuantAttr quant, ArrayRef<Extent> bshd) {
  auto ceilDiv = [&](const Extent &e, int64_t by) -> FailureOr<Extent> {
    if (by == 1)
      return e;
    if (e.value && cast<MemRefType>(e.value.getType()).isDynamicDim(e.dim))
      return op->emitError() << "not supported yet: a scale group spanning a dynamic extent";
    int64_t n = e.value ? cast<MemRefType>(e.value.getType()).getDimSize(e.dim) : e.constant;
    return cst((n + by - 1) / by);
  };
  const Extent &b = bshd[0], &s = bshd[1], &h = bshd[2], &d = bshd[3];
  switch (quant.getGranularity()) {
  case Granularity::per_tensor:
    return SmallVector<Extent>{cst(1)};
  case Granularity::per_token:
    return SmallVector<Extent>{b, s};
  case Granularity::per_head:
    return SmallVector<Extent>{h};
  case Granularity::per_token_head:
    return SmallVector<Extent>{b, s, h};
  case Granularity::per_channel:
    return SmallVector<Extent>{h, d};
  case Granularity::per_group: {
    FailureOr<Extent> g = ceilDiv(d, quant.getGroupSize());
    if (failed(g))
      return failure();
    return SmallVector<Extent>{b, s, h, *g};
  }
  case Granularity::per_block: {
    FailureOr<Extent> r = ceilDiv(s, quant.getBlockRows()), c = ceilDiv(d, quant.getBlockCols());
    if (failed(r) || failed(c))
      return failure();
    return SmallVector<Extent>{b, *r, h, *c};
  }
  }
  llvm_unreachable("unknown granularity");
}

LogicalResult scaleOperands(Collector &c, Operation *op, QuantAttr quant, ArrayRef<Extent> bshd,
                            Value scales, Value zeros) {
  FailureOr<SmallVector<Extent>> shape = scaleShape(op, quant, bshd);
  if (failed(shape) || failed(c.shape(op, scales, "scales", *shape)))
    return failure();
  return zeros ? c.shape(op, zeros, "zeros", *shape) : success();
}

LogicalResult quantizeDynamic(Collector &c, QuantizeDynamicOp o) {
  Value src = o.getSrc(), dst = o.getDst();
  SmallVector<Extent> bshd;
  for (int64_t d = 0; d < 4; ++d)
    bshd.push_back(of(src, d, "src"));
  if (failed(c.shape(o, dst, "dst", bshd)))
    return failure();
  return scaleOperands(c, o, o.getQuant(), bshd, o.getScales(), o.getZeros());
}

LogicalResult quantizeAppend(Collector &c, QuantizeAppendOp o) {
  Value src = o.getSrc(), cache = o.getCache();
  SmallVector<Extent> cacheShape = {of(src, 0, "src"), of(cache, 1, "cache"), of(src, 2, "src"),
                                    of(src, 3, "src")};
  if (failed(c.shape(o, cache, "cache", cacheShape)) ||
      failed(c.shape(o, o.getPositions(), "positions", {of(src, 0, "src")})) ||
      failed(c.add(o, of(src, 1, "src"), ExtentRelation::AtMost, of(cache, 1, "cache"))))
    return failure();
  return scaleOperands(c, o, o.getQuant(), cacheShape, o.getScales(), o.getZeros());
}

LogicalResult quantizeMLA(Collector &c, QuantizeMLAAppendOp o) {
  Value src = o.getSrc(), cache = o.getCache();
  int64_t dv = o.getHeadDimV(), rope = o.getRopeDim(), tile = o.getKvQuant().getBlockCols();
  int64_t bytes = dv + 4 * (dv / tile) + 2 * rope;
  if (failed(c.add(o, of(src, 2, "src"), ExtentRelation::Equal, cst(dv + rope))) ||
      failed(c.shape(o, cache, "cache", {of(src, 0, "src"), of(cache, 1, "cache"), cst(bytes)})) ||
      failed(c.shape(o, o.getPositions(), "positions", {of(src, 0, "src")})))
    return failure();
  return c.add(o, of(src, 1, "src"), ExtentRelation::AtMost, of(cache, 1, "cache"));
}

/// Codebooks [H, S, C, dsub] and a [.., D] operand with D = S · dsub.
LogicalResult codebooks(Collector &c, Operation *op, PQAttr pq, Value books, Value withD,
                        StringRef withDName, int64_t dAt) {
  if (failed(c.add(op, of(withD, dAt, withDName), ExtentRelation::Equal,
                   of(books, 1, "codebooks", pq.getDsub()))))
    return failure();
  return success(succeeded(c.add(op, of(books, 2, "codebooks"), ExtentRelation::Equal,
                                 cst(pq.getCentroids()))) &&
                 succeeded(c.add(op, of(books, 3, "codebooks"), ExtentRelation::Equal,
                                 cst(pq.getDsub()))));
}

/// Query heads [Hq] a positive multiple of the KV heads [H]: H ≥ 1 and Hq mod H = 0.
LogicalResult gqa(Collector &c, Operation *op, Extent hq, Extent h) {
  if (failed(c.add(op, h, ExtentRelation::Positive)))
    return failure();
  return c.add(op, hq, ExtentRelation::MultipleOf, h);
}

/// Codes [H, NB, S, R].
LogicalResult codes(Collector &c, Operation *op, PQAttr pq, Value codesV, Extent h, Extent s) {
  return c.shape(op, codesV, "codes",
                 {h, of(codesV, 1, "codes"), s, cst(pq.getCodeRowBytes())});
}

LogicalResult pqEncode(Collector &c, PQEncodeOp o) {
  Value keys = o.getKeys(), books = o.getCodebooks();
  Extent h = of(keys, 1, "keys");
  if (failed(c.add(o, of(books, 0, "codebooks"), ExtentRelation::Equal, h)) ||
      failed(codebooks(c, o, o.getPq(), books, keys, "keys", 2)))
    return failure();
  return codes(c, o, o.getPq(), o.getCodes(), h, of(books, 1, "codebooks"));
}

LogicalResult pqLut(Collector &c, PQLutOp o) {
  Value q = o.getQuery(), books = o.getCodebooks();
  Extent hq = of(q, 0, "query"), s = of(books, 1, "codebooks");
  if (failed(gqa(c, o, hq, of(books, 0, "codebooks"))) ||
      failed(codebooks(c, o, o.getPq(), books, q, "query", 1)) ||
      failed(c.shape(o, o.getLut(), "lut", {hq, s, cst(o.getPq().getCentroids())})))
    return failure();
  return c.shape(o, o.getLutParams(), "lut_params", {hq, cst(2)});
}

LogicalResult pqScores(Collector &c, PQScoresOp o) {
  Value lut = o.getLut(), codesV = o.getCodes();
  Extent hq = of(lut, 0, "lut"), h = of(codesV, 0, "codes");
  if (failed(gqa(c, o, hq, h)) ||
      failed(c.add(o, of(lut, 2, "lut"), ExtentRelation::Equal, cst(o.getPq().getCentroids()))) ||
      failed(codes(c, o, o.getPq(), codesV, h, of(lut, 1, "lut"))) ||
      failed(c.shape(o, o.getLutParams(), "lut_params", {hq, cst(2)})) ||
      failed(c.add(o, of(o.getScores(), 0, "scores"), ExtentRelation::Equal, hq)))
    return failure();
  return c.add(o, of(o.getScores(), 1, "scores"), ExtentRelation::AtMost,
               of(codesV, 1, "codes", o.getPq().getBlock()));
}

LogicalResult pqAttention(Collector &c, PQAttentionOp o) {
  Value q = o.getQuery(), books = o.getCodebooks(), values = o.getValues();
  Extent hq = of(q, 0, "query"), h = of(books, 0, "codebooks"), t = of(values, 0, "values");
  if (failed(gqa(c, o, hq, h)) || failed(codebooks(c, o, o.getPq(), books, q, "query", 1)) ||
      failed(codes(c, o, o.getPq(), o.getCodes(), h, of(books, 1, "codebooks"))) ||
      failed(c.add(o, of(values, 1, "values"), ExtentRelation::Equal, h)) ||
      failed(c.shape(o, o.getOut(), "out", {hq, of(values, 2, "values")})) ||
      failed(c.add(o, t, ExtentRelation::AtMost,
                   of(o.getCodes(), 1, "codes", o.getPq().getBlock()))))
    return failure();
  return o.getVScale() ? c.shape(o, o.getVScale(), "v_scale", {t, h}) : success();
}
} // namespace

FailureOr<SmallVector<ExtentCheck>> cpu::collectExtentChecks(func::FuncOp fn) {
  SmallVector<ExtentCheck> checks;
  Collector c(fn, checks);
  WalkResult r = fn.walk([&](Operation *op) {
    LogicalResult ok = llvm::TypeSwitch<Operation *, LogicalResult>(op)
                           .Case([&](QuantizeDynamicOp o) { return quantizeDynamic(c, o); })
                           .Case([&](QuantizeAppendOp o) { return quantizeAppend(c, o); })
                           .Case([&](QuantizeMLAAppendOp o) { return quantizeMLA(c, o); })
                           .Case([&](PQEncodeOp o) { return pqEncode(c, o); })
                           .Case([&](PQLutOp o) { return pqLut(c, o); })
                           .Case([&](PQScoresOp o) { return pqScores(c, o); })
                           .Case([&](PQAttentionOp o) { return pqAttention(c, o); })
                           .Default([](Operation *) { return success(); });
    return failed(ok) ? WalkResult::interrupt() : WalkResult::advance();
  });
  if (r.wasInterrupted())
    return failure();
  return checks;
}

static std::string formatTerm(const ExtentTerm &t) {
  if (t.isConstant())
    return std::to_string(t.constant);
  std::string s = "arg" + std::to_string(t.arg) + "_dim" + std::to_string(t.dim);
  return t.scale == 1 ? s : s + " * " + std::to_string(t.scale);
}

std::string cpu::formatExtentCheck(const ExtentCheck &check) {
  std::string l = formatTerm(check.lhs), r = formatTerm(check.rhs);
  switch (check.relation) {
  case ExtentRelation::Equal:
    return l + " == " + r;
  case ExtentRelation::AtMost:
    return l + " <= " + r;
  case ExtentRelation::Positive:
    return l + " >= 1";
  case ExtentRelation::MultipleOf:
    return l + " % " + (check.rhs.scale == 1 ? r : "(" + r + ")") + " == 0";
  }
  llvm_unreachable("unknown relation");
}
