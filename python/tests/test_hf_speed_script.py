"""scripts/gpu-hf-speed.py and scripts/gpu_hf_triton.py on the CPU: argument checks, the job
plan (repetitions, interleaved paths), the largest-batch search, the summary rows, a dry run of
the grid (in this process and one process per job) with the GPU-only paths recorded as skipped,
and the Triton drop-in's pieces that run without a GPU (the peer file's loader, the quantize-append
kernel under Triton's interpreter). Skipped without torch or transformers >= 5."""

import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers", minversion="5")

SCRIPTS = os.path.join(os.path.dirname(__file__), "..", "..", "scripts")
SCRIPT = os.path.abspath(os.path.join(SCRIPTS, "gpu-hf-speed.py"))
PYTHON_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


@pytest.fixture(scope="module")
def speed():
    sys.path.insert(0, os.path.abspath(SCRIPTS))
    spec = importlib.util.spec_from_file_location("gpu_hf_speed", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_parse_defaults_and_errors(speed, capsys):
    a = speed.parse(["o.json"])
    assert (a.config, a.repeat, a.isolate, a.paths, a.max_batch) == ("8b", 1, False, None, None)
    a = speed.parse(["o.json", "--paths", "sdpa_bf16,triton_int8", "--repeat", "2",
                     "--triton-nsplit", "8", "--max-batch", "32768", "--mem-gib", "70"])
    assert a.paths == ["sdpa_bf16", "triton_int8"] and a.triton_nsplit == 8
    assert a.max_batch == 32768 and a.mem_gib == 70.0
    for bad, msg in ((["--paths", "sdpa,nope"], "unknown path(s) sdpa,nope"),
                     (["--triton-nsplit", "3"], "power of two"),
                     (["--batches", "1,0"], "--batches takes positive"),
                     (["--repeat", "0"], "positive integers"), (["--config", "70b"], "70b")):
        with pytest.raises(SystemExit) as e:
            speed.parse(["o.json"] + bad)
        assert e.value.code == 2
        assert msg in capsys.readouterr().err


def test_plan_interleaves_paths_per_repetition(speed):
    a = speed.parse(["o.json", "--batches", "1,8", "--contexts", "2048", "--prefill", "64",
                     "--repeat", "2"])
    jobs = speed.plan(a, ["sdpa_bf16", "sdpa_static_bf16", "attn_opt_int8"])
    assert len(jobs) == 2 * (2 + 2 * 3)  # prefill skips the static cache
    assert [j["rep"] for j in jobs] == [1] * 8 + [2] * 8
    assert [(j["what"], j["path"]) for j in jobs[:2]] == [("prefill", "sdpa_bf16"),
                                                          ("prefill", "attn_opt_int8")]
    assert [(j["batch"], j["path"]) for j in jobs[2:5]] == [
        (1, "sdpa_bf16"), (1, "sdpa_static_bf16"), (1, "attn_opt_int8")]


@pytest.mark.parametrize("largest, limit, probes", [
    (13, 1 << 14, [1, 2, 4, 8, 16, 12, 14, 13]),
    (0, 1 << 14, [1]),
    (1, 1 << 14, [1, 2]),
    (100, 64, [1, 2, 4, 8, 16, 32, 64]),
])
def test_search_max_batch(speed, largest, limit, probes):
    seen = []

    def fits(b):
        seen.append(b)
        return b <= largest

    assert speed.search_max_batch(fits, limit) == min(largest, limit)
    assert seen == probes


@pytest.mark.parametrize("largest, start, probes", [
    (15, 14, [14, 15, 17, 16]),   # a close estimate: four probes
    (29, 27, [27, 28, 30, 29]),
    (12, 14, [14, 7, 10, 12, 13]),  # an estimate too high: bisection below it
    (0, 3, [3, 1]),
])
def test_search_max_batch_from_an_estimate(speed, largest, start, probes):
    seen = []

    def fits(b):
        seen.append(b)
        return b <= largest

    assert speed.search_max_batch(fits, 1 << 14, start) == largest
    assert seen == probes


def test_estimate_max_batch_8b(speed):
    # 8B shapes at 32K on 80 GB: the bf16 cache is 4 GiB a sequence, int8 about half.
    cfg = speed.LlamaConfig(**speed.CONFIGS["8b"])
    bf16 = speed.estimate_max_batch(cfg, "attn_opt_bf16", 32768, 80 << 30)
    int8 = speed.estimate_max_batch(cfg, "attn_opt_int8", 32768, 80 << 30)
    assert 12 <= bf16 <= 16 and 24 <= int8 <= 32 and int8 >= 1.9 * bf16


def test_summarize_names_the_faster_sdpa(speed):
    rows = [dict(what="decode", path="sdpa_bf16", rep=1, batch=8, context=64, tokens_per_s=10.0),
            dict(what="decode_graph", path="sdpa_static_bf16", rep=1, batch=8, context=64,
                 tokens_per_s=25.0),
            dict(what="decode_graph", path="attn_opt_int8", rep=1, batch=8, context=64,
                 tokens_per_s=50.0),
            dict(what="decode_graph", path="triton_int8", rep=1, batch=8, context=64,
                 tokens_per_s=40.0),
            dict(what="decode_graph", path="attn_opt_int8", rep=1, batch=9, context=64,
                 tokens_per_s=5.0, probe=True)]
    (s,) = speed.summarize(rows)
    assert s["path"] == "sdpa_static_bf16" and s["tokens_per_s"] == 25.0
    assert s["sdpa_bf16_tokens_per_s"] == 10.0
    assert s["attn_opt_int8_over_sdpa_best"] == 2.0
    assert s["attn_opt_int8_over_triton_int8"] == 1.25


def test_skip_reasons(speed, tmp_path):
    a = speed.parse(["o.json"])
    assert "no Triton peer file" in speed.skip_reason("triton_int8", False, a)
    assert speed.skip_reason("sdpa_bf16", False, a) is None
    if not speed.CUDA:
        assert "needs CUDA" in speed.skip_reason("attn_opt_int8", True, a)


def read_rows(path):
    with open(path) as f:
        rows = json.load(f)
    assert "command" in rows[0] and rows[0]["config"] == "tiny"
    return rows[1:]


def test_dry_run_in_process(speed, tmp_path):
    out = str(tmp_path / "r.json")
    speed.main([out, "--config", "tiny", "--batches", "2", "--contexts", "16", "--prefill", "8",
                "--steps", "2", "--repeat", "2", "--graphs",
                "--paths", "sdpa_bf16,sdpa_static_bf16,attn_opt_int8,triton_int8"])
    rows = read_rows(out)
    decode = [r for r in rows if r["what"] in ("decode", "decode_graph")]
    assert sorted({r["rep"] for r in decode}) == [1, 2]
    eager = [r for r in decode if r["path"] == "sdpa_bf16"]
    assert [r["what"] for r in eager] == ["decode", "decode"]
    assert all(r["tokens_per_s"] > 0 and "error" not in r for r in eager)
    triton = [r for r in rows if r["path"] == "triton_int8"]
    assert triton and all("no Triton peer file" in r["skipped"] for r in triton)
    prefill = [r for r in rows if r["what"] == "prefill" and r["path"] == "attn_opt_int8"]
    assert len(prefill) == 2 and all(r["prefill_ms"] > 0 for r in prefill)
    if not speed.CUDA:
        static = [r for r in decode if r["path"] == "sdpa_static_bf16"]
        assert all(r["skipped"].startswith("needs CUDA") for r in static)
    assert [r["rep"] for r in rows if r["what"] == "sdpa_best"] == [1, 2]


def test_dry_run_isolated(tmp_path):
    out = str(tmp_path / "r.json")
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR + os.pathsep + os.environ.get("PYTHONPATH", ""))
    subprocess.run([sys.executable, SCRIPT, out, "--config", "tiny", "--batches", "1",
                    "--contexts", "8", "--prefill", "", "--steps", "1", "--repeat", "2",
                    "--paths", "sdpa_bf16", "--isolate"], env=env, check=True, timeout=600)
    rows = read_rows(out)
    decode = [r for r in rows if r["what"] == "decode"]
    assert [r["rep"] for r in decode] == [1, 2]
    assert all(r["process_rc"] == 0 and r["process_s"] > 0 and r["tokens_per_s"] > 0
               for r in decode)


