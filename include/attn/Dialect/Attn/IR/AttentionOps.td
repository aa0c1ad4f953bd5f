//===- AttentionOps.td - attention and MLA decode ops ------*- tablegen -*-===//
//
// What this file is: the two attention ops — `attn.attention` (prefill and decode over a possibly
// quantized K/V cache; GQA/MQA from the head counts) and `attn.mla_decode` (DeepSeek MLA decode over
// the 656-byte FP8 token format, dense or top-k sparse).
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_ATTENTION_OPS_TD
#define ATTN_ATTENTION_OPS_TD

def Attn_AttentionOp : Attn_Op<"attention", [AttrSizedOperandSegments]> {
  let summary = "scaled dot-product attention (prefill or decode) over a quantized K/V cache";
  let description = [{
    `out = softmax(scale · Q·Kᵀ + bias) · V` per (batch, query head), with

    * `q`:   [B, Sq, Hq, D]    queries (bf16, or i8 with `q_quant` and `q_scale`, or f8E4M3FN)
    * `k`:   [B, Skv, Hkv, D]  keys   (bf16, or the element type of `k_quant` with `k_scale`)
    * `v`:   [B, Skv, Hkv, Dv] values (bf16, or the element type of `v_quant` with `v_scale`)
      (with `block_table`: pages [num_pages, page_size, Hkv, D] and [.., Dv], see below)
    * `out`: [B, Sq, Hq, Dv]   bf16, f16 or f32

    Hq must be a multiple of Hkv: Hq == Hkv is MHA, Hkv == 1 MQA, otherwise GQA with
    Hq / Hkv query heads per KV head. Scales (and zero points for asymmetric schemes) have the shape
    their granularity gives (see `#attn.quant`). Optional operands:

    * `seq_lens` [B] i32: valid K/V length per batch element (the rest of Skv is ignored);
    * `alibi` [Hq] f32: ALiBi slopes, bias = −slope · (query position − key position);
    * `causal`: query i (the last Sq positions of the sequence) sees keys ≤ its position.
    * `sinks` [Hq] f32: attention sinks (gpt-oss), one learned logit s_h per query head that
      joins every row's softmax without a value row: `out = Σ_t e^(x_t − m) · v_t /
      (e^(s_h − m) + Σ_t e^(x_t − m))` over the visible keys' scaled logits x_t. A row with no
      visible key gets 0. With split-KV the sink enters the merged state once.
    * `softcap = c : f32` (Gemma 2, Grok; FlashAttention-3's convention): each logit, after
      the softmax scale and before ALiBi, the masks and the sink, becomes `c · tanh(x / c)` with
      `x = softmax_scale · q·k`, so logits stay within (−c, c); c > 0. Decode only.
    * `window = array<i64: left, right>` (sliding-window attention, FlashAttention-3's and
      FlashInfer's convention; Mistral, Gemma, gpt-oss): the query at position i sees key j
      only if i − left ≤ j ≤ i + right, −1 leaving that side unbounded; the queries are the
      last Sq positions of the sequence, as for `causal`, and with `causal` the right bound
      is min(right, 0). A row that sees no key gets 0 (and `lse` −inf, sinks as above). Both
      bounds are compile-time constants (≥ −1); the kernels skip the key tiles wholly before
      the window (a paged cache's pages there are never read; prefill: before the window of
      each query chunk's first query, and past its last query's right bound). sm_90a only.
    * `lse` (an output, [B, Sq, Hq] f32): the natural log-sum-exp of each row's scaled, masked
      logits, the sink included: `lse = log(e^(s_h) + Σ_t e^(x_t))` (FlashInfer's and
      FlashAttention-3's `softmax_lse`); −inf for a row with no visible key and no sink (where
      `out` is 0). With split-KV it is the merged row's.
    * `block_table` [B, max_blocks] i32 with `page_size = P` (a power of two, 1 to 256): a
      paged K/V cache, as vLLM, FlashInfer and FA3 hold it. `k` and `v` are then a pool of pages
      `[num_pages, P, Hkv, D]` (and `[num_pages, P, Hkv, Dv]`); row b of the table lists the pages
      of sequence b in order, so its key t is row t mod P of page `block_table[b, t / P]`. Its
      K/V length is `seq_lens[b]`, or max_blocks · P without `seq_lens`; entries past the
      pages a length needs are not read. Scales and zero points are stored per page: their
      granularity applies to the pool as to a [num_pages, P, Hkv, D] tensor (per_token_head:
      `[num_pages, P, Hkv]`), and a `per_block<r x c>` block must not straddle pages (r divides
      P). per_tensor, per_head and per_channel scales do not follow the token and keep their
      shape.
    * `cu_seqlens_q` [B + 1] i32 (prefill on sm_90a; FlashAttention's varlen convention): a
      ragged batch, so one launch serves sequences with different numbers of new tokens
      (chunked prefill beside decode rows of one token). `q` and `out` are then
      `[1, T, Hq, D]` and `[1, T, Hq, Dv]`: the new tokens of every sequence packed
      along Sq, sequence b's being rows `cu_seqlens_q[b] ..< cu_seqlens_q[b + 1]`, the last
      positions of its K/V length (`seq_lens[b]`, as for `causal`). B is the number of
      sequences: the block table's rows when paged, else k's dim 0. The kernel takes
      `max_q_len`, at least every sequence's count (FlashAttention's `max_seqlen_q`); rows are
      clamped into [0, T), so entries out of order or past T read and write nothing outside
      `q` and `out`. Query scales follow `q`'s packed shape (per_token_head: `[1, T, Hq]`).
    * `hadamard` (incoherent processing, as in FlashAttention-3's fp8 path and QuaRot): the
      quantized operands hold `Q·H`, `K·H` and `V·H`, where H is the normalized D×D Walsh–Hadamard
      matrix (Sylvester order, H·H = I), applied along head_dim before quantization (by
      `attn.quantize.dynamic` / `attn.quantize.append` with `hadamard`, or by the caller).
      Q·Kᵀ is unchanged by the rotation; the kernel multiplies O by H before it stores it, so
      `out` is the attention of the unrotated tensors. The rotation spreads outlier channels over
      all of head_dim, which per-token and per-block scales otherwise size to the outliers. Needs
      D == Dv, a power of two, and a quantized K or V.

    `softmax_scale` defaults to 1/sqrt(D) (made explicit by `attn-normalize`). `mode` is inferred
    from the element types when absent: float K/V give `bf16`, fp8 K/V `fp8`, integer K/V
    `half_int8` — `full_int8`, which also quantizes P, is only used when written. `decode` takes at most 64 query tokens.

    Example (MQA decode over int8 K/V with per-(token, head) scales):
    ```mlir
    attn.attention decode ins(%q, %k, %v : memref<?x3x16x128xbf16>, memref<?x?x1x128xi8>, memref<?x?x1x128xi8>)
        k_scale(%ks : memref<?x?x1xf32>) v_scale(%vs : memref<?x?x1xf32>)
        outs(%o : memref<?x3x16x128xbf16>)
        {k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>,
         mode = #attn.mode<half_int8>, target = #attn.target<sm_90a>}
    ```

    The same over a paged cache of 16-token pages (2048 pages, up to 64 pages per sequence):
    ```mlir
    attn.attention decode ins(%q, %k, %v : memref<?x1x32x128xbf16>, memref<2048x16x8x128xi8>, memref<2048x16x8x128xi8>)
        k_scale(%ks : memref<2048x16x8xf32>) v_scale(%vs : memref<2048x16x8xf32>)
        seq_lens(%lens : memref<?xi32>) block_table(%pages : memref<?x64xi32>)
        outs(%o : memref<?x1x32x128xbf16>)
        {page_size = 16, k_quant = #attn.quant<i8, per_token_head>,
         v_quant = #attn.quant<i8, per_token_head>, target = #attn.target<sm_90a>}
    ```
  }];
  let arguments = (ins Attn_AttentionKind:$kind,
                       Attn_In<Attn_Rank4, "queries [B, Sq, Hq, D]">:$q,
                       Attn_In<Attn_Rank4, "keys [B, Skv, Hkv, D], or pages [num_pages, page_size, Hkv, D]">:$k,
                       Attn_In<Attn_Rank4, "values [B, Skv, Hkv, Dv], or pages [num_pages, page_size, Hkv, Dv]">:$v,
                       Attn_In<Optional<AnyMemRef>, "query scales">:$q_scale,
                       Attn_In<Optional<AnyMemRef>, "key scales">:$k_scale,
                       Attn_In<Optional<AnyMemRef>, "value scales">:$v_scale,
                       Attn_In<Optional<AnyMemRef>, "key zero points">:$k_zero,
                       Attn_In<Optional<AnyMemRef>, "value zero points">:$v_zero,
                       Attn_In<Optional<MemRefRankOf<[I32], [1]>>, "K/V length per batch">:$seq_lens,
                       Attn_In<Optional<MemRefRankOf<[F32], [1]>>, "ALiBi slopes per query head">:$alibi,
                       Attn_In<Optional<MemRefRankOf<[I32], [2]>>, "pages of each sequence [B, max_blocks]">:$block_table,
                       Attn_In<Optional<MemRefRankOf<[F32], [1]>>, "attention sink logit per query head [Hq]">:$sinks,
                       Attn_In<Optional<MemRefRankOf<[I32], [1]>>, "packed query rows of each sequence [B + 1]">:$cu_seqlens_q,
                       Attn_Out<Attn_Rank4, "output [B, Sq, Hq, Dv]">:$out,
                       Attn_Out<Optional<MemRefRankOf<[F32], [3]>>, "log-sum-exp per row [B, Sq, Hq]">:$lse,
                       UnitAttr:$causal,
                       UnitAttr:$hadamard,
                       OptionalAttr<F32Attr>:$softmax_scale,
                       OptionalAttr<F32Attr>:$softcap,
                       OptionalAttr<DenseI64ArrayAttr>:$window,
                       OptionalAttr<I64Attr>:$page_size,
                       OptionalAttr<Attn_QuantAttr>:$q_quant,
                       OptionalAttr<Attn_QuantAttr>:$k_quant,
                       OptionalAttr<Attn_QuantAttr>:$v_quant,
                       OptionalAttr<Attn_ModeAttr>:$mode,
                       OptionalAttr<Attn_TargetAttr>:$target,
                       OptionalAttr<Attn_ScheduleAttr>:$schedule);
  let assemblyFormat = [{
    $kind `ins` `(` $q `,` $k `,` $v `:` type($q) `,` type($k) `,` type($v) `)`
    (`q_scale` `(` $q_scale^ `:` type($q_scale) `)`)?
    (`k_scale` `(` $k_scale^ `:` type($k_scale) `)`)?
    (`v_scale` `(` $v_scale^ `:` type($v_scale) `)`)?
    (`k_zero` `(` $k_zero^ `:` type($k_zero) `)`)?
    (`v_zero` `(` $v_zero^ `:` type($v_zero) `)`)?
    (`seq_lens` `(` $seq_lens^ `:` type($seq_lens) `)`)?
    (`alibi` `(` $alibi^ `:` type($alibi) `)`)?
    (`block_table` `(` $block_table^ `:` type($block_table) `)`)?
    (`sinks` `(` $sinks^ `:` type($sinks) `)`)?
    (`cu_seqlens_q` `(` $cu_seqlens_q^ `:` type($cu_seqlens_q) `)`)?
    `outs` `(` $out `:` type($out) `)`
    (`lse` `(` $lse^ `:` type($lse) `)`)? attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Whether K/V are a pool of pages addressed through `block_table`.
    bool isPaged() { return static_cast<bool>(getBlockTable()); }
    /// Whether the queries of all sequences are packed along Sq (`cu_seqlens_q`).
    bool isRagged() { return static_cast<bool>(getCuSeqlensQ()); }
    /// B, the sequences: q's dim 0, or with `cu_seqlens_q` the table's rows (paged) or k's
    /// dim 0.
    int64_t getNumSequences();
    /// K/V tokens of one sequence: max_blocks · page_size when paged, else Skv (dynamic when
    /// either extent is).
    int64_t getKVLength();
    int64_t getNumQueryHeads() { return getQ().getType().getDimSize(2); }
    int64_t getNumKVHeads() { return getK().getType().getDimSize(2); }
    int64_t getHeadDim() { return getQ().getType().getDimSize(3); }
    /// Mode written in the spec, or the one its element types imply.
    FailureOr<Mode> getEffectiveMode();
  }];
}

def Attn_MLADecodeOp : Attn_Op<"mla_decode", [AttrSizedOperandSegments]> {
  let summary = "multi-head latent attention decode (DeepSeek MLA), dense or top-k sparse";
  let description = [{
    MQA-like decode: every query head attends to one shared latent K/V head.

    * `q`:     [B, Sq, Hq, Dk] bf16 with Dk = `head_dim_v` + `rope_dim` (576 = 512 + 64)
    * `kv`:    the cache, [B, T, bytes]. Unquantized: bf16 with bytes = Dk. With
               `kv_quant = #attn.quant<f8E4M3FN, per_block<1 x C>>` it is i8 with
               bytes = Dv + 4·Dv/C + 2·rope_dim (656 for 512 + 4·4 + 2·64): Dv e4m3 values,
               Dv/C f32 tile scales, then the rope part in bf16.
    * `indices` (optional): [B, Sq, topk] i32 token indices (sparse attention); −1 entries are skipped.
    * `out`:   [B, Sq, Hq, Dv] bf16.

    K is the whole token (Dk); V is its first Dv values.
  }];
  let arguments = (ins Attn_In<Attn_Rank4, "queries [B, Sq, Hq, Dk]">:$q,
                       Attn_In<MemRefRankOf<[AnyType], [3]>, "K/V cache [B, T, bytes]">:$kv,
                       Attn_In<Optional<MemRefRankOf<[I32], [3]>>, "top-k indices">:$indices,
                       Attn_In<Optional<MemRefRankOf<[I32], [1]>>, "cache length per batch">:$seq_lens,
                       Attn_Out<Attn_Rank4, "output [B, Sq, Hq, Dv]">:$out,
                       I64Attr:$head_dim_v,
                       I64Attr:$rope_dim,
                       UnitAttr:$causal,
                       OptionalAttr<F32Attr>:$softmax_scale,
                       OptionalAttr<Attn_QuantAttr>:$kv_quant,
                       OptionalAttr<Attn_TargetAttr>:$target,
                       OptionalAttr<Attn_ScheduleAttr>:$schedule);
  let assemblyFormat = [{
    `ins` `(` $q `,` $kv `:` type($q) `,` type($kv) `)`
    (`indices` `(` $indices^ `:` type($indices) `)`)?
    (`seq_lens` `(` $seq_lens^ `:` type($seq_lens) `)`)?
    `outs` `(` $out `:` type($out) `)` attr-dict
  }];
  let hasVerifier = 1;
}

#endif // ATTN_ATTENTION_OPS_TD
