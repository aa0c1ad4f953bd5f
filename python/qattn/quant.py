"""K/V quantization in NumPy: the quantizers of docs/GPUDecode.md, per granularity, and calibration.

A cache tensor is [T, H, D] (tokens, KV heads, head_dim). A granularity says which elements share
one float32 scale:

| granularity      | scale shape   | elements sharing a scale            |
|------------------|---------------|-------------------------------------|
| ``per_tensor``   | [1]           | all                                 |
| ``per_head``     | [H]           | one head, all tokens                |
| ``per_token``    | [T]           | one token, all heads                |
| ``per_token_head`` | [T, H]      | one (token, head) row of D          |
| ``per_group<g>`` | [T, H, D/g]   | g consecutive channels of one row   |

Formats (symmetric; the same arithmetic as ``lib/Reference/DecodeReference.cpp``):

- ``i8``: scale = max(amax / 127, 1e-8); code = clamp(round-half-away-from-zero(x / scale), ±127).
- ``e4m3`` (OCP float8 E4M3FN): scale = max(amax / 448, 1e-8); code = x / scale rounded to the
  nearest e4m3 value (ties to even), saturating at ±448; NaN stays NaN.
- ``bf16``: no scale; round to nearest even bfloat16.

An all-zero group gets the minimum scale 1e-8 and quantizes to zeros. Non-finite inputs (±inf,
NaN) are refused with ``ValueError`` naming the first one: a single inf would make its group's
scale infinite and every other code of the group zero, silently. ``calibrate`` returns static
scales (amax per group of sample data / qmax) for granularities that do not follow the token, the
ones a streaming KV cache cannot compute on the fly (per_head, per_tensor).
"""

from __future__ import annotations

import re
from typing import Optional, Tuple

import numpy as np

MIN_SCALE = np.float32(1e-8)
QMAX = {"i8": 127.0, "e4m3": 448.0}
GRANULARITIES = ("per_tensor", "per_head", "per_token", "per_token_head", "per_group<g>")


def parse_granularity(g: str) -> Tuple[str, Optional[int]]:
    m = re.fullmatch(r"per_group<(\d+)>", g)
    if m:
        size = int(m.group(1))
        if size <= 0:
            raise ValueError(f"group size must be positive: {g!r}")
        return "per_group", size
    if g in ("per_tensor", "per_head", "per_token", "per_token_head"):
        return g, None
    raise ValueError(f"unknown granularity {g!r} (expected one of {', '.join(GRANULARITIES)})")


