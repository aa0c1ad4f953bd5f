"""Sliding-window attention of the decode kernels on a GPU: O (and LSE where the kernel has it)
against qattn.reference (float64) of the quantized math (dequantized K/V) and of the unquantized
math, over contiguous and paged (shuffled pages) caches; windows of 0, 1, 63, 127 and 1000 keys
on the left (1000 longer than most sequences), right bounds 0 and -1 with 1 to 4 queries, one
split, splits merged in a cluster and by the combine kernels (narrow and wide), lengths 0, 1 and
not a multiple of the tile, int8 / fp8 / bf16 caches, int8 queries, sinks; and prefill (causal
with a left window, a right window without causal, int8 queries, fp8, the persistent grid).

The paged launches point the table entries of the pages wholly before the window's first key
tile at a spare page of NaN values and scales: the kernel skips those tiles, so any read of them
would show as NaN in O.

Skipped without torch + CUDA. Kernels come from ``qattn.build`` or, on a GPU machine without
attn-opt, from the PTX + metadata prebuilt into ``$QATTN_GPU_KERNELS`` by
``python python/tests/test_gpu_window.py --prebuild DIR``.
"""

import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if __name__ == "__main__":  # run as a script from a checkout: use its qattn
    sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import qattn  # noqa: E402

I8 = dict(kv_dtype="i8", granularity="per_token_head")
CASES = {
    # name: spec keywords (batch and kv_len dynamic, seq_lens)
    "win_i8_l127_r0_q2": dict(q_len=2, q_heads=16, kv_heads=2, head_dim=128, window=(127, 0),
                              sinks=True, lse=True, **I8),
    "win_i8_l63_rinf_q3": dict(q_len=3, q_heads=8, kv_heads=2, head_dim=64, window=(63, -1),
                               **I8),
    "win_i8_l0_causal_q4": dict(q_len=4, q_heads=8, kv_heads=2, head_dim=128, window=(0, -1),
                                causal=True, lse=True, **I8),
    "win_i8_l1_r0_q2": dict(q_len=2, q_heads=16, kv_heads=1, head_dim=128, window=(1, 0), **I8),
    "win_i8_l1000_r0_q1": dict(q_len=1, q_heads=8, kv_heads=2, head_dim=128, window=(1000, 0),
                               sinks=True, **I8),
    "win_bf16_l127_rinf_q2": dict(q_len=2, q_heads=8, kv_heads=2, head_dim=128,
                                  window=(127, -1), kv_dtype="bf16", lse=True),
    "win_bf16_l63_r0_q1": dict(q_len=1, q_heads=16, kv_heads=1, head_dim=128, window=(63, 0),
                               kv_dtype="bf16", sinks=True, lse=True),
    "win_fp8_l127_r0_q2": dict(q_len=2, q_heads=8, kv_heads=2, head_dim=64, window=(127, 0),
                               kv_dtype="f8E4M3FN", granularity="per_token", mode="fp8",
                               lse=True),
    "win_i8q_l63_r0_q3": dict(q_len=3, q_heads=16, kv_heads=1, head_dim=128, window=(63, 0),
                              q_dtype="i8", q_granularity="per_token_head", causal=True,
                              sinks=True, lse=True, **I8),
}
# (lengths of the batch, splits): 0 and 1 among them, lengths off the tile; 2 splits merge in a
# cluster, 3 and 20 through the combine kernels (narrow, wide: most of 20 splits get no tile of
# the window); 70 sequences of int8 queries take the two-CTA kernel.
LAUNCHES = [([0, 1, 37, 1000], "auto"), ([777, 1], 1), ([4096, 130], 2), ([3000, 0, 5], 3),
            ([4096], 20), ([2, 3, 129, 200], 2)]
EXTRA = {"win_i8q_l63_r0_q3": [([300] * 70, "auto")]}

PAGED = {
    "win_paged_i8_p16": dict(page_size=16, max_blocks=260, q_len=2, q_heads=16, kv_heads=2,
                             head_dim=128, window=(127, 0), sinks=True, lse=True, **I8),
    "win_paged_bf16_p64": dict(page_size=64, max_blocks=70, q_len=1, q_heads=8, kv_heads=2,
                               head_dim=128, window=(63, -1), kv_dtype="bf16", lse=True),
    "win_paged_fp8_p64": dict(page_size=64, max_blocks=70, q_len=2, q_heads=8, kv_heads=2,
                              head_dim=64, window=(1000, 0), kv_dtype="f8E4M3FN",
                              granularity="per_token", mode="fp8", lse=True),
}
PAGED_LAUNCHES = [([0, 1, 37, 200, 129, 1000], "auto"), ([513, 1, 64, 0], 2),
                  ([4100, 3], 3), ([4000], 20)]

