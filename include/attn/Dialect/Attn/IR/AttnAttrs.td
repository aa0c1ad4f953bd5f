//===- AttnAttrs.td - attn attributes and enums ------------*- tablegen -*-===//
//
// What this file is: the attributes a spec is made of — quantization scheme (#attn.quant), arithmetic
// mode (#attn.mode), target (#attn.target), schedule (#attn.schedule with its warp roles) and the
// product-quantization configuration of NoMAD (#attn.pq) — and the enums behind them.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_ATTRS_TD
#define ATTN_ATTRS_TD

include "attn/Dialect/Attn/IR/AttnDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Attn_Granularity : I32EnumAttr<"Granularity", "granularity of quantization scales", [
    I32EnumAttrCase<"per_tensor", 0>,
    I32EnumAttrCase<"per_token", 1>,
    I32EnumAttrCase<"per_head", 2>,
    I32EnumAttrCase<"per_token_head", 3>,
    I32EnumAttrCase<"per_group", 4>,
    I32EnumAttrCase<"per_block", 5>,
    I32EnumAttrCase<"per_channel", 6>]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}

def Attn_Symmetry : I32EnumAttr<"Symmetry", "symmetric (no zero point) or asymmetric", [
    I32EnumAttrCase<"symmetric", 0>,
    I32EnumAttrCase<"asymmetric", 1>]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}

def Attn_Mode : I32EnumAttr<"Mode", "arithmetic of the two attention GEMMs", [
    I32EnumAttrCase<"bf16", 0>,
    I32EnumAttrCase<"half_int8", 1>,
    I32EnumAttrCase<"full_int8", 2>,
    I32EnumAttrCase<"fp8", 3>]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}

def Attn_TargetKind : I32EnumAttr<"TargetKind", "hardware target", [
    I32EnumAttrCase<"sm_90a", 0>,
    I32EnumAttrCase<"avx2", 1>,
    I32EnumAttrCase<"avx512", 2>,
    I32EnumAttrCase<"avx512_vbmi", 3>,
    I32EnumAttrCase<"neon", 4>,
    I32EnumAttrCase<"scalar", 5>,
    I32EnumAttrCase<"avx512_vnni", 6>]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}

def Attn_RoleKind : I32EnumAttr<"RoleKind", "warp-specialized role", [
    I32EnumAttrCase<"producer", 0>,
    I32EnumAttrCase<"consumer", 1>]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}

def Attn_AttentionKind : I32EnumAttr<"AttentionKind", "prefill or decode", [
    I32EnumAttrCase<"prefill", 0>,
    I32EnumAttrCase<"decode", 1>]> {
  let cppNamespace = "::mlir::attn";
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

class Attn_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Attn_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Attn_ModeAttr : EnumAttr<Attn_Dialect, Attn_Mode, "mode"> {
  let summary = "arithmetic mode: bf16, half_int8, full_int8 or fp8";
  let assemblyFormat = "`<` $value `>`";
}

def Attn_TargetAttr : EnumAttr<Attn_Dialect, Attn_TargetKind, "target"> {
  let summary = "hardware target: sm_90a, avx2, avx512, avx512_vbmi, avx512_vnni, neon or scalar";
  let assemblyFormat = "`<` $value `>`";
}

def Attn_QuantAttr : Attn_Attr<"Quant", "quant"> {
  let summary = "quantization scheme of one operand";
  let description = [{
    `#attn.quant<ELEM, GRANULARITY[, symmetric|asymmetric][, scale = TYPE]>`

    * ELEM: the stored element type — `i8`, `ui8`, `i4` (two values packed per byte),
      `f8E4M3FN` or `f8E5M2`.
    * GRANULARITY: which elements share one scale, for a tensor laid out [B, S, H, D]
      (batch, tokens, heads, head_dim):

      | granularity        | scale shape            |
      |--------------------|------------------------|
      | `per_tensor`       | [1]                    |
      | `per_token`        | [B, S]                 |
      | `per_head`         | [H]                    |
      | `per_token_head`   | [B, S, H]              |
      | `per_group<g>`     | [B, S, H, D/g]         |
      | `per_block<r x c>` | [B, ceil(S/r), H, D/c] |
      | `per_channel`      | [H, D]                 |

    * symmetric (default): x = s·q. asymmetric: x = s·(q − z), with a zero-point operand of the
      same shape as the scales (integer element types only).
    * scale: the element type of the scales, `f32` (default), `f16` or `bf16`.

    Example: `#attn.quant<i8, per_group<64>, asymmetric, scale = f16>`.
  }];
  let parameters = (ins "::mlir::Type":$elementType,
                        "::mlir::attn::Granularity":$granularity,
                        "int64_t":$groupSize,
                        "int64_t":$blockRows,
                        "int64_t":$blockCols,
                        "::mlir::attn::Symmetry":$symmetry,
                        "::mlir::Type":$scaleType);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    bool isAsymmetric() const { return getSymmetry() == Symmetry::asymmetric; }
    /// Shape of the scale (and zero-point) tensor for a tensor of shape [B, S, H, D].
    /// Dynamic extents propagate as ShapedType::kDynamic.
    ::llvm::SmallVector<int64_t> getScaleShape(::llvm::ArrayRef<int64_t> bshd) const;
    /// Number of storage bits of one element (4 for packed i4).
    unsigned getStorageBits() const;
    /// Scales computed from one token alone (per_token, per_token_head, per_group<g>,
    /// per_block<1 x c>): quantizable as tokens arrive.
    bool isTokenLocal() const;
    /// Scales calibrated ahead of time and read by the kernels (per_tensor, per_head,
    /// per_channel).
    bool hasStaticScales() const;
    /// The code range [min, max]: i8 [-127, 127] symmetric or [-128, 127] asymmetric, ui8
    /// [0, 255], e4m3 ±448 (docs/QuantSchemes.md).
    double getCodeMin() const;
    double getCodeMax() const;
    /// The smallest scale a group gets (an all-zero group): 1e-8, or 2^-24 with f16 scales.
    double getMinScale() const;
    /// Elements of one scale group within a token's row of heads × headDim: the row
    /// (per_token), g (per_group<g>), c (per_block<r x c>), else one head (headDim).
    int64_t getGroupElems(int64_t heads, int64_t headDim) const;
  }];
}

