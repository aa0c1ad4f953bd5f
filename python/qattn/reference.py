"""Reference attention in NumPy (float64): contiguous and over a paged K/V cache.

What the kernels are checked against, written for clarity, not speed. Tensors follow the specs'
layout (``qattn.spec.attention``):

- ``attention(q, k, v, seq_lens, causal)``: q [B, Sq, Hq, D] over k [B, S, Hkv, D] and
  v [B, S, Hkv, Dv]. Sequence b holds ``seq_lens[b]`` keys (all S without ``seq_lens``); its Sq
  queries are the last Sq positions of the sequence (bottom-right causal alignment, as in FA3 and
  FlashInfer), so with ``causal`` query i sees keys ``t <= seq_lens[b] - Sq + i``. GQA: query
  head h reads KV head ``h // (Hq / Hkv)``. A query that sees no key (a length of 0, or a causal
  query before the first key) gets 0.
- ``paged_attention(q, k_pages, v_pages, block_table, seq_lens, ...)``: the same over a paged
  cache — K/V pools [num_pages, P, Hkv, D] and a block table [B, max_blocks] whose row b lists
  sequence b's pages in order (key t of sequence b is row t mod P of page
  ``block_table[b, t // P]``); entries past ``ceil(seq_lens[b] / P)`` are not read. Quantized
  pools come with scales (and zero points) stored per page (``qattn.paged``), dequantized here
  first. The result equals ``attention`` over ``gather`` of the same cache.

Both take ``sinks`` ([Hq] attention-sink logits, gpt-oss: s_h joins each row's softmax
denominator as ``exp(s_h - m)`` and has no value row) and ``return_lse=True``, which returns
``(out, lse)`` with ``lse`` [B, Sq, Hq] the natural log-sum-exp of each row's scaled, masked
logits, the sink included (``-inf`` for a row with no visible key and no sink). ``softcap=c``
caps each scaled logit x to ``c * tanh(x / c)`` before the mask (FlashAttention-3's convention).
``window=(left, right)`` is a sliding window (FA3's and FlashInfer's convention): the query at
position i sees key j only if ``i - left <= j <= i + right``, ``-1`` leaving a side unbounded
(with ``causal`` the right bound is ``min(right, 0)``); a row that sees no key gets 0. A paged
cache's pages wholly before every query's window are not read (an engine may have freed them).

Inputs may be NumPy arrays or torch tensors (any device; copied to the host as float64).
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from . import quant


def as_numpy(a, dtype=np.float64) -> np.ndarray:
    """A NumPy copy of an array or a torch tensor (moved to the host, bf16/fp8 widened)."""
    if hasattr(a, "detach"):  # torch.Tensor, without importing torch
        t = a.detach().cpu()
        if not (t.dtype.is_floating_point and t.element_size() >= 4) and dtype != np.int64:
            t = t.float()
        a = t.numpy()
    return np.asarray(a, dtype)


def _lengths(seq_lens, batch: int, capacity: int) -> np.ndarray:
    if seq_lens is None:
        return np.full(batch, capacity, np.int64)
    lens = as_numpy(seq_lens, np.int64).reshape(-1)
    if lens.shape != (batch,):
        raise ValueError(f"seq_lens must hold one length per sequence ({batch}), got {lens.shape}")
    if (lens < 0).any() or (lens > capacity).any():
        raise ValueError(f"seq_lens must be in [0, {capacity}], got {lens.tolist()}")
    return lens


def check_window(window) -> Optional[tuple]:
    """``window`` as a (left, right) pair of ints >= -1, or None; ValueError otherwise."""
    if window is None:
        return None
    try:
        left, right = window
    except (TypeError, ValueError):
        raise ValueError(f"window must be a pair (left, right), not {window!r}") from None
    for x in (left, right):
        if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < -1:
            raise ValueError(f"window bounds must be integers >= -1 (-1: unbounded), "
                             f"not {window!r}")
    return int(left), int(right)


def _attend_one(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool,
                scale: float, sinks: Optional[np.ndarray] = None,
                softcap: Optional[float] = None, window: Optional[tuple] = None):
    """q [Sq, Hq, D] over the n keys k [n, Hkv, D], v [n, Hkv, Dv] of one sequence: the output
    [Sq, Hq, Dv] and the log-sum-exp [Sq, Hq] (sinks [Hq] included)."""
    sq, hq, _ = q.shape
    n, hkv, dv = v.shape
    sink = np.full(hq, -np.inf) if sinks is None else sinks
    out = np.zeros((sq, hq, dv))
    if n == 0:
        return out, np.broadcast_to(sink, (sq, hq)).copy()
    kv = np.arange(hq) // (hq // hkv)
    logits = scale * np.einsum("shd,thd->hst", q, k[:, kv])  # [Hq, Sq, n]
    if softcap:
        logits = softcap * np.tanh(logits / softcap)
    pos = n - sq + np.arange(sq)  # the position of each query
    keys = np.arange(n)[None, :]
    visible = np.ones((sq, n), bool)
    if causal:
        visible &= keys <= pos[:, None]
    if window is not None and window[0] >= 0:
        visible &= keys >= pos[:, None] - window[0]
    if window is not None and window[1] >= 0:
        visible &= keys <= pos[:, None] + window[1]
    logits = np.where(visible[None], logits, -np.inf)
    seen = np.isfinite(logits.max(axis=2, keepdims=True))  # queries with at least one key
    # The sink joins the maximum and the denominator, as a key without a value row.
    m = np.maximum(logits.max(axis=2, keepdims=True), sink[:, None, None])
    finite = np.isfinite(m)
    m0 = np.where(finite, m, 0)
    p = np.exp(logits - m0)
    denom = p.sum(axis=2, keepdims=True) + np.exp(sink[:, None, None] - m0)
    o = np.einsum("hst,thd->shd", p / np.where(seen, denom, 1), v[:, kv])
    with np.errstate(divide="ignore"):
        lse = np.where(finite, m0 + np.log(np.where(finite, denom, 1)), -np.inf)[:, :, 0]
    return np.where(seen.transpose(1, 0, 2), o, 0.0), lse.T


def _sinks(sinks, hq: int) -> Optional[np.ndarray]:
    if sinks is None:
        return None
    s = as_numpy(sinks).reshape(-1)
    if s.shape != (hq,):
        raise ValueError(f"sinks must hold one logit per query head ({hq}), got {s.shape}")
    return s


def _result(rows: list, return_lse: bool):
    out = np.stack([o for o, _ in rows])
    return (out, np.stack([lse for _, lse in rows])) if return_lse else out


def attention(q, k, v, seq_lens=None, *, causal: bool = False,
              softmax_scale: Optional[float] = None, sinks=None, return_lse: bool = False,
              softcap: Optional[float] = None, window=None):
    """float64 [B, Sq, Hq, Dv]: attention of q [B, Sq, Hq, D] over k [B, S, Hkv, D] and
    v [B, S, Hkv, Dv], each sequence over its first ``seq_lens[b]`` keys (with ``return_lse``:
    ``(out, lse)``, lse [B, Sq, Hq])."""
    q, k, v = as_numpy(q), as_numpy(k), as_numpy(v)
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise ValueError("q, k and v must be [B, S, H, D]")
    b, sq, hq, d = q.shape
    if k.shape[:3] != v.shape[:3] or k.shape[0] != b or k.shape[3] != d:
        raise ValueError(f"k {k.shape} and v {v.shape} do not match q {q.shape}")
    if hq % k.shape[2]:
        raise ValueError(f"{hq} query heads are not a multiple of {k.shape[2]} KV heads")
    scale = 1 / np.sqrt(d) if softmax_scale is None else float(softmax_scale)
    lens = _lengths(seq_lens, b, k.shape[1])
    s = _sinks(sinks, hq)
    w = check_window(window)
    return _result([_attend_one(q[i], k[i, :n], v[i, :n], causal, scale, s, softcap, w)
                    for i, n in enumerate(lens)], return_lse)


def _pages_needed(n: int, page_size: int) -> int:
    return -(-int(n) // page_size)


def gather(pages, block_table, seq_lens) -> list:
    """Each sequence's tokens of a page pool [num_pages, P, ...]: a list of [seq_lens[b], ...]
    arrays, read through the block table [B, max_blocks]."""
    pages = np.asarray(pages) if not hasattr(pages, "detach") else as_numpy(pages)
    table = as_numpy(block_table, np.int64)
    if table.ndim != 2:
        raise ValueError(f"block_table must be [B, max_blocks], got shape {table.shape}")
    p = pages.shape[1]
    lens = _lengths(seq_lens, table.shape[0], table.shape[1] * p)
    out = []
    for b, n in enumerate(lens):
        ids = table[b, :_pages_needed(n, p)]
        if ((ids < 0) | (ids >= pages.shape[0])).any():
            raise ValueError(f"block_table row {b} names pages outside the pool of "
                             f"{pages.shape[0]}: {ids.tolist()}")
        out.append(pages[ids].reshape(-1, *pages.shape[2:])[:n])
    return out


def dequantize_pages(codes, scales=None, granularity: Optional[str] = None,
                     zeros=None) -> np.ndarray:
    """float32 values of a page pool [num_pages, P, H, D] whose scales (and zero points) are
    stored per page (``qattn.paged.quantize_pages``); an unquantized pool (no scales) as is."""
    codes = as_numpy(codes, np.float32)
    if scales is None:
        return codes
    if granularity is None:
        raise ValueError("scales given without their granularity")
    n, p, h, d = codes.shape
    flat = _flatten_per_page(as_numpy(scales, np.float32), granularity, n, p)
    z = None if zeros is None else _flatten_per_page(as_numpy(zeros, np.float32), granularity,
                                                      n, p)
    return quant.dequantize(codes.reshape(n * p, h, d), flat, granularity, z).reshape(n, p, h, d)


def _flatten_per_page(s: np.ndarray, granularity: str, pages: int, page_size: int) -> np.ndarray:
    """Per-page scales [num_pages, X, ...] as the scales of the [num_pages · P, H, D] rows (a
    token-local granularity's pages are consecutive rows; static ones have no token axis)."""
    kind, _ = quant.parse_granularity(granularity)
    if kind in ("per_tensor", "per_head", "per_channel"):
        return s
    return s.reshape(pages * s.shape[1], *s.shape[2:])


def paged_attention(q, k_pages, v_pages, block_table, seq_lens=None, *, k_scale=None,
                    v_scale=None, k_granularity: Optional[str] = None,
                    v_granularity: Optional[str] = None, k_zero=None, v_zero=None,
                    causal: bool = False, softmax_scale: Optional[float] = None, sinks=None,
                    return_lse: bool = False, softcap: Optional[float] = None, window=None):
    """float64 [B, Sq, Hq, Dv]: attention of q [B, Sq, Hq, D] over a paged cache (see the module
    docstring). Without ``seq_lens`` every sequence holds max_blocks · P keys. ``v_granularity``
    defaults to ``k_granularity``."""
    q = as_numpy(q)
    k = dequantize_pages(k_pages, k_scale, k_granularity, k_zero)
    v = dequantize_pages(v_pages, v_scale, v_granularity or k_granularity, v_zero)
    if k.ndim != 4 or k.shape[:3] != v.shape[:3]:
        raise ValueError(f"k and v must be page pools [num_pages, P, Hkv, D], got {k.shape} "
                         f"and {v.shape}")
    b, _, hq, d = q.shape
    if k.shape[3] != d or hq % k.shape[2]:
        raise ValueError(f"pages {k.shape} do not match q {q.shape}")
    table = as_numpy(block_table, np.int64)
    if table.shape[0] != b:
        raise ValueError(f"block_table has {table.shape[0]} rows for a batch of {b}")
    lens = _lengths(seq_lens, b, table.shape[1] * k.shape[1])
    scale = 1 / np.sqrt(d) if softmax_scale is None else float(softmax_scale)
    w = check_window(window)
    if w is not None and w[0] >= 0:  # pages wholly before every query's window: not read
        table = table.copy()
        for i, n in enumerate(lens):
            first = max(0, int(n) - q.shape[1] - w[0]) // k.shape[1]
            table[i, :first] = 0
    ks, vs = gather(k, table, lens), gather(v, table, lens)
    s = _sinks(sinks, hq)
    return _result([_attend_one(q[i], ks[i], vs[i], causal, scale, s, softcap, w)
                    for i in range(b)], return_lse)
