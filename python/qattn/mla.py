"""What this file is: DeepSeek MLA decode in NumPy — the 656-byte FP8 token format of FlashMLA
(Dv e4m3 values, Dv/C float32 tile scales, rope_dim bfloat16 values per token) packed and
unpacked, and the float64 reference of `attn.mla_decode` (dense or top-k sparse) that the sm_90a
kernel is checked against (scripts/gpu-mla.py, docs/GPUMLA.md).

Conventions, shared with the kernel:
  * q [B, Sq, Hq, Dk] with Dk = Dv + rope_dim; the cache [B, T, bytes] (FP8) or [B, T, Dk] (bf16);
    K is the whole token, V its first Dv values; out [B, Sq, Hq, Dv].
  * indices [B, Sq, topk] int32: an entry attends to cache position idx when 0 <= idx < len
    (len = seq_lens[b] clamped to [0, T], else T) and, with causal, idx <= len - Sq + s; other
    entries (-1 included) are skipped. Dense: every position 0 .. len-1 (causal: up to
    len - Sq + s). A query with no key gets 0.
  * The tile scale is amax / 448 (1e-8 for an all-zero tile); codes are e4m3(x · (1/s)) with the
    quantize kernels' policy (NaN → 0, ±inf saturate and stay out of the scale); RoPE values are
    rounded to bf16 (NaN → 0x7FFF). `attn.quantize.mla_append` (CPU and sm_90a) writes exactly
    `pack_fp8`'s bytes.
"""
from typing import Optional

import numpy as np

from . import quant

E4M3_MAX = 448.0


def _check_format(dv, rope, tile) -> None:
    """Dv and tile positive ints with tile dividing Dv, rope a non-negative int, or ValueError."""
    def is_int(v):
        return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
    if not (is_int(dv) and is_int(tile) and is_int(rope)) or dv < 1 or tile < 1 or rope < 0 \
            or dv % tile:
        raise ValueError(f"the FP8 token format needs ints dv >= 1, rope >= 0 and tile >= 1 "
                         f"dividing dv; got dv={dv!r}, rope={rope!r}, tile={tile!r}")


