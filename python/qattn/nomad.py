"""NoMAD-Attention codebooks: training them on recorded keys, and storing them for a whole model.

NoMAD-Attention replaces the query-key dot products of decoding with lookups: every key of head_dim
D is split into S = D / dsub sub-vectors, and each sub-vector is stored as the index of its nearest
centroid in a small codebook (product quantization). Each (layer, KV head, sub-quantizer) has its
own codebook of C centroids (16 gives 4-bit codes; 32 or 64 give 8-bit codes) of dimension dsub,
learned by k-means on keys recorded from the model. The compiler's ``attn.pq.*`` ops take the
codebooks of one layer as a float32 array of shape [H, S, C, dsub] (H = KV heads), row-major.

- ``train_codebooks(keys, dsub)`` learns the codebooks of one layer from its keys [T, H, D]:
  k-means++ initialisation, then Lloyd iterations, all (head, sub-quantizer) pairs at once.
- ``encode(keys, codebooks)`` gives the nearest-centroid codes [T, H, S]: a reference for what
  ``attn.pq.encode`` computes (f32 squared distances, lowest index on ties), without its block-major,
  nibble-packed code layout. ``inertia(keys, codebooks)`` is the total squared quantization error.
- ``save_codebooks`` / ``load_codebooks`` write and read the codebooks of every layer of a model.

Codebook file format (version 1)
--------------------------------
One uncompressed NumPy ``.npz`` archive (``np.savez``) per model, written to exactly the path given
(``.npz`` is the conventional suffix). It holds:

- ``layer_<i>`` for each layer i (decimal, no padding: ``layer_0``, ``layer_17``): a float32 array
  [H, S, C, dsub], the codebooks of that layer exactly as the kernels take them.
- ``__header__``: a 0-d unicode array holding a JSON object::

      {"format": "qattn-nomad-codebooks", "version": 1,
       "dsub": 1, "centroids": 16,
       "layers": [0, 1, ...],                       # sorted layer indices
       "shapes": {"0": [H, S, C, dsub], ...},       # per layer, keyed by str(layer)
       "meta": {...}}                               # free-form, JSON-serializable

Every layer shares ``dsub`` and ``centroids``; H and S may differ between layers. The file needs
no qattn to read: ``np.load(path)["layer_3"]``, ``json.loads(str(np.load(path)["__header__"]))``.
``load_codebooks`` checks the format tag, the version, that the arrays present are exactly the
layers listed, and every dtype and shape against the header; any mismatch raises ``ValueError``.
"""

from __future__ import annotations

import json
import os
import zipfile
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

import numpy as np

FORMAT = "qattn-nomad-codebooks"
FORMAT_VERSION = 1
DSUBS = (1, 2, 4, 8)  # what #attn.pq<dsub = ...> accepts
CENTROIDS = (16, 32, 64)  # what #attn.pq<centroids = ...> accepts
HEADER_KEY = "__header__"

PathLike = Union[str, "os.PathLike[str]"]

# Distance blocks are computed in chunks of tokens holding at most this many elements.
_CHUNK_ELEMENTS = 1 << 16  # ~0.5 MiB of float64: cache-sized blocks are fastest


# --------------------------------------------------------------------------------------------
# Shared utilities
# --------------------------------------------------------------------------------------------


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _check_pq(dsub: int, centroids: int) -> None:
    if not _is_int(dsub) or dsub not in DSUBS:
        raise ValueError(f"dsub must be one of {DSUBS}, got {dsub!r}")
    if not _is_int(centroids) or centroids not in CENTROIDS:
        raise ValueError(f"centroids must be one of {CENTROIDS}, got {centroids!r}")


def _as_keys(keys: Any, dtype: Any) -> np.ndarray:
    """``keys`` as a [T, H, D] array of ``dtype``; ValueError if it is not one."""
    arr = np.asarray(keys)
    if arr.dtype.kind in "bcOSU":
        raise ValueError(f"keys must be a real-valued array, got dtype {arr.dtype}")
    if arr.ndim != 3:
        raise ValueError(f"keys must have shape [T, H, D], got shape {arr.shape}")
    return arr.astype(dtype, copy=False)