def test_max_batch_needs_cuda(speed, tmp_path):
    if speed.CUDA:
        pytest.skip("a CUDA device: the search would run")
    out = str(tmp_path / "r.json")
    speed.main([out, "--config", "tiny", "--max-batch", "64"])
    (row,) = read_rows(out)
    assert row == {"what": "max_batch", "skipped": "needs CUDA"}


PEER = textwrap.dedent('''\
    """a peer file: kernels, then a benchmark at module level"""
    import math
    import triton
    import triton.language as tl
    dev = "cuda"

    @triton.jit
    def _split(Q, K, V, KS, VS, OP, MP, LP, sm_scale, CTX, CHUNK, ROWS: tl.constexpr,
               BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr, NSPLIT: tl.constexpr):
        pass

    @triton.jit
    def _combine(OP, MP, LP, O, ROWS: tl.constexpr, BM: tl.constexpr, D: tl.constexpr,
                 NSPLIT: tl.constexpr):
        pass

    rows = []
    HQ, D = 16, 128
    raise SystemExit("the benchmark ran")
    ''')


def test_peer_loader(tmp_path):
    pytest.importorskip("triton")
    sys.path.insert(0, os.path.abspath(SCRIPTS))
    import gpu_hf_triton as ht
    src = ht.peer_source(PEER)
    assert "@triton.jit\ndef _split" in src and "dev = \"cuda\"" in src
    assert "SystemExit" not in src and "rows = []" not in src and "HQ, D" not in src
    path = tmp_path / "peer.py"
    path.write_text(PEER)
    mod = ht.load_peer(str(path))
    assert mod._split.arg_names == ht.SPLIT_ARGS and mod.dev == "cuda"
    with pytest.raises(ht.PeerError, match="not found"):
        ht.load_peer(str(tmp_path / "absent.py"))
    path.write_text(PEER.replace("def _combine(OP,", "def _combine(X, OP,"))
    with pytest.raises(ht.PeerError, match="_combine"):
        ht.load_peer(str(path))