def Attn_WarpRoleAttr : Attn_Attr<"WarpRole", "role"> {
  let summary = "one warp-specialized role: producer or consumer warpgroups with a register budget";
  let description = [{
    Written inside a schedule as `producer<warpgroups = 1, regs = 24>` or
    `consumer<warpgroups = 2, regs = 240>`; standalone as
    `#attn.role<consumer, warpgroups = 2, regs = 240>`. `regs` is the per-thread register count
    the role sets with `setmaxnreg` (24..256, a multiple of 8).
  }];
  let parameters = (ins "::mlir::attn::RoleKind":$kind, "int64_t":$warpgroups, "int64_t":$regs);
  let assemblyFormat = "`<` $kind `,` `warpgroups` `=` $warpgroups `,` `regs` `=` $regs `>`";
  let genVerifyDecl = 1;
}

def Attn_ScheduleAttr : Attn_Attr<"Schedule", "schedule"> {
  let summary = "how a kernel is mapped to the hardware; every field optional";
  let description = [{
    `#attn.schedule<key = value, ...>` with any subset of:

    * `pack_q_heads = N`: query heads that share one KV head packed into one M tile (decode).
    * `split_kv = N | auto`: number of KV splits (flash-decoding) combined by a second step;
      `auto` lets `attn-select-schedule` (or the runtime, for dynamic lengths) pick.
    * `tile_m = N`, `tile_n = N`: rows of Q and of K/V per tile.
    * `stages = N`: shared-memory pipeline depth.
    * `roles = [producer<warpgroups = W, regs = R>, consumer<warpgroups = W, regs = R>]`; a
      kernel whose consumer warpgroups do different work may list one `consumer<warpgroups = 1,
      regs = R>` entry per warpgroup instead (MLA decode: S + softmax, then P·V only).
    * `cluster = [X, Y, Z]`: thread-block cluster shape (1 to 3 extents).
    * `crossover = true|false`: FlashMLA's 2-CTA crossover through distributed shared memory.
    * `pingpong`, `intra_wg_overlap`, `persistent = true|false`: the FA3 scheduling features.
    * `ctas_per_sm = N`: CTAs the kernel is built to share one SM with (1 to 4; the compiler
      checks that registers and shared memory allow it and tells ptxas, `.minnctapersm`).
      Decode only; with 2, a batch of up to 2 · SMs CTAs runs in one wave. Left out, it is 2
      for an int8-query int8 cache whose static batch takes more than one wave at one CTA per
      SM, else 1; with a dynamic batch such a kernel also gets a two-CTA companion kernel that
      launchers take for batches of more than one wave (docs/Schedules.md).

    A field left out is "not decided": `attn-select-schedule` decides it.
  }];
  let parameters = (ins "int64_t":$packQHeads,
                        "int64_t":$splitKv,
                        "int64_t":$tileM,
                        "int64_t":$tileN,
                        "int64_t":$stages,
                        "::mlir::ArrayAttr":$roles,
                        ArrayRefParameter<"int64_t">:$cluster,
                        "::mlir::BoolAttr":$crossover,
                        "::mlir::BoolAttr":$pingpong,
                        "::mlir::BoolAttr":$intraWgOverlap,
                        "::mlir::BoolAttr":$persistent,
                        "int64_t":$ctasPerSm);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Sentinel of split_kv = auto (0 means "not set").
    static constexpr int64_t kAuto = -1;
    bool isSplitAuto() const { return getSplitKv() == kAuto; }
    /// The (first) role of the given kind, or null.
    WarpRoleAttr getRole(RoleKind kind) const;
    /// Every role entry of the given kind, in order.
    SmallVector<WarpRoleAttr> getRoleList(RoleKind kind) const;
    /// Product of the cluster extents (1 when unset).
    int64_t getClusterSize() const;
    bool hasCrossover() const { return getCrossover() && getCrossover().getValue(); }
  }];
}

def Attn_PQAttr : Attn_Attr<"PQ", "pq"> {
  let summary = "NoMAD product-quantization configuration";
  let description = [{
    `#attn.pq<dsub = 1, centroids = 16>` (optionally `block = 32`): every head_dim D is split into
    S = D / dsub sub-vectors, each quantized to one of `centroids` codebook entries (16: 4-bit codes,
    two keys per byte; 32 or 64: one code per byte, AVX-512 VBMI `vpermb`). Codes are stored in
    blocks of `block` keys, transposed (sub-quantizer major) so one SIMD load yields the codes of
    one sub-quantizer for the whole block. Lookup tables are u8 (min/max per query), accumulators u16.
  }];
  let parameters = (ins "int64_t":$dsub,
                        DefaultValuedParameter<"int64_t", "16">:$centroids,
                        DefaultValuedParameter<"int64_t", "32">:$block);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Bits of one key code (4 for 16 centroids, 8 otherwise).
    int64_t getCodeBits() const { return getCentroids() <= 16 ? 4 : 8; }
    /// Bytes of one sub-quantizer row of one code block.
    int64_t getCodeRowBytes() const { return getBlock() * getCodeBits() / 8; }
  }];
}

#endif // ATTN_ATTRS_TD