def _grouped(x: np.ndarray, granularity: str) -> np.ndarray:
    """View x [T, H, D] as [..groups.., members] with the reduction over the last axis."""
    if x.ndim != 3:
        raise ValueError(f"expected a [T, H, D] tensor, got shape {x.shape}")
    t, h, d = x.shape
    kind, g = parse_granularity(granularity)
    if kind == "per_tensor":
        return x.reshape(1, t * h * d)
    if kind == "per_head":
        return x.transpose(1, 0, 2).reshape(h, t * d)
    if kind == "per_token":
        return x.reshape(t, h * d)
    if kind == "per_token_head":
        return x.reshape(t, h, d)
    if d % g:
        raise ValueError(f"per_group<{g}> needs head_dim divisible by {g}, got {d}")
    return x.reshape(t, h, d // g, g)


def _ungroup(y: np.ndarray, shape, granularity: str) -> np.ndarray:
    t, h, d = shape
    if parse_granularity(granularity)[0] == "per_head":
        return y.reshape(h, t, d).transpose(1, 0, 2)
    return y.reshape(t, h, d)


def scales_for(x: np.ndarray, dtype: str, granularity: str) -> np.ndarray:
    """Dynamic scales of x [T, H, D]: amax of each group / qmax, at least 1e-8 (float32)."""
    if dtype not in QMAX:
        raise ValueError(f"dtype must be one of {', '.join(QMAX)}, not {dtype!r}")
    amax = np.abs(_grouped(np.asarray(x, np.float32), granularity)).max(axis=-1)
    return np.maximum((amax / np.float32(QMAX[dtype])).astype(np.float32), MIN_SCALE)


def calibrate(samples: np.ndarray, dtype: str, granularity: str) -> np.ndarray:
    """Static scales from sample data [T, H, D] for a granularity that does not depend on the token
    (per_tensor: shape [1]; per_head: [H]). Non-finite samples raise ValueError."""
    kind, _ = parse_granularity(granularity)
    if kind not in ("per_tensor", "per_head"):
        raise ValueError(f"{granularity} scales follow the token; they are computed when the "
                         "token is quantized, not calibrated")
    samples = np.asarray(samples, np.float32)
    if not np.all(np.isfinite(samples)):
        raise ValueError("calibration samples contain inf or NaN")
    return scales_for(samples, dtype, granularity)


def round_e4m3(x: np.ndarray) -> np.ndarray:
    """Round to the nearest float8 E4M3FN value (ties to even), saturating at ±448; NaN stays NaN."""
    x = np.asarray(x, np.float32)
    a = np.abs(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        e = np.floor(np.log2(np.where(a > 0, a, 1.0)))
    e = np.clip(e, -6, 8)  # below 2^-6: subnormal spacing 2^-9
    step = np.exp2(e - 3).astype(np.float32)
    r = np.rint(x / step) * step
    return np.where(np.isnan(x), x, np.clip(r, -448.0, 448.0)).astype(np.float32)


def round_bf16(x: np.ndarray) -> np.ndarray:
    """Round float32 to the nearest bfloat16 value (ties to even)."""
    b = np.ascontiguousarray(x, np.float32).view(np.uint32)
    nan = np.isnan(x)
    r = ((b + np.uint32(0x7FFF) + ((b >> 16) & 1)) & np.uint32(0xFFFF0000)).astype(np.uint32)
    return np.where(nan, x, r.view(np.float32))


def quantize(x: np.ndarray, dtype: str, granularity: str,
             scales: Optional[np.ndarray] = None) -> Tuple[np.ndarray, np.ndarray]:
    """(codes, scales) of x [T, H, D]. codes are int8 for i8 and float32 e4m3 values for e4m3
    (exactly representable); ``scales`` given (static, from ``calibrate``) are used as they are,
    with values beyond the range saturating."""
    x = np.asarray(x, np.float32)
    bad = ~np.isfinite(x)
    if bad.any():
        raise ValueError(f"cannot quantize non-finite values (first at index "
                         f"{tuple(int(i) for i in np.argwhere(bad)[0])})")
    s = scales_for(x, dtype, granularity) if scales is None else np.asarray(scales, np.float32)
    gx = _grouped(x, granularity)
    if s.shape != gx.shape[:-1]:
        raise ValueError(f"{granularity} scales of a {x.shape} tensor have shape {gx.shape[:-1]}, "
                         f"got {s.shape}")
    y = gx / s[..., None]
    if dtype == "i8":
        q = np.clip(np.sign(y) * np.floor(np.abs(y) + 0.5), -127, 127).astype(np.int8)
    else:
        q = round_e4m3(y)
    return _ungroup(q, x.shape, granularity), s


def dequantize(codes: np.ndarray, scales: np.ndarray, granularity: str) -> np.ndarray:
    gq = _grouped(np.asarray(codes).astype(np.float32), granularity)
    return _ungroup(gq * np.asarray(scales, np.float32)[..., None], codes.shape, granularity)


def fake_quantize(x: np.ndarray, dtype: str, granularity: Optional[str] = None,
                  scales: Optional[np.ndarray] = None) -> np.ndarray:
    """dequantize(quantize(x)): the values a quantized cache holds, as float32."""
    if dtype == "bf16":
        return round_bf16(x)
    if granularity is None:
        raise ValueError(f"{dtype} needs a granularity")
    codes, s = quantize(x, dtype, granularity, scales)
    return dequantize(codes, s, granularity)


def scale_bytes_per_token(heads: int, head_dim: int, granularity: str) -> float:
    """f32 scale storage per token of a [T, H, D] cache (0 for static granularities)."""
    kind, g = parse_granularity(granularity)
    return {"per_tensor": 0.0, "per_head": 0.0, "per_token": 4.0,
            "per_token_head": 4.0 * heads}.get(kind, 4.0 * heads * (head_dim // (g or 1)))
