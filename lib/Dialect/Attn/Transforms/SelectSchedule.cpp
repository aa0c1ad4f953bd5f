//===- SelectSchedule.cpp - the attn-select-schedule pass -----------------===//
//
// What this file is: `attn-select-schedule` — fills the fields of #attn.schedule a spec left out,
// using the heuristic of ScheduleHeuristics.cpp for decode and fixed FA3-style choices for prefill
// and MLA decode (docs/Schedules.md). Fields written in the spec are kept.
//
//===----------------------------------------------------------------------===//

#include "attn/Dialect/Attn/Transforms/Passes.h"
#include "attn/Dialect/Attn/Transforms/ForwardSharedMemory.h"
#include "attn/Dialect/Attn/Transforms/ScheduleHeuristics.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"

#define DEBUG_TYPE "attn-select-schedule"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNSELECTSCHEDULE
#include "attn/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {
/// A schedule being completed: fills only the fields the spec left undecided.
struct Fields : ScheduleFields {
  explicit Fields(ScheduleAttr s) {
    if (s)
      static_cast<ScheduleFields &>(*this) = ScheduleFields(s);
  }
  static void fill(int64_t &field, int64_t value) {
    if (field == 0)
      field = value;
  }
  static void fill(BoolAttr &field, MLIRContext *ctx, bool value) {
    if (!field)
      field = BoolAttr::get(ctx, value);
  }
  void fillRoles(MLIRContext *ctx, int64_t producerRegs, int64_t consumerWGs, int64_t consumerRegs,
                 int64_t producerWGs = 1) {
    if (roles)
      return;
    roles = ArrayAttr::get(ctx,
                           {WarpRoleAttr::get(ctx, RoleKind::producer, producerWGs, producerRegs),
                            WarpRoleAttr::get(ctx, RoleKind::consumer, consumerWGs, consumerRegs)});
  }
};

/// The shape and element kinds of an attention op, as the schedule heuristics take them.
AttentionShape attentionShape(AttentionOp op) {
  auto qT = op.getQ().getType(), kT = op.getK().getType();
  AttentionShape shape;
  auto staticOr = [](int64_t d) {
    return ShapedType::isDynamic(d) ? AttentionShape::kDynamicExtent : d;
  };
  shape.batch = staticOr(op.getNumSequences());
  // A ragged batch's per-sequence query count is known at launch only (Sq is their sum).
  shape.qLen = op.isRagged() ? AttentionShape::kDynamicExtent : staticOr(qT.getDimSize(1));
  shape.qHeads = qT.getDimSize(2);
  shape.kvLen = staticOr(op.getKVLength()); // a paged cache: max_blocks · page_size
  shape.kvHeads = kT.getDimSize(2);
  shape.headDim = qT.getDimSize(3);
  shape.kvElemBytes = kT.getElementType().getIntOrFloatBitWidth() > 8 ? 2 : 1;
  shape.int8QK = qT.getElementType().isInteger(8) && kT.getElementType().isInteger(8);
  shape.fp8 = op.getKind() == AttentionKind::prefill &&
              isa<Float8E4M3FNType>(qT.getElementType()) &&
              isa<Float8E4M3FNType>(kT.getElementType());
  FailureOr<Mode> mode = op.getEffectiveMode();
  shape.fullInt8 = op.getKind() == AttentionKind::prefill && shape.int8QK && succeeded(mode) &&
                   *mode == Mode::full_int8;
  shape.zeroPoints = static_cast<bool>(op.getKZero());
  return shape;
}

/// Whether a K or V quantization has one scale per key tile of `tileN` rows (per_head,
/// per_tensor, or per_block rows a multiple of the tile).
bool tileScaled(QuantAttr qa, int64_t tileN) {
  if (!qa)
    return false;
  Granularity g = qa.getGranularity();
  return g == Granularity::per_head || g == Granularity::per_tensor ||
         (g == Granularity::per_block && qa.getBlockRows() % tileN == 0);
}

