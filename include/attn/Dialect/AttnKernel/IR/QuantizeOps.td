//===- QuantizeOps.td - quantization of scale groups -------*- tablegen -*-===//
//
// What this file is: the ops of a quantize kernel (values → codes and scales, the inverse of
// `attnk.convert_tile`): which scale group a lane set handles (`attnk.group_index`), the loads
// of its elements (`attnk.load_groups`; `attnk.convert_tile` widens them to f32), the optional
// Walsh–Hadamard rotation (`attnk.hadamard`), the scales (`attnk.group_scales`: computed from
// the data, or read), the codes (`attnk.quantize_tile`) and the store of codes and scales
// (`attnk.store_groups`), and for row kernels that give a warp one whole token (MLA's cache
// quantization) the guard that resolves the token's source and cache rows (`attnk.token_rows`).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNK_QUANTIZE_OPS_TD
#define ATTNK_QUANTIZE_OPS_TD

def AttnKernel_GroupIndexOp : AttnKernel_Op<"group_index", [Pure]> {
  let summary = "the scale group a lane set of a warp quantizes in one slot";
  let description = [{
    A quantize kernel's CTA (four warps) handles `slots` × 4 × (32 / lanes) consecutive
    scale groups; in slot `slot`, the lanes of rank `lane / lanes` of warp w of CTA x handle
    group `g = ((4x + w) · slots + slot) · (32 / lanes) + lane / lanes` of the
    `batch · new_tokens · groups_per_token` groups. Returns g, the token and the group within
    the token of min(g, last group) (an address that is valid for the tail), and the lane's
    rank among the group's lanes.

    With `whole_tokens` a warp holds one whole token (`slots` = 1, `groups_per_token` · `lanes`
    = 32): warp w of CTA x handles token `4x + w` without clamping (`attnk.token_rows` skips
    tokens past the last), group g = token · groups_per_token + lane / lanes, and the last
    result is the lane's rank among the token's 32 lanes (the lane of the warp).

    Example:
    ```mlir
    %g, %tok, %gin, %r = attnk.group_index %batch, %n slot 0 of 4 lanes = 16 groups_per_token = 8
    %g1, %t1, %gin1, %l1 = attnk.group_index %batch, %n slot 0 of 1 lanes = 8
        groups_per_token = 4 whole_tokens
    ```
  }];
  let arguments = (ins I32:$batch, I32:$newTokens, I64Attr:$slot, I64Attr:$slots,
                       I64Attr:$lanes, I64Attr:$groups_per_token, UnitAttr:$whole_tokens);
  let results = (outs I32:$group, I32:$token, I32:$groupInToken, I32:$laneRank);
  let assemblyFormat = [{
    $batch `,` $newTokens `slot` $slot `of` $slots `lanes` `=` $lanes
    `groups_per_token` `=` $groups_per_token (`whole_tokens` $whole_tokens^)? attr-dict
  }];
  let hasVerifier = 1;
}