QUANTIZE_CHECK = textwrap.dedent('''\
    import sys, torch
    sys.path.insert(0, sys.argv[1])
    import gpu_hf_triton as ht
    torch.manual_seed(0)
    x = (torch.randn(2, 3, 5, 64) * 3).bfloat16().transpose(1, 2).contiguous().transpose(1, 2)
    codes = torch.zeros(6, 9, 64, dtype=torch.int8)
    scales = torch.ones(6, 9)
    pos = torch.tensor([2])
    ht.quantize_append(x, codes, scales, pos)
    want_c, want_s = ht.reference_quantize(x.reshape(6, 5, 64))
    assert torch.equal(codes[:, 2:7], want_c), "codes"
    assert torch.allclose(scales[:, 2:7], want_s), "scales"
    assert not codes[:, :2].any() and not codes[:, 7:].any(), "rows outside 2..6"
    print("ok")
    ''')


def test_quantize_append_kernel_in_interpreter():
    pytest.importorskip("triton")
    env = dict(os.environ, TRITON_INTERPRET="1")
    r = subprocess.run([sys.executable, "-c", QUANTIZE_CHECK, os.path.abspath(SCRIPTS)],
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]


def test_max_batch_rows(speed, tmp_path, monkeypatch):
    largest = {"attn_opt_bf16": 13, "attn_opt_int8": 27}
    calls = []

    def fake_runner(a, isolate):
        assert isolate

        def run(job, graphs):
            assert graphs and job["context"] == 4096
            calls.append((job["path"], job["batch"], job["rep"]))
            if job["batch"] > largest[job["path"]]:
                return dict(job, error="OutOfMemoryError: ...", process_rc=0)
            return dict(job, tokens_per_s=10.0 * job["batch"] + job["rep"], step_ms=1.0,
                        process_rc=0)
        return run

    monkeypatch.setattr(speed, "make_runner", fake_runner)
    a = speed.parse([str(tmp_path / "r.json"), "--max-batch", "4096", "--repeat", "2"])
    rows = []
    speed.max_batch(a, list(speed.MAX_BATCH_PATHS), rows)
    found = {r["path"]: r for r in rows if r["what"] == "max_batch"}
    assert found["attn_opt_bf16"]["batch"] == 13 and found["attn_opt_int8"]["batch"] == 27
    assert found["attn_opt_int8"]["tokens_per_s"] == [271.0, 272.0]
    assert found["attn_opt_int8"]["complete"]
    assert ("attn_opt_int8", 27, 2) in calls and ("attn_opt_bf16", 13, 2) in calls
    (ratio,) = [r for r in rows if r["what"] == "max_batch_ratio"]
    assert ratio["batch_ratio"] == 27 / 13
    assert ratio["min_tokens_per_s_ratio"] == 271.0 / 131.0


class EagerGraph:
    """Stands in for a CUDA graph off CUDA: a replay runs the step eagerly."""

    def __init__(self, step):
        self.replay = step