/// Decode: the heuristic's packing, tiles, stages and splits, two CTAs per SM where a grid of
/// more than one wave fits them, and the warp roles.
LogicalResult scheduleDecode(AttentionOp op, const AttentionShape &shape, const GPUInfo &gpu,
                             Fields &f) {
  MLIRContext *ctx = op.getContext();
  auto qT = op.getQ().getType(), kT = op.getK().getType();
  if (qT.isDynamicDim(1) || qT.isDynamicDim(2) || kT.isDynamicDim(2))
    return op.emitOpError() << "decode scheduling needs static q_len and head counts";
  DecodeSchedule d = selectDecodeSchedule(shape, gpu);
  Fields::fill(f.packQHeads, d.packQHeads);
  // CTAs of one split with the packing actually used (the spec may have fixed it); 0 when
  // the batch is dynamic.
  int64_t ctas = shape.batch > 0 ? shape.batch * shape.kvHeads *
                                       ((shape.qHeads / shape.kvHeads) / f.packQHeads)
                                 : 0;
  using Two = TwoCtaSchedule;
  // A grid of more than one wave (static batch) runs two CTAs per SM where they fit — unless
  // the spec fixed fields of another schedule (roles, tile_n, stages, splits).
  if (f.ctasPerSm == 0 && !f.roles && (f.tileN == 0 || f.tileN == Two::tileN) &&
      (f.stages == 0 || f.stages == Two::stages) &&
      (f.splitKv == 0 || f.splitKv == 1 || f.splitKv == ScheduleAttr::kAuto) &&
      selectCtasPerSm(shape, ctas, gpu) == 2)
    f.ctasPerSm = 2;
  if (f.ctasPerSm == 2) {
    // Two CTAs per SM (chosen above or written in the spec): 256 threads entering with 128
    // registers each and tile_n 64, so two CTAs' shared memory fits — what ran Table 3's
    // 1024 × 256 row in one wave on the H100 (34.0 µs against 38.8;
    // docs/benchmarks/gpu-decode.md).
    Fields::fill(f.tileN, Two::tileN);
    f.fillRoles(ctx, Two::producerRegs, 1, Two::consumerRegs, 1);
  }
  Fields::fill(f.tileM, 64);
  Fields::fill(f.tileN, d.tileN);
  Fields::fill(f.stages, d.stages);
  if (f.splitKv == 0 || f.splitKv == ScheduleAttr::kAuto) {
    if (d.splitKv > 0) {
      std::optional<ArrayRef<int64_t>> w = op.getWindow();
      int64_t left = w && w->size() == 2 ? (*w)[0] : -1;
      f.splitKv = selectSplitKv(ctas, splitKvKeys(shape.kvLen, shape.qLen, left), f.tileN, gpu);
    } else {
      f.splitKv = ScheduleAttr::kAuto; // resolved at launch by selectSplitKv
    }
  }
  // The decode producer stages every 8-bit tile through registers (dequantization): below
  // 72 registers ptxas spills it (measured over the variant grid). bf16 tiles need none.
  // Up to head_dim 128: two producer warpgroups share the dequantization (the kernel is
  // producer-bound: measured 10% faster on Table 3 than one) and two consumer warpgroups
  // alternate tiles so one's softmax hides the other's WGMMAs; 512 threads enter with 128
  // registers each and 2 · 56 + 2 · 200 = 4 · 128. At 256 the O accumulator alone is 128
  // registers: one producer (96) and one consumer (240).
  if (shape.headDim <= 128 && shape.kvElemBytes == 2)
    f.fillRoles(ctx, 40, 2, 232, 1); // bf16: the producer only issues TMA loads
  else if (shape.headDim <= 128)
    f.fillRoles(ctx, 56, 2, 200, 2);
  else
    f.fillRoles(ctx, 96, 1, 240);
  return success();
}

