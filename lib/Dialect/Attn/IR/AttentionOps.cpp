//===- AttentionOps.cpp - verifiers of attn.attention and attn.mla_decode -===//
//
// What this file is: everything that makes an attention spec well-formed — shapes versus head
// counts (GQA/MQA), the paged K/V layout (block table, page size, scales per page), scale shapes
// versus granularity, mode versus element types, target versus mode, head_dim versus the
// tensor-core tile, and schedule versus problem — and the same for the
// MLA decode op and its 656-byte FP8 token format.
//
//===----------------------------------------------------------------------===//

#include "VerifyUtils.h"

#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::vutil;

/// Rows of one WGMMA M tile: the query rows one consumer warpgroup holds.
static constexpr int64_t kWgmmaM = 64;
/// Largest head_dim a Hopper attention tile holds in registers and shared memory.
static constexpr int64_t kMaxHeadDim = 256;

static bool isIntQuant(Type t) { return isa<IntegerType>(t); }
static bool isFp8(Type t) { return isa<Float8E4M3FNType, Float8E5M2Type>(t); }

FailureOr<Mode> AttentionOp::getEffectiveMode() {
  if (auto m = getModeAttr())
    return m.getValue();
  Type k = getK().getType().getElementType();
  Type v = getV().getType().getElementType();
  if (isFloatActivation(k) && isFloatActivation(v))
    return Mode::bf16;
  // Integer K/V default to half_int8 even with integer Q: full_int8 also quantizes P, a
  // quality trade-off a spec must ask for.
  if (isIntQuant(k) && isIntQuant(v))
    return Mode::half_int8;
  if (isFp8(k) && isFp8(v))
    return Mode::fp8;
  return failure();
}

int64_t AttentionOp::getKVLength() {
  int64_t skv = getK().getType().getDimSize(1);
  if (!isPaged())
    return skv;
  int64_t blocks = cast<MemRefType>(getBlockTable().getType()).getDimSize(1), n;
  IntegerAttr page = getPageSizeAttr();
  if (!page || ShapedType::isDynamic(blocks) || llvm::MulOverflow(blocks, page.getInt(), n))
    return ShapedType::kDynamic;
  return n;
}

int64_t AttentionOp::getNumSequences() {
  if (!isRagged())
    return getQ().getType().getDimSize(0);
  if (isPaged())
    return cast<MemRefType>(getBlockTable().getType()).getDimSize(0);
  return getK().getType().getDimSize(0);
}

/// The paged K/V layout: `block_table` and `page_size` come together, the page size is a power of
/// two in [1, 256], k and v are pools of pages of that size, the table has one row per sequence,
/// and a per_block scale block lies within one page. (Scale shapes per page are checked with the
/// other scale operands: the granularity applies to the pool's shape.)
static LogicalResult verifyPagedLayout(AttentionOp op) {
  IntegerAttr page = op.getPageSizeAttr();
  Value table = op.getBlockTable();
  if (!table && !page)
    return success();
  if (!table)
    return op.emitOpError() << "page_size = " << page.getInt()
                            << " needs a block_table operand (the pages of each sequence)";
  if (!page)
    return op.emitOpError() << "a block_table needs page_size = P, the tokens of one page "
                               "(a power of two, 1 to "
                            << kMaxPageSize << ")";
  int64_t p = page.getInt();
  if (p < 1 || p > kMaxPageSize)
    return op.emitOpError() << "page_size must be in [1, " << kMaxPageSize << "], got " << p;
  if (!llvm::isPowerOf2_64(p))
    return op.emitOpError() << "page_size must be a power of two, got " << p;
  auto kT = op.getK().getType(), vT = op.getV().getType();
  auto tT = cast<MemRefType>(table.getType());
  if (failed(expectShape(op, "block_table", table, {op.getNumSequences(), tT.getDimSize(1)},
                         "one row of pages per sequence [B, max_blocks]")))
    return failure();
  for (auto [name, t] : {std::pair<StringRef, MemRefType>{"k", kT}, {"v", vT}})
    if (t.getDimSize(1) != p)
      return op.emitOpError() << "'" << name << "' holds pages [num_pages, page_size, Hkv, "
                              << (name == "k" ? "D" : "Dv") << "]: its dim 1 must be page_size = "
                              << p << ", got " << shapeStr(t.getShape());
  if (!dimsAgree(kT.getDimSize(0), vT.getDimSize(0)))
    return op.emitOpError() << "k and v must hold the same number of pages, got "
                            << shapeStr({kT.getDimSize(0), vT.getDimSize(0)});
  for (auto [name, qa] : {std::pair<StringRef, QuantAttr>{"k_quant", op.getKQuantAttr()},
                          {"v_quant", op.getVQuantAttr()}})
    if (qa && qa.getGranularity() == Granularity::per_block && p % qa.getBlockRows() != 0)
      return op.emitOpError() << "'" << name << "' " << qa
                              << " cannot be stored per page: a block of " << qa.getBlockRows()
                              << " rows straddles pages of " << p
                              << " tokens (block rows must divide page_size)";
  return success();
}

