"""The Python API fuzzed with hypothesis: spec builders and quantizers given arguments of every
type either work or raise ValueError / TypeError (never another exception, never a silently
reinterpreted argument), and CPU kernels called with arbitrary extents on canary-guarded buffers
are refused by the Python wrapper exactly when their own prologue refuses them, and never touch a
guard byte. The default profile ("ci", conftest.py) is a fast subset; HYPOTHESIS_PROFILE=long is
the long run of docs/InputChecks.md."""

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import qattn  # noqa: E402
from qattn import quant  # noqa: E402
from qattn.cpu import host_isa  # noqa: E402
from qattn.kernels import KernelArgumentError  # noqa: E402

from canary import Guarded, descriptor, raw_call  # noqa: E402

JUNK = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.integers(-2**70, 2**70),
                 st.floats(allow_nan=True), st.sampled_from(["false", "true", "0", "int8", "i8",
                                                             "per_token", "", "per_group<0>"]),
                 st.lists(st.integers(0, 4), max_size=3))
FLAGS = {"causal", "alibi", "seq_lens", "symmetric", "hadamard"}


def junk_overrides(names):
    """Up to four of the keyword arguments `names`, each set to a JUNK value."""
    return st.dictionaries(st.sampled_from(sorted(names)), JUNK, max_size=4)


@given(junk_overrides(FLAGS | {"batch", "q_len", "kv_heads", "head_dim", "granularity",
                               "kv_dtype", "name"}))
def test_attention_arguments(overrides):
    kwargs = dict(batch=2, q_len=1, kv_len=64, q_heads=4, kv_heads=1, head_dim=64)
    kwargs.update(overrides)
    try:
        spec = qattn.attention("decode", **kwargs)
    except (ValueError, TypeError):
        return
    for flag in FLAGS & overrides.keys():
        assert type(overrides[flag]) is bool  # "false" must never turn a feature on
    for dim in {"batch", "q_len", "kv_heads", "head_dim"} & overrides.keys():
        v = overrides[dim]
        assert v is None or (type(v) is int and v > 0)
    assert "attn.attention" in spec.text


@given(junk_overrides({"batch", "tokens", "heads", "head_dim", "capacity", "dtype", "granularity",
                       "symmetric", "hadamard", "scale_dtype"}),
       st.sampled_from(["append", "dynamic", "Append", 1]))
def test_quantize_spec_arguments(overrides, op):
    kwargs = dict(batch=2, tokens=1, heads=2, head_dim=64, capacity=8)
    kwargs.update(overrides)
    try:
        spec = qattn.quantize(op, **kwargs)
    except (ValueError, TypeError):
        return
    assert op in ("append", "dynamic")
    for flag in {"symmetric", "hadamard"} & overrides.keys():
        assert type(overrides[flag]) is bool
    assert f"attn.quantize.{op}" in spec.text


@given(st.sampled_from(["i8", "e4m3", "int8", "I8", "fp8", "u8", "", None, 8]),
       st.sampled_from(["per_tensor", "per_head", "per_token_head", "per_group<16>", "per_x"]),
       st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True, width=32),
                 st.lists(st.floats(width=32), min_size=1, max_size=3)))
def test_quantize_arrays(dtype, gran, scales):
    x = np.linspace(-3, 3, 2 * 2 * 16, dtype=np.float32).reshape(2, 2, 16)
    if scales is not None and not isinstance(scales, list):
        scales = np.full((1,) if gran == "per_tensor" else (2,), scales, np.float32)
    try:
        codes, s = quant.quantize(x, dtype, gran, scales)
    except ValueError:
        return
    assert dtype in ("i8", "e4m3")  # a misspelt dtype is never taken for another one
    assert np.isfinite(s).all() and (s >= np.finfo(np.float32).tiny).all()
    assert codes.shape == x.shape and np.isfinite(codes).all()


ISA = host_isa()


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    import os
    os.environ["QATTN_CACHE_DIR"] = str(tmp_path_factory.getbasetemp() / "qcache-fuzz")
    dyn = qattn.build(qattn.quantize("dynamic", batch=None, tokens=None, heads=2, head_dim=16,
                                     src_dtype="f32", target=ISA, name="qdyn"))
    app = qattn.build(qattn.quantize("append", batch=None, tokens=None, capacity=None, heads=2,
                                     head_dim=16, src_dtype="f32", dtype="ui8", symmetric=False,
                                     granularity="per_group<8>", target=ISA, name="qapp"))
    from test_input_checks import NOMAD
    isa = "avx2" if ISA in ("avx512", "avx512_vnni") else ISA
    att = qattn.build(NOMAD.format(isa=isa))
    ops = [f"attn.quantize.dynamic ins(%x{i} : memref<?x?x2x16xf32>) outs(%y{i}, %s{i} : "
           f"memref<?x?x2x16xi8>, memref<?x?x2xf32>) {{quant = #attn.quant<i8, per_token_head>, "
           f"target = #attn.target<{isa}>}}" for i in range(MULTI_OPS)]
    args = [f"%x{i}: memref<?x?x2x16xf32>, %y{i}: memref<?x?x2x16xi8>, %s{i}: memref<?x?x2xf32>"
            for i in range(MULTI_OPS)]
    multi = qattn.build("func.func @multi(" + ", ".join(args) + ") {\n  " + "\n  ".join(ops) +
                        "\n  return\n}\n")
    return {"qdyn": dyn.qdyn, "qapp": app.qapp, "att": att.att, "multi": multi.multi}


