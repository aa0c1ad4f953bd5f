"""Tests of the paged K/V cache on the host: the spec builder's paged form (checked by attn-opt),
qattn.paged (allocation, scatter, quantization into pages) and qattn.reference.paged_attention
against the contiguous reference."""

import json

import numpy as np
import pytest

import qattn
from qattn import paged, quant, reference

# Ragged lengths with 0 and 1, a partial last page and an exact multiple of the page.
LENS = [0, 1, 37, 64, 16, 129]


def _cache(batch=len(LENS), seq=130, hkv=2, d=64, seed=0):
    rng = np.random.default_rng(seed)
    k = rng.standard_normal((batch, seq, hkv, d)).astype(np.float32)
    v = rng.standard_normal((batch, seq, hkv, d)).astype(np.float32)
    return quant.round_bf16(k), quant.round_bf16(v)


def _queries(sq=3, hq=8, d=64, batch=len(LENS), seed=1):
    return np.random.default_rng(seed).standard_normal((batch, sq, hq, d)).astype(np.float32)


# --- spec builder -----------------------------------------------------------------------------

def test_paged_spec_verifies_and_schedules():
    spec = qattn.attention("decode", batch=16, q_len=3, kv_len=8192, q_heads=16, kv_heads=1,
                           head_dim=128, kv_dtype="i8", granularity="per_token_head",
                           seq_lens=True, page_size=16, num_pages=8192)
    text = spec.text
    assert "memref<8192x16x1x128xi8>" in text  # the pool of pages
    assert "k_scale(%ks : memref<8192x16x1xf32>)" in text  # scales per page
    assert "block_table(%pages : memref<16x512xi32>)" in text  # ceil(8192 / 16) pages each
    assert "page_size = 16" in text
    out = qattn.compile(spec, passes=("attn-normalize", "attn-select-schedule")).output
    assert "block_table(" in out and "split_kv = 8" in out  # 8192 keys per sequence


def test_paged_spec_dynamic_and_per_block():
    spec = qattn.attention("prefill", batch=None, q_len=None, kv_len=None, q_heads=8,
                           kv_heads=2, head_dim=128, kv_dtype="f8E4M3FN", q_dtype="bf16",
                           granularity="per_block<16x128>", causal=True, page_size=64)
    assert "memref<?x64x2x128xf8E4M3FN>" in spec.text
    assert "memref<?x4x2x1xf32>" in spec.text  # 64 / 16 blocks of rows per page
    assert "block_table(%pages : memref<?x?xi32>)" in spec.text
    assert qattn.compile(spec, passes=()).output


def test_paged_spec_refusals():
    base = dict(batch=2, q_len=1, kv_len=256, q_heads=8, kv_heads=2, head_dim=128)
    with pytest.raises(qattn.CompileError, match="page_size must be a power of two, got 48"):
        qattn.compile(qattn.attention("decode", page_size=48, **base), passes=())
    spec = qattn.attention("decode", kv_dtype="i8", granularity="per_block<32x128>",
                           page_size=16, **base)
    with pytest.raises(qattn.CompileError, match="straddles pages of 16 tokens"):
        qattn.compile(spec, passes=())
    with pytest.raises(qattn.CompileError,
                       match="not supported yet by convert-attn-to-nvvm: a paged K/V cache"):
        qattn.compile(qattn.attention("prefill", page_size=4, **base), emit="ptx")
    # Prefill reads paged caches (chunked prefill): its kernel takes the block table.
    pf = qattn.compile(qattn.attention("prefill", page_size=16, **base), emit="ptx")
    assert json.loads(pf.launch)["paged"]["page_size"] == 16
    with pytest.raises(ValueError, match="give page_size too"):
        qattn.attention("decode", num_pages=4, **base)
    with pytest.raises(ValueError, match="page_size"):
        qattn.attention("decode", page_size=0, **base)


