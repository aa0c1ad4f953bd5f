"""Paged K/V caches on the host: page allocation, the block table, and quantization into pages.

The layout of ``attn.attention`` with ``block_table`` and ``page_size`` (vLLM's, FlashInfer's and
FA3's): K and V are pools of pages [num_pages, P, Hkv, D]; row b of the block table [B, max_blocks]
(int32) lists sequence b's pages in order, so its token t is row t mod P of page
``block_table[b, t // P]``. Entries past ``ceil(seq_lens[b] / P)`` are not read (they are filled
with ``pad``). Scales and zero points are stored per page: the granularity applied to the pool
as to a [num_pages, P, Hkv, D] tensor — per_token_head scales are [num_pages, P, Hkv],
per_block<r x c> ones [num_pages, P / r, Hkv, D / c] (r must divide P) — while per_tensor,
per_head and per_channel scales keep their shape (calibrated over the whole pool).

Everything here runs on the CPU in NumPy and is a reference: ``quantize_pages`` computes what a
slot-mapped cache write on the device stores. ``qattn.reference.paged_attention`` reads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from . import quant
from .reference import as_numpy

#: Page sizes a spec may state (a power of two, 1 to 256).
MAX_PAGE_SIZE = 256
#: Spec names of the cache formats, as qattn.quant names them.
_FORMATS = {"bf16": "bf16", "i8": "i8", "ui8": "u8", "u8": "u8", "f8E4M3FN": "e4m3",
            "e4m3": "e4m3"}


def check_page_size(page_size) -> int:
    if (isinstance(page_size, bool) or not isinstance(page_size, (int, np.integer))
            or not 1 <= page_size <= MAX_PAGE_SIZE or page_size & (page_size - 1)):
        raise ValueError(f"page_size must be a power of two in [1, {MAX_PAGE_SIZE}], "
                         f"not {page_size!r}")
    return int(page_size)


def pages_needed(seq_lens, page_size: int) -> np.ndarray:
    """Pages each sequence needs: ceil(seq_lens / P)."""
    lens = as_numpy(seq_lens, np.int64).reshape(-1)
    if (lens < 0).any():
        raise ValueError(f"seq_lens must be non-negative, got {lens.tolist()}")
    return -(-lens // check_page_size(page_size))


def allocate(seq_lens, page_size: int, *, num_pages: Optional[int] = None,
             max_blocks: Optional[int] = None, shuffle: bool = True, seed: int = 0,
             pad: int = 0) -> Tuple[np.ndarray, int]:
    """(block_table [B, max_blocks] int32, num_pages): each sequence gets the pages it needs out
    of a pool of ``num_pages`` (default: exactly the pages needed, at least one), in a shuffled
    order unless ``shuffle=False``. ``max_blocks`` defaults to the largest need (at least 1)."""
    need = pages_needed(seq_lens, page_size)
    total = int(need.sum())
    num_pages = max(total, 1) if num_pages is None else int(num_pages)
    if num_pages < max(total, 1):
        raise ValueError(f"the sequences need {total} pages of {page_size} tokens; the pool has "
                         f"{num_pages}")
    blocks = max(int(need.max(initial=0)), 1) if max_blocks is None else int(max_blocks)
    if blocks < need.max(initial=0):
        raise ValueError(f"max_blocks {blocks} is below the {int(need.max())} pages the longest "
                         "sequence needs")
    order = (np.random.default_rng(seed).permutation(num_pages) if shuffle
             else np.arange(num_pages))
    table = np.full((need.size, blocks), pad, np.int32)
    start = 0
    for b, n in enumerate(need):
        table[b, :n] = order[start:start + n]
        start += n
    return table, num_pages


def paginate(x, seq_lens, block_table, num_pages: int, page_size: int) -> np.ndarray:
    """Scatter a contiguous cache x [B, S, ...] (each sequence's first ``seq_lens[b]`` tokens)
    into a zero-filled pool [num_pages, P, ...] through the block table."""
    x = as_numpy(x, np.float32)
    table = as_numpy(block_table, np.int64)
    pool = np.zeros((num_pages, page_size) + x.shape[2:], np.float32)
    flat = pool.reshape(num_pages * page_size, *x.shape[2:])
    lens = as_numpy(seq_lens, np.int64).reshape(-1)
    for b, n in enumerate(lens):
        t = np.arange(n)
        flat[table[b, t // page_size] * page_size + t % page_size] = x[b, :n]
    return pool


@dataclass
class PagedCache:
    """A quantized paged K/V cache: code pools [num_pages, P, Hkv, D] (int8 / uint8 codes, e4m3
    or bf16 values as float32), per-page scales and zero points (None where the format has
    none), the block table and the lengths."""

    k: np.ndarray
    v: np.ndarray
    block_table: np.ndarray
    seq_lens: np.ndarray
    page_size: int
    dtype: str
    granularity: Optional[str] = None
    v_granularity: Optional[str] = None
    k_scale: Optional[np.ndarray] = None
    v_scale: Optional[np.ndarray] = None
    k_zero: Optional[np.ndarray] = None
    v_zero: Optional[np.ndarray] = None

    @property
    def num_pages(self) -> int:
        return self.k.shape[0]

    def reference_kwargs(self) -> dict:
        """The cache's keyword arguments of ``qattn.reference.paged_attention``."""
        return dict(k_scale=self.k_scale, v_scale=self.v_scale, k_granularity=self.granularity,
                    v_granularity=self.v_granularity, k_zero=self.k_zero, v_zero=self.v_zero)


def _quantize_pool(pool: np.ndarray, fmt: str, granularity: Optional[str], symmetric: bool):
    """(codes, scales, zeros) of a pool [N, P, H, D], scales stored per page."""
    if fmt == "bf16":
        return quant.round_bf16(pool), None, None
    if granularity is None:
        raise ValueError(f"a {fmt} cache needs a granularity")
    n, p, h, d = pool.shape
    kind, arg = quant.parse_granularity(granularity)
    if kind == "per_block" and p % arg[0]:
        raise ValueError(f"{granularity} cannot be stored per page: a block of {arg[0]} rows "
                         f"straddles pages of {p} tokens (block rows must divide page_size)")
    rows = pool.reshape(n * p, h, d)
    z = None
    if symmetric:
        if fmt == "u8":
            raise ValueError("u8 caches are asymmetric only (symmetric=False)")
        codes, s = quant.quantize(rows, fmt, granularity)
    else:
        if fmt == "e4m3":
            raise ValueError("e4m3 caches are symmetric only")
        codes, s, z = quant.quantize_asym(rows, fmt, granularity)
    if kind not in ("per_tensor", "per_head", "per_channel"):  # token-local: per page
        s = s.reshape((n, -1) + s.shape[1:])
        z = None if z is None else z.reshape((n, -1) + z.shape[1:])
    return codes.reshape(n, p, h, d), s, z


def quantize_pages(k, v, seq_lens, page_size: int, *, dtype: str = "i8",
                   granularity: Optional[str] = "per_token_head",
                   v_granularity: Optional[str] = None, symmetric: bool = True,
                   num_pages: Optional[int] = None, max_blocks: Optional[int] = None,
                   shuffle: bool = True, seed: int = 0) -> PagedCache:
    """Quantize contiguous bf16 (or float) K/V [B, S, Hkv, D] — sequence b's first
    ``seq_lens[b]`` tokens — into a paged cache of ``dtype`` (``i8``, ``ui8``/``u8`` with
    ``symmetric=False``, ``f8E4M3FN``/``e4m3``, or ``bf16``) with scales per page. Pages are
    allocated by ``allocate`` (shuffled with ``seed``); token slots past a sequence's length hold
    zeros. A reference on the CPU, not a fast path."""
    page_size = check_page_size(page_size)
    if dtype not in _FORMATS:
        raise ValueError(f"unknown cache dtype {dtype!r}; expected one of {', '.join(_FORMATS)}")
    if not isinstance(symmetric, bool):
        raise TypeError(f"symmetric must be True or False, not {symmetric!r}")
    fmt = _FORMATS[dtype]
    k32, v32 = as_numpy(k, np.float32), as_numpy(v, np.float32)
    if k32.ndim != 4 or k32.shape[:3] != v32.shape[:3]:
        raise ValueError(f"k and v must be [B, S, Hkv, D] with the same B, S and Hkv, got "
                         f"{k32.shape} and {v32.shape}")
    lens = as_numpy(seq_lens, np.int64).reshape(-1)
    if lens.shape != (k32.shape[0],) or (lens < 0).any() or (lens > k32.shape[1]).any():
        raise ValueError(f"seq_lens must hold one length in [0, {k32.shape[1]}] per sequence, "
                         f"got {lens.tolist()}")
    table, pages = allocate(lens, page_size, num_pages=num_pages, max_blocks=max_blocks,
                            shuffle=shuffle, seed=seed)
    v_gran = granularity if v_granularity is None else v_granularity
    kc, ks, kz = _quantize_pool(paginate(k32, lens, table, pages, page_size), fmt, granularity,
                                symmetric)
    vc, vs, vz = _quantize_pool(paginate(v32, lens, table, pages, page_size), fmt, v_gran,
                                symmetric)
    return PagedCache(kc, vc, table, lens.astype(np.int32), page_size, fmt,
                      None if fmt == "bf16" else granularity,
                      None if fmt == "bf16" else v_gran, ks, vs, kz, vz)
