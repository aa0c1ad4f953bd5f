//===- Passes.td - attn conversions ------------------------*- tablegen -*-===//
//
// What this file is: every conversion out of the attn dialect, one def per target family, in the
// style of MLIR's and CIRCT's Conversion/Passes.td. Target-specific code lives in
// lib/Conversion/AttnTo<Target>/.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CONVERSION_PASSES_TD
#define ATTN_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// AttnToCPU
//===----------------------------------------------------------------------===//

def ConvertAttnToCPU : Pass<"convert-attn-to-cpu", "ModuleOp"> {
  let summary = "Lower NoMAD attn.pq.* ops (explicit SIMD lookup intrinsics) and attn.quantize.* "
                "ops (loops) for CPUs";
  let description = [{
    Rewrites each `attn.pq.*` op into scf loops over vector and memref ops. The table lookups of
    `attn.pq.scores` (and of `attn.pq.attention`) are explicit `llvm.call_intrinsic`s, chosen by
    the op's target (or the `isa` option):

    | target        | 16 centroids (4-bit codes)       | 32 / 64 centroids (8-bit codes)        |
    |---------------|----------------------------------|----------------------------------------|
    | `avx2`        | `llvm.x86.avx2.pshuf.b` (2 rows) | not supported                          |
    | `avx512`      | `llvm.x86.avx512.pshuf.b.512` (4)| not supported                          |
    | `avx512_vbmi` | `llvm.x86.avx512.pshuf.b.512` (4)| `vpermb` / `vpermi2b` (2 rows)         |
    | `avx512_vnni` | `vpermb` + `vpdpbusd` (4 rows)   | `vpermb` / `vpermi2b` (2 rows)         |
    | `neon`        | `llvm.aarch64.neon.tbl1` (1 row) | not supported                          |
    | `scalar`      | plain loads (the reference path) | plain loads                            |

    Accumulation is in u16 (FAISS's even/odd trick: add the looked-up bytes as u16 lanes and, in
    a second accumulator, the same lanes shifted right by 8). `avx512_vnni` (AVX-512 BW + VBMI +
    VNNI: Ice Lake, Sapphire Rapids, Zen 4) instead transposes each 4 code rows in-register
    (`vpermb`) so that a 32-bit lane holds one key's 4 codes, looks them up in the 4 rows' tables
    with one `vpermb` per nibble and adds each key's 4 bytes into its i32 lane with `vpdpbusd`:
    8 vector µops per 4 rows × 32 keys instead of 11, the same u16 sums.

    Memref arguments of unsigned element types become signless, and every converted function gets `llvm.emit_c_interface` so that the
    object exports `_mlir_ciface_<name>` (the header from `--emit=header` wraps it).

    `attn.quantize.append` and `attn.quantize.dynamic` become scalar loops (the same on every ISA):
    per token and scale group, a reduction over the finite values (amax, or min/max when
    asymmetric), the scale rounded to the scheme's scale type and the zero point, then the codes
    x · (1/s) (+ z) rounded half away from zero and clamped, or rounded to e4m3 in integer
    arithmetic; static granularities read their scales. NaN quantizes as 0, ±inf saturate.
    Appended tokens whose row positions[b] + t lies outside the cache are not written.
    Ops of other families on CPU targets are refused with "not supported yet".
  }];
  let options = [
    Option<"isa", "isa", "std::string", /*default=*/"\"\"",
           "Override the ops' target: scalar, avx2, avx512, avx512_vbmi, avx512_vnni or neon">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect", "::mlir::memref::MemRefDialect",
                           "::mlir::LLVM::LLVMDialect", "::mlir::math::MathDialect",
                           "::mlir::affine::AffineDialect"];
}

//===----------------------------------------------------------------------===//
// AttnToNVVM
//===----------------------------------------------------------------------===//

