"""KV-cache schemes for ``LlamaModel.forward(attention=...)``: what each layer's attention reads.

- ``dense`` — float32 keys and values (the model as trained).
- ``QuantizedKV(dtype, granularity)`` — keys and values stored quantized (``qattn.quant``: i8 or
  e4m3 with a scale per group, or bf16) and dequantized before attention; static granularities
  (per_head, per_tensor) take scales from ``calibrate`` on calibration text. This is the arithmetic
  of the GPU decode kernels (scale · code in float, f32 accumulation) run on the CPU in NumPy.
- ``NomadKV(codebooks, dsub)`` — NoMAD-Attention through kernels compiled by attn-opt: each layer's
  keys are encoded into the 4-bit code cache by ``attn.pq.encode``, and every query position runs
  ``attn.pq.attention`` (u8 lookup tables, u16 accumulation, softmax, P·V over f32, f16 or i8
  values) over the keys before it — the compiled object, called through ``qattn.build``.
"""

from __future__ import annotations

from typing import Dict, Optional

import numpy as np

from .. import quant
from ..cpu import host_isa, nomad_spec
from ..kernels import build
from .model import causal_softmax_attention


class QuantizedKV:
    def __init__(self, dtype: str, granularity: Optional[str] = None,
                 static_scales: Optional[Dict[int, tuple]] = None):
        self.dtype = dtype
        self.granularity = granularity
        self.static_scales = static_scales or {}
        if dtype != "bf16":
            quant.parse_granularity(granularity)

    @property
    def name(self) -> str:
        return self.dtype if self.dtype == "bf16" else f"{self.dtype} {self.granularity}"

    def __call__(self, layer: int, q, k, v, window: Optional[int] = None):
        ks, vs = self.static_scales.get(layer, (None, None))
        kq = quant.fake_quantize(k, self.dtype, self.granularity, ks)
        vq = quant.fake_quantize(v, self.dtype, self.granularity, vs)
        return causal_softmax_attention(q, kq, vq, window)


class NomadKV:
    """NoMAD attention for every layer. With ``dense_sinks = n > 0`` the first n keys of the
    sequence (the "attention sink" tokens, whose keys k-means represents worst) keep exact float32
    scores: the compiled ``attn.pq.lut`` + ``attn.pq.scores`` give every other key's score, and
    softmax and P·V run in NumPy; so do sliding-window layers (``window=W``: the scores of keys
    older than W are dropped); otherwise the whole step is the compiled ``attn.pq.attention``.
    """

    def __init__(self, codebooks: Dict[int, np.ndarray], dsub: int, q_heads: int,
                 isa: Optional[str] = None, attn_opt=None, dense_sinks: int = 0,
                 values: str = "f32"):
        self.codebooks = {i: np.ascontiguousarray(b, np.float32) for i, b in codebooks.items()}
        self.dense_sinks = int(dense_sinks)
        self.dsub = dsub
        b0 = next(iter(self.codebooks.values()))
        self.kv_heads, self.subq, self.centroids, _ = b0.shape
        self.head_dim = self.subq * dsub
        self.q_heads = q_heads
        self.isa = isa or host_isa()
        self.values = values  # the value cache's precision: f32, f16, or i8 per (token, head)
        self.lib = build(nomad_spec(q_heads, self.kv_heads, self.head_dim, dsub, self.isa,
                                    self.centroids, values=values), attn_opt=attn_opt)

    @property
    def name(self) -> str:
        sinks = f" + {self.dense_sinks} dense sink" if self.dense_sinks else ""
        vals = "" if self.values == "f32" else f" + {self.values} V"
        return f"NoMAD dsub {self.dsub}{sinks}{vals}"

    def encode(self, layer: int, k: np.ndarray) -> np.ndarray:
        """The code cache [H, NB, S, R] of keys k [T, H, D], written by the compiled encoder."""
        t = k.shape[0]
        nb = max(1, -(-t // 32))
        r = 16 if self.centroids == 16 else 32
        codes = np.zeros((self.kv_heads, nb, self.subq, r), np.uint8)
        self.lib.nomad_encode(np.ascontiguousarray(k, np.float32), self.codebooks[layer], 0, codes)
        return codes

    def __call__(self, layer: int, q, k, v, window: Optional[int] = None):
        from .decode import store_values
        codes = self.encode(layer, k)
        q = np.ascontiguousarray(q, np.float32)
        v = np.ascontiguousarray(v, np.float32)
        stored, scale = store_values(v, self.values)
        out = np.empty_like(q)
        books = self.codebooks[layer]
        if self.dense_sinks or window is not None:  # NumPy P·V over the stored values
            deq = stored.astype(np.float32) * (1 if scale is None else scale[..., None])
            return self._scored(q, k, deq, codes, books, window)
        attend = self.lib.nomad_attend
        extra = () if scale is None else (scale,)
        for i in range(q.shape[0]):  # causal: position i reads keys 0..i
            attend(q[i], books, codes, stored, *extra, i + 1, out[i])
        return out

    def _scored(self, q, k, v, codes, books, window):
        """Scores of every key by the compiled lookup tables (the first ``dense_sinks`` keys' in
        float32), softmax and P·V in NumPy: with ``window``, query i sees keys i - window + 1..i."""
        t, hq, d = q.shape
        group = hq // self.kv_heads
        n = self.dense_sinks
        scale = np.float32(1 / np.sqrt(d))
        lut = np.empty((hq, self.subq, self.centroids), np.uint8)
        params = np.empty((hq, 2), np.float32)
        scores = np.empty((hq, t), np.float32)
        kx = np.repeat(k[:n], group, axis=1)  # [n, Hq, D]
        vx = np.repeat(v, group, axis=1).transpose(1, 0, 2)  # [Hq, T, D]
        out = np.empty_like(q)
        for i in range(t):
            self.lib.nomad_scores(q[i], books, codes, i + 1, lut, params, scores)
            lo = 0 if window is None else max(0, i + 1 - window)
            s = scores[:, lo:i + 1].copy()
            if lo < n:
                m = min(n, i + 1)
                s[:, :m - lo] = np.einsum("hd,thd->ht", q[i], kx[lo:m])
            s *= scale
            p = np.exp(s - s.max(axis=1, keepdims=True))
            out[i] = np.einsum("ht,htd->hd", p, vx[:, lo:i + 1]) / p.sum(axis=1, keepdims=True)
        return out
