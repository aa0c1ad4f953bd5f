"""MLA decode on the CPU side: the 656-byte FP8 token format (qattn.mla.pack_fp8 / unpack_fp8)
against its error bound and layout, the float64 reference's conventions (sparse = dense over the
same keys, skipped entries, causal limit, lengths, empty rows), and the sm_90a build path (spec →
PTX + launch metadata → GpuMLAKernel) with its argument checks. The kernel itself runs in
scripts/gpu-mla.py check (test/Integration/GPU/mla-grid.test)."""

import numpy as np
import pytest

import qattn
from qattn import mla, quant
from qattn.spec import mla_decode


@pytest.fixture(autouse=True)
def cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("QATTN_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "qcache"))


def test_token_bytes():
    assert mla.token_bytes() == 656
    assert mla.token_bytes(512, 64, 64) == 512 + 32 + 128


def test_pack_layout_and_bound():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 7, 576)).astype(np.float32)
    x[0, 0, :128] = 0          # an all-zero tile: minimum scale, zero codes
    x[1, 2, 300] = 5e3         # an outlier inflates only its own tile's scale
    x[2, 3, 5] = np.nan        # NaN → 0; inf saturates and stays out of the scale
    x[2, 3, 6] = np.inf
    p = mla.pack_fp8(x)
    assert p.shape == (3, 7, 656) and p.dtype == np.uint8
    scales = p[..., 512:528].copy().view(np.float32)
    assert scales[0, 0, 0] == np.float32(1e-8)
    finite = np.where(np.isfinite(x), x, 0)
    tiles = np.abs(finite[..., :512]).reshape(3, 7, 4, 128).max(-1)
    want = np.maximum(tiles / 448, 1e-8).astype(np.float32)
    np.testing.assert_array_equal(scales, want)
    y = mla.unpack_fp8(p)
    # RoPE: bf16-rounded, byte for byte.
    np.testing.assert_array_equal(y[..., 512:], quant.round_bf16(x[..., 512:]))
    # e4m3: within half a spacing (1/16 of the value) or the subnormal step.
    err = np.abs(y[..., :512] - finite[..., :512])
    step = np.repeat(scales, 128, axis=-1)
    bound = np.maximum(np.abs(finite[..., :512]) / 16, step * 2.0 ** -10)
    fin = np.isfinite(x[..., :512])
    assert (err[fin] <= bound[fin] * (1 + 1e-6)).all()
    assert y[2, 3, 5] == 0 and y[2, 3, 6] == 448 * scales[2, 3, 0]
    assert y[1, 2, 300] == pytest.approx(5e3, rel=1 / 16)