/// WGMMA K step of a mode's first GEMM: 16 for bf16, 32 for 8-bit operands.
static int64_t wgmmaKStep(Mode m) { return m == Mode::bf16 ? 16 : 32; }

static LogicalResult verifyModeElementTypes(AttentionOp op, Mode mode) {
  Type q = op.getQ().getType().getElementType();
  Type k = op.getK().getType().getElementType();
  Type v = op.getV().getType().getElementType();
  auto fail = [&](StringRef need) {
    return op.emitOpError() << "mode " << stringifyMode(mode) << " needs " << need << ", got q "
                            << q << ", k " << k << ", v " << v;
  };
  switch (mode) {
  case Mode::bf16:
    if (!isFloatActivation(q) || !isFloatActivation(k) || !isFloatActivation(v))
      return fail("unquantized (bf16, f16 or f32) q, k and v");
    break;
  case Mode::half_int8:
    if (!isIntQuant(k) || !isIntQuant(v) || !(isIntQuant(q) || isFloatActivation(q)))
      return fail("integer k and v, and integer or bf16 q");
    break;
  case Mode::full_int8:
    if (!isIntQuant(q) || !isIntQuant(k) || !isIntQuant(v))
      return fail("integer q, k and v");
    break;
  case Mode::fp8:
    if (!isFp8(k) || !isFp8(v) || !(isFp8(q) || isFloatActivation(q)))
      return fail("f8E4M3FN or f8E5M2 k and v, and fp8 or bf16 q");
    break;
  }
  return success();
}

static LogicalResult verifyScheduleForAttention(AttentionOp op, ScheduleAttr sched,
                                                std::optional<TargetKind> target) {
  if (!sched)
    return success();
  bool gpuOnly = sched.getRoles() || !sched.getCluster().empty() || sched.getCrossover();
  if (gpuOnly && target && !isGPUTarget(*target))
    return op.emitOpError() << "warp roles, clusters and crossover need a GPU target, got "
                            << stringifyTargetKind(*target);
  if (sched.hasCrossover())
    return op.emitOpError() << "crossover applies to attn.mla_decode only";
  if (IntegerAttr page = op.getPageSizeAttr(); page && op.isPaged() && sched.getTileN() > 0) {
    int64_t p = page.getInt(), n = sched.getTileN();
    if (n % p != 0 && p % n != 0)
      return op.emitOpError() << "tile_n = " << n << " and page_size = " << p
                              << ": a key tile must cover whole pages or lie within one page "
                                 "(one must divide the other)";
  }
  int64_t hq = op.getNumQueryHeads(), hkv = op.getNumKVHeads();
  if (int64_t pack = sched.getPackQHeads(); pack > 0 && !ShapedType::isDynamic(hq) &&
                                             !ShapedType::isDynamic(hkv)) {
    int64_t ratio = hq / hkv;
    if (ratio % pack != 0)
      return op.emitOpError() << "pack_q_heads = " << pack << " does not divide the " << ratio
                              << " query heads per KV head";
    // Decode packs every new token of the packed heads into one tile; prefill cuts the tokens
    // into chunks, so at least one token must fit.
    int64_t sq = op.getKind() == AttentionKind::prefill ? 1 : op.getQ().getType().getDimSize(1);
    int64_t tileM = sched.getTileM() ? sched.getTileM() : kWgmmaM;
    int64_t rows;
    if (!ShapedType::isDynamic(sq) && (llvm::MulOverflow(pack, sq, rows) || rows > tileM))
      return op.emitOpError() << "pack_q_heads × q_len = " << pack << " × " << sq
                              << " rows exceed tile_m = " << tileM;
  }
  return success();
}

