"""scripts/gpu-hf-tp.py on the CPU: the tensor-parallel flow of the qattn.hf integration with two
gloo ranks (transformers' own tensor-parallel plan, the cache's torch reference backend) against
one rank, teacher-forced, and the comparison it reports. Skipped without torch.distributed or
transformers >= 5."""

import importlib.util
import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers", minversion="5")
if not torch.distributed.is_available():
    pytest.skip("torch.distributed is not available", allow_module_level=True)

SCRIPT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "scripts",
                                      "gpu-hf-tp.py"))
PYTHON_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def load_script():
    spec = importlib.util.spec_from_file_location("gpu_hf_tp", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_compare_reports_flips_with_their_margin():
    ref_logits = torch.tensor([[[3.0, 1.0, 0.0], [2.0, 1.9, 0.0]]])  # [batch 1, steps 2, vocab 3]
    got_logits = ref_logits.clone()
    got_logits[0, 1, 1] = 2.1  # step 1's argmax flips on a 0.1 margin
    ref_tokens, got_tokens = ref_logits.argmax(-1), got_logits.argmax(-1)
    r = load_script().compare((ref_logits, ref_tokens), (got_logits, got_tokens))
    assert r["token_agreement"] == 0.5
    assert r["margins_where_different"] == [pytest.approx(0.1)]
    assert r["logit_rel_err_per_step"] == [0.0, pytest.approx(0.1)]


def test_two_ranks_match_one(tmp_path):
    out = tmp_path / "tp.json"
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR + os.pathsep + os.environ.get("PYTHONPATH", ""),
               OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
           "--master-port", "0", SCRIPT, str(out), "--config", "tiny", "--layers", "2",
           "--batch", "2", "--prompt", "12", "--new", "4", "--context", "32", "--steps", "1",
           "--device", "cpu", "--model-dir", str(tmp_path / "model")]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads(out.read_text())
    assert r["world_size"] == 2 and set(r["tp_vs_tp1"]) == {"attn_opt", "sdpa"}
    for attn in ("attn_opt", "sdpa"):
        assert r["tp1"][attn]["cache_kv_heads"] == 4
        assert [rank[attn]["cache_kv_heads"] for rank in r["tp"]] == [2, 2]
        c = r["tp_vs_tp1"][attn]
        assert len(c["logit_rel_err_per_step"]) == 4
        assert max(c["logit_rel_err_per_step"]) < 0.05 and c["token_agreement"] == 1.0
