"""Tests of qattn.nomad: k-means codebook training, encoding, and the codebook file format."""

import json

import numpy as np
import pytest

import qattn
from qattn import nomad


def gaussian_keys(t=512, h=2, d=16, seed=1):
    """Keys with per-channel scales and offsets, roughly like real attention keys."""
    rng = np.random.default_rng(seed)
    scale = rng.uniform(0.2, 3.0, size=(h, d))
    offset = rng.normal(size=(h, d))
    return (rng.standard_normal((t, h, d)) * scale + offset).astype(np.float32)


def clustered_keys(t=1024, h=2, d=16, dsub=2, sigma=0.01, seed=2):
    """Keys whose every sub-vector lies near one of 16 well-separated centers of its sub-space.

    Returns (keys [T, H, D], centers [H, S, 16, dsub]).
    """
    assert dsub == 2
    rng = np.random.default_rng(seed)
    s = d // dsub
    grid = np.stack(np.meshgrid(np.arange(4.0), np.arange(4.0), indexing="ij"), -1).reshape(16, 2)
    centers = grid[None, None] * rng.uniform(1.0, 2.0, size=(h, s, 1, 1)) \
        + rng.normal(size=(h, s, 1, 2)) * 5
    labels = rng.integers(16, size=(t, h, s))
    points = np.take_along_axis(centers[None], labels[..., None, None], axis=3)[:, :, :, 0]
    points = points + rng.normal(scale=sigma, size=points.shape)
    return points.reshape(t, h, d).astype(np.float32), centers


def test_exported():
    for name in ("train_codebooks", "encode", "inertia", "save_codebooks", "load_codebooks"):
        assert getattr(qattn, name) is getattr(nomad, name)


