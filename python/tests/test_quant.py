"""qattn.quant: the K/V quantizers in NumPy (formats, granularities, calibration, refusals)."""

import numpy as np
import pytest

from qattn import quant


def gaussian(shape=(40, 3, 64), seed=0, outlier=None):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    if outlier is not None:
        x[..., outlier] *= 20
    return x


def test_e4m3_rounding_points():
    x = np.array([1.0625, 1.1875, 464.0, -300.0, 1e-3, 2.0 ** -10, 3 * 2.0 ** -11, 0.0, np.nan],
                 np.float32)
    want = [1.0, 1.25, 448.0, -288.0, 2.0 ** -9, 0.0, 2.0 ** -9, 0.0]
    got = quant.round_e4m3(x)
    assert got[:8].tolist() == want  # ties to even, saturation, subnormals
    assert np.isnan(got[8])


def test_e4m3_values_are_representable():
    # Every result has at most 3 mantissa bits (normal) or is a multiple of 2^-9 (subnormal).
    y = quant.round_e4m3(np.random.default_rng(1).standard_normal(10000).astype(np.float32) * 50)
    a = np.abs(y[y != 0]).astype(np.float64)
    e = np.maximum(np.floor(np.log2(a)), -6)
    assert np.all(np.abs(a / 2.0 ** (e - 3) - np.round(a / 2.0 ** (e - 3))) == 0)
    assert np.abs(y).max() <= 448


def test_bf16_rounding_ties_to_even():
    x = np.array([1.00390625, 1.01171875, -3.14159], np.float32)
    assert quant.round_bf16(x).tolist() == [1.0, 1.015625, np.float32(-3.140625)]


@pytest.mark.parametrize("gran,shape", [("per_tensor", (1,)), ("per_head", (3,)),
                                        ("per_token", (40,)), ("per_token_head", (40, 3)),
                                        ("per_group<32>", (40, 3, 2)),
                                        ("per_block<1x32>", (40, 3, 2)),
                                        ("per_block<3 x 64>", (14, 3, 1)),
                                        ("per_channel", (3, 64))])
def test_scale_shapes_and_roundtrip(gran, shape):
    x = gaussian()
    for dtype in ("i8", "e4m3"):
        codes, s = quant.quantize(x, dtype, gran)
        assert s.shape == shape and s.dtype == np.float32
        y = quant.dequantize(codes, s, gran)
        assert y.shape == x.shape
        # each element's own scale, broadcast back to [T, H, D]
        full = quant._expand(s, x.shape, gran)
        if dtype == "i8":  # at most half a step
            lim = 0.5 * full
        else:  # half an ulp of 3 mantissa bits, or half the subnormal step 2^-9
            lim = np.maximum(np.abs(x) / 16, full * 2.0 ** -10)
        assert np.all(np.abs(y - x) <= lim * (1 + 1e-6) + 1e-12)


def test_finer_granularity_is_more_accurate():
    x = gaussian(outlier=5)
    err = {g: np.linalg.norm(quant.fake_quantize(x, "i8", g) - x)
           for g in ("per_tensor", "per_token", "per_token_head", "per_group<32>", "per_group<16>")}
    assert err["per_group<16>"] < err["per_group<32>"] < err["per_token_head"] < err["per_token"]
    assert err["per_token"] <= err["per_tensor"]


def test_i8_codes_round_half_away_from_zero():
    x = np.array([[[127.0, 0.5, -0.5, 1.5, -1.5, 2.5]]], np.float32)
    codes, s = quant.quantize(x, "i8", "per_token_head")
    assert s.tolist() == [[1.0]]
    assert codes.ravel().tolist() == [127, 1, -1, 2, -2, 3]


def test_all_zero_group_and_static_scales():
    x = gaussian()
    x[3] = 0
    codes, s = quant.quantize(x, "i8", "per_token_head")
    assert np.all(s[3] == np.float32(1e-8)) and np.all(codes[3] == 0)
    static = quant.calibrate(x, "i8", "per_head")
    assert static.shape == (3,)
    y = quant.fake_quantize(x * 2, "i8", "per_head", static)  # beyond the range: saturates
    assert np.allclose(np.abs(y).max(axis=(0, 2)), 127 * static)


def test_refusals():
    x = gaussian()
    with pytest.raises(ValueError, match="unknown granularity"):
        quant.quantize(x, "i8", "per_row")
    with pytest.raises(ValueError, match="divisible"):
        quant.quantize(x, "i8", "per_group<48>")
    with pytest.raises(ValueError, match="follow the token"):
        quant.calibrate(x, "i8", "per_token")
    with pytest.raises(ValueError, match="dtype"):
        quant.quantize(x, "u4", "per_token")
    with pytest.raises(ValueError, match="shape"):
        quant.quantize(x, "i8", "per_head", np.ones(2, np.float32))
    for bad in (np.inf, -np.inf, np.nan):
        y = x.copy()
        y[1, 2, 3] = bad
        with pytest.raises(ValueError, match=r"non-finite values \(first at index \(1, 2, 3\)\)"):
            quant.quantize(y, "e4m3", "per_token_head")


