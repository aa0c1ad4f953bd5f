//===- PQOps.td - NoMAD product-quantization ops -----------*- tablegen -*-===//
//
// What this file is: the product-quantization family of NoMAD-Attention — key encoding into the
// blocked, transposed code cache (`attn.pq.encode`), per-query lookup-table build (`attn.pq.lut`),
// lookup-based scores (`attn.pq.scores`) and a complete one-token decode (`attn.pq.attention`).
// Shapes: H = KV heads, Hq = query heads (a multiple of H: GQA), S = D / dsub sub-quantizers,
// C = centroids, NB = number of 32-key blocks, R = code bytes per block row (`#attn.pq`).
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_PQ_OPS_TD
#define ATTN_PQ_OPS_TD

def Attn_PQEncodeOp : Attn_Op<"pq.encode"> {
  let summary = "encode keys to nearest-centroid codes in the blocked, transposed code cache";
  let description = [{
    * `keys`:      [T, H, D] f32 or f16, the keys to encode (one token or many)
    * `codebooks`: [H, S, C, dsub] f32
    * `offset`:    index, the cache position of the first key
    * `codes`:     [H, NB, S, R] ui8, written at positions offset .. offset + T − 1

    With 16 centroids, byte j of a block row holds key j in its low nibble and key j + 16 in its
    high nibble (j < 16), the layout of the NoMAD paper's appendix A.
  }];
  let arguments = (ins Attn_In<MemRefRankOf<[F32, F16], [3]>, "keys [T, H, D]">:$keys,
                       Attn_In<MemRefRankOf<[F32], [4]>, "codebooks [H, S, C, dsub]">:$codebooks,
                       Index:$offset,
                       Attn_InOut<MemRefRankOf<[UI8], [4]>, "code cache [H, NB, S, R]">:$codes,
                       Attn_PQAttr:$pq,
                       OptionalAttr<Attn_TargetAttr>:$target);
  let assemblyFormat = [{
    `ins` `(` $keys `,` $codebooks `:` type($keys) `,` type($codebooks) `)`
    `offset` `(` $offset `)` `outs` `(` $codes `:` type($codes) `)` attr-dict
  }];
  let hasVerifier = 1;
}

def Attn_PQLutOp : Attn_Op<"pq.lut"> {
  let summary = "build the u8 lookup tables of one query token (dynamic min/max quantization)";
  let description = [{
    * `query`:     [Hq, D] f32
    * `codebooks`: [H, S, C, dsub] f32 (query head h uses KV head h / (Hq / H))
    * `lut`:       [Hq, S, C] ui8, quantized dot products of each sub-query with each centroid
    * `lut_params`:[Hq, 2] f32, (scale, bias) with score ≈ scale · Σ lut + bias
  }];
  let arguments = (ins Attn_In<MemRefRankOf<[F32], [2]>, "query [Hq, D]">:$query,
                       Attn_In<MemRefRankOf<[F32], [4]>, "codebooks [H, S, C, dsub]">:$codebooks,
                       Attn_Out<MemRefRankOf<[UI8], [3]>, "lookup tables [Hq, S, C]">:$lut,
                       Attn_Out<MemRefRankOf<[F32], [2]>, "dequantization (scale, bias) [Hq, 2]">:$lut_params,
                       Attn_PQAttr:$pq,
                       OptionalAttr<Attn_TargetAttr>:$target);
  let assemblyFormat = [{
    `ins` `(` $query `,` $codebooks `:` type($query) `,` type($codebooks) `)`
    `outs` `(` $lut `,` $lut_params `:` type($lut) `,` type($lut_params) `)` attr-dict
  }];
  let hasVerifier = 1;
}

def Attn_PQScoresOp : Attn_Op<"pq.scores"> {
  let summary = "attention scores by in-register lookups, accumulated in u16, dequantized to f32";
  let description = [{
    * `lut` [Hq, S, C] ui8 and `lut_params` [Hq, 2] f32 from `attn.pq.lut`
    * `codes` [H, NB, S, R] ui8
    * `length`: index, number of valid keys (0 ≤ length ≤ 32·NB)
    * `scores` [Hq, T]: f32 scores step · Σ lut + bias, or ui16 for the raw accumulators
      (T ≥ length; keys at or beyond `length` are not written)
  }];
  let arguments = (ins Attn_In<MemRefRankOf<[UI8], [3]>, "lookup tables [Hq, S, C]">:$lut,
                       Attn_In<MemRefRankOf<[F32], [2]>, "(scale, bias) [Hq, 2]">:$lut_params,
                       Attn_In<MemRefRankOf<[UI8], [4]>, "code cache [H, NB, S, R]">:$codes,
                       Index:$length,
                       Attn_Out<MemRefRankOf<[F32, UI16], [2]>, "scores [Hq, T]">:$scores,
                       Attn_PQAttr:$pq,
                       OptionalAttr<Attn_TargetAttr>:$target);
  let assemblyFormat = [{
    `ins` `(` $lut `,` $lut_params `,` $codes `:` type($lut) `,` type($lut_params) `,` type($codes) `)`
    `length` `(` $length `)` `outs` `(` $scores `:` type($scores) `)` attr-dict
  }];
  let hasVerifier = 1;
}

def Attn_PQAttentionOp : Attn_Op<"pq.attention"> {
  let summary = "NoMAD decode attention of one query token: LUT build, lookup scores, softmax, P·V";
  let description = [{
    * `query` [Hq, D] f32, `codebooks` [H, S, C, dsub] f32, `codes` [H, NB, S, R] ui8
    * `values` [T, H, Dv] f32, f16, or i8 with `v_scale` [T, H] f32 (per_token_head)
    * `length`: index, valid keys; `out` [Hq, Dv] f32
  }];
  let arguments = (ins Attn_In<MemRefRankOf<[F32], [2]>, "query [Hq, D]">:$query,
                       Attn_In<MemRefRankOf<[F32], [4]>, "codebooks [H, S, C, dsub]">:$codebooks,
                       Attn_In<MemRefRankOf<[UI8], [4]>, "code cache [H, NB, S, R]">:$codes,
                       Attn_In<MemRefRankOf<[F32, F16, I8], [3]>, "values [T, H, Dv]">:$values,
                       Attn_In<Optional<MemRefRankOf<[F32], [2]>>, "value scales [T, H]">:$v_scale,
                       Index:$length,
                       Attn_Out<MemRefRankOf<[F32], [2]>, "output [Hq, Dv]">:$out,
                       Attn_PQAttr:$pq,
                       OptionalAttr<F32Attr>:$softmax_scale,
                       OptionalAttr<Attn_QuantAttr>:$v_quant,
                       OptionalAttr<Attn_TargetAttr>:$target);
  let assemblyFormat = [{
    `ins` `(` $query `,` $codebooks `,` $codes `,` $values `:` type($query) `,` type($codebooks) `,`
        type($codes) `,` type($values) `)`
    (`v_scale` `(` $v_scale^ `:` type($v_scale) `)`)?
    `length` `(` $length `)` `outs` `(` $out `:` type($out) `)` attr-dict
  }];
  let hasVerifier = 1;
}

#endif // ATTN_PQ_OPS_TD