@pytest.mark.parametrize("path", ["sdpa_static_bf16", "attn_opt_int8"])
def test_graph_schedule_off_cuda(speed, monkeypatch, path):
    """decode_graph's restarts put the cache back exactly: replays equal the eager steps, and a
    StaticCache of context + max(4, steps) slots is not overrun."""
    monkeypatch.setattr(speed, "capture",
                        lambda step, count: [EagerGraph(step) for _ in range(count)])
    a = speed.parse(["o.json", "--config", "tiny"])
    cfg, model = speed.make_model("tiny")
    with torch.inference_mode():
        r = speed.decode_graph(model, cfg, speed.use(model, path, a), 2, 16, 6)
    assert r["graph_first_step_logit_rel_err"] == 0.0
    assert r["graph_token_agreement"] == 1.0
    assert r["graphs"] == 1 and r["tokens_per_s"] > 0


def test_decode_splits_forces_decode_plans_only(speed, monkeypatch):
    from qattn import torch_ops
    made = []

    class Plan:
        def __init__(self, kernel, device=None, batch=None, kv_len=None, q_len=None,
                     splits="auto"):
            made.append((kernel, q_len, splits))

    monkeypatch.setattr(torch_ops, "DecodePlan", Plan)
    speed.force_decode_splits(3)
    speed.force_decode_splits(5)  # a second call replaces the first, it does not stack
    torch_ops.DecodePlan("decode.ptx", device="cuda", batch=2, kv_len=64, q_len=None)
    torch_ops.DecodePlan("prefill.ptx", device="cuda", batch=2, kv_len=64, q_len=16)
    assert made == [("decode.ptx", None, 5), ("prefill.ptx", 16, "auto")]
    assert "--decode-splits" in speed.child_argv(
        speed.parse(["o.json", "--decode-splits", "1"]), {}, "j.json", False)


@pytest.mark.parametrize("argv", [["--contexts", "2048,8192", "--prefill", "8192", "--steps", "16"],
                                  ["--contexts", "100", "--prefill", "1000,5000", "--steps", "40",
                                   "--page-size", "16", "--paths", "attn_opt_fp8"],
                                  ["--max-batch", "32768", "--steps", "8"]])
def test_prebuild_command_covers_every_cache_of_the_run(speed, tmp_path, monkeypatch, argv):
    """The printed prebuild command, run (compiler replaced by a recorder), leaves no kernel of
    the run missing; every capacity the run's caches take has its table width built."""
    import shlex
    import qattn.kernels
    from qattn.hf import kernels as hk
    from qattn.hf.__main__ import main

    class Fake:
        ptx, meta = "// ptx", {"kernels": []}
    monkeypatch.setattr(qattn.kernels, "build", lambda spec, attn_opt=None: Fake())
    a = speed.parse(["o.json"] + argv)
    cmd = shlex.split(speed.prebuild_command(a).replace("DIR", str(tmp_path)))
    assert cmd[:3] == ["python", "-m", "qattn.hf"]
    monkeypatch.setenv("QATTN_HF_KERNELS", str(tmp_path))
    paths = a.paths or list(speed.MAX_BATCH_PATHS if a.max_batch else speed.PATHS)
    assert speed.missing_kernels(a, paths)  # nothing built yet
    assert main(cmd[3:]) == 0
    assert speed.missing_kernels(a, paths) == []
    widths = set(hk.capacities_for(speed.cache_contexts(a), speed.extra_tokens(a)))
    for c in speed.cache_contexts(a):  # decode (eager, graphs), the Triton check, prefill
        for cap in (c + a.steps + 8, c + max(speed.CHECK, a.steps), c + 1, c + 8):
            assert hk.table_tokens(cap) in widths
    if a.max_batch is None:
        assert set(speed.cache_contexts(a)) == set(speed.ints(a.contexts) + speed.ints(a.prefill))
    assert f"--page-size {a.page_size}" in speed.prebuild_command(a)


def test_prebuild_command_option_and_page_size_errors(speed, capsys):
    speed.main(["o.json", "--prebuild-command", "--config", "8b", "--contexts", "8192",
                "--prefill", "8192", "--steps", "16"])
    assert capsys.readouterr().out.strip() == (
        "python -m qattn.hf prebuild DIR --q-heads 32 --kv-heads 8 --head-dim 128 --formats "
        "bf16,fp8,int8 --page-size 64 --contexts 8192 --extra-tokens 24")
    with pytest.raises(SystemExit):
        speed.parse(["o.json", "--page-size", "24"])
    assert "power of two" in capsys.readouterr().err
