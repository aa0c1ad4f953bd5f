//===- ComputeOps.td - conversion, GEMM, softmax, merge ----*- tablegen -*-===//
//
// What this file is: the ops that compute on tiles — `attnk.convert_tile` (the only home of
// dequantization), `attnk.wgmma` and `attnk.wgmma_wait`, the online-softmax step, the output
// rescale, the merge of KV splits (through a cluster's distributed shared memory, or in a combine
// kernel) and the tile store.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNK_COMPUTE_OPS_TD
#define ATTNK_COMPUTE_OPS_TD

def AttnKernel_ConvertTileOp : AttnKernel_Op<"convert_tile", [AttrSizedOperandSegments]> {
  let summary = "tile conversion: the only op that dequantizes (int8 / uint8 / e4m3 → bf16 / f16)";
  let description = [{
    Converts a tile of codes to a 16-bit float type, applying the scales and zero points of
    its `#attn.quant` schemes (`x = s · (q − z)`, one scale per group of the granularity), or
    applies scales to an accumulator. Where it runs is given by its operand types:

    * shared memory → shared memory (`into`): the producer converts a stage of codes into a
      stage of a second ring (half-int8's K and V; with `transpose`, the K-major copy of V that
      8-bit WGMMAs need);
    * shared memory or registers → `!attnk.frag`: a consumer converts into the register A
      operand of a WGMMA;
    * `!attnk.acc` → `!attnk.acc` with `part = scales`: the scales alone, on an accumulator —
      an s32 Q·Kᵀ times the Q and K scales (two schemes), or O times a per-head V scale whose
      codes a `part = codes` conversion turned into floats unscaled.

    `part`: `full` (codes and scales, the default), `codes` (codes to floats, zero points
    subtracted, scales left to a later `part = scales`), `scales`. There is one scale operand
    per scheme (memref, vector or stage of the scheme's scale type) and one zero-point operand
    per asymmetric scheme (of the code type; a stage → stage conversion also takes it as one
    f32 per thread of `role`, thread t's being the zero point of the tile's row t, which the
    lowering stages as that row's constant). Without `quant` the op is a plain element-type
    or layout conversion: a quantize kernel's loaded chunks (`vector<chunks x V x bf16>`,
    f16 or f32) widen to the `!attnk.groups<C x f32>` that `attnk.group_scales` and
    `attnk.quantize_tile` read (quantization itself is `attnk.quantize_tile`), and a
    contiguous f32 groups value rounds to contiguous bf16 groups (round to nearest even, NaN
    as 0x7FFF: MLA's RoPE part).

    A stage → stage conversion is run by the warpgroups of `role` (the producer's, whose
    register budget decides how many 16-byte chunks each thread keeps in flight); with
    `rows(%n)`, rows at or past `%n` (keys past the sequence end) become zeros, so that a
    NaN or Inf the cache holds there cannot reach P·V. Its lowering is the producer's tile
    conversion: exact int8 / uint8 → bf16 through the 2^23 float magic, int8 → f16 through a
    byte permute and one f16x2 subtraction, e4m3 → bf16 through f16x2, a copy of int8 codes
    into a 128-byte-swizzled layout (`i8` into `i8`), and with `transpose` the 8-bit Vᵀ of the
    8-bit P·V (keys permuted within each 16-key group to match P's A fragment). The scales of a
    `part = codes` conversion are staged for the consumers' `part = scales`.

    Example (int8 K with one scale per token and head, converted by the producer):
    ```mlir
    attnk.convert_tile %codes into %kbf scales(%ks : vector<128xf32>)
        {quant = [#attn.quant<i8, per_token_head>]}
        : !attnk.stage<128x128xi8, swizzle_128b> into !attnk.stage<128x128xbf16, swizzle_128b>
    ```

    [PTX ISA: cvt](https://docs.nvidia.com/cuda/parallel-thread-execution/#data-movement-and-conversion-instructions-cvt),
    [prmt](https://docs.nvidia.com/cuda/parallel-thread-execution/#data-movement-and-conversion-instructions-prmt)
  }];
  let arguments = (ins AnyTypeOf<[AttnKernel_StageType, AttnKernel_FragType, AttnKernel_AccType,
                                  VectorOfRankAndType<[2], [BF16, F16, F32]>,
                                  AttnKernel_GroupsType]>:$source,
                       Optional<AttnKernel_StageType>:$dest,
                       Variadic<AnyType>:$scales,
                       Variadic<AnyType>:$zeroPoints,
                       Optional<I32>:$validRows,
                       OptionalAttr<AttnKernel_QuantArray>:$quant,
                       OptionalAttr<AttnKernel_SpecAttr<"WarpRoleAttr", "#attn.role">>:$role,
                       DefaultValuedAttr<AttnKernel_ConvertPartAttr,
                                         "::mlir::attnk::ConvertPart::full">:$part,
                       UnitAttr:$transpose);
  let results = (outs Optional<AnyTypeOf<[AttnKernel_FragType, AttnKernel_AccType,
                                          AttnKernel_GroupsType]>>:$result);
  let assemblyFormat = [{
    $source (`into` $dest^)?
    (`scales` `(` $scales^ `:` qualified(type($scales)) `)`)?
    (`zero_points` `(` $zeroPoints^ `:` qualified(type($zeroPoints)) `)`)?
    (`rows` `(` $validRows^ `)`)?
    attr-dict `:` qualified(type($source)) (`into` qualified(type($dest))^)? (`->` qualified(type($result))^)?
  }];
  let hasVerifier = 1;
}

def AttnKernel_WgmmaOp : AttnKernel_Op<"wgmma", [AllTypesMatch<["acc", "result"]>]> {
  let summary = "warpgroup matrix multiply-accumulate, A from shared memory or registers";
  let description = [{
    `result = acc + A · Bᵀ` on one warpgroup: A is M × K (`!attnk.stage`, read through a matrix
    descriptor, or `!attnk.frag` in registers), B is N × K (`!attnk.stage`, K-major: each of its
    N rows holds K contiguous elements), the accumulator M × N. `transpose_b` reads B as K × N
    (MN-major, e.g. V for P·V) and `transpose_a` an shared-memory A as K × M: both exist for
    16-bit types only. Types as the PTX ISA allows: bf16 × bf16 and f16 × f16 → f32; e4m3/e5m2 ×
    e4m3/e5m2 → f32; i8/ui8 × i8/ui8 → i32 (s32). K is a multiple of the instruction's K (16
    for 16-bit types, 32 for 8-bit ones); M is 64; N a multiple of 8 in [8, 256] (8-bit
    integers: 8, 16, 24 or a multiple of 16). Asynchronous: the result is ready after an
    `attnk.wgmma_wait` that covers it.

    Example:
    ```mlir
    %s = attnk.wgmma %q, %k, %acc
        : !attnk.stage<64x128xbf16, swizzle_128b>, !attnk.stage<128x128xbf16, swizzle_128b>, !attnk.acc<64x128xf32>
    ```

    [PTX ISA: wgmma.mma_async](https://docs.nvidia.com/cuda/parallel-thread-execution/#asynchronous-warpgroup-level-matrix-instructions-wgmma-mma-async)
  }];
  let arguments = (ins AnyTypeOf<[AttnKernel_StageType, AttnKernel_FragType]>:$a,
                       AttnKernel_StageType:$b, AttnKernel_AccType:$acc,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b);
  let results = (outs AttnKernel_AccType:$result);
  let assemblyFormat = [{
    $a `,` $b `,` $acc attr-dict `:` qualified(type($a)) `,` qualified(type($b)) `,`
    qualified(type($acc))
  }];
  let hasVerifier = 1;
}

def AttnKernel_WgmmaWaitOp : AttnKernel_Op<"wgmma_wait", [
    RangedTypesMatchWith<"results match the accumulators", "accs", "results", "$_self">]> {
  let summary = "wait until at most `pending` WGMMA groups are in flight";
  let description = [{
    Commits the WGMMAs issued since the last wait as one group and waits until at most
    `pending` groups are still running; the accumulators it returns are the ones that are then
    ready (a use of an accumulator goes through the wait that covers its WGMMA, so the data
    dependence is in the IR). `pending = 1` is FA3's intra-warpgroup overlap: the P·V of one
    tile runs while the softmax of the next is computed.

    Example: `%s2 = attnk.wgmma_wait %s pending = 0 : !attnk.acc<64x128xf32>`

    [PTX ISA: wgmma.wait_group](https://docs.nvidia.com/cuda/parallel-thread-execution/#asynchronous-warpgroup-level-matrix-instructions-wgmma-wait-group)
  }];
  let arguments = (ins Variadic<AttnKernel_AccType>:$accs, I64Attr:$pending);
  let results = (outs Variadic<AttnKernel_AccType>:$results);
  let assemblyFormat = "$accs `pending` `=` $pending attr-dict `:` qualified(type($accs))";
  let hasVerifier = 1;
}

def AttnKernel_SoftmaxStepOp : AttnKernel_Op<"softmax_step", [
    AttrSizedOperandSegments,
    AllTypesMatch<["rowMax", "rowSum", "newMax", "newSum", "correction"]>]> {
  let summary = "one online-softmax step over a tile of scores";
  let description = [{
    For the scores S (an f32 accumulator, one row per query) of one key tile, with the running
    row maximum m and row sum l:

    * masked scores: columns at or past `key_limit`, and with `causal(d)` the columns past
      `row + d`, become −∞; `alibi(slopes)` adds `slope · (column − row − d)` first;
    * `m' = max(m, rowmax(S))`, `P = exp2(S · scale_log2 − m' · scale_log2)`;
    * `correction = exp2((m − m') · scale_log2)`, `l' = correction · l + rowsum(P)`.

    P comes back as the register A operand of the P·V WGMMA, in its element type;
    `correction` is what `attnk.rescale_output` multiplies O by.

    Example:
    ```mlir
    %p, %m1, %l1, %c = attnk.softmax_step %s, %m0, %l0 scale_log2 = 0.1275 key_limit(%n)
        : !attnk.acc<64x128xf32>, vector<64xf32> -> !attnk.frag<64x128xbf16>
    ```

    [PTX ISA: ex2](https://docs.nvidia.com/cuda/parallel-thread-execution/#floating-point-instructions-ex2),
    [shfl.sync](https://docs.nvidia.com/cuda/parallel-thread-execution/#data-movement-and-conversion-instructions-shfl-sync)
  }];
  let arguments = (ins AttnKernel_AccType:$scores, AttnKernel_RowVector:$rowMax,
                       AttnKernel_RowVector:$rowSum, F32Attr:$scale_log2,
                       Optional<I32>:$keyLimit, Optional<I32>:$diagonal,
                       Optional<AttnKernel_RowVector>:$alibi);
  let results = (outs AttnKernel_FragType:$p, AttnKernel_RowVector:$newMax,
                      AttnKernel_RowVector:$newSum, AttnKernel_RowVector:$correction);
  let assemblyFormat = [{
    $scores `,` $rowMax `,` $rowSum `scale_log2` `=` $scale_log2
    (`key_limit` `(` $keyLimit^ `)`)? (`causal` `(` $diagonal^ `)`)?
    (`alibi` `(` $alibi^ `:` qualified(type($alibi)) `)`)?
    attr-dict `:` qualified(type($scores)) `,` qualified(type($rowMax)) `->` qualified(type($p))
  }];
  let hasVerifier = 1;
}

def AttnKernel_SoftmaxFinishOp : AttnKernel_Op<"softmax_finish", [
    Pure, AllTypesMatch<["acc", "result"]>, AllTypesMatch<["rowSum", "newSum"]>]> {
  let summary = "the end of an online softmax: row sums reduced over the quad, O · H";
  let description = [{
    After the last `attnk.softmax_step` of a warpgroup's tiles each thread holds the sum of
    its own columns of its two rows; the four threads of a quad share a row, so `newSum` is
    the row sum reduced over the quad (`shfl.sync.bfly` 1, then 2). With `hadamard` (V was
    rotated by the unnormalized N × N Walsh–Hadamard matrix H, N = O's columns) O becomes
    O · H first — butterfly stages within the thread's registers and across the quad — and
    the row sums take H's √N, so that O / l undoes the rotation (merges and the epilogue are
    linear in O). `rows`: the thread's rows (`!attnk.rows`), whose column base places its
    registers in O's columns.

    Example:
    ```mlir
    %o1, %l1 = attnk.softmax_finish %o, %l rows(%rows : !attnk.rows)
        : !attnk.acc<64x128xf32>, vector<64xf32>
    ```

    [PTX ISA: shfl.sync](https://docs.nvidia.com/cuda/parallel-thread-execution/#data-movement-and-conversion-instructions-shfl-sync)
  }];
  let arguments = (ins AttnKernel_AccType:$acc, AttnKernel_RowVector:$rowSum,
                       AttnKernel_RowsType:$rows, UnitAttr:$hadamard);
  let results = (outs AttnKernel_AccType:$result, AttnKernel_RowVector:$newSum);
  let assemblyFormat = [{
    $acc `,` $rowSum `rows` `(` $rows `:` qualified(type($rows)) `)` attr-dict `:`
    qualified(type($acc)) `,` qualified(type($rowSum))
  }];
  let hasVerifier = 1;
}

def AttnKernel_SoftmaxSinkOp : AttnKernel_Op<"softmax_sink", [
    AllTypesMatch<["acc", "result"]>,
    AllTypesMatch<["rowMax", "rowSum", "newMax", "newSum"]>]> {
  let summary = "fold the attention sinks into a final softmax state (once per row)";
  let description = [{
    Attention sinks (gpt-oss): each query head h has a learned logit s_h that joins its rows'
    softmax as a key whose value row is 0. On a final state (O unnormalized, row maxima m and
    row sums l, base-2 logits, after `attnk.softmax_finish` and any merge of warpgroups) the
    sink of the row's head, `σ = s_h · log2(e)` (loaded from `sinks` [Hq] f32 at the head of
    the thread's `rows`), enters as
    `m' = max(m, σ)`, `l' = 2^(m − m') · l + 2^(σ − m')`, `O' = 2^(m − m') · O`
    (a row without keys: m' = σ, l' = 1, O' = 0). It enters only where `split` is 0: with
    split-KV the splits' states are merged afterwards (cluster merge or combine kernel), so
    the sink is counted exactly once; the other splits' states pass unchanged.

    Example:
    ```mlir
    %o2, %m2, %l2 = attnk.softmax_sink %o, %m, %l sinks(%s : memref<32xf32>) split(%split)
        rows(%rows : !attnk.rows) : !attnk.acc<64x128xf32>, vector<64xf32>
    ```

    [PTX ISA: ex2](https://docs.nvidia.com/cuda/parallel-thread-execution/#floating-point-instructions-ex2)
  }];
  let arguments = (ins AttnKernel_AccType:$acc, AttnKernel_RowVector:$rowMax,
                       AttnKernel_RowVector:$rowSum,
                       Arg<MemRefRankOf<[F32], [1]>, "sink logit per query head", [MemRead]>:$sinks,
                       I32:$split, AttnKernel_RowsType:$rows);
  let results = (outs AttnKernel_AccType:$result, AttnKernel_RowVector:$newMax,
                      AttnKernel_RowVector:$newSum);
  let assemblyFormat = [{
    $acc `,` $rowMax `,` $rowSum `sinks` `(` $sinks `:` type($sinks) `)` `split` `(` $split `)`
    `rows` `(` $rows `:` qualified(type($rows)) `)` attr-dict `:` qualified(type($acc)) `,`
    qualified(type($rowMax))
  }];
  let hasVerifier = 1;
}

def AttnKernel_RescaleOutputOp : AttnKernel_Op<"rescale_output", [
    Pure, AllTypesMatch<["acc", "result"]>]> {
  let summary = "multiply each row of the output accumulator by a factor (or divide by it)";
  let description = [{
    `result[r, :] = acc[r, :] · factor[r]`: the online softmax's correction before the next
    P·V; with `reciprocal`, `acc[r, :] / factor[r]`: the final normalization by the row sum.

    Example: `%o1 = attnk.rescale_output %o, %c : !attnk.acc<64x128xf32>, vector<64xf32>`
  }];
  let arguments = (ins AttnKernel_AccType:$acc, AttnKernel_RowVector:$factor,
                       UnitAttr:$reciprocal);
  let results = (outs AttnKernel_AccType:$result);
  let assemblyFormat = [{
    $acc `,` $factor attr-dict `:` qualified(type($acc)) `,` qualified(type($factor))
  }];
  let hasVerifier = 1;
}

def AttnKernel_MergeClusterOp : AttnKernel_Op<"merge.cluster", [
    AllTypesMatch<["acc", "result"]>,
    AllTypesMatch<["rowMax", "rowSum", "newMax", "newSum"]>]> {
  let summary = "merge the KV splits of a thread-block cluster through distributed shared memory";
  let description = [{
    Each of the `splits` CTAs of the cluster holds a partial (O, m, l) over its share of the
    keys; the partials are exchanged through distributed shared memory (`mapa` + `st.async`
    completing on the leader's mbarrier) and merged in the leader:
    `m = max_i m_i`, `l = Σ_i exp2((m_i − m) · scale_log2) · l_i`,
    `O = Σ_i exp2((m_i − m) · scale_log2) · O_i`. The results are meaningful in the leader CTA.

    Example:
    ```mlir
    %o2, %m2, %l2 = attnk.merge.cluster %o, %m, %l splits = 2 scale_log2 = 0.1275
        : !attnk.acc<64x128xf32>, vector<64xf32>
    ```

    [PTX ISA: mapa](https://docs.nvidia.com/cuda/parallel-thread-execution/#data-movement-and-conversion-instructions-mapa),
    [st.async](https://docs.nvidia.com/cuda/parallel-thread-execution/#data-movement-and-conversion-instructions-st-async)
  }];
  let arguments = (ins AttnKernel_AccType:$acc, AttnKernel_RowVector:$rowMax,
                       AttnKernel_RowVector:$rowSum, I64Attr:$splits, F32Attr:$scale_log2);
  let results = (outs AttnKernel_AccType:$result, AttnKernel_RowVector:$newMax,
                      AttnKernel_RowVector:$newSum);
  let assemblyFormat = [{
    $acc `,` $rowMax `,` $rowSum `splits` `=` $splits `scale_log2` `=` $scale_log2 attr-dict
    `:` qualified(type($acc)) `,` qualified(type($rowMax))
  }];
  let hasVerifier = 1;
}

def AttnKernel_MergeCombineOp : AttnKernel_Op<"merge.combine"> {
  let summary = "merge the KV-split partials of a workspace and write the output (the combine kernel)";
  let description = [{
    The body of the combine kernel that follows a split-KV attention kernel. Each of the
    `splits` splits of each (batch element, head group) wrote a partial to the workspace: for
    its R = pack · q_len packed rows, the unnormalized output O_s (R × D f32), then the row
    maxima m_s (base-2 logits) and row sums l_s, padded to a multiple of 4 floats. For each
    packed row this op computes `w_s = 2^(m_s − max_s m_s)` (0 for a split without keys),
    `O = Σ_s w_s · O_s / Σ_s w_s · l_s` (0 where the sum is 0) and writes O, rounded to bf16,
    to the output row of that query token and head `[b, t, h, :]`. With `lse` ([batch, q_len,
    heads] f32) it also writes the row's natural log-sum-exp,
    `(max_s m_s + log2(Σ_s w_s · l_s)) · ln 2` (−inf where the sum is 0).

    The grid is (rows, head groups, batch): `narrow` (128 threads) merges four packed rows per
    CTA, one warp each, lane s holding split s's statistics (2 to 16 splits; every split's O
    loads are issued at once); `wide` (512 threads) merges one packed row per CTA, sixteen warps
    each a sixteenth of the splits, the warps' partial sums meeting in shared memory.

    Example:
    ```mlir
    attnk.merge.combine %ws into %out splits(%n) narrow kv_heads = 2 pack = 8
        : memref<?xf32>, memref<?x1x16x128xbf16>
    ```

    [PTX ISA: shfl.sync](https://docs.nvidia.com/cuda/parallel-thread-execution/#data-movement-and-conversion-instructions-shfl-sync)
  }];
  let arguments = (ins Arg<MemRefRankOf<[F32], [1]>, "split partials", [MemRead]>:$workspace,
                       Arg<MemRefRankOf<[BF16], [4]>, "output [batch, q_len, heads, D]",
                           [MemWrite]>:$out,
                       I32:$splits, AttnKernel_CombineFormAttr:$form,
                       I64Attr:$kv_heads, I64Attr:$pack,
                       Arg<Optional<MemRefRankOf<[F32], [3]>>, "log-sum-exp [batch, q_len, heads]",
                           [MemWrite]>:$lse);
  let assemblyFormat = [{
    $workspace `into` $out (`lse` `(` $lse^ `:` type($lse) `)`)? `splits` `(` $splits `)`
    custom<CombineForm>($form) `kv_heads` `=` $kv_heads
    `pack` `=` $pack attr-dict `:` qualified(type($workspace)) `,` qualified(type($out))
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Threads of the combine kernel of this form.
    static int64_t getThreads(CombineForm form);
    /// Dynamic shared memory of the combine kernel of this form for head_dim `d`.
    static int64_t getSharedBytes(CombineForm form, int64_t d);
    /// Splits merged by the narrow form at most (the wide form takes more).
    static constexpr int64_t kNarrowSplits = 16;
    /// Warps of the wide form (one packed row per CTA).
    static constexpr int64_t kWideWarps = 16;
  }];
}

def AttnKernel_StoreTileOp : AttnKernel_Op<"store_tile", [AttrSizedOperandSegments]> {
  let summary = "store an output tile (or one value per row) to global memory";
  let description = [{
    Stores the f32 accumulator, converted to the destination's element type (bf16, f16 or
    f32), with its top-left element at `indices` of the destination and its rows along the
    destination's second-innermost dimension — or a row vector (log-sum-exps, row statistics)
    along the innermost one. Rows at or past `rows(n)` are not written.

    Example:
    ```mlir
    attnk.store_tile %o, %out[%b, %t, %h, %c0] rows(%n)
        : !attnk.acc<64x128xf32>, memref<?x?x16x128xbf16>
    ```

    [PTX ISA: stmatrix](https://docs.nvidia.com/cuda/parallel-thread-execution/#warp-level-matrix-instructions-stmatrix)
  }];
  let arguments = (ins AnyTypeOf<[AttnKernel_AccType, AttnKernel_RowVector]>:$value,
                       Arg<AnyMemRef, "destination", [MemWrite]>:$dest,
                       Variadic<Index>:$indices, Optional<I32>:$rowLimit);
  let assemblyFormat = [{
    $value `,` $dest `[` $indices `]` (`rows` `(` $rowLimit^ `)`)? attr-dict `:`
    qualified(type($value)) `,` qualified(type($dest))
  }];
  let hasVerifier = 1;
}

#endif // ATTNK_COMPUTE_OPS_TD