/// `sinks` [Hq], `lse` [B, Sq, Hq] and `softcap`: their shapes and values, and what implements
/// them (the sm_90a decode kernel; sinks and lse without hadamard).
static LogicalResult verifySinksAndLse(AttentionOp op, int64_t b, int64_t sq, int64_t hq,
                                       std::optional<TargetKind> target) {
  if (op.getSinks() &&
      failed(expectShape(op, "sinks", op.getSinks(), {hq}, "one logit per query head [Hq]")))
    return failure();
  if (op.getLse() &&
      failed(expectShape(op, "lse", op.getLse(), {b, sq, hq}, "one value per row [B, Sq, Hq]")))
    return failure();
  if (FloatAttr c = op.getSoftcapAttr()) {
    double x = c.getValueAsDouble();
    if (!(x > 0) || !std::isfinite(x))
      return op.emitOpError() << "softcap must be positive and finite, got " << x;
    if (op.getKind() == AttentionKind::prefill)
      return op.emitOpError() << "softcap is implemented for decode only, not prefill";
    if (target && !isGPUTarget(*target))
      return op.emitOpError() << "softcap needs target sm_90a (the CPU lowering does not "
                              << "implement it), got " << stringifyTargetKind(*target);
  }
  for (auto [v, name] : {std::pair{op.getSinks(), "sinks"}, std::pair{op.getLse(), "lse"}}) {
    if (!v)
      continue;
    if (op.getKind() == AttentionKind::prefill)
      return op.emitOpError() << name << " is implemented for decode only, not prefill";
    if (target && !isGPUTarget(*target))
      return op.emitOpError() << name << " needs target sm_90a (the CPU lowering does not "
                              << "implement it), got " << stringifyTargetKind(*target);
    if (op.getHadamard())
      return op.emitOpError() << name << " is not implemented with hadamard";
  }
  return success();
}

/// `cu_seqlens_q` [B + 1]: a ragged prefill on sm_90a, its queries and output packed along Sq
/// of a batch of one.
static LogicalResult verifyRagged(AttentionOp op, int64_t b, std::optional<TargetKind> target) {
  if (!op.isRagged())
    return success();
  if (op.getKind() != AttentionKind::prefill)
    return op.emitOpError() << "cu_seqlens_q (a ragged batch) is implemented for prefill only; "
                               "decode takes the same number of new tokens per sequence";
  if (target && !isGPUTarget(*target))
    return op.emitOpError() << "cu_seqlens_q needs target sm_90a (the CPU lowering does not "
                            << "implement it), got " << stringifyTargetKind(*target);
  for (auto [name, t] : {std::pair<StringRef, MemRefType>{"q", op.getQ().getType()},
                         {"out", op.getOut().getType()}})
    if (t.getDimSize(0) != 1)
      return op.emitOpError() << "with cu_seqlens_q, '" << name
                              << "' packs every sequence's rows along Sq: its dim 0 must be 1, "
                                 "got "
                              << shapeStr(t.getShape());
  int64_t n = ShapedType::isDynamic(b) ? b : b + 1;
  return expectShape(op, "cu_seqlens_q", op.getCuSeqlensQ(), {n},
                     "the first packed row of each sequence and the end [B + 1]");
}

