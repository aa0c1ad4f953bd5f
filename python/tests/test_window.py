"""Sliding-window attention on the CPU: qattn.reference's ``window=(left, right)`` against a
brute-force mask (contiguous and paged, with causal, sinks and the log-sum-exp), the spec
keyword (``qattn.spec.attention``) and its errors, and what the compiler accepts and refuses."""

import json

import numpy as np
import pytest

import qattn
from qattn import paged, reference


def _data(b=3, s=300, sq=3, hq=4, hkv=2, d=8, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((b, sq, hq, d)), rng.standard_normal((b, s, hkv, d)),
            rng.standard_normal((b, s, hkv, d)))


def _brute(q, k, v, lens, left, right, causal=False, sinks=None):
    """Row by row: the softmax over the keys j with pos - left <= j <= pos + right (and
    j <= pos when causal), the sink in the denominator; (O, LSE)."""
    b, sq, hq, _ = q.shape
    hkv, dv = k.shape[2], v.shape[3]
    out, lse = np.zeros((b, sq, hq, dv)), np.full((b, sq, hq), -np.inf)
    scale = 1 / np.sqrt(q.shape[3])
    for i in range(b):
        n = int(lens[i])
        for t in range(sq):
            pos = n - sq + t
            keys = [j for j in range(n)
                    if (left < 0 or j >= pos - left) and (right < 0 or j <= pos + right)
                    and (not causal or j <= pos)]
            for h in range(hq):
                g = h // (hq // hkv)
                x = np.array([scale * q[i, t, h] @ k[i, j, g] for j in keys])
                terms = list(x) + ([sinks[h]] if sinks is not None else [])
                if not terms:
                    continue
                m = max(terms)
                den = sum(np.exp(y - m) for y in terms)
                lse[i, t, h] = m + np.log(den)
                if keys:
                    out[i, t, h] = sum(np.exp(x[a] - m) * v[i, j, g]
                                       for a, j in enumerate(keys)) / den
    return out, lse


@pytest.mark.parametrize("left,right,causal", [
    (0, 0, False), (1, -1, False), (63, 0, False), (127, -1, False), (1000, 0, False),
    (0, -1, True), (5, 3, True), (-1, 0, False), (-1, 2, False), (2, 1, False)])
def test_reference_window_matches_brute_force(left, right, causal):
    q, k, v = _data()
    lens = [300, 0, 2]  # a row before the first key (length 2, three queries) sees none
    sinks = np.array([0.5, -1.0, 2.0, 0.0])
    got = reference.attention(q, k, v, lens, causal=causal, window=(left, right), sinks=sinks,
                              return_lse=True)
    want = _brute(q, k, v, lens, left, right, causal, sinks)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-10)
    plain = reference.attention(q, k, v, lens, causal=causal)
    if (left, right) != (-1, -1) and not (causal and left < 0):
        assert not np.allclose(got[0], plain)


def test_reference_window_unbounded_is_plain():
    q, k, v = _data()
    np.testing.assert_array_equal(reference.attention(q, k, v, [300, 5, 1], window=(-1, -1)),
                                  reference.attention(q, k, v, [300, 5, 1]))


def test_paged_reference_window_skips_pages_before_it():
    q, k, v = _data(b=2, s=200)
    lens = [200, 150]
    table, pages = paged.allocate(lens, 16, num_pages=None, seed=5)
    kp = paged.paginate(k, lens, table, pages, 16)
    vp = paged.paginate(v, lens, table, pages, 16)
    want = reference.attention(q, k, v, lens, window=(40, 0), return_lse=True)
    # Pages wholly before every query's window may be freed: entries outside the pool.
    freed = table.copy()
    freed[0, :(200 - 3 - 40) // 16] = -1
    freed[1, :(150 - 3 - 40) // 16] = 10 ** 6
    got = reference.paged_attention(q, kp, vp, freed, lens, window=(40, 0), return_lse=True)
    for g, w in zip(got, want):  # the pages hold float32
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError, match="outside the pool"):
        reference.paged_attention(q, kp, vp, freed, lens)


@pytest.mark.parametrize("bad", [(1,), (1, 2, 3), 5, (-2, 0), (0, -3), (1.5, 0), (True, 0)])
def test_reference_window_errors(bad):
    q, k, v = _data(b=1, s=10)
    with pytest.raises(ValueError, match="window"):
        reference.attention(q, k, v, [10], window=bad)


def test_spec_window_keyword():
    kw = dict(batch=4, q_len=2, kv_len=4096, q_heads=16, kv_heads=2, head_dim=128,
              kv_dtype="i8", granularity="per_token_head", seq_lens=True)
    spec = qattn.attention("decode", **kw, window=(127, 0))
    assert "window = array<i64: 127, 0>" in spec.text
    assert "window" not in qattn.attention("decode", **kw).text
    assert qattn.compile(spec, passes=()).output
    for bad in ((1,), (-2, 0), (0, 1.0), (True, 0), "127"):
        with pytest.raises(ValueError, match="window"):
            qattn.attention("decode", **kw, window=bad)
    prefill = qattn.attention("prefill", **dict(kw, q_len=64), causal=True, window=(127, 0))
    assert "window = array<i64: 127, 0>" in prefill.text


def test_compiler_refuses_window_where_not_implemented():
    text = qattn.attention("decode", batch=2, q_len=1, kv_len=100, q_heads=8, kv_heads=2,
                           head_dim=64, target="avx2", window=(63, 0)).text
    with pytest.raises(qattn.CompileError, match="window needs target sm_90a"):
        qattn.compile(text, passes=())


def test_launch_metadata_states_the_window():
    kw = dict(batch=None, kv_len=None, q_len=2, q_heads=16, kv_heads=2, head_dim=128,
              kv_dtype="i8", granularity="per_token_head", seq_lens=True)
    spec = qattn.attention("decode", **kw, window=(127, 0))
    meta = json.loads(qattn.compile(spec, emit="ptx").launch)
    assert meta["problem"]["window"] == [127, 0]
    plain = qattn.attention("decode", **kw)
    assert "window" not in json.loads(qattn.compile(plain, emit="ptx").launch)["problem"]