def test_scale_storage():
    assert quant.scale_bytes_per_token(3, 64, "per_token_head") == 12
    assert quant.scale_bytes_per_token(3, 64, "per_group<32>") == 24
    assert quant.scale_bytes_per_token(3, 64, "per_head") == 0


@pytest.mark.parametrize("gran", ["per_tensor", "per_head", "per_token", "per_token_head",
                                  "per_group<16>", "per_block<5x32>", "per_channel"])
@pytest.mark.parametrize("dtype", ["u8", "i8"])
def test_asymmetric_roundtrip(dtype, gran):
    x = gaussian() + 3.0  # skewed: all mass away from zero
    codes, s, z = quant.quantize_asym(x, dtype, gran)
    assert codes.dtype == (np.uint8 if dtype == "u8" else np.int8) and z.dtype == codes.dtype
    assert s.shape == z.shape
    y = quant.dequantize(codes, s, gran, z)
    full = quant._expand(s, x.shape, gran)
    assert np.all(np.abs(y - x) <= 0.5 * full * (1 + 1e-5) + 1e-6)  # half a step (255 steps)
    # On skewed data asymmetric int8 beats symmetric int8 at the same granularity.
    if dtype == "i8" and gran != "per_channel":
        sym = quant.fake_quantize(x, "i8", gran)
        assert np.linalg.norm(y - x) < np.linalg.norm(sym - x)


def test_asymmetric_zero_is_exact():
    x = np.abs(gaussian())
    x[:, :, :4] = 0
    codes, s, z = quant.quantize_asym(x, "u8", "per_token_head")
    assert np.all(quant.dequantize(codes, s, "per_token_head", z)[:, :, :4] == 0)
    assert np.all(z == 0)  # min 0: zero point 0


@pytest.mark.parametrize("gran", ["per_tensor", "per_head", "per_channel", "per_token",
                                  "per_token_head", "per_group<32>", "per_block<7x64>"])
@pytest.mark.parametrize("fmt", [("i8", True), ("e4m3", True), ("i8", False), ("u8", False)])
def test_fused_zero_point_correction_equals_dequantize_then_attend(gran, fmt):
    from qattn import quant_attention as qa

    dtype, sym = fmt
    q, k, v = qa.make_data("skewed", t=100, h=2, hq=6, d=64, queries=1, seed=3)
    if sym:
        (kc, ks), (vc, vs) = quant.quantize(k, dtype, gran), quant.quantize(v, dtype, gran)
        kz = vz = None
    else:
        kc, ks, kz = quant.quantize_asym(k, dtype, gran)
        vc, vs, vz = quant.quantize_asym(v, dtype, gran)
    fused = qa.fused_decode(q[0], kc, ks, gran, vc, vs, gran, kz, vz)
    plain = qa.dequantized_decode(q[0], kc, ks, gran, vc, vs, gran, kz, vz)
    assert np.linalg.norm(fused - plain) <= 1e-5 * np.linalg.norm(plain)
    # and the quantized attention is close to the unquantized one
    assert np.linalg.norm(plain - qa.dense_decode(q[0], k, v)) <= 0.05 * np.linalg.norm(plain)


def test_accuracy_table_orders_schemes():
    from qattn import quant_attention as qa

    q, k, v = qa.make_data("skewed", t=256, queries=2)
    for gran in ("per_token_head", "per_group<32>"):
        assert qa.scheme_error(q, k, v, "i8", False, gran) < qa.scheme_error(q, k, v, "i8", True, gran)


@pytest.mark.parametrize("scale_dtype", ["f16", "bf16"])
def test_round_scale_never_below(scale_dtype):
    """Stored scales are rounded up: never below the f32 scale, at most one ulp of the type above."""
    s = np.random.default_rng(0).uniform(1e-6, 100, 10000).astype(np.float32)
    r = quant.round_scale(s, scale_dtype)
    assert (r >= s).all()
    ulp = 2.0 ** -10 if scale_dtype == "f16" else 2.0 ** -7
    assert (r <= s * (1 + ulp) * (1 + 1e-7)).all()
    exact = quant.round_scale(np.float32([0.5, 2.0]), scale_dtype)
    np.testing.assert_array_equal(exact, [0.5, 2.0])


def test_hadamard_rotation():
    # Rows of the identity become the rows of H: (−1)^popcount(r & c) / √8.
    h = quant.hadamard(np.eye(8))
    want = np.array([[(-1) ** bin(r & c).count("1") for c in range(8)] for r in range(8)]) / np.sqrt(8)
    np.testing.assert_allclose(h, want, atol=1e-7)
    # An involution that keeps dot products, so Q·Kᵀ is unchanged when both are rotated.
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal((3, 5, 128)), rng.standard_normal((3, 7, 128))
    np.testing.assert_allclose(quant.hadamard(quant.hadamard(q)), q, atol=1e-5)
    np.testing.assert_allclose(quant.hadamard(q) @ quant.hadamard(k).swapaxes(1, 2),
                               q @ k.swapaxes(1, 2), atol=1e-4)
    # It spreads an outlier channel: the row's amax (which sets an int8 scale) drops.
    k[..., 5] *= 20
    assert np.abs(quant.hadamard(k)).max() < 0.5 * np.abs(k).max()
    with pytest.raises(ValueError, match="power-of-two"):
        quant.hadamard(np.ones((2, 96)))
