//===- QuantizeKernel.cpp - quantize kernels for sm_90a -------------------===//
//
// What this file is: the GPU lowering of `attn.quantize.append` (new K/V tokens into a quantized
// cache at per-batch positions) and `attn.quantize.dynamic` (activations such as Q): planning
// (which variants exist, how lanes map onto scale groups), the generator of `<name>_quantize`,
// and its launch metadata. A memory-bound kernel: 16-byte loads of every chunk are issued before
// any group is reduced; a group's amax (or min/max) is reduced across its lanes with shuffles, and
// one lane writes the scale (and zero point). The arithmetic is qattn.quant's
// (docs/QuantSchemes.md) with the kernel policy for non-finite inputs: NaN quantizes as 0, ±inf
// saturate, and neither enters a scale. With `hadamard` each head's row is rotated first
// (qattn.quant.hadamard's butterflies, in its order: in registers and by shfl.xor across the
// group's lanes), non-finite inputs as 0.
//
//===----------------------------------------------------------------------===//

#include "QuantizePlan.h"
#include "KernelBuilder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::nvvm;
using P = LLVM::ICmpPredicate;
using FP = LLVM::FCmpPredicate;

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

FailureOr<QuantizePlan> mlir::attn::nvvm::planQuantize(Operation *op) {
  bool ok = true;
  auto fail = [&]() -> InFlightDiagnostic {
    ok = false;
    return op->emitError() << "not supported yet by convert-attn-to-nvvm: ";
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
  p.capacity = ext(dstT, 1);
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
    fail() << "a scale group of " << p.groupElems << " elements (a multiple of "
           << 4 / p.srcBytes() << ")";
  if (!ok)
    return failure();
  return p;
}

void mlir::attn::nvvm::buildQuantizeKernel(OpBuilder &b, Location loc, gpu::GPUModuleOp module,
                                           const QuantizePlan &p) {
  MLIRContext *ctx = b.getContext();
  Type glob = LLVM::LLVMPointerType::get(ctx, kGlobal);
  Type i32T = b.getI32Type();
  auto fn = declareKernel(b, loc, module, p.name + "_quantize",
                          {glob, glob, glob, glob, glob, i32T, i32T, i32T}, 128);
  OpBuilder::InsertionGuard g(b);
  Block *entry = fn.addEntryBlock(b);
  b.setInsertionPointToStart(entry);
  KernelBuilder k(b, loc);
  Value src = fn.getArgument(0), pos = fn.getArgument(1), dst = fn.getArgument(2),
        scales = fn.getArgument(3), zeros = fn.getArgument(4), batch = fn.getArgument(5),
        newTokens = fn.getArgument(6), capacity = fn.getArgument(7);

  const int64_t L = p.lanes, V = p.vec, I = p.chunks, C = p.groupElems, HD = p.rowElems();
  const int64_t gpt = p.groupsPerToken(), S = p.groupsPerWarp();
  Type srcElem = p.src == QSrc::BF16 ? Type(b.getBF16Type())
                 : p.src == QSrc::F16 ? Type(b.getF16Type())
                                      : Type(b.getF32Type());
  Type srcVec = VectorType::get({V}, srcElem), f32Vec = VectorType::get({V}, k.f32());

  Value tid = k.tidX();
  Value warp = k.lshr(tid, 5), lane = k.band(tid, 31);
  Value slot = k.udiv(lane, L), sub = k.urem(lane, L);
  Value numGroups = k.mul(k.mul(batch, newTokens), k.i32(gpt));
  Value last = k.add(numGroups, -1);
  Value warpBase = k.mul(k.add(k.mul(k.ctaidX(), 4), warp), p.unroll * S);

  // Issue every load first.
  struct Slot {
    Value g, tok, gin;
    SmallVector<Value> raw;
  };
  SmallVector<Slot> slots;
  for (int64_t u = 0; u < p.unroll; ++u) {
    Slot s;
    s.g = k.add(k.add(warpBase, u * S), slot);
    Value gl = k.smin(s.g, last); // a clamped, always valid address for the tail
    s.tok = k.udiv(gl, gpt);
    s.gin = k.urem(gl, gpt);
    Value base = k.add(k.mul(k.zext64(s.tok), HD), k.zext64(k.mul(s.gin, C)));
    for (int64_t c = 0; c < I; ++c) {
      Value e = k.add(base, k.zext64(k.mul(k.add(sub, c * L), V)));
      s.raw.push_back(k.loadInvariant(srcVec, k.gep(src, k.mul(e, p.srcBytes())), V * p.srcBytes()));
    }
    slots.push_back(std::move(s));
  }

  Value zero = k.f32(0), inf = k.f32(INFINITY);
  auto fabs = [&](Value x) { return LLVM::FAbsOp::create(b, loc, x); };
  auto fmin = [&](Value x, Value y) { return LLVM::MinNumOp::create(b, loc, x, y); };
  auto roundAway = [&](Value x) { return LLVM::RoundOp::create(b, loc, x); };
  auto clampF = [&](Value x, double lo, double hi) {
    return fmin(k.fmax(x, k.f32(lo)), k.f32(hi));
  };
  auto reduce = [&](Value v, bool isMax) {
    for (int64_t m = 1; m < L; m *= 2) {
      Value o = k.shflXor(v, m);
      v = isMax ? k.fmax(v, o) : fmin(v, o);
    }
    return v;
  };
  auto codeType = [&]() { return b.getI8Type(); };
  Type scaleT = p.scale == QScale::F32  ? Type(k.f32())
                : p.scale == QScale::F16 ? Type(b.getF16Type())
                                         : Type(b.getBF16Type());
  // A scale as stored (scaleT: rounded to nearest, then up one ulp if that fell below the f32
  // value, so no value saturates) and as used (f32, the stored value).
  auto storedScale = [&](Value s32) -> Value {
    if (p.scale == QScale::F32)
      return s32;
    Value h = LLVM::FPTruncOp::create(b, loc, scaleT, s32);
    Value below = k.fcmp(FP::olt, LLVM::FPExtOp::create(b, loc, k.f32(), h), s32);
    Value bits = k.bitcast(k.i16(), h);
    return k.bitcast(scaleT, k.select(below, k.add(bits, 1), bits));
  };
  auto usedScale = [&](Value stored) {
    return p.scale == QScale::F32 ? stored
                                  : LLVM::FPExtOp::create(b, loc, k.f32(), stored).getResult();
  };

  // `hadamard`: x ← x·H on each head's row of D, non-finite values as 0 first. Element e of the
  // group is x[j] with e = (sub + (j / V) · L) · V + j mod V: a butterfly over an element bit
  // below V pairs registers, one over the next log2 L bits the lanes (shfl.xor; the upper lane
  // keeps partner − own, exactly a − b), one above registers j / V apart — bit by bit upwards as
  // qattn.quant.hadamard goes, so the values agree to the last bit.
  auto rotate = [&](SmallVector<Value> &xs) {
    for (Value &v : xs)
      v = k.select(k.fcmp(FP::olt, fabs(v), inf), v, zero);
    for (int64_t bit = 1; bit < p.headDim; bit *= 2) {
      if (bit >= V && bit < V * L)
        k.laneButterflies(xs, bit / V, k.cmp(P::ne, k.band(sub, bit / V), 0));
      else
        k.butterflies(xs, size_t(bit < V ? bit : bit / L));
    }
    Value norm = k.f32(static_cast<float>(1.0 / std::sqrt(double(p.headDim))));
    for (Value &v : xs)
      v = k.fmul(v, norm);
  };

  for (Slot &s : slots) {
    // f32 values as loaded (x) and with NaN → 0 (xc, what the codes are made of). The reductions
    // read x through a finiteness test, which NaN fails too.
    SmallVector<Value> x, xc;
    for (Value r : s.raw) {
      Value f = p.src == QSrc::F32 ? r : LLVM::FPExtOp::create(b, loc, f32Vec, r).getResult();
      for (int64_t e = 0; e < V; ++e) {
        Value v = k.extract(f, e);
        x.push_back(v);
        xc.push_back(k.select(k.fcmp(FP::uno, v, v), zero, v));
      }
    }
    if (p.hadamard) {
      rotate(x);
      xc = x;
    }
    auto elemIndex = [&](int64_t j) { // element of the group held in x[j]
      return k.add(k.mul(k.add(sub, (j / V) * L), V), j % V);
    };
    // Scales (and zero points): one per group, or per element for per_channel.
    SmallVector<Value> sc(x.size()), zp(x.size());
    Value groupScale, groupZero;
    if (p.dynamicScales()) {
      if (!p.asym) {
        Value amax = zero;
        for (Value v : x) {
          Value a = fabs(v);
          amax = k.fmax(amax, k.select(k.fcmp(FP::olt, a, inf), a, zero));
        }
        amax = reduce(amax, true);
        groupScale = k.fmax(k.fdiv(amax, k.f32(p.hi())), k.f32(p.minScale()));
        groupScale = usedScale(storedScale(groupScale));
      } else {
        Value mn = zero, mx = zero;
        for (Value v : x) {
          Value fin = k.select(k.fcmp(FP::olt, fabs(v), inf), v, zero);
          mn = fmin(mn, fin);
          mx = k.fmax(mx, fin);
        }
        mn = reduce(mn, false);
        mx = reduce(mx, true);
        groupScale = k.fmax(k.fdiv(k.fsub(mx, mn), k.f32(p.hi() - p.lo())),
                            k.f32(p.minScale()));
        groupScale = usedScale(storedScale(groupScale));
        groupZero = clampF(roundAway(k.fsub(k.f32(p.lo()), k.fdiv(mn, groupScale))), p.lo(), p.hi());
      }
      for (size_t j = 0; j < x.size(); ++j) {
        sc[j] = groupScale;
        zp[j] = groupZero;
      }
    } else {
      // Static: per_tensor [1], per_head [H], per_channel [H, D]; a group is one head's row.
      auto loadZero = [&](Value index) {
        Value z = k.loadInvariant(codeType(), k.gep(zeros, k.zext64(index)), 1);
        return p.code == QCode::U8 ? LLVM::UIToFPOp::create(b, loc, k.f32(), z).getResult()
                                   : LLVM::SIToFPOp::create(b, loc, k.f32(), z).getResult();
      };
      for (size_t j = 0; j < x.size(); ++j) {
        Value index = p.gran == Granularity::per_tensor ? k.i32(0)
                      : p.gran == Granularity::per_head
                          ? s.gin
                          : k.add(k.mul(s.gin, p.headDim), elemIndex(j));
        if (j > 0 && p.gran != Granularity::per_channel) {
          sc[j] = sc[0];
          zp[j] = zp[0];
          continue;
        }
        sc[j] = usedScale(k.loadInvariant(
            scaleT, k.gep(scales, k.mul(k.zext64(index), p.scaleBytes())), p.scaleBytes()));
        if (p.asym)
          zp[j] = loadZero(index);
      }
    }
    // Codes: x · (1/s) (+ z), clamped, rounded half away from zero as trunc(y + copysign(0.5⁻, y))
    // — exact for every float, with 0.5⁻ = 0.49999997 the float just below one half.
    SmallVector<Value> codes;
    Value inv;
    for (size_t j = 0; j < x.size(); ++j) {
      if (!inv || p.gran == Granularity::per_channel)
        inv = k.intrinsic("llvm.nvvm.rcp.rn.f", k.f32(), {sc[j]}); // = 1.0f / s, correctly rounded
      Value y = k.fmul(xc[j], inv);
      if (p.code == QCode::E4M3) {
        codes.push_back(y);
        continue;
      }
      if (p.asym)
        y = k.fadd(y, zp[j]);
      y = clampF(y, p.lo(), p.hi());
      Value half = LLVM::CopySignOp::create(b, loc, k.f32(0.49999997f), y);
      Value r = LLVM::FPToSIOp::create(b, loc, i32T, k.fadd(y, half));
      codes.push_back(k.trunc(codeType(), r));
    }
    if (p.code == QCode::E4M3) { // cvt.rn.satfinite.e4m3x2.f32: first operand → high byte
      SmallVector<Value> bytes;
      for (size_t j = 0; j < codes.size(); j += 2) {
        Value pair = k.intrinsic("llvm.nvvm.ff.to.e4m3x2.rn", k.i16(), {codes[j + 1], codes[j]});
        bytes.push_back(k.trunc(codeType(), pair));
        bytes.push_back(k.trunc(codeType(), k.lshr(pair, int64_t(8))));
      }
      codes = bytes;
    }
    // Where the token goes.
    Value bIdx = k.udiv(s.tok, newTokens), i = k.urem(s.tok, newTokens);
    Value row = i;
    if (p.append)
      row = k.add(k.loadInvariant(i32T, k.gep(pos, k.mul(k.zext64(bIdx), int64_t(4)))), i);
    Value inRange = k.band(k.cmp(P::slt, s.g, numGroups),
                           k.band(k.cmp(P::sge, row, k.i32(0)), k.cmp(P::slt, row, capacity)));
    k.ifThen(inRange, [&] {
      Value tokRow = k.add(k.mul(k.zext64(bIdx), k.zext64(capacity)), k.zext64(row)); // b · capacity + row
      Value base = k.add(k.mul(tokRow, HD), k.zext64(k.mul(s.gin, C)));
      for (int64_t c = 0; c < I; ++c) {
        SmallVector<Value> v(codes.begin() + c * V, codes.begin() + (c + 1) * V);
        Value e = k.add(base, k.zext64(k.mul(k.add(sub, c * L), V)));
        k.store(k.vector(v), k.gep(dst, e), V);
      }
      if (!p.dynamicScales())
        return;
      k.ifThen(k.cmp(P::eq, sub, k.i32(0)), [&] {
        Value idx = k.add(k.mul(tokRow, gpt), k.zext64(s.gin));
        k.store(storedScale(groupScale), k.gep(scales, k.mul(idx, p.scaleBytes())),
                p.scaleBytes());
        if (p.asym)
          k.store(k.trunc(codeType(), LLVM::FPToSIOp::create(b, loc, i32T, groupZero)),
                  k.gep(zeros, idx), 1);
      });
    });
  }
  LLVM::ReturnOp::create(b, loc, ValueRange{});
}

std::string mlir::attn::nvvm::quantizeLaunchJSON(const QuantizePlan &p) {
  using llvm::json::Array;
  using llvm::json::Object;
  const char *src = p.src == QSrc::BF16 ? "bf16" : p.src == QSrc::F16 ? "f16" : "f32";
  const char *code = p.code == QCode::I8 ? "i8" : p.code == QCode::U8 ? "ui8" : "f8E4M3FN";
  Object root{
      {"format", "attn-launch-v1"},
      {"arch", 90},
      {"problem", Object{{"kind", p.append ? "quantize_append" : "quantize_dynamic"},
                         {"batch", p.batch}, {"new_tokens", p.newTokens},
                         {"capacity", p.capacity}, {"heads", p.heads}, {"head_dim", p.headDim},
                         {"src_dtype", src}, {"code_dtype", code},
                         {"granularity", p.granText},
                         {"symmetric", !p.asym}, {"dynamic_scales", p.dynamicScales()},
                         {"hadamard", p.hadamard},
                         {"scale_dtype", p.scale == QScale::F32   ? "f32"
                                         : p.scale == QScale::F16 ? "f16"
                                                                  : "bf16"}}},
      {"schedule", Object{{"group_elems", p.groupElems}, {"groups_per_token", p.groupsPerToken()},
                          {"groups_per_cta", p.groupsPerCTA()}, {"lanes_per_group", p.lanes},
                          {"vector_elems", p.vec}}},
      {"kernels",
       Array{Object{{"name", p.name + "_quantize"},
                    {"role", "quantize"},
                    {"block", Array{128, 1, 1}},
                    {"cluster", Array{1, 1, 1}},
                    {"smem_bytes", 0},
                    {"grid", Array{"quantize_ctas", 1, 1}},
                    {"params", Array{"src", "positions", "dst", "scales", "zeros", "batch",
                                     "new_tokens", "capacity"}}}}}};
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  return s;
}
