"""The paged split-KV Triton decode peer (scripts/gpu_paged_decode_peer.py) on the CPU: it imports
without torch or triton, its usage and refusals work, and — where torch is installed — its
pure-torch reference equals qattn.reference.paged_attention. The kernel itself runs on a GPU
(`python3 scripts/gpu_paged_decode_peer.py check`)."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from qattn import paged, reference

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "gpu_paged_decode_peer.py"


def _peer():
    spec = importlib.util.spec_from_file_location("gpu_paged_decode_peer", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_imports_and_usage(capsys):
    peer = _peer()
    assert peer.main([]) == 2
    assert "check" in capsys.readouterr().err
    assert peer.main(["nonsense"]) == 2
    assert peer.default_splits(16, 1, 8192, 64, sms=132) == 8  # 132 // 16 = 8 CTAs a sequence
    assert peer.default_splits(256, 1, 1024, 64, sms=132) == 1
    assert peer.default_splits(1, 4, 4096, 64, sms=132) == 32  # 33 -> a power of two
    if not peer.HAVE_TRITON:
        with pytest.raises(RuntimeError, match="needs torch and triton"):
            peer.paged_decode(None, None, None, None, None)


def test_reference_equals_qattn_reference():
    torch = pytest.importorskip("torch")
    peer = _peer()
    rng = np.random.default_rng(0)
    lens = [0, 1, 40, 16, 70]
    k = rng.standard_normal((5, 70, 2, 64)).astype(np.float32)
    v = rng.standard_normal((5, 70, 2, 64)).astype(np.float32)
    q = rng.standard_normal((5, 2, 8, 64)).astype(np.float32)
    c = paged.quantize_pages(k, v, lens, 16, dtype="i8", granularity="per_token_head", seed=2)
    t = lambda a, dt=torch.float32: torch.as_tensor(np.asarray(a)).to(dt)
    for causal in (False, True):
        got = peer.reference(t(q), t(c.k, torch.int8), t(c.v, torch.int8),
                             t(c.block_table, torch.int32), t(c.seq_lens, torch.int32),
                             t(c.k_scale), t(c.v_scale), causal=causal)
        want = reference.paged_attention(q, c.k, c.v, c.block_table, c.seq_lens, causal=causal,
                                         **c.reference_kwargs())
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-5)


def test_refuses_bad_input_before_launch():
    torch = pytest.importorskip("torch")
    peer = _peer()
    q = torch.zeros(2, 1, 8, 64, dtype=torch.bfloat16)
    k = torch.zeros(4, 16, 2, 64, dtype=torch.bfloat16)
    table = torch.zeros(2, 2, dtype=torch.int32)
    lens = torch.ones(2, dtype=torch.int32)
    with pytest.raises(ValueError, match="one CUDA device"):
        peer._check_inputs(q, k, k, table, lens, None, None)
    with pytest.raises(ValueError, match="power of two"):
        k3 = torch.zeros(4, 24, 2, 64, dtype=torch.bfloat16)
        peer._check_inputs(q, k3, k3, table, lens, None, None)
    with pytest.raises(ValueError, match="block_table must be int32"):
        peer._check_inputs(q, k, k, table.long(), lens, None, None)
    with pytest.raises(ValueError, match="need k_scale and v_scale"):
        k8 = torch.zeros(4, 16, 2, 64, dtype=torch.int8)
        peer._check_inputs(q, k8, k8, table, lens, None, None)
