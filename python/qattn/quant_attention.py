"""Decode attention over a quantized K/V cache in the fused form, and the scheme accuracy table.

``fused_decode`` never dequantizes K or V: with x = s·(x̂ − z) per group (docs/QuantSchemes.md),

- scores: S_t = Σ_G s_tG · (Σ_{j∈G} q_j k̂_tj − z_tG · Σ_{j∈G} q_j) — one dot product over the codes
  per group plus the zero-point correction z·Σq, with Σq computed once per query;
- output: O_j = Σ_t w_t,G(j) · v̂_tj − Σ_t w_t,G(j) · z_t,G(j), with w_tG = p_t · s_tG — the codes
  weighted by P·diag(s), minus one correction per group of channels.

Symmetric schemes are the case z = 0. ``dequantized_decode`` is the plain route (dequantize, then
attend); the tests demand both agree to 1e-5. ``python -m qattn.quant_attention`` prints the
accuracy table of docs/QuantSchemes.md (relative error of the attention output against
unquantized attention for each granularity × format × data kind).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Optional

import numpy as np

from . import quant


def _per_group(a: Optional[np.ndarray], shape, gran: str, c: int) -> Optional[np.ndarray]:
    """Scales / zero points as [T, H, G] (one value per group of c channels of a row)."""
    if a is None:
        return None
    return quant._expand(np.asarray(a, np.float64), shape, gran)[:, :, ::c]


def _group_size(gran: str, d: int) -> int:
    kind, arg = quant.parse_granularity(gran)
    return {"per_group": lambda: arg[0], "per_block": lambda: arg[1],
            "per_channel": lambda: 1}.get(kind, lambda: d)()


def fused_decode(q, k_codes, k_scales, k_gran, v_codes, v_scales, v_gran, k_zeros=None,
                 v_zeros=None, softmax_scale: Optional[float] = None) -> np.ndarray:
    """Attention of q [Hq, D] over T quantized keys/values [T, H, D] (GQA: head h of q reads KV
    head h // (Hq / H)) in the fused form; float64 [Hq, D]."""
    q = np.asarray(q, np.float64)
    hq, d = q.shape
    t, h, _ = k_codes.shape
    kv = np.arange(hq) // (hq // h)
    scale = 1 / np.sqrt(d) if softmax_scale is None else softmax_scale
    ck = _group_size(k_gran, d)
    ks = _per_group(k_scales, k_codes.shape, k_gran, ck)  # [T, H, Gk]
    kz = _per_group(k_zeros, k_codes.shape, k_gran, ck)
    kc = np.asarray(k_codes, np.float64).reshape(t, h, d // ck, ck)
    qg = q.reshape(hq, d // ck, ck)
    dots = np.einsum("agj,tagj->atg", qg, kc[:, kv])  # [Hq, T, Gk] over the codes
    if kz is not None:
        dots = dots - kz[:, kv].transpose(1, 0, 2) * qg.sum(axis=2)[:, None, :]
    s = scale * np.einsum("atg,tag->at", dots, ks[:, kv])
    p = np.exp(s - s.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    cv = _group_size(v_gran, d)
    vs = _per_group(v_scales, v_codes.shape, v_gran, cv)  # [T, H, Gv]
    vz = _per_group(v_zeros, v_codes.shape, v_gran, cv)
    w = p[:, :, None] * vs[:, kv].transpose(1, 0, 2)  # [Hq, T, Gv]
    vc = np.asarray(v_codes, np.float64).reshape(t, h, d // cv, cv)
    out = np.einsum("atg,tagj->agj", w, vc[:, kv])
    if vz is not None:
        out = out - np.einsum("atg,tag->ag", w, vz[:, kv])[:, :, None]
    return out.reshape(hq, d)


def dense_decode(q, k, v, softmax_scale: Optional[float] = None) -> np.ndarray:
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    hq, d = q.shape
    kv = np.arange(hq) // (hq // k.shape[1])
    s = np.einsum("ad,tad->at", q, k[:, kv]) * (1 / np.sqrt(d) if softmax_scale is None else softmax_scale)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    return np.einsum("at,tad->ad", p, v[:, kv])


def dequantized_decode(q, k_codes, k_scales, k_gran, v_codes, v_scales, v_gran, k_zeros=None,
                       v_zeros=None, softmax_scale=None) -> np.ndarray:
    k = quant.dequantize(k_codes, k_scales, k_gran, k_zeros)
    v = quant.dequantize(v_codes, v_scales, v_gran, v_zeros)
    return dense_decode(q, k, v, softmax_scale)


# ------------------------------------------------------------------------------------------------
# The accuracy table
# ------------------------------------------------------------------------------------------------
FORMATS = (("i8", True), ("i8", False), ("u8", False), ("e4m3", True))
TABLE_GRANULARITIES = ("per_tensor", "per_head", "per_channel", "per_token", "per_token_head",
                       "per_group<64>", "per_group<32>", "per_block<16x128>")


def make_data(kind: str, t=1024, h=2, hq=8, d=128, queries=4, seed=0):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((queries, hq, d)).astype(np.float32)
    k = rng.standard_normal((t, h, d)).astype(np.float32)
    v = rng.standard_normal((t, h, d)).astype(np.float32)
    if kind == "outliers":  # the channels attn-bench --data outliers scales
        ch = [(j * d // 4 + 3) % d for j in range(4)]
        k[..., ch] *= 20
        v[..., ch] *= 20
    elif kind == "skewed":  # per-channel offsets in K, non-negative V (post-activation-like)
        k += rng.uniform(0, 4, (1, h, d)).astype(np.float32)
        v = np.abs(v) * 2
    elif kind != "gaussian":
        raise ValueError(f"unknown data kind {kind!r}")
    return q, k, v


def scheme_error(q, k, v, dtype: str, symmetric: bool, gran: str) -> float:
    """Relative L2 error of the attention output (all queries) against unquantized attention."""
    if symmetric:
        kc, ks = quant.quantize(k, dtype, gran)
        vc, vs = quant.quantize(v, dtype, gran)
        kz = vz = None
    else:
        kc, ks, kz = quant.quantize_asym(k, dtype, gran)
        vc, vs, vz = quant.quantize_asym(v, dtype, gran)
    num = den = 0.0
    for qi in q:
        got = fused_decode(qi, kc, ks, gran, vc, vs, gran, kz, vz)
        want = dense_decode(qi, k, v)
        num += float(np.sum((got - want) ** 2))
        den += float(np.sum(want ** 2))
    return float(np.sqrt(num / den))


def accuracy_table(seed: int = 0):
    rows = []
    data = {kind: make_data(kind, seed=seed) for kind in ("gaussian", "outliers", "skewed")}
    h, d = data["gaussian"][1].shape[1:]
    for gran in TABLE_GRANULARITIES:
        for dtype, sym in FORMATS:
            row = {"granularity": gran, "format": f"{dtype} {'sym' if sym else 'asym'}",
                   "scale_bytes_per_token": quant.scale_bytes_per_token(h, d, gran, not sym),
                   "code_bytes_per_token": h * d}
            for kind, (q, k, v) in data.items():
                row[kind] = scheme_error(q, k, v, dtype, sym, gran)
            rows.append(row)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="accuracy of each K/V quantization scheme")
    ap.add_argument("--json", help="also write the rows here")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rows = accuracy_table(args.seed)
    print("| granularity | format | Gaussian | outlier channels | skewed | scale bytes / token "
          "(overhead) |\n|---|---|---|---|---|---|")
    for r in rows:
        over = 100 * r["scale_bytes_per_token"] / r["code_bytes_per_token"]
        print(f"| {r['granularity']} | {r['format']} | {r['gaussian']:.2e} | {r['outliers']:.2e} | "
              f"{r['skewed']:.2e} | {r['scale_bytes_per_token']:g} ({over:.1f}%) |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
