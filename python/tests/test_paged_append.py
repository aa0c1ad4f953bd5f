"""The slot-mapped cache write on the CPU (``qattn.paged.append_slots``, the reference of
``attn.quantize.append_paged``): it stores what ``quantize_pages`` stores for every token, in any
row order, skipping negative and out-of-pool slots; its refusals; the ``qattn.quantize_paged``
spec through attn-opt (verifier, and the kernel's launch metadata where attn-opt is built).
"""

import numpy as np
import pytest

import qattn
from qattn import paged

FORMATS = [("i8", "per_token_head", True), ("i8", "per_token", True),
           ("i8", "per_group<32>", True), ("ui8", "per_token_head", False),
           ("i8", "per_group<64>", False), ("f8E4M3FN", "per_token_head", True),
           ("i8", "per_block<1 x 64>", True)]


def _pools(n_pages, page, h, d, dtype, granularity, symmetric):
    scale_shape = qattn.spec.scale_shape(granularity, [n_pages, page, h, d])
    pool = np.zeros((n_pages, page, h, d), np.float32 if dtype == "f8E4M3FN" else
                    (np.uint8 if dtype == "ui8" else np.int8))
    scales = np.zeros(scale_shape, np.float32)
    zeros = None if symmetric else np.zeros(scale_shape, pool.dtype)
    return pool, scales, zeros