def _dense_softmax(q, k, dv, scale):
    logits = scale * q @ k.T
    p = np.exp(logits - logits.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ k[:, :dv]


def test_reference_sparse_equals_dense_over_same_keys():
    rng = np.random.default_rng(2)
    b, sq, h, t, dv = 2, 2, 4, 50, 16
    q = rng.standard_normal((b, sq, h, 24))
    kv = rng.standard_normal((b, t, 24))
    idx = np.tile(np.arange(t, dtype=np.int32), (b, sq, 1))
    dense = mla.reference(q, kv, dv)
    sparse = mla.reference(q, kv, dv, indices=idx)
    np.testing.assert_allclose(sparse, dense, rtol=1e-12)
    # Invalid and out-of-range entries are skipped; a repeated key counts twice.
    idx2 = np.array([[[3, -1, 60, 3, 7]] * sq] * b, np.int32)
    out = mla.reference(q, kv, dv, indices=idx2, softmax_scale=0.5)
    want = _dense_softmax(q[1, 0], kv[1, [3, 3, 7]], dv, 0.5)
    np.testing.assert_allclose(out[1, 0], want, rtol=1e-12)


def test_reference_causal_lengths_and_empty():
    rng = np.random.default_rng(3)
    b, sq, h, t, dv = 3, 2, 2, 10, 8
    q = rng.standard_normal((b, sq, h, 12))
    kv = rng.standard_normal((b, t, 12))
    lens = np.array([10, 4, 0], np.int32)
    out = mla.reference(q, kv, dv, seq_lens=lens, causal=True, softmax_scale=1.0)
    # batch 1 (length 4), query token 0 of 2 sees keys 0..2; token 1 sees 0..3.
    np.testing.assert_allclose(out[1, 0], _dense_softmax(q[1, 0], kv[1, :3], dv, 1.0), rtol=1e-12)
    np.testing.assert_allclose(out[1, 1], _dense_softmax(q[1, 1], kv[1, :4], dv, 1.0), rtol=1e-12)
    assert (out[2] == 0).all()  # no keys → 0


def test_spec_text_and_schedule():
    text = mla_decode(batch=None, sq=2, heads=128, kv_len=None, topk=2048).text
    assert "indices(%idx : memref<?x2x2048xi32>)" in text
    assert "kv_quant = #attn.quant<f8E4M3FN, per_block<1 x 128>>" in text
    dense = mla_decode(batch=1, sq=1, heads=64, kv_len=100, sparse=False, fp8=False,
                       causal=True, crossover=False).text
    assert "indices" not in dense and "memref<1x100x576xbf16>" in dense and "causal" in dense


def test_build_gives_mla_kernel():
    k = qattn.build(mla_decode(batch=None, sq=None, heads=128, kv_len=None, topk=None))
    from qattn.gpu_mla import GpuMLAKernel
    assert isinstance(k, GpuMLAKernel)
    assert k.schedule["crossover"] is True and k.kernel["cluster"] == [2, 1, 1]
    assert k.problem["token_bytes"] == 656 and k.problem["topk"] == -1
    assert k.kernel["grid"] == [2, "sq", "batch"]
    assert "st.async.shared::cluster" in k.ptx and ".reqnctapercluster 2, 1, 1" in k.ptx
    assert "GpuMLAKernel" in repr(k)
    k1 = qattn.build(mla_decode(batch=None, sq=1, heads=64, kv_len=None, topk=None))
    assert k1.schedule["crossover"] is False and k1.kernel["cluster"] == [1, 1, 1]


def test_refused_variant_is_compile_error():
    # A 64-value tile scale is a valid spec, but the kernel converts 128-value tiles only.
    text = mla_decode(batch=1, sq=1, heads=64, kv_len=16, topk=8, quant_tile=64).text
    with pytest.raises(qattn.CompileError) as info:
        qattn.build(text)
    assert "tile scales over 64 values" in str(info.value)


def test_gpu_kernel_checks_arguments():
    torch = pytest.importorskip("torch")
    k = qattn.build(mla_decode(batch=None, sq=2, heads=128, kv_len=None, topk=64))
    q = torch.zeros(1, 2, 128, 576, dtype=torch.bfloat16)
    kv = torch.zeros(1, 10, 656, dtype=torch.uint8)
    with pytest.raises(qattn.KernelArgumentError, match="torch CUDA tensor"):
        k(q, kv, torch.zeros(1, 2, 64, dtype=torch.int32))
    with pytest.raises(qattn.KernelArgumentError, match="sparse: pass indices"):
        k(q, kv)
    with pytest.raises(qattn.KernelArgumentError, match="compiled for sq 2"):
        k(torch.zeros(1, 3, 128, 576, dtype=torch.bfloat16), kv)


def _mla_tokens(rng, b, s):
    """[B, S, 576] f32 latent tokens: Gaussian, an outlier, an all-zero tile, ±inf and NaN
    (in the e4m3 part and in the RoPE part)."""
    x = rng.standard_normal((b, s, 576)).astype(np.float32)
    x[0, 0, 130] = 900.0
    x[0, min(1, s - 1), :128] = 0
    x[-1, -1, 7], x[-1, -1, 300], x[-1, -1, 11] = np.inf, -np.inf, np.nan
    x[-1, -1, 520] = np.nan
    x[0, 0, 200] = -1e-7  # rounds to -0 in e4m3: code 0x80
    return x


@pytest.mark.parametrize("src_dtype", ["f32", "f16", "bf16"])
def test_cpu_mla_quantize_matches_pack_fp8(src_dtype):
    from qattn.cpu import host_isa
    rng = np.random.default_rng(4)
    b, s, cap = 3, 4, 9
    x = _mla_tokens(rng, b, s)
    if src_dtype == "f32":
        arr, vals = x, x
    elif src_dtype == "f16":
        arr = x.astype(np.float16)
        vals = arr.astype(np.float32)
    else:
        vals = quant.round_bf16(x)
        arr = (np.ascontiguousarray(vals).view(np.uint32) >> 16).astype(np.uint16)
    lib = qattn.build(qattn.spec.mla_quantize(batch=None, tokens=None, capacity=None,
                                              src_dtype=src_dtype, target=host_isa()))
    pos = np.array([0, 6, -2], np.int32)  # batch 1 overflows the cache, batch 2 starts before it
    cache = np.full((b, cap, 656), 77, np.uint8)
    lib.mla_quantize(arr, pos, cache.view(np.int8))
    want = mla.pack_fp8(vals)
    for bi in range(b):
        for i in range(s):
            r = pos[bi] + i
            if 0 <= r < cap:
                np.testing.assert_array_equal(cache[bi, r], want[bi, i], err_msg=f"b{bi} token {i}")
        written = {pos[bi] + i for i in range(s)}
        untouched = [r for r in range(cap) if r not in written]
        assert (cache[bi, untouched] == 77).all()


def test_cpu_mla_quantize_other_tile():
    # The CPU kernel takes any tile dividing Dv (the GPU kernel 128 only).
    from qattn.cpu import host_isa
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 2, 576)).astype(np.float32)
    lib = qattn.build(qattn.spec.mla_quantize(batch=1, tokens=2, capacity=2, src_dtype="f32",
                                              quant_tile=64, target=host_isa()))
    cache = np.zeros((1, 2, 672), np.uint8)
    lib.mla_quantize(x, np.zeros(1, np.int32), cache.view(np.int8))
    np.testing.assert_array_equal(cache, mla.pack_fp8(x, tile=64))


def test_gpu_mla_quantize_build():
    k = qattn.build(qattn.spec.mla_quantize(batch=None, tokens=None, capacity=None))
    from qattn.gpu_mla import GpuMLAQuantizeKernel
    assert isinstance(k, GpuMLAQuantizeKernel)
    assert k.problem["token_bytes"] == 656 and k.kernel["grid"] == ["token_ctas", 1, 1]
    assert "cvt.rn.satfinite.e4m3x2.f32" in k.ptx
    with pytest.raises(qattn.CompileError, match="1 x 128 tiles only"):
        qattn.build(qattn.spec.mla_quantize(batch=1, tokens=1, capacity=4, quant_tile=64))
