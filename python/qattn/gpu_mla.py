"""GPU MLA decode from Python: launch the ``attn.mla_decode`` kernel and the
``attn.quantize.mla_append`` kernel that writes its FP8 cache (docs/GPUMLA.md) on torch CUDA
tensors.

``qattn.build(spec)`` on an ``attn.mla_decode`` spec for ``#attn.target<sm_90a>`` returns a
``GpuMLAKernel``::

    mla = qattn.build(qattn.spec.mla_decode(batch=None, sq=2, heads=128, kv_len=None, topk=2048))
    out = mla(q, kv, indices)   # q [B, 2, 128, 576] bf16, kv [B, T, 656] uint8, indices int32

Tensors are checked against the launch metadata first (device, dtype, shape, contiguity, 16-byte
alignment). Index entries outside [0, len) are skipped by the kernel, never read.
"""

from __future__ import annotations

from .gpu import LaunchFiles, expect_tensor, launch_kernel, load_module, resolve_grid
from .kernels import KernelArgumentError


class GpuMLAKernel(LaunchFiles):
    """One compiled MLA decode op: PTX + launch metadata; loaded on the GPU at the first call."""

    def __init__(self, ptx: str, meta: dict, path: str = ""):
        self._take(ptx, meta, path, lambda k: k == "mla_decode", "MLA decode")
        self.kernel = meta["kernels"][0]

    def __repr__(self) -> str:
        p = self.problem
        what = f"top-{p['topk'] if p['topk'] >= 0 else '?'} sparse" if p["sparse"] else "dense"
        return (f"<qattn GpuMLAKernel {self.kernel['name']}: {p['heads']} heads, {what}, "
                f"{p['kv_format']} cache, crossover {self.schedule['crossover']}>")

    def _load(self):
        if self._loaded is None:
            ctx, mod, by_name, _ = load_module(self.ptx, self.meta["arch"], [self.kernel["name"]])
            self._loaded = (ctx, mod, by_name[self.kernel["name"]])
        return self._loaded

    def __call__(self, q, kv, indices=None, *, seq_lens=None, out=None, stream=None):
        """Returns ``out`` (allocated when not given): bf16 [B, Sq, H, Dv]."""
        import torch

        p = self.problem
        name = self.kernel["name"]
        if q.dim() != 4 or kv.dim() != 3:
            raise KernelArgumentError("q must be [B, Sq, H, Dk] and kv [B, T, bytes]")
        b, sq, t = int(q.shape[0]), int(q.shape[1]), int(kv.shape[1])
        dk = p["head_dim_v"] + p["rope_dim"]
        for key, val in (("batch", b), ("sq", sq), ("kv_len", t)):
            if p[key] >= 0 and p[key] != val:
                raise KernelArgumentError(f"the kernel was compiled for {key} {p[key]}, got {val}")
        expect_tensor(f"{name}: q", q, torch, ("bfloat16",), (b, sq, p["heads"], dk))
        if p["kv_format"] == "bf16":
            expect_tensor(f"{name}: kv", kv, torch, ("bfloat16",), (b, t, dk))
        else:
            expect_tensor(f"{name}: kv", kv, torch, ("uint8", "int8"), (b, t, p["token_bytes"]))
        topk = 0
        if p["sparse"]:
            if indices is None:
                raise KernelArgumentError(f"{name} is sparse: pass indices [B, Sq, topk] int32")
            topk = int(indices.shape[2]) if indices.dim() == 3 else -1
            if p["topk"] >= 0 and topk != p["topk"]:
                raise KernelArgumentError(f"the kernel was compiled for topk {p['topk']}, "
                                          f"got {topk}")
            expect_tensor(f"{name}: indices", indices, torch, ("int32",), (b, sq, topk))
        elif indices is not None:
            raise KernelArgumentError(f"{name} is dense: it takes no indices")
        if p["seq_lens"] and seq_lens is not None:
            expect_tensor(f"{name}: seq_lens", seq_lens, torch, ("int32",), (b,))
        elif seq_lens is not None:
            raise KernelArgumentError(f"{name} was compiled without seq_lens")
        if out is None:
            out = torch.empty(b, sq, p["heads"], p["head_dim_v"], dtype=torch.bfloat16,
                              device=q.device)
        expect_tensor(f"{name}: out", out, torch, ("bfloat16",), (b, sq, p["heads"], p["head_dim_v"]))
        if b == 0 or sq == 0:
            return out
        _, _, handle = self._load()
        ptr = lambda x: x.data_ptr() if x is not None and x.numel() else 0
        values = {"q": ptr(q), "kv": ptr(kv), "indices": ptr(indices), "seq_lens": ptr(seq_lens),
                  "out": ptr(out), "batch": b, "sq": sq, "kv_len": t, "topk": topk}
        grid = resolve_grid(self.kernel, {"sq": sq, "batch": b})
        s = stream if stream is not None else torch.cuda.current_stream()
        launch_kernel(handle, self.kernel, grid, values, s.cuda_stream, [])
        return out


class GpuMLAQuantizeKernel(LaunchFiles):
    """One compiled ``attn.quantize.mla_append``: new latent tokens → the FP8 token cache."""

    def __init__(self, ptx: str, meta: dict, path: str = ""):
        self._take(ptx, meta, path, lambda k: k == "quantize_mla", "MLA quantize")
        self.kernel = meta["kernels"][0]

    def __repr__(self) -> str:
        p = self.problem
        return (f"<qattn GpuMLAQuantizeKernel {self.kernel['name']}: {p['src_dtype']} "
                f"{p['head_dim_v']} + {p['rope_dim']} → {p['token_bytes']}-byte tokens>")

    def __call__(self, src, cache, positions, *, stream=None):
        """Writes src [B, S, Dk] into cache [B, T, bytes] at rows positions[b] + i (rows outside
        the cache are skipped). Returns ``cache``."""
        import torch

        p = self.problem
        name = self.kernel["name"]
        if src.dim() != 3 or cache.dim() != 3:
            raise KernelArgumentError("src must be [B, S, Dk] and cache [B, T, bytes]")
        b, s, t = int(src.shape[0]), int(src.shape[1]), int(cache.shape[1])
        for key, val in (("batch", b), ("new_tokens", s), ("capacity", t)):
            if p[key] >= 0 and p[key] != val:
                raise KernelArgumentError(f"the kernel was compiled for {key} {p[key]}, got {val}")
        dt = {"bf16": "bfloat16", "f16": "float16", "f32": "float32"}[p["src_dtype"]]
        expect_tensor(f"{name}: src", src, torch, (dt,), (b, s, p["head_dim_v"] + p["rope_dim"]))
        expect_tensor(f"{name}: cache", cache, torch, ("uint8", "int8"), (b, t, p["token_bytes"]))
        expect_tensor(f"{name}: positions", positions, torch, ("int32",), (b,))
        if b * s == 0:
            return cache
        if self._loaded is None:
            _, _, by_name, _ = load_module(self.ptx, self.meta["arch"], [name])
            self._loaded = by_name[name]
        values = {"src": src.data_ptr(), "positions": positions.data_ptr(),
                  "cache": cache.data_ptr(), "batch": b, "new_tokens": s, "capacity": t}
        grid = resolve_grid(self.kernel, {"batch": b, "new_tokens": s,
                                          "tokens_per_cta": int(self.schedule["tokens_per_cta"])})
        st = stream if stream is not None else torch.cuda.current_stream()
        launch_kernel(self._loaded, self.kernel, grid, values, st.cuda_stream, [])
        return cache


__all__ = ["GpuMLAKernel", "GpuMLAQuantizeKernel"]
