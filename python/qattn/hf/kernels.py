"""The kernels ``qattn.hf`` runs, per model shape, cache format and paged layout:

* ``decode_q{Hq}_kv{Hkv}_d{D}_{fmt}_p{P}_mb{M}`` — one query token per sequence over a paged
  cache: pools of pages [num_pages, P, Hkv, D] (fmt i8 / e4m3 with per-(token, head) scales
  stored per page, or bf16), per-sequence ``seq_lens`` and a block table [B, M] int32. The kernel
  is compiled for a static ``max_blocks`` M; ``max_blocks(capacity, P)`` is the M of a cache of
  ``capacity`` tokens per sequence (capacities are rounded up to a coarse grid so few kernels
  cover many capacities);
* ``prefill_q{Hq}_kv{Hkv}_d{D}_bf16`` — causal prefill over contiguous bf16 K/V [B, L, Hkv, D]
  (a prompt's own rows, or a bf16 cache's pages gathered), bottom-right aligned to ``seq_lens``;
* ``append_paged_h{Hkv}_d{D}_{fmt}_p{P}`` — ``attn.quantize.append_paged`` of bf16 rows
  [T, Hkv, D] into an i8 / e4m3 pool at a slot mapping (slot = page · P + offset), scales per page;
* ``decode_q{Hq}_kv{Hkv}_d{D}_bf16`` — contiguous bf16 decode (attention with a cache other than
  ``QattnCache``).

``$QATTN_HF_KERNELS`` names a directory holding ``<name>.ptx`` + ``<name>.ptx.launch.json``
(written by ``python -m qattn.hf prebuild DIR ...`` where attn-opt is) for machines without
attn-opt; otherwise a spec is looked up in the ahead-of-time set, then compiled with attn-opt.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..aot import FORMATS
from ..paged import check_page_size  # noqa: F401 (qattn.hf.kernels.check_page_size: callers use it)
from ..spec import attention, quantize_paged

# Cache formats: the name users pass -> the kernel suffix.
CACHE_FORMATS = {"int8": "i8", "i8": "i8", "fp8": "e4m3", "e4m3": "e4m3", "bf16": "bf16"}
_CODE_DTYPE = {"i8": "i8", "e4m3": "f8E4M3FN"}
DEFAULT_PAGE_SIZE = 64
MIN_TABLE_TOKENS = 1024


def cache_format(name: str) -> str:
    try:
        return CACHE_FORMATS[str(name).lower()]
    except KeyError:
        raise ValueError(f"unknown cache format {name!r}: one of int8, fp8 (e4m3), bf16") from None


def table_tokens(capacity: int) -> int:
    """The tokens a block table spans for a cache of ``capacity`` tokens per sequence: capacity
    rounded up to a multiple of max(1024, 2^(bits(capacity) - 4)) — at most 1024 tokens or 12.5%
    above it (2048 -> 2048, 2072 -> 3072, 8216 -> 9216, 32792 -> 36864), a multiple of every page
    size. Decode kernels are compiled per table width; the pools hold only ``capacity``."""
    n = int(capacity)
    if n <= 0:
        raise ValueError(f"capacity must be positive, got {capacity!r}")
    grid = max(MIN_TABLE_TOKENS, 1 << max(0, n.bit_length() - 4))
    return -(-n // grid) * grid


def max_blocks(capacity: int, page_size: int) -> int:
    """The block table's width (and the decode kernel's static max_blocks) of a cache of
    ``capacity`` tokens per sequence in pages of ``page_size``."""
    return table_tokens(capacity) // check_page_size(page_size)


def capacities_for(contexts, extra_tokens: int = 64):
    """The table widths (in tokens) of every capacity from c to c + extra_tokens, c in contexts:
    what ``prebuild`` must cover for runs whose caches hold a context plus a few steps."""
    if int(extra_tokens) < 0:
        raise ValueError(f"extra_tokens must be >= 0, got {extra_tokens!r}")
    return sorted({table_tokens(n) for c in contexts
                   for n in range(int(c), int(c) + int(extra_tokens) + 1)})


def names(q_heads: int, kv_heads: int, head_dim: int, fmt: str,
          page_size: int = DEFAULT_PAGE_SIZE, blocks: int | None = None) -> dict:
    """{role: kernel name} of one model shape, cache format and page size; "decode" (paged) only
    with the table width ``blocks``; "stateless_decode" is the contiguous bf16 decode."""
    shape = f"q{q_heads}_kv{kv_heads}_d{head_dim}"
    out = {"prefill": f"prefill_{shape}_bf16", "stateless_decode": f"decode_{shape}_bf16"}
    if blocks is not None:
        out["decode"] = f"decode_{shape}_{fmt}_p{page_size}_mb{blocks}"
    if fmt != "bf16":
        out["append"] = f"append_paged_h{kv_heads}_d{head_dim}_{fmt}_p{page_size}"
    return out


def spec(role: str, q_heads: int, kv_heads: int, head_dim: int, fmt: str,
         page_size: int = DEFAULT_PAGE_SIZE, blocks: int | None = None):
    """The Spec of one kernel (role decode / prefill / append / stateless_decode)."""
    n = names(q_heads, kv_heads, head_dim, fmt, page_size, blocks)
    if role not in n:
        raise ValueError(f"no {role!r} kernel for format {fmt}"
                         + (" without a table width (blocks)" if role == "decode" else ""))
    name = n[role]
    if role == "decode":
        return attention("decode", batch=None, q_len=1, kv_len=None, q_heads=q_heads,
                         kv_heads=kv_heads, head_dim=head_dim, seq_lens=True,
                         page_size=page_size, num_pages=None, max_blocks=blocks, name=name,
                         **FORMATS[fmt])
    if role == "stateless_decode":
        return attention("decode", batch=None, q_len=1, kv_len=None, q_heads=q_heads,
                         kv_heads=kv_heads, head_dim=head_dim, seq_lens=True, name=name,
                         **FORMATS["bf16"])
    if role == "prefill":
        return attention("prefill", batch=None, q_len=None, kv_len=None, q_heads=q_heads,
                         kv_heads=kv_heads, head_dim=head_dim, kv_dtype="bf16", causal=True,
                         seq_lens=True, name=name)
    return quantize_paged(tokens=None, num_pages=None, page_size=page_size, heads=kv_heads,
                          head_dim=head_dim, src_dtype="bf16", dtype=_CODE_DTYPE[fmt],
                          granularity="per_token_head", slot_dtype="i64", target="sm_90a",
                          name=name)


def prebuilt_dir():
    d = os.environ.get("QATTN_HF_KERNELS")
    return Path(d) if d else None


def source(role, q_heads, kv_heads, head_dim, fmt, page_size=DEFAULT_PAGE_SIZE, blocks=None):
    """What DecodePlan / the append op loads: a prebuilt PTX path, else the Spec."""
    d = prebuilt_dir()
    name = names(q_heads, kv_heads, head_dim, fmt, page_size, blocks).get(role)
    if d is not None and name is not None and (d / f"{name}.ptx").is_file():
        return d / f"{name}.ptx"
    return spec(role, q_heads, kv_heads, head_dim, fmt, page_size, blocks)


def prebuild(out_dir, q_heads, kv_heads, head_dim, formats=("i8", "e4m3", "bf16"),
             capacities=(), page_size=DEFAULT_PAGE_SIZE, attn_opt=None):
    """Compiles into out_dir (attn-opt needed here) the kernels of one shape and page size: per
    format its append kernel and one paged decode kernel per table width that ``capacities``
    (tokens per sequence; see ``capacities_for``) need, plus the bf16 prefill and the contiguous
    bf16 decode. Kernels already there are kept. Returns the names written."""
    from ..kernels import build
    check_page_size(page_size)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    widths = sorted({max_blocks(c, page_size) for c in capacities})
    jobs = [("prefill", "bf16", None), ("stateless_decode", "bf16", None)]
    for fmt in dict.fromkeys(cache_format(f) for f in formats):
        jobs += [("append", fmt, None)] if fmt != "bf16" else []
        jobs += [("decode", fmt, w) for w in widths]
    written = []
    for role, fmt, blocks in jobs:
        name = names(q_heads, kv_heads, head_dim, fmt, page_size, blocks)[role]
        if (out / f"{name}.ptx").is_file():
            continue
        k = build(spec(role, q_heads, kv_heads, head_dim, fmt, page_size, blocks),
                  attn_opt=attn_opt)
        (out / f"{name}.ptx").write_text(k.ptx)
        (out / f"{name}.ptx.launch.json").write_text(json.dumps(k.meta))
        written.append(name)
    return written


class GpuKernels:
    """The kernels of one (shape, format, page size, table width, device): plans cached per
    batch layout. ``page_size=None``: contiguous bf16 decode (caches other than QattnCache)."""

    def __init__(self, kv_heads, head_dim, fmt, device, page_size=None, blocks=None):
        self.kv_heads, self.head_dim = kv_heads, head_dim
        self.fmt, self.device = fmt, device
        self.page_size, self.blocks = page_size, blocks
        self._plans = {}
        self._append = None
        # Imported once here, not per call (the GPU path's first use may build the extension).
        from .. import torch_ops
        self._ops = torch_ops

    def _plan(self, role, q_heads, batch, kv_len, q_len=None):
        key = (role, q_heads, batch, kv_len, q_len)
        plan = self._plans.get(key)
        if plan is None:
            if len(self._plans) >= 64:  # prompts of many lengths, a growing stateless K/V
                self._plans.clear()
            fmt = self.fmt if role == "decode" else "bf16"
            src = source(role, q_heads, self.kv_heads, self.head_dim, fmt,
                         self.page_size or DEFAULT_PAGE_SIZE, self.blocks)
            plan = self._ops.DecodePlan(src, device=self.device, batch=batch, kv_len=kv_len,
                                        q_len=q_len)
            self._plans[key] = plan
        return plan

    def decode(self, q, k, v, k_scale, v_scale, seq_lens, out, block_table=None):
        """q [B, 1, Hq, D] over pools k, v [num_pages, P, Hkv, D] through block_table
        [B, max_blocks] (the plan's kv_len is max_blocks · P), or, without a page size, over
        contiguous bf16 k, v [B, L, Hkv, D]."""
        if self.page_size is None:
            plan = self._plan("stateless_decode", q.shape[2], q.shape[0], k.shape[1])
            return plan.run(q, k, v, seq_lens=seq_lens, out=out)
        plan = self._plan("decode", q.shape[2], q.shape[0], self.blocks * self.page_size)
        return plan.run(q, k, v, k_scale, v_scale, seq_lens=seq_lens, out=out,
                        block_table=block_table)

    def prefill(self, q, k, v, seq_lens, out):
        """Causal bf16 prefill: q [B, S, Hq, D] are the last S positions of each seq_lens row of
        contiguous k, v [B, L, Hkv, D]."""
        plan = self._plan("prefill", q.shape[2], q.shape[0], k.shape[1], q.shape[1])
        return plan.run(q, k, v, seq_lens=seq_lens, out=out)

    def append(self, rows, pool, scales, slots):
        """Quantizes rows [T, Hkv, D] bf16 into the pool [num_pages, P, Hkv, D] at slots [T]
        (int64 on the device; no host sync): the torch op attn_opt::quantize_append_paged."""
        if not self._ops.HAS_EXTENSION:
            from ..gpu import GpuError
            raise GpuError("qattn.hf: the paged append runs through the attn_opt torch "
                           "extension, which is not built: install the package with "
                           "`pip install --no-build-isolation ./python` where torch and cuda.h "
                           "are present")
        if self._append is None:
            src = source("append", 0, self.kv_heads, self.head_dim, self.fmt, self.page_size)
            if not isinstance(src, Path):
                from ..kernels import build
                src = build(src).path
            self._append = str(src)
        self._ops.quantize_append_paged(self._append, rows, pool, scales, slot_mapping=slots)
