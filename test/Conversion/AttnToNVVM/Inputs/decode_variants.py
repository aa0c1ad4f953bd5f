#!/usr/bin/env python3
"""What this file is: the grid of decode variants the sm_90a lowering must assemble — every KV type
(i8 per_token_head, f8E4M3FN per_token, bf16) x head ratio (MQA 16:1, GQA 8:1 and 4:1, MHA 1:1) x
head_dim (64, 128, 256), with q_len, causal, ALiBi and seq_lens varied across the grid, plus
q_len 1..8 on one shape, int8 queries (i8q: Q·Kᵀ on s8 WGMMA, head_dim 128; a few at 64, as
for fp8 and full_int8), and asymmetric caches (i8a: i8 with per_token_head zero points; u8a: ui8
with per_token zero points), int8 queries with one scale per token (i8qt: per_token Q and K,
per_tensor V), and prefill (pf_*: the same kernel over query chunks; bf16 — by default on three
consumer warpgroups (*_w3: that schedule written out), *_nopp with FA3's intra-warpgroup
overlap but no pingpong, *_noov with neither, *_ov2 with the overlap on two stages —, and
half-int8 with int8 queries, also on three consumers by default, *_ov with the overlap (i8qh:
per_head V, its scale folded into O's rescale; i8qb: per_block K and V, one scale per tile);
full_int8 (fi8q, fi8qb: per_block K/V);
fp8 with e4m3 queries — f8q: per_block scales,
f8qt: per_token_head Q and K, per_head V; *_pers with FA3's persistent grid, *_one with one CTA
per work item); *_had: Q, K and V rotated by the Walsh–Hadamard matrix (`hadamard`, O rotated
back in the kernel); *_sinks / *_lse: attention sinks (one logit per query head) and the
log-sum-exp output; *_softcap: logits capped to c · tanh(x / c). Writes one
spec per variant into DIR (used by ptxas-variants.test and by scripts/gpu-decode to build what the
GPU runs)."""
import itertools
import os
import sys

RATIOS = {"mqa16": (16, 1), "gqa8": (32, 4), "gqa4": (16, 4), "mha": (8, 8)}
KV = {"i8": ("i8", "per_token_head"), "fp8": ("f8E4M3FN", "per_token"), "bf16": ("bf16", None),
      "i8q": ("i8", "per_token_head"), "i8a": ("i8", "per_token_head"),
      "u8a": ("ui8", "per_token"),
      # fp8 prefill: (Q, K, V) granularities.
      "f8q": ("f8E4M3FN", ("per_block<64x128>", "per_block<128x128>", "per_block<256x128>")),
      "f8qt": ("f8E4M3FN", ("per_token_head", "per_token_head", "per_head")),
      # full_int8 prefill (P·V on s8 too): per_token_head K and V, or per_block<128x128>.
      "fi8q": ("i8", ("per_token_head", "per_token_head", "per_token_head")),
      "fi8qb": ("i8", ("per_token_head", "per_block<128x128>", "per_block<128x128>")),
      # half-int8 prefill with one V scale per tile (and one K scale per tile: i8qb).
      "i8qh": ("i8", ("per_token_head", "per_token_head", "per_head")),
      "i8qb": ("i8", ("per_token_head", "per_block<128x128>", "per_block<256x128>")),
      "i8qb64": ("i8", ("per_token_head", "per_block<128x64>", "per_block<256x64>")),
      # head_dim 64 forms of f8q and fi8qb
      "f8q64": ("f8E4M3FN", ("per_block<64x64>", "per_block<128x64>", "per_block<256x64>")),
      "fi8qb64": ("i8", ("per_token_head", "per_block<128x64>", "per_block<128x64>")),
      # int8 queries with one scale per token for all its heads (vLLM's dynamic activation
      # scales), per_token K, one V scale: the tutorial's half-int8 spec.
      "i8qt": ("i8", ("per_token", "per_token", "per_tensor"))}
