"""The ahead-of-time kernel set (qattn.aot): the build-time selection, the lookup by spec, the
error naming a missing spec, qattn.build's use of the set, and that `pip install ./python` with
attn-opt present packages the chosen kernels. No GPU needed: nothing is launched."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import qattn
from qattn import aot
from qattn.compiler import AttnOptNotFound

PYTHON_DIR = Path(__file__).resolve().parents[1]


def attn_opt():
    try:
        return qattn.find_attn_opt()
    except AttnOptNotFound:
        return None


needs_attn_opt = pytest.mark.skipif(attn_opt() is None, reason="attn-opt not found")

NAME = "decode_d64_g4_kv8_i8"


def spec(name=NAME):
    return aot.spec_of("any_name", aot.catalog()[name])


def fake_set(root, names=(NAME,)):
    """An index whose kernels are placeholder files (enough for the lookup)."""
    kernels = {}
    for n in names:
        (root / n).mkdir(parents=True)
        (root / n / aot.KERNEL_FILE).write_text("// placeholder\n")
        kernels[n] = {"key": aot.key(spec(n).text), "spec": aot.catalog()[n]}
    (root / aot.INDEX).write_text(json.dumps({"kernels": kernels}))


def test_catalog_covers_the_configurations():
    every = aot.catalog()
    assert len(every) == 3 * 4 * 4
    assert {kw["head_dim"] for kw in every.values()} == {64, 128, 256}
    assert {kw["q_heads"] // kw["kv_heads"] for kw in every.values()} == {1, 4, 8, 16}
    assert {kw["kv_dtype"] for kw in every.values()} == {"i8", "ui8", "f8E4M3FN", "bf16"}
    assert every["decode_d128_g4_kv8_u8"]["symmetric"] is False


def test_selection_from_the_environment():
    assert aot.selection({"QATTN_AOT": "none"}) == {}
    assert len(aot.selection({})) == 48 + 48  # the paged kernels at page 64: test_aot_paged.py
    assert len(aot.selection({"QATTN_AOT_PAGES": "none"})) == 48
    assert set(aot.selection({"QATTN_AOT": "decode_d128_*_i8"})) == {
        f"decode_d128_g{g}_kv8_i8" for g in (1, 4, 8, 16)}
    two = aot.selection({"QATTN_AOT": "*_g1_*_bf16", "QATTN_AOT_KV_HEADS": "1,8"})
    assert sorted(two) == sorted(f"decode_d{d}_g1_kv{h}_bf16" for d in (64, 128, 256)
                                 for h in (1, 8))
    with pytest.raises(ValueError, match="matches no kernel"):
        aot.selection({"QATTN_AOT": "prefill_*"})
    with pytest.raises(ValueError, match="QATTN_AOT_KV_HEADS"):
        aot.selection({"QATTN_AOT_KV_HEADS": "eight"})


def test_lookup_ignores_the_function_name(tmp_path):
    fake_set(tmp_path)
    assert aot.find(spec(), tmp_path) == tmp_path / NAME
    assert aot.find(NAME, tmp_path) == tmp_path / NAME  # by the set's name too
    other = aot.spec_of("x", dict(aot.catalog()[NAME], seq_lens=False))
    assert aot.find(other, tmp_path) is None
    assert aot.find(spec("decode_d64_g4_kv8_u8"), tmp_path) is None
    assert aot.find(spec(), tmp_path / "nowhere") is None


def test_missing_kernel_error_names_the_spec_and_the_command(tmp_path):
    fake_set(tmp_path)
    with pytest.raises(aot.KernelNotAvailable) as err:
        aot.require(spec("decode_d256_g16_kv8_e4m3"), tmp_path)
    msg = str(err.value)
    assert "memref<?x1x128x256xbf16>" in msg and "f8E4M3FN" in msg
    assert "attn-opt --attn-normalize --attn-select-schedule --emit=ptx" in msg
    assert "1 kernels" in msg
    assert isinstance(err.value, AttnOptNotFound)
    with pytest.raises(aot.KernelNotAvailable, match="no ahead-of-time kernels"):
        aot.require(spec(), tmp_path / "empty")


def test_build_without_attn_opt_names_the_spec(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTN_OPT", str(tmp_path / "no-attn-opt"))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(aot, "DIR", tmp_path / "empty")
    with pytest.raises(aot.KernelNotAvailable, match="head_dim|memref<\\?x1x32x64xbf16>"):
        qattn.build(spec())


@needs_attn_opt
def test_build_set_and_qattn_build_use_it(monkeypatch, tmp_path):
    index = aot.build_set(tmp_path, attn_opt(), {NAME: aot.catalog()[NAME]}, jobs=1)
    assert list(index) == [NAME]
    ptx = tmp_path / NAME / aot.KERNEL_FILE
    assert ".entry" in ptx.read_text()
    assert json.loads(Path(str(ptx) + ".launch.json").read_text())["problem"]["head_dim"] == 64
    monkeypatch.setattr(aot, "DIR", tmp_path)
    monkeypatch.setenv("ATTN_OPT", str(tmp_path / "no-attn-opt"))  # the set needs no attn-opt
    kernel = qattn.build(spec())
    assert Path(kernel.path) == ptx


def has_setuptools():
    return importlib.util.find_spec("setuptools") is not None


@needs_attn_opt
@pytest.mark.skipif(not has_setuptools(), reason="no setuptools to run setup.py with")
def test_package_build_ships_the_chosen_set(tmp_path):
    """setup.py's build_py (what `pip install ./python` puts in the wheel) with attn-opt present
    and QATTN_AOT naming one kernel; no native extensions, no network."""
    env = dict(os.environ, ATTN_OPT=attn_opt(), QATTN_AOT=NAME, ATTN_OPT_NO_EXTENSIONS="1")
    target = tmp_path / "lib"
    proc = subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib",
                           str(target)], cwd=PYTHON_DIR, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ahead-of-time kernels: 1 of 1 compiled" in proc.stderr
    shipped = target / "qattn" / "_aot"
    assert (shipped / NAME / aot.KERNEL_FILE).is_file()
    assert list(aot.index(shipped)) == [NAME]
    assert aot.find(spec(), shipped) == shipped / NAME
    env["QATTN_AOT"] = "none"  # a rebuild without the set removes it
    subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(target)],
                   cwd=PYTHON_DIR, env=env, capture_output=True, check=True, timeout=600)
    assert not shipped.exists()
