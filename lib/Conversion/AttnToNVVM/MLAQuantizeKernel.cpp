//===- MLAQuantizeKernel.cpp - new MLA tokens into the FP8 format on sm_90a ===//
//
// What this file is: the sm_90a kernel of `attn.quantize.mla_append` — plan, generator and
// launch metadata. One warp per new token (4 per CTA): lane l loads the token's values 16l ..
// 16l+15 (one 1 × 128 tile per 8 lanes), reduces the tile's finite amax over its 8 lanes with
// shuffles, computes s = max(amax / 448, 1e-8) and 1/s correctly rounded, and writes the 16 e4m3
// codes of x · (1/s) (cvt.rn.satfinite: ties to even, saturating; NaN → 0) as one 16-byte store;
// the tile's first lane writes the f32 scale and lanes 0–7 write the RoPE part rounded to bf16.
// The arithmetic is qattn.mla.pack_fp8's, bit for bit (scripts/gpu-mla.py check).
//
//===----------------------------------------------------------------------===//

#include "ForwardPlan.h"
#include "KernelBuilder.h"
#include "MLAPlan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::nvvm;
using P = LLVM::ICmpPredicate;

FailureOr<MLAQuantizePlan> mlir::attn::nvvm::planMLAQuantize(QuantizeMLAAppendOp op) {
  MLAQuantizePlan p;
  p.name = op->getParentOfType<func::FuncOp>().getSymName().str();
  auto srcT = cast<MemRefType>(op.getSrc().getType());
  auto cacheT = cast<MemRefType>(op.getCache().getType());
  p.dv = op.getHeadDimV();
  p.rope = op.getRopeDim();
  p.quantTile = op.getKvQuant().getBlockCols();
  if (p.dv != 512 || p.rope != 64 || p.quantTile != 128)
    return op->emitError() << "not supported yet by convert-attn-to-nvvm: MLA tokens of "
                           << p.dv << " + " << p.rope << " values with 1 x " << p.quantTile
                           << " tiles (512 + 64 with 1 x 128 tiles only)";
  p.batch = srcT.isDynamicDim(0) ? -1 : srcT.getDimSize(0);
  p.newTokens = srcT.isDynamicDim(1) ? -1 : srcT.getDimSize(1);
  p.capacity = cacheT.isDynamicDim(1) ? -1 : cacheT.getDimSize(1);
  p.srcElem = srcT.getElementType();
  return p;
}

