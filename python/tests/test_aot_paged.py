"""The paged kernels of the ahead-of-time set (qattn.aot): the catalog and its selection
(QATTN_AOT, QATTN_AOT_PAGES), that the specs qattn.hf, DecodePlan and qattn.build callers write for
a paged cache find a set member, the error naming a missing paged spec, and one paged member
compiled by attn-opt and found. No GPU needed: nothing is launched."""

import importlib
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

import qattn
from qattn import aot

PYTHON_DIR = Path(__file__).resolve().parents[1]
PAGED = "decode_d128_g4_kv8_i8_p16"


from test_aot import attn_opt, needs_attn_opt  # noqa: E402


@pytest.fixture(scope="module")
def hf_kernels():
    """qattn.hf.kernels, loaded without qattn.hf's __init__ (which imports torch): the module
    that writes qattn.hf's kernel specs imports only qattn.aot, qattn.paged and qattn.spec."""
    saved = {n: sys.modules.get(n) for n in ("qattn.hf", "qattn.hf.kernels")}
    stub = types.ModuleType("qattn.hf")
    stub.__path__ = [str(Path(qattn.__file__).resolve().parent / "hf")]  # as imported
    sys.modules["qattn.hf"] = stub
    sys.modules.pop("qattn.hf.kernels", None)
    try:
        yield importlib.import_module("qattn.hf.kernels")
    finally:
        for n, m in saved.items():
            if m is None:
                sys.modules.pop(n, None)
            else:
                sys.modules[n] = m


def fake_set(root, chosen):
    """An index of `chosen` (name: keywords) whose kernels are placeholder files: what build_set
    writes, without compiling."""
    kernels = {}
    for n, kw in chosen.items():
        (root / n).mkdir(parents=True)
        (root / n / aot.KERNEL_FILE).write_text("// placeholder\n")
        kernels[n] = {"key": aot.key(aot.spec_of(n, kw).text), "spec": kw}
    (root / aot.INDEX).write_text(json.dumps({"kernels": kernels}))
    return root


def test_paged_catalog():
    every = aot.catalog(pages=(16, 64))
    paged = {n: kw for n, kw in every.items() if "page_size" in kw}
    assert len(every) == 48 + len(paged) and len(paged) == 3 * 4 * 4 * 2
    assert {kw["page_size"] for kw in paged.values()} == {16, 64}
    assert {kw["kv_dtype"] for kw in paged.values()} == {"i8", "ui8", "f8E4M3FN", "bf16"}
    assert every["decode_d128_g4_kv8_u8_p16"]["symmetric"] is False  # zero points per page
    assert all(n.endswith(f"_p{kw['page_size']}") for n, kw in paged.items())
    text = aot.spec_of(PAGED, every[PAGED]).text
    assert "block_table(%pages : memref<?x?xi32>)" in text  # dynamic max_blocks
    assert "memref<?x16x8x128xi8>" in text and "k_scale(%ks : memref<?x16x8xf32>)" in text
    assert "page_size = 16" in text and "seq_lens" in text
    # what attn-opt refuses is left out of the catalog
    assert aot.paged_supported(16, 128, "u8") and not aot.paged_supported(1, 64, "u8")
    assert not aot.paged_supported(4, 64, "bf16") and not aot.paged_supported(1, 64, "i8")
    assert aot.paged_supported(1, 128, "i8")
    assert "decode_d64_g1_kv8_bf16_p4" not in aot.catalog(pages=(4,))


def test_selection_of_page_sizes():
    default = aot.selection({})
    assert aot.DEFAULT_PAGES == (64,)
    assert len(default) == 48 + 48
    assert "decode_d128_g4_kv8_i8_p64" in default and PAGED not in default
    assert len(aot.selection({"QATTN_AOT_PAGES": "none"})) == 48
    both = aot.selection({"QATTN_AOT_PAGES": "16,64"})
    assert len(both) == 48 + 96 and PAGED in both
    assert set(aot.selection({"QATTN_AOT": "default,*_p16"})) == set(both)
    # patterns see pages 16 and 64 whatever the default set's pages are
    assert set(aot.selection({"QATTN_AOT": "*_i8_p16", "QATTN_AOT_PAGES": "none"})) == {
        f"decode_d{d}_g{g}_kv8_i8_p16" for d in (64, 128, 256) for g in (1, 4, 8, 16)}
    assert set(aot.selection({"QATTN_AOT": "decode_d128_g4_kv8_*"})) == {
        "decode_d128_g4_kv8_" + s for s in ("i8", "u8", "e4m3", "bf16", "i8_p16", "u8_p16",
                                            "e4m3_p16", "bf16_p16", "i8_p64", "u8_p64",
                                            "e4m3_p64", "bf16_p64")}
    # a full name outside QATTN_AOT_KV_HEADS and the page sizes is built as named
    odd = aot.selection({"QATTN_AOT": "default,decode_d64_g8_kv2_e4m3_p32"})
    assert odd["decode_d64_g8_kv2_e4m3_p32"]["page_size"] == 32 and len(odd) == 97
    for bad in ("12", "0", "16,x", "512"):
        with pytest.raises(ValueError, match="QATTN_AOT_PAGES"):
            aot.selection({"QATTN_AOT_PAGES": bad})
    with pytest.raises(ValueError, match="matches no kernel"):
        aot.selection({"QATTN_AOT": "decode_d64_g4_kv8_u8_p1"})  # a page of 64 bytes


