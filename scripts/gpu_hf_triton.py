"""scripts/gpu_hf_triton.py — a split-KV, head-packed Triton int8 decode kernel (the peer file's
`_split` / `_combine`, loaded from a path given at run time, not part of this repository) as a
drop-in attention for Hugging Face transformers, with the int8 cache it reads.

* `load_peer(path)` imports only the peer file's imports, constants and function definitions (the
  file runs a benchmark at module level, which is skipped) and checks the kernels' signatures.
* `TritonInt8Cache`: per layer, K / V codes int8 `[B * Hkv, capacity, D]` and float32 scales
  `[B * Hkv, capacity]`, one per token and head (`amax / 127`, amax clamped to 1e-6; rounded half
  away from zero), the layout and scales the kernel reads. New rows are quantized by one Triton
  launch per layer (K and V), written at a device-side position, so a CUDA graph replays it.
* `triton_int8_attention`, registered as "triton_int8" with `AttentionInterface` (its mask
  function is transformers' SDPA mask): a prompt (empty cache) runs transformers' SDPA on the
  prompt's own K/V; one query token runs the peer kernel over the cache.

The kernel reads `CTX` rows per sequence at a row stride of `CTX`; a cache longer than the tokens
it holds needs the stride apart from the length. So the split-KV launch is issued as the kernel's
own arguments allow: splits 0 .. n-2 over `[0, (n-1) c)` (chunk `c`, a multiple of 64), the last
split in a second launch of the same kernel over the rest, its pointers moved to its first row and
its partial-output slot; `_combine` merges the n partials as in the peer. The host passes the
length, so a CUDA graph of a step holds that step's length (capture one graph per step).
"""

import ast
import importlib.util
import math
import os
import tempfile

import torch
import triton
import triton.language as tl
from transformers import AttentionInterface
from transformers.cache_utils import Cache, CacheLayerMixin
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

NAME = "triton_int8"
BM = BN = 64  # the peer's query rows per program and keys per iteration
SPLIT_ARGS = ["Q", "K", "V", "KS", "VS", "OP", "MP", "LP", "sm_scale", "CTX", "CHUNK", "ROWS",
              "BM", "BN", "D", "NSPLIT"]
COMBINE_ARGS = ["OP", "MP", "LP", "O", "ROWS", "BM", "D", "NSPLIT"]
_state = {"peer": None, "pending": None}


class PeerError(RuntimeError):
    """The peer file is missing or does not hold the kernels this module launches."""


def peer_source(text, filename="<peer>"):
    """The peer's top-level imports, function definitions (with their decorators) and constant
    assignments, in file order; everything else (the benchmark it runs) is left out."""
    tree = ast.parse(text, filename)
    lines = text.splitlines(keepends=True)
    parts = []
    for node in tree.body:
        keep = isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef))
        keep |= (isinstance(node, ast.Assign) and len(node.targets) == 1
                 and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Constant))
        if keep:
            first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            parts.append("".join(lines[first - 1:node.end_lineno]))
    return "\n".join(parts)


def load_peer(path):
    """Imports the peer's kernels from `path` (see peer_source); PeerError if absent or changed."""
    if not path or not os.path.isfile(path):
        raise PeerError(f"Triton peer file not found: {path!r}")
    with open(path, encoding="utf-8") as f:
        src = peer_source(f.read(), path)
    # Triton reads a kernel's source through inspect: the kept part goes to a real file.
    tmp = os.path.join(tempfile.mkdtemp(prefix="triton-peer-"), "triton_peer_kernels.py")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(f"# kernels extracted from {path}\n{src}\n")
    spec = importlib.util.spec_from_file_location("triton_peer_kernels", tmp)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for name, args in (("_split", SPLIT_ARGS), ("_combine", COMBINE_ARGS)):
        fn = getattr(mod, name, None)
        if list(getattr(fn, "arg_names", [])) != args:
            raise PeerError(f"{path}: expected a Triton kernel {name}({', '.join(args)})")
    _state["peer"] = mod
    return mod


def fit_nsplit(length, nsplit):
    """The peer sweeps splits while each keeps >= 128 keys; the same bound here."""
    while nsplit > 1 and length // nsplit < 128:
        nsplit //= 2
    return nsplit