def test_paged_decode_compiles_with_the_block_table():
    spec = qattn.attention("decode", batch=None, q_len=1, kv_len=None, q_heads=16, kv_heads=2,
                           head_dim=128, kv_dtype="i8", granularity="per_token_head",
                           seq_lens=True, page_size=16, max_blocks=64)
    res = qattn.compile(spec, emit="ptx")
    meta = json.loads(res.launch)
    assert meta["paged"] == {"page_size": 16, "max_blocks": 64, "num_pages": -1}
    assert meta["problem"]["kv_len"] == 64 * 16  # max_blocks · P: what the kernel splits by
    decode = meta["kernels"][0]
    assert decode["params"][-2:] == ["block_table", "num_slots"]
    assert meta["tensor_maps"]["k"]["box"] == [128, 1, 16, 1]  # one page per box (P < tile_n)
    assert ".param .u64" in res.output and "cp.async.bulk.tensor" in res.output
    # The contiguous form of the same spec takes no table.
    flat = qattn.attention("decode", batch=None, q_len=1, kv_len=None, q_heads=16, kv_heads=2,
                           head_dim=128, kv_dtype="i8", granularity="per_token_head",
                           seq_lens=True)
    flat_meta = json.loads(qattn.compile(flat, emit="ptx").launch)
    assert "paged" not in flat_meta and "block_table" not in flat_meta["kernels"][0]["params"]


class T:
    """A stand-in for a CUDA tensor: what GpuDecodeKernel's argument checks (_paged, _ragged,
    expect_tensor) read of one — shape, dtype, layout, address."""
    is_cuda = True

    def __init__(self, *shape, dtype="int32"):
        self.shape, self.dtype = shape, f"torch.{dtype}"

    def dim(self):
        return len(self.shape)

    def is_contiguous(self):
        return True

    def data_ptr(self):
        return 4096


class FakeTorch:
    Tensor = T


def test_paged_decode_compiles_with_a_dynamic_max_blocks():
    """block_table memref<?x?xi32>: no kernel parameter of its own (kv_len is max_blocks · P),
    metadata max_blocks -1 and a dynamic kv_len; GpuDecodeKernel reads the launch's max_blocks
    from the table (checked here with tensors that only have shapes)."""
    spec = qattn.attention("decode", batch=None, q_len=1, kv_len=None, q_heads=16, kv_heads=2,
                           head_dim=128, kv_dtype="i8", granularity="per_token_head",
                           seq_lens=True, page_size=16)
    assert "block_table(%pages : memref<?x?xi32>)" in spec.text
    res = qattn.compile(spec, emit="ptx")
    meta = json.loads(res.launch)
    assert meta["paged"] == {"page_size": 16, "max_blocks": -1, "num_pages": -1}
    assert meta["problem"]["kv_len"] == -1
    assert meta["kernels"][0]["params"][-2:] == ["block_table", "num_slots"]
    assert "kv_len" in meta["kernels"][0]["params"]
    kern = qattn.GpuDecodeKernel(res.output, meta)

    b, k = 3, T(40, 16, 2, 128, dtype="int8")  # three sequences
    kv_len, pool, ptr = kern._paged(b, k, T(3, 7), FakeTorch)
    assert ptr == 4096
    assert (kv_len, pool) == (7 * 16, (40, 16))  # the launch's max_blocks · P
    assert kern._paged(b, k, T(3, 300), FakeTorch)[0] == 300 * 16
    with pytest.raises(qattn.KernelArgumentError, match="max_blocks >= 1"):
        kern._paged(b, k, T(3, 0), FakeTorch)
    with pytest.raises(qattn.KernelArgumentError, match="block_table has shape"):
        kern._paged(b, k, T(2, 7), FakeTorch)  # not one row per sequence


# --- layout -----------------------------------------------------------------------------------

def test_allocate_shuffles_and_covers_every_page_once():
    table, pages = paged.allocate(LENS, 16, seed=3)
    need = paged.pages_needed(LENS, 16)
    assert need.tolist() == [0, 1, 3, 4, 1, 9]
    assert pages == need.sum() and table.shape == (len(LENS), 9) and table.dtype == np.int32
    used = np.concatenate([table[b, :n] for b, n in enumerate(need)])
    assert sorted(used.tolist()) == list(range(pages))
    assert (np.diff(used) != 1).any()  # shuffled, not in order
    flat, _ = paged.allocate(LENS, 16, shuffle=False)
    assert np.concatenate([flat[b, :n] for b, n in enumerate(need)]).tolist() == list(range(pages))


