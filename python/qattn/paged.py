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
slot-mapped cache write on the device stores, ``append_slots`` is that write itself (rows at the
slots of a slot mapping, ``attn.quantize.append_paged``). ``qattn.reference.paged_attention``
reads the cache.

The block-table check of the launchers' debug mode (``check_pages``) is here too, in torch on the
tables' own device (imported when used): ``check_block_table`` finds used entries outside the
pool, ``PageErrors`` reads its state and ``BlockTableError`` reports it (docs/PagedKV.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from . import quant
from .compiler import QattnError
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


def _pool_rows(a: np.ndarray, what: str, shape, static: bool = False) -> np.ndarray:
    """A [num_pages, P, ...] array seen as [num_pages · P, ...] rows (a view: writes land in
    ``a``); ``static`` scales ([1], [H], [H, D]) as they are."""
    if not isinstance(a, np.ndarray) or tuple(a.shape) != tuple(shape):
        raise ValueError(f"{what} must be a NumPy array of shape {tuple(shape)}, got "
                         f"{getattr(a, 'shape', type(a).__name__)}")
    if static:
        return a
    return a.reshape((shape[0] * shape[1],) + tuple(shape[2:]))


def append_slots(src, slot_mapping, pool: np.ndarray, scales: np.ndarray,
                 zeros: Optional[np.ndarray] = None, *, dtype: str = "i8",
                 granularity: str = "per_token_head", symmetric: bool = True,
                 scale_dtype: str = "f32") -> np.ndarray:
    """The slot-mapped cache write (vLLM's ``reshape_and_cache_flash``) on the CPU, a reference for
    ``attn.quantize.append_paged``: row t of ``src`` [T, H, D] is quantized and written to row
    ``slot_mapping[t] % P`` of page ``slot_mapping[t] // P`` of ``pool`` [num_pages, P, H, D]
    (int8 / uint8 codes, e4m3 values as float32), its scales (and zero points) to the same slot
    of ``scales`` / ``zeros`` stored per page — the codes and scales ``quantize_pages`` stores for
    that token. A slot outside [0, num_pages · P) skips its row (vLLM pads with −1); slots of the
    rows written must be distinct. per_tensor, per_head and per_channel read the calibrated
    ``scales`` (and ``zeros``) instead of writing them. The arithmetic is the kernels'
    (``qattn.quant`` with ``nonfinite="saturate"``). Updates the arrays in place; returns the
    boolean mask of the rows written."""
    if dtype not in _FORMATS or _FORMATS[dtype] == "bf16":
        raise ValueError(f"unknown code dtype {dtype!r}; expected i8, ui8 / u8 or f8E4M3FN / e4m3")
    if not isinstance(symmetric, bool):
        raise TypeError(f"symmetric must be True or False, not {symmetric!r}")
    fmt = _FORMATS[dtype]
    if fmt == "u8" and symmetric:
        raise ValueError("u8 caches are asymmetric only (symmetric=False)")
    if fmt == "e4m3" and not symmetric:
        raise ValueError("e4m3 caches are symmetric only")
    if (zeros is None) != symmetric:
        raise ValueError("zeros are required for an asymmetric scheme and refused for a "
                         "symmetric one")
    x = as_numpy(src, np.float32)
    if x.ndim != 3:
        raise ValueError(f"src must be [T, H, D], got shape {x.shape}")
    if not isinstance(pool, np.ndarray) or pool.ndim != 4 or pool.shape[2:] != x.shape[1:]:
        raise ValueError(f"pool must be a NumPy array [num_pages, P, H, D] with src's H, D "
                         f"{x.shape[1:]}, got {getattr(pool, 'shape', type(pool).__name__)}")
    slots = np.asarray(slot_mapping)
    if slots.shape != (x.shape[0],) or slots.dtype.kind not in "iu":
        raise ValueError(f"slot_mapping must be integers of shape ({x.shape[0]},), got "
                         f"{slots.dtype} {slots.shape}")
    check_page_size(pool.shape[1])
    kind, arg = quant.parse_granularity(granularity)
    if kind == "per_block" and arg[0] != 1:
        raise ValueError(f"{granularity} cannot be appended token by token: a block's scale "
                         "depends on tokens not yet appended")
    n = pool.shape[0] * pool.shape[1]
    slots = slots.astype(np.int64)
    valid = (slots >= 0) & (slots < n)
    if len(set(slots[valid].tolist())) != int(valid.sum()):
        raise ValueError("slot_mapping writes one slot twice")
    from .spec import scale_shape
    rows = _pool_rows(pool, "pool", pool.shape)
    static = kind in ("per_tensor", "per_head", "per_channel")
    want = scale_shape(granularity, list(pool.shape))  # per page: [num_pages, P, ...]
    sc_rows = _pool_rows(scales, "scales", want, static)
    z_rows = None if zeros is None else _pool_rows(zeros, "zeros", want, static)
    x = x[valid]
    if not x.shape[0]:
        return valid
    if symmetric:
        codes, s = quant.quantize(x, fmt, granularity, scales if static else None,
                                  scale_dtype=scale_dtype, nonfinite="saturate")
        z = None
    else:
        codes, s, z = quant.quantize_asym(x, fmt, granularity, *((scales, zeros) if static else
                                                                 (None, None)),
                                          scale_dtype=scale_dtype, nonfinite="saturate")
    rows[slots[valid]] = codes
    if not static:
        sc_rows[slots[valid]] = s
        if z is not None:
            z_rows[slots[valid]] = z
    return valid


# --- the block-table check (torch, on the tables' device) --------------------------------------

#: Entries of the check's state, an int64 tensor (python/csrc/page_check.h, PageState): used
#: entries outside the pool, the first one's flat index b · max_blocks + i, its entry, the pool's
#: pages and max_blocks when it was recorded; lengths outside [0, max_blocks · P], the first
#: one's sequence, its length and max_blocks · P then. "No offender" is NO_OFFENDER.
PAGE_STATE_SIZE = 15
NO_OFFENDER = 2 ** 63 - 1
_FIRST_ENTRY, _FIRST_LEN, _FIRST_OFFSET = 1, 6, 10


def new_page_state(device="cpu"):
    """A reset block-table check state (int64 [PAGE_STATE_SIZE]) on ``device``."""
    import torch
    state = torch.zeros(PAGE_STATE_SIZE, dtype=torch.int64, device=device)
    state[_FIRST_ENTRY] = state[_FIRST_LEN] = state[_FIRST_OFFSET] = NO_OFFENDER
    return state


def _record(state, count_at, count, first_at, first, values):
    import torch
    take = (state[first_at] == NO_OFFENDER) & (first != NO_OFFENDER)
    for i, v in enumerate(values, first_at + 1):
        state[i] = torch.where(take, torch.as_tensor(v, device=state.device).long(), state[i])
    state[first_at] = torch.where(take, first, state[first_at])
    state[count_at] += count


def check_block_table(block_table, seq_lens, page_size: int, num_pages: int, state=None):
    """The block-table check in torch (what ``torch.ops.attn_opt.check_block_table`` does in
    C++), on the tables' device without a host synchronization: the used entries of
    ``block_table`` (int32 [B, M]: (b, i) with i < ceil(len_b / P), len_b = ``seq_lens[b]``
    clamped to [0, M · P], every entry when ``seq_lens`` is None) checked against [0,
    ``num_pages``) and ``seq_lens`` against [0, M · P]. Offenders are added to ``state``
    (``new_page_state``; made when None), which keeps the first one recorded since its reset;
    returns ``state``. ``PageErrors.from_state(state.tolist())`` reads it."""
    import torch
    table = block_table
    if table.dtype != torch.int32 or table.dim() != 2:
        raise TypeError(f"block_table must be int32 [B, max_blocks], got {table.dtype} "
                        f"{list(table.shape)}")
    state = new_page_state(table.device) if state is None else state
    b, blocks = table.shape
    capacity = blocks * page_size
    if seq_lens is not None and (seq_lens.dtype != torch.int32 or tuple(seq_lens.shape) != (b,)):
        raise TypeError(f"seq_lens must be int32 [{b}], got {seq_lens.dtype} "
                        f"{list(seq_lens.shape)}")
    if table.numel() == 0:
        return state
    bad = (table < 0) | (table >= num_pages)
    if seq_lens is not None:
        lens = seq_lens.long()
        used = torch.div(lens.clamp(0, capacity) + page_size - 1, page_size, rounding_mode="floor")
        bad &= torch.arange(blocks, device=table.device)[None, :] < used[:, None]
        bad_len = (lens < 0) | (lens > capacity)
        first = torch.where(bad_len, torch.arange(b, device=table.device), NO_OFFENDER).amin()
        _record(state, 5, bad_len.sum(), _FIRST_LEN, first,
                (lens.index_select(0, first.clamp_max(b - 1).view(1)).squeeze(0), capacity))
    flat = torch.arange(table.numel(), device=table.device).view(b, blocks)
    first = torch.where(bad, flat, NO_OFFENDER).amin()
    _record(state, 0, bad.sum(), _FIRST_ENTRY, first,
            (table.reshape(-1).index_select(0, first.clamp_max(table.numel() - 1).view(1))
             .squeeze(0), num_pages, blocks))
    return state


def check_cu_seqlens(cu_seqlens_q, total_q: int, max_seqlen_q: int, state=None):
    """The ragged-batch check in torch (what ``torch.ops.attn_opt.check_cu_seqlens`` does in
    C++), on the offsets' device without a host synchronization: sequence b's rows
    ``cu_seqlens_q[b] ..< cu_seqlens_q[b + 1]`` (int32 [B + 1]) must lie in [0, ``total_q``], in
    order, and number at most ``max_seqlen_q`` (the kernel clamps anything else, so a sequence
    with more rows is cut). Offenders are added to ``state`` (``new_page_state``; made when
    None), which keeps the first one recorded since its reset; returns ``state``."""
    import torch
    cu = cu_seqlens_q
    if cu.dtype != torch.int32 or cu.dim() != 1 or cu.shape[0] < 2:
        raise TypeError(f"cu_seqlens_q must be int32 [B + 1] with B >= 1, got {cu.dtype} "
                        f"{list(cu.shape)}")
    state = new_page_state(cu.device) if state is None else state
    b = int(cu.shape[0]) - 1
    start, end = cu[:-1].long(), cu[1:].long()
    bad = (start < 0) | (end < start) | (end > total_q) | (end - start > max_seqlen_q)
    first = torch.where(bad, torch.arange(b, device=cu.device), NO_OFFENDER).amin()
    at = first.clamp_max(b - 1).view(1)
    _record(state, 9, bad.sum(), _FIRST_OFFSET, first,
            (start.index_select(0, at).squeeze(0), end.index_select(0, at).squeeze(0), total_q,
             max_seqlen_q))
    return state


@dataclass(frozen=True)
class PageErrors:
    """What a block-table check recorded: ``bad_entries`` used entries outside the pool, the
    first as ``entry`` = (sequence, block, entry, num_pages) or None; ``bad_lengths`` seq_lens
    outside [0, max_blocks · P], the first as ``length`` = (sequence, seq_len, max_blocks · P)
    or None; ``bad_offsets`` ragged sequences whose cu_seqlens_q rows are out of order, outside
    [0, T] or more than max_seqlen_q, the first as ``offset`` = (sequence, start, end, T,
    max_seqlen_q) or None. False when nothing was recorded."""
    bad_entries: int
    entry: Optional[Tuple[int, int, int, int]]
    bad_lengths: int
    length: Optional[Tuple[int, int, int]]
    bad_offsets: int = 0
    offset: Optional[Tuple[int, int, int, int, int]] = None

    @classmethod
    def from_state(cls, values) -> "PageErrors":
        v = [int(x) for x in values]
        if len(v) != PAGE_STATE_SIZE:
            raise ValueError(f"a page check state has {PAGE_STATE_SIZE} entries, got {len(v)}")
        entry = length = offset = None
        if v[_FIRST_ENTRY] != NO_OFFENDER:
            entry = (v[_FIRST_ENTRY] // v[4], v[_FIRST_ENTRY] % v[4], v[2], v[3])
        if v[_FIRST_LEN] != NO_OFFENDER:
            length = (v[_FIRST_LEN], v[7], v[8])
        if v[_FIRST_OFFSET] != NO_OFFENDER:
            offset = (v[_FIRST_OFFSET], v[11], v[12], v[13], v[14])
        return cls(v[0], entry, v[5], length, v[9], offset)

    def __bool__(self) -> bool:
        return bool(self.bad_entries or self.bad_lengths or self.bad_offsets)

    def message(self) -> str:
        parts = []
        if self.entry is not None:
            b, i, e, n = self.entry
            parts.append(f"block_table[{b}, {i}] = {e} (sequence {b}, block {i}) is outside the "
                         f"pool of {n} pages [0, {n}); {self.bad_entries} used entr"
                         f"{'y' if self.bad_entries == 1 else 'ies'} outside the pool in all")
        if self.length is not None:
            b, n, cap = self.length
            parts.append(f"seq_lens[{b}] = {n} is outside [0, max_blocks · page_size = {cap}]; "
                         f"{self.bad_lengths} such length{'' if self.bad_lengths == 1 else 's'} "
                         f"in all")
        if self.offset is not None:
            b, start, end, total, most = self.offset
            parts.append(f"cu_seqlens_q[{b}], cu_seqlens_q[{b + 1}] = {start}, {end} (sequence "
                         f"{b}) is not a run of 0..max_seqlen_q = {most} rows inside [0, T = "
                         f"{total}]; {self.bad_offsets} such sequence"
                         f"{'' if self.bad_offsets == 1 else 's'} in all")
        return "; ".join(parts) or "no block-table entry outside the pool"


class BlockTableError(QattnError, ValueError):
    """A block table (or seq_lens) a page check found outside the pool, or a ragged batch's
    cu_seqlens_q it found malformed; ``errors`` is the ``PageErrors`` report."""

    def __init__(self, errors: PageErrors):
        super().__init__(errors.message())
        self.errors = errors


def check_pages_mode(check_pages=None) -> Optional[str]:
    """The page check a launcher runs: None (off), "record" or "raise", from ``check_pages``
    (False, True = "raise", "record", "raise") or, when it is None, from the environment's
    QATTN_CHECK_PAGES ("" or "0": off, "record", anything else: "raise")."""
    if check_pages is None:
        import os
        env = os.environ.get("QATTN_CHECK_PAGES", "")
        return None if env in ("", "0") else "record" if env == "record" else "raise"
    if check_pages is False or check_pages is True:
        return "raise" if check_pages else None
    if check_pages in ("record", "raise"):
        return check_pages
    raise ValueError(f"check_pages must be False, True, 'record' or 'raise', not {check_pages!r}")