def ConvertAttnToNVVM : Pass<"convert-attn-to-nvvm", "ModuleOp"> {
  let summary = "Lower sm_90a attn.attention decode (warp-specialized WGMMA/TMA kernels) and "
                "attn.quantize.* to NVVM";
  let description = [{
    Each function holding one `attn.attention decode` op with target `sm_90a` (and a complete
    schedule: run `attn-select-schedule` first) becomes two kernels in
    `gpu.module @attn_kernels` (NVVM target sm_90a, PTX 8.6). attn-build-kernel builds them at
    the kernel level (run it first; convert-attnk-to-nvvm lowers them); this pass checks the
    op, refuses what the kernels do not implement, attaches the launch metadata to the
    forward kernel and removes the host function:

    * `<f>_decode`: grid (splits, query-head groups, batch), 256 threads. A producer warpgroup
      streams K/V tiles with `nvvm.cp.async.bulk.tensor` into `stages` mbarrier-guarded stages
      and dequantizes them (int8 / e4m3 → bf16) into 128-byte-swizzled buffers; a consumer
      warpgroup runs S = Q·Kᵀ on `nvvm.wgmma.mma_async` with the packed query heads as the M
      tile, scales by the K scales, masks (lengths, causal), adds ALiBi, does the online softmax,
      and O += P·V on WGMMA with P in registers. Register budgets come from the schedule's roles
      (`nvvm.setmaxregister`).
    * `<f>_combine`: merges split-KV partials.

    `attn.attention prefill` (bf16, or half_int8 with int8 queries; a dynamic q_len becomes the
    kernel parameter `q_len`) becomes
    `<f>_prefill`, the same kernel over query chunks: each consumer warpgroup owns a 64-row tile
    of 64 / pack_q_heads tokens and both run over every key tile; grid (chunks, query-head
    groups, batch), one split, no combine (docs/GPUDecode.md).

    A function holding one `attn.quantize.append` or `attn.quantize.dynamic` op becomes
    `<f>_quantize`: 128 threads; every lane group of a warp owns one scale group, issues 16-byte
    loads of all its chunks first, reduces amax (or min/max) with butterfly shuffles, and writes
    codes x · rcp.rn(s) (+ z) — i8 / ui8 rounded half away from zero, e4m3 through
    `cvt.rn.satfinite.e4m3x2.f32` — with one lane writing the scale (and zero point). The same
    arithmetic and non-finite policy as the CPU lowering (docs/QuantSchemes.md).

    `attn.quantize.*` and `attn.mla_decode` are built whole at the kernel level by
    attn-build-kernel; this pass refuses them when it was not run.

    The launch metadata (docs/GPUDecode.md, docs/QuantSchemes.md, docs/GPUMLA.md) is attached to
    the main kernel as `attn.launch`; the host function is removed. Variants the generators do
    not implement (prefill modes other than bf16 / half_int8, MLA shapes other than 512 + 64,
    decode granularities other than per_token_head / per_token /
    per_head / per_tensor, zero points with int8 queries, f16/f32 outputs, ...) are refused on
    the op with "not supported yet". Asymmetric i8 / ui8 caches (zero points) are decoded with
    x̂ − z formed exactly in the producer's conversion.
  }];
  let options = [
    Option<"metadataOnly", "metadata-only", "bool", /*default=*/"false",
           "Check and plan every op and attach the launch metadata, but emit kernel declarations "
           "without bodies (what --emit=launch needs)">
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect", "::mlir::NVVM::NVVMDialect",
                           "::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect"];
}

//===----------------------------------------------------------------------===//
// AttnToKernel, AttnKernelToNVVM
//===----------------------------------------------------------------------===//

