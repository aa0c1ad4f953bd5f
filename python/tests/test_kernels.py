"""qattn.build on CPU specs: compile, link, cache, load with ctypes, call on NumPy arrays; the GPU
kernel classes' checks of the launch metadata they are given."""

import numpy as np
import pytest

import qattn
from qattn import kernels
from qattn.cpu import host_isa, nomad_spec


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("QATTN_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def nomad_reference(q, books, codes_tk, values, length, scale, scores_out=None):
    """NoMAD decode in NumPy (docs/CPU.md): u8 LUT per query head, u16 sums, softmax, P·V."""
    hq, d = q.shape
    h, s, c, dsub = books.shape
    out = np.zeros((hq, values.shape[2]), np.float64)
    for i in range(hq):
        kv = i // (hq // h)
        dots = np.einsum("sx,scx->sc", q[i].reshape(s, dsub), books[kv]).astype(np.float32)
        mins = dots.min(axis=1)
        rng = (dots.max(axis=1) - mins).max()
        step = np.float32(rng / 255)
        lut = np.minimum(255, np.floor((dots - mins[:, None]) * np.float32(255 / rng) + 0.5))
        acc = lut[np.arange(s)[None, :], codes_tk[:length, kv, :]].sum(axis=1)
        score = step * acc + mins.sum()
        if scores_out is not None:
            scores_out[i, :length] = score
        p = np.exp(scale * (score - score.max()))
        out[i] = (p[:, None] * values[:length, kv]).sum(axis=0) / p.sum()
    return out


@pytest.mark.parametrize("dsub", [1, 2, 4])
def test_nomad_kernels_match_numpy(cache, dsub):
    hq, h, d, t = 6, 2, 64, 77
    rng = np.random.default_rng(dsub)
    keys = rng.standard_normal((t, h, d)).astype(np.float32)
    books = qattn.train_codebooks(keys, dsub=dsub, centroids=16, iters=5, seed=0)
    lib = qattn.build(nomad_spec(hq, h, d, dsub, host_isa()))
    assert set(lib.functions) == {"nomad_encode", "nomad_attend", "nomad_scores"}
    codes = np.zeros((h, 3, d // dsub, 16), np.uint8)
    lib.nomad_encode(keys, books, 0, codes)
    # unpack the blocked nibble layout: byte j of a row = key j (low) and key j + 16 (high)
    un = np.concatenate([codes & 15, codes >> 4], axis=3)  # [H, NB, S, 32]
    codes_tk = un.transpose(1, 3, 0, 2).reshape(-1, h, d // dsub)[:t]
    assert np.array_equal(codes_tk, qattn.encode(keys, books))
    q = rng.standard_normal((hq, d)).astype(np.float32)
    values = rng.standard_normal((t, h, d)).astype(np.float32)
    for length in (1, 31, 77):
        out = np.full((hq, d), np.nan, np.float32)
        lib.nomad_attend(q, books, codes, values, length, out)
        want = nomad_reference(q, books, codes_tk, values, length, 1 / np.sqrt(d))
        assert np.allclose(out, want, rtol=1e-3, atol=1e-4), np.abs(out - want).max()
    # the scores step alone: LUT build + lookups, dequantized
    lut = np.empty((hq, d // dsub, 16), np.uint8)
    params = np.empty((hq, 2), np.float32)
    scores = np.full((hq, t), np.nan, np.float32)
    lib.nomad_scores(q, books, codes, t, lut, params, scores)
    want = np.zeros((hq, t))
    nomad_reference(q, books, codes_tk, values, t, 1.0, scores_out=want)
    assert np.allclose(scores, want, rtol=1e-5, atol=1e-4)
    out = np.full((hq, d), np.nan, np.float32)
    lib.nomad_attend(q, books, codes, values, 0, out)
    assert np.all(out == 0)  # length 0: no keys, zero output (documented)


@pytest.mark.parametrize("hq,h", [(9, 3), (8, 2), (10, 2), (3, 3)])
@pytest.mark.parametrize("values", ["f32", "f16", "i8"])
def test_nomad_attention_gqa_groups_and_value_types(cache, hq, h, values):
    """Whole GQA groups share one pass over V (groups of 3 and 4, 5 = 4 + 1, 1): every query head
    still gets its own softmax and P·V, for f32, f16 and i8 (per-(token, head) scaled) values."""
    d, t = 64, 70
    rng = np.random.default_rng(hq * 10 + h)
    keys = rng.standard_normal((t, h, d)).astype(np.float32)
    books = qattn.train_codebooks(keys, dsub=1, centroids=16, iters=3, seed=0)
    lib = qattn.build(nomad_spec(hq, h, d, 1, host_isa(), values=values))
    codes = np.zeros((h, 3, d, 16), np.uint8)
    lib.nomad_encode(keys, books, 0, codes)
    un = np.concatenate([codes & 15, codes >> 4], axis=3)
    codes_tk = un.transpose(1, 3, 0, 2).reshape(-1, h, d)[:t]
    q = rng.standard_normal((hq, d)).astype(np.float32)
    v32 = rng.standard_normal((t, h, d)).astype(np.float32)
    extra = ()
    if values == "f16":
        stored = v32.astype(np.float16)
        v_ref = stored.astype(np.float32)
    elif values == "i8":
        scale = (np.abs(v32).max(axis=-1) / 127).astype(np.float32)
        stored = np.rint(v32 / scale[..., None]).astype(np.int8)
        v_ref = stored.astype(np.float32) * scale[..., None]
        extra = (scale,)
    else:
        stored = v_ref = v32
    for length in (0, 1, 31, 32, 33, 70):
        out = np.full((hq, d), np.nan, np.float32)
        lib.nomad_attend(q, books, codes, stored, *extra, length, out)
        if length == 0:
            assert np.all(out == 0)
            continue
        want = nomad_reference(q, books, codes_tk, v_ref, length, 1 / np.sqrt(d))
        assert np.allclose(out, want, rtol=1e-3, atol=1e-4), (length, np.abs(out - want).max())


def test_nomad_spec_rejects_unknown_value_type():
    with pytest.raises(ValueError, match="values must be one of"):
        nomad_spec(4, 2, 64, 1, "avx2", values="bf16")


def test_build_is_cached(cache, monkeypatch):
    spec = nomad_spec(4, 1, 64, 2, "scalar")
    first = qattn.build(spec)
    entries = list(cache.iterdir())
    assert len(entries) == 1 and (entries[0] / "spec.mlir").read_text() == spec

    def no_compile(*a, **k):
        raise AssertionError("recompiled a cached spec")

    monkeypatch.setattr(kernels, "_compile", no_compile)
    again = qattn.build(spec)
    assert again.path == first.path
    with pytest.raises(AssertionError, match="recompiled"):
        qattn.build(spec, cache=False)
    with pytest.raises(AssertionError, match="recompiled"):
        qattn.build(spec.replace("scalar", "avx2"))  # another spec is another key


def test_argument_checks(cache):
    lib = qattn.build(nomad_spec(4, 1, 64, 1, "scalar"))
    books = np.zeros((1, 64, 16, 1), np.float32)
    keys = np.zeros((5, 1, 64), np.float32)
    codes = np.zeros((1, 1, 64, 16), np.uint8)
    enc = lib.nomad_encode
    with pytest.raises(qattn.KernelArgumentError, match="takes 4 arguments"):
        enc(keys, books, 0)
    with pytest.raises(qattn.KernelArgumentError, match="arg0 .* dtype float32, not float64"):
        enc(keys.astype(np.float64), books, 0, codes)
    with pytest.raises(qattn.KernelArgumentError, match=r"arg1 .* shape 1x64x16x1"):
        enc(keys, books[:, :32], 0, codes)
    with pytest.raises(qattn.KernelArgumentError, match="C-contiguous"):
        enc(np.zeros((5, 1, 128), np.float32)[:, :, ::2], books, 0, codes)
    ro = codes.copy()
    ro.flags.writeable = False
    with pytest.raises(qattn.KernelArgumentError, match="read-only"):
        enc(keys, books, 0, ro)
    with pytest.raises(qattn.KernelArgumentError, match="takes an int"):
        enc(keys, books, 0.5, codes)
    with pytest.raises(AttributeError, match="no kernel named 'nope'"):
        lib.nope


def test_compile_errors_reach_python(cache):
    with pytest.raises(qattn.CompileError) as e:
        qattn.build(nomad_spec(4, 1, 64, 3, "avx2"))  # dsub 3 does not divide into the ops' set
    assert e.value.errors and e.value.errors[0].line is not None
    assert not any(p.name.endswith("ok") for p in cache.rglob("*"))  # nothing half-built is cached


def test_gpu_kernel_without_a_driver(cache, monkeypatch):
    monkeypatch.setenv("ATTN_CUDA_LIBRARY", "/nonexistent/libcuda.so.1")
    spec = qattn.attention("decode", batch=None, q_len=1, kv_len=None, q_heads=8, kv_heads=1,
                           head_dim=128, kv_dtype="i8", granularity="per_token_head")
    kern = qattn.build(spec)
    assert isinstance(kern, qattn.GpuDecodeKernel)
    assert kern.meta["problem"]["q_heads"] == 8 and kern.kernels["decode"]["block"][0] >= 128
    try:
        lib = qattn.gpu.runtime_library()
    except qattn.GpuError:
        pytest.skip("libattn_rt.so not built")
    assert lib.endswith("libattn_rt.so")
    with pytest.raises(qattn.GpuError, match="no-driver"):
        kern._load()


def test_numpy_example_runs(cache, repo_root):
    """python/examples/nomad_numpy.py (documented in python/README.md) runs as written."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, str(repo_root / "python/examples/nomad_numpy.py")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "NoMAD dsub 1 vs dense attention: relative error" in proc.stdout


def test_auto_splits_match_the_cpp_launcher(cache, repo_root):
    """qattn.gpu's split rule gives what attn-bench (ScheduleHeuristics.cpp) gives."""
    import json
    import subprocess

    bench = repo_root / "build" / "bin" / "attn-bench"
    if not bench.is_file():
        pytest.skip("attn-bench not built")
    spec = qattn.attention("decode", batch=None, q_len=3, kv_len=None, q_heads=16, kv_heads=2,
                           head_dim=128, kv_dtype="i8", granularity="per_token_head")
    kern = qattn.build(spec)
    ptx = next(p for p in cache.rglob("kernels.ptx"))
    groups, tile = kern.schedule["groups"], kern.schedule["tile_n"]
    for batch, kv_len in [(1, 1), (1, 100000), (3, 1000), (16, 8192), (70, 4096), (512, 77)]:
        out = subprocess.run([str(bench), str(ptx), "--batch", str(batch), "--kv-len", str(kv_len),
                              "--dry-run"], capture_output=True, text=True, check=True).stdout
        want = json.loads(out.splitlines()[0])["num_splits"]
        assert qattn.gpu.select_split_kv(batch * groups, kv_len, tile, 132) == want, (batch, kv_len)
    # Both launchers merge the same split counts in a cluster and take the same combine kernel
    # for the others.
    for splits in [2, 3, 16, 17, 64]:
        out = subprocess.run([str(bench), str(ptx), "--batch", "2", "--kv-len", "100000",
                              "--splits", str(splits), "--dry-run"],
                             capture_output=True, text=True, check=True).stdout
        row = json.loads(out.splitlines()[0])
        assert kern.merges_in_cluster(splits) == row["cluster_merge"], splits
        ours = None if kern.merges_in_cluster(splits) else kern.combine_for(splits)["name"]
        assert ours == row["combine_kernel"], splits
    assert kern.merges_in_cluster(2) and not kern.merges_in_cluster(3)
    assert kern.combine_for(2)["name"].endswith("_combine")
    assert kern.combine_for(17)["name"].endswith("_combine_wide")


def test_wide_batch_companion_matches_the_cpp_launcher(cache, repo_root):
    """An int8-query decode kernel with a dynamic batch comes with a two-CTA-per-SM companion;
    qattn and attn-bench launch it for the same batches (one split of more CTAs than SMs)."""
    import json
    import subprocess

    bench = repo_root / "build" / "bin" / "attn-bench"
    if not bench.is_file():
        pytest.skip("attn-bench not built")
    spec = qattn.attention("decode", batch=None, q_len=3, kv_len=None, q_heads=16, kv_heads=1,
                           head_dim=128, kv_dtype="i8", granularity="per_token_head",
                           q_dtype="i8", q_granularity="per_token_head", name="wide_batch")
    kern = qattn.build(spec)
    assert kern.wide is not None and kern.wide["name"] == "wide_batch_decode_2cta"
    assert int(kern.wide["ctas_per_sm"]) == 2 and kern.wide["block"][0] == 256
    ptx = next(p for p in cache.rglob("kernels.ptx") if "wide_batch_decode_2cta" in p.read_text())
    for batch, kv_len, splits in [(64, 1024, "auto"), (132, 1024, "auto"), (133, 1024, "auto"),
                                  (256, 1024, "auto"), (512, 77, "auto"), (256, 4096, "2")]:
        out = subprocess.run([str(bench), str(ptx), "--batch", str(batch), "--kv-len", str(kv_len),
                              "--splits", splits, "--dry-run"],
                             capture_output=True, text=True, check=True).stdout
        row = json.loads(out.splitlines()[0])
        ours = kern.decode_for(row["num_splits"], batch * kern.schedule["groups"], 132)["name"]
        assert ours == row["decode_kernel"], (batch, kv_len, splits)
        wide = row["num_splits"] == 1 and batch > 132
        assert ours == ("wide_batch_decode_2cta" if wide else "wide_batch_decode"), (batch, splits)
    # bf16 queries: the two-CTA schedule does not fit (K converted to bf16), so no companion.
    bf16q = qattn.build(qattn.attention("decode", batch=None, q_len=3, kv_len=None, q_heads=16,
                                        kv_heads=1, head_dim=128, kv_dtype="i8",
                                        granularity="per_token_head"))
    assert bf16q.wide is None


def test_rebuilt_compiler_is_another_cache_key(tmp_path):
    """A rebuilt attn-opt with the same version line must not be served its predecessor's
    kernels: the key holds the binary's size and modification time."""
    import os

    exe = tmp_path / "attn-opt"
    exe.write_text("#!/bin/sh\necho 'attn-opt 0.1.0 (test)'\n")
    exe.chmod(0o755)
    first = kernels._compiler_identity(exe)
    assert first.startswith("attn-opt 0.1.0 (test)")
    st = exe.stat()
    os.utime(exe, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert kernels._compiler_identity(exe) != first


@pytest.mark.parametrize("flags,expected", [
    ("sse2", "scalar"),
    ("avx2 fma f16c", "avx2"),
    ("avx2 avx512f avx512bw avx512vl", "avx512"),
    ("avx2 avx512f avx512bw avx512vl avx512vbmi", "avx512"),
    ("avx2 avx512f avx512bw avx512vl avx512vbmi avx512_vnni", "avx512_vnni"),
])
def test_host_isa_from_cpu_flags(monkeypatch, flags, expected):
    import io
    import qattn.cpu as cpu
    monkeypatch.setattr(cpu.platform, "machine", lambda: "x86_64")
    cpuinfo = f"processor\t: 0\nflags\t\t: {flags}\n"
    monkeypatch.setattr(cpu, "open", lambda *a, **k: io.StringIO(cpuinfo), raising=False)
    assert cpu.host_isa() == expected


@pytest.mark.parametrize("cls_path, kind, what", [
    ("qattn.gpu.GpuDecodeKernel", "decode", "decode / prefill"),
    ("qattn.gpu_mla.GpuMLAKernel", "mla_decode", "MLA decode"),
    ("qattn.gpu_mla.GpuMLAQuantizeKernel", "quantize_mla", "MLA quantize"),
    ("qattn.gpu_quantize.GpuQuantizeKernel", "quantize_append", "quantize"),
])
def test_kernel_classes_take_only_their_metadata(cls_path, kind, what):
    import importlib
    from qattn.gpu import GpuError
    mod, name = cls_path.rsplit(".", 1)
    cls = getattr(importlib.import_module(mod), name)

    def meta(kind, fmt="attn-launch-v1"):
        return {"format": fmt, "problem": {"kind": kind}, "schedule": {},
                "kernels": [{"name": "k_decode", "role": "decode"}]}

    k = cls("ptx", meta(kind), "k.ptx")
    assert (k.ptx, k.path, k.problem["kind"]) == ("ptx", "k.ptx", kind)
    other = "decode" if kind != "decode" else "mla_decode"
    with pytest.raises(GpuError, match=f"k.ptx: not {what} launch metadata .*kind '{other}'"):
        cls("ptx", meta(other), "k.ptx")
    with pytest.raises(GpuError, match="format 'attn-launch-v0'"):
        cls("ptx", meta(kind, "attn-launch-v0"), "k.ptx")