/// `window = array<i64: left, right>`: two bounds ≥ −1, and what implements it (the sm_90a
/// decode and prefill kernels).
static LogicalResult verifyWindow(AttentionOp op, std::optional<TargetKind> target) {
  std::optional<ArrayRef<int64_t>> w = op.getWindow();
  if (!w)
    return success();
  if (w->size() != 2)
    return op.emitOpError() << "window must be array<i64: left, right>, got " << w->size()
                            << " values";
  if ((*w)[0] < -1 || (*w)[1] < -1)
    return op.emitOpError() << "window bounds must be ≥ −1 (−1: unbounded), got ["
                            << (*w)[0] << ", " << (*w)[1] << "]";
  if (target && !isGPUTarget(*target))
    return op.emitOpError() << "window needs target sm_90a (the CPU lowering does not "
                            << "implement it), got " << stringifyTargetKind(*target);
  return success();
}

LogicalResult AttentionOp::verify() {
  if (failed(vutil::verifyBuffers(*this)) || failed(verifyPagedLayout(*this)))
    return failure();
  auto qT = getQ().getType(), kT = getK().getType(), vT = getV().getType(),
       oT = getOut().getType();
  // b: the sequences; qb: q's and out's dim 0 (1 for a ragged batch, packed along Sq).
  int64_t b = getNumSequences(), qb = qT.getDimSize(0), sq = qT.getDimSize(1),
          hq = qT.getDimSize(2), d = qT.getDimSize(3);
  int64_t skv = getKVLength(), hkv = kT.getDimSize(2), dv = vT.getDimSize(3);
  std::optional<TargetKind> target = getOpTarget(*this);
  if (failed(verifyRagged(*this, b, target)))
    return failure();

  // A paged cache's first extent counts pages, not sequences (verifyPagedLayout).
  if ((!isPaged() && (!dimsAgree(b, kT.getDimSize(0)) || !dimsAgree(b, vT.getDimSize(0)))) ||
      !dimsAgree(qb, oT.getDimSize(0)))
    return emitOpError() << "q, k, v and out must have the same batch size, got "
                         << shapeStr({qb, kT.getDimSize(0), vT.getDimSize(0), oT.getDimSize(0)});
  if (!dimsAgree(kT.getDimSize(1), vT.getDimSize(1)) || !dimsAgree(hkv, vT.getDimSize(2)))
    return emitOpError() << "k and v must have the same tokens and heads, got k "
                         << shapeStr(kT.getShape()) << " and v " << shapeStr(vT.getShape());
  if (!ShapedType::isDynamic(hq) && !ShapedType::isDynamic(hkv) && (hkv == 0 || hq % hkv != 0))
    return emitOpError() << "the " << hq << " query heads are not a multiple of the " << hkv
                         << " KV heads (GQA needs Hq = n · Hkv)";
  if (!dimsAgree(d, kT.getDimSize(3)))
    return emitOpError() << "q and k must have the same head_dim, got " << d << " and "
                         << kT.getDimSize(3);
  if (failed(expectShape(*this, "out", getOut(), {qb, sq, hq, dv}, "[B, Sq, Hq, Dv]")))
    return failure();
  if (!isFloatActivation(oT.getElementType()))
    return emitOpError() << "'out' must hold bf16, f16 or f32, got " << oT.getElementType();

  // Quantization schemes and their scale / zero-point operands.
  if (failed(verifyQuantElement(*this, "q", qT.getElementType(), getQQuantAttr(), "q_quant")) ||
      failed(verifyQuantElement(*this, "k", kT.getElementType(), getKQuantAttr(), "k_quant")) ||
      failed(verifyQuantElement(*this, "v", vT.getElementType(), getVQuantAttr(), "v_quant")))
    return failure();
  if (failed(verifyScaleOperands(*this, "q", qT.getShape(), getQQuantAttr(), "q_quant",
                                 getQScale(), "q_scale", Value(), "q_zero")) ||
      failed(verifyScaleOperands(*this, "k", kT.getShape(), getKQuantAttr(), "k_quant",
                                 getKScale(), "k_scale", getKZero(), "k_zero")) ||
      failed(verifyScaleOperands(*this, "v", vT.getShape(), getVQuantAttr(), "v_quant",
                                 getVScale(), "v_scale", getVZero(), "v_zero")))
    return failure();

  // Mode versus element types, target versus mode.
  FailureOr<Mode> mode = getEffectiveMode();
  if (failed(mode))
    return emitOpError() << "cannot infer a mode from k " << kT.getElementType() << " and v "
                         << vT.getElementType() << "; write one with mode = #attn.mode<...>";
  if (failed(verifyModeElementTypes(*this, *mode)))
    return failure();
  if (target && !isGPUTarget(*target) && *mode != Mode::bf16)
    return emitOpError() << "target " << stringifyTargetKind(*target) << " does not support mode "
                         << stringifyMode(*mode)
                         << ": int8 and fp8 tensor-core modes need sm_90a";
  if (target && isGPUTarget(*target)) {
    int64_t step = wgmmaKStep(*mode);
    for (auto [name, dim] : {std::pair<StringRef, int64_t>{"head_dim", d}, {"head_dim_v", dv}}) {
      if (ShapedType::isDynamic(dim))
        return emitOpError() << name << " must be static on sm_90a: it sizes the tiles";
      if (dim % step != 0)
        return emitOpError() << name << " " << dim << " is not a multiple of the WGMMA K step ("
                             << step << ") of mode " << stringifyMode(*mode);
      if (dim > kMaxHeadDim)
        return emitOpError() << name << " " << dim << " exceeds " << kMaxHeadDim
                             << ", the largest a Hopper attention tile holds";
    }
  }

  if (getKind() == AttentionKind::decode && !ShapedType::isDynamic(sq) && sq > kWgmmaM)
    return emitOpError() << "decode takes at most " << kWgmmaM << " query tokens, got " << sq
                         << "; use prefill";
  if (getCausal() && !isRagged() && !ShapedType::isDynamic(sq) && !ShapedType::isDynamic(skv) &&
      sq > skv)
    return emitOpError() << "causal attention needs q_len ≤ kv_len, got " << sq << " > " << skv;
  if (getSeqLens() &&
      failed(expectShape(*this, "seq_lens", getSeqLens(), {b}, "one length per batch [B]")))
    return failure();
  if (getAlibi() &&
      failed(expectShape(*this, "alibi", getAlibi(), {hq}, "one slope per query head [Hq]")))
    return failure();
  if (failed(verifySinksAndLse(*this, qb, sq, hq, target)) || failed(verifyWindow(*this, target)))
    return failure();
  if (auto s = getSoftmaxScaleAttr()) {
    double x = s.getValueAsDouble();
    if (!(x > 0) || !std::isfinite(x))
      return emitOpError() << "softmax_scale must be positive and finite, got " << x;
  }
  if (getHadamard()) { // O is multiplied by H_D: square, a power of two, and worth rotating
    if (ShapedType::isDynamic(d) || d != dv || d < 8 || !llvm::isPowerOf2_64(d))
      return emitOpError() << "hadamard needs head_dim == head_dim_v, a static power of two ≥ 8, "
                           << "got " << shapeStr({d, dv});
    if (!getKQuantAttr() && !getVQuantAttr())
      return emitOpError() << "hadamard rotates only what is quantized: k and v are "
                           << kT.getElementType() << ", which need no rotation";
  }
  return verifyScheduleForAttention(*this, getScheduleAttr(), target);
}