def peer_attend(q, k, v, ks, vs, length, nsplit):
    """q [N, 1, G, D] bf16 (G query heads per KV head); k, v [N, CAP, D] int8; ks, vs [N, CAP]
    float32. Attention of each of the N rows over keys [0, length). Returns [N, 1, G, D] bf16."""
    peer = _state["peer"]
    n_seq, sq, g, d = q.shape
    cap, rows, n = k.shape[1], sq * g, fit_nsplit(length, nsplit)
    if rows > BM or not 0 < length <= cap:
        raise ValueError(f"triton_int8: {rows} query rows (at most {BM}), length {length} of {cap}")
    op = torch.empty(n_seq, n, BM, d, device=q.device, dtype=torch.float32)
    mp = torch.empty(n_seq, n, BM, device=q.device, dtype=torch.float32)
    lp = torch.empty_like(mp)
    o = torch.empty(n_seq, sq, g, d, device=q.device, dtype=q.dtype)
    scale = 1.0 / math.sqrt(d)
    c = length if n == 1 else length // n // BN * BN
    if n > 1:
        peer._split[(n - 1, n_seq)](q, k, v, ks, vs, op, mp, lp, scale, cap, c, rows, BM, BN, d,
                                    n, num_warps=4, num_stages=3)
    off = (n - 1) * c  # the last split: its rows and partial slot start there
    peer._split[(1, n_seq)](q, k[:, off:], v[:, off:], ks[:, off:], vs[:, off:], op[:, n - 1:],
                            mp[:, n - 1:], lp[:, n - 1:], scale, cap, length - off, rows, BM, BN,
                            d, n, num_warps=4, num_stages=3)
    peer._combine[(rows, n_seq)](op, mp, lp, o, rows, BM, d, n, num_warps=4)
    return o


