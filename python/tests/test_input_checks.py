"""Input checks at every CPU entry point: the spec's extent relations, checked by the Python wrapper
(KernelArgumentError before the call), by the generated C header's wrapper and by the kernel's own
prologue (a status, nothing run) — on canary-guarded buffers whose guard bytes must survive every
call, accepted or refused."""

import ctypes
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import qattn
from qattn.cpu import host_isa
from qattn.kernels import KernelArgumentError

from canary import Guarded, descriptor, raw_call

ISA = host_isa()


@pytest.fixture(autouse=True)
def cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("QATTN_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "qcache"))


@pytest.fixture(scope="module")
def dynamic_quantize():
    """attn.quantize.dynamic over [?, ?, 2, 64] f32 → i8, per_token_head scales [?, ?, 2]."""
    spec = qattn.quantize("dynamic", batch=None, tokens=None, heads=2, head_dim=64,
                          src_dtype="f32", target=ISA, name="qdyn")
    return qattn.build(spec).qdyn


@pytest.fixture(scope="module")
def append_quantize():
    """attn.quantize.append of [?, ?, 2, 64] f32 tokens into a [?, ?, 2, 64] i8 cache."""
    spec = qattn.quantize("append", batch=None, tokens=None, capacity=None, heads=2, head_dim=64,
                          src_dtype="f32", target=ISA, name="qapp")
    return qattn.build(spec).qapp


NOMAD = """
func.func @att(%q: memref<?x64xf32>, %b: memref<?x32x16x2xf32>, %c: memref<?x?x32x16xui8>,
               %v: memref<?x?x64xf32>, %n: index, %o: memref<?x64xf32>) {{
  attn.pq.attention ins(%q, %b, %c, %v : memref<?x64xf32>, memref<?x32x16x2xf32>,
                        memref<?x?x32x16xui8>, memref<?x?x64xf32>)
      length(%n) outs(%o : memref<?x64xf32>) {{pq = #attn.pq<dsub = 2>, target = #attn.target<{isa}>}}
  return
}}
func.func @enc(%k: memref<?x?x64xf32>, %b: memref<?x32x16x2xf32>, %pos: index,
               %c: memref<?x?x32x16xui8>) {{
  attn.pq.encode ins(%k, %b : memref<?x?x64xf32>, memref<?x32x16x2xf32>) offset(%pos)
      outs(%c : memref<?x?x32x16xui8>) {{pq = #attn.pq<dsub = 2>, target = #attn.target<{isa}>}}
  return
}}
"""


@pytest.fixture(scope="module")
def nomad():
    isa = "avx2" if ISA in ("avx512", "avx512_vnni") else ISA
    return qattn.build(NOMAD.format(isa=isa))


def guarded(rng, *shapes_dtypes):
    return [Guarded(shape, dtype, rng) for shape, dtype in shapes_dtypes]


def att_values(bufs, n):
    """attn.pq.attention's arguments: q, codebooks, codes, values, length, out."""
    return [b.array for b in bufs[:4]] + [n, bufs[4].array]


def assert_refused(fn, bufs, values=None, *, match):
    """The Python wrapper refuses; the raw kernel returns a non-zero status; no guard changes."""
    values = [b.array for b in bufs] if values is None else values
    with pytest.raises(KernelArgumentError, match=match):
        fn(*values)
    status = raw_call(fn, values)
    assert status != 0
    assert all(b.intact() for b in bufs)
    return status


def test_header_lists_the_extent_checks(dynamic_quantize):
    exprs = [c.expr for c in dynamic_quantize.checks]
    assert "arg1_dim0 == arg0_dim0" in exprs and "arg1_dim1 == arg0_dim1" in exprs
    assert "arg2_dim0 == arg0_dim0" in exprs  # scales [B, S, H] of the tokens


def test_dynamic_quantize_larger_src_than_dst(dynamic_quantize):
    rng = np.random.default_rng(0)
    bufs = guarded(rng, ((6, 5, 2, 64), np.float32), ((2, 5, 2, 64), np.int8),
                   ((2, 5, 2), np.float32))
    status = assert_refused(dynamic_quantize, bufs, match=r"extent check 1 fails: "
                            r"arg1_dim0 == arg0_dim0 with arg0_dim0 = 6, arg1_dim0 = 2")
    assert dynamic_quantize.checks[status - 1].expr == "arg1_dim0 == arg0_dim0"
    # More tokens than dst, and scales of the wrong extent, are refused too.
    bufs = guarded(rng, ((2, 9, 2, 64), np.float32), ((2, 5, 2, 64), np.int8),
                   ((2, 5, 2), np.float32))
    assert_refused(dynamic_quantize, bufs, match="arg1_dim1 == arg0_dim1")
    bufs = guarded(rng, ((2, 5, 2, 64), np.float32), ((2, 5, 2, 64), np.int8),
                   ((2, 1, 2), np.float32))
    assert_refused(dynamic_quantize, bufs, match="'scales' dim 1 must equal 'src' dim 1")


def test_dynamic_quantize_consistent_runs_in_bounds(dynamic_quantize):
    rng = np.random.default_rng(1)
    bufs = guarded(rng, ((2, 5, 2, 64), np.float32), ((2, 5, 2, 64), np.int8),
                   ((2, 5, 2), np.float32))
    dynamic_quantize(*[b.array for b in bufs])
    assert all(b.intact() for b in bufs)
    assert np.abs(bufs[1].array).max() == 127  # the group's amax maps to the largest code
    # Empty batches are fine too.
    bufs = guarded(rng, ((0, 5, 2, 64), np.float32), ((0, 5, 2, 64), np.int8),
                   ((0, 5, 2), np.float32))
    assert raw_call(dynamic_quantize, [b.array for b in bufs]) == 0
    assert all(b.intact() for b in bufs)


def test_append_short_positions_and_cache(append_quantize):
    rng = np.random.default_rng(2)
    src, cache, scales = ((3, 2, 2, 64), np.float32), ((3, 8, 2, 64), np.int8), ((3, 8, 2), np.float32)
    bufs = guarded(rng, src, ((1,), np.int32), cache, scales)
    bufs[1].array[:] = 0
    assert_refused(append_quantize, bufs, match="'positions' dim 0 must equal 'src' dim 0")
    bufs = guarded(rng, src, ((3,), np.int32), ((2, 8, 2, 64), np.int8), scales)
    bufs[1].array[:] = 0
    assert_refused(append_quantize, bufs, match="'cache' dim 0 must equal 'src' dim 0")
    bufs = guarded(rng, src, ((3,), np.int32), cache, ((3, 4, 2), np.float32))
    bufs[1].array[:] = 0
    assert_refused(append_quantize, bufs, match="'scales' dim 1 must equal 'cache' dim 1")
    bufs = guarded(rng, ((3, 9, 2, 64), np.float32), ((3,), np.int32), cache, scales)
    bufs[1].array[:] = 0
    assert_refused(append_quantize, bufs, match="'src' dim 1 must be at most 'cache' dim 1")
    # Consistent: positions anywhere (even far outside the cache) write nothing out of bounds.
    bufs = guarded(rng, src, ((3,), np.int32), cache, scales)
    bufs[1].array[:] = [-1, 7, 2**31 - 1]
    append_quantize(*[b.array for b in bufs])
    assert all(b.intact() for b in bufs)


def test_nomad_zero_kv_heads_short_out_and_gqa(nomad):
    rng = np.random.default_rng(3)
    q, out = ((4, 64), np.float32), ((4, 64), np.float32)
    # 0 KV heads: refused before any division by the head count.
    bufs = guarded(rng, q, ((0, 32, 16, 2), np.float32), ((0, 1, 32, 16), np.uint8),
                   ((10, 0, 64), np.float32), out)
    assert_refused(nomad.att, bufs, att_values(bufs, 10), match="'codebooks' dim 0 must be at least 1")
    books, codes, values = ((2, 32, 16, 2), np.float32), ((2, 1, 32, 16), np.uint8), ((10, 2, 64), np.float32)
    # A short `out`.
    bufs = guarded(rng, q, books, codes, values, ((2, 64), np.float32))
    assert_refused(nomad.att, bufs, att_values(bufs, 10), match="'out' dim 0 must equal 'query' dim 0")
    # 3 query heads over 2 KV heads.
    bufs = guarded(rng, ((3, 64), np.float32), books, codes, values, ((3, 64), np.float32))
    assert_refused(nomad.att, bufs, att_values(bufs, 10), match="must be a multiple of 'codebooks' dim 0")
    # More values than the code blocks hold.
    bufs = guarded(rng, q, books, codes, ((40, 2, 64), np.float32), out)
    assert_refused(nomad.att, bufs, att_values(bufs, 10), match="'values' dim 0 must be at most 'codes' dim 1 \\* 32")
    # Consistent, with a length beyond the keys: clamped, in bounds.
    bufs = guarded(rng, q, books, codes, values, out)
    bufs[2].array[:] = 0
    nomad.att(*att_values(bufs, 1 << 40))
    assert all(b.intact() for b in bufs) and np.isfinite(bufs[4].array).all()


def test_index_arguments_are_int64(nomad):
    rng = np.random.default_rng(4)
    bufs = guarded(rng, ((3, 2, 64), np.float32), ((2, 32, 16, 2), np.float32),
                   ((2, 1, 32, 16), np.uint8))
    k, b, c = (x.array for x in bufs)
    for bad in (2**64 + 5, 2**63, -2**63 - 1):
        with pytest.raises(KernelArgumentError, match="out of its range"):
            nomad.enc(k, b, bad, c)
    with pytest.raises(KernelArgumentError, match="takes an int"):
        nomad.enc(k, b, 5.0, c)
    c[:] = 0
    nomad.enc(k, b, 2**63 - 1, c)  # far outside the cache: nothing written
    assert not c.any() and all(x.intact() for x in bufs)


def test_written_buffer_may_not_overlap(dynamic_quantize):
    x = np.zeros((2, 5, 2, 64), np.float32)
    dst = np.zeros((2, 5, 2, 64), np.int8)
    scales = x.reshape(-1)[:20].reshape(2, 5, 2)  # written scales inside the source
    with pytest.raises(KernelArgumentError, match="arg0 and arg2 overlap in memory"):
        dynamic_quantize(x, dst, scales)


def test_kernel_prologue_refuses_malformed_descriptors(dynamic_quantize):
    """Direct C-interface calls (no wrapper): a static extent that differs from the type, strides
    that are not row-major, a nonzero offset, a negative extent, a null buffer: status -1."""
    rng = np.random.default_rng(5)
    shapes = (((2, 5, 2, 64), np.float32), ((2, 5, 2, 64), np.int8), ((2, 5, 2), np.float32))
    cases = [
        lambda a: {1: descriptor(a[1], sizes=(2, 5, 4, 64))},        # static head count lies
        lambda a: {0: descriptor(a[0], strides=(640, 128, 64, 2))},  # not row-major
        lambda a: {2: descriptor(a[2], offset=3)},
        lambda a: {1: descriptor(a[1], sizes=(-1, 5, 2, 64))},
        lambda a: {0: descriptor(a[0], sizes=(1 << 40, 1 << 20, 2, 64))},  # beyond 2^48 bytes
        lambda a: {2: descriptor(a[2], pointer=0)},
    ]
    for make in cases:
        bufs = guarded(rng, *shapes)
        arrays = [b.array for b in bufs]
        before = [a.copy() for a in arrays]
        assert raw_call(dynamic_quantize, arrays, make(arrays)) == -1
        assert all(b.intact() for b in bufs)
        assert all((a == p).all() for a, p in zip(arrays, before))  # nothing ran


HARNESS = r"""
#include <stdio.h>
#include <string.h>
#include "kernels.h"
#define GUARD 256
static unsigned char mem[3][GUARD * 2 + 65536];
static void *buf(int i) { memset(mem[i], 0xA5, sizeof mem[i]); return mem[i] + GUARD; }
static int intact(int i, size_t bytes) {
  for (size_t j = 0; j < GUARD; ++j)
    if (mem[i][j] != 0xA5 || mem[i][GUARD + bytes + j] != 0xA5) return 0;
  return 1;
}
int main(void) {
  float *src = buf(0); int8_t *dst = buf(1); float *sc = buf(2);
  for (int i = 0; i < 2 * 3 * 2 * 64; ++i) src[i] = (float)(i % 7) - 3.0f;
  /* batch 2 of src into a dst of batch 1: check 1 */
  printf("mismatch %d\n", qdyn(src, dst, sc, 2, 3, 1, 3, 1, 3));
  printf("negative %d\n", qdyn(src, dst, sc, -2, 3, -2, 3, -2, 3));
  printf("null %d\n", qdyn(src, 0, sc, 2, 3, 2, 3, 2, 3));
  printf("ok %d\n", qdyn(src, dst, sc, 2, 3, 2, 3, 2, 3));
  printf("intact %d\n", intact(0, 2 * 3 * 2 * 64 * 4) && intact(1, 2 * 3 * 2 * 64) &&
         intact(2, 2 * 3 * 2 * 4));
  return 0;
}
"""


def test_c_header_wrapper_checks(dynamic_quantize, tmp_path):
    """The header's inline wrapper refuses what the kernel refuses (same statuses), from C."""
    entry = Path(qattn.build(qattn.quantize("dynamic", batch=None, tokens=None, heads=2,
                                            head_dim=64, src_dtype="f32", target=ISA,
                                            name="qdyn")).path).parent
    header = (entry / "kernels.h").read_text()
    assert "int32_t _mlir_ciface___attn_qdyn(" in header
    assert "  if (!(arg1_dim0 == arg0_dim0))\n    return 1;" in header
    (tmp_path / "main.c").write_text(HARNESS)
    exe = tmp_path / "main"
    subprocess.run(["cc", "-std=c99", "-Wall", "-Werror", "-I", str(entry), "-o", str(exe),
                    str(tmp_path / "main.c"), str(entry / "kernels.o"), "-lm"], check=True)
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    assert out.split("\n")[:5] == ["mismatch 1", "negative -1", "null -1", "ok 0", "intact 1"]


def test_guard_pages_catch_an_overrun(tmp_path):
    """The harness itself: a read one byte past a guarded array faults; a write just before its
    start is seen by intact()."""
    code = ("import ctypes, sys; sys.path.insert(0, %r); from canary import Guarded; "
            "import numpy as np; g = Guarded((5,), np.uint8); "
            "print(ctypes.c_uint8.from_address(g.array.ctypes.data + 5).value)"
            % str(Path(__file__).parent))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True)
    assert proc.returncode == -11  # SIGSEGV on the fence page
    g = Guarded((5,), np.uint8)
    assert g.intact()
    ctypes.c_uint8.from_address(g.array.ctypes.data - 1).value = 0
    assert not g.intact()


def test_mla_append_short_positions_and_cache():
    spec = qattn.spec.mla_quantize(batch=None, tokens=None, capacity=None, src_dtype="f32",
                                   target=ISA, name="mla_app")
    fn = qattn.build(spec).mla_app
    rng = np.random.default_rng(6)
    src, cache = ((3, 2, 576), np.float32), ((3, 4, 656), np.int8)
    bufs = guarded(rng, src, ((2,), np.int32), cache)
    bufs[1].array[:] = 0
    assert_refused(fn, bufs, match="'positions' dim 0 must equal 'src' dim 0")
    bufs = guarded(rng, src, ((3,), np.int32), ((1, 4, 656), np.int8))
    bufs[1].array[:] = 0
    assert_refused(fn, bufs, match="'cache' dim 0 must equal 'src' dim 0")
    bufs = guarded(rng, src, ((3,), np.int32), cache)
    bufs[1].array[:] = [0, 3, -7]
    fn(*[b.array for b in bufs])
    assert all(b.intact() for b in bufs)
