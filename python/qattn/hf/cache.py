"""``QattnCache``: a transformers ``Cache`` holding a paged int8 / fp8 (e4m3) / bf16 KV cache in the
layout attn-opt's kernels read (vLLM's and FlashInfer's), quantized on append.

Storage, allocated at the first update (batch, heads and device from the first keys):

* per layer, K and V pools of pages ``[num_pages, P, Hkv, D]`` (int8, float8_e4m3fn or bfloat16;
  ``page_size`` P, default 64) and, for int8 / fp8, float32 scales stored per page
  ``[num_pages, P, Hkv]`` (one per token and head: ``amax / 127`` or ``amax / 448``, the
  arithmetic of ``qattn.quant``), plus the lengths (``seq_lens``, int32 ``[B]`` on the device,
  advanced in place: no host sync);
* one block table, int32 ``[B, max_blocks]`` on the device, shared by every layer (``PageTable``):
  each sequence owns ``ceil(max_cache_len / P)`` pages, handed out when the cache is sized (in
  order, or shuffled with ``page_seed``); its token t is row ``t mod P`` of page
  ``block_table[b, t // P]``. ``max_blocks`` is the table width of ``kernels.max_blocks``
  (capacity rounded up to a coarse grid: the decode kernels are compiled per width); entries
  past a sequence's pages name the pool's last page, a scratch page no sequence owns.

Appends compute vLLM's slot mapping (slot = page · P + offset) on the device from ``seq_lens``:
int8 / fp8 rows go through the slot-mapped append kernel (``attn_opt::quantize_append_paged``),
bf16 rows through one ``index_copy_`` into the pool's rows; rows past a sequence's pages land in
the scratch page. No host sync either way, so CUDA graphs replay an append at each step's
position. Every batch row holds the same number of tokens (transformers' generate without
padding).

Backends: ``"kernels"`` (CUDA tensors: attn-opt's paged append, paged decode and prefill kernels
through ``qattn.torch_ops``) and ``"torch"`` (a reference in plain torch on any device: the same
pools, table, slot mapping and quantization, attention over the pages gathered through the
table — ``qattn.reference.paged_attention``'s semantics; slow, for tests and CPU-only machines).
``"auto"`` picks ``kernels`` on CUDA and raises on other devices (name ``"torch"`` explicitly).
"""

from __future__ import annotations

import math
import threading

import torch
from transformers.cache_utils import Cache, CacheLayerMixin

from .kernels import DEFAULT_PAGE_SIZE, GpuKernels, cache_format, check_page_size, max_blocks

QMAX = {"i8": 127.0, "e4m3": 448.0}
CODE_DTYPE = {"i8": torch.int8, "e4m3": torch.float8_e4m3fn, "bf16": torch.bfloat16}
MIN_SCALE = 1e-8


class UnsupportedError(NotImplementedError):
    """A case attn-opt's kernels (or this integration) cannot compute; nothing was computed."""


# The update a layer's attention must consume next (see QattnCache.update).
_pending = threading.local()


def take_pending(key):
    """The (cache, layer) whose update returned ``key``, if the attention call is the one that
    follows it; clears the hand-off."""
    p = getattr(_pending, "value", None)
    _pending.value = None
    if p is not None and p[2] is key:
        return p[0], p[1]
    return None


def quantize_rows(x, fmt):
    """Reference quantization of x [B, S, H, D] (any float dtype) -> (codes, scales [B, S, H])."""
    x = x.float()
    if fmt == "bf16":
        return x.to(torch.bfloat16), None
    amax = x.abs().amax(dim=-1)
    scale = torch.clamp(amax / QMAX[fmt], min=MIN_SCALE)
    y = x * (1.0 / scale)[..., None]
    if fmt == "i8":
        codes = torch.clamp(torch.sign(y) * torch.floor(y.abs() + 0.5), -127, 127).to(torch.int8)
    else:
        codes = torch.clamp(y, -448.0, 448.0).to(torch.float8_e4m3fn)
    return codes, scale


def dequantize_rows(codes, scales):
    x = codes.float()
    return x if scales is None else x * scales[..., None]


