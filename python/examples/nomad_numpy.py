"""NoMAD-Attention on NumPy arrays: train codebooks on keys, attend with the compiled CPU kernels.

Run: ATTN_OPT=build/bin/attn-opt python python/examples/nomad_numpy.py
"""
import numpy as np

import qattn

rng = np.random.default_rng(0)
T, H, HQ, D = 1000, 2, 8, 64
# Keys with cluster structure (as real keys have), Gaussian values and queries.
centers = rng.standard_normal((16, H, D)).astype(np.float32) * 2
keys = centers[rng.integers(0, 16, T)] + 0.3 * rng.standard_normal((T, H, D)).astype(np.float32)
values = rng.standard_normal((T, H, D)).astype(np.float32)
q = rng.standard_normal((HQ, D)).astype(np.float32)

books = qattn.train_codebooks(keys, dsub=1, centroids=16, seed=0)  # [H, 64, 16, 1]
out = qattn.nomad_attend(q, books, keys, values)                    # compiled, cached kernels

# Dense attention for comparison (GQA: query head i reads KV head i // (HQ // H)).
kv = np.arange(HQ) // (HQ // H)
s = np.einsum("hd,thd->ht", q, keys[:, kv]) / np.sqrt(D)
p = np.exp(s - s.max(axis=1, keepdims=True))
dense = np.einsum("ht,thd->hd", p / p.sum(axis=1, keepdims=True), values[:, kv])
err = np.linalg.norm(out - dense) / np.linalg.norm(dense)
print(f"NoMAD dsub 1 vs dense attention: relative error {err:.3e}")
assert err < 0.25  # u8 tables + 16 centroids per dimension: an approximation
