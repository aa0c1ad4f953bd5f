#!/usr/bin/env python3
"""What this file is: a fast probe of NoMAD dsub-1 codebook variants on SmolLM2, the protocol of
`python -m qattn.lm.perplexity` (8 calibration windows, 12 evaluation windows of 1024 tokens,
score-aware codebooks, 16 centroids) with the attention computed in NumPy instead of by the
compiled kernels: every key replaced by its centroids, scores either exact in float ("f") or
through the kernels' u8 lookup-table arithmetic ("u8": one step per query, max range / 255,
entries rounded half up, as attn.pq.lut + attn.pq.scores). About 4 minutes per variant on two
cores, against an hour for the compiled run. docs/Perplexity.md, "How noisy the NoMAD numbers are",
gives what it measured.

Variants, comma-separated, each ROTATION/TRAIN/LUT/SINKS:
  ROTATION  id (none), had (random-sign Hadamard), qpca (eigenvectors of the queries' second
            moment), pca (of the keys' covariance): one orthogonal R per (layer, KV head);
            keys and queries are both rotated, so q·k is unchanged before quantization
  TRAIN     all (every calibration key), nosink (without each window's first token), norm (each
            key divided by its L2 norm before training and encoding, the norm kept exact: scores
            are norm · (q · centroids); the weights scaled by the squared norm), or bestN
            (N k-means runs, seeds seed .. seed+N-1, keeping per (layer, KV head, sub-quantizer)
            the codebook of the lowest weighted inertia on the calibration keys)
  LUT       f or u8
  SINKS     0, or 1 (the first key's score exact, as NomadKV(dense_sinks=1))

  PYTHONPATH=python python3 scripts/nomad-probe.py id/all/u8/0,id/all/f/0 --seed 0
"""
import argparse
import json
import time

import numpy as np

from qattn import nomad
from qattn.lm.model import LlamaModel, dense_attention
from qattn.lm.perplexity import corpus, smollm2_path, windows


def hadamard(n):
    h = np.array([[1.0]])
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return h / np.sqrt(n)