def _split(keys: np.ndarray, codebooks: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Flatten (head, sub-quantizer) into one axis Q = H * S.

    Returns the sub-vectors [T, Q, dsub] and the codebooks [Q, C, dsub] (same dtype as keys).
    """
    if codebooks.ndim != 4:
        raise ValueError(f"codebooks must have shape [H, S, C, dsub], got {codebooks.shape}")
    t, h, d = keys.shape
    ch, s, c, dsub = codebooks.shape
    if ch != h or s * dsub != d:
        raise ValueError(
            f"codebooks of shape {codebooks.shape} do not fit keys of shape {keys.shape}: "
            f"expected [{h}, {d // max(dsub, 1)}, C, {dsub}] (H = {h}, S * dsub = D = {d})")
    x = keys.reshape(t, h * s, dsub)
    cb = codebooks.astype(keys.dtype, copy=False).reshape(h * s, c, dsub)
    return x, cb


def _nearest(x: np.ndarray, cb: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Nearest centroid of every sub-vector.

    ``x`` [N, Q, dsub], ``cb`` [Q, C, dsub] (one dtype). Returns the indices [N, Q] and squared
    distances [N, Q]. Distances are accumulated over dsub in order, as ``sum_j (x_j - c_j)^2``
    (subtract, multiply, add: no expansion), in the dtype of the inputs, like attn.pq.encode; the
    lowest index wins ties, and NaN distances never win.
    """
    n, q, dsub = x.shape
    c = cb.shape[1]
    labels = np.empty((n, q), dtype=np.intp)
    dists = np.empty((n, q), dtype=x.dtype)
    step = max(1, _CHUNK_ELEMENTS // max(1, q * c))
    for start in range(0, n, step):
        xs = x[start:start + step]
        d = np.zeros((xs.shape[0], q, c), dtype=x.dtype)
        for j in range(dsub):
            diff = xs[:, :, None, j] - cb[None, :, :, j]
            d += diff * diff
        d[np.isnan(d)] = np.inf
        idx = np.argmin(d, axis=2)
        labels[start:start + step] = idx
        dists[start:start + step] = np.take_along_axis(d, idx[:, :, None], axis=2)[:, :, 0]
    return labels, dists


# --------------------------------------------------------------------------------------------
# Encoding and quantization error
# --------------------------------------------------------------------------------------------


def encode(keys: Any, codebooks: Any) -> np.ndarray:
    """Nearest-centroid codes of ``keys`` [T, H, D] under ``codebooks`` [H, S, C, dsub].

    Returns uint8 codes [T, H, S]. This is the arithmetic of ``attn.pq.encode``: keys and
    codebooks in float32, squared L2 distance accumulated over the dsub components in order, the
    lowest centroid index on ties. (The op additionally writes the codes into the block-major,
    transposed code cache; this returns them unpacked.)
    """
    k = _as_keys(keys, np.float32)
    x, cb = _split(k, np.asarray(codebooks))
    labels, _ = _nearest(x, cb)
    t, h, _ = k.shape
    return labels.astype(np.uint8).reshape(t, h, -1)


def inertia(keys: Any, codebooks: Any) -> float:
    """Sum over (token, head, sub-quantizer) of the squared distance to the nearest centroid.

    ``keys`` [T, H, D], ``codebooks`` [H, S, C, dsub]; computed in float64.
    """
    k = _as_keys(keys, np.float64)
    x, cb = _split(k, np.asarray(codebooks))
    _, dists = _nearest(x, cb)
    return float(dists.sum())


# --------------------------------------------------------------------------------------------
# k-means
# --------------------------------------------------------------------------------------------


def _kmeans_pp(x: np.ndarray, centroids: int, rng: np.random.Generator,
               w: Optional[np.ndarray] = None) -> np.ndarray:
    """k-means++ seeding of every sub-quantizer at once: x [N, Q, dsub] -> [Q, C, dsub].

    The first centroid of each sub-quantizer is a random point (drawn with probability
    proportional to its weight, uniformly without weights); each next one is a point drawn with
    probability proportional to its (weighted) squared distance to the nearest centroid chosen so
    far. (When every point already coincides with a centroid, a uniform draw.) ``w`` [N, Q, dsub]
    are per-component weights; a point's weight is their mean.
    """
    n, q, dsub = x.shape
    cols = np.arange(q)
    pw = None if w is None else w.mean(axis=2)  # [N, Q]

    def draw(mass):
        cum = np.cumsum(mass, axis=0)
        total = cum[-1]
        u = (1.0 - rng.random(q)) * total  # in (0, total]
        pick = np.minimum((cum < u[None, :]).sum(axis=0), n - 1)  # first i with cum[i] >= u
        uniform = rng.integers(n, size=q)
        return np.where(total > 0, pick, uniform)

    cb = np.empty((q, centroids, dsub), dtype=x.dtype)
    first = rng.integers(n, size=q) if pw is None else draw(pw)
    cb[:, 0] = x[first, cols]
    d2 = ((x - cb[None, :, 0]) ** 2).sum(axis=2)  # [N, Q]
    for k in range(1, centroids):
        cb[:, k] = x[draw(d2 if pw is None else d2 * pw), cols]
        d2 = np.minimum(d2, ((x - cb[None, :, k]) ** 2).sum(axis=2))
    return cb


def _update(x: np.ndarray, labels: np.ndarray, dists: np.ndarray, centroids: int,
            w: Optional[np.ndarray] = None) -> np.ndarray:
    """Lloyd update: every centroid becomes the mean of its points (with weights ``w``
    [N, Q, dsub], each component the weighted mean). Modifies ``labels``.

    An empty cluster is re-seeded with the point farthest from its centroid (lowest index on
    ties) among clusters of two or more points, which then moves to the empty cluster. Without
    weights both steps can only lower the inertia, so k-means stays monotone.
    """
    n, q, dsub = x.shape
    flat = (labels + centroids * np.arange(q)[None, :]).ravel()
    counts = np.bincount(flat, minlength=q * centroids).reshape(q, centroids)
    if w is None:
        w = np.ones_like(x)
    mass = np.stack([np.bincount(flat, weights=w[:, :, j].ravel(), minlength=q * centroids)
                     for j in range(dsub)], axis=-1).reshape(q, centroids, dsub)
    sums = np.stack([np.bincount(flat, weights=(w[:, :, j] * x[:, :, j]).ravel(),
                                 minlength=q * centroids)
                     for j in range(dsub)], axis=-1).reshape(q, centroids, dsub)
    if not counts.all():
        dists = dists.copy()
        for sq, empty in np.argwhere(counts == 0):  # rare: a short Python loop is fine
            donors = counts[sq, labels[:, sq]] >= 2
            i = int(np.argmax(np.where(donors, dists[:, sq], -1.0)))
            old = labels[i, sq]
            counts[sq, old] -= 1
            mass[sq, old] -= w[i, sq]
            sums[sq, old] -= w[i, sq] * x[i, sq]
            counts[sq, empty] = 1
            mass[sq, empty] = w[i, sq]
            sums[sq, empty] = w[i, sq] * x[i, sq]
            labels[i, sq] = empty
            dists[i, sq] = 0.0
    return sums / mass


def _check_weights(weights: Any, shape: Tuple[int, ...]) -> np.ndarray:
    """``weights`` as float64 [T, H, D] (or [T, H], broadcast over D), non-negative and finite,
    each floored at 1e-6 of its (head, component) mean so every point keeps a little mass. A
    (head, component) whose weights are all zero — one no score depends on, e.g. a query channel
    that Gemma's QK-norm weight zeroes — gets uniform weights (plain k-means there)."""
    w = np.asarray(weights, dtype=np.float64)
    if w.shape == shape[:2]:
        w = np.broadcast_to(w[:, :, None], shape)
    if w.shape != shape:
        raise ValueError(f"weights must have the keys' shape {tuple(shape)} or {tuple(shape[:2])}, "
                         f"got {w.shape}")
    if not np.isfinite(w).all() or (w < 0).any():
        raise ValueError("weights must be finite and non-negative")
    mean = w.mean(axis=0, keepdims=True)
    if not (mean > 0).all():
        w = np.where(mean > 0, w, 1.0)
        mean = np.where(mean > 0, mean, 1.0)
    return np.maximum(w, 1e-6 * mean)


def score_weights(q: Any, k: Any, causal: bool = True, query_power: int = 2,
                  window: Optional[int] = None) -> np.ndarray:
    """Per-component key weights for score-aware codebooks, from one calibration sequence.

    ``q`` [T, Hq, D] queries and ``k`` [T, H, D] keys (post-RoPE, as cached; Hq a multiple of
    H: the query heads of a group share their KV head). Returns float32 [T, H, D]:

        w[t, h, j] = sum over queries i (i >= t when causal) and query heads g of group h of
                     p[g, i, t] * |q[i, g, j]|^query_power

    with p the softmax attention probabilities (scale 1/sqrt(D)). Replacing key t's component j by
    c changes the score q[i]·k[t] by q[i, j] (c - k[t, j]); w weighs that error by how much
    attention key t receives, so ``train_codebooks(keys, ..., weights=w)`` spends its centroids
    where the softmax is sensitive (attention sinks and other heavily attended keys) instead of
    where the keys are merely dense. ``query_power`` 2 (the default) weighs by the expected
    squared score error of a unit component error; 1 (p·|q|) discounts the few query channels
    with outsized magnitude. On SmolLM2 a small probe preferred 1, the full protocol 2 (+3.48%
    against +3.03% at dsub 1; docs/Perplexity.md, "Choosing the weighting"). ``window`` (a
    sliding-window layer, causal only): query i attends keys i - window + 1..i.
    """
    if query_power not in (1, 2):
        raise ValueError(f"query_power must be 1 or 2, got {query_power!r}")
    qf = np.asarray(q, dtype=np.float32)
    kf = np.asarray(k, dtype=np.float32)
    if qf.ndim != 3 or kf.ndim != 3 or qf.shape[0] != kf.shape[0] or qf.shape[2] != kf.shape[2] \
            or kf.shape[1] == 0 or qf.shape[1] % kf.shape[1]:
        raise ValueError(f"q [T, Hq, D] and k [T, H, D] with Hq a multiple of H expected, got "
                         f"{qf.shape} and {kf.shape}")
    t, hq, d = qf.shape
    h = kf.shape[1]
    qg = qf.reshape(t, h, hq // h, d).transpose(1, 2, 0, 3)  # [H, g, T, D]
    s = np.matmul(qg, kf.transpose(1, 2, 0)[:, None]) * np.float32(1.0 / np.sqrt(d))
    if causal:
        ii, jj = np.arange(t)[:, None], np.arange(t)[None, :]
        seen = (jj <= ii) if window is None else (jj <= ii) & (ii - jj < window)
        s = np.where(seen, s, np.float32(-np.inf))
    elif window is not None:
        raise ValueError("a sliding window needs causal attention")
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)  # [H, g, Tq, Tk]
    qe = np.abs(qg) if query_power == 1 else qg * qg
    w = np.matmul(p.transpose(0, 1, 3, 2), qe).sum(axis=1)  # [H, Tk, D]
    return np.ascontiguousarray(w.transpose(1, 0, 2), dtype=np.float32)


def train_codebooks(keys: Any, dsub: int, centroids: int = 16, iters: int = 25, seed: int = 0,
                    sample: Optional[int] = None, return_history: bool = False,
                    weights: Any = None, restarts: int = 1):
    """Learn the NoMAD codebooks of one layer by k-means on its recorded keys.

    Args:
      keys: [T, H, D] keys of one layer (tokens, KV heads, head_dim), any real dtype.
      dsub: sub-vector dimension (1, 2, 4 or 8); D must be a multiple of it. S = D / dsub.
      centroids: codebook size C (16, 32 or 64).
      iters: maximum number of Lloyd iterations; training stops earlier once the assignments
        (or, with duplicate points, the centroids) stop changing.
      seed: seed of ``np.random.default_rng``, used for ``sample`` and k-means++. The result is
        a deterministic function of (keys, dsub, centroids, iters, seed, sample).
      sample: train on at most this many tokens, a random subset of the T (all when ``None``).
      return_history: also return the inertia (on the training tokens, float64) of the k-means++
        centroids followed by that after each Lloyd iteration; it never increases. With
        ``weights`` it is the weighted inertia (sum of w · squared component error), which never
        increases at dsub = 1.
      weights: optional non-negative per-component weights [T, H, D] (or [T, H]) of the keys,
        e.g. ``score_weights``: weighted k-means++ seeding and weighted centroid means. Points
        are still assigned to their nearest centroid by plain squared distance — what
        ``attn.pq.encode`` does at run time — so the codes of trained and encoded keys agree.

      restarts: k-means runs from different k-means++ seedings (rng seeds seed, seed + 1, ...;
        the training tokens are the same for all); each (head, sub-quantizer) keeps the run with
        the lowest (weighted) inertia on them, as scikit-learn's n_init does per problem. On
        SmolLM2 two pools of four restarts gave dsub 1 +2.78% and +3.22% where single runs gave
        +2.8 to +3.7% (docs/Perplexity.md): lower inertia, not a reliably lower perplexity.
        ``return_history`` needs ``restarts = 1``.

    Returns:
      float32 codebooks [H, S, C, dsub], or ``(codebooks, history)`` with ``return_history``.

    Each (head, sub-quantizer) pair is its own k-means problem; all are solved together, in
    float64, vectorized over heads and sub-quantizers. Raises ValueError when there are fewer
    training tokens than centroids, or the keys are not finite.
    """
    _check_pq(dsub, centroids)
    k = _as_keys(keys, np.float64)
    t, h, d = k.shape
    if d % dsub:
        raise ValueError(f"head_dim {d} is not a multiple of dsub = {dsub}")
    if iters < 0:
        raise ValueError(f"iters must be >= 0, got {iters}")
    if not _is_int(restarts) or restarts < 1:
        raise ValueError(f"restarts must be a positive integer, got {restarts!r}")
    if restarts > 1 and return_history:
        raise ValueError("return_history needs restarts = 1 (each sub-quantizer keeps its own run)")
    if t < centroids:
        raise ValueError(f"need at least as many key vectors as centroids to train codebooks: "
                         f"got T = {t} tokens for {centroids} centroids")
    if sample is not None and sample < centroids:
        raise ValueError(f"sample = {sample} is smaller than centroids = {centroids}")
    if not np.isfinite(k).all():
        raise ValueError("keys contain NaN or infinite values")

    wk = None if weights is None else _check_weights(weights, k.shape)
    rng = np.random.default_rng(seed)
    if sample is not None and sample < t:
        chosen = np.sort(rng.choice(t, size=sample, replace=False))
        k = k[chosen]
        wk = None if wk is None else wk[chosen]
    n = k.shape[0]
    s = d // dsub
    x = np.ascontiguousarray(k.reshape(n, h * s, dsub))
    wx = None if wk is None else np.ascontiguousarray(wk.reshape(n, h * s, dsub))

    def objective(cb, labels, dists):
        if wx is None:
            return float(dists.sum())
        err = x - cb[np.arange(h * s)[None, :], labels]  # [N, Q, dsub]
        return float((wx * err * err).sum())

    def lloyd(rng):
        cb = _kmeans_pp(x, centroids, rng, wx)
        labels, dists = _nearest(x, cb)
        history: List[float] = [objective(cb, labels, dists)]
        for _ in range(iters):
            new_cb = _update(x, labels, dists, centroids, wx)  # labels now reflect any re-seeding
            new_labels, dists = _nearest(x, new_cb)
            history.append(objective(new_cb, new_labels, dists))
            # A fixed point: the assignments (or, with duplicate points, the centroids) repeat.
            converged = np.array_equal(new_labels, labels) or np.array_equal(new_cb, cb)
            cb, labels = new_cb, new_labels
            if converged:
                break
        return cb, history

    cb, history = lloyd(rng)
    if restarts > 1:
        def per_problem(cb):  # (weighted) inertia of each (head, sub-quantizer) [Q]
            labels, dists = _nearest(x, cb)
            if wx is None:
                return dists.sum(axis=0)
            err = x - cb[np.arange(h * s)[None, :], labels]
            return (wx * err * err).sum(axis=(0, 2))
        best, best_cost = cb, per_problem(cb)
        for i in range(1, restarts):
            other, _ = lloyd(np.random.default_rng(seed + i))
            cost = per_problem(other)
            better = cost < best_cost
            best = np.where(better[:, None, None], other, best)
            best_cost = np.minimum(cost, best_cost)
        cb = best

    out = cb.reshape(h, s, centroids, dsub).astype(np.float32)
    return (out, history) if return_history else out


# --------------------------------------------------------------------------------------------
# The codebook file of a model
# --------------------------------------------------------------------------------------------


def save_codebooks(path: PathLike, codebooks_by_layer: Mapping[int, Any], dsub: int,
                   centroids: int, meta: Optional[Mapping[str, Any]] = None) -> None:
    """Write the codebooks of a model to ``path`` in the format of this module's docstring.

    ``codebooks_by_layer`` maps each layer index to its codebooks [H, S, C, dsub] (stored as
    float32). ``meta`` is any JSON-serializable mapping (model name, calibration data, ...).
    The file is written to exactly ``path`` (no suffix is added).
    """
    _check_pq(dsub, centroids)
    arrays: Dict[str, np.ndarray] = {}
    shapes: Dict[str, List[int]] = {}
    layers: List[int] = []
    for layer, cb in codebooks_by_layer.items():
        if not _is_int(layer) or layer < 0:
            raise ValueError(f"layer indices must be non-negative integers, got {layer!r}")
        layer = int(layer)
        if layer in layers:
            raise ValueError(f"layer {layer} given twice")
        arr = np.ascontiguousarray(cb, dtype=np.float32)
        if arr.ndim != 4 or arr.shape[2] != centroids or arr.shape[3] != dsub:
            raise ValueError(f"layer {layer}: codebooks must have shape [H, S, {centroids}, "
                             f"{dsub}], got {arr.shape}")
        if not np.isfinite(arr).all():
            raise ValueError(f"layer {layer}: codebooks contain NaN or infinite values")
        layers.append(layer)
        arrays[f"layer_{layer}"] = arr
        shapes[str(layer)] = [int(e) for e in arr.shape]
    layers.sort()
    header = {"format": FORMAT, "version": FORMAT_VERSION, "dsub": int(dsub),
              "centroids": int(centroids), "layers": layers,
              "shapes": {str(i): shapes[str(i)] for i in layers},
              "meta": dict(meta) if meta is not None else {}}
    try:
        text = json.dumps(header)
    except TypeError as err:
        raise ValueError(f"meta is not JSON-serializable: {err}") from None
    with open(path, "wb") as f:
        np.savez(f, **{HEADER_KEY: np.array(text)}, **arrays)


def load_codebooks(path: PathLike) -> Tuple[Dict[int, np.ndarray], Dict[str, Any]]:
    """Read a file written by ``save_codebooks``.

    Returns ``(codebooks_by_layer, info)``: float32 [H, S, C, dsub] arrays keyed by layer index,
    and the header (format, version, dsub, centroids, layers, shapes, meta). Raises ValueError
    when the file is not a codebook file of a supported version or disagrees with its header.
    """
    def bad(why: str) -> ValueError:
        return ValueError(f"{os.fspath(path)}: not a valid {FORMAT} file: {why}")

    try:
        npz = np.load(path, allow_pickle=False)
    except (OSError, ValueError, zipfile.BadZipFile) as err:
        raise bad(str(err)) from None
    if isinstance(npz, np.ndarray):
        raise bad("a single .npy array, not an .npz archive")
    with npz:
        names = set(npz.files)
        if HEADER_KEY not in names:
            raise bad(f"no {HEADER_KEY} array")
        raw = npz[HEADER_KEY]
        if raw.dtype.kind != "U" or raw.ndim != 0:
            raise bad(f"{HEADER_KEY} must be a 0-d string array")
        try:
            info = json.loads(str(raw))
        except json.JSONDecodeError as err:
            raise bad(f"{HEADER_KEY} is not JSON: {err}") from None
        if not isinstance(info, dict):
            raise bad(f"{HEADER_KEY} is not a JSON object")
        if info.get("format") != FORMAT:
            raise bad(f"format tag is {info.get('format')!r}, expected {FORMAT!r}")
        if info.get("version") != FORMAT_VERSION:
            raise bad(f"unsupported version {info.get('version')!r} (this qattn reads version "
                      f"{FORMAT_VERSION})")
        dsub, centroids = info.get("dsub"), info.get("centroids")
        try:
            _check_pq(dsub, centroids)
        except ValueError as err:
            raise bad(str(err)) from None
        layers, shapes = info.get("layers"), info.get("shapes")
        if (not isinstance(layers, list) or not isinstance(shapes, dict)
                or not all(_is_int(i) for i in layers)):
            raise bad("'layers' must be a list of integers and 'shapes' an object")
        if not isinstance(info.get("meta", {}), dict):
            raise bad("'meta' must be an object")
        expected = {f"layer_{i}" for i in layers} | {HEADER_KEY}
        if len(set(layers)) != len(layers) or names != expected:
            raise bad(f"arrays {sorted(names - {HEADER_KEY})} do not match layers {layers}")
        if set(shapes) != {str(i) for i in layers}:
            raise bad(f"'shapes' has entries for {sorted(shapes)}, expected one per layer")
        out: Dict[int, np.ndarray] = {}
        for i in layers:
            arr = npz[f"layer_{i}"]
            shape = shapes[str(i)]
            if arr.dtype != np.float32:
                raise bad(f"layer_{i} has dtype {arr.dtype}, expected float32")
            if list(arr.shape) != shape:
                raise bad(f"layer_{i} has shape {list(arr.shape)}, header says {shape}")
            if arr.ndim != 4 or arr.shape[2] != centroids or arr.shape[3] != dsub:
                raise bad(f"layer_{i} has shape {list(arr.shape)}, expected [H, S, "
                          f"{centroids}, {dsub}]")
            out[i] = arr
    info.setdefault("meta", {})
    return out, info
