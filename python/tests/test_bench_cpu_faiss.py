"""scripts/bench-cpu-faiss on a tiny configuration (64 keys, one repetition): every (dsub, ISA)
row is printed, and our u16 scan sums equal FAISS's accumulate_to_mem on the same codes.

Needs the FAISS folder (build/faiss: the faiss-cpu wheel and its release's headers, written by
``scripts/bench-cpu-faiss --fetch``), g++, attn-opt and an AVX2 host; skipped otherwise."""

import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

FAISS = REPO_ROOT / "build" / "faiss"
ATTN_OPT = os.environ.get("ATTN_OPT") or shutil.which("attn-opt")


def _avx2():
    try:
        return any(line.startswith("flags") and " avx2" in line for line in open("/proc/cpuinfo"))
    except OSError:
        return False


@pytest.mark.skipif(not glob.glob(str(FAISS / "faiss_cpu-*.whl")) or not ATTN_OPT
                    or not shutil.which("g++") or not shutil.which("taskset") or not _avx2(),
                    reason="needs build/faiss (scripts/bench-cpu-faiss --fetch), attn-opt, g++, "
                           "taskset and AVX2")
def test_tiny_run():
    out = subprocess.run([sys.executable, str(REPO_ROOT / "scripts" / "bench-cpu-faiss"),
                          "--lengths", "64", "--reps", "1", "--isas", "avx2",
                          "--attn-opt", ATTN_OPT], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert sorted(r["dsub"] for r in rows) == [1, 2, 4]
    assert all(r["scan_equal"] and r["t"] == 64 and r["faiss_level"] == "AVX2" for r in rows)
    assert all(r["nomad_scan_us"] > 0 and r["faiss_search_us"] > 0 for r in rows)


@pytest.mark.skipif(not glob.glob(str(FAISS / "faiss_cpu-*.whl")) or not ATTN_OPT
                    or not shutil.which("g++") or not shutil.which("taskset") or not _avx2(),
                    reason="needs build/faiss (scripts/bench-cpu-faiss --fetch), attn-opt, g++, "
                           "taskset and AVX2")
def test_prebuilt_kernels_name_their_commit(tmp_path):
    script = [sys.executable, str(REPO_ROOT / "scripts" / "bench-cpu-faiss")]
    kdir = tmp_path / "kernels"
    out = subprocess.run(script + ["--isas", "avx2", "--kernels-only", str(kdir),
                                   "--attn-opt", ATTN_OPT], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    commit = (kdir / "commit.txt").read_text().strip()
    assert commit
    out = subprocess.run(script + ["--lengths", "64", "--reps", "1", "--kernels", str(kdir)],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(rows) == 3 and all(r["kernels_commit"] == commit and r["scan_equal"] for r in rows)


def test_rejects_bad_reps(tmp_path):
    out = subprocess.run([sys.executable, str(REPO_ROOT / "scripts" / "bench-cpu-faiss"),
                          "--faiss", str(tmp_path), "--reps", "0"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "--reps" in out.stderr


@pytest.mark.skipif(not glob.glob(str(FAISS / "faiss_cpu-*.whl")) or not ATTN_OPT
                    or not shutil.which("g++") or not shutil.which("taskset") or not _avx2(),
                    reason="needs build/faiss (scripts/bench-cpu-faiss --fetch), attn-opt, g++, "
                           "taskset and AVX2")
def test_ceiling_probe():
    """--ceiling: one row per dsub with every probe and both kernels in cycles per block; the
    hand-written scans (probe_full*, probe_pipelined*) and FAISS write our u16 sums."""
    out = subprocess.run([sys.executable, str(REPO_ROOT / "scripts" / "bench-cpu-faiss"),
                          "--ceiling", "--lengths", "64", "--reps", "1",
                          "--attn-opt", ATTN_OPT], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert sorted(r["dsub"] for r in rows) == [1, 2, 4]
    assert all(r["scan_equal"] and r["probe_equal"] and r["isa"] == "avx2" for r in rows)
    assert all(r["steps"] == 64 // r["dsub"] for r in rows)
    for r in rows:
        cpb = {k: v for k, v in r.items() if k.endswith("_cpb")}
        assert {"nomad_cpb", "faiss_cpb", "probe_reg_cpb", "probe_mem_cpb",
                "probe_full_madd_cpb"} <= cpb.keys()
        assert all(v > 0 for v in cpb.values()) and r["clock_ghz"] > 0