# A kernel of this many quantize ops has 3 buffers and 4 extent relations per op: its checks come
# in several parts (16 descriptors or 32 relations each), whose first nonzero status is returned.
MULTI_OPS = 12


def fuzz_extent():
    return st.integers(0, 5)


def mostly(n):
    """An extent that is usually `n` (a consistent shape) and otherwise any fuzz_extent()."""
    return st.one_of(*[st.just(n)] * 3, fuzz_extent())


def check_entry(fn, values, bufs):
    """Calls `fn` through the Python wrapper, then through its C interface with the same values:
    the wrapper accepts exactly when the kernel's prologue returns 0, a relation the wrapper
    refuses is the one whose number the prologue returns, and no call touches a guard of `bufs`.
    Returns (accepted, the prologue's status)."""
    try:
        fn(*values)
        accepted, refused = True, None
    except KernelArgumentError as e:
        accepted, refused = False, str(e)
    assert all(b.intact() for b in bufs)
    status = raw_call(fn, values)
    assert all(b.intact() for b in bufs)
    assert (status == 0) == accepted
    if refused and "extent check " in refused:
        assert status == int(refused.split("extent check ")[1].split()[0])
    hypothesis.event("accepted" if accepted else "refused")
    return accepted, status


@given(st.sampled_from(["qdyn", "qapp"]), st.data())
def test_kernels_on_guarded_buffers(kernels, name, data):
    """Every dynamic extent drawn independently (and a static one sometimes off by one): the Python
    wrapper accepts exactly when the kernel's prologue does, and no call touches a guard."""
    fn = kernels[name]
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    base = [data.draw(fuzz_extent()) for _ in range(2)]  # mostly consistent: [B, S] of every buffer

    bufs = []
    for a in fn.args:
        shape = tuple(data.draw(mostly(base[d])) if n is None else
                      n + data.draw(st.sampled_from([0, 0, 0, 0, 0, 0, 1, -1]))
                      for d, n in enumerate(a.shape))
        shape = tuple(max(n, 0) for n in shape)
        bufs.append(Guarded(shape, a.dtype, rng))
    arrays = [b.array for b in bufs]
    if name == "qapp":
        arrays[1][:] = rng.integers(-2, 8, arrays[1].shape)  # positions
    statics_ok = all(n is None or n == v for a, arr in zip(fn.args, arrays)
                     for n, v in zip(a.shape, arr.shape))
    _, status = check_entry(fn, arrays, bufs)
    if not statics_ok:
        assert status == -1


@given(st.data())
def test_nomad_attention_on_guarded_buffers(kernels, data):
    """attn.pq.attention over dynamic query heads, KV heads, code blocks and tokens: extents drawn
    mostly consistent (KV heads 0 included), each sometimes replaced; same properties, and an
    accepted call writes finite outputs."""
    fn = kernels["att"]
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    h = data.draw(st.integers(0, 3))
    hq = h * data.draw(st.integers(0, 3))
    nb = data.draw(st.integers(0, 2))
    t = data.draw(st.integers(0, nb * 32 + 2))

    def maybe(n):
        return data.draw(mostly(n))
    shapes = [((maybe(hq), 64), np.float32), ((maybe(h), 32, 16, 2), np.float32),
              ((maybe(h), maybe(nb), 32, 16), np.uint8), ((maybe(t), maybe(h), 64), np.float32),
              ((maybe(hq), 64), np.float32)]
    bufs = [Guarded(shape, dtype, rng) for shape, dtype in shapes]
    length = data.draw(st.integers(-5, 100))
    values = [b.array for b in bufs[:4]] + [length, bufs[4].array]
    accepted, _ = check_entry(fn, values, bufs)
    if accepted:
        assert np.isfinite(bufs[4].array).all()


@given(st.data())
def test_many_op_kernel_on_guarded_buffers(kernels, data):
    """A kernel of MULTI_OPS ops, its checks in several parts: every op's extents mostly
    consistent, some drawn independently; same properties, with the number of the first failing
    relation (whichever part holds it) the status of both the wrapper and the prologue. A
    malformed descriptor anywhere gives -1, whatever relation fails before it."""
    fn = kernels["multi"]
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    bufs = []
    for _ in range(MULTI_OPS):
        b, s = data.draw(fuzz_extent()), data.draw(fuzz_extent())
        for shape, dtype in (((b, s, 2, 16), np.float32), ((b, s, 2, 16), np.int8),
                             ((b, s, 2), np.float32)):
            shape = tuple(data.draw(mostly(n)) if d < 2 else n for d, n in enumerate(shape))
            bufs.append(Guarded(shape, dtype, rng))
    arrays = [b.array for b in bufs]
    check_entry(fn, arrays, bufs)
    bad = data.draw(st.integers(0, len(arrays) - 1))
    status = raw_call(fn, arrays, {bad: descriptor(arrays[bad], offset=1)})
    assert status == -1
    assert all(b.intact() for b in bufs)
