//===- KernelBuilder.h - building blocks of the Hopper kernels --*- C++ -*-===//
//
// What this file is: the kernel-level vocabulary of convert-attn-to-nvvm — a thin builder over the
// LLVM and NVVM dialects with one method per thing a kernel engineer writes by hand: thread and
// block ids, global/shared loads and stores, warp shuffles, named barriers, mbarriers, TMA tile
// loads, WGMMA shared-memory descriptors and the two WGMMA forms (A from shared memory through
// `nvvm.wgmma.mma_async`; A from registers through inline PTX, for which NVVM has no op), the
// 128-byte-swizzled tile layout they read, and scf loops/ifs. Private to this folder.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_LIB_CONVERSION_ATTNTONVVM_KERNELBUILDER_H
#define ATTN_LIB_CONVERSION_ATTNTONVVM_KERNELBUILDER_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

#include <functional>

namespace mlir::attn::nvvm {

/// Address spaces of the NVPTX backend.
enum AddrSpace : unsigned { kGeneric = 0, kGlobal = 1, kShared = 3 };

class KernelBuilder {
public:
  KernelBuilder(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  OpBuilder &builder() { return b; }
  Location getLoc() const { return loc; }
  MLIRContext *ctx() { return b.getContext(); }

  // Types.
  Type i1() { return b.getI1Type(); }
  Type i16() { return b.getI16Type(); }
  Type i32() { return b.getI32Type(); }
  Type i64() { return b.getI64Type(); }
  Type f32() { return b.getF32Type(); }
  Type ptr(unsigned as) { return LLVM::LLVMPointerType::get(ctx(), as); }

  // Constants.
  Value i32(int64_t v) { return LLVM::ConstantOp::create(b, loc, i32(), v); }
  Value i64(int64_t v) { return LLVM::ConstantOp::create(b, loc, i64(), v); }
  Value f32(double v) { return LLVM::ConstantOp::create(b, loc, f32(), b.getF32FloatAttr(v)); }

  // Integer arithmetic (i32 unless the operands say otherwise).
  Value add(Value x, Value y) { return LLVM::AddOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return LLVM::SubOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return LLVM::MulOp::create(b, loc, x, y); }
  Value udiv(Value x, Value y) { return LLVM::UDivOp::create(b, loc, x, y); }
  Value urem(Value x, Value y) { return LLVM::URemOp::create(b, loc, x, y); }
  Value band(Value x, Value y) { return LLVM::AndOp::create(b, loc, x, y); }
  Value bor(Value x, Value y) { return LLVM::OrOp::create(b, loc, x, y); }
  Value bxor(Value x, Value y) { return LLVM::XOrOp::create(b, loc, x, y); }
  Value shl(Value x, Value y) { return LLVM::ShlOp::create(b, loc, x, y); }
  Value lshr(Value x, Value y) { return LLVM::LShrOp::create(b, loc, x, y); }
  Value add(Value x, int64_t y) { return y == 0 ? x : add(x, constLike(x, y)); }
  Value mul(Value x, int64_t y) { return y == 1 ? x : mul(x, constLike(x, y)); }
  Value udiv(Value x, int64_t y) { return udiv(x, constLike(x, y)); }
  Value urem(Value x, int64_t y) { return urem(x, constLike(x, y)); }
  Value band(Value x, int64_t y) { return band(x, constLike(x, y)); }
  Value shl(Value x, int64_t y) { return shl(x, constLike(x, y)); }
  Value lshr(Value x, int64_t y) { return lshr(x, constLike(x, y)); }
  Value cmp(LLVM::ICmpPredicate p, Value x, Value y) {
    return LLVM::ICmpOp::create(b, loc, p, x, y);
  }
  Value cmp(LLVM::ICmpPredicate p, Value x, int64_t y) { return cmp(p, x, constLike(x, y)); }
  Value select(Value c, Value x, Value y) { return LLVM::SelectOp::create(b, loc, c, x, y); }
  Value smin(Value x, Value y) { return select(cmp(LLVM::ICmpPredicate::slt, x, y), x, y); }
  Value smax(Value x, Value y) { return select(cmp(LLVM::ICmpPredicate::sgt, x, y), x, y); }
  /// ceil(x / d) for non-negative x.
  Value ceilDiv(Value x, int64_t d) { return udiv(add(x, d - 1), d); }
  Value zext64(Value x) { return LLVM::ZExtOp::create(b, loc, i64(), x); }
  Value sext64(Value x) { return LLVM::SExtOp::create(b, loc, i64(), x); }
  Value trunc(Type t, Value x) { return LLVM::TruncOp::create(b, loc, t, x); }
  Value bitcast(Type t, Value x) { return LLVM::BitcastOp::create(b, loc, t, x); }

  // Float arithmetic (f32).
  Value fadd(Value x, Value y) { return LLVM::FAddOp::create(b, loc, x, y); }
  Value fsub(Value x, Value y) { return LLVM::FSubOp::create(b, loc, x, y); }
  Value fmul(Value x, Value y) { return LLVM::FMulOp::create(b, loc, x, y); }
  Value fdiv(Value x, Value y) { return LLVM::FDivOp::create(b, loc, x, y); }
  Value fma(Value x, Value y, Value z) { return LLVM::FMAOp::create(b, loc, x, y, z); }
  Value fmax(Value x, Value y) { return LLVM::MaxNumOp::create(b, loc, x, y); }
  Value fcmp(LLVM::FCmpPredicate p, Value x, Value y) {
    return LLVM::FCmpOp::create(b, loc, p, x, y);
  }
  Value sitofp(Value x) { return LLVM::SIToFPOp::create(b, loc, f32(), x); }
  /// 2^x with the special-function unit (ex2.approx.ftz.f32).
  Value exp2(Value x) { return intrinsic("llvm.nvvm.ex2.approx.ftz.f", f32(), {x}); }
  /// x / y to about 2 ulp (div.approx.ftz.f32: a reciprocal and a multiply, no IEEE slow path).
  Value fdivApprox(Value x, Value y) {
    return intrinsic("llvm.nvvm.div.approx.ftz.f", f32(), {x, y});
  }
  /// tanh(x) with the special-function unit (tanh.approx.f32, sm_75+; about 2^-11 relative).
  Value tanhApprox(Value x);
  /// log2(x) with the special-function unit (lg2.approx.ftz.f32).
  Value log2(Value x) { return intrinsic("llvm.nvvm.lg2.approx.ftz.f", f32(), {x}); }
  /// Packs two f32 into bf16x2 (round to nearest even): `lo` in bits 0–15; with `f16`, f16x2.
  Value packBF16x2(Value lo, Value hi, bool f16 = false);
  /// PTX `prmt.b32`: byte permute of {b, a} by `selector`.
  Value prmt(Value a, Value bv, int64_t selector) { return prmt(a, bv, i32(selector)); }
  Value prmt(Value a, Value bv, Value selector) {
    return intrinsic("llvm.nvvm.prmt", i32(), {a, bv, selector});
  }

  /// `ldmatrix.sync.aligned.m8n8.x4.trans.b16` from shared `p` (lanes 8i..8i+7 give matrix i's
  /// row addresses): the lane's word of each of the four matrices.
  SmallVector<Value, 4> ldmatrixX4Trans(Value p);
  /// `stmatrix.sync.aligned.m8n8.x4.b16` of `words` (matrix i's fragment) to shared `p`.
  void stmatrixX4(Value p, ValueRange words) {
    SmallVector<Value> args = {p};
    args.append(words.begin(), words.end());
    intrinsicVoid("llvm.nvvm.stmatrix.sync.aligned.m8n8.x4.b16", args);
  }

  // Calls of LLVM/NVVM intrinsics that have no dialect op.
  Value intrinsic(StringRef name, Type result, ValueRange args);
  void intrinsicVoid(StringRef name, ValueRange args);

  // Thread geometry.
  Value tidX() { return NVVM::ThreadIdXOp::create(b, loc, i32()); }
  /// %tid.x read by side-effecting inline PTX: not hoisted out of loops, so what is computed
  /// from it is recomputed where it is used instead of held in registers across the loop.
  Value tidXHere();
  Value ctaidX() { return NVVM::BlockIdXOp::create(b, loc, i32()); }
  Value nctaidX() { return NVVM::GridDimXOp::create(b, loc, i32()); }
  Value ctaidY() { return NVVM::BlockIdYOp::create(b, loc, i32()); }
  Value ctaidZ() { return NVVM::BlockIdZOp::create(b, loc, i32()); }

  // Memory. Offsets are in bytes (i32 for shared, i64 for global).
  Value gep(Value base, Value byteOffset) {
    return LLVM::GEPOp::create(b, loc, base.getType(), b.getI8Type(), base, ValueRange{byteOffset});
  }
  Value gep(Value base, int64_t byteOffset) {
    return byteOffset == 0
               ? base
               : gep(base, base.getType() == ptr(kShared) ? i32(byteOffset) : i64(byteOffset));
  }
  Value load(Type t, Value p, unsigned align = 4) {
    return LLVM::LoadOp::create(b, loc, t, p, align);
  }
  /// A global load that may use the read-only (non-coherent) cache.
  Value loadInvariant(Type t, Value p, unsigned align = 4) {
    auto op = LLVM::LoadOp::create(b, loc, t, p, align);
    op.setInvariant(true);
    return op;
  }
  void store(Value v, Value p, unsigned align = 4) { LLVM::StoreOp::create(b, loc, v, p, align); }
  Type vec4Type() { return VectorType::get({4}, i32()); }
  Type vec2f32Type() { return VectorType::get({2}, f32()); }
  Value extract(Value vec, int64_t i) {
    return LLVM::ExtractElementOp::create(b, loc, vec, i32(i));
  }
  /// A vector of the given scalars (all of one type).
  Value vector(ArrayRef<Value> v);
  /// Integer address of a shared-memory pointer (the 32-bit shared window).
  Value sharedAddr(Value p) { return LLVM::PtrToIntOp::create(b, loc, i32(), p); }
  /// i1: whether the (global) pointer `p` is null.
  Value isNull(Value p) {
    return cmp(LLVM::ICmpPredicate::eq, LLVM::PtrToIntOp::create(b, loc, i64(), p), int64_t(0));
  }
  /// The dynamic shared memory of the kernel, as a pointer in address space 3.
  Value dynamicShared(StringRef symbol) {
    return LLVM::AddressOfOp::create(b, loc, ptr(kShared), symbol);
  }

  // Walsh–Hadamard butterflies (`hadamard` kernels): a pair (a, b) becomes (a + b, a − b).
  /// Over the pairs (xs[i], xs[i | bit]) of one thread, for every i without `bit`.
  void butterflies(MutableArrayRef<Value> xs, size_t bit);
  /// Across lanes `mask` apart (shfl.xor): the lane where `upper` (i1) holds is b and keeps
  /// partner − own, exactly a − b (an FMA by −1 is exact); the other keeps own + partner.
  void laneButterflies(MutableArrayRef<Value> xs, int64_t mask, Value upper);

  // Warp and CTA synchronization.
  Value shflXor(Value v, int64_t mask);
  /// bar.warp.sync over the whole warp.
  void syncWarp() { NVVM::SyncWarpOp::create(b, loc, i32(-1)); }
  /// i1: whether `pred` holds in any lane of the (converged) warp.
  Value voteAny(Value pred) {
    return NVVM::VoteSyncOp::create(b, loc, b.getI1Type(), i32(-1), pred, NVVM::VoteSyncKind::any)
        .getResult();
  }
  /// The value `v` of lane `lane` (i32) of the warp.
  Value shflIdx(Value v, Value lane);
  /// `v`, a value every lane of the warp holds alike (a warp or warpgroup index), as lane 0's
  /// (shfl.sync.idx): ptxas then knows it is warp-uniform and keeps what is derived from it —
  /// shared addresses, WGMMA descriptors — in uniform registers instead of moving them there
  /// (R2UR) before every WGMMA (CUTLASS's canonical_warp_group_idx does the same).
  Value warpUniform(Value v) { return shflIdx(v, i32(0)); }
  /// bar.sync `id`, `threads` (all threads of the CTA when threads == 0).
  void barrier(int64_t id, int64_t threads);
  /// bar.sync / bar.arrive on a named barrier whose id is a value.
  void barrierSync(Value id, int64_t threads);
  void barrierArrive(Value id, int64_t threads);
  void fenceProxyAsyncShared();
  void fenceMbarrierInit();
  /// cp.async.cg of 16 bytes global → shared; only the first `srcBytes` (0 or 16) are read, the
  /// rest zero-filled. Completed by cpAsyncWaitAll after a cpAsyncCommit; what the WGMMAs read
  /// needs fenceProxyAsyncShared after that.
  void cpAsync16(Value dstShared, Value srcGlobal, Value srcBytes);
  void cpAsyncCommit();
  void cpAsyncWaitAll();

  // mbarriers (shared memory, 8 bytes each).
  void mbarrierInit(Value bar, int64_t count);
  void mbarrierArrive(Value bar);
  void mbarrierArriveExpectTx(Value bar, int64_t bytes);
  void mbarrierWait(Value bar, Value parity);
  /// i32 1 if the phase of `parity` of `bar` completed, else 0 (mbarrier.test_wait: no waiting).
  Value mbarrierTestWait(Value bar, Value parity);

  // Thread-block clusters and distributed shared memory (32-bit shared-window addresses).
  /// This CTA's rank in its cluster.
  Value clusterRank() { return NVVM::ClusterId::create(b, loc, i32()); }
  /// The number of CTAs in this CTA's cluster (1 when launched without one).
  Value clusterSize() { return NVVM::ClusterDim::create(b, loc, i32()); }
  /// ld.shared::cluster.f32 from the cluster address `addr` (side-effecting: it stays after the
  /// cluster barrier that publishes what it reads).
  Value loadClusterF32(Value addr);
  /// trap: aborts the grid (the launch then fails with an error).
  void trap() { LLVM::Trap::create(b, loc); }
  /// The address of the same shared-memory byte in CTA `rank` of the cluster (mapa).
  Value mapaShared(Value addr, Value rank);
  /// st.async of 16 bytes (a vector of 4 i32) to the cluster address `addr`, completing `bytes`
  /// of the transaction on the mbarrier at cluster address `bar` (in the same CTA as `addr`).
  void stAsync(Value addr, Value v4, Value bar);
  /// An arrive on the mbarrier at cluster address `bar` (possibly in another CTA of the cluster;
  /// the default .release.cta semantics, as CUTLASS's ClusterBarrier::arrive — a .cluster
  /// release costs a fence on every call and measured 6% on the MLA crossover).
  void mbarrierArriveCluster(Value bar);
  /// barrier.cluster.arrive + wait (release / acquire): every thread of every CTA of the cluster.
  void clusterSync() {
    NVVM::ClusterArriveOp::create(b, loc, b.getUnitAttr());
    NVVM::ClusterWaitOp::create(b, loc, b.getUnitAttr());
  }

  /// TMA: a tiled copy of the box at `coords` (innermost first) of the tensor map `map` (a
  /// generic pointer to the grid-constant parameter) into shared memory, completing on `bar`.
  void tmaLoad(Value dst, Value map, ValueRange coords, Value bar);

  /// The layout field (bits 62–63) of a WGMMA descriptor: the unswizzled "interleave" layout
  /// of 8-row × 16-byte core matrices, or rows of 128 (64) bytes in 8-row swizzle atoms, as TMA's
  /// SWIZZLE_128B (SWIZZLE_64B) writes them.
  enum class WgmmaLayout : uint64_t { Interleave = 0, Swizzle128 = 1, Swizzle64 = 2 };
  /// A WGMMA shared-memory matrix descriptor.
  Value wgmmaDescriptor(Value sharedAddress, int64_t lbo, int64_t sbo,
                        WgmmaLayout layout = WgmmaLayout::Swizzle128);
  /// The low word of such a descriptor (address >> 4, leading byte offset >> 4), computed once
  /// per tile; wgmmaDescriptorAt adds a k-step's byte offset to its address field in 32 bits and
  /// joins a constant high word. A shared address stays under 2^18 bytes, so the address field
  /// never carries: exactly wgmmaDescriptor(address + offset), in one add instead of the shift,
  /// masks and 64-bit arithmetic per k-step.
  Value wgmmaDescriptorLo(Value sharedAddress, int64_t lbo);
  Value wgmmaDescriptorAt(Value lo, int64_t byteOffset, int64_t sbo,
                          WgmmaLayout layout = WgmmaLayout::Swizzle128);

  /// D (+)= A·B with A and B in shared memory (descriptors); bf16 inputs, f32 accumulators.
  /// `acc` holds N/2 f32 per thread; with `accumulate` false the old values are ignored.
  SmallVector<Value> wgmmaSS(ArrayRef<Value> acc, Value descA, Value descB, int64_t n,
                             bool accumulate, bool transB);
  /// D (+)= A·B over 8-bit inputs, A and B (K-major) in shared memory, K step 32: s8 with s32
  /// accumulators (N/2 i32 per thread), or with `fp8` e4m3 with f32 accumulators.
  SmallVector<Value> wgmmaSS8(ArrayRef<Value> acc, Value descA, Value descB, int64_t n,
                              bool accumulate, bool fp8);
  /// packBF16x2 as side-effecting inline PTX: LLVM keeps it after a preceding
  /// wgmma.wait_group. For A operands of the next wgmma that share (through a loop phi) the
  /// registers an in-flight wgmma still reads: written before its wait, ptxas serializes them.
  Value packBF16x2Ordered(Value lo, Value hi, bool f16 = false);
  /// Four f32 → four e4m3 bytes (cvt.rn.satfinite), `x0` in bits 0–7; side-effecting inline PTX
  /// like packBF16x2Ordered.
  Value packE4M3x4(Value x0, Value x1, Value x2, Value x3);
  /// Four f32 in [0, 255.5) → four u8 (x · `scale` rounded to nearest even), `x0` in bits 0–7;
  /// side-effecting inline PTX like packBF16x2Ordered (FFMA with 1.5 · 2^23, then prmt).
  Value packU8x4(Value x0, Value x1, Value x2, Value x3, Value scale);
  /// Operand types of a register-A WGMMA: bf16 × bf16 or f16 × f16 (m64k16, f32 accumulators),
  /// e4m3 × e4m3 (m64k32, f32) or u8 A × s8 B (m64k32, s32 accumulators).
  enum class RSTypes { BF16, F16, E4M3, U8S8 };
  /// D (+)= A·B with A in registers and B in shared memory: four bf16x2 per thread (the m64k16
  /// fragment; `transB` for an MN-major B), or four 8-bit ×4 words (the m64k32 fragment) and a
  /// K-major B. With `accumulate` false the old values are ignored (scale-d 0).
  SmallVector<Value> wgmmaRS(ArrayRef<Value> acc, ArrayRef<Value> a, Value descB, int64_t n,
                             bool transB, RSTypes types = RSTypes::BF16, bool accumulate = true);
  void wgmmaFence() { NVVM::WgmmaFenceAlignedOp::create(b, loc); }
  void wgmmaCommit() { NVVM::WgmmaGroupSyncAlignedOp::create(b, loc); }
  void wgmmaWait(int64_t pending) { NVVM::WgmmaWaitGroupSyncOp::create(b, loc, pending); }

  // Control flow.
  using LoopBody = std::function<SmallVector<Value>(Value iv, ValueRange iterArgs)>;
  /// scf.for over [lb, ub) step `step` (i32) carrying `inits`; returns the final values.
  SmallVector<Value> forLoop(Value lb, Value ub, int64_t step, ValueRange inits, LoopBody body);
  /// The same with a step known at run time (positive).
  SmallVector<Value> forLoop(Value lb, Value ub, Value step, ValueRange inits, LoopBody body);
  /// scf.if with results of `types` (possibly none); each branch returns its yielded values.
  SmallVector<Value> ifThenElse(Value cond, TypeRange types,
                                std::function<SmallVector<Value>()> thenBody,
                                std::function<SmallVector<Value>()> elseBody);
  void ifThen(Value cond, std::function<void()> body);

private:
  /// Inline PTX with side effects and no results; `constraints` as LLVM writes them.
  void asmVoid(StringRef ptx, StringRef constraints, ValueRange operands);
  Value constLike(Value x, int64_t v) { return LLVM::ConstantOp::create(b, loc, x.getType(), v); }
  /// The struct of an m64nN accumulator fragment: N/2 fields of `field`.
  Type accStructType(int64_t n, Type field);
  Value packStruct(Type t, ArrayRef<Value> values);
  /// One SS WGMMA m64nNkK: `ab` inputs, `d` accumulators (N/2 values of `field` per thread).
  SmallVector<Value> wgmmaShared(ArrayRef<Value> acc, Value descA, Value descB, int64_t n,
                                 int64_t kDim, NVVM::WGMMATypes ab, NVVM::WGMMATypes d, Type field,
                                 bool accumulate, bool transB);
  SmallVector<Value> unpackStruct(Value s, int64_t n);

  OpBuilder &b;
  Location loc;
};

/// Adds the kernel `name(args) -> void` at the end of `module`: `nvvm.kernel`, `nvvm.maxntid =
/// threads` and, when `minBlocks` > 0, `nvvm.minctasm`. The caller adds the body.
LLVM::LLVMFuncOp declareKernel(OpBuilder &b, Location loc, gpu::GPUModuleOp module, StringRef name,
                               ArrayRef<Type> args, int64_t threads, int64_t minBlocks = 0);

} // namespace mlir::attn::nvvm

#endif // ATTN_LIB_CONVERSION_ATTNTONVVM_KERNELBUILDER_H