I8Q = ("i8q", "fi8q", "fi8qb", "fi8qb64", "i8qh", "i8qb", "i8qb64", "i8qt")  # int8 queries
ASYM = ("i8a", "u8a")


def scale_type(gran, s, h):
    """The scale memref of a granularity for a [B, s, h, D] operand (s: a size or '?')."""
    if gran == "per_token":
        return f"memref<?x{s}xf32>"
    if gran == "per_token_head":
        return f"memref<?x{s}x{h}xf32>"
    if gran == "per_head":
        return f"memref<{h}xf32>"
    if gran == "per_tensor":
        return "memref<1xf32>"
    rows = int(gran[len("per_block<"):].split("x")[0])  # per_block<r x D>: [B, ceil(s/r), h, 1]
    return f"memref<?x{'?' if s == '?' else -(-s // rows)}x{h}x1xf32>"


def spec(name, kv, hq, hkv, d, sq, causal=False, alibi=False, lens=True, kind="decode",
         schedule=None, hadamard=False, sinks=False, lse=False, softcap=None):
    elem, gran = KV[kv]
    o = f"memref<?x{sq}x{hq}x{d}xbf16>"
    q = o.replace("bf16", "i8") if kv in I8Q else o
    if isinstance(gran, tuple):
        q = o.replace("bf16", elem)
        qgran, gran, vgran = gran
    else:
        qgran, vgran = "per_token_head", gran
    k = f"memref<?x?x{hkv}x{d}x{elem}>"
    args = [f"%q: {q}", f"%k: {k}", f"%v: {k}"]
    ops = f"  attn.attention {kind} ins(%q, %k, %v : {q}, {k}, {k})\n"
    attrs = ["target = #attn.target<sm_90a>"]
    if schedule:
        attrs.append(f"schedule = #attn.schedule<{schedule}>")
    if kv.startswith("fi8q"):
        attrs.append("mode = #attn.mode<full_int8>")
    if kv in I8Q or kv.startswith("f8q"):
        qs = scale_type(qgran, sq, hq)
        args.append(f"%qs: {qs}")
        ops += f"      q_scale(%qs : {qs})\n"
        attrs.append(f"q_quant = #attn.quant<{elem}, {qgran}>")
    if gran:
        st, vt = scale_type(gran, "?", hkv), scale_type(vgran, "?", hkv)
        args += [f"%ks: {st}", f"%vs: {vt}"]
        ops += f"      k_scale(%ks : {st}) v_scale(%vs : {vt})\n"
        asym = ", asymmetric" if kv in ASYM else ""
        if asym:
            zt = st.replace("f32", elem)
            args += [f"%kz: {zt}", f"%vz: {zt}"]
            ops += f"      k_zero(%kz : {zt}) v_zero(%vz : {zt})\n"
        attrs += [f"k_quant = #attn.quant<{elem}, {gran}{asym}>",
                  f"v_quant = #attn.quant<{elem}, {vgran}{asym}>"]
    if lens:
        args.append("%lens: memref<?xi32>")
        ops += "      seq_lens(%lens : memref<?xi32>)\n"
    if alibi:
        args.append(f"%slopes: memref<{hq}xf32>")
        ops += f"      alibi(%slopes : memref<{hq}xf32>)\n"
    if sinks:
        args.append(f"%sinks: memref<{hq}xf32>")
        ops += f"      sinks(%sinks : memref<{hq}xf32>)\n"
    if softcap:
        attrs.append(f"softcap = {softcap} : f32")
    if hadamard:
        attrs.insert(0, "hadamard")
    if causal:
        attrs.insert(0, "causal")
    args.append(f"%o: {o}")
    lse_out = ""
    if lse:
        args.append(f"%lse: memref<?x{sq}x{hq}xf32>")
        lse_out = f" lse(%lse : memref<?x{sq}x{hq}xf32>)"
    ops += f"      outs(%o : {o}){lse_out}\n      {{{', '.join(attrs)}}}\n"
    return f"func.func @{name}({', '.join(args)}) {{\n{ops}  return\n}}\n"