# Prefill (Mistral's causal + left window; a right window without causal): the key tiles before
# each query chunk's first window start, and past its last query's right bound, are skipped.
PREFILL = {
    "win_prefill_bf16_causal_l127": dict(q_len=200, q_heads=8, kv_heads=2, head_dim=128,
                                         kv_dtype="bf16", causal=True, window=(127, -1)),
    "win_prefill_bf16_l64_r16": dict(q_len=100, q_heads=4, kv_heads=4, head_dim=64,
                                     kv_dtype="bf16", window=(64, 16)),
    "win_prefill_i8q_causal_l63": dict(q_len=130, q_heads=16, kv_heads=1, head_dim=128,
                                       q_dtype="i8", q_granularity="per_token_head",
                                       causal=True, window=(63, 0), **I8),
    "win_prefill_fp8_causal_l255": dict(q_len=150, q_heads=16, kv_heads=4, head_dim=128,
                                        kv_dtype="f8E4M3FN", granularity="per_block<128x128>",
                                        q_dtype="f8E4M3FN", q_granularity="per_block<64x128>",
                                        causal=True, window=(255, 0)),
    "win_prefill_persistent_l127": dict(q_len=130, q_heads=8, kv_heads=2, head_dim=128,
                                        kv_dtype="bf16", causal=True, window=(127, 0),
                                        schedule={"persistent": True}),
}
# Lengths of the batch: the whole cache, shorter than the queries, not a tile multiple.
PREFILL_LAUNCHES = [[1000, 300], [2000], [777, 250, 1000]]


def spec_for(name):
    if name in PREFILL:
        return qattn.attention("prefill", batch=None, kv_len=None, seq_lens=True, name=name,
                               **PREFILL[name])
    if name in PAGED:
        return qattn.attention("decode", batch=None, kv_len=None, seq_lens=True, num_pages=None,
                               name=name, **PAGED[name])
    return qattn.attention("decode", batch=None, kv_len=None, seq_lens=True, name=name,
                           **CASES[name])


def kernel_for(name):
    pre = os.environ.get("QATTN_GPU_KERNELS")
    if pre:
        return qattn.GpuDecodeKernel.from_files(Path(pre) / f"{name}.ptx")
    return qattn.build(spec_for(name))


if __name__ == "__main__":
    import gpu_prebuild
    gpu_prebuild.main("test_gpu_window.py",
                      ((n, spec_for(n)) for n in [*CASES, *PAGED, *PREFILL]))

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import numpy as np  # noqa: E402

from qattn import paged, reference  # noqa: E402
from test_gpu import block_rows, dequant, quantize, rel  # noqa: E402
from test_gpu_paged import make_pools, query_args  # noqa: E402
from test_gpu_sinks import check, sinks_for  # noqa: E402


def ref(q, k, v, lens, c, sinks):
    """(O, LSE) of qattn.reference with the case's window, as float32 CUDA tensors."""
    to_np = lambda x: x.float().cpu().numpy()
    o, lse = reference.attention(to_np(q), to_np(k), to_np(v), np.array(lens),
                                 causal=c.get("causal", False),
                                 sinks=None if sinks is None else to_np(sinks), return_lse=True,
                                 window=c["window"])
    return (torch.from_numpy(o).float().cuda(), torch.from_numpy(lse).float().cuda())


def test_metadata_states_the_window():
    kernel = kernel_for("win_i8_l127_r0_q2")
    assert kernel.problem["window"] == [127, 0]
    assert kernel.window == (127, 0)


@pytest.mark.parametrize("name,lens,splits",
                         [(n, l, s) for n in CASES for l, s in LAUNCHES + EXTRA.get(n, [])])
def test_window_matches_reference(name, lens, splits):
    c = CASES[name]
    kernel = kernel_for(name)
    b, kv_len = len(lens), max(max(lens), 1)
    g = torch.Generator(device="cuda").manual_seed(kv_len + b)
    q = torch.randn(b, c["q_len"], c["q_heads"], c["head_dim"], generator=g, device="cuda")
    k = torch.randn(b, kv_len, c["kv_heads"], c["head_dim"], generator=g, device="cuda")
    v = torch.randn(b, kv_len, c["kv_heads"], c["head_dim"], generator=g, device="cuda")
    k[..., 3] *= 20
    qb = q.to(torch.bfloat16)
    kc, ks = quantize(k, c["kv_dtype"], c.get("granularity"))
    vc, vs = quantize(v, c["kv_dtype"], c.get("granularity"))
    q_in, qargs, q_ref = query_args(c, qb)
    sinks = sinks_for(c, kv_len)
    kw = dict(qargs, seq_lens=torch.tensor(lens, dtype=torch.int32, device="cuda"),
              splits=splits)
    if sinks is not None:
        kw["sinks"] = sinks
    res = kernel(q_in, kc, vc, ks, vs, **kw)
    out, lse = res if c.get("lse") else (res, None)
    torch.cuda.synchronize()
    want_q = ref(q_ref, dequant(kc, ks), dequant(vc, vs), lens, c, sinks)
    want_u = ref(qb.float(), k, v, lens, c, sinks)
    check(c, out, lse, want_q, want_u, f"{name} {lens} {splits}")