def test_allocate_refusals():
    with pytest.raises(ValueError, match="power of two"):
        paged.allocate([4], 24)
    with pytest.raises(ValueError, match="power of two"):
        paged.allocate([4], 512)
    with pytest.raises(ValueError, match="the pool has 2"):
        paged.allocate([40], 16, num_pages=2)
    with pytest.raises(ValueError, match="max_blocks 2 is below"):
        paged.allocate([40], 16, max_blocks=2)
    with pytest.raises(ValueError, match="non-negative"):
        paged.allocate([-1], 16)


def test_paginate_then_gather_gives_the_tokens_back():
    k, _ = _cache()
    table, pages = paged.allocate(LENS, 16, num_pages=40, seed=5)
    pool = paged.paginate(k, LENS, table, pages, 16)
    assert pool.shape == (40, 16, 2, 64)
    for b, rows in enumerate(reference.gather(pool, table, LENS)):
        assert rows.shape == (LENS[b], 2, 64)
        np.testing.assert_array_equal(rows, k[b, :LENS[b]])
    bad = table.copy()
    bad[5, 0] = 40
    with pytest.raises(ValueError, match="outside the pool of 40"):
        reference.gather(pool, bad, LENS)


# --- reference attention ----------------------------------------------------------------------

@pytest.mark.parametrize("page_size", [1, 16, 64, 256])
@pytest.mark.parametrize("causal", [False, True])
def test_paged_reference_equals_contiguous(page_size, causal):
    k, v = _cache()
    q = _queries()
    table, pages = paged.allocate(LENS, page_size, num_pages=None, seed=page_size)
    # Entries past a sequence's pages must not be read: they are poisoned below.
    kp = paged.paginate(k, LENS, table, pages, page_size)
    vp = paged.paginate(v, LENS, table, pages, page_size)
    need = paged.pages_needed(LENS, page_size)
    for b, n in enumerate(need):
        table[b, n:] = 10 ** 6
    want = reference.attention(q, k, v, LENS, causal=causal)
    got = reference.paged_attention(q, kp, vp, table, LENS, causal=causal)
    np.testing.assert_array_equal(got, want)
    assert not got[0].any()  # length 0: no keys, zeros
    # length 1: every query head reads the one key's value of its KV head (non-causal, and
    # causal for the last query only).
    np.testing.assert_allclose(got[1, -1], v[1, 0, np.arange(8) // 4], rtol=1e-12)


def test_contiguous_reference_matches_softmax_by_hand():
    k, v = _cache(batch=1, seq=5, hkv=1, d=4, seed=7)
    q = _queries(sq=2, hq=2, d=4, batch=1, seed=8)
    got = reference.attention(q, k, v, [4], causal=True, softmax_scale=0.5)
    for s in range(2):
        n = 4 - 2 + s + 1  # keys seen by query s
        for h in range(2):
            logits = 0.5 * k[0, :n, 0].astype(np.float64) @ q[0, s, h]
            p = np.exp(logits - logits.max())
            np.testing.assert_allclose(got[0, s, h], (p / p.sum()) @ v[0, :n, 0], rtol=1e-12)


def test_reference_sinks_and_lse_match_softmax_by_hand():
    k, v = _cache(batch=2, seq=5, hkv=1, d=4, seed=7)
    q = _queries(sq=2, hq=2, d=4, batch=2, seed=8)
    sinks = np.array([0.7, -3.0])
    out, lse = reference.attention(q, k, v, [4, 0], causal=True, softmax_scale=0.5, sinks=sinks,
                                   return_lse=True)
    assert lse.shape == (2, 2, 2)
    for s in range(2):
        n = 4 - 2 + s + 1
        for h in range(2):
            logits = 0.5 * k[0, :n, 0].astype(np.float64) @ q[0, s, h]
            total = np.log(np.exp(logits).sum() + np.exp(sinks[h]))
            np.testing.assert_allclose(lse[0, s, h], total, rtol=1e-12)
            np.testing.assert_allclose(out[0, s, h], np.exp(logits - total) @ v[0, :n, 0],
                                       rtol=1e-12)
    # No keys: O is 0 and the log-sum-exp is the sink's logit alone (-inf without sinks).
    assert not out[1].any()
    np.testing.assert_array_equal(lse[1], np.broadcast_to(sinks, (2, 2)))
    plain, plain_lse = reference.attention(q, k, v, [4, 0], causal=True, return_lse=True)
    assert np.isneginf(plain_lse[1]).all() and np.isfinite(plain_lse[0]).all()
    np.testing.assert_array_equal(plain, reference.attention(q, k, v, [4, 0], causal=True))
    with pytest.raises(ValueError, match="one logit per query head"):
        reference.attention(q, k, v, [4, 0], sinks=sinks[:1])


def test_reference_softcap_by_hand():
    k, v = _cache(batch=1, seq=5, hkv=1, d=4, seed=7)
    q = 10 * _queries(sq=1, hq=1, d=4, batch=1, seed=8)
    got = reference.attention(q, k, v, [5], softmax_scale=0.5, softcap=2.0)
    logits = 2.0 * np.tanh(0.5 * k[0, :, 0].astype(np.float64) @ q[0, 0, 0] / 2.0)
    p = np.exp(logits - logits.max())
    np.testing.assert_allclose(got[0, 0, 0], (p / p.sum()) @ v[0, :, 0], rtol=1e-12)
    assert not np.allclose(got, reference.attention(q, k, v, [5], softmax_scale=0.5))


def test_paged_reference_sinks_and_lse_equal_contiguous():
    k, v = _cache()
    q = _queries()
    sinks = np.linspace(-2, 2, 8)
    table, pages = paged.allocate(LENS, 16, num_pages=None, seed=3)
    kp = paged.paginate(k, LENS, table, pages, 16)
    vp = paged.paginate(v, LENS, table, pages, 16)
    want = reference.attention(q, k, v, LENS, causal=True, sinks=sinks, return_lse=True)
    got = reference.paged_attention(q, kp, vp, table, LENS, causal=True, sinks=sinks,
                                    return_lse=True)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("dtype,granularity,symmetric", [
    ("i8", "per_token_head", True),
    ("i8", "per_token", True),
    ("ui8", "per_token_head", False),
    ("i8", "per_group<32>", False),
    ("f8E4M3FN", "per_block<16x64>", True),
    ("f8E4M3FN", "per_token_head", True),
    ("bf16", None, True),
])
@pytest.mark.parametrize("page_size", [16, 64])
def test_quantized_pages_equal_contiguous_quantization(dtype, granularity, symmetric, page_size):
    """Token-local scales per page are the scales of the contiguous cache: the paged reference over
    quantize_pages equals the contiguous reference over the contiguously quantized cache."""
    k, v = _cache()
    q = _queries()
    c = paged.quantize_pages(k, v, LENS, page_size, dtype=dtype, granularity=granularity,
                             symmetric=symmetric, seed=11)
    assert c.k.shape == (int(paged.pages_needed(LENS, page_size).sum()), page_size, 2, 64)
    fmt = paged._FORMATS[dtype]
    if fmt == "bf16":
        assert c.k_scale is None
        kd, vd = quant.round_bf16(k), quant.round_bf16(v)
    else:
        assert c.k_scale.shape[0] == c.num_pages  # one scale slab per page
        kd, vd = np.zeros_like(k), np.zeros_like(v)
        for b, n in enumerate(LENS):
            for src, dst in ((k, kd), (v, vd)):
                dst[b, :n] = quant.fake_quantize(src[b, :n], fmt, granularity,
                                                 symmetric=symmetric)
    want = reference.attention(q, kd, vd, LENS, causal=True)
    got = reference.paged_attention(q, c.k, c.v, c.block_table, c.seq_lens, causal=True,
                                    **c.reference_kwargs())
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    assert np.abs(got - reference.attention(q, k, v, LENS, causal=True)).max() < 0.1


def test_static_scales_keep_their_shape():
    k, v = _cache()
    c = paged.quantize_pages(k, v, LENS, 16, dtype="i8", granularity="per_head")
    assert c.k_scale.shape == (2,) and c.v_scale.shape == (2,)
    q = _queries()
    got = reference.paged_attention(q, c.k, c.v, c.block_table, c.seq_lens,
                                    **c.reference_kwargs())
    kd = quant.dequantize(quant.quantize(k.reshape(-1, 2, 64), "i8", "per_head", c.k_scale)[0],
                          c.k_scale, "per_head").reshape(k.shape)
    vd = quant.dequantize(quant.quantize(v.reshape(-1, 2, 64), "i8", "per_head", c.v_scale)[0],
                          c.v_scale, "per_head").reshape(v.shape)
    np.testing.assert_allclose(got, reference.attention(q, kd, vd, LENS), rtol=1e-6, atol=1e-6)


def test_quantize_pages_refusals():
    k, v = _cache()
    with pytest.raises(ValueError, match="straddles pages of 16 tokens"):
        paged.quantize_pages(k, v, LENS, 16, granularity="per_block<32x64>")
    with pytest.raises(ValueError, match="asymmetric only"):
        paged.quantize_pages(k, v, LENS, 16, dtype="ui8")
    with pytest.raises(ValueError, match="unknown cache dtype"):
        paged.quantize_pages(k, v, LENS, 16, dtype="i4")
    with pytest.raises(ValueError, match=r"one length in \[0, 130\]"):
        paged.quantize_pages(k, v, [131] + LENS[1:], 16)
    with pytest.raises(ValueError, match="seq_lens must be in"):
        reference.paged_attention(_queries(), np.zeros((4, 16, 2, 64)), np.zeros((4, 16, 2, 64)),
                                  np.zeros((6, 1), np.int32), [17] * 6)


def test_ragged_prefill_compiles_and_checks_its_arguments():
    """ragged=True (cu_seqlens_q): q and out [1, T, Hq, D], the kernel's last parameters
    cu_seqlens_q and total_q, metadata problem.ragged; decode refuses it. GpuDecodeKernel's
    argument checks run before any launch (tensors that only have shapes)."""
    with pytest.raises(ValueError, match="ragged .* is a prefill layout"):
        qattn.attention("decode", batch=None, q_len=1, kv_len=None, q_heads=16, kv_heads=1,
                        head_dim=128, ragged=True)
    spec = qattn.attention("prefill", batch=None, q_len=None, kv_len=None, q_heads=16,
                           kv_heads=1, head_dim=128, seq_lens=True, page_size=16,
                           max_blocks=80, causal=True, ragged=True)
    assert "cu_seqlens_q(%cu_q : memref<?xi32>)" in spec.text
    assert "outs(%o : memref<1x?x16x128xbf16>)" in spec.text
    meta = json.loads(qattn.compile(spec, emit="ptx").launch)
    assert meta["problem"]["ragged"] is True and meta["problem"]["q_len"] == -1
    assert meta["kernels"][0]["params"][-4:] == ["block_table", "num_slots", "cu_seqlens_q",
                                                 "total_q"]
    unpacked = qattn.attention("prefill", batch=None, q_len=None, kv_len=None, q_heads=16,
                               kv_heads=1, head_dim=128, seq_lens=True)
    assert "ragged" not in json.loads(qattn.compile(unpacked, emit="ptx").launch)["problem"]

    res = qattn.compile(spec, emit="ptx")
    kern = qattn.GpuDecodeKernel(res.output, json.loads(res.launch))
    q = T(1, 300, 16, 128, dtype="bfloat16")
    assert kern._ragged(q, T(5), 128, FakeTorch) == (4, 300, 128)
    with pytest.raises(qattn.KernelArgumentError, match="are required"):
        kern._ragged(q, None, None, FakeTorch)
    with pytest.raises(qattn.KernelArgumentError, match=r"as \[1, T, Hq, D\]"):
        kern._ragged(T(2, 150, 16, 128, dtype="bfloat16"), T(3), 128, FakeTorch)
    with pytest.raises(qattn.KernelArgumentError, match="max_seqlen_q must be an int"):
        kern._ragged(q, T(5), 0, FakeTorch)
    with pytest.raises(qattn.KernelArgumentError, match="cu_seqlens_q has dtype"):
        kern._ragged(q, T(5, dtype="int64"), 8, FakeTorch)
    with pytest.raises(qattn.KernelArgumentError, match=r"int32 \[B \+ 1\] with B >= 1"):
        kern._ragged(q, T(1), 8, FakeTorch)