def token_bytes(dv: int = 512, rope: int = 64, tile: int = 128) -> int:
    """Bytes of one FP8 token: Dv codes, Dv/tile f32 scales, rope bf16 values (656 by default)."""
    _check_format(dv, rope, tile)
    return dv + 4 * (dv // tile) + 2 * rope


def _e4m3_bits(values: np.ndarray) -> np.ndarray:
    """Bit patterns of e4m3-representable float32 values (the inverse of quant.e4m3_from_bits)."""
    table = quant.e4m3_from_bits(np.arange(127, dtype=np.uint8))  # 0 .. 448, increasing
    v = np.asarray(values, np.float32)
    mag = np.searchsorted(table, np.abs(v)).astype(np.uint8)
    # The sign is kept, also on zero: a negative value that rounds to 0 is -0 (0x80), as
    # cvt.rn.satfinite.e4m3x2 and the CPU kernel write it.
    return np.where(np.signbit(v), mag | np.uint8(0x80), mag).astype(np.uint8)


def _bf16_bits(x: np.ndarray) -> np.ndarray:
    """bfloat16 bits of x (ties to even); NaN becomes 0x7FFF, as the kernels write it."""
    x = np.asarray(x, np.float32)
    bits = (quant.round_bf16(x).view(np.uint32) >> 16).astype(np.uint16)
    return np.where(np.isnan(x), np.uint16(0x7FFF), bits).astype(np.uint16)


def pack_fp8(kv: np.ndarray, dv: int = 512, tile: int = 128) -> np.ndarray:
    """[..., Dk] float → [..., token_bytes] uint8: e4m3 codes of the first Dv values with one f32
    scale per `tile` values, then the rest (RoPE) rounded to bf16."""
    kv = quant.float_array(kv, "kv")
    if kv.ndim < 1:
        raise ValueError("kv must have a last axis of Dv + rope values")
    lead, dk = kv.shape[:-1], kv.shape[-1]
    rope = dk - dv if isinstance(dv, (int, np.integer)) else dv
    _check_format(dv, rope, tile)
    flat = kv.reshape(-1, 1, dk)
    codes, scales = quant.quantize(flat[:, :, :dv], "e4m3", f"per_block<1 x {tile}>",
                                   nonfinite="saturate")
    out = np.empty((flat.shape[0], token_bytes(dv, rope, tile)), np.uint8)
    out[:, :dv] = _e4m3_bits(codes.reshape(-1, dv))
    out[:, dv:dv + 4 * (dv // tile)] = (
        np.ascontiguousarray(scales.reshape(-1, dv // tile), np.float32).view(np.uint8))
    out[:, dv + 4 * (dv // tile):] = (
        np.ascontiguousarray(_bf16_bits(flat[:, 0, dv:])).view(np.uint8).reshape(-1, 2 * rope))
    return out.reshape(*lead, out.shape[-1])


def unpack_fp8(packed: np.ndarray, dv: int = 512, rope: int = 64, tile: int = 128) -> np.ndarray:
    """[..., token_bytes] uint8 → [..., Dv + rope] float32: codes × their tile scale, then RoPE."""
    _check_format(dv, rope, tile)
    p = np.ascontiguousarray(packed, np.uint8)
    if p.ndim < 1 or p.shape[-1] != token_bytes(dv, rope, tile):
        raise ValueError(f"packed tokens must have a last axis of {token_bytes(dv, rope, tile)} "
                         f"bytes, got shape {p.shape}")
    lead = p.shape[:-1]
    p = p.reshape(-1, p.shape[-1])
    nsc = dv // tile
    vals = quant.e4m3_from_bits(p[:, :dv]).reshape(-1, nsc, tile)
    scales = np.ascontiguousarray(p[:, dv:dv + 4 * nsc]).view(np.float32).reshape(-1, nsc, 1)
    ropev = (np.ascontiguousarray(p[:, dv + 4 * nsc:]).view(np.uint16).astype(np.uint32)
             << 16).view(np.float32)
    out = np.concatenate([(vals * scales).reshape(-1, dv), ropev], axis=1)
    return out.reshape(*lead, dv + rope)


def visible(indices: Optional[np.ndarray], batch: int, sq: int, kv_len: int,
            seq_lens: Optional[np.ndarray] = None, causal: bool = False):
    """For each (b, s): the cache positions attended, in entry order (duplicates kept)."""
    out = []
    for b in range(batch):
        ln = kv_len if seq_lens is None else int(min(max(int(seq_lens[b]), 0), kv_len))
        row = []
        for s in range(sq):
            limit = ln - sq + s if causal else ln - 1
            if indices is None:
                keys = np.arange(0, max(min(ln, limit + 1), 0))
            else:
                idx = np.asarray(indices[b, s], np.int64)
                keys = idx[(idx >= 0) & (idx < ln) & (idx <= limit)]
            row.append(keys)
        out.append(row)
    return out


def reference(q: np.ndarray, kv: np.ndarray, dv: int, indices: Optional[np.ndarray] = None,
              seq_lens: Optional[np.ndarray] = None, causal: bool = False,
              softmax_scale: Optional[float] = None) -> np.ndarray:
    """float64 MLA decode of q [B, Sq, H, Dk] over kv [B, T, Dk] (already dequantized): O[b, s, h]
    = softmax(scale · q·Kᵀ) · V over the keys of `visible`, V = K[:, :Dv]; 0 without keys."""
    q = np.asarray(q, np.float64)
    kv = np.asarray(kv, np.float64)
    b_, sq, h, dk = q.shape
    scale = softmax_scale if softmax_scale is not None else 1.0 / np.sqrt(dk)
    out = np.zeros((b_, sq, h, dv))
    for b, row in enumerate(visible(indices, b_, sq, kv.shape[1], seq_lens, causal)):
        for s, keys in enumerate(row):
            if len(keys) == 0:
                continue
            k = kv[b, keys]  # [n, Dk]
            logits = scale * (q[b, s] @ k.T)  # [H, n]
            p = np.exp(logits - logits.max(axis=1, keepdims=True))
            out[b, s] = (p @ k[:, :dv]) / p.sum(axis=1, keepdims=True)
    return out
