"""qattn.lm.decode on a tiny random Llama model: the KV-cache decode step against the full forward
pass, NoMAD decoding through compiled kernels, the timing rows, and bad input."""

import os
import shutil

import numpy as np
import pytest

pytest.importorskip("regex")  # qattn.lm's tokenizer (the lm extra)

from qattn import nomad  # noqa: E402
from qattn.lm import decode  # noqa: E402
from qattn.lm.model import LlamaConfig, LlamaModel  # noqa: E402

HAVE_ATTN_OPT = bool(os.environ.get("ATTN_OPT") or shutil.which("attn-opt"))
needs_attn_opt = pytest.mark.skipif(not HAVE_ATTN_OPT, reason="attn-opt not found")


@pytest.fixture(scope="module")
def tiny():
    cfg = LlamaConfig(layers=2, dim=128, ffn_dim=96, heads=4, kv_heads=2, head_dim=32,
                      rope_base=10000.0, norm_eps=1e-5, vocab=50, context=256)
    rng = np.random.default_rng(0)

    def w(*shape, scale=0.2):
        return (scale * rng.standard_normal(shape)).astype(np.float32)

    embedding = w(cfg.vocab, cfg.dim, scale=1.0)
    weights = decode.llama_weights(cfg, w, embedding, output=w(cfg.vocab, cfg.dim))
    return LlamaModel(cfg, weights, tokenizer=None, name="tiny")


TOKENS = [3, 17, 5, 42, 8, 8, 23, 1, 0, 49, 12, 30] * 6  # 72 tokens: more than two 32-key blocks


def test_dense_step_matches_forward(tiny):
    keys, values = decode.record_prefix(tiny, TOKENS[:-1])
    state = decode.DecodeState(tiny, capacity=len(TOKENS))
    state.fill(keys, values)
    logits = decode.step(tiny, state, TOKENS[-1])
    full = tiny.forward(TOKENS)[-1]
    np.testing.assert_allclose(logits, full, rtol=1e-4, atol=1e-4)
    assert state.length == len(TOKENS)
    assert state.attention_seconds > 0


@needs_attn_opt
@pytest.mark.parametrize("dsub", [1, 2])
def test_nomad_step_tracks_dense(tiny, dsub):
    keys, values = decode.record_prefix(tiny, TOKENS[:-1])
    books = {i: nomad.train_codebooks(k, dsub) for i, k in enumerate(keys)}
    state = decode.DecodeState(tiny, len(TOKENS), dsub, books)
    state.fill(keys, values)
    logits = decode.step(tiny, state, TOKENS[-1])
    full = tiny.forward(TOKENS)[-1]
    assert np.isfinite(logits).all()
    # Approximate attention: the logits follow the dense ones closely, not exactly.
    assert np.corrcoef(logits, full)[0, 1] > 0.9
    # The new key's codes were appended at its position.
    blk, j = divmod(len(TOKENS) - 1, 32)
    assert state.codes[0][:, blk].any()


@needs_attn_opt
def test_time_decode_rows(tiny):
    keys, values = decode.record_prefix(tiny, TOKENS[:16])
    k, v = decode.tile_context(keys, values, 100)
    assert k[0].shape[0] == 100 and np.array_equal(k[0][16:32], keys[0])
    books = {i: nomad.train_codebooks(x, 2) for i, x in enumerate(keys)}
    exe = os.environ.get("ATTN_OPT") or shutil.which("attn-opt")
    modes = {"dense": {}, "nomad_dsub2": {"dsub": 2}, "nomad_dsub2_f16": {"dsub": 2, "values": "f16"},
             "nomad_dsub2_base": {"dsub": 2, "attn_opt": exe}}
    rows = decode.time_decode(tiny, k, v, modes, {2: books}, steps=2)
    assert [r["attention"] for r in rows] == list(modes)
    for row in rows:
        assert row["context"] == 100 and row["tokens_per_s"] > 0
        assert 0 < row["attention_share"] <= 1
        assert row["rest_ms"] == pytest.approx(row["step_ms"] - row["attention_ms"])
        assert row["speedup"] == pytest.approx(rows[0]["step_ms"] / row["step_ms"])