def poison_skipped_pages(c, data, lens, tile_n):
    """Points the table entries of the pages wholly before each sequence's first window tile at
    a spare page whose K/V (bf16) or scales (8-bit) are NaN; returns the table to launch with."""
    page, left, sq = c["page_size"], c["window"][0], c["q_len"]
    host = data["host_table"]
    pools = data["pools"]
    used = {int(host[b, i]) for b, n in enumerate(lens)
            for i in range(int(paged.pages_needed([n], page)[0]))}
    spare = min(set(range(pools["k"].shape[0] - 1)) - used)  # not the last (clamped entries)
    if "k_scale" in pools:
        pools["k_scale"][spare] = float("nan")
        pools["v_scale"][spare] = float("nan")
    else:
        pools["k"][spare] = float("nan")
        pools["v"][spare] = float("nan")
    table = data["table"].clone()
    for b, n in enumerate(lens):
        first_tile = max(0, n - sq - left) // tile_n
        table[b, :first_tile * tile_n // page] = spare
    return table


@pytest.mark.parametrize("name,lens,splits",
                         [(n, l, s) for n in PAGED for l, s in PAGED_LAUNCHES])
def test_paged_window_matches_reference(name, lens, splits):
    c = PAGED[name]
    kernel = kernel_for(name)
    data = make_pools(c, lens, seed=len(lens))
    table = poison_skipped_pages(c, data, lens, int(kernel.schedule["tile_n"]))
    q_in, qargs, q_ref = query_args(c, data["q"])
    sinks = sinks_for(c, len(lens))
    p = data["pools"]
    kw = dict(qargs, seq_lens=torch.tensor(lens, dtype=torch.int32, device="cuda"),
              block_table=table, splits=splits)
    if sinks is not None:
        kw["sinks"] = sinks
    res = kernel(q_in, p["k"], p["v"], p.get("k_scale"), p.get("v_scale"), **kw)
    out, lse = res if c.get("lse") else (res, None)
    torch.cuda.synchronize()
    n = max(max(lens), 1)
    kd = dequant(data["kc"], data["ks"])[:, :n]
    vd = dequant(data["vc"], data["vs"])[:, :n]
    want_q = ref(q_ref, kd, vd, lens, c, sinks)
    check(c, out, lse, want_q, want_q, f"{name} {lens} {splits}")


@pytest.mark.parametrize("name,lens", [(n, l) for n in PREFILL for l in PREFILL_LAUNCHES])
def test_prefill_window_matches_reference(name, lens):
    c = PREFILL[name]
    kernel = kernel_for(name)
    b, kv_len = len(lens), max(lens)
    g = torch.Generator(device="cuda").manual_seed(kv_len + b)
    q = torch.randn(b, c["q_len"], c["q_heads"], c["head_dim"], generator=g, device="cuda")
    k = torch.randn(b, kv_len, c["kv_heads"], c["head_dim"], generator=g, device="cuda")
    v = torch.randn(b, kv_len, c["kv_heads"], c["head_dim"], generator=g, device="cuda")
    k[..., 3] *= 20
    qb = q.to(torch.bfloat16)
    gran = c.get("granularity")
    kc, ks = quantize(k, c["kv_dtype"], gran)
    vc, vs = quantize(v, c["kv_dtype"], gran)
    q_in, qargs, q_ref = qb, {}, qb.float()
    if c.get("q_dtype") in ("i8", "f8E4M3FN"):
        q_in, qs = quantize(qb.float(), c["q_dtype"], c["q_granularity"])
        qargs = {"q_scale": qs}
        q_ref = dequant(q_in, qs, rows=block_rows(c["q_granularity"]))
    out = kernel(q_in, kc, vc, ks, vs, seq_lens=torch.tensor(lens, dtype=torch.int32,
                                                              device="cuda"), **qargs)
    torch.cuda.synchronize()
    r = block_rows(gran)
    want_q = ref(q_ref, dequant(kc, ks, rows=r), dequant(vc, vs, rows=r), lens, c, None)[0]
    want_u = ref(qb.float(), k, v, lens, c, None)[0]
    assert not torch.isnan(out.float()).any()
    fp8 = c["kv_dtype"] == "f8E4M3FN"
    err_q, err_u, err_qu = rel(out, want_q), rel(out, want_u), rel(want_q, want_u)
    print(f"{name} {lens}: O rel err {err_q:.2e} quantized, {err_u:.2e} unquantized")
    assert err_q <= (5e-2 if fp8 else 1e-2), err_q
    assert err_u <= 1.05 * err_qu + (3e-2 if fp8 else 5e-3), (err_u, err_qu)