@pytest.mark.parametrize("fmt, page", [("i8", 16), ("e4m3", 64), ("bf16", 16), ("i8", 64)])
def test_qattn_hf_paged_spec_is_found(hf_kernels, tmp_path, fmt, page):
    """qattn.hf's paged decode spec (a static table width per cache capacity) finds the set's
    dynamic-width member; its contiguous bf16 decode finds the contiguous member."""
    root = fake_set(tmp_path, aot.selection({"QATTN_AOT_PAGES": "16,64"}))
    for capacity in (100, 4096, 33000):
        blocks = hf_kernels.max_blocks(capacity, page)
        spec = hf_kernels.spec("decode", 32, 8, 128, fmt, page, blocks)
        assert f"memref<?x{blocks}xi32>" in spec.text
        want = f"decode_d128_g4_kv8_{fmt}_p{page}"
        assert aot.member(spec) == want
        assert aot.find(spec, root) == root / want
    stateless = hf_kernels.spec("stateless_decode", 64, 8, 128, "bf16")
    assert aot.find(stateless, root) == root / "decode_d128_g8_kv8_bf16"
    # the default install serves qattn.hf's default page size
    spec = hf_kernels.spec("decode", 32, 8, 128, fmt, hf_kernels.DEFAULT_PAGE_SIZE, 64)
    assert aot.member(spec) in aot.selection({})


def test_decode_plan_style_specs_are_found(tmp_path):
    """The paged spec a DecodePlan / qattn.build caller writes (docs/PagedKV.md: dynamic batch,
    pool and table, seq_lens, the format's keywords) finds the member by its text; the same spec
    with another page size, num_pages or without seq_lens does not."""
    root = fake_set(tmp_path, aot.selection({"QATTN_AOT_PAGES": "16,64"}))
    for fmt, p in (("i8", 16), ("e4m3", 16), ("bf16", 64)):
        spec = qattn.attention("decode", batch=None, q_len=1, kv_len=None, q_heads=128,
                               kv_heads=8, head_dim=256, seq_lens=True, page_size=p,
                               name="my_decode", **aot.FORMATS[fmt])
        assert aot.find(spec, root) == root / f"decode_d256_g16_kv8_{fmt}_p{p}"
    base = dict(batch=None, q_len=1, kv_len=None, q_heads=32, kv_heads=8, head_dim=128,
                seq_lens=True, page_size=16, **aot.FORMATS["i8"])
    assert aot.find(qattn.attention("decode", **base), root) == root / PAGED
    for change in (dict(page_size=32), dict(num_pages=4096), dict(seq_lens=False),
                   dict(causal=True)):
        assert aot.find(qattn.attention("decode", **dict(base, **change)), root) is None
    # a contiguous spec does not find a paged member, nor the reverse
    contiguous = {k: v for k, v in base.items() if k != "page_size"}
    assert aot.find(qattn.attention("decode", **contiguous), root) == \
        root / "decode_d128_g4_kv8_i8"


def test_torch_op_kernel_path_finds_the_paged_member(monkeypatch, tmp_path):
    """DecodePlan's kernel lookup (qattn.torch_ops._kernel_path) with a paged Spec: the set's
    PTX, no attn-opt."""
    pytest.importorskip("torch")
    from qattn import torch_ops
    root = fake_set(tmp_path, {PAGED: aot.catalog(pages=(16,))[PAGED]})
    monkeypatch.setattr(aot, "DIR", root)
    monkeypatch.setenv("ATTN_OPT", str(tmp_path / "no-attn-opt"))
    spec = qattn.attention("decode", batch=None, q_len=1, kv_len=None, q_heads=32, kv_heads=8,
                           head_dim=128, seq_lens=True, page_size=16, max_blocks=80,
                           **aot.FORMATS["i8"])
    assert Path(torch_ops._kernel_path(spec)) == root / PAGED / aot.KERNEL_FILE