def test_bad_input(tiny):
    state = decode.DecodeState(tiny, capacity=1)
    with pytest.raises(ValueError, match="not in"):
        decode.step(tiny, state, 50)
    decode.step(tiny, state, 3)
    with pytest.raises(ValueError, match="full"):
        decode.step(tiny, state, 3)
    with pytest.raises(ValueError, match="codebooks"):
        decode.DecodeState(tiny, capacity=4, dsub=1)
    with pytest.raises(ValueError, match="capacity"):
        decode.DecodeState(tiny, capacity=0)


@needs_attn_opt
@pytest.mark.parametrize("values", ["f16", "i8"])
def test_nomad_value_precisions_track_f32(tiny, values):
    keys, values_ = decode.record_prefix(tiny, TOKENS[:-1])
    books = {i: nomad.train_codebooks(k, 1) for i, k in enumerate(keys)}
    logits = {}
    for vt in ("f32", values):
        state = decode.DecodeState(tiny, len(TOKENS), 1, books, values=vt)
        state.fill(keys, values_)
        logits[vt] = decode.step(tiny, state, TOKENS[-1])
        assert state.v[0].dtype == {"f32": np.float32, "f16": np.float16, "i8": np.int8}[vt]
    # same codes and scores; only the values' rounding differs
    np.testing.assert_allclose(logits[values], logits["f32"], rtol=0.05, atol=0.05)


def test_store_values_i8_round_trip():
    v = np.random.default_rng(0).standard_normal((5, 2, 8)).astype(np.float32)
    v[1, 0] = 0  # an all-zero row keeps scale 1
    q, s = decode.store_values(v, "i8")
    assert q.dtype == np.int8 and s.shape == (5, 2) and s[1, 0] == 1
    assert np.abs(q.astype(np.float32) * s[..., None] - v).max() <= s.max() / 2 + 1e-7


def test_bad_modes(tiny):
    with pytest.raises(ValueError, match="values must be"):
        decode.DecodeState(tiny, capacity=4, values="bf16")
    with pytest.raises(ValueError, match="keeps its cache in f32"):
        decode.DecodeState(tiny, capacity=4, values="f16")
    with pytest.raises(ValueError, match="'dense' or 'torch'"):
        decode.DecodeState(tiny, capacity=4, dense="blas")


@needs_attn_opt
def test_prebuilt_kernels(tiny, tmp_path):
    cfg = tiny.config
    isa = decode.host_isa()
    [d] = decode.save_kernels(cfg, [2], "f16", isa, str(tmp_path))
    lib = decode.nomad_library(cfg, 2, "f16", isa, kernels=str(tmp_path))
    assert lib.path.startswith(d) and "nomad_attend" in lib.functions
    with pytest.raises(FileNotFoundError, match="save-kernels"):
        decode.nomad_library(cfg, 1, "f16", isa, kernels=str(tmp_path))
    (tmp_path / decode.kernel_name(cfg, 2, "f16", isa) / "spec.mlir").write_text("other")
    with pytest.raises(ValueError, match="another spec"):
        decode.nomad_library(cfg, 2, "f16", isa, kernels=str(tmp_path))


def test_random_model_shapes():
    cfg = decode.LlamaConfig(layers=1, dim=16, ffn_dim=8, heads=2, kv_heads=1, head_dim=8,
                             rope_base=1e4, norm_eps=1e-5, vocab=11, context=64)
    m = decode.random_model(cfg, seed=3)
    assert m.forward([1, 2, 3]).shape == (3, 11)
    assert np.array_equal(m.w["blk.0.attn_q.weight"], decode.random_model(cfg, 3).w["blk.0.attn_q.weight"])


def test_torch_dense_mode_matches_numpy(tiny):
    pytest.importorskip("torch")
    keys, values = decode.record_prefix(tiny, TOKENS[:-1])
    full = tiny.forward(TOKENS)[-1]
    for vt, tol in (("f32", 1e-4), ("f16", 2e-2)):
        state = decode.DecodeState(tiny, len(TOKENS), dense="torch", values=vt)
        state.fill(keys, values)
        np.testing.assert_allclose(decode.step(tiny, state, TOKENS[-1]), full, rtol=tol, atol=tol)