@pytest.mark.parametrize("page", [16, 64])
@pytest.mark.parametrize("dtype,granularity,symmetric", FORMATS)
def test_slot_writes_equal_quantize_pages(dtype, granularity, symmetric, page):
    rng = np.random.default_rng(3)
    lens = np.array([0, 1, 37, 2 * page + 5])
    b, s, h, d = len(lens), int(lens.max()), 2, 128
    k = rng.standard_normal((b, s, h, d)).astype(np.float32) * 2
    k[:, :, 1, 7] = 30.0  # an outlier per row
    want = paged.quantize_pages(k, k, lens, page, dtype=dtype, granularity=granularity,
                                symmetric=symmetric, num_pages=12, seed=5)
    # vLLM's slot mapping of every token of the batch, rows shuffled, padded with -1 and with
    # slots past the pool (both skipped).
    src, slots = [], []
    for bi, n in enumerate(lens):
        for t in range(n):
            src.append(k[bi, t])
            slots.append(int(want.block_table[bi, t // page]) * page + t % page)
    src += [np.full((h, d), 9.0, np.float32)] * 3
    slots += [-1, 12 * page, 2**40]
    order = rng.permutation(len(src))
    src = np.stack(src)[order]
    slots = np.array(slots, np.int64)[order]
    pool, scales, zeros = _pools(12, page, h, d, dtype, granularity, symmetric)
    written = paged.append_slots(src, slots, pool, scales, zeros, dtype=dtype,
                                 granularity=granularity, symmetric=symmetric)
    assert written.sum() == lens.sum()
    flat = slots[written]
    rows = pool.reshape(12 * page, h, d)
    assert np.array_equal(rows[flat], want.k.reshape(12 * page, h, d)[flat].astype(rows.dtype))
    s_rows = scales.reshape((12 * page,) + scales.shape[2:])
    w_rows = want.k_scale.reshape((12 * page,) + want.k_scale.shape[2:])
    assert np.array_equal(s_rows[flat], w_rows[flat])
    if not symmetric:
        z_rows = zeros.reshape((12 * page,) + zeros.shape[2:])
        assert np.array_equal(z_rows[flat], want.k_zero.reshape(z_rows.shape)[flat])
    untouched = np.setdiff1d(np.arange(12 * page), flat)
    assert not rows[untouched].any() and not s_rows[untouched].any()


def test_static_scales_are_read_not_written():
    pool, _, _ = _pools(2, 16, 2, 64, "i8", "per_head", True)
    scales = np.array([0.5, 0.25], np.float32)
    x = np.ones((2, 2, 64), np.float32)
    paged.append_slots(x, np.array([3, 20]), pool, scales, dtype="i8", granularity="per_head")
    assert (pool[0, 3, 0] == 2).all() and (pool[0, 3, 1] == 4).all() and (pool[1, 4] != 0).all()
    assert scales.tolist() == [0.5, 0.25]


def test_append_slots_refusals():
    x = np.ones((2, 2, 64), np.float32)

    def run(**kw):
        a = dict(src=x, slot_mapping=np.array([0, 1]), dtype="i8", granularity="per_token_head",
                 symmetric=True)
        a.update(kw)
        pool, scales, zeros = _pools(2, 16, 2, 64, a["dtype"], a["granularity"], True)
        pool = a.pop("pool", pool)
        scales = a.pop("scales", scales)
        zeros = a.pop("zeros", None)
        return paged.append_slots(a.pop("src"), a.pop("slot_mapping"), pool, scales, zeros, **a)

    for kw, match in [
        (dict(slot_mapping=np.array([0, 0])), "one slot twice"),
        (dict(slot_mapping=np.array([0.0, 1.0])), "slot_mapping must be integers"),
        (dict(slot_mapping=np.array([0, 1, 2])), "slot_mapping must be integers of shape"),
        (dict(src=np.ones((2, 64))), r"src must be \[T, H, D\]"),
        (dict(pool=np.zeros((2, 16, 4, 64), np.int8)), "pool must be"),
        (dict(pool=np.zeros((2, 12, 2, 64), np.int8)), "page_size must be a power of two"),
        (dict(scales=np.zeros((2, 16), np.float32)), "scales must be a NumPy array of shape"),
        (dict(granularity="per_block<2 x 64>"), "cannot be appended token by token"),
        (dict(symmetric=False), "zeros are required"),
        (dict(dtype="bf16"), "unknown code dtype"),
        (dict(dtype="ui8"), "asymmetric only"),
    ]:
        with pytest.raises(ValueError, match=match):
            run(**kw)
    with pytest.raises(ValueError, match="e4m3 caches are symmetric only"):
        paged.append_slots(x, np.array([0, 1]), np.zeros((2, 16, 2, 64), np.float32),
                           np.zeros((2, 16, 2), np.float32), np.zeros((2, 16, 2), np.float32),
                           dtype="f8E4M3FN", symmetric=False)


def test_quantize_paged_spec_text_and_refusals():
    text = qattn.quantize_paged(tokens=None, num_pages=None, page_size=64, heads=8, head_dim=128,
                                dtype="ui8", symmetric=False, granularity="per_group<32>",
                                slot_dtype="i32", target="sm_90a").text
    assert "attn.quantize.append_paged ins(%src : memref<?x8x128xbf16>)" in text
    assert "slot_mapping(%slots : memref<?xi32>)" in text
    assert "outs(%dst, %scales : memref<?x64x8x128xui8>, memref<?x64x8x4xf32>)" in text
    assert "zeros(%zeros : memref<?x64x8x4xui8>)" in text
    assert "page_size = 64" in text
    for kw, match in [(dict(page_size=48), "page_size must be a power of two"),
                      (dict(slot_dtype="i16"), "unknown slot_dtype"),
                      (dict(heads=None), "heads must be a positive int")]:
        a = dict(tokens=None, num_pages=None, page_size=16, heads=8, head_dim=128) | kw
        with pytest.raises(ValueError, match=match):
            qattn.quantize_paged(**a)


def test_quantize_paged_spec_compiles_to_a_kernel_with_metadata():
    spec = qattn.quantize_paged(tokens=None, num_pages=None, page_size=16, heads=8, head_dim=128,
                                target="sm_90a", name="paged_append")
    meta = qattn.build(spec).meta
    p = meta["problem"]
    assert (p["kind"], p["page_size"], p["num_pages"], p["slot_dtype"]) == \
        ("quantize_append_paged", 16, -1, "i64")
    k = meta["kernels"][0]
    assert k["params"] == ["src", "slot_mapping", "dst", "scales", "zeros", "num_tokens",
                           "num_slots"]
    assert k["grid"][0] == "slot_quantize_ctas"
