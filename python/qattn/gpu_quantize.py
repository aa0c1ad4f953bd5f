"""GPU quantize kernels from Python: launch ``attn.quantize.append`` / ``attn.quantize.dynamic``
kernels (docs/GPUQuantize.md) on torch CUDA tensors.

``qattn.build(spec)`` on a quantize spec whose op targets ``#attn.target<sm_90a>`` returns a
``GpuQuantizeKernel``::

    append = qattn.build(spec)      # attn.quantize.append, i8 per_token_head
    append(new_k, k_cache, k_scale, positions=pos)        # writes cache rows pos[b] + i

Tensors are checked against the launch metadata first (device, dtype, shape, contiguity, 16-byte
alignment); with ``check_positions=True`` (the default) the append positions are also checked on
the host — every new token must land inside the cache — which synchronizes with the GPU. The kernel
itself never writes outside the cache: rows outside [0, capacity) are skipped.
"""

from __future__ import annotations

from .gpu import LaunchFiles, expect_tensor, launch_kernel, load_module, resolve_grid
from .kernels import KernelArgumentError
from .spec import scale_shape

_TORCH_SRC = {"bf16": "bfloat16", "f16": "float16", "f32": "float32"}
_TORCH_CODE = {"i8": ("int8",), "ui8": ("uint8",), "f8E4M3FN": ("float8_e4m3fn", "uint8")}
_TORCH_SCALE = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}


class GpuQuantizeKernel(LaunchFiles):
    """One compiled quantize op: PTX + launch metadata; loaded on the GPU at the first call."""

    def __init__(self, ptx: str, meta: dict, path: str = ""):
        kind = self._take(ptx, meta, path, lambda k: k.startswith("quantize"), "quantize")
        self.kernel = meta["kernels"][0]
        self.append = kind == "quantize_append"
        #: attn.quantize.append_paged: launched by qattn.torch_ops.quantize_append_paged only.
        self.paged = kind == "quantize_append_paged"

    def __repr__(self) -> str:
        p = self.problem
        sym = "symmetric" if p["symmetric"] else "asymmetric"
        return (f"<qattn GpuQuantizeKernel {self.kernel['name']}: {p['src_dtype']} → "
                f"{p['code_dtype']} {p['granularity']} {sym}, {p['heads']}x{p['head_dim']}>")

    def _expect(self, name, t, torch, dtypes, shape):
        expect_tensor(f"{self.kernel['name']}: {name}", t, torch, dtypes, shape)

    def __call__(self, src, dst, scales, zeros=None, *, positions=None, check_positions=True,
                 stream=None):
        """Quantizes ``src`` [B, S, H, D] into ``dst`` (the cache [B, capacity, H, D] for append,
        a tensor of src's shape for dynamic), writing ``scales`` (and ``zeros``) for token-local
        granularities and reading them for static ones. Returns ``dst``."""
        import torch

        p = self.problem
        if self.paged:
            raise KernelArgumentError(f"{self.kernel['name']} is a paged append (slot_mapping): "
                                      "run it with qattn.torch_ops.quantize_append_paged")
        if src.dim() != 4 or dst.dim() != 4:
            raise KernelArgumentError("src and dst must be 4-D [B, S, H, D]")
        b, s, h, d = (int(v) for v in src.shape)
        cap = int(dst.shape[1])
        for key, val in (("batch", b), ("new_tokens", s), ("capacity", cap)):
            if p[key] >= 0 and p[key] != val:
                raise KernelArgumentError(f"the kernel was compiled for {key} {p[key]}, got {val}")
        if (h, d) != (p["heads"], p["head_dim"]):
            raise KernelArgumentError(f"the kernel was compiled for {p['heads']} heads of "
                                      f"{p['head_dim']}, got {h}x{d}")
        self._expect("src", src, torch, (_TORCH_SRC[p["src_dtype"]],), (b, s, h, d))
        self._expect("dst", dst, torch, _TORCH_CODE[p["code_dtype"]],
                     (b, cap if self.append else s, h, d))
        shape = tuple(scale_shape(p["granularity"], [b, cap if self.append else s, h, d]))
        self._expect("scales", scales, torch, (_TORCH_SCALE[p["scale_dtype"]],), shape)
        if p["symmetric"]:
            if zeros is not None:
                raise KernelArgumentError("zeros given, but the scheme is symmetric")
        else:
            if zeros is None:
                raise KernelArgumentError("zeros are required: the scheme is asymmetric")
            self._expect("zeros", zeros, torch, _TORCH_CODE[p["code_dtype"]][:1], shape)
        if self.append:
            if positions is None:
                raise KernelArgumentError("positions ([B] int32) are required by quantize.append")
            self._expect("positions", positions, torch, ("int32",), (b,))
            if check_positions and b and s:
                lo, hi = int(positions.min()), int(positions.max())
                if lo < 0 or hi + s > cap:
                    raise KernelArgumentError(f"positions {lo}..{hi} + {s} new tokens do not fit "
                                              f"a cache of {cap}")
        elif positions is not None:
            raise KernelArgumentError("positions given, but quantize.dynamic has none")
        groups = b * s * int(self.schedule["groups_per_token"])
        if groups >= 2 ** 31:
            raise KernelArgumentError(f"{groups} scale groups in one launch (at most 2^31 - 1)")
        if groups == 0:
            return dst
        if self._loaded is None:
            self._loaded = load_module(self.ptx, self.meta["arch"], [self.kernel["name"]])
        handle = self._loaded[2][self.kernel["name"]]
        values = {"src": src.data_ptr(),
                  "positions": positions.data_ptr() if positions is not None else 0,
                  "dst": dst.data_ptr(), "scales": scales.data_ptr(),
                  "zeros": zeros.data_ptr() if zeros is not None else 0,
                  "batch": b, "new_tokens": s, "capacity": cap if self.append else s}
        grid = resolve_grid(self.kernel, {
            "batch": b, "new_tokens": s,
            "groups_per_token": int(self.schedule["groups_per_token"]),
            "groups_per_cta": int(self.schedule["groups_per_cta"])})
        stream_handle = stream if stream is not None else torch.cuda.current_stream(src.device).cuda_stream
        with torch.cuda.device(src.device):
            launch_kernel(handle, self.kernel, grid, values, stream_handle, [])
        return dst


__all__ = ["GpuQuantizeKernel"]