def AttnKernel_LoadGroupsOp : AttnKernel_Op<"load_groups", [AttrSizedOperandSegments]> {
  let summary = "load a lane's chunks of one scale group (16-byte loads, read-only cache)";
  let description = [{
    Reads the elements of group `group` of token `token` of `src` ([batch, tokens, heads, D], or
    [tokens, heads, D] for a paged append's flat rows,
    each token's row of heads · D elements split into groups of C) that the lane of rank
    `lane` holds in `!attnk.groups<C x …, lanes = L, vec = V>` order: one V-element vector per
    chunk. The result is the thread's chunks, `vector<chunks x V x ELEM>`; C = chunks · V · L.

    From a token's row (a rank-1 memref, `attnk.token_rows`), without indices: the lane `lane`
    of the warp reads the C / L consecutive elements from `offset + lane · C / L` (16-byte
    vectors) and widens them to f32 as it goes — the result is a contiguous
    `!attnk.groups<C x f32, lanes = L, vec = V, contiguous>` (V: a 16-byte vector's elements).

    Example:
    ```mlir
    %x = attnk.load_groups %src[%tok, %gin] lane(%r) lanes = 16
        : memref<?x?x8x128xbf16> -> vector<1x8xbf16>
    %y = attnk.load_groups %row lane(%l) lanes = 8
        : memref<576xbf16> -> !attnk.groups<128xf32, lanes = 8, vec = 8, contiguous>
    ```
  }];
  let arguments = (ins Arg<AnyTypeOf<[MemRefRankOf<[BF16, F16, F32], [3, 4]>,
                                      MemRefRankOf<[BF16, F16, F32], [1]>]>,
                           "source", [MemRead]>:$src,
                       Optional<I32>:$token, Optional<I32>:$group, I32:$lane, I64Attr:$lanes,
                       DefaultValuedAttr<I64Attr, "0">:$offset);
  let results = (outs AnyTypeOf<[VectorOfRankAndType<[2], [BF16, F16, F32]>,
                                 AttnKernel_GroupsType]>:$result);
  let assemblyFormat = [{
    $src (`[` $token^ `,` $group `]`)? `lane` `(` $lane `)` `lanes` `=` $lanes
    (`offset` `=` $offset^)? attr-dict `:` qualified(type($src)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def AttnKernel_HadamardOp : AttnKernel_Op<"hadamard", [Pure, AllTypesMatch<["tile", "result"]>]> {
  let summary = "rotate each row of `size` elements by the Walsh–Hadamard matrix";
  let description = [{
    `x ← x · H / √size` on each run of `size` consecutive elements of the group (a head's
    row), non-finite values as 0 first: butterflies over register pairs, over lanes
    (`shfl.xor`) and over chunks, bit by bit upwards in qattn.quant.hadamard's order, so the
    values agree to the last bit.

    Example:
    ```mlir
    %y = attnk.hadamard %x lane(%r) size = 128 : !attnk.groups<128xf32, lanes = 16, vec = 8>
    ```
  }];
  let arguments = (ins AttnKernel_GroupsType:$tile, I32:$lane, I64Attr:$size);
  let results = (outs AttnKernel_GroupsType:$result);
  let assemblyFormat = [{
    $tile `lane` `(` $lane `)` `size` `=` $size attr-dict `:` qualified(type($tile))
  }];
  let hasVerifier = 1;
}

def AttnKernel_GroupScalesOp : AttnKernel_Op<"group_scales", [AttrSizedOperandSegments]> {
  let summary = "the scale (and zero point) of a group: from its values, or read";
  let description = [{
    For a scheme whose scales come from the data (token-local granularities): the scale
    `max(amax / q_max, min_scale)` over the group's finite values (asymmetric:
    `max((max − min) / (q_max − q_min), min_scale)` and the zero point
    `clamp(round(q_min − min / s))`), reduced across the group's lanes with shuffles and
    rounded to the scheme's scale type (up one ulp where rounding fell below, so no value
    saturates). For a static scheme (per_tensor, per_head, per_channel): read from `from`
    (and `zero_points`) at the group's head (`[group]`) — per_channel one per element, as a
    groups value. The result is the scale as the codes use it, in f32.

    Example:
    ```mlir
    %s = attnk.group_scales %x {quant = #attn.quant<i8, per_token_head>}
        : !attnk.groups<128xf32, lanes = 16, vec = 8> -> f32
    %s2, %z2 = attnk.group_scales %x[%gin] lane(%r) from(%scale : memref<8xf32>)
        zero_points(%zero : memref<8xi8>) {quant = #attn.quant<i8, per_head, asymmetric>}
        : !attnk.groups<128xf32, lanes = 16, vec = 8> -> f32, f32
    ```
  }];
  let arguments = (ins AttnKernel_GroupsType:$tile, Optional<I32>:$group, Optional<I32>:$lane,
                       Arg<Optional<AnyMemRef>, "scales", [MemRead]>:$scaleSrc,
                       Arg<Optional<AnyMemRef>, "zero points", [MemRead]>:$zeroSrc,
                       AttnKernel_SpecAttr<"QuantAttr", "#attn.quant">:$quant);
  let results = (outs AnyTypeOf<[F32, AttnKernel_GroupsType]>:$scale,
                      Optional<AnyTypeOf<[F32, AttnKernel_GroupsType]>>:$zeroPoint);
  let assemblyFormat = [{
    $tile (`[` $group^ `]`)? (`lane` `(` $lane^ `)`)?
    (`from` `(` $scaleSrc^ `:` qualified(type($scaleSrc)) `)`)?
    (`zero_points` `(` $zeroSrc^ `:` qualified(type($zeroSrc)) `)`)?
    attr-dict `:` qualified(type($tile)) `->` qualified(type($scale))
    (`,` qualified(type($zeroPoint))^)?
  }];
  let hasVerifier = 1;
}

def AttnKernel_QuantizeTileOp : AttnKernel_Op<"quantize_tile", [Pure]> {
  let summary = "quantize a group: values → codes by its scale (and zero point)";
  let description = [{
    The inverse of `attnk.convert_tile`: `q = x · (1/s) (+ z)` with 1/s correctly rounded
    (`rcp.rn`), NaN as 0; i8 / ui8 codes clamped to the scheme's range and rounded half away
    from zero (exactly: `trunc(y + copysign(0.49999997, y))`), e4m3 codes by
    `cvt.rn.satfinite.e4m3x2.f32`. The scale (and zero point) is one f32 per group or, for
    per_channel, a groups value of one per element. The codes' type is the scheme's.

    Example:
    ```mlir
    %q = attnk.quantize_tile %x scales(%s : f32) {quant = #attn.quant<i8, per_token_head>}
        : !attnk.groups<128xf32, lanes = 16, vec = 8> -> !attnk.groups<128xi8, lanes = 16, vec = 8>
    ```

    [PTX ISA: cvt](https://docs.nvidia.com/cuda/parallel-thread-execution/#data-movement-and-conversion-instructions-cvt),
    [rcp](https://docs.nvidia.com/cuda/parallel-thread-execution/#floating-point-instructions-rcp)
  }];
  let arguments = (ins AttnKernel_GroupsType:$tile,
                       AnyTypeOf<[F32, AttnKernel_GroupsType]>:$scale,
                       Optional<AnyTypeOf<[F32, AttnKernel_GroupsType]>>:$zeroPoint,
                       AttnKernel_SpecAttr<"QuantAttr", "#attn.quant">:$quant);
  let results = (outs AttnKernel_GroupsType:$result);
  let assemblyFormat = [{
    $tile `scales` `(` $scale `:` qualified(type($scale)) `)`
    (`zero_points` `(` $zeroPoint^ `:` qualified(type($zeroPoint)) `)`)?
    attr-dict `:` qualified(type($tile)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def AttnKernel_StoreGroupsOp : AttnKernel_Op<"store_groups", [AttrSizedOperandSegments]> {
  let summary = "store a group's codes (and its computed scale and zero point)";
  let description = [{
    Writes the codes of group `group` (index `[token, group in token]`) to row
    `positions[b] + t` (append; without `positions`: row t) of batch element b of `dest`
    ([batch, capacity, heads, D]), where token = b · new_tokens + t; groups past the last
    and rows outside [0, capacity) are not written. With `scale`, the lane of rank 0 also
    writes the scale, rounded to `scale_dest`'s type, at `[b, row, group in token]` (and the
    zero point, as a code).

    With `slots` (a paged cache, `attn.quantize.append_paged`): token t's row is
    `slots[t]` (i64 or i32) of `dest` seen as `capacity` rows ([num_pages, P, heads, D] is
    num_pages · P rows); `tokens(%T, %one)` with one token per batch element; a slot outside
    [0, capacity) is not written, codes nor scales (scales at `[slot, group in token]`).

    Into a token's cache row (a rank-1 i8 memref, `attnk.token_rows`), without indices and
    token counts: lane `lane` of the warp writes its contiguous words at byte
    `offset + lane · (bytes per lane)`, and with `scale` the group's first lane writes the f32
    scale at byte `scale_offset + 4 · lane / lanes` of `scale_dest` (the same row).

    Example:
    ```mlir
    attnk.store_groups %q, %dst[%g, %tok, %gin] lane(%r) tokens(%batch, %n) capacity(%cap)
        positions(%pos : memref<?xi32>) scale(%s into %scales : memref<?x?x8xf32>)
        : !attnk.groups<128xi8, lanes = 16, vec = 8>, memref<?x?x8x128xi8>
    attnk.store_groups %q, %pool[%g, %tok, %gin] lane(%r) tokens(%t, %one) capacity(%rows)
        slots(%slot : memref<?xi64>) scale(%s into %ps : memref<?x16x8xf32>)
        : !attnk.groups<128xi8, lanes = 16, vec = 8>, memref<?x16x8x128xi8>
    attnk.store_groups %q8, %crow lane(%l) scale(%s8 into %crow : memref<656xi8>)
        scale_offset = 512
        : !attnk.groups<128xf8E4M3FN, lanes = 8, vec = 8, contiguous>, memref<656xi8>
    ```
  }];
  let arguments = (ins AttnKernel_GroupsType:$codes,
                       Arg<AnyTypeOf<[MemRefRankOf<[I8, UI8, F8E4M3FN], [4]>,
                                      MemRefRankOf<[I8], [1]>]>, "codes", [MemWrite]>:$dest,
                       Optional<I32>:$group, Optional<I32>:$token, Optional<I32>:$groupInToken,
                       I32:$lane, Optional<I32>:$batch, Optional<I32>:$newTokens,
                       Optional<I32>:$capacity,
                       Arg<Optional<MemRefRankOf<[I32], [1]>>, "positions", [MemRead]>:$positions,
                       Arg<Optional<MemRefRankOf<[I32, I64], [1]>>, "slots", [MemRead]>:$slots,
                       Optional<F32>:$scale,
                       Arg<Optional<AnyMemRef>, "scales", [MemWrite]>:$scaleDest,
                       Optional<F32>:$zeroPoint,
                       Arg<Optional<AnyMemRef>, "zero points", [MemWrite]>:$zeroDest,
                       DefaultValuedAttr<I64Attr, "0">:$offset,
                       DefaultValuedAttr<I64Attr, "0">:$scale_offset);
  let assemblyFormat = [{
    $codes `,` $dest (`[` $group^ `,` $token `,` $groupInToken `]`)? `lane` `(` $lane `)`
    (`tokens` `(` $batch^ `,` $newTokens `)`)? (`capacity` `(` $capacity^ `)`)?
    (`offset` `=` $offset^)?
    (`positions` `(` $positions^ `:` qualified(type($positions)) `)`)?
    (`slots` `(` $slots^ `:` qualified(type($slots)) `)`)?
    (`scale` `(` $scale^ `into` $scaleDest `:` qualified(type($scaleDest)) `)`)?
    (`scale_offset` `=` $scale_offset^)?
    (`zero_point` `(` $zeroPoint^ `into` $zeroDest `:` qualified(type($zeroDest)) `)`)?
    attr-dict `:` qualified(type($codes)) `,` qualified(type($dest))
  }];
  let hasVerifier = 1;
}

def AttnKernel_TokenRowsOp : AttnKernel_Op<"token_rows", [SingleBlock, NoTerminator]> {
  let summary = "run the body on a new token's source row and its cache row, if it has one";
  let description = [{
    For token `token` = b · new_tokens + t of `src` ([batch, new_tokens, Dk]): if it is one of
    the `batch · new_tokens` tokens and its cache row `positions[b] + t` lies in
    [0, capacity), runs the body with the token's row of `src` and row `[b, positions[b] + t]`
    of `cache` ([batch, capacity, bytes], i8) as rank-1 memrefs; otherwise nothing. The warp
    of a `whole_tokens` `attnk.group_index` takes the same branch, so the body may shuffle.

    Example:
    ```mlir
    attnk.token_rows %src[%tok], %cache positions(%pos : memref<?xi32>) tokens(%batch, %n)
        capacity(%cap) : memref<?x?x576xbf16>, memref<?x?x656xi8> {
    ^bb0(%x: memref<576xbf16>, %row: memref<656xi8>):
      ...
    }
    ```
  }];
  let arguments = (ins Arg<MemRefRankOf<[BF16, F16, F32], [3]>, "new tokens", [MemRead]>:$src,
                       I32:$token,
                       Arg<MemRefRankOf<[I8], [3]>, "cache", [MemWrite]>:$cache,
                       Arg<MemRefRankOf<[I32], [1]>, "positions", [MemRead]>:$positions,
                       I32:$batch, I32:$newTokens, I32:$capacity);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $src `[` $token `]` `,` $cache `positions` `(` $positions `:` qualified(type($positions)) `)`
    `tokens` `(` $batch `,` $newTokens `)` `capacity` `(` $capacity `)` attr-dict `:`
    qualified(type($src)) `,` qualified(type($cache)) $body
  }];
  let hasVerifier = 1;
}

#endif // ATTNK_QUANTIZE_OPS_TD
