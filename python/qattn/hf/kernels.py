"""The compiled kernels behind ``qattn.hf``: which specs a model needs, where they come from
(a directory of prebuilt kernels, the package's ahead-of-time set, attn-opt) and the GPU side of the
cache (plans per batch layout, the quantize-on-append kernels).

For a model with ``Hq`` query heads, ``Hkv`` KV heads and head_dim ``D`` it takes:

* ``decode_q{Hq}_kv{Hkv}_d{D}_{fmt}`` — one query token over the cache (``fmt`` i8 / e4m3 /
  bf16, per-(token, head) scales), dynamic batch and length, ``seq_lens``;
* ``prefill_q{Hq}_kv{Hkv}_d{D}_bf16`` — causal (bottom-right aligned) bf16 prefill with a dynamic
  query length and ``seq_lens``: a prompt's own attention, and queries of several tokens over a bf16
  cache;
* ``append_h{Hkv}_d{D}_{fmt}`` — ``attn.quantize.append`` of bf16 rows into an i8 / e4m3 cache
  with per-(token, head) scales.

``$QATTN_HF_KERNELS`` names a directory holding ``<name>.ptx`` + ``<name>.ptx.launch.json``
(written by ``python -m qattn.hf prebuild DIR ...`` where attn-opt is) for machines without
attn-opt; otherwise a spec is looked up in the ahead-of-time set, then compiled with attn-opt.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..aot import FORMATS
from ..spec import attention, quantize

# Cache formats: the name users pass -> the kernel suffix.
CACHE_FORMATS = {"int8": "i8", "i8": "i8", "fp8": "e4m3", "e4m3": "e4m3", "bf16": "bf16"}
_CODE_DTYPE = {"i8": "i8", "e4m3": "f8E4M3FN"}


def cache_format(name: str) -> str:
    try:
        return CACHE_FORMATS[str(name).lower()]
    except KeyError:
        raise ValueError(f"unknown cache format {name!r}: one of int8, fp8 (e4m3), bf16") from None


def names(q_heads: int, kv_heads: int, head_dim: int, fmt: str) -> dict:
    """{role: kernel name} of one model shape and cache format."""
    out = {"decode": f"decode_q{q_heads}_kv{kv_heads}_d{head_dim}_{fmt}",
           "prefill": f"prefill_q{q_heads}_kv{kv_heads}_d{head_dim}_bf16"}
    if fmt != "bf16":
        out["append"] = f"append_h{kv_heads}_d{head_dim}_{fmt}"
    return out


def spec(role: str, q_heads: int, kv_heads: int, head_dim: int, fmt: str):
    """The Spec of one kernel (role decode / prefill / append)."""
    name = names(q_heads, kv_heads, head_dim, fmt)[role]
    if role == "decode":
        return attention("decode", batch=None, q_len=1, kv_len=None, q_heads=q_heads,
                         kv_heads=kv_heads, head_dim=head_dim, seq_lens=True, name=name,
                         **FORMATS[fmt])
    if role == "prefill":
        return attention("prefill", batch=None, q_len=None, kv_len=None, q_heads=q_heads,
                         kv_heads=kv_heads, head_dim=head_dim, kv_dtype="bf16", causal=True,
                         seq_lens=True, name=name)
    if role == "append":
        return quantize("append", batch=None, tokens=None, capacity=None, heads=kv_heads,
                        head_dim=head_dim, src_dtype="bf16", dtype=_CODE_DTYPE[fmt],
                        granularity="per_token_head", target="sm_90a", name=name)
    raise ValueError(f"unknown kernel role {role!r}")


def prebuilt_dir():
    d = os.environ.get("QATTN_HF_KERNELS")
    return Path(d) if d else None


def source(role, q_heads, kv_heads, head_dim, fmt):
    """What DecodePlan / the quantize kernel loads: a prebuilt PTX path, else the Spec."""
    d = prebuilt_dir()
    name = names(q_heads, kv_heads, head_dim, fmt)[role]
    if d is not None and (d / f"{name}.ptx").is_file():
        return d / f"{name}.ptx"
    return spec(role, q_heads, kv_heads, head_dim, fmt)


def prebuild(out_dir, q_heads, kv_heads, head_dim, formats=("i8", "e4m3", "bf16"), attn_opt=None):
    """Compiles every kernel of the shape and formats into out_dir (attn-opt needed here)."""
    from ..kernels import build
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for fmt in formats:
        for role, name in names(q_heads, kv_heads, head_dim, cache_format(fmt)).items():
            if (out / f"{name}.ptx").is_file():
                continue
            k = build(spec(role, q_heads, kv_heads, head_dim, cache_format(fmt)), attn_opt=attn_opt)
            (out / f"{name}.ptx").write_text(k.ptx)
            (out / f"{name}.ptx.launch.json").write_text(json.dumps(k.meta))
            written.append(name)
    return written


class GpuKernels:
    """The kernels of one (shape, format, device): plans cached per batch layout."""

    def __init__(self, kv_heads, head_dim, fmt, device):
        self.kv_heads, self.head_dim = kv_heads, head_dim
        self.fmt, self.device = fmt, device
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
            fmt = "bf16" if role == "prefill" else self.fmt
            plan = self._ops.DecodePlan(source(role, q_heads, self.kv_heads, self.head_dim, fmt),
                                        device=self.device, batch=batch, kv_len=kv_len, q_len=q_len)
            self._plans[key] = plan
        return plan

    def decode(self, q, k, v, k_scale, v_scale, seq_lens, out):
        """q [B, 1, Hq, D] over the cache k, v [B, capacity, Hkv, D]."""
        plan = self._plan("decode", q.shape[2], q.shape[0], k.shape[1])
        return plan.run(q, k, v, k_scale, v_scale, seq_lens=seq_lens, out=out)

    def prefill(self, q, k, v, seq_lens, out):
        """Causal bf16 prefill: q [B, S, Hq, D] are the last S positions of each seq_lens row."""
        plan = self._plan("prefill", q.shape[2], q.shape[0], k.shape[1], q.shape[1])
        return plan.run(q, k, v, seq_lens=seq_lens, out=out)

    def append(self, rows, cache, scales, positions):
        """Quantizes rows [B, S, Hkv, D] bf16 into cache rows positions[b] + i (no host sync):
        the torch op attn_opt::quantize_append where the extension is built, else the ctypes
        launcher."""
        if self._append is None:
            src = source("append", 0, self.kv_heads, self.head_dim, self.fmt)
            if isinstance(src, Path):
                from ..gpu_quantize import GpuQuantizeKernel
                self._append = GpuQuantizeKernel.from_files(src)
            else:
                from ..kernels import build
                self._append = build(src)
        if self._ops.HAS_EXTENSION:
            self._ops.quantize_append(self._append, rows, cache, scales, positions=positions)
        else:
            self._append(rows, cache, scales, positions=positions, check_positions=False)