def test_missing_paged_kernel_names_the_spec(hf_kernels, monkeypatch, tmp_path):
    root = fake_set(tmp_path / "set", aot.selection({}))  # pages 64 only
    spec = hf_kernels.spec("decode", 32, 8, 128, "i8", 16, 256)
    with pytest.raises(aot.KernelNotAvailable) as err:
        aot.require(spec, root)
    msg = str(err.value)
    assert "block_table(%pages : memref<?x256xi32>)" in msg and "page_size = 16" in msg
    assert "memref<?x16x8x128xi8>" in msg and "half_int8" in msg
    assert "--emit=ptx" in msg and f"QATTN_AOT=default,{PAGED}" in msg
    assert "96 kernels" in msg
    # qattn.build without attn-opt raises the same, naming the spec
    monkeypatch.setattr(aot, "DIR", root)
    monkeypatch.setenv("ATTN_OPT", str(tmp_path / "no-attn-opt"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(aot.KernelNotAvailable, match=r"page_size = 16.*" + PAGED):
        qattn.build(spec)
    # a spec outside the catalog (u8 pages with one scale per token) is named, with no set
    # member to point at
    u8 = qattn.attention("decode", batch=None, q_len=1, kv_len=None, q_heads=32, kv_heads=8,
                         head_dim=128, seq_lens=True, page_size=16,
                         **dict(aot.FORMATS["u8"], granularity="per_token"))
    with pytest.raises(aot.KernelNotAvailable, match="memref<\\?x16x8x128xui8>") as err:
        aot.require(u8, root)
    assert "QATTN_AOT naming it" in str(err.value) and aot.member(u8) is None


@needs_attn_opt
def test_compiled_paged_member_is_found(hf_kernels, monkeypatch, tmp_path):
    """One paged member compiled by attn-opt (build_set, as at install): launch metadata with a
    dynamic table, found by qattn.hf's static-width spec and loaded by qattn.build without
    attn-opt."""
    index = aot.build_set(tmp_path, attn_opt(), {PAGED: aot.catalog(pages=(16,))[PAGED]}, jobs=1)
    assert list(index) == [PAGED]
    ptx = tmp_path / PAGED / aot.KERNEL_FILE
    assert ".entry" in ptx.read_text()
    meta = json.loads(Path(str(ptx) + ".launch.json").read_text())
    assert meta["paged"]["page_size"] == 16 and meta["paged"]["max_blocks"] == -1
    spec = hf_kernels.spec("decode", 32, 8, 128, "i8", 16, hf_kernels.max_blocks(8192, 16))
    assert aot.find(spec, tmp_path) == tmp_path / PAGED
    monkeypatch.setattr(aot, "DIR", tmp_path)
    monkeypatch.setenv("ATTN_OPT", str(tmp_path / "no-attn-opt"))
    assert Path(qattn.build(spec).path) == ptx


@needs_attn_opt
def test_package_build_ships_paged_kernels(tmp_path):
    """setup.py's build_py (what `pip install ./python` runs) with a pattern over a contiguous
    kernel and its paged twins; a bad QATTN_AOT_PAGES stops the build, naming the variable."""
    env = dict(os.environ, ATTN_OPT=attn_opt(), QATTN_AOT="decode_d64_g1_kv8_bf16*",
               ATTN_OPT_NO_EXTENSIONS="1")
    target = tmp_path / "lib"
    cmd = [sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(target)]
    proc = subprocess.run(cmd, cwd=PYTHON_DIR, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ahead-of-time kernels: 3 of 3 compiled" in proc.stderr
    shipped = target / "qattn" / "_aot"
    assert aot.names(shipped) == ["decode_d64_g1_kv8_bf16", "decode_d64_g1_kv8_bf16_p16",
                                  "decode_d64_g1_kv8_bf16_p64"]
    spec = qattn.attention("decode", batch=None, q_len=1, kv_len=None, q_heads=8, kv_heads=8,
                           head_dim=64, seq_lens=True, page_size=64, max_blocks=32)
    assert aot.find(spec, shipped) == shipped / "decode_d64_g1_kv8_bf16_p64"
    env["QATTN_AOT_PAGES"] = "24"
    proc = subprocess.run(cmd, cwd=PYTHON_DIR, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode != 0 and "QATTN_AOT_PAGES must list powers of two" in proc.stderr


def test_selection_listed_from_the_command_line():
    run = [sys.executable, "-m", "qattn.aot", "--selection"]
    env = dict(os.environ, QATTN_AOT="*_i8_p16", QATTN_AOT_PAGES="none")
    proc = subprocess.run(run, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == list(aot.selection(env)) and PAGED in proc.stdout.split()
    env["QATTN_AOT_PAGES"] = "3"
    proc = subprocess.run(run, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "QATTN_AOT_PAGES must list powers of two" in proc.stderr