//===----------------------------------------------------------------------===//
// MLADecodeOp
//===----------------------------------------------------------------------===//

/// Query heads one CTA of the MLA kernel processes (one 64-row WGMMA tile).
static constexpr int64_t kMLAHeadsPerCTA = 64;

LogicalResult MLADecodeOp::verify() {
  if (failed(vutil::verifyBuffers(*this)))
    return failure();
  if ((*this)->hasAttr("window"))
    return emitOpError() << "window is not implemented for MLA decode";
  auto qT = getQ().getType(), kvT = getKv().getType(), oT = getOut().getType();
  int64_t b = qT.getDimSize(0), sq = qT.getDimSize(1), hq = qT.getDimSize(2),
          dk = qT.getDimSize(3);
  int64_t dv = getHeadDimV(), rope = getRopeDim();
  if (dv <= 0 || rope < 0)
    return emitOpError() << "head_dim_v must be positive and rope_dim non-negative";
  // Bounded before any arithmetic on them (the UBSan fuzz run wrote INT64_MAX).
  constexpr int64_t kMaxHeadDim = 1 << 16;
  if (dv > kMaxHeadDim || rope > kMaxHeadDim)
    return emitOpError() << "head_dim_v and rope_dim must be at most " << kMaxHeadDim;
  if (!dimsAgree(dk, dv + rope))
    return emitOpError() << "q head_dim (" << dk << ") must equal head_dim_v + rope_dim = " << dv
                         << " + " << rope << " = " << dv + rope;
  if (!qT.getElementType().isBF16() || !oT.getElementType().isBF16())
    return emitOpError() << "q and out must be bf16";
  if (failed(expectShape(*this, "out", getOut(), {b, sq, hq, dv}, "[B, Sq, Hq, head_dim_v]")))
    return failure();

  QuantAttr quant = getKvQuantAttr();
  int64_t t = kvT.getDimSize(1);
  if (quant) {
    if (failed(verifyMLACacheQuant(*this, quant, dv)))
      return failure();
    int64_t bytes = mlaTokenBytes(quant, dv, rope);
    if (!kvT.getElementType().isInteger(8))
      return emitOpError() << "a quantized MLA cache holds raw bytes (i8), got "
                           << kvT.getElementType();
    if (failed(expectShape(*this, "kv", getKv(), {b, t, bytes},
                           "[B, T, Dv + 4·Dv/C + 2·rope_dim bytes]")))
      return failure();
  } else {
    if (!kvT.getElementType().isBF16())
      return emitOpError() << "an unquantized MLA cache must be bf16, got "
                           << kvT.getElementType();
    if (failed(expectShape(*this, "kv", getKv(), {b, t, dk}, "[B, T, Dk]")))
      return failure();
  }
  if (getIndices()) {
    auto idxT = cast<MemRefType>(getIndices().getType());
    if (failed(expectShape(*this, "indices", getIndices(), {b, sq, idxT.getDimSize(2)},
                           "[B, Sq, topk]")))
      return failure();
  }
  if (getSeqLens() &&
      failed(expectShape(*this, "seq_lens", getSeqLens(), {b}, "one length per batch [B]")))
    return failure();

  std::optional<TargetKind> target = getOpTarget(*this);
  if (target && !isGPUTarget(*target))
    return emitOpError() << "MLA decode needs target sm_90a, got "
                         << stringifyTargetKind(*target);
  if (target && !ShapedType::isDynamic(hq) && hq % kMLAHeadsPerCTA != 0)
    return emitOpError() << "MLA decode on sm_90a packs " << kMLAHeadsPerCTA
                         << " query heads per CTA; h_q = " << hq << " is not a multiple of "
                         << kMLAHeadsPerCTA;
  if (ScheduleAttr sched = getScheduleAttr(); sched && sched.hasCrossover()) {
    if (!quant)
      return emitOpError() << "crossover shares dequantized K/V between 2 CTAs; it needs an "
                              "FP8 cache (kv_quant)";
    if (!ShapedType::isDynamic(hq) && hq % (2 * kMLAHeadsPerCTA) != 0)
      return emitOpError() << "crossover needs h_q a multiple of " << 2 * kMLAHeadsPerCTA
                           << " (two CTAs of " << kMLAHeadsPerCTA << " heads), got " << hq;
  }
  if (auto s = getSoftmaxScaleAttr()) {
    double x = s.getValueAsDouble();
    if (!(x > 0) || !std::isfinite(x))
      return emitOpError() << "softmax_scale must be positive and finite, got " << x;
  }
  return success();
}
