"""NoMAD-Attention on the CPU from Python: spec generator, host ISA, and a one-call ``attend``.

``nomad_spec`` writes the MLIR of two kernels (bulk key encoding, one-token attention) for given
shapes; ``attend`` compiles it through ``qattn.build`` (cached) and runs both on NumPy arrays — the
shortest path from recorded keys and trained codebooks to NoMAD attention outputs.
"""

from __future__ import annotations

import platform
from typing import Optional

import numpy as np

from .kernels import build
from .quant import float_array


def host_isa() -> str:
    """The best NoMAD target of this machine: avx512_vnni (AVX-512 BW + VBMI + VNNI) / avx512 /
    avx2 on x86-64, neon on AArch64, else scalar."""
    m = platform.machine().lower()
    if m in ("aarch64", "arm64"):
        return "neon"
    flags = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    if {"avx512f", "avx512bw", "avx512vl", "avx512vbmi", "avx512_vnni"} <= flags:
        return "avx512_vnni"
    if {"avx512f", "avx512bw"} <= flags:
        return "avx512"
    return "avx2" if "avx2" in flags else "scalar"


def nomad_spec(q_heads: int, kv_heads: int, head_dim: int, dsub: int, isa: str,
               centroids: int = 16, values: str = "f32") -> str:
    """Two kernels over dynamic lengths: ``nomad_encode`` (bulk key encoding at an offset) and
    ``nomad_attend`` (one query token over the first ``length`` keys), plus ``nomad_scores``.
    ``values``: the value cache's element type — "f32", "f16", or "i8" (then ``nomad_attend``
    takes per-(token, head) float32 scales [T, H] after the values)."""
    for what, v in (("q_heads", q_heads), ("kv_heads", kv_heads), ("head_dim", head_dim),
                    ("dsub", dsub)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{what} must be a positive int, not {v!r}")
    if isinstance(centroids, bool) or not isinstance(centroids, int) or centroids < 1:
        raise ValueError(f"centroids must be a positive int, not {centroids!r}")
    # Whether the shapes fit together (dsub dividing head_dim, ...) is attn-opt's call.
    if isa not in ISAS:
        raise ValueError(f"unknown isa {isa!r}; expected one of {', '.join(ISAS)}")
    if values not in VALUE_TYPES:
        raise ValueError(f"values must be one of {', '.join(VALUE_TYPES)}, not {values!r}")
    h, d, s, c = kv_heads, head_dim, head_dim // dsub, centroids
    r = 16 if c == 16 else 32
    books = f"memref<{h}x{s}x{c}x{dsub}xf32>"
    codes = f"memref<{h}x?x{s}x{r}xui8>"
    keys = f"memref<?x{h}x{d}xf32>"
    attrs = f"{{pq = #attn.pq<dsub = {dsub}, centroids = {c}>, target = #attn.target<{isa}>}}"
    vals = f"memref<?x{h}x{d}x{values}>"
    scale_arg = scale_use = ""
    v_attrs = attrs
    if values == "i8":
        scale_arg = f", %vs: memref<?x{h}xf32>"
        scale_use = f" v_scale(%vs : memref<?x{h}xf32>)"
        v_attrs = attrs[:-1] + ", v_quant = #attn.quant<i8, per_token_head>}"
    return f"""
func.func @nomad_encode(%k: {keys}, %b: {books}, %pos: index, %codes: {codes}) {{
  attn.pq.encode ins(%k, %b : {keys}, {books}) offset(%pos) outs(%codes : {codes}) {attrs}
  return
}}
func.func @nomad_attend(%q: memref<{q_heads}x{d}xf32>, %b: {books}, %codes: {codes},
                        %v: {vals}{scale_arg}, %len: index, %o: memref<{q_heads}x{d}xf32>) {{
  attn.pq.attention ins(%q, %b, %codes, %v : memref<{q_heads}x{d}xf32>, {books}, {codes}, {vals})
     {scale_use} length(%len) outs(%o : memref<{q_heads}x{d}xf32>) {v_attrs}
  return
}}
func.func @nomad_scores(%q: memref<{q_heads}x{d}xf32>, %b: {books}, %codes: {codes}, %len: index,
                        %lut: memref<{q_heads}x{s}x{c}xui8>, %params: memref<{q_heads}x2xf32>,
                        %scores: memref<{q_heads}x?xf32>) {{
  attn.pq.lut ins(%q, %b : memref<{q_heads}x{d}xf32>, {books})
      outs(%lut, %params : memref<{q_heads}x{s}x{c}xui8>, memref<{q_heads}x2xf32>) {attrs}
  attn.pq.scores ins(%lut, %params, %codes : memref<{q_heads}x{s}x{c}xui8>, memref<{q_heads}x2xf32>, {codes})
      length(%len) outs(%scores : memref<{q_heads}x?xf32>) {attrs}
  return
}}
"""


def attend(q, codebooks, keys, values, length: Optional[int] = None, isa: Optional[str] = None,
           attn_opt=None) -> np.ndarray:
    """NoMAD attention of one query token: q [Hq, D] over keys/values [T, H, D] (float32) with
    codebooks [H, D/dsub, 16, dsub]; the keys are encoded by ``attn.pq.encode`` and attended by
    ``attn.pq.attention`` (softmax scale 1/√D). Returns float32 [Hq, D]; ``length`` (default T)
    limits the keys attended; length 0 gives zeros."""
    q, books, keys, values = (_floats(n, a) for n, a in (("q", q), ("codebooks", codebooks),
                                                         ("keys", keys), ("values", values)))
    if q.ndim != 2 or books.ndim != 4 or keys.ndim != 3 or values.shape != keys.shape:
        raise ValueError("expected q [Hq, D], codebooks [H, S, C, dsub], keys = values [T, H, D]; "
                         f"got q {q.shape}, codebooks {books.shape}, keys {keys.shape}, "
                         f"values {values.shape}")
    h, s, c, dsub = books.shape
    t = keys.shape[0]
    if h < 1 or s < 1 or dsub < 1 or c not in (16, 32, 64):
        raise ValueError(f"codebooks [H, S, C, dsub] need H, S, dsub >= 1 and C in 16, 32, 64; "
                         f"got {books.shape}")
    if q.shape[0] < 1 or q.shape[0] % h or q.shape[1] != s * dsub or keys.shape[1:] != (h, s * dsub):
        raise ValueError(f"q [Hq, D] needs Hq a positive multiple of the codebooks' {h} heads and "
                         f"D = S * dsub = {s * dsub}, keys [T, {h}, {s * dsub}]; got q {q.shape}, "
                         f"keys {keys.shape}")
    if length is not None and (isinstance(length, bool) or
                               not isinstance(length, (int, np.integer)) or not 0 <= length <= t):
        raise ValueError(f"length must be None or an int in [0, {t}], not {length!r}")
    if isa is not None and isa not in ISAS:
        raise ValueError(f"unknown isa {isa!r}; expected one of {', '.join(ISAS)}")
    lib = build(nomad_spec(q.shape[0], h, s * dsub, dsub, isa or host_isa(), c), attn_opt=attn_opt)
    codes = np.zeros((h, max(1, -(-t // 32)), s, 16 if c == 16 else 32), np.uint8)
    lib.nomad_encode(keys, books, 0, codes)
    out = np.empty_like(q)
    lib.nomad_attend(q, books, codes, values, t if length is None else int(length), out)
    return out


VALUE_TYPES = ("f32", "f16", "i8")
ISAS = ("scalar", "avx2", "avx512", "avx512_vbmi", "avx512_vnni", "neon")


def _floats(what: str, a) -> np.ndarray:
    return np.ascontiguousarray(float_array(a, what))