def reference_attention(q, k, v, seq_lens):
    """Causal attention, bottom-right aligned: q [B, S, Hq, D] are the last S of each row's
    seq_lens positions of k, v [B, L, Hkv, D] (float). Returns bf16 [B, S, Hq, D]."""
    b, s, hq, d = q.shape
    out = torch.zeros(b, s, hq, d, dtype=torch.float32, device=q.device)
    lens = [int(x) for x in seq_lens.tolist()]
    for i, n in enumerate(lens):
        kk = k[i, :n].repeat_interleave(hq // k.shape[2], dim=1).float()
        vv = v[i, :n].repeat_interleave(hq // v.shape[2], dim=1).float()
        sc = torch.einsum("shd,thd->hst", q[i].float(), kk) / math.sqrt(d)
        pos = n - s + torch.arange(s, device=q.device)
        sc = sc.masked_fill(torch.arange(n, device=q.device)[None, :] > pos[:, None], -math.inf)
        out[i] = torch.einsum("hst,thd->shd", torch.softmax(sc, dim=-1), vv)
    return out.to(torch.bfloat16)


class PageTable:
    """The block table every layer of a ``QattnCache`` shares: ``blocks`` pages per sequence
    (``ceil(capacity / P)``), a table ``[B, max_blocks]`` int32 on the device, and the slot
    mapping of new rows. Pages 0 .. B·blocks - 1 belong to the sequences (in order, or in the
    shuffled order of ``seed``); page B·blocks is scratch: table entries past a sequence's pages
    and rows past its last page point there. ``slot_of`` [B, blocks · P + 1] int64 is the table
    read per position (``table[b, t // P] · P + t mod P``; the last column is the scratch slot),
    so a step's slot mapping is one gather, not a dozen small kernels per layer."""

    def __init__(self, capacity: int, page_size: int = DEFAULT_PAGE_SIZE, seed=None):
        self.page_size = check_page_size(page_size)
        self.capacity = int(capacity)
        self.blocks = -(-self.capacity // self.page_size)
        self.max_blocks = max_blocks(self.capacity, self.page_size)
        self.seed = seed
        self.table = None
        self.batch = self.num_pages = None

    def allocate(self, batch: int, device):
        """The table of ``batch`` sequences (made once: every layer gets the same tensor)."""
        if self.table is None:
            n = batch * self.blocks
            order = (torch.arange(n) if self.seed is None else
                     torch.randperm(n, generator=torch.Generator().manual_seed(int(self.seed))))
            table = torch.full((batch, self.max_blocks), n, dtype=torch.int32)
            table[:, :self.blocks] = order.view(batch, self.blocks).to(torch.int32)
            t = torch.arange(self.blocks * self.page_size)
            slot_of = table[:, t // self.page_size].long() * self.page_size + t % self.page_size
            slot_of = torch.cat([slot_of, torch.full((batch, 1), n * self.page_size)], 1)
            self.table, self.slot_of = table.to(device), slot_of.to(device)
            self.batch, self.num_pages = batch, n + 1
        elif batch != self.batch or self.table.device != torch.device(device):
            raise UnsupportedError(f"QattnCache: the block table holds {self.batch} sequences on "
                                   f"{self.table.device}, got {batch} on {device}")
        return self.table

    def slots(self, seq_lens, new: int):
        """int64 [B · new]: the pool rows of new row i of sequence b, at position
        seq_lens[b] + i (read on the device); positions past the sequence's pages go to the
        scratch page."""
        pos = seq_lens[:, None] + torch.arange(new, device=seq_lens.device)[None, :]  # int64
        pos = torch.clamp(pos, max=self.blocks * self.page_size)
        return self.slot_of.gather(1, pos).reshape(-1)

    def gather(self, pool, length: int):
        """pool [num_pages, P, ...] -> each sequence's first ceil(length / P) pages, contiguous
        [B, ceil(length / P) · P, ...] (the rows past ``length`` hold whatever those pages do)."""
        n = max(1, -(-int(length) // self.page_size))
        g = _bytes(pool)[self.table[:, :n].long()].view(pool.dtype)
        return g.reshape(g.shape[0], n * self.page_size, *pool.shape[2:])


def _bytes(t):
    """float8 tensors seen as uint8 (indexing kernels do not all take float8); others as is."""
    return t.view(torch.uint8) if t.dtype == torch.float8_e4m3fn else t


def _scatter_rows(pool, slots, rows):
    """pool [num_pages, P, *rest] row slots[t] = rows[t] (one index_copy_ on the device)."""
    _bytes(pool).view(-1, *pool.shape[2:]).index_copy_(0, slots, _bytes(rows))


class QattnLayer(CacheLayerMixin):
    """One layer's K/V in attn-opt's paged layout (see the module docstring)."""

    is_compileable = False
    is_sliding = False

    def __init__(self, fmt, capacity, backend, pages: PageTable | None = None):
        super().__init__()
        self.fmt, self.capacity, self.backend = fmt, capacity, backend
        self.pages = pages if pages is not None else PageTable(capacity)
        self.length = 0  # tokens held by every batch row
        self.k_scale = self.v_scale = self.seq_lens = None
        self.kernels = None
        self.new_rows = None  # a prompt's bf16 rows, until its attention takes them

    def lazy_initialization(self, key_states, value_states):
        b, h, _, d = key_states.shape
        dev = key_states.device
        if self.backend == "auto":
            if dev.type != "cuda":
                raise UnsupportedError(f"QattnCache: attn-opt's kernels run on CUDA tensors, got "
                                       f"{dev}; pass backend='torch' for the torch reference")
            self.backend = "kernels"
        if self.backend == "kernels" and dev.type != "cuda":
            raise UnsupportedError(f"QattnCache: the kernels backend needs CUDA tensors, got {dev}")
        self.dtype, self.device, self.batch_size, self.num_heads = key_states.dtype, dev, b, h
        self.head_dim = d
        self.pages.allocate(b, dev)
        shape = (self.pages.num_pages, self.pages.page_size, h, d)
        self.keys = torch.zeros(shape, dtype=CODE_DTYPE[self.fmt], device=dev)
        self.values = torch.zeros(shape, dtype=CODE_DTYPE[self.fmt], device=dev)
        if self.fmt != "bf16":
            self.k_scale = torch.ones(shape[:3], dtype=torch.float32, device=dev)
            self.v_scale = torch.ones(shape[:3], dtype=torch.float32, device=dev)
        self.seq_lens = torch.zeros(b, dtype=torch.int32, device=dev)
        if self.backend == "kernels":
            self.kernels = GpuKernels(h, d, self.fmt, dev, self.pages.page_size,
                                      self.pages.max_blocks)
        self.is_initialized = True

    @property
    def block_table(self):
        return self.pages.table

    def _check(self, key_states, value_states):
        if key_states.dim() != 4 or key_states.shape != value_states.shape:
            raise UnsupportedError(f"QattnCache: keys {tuple(key_states.shape)} and values "
                                   f"{tuple(value_states.shape)} must be [B, Hkv, S, D] alike")
        b, h, s, d = key_states.shape
        if (b, h, d) != (self.batch_size, self.num_heads, self.head_dim):
            raise UnsupportedError(f"QattnCache: the cache holds batch {self.batch_size} x "
                                   f"{self.num_heads} heads x {self.head_dim}, got {b}x{h}x{d}")
        if key_states.device != self.device:
            raise UnsupportedError(f"QattnCache: keys on {key_states.device}, cache on "
                                   f"{self.device}")
        if self.length + s > self.capacity:
            raise UnsupportedError(f"QattnCache: {self.length} + {s} tokens exceed the capacity "
                                   f"{self.capacity} (max_cache_len)")

    def update(self, key_states, value_states, *args, **kwargs):
        """Appends [B, Hkv, S, D] rows (quantized) at the slots of seq_lens; returns the given
        states unchanged."""
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        self._check(key_states, value_states)
        b, h, s, d = key_states.shape
        start = self.length
        k_rows = key_states.transpose(1, 2).to(torch.bfloat16).contiguous()
        v_rows = value_states.transpose(1, 2).to(torch.bfloat16).contiguous()
        slots = self.pages.slots(self.seq_lens, s)
        for rows, pool, scales in ((k_rows, self.keys, self.k_scale),
                                   (v_rows, self.values, self.v_scale)):
            flat = rows.view(b * s, h, d)
            if self.fmt == "bf16":
                _scatter_rows(pool, slots, flat)
            elif self.backend == "kernels":
                self.kernels.append(flat, pool, scales, slots)
            else:
                codes, sc = quantize_rows(flat, self.fmt)
                _scatter_rows(pool, slots, codes)
                _scatter_rows(scales, slots, sc)
        self.seq_lens.add_(s)
        self.length += s
        # A prompt of several tokens into an empty cache is attended on its own bf16 rows
        # (attention.py takes and drops them); nothing else reads them, and holding them would
        # keep a bf16 copy of every layer's last rows alive (4 GiB a sequence for a 32K prompt
        # of the 8B shapes).
        self.new_rows = (k_rows, v_rows) if start == 0 and s > 1 else None
        return key_states, value_states

    def gathered(self):
        """K, V codes [B, ceil(length / P) · P, Hkv, D] and their scales [B, ..., Hkv] (None for
        bf16), each sequence's pages gathered in table order: a contiguous copy."""
        n, g = self.length, self.pages.gather
        ks = None if self.k_scale is None else g(self.k_scale, n)
        vs = None if self.v_scale is None else g(self.v_scale, n)
        return g(self.keys, n), g(self.values, n), ks, vs

    def dequantized(self):
        """K, V [B, length, Hkv, D] float32 as the kernels read them (gathered through the
        block table)."""
        n = self.length
        k, v, ks, vs = self.gathered()
        k, v = dequantize_rows(k, ks), dequantize_rows(v, vs)
        return k[:, :n], v[:, :n]

    def get_mask_sizes(self, query_length):
        return self.length + query_length, 0

    def get_seq_length(self):
        return self.length

    def get_max_length(self):
        return self.capacity

    def reset(self):
        self.length = 0
        if self.is_initialized:
            self.seq_lens.zero_()

    def crop(self, tokens_to_remove):
        """As transformers' DynamicLayer.crop: a negative count drops that many of the last
        tokens; a positive one is the length to keep (its legacy form; nothing happens when the
        cache is not longer)."""
        if tokens_to_remove > 0:
            n = min(self.length, tokens_to_remove)
        else:
            n = max(0, self.length - abs(tokens_to_remove))
        if self.is_initialized:
            self.seq_lens.fill_(n)
        self.length = n

    def reorder_cache(self, beam_idx):
        """Sequence b takes the contents of sequence beam_idx[b] (its pages copied; the table
        stays, as every layer shares it)."""
        if self.is_initialized:
            idx = beam_idx.to(self.device).long()
            own = self.block_table[:, :self.pages.blocks].long()
            src, dst = own[idx].reshape(-1), own.reshape(-1)
            for name in ("keys", "values", "k_scale", "v_scale"):
                t = getattr(self, name)
                if t is not None:
                    t = _bytes(t)
                    t[dst] = t[src].clone()
            self.seq_lens.copy_(self.seq_lens[idx].clone())


class QattnCache(Cache):
    """A KV cache of ``max_cache_len`` tokens per sequence for models run with
    ``attn_implementation="attn_opt"`` (``qattn.hf.enable``), paged (module docstring).
    ``cache``: ``"int8"``, ``"fp8"`` (e4m3) or ``"bf16"``; ``backend``: ``"auto"`` /
    ``"kernels"`` / ``"torch"``; ``page_size``: tokens per page, a power of two in [1, 256]
    (the kernels: 64 by default, 16 and 8 work too; bf16 pages need at least 8); ``page_seed``:
    None hands pages out in order, an int in a shuffled order (what an engine's allocator
    leaves behind; the tests use it). ``config`` is the model's config (its number of
    layers)."""

    def __init__(self, config, *, max_cache_len: int, cache: str = "int8", backend: str = "auto",
                 page_size: int = DEFAULT_PAGE_SIZE, page_seed=None):
        if backend not in ("auto", "kernels", "torch"):
            raise ValueError(f"backend must be auto, kernels or torch, got {backend!r}")
        if int(max_cache_len) <= 0:
            raise ValueError(f"max_cache_len must be positive, got {max_cache_len}")
        cfg = config.get_text_config() if hasattr(config, "get_text_config") else config
        self.fmt = cache_format(cache)
        self.backend = backend
        n = int(cfg.num_hidden_layers)
        self.pages = PageTable(int(max_cache_len), page_size, page_seed)
        super().__init__(layers=[QattnLayer(self.fmt, int(max_cache_len), backend, self.pages)
                                 for _ in range(n)])

    def update(self, key_states, value_states, layer_idx, *args, **kwargs):
        """Appends the new rows and hands the layer to the attention call that follows (the
        returned states are the new rows only: attention other than attn_opt's would read an
        incomplete cache, so a hand-off of this cache left unconsumed raises at its next
        update)."""
        stale = getattr(_pending, "value", None)
        _pending.value = None
        if stale is not None and stale[0] is self:
            raise UnsupportedError("QattnCache needs the model's attention to be attn_opt's: load "
                                   "it with attn_implementation='attn_opt' or call "
                                   "qattn.hf.enable(model)")
        keys, values = super().update(key_states, value_states, layer_idx, *args, **kwargs)
        _pending.value = (self, self.layers[layer_idx], keys)
        return keys, values

    def batch_repeat_interleave(self, repeats):
        raise UnsupportedError("QattnCache: batch expansion (beam search, num_return_sequences) "
                               "is not supported; expand the inputs instead")

    def batch_select_indices(self, indices):
        raise UnsupportedError("QattnCache: selecting batch rows is not supported")

    @property
    def memory_bytes(self) -> int:
        """Bytes of the allocated K/V pools and scales over all layers (the shared block table,
        its per-position slot lookup and each layer's lengths are not counted)."""
        total = 0
        for layer in self.layers:
            for t in (layer.keys, layer.values, layer.k_scale, layer.v_scale):
                if t is not None:
                    total += t.numel() * t.element_size()
        return total