def AttnBuildKernel : Pass<"attn-build-kernel", "ModuleOp"> {
  let summary = "Build the kernel level (attnk) of the sm_90a kernels that go through it";
  let description = [{
    Builds, from scheduled sm_90a specs, the kernels of `gpu.module @attn_kernels` that go
    through the kernel level, as `attnk.kernel` ops (docs/KernelIR.md):

    * `attn.quantize.append` / `attn.quantize.dynamic`: `<f>_quantize` (group index, loads,
      widening, scales, `attnk.quantize_tile`, stores), with its launch metadata; the host
      function is removed;
    * `attn.quantize.mla_append`: `<f>_quantize`, one warp per token (`attnk.token_rows` with
      contiguous groups: the latent part's e4m3 codes and scales, the RoPE part in bf16), with
      its launch metadata; the host function is removed;
    * `attn.attention` (decode and prefill): the forward kernel `<f>_decode` / `<f>_prefill`
      (and a dynamic batch's `<f>_decode_2cta`) — tensor-map and buffer parameters, its rings
      (`attnk.ring.alloc`), the CTA's work and prologue (`attnk.forward.work`,
      `attnk.forward.prologue`) and `attnk.warp_specialize` with the producer and consumer
      roles (`attnk.forward.producer`, `attnk.forward.consumer`); for decode also the split-KV
      combine kernels `<f>_combine` and `<f>_combine_wide` (`attnk.merge.combine`), placed
      after the forward kernel. The attention op and its function stay for
      `convert-attn-to-nvvm`, which checks the op, says why a variant is refused (nothing is
      built for it here) and attaches the launch metadata.

    * `attn.mla_decode` (DeepSeek's 512 + 64 latent, FP8 656-byte tokens or a bf16 cache;
      sparse top-k or dense): `<f>_mla` (docs/GPUMLA.md) — buffer parameters, the launch ABI
      and metadata, the key/value and P rings, the CTA's work and prologue (`attnk.mla.work`,
      `attnk.mla.prologue`), `attnk.warp_specialize` with the producer role
      (`attnk.mla.producer`: gathers blocks of 64 keys with 16-byte loads and dequantizes
      e4m3 · tile scale into bf16) and the consumer role (`attnk.mla.consumers`: consumer 0 runs
      S = Q·Kᵀ and the softmax and hands P to consumer 1; both add P·V into their half of O),
      and, with `crossover` (the two head groups of a query token as a 2-CTA cluster, each
      producer writing half of every block into both CTAs), `attnk.mla.cluster_sync`; the host
      function is removed.

    Run `attn-select-schedule` first; lower with
    `convert-attnk-to-nvvm` after `convert-attn-to-nvvm`. Quantize variants without a kernel
    are refused on the op with "not supported yet by the sm_90a kernels".
  }];
  let dependentDialects = ["::mlir::attnk::AttnKernelDialect", "::mlir::gpu::GPUDialect",
                           "::mlir::NVVM::NVVMDialect", "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def ConvertAttnKernelToNVVM : Pass<"convert-attnk-to-nvvm", "ModuleOp"> {
  let summary = "Lower the kernel level (attnk) to the LLVM and NVVM dialects";
  let description = [{
    Rewrites every `attnk` op with the pattern families of lib/Conversion/AttnKernelToNVVM
    (one family per file): `attnk.kernel` becomes an `llvm.func` kernel in place,
    `attnk.warp_specialize` the roles' split with their `setmaxnreg`, `attnk.ring.alloc` the
    ring's shared-memory address, the `attnk.forward.*` ops the forward kernel's frame and
    roles, `attnk.merge.combine` the combine kernel's merge, the quantize ops the quantize
    kernel. Memref kernel parameters become `!llvm.ptr<1>`, tensor maps by-value grid
    constants (`!llvm.ptr`), rings `!llvm.ptr<3>`; `!attnk.groups` tiles the registers each
    thread holds. scf control flow is left for attn-nvvm-to-llvm.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect", "::mlir::NVVM::NVVMDialect",
                           "::mlir::scf::SCFDialect", "::mlir::gpu::GPUDialect"];
}

#endif // ATTN_CONVERSION_PASSES_TD
