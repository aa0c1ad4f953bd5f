//===- QuantizeOps.td - quantization ops -------------------*- tablegen -*-===//
//
// What this file is: the quantization family — `attn.quantize.append` (append new K/V tokens into a
// quantized cache, computing their scales), `attn.quantize.append_paged` (the same into a paged
// cache at the slots of a slot mapping), `attn.quantize.dynamic` (dynamic per-token
// quantization of activations such as Q) and `attn.quantize.mla_append` (new MLA tokens into
// FlashMLA's FP8 token format).
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_QUANTIZE_OPS_TD
#define ATTN_QUANTIZE_OPS_TD

def Attn_QuantizeAppendOp : Attn_Op<"quantize.append"> {
  let summary = "quantize new K or V tokens and append them to a quantized cache";
  let description = [{
    * `src`:       [B, Snew, H, D] new tokens (bf16, f16 or f32)
    * `positions`: [B] i32, the cache position of the first new token of each batch element
    * `cache`:     [B, Smax, H, D] of the scheme's element type (D/2 bytes for packed i4)
    * `scales`:    the scheme's scale shape for [B, Smax, H, D]; `zeros` for asymmetric schemes

    Token-local granularities (per_token, per_token_head, per_group, per_block<1 x c>) compute the
    scales of the new tokens and write them. Static granularities (per_tensor, per_head,
    per_channel) read calibrated scales. `per_block<r x c>` with r > 1 is rejected: a block's
    scale would depend on tokens not yet appended.

    `hadamard`: each head's row of D is rotated, x ← x·H with H the normalized Walsh–Hadamard
    matrix of order D (a power of two), before its scale and codes are computed — the K/V side
    of `attn.attention` with `hadamard`. Non-finite inputs become 0 before the rotation (a
    rotated ±inf or NaN would reach every element of the row). The scale groups must hold whole
    head rows (per_token, per_token_head, per_block<1 x c> with c a multiple of D, or the static
    granularities).
  }];
  let arguments = (ins Attn_In<Attn_Rank4, "new tokens [B, Snew, H, D]">:$src,
                       Attn_In<MemRefRankOf<[I32], [1]>, "append position per batch">:$positions,
                       Attn_InOut<Attn_Rank4, "quantized cache [B, Smax, H, D]">:$cache,
                       Attn_InOut<AnyMemRef, "scales">:$scales,
                       Attn_InOut<Optional<AnyMemRef>, "zero points">:$zeros,
                       Attn_QuantAttr:$quant,
                       UnitAttr:$hadamard,
                       OptionalAttr<Attn_TargetAttr>:$target);
  let assemblyFormat = [{
    `ins` `(` $src `:` type($src) `)` `positions` `(` $positions `:` type($positions) `)`
    `outs` `(` $cache `,` $scales `:` type($cache) `,` type($scales) `)`
    (`zeros` `(` $zeros^ `:` type($zeros) `)`)? attr-dict
  }];
  let hasVerifier = 1;
}

def Attn_QuantizeAppendPagedOp : Attn_Op<"quantize.append_paged"> {
  let summary = "quantize new K or V rows into a paged cache at the slots of a slot mapping";
  let description = [{
    * `src`:          [T, H, D] new rows (bf16, f16 or f32), one per token of the step
    * `slot_mapping`: [T] i64 or i32, the cache slot of each row: slot = page · P + offset
    * `cache`:        a pool of pages [num_pages, P, H, D] of the scheme's element type
    * `scales`:       stored per page — the scheme's scale shape for [num_pages, P, H, D]
                      (per_token [num_pages, P], per_token_head [num_pages, P, H], per_group<g>
                      [num_pages, P, H, D/g], per_block<1 x c> [num_pages, P, H, D/c]); static
                      granularities keep their shape; `zeros` for asymmetric schemes

    vLLM's `reshape_and_cache_flash`: row t is written to row `slot_mapping[t] mod P` of page
    `slot_mapping[t] / P`, with its scales (and zero points). A row whose slot lies outside
    [0, num_pages · P) — vLLM pads with −1 — is skipped, never written; the rest of the pool is
    untouched. `page_size` must equal the pool's second extent, a power of two from 1 to 256 (the
    layout of `attn.attention`'s `block_table` operand, docs/PagedKV.md).

    A separate op from `attn.quantize.append` because the operands differ in kind, not in a
    flag: rows are flat [T, H, D] (no batch), their destination is a per-row slot (not a
    per-batch position), and the cache is a pool of pages whose count is independent of the
    batch. Granularities, `hadamard` and the arithmetic are `attn.quantize.append`'s;
    `per_block<r x c>` with r > 1 is rejected as there.
  }];
  let arguments = (ins Attn_In<MemRefRankOf<[AnyType], [3]>, "new rows [T, H, D]">:$src,
                       Attn_In<MemRefRankOf<[I32, I64], [1]>, "cache slot per row [T]">:$slot_mapping,
                       Attn_InOut<Attn_Rank4, "paged cache [num_pages, P, H, D]">:$cache,
                       Attn_InOut<AnyMemRef, "scales">:$scales,
                       Attn_InOut<Optional<AnyMemRef>, "zero points">:$zeros,
                       I64Attr:$page_size,
                       Attn_QuantAttr:$quant,
                       UnitAttr:$hadamard,
                       OptionalAttr<Attn_TargetAttr>:$target);
  let assemblyFormat = [{
    `ins` `(` $src `:` type($src) `)` `slot_mapping` `(` $slot_mapping `:` type($slot_mapping) `)`
    `outs` `(` $cache `,` $scales `:` type($cache) `,` type($scales) `)`
    (`zeros` `(` $zeros^ `:` type($zeros) `)`)? attr-dict
  }];
  let hasVerifier = 1;
}