/// Prefill: the decode kernel's structure over query chunks, with FA3's overlap, pingpong and
/// persistent grid where they were measured faster.
LogicalResult schedulePrefill(AttentionOp op, const AttentionShape &shape, const GPUInfo &gpu,
                              Fields &f) {
  MLIRContext *ctx = op.getContext();
  auto qT = op.getQ().getType(), kT = op.getK().getType();
  // Prefill runs the decode kernel's structure over query chunks (docs/Schedules.md): query
  // heads of a KV head packed as for one token, pack · chunk = 64 rows per consumer
  // warpgroup, one split. FA3's persistent grid: see persistentDefault below.
  if (qT.isDynamicDim(2) || kT.isDynamicDim(2))
    return op.emitOpError() << "prefill scheduling needs static head counts";
  // bf16, fp8 and half-int8 up to head_dim 128: three consumer warpgroups of 160 registers
  // (192 query rows per CTA) and a producer of 32 on two stages, without the overlap — 1.5
  // times the rows over each CTA's fixed cost and a third softmax stream beside the tensor
  // cores. Measured on the H100 Table-1/2 shapes in one call against two consumers with
  // FA3's overlap and pingpong (docs/benchmarks/gpu-prefill.md): bf16
  // 0.98–1.16× cuDNN against 0.85–1.06×, fp8 1.06–1.42× against 0.97–1.26× (its
  // 32-register producer spills ~130 bytes in V's transpose), half-int8 per_block
  // 0.89–1.17× against 0.85–1.08× and per-token 0.83–1.06× against 0.70–0.82× (its
  // consumers spill 4–140 bytes, at most 3 reloads per tile on the benchmark's kernels).
  // Unless the spec fixed a field of that other schedule. full_int8's s32 P·V product and
  // head_dim 256's O do not fit.
  bool fp8OrHalfInt8 = shape.fp8 || (shape.int8QK && !shape.pv8());
  bool specStages = f.stages != 0;
  bool threeConsumers = (shape.kvElemBytes == 2 || fp8OrHalfInt8) &&
                        shape.headDim <= 128 && !f.roles && !f.intraWgOverlap &&
                        !f.pingpong && !(f.persistent && f.persistent.getValue()) &&
                        (f.stages == 0 || f.stages == 2);
  AttentionShape oneToken = shape;
  oneToken.qLen = 1;
  oneToken.queryTiles = threeConsumers ? 3 : shape.headDim <= 128 ? 2 : 1; // one a consumer
  DecodeSchedule d = selectDecodeSchedule(oneToken, gpu);
  Fields::fill(f.packQHeads, d.packQHeads);
  Fields::fill(f.tileM, 64);
  Fields::fill(f.tileN, d.tileN);
  // bf16: FA3's intra-warpgroup overlap, which holds two tiles per consumer at once and so
  // wants a third stage (measured on the H100 Table-1/2 shapes: 0.66–0.97× cuDNN against
  // 0.67–0.87× without overlap and 0.56–0.67× with overlap on two stages;
  // docs/benchmarks/gpu-prefill.md) — when three stages fit.
  // fp8 (both GEMMs on e4m3 tensor cores) is scheduled like bf16. full_int8 is not: its
  // P·V adds a 64-register s32 product to O, and with the overlap (O, that product in
  // flight, S and P's words) the consumers spill 400–600 bytes at any register split.
  // Half-int8 with one V scale per key tile (per_head, per_tensor, per_block rows a
  // multiple of tile_n) folds it into O's rescale, and its softmax is bf16's plus the s32
  // conversion (and, per key, K's scale): scheduled like bf16 too (measured 0.71–0.93× cuDNN
  // with per_block K and V against 0.65–0.82× without the overlap, pingpong and third
  // stage). With a V scale per key it gets the overlap only on request (measured no faster).
  bool bf16 = shape.kvElemBytes == 2 || shape.fp8 ||
              (shape.int8QK && !shape.pv8() && tileScaled(op.getVQuantAttr(), f.tileN));
  // (With the overlap int8 queries read K from the stages: directK.)
  bool threeFit =
      layoutForwardSharedMemory(shape, f.tileN, 3, /*kDirect=*/shape.int8QK).bytes() <=
      kMaxSharedBytesSm90;
  // A spec's own choice stands.
  bool overlap = f.intraWgOverlap ? f.intraWgOverlap.getValue()
                                  : !threeConsumers && bf16 && threeFit &&
                                        (!f.stages || f.stages >= 3);
  Fields::fill(f.stages, overlap && bf16 && threeFit ? 3 : d.stages);
  if (f.splitKv == 0 || f.splitKv == ScheduleAttr::kAuto)
    f.splitKv = 1;
  // bf16 caches: TMA fills the stages the WGMMAs read, so one producer warpgroup that only
  // issues loads (40 registers) and two consumers with 232 (40 + 2 · 232 = 3 · 168).
  // Half-int8 with the overlap reads K from the stages and converts only V: one producer
  // warpgroup as well (with two of 56 and consumers of 200 the consumers spill).
  // fp8 and full_int8 transpose V in their one producer warpgroup.
  if (threeConsumers)
    f.fillRoles(ctx, 32, 3, 160, 1); // 32 + 3 · 160 = 4 · 128
  else if (shape.headDim <= 128 && shape.pv8())
    f.fillRoles(ctx, 72, 2, 216, 1);
  else if (shape.headDim <= 128 && (shape.kvElemBytes == 2 || (shape.int8QK && overlap)))
    f.fillRoles(ctx, 40, 2, 232, 1);
  else if (shape.headDim <= 128)
    f.fillRoles(ctx, 56, 2, 200, 2);
  else
    f.fillRoles(ctx, 96, 1, 240);
  // FA3's pingpong on top of the overlap when two consumers share the SM (bf16 up to
  // head_dim 128): measured 0.71–0.96× cuDNN against 0.66–0.95× without, in one run (fp8
  // and half-int8 with tile V scales take it too).
  int64_t consumers = 0; // the roles are filled in by now
  for (Attribute a : f.roles)
    if (auto r = dyn_cast<WarpRoleAttr>(a); r && r.getKind() == RoleKind::consumer)
      consumers += r.getWarpgroups();
  Fields::fill(f.pingpong, ctx, overlap && bf16 && consumers == 2);
  Fields::fill(f.intraWgOverlap, ctx, overlap);
  // FA3's persistent grid on three consumers (one CTA per SM walks the work items; the
  // producer runs ahead into the next item and the consumers copy its queries during the
  // current one): it pays a work item's fixed cost (first tile, epilogue) inside one
  // resident CTA, and gives up the block scheduler's dynamic balance of causal items of
  // unequal length. Measured on the H100 Table-1/2 shapes, two repetitions in one call
  // against one CTA per item (docs/benchmarks/gpu-prefill.md):
  // - fp8 and half-int8 with one K and one V scale per key tile, non-causal: +0.3–7.9% on
  //   every row — the default at any length;
  // - the same, causal: +1.5 to +15% up to 4096 keys, even or −1 to −4% from 8192;
  // - bf16 and half-int8 with per-key scales: +0.5 to +10% up to 2048 keys (causal or
  //   not), −2 to +1% at 4096, −1 to −7% beyond.
  // Keys: kv_len where static, else q_len (self-attention prefill); unknown: one CTA per
  // item except for the first case.
  int64_t keys = shape.kvLen != AttentionShape::kDynamicExtent ? shape.kvLen : shape.qLen;
  auto keysAtMost = [&](int64_t n) {
    return keys != AttentionShape::kDynamicExtent && keys <= n;
  };
  bool kvTileScaled =
      tileScaled(op.getKQuantAttr(), f.tileN) && tileScaled(op.getVQuantAttr(), f.tileN);
  bool persistentDefault =
      threeConsumers &&
      ((fp8OrHalfInt8 && kvTileScaled && (!op.getCausal() || keysAtMost(4096))) ||
       keysAtMost(2048));
  Fields::fill(f.persistent, ctx, persistentDefault);
  // fp8 at head_dim 128 with tile scales on the persistent grid: three stages. Its producer
  // transposes V with ldmatrix / stmatrix and keeps ahead of the consumers, so
  // its loads may lead by two tiles (refilled without blocking: ForwardProducer.cpp). Measured
  // on the H100 Table-1/2 shapes, each comparison in one call (docs/benchmarks/
  // gpu-prefill.md): against two stages (before that refill) +0.6 to +7.6% up to
  // 4096 keys, +3.6 to +7.1% non-causal from 8192, and the refill added +0.4 to +2.8%; with
  // it, against one CTA per item +2.5 to +5.2% non-causal from 8192, 0 to +1.8% causal at
  // 4096, −3.5 to +0.1% causal from 8192 (where the rule above keeps one CTA per item).
  bool fp8Matrices = shape.fp8 && shape.headDim == 128 && kvTileScaled;
  if (fp8Matrices && threeConsumers && f.persistent.getValue() && !specStages &&
      layoutForwardSharedMemory(oneToken, f.tileN, 3).bytes() <= kMaxSharedBytesSm90)
    f.stages = 3;
  return success();
}