@pytest.mark.parametrize("centroids", [16, 32, 64])
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("dsub", [1, 2, 4])
def test_shapes(dsub, d, centroids):
    keys = gaussian_keys(t=centroids + 8, h=2, d=d)
    cb = nomad.train_codebooks(keys, dsub, centroids=centroids, iters=2)
    assert cb.shape == (2, d // dsub, centroids, dsub) and cb.dtype == np.float32
    assert cb.flags.c_contiguous and np.isfinite(cb).all()
    codes = nomad.encode(keys, cb)
    assert codes.shape == (centroids + 8, 2, d // dsub) and codes.dtype == np.uint8
    assert codes.max() < centroids


def test_training_lowers_inertia():
    keys = gaussian_keys()
    trained = nomad.inertia(keys, nomad.train_codebooks(keys, 2, iters=25))
    one_iter = nomad.inertia(keys, nomad.train_codebooks(keys, 2, iters=1))
    rng = np.random.default_rng(5)
    std, mean = keys.std(axis=0), keys.mean(axis=0)  # [H, D]
    rand = (rng.standard_normal((16,) + keys.shape[1:]) * std + mean)  # [C, H, D]
    rand = rand.reshape(16, 2, 8, 2).transpose(1, 2, 0, 3)  # -> [H, S, C, dsub]
    assert trained < one_iter
    assert trained < 0.7 * nomad.inertia(keys, rand)


@pytest.mark.parametrize("dsub,centroids", [(1, 16), (2, 16), (4, 32), (8, 64)])
def test_inertia_history_non_increasing(dsub, centroids):
    keys = gaussian_keys(t=400, d=16)
    cb, history = nomad.train_codebooks(keys, dsub, centroids=centroids, iters=30,
                                        return_history=True)
    assert 2 <= len(history) <= 31
    for before, after in zip(history, history[1:]):
        assert after <= before * (1 + 1e-6)
    assert history[-1] < history[0]
    # The history is measured on the returned (float64) centroids; float32 rounding is tiny.
    assert nomad.inertia(keys, cb) == pytest.approx(history[-1], rel=1e-4)


def test_deterministic_per_seed():
    keys = gaussian_keys()
    a = nomad.train_codebooks(keys, 2, seed=3)
    b = nomad.train_codebooks(keys, 2, seed=3)
    c = nomad.train_codebooks(keys, 2, seed=4)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)
    s1 = nomad.train_codebooks(keys, 2, seed=3, sample=100)
    assert np.array_equal(s1, nomad.train_codebooks(keys, 2, seed=3, sample=100))
    assert not np.array_equal(s1, a)


def test_recovers_cluster_centers():
    sigma = 0.01
    keys, centers = clustered_keys(sigma=sigma)
    cb = nomad.train_codebooks(keys, 2, centroids=16)
    # Every true center has exactly one trained centroid next to it.
    dist = np.linalg.norm(centers[:, :, :, None, :] - cb[:, :, None, :, :], axis=-1)
    nearest = dist.argmin(axis=3)  # [H, S, 16 true] -> trained index
    assert (dist.min(axis=3) < 5 * sigma).all()
    assert (np.sort(nearest, axis=-1) == np.arange(16)).all()
    noise_floor = keys.size * sigma ** 2  # expected squared error with the true centers
    assert nomad.inertia(keys, cb) < 1.2 * noise_floor


def test_too_few_keys():
    keys = gaussian_keys(t=15)
    with pytest.raises(ValueError, match="15 tokens for 16 centroids"):
        nomad.train_codebooks(keys, 2)
    with pytest.raises(ValueError, match="sample"):
        nomad.train_codebooks(gaussian_keys(), 2, sample=8)


def test_bad_arguments():
    keys = gaussian_keys(d=12)
    with pytest.raises(ValueError, match="dsub"):
        nomad.train_codebooks(keys, 3)
    with pytest.raises(ValueError, match="not a multiple"):
        nomad.train_codebooks(keys, 8)
    with pytest.raises(ValueError, match="centroids"):
        nomad.train_codebooks(keys, 2, centroids=8)
    keys[3, 1, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        nomad.train_codebooks(keys, 2)


def test_degenerate_keys_fill_every_centroid():
    # Only 4 distinct sub-vectors for 16 centroids: empty clusters must be re-seeded.
    rng = np.random.default_rng(0)
    keys = rng.integers(2, size=(64, 1, 4)).astype(np.float32)
    cb, history = nomad.train_codebooks(keys, 2, return_history=True)
    assert np.isfinite(cb).all()
    assert history[-1] == 0.0 and nomad.inertia(keys, cb) == 0.0


def test_encode_matches_brute_force_and_breaks_ties_low():
    keys = gaussian_keys(t=40, h=2, d=8)
    cb = nomad.train_codebooks(keys, 4, iters=5)
    cb[1, 0, 9] = cb[1, 0, 3]  # a duplicate centroid: code 3 must win over 9
    codes = nomad.encode(keys, cb)
    sub = keys.reshape(40, 2, 2, 1, 4)
    dist = ((sub - cb[None]) ** 2).sum(-1)  # [T, H, S, C]
    assert np.array_equal(codes, dist.argmin(-1))
    assert not (codes == 9)[:, 1, 0].any()
    picked = np.take_along_axis(dist, codes[..., None].astype(np.intp), -1)
    assert nomad.inertia(keys, cb) == pytest.approx(float(picked.sum()), rel=1e-5)


def test_encode_shape_mismatch():
    keys = gaussian_keys(t=32, h=2, d=16)
    cb = nomad.train_codebooks(keys, 2, iters=1)
    with pytest.raises(ValueError, match="do not fit"):
        nomad.encode(keys[:, :1], cb)
    with pytest.raises(ValueError, match="do not fit"):
        nomad.encode(keys[:, :, :8], cb)


def test_save_load_round_trip(tmp_path):
    keys = gaussian_keys(t=64, h=2, d=16)
    by_layer = {0: nomad.train_codebooks(keys, 2, iters=2),
                7: nomad.train_codebooks(keys[:, :1], 2, iters=2, seed=1)}
    path = tmp_path / "model.codebooks"  # no .npz suffix: written to exactly this path
    nomad.save_codebooks(path, by_layer, dsub=2, centroids=16, meta={"model": "toy"})
    assert path.is_file()
    loaded, info = nomad.load_codebooks(path)
    assert sorted(loaded) == [0, 7]
    for i, cb in by_layer.items():
        assert loaded[i].dtype == np.float32 and np.array_equal(loaded[i], cb)
    assert info["format"] == "qattn-nomad-codebooks" and info["version"] == 1
    assert info["dsub"] == 2 and info["centroids"] == 16 and info["layers"] == [0, 7]
    assert info["shapes"] == {"0": [2, 8, 16, 2], "7": [1, 8, 16, 2]}
    assert info["meta"] == {"model": "toy"}
    # Plain numpy reads it too.
    with np.load(path) as raw:
        assert json.loads(str(raw["__header__"]))["layers"] == [0, 7]
        assert np.array_equal(raw["layer_7"], by_layer[7])


def _rewrite(path, **changes):
    """Rewrite a codebook file with some header fields changed (None deletes the array)."""
    with np.load(path) as raw:
        arrays = {name: raw[name] for name in raw.files}
    header = json.loads(str(arrays["__header__"]))
    for key, value in changes.items():
        if key.startswith("layer_"):
            if value is None:
                del arrays[key]
            else:
                arrays[key] = value
        else:
            header[key] = value
    arrays["__header__"] = np.array(json.dumps(header))
    with open(path, "wb") as f:
        np.savez(f, **arrays)


@pytest.mark.parametrize("changes,message", [
    (dict(format="something-else"), "format tag"),
    (dict(version=2), "unsupported version"),
    (dict(shapes={"0": [2, 8, 16, 4]}), "header says"),
    (dict(layers=[0, 1]), "do not match layers"),
    (dict(layer_0=None), "do not match layers"),
    (dict(layer_0=np.zeros((2, 8, 16, 2))), "float64"),
    (dict(centroids=48), "centroids"),
])
def test_load_rejects_bad_files(tmp_path, changes, message):
    path = tmp_path / "cb.npz"
    cb = nomad.train_codebooks(gaussian_keys(t=32), 2, iters=1)
    nomad.save_codebooks(path, {0: cb}, dsub=2, centroids=16)
    _rewrite(path, **changes)
    with pytest.raises(ValueError, match=message):
        nomad.load_codebooks(path)


def test_load_rejects_non_codebook_files(tmp_path):
    plain = tmp_path / "plain.npz"
    np.savez(plain, layer_0=np.zeros((1, 8, 16, 2), np.float32))
    with pytest.raises(ValueError, match="no __header__"):
        nomad.load_codebooks(plain)
    text = tmp_path / "text.npz"
    text.write_text("hello")
    with pytest.raises(ValueError, match="not a valid"):
        nomad.load_codebooks(text)


def test_save_validates(tmp_path):
    cb = np.zeros((1, 8, 16, 2), np.float32)
    with pytest.raises(ValueError, match="shape"):
        nomad.save_codebooks(tmp_path / "a.npz", {0: cb}, dsub=4, centroids=16)
    with pytest.raises(ValueError, match="layer indices"):
        nomad.save_codebooks(tmp_path / "a.npz", {"0": cb}, dsub=2, centroids=16)
    with pytest.raises(ValueError, match="JSON"):
        nomad.save_codebooks(tmp_path / "a.npz", {0: cb}, dsub=2, centroids=16,
                             meta={"x": object()})


# --------------------------------------------------------------------------------------------
# Score-aware codebooks: score_weights and weighted training
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("causal,power", [(True, 1), (False, 1), (True, 2), (False, 2)])
def test_score_weights_match_a_loop(causal, power):
    rng = np.random.default_rng(7)
    t, hq, h, d = 6, 4, 2, 3
    q = rng.standard_normal((t, hq, d)).astype(np.float32)
    k = rng.standard_normal((t, h, d)).astype(np.float32)
    w = nomad.score_weights(q, k, causal=causal, query_power=power)
    assert w.shape == (t, h, d) and w.dtype == np.float32
    ref = np.zeros((t, h, d))
    for g in range(hq):
        kh = g // (hq // h)
        for i in range(t):
            seen = i + 1 if causal else t
            s = np.array([q[i, g] @ k[j, kh] for j in range(seen)]) / np.sqrt(d)
            p = np.exp(s - s.max())
            p /= p.sum()
            for j in range(seen):
                ref[j, kh] += p[j] * np.abs(q[i, g].astype(np.float64)) ** power
    np.testing.assert_allclose(w, ref, rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError, match="multiple of H"):
        nomad.score_weights(q[:, :3], k)
    with pytest.raises(ValueError, match="query_power"):
        nomad.score_weights(q, k, query_power=3)


def _weighted_error(keys, cb, w):
    """sum of w · squared component error, with keys assigned as attn.pq.encode assigns them."""
    codes = nomad.encode(keys, cb)  # [T, H, S]
    t, h, d = keys.shape
    _, s, _, dsub = cb.shape
    rec = np.take_along_axis(cb[None], codes[..., None, None].astype(np.intp), axis=3)[:, :, :, 0]
    return float((w * (keys.astype(np.float64) - rec.reshape(t, h, d)) ** 2).sum())


@pytest.mark.parametrize("dsub", [1, 2])
def test_weighted_training_puts_centroids_where_the_weight_is(dsub):
    keys = gaussian_keys(t=600, h=2, d=8)
    rng = np.random.default_rng(3)
    w = rng.uniform(0.0, 0.01, size=keys.shape)
    w[:20] = 50.0  # a few heavily attended keys (attention sinks)
    plain = nomad.train_codebooks(keys, dsub, iters=25, seed=0)
    weighted, history = nomad.train_codebooks(keys, dsub, iters=25, seed=0, weights=w,
                                              return_history=True)
    assert _weighted_error(keys, weighted, w) < 0.5 * _weighted_error(keys, plain, w)
    assert np.isclose(history[-1], _weighted_error(keys, weighted, np.maximum(w, 1e-6 * w.mean(0))))
    if dsub == 1:  # nearest-centroid assignment is the weighted optimum: monotone
        assert all(b <= a * (1 + 1e-12) for a, b in zip(history, history[1:]))


def test_weighted_training_is_deterministic_and_broadcasts_token_weights():
    keys = gaussian_keys(t=300, h=2, d=8)
    w2 = np.random.default_rng(4).uniform(0.1, 2.0, size=(300, 2))
    a = nomad.train_codebooks(keys, 2, seed=5, weights=w2, sample=200)
    b = nomad.train_codebooks(keys, 2, seed=5, weights=np.repeat(w2[:, :, None], 8, axis=2),
                              sample=200)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, nomad.train_codebooks(keys, 2, seed=5, sample=200))


def test_bad_weights():
    keys = gaussian_keys(t=100, h=2, d=8)
    with pytest.raises(ValueError, match="shape"):
        nomad.train_codebooks(keys, 2, weights=np.ones((100, 8)))
    with pytest.raises(ValueError, match="non-negative"):
        nomad.train_codebooks(keys, 2, weights=-np.ones(keys.shape))
    bad = np.ones(keys.shape)
    bad[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="finite"):
        nomad.train_codebooks(keys, 2, weights=bad)
    # A component no query reads (all weights zero) is trained as if unweighted.
    zero = np.ones(keys.shape)
    zero[:, 1, 3] = 0.0
    assert np.array_equal(nomad.train_codebooks(keys, 2, weights=zero, seed=3),
                          nomad.train_codebooks(keys, 2, weights=np.ones(keys.shape), seed=3))


@pytest.mark.parametrize("weighted", [False, True])
def test_restarts_keep_each_sub_quantizers_best_run(weighted):
    """restarts = n: every (head, sub-quantizer) gets the lowest-inertia codebook of the n runs
    (seeds seed .. seed + n − 1); restarts = 1 is the single run."""
    keys = gaussian_keys(t=400, h=2, d=8)
    w = np.random.default_rng(6).uniform(0.1, 3.0, size=keys.shape) if weighted else None
    runs = [nomad.train_codebooks(keys, 1, seed=s, weights=w, iters=10) for s in (7, 8, 9)]
    best = nomad.train_codebooks(keys, 1, seed=7, weights=w, iters=10, restarts=3)
    assert np.array_equal(nomad.train_codebooks(keys, 1, seed=7, weights=w, iters=10, restarts=1),
                          runs[0])
    wt = np.ones(keys.shape) if w is None else w

    def cost(cb):  # per (head, sub-quantizer)
        rec = np.take_along_axis(cb[None, ..., 0], nomad.encode(keys, cb)[..., None].astype(np.intp),
                                 3)[..., 0]
        return (wt * (keys - rec) ** 2).sum(axis=0)

    costs = np.stack([cost(r) for r in runs])
    assert np.allclose(cost(best), costs.min(axis=0), rtol=1e-9)
    for hh in range(2):
        for ss in range(8):
            assert any(np.array_equal(best[hh, ss], r[hh, ss]) for r in runs)
    with pytest.raises(ValueError, match="restarts"):
        nomad.train_codebooks(keys, 1, restarts=0)
    with pytest.raises(ValueError, match="return_history"):
        nomad.train_codebooks(keys, 1, restarts=2, return_history=True)