def Attn_QuantizeDynamicOp : Attn_Op<"quantize.dynamic"> {
  let summary = "dynamic quantization of activations (e.g. Q), scales computed from the data";
  let description = [{
    * `src`:    [B, S, H, D] bf16, f16 or f32
    * `dst`:    [B, S, H, D] of the scheme's element type
    * `scales`: the scheme's scale shape; `zeros` for asymmetric schemes

    Only token-local granularities are dynamic: per_token, per_token_head, per_group<g>,
    per_block<1 x c>. `hadamard` rotates each head's row first, as for `attn.quantize.append`
    (the Q side of `attn.attention` with `hadamard`).
  }];
  let arguments = (ins Attn_In<Attn_Rank4, "activations [B, S, H, D]">:$src,
                       Attn_Out<Attn_Rank4, "quantized activations">:$dst,
                       Attn_Out<AnyMemRef, "scales">:$scales,
                       Attn_Out<Optional<AnyMemRef>, "zero points">:$zeros,
                       Attn_QuantAttr:$quant,
                       UnitAttr:$hadamard,
                       OptionalAttr<Attn_TargetAttr>:$target);
  let assemblyFormat = [{
    `ins` `(` $src `:` type($src) `)`
    `outs` `(` $dst `,` $scales `:` type($dst) `,` type($scales) `)`
    (`zeros` `(` $zeros^ `:` type($zeros) `)`)? attr-dict
  }];
  let hasVerifier = 1;
}

def Attn_QuantizeMLAAppendOp : Attn_Op<"quantize.mla_append"> {
  let summary = "quantize new MLA tokens into the FP8 token format of attn.mla_decode";
  let description = [{
    * `src`:       [B, Snew, Dk] new latent tokens (bf16, f16 or f32), Dk = `head_dim_v` + `rope_dim`
    * `positions`: [B] i32, the cache position of the first new token of each batch element
    * `cache`:     [B, T, bytes] i8 with bytes = Dv + 4·Dv/C + 2·rope_dim (656 for 512 + 64, C = 128)

    Each token's first Dv values are split into tiles of C (`kv_quant =
    #attn.quant<f8E4M3FN, per_block<1 x C>>`); a tile's scale is amax / 448 (at least 1e-8) in
    f32, its codes e4m3(x · (1/s)) with ties to even, saturating. Then come the Dv/C scales (f32,
    little-endian) and the rope_dim RoPE values rounded to bf16. NaN quantizes as 0, ±inf
    saturate, neither enters a scale; a NaN RoPE value is stored as the bf16 NaN 0x7FFF. Rows
    outside [0, T) are not written. The layout is `attn.mla_decode`'s (docs/GPUMLA.md).
  }];
  let arguments = (ins Attn_In<MemRefRankOf<[AnyType], [3]>, "new tokens [B, Snew, Dk]">:$src,
                       Attn_In<MemRefRankOf<[I32], [1]>, "append position per batch">:$positions,
                       Attn_InOut<MemRefRankOf<[I8], [3]>, "FP8 token cache [B, T, bytes]">:$cache,
                       I64Attr:$head_dim_v,
                       I64Attr:$rope_dim,
                       Attn_QuantAttr:$kv_quant,
                       OptionalAttr<Attn_TargetAttr>:$target);
  let assemblyFormat = [{
    `ins` `(` $src `:` type($src) `)` `positions` `(` $positions `:` type($positions) `)`
    `outs` `(` $cache `:` type($cache) `)` attr-dict
  }];
  let hasVerifier = 1;
}

#endif // ATTN_QUANTIZE_OPS_TD