def unit_keys(k):
    """(k / |k|, |k|) over the last axis: the keys and norms of the `norm` train mode."""
    n = np.linalg.norm(k, axis=-1, keepdims=True)
    return k / np.maximum(n, 1e-30), n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("variants")
    ap.add_argument("--seed", type=int, default=0, help="k-means seed")
    ap.add_argument("--eval-windows", type=int, default=12)
    args = ap.parse_args()
    model = LlamaModel.from_gguf(smollm2_path())
    cfg = model.config
    text = corpus()
    cal = windows(model.tokenizer.encode(text["calibration"]), 1024, 8)
    ev = windows(model.tokenizer.encode(text["evaluation"]), 1024, args.eval_windows)
    L, H, D, HQ = cfg.layers, cfg.kv_heads, cfg.head_dim, cfg.heads
    G = HQ // H
    rq = [[] for _ in range(L)]
    rk = [[] for _ in range(L)]

    def record(layer, q, k, v):
        rq[layer].append(q)
        rk[layer].append(k)
        return dense_attention(layer, q, k, v)

    for w in cal:
        model.forward(w, attention=record)

    def rotations(kind, layer):
        rng = np.random.default_rng(1000 + layer)
        out = []
        for h in range(H):
            if kind == "id":
                out.append(np.eye(D))
            elif kind == "had":
                out.append(hadamard(D) * rng.choice([-1.0, 1.0], size=D)[None, :])
            elif kind == "pca":
                k = np.concatenate([x[:, h] for x in rk[layer]]).astype(np.float64)
                out.append(np.linalg.eigh(np.cov(k.T))[1].T)
            elif kind == "qpca":
                q = np.concatenate([x[:, h * G:(h + 1) * G].reshape(-1, D) for x in rq[layer]])
                q = q.astype(np.float64)
                out.append(np.linalg.eigh(q.T @ q)[1].T)
            else:
                raise SystemExit(f"unknown rotation {kind!r}")
        return np.stack(out).astype(np.float32)  # [H, D, D]

    def rot_k(k, r):
        return np.einsum("thd,hed->the", k, r)

    def rot_q(q, r):
        t = q.shape[0]
        return np.einsum("thgd,hed->thge", q.reshape(t, H, G, D), r).reshape(t, HQ, D)

    def attention(books, rots, lut, sinks, norm):
        def att(layer, q, k, v):
            t = q.shape[0]
            r = rots[layer]
            q, k = rot_q(q, r), rot_k(k, r)
            k_exact, kn = k, None
            if norm:
                k, kn = unit_keys(k)  # kn [T, H, 1]
            cb = books[layer][..., 0].astype(np.float64)  # [H, S, C]
            codes = nomad.encode(k, books[layer]).astype(np.intp)  # [T, H, S]
            s_, c_ = cb.shape[1], cb.shape[2]
            out = np.empty_like(q)
            mask = np.tril(np.ones((t, t), dtype=bool))
            for h in range(H):
                onehot = np.zeros((t, s_ * c_), np.float32)
                onehot[np.arange(t)[:, None], np.arange(s_)[None, :] * c_ + codes[:, h]] = 1
                for g in range(G):
                    qq = q[:, h * G + g].astype(np.float64)
                    d = qq[:, :, None] * cb[h][None]  # [T, S, C] dots
                    if lut:
                        mn = d.min(axis=2)
                        rng = (d.max(axis=2) - mn).max(axis=1)
                        e = np.minimum(255, np.floor((d - mn[:, :, None]) * (255 / rng)[:, None, None] + 0.5))
                        s = (e.reshape(t, -1).astype(np.float32) @ onehot.T).astype(np.float64)
                        s = s * (rng / 255)[:, None] + mn.sum(1)[:, None]
                    else:
                        s = (d.reshape(t, -1).astype(np.float32) @ onehot.T).astype(np.float64)
                    if kn is not None:
                        s = s * kn[None, :, h, 0].astype(np.float64)
                    if sinks:
                        s[:, :sinks] = qq @ k_exact[:sinks, h].astype(np.float64).T
                    s = np.where(mask, s / np.sqrt(D), -np.inf)
                    p = np.exp(s - s.max(1, keepdims=True))
                    p /= p.sum(1, keepdims=True)
                    out[:, h * G + g] = (p @ v[:, h].astype(np.float64)).astype(np.float32)
            return out
        return att

    dense = float(np.exp(np.concatenate([model.nll(w) for w in ev]).mean()))
    print(json.dumps({"dense": dense}), flush=True)
    trained = {}
    for var in args.variants.split(","):
        rot, train, lut, sinks = var.split("/")
        t0 = time.time()
        if (rot, train) not in trained:
            rots, books = {}, {}
            for layer in range(L):
                r = rots[layer] = rotations(rot, layer)
                skip = 1 if train == "nosink" else 0
                ks = np.concatenate([rot_k(k, r)[skip:] for k in rk[layer]])
                ws = np.concatenate([nomad.score_weights(rot_q(q, r), rot_k(k, r))[skip:]
                                     for q, k in zip(rq[layer], rk[layer])])
                if train == "norm":  # unit keys; a unit-key error costs norm² as much score error
                    ks, kn = unit_keys(ks)
                    ws = ws * kn**2
                runs = int(train[4:]) if train.startswith("best") else 1
                books[layer] = nomad.train_codebooks(ks, dsub=1, centroids=16, iters=25,
                                                     seed=args.seed, sample=8192, weights=ws,
                                                     restarts=runs)
            trained[(rot, train)] = (rots, books)
        rots, books = trained[(rot, train)]
        att = attention(books, rots, lut == "u8", int(sinks), train == "norm")
        ppl = float(np.exp(np.concatenate([model.nll(w, attention=att) for w in ev]).mean()))
        print(json.dumps({"variant": var, "seed": args.seed, "ppl": ppl,
                          "delta_pct": 100 * (ppl / dense - 1), "seconds": round(time.time() - t0)}),
              flush=True)


if __name__ == "__main__":
    main()