def variants():
    out = []
    for i, (kv, (rname, (hq, hkv)), d) in enumerate(
            itertools.product(("i8", "fp8", "bf16"), RATIOS.items(), (64, 128, 256))):
        sq = (1, 3, 2, 4)[i % 4] if hq // hkv > 1 else (1, 2)[i % 2]
        out.append((f"{kv}_{rname}_d{d}_q{sq}", kv, hq, hkv, d, sq, i % 2 == 0, i % 3 == 0, i % 4 != 3))
    for sq in range(1, 9):
        out.append((f"i8_mqa16_d128_q{sq}_causal", "i8", 16, 1, 128, sq, True, False, True))
    for i, (rname, (hq, hkv)) in enumerate(RATIOS.items()):
        sq = (3, 2, 4, 1)[i]
        out.append((f"i8q_{rname}_d128_q{sq}", "i8q", hq, hkv, 128, sq, i % 2 == 0, i == 1, i != 3))
    out.append(("i8q_mqa16_d128_q8_causal", "i8q", 16, 1, 128, 8, True, False, True))
    # per_token query scales: GQA 8:1 at q_len 4 packs 8 heads of 4 tokens, so a consumer
    # thread's two rows (r, r + 8) belong to different tokens.
    out.append(("i8qt_gqa8_d128_q4_causal", "i8qt", 32, 4, 128, 4, True, True, True))
    # Two CTAs per SM (one producer + one consumer warpgroup, tile_n 64).
    out.append(("i8q_mqa16_d128_q3_2cta", "i8q", 16, 1, 128, 3, True, False, True, "decode",
                "ctas_per_sm = 2"))
    out.append(("i8q_gqa4_d128_q2_2cta", "i8q", 16, 4, 128, 2, False, True, False, "decode",
                "ctas_per_sm = 2"))
    for i, ((rname, (hq, hkv)), d) in enumerate(zip(RATIOS.items(), (128, 64, 256, 128))):
        sq = (3, 2, 1, 2)[i]
        out.append((f"i8a_{rname}_d{d}_q{sq}", "i8a", hq, hkv, d, sq, i % 2 == 0, i == 2, i != 3))
    out.append(("u8a_mqa16_d128_q3", "u8a", 16, 1, 128, 3, True, False, True))
    out.append(("u8a_gqa4_d64_q1", "u8a", 16, 4, 64, 1, False, True, False))
    # Prefill: q_len tokens in chunks of 64 / pack; lengths not a chunk or tile multiple.
    for name, kv, (hq, hkv), d, sq, causal, alibi, lens in [
            ("pf_bf16_mha_d128_q200_causal", "bf16", (8, 8), 128, 200, True, False, True),
            ("pf_bf16_gqa8_d64_q130_causal", "bf16", (32, 4), 64, 130, True, True, False),
            ("pf_bf16_mqa16_d128_q77", "bf16", (16, 1), 128, 77, False, False, True),
            ("pf_bf16_gqa4_d256_q65_causal", "bf16", (16, 4), 256, 65, True, False, False),
            ("pf_i8q_mqa16_d128_q100_causal", "i8q", (16, 1), 128, 100, True, False, True),
            ("pf_i8q_gqa4_d128_q64", "i8q", (16, 4), 128, 64, False, False, False),
            ("pf_i8q_mha_d128_q129_causal", "i8q", (4, 4), 128, 129, True, True, True),
            ("pf_i8qh_mqa16_d128_q100_causal", "i8qh", (16, 1), 128, 100, True, False, True),
            ("pf_i8qb_mha_d128_q129_causal", "i8qb", (4, 4), 128, 129, True, True, True),
            ("pf_i8qb_gqa4_d128_q300", "i8qb", (16, 4), 128, 300, False, False, True)]:
        out.append((name, kv, hq, hkv, d, sq, causal, alibi, lens, "prefill"))
    # bf16 prefill defaults to FA3's intra-warpgroup overlap on three stages: the same shapes
    # without it (*_noov), and with it on two stages (*_ov2).
    for name, (hq, hkv), d, sq, causal, alibi, lens, sched in [
            ("pf_bf16_mha_d128_q200_causal_noov", (8, 8), 128, 200, True, False, True, "false, stages = 2"),
            ("pf_bf16_gqa8_d64_q130_causal_noov", (32, 4), 64, 130, True, True, False, "false, stages = 2"),
            ("pf_bf16_mqa16_d128_q77_ov2", (16, 1), 128, 77, False, False, True, "true, stages = 2"),
            ("pf_bf16_gqa4_d256_q65_causal_noov", (16, 4), 256, 65, True, False, False, "false, stages = 2")]:
        out.append((name, "bf16", hq, hkv, d, sq, causal, alibi, lens, "prefill",
                    f"intra_wg_overlap = {sched}"))
    # bf16 defaults to FA3's pingpong on top of the overlap (two consumers): without it.
    for name, (hq, hkv), d, sq, causal, alibi, lens in [
            ("pf_bf16_mha_d128_q200_causal_nopp", (8, 8), 128, 200, True, False, True),
            ("pf_bf16_gqa8_d64_q130_causal_nopp", (32, 4), 64, 130, True, True, False)]:
        out.append((name, "bf16", hq, hkv, d, sq, causal, alibi, lens, "prefill", "pingpong = false"))
    # Three consumer warpgroups (192 query rows per CTA; no overlap, two stages): the default for
    # bf16 and fp8, written out.
    w3 = ("intra_wg_overlap = false, pingpong = false, stages = 2, roles = [producer<warpgroups = 1, "
          "regs = 32>, consumer<warpgroups = 3, regs = 160>]")
    for name, (hq, hkv), d, sq, causal, alibi, lens in [
            ("pf_bf16_mqa16_d128_q77_w3", (16, 1), 128, 77, False, False, True),
            ("pf_bf16_mha_d128_q200_causal_w3", (8, 8), 128, 200, True, False, True),
            ("pf_bf16_gqa8_d64_q130_causal_w3", (32, 4), 64, 130, True, True, False)]:
        out.append((name, "bf16", hq, hkv, d, sq, causal, alibi, lens, "prefill", w3))
    # Half-int8 defaults to three consumers too: the shapes its other variants do
    # not cover — per_block K and V on MQA 16:1, causal, and per_head V on GQA 4:1.
    for name, kv, (hq, hkv), sq, causal, alibi, lens in [
            ("pf_i8qb_mqa16_d128_q100_causal", "i8qb", (16, 1), 100, True, False, True),
            ("pf_i8qh_gqa4_d128_q64", "i8qh", (16, 4), 64, False, False, True)]:
        out.append((name, kv, hq, hkv, 128, sq, causal, alibi, lens, "prefill"))
    # half-int8 with the overlap: one producer warpgroup (it converts only V; 40 registers), consumers of 232.
    roles = "roles = [producer<warpgroups = 1, regs = 40>, consumer<warpgroups = 2, regs = 232>]"
    for name, (hq, hkv), sq, causal, alibi, lens in [
            ("pf_i8q_mqa16_d128_q100_causal_ov", (16, 1), 100, True, False, True),
            ("pf_i8q_gqa4_d128_q64_ov", (16, 4), 64, False, True, False)]:
        out.append((name, "i8q", hq, hkv, 128, sq, causal, alibi, lens, "prefill",
                    f"intra_wg_overlap = true, {roles}"))
    # half-int8 on two consumers without the overlap (FA3's schedule, on request).
    out.append(("pf_i8qh_gqa4_d128_q64_noov", "i8qh", 16, 4, 128, 64, False, False, True,
                "prefill", "intra_wg_overlap = false, stages = 2"))
    out.append(("pf_i8qb_mqa16_d128_q100_causal_noov", "i8qb", 16, 1, 128, 100, True, False, True,
                "prefill", "intra_wg_overlap = false, stages = 2"))
    # per_token query scales (the tutorial's spec): its schedule (overlap and pingpong on two
    # stages), and the default on GQA 4:1 (two tokens per 8 rows).
    out.append(("pf_i8qt_mqa16_d128_q100_causal_ov", "i8qt", 16, 1, 128, 100, True, False, True,
                "prefill", "intra_wg_overlap = true, pingpong = true, stages = 2, "
                + roles))
    out.append(("pf_i8qt_gqa4_d128_q77", "i8qt", 16, 4, 128, 77, False, True, False, "prefill"))
    # fp8 (e4m3 GEMMs, V transposed by the producer): the default schedule (overlap and
    # pingpong), without pingpong, and without the overlap on two stages.
    for name, kv, (hq, hkv), sq, causal, alibi, lens, sched in [
            ("pf_f8q_mqa16_d128_q100_causal", "f8q", (16, 1), 100, True, False, True, None),
            ("pf_f8q_gqa4_d128_q64", "f8q", (16, 4), 64, False, True, False, None),
            ("pf_f8qt_mha_d128_q129_causal", "f8qt", (4, 4), 129, True, False, True, None),
            ("pf_f8q_mha_d128_q200_causal_nopp", "f8q", (8, 8), 200, True, False, True,
             "pingpong = false"),
            ("pf_f8q_mqa16_d128_q77_noov", "f8q", (16, 1), 77, False, False, True,
             "intra_wg_overlap = false, stages = 2")]:
        out.append((name, kv, hq, hkv, 128, sq, causal, alibi, lens, "prefill", sched))
    # full_int8 (both GEMMs on s8; P quantized to u8 per row and tile, V transposed by the
    # producer): the default schedule (no overlap: it spills), three stages, per_block K/V.
    for name, kv, (hq, hkv), sq, causal, alibi, lens, sched in [
            ("pf_fi8q_mqa16_d128_q100_causal", "fi8q", (16, 1), 100, True, False, True, None),
            ("pf_fi8q_mha_d128_q129_causal", "fi8q", (4, 4), 129, True, True, True, None),
            ("pf_fi8qb_gqa4_d128_q64", "fi8qb", (16, 4), 64, False, False, False, None),
            ("pf_fi8q_mqa16_d128_q77_s3", "fi8q", (16, 1), 77, False, False, True, "stages = 3")]:
        out.append((name, kv, hq, hkv, 128, sq, causal, alibi, lens, "prefill", sched))
    # FA3's persistent grid (one CTA per SM walks the work items): every producer kind — bf16
    # (direct, and head_dim 256 with one consumer), fp8 (transposing), half-int8 converting K
    # and V, and reading K from the stage (overlap).
    for name, kv, (hq, hkv), d, sq, causal, alibi, lens, sched in [
            ("pf_bf16_mha_d128_q200_causal_pers", "bf16", (8, 8), 128, 200, True, False, True, ""),
            ("pf_bf16_gqa8_d64_q130_causal_pers", "bf16", (32, 4), 64, 130, True, True, False, ""),
            ("pf_bf16_gqa4_d256_q65_causal_pers", "bf16", (16, 4), 256, 65, True, False, False, ""),
            ("pf_f8q_mqa16_d128_q100_causal_pers", "f8q", (16, 1), 128, 100, True, False, True, ""),
            ("pf_i8q_mha_d128_q129_causal_pers", "i8q", (4, 4), 128, 129, True, True, True, ""),
            ("pf_i8qb_gqa4_d128_q300_pers", "i8qb", (16, 4), 128, 300, False, False, True, ""),
            ("pf_i8q_gqa4_d128_q64_ov_pers", "i8q", (16, 4), 128, 64, False, False, False,
             f", intra_wg_overlap = true, {roles}")]:
        out.append((name, kv, hq, hkv, d, sq, causal, alibi, lens, "prefill",
                    f"persistent = true{sched}"))
    # The three-consumer default is the persistent grid up to 2048 keys (4096
    # for causal fp8 and tile-scaled half-int8), so the static q_len of the variants above picks
    # it: one CTA per item on three consumers, written out.
    for name, kv, (hq, hkv), sq, causal, alibi, lens in [
            ("pf_f8q_mqa16_d128_q100_causal_one", "f8q", (16, 1), 100, True, False, True),
            ("pf_i8qb_mqa16_d128_q100_causal_one", "i8qb", (16, 1), 100, True, False, True),
            ("pf_i8qt_gqa4_d128_q77_one", "i8qt", (16, 4), 77, False, True, False)]:
        out.append((name, kv, hq, hkv, 128, sq, causal, alibi, lens, "prefill",
                    "persistent = false"))
    # `hadamard`: every quantized kind, decode (head_dim 64, 128, 256; split-KV) and prefill.
    for name, kv, (hq, hkv), d, sq, causal, alibi, lens, kind, sched in [
            ("i8_mqa16_d128_q3_had", "i8", (16, 1), 128, 3, True, False, True, "decode", None),
            ("fp8_gqa8_d256_q2_had", "fp8", (32, 4), 256, 2, False, True, True, "decode", None),
            ("i8q_gqa4_d128_q1_had", "i8q", (16, 4), 128, 1, False, False, False, "decode", None),
            ("i8a_mha_d64_q2_had", "i8a", (8, 8), 64, 2, True, False, True, "decode", None),
            ("pf_i8q_mha_d128_q129_causal_had", "i8q", (4, 4), 128, 129, True, True, True,
             "prefill", None),
            ("pf_i8qb_mqa16_d128_q100_causal_had", "i8qb", (16, 1), 128, 100, True, False, True,
             "prefill", None),
            ("pf_i8qb_gqa4_d128_q300_had", "i8qb", (16, 4), 128, 300, False, False, True,
             "prefill", None),
            ("pf_i8qb_gqa4_d128_q300_pers_had", "i8qb", (16, 4), 128, 300, False, False, True,
             "prefill", "persistent = true"),
            ("pf_f8q_gqa4_d128_q64_had", "f8q", (16, 4), 128, 64, False, True, False,
             "prefill", None),
            ("pf_fi8qb_gqa4_d128_q64_had", "fi8qb", (16, 4), 128, 64, False, False, False,
             "prefill", None)]:
        out.append((name, kv, hq, hkv, d, sq, causal, alibi, lens, kind, sched, True))
    # int8 queries at head_dim 64: Q and the copied K in 128-byte swizzle rows half
    # filled, two s8 K-steps per Q·Kᵀ; decode, and prefill on the default three consumers.
    for name, kv, (hq, hkv), sq, causal, alibi, lens, kind, had in [
            ("i8q_gqa8_d64_q3", "i8q", (32, 4), 3, True, False, True, "decode", False),
            ("pf_i8q_gqa4_d64_q100_causal", "i8q", (16, 4), 100, True, True, True, "prefill", False),
            ("pf_i8qb64_mqa16_d64_q77", "i8qb64", (16, 1), 77, False, False, True, "prefill", False),
            ("pf_i8qh_gqa8_d64_q130_causal", "i8qh", (32, 4), 130, True, False, True, "prefill",
             False),
            ("pf_i8qt_mha_d64_q129_causal", "i8qt", (8, 8), 129, True, False, False, "prefill",
             False),
            ("pf_i8q_mqa16_d64_q100_had", "i8q", (16, 1), 100, False, False, True, "prefill", True)]:
        out.append((name, kv, hq, hkv, 64, sq, causal, alibi, lens, kind, None, had))
    # K read from the TMA stage at head_dim 64 (64-byte swizzle; fp8 and full_int8 transpose V
    # from plain 64-byte rows): fp8 on its default three consumers, with rotation, on the
    # persistent grid; full_int8; half-int8 with FA3's overlap.
    for name, kv, (hq, hkv), sq, causal, alibi, lens, sched, had in [
            ("pf_f8q64_mqa16_d64_q100_causal", "f8q64", (16, 1), 100, True, False, True, None,
             False),
            ("pf_f8qt_mha_d64_q129_causal", "f8qt", (8, 8), 129, True, False, True, None, False),
            ("pf_f8q64_gqa8_d64_q130_had", "f8q64", (32, 4), 130, False, False, True, None, True),
            ("pf_f8q64_mqa16_d64_q100_causal_pers", "f8q64", (16, 1), 100, True, False, True,
             "persistent = true", False),
            ("pf_fi8q_gqa4_d64_q77_causal", "fi8q", (16, 4), 77, True, False, True, None, False),
            ("pf_fi8qb64_mqa16_d64_q100", "fi8qb64", (16, 1), 100, False, True, True, None, False),
            ("pf_i8q_mqa16_d64_q100_causal_ov", "i8q", (16, 1), 100, True, False, True,
             "intra_wg_overlap = true", False)]:
        out.append((name, kv, hq, hkv, 64, sq, causal, alibi, lens, "prefill", sched, had))
    # Attention sinks and the log-sum-exp output (decode, every KV kind; split-KV through the
    # cluster merge and the combine kernels; int8 queries with the two-CTA companion).
    for name, kv, (hq, hkv), d, sq, causal, alibi, lens, sched, sinks, lse in [
            ("i8_gqa8_d128_q2_sinks_lse", "i8", (32, 4), 128, 2, True, False, True, None, True,
             True),
            ("bf16_mqa16_d128_q1_sinks", "bf16", (16, 1), 128, 1, False, False, True, None, True,
             False),
            ("fp8_gqa4_d64_q1_lse", "fp8", (16, 4), 64, 1, False, True, False, None, False, True),
            ("i8q_mqa16_d128_q3_sinks_lse", "i8q", (16, 1), 128, 3, True, False, True, None,
             True, True),
            ("i8a_mha_d64_q2_sinks_lse", "i8a", (8, 8), 64, 2, True, False, True, None, True,
             True),
            ("bf16_gqa8_d256_q1_sinks_lse", "bf16", (32, 4), 256, 1, False, False, True, None,
             True, True)]:
        out.append((name, kv, hq, hkv, d, sq, causal, alibi, lens, "decode", sched, False,
                    sinks, lse))
    # Logit soft-capping (tanh.approx on the base-2 logits, before ALiBi and the masks).
    for name, kv, (hq, hkv), d, sq, causal, alibi, lens, sinks, lse in [
            ("bf16_gqa4_d128_q1_softcap", "bf16", (16, 4), 128, 1, False, False, True, False,
             False),
            ("i8_mqa16_d128_q3_softcap", "i8", (16, 1), 128, 3, True, True, True, True, True),
            ("i8q_gqa8_d128_q2_softcap", "i8q", (32, 4), 128, 2, True, False, True, False,
             False)]:
        out.append((name, kv, hq, hkv, d, sq, causal, alibi, lens, "decode", None, False,
                    sinks, lse, 30.0))
    return out


if __name__ == "__main__":
    os.makedirs(sys.argv[1], exist_ok=True)
    for name, *rest in variants():
        with open(os.path.join(sys.argv[1], name + ".mlir"), "w") as f:
            f.write(spec(name, *rest))
    print(len(variants()))
