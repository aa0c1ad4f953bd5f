"""The CPU quantize kernels (attn.quantize.append / .dynamic lowered by convert-attn-to-cpu) against
qattn.quant, bit for bit: codes, scales and zero points, for every granularity × {i8 sym, i8 asym,
u8 asym, e4m3 sym}, f32 / f16 / bf16 sources and f32 / f16 / bf16 scales, with all-zero tokens,
±inf and NaN (the kernels' saturate policy), and appends that overflow the cache."""

import numpy as np
import pytest

import qattn
from qattn import quant
from qattn.compiler import CompileError
from qattn.cpu import host_isa

B, S, H, D, CAP = 3, 5, 2, 128, 9
GRANULARITIES = ["per_tensor", "per_head", "per_channel", "per_token", "per_token_head",
                 "per_group<32>", "per_group<64>", "per_group<128>", "per_block<1 x 128>"]
FORMATS = [("i8", True), ("i8", False), ("ui8", False), ("f8E4M3FN", True)]
STATIC = ("per_tensor", "per_head", "per_channel")


@pytest.fixture(autouse=True)
def cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("QATTN_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "qcache"))


def make_data(rng, special=True):
    """[B, S, H, D] f32: Gaussian, two outlier channels, a shifted head, an all-zero token, and
    (special) ±inf / NaN in one token."""
    x = rng.standard_normal((B, S, H, D)).astype(np.float32)
    x[..., 5] *= 30
    x[:, :, 1] += 3
    x[1, 2] = 0
    if special:
        x[2, 1, 0, 7] = np.inf
        x[2, 1, 1, 9] = -np.inf
        x[2, 1, 0, 11] = np.nan
    return x


def to_src(x, src_dtype):
    """(array passed to the kernel, the f32 values it holds)."""
    if src_dtype == "f32":
        return x, x
    if src_dtype == "f16":
        h = x.astype(np.float16)
        return h, h.astype(np.float32)
    r = quant.round_bf16(x)
    bits = (np.ascontiguousarray(r).view(np.uint32) >> 16).astype(np.uint16)
    return bits, r


def np_dtype(code):
    return {"i8": np.int8, "ui8": np.uint8, "f8E4M3FN": np.uint8}[code]


def reference(vals, code, sym, gran, scale_dtype, static=None):
    """(codes as float values, scales, zeros) of vals [T, H, D] with qattn.quant."""
    fmt = {"i8": "i8", "ui8": "u8", "f8E4M3FN": "e4m3"}[code]
    if sym:
        c, s = quant.quantize(vals, fmt, gran, None if static is None else static[0],
                              scale_dtype=scale_dtype, nonfinite="saturate")
        return c.astype(np.float32), s, None
    c, s, z = quant.quantize_asym(vals, fmt, gran, *(static or (None, None)),
                                  scale_dtype=scale_dtype, nonfinite="saturate")
    return c.astype(np.float32), s, z


def static_params(vals, code, sym, gran, scale_dtype):
    fmt = {"i8": "i8", "ui8": "u8", "f8E4M3FN": "e4m3"}[code]
    clean = np.nan_to_num(vals, posinf=0, neginf=0)
    if sym:
        s = quant.round_scale(quant.calibrate(clean, fmt, gran), scale_dtype)
        return s, None
    s, z = quant.calibrate_asym(clean, fmt, gran)
    return quant.round_scale(s, scale_dtype), z


def scale_array(values, scale_dtype):
    if scale_dtype == "f32":
        return np.ascontiguousarray(values, np.float32)
    if scale_dtype == "f16":
        return np.ascontiguousarray(values, np.float16)
    return (np.ascontiguousarray(values, np.float32).view(np.uint32) >> 16).astype(np.uint16)


def scale_values(arr, scale_dtype):
    if scale_dtype == "bf16":
        return (arr.astype(np.uint32) << 16).view(np.float32)
    return arr.astype(np.float32)


def code_values(arr, code):
    return quant.e4m3_from_bits(arr) if code == "f8E4M3FN" else arr.astype(np.float32)


def run_append(gran, code, sym, src_dtype="f32", scale_dtype="f32", positions=(0, 4, 2),
               special=True, seed=0):
    rng = np.random.default_rng(seed)
    x = make_data(rng, special)
    src, vals = to_src(x, src_dtype)
    kernel = qattn.build(qattn.quantize("append", batch=None, tokens=None, capacity=None,
                                        heads=H, head_dim=D, src_dtype=src_dtype, dtype=code,
                                        granularity=gran, symmetric=sym, scale_dtype=scale_dtype,
                                        target=host_isa()))
    fn = kernel.quantize
    pos = np.array(positions, np.int32)
    cache = np.full((B, CAP, H, D), 77, np_dtype(code))
    static = None
    sshape = tuple(d for d in qattn.spec.scale_shape(gran, [B, CAP, H, D]))
    if gran in STATIC:
        static = static_params(vals.reshape(B * S, H, D), code, sym, gran, scale_dtype)
        scales = scale_array(static[0], scale_dtype)
        zeros = None if sym else np.ascontiguousarray(static[1], np_dtype(code))
    else:
        scales = scale_array(np.full(sshape, 5.0, np.float32), scale_dtype)
        zeros = None if sym else np.full(sshape, 3, np_dtype(code))
    args = [src, pos, cache, scales] + ([] if sym else [zeros])
    fn(*args)
    return x, vals, pos, cache, scales, zeros, static


@pytest.mark.parametrize("code,sym", FORMATS, ids=lambda v: str(v))
@pytest.mark.parametrize("gran", GRANULARITIES)
def test_append_matches_numpy(gran, code, sym):
    x, vals, pos, cache, scales, zeros, static = run_append(gran, code, sym)
    for b in range(B):
        ref_c, ref_s, ref_z = reference(vals[b], code, sym, gran, "f32", static)
        rows = [p for p in range(pos[b], pos[b] + S) if p < CAP]
        got = code_values(cache[b, rows], code)
        np.testing.assert_array_equal(got, ref_c[:len(rows)], err_msg=f"codes of batch {b}")
        untouched = [r for r in range(CAP) if r not in rows]
        assert (cache[b, untouched] == 77).all(), "rows outside the append were written"
        if gran in STATIC:
            continue
        np.testing.assert_array_equal(scales[b, rows], ref_s[:len(rows)])
        assert (scales[b, untouched] == 5.0).all()
        if not sym:
            np.testing.assert_array_equal(zeros[b, rows], ref_z[:len(rows)])
    sc = static[0] if gran in STATIC else scales[0, :S]
    zp = None if sym else (static[1] if gran in STATIC else zeros[0, :S])
    assert_within_bound(vals[0], code_values(cache[0, :S], code), sc, zp, gran, code, sym)


def assert_within_bound(x, codes, sc, zp, gran, code, sym):
    """The format's error bound, element by element on the finite inputs: half a step (a whole
    one when asymmetric: the zero point is rounded too) plus what the two f32 roundings of
    x · (1/s) may move a value of up to 255 steps (2^-22 of it); e4m3: half its relative
    spacing."""
    deq = quant.dequantize(codes, sc, gran, zeros=zp)
    step = quant.dequantize(np.ones_like(codes), sc, gran)
    fin = np.isfinite(x)
    if code == "f8E4M3FN":
        bound = np.maximum(step * 2.0 ** -10, np.abs(x) / 16)
    else:
        bound = step * (0.5 if sym else 1.0) + (np.abs(x) + 255 * step) * 2.0 ** -22
    assert (np.abs(deq - x)[fin] <= bound[fin] * (1 + 1e-5)).all()


@pytest.mark.parametrize("src_dtype", ["f16", "bf16"])
@pytest.mark.parametrize("scale_dtype", ["f16", "bf16"])
def test_append_sources_and_scale_types(src_dtype, scale_dtype):
    for gran, code, sym in [("per_token_head", "i8", True), ("per_group<32>", "ui8", False),
                            ("per_token", "f8E4M3FN", True), ("per_channel", "i8", False)]:
        x, vals, pos, cache, scales, zeros, static = run_append(
            gran, code, sym, src_dtype, scale_dtype, positions=(1, 0, 3))
        for b in range(B):
            ref_c, ref_s, ref_z = reference(vals[b], code, sym, gran, scale_dtype, static)
            rows = slice(pos[b], pos[b] + S)
            np.testing.assert_array_equal(code_values(cache[b, rows], code), ref_c)
            sv = static[0] if gran in STATIC else scale_values(scales[b, rows], scale_dtype)
            zv = None if sym else (static[1] if gran in STATIC else zeros[b, rows])
            if gran not in STATIC:
                np.testing.assert_array_equal(sv, ref_s)
                if not sym:
                    np.testing.assert_array_equal(zv, ref_z)
            # Scales rounded up to f16 / bf16: still within the bound (nothing saturates).
            assert_within_bound(vals[b], code_values(cache[b, rows], code), sv, zv, gran, code, sym)


def test_nonfinite_policy():
    """NaN → code 0, ±inf → ±127, and the scale ignores them (it equals the finite amax / 127)."""
    x, vals, pos, cache, scales, *_ = run_append("per_token_head", "i8", True, positions=(0, 0, 0))
    assert cache[2, 1, 0, 7] == 127 and cache[2, 1, 1, 9] == -127 and cache[2, 1, 0, 11] == 0
    finite = np.where(np.isfinite(x[2, 1, 0]), np.abs(x[2, 1, 0]), 0).max()
    assert scales[2, 1, 0] == np.float32(finite) / np.float32(127)
    # An all-zero token: minimum scale, zero codes.
    assert (cache[1, 2] == 0).all() and (scales[1, 2] == np.float32(1e-8)).all()


def test_dynamic_matches_numpy():
    rng = np.random.default_rng(3)
    x = make_data(rng)
    for gran, code, sym in [("per_token_head", "i8", True), ("per_group<64>", "i8", False),
                            ("per_block<1 x 128>", "f8E4M3FN", True), ("per_token", "ui8", False)]:
        lib = qattn.build(qattn.quantize("dynamic", batch=B, tokens=S, heads=H, head_dim=D,
                                         src_dtype="f32", dtype=code, granularity=gran,
                                         symmetric=sym, target=host_isa()))
        dst = np.zeros((B, S, H, D), np_dtype(code))
        sshape = tuple(qattn.spec.scale_shape(gran, [B, S, H, D]))
        scales = np.zeros(sshape, np.float32)
        args = [x, dst, scales] + ([] if sym else [np.zeros(sshape, np_dtype(code))])
        lib.quantize(*args)
        ref_c, ref_s, ref_z = reference(x.reshape(B * S, H, D), code, sym, gran, "f32")
        np.testing.assert_array_equal(code_values(dst, code).reshape(B * S, H, D), ref_c)
        np.testing.assert_array_equal(scales.reshape(ref_s.shape), ref_s)
        if not sym:
            np.testing.assert_array_equal(args[3].reshape(ref_z.shape), ref_z)


def test_empty_append_writes_nothing():
    lib = qattn.build(qattn.quantize("append", batch=None, tokens=None, capacity=None, heads=H,
                                     head_dim=D, src_dtype="f32", target=host_isa()))
    cache = np.full((2, 4, H, D), 9, np.int8)
    scales = np.full((2, 4, H), 2.0, np.float32)
    lib.quantize(np.zeros((2, 0, H, D), np.float32), np.zeros(2, np.int32), cache, scales)
    assert (cache == 9).all() and (scales == 2.0).all()


@pytest.mark.parametrize("kwargs,message", [
    (dict(dtype="f8E4M3FN", symmetric=False), "integer"),
    (dict(dtype="ui8", symmetric=True), "ui8"),
    (dict(granularity="per_block<4 x 128>"), "per_block"),
])
def test_impossible_schemes_are_refused(kwargs, message):
    spec = qattn.quantize("append", batch=2, tokens=1, capacity=8, heads=H, head_dim=D,
                          target=host_isa(), **kwargs)
    with pytest.raises(CompileError) as e:
        qattn.build(spec)
    assert message in str(e.value)


def test_scalar_isa_with_half_types():
    """The scalar target (no F16C on x86: f16 conversions are libgcc calls) gives the same bits."""
    rng = np.random.default_rng(5)
    x = make_data(rng)
    src, vals = to_src(x, "f16")
    lib = qattn.build(qattn.quantize("append", batch=B, tokens=S, capacity=CAP, heads=H,
                                     head_dim=D, src_dtype="f16", granularity="per_group<32>",
                                     scale_dtype="f16", target="scalar"))
    cache = np.zeros((B, CAP, H, D), np.int8)
    scales = np.zeros((B, CAP, H, D // 32), np.float16)
    lib.quantize(src, np.zeros(B, np.int32), cache, scales)
    for b in range(B):
        c, s, _ = reference(vals[b], "i8", True, "per_group<32>", "f16")
        np.testing.assert_array_equal(cache[b, :S], c)
        np.testing.assert_array_equal(scales[b, :S].astype(np.float32), s)


@pytest.mark.parametrize("op", ["append", "dynamic"])
def test_hadamard_matches_numpy(op):
    """`hadamard`: each head's row rotated (qattn.quant.hadamard; non-finite inputs as 0) before
    it is quantized, bit for bit, for whole-row granularities of every format and a static one."""
    rng = np.random.default_rng(11)
    x = make_data(rng)
    for gran, code, sym, src_dtype in [("per_token_head", "i8", True, "f32"),
                                       ("per_token", "ui8", False, "bf16"),
                                       ("per_block<1 x 128>", "f8E4M3FN", True, "f16"),
                                       ("per_head", "i8", True, "f32")]:
        if op == "dynamic" and gran in STATIC:
            continue
        src, vals = to_src(x, src_dtype)
        rotated = quant.hadamard(np.where(np.isfinite(vals), vals, 0))
        rows = S if op == "dynamic" else CAP
        lib = qattn.build(qattn.quantize(op, batch=B, tokens=S, capacity=None if op == "dynamic" else CAP,
                                         heads=H, head_dim=D, src_dtype=src_dtype, dtype=code,
                                         granularity=gran, symmetric=sym, hadamard=True,
                                         target=host_isa()))
        dst = np.zeros((B, rows, H, D), np_dtype(code))
        sshape = tuple(qattn.spec.scale_shape(gran, [B, rows, H, D]))
        static = None
        if gran in STATIC:
            static = static_params(rotated.reshape(B * S, H, D), code, sym, gran, "f32")
            scales = scale_array(static[0], "f32")
        else:
            scales = np.zeros(sshape, np.float32)
        zeros = None if sym else np.zeros(sshape, np_dtype(code))
        args = [src] + ([np.zeros(B, np.int32)] if op == "append" else []) + [dst, scales]
        lib.quantize(*(args + ([] if sym else [zeros])))
        for b in range(B):
            ref_c, ref_s, ref_z = reference(rotated[b], code, sym, gran, "f32", static)
            np.testing.assert_array_equal(code_values(dst[b, :S], code), ref_c,
                                          err_msg=f"{op} {gran} {code}: codes of batch {b}")
            if gran not in STATIC:
                np.testing.assert_array_equal(scales[b, :S], ref_s)
                if not sym:
                    np.testing.assert_array_equal(zeros[b, :S], ref_z)
        # Dequantized and rotated back, batch 0 is its input up to the format's error.
        sc = static[0] if gran in STATIC else scales[0, :S]
        zp = None if sym else zeros[0, :S]
        back = quant.hadamard(quant.dequantize(code_values(dst[0, :S], code), sc, gran, zeros=zp))
        assert np.abs(back - vals[0]).max() < 0.05 * np.abs(vals[0]).max(), (op, gran, code)


def test_hadamard_needs_whole_rows():
    spec = qattn.quantize("dynamic", batch=2, tokens=1, heads=H, head_dim=D,
                          granularity="per_group<32>", hadamard=True, target=host_isa())
    with pytest.raises(CompileError, match="whole rows"):
        qattn.build(spec)
