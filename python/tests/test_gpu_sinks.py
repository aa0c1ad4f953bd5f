"""Attention sinks, the log-sum-exp output and logit soft-capping of the decode kernels on a GPU:
O and LSE against
qattn.reference (float64) of the quantized math (dequantized K/V) and of the unquantized math,
over contiguous and paged (shuffled pages) caches, one split, splits merged in a cluster and by
the combine kernels (narrow and wide), lengths 0, 1 and not a multiple of the tile.

Skipped without torch + CUDA. Kernels come from ``qattn.build`` or, on a GPU machine without
attn-opt, from the PTX + metadata prebuilt into ``$QATTN_GPU_KERNELS`` by
``python python/tests/test_gpu_sinks.py --prebuild DIR``.
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

CASES = {
    # name: spec keywords (batch and kv_len dynamic)
    "sl_i8_gqa": dict(q_len=2, q_heads=16, kv_heads=2, head_dim=128, kv_dtype="i8",
                      granularity="per_token_head", causal=True, seq_lens=True, sinks=True,
                      lse=True),
    "sl_bf16_mqa": dict(q_len=1, q_heads=16, kv_heads=1, head_dim=128, kv_dtype="bf16",
                        seq_lens=True, sinks=True, lse=True),
    "sl_fp8_gqa_lse": dict(q_len=1, q_heads=8, kv_heads=2, head_dim=64, kv_dtype="f8E4M3FN",
                           granularity="per_token", mode="fp8", seq_lens=True, lse=True),
    "sl_i8q_mqa": dict(q_len=3, q_heads=16, kv_heads=1, head_dim=128, kv_dtype="i8",
                       granularity="per_token_head", q_dtype="i8",
                       q_granularity="per_token_head", causal=True, seq_lens=True, sinks=True,
                       lse=True),
    "sl_i8_gqa_sinks": dict(q_len=1, q_heads=8, kv_heads=2, head_dim=64, kv_dtype="i8",
                            granularity="per_token_head", seq_lens=True, sinks=True),
    # soft-capped logits (a cap that the ×20 outlier channel's logits reach)
    "sl_i8_softcap": dict(q_len=2, q_heads=16, kv_heads=2, head_dim=128, kv_dtype="i8",
                          granularity="per_token_head", causal=True, seq_lens=True, sinks=True,
                          lse=True, softcap=5.0),
    "sl_bf16_softcap": dict(q_len=1, q_heads=8, kv_heads=2, head_dim=128, kv_dtype="bf16",
                            seq_lens=True, softcap=3.0),
}
# (lengths of the batch, splits): 0 and 1 among them, lengths off the tile; 2 splits merge in a
# cluster, 3 and 20 through the combine kernels (narrow, wide); 70 sequences of int8 queries
# take the two-CTA kernel.
LAUNCHES = [([0, 1, 37, 1000], "auto"), ([777, 1], 1), ([4096, 130], 2), ([3000, 0, 5], 3),
            ([4096], 20)]
EXTRA = {"sl_i8q_mqa": [([300] * 70, "auto")]}

# A paged case: int8 pages of 16 tokens, shuffled, with sinks and lse.
PAGED = {"sl_paged_i8_p16": dict(page_size=16, max_blocks=260, q_len=2, q_heads=16,
                                 kv_heads=2, head_dim=128, kv_dtype="i8",
                                 granularity="per_token_head", causal=True, sinks=True,
                                 lse=True)}
PAGED_LAUNCHES = [([0, 1, 37, 200, 129, 1000], "auto"), ([513, 1, 64, 0], 2),
                  ([4100, 3], 3)]


def spec_for(name):
    if name in PAGED:
        return qattn.attention("decode", batch=None, kv_len=None, seq_lens=True, num_pages=None,
                               name=name, **PAGED[name])
    return qattn.attention("decode", batch=None, kv_len=None, name=name, **CASES[name])


def kernel_for(name):
    pre = os.environ.get("QATTN_GPU_KERNELS")
    if pre:
        return qattn.GpuDecodeKernel.from_files(Path(pre) / f"{name}.ptx")
    return qattn.build(spec_for(name))


if __name__ == "__main__":
    import gpu_prebuild
    gpu_prebuild.main("test_gpu_sinks.py", ((n, spec_for(n)) for n in [*CASES, *PAGED]))

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import numpy as np  # noqa: E402

from qattn import reference  # noqa: E402
from test_gpu import dequant, quantize, rel  # noqa: E402
from test_gpu_paged import make_pools, query_args  # noqa: E402


def sinks_for(c, seed):
    """Sink logits of 2 · N(0, 1) per query head (None without sinks)."""
    if not c.get("sinks"):
        return None
    g = torch.Generator(device="cuda").manual_seed(100 + seed)
    return 2 * torch.randn(c["q_heads"], generator=g, device="cuda")


def ref(q, k, v, lens, c, sinks):
    """(O, LSE) of qattn.reference as float32 CUDA tensors."""
    to_np = lambda x: x.float().cpu().numpy()
    o, lse = reference.attention(to_np(q), to_np(k), to_np(v), np.array(lens),
                                 causal=c.get("causal", False),
                                 sinks=None if sinks is None else to_np(sinks), return_lse=True,
                                 softcap=c.get("softcap"))
    return (torch.from_numpy(o).float().cuda(), torch.from_numpy(lse).float().cuda())


def check(c, out, lse, want_q, want_u, name):
    """O against both references as test_gpu; LSE within 2e-2 of the quantized math's (−inf
    where it is −inf: rows without keys and sinks), and of the unquantized math's within what
    quantization moves it."""
    assert not torch.isnan(out.float()).any()
    err_q, err_u, err_qu = rel(out, want_q[0]), rel(out, want_u[0]), rel(want_q[0], want_u[0])
    print(f"{name}: O rel err {err_q:.2e} quantized, {err_u:.2e} unquantized")
    assert err_q <= 1e-2, err_q
    assert err_u <= 1.05 * err_qu + 5e-3, (err_u, err_qu)
    if lse is None:
        return
    assert not torch.isnan(lse).any()
    inf_q = torch.isinf(want_q[1])
    assert torch.equal(torch.isinf(lse), inf_q) and (lse[inf_q] < 0).all()
    d_q = (lse - want_q[1])[~inf_q].abs().max().item() if (~inf_q).any() else 0.0
    d_u = (lse - want_u[1])[~inf_q].abs().max().item() if (~inf_q).any() else 0.0
    d_qu = (want_q[1] - want_u[1])[~inf_q].abs().max().item() if (~inf_q).any() else 0.0
    print(f"{name}: LSE max abs err {d_q:.2e} quantized, {d_u:.2e} unquantized")
    assert d_q <= 2e-2, d_q
    assert d_u <= d_qu + 2e-2, (d_u, d_qu)


@pytest.mark.parametrize("name,lens,splits",
                         [(n, l, s) for n in CASES for l, s in LAUNCHES + EXTRA.get(n, [])])
def test_sinks_and_lse_match_reference(name, lens, splits):
    c = CASES[name]
    kernel = kernel_for(name)
    b, kv_len = len(lens), max(max(lens), 1)
    g = torch.Generator(device="cuda").manual_seed(kv_len)
    q = torch.randn(b, c["q_len"], c["q_heads"], c["head_dim"], generator=g, device="cuda")
    k = torch.randn(b, kv_len, c["kv_heads"], c["head_dim"], generator=g, device="cuda")
    v = torch.randn(b, kv_len, c["kv_heads"], c["head_dim"], generator=g, device="cuda")
    k[..., 3] *= 20
    qb = q.to(torch.bfloat16)
    gran = c.get("granularity")
    kc, ks = quantize(k, c["kv_dtype"], gran)
    vc, vs = quantize(v, c["kv_dtype"], gran)
    q_in, qargs, q_ref = query_args(c, qb)
    sinks = sinks_for(c, kv_len)
    seq = torch.tensor(lens, dtype=torch.int32, device="cuda")
    kw = dict(qargs, seq_lens=seq, splits=splits)
    if sinks is not None:
        kw["sinks"] = sinks
    res = kernel(q_in, kc, vc, ks, vs, **kw)
    out, lse = res if c.get("lse") else (res, None)
    torch.cuda.synchronize()
    want_q = ref(q_ref, dequant(kc, ks), dequant(vc, vs), lens, c, sinks)
    want_u = ref(qb.float(), k, v, lens, c, sinks)
    check(c, out, lse, want_q, want_u, f"{name} {lens} {splits}")


@pytest.mark.parametrize("lens,splits", PAGED_LAUNCHES)
def test_paged_sinks_and_lse_match_reference(lens, splits):
    name = "sl_paged_i8_p16"
    c = PAGED[name]
    kernel = kernel_for(name)
    data = make_pools(c, lens, seed=len(lens))
    q_in, qargs, q_ref = query_args(c, data["q"])
    sinks = sinks_for(c, len(lens))
    p = data["pools"]
    lse = torch.full((len(lens), c["q_len"], c["q_heads"]), float("nan"), device="cuda")
    out, got_lse = kernel(q_in, p["k"], p["v"], p["k_scale"], p["v_scale"], **qargs,
                          seq_lens=torch.tensor(lens, dtype=torch.int32, device="cuda"),
                          block_table=data["table"], sinks=sinks, lse=lse, splits=splits)
    torch.cuda.synchronize()
    assert got_lse is lse
    n = max(max(lens), 1)
    kd = dequant(data["kc"], data["ks"])[:, :n]
    vd = dequant(data["vc"], data["vs"])[:, :n]
    want_q = ref(q_ref, kd, vd, lens, c, sinks)
    check(c, out, lse, want_q, want_q, f"{name} {lens} {splits}")


def test_sinks_and_lse_arguments_are_checked_before_launch():
    c = CASES["sl_i8_gqa"]
    kernel = kernel_for("sl_i8_gqa")
    q = torch.zeros(2, 2, 16, 128, device="cuda", dtype=torch.bfloat16)
    k = torch.zeros(2, 64, 2, 128, device="cuda", dtype=torch.int8)
    s = torch.ones(2, 64, 2, device="cuda")
    sinks = torch.zeros(c["q_heads"], device="cuda")
    with pytest.raises(qattn.KernelArgumentError, match="sinks .* is required"):
        kernel(q, k, k, s, s)
    with pytest.raises(qattn.KernelArgumentError, match="sinks"):
        kernel(q, k, k, s, s, sinks=sinks[:8])
    with pytest.raises(qattn.KernelArgumentError, match="sinks"):
        kernel(q, k, k, s, s, sinks=sinks.to(torch.bfloat16))
    with pytest.raises(qattn.KernelArgumentError, match="lse"):
        kernel(q, k, k, s, s, sinks=sinks, lse=torch.zeros(2, 16, 2, device="cuda"))
    plain = kernel_for("sl_fp8_gqa_lse")
    with pytest.raises(qattn.KernelArgumentError, match="no attention sinks"):
        plain(torch.zeros(2, 1, 8, 64, device="cuda", dtype=torch.bfloat16),
              torch.zeros(2, 64, 2, 64, device="cuda", dtype=torch.float8_e4m3fn),
              torch.zeros(2, 64, 2, 64, device="cuda", dtype=torch.float8_e4m3fn),
              torch.ones(2, 64, device="cuda"), torch.ones(2, 64, device="cuda"), sinks=sinks)
