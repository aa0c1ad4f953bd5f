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

- ``i8``: scale = max(amax / 127, 1e-8); code = clamp(round-half-away-from-zero(x · (1 / scale)),
  ±127), with 1 / scale rounded to float32 once per group (a multiply per element, as the kernels
  do, not a division).
- ``e4m3`` (OCP float8 E4M3FN): scale = max(amax / 448, 1e-8); code = x · (1 / scale) rounded to the
  nearest e4m3 value (ties to even), saturating at ±448; NaN stays NaN.
- ``bf16``: no scale; round to nearest even bfloat16.

An all-zero group gets the minimum scale 1e-8 and quantizes to zeros. Non-finite inputs (±inf,
NaN) are refused with ``ValueError`` naming the first one (a single inf would make its group's
scale infinite and every other code of the group zero, silently) — unless ``nonfinite="saturate"``,
the policy of the quantize kernels (which cannot raise): NaN quantizes as 0, ±inf saturate to the
extreme codes, and neither enters a scale. Scales may be stored as f32, f16 or bf16
(``scale_dtype``): they are computed in f32 and rounded up to the stored type (``round_scale``:
never below the f32 value, so nothing saturates), and the stored value quantizes. ``calibrate`` returns static
scales (amax per group of sample data / qmax) for granularities that do not follow the token, the
ones a streaming KV cache cannot compute on the fly (per_head, per_tensor).
"""

from __future__ import annotations

import re
from typing import Optional, Tuple

import numpy as np

MIN_SCALE = np.float32(1e-8)
QMAX = {"i8": 127.0, "e4m3": 448.0}
# Asymmetric integer formats: (code min, code max).
ASYM_RANGE = {"i8": (-128, 127), "u8": (0, 255)}
GRANULARITIES = ("per_tensor", "per_head", "per_token", "per_token_head", "per_group<g>",
                 "per_block<r x c>", "per_channel")


def parse_granularity(g: str) -> Tuple[str, Optional[Tuple[int, ...]]]:
    """("per_group", (g,)), ("per_block", (r, c)) or (name, None)."""
    if not isinstance(g, str):
        raise ValueError(f"granularity must be a string (one of {', '.join(GRANULARITIES)}), "
                         f"not {g!r}")
    m = re.fullmatch(r"per_group<(\d+)>", g)
    if m:
        size = int(m.group(1))
        if size <= 0:
            raise ValueError(f"group size must be positive: {g!r}")
        return "per_group", (size,)
    m = re.fullmatch(r"per_block<\s*(\d+)\s*x\s*(\d+)\s*>", g)
    if m:
        r, c = int(m.group(1)), int(m.group(2))
        if r <= 0 or c <= 0:
            raise ValueError(f"block extents must be positive: {g!r}")
        return "per_block", (r, c)
    if g in ("per_tensor", "per_head", "per_token", "per_token_head", "per_channel"):
        return g, None
    raise ValueError(f"unknown granularity {g!r} (expected one of {', '.join(GRANULARITIES)})")


def _layout(shape, granularity: str):
    """How a [T, H, D] tensor splits into scale groups: the 5-D shape [Tb, r, H, G, c] (tokens in
    blocks of r, channels in groups of c), the axes that share one scale, and the public scale
    shape."""
    if len(shape) != 3:
        raise ValueError(f"expected a [T, H, D] tensor, got shape {tuple(shape)}")
    t, h, d = shape
    kind, arg = parse_granularity(granularity)
    r, c = 1, d
    if kind == "per_group":
        c = arg[0]
    elif kind == "per_block":
        r, c = arg
    elif kind == "per_channel":
        c = 1
    if d % c:
        raise ValueError(f"{granularity} needs head_dim divisible by {c}, got {d}")
    tb = -(-t // r) if t else 0
    axes, public = {
        "per_tensor": ((0, 1, 2, 3, 4), (1,)),
        "per_head": ((0, 1, 3, 4), (h,)),
        "per_token": ((1, 2, 3, 4), (t,)),
        "per_token_head": ((1, 3, 4), (t, h)),
        "per_group": ((1, 4), (t, h, d // c)),
        "per_block": ((1, 4), (tb, h, d // c)),
        "per_channel": ((0, 1, 4), (h, d)),
    }[kind]
    return (tb, r, h, d // c, c), axes, public


def _reduce(x: np.ndarray, granularity: str, fn) -> np.ndarray:
    """fn over each scale group of x [T, H, D] (a token count that is not a multiple of a block's r
    is padded by repeating the last token, which changes no min / max)."""
    v5, axes, public = _layout(x.shape, granularity)
    pad = v5[0] * v5[1] - x.shape[0]
    if pad:
        x = np.concatenate([x, np.repeat(x[-1:], pad, axis=0)])
    return fn(x.reshape(v5), axis=axes).reshape(public)


def _expand(s: np.ndarray, shape, granularity: str) -> np.ndarray:
    """Per-group values s (public shape) broadcast to every element of a [T, H, D] tensor."""
    t, h, d = shape
    v5, axes, want = _layout(shape, granularity)
    s = np.asarray(s)
    if s.shape != tuple(want):
        raise ValueError(f"{granularity} scales of a {tuple(shape)} tensor have shape {tuple(want)}, "
                         f"got {s.shape}")
    keep = [1 if i in axes else n for i, n in enumerate(v5)]
    return np.broadcast_to(s.reshape(keep), v5).reshape(-1, h, d)[:t]


def _check_finite(x: np.ndarray):
    bad = ~np.isfinite(x)
    if bad.any():
        raise ValueError(f"cannot quantize non-finite values (first at index "
                         f"{tuple(int(i) for i in np.argwhere(bad)[0])})")


SCALE_DTYPES = ("f32", "f16", "bf16")
# The smallest scale per scale dtype (2^-24: the smallest f16), and the largest (f16 only).
_MIN_SCALE = {"f32": MIN_SCALE, "f16": np.float32(2.0 ** -24), "bf16": MIN_SCALE}
_MAX_SCALE = {"f16": np.float32(65504.0)}


def round_scale(s: np.ndarray, scale_dtype: str = "f32") -> np.ndarray:
    """Positive scales as stored in ``scale_dtype`` (f32, f16 or bf16), returned as float32 values:
    rounded to nearest, then up to the next value of the type when that fell below ``s`` — a
    stored scale is never smaller than the f32 one, so no value of the group saturates."""
    s = np.asarray(s, np.float32)
    if scale_dtype == "f32":
        return s
    if scale_dtype == "f16":
        h = s.astype(np.float16)
        h = np.where(h.astype(np.float32) < s, np.nextafter(h, np.float16(np.inf)), h)
        return h.astype(np.float32)
    if scale_dtype == "bf16":
        r = round_bf16(s)
        bits = np.ascontiguousarray(r, np.float32).view(np.uint32)
        up = (bits + np.uint32(0x10000)).view(np.float32)
        return np.where(r < s, up, r).astype(np.float32)
    raise ValueError(f"scale dtype must be one of {', '.join(SCALE_DTYPES)}, not {scale_dtype!r}")


def _finish_scale(s: np.ndarray, scale_dtype: str) -> np.ndarray:
    """max(s, smallest) (and min(s, largest) for f16), rounded to the scale dtype."""
    if scale_dtype not in SCALE_DTYPES:
        raise ValueError(f"scale dtype must be one of {', '.join(SCALE_DTYPES)}, not {scale_dtype!r}")
    s = np.maximum(np.asarray(s, np.float32), _MIN_SCALE[scale_dtype])
    if scale_dtype in _MAX_SCALE:
        s = np.minimum(s, _MAX_SCALE[scale_dtype])
    return round_scale(s, scale_dtype)


def float_array(a, what: str) -> np.ndarray:
    """``a`` as a float32 array, or ValueError naming ``what``. Only real numbers are taken: strings,
    booleans, None and complex values, which ``np.asarray(a, np.float32)`` would convert ("1.5" to
    1.5, None to NaN, True to 1, 1+2j to 1), are refused."""
    try:
        arr = np.asarray(a)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{what} must be an array of numbers: {e}") from None
    if arr.dtype.kind in "USObcMm":
        raise ValueError(f"{what} must be an array of numbers, not of {arr.dtype} "
                         f"({type(a).__name__})")
    try:
        return arr.astype(np.float32, copy=False)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{what} must be an array of numbers: {e}") from None


def _prepare(x, nonfinite: str):
    """(values to quantize, values that set the scales). ``nonfinite="raise"``: ±inf / NaN raise
    ValueError. ``"saturate"`` (the kernels' policy): NaN quantizes as 0, ±inf saturate to the
    extreme codes, and neither enters a scale."""
    x = float_array(x, "x")
    if nonfinite == "raise":
        _check_finite(x)
        return x, x
    if nonfinite != "saturate":
        raise ValueError(f"nonfinite must be 'raise' or 'saturate', not {nonfinite!r}")
    x = np.where(np.isnan(x), np.float32(0), x)
    return x, np.where(np.isinf(x), np.float32(0), x)


def scales_for(x: np.ndarray, dtype: str, granularity: str, scale_dtype: str = "f32") -> np.ndarray:
    """Dynamic symmetric scales of x [T, H, D]: amax of each group / qmax, at least 1e-8 (2^-24 for
    f16 scales), rounded to ``scale_dtype``."""
    _check_dtype(dtype, tuple(QMAX))
    amax = _reduce(np.abs(np.asarray(x, np.float32)), granularity, np.max)
    return _finish_scale((amax / np.float32(QMAX[dtype])).astype(np.float32), scale_dtype)


def calibrate(samples: np.ndarray, dtype: str, granularity: str) -> np.ndarray:
    """Static scales from sample data [T, H, D] for a granularity that does not depend on the token
    (per_tensor: shape [1]; per_head: [H]; per_channel: [H, D]). Non-finite samples raise
    ValueError."""
    kind, _ = parse_granularity(granularity)
    if kind not in ("per_tensor", "per_head", "per_channel"):
        raise ValueError(f"{granularity} scales follow the token; they are computed when the "
                         "token is quantized, not calibrated")
    _check_dtype(dtype, tuple(QMAX))
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


def _round_away(y: np.ndarray) -> np.ndarray:
    """Round half away from zero, exactly (|y| + 0.5 in float64: no float32 double rounding)."""
    y = np.asarray(y, np.float32)
    return (np.sign(y) * np.floor(np.abs(y).astype(np.float64) + 0.5)).astype(np.float32)


def _check_dtype(dtype, choices) -> str:
    """A known code dtype, or ValueError listing the valid ones (no silent fallback: a misspelt
    "int8" must not quantize as e4m3)."""
    if not isinstance(dtype, str) or dtype not in choices:
        raise ValueError(f"unknown dtype {dtype!r}; expected one of {', '.join(choices)}")
    return dtype


def _static_scales(scales, what: str = "scales") -> np.ndarray:
    """Given (static) scales as float32: finite and positive normal numbers, or ValueError naming
    the first bad one (0 or a subnormal would make 1 / s infinite, NaN and negative values give
    garbage codes)."""
    s = float_array(scales, what)
    # At least the smallest normal float32: codes are x · (1 / s), and 1 / s must be finite.
    bad = ~(np.isfinite(s) & (s >= np.finfo(np.float32).tiny))
    if bad.any():
        at = tuple(int(i) for i in np.argwhere(bad)[0]) if s.ndim else ()
        raise ValueError(f"{what} must be finite and positive (at least 2**-126, so that 1 / scale "
                         f"is finite); got {s[at] if at else s} at index {at}")
    return s


def _static_zeros(zeros, dtype: str) -> np.ndarray:
    """Given zero points: integers in the code range of ``dtype``."""
    lo, hi = ASYM_RANGE[dtype]
    try:
        z = np.asarray(zeros)
        zf = z.astype(np.float64)
    except (TypeError, ValueError) as e:
        raise ValueError(f"zeros must be an array of integers: {e}") from None
    if not (np.isfinite(zf) & (zf == np.round(zf)) & (zf >= lo) & (zf <= hi)).all():
        raise ValueError(f"zeros must be integers in [{lo}, {hi}] for {dtype}")
    return zf.astype(np.float32)


def _inverse(s: np.ndarray) -> np.ndarray:
    """1 / s in float32, once per group: codes are x · (1/s)."""
    return (np.float32(1) / np.asarray(s, np.float32)).astype(np.float32)


def quantize(x: np.ndarray, dtype: str, granularity: str,
             scales: Optional[np.ndarray] = None, *, scale_dtype: str = "f32",
             nonfinite: str = "raise") -> Tuple[np.ndarray, np.ndarray]:
    """Symmetric (codes, scales) of x [T, H, D]. codes are int8 for i8 and float32 e4m3 values for
    e4m3 (exactly representable); ``scales`` given (static, from ``calibrate``) are used as they
    are, with values beyond the range saturating. ``nonfinite``: see ``_prepare``."""
    _check_dtype(dtype, tuple(QMAX))
    x, fin = _prepare(x, nonfinite)
    s = (scales_for(fin, dtype, granularity, scale_dtype) if scales is None
         else _static_scales(scales))
    y = x * _expand(_inverse(s), x.shape, granularity)
    if dtype == "i8":
        return np.clip(_round_away(y), -127, 127).astype(np.int8), s
    return round_e4m3(y), s


def quantize_asym(x: np.ndarray, dtype: str, granularity: str,
                  scales: Optional[np.ndarray] = None, zeros: Optional[np.ndarray] = None, *,
                  scale_dtype: str = "f32", nonfinite: str = "raise"):
    """Asymmetric (codes, scales, zero points) of x [T, H, D] for dtype ``u8`` or ``i8``:
    scale = max((max − min) / 255, 1e-8), zero point z = clamp(round(qmin − min / scale), qmin,
    qmax), code = clamp(round(x · (1 / scale) + z), qmin, qmax) (rounding half away from zero), so
    x ≈ scale · (code − z). Zero points have the scales' shape and the code dtype. Static
    ``scales`` and ``zeros`` (from ``calibrate_asym``) are used as given."""
    _check_dtype(dtype, tuple(ASYM_RANGE))
    x, fin = _prepare(x, nonfinite)
    lo, hi = ASYM_RANGE[dtype]
    if (scales is None) != (zeros is None):
        raise ValueError("give both static scales and zero points, or neither")
    if scales is None:
        s, z = _asym_params(fin, dtype, granularity, scale_dtype)
    else:
        s, z = _static_scales(scales), _static_zeros(zeros, dtype)
    y = x * _expand(_inverse(s), x.shape, granularity) + _expand(z, x.shape, granularity)
    codes = np.clip(_round_away(y), lo, hi).astype(np.int8 if dtype == "i8" else np.uint8)
    return codes, s, z.astype(codes.dtype)


def _asym_params(x: np.ndarray, dtype: str, granularity: str, scale_dtype: str = "f32"):
    lo, hi = ASYM_RANGE[dtype]
    mn = np.minimum(_reduce(x, granularity, np.min), 0)  # keep 0 representable exactly
    mx = np.maximum(_reduce(x, granularity, np.max), 0)
    s = _finish_scale(((mx - mn) / np.float32(hi - lo)).astype(np.float32), scale_dtype)
    z = np.clip(_round_away(np.float32(lo) - mn / s), lo, hi).astype(np.float32)
    return s, z


def calibrate_asym(samples: np.ndarray, dtype: str, granularity: str):
    """Static asymmetric (scales, zero points) from sample data, for per_tensor, per_head and
    per_channel; zero points have the code dtype."""
    kind, _ = parse_granularity(granularity)
    if kind not in ("per_tensor", "per_head", "per_channel"):
        raise ValueError(f"{granularity} scales follow the token; they are computed when the "
                         "token is quantized, not calibrated")
    _check_dtype(dtype, tuple(ASYM_RANGE))
    samples = np.asarray(samples, np.float32)
    if not np.all(np.isfinite(samples)):
        raise ValueError("calibration samples contain inf or NaN")
    s, z = _asym_params(samples, dtype, granularity)
    return s, z.astype(np.int8 if dtype == "i8" else np.uint8)


_E4M3_TABLE = None


def e4m3_from_bits(bits: np.ndarray) -> np.ndarray:
    """float8 E4M3FN bit patterns (uint8) → float32 values (0x7F / 0xFF are NaN)."""
    global _E4M3_TABLE
    if _E4M3_TABLE is None:
        b = np.arange(256)
        e, m = (b >> 3) & 15, (b & 7).astype(np.float64)
        v = np.where(e == 0, m * 2.0 ** -9, (1 + m / 8) * 2.0 ** (e - 7))
        v = np.where((b & 0x7F) == 0x7F, np.nan, v)
        _E4M3_TABLE = np.where(b & 0x80, -v, v).astype(np.float32)
    return _E4M3_TABLE[np.asarray(bits, np.uint8)]


def dequantize(codes: np.ndarray, scales: np.ndarray, granularity: str,
               zeros: Optional[np.ndarray] = None) -> np.ndarray:
    """x = scale · (code − zero point) in float32 (zero points 0 when None)."""
    q = np.asarray(codes).astype(np.float32)
    if zeros is not None:
        q = q - _expand(np.asarray(zeros, np.float32), codes.shape, granularity)
    return q * _expand(np.asarray(scales, np.float32), codes.shape, granularity)


def fake_quantize(x: np.ndarray, dtype: str, granularity: Optional[str] = None,
                  scales: Optional[np.ndarray] = None, symmetric: bool = True) -> np.ndarray:
    """dequantize(quantize(x)): the values a quantized cache holds, as float32."""
    _check_dtype(dtype, ("bf16",) + tuple(QMAX) + tuple(ASYM_RANGE))
    if not isinstance(symmetric, bool):
        raise TypeError(f"symmetric must be True or False, not {symmetric!r}")
    if dtype == "bf16":
        return round_bf16(x)
    if granularity is None:
        raise ValueError(f"{dtype} needs a granularity")
    if not symmetric:
        if scales is not None:
            raise ValueError("asymmetric quantization computes its own scales and zero points")
        codes, s, z = quantize_asym(x, dtype, granularity)
        return dequantize(codes, s, granularity, z)
    if dtype == "u8":
        raise ValueError("u8 is asymmetric only (symmetric=False)")
    codes, s = quantize(x, dtype, granularity, scales)
    return dequantize(codes, s, granularity)


def hadamard(x: np.ndarray) -> np.ndarray:
    """x · H along the last axis, H the normalized Walsh–Hadamard matrix of that order (a power of
    two; Sylvester order, H = Hᵀ = H⁻¹), in float32: the rotation ``hadamard`` attention specs take
    on Q, K and V before they are quantized (incoherent processing; lib/Reference's
    ``hadamardRows`` computes the same butterflies). ``hadamard(hadamard(x))`` gives x back."""
    y = np.array(x, dtype=np.float32, copy=True)
    d = y.shape[-1]
    if d < 1 or d & (d - 1):
        raise ValueError(f"hadamard needs a power-of-two last axis, got {d}")
    h = 1
    while h < d:
        v = y.reshape(*y.shape[:-1], d // (2 * h), 2, h)
        a, b = v[..., 0, :].copy(), v[..., 1, :].copy()
        v[..., 0, :], v[..., 1, :] = a + b, a - b
        h *= 2
    return y * np.float32(1 / np.sqrt(d))


def scale_bytes_per_token(heads: int, head_dim: int, granularity: str,
                          asymmetric: bool = False) -> float:
    """f32 scale (+ 1-byte zero point when asymmetric) storage per token of a [T, H, D] cache;
    0 for static granularities (per_tensor, per_head, per_channel)."""
    kind, arg = parse_granularity(granularity)
    groups = {"per_tensor": 0.0, "per_head": 0.0, "per_channel": 0.0, "per_token": 1.0,
              "per_token_head": float(heads)}.get(kind)
    if groups is None:
        c = arg[-1]
        groups = heads * (head_dim // c) / (arg[0] if kind == "per_block" else 1)
    return groups * (5.0 if asymmetric else 4.0)
