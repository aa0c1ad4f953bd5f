"""``QattnCache``: a transformers ``Cache`` holding an int8 / fp8 (e4m3) / bf16 KV cache in the
layout attn-opt's kernels read, quantized on append.

Storage per layer, allocated at the first update (batch, heads and device from the first keys):
K and V codes ``[B, capacity, Hkv, D]`` (int8, float8_e4m3fn or bfloat16) and, for int8 / fp8,
float32 scales ``[B, capacity, Hkv]`` (one per token and head: ``amax / 127`` or ``amax / 448``,
the arithmetic of ``qattn.quant``), plus the lengths (``seq_lens``, int32 ``[B]`` on the device,
advanced in place: no host sync). Every batch row holds the same number of tokens (transformers'
generate without padding); the storage is contiguous per sequence, so a paged store can replace it
behind the same ``append`` / ``attend`` methods.

Backends: ``"kernels"`` (CUDA tensors: attn-opt's quantize-append, decode and prefill kernels
through ``qattn.torch_ops``) and ``"torch"`` (a reference in plain torch on any device: the same
quantization and the same attention semantics; slow, for tests and CPU-only machines).
``"auto"`` picks ``kernels`` on CUDA and raises on other devices (name ``"torch"`` explicitly).
"""

from __future__ import annotations

import math
import threading

import torch
from transformers.cache_utils import Cache, CacheLayerMixin

from .kernels import GpuKernels, cache_format

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


class QattnLayer(CacheLayerMixin):
    """One layer's K/V in attn-opt's layout (see the module docstring)."""

    is_compileable = False
    is_sliding = False

    def __init__(self, fmt, capacity, backend):
        super().__init__()
        self.fmt, self.capacity, self.backend = fmt, capacity, backend
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
        shape = (b, self.capacity, h, d)
        self.keys = torch.zeros(shape, dtype=CODE_DTYPE[self.fmt], device=dev)
        self.values = torch.zeros(shape, dtype=CODE_DTYPE[self.fmt], device=dev)
        if self.fmt != "bf16":
            self.k_scale = torch.ones(shape[:3], dtype=torch.float32, device=dev)
            self.v_scale = torch.ones(shape[:3], dtype=torch.float32, device=dev)
        self.seq_lens = torch.zeros(b, dtype=torch.int32, device=dev)
        if self.backend == "kernels":
            self.kernels = GpuKernels(h, d, self.fmt, dev)
        self.is_initialized = True

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
        """Appends [B, Hkv, S, D] rows (quantized); returns the given states unchanged."""
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        self._check(key_states, value_states)
        s, start = key_states.shape[2], self.length
        k_rows = key_states.transpose(1, 2).to(torch.bfloat16).contiguous()
        v_rows = value_states.transpose(1, 2).to(torch.bfloat16).contiguous()
        if self.fmt == "bf16":
            self._copy_rows(k_rows, v_rows)
        elif self.backend == "kernels":
            self.kernels.append(k_rows, self.keys, self.k_scale, self.seq_lens)
            self.kernels.append(v_rows, self.values, self.v_scale, self.seq_lens)
        else:
            for rows, codes, scales in ((k_rows, self.keys, self.k_scale),
                                        (v_rows, self.values, self.v_scale)):
                c, sc = quantize_rows(rows, self.fmt)
                codes[:, start:start + s] = c
                scales[:, start:start + s] = sc
        self.seq_lens.add_(s)
        self.length += s
        # A prompt into an empty 8-bit cache is attended on its own bf16 rows (attention.py takes
        # and drops them); nothing else reads them, and holding them would keep a bf16 copy of
        # every layer's last rows alive (4 GiB a sequence for a 32K prompt of the 8B shapes).
        self.new_rows = (k_rows, v_rows) if start == 0 and self.fmt != "bf16" else None
        return key_states, value_states

    def _copy_rows(self, k_rows, v_rows):
        """bf16: row i of batch row b goes to seq_lens[b] + i, read on the device like the append
        kernel's positions (a CUDA graph replays it at each step's position); rows past the
        capacity are skipped, as the kernel skips them. One scatter without a host sync: skipped
        rows are aimed at the last slot with the value that slot gets anyway, so duplicate
        indices write equal values."""
        b, s = k_rows.shape[:2]
        dev, cap = k_rows.device, self.capacity
        start = self.seq_lens.long()[:, None]
        i = torch.arange(s, device=dev)[None, :].expand(b, s)
        at = start + i
        over = at >= cap
        last = (cap - 1 - start).expand(b, s)  # the row that lands in the last slot, if any
        src = torch.where(over, last, i).clamp(0, s - 1)
        keep_old = (over & ((last < 0) | (last >= s)))[..., None, None]
        at = at.clamp(max=cap - 1)
        bi = torch.arange(b, device=dev)[:, None].expand(b, s)
        for rows, store in ((k_rows, self.keys), (v_rows, self.values)):
            store[bi, at] = torch.where(keep_old, store[bi, at], rows[bi, src])

    def dequantized(self):
        """K, V [B, length, Hkv, D] float32 as the kernels read them."""
        n = self.length
        ks = None if self.k_scale is None else self.k_scale[:, :n]
        vs = None if self.v_scale is None else self.v_scale[:, :n]
        return dequantize_rows(self.keys[:, :n], ks), dequantize_rows(self.values[:, :n], vs)

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
        if self.is_initialized:
            idx = beam_idx.to(self.device)
            for name in ("keys", "values", "k_scale", "v_scale"):
                t = getattr(self, name)
                if t is not None:
                    t.copy_(t.index_select(0, idx))


class QattnCache(Cache):
    """A KV cache of ``max_cache_len`` tokens per sequence for models run with
    ``attn_implementation="attn_opt"`` (``qattn.hf.enable``). ``cache``: ``"int8"``, ``"fp8"``
    (e4m3) or ``"bf16"``; ``backend``: ``"auto"`` / ``"kernels"`` / ``"torch"`` (module
    docstring). ``config`` is the model's config (its number of layers)."""

    def __init__(self, config, *, max_cache_len: int, cache: str = "int8", backend: str = "auto"):
        if backend not in ("auto", "kernels", "torch"):
            raise ValueError(f"backend must be auto, kernels or torch, got {backend!r}")
        if int(max_cache_len) <= 0:
            raise ValueError(f"max_cache_len must be positive, got {max_cache_len}")
        cfg = config.get_text_config() if hasattr(config, "get_text_config") else config
        self.fmt = cache_format(cache)
        self.backend = backend
        n = int(cfg.num_hidden_layers)
        super().__init__(layers=[QattnLayer(self.fmt, int(max_cache_len), backend)
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
        """Bytes of the allocated K/V codes and scales over all layers."""
        total = 0
        for layer in self.layers:
            for t in (layer.keys, layer.values, layer.k_scale, layer.v_scale):
                if t is not None:
                    total += t.numel() * t.element_size()
        return total