void mlir::attn::nvvm::buildMLAQuantizeKernel(OpBuilder &b, Location loc,
                                              gpu::GPUModuleOp module, const MLAQuantizePlan &p) {
  MLIRContext *ctx = b.getContext();
  Type glob = LLVM::LLVMPointerType::get(ctx, kGlobal);
  Type i32T = b.getI32Type();
  // src, positions, cache, batch, new_tokens, capacity (docs/GPUMLA.md).
  auto fn = declareKernel(b, loc, module, p.name + "_quantize",
                          {glob, glob, glob, i32T, i32T, i32T}, 128);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(fn.addEntryBlock(b));
  KernelBuilder k(b, loc);
  Value src = fn.getArgument(0), pos = fn.getArgument(1), cache = fn.getArgument(2),
        batch = fn.getArgument(3), newTokens = fn.getArgument(4), capacity = fn.getArgument(5);
  int64_t dk = p.dv + p.rope, eb = p.srcBytes();
  Value tid = k.tidX();
  Value warp = k.lshr(tid, 5), lane = k.band(tid, 31);
  Value tok = k.add(k.mul(k.ctaidX(), MLAQuantizePlan::kTokensPerCTA), warp);
  Value bIdx = k.udiv(tok, k.smax(newTokens, k.i32(1))), i = k.urem(tok, k.smax(newTokens, k.i32(1)));
  Value valid = k.cmp(P::slt, tok, k.mul(batch, newTokens));
  k.ifThen(valid, [&] {
    Value row = k.add(k.loadInvariant(i32T, k.gep(pos, k.mul(k.zext64(bIdx), int64_t(4)))), i);
    Value inCache = k.band(k.cmp(P::sge, row, 0), k.cmp(P::slt, row, capacity));
    // The whole warp takes the same branch: the shuffles below need every lane.
    k.ifThen(inCache, [&] {
      Value srcRow = k.gep(src, k.mul(k.mul(k.zext64(tok), int64_t(dk)), eb));
      Value dstRow = k.gep(cache, k.mul(k.add(k.mul(k.zext64(bIdx), k.zext64(capacity)),
                                              k.zext64(row)),
                                        p.tokenBytes()));
      // Values 16l .. 16l+15 as f32, NaN → 0.
      auto loadF32 = [&](Value base, int64_t n) {
        SmallVector<Value> xs;
        for (int64_t c = 0; c < n * eb / 16; ++c) {
          int64_t per = 16 / eb;
          Type v16 = VectorType::get({per}, p.srcElem);
          Value v = k.loadInvariant(v16, k.gep(base, c * 16), 16);
          for (int64_t e = 0; e < per; ++e) {
            Value x = k.extract(v, e);
            if (!p.srcElem.isF32())
              x = LLVM::FPExtOp::create(b, loc, k.f32(), x);
            xs.push_back(x);
          }
        }
        return xs;
      };
      SmallVector<Value> x = loadF32(k.gep(srcRow, k.zext64(k.mul(lane, 16 * eb))), 16);
      Value amax = k.f32(0), inf = k.f32(INFINITY);
      for (Value &v : x) {
        v = k.select(k.fcmp(LLVM::FCmpPredicate::uno, v, v), k.f32(0), v);
        Value a = LLVM::FAbsOp::create(b, loc, v);
        amax = k.fmax(amax, k.select(k.fcmp(LLVM::FCmpPredicate::olt, a, inf), a, k.f32(0)));
      }
      for (int64_t m = 1; m < 8; m *= 2)
        amax = k.fmax(amax, k.shflXor(amax, m));
      Value s = k.fmax(k.fdiv(amax, k.f32(448.0)), k.f32(1e-8));
      Value inv = k.intrinsic("llvm.nvvm.rcp.rn.f", k.f32(), {s}); // 1/s, correctly rounded
      SmallVector<Value> words;
      for (int64_t j = 0; j < 16; j += 4) { // cvt.rn.satfinite.e4m3x2.f32: first → high byte
        Value lo = k.intrinsic("llvm.nvvm.ff.to.e4m3x2.rn", k.i16(),
                               {k.fmul(x[j + 1], inv), k.fmul(x[j], inv)});
        Value hi = k.intrinsic("llvm.nvvm.ff.to.e4m3x2.rn", k.i16(),
                               {k.fmul(x[j + 3], inv), k.fmul(x[j + 2], inv)});
        words.push_back(k.bor(LLVM::ZExtOp::create(b, loc, i32T, lo),
                              k.shl(LLVM::ZExtOp::create(b, loc, i32T, hi), 16)));
      }
      k.store(k.vector(words), k.gep(dstRow, k.zext64(k.mul(lane, 16))), 16);
      k.ifThen(k.cmp(P::eq, k.band(lane, 7), 0), [&] {
        k.store(s, k.gep(k.gep(dstRow, p.dv), k.zext64(k.lshr(lane, 1))));
      });
      // RoPE: lanes 0–7, 8 values each, rounded to bf16 (cvt.rn.bf16x2.f32).
      k.ifThen(k.cmp(P::ult, lane, 8), [&] {
        SmallVector<Value> r =
            loadF32(k.gep(k.gep(srcRow, p.dv * eb), k.zext64(k.mul(lane, 8 * eb))), 8);
        // NaN → 0x7FFF explicitly: a bf16 source would otherwise keep its own NaN bits (the
        // f32 round trip folds away).
        SmallVector<Value> w;
        for (int64_t j = 0; j < 8; j += 2) {
          Value word = k.packBF16x2(r[j], r[j + 1]);
          for (int h = 0; h < 2; ++h) {
            Value nan = k.fcmp(LLVM::FCmpPredicate::uno, r[j + h], r[j + h]);
            Value canon = k.bor(k.band(word, k.i32(h ? 0x0000FFFF : -65536 /* 0xFFFF0000 */)),
                                k.i32(h ? 0x7FFF0000 : 0x7FFF));
            word = k.select(nan, canon, word);
          }
          w.push_back(word);
        }
        int64_t ropeOff = p.dv + 4 * (p.dv / p.quantTile);
        k.store(k.vector(w), k.gep(k.gep(dstRow, ropeOff), k.zext64(k.mul(lane, 16))), 16);
      });
    });
  });
  LLVM::ReturnOp::create(b, loc, ValueRange{});
}

std::string mlir::attn::nvvm::mlaQuantizeLaunchJSON(const MLAQuantizePlan &p) {
  using llvm::json::Array;
  using llvm::json::Object;
  std::string srcName = p.srcElem.isBF16() ? "bf16" : p.srcElem.isF16() ? "f16" : "f32";
  Object root{
      {"format", "attn-launch-v1"},
      {"arch", 90},
      {"problem", Object{{"kind", "quantize_mla"}, {"batch", p.batch},
                         {"new_tokens", p.newTokens}, {"capacity", p.capacity},
                         {"head_dim_v", p.dv}, {"rope_dim", p.rope}, {"quant_tile", p.quantTile},
                         {"token_bytes", p.tokenBytes()}, {"src_dtype", srcName}}},
      {"schedule", Object{{"tokens_per_cta", MLAQuantizePlan::kTokensPerCTA}}},
      {"kernels", Array{Object{{"name", p.name + "_quantize"},
                               {"role", "quantize"},
                               {"block", Array{128, 1, 1}},
                               {"cluster", Array{1, 1, 1}},
                               {"smem_bytes", 0},
                               {"grid", Array{"token_ctas", 1, 1}},
                               {"params", Array{"src", "positions", "cache", "batch",
                                                "new_tokens", "capacity"}}}}}};
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  return s;
}