struct SelectSchedulePass : public attn::impl::AttnSelectScheduleBase<SelectSchedulePass> {
  using AttnSelectScheduleBase::AttnSelectScheduleBase;

  LogicalResult schedule(AttentionOp op) {
    MLIRContext *ctx = &getContext();
    std::optional<TargetKind> target = getOpTarget(op);
    if (!isGPUTarget(*target))
      return success(); // CPU attention schedules come with the CPU lowering.
    Fields f(op.getScheduleAttr());
    AttentionShape shape = attentionShape(op);
    GPUInfo gpu;
    gpu.numSMs = numSMs;
    if (failed(op.getKind() == AttentionKind::decode ? scheduleDecode(op, shape, gpu, f)
                                                     : schedulePrefill(op, shape, gpu, f)))
      return failure();
    // The spec's fields and the defaults together may not fit (e.g. ctas_per_sm 3 with the
    // default warp roles): say so on the op.
    ScheduleAttr sched = f.getChecked(
        [&] { return op.emitOpError() << "the spec's schedule fields with the defaults: "; }, ctx);
    if (!sched)
      return failure();
    op.setScheduleAttr(sched);
    return mlir::verify(op, /*verifyRecursively=*/false);
  }

  LogicalResult schedule(MLADecodeOp op) {
    MLIRContext *ctx = &getContext();
    Fields f(op.getScheduleAttr());
    int64_t hq = op.getQ().getType().getDimSize(2);
    bool canCross = op.getKvQuantAttr() && !ShapedType::isDynamic(hq) && hq % 128 == 0;
    Fields::fill(f.crossover, ctx, canCross);
    Fields::fill(f.packQHeads, 64);
    Fields::fill(f.tileM, 64);
    Fields::fill(f.tileN, 64);
    Fields::fill(f.stages, 2);
    // One producer warpgroup (gather + dequantization, two loads in flight) and two consumers,
    // each with its own budget: consumer 0 holds S, P and half of O, consumer 1 half of O
    // (MLAPlan.h); 120 + 216 + 168 leaves no warpgroup spilling.
    if (!f.roles)
      f.roles = ArrayAttr::get(ctx, {WarpRoleAttr::get(ctx, RoleKind::producer, 1, 120),
                                     WarpRoleAttr::get(ctx, RoleKind::consumer, 1, 216),
                                     WarpRoleAttr::get(ctx, RoleKind::consumer, 1, 168)});
    if (f.cluster.empty())
      f.cluster =
          f.crossover.getValue() ? SmallVector<int64_t>{2, 1, 1} : SmallVector<int64_t>{1, 1, 1};
    op.setScheduleAttr(f.get(ctx));
    return mlir::verify(op, /*verifyRecursively=*/false);
  }

  void runOnOperation() override {
    bool failedAny = false;
    getOperation().walk([&](Operation *op) {
      if (!isa<AttentionOp, MLADecodeOp>(op))
        return;
      if (!getOpTarget(op)) {
        op->emitError() << "no target to schedule for: write target = #attn.target<...> or run "
                           "attn-normalize{target=...} first";
        failedAny = true;
        return;
      }
      LogicalResult r =
          isa<AttentionOp>(op) ? schedule(cast<AttentionOp>(op)) : schedule(cast<MLADecodeOp>(op));
      failedAny |= failed(r);
    });
    if (failedAny)
      signalPassFailure();
  }
};
} // namespace