def tail_length(length, nsplit):
    n = fit_nsplit(length, nsplit)
    return length if n == 1 else length - (n - 1) * (length // n // BN * BN)


@triton.jit
def _quantize_append(X, sxb, sxh, sxs, CODES, SCALES, POS, CAP, H: tl.constexpr,
                     D: tl.constexpr):
    """Row s of sequence n = b * H + h of X [B, H, S, D] (last stride 1) -> int8 codes at
    position POS[0] + s of CODES [B * H, CAP, D], its scale into SCALES [B * H, CAP]."""
    n = tl.program_id(0)
    s = tl.program_id(1)
    d = tl.arange(0, D)
    x = tl.load(X + (n // H) * sxb + (n % H) * sxh + s * sxs + d).to(tl.float32)
    scale = tl.maximum(tl.max(tl.abs(x), 0), 1e-6) / 127.0
    y = x / scale
    y = tl.where(y >= 0, tl.floor(y + 0.5), -tl.floor(0.5 - y))
    y = tl.minimum(tl.maximum(y, -127.0), 127.0)
    at = tl.load(POS) + s
    tl.store(CODES + (n * CAP + at) * D + d, y.to(tl.int8))
    tl.store(SCALES + n * CAP + at, scale)


def quantize_append(x, codes, scales, pos):
    """x [B, H, S, D] -> codes / scales at rows pos[0] .. pos[0] + S - 1 (see _quantize_append)."""
    if x.stride(-1) != 1:
        x = x.contiguous()
    b, h, s, d = x.shape
    _quantize_append[(b * h, s)](x, x.stride(0), x.stride(1), x.stride(2), codes, scales, pos,
                                 codes.shape[1], h, d)


def reference_quantize(x):
    """The same quantization in torch: x [..., D] -> (int8 codes, float32 scales [...])."""
    x = x.float()
    scale = x.abs().amax(-1).clamp(min=1e-6) / 127.0
    y = x / scale[..., None]
    y = torch.where(y >= 0, torch.floor(y + 0.5), -torch.floor(0.5 - y)).clamp(-127, 127)
    return y.to(torch.int8), scale


class TritonInt8Layer(CacheLayerMixin):
    """One layer's int8 K/V in the peer kernel's layout (module docstring)."""

    is_compileable = False
    is_sliding = False

    def __init__(self, capacity):
        super().__init__()
        self.capacity, self.length = capacity, 0
        self.pos = None  # device int64 [1]: where the next rows go (advanced on the device)

    def lazy_initialization(self, key_states, value_states):
        b, h, _, d = key_states.shape
        dev = key_states.device
        self.batch_size, self.num_heads, self.head_dim, self.device = b, h, d, dev
        self.keys = torch.zeros(b * h, self.capacity, d, dtype=torch.int8, device=dev)
        self.values = torch.zeros_like(self.keys)
        self.k_scale = torch.ones(b * h, self.capacity, dtype=torch.float32, device=dev)
        self.v_scale = torch.ones_like(self.k_scale)
        self.pos = torch.zeros(1, dtype=torch.int64, device=dev)
        self.is_initialized = True

    def update(self, key_states, value_states, *args, **kwargs):
        """Appends [B, Hkv, S, D] rows quantized; returns the given states (a prompt's attention
        reads them)."""
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        b, h, s, d = key_states.shape
        if (b, h, d) != (self.batch_size, self.num_heads, self.head_dim):
            raise ValueError(f"TritonInt8Cache holds {self.batch_size}x{self.num_heads}x"
                             f"{self.head_dim}, got {b}x{h}x{d}")
        if self.length + s > self.capacity:
            raise ValueError(f"TritonInt8Cache: {self.length} + {s} tokens exceed the capacity "
                             f"{self.capacity}")
        quantize_append(key_states, self.keys, self.k_scale, self.pos)
        quantize_append(value_states, self.values, self.v_scale, self.pos)
        self.pos.add_(s)
        self.length += s
        return key_states, value_states

    def get_mask_sizes(self, query_length):
        return self.length + query_length, 0

    def get_seq_length(self):
        return self.length

    def get_max_length(self):
        return self.capacity

    def crop(self, tokens_to_remove):
        """As transformers' DynamicLayer.crop (negative: drop that many; else the length)."""
        if tokens_to_remove > 0:
            n = min(self.length, tokens_to_remove)
        else:
            n = max(0, self.length - abs(tokens_to_remove))
        self.length = n
        if self.is_initialized:
            self.pos.fill_(n)

    def reset(self):
        self.crop(0 if self.length == 0 else -self.length)


class TritonInt8Cache(Cache):
    """The int8 cache the peer kernel reads, `max_cache_len` tokens per sequence. `nsplit`: the
    split count, or None to time 1 .. 64 splits at the first decode step and keep the fastest
    (the peer's own sweep)."""

    graph_per_step = True  # the kernel's length is a launch argument: one CUDA graph per length

    def __init__(self, config, *, max_cache_len, nsplit=None):
        cfg = config.get_text_config() if hasattr(config, "get_text_config") else config
        self.nsplit = nsplit
        super().__init__(layers=[TritonInt8Layer(int(max_cache_len))
                                 for _ in range(int(cfg.num_hidden_layers))])

    def update(self, key_states, value_states, layer_idx, *args, **kwargs):
        keys, values = super().update(key_states, value_states, layer_idx, *args, **kwargs)
        _state["pending"] = (self, self.layers[layer_idx], keys)
        return keys, values


def _sweep_nsplit(run, length, device):
    """The fastest split count of 1 .. 64 (CUDA events, median of 5), or 4 off CUDA."""
    if device.type != "cuda":
        return 4
    best = None
    for n in (1, 2, 4, 8, 16, 32, 64):
        if fit_nsplit(length, n) != n:
            break
        run(n)
        times = []
        for _ in range(5):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            run(n)
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))
        t = sorted(times)[2]
        best = (t, n) if best is None or t < best[0] else best
    return best[1]


def _decode(cache, layer, query):
    b, hq, _, d = query.shape
    g = hq // layer.num_heads
    q = query[:, :, 0].reshape(b * layer.num_heads, 1, g, d).contiguous()

    def run(n, length=layer.length):
        return peer_attend(q, layer.keys, layer.values, layer.k_scale, layer.v_scale, length, n)

    if cache.nsplit is None:
        cache.nsplit = _sweep_nsplit(run, layer.length, query.device)
    if not getattr(cache, "warm", False):
        # Triton compiles a variant per divisibility of the last split's length by 16: both
        # now, before any CUDA graph capture.
        t = tail_length(layer.length, cache.nsplit)
        run(cache.nsplit, layer.length - (t % 16 or 1))
        cache.warm = True
    return run(cache.nsplit).view(b, 1, hq, d)


def triton_int8_attention(module, query, key, value, attention_mask, dropout=0.0, scaling=None,
                          **kwargs):
    """transformers' attention interface: query [B, Hq, S, D] -> ([B, S, Hq, D], None)."""
    pending, _state["pending"] = _state["pending"], None
    if pending is None or pending[2] is not key:
        raise ValueError("triton_int8 attention needs a TritonInt8Cache")
    cache, layer, _ = pending
    d, s = query.shape[-1], query.shape[2]
    if scaling is not None and abs(scaling * math.sqrt(d) - 1) > 1e-6:
        raise ValueError(f"triton_int8: the kernel scales by head_dim ** -0.5, not {scaling}")
    if s == 1 and layer.length > 1:
        return _decode(cache, layer, query), None
    if layer.length == s:  # a prompt: SDPA on its own K/V
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout,
                                      scaling=scaling, **kwargs)
    raise ValueError(f"triton_int8: {s} query tokens after {layer.length - s} cached ones")


def register():
    AttentionInterface.register(NAME, triton_int8_attention)
    AttentionMaskInterface.register(NAME, sdpa_mask)
    return NAME
