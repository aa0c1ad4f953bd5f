"""The paged decode kernels on a GPU: K/V (and their scales) in pools of shuffled pages read
through a block table, against qattn.reference.paged_attention and against the contiguous kernel
of the same spec on the same tokens.

Skipped without torch + CUDA. Kernels come from ``qattn.build`` or, on a GPU machine without
attn-opt, from the PTX + metadata prebuilt into ``$QATTN_GPU_KERNELS`` by
``python python/tests/test_gpu_paged.py --prebuild DIR`` (tests/paged_cases.py lists them).
Every launch has ragged lengths (0 and 1 among them, lengths that are not a multiple of the tile
or the page), a pool larger than the pages in use, poisoned table entries past each sequence's
pages and poisoned token slots past each sequence's end. Asymmetric pools (uint8 / int8 codes
with zero points per page) are also checked against unquantized attention.
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
import paged_cases  # noqa: E402
from paged_cases import CASES, LAUNCHES  # noqa: E402


def kernel_for(name):
    pre = os.environ.get("QATTN_GPU_KERNELS")
    if pre:
        return qattn.GpuDecodeKernel.from_files(Path(pre) / f"{name}.ptx")
    return qattn.build(dict(paged_cases.specs(qattn.spec))[name])


if __name__ == "__main__":
    # Prebuild every paged kernel and its contiguous twin for a GPU machine without attn-opt.
    import gpu_prebuild
    gpu_prebuild.main("test_gpu_paged.py", paged_cases.specs(qattn.spec))

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import numpy as np  # noqa: E402

from qattn import paged, reference  # noqa: E402
from test_gpu import dequant, quantize, quantize_asym, rel  # noqa: E402
from test_gpu import reference as dense_reference  # noqa: E402

# Table entries past a sequence's pages: outside the pool both ways, and the last int32.
POISON = (-1, 2 ** 31 - 1, 1 << 20)


def make_pools(c, lens, seed, max_blocks=None):
    """Random K/V of the lengths, quantized per token (test_gpu.quantize, or quantize_asym with
    zero points for an asymmetric case), scattered into a shuffled pool with spare pages; token
    slots past each end and the spare pages poisoned. Returns the contiguous codes, scales and
    zero points, the pools, the table, the queries and the unquantized K/V."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    b, s = len(lens), max(max(lens), 1)
    hq, hkv, d, page = c["q_heads"], c["kv_heads"], c["head_dim"], c["page_size"]
    q = torch.randn(b, c["q_len"], hq, d, generator=g, device="cuda").to(torch.bfloat16)
    k = torch.randn(b, s, hkv, d, generator=g, device="cuda")
    v = torch.randn(b, s, hkv, d, generator=g, device="cuda")
    k[..., 3] *= 20  # an outlier channel
    gran = c.get("granularity")
    kz = vz = None
    if c.get("symmetric") is False:  # skewed data: shifted K channels, one-sided V
        k += 4 * torch.rand(d, generator=g, device="cuda")
        v = 2 * v.abs()
        kc, ks, kz = quantize_asym(k, c["kv_dtype"], gran)
        vc, vs, vz = quantize_asym(v, c["kv_dtype"], gran)
    else:
        kc, ks = quantize(k, c["kv_dtype"], gran)
        vc, vs = quantize(v, c["kv_dtype"], gran)
    need = int(paged.pages_needed(lens, page).sum())
    blocks = c["max_blocks"] if max_blocks is None else max_blocks
    table, pages = paged.allocate(lens, page, num_pages=need + 3, max_blocks=blocks,
                                  seed=seed, pad=POISON[seed % len(POISON)])
    t = torch.from_numpy(table.astype(np.int64)).cuda()
    # The pool's rows of each (sequence, token) in [0, len).
    bi = torch.cat([torch.full((n,), i, dtype=torch.int64) for i, n in enumerate(lens)]).cuda()
    ti = torch.cat([torch.arange(n) for n in lens]).cuda()
    rows = t[bi, ti // page] * page + ti % page

    def scatter(x, fill):
        fp8 = x.dtype == torch.float8_e4m3fn  # moved as bytes (indexing has no e4m3 kernels)
        src = x.view(torch.uint8) if fp8 else x
        pool = torch.full((pages * page,) + tuple(x.shape[2:]), fill, dtype=src.dtype,
                          device="cuda")
        pool[rows] = src[bi, ti]
        pool = pool.view((pages, page) + tuple(x.shape[2:]))
        return pool.view(torch.float8_e4m3fn) if fp8 else pool

    # Poison: the largest codes (e4m3 0x7e is 448), bf16 values of 1e4, scales of 1e4.
    code_fill = {"bf16": 1e4, "i8": 127, "ui8": 255, "f8E4M3FN": 0x7E}[c["kv_dtype"]]
    pools = dict(k=scatter(kc, code_fill), v=scatter(vc, code_fill))
    if ks is not None:
        pools.update(k_scale=scatter(ks, 1e4), v_scale=scatter(vs, 1e4))
    if kz is not None:  # zero points stored per page like the scales (poison: the code fill)
        pools.update(k_zero=scatter(kz, code_fill), v_zero=scatter(vz, code_fill))
    table_dev = torch.from_numpy(table).cuda()
    return dict(q=q, kc=kc, vc=vc, ks=ks, vs=vs, kz=kz, vz=vz, pools=pools, table=table_dev,
                host_table=table, k=k, v=v)


def zero_args(pools_or_data, contiguous=False):
    """k_zero / v_zero keywords of an asymmetric case (none for a symmetric one)."""
    kz, vz = ("kz", "vz") if contiguous else ("k_zero", "v_zero")
    if pools_or_data.get(kz) is None:
        return {}
    return {"k_zero": pools_or_data[kz], "v_zero": pools_or_data[vz]}


def query_args(c, q):
    """(kernel query, its keyword arguments, the dequantized query the reference reads)."""
    if c.get("q_dtype") == "i8":
        qc, qs = quantize(q.float(), "i8", c.get("q_granularity", "per_token_head"))
        return qc, {"q_scale": qs}, dequant(qc, qs)
    return q, {}, q.float()


def paged_reference(c, data, q_ref, lens):
    """qattn.reference.paged_attention over the pools (float64, on the host)."""
    p = data["pools"]
    to_np = lambda x: None if x is None else x.float().cpu().numpy()
    return torch.from_numpy(reference.paged_attention(
        q_ref.cpu().numpy(), to_np(p["k"]), to_np(p["v"]), data["host_table"],
        np.array(lens, np.int32), k_scale=to_np(p.get("k_scale")),
        v_scale=to_np(p.get("v_scale")), k_granularity=c.get("granularity"),
        k_zero=to_np(p.get("k_zero")), v_zero=to_np(p.get("v_zero")),
        causal=c.get("causal", False))).float().cuda()


@pytest.mark.parametrize("name,launch", [(n, i) for n in CASES for i in range(len(LAUNCHES))])
def test_paged_matches_reference_and_contiguous(name, launch):
    c = CASES[name]
    lens, splits = LAUNCHES[launch]
    lens = [min(n, paged_cases.capacity(name)) for n in lens]
    data = make_pools(c, lens, seed=launch)
    qk, qargs, q_ref = query_args(c, data["q"])
    seq = torch.tensor(lens, dtype=torch.int32, device="cuda")
    p = data["pools"]
    out = kernel_for(name)(qk, p["k"], p["v"], p.get("k_scale"), p.get("v_scale"), seq_lens=seq,
                           block_table=data["table"], splits=splits, **qargs, **zero_args(p))
    contiguous = kernel_for(f"{name}_contig")(qk, data["kc"], data["vc"], data["ks"], data["vs"],
                                              seq_lens=seq, splits=splits, **qargs,
                                              **zero_args(data, contiguous=True))
    torch.cuda.synchronize()
    want = paged_reference(c, data, q_ref, lens)
    assert torch.isfinite(out.float()).all()
    err_ref, err_contig = rel(out, want), rel(out, contiguous.float())
    floor = rel(want.to(torch.bfloat16), want)  # the bf16 output's own rounding
    print(f"{name} {lens} splits {splits}: rel err vs paged reference {err_ref:.2e}, vs the "
          f"contiguous kernel {err_contig:.2e} (bf16 rounding {floor:.2e})")
    fp8 = c["kv_dtype"] == "f8E4M3FN"
    assert err_ref <= (5e-2 if fp8 else 1e-2), err_ref
    assert err_contig <= 1e-2, err_contig
    for i, n in enumerate(lens):  # an empty sequence gives zeros
        if n == 0:
            assert not out[i].float().abs().any()
    if c.get("symmetric") is False:
        # Against unquantized attention the kernel loses no more than the quantization does.
        want_u = dense_reference(q_ref, data["k"], data["v"], seq, c.get("causal", False))
        assert rel(out, want_u) <= 1.05 * rel(want, want_u) + 5e-3, \
            (rel(out, want_u), rel(want, want_u))


def test_paged_kernel_refuses_bad_tables():
    name = "paged_i8_p16"
    c = CASES[name]
    data = make_pools(c, [5, 40], seed=0)
    p, kernel = data["pools"], kernel_for(name)
    seq = torch.tensor([5, 40], dtype=torch.int32, device="cuda")
    args = (data["q"], p["k"], p["v"], p["k_scale"], p["v_scale"])
    with pytest.raises(qattn.KernelArgumentError, match="block_table"):
        kernel(*args, seq_lens=seq)
    with pytest.raises(qattn.KernelArgumentError, match="block_table"):
        kernel(*args, seq_lens=seq, block_table=data["table"].long())
    with pytest.raises(qattn.KernelArgumentError, match="block_table"):
        kernel(*args, seq_lens=seq, block_table=data["table"][:, :8].contiguous())
    with pytest.raises(qattn.KernelArgumentError, match="block_table given"):
        kernel_for(f"{name}_contig")(data["q"], data["kc"], data["vc"], data["ks"], data["vs"],
                                     seq_lens=seq, block_table=data["table"])


@pytest.mark.parametrize("name", ["paged_i8_p16", "paged_fp8_p16", "paged_bf16_p16",
                                  "paged_i8_p16_dyn", "paged_u8_p16", "paged_u8_p64"])
def test_entries_past_the_pool_stay_inside_it(name):
    """Block-table entries outside [0, num_pages) in the pages a sequence uses (past the pool,
    negative, 2^31 - 1): the kernel reads inside the pool (its scales clamped by num_slots, its
    K/V rows bounded by the tensor maps; zero points at the scales' clamped rows), gives finite
    output and leaves the other sequences bit for bit as with a good table. (Run under compute-sanitizer memcheck to see no read
    outside the pool.)"""
    check_entries_past_the_pool(name, CASES[name], [200, 37], seed=2)


def check_entries_past_the_pool(name, c, lens, seed):
    """Kernel `name` (case `c`) with sequence 0's first four table entries outside the pool:
    finite output, and sequence 1 bit for bit as with the good table."""
    data = make_pools(c, lens, seed=seed)
    qk, qargs, _ = query_args(c, data["q"])
    seq = torch.tensor(lens, dtype=torch.int32, device="cuda")
    p, kernel = data["pools"], kernel_for(name)
    args = (qk, p["k"], p["v"], p.get("k_scale"), p.get("v_scale"))
    qargs.update(zero_args(p))
    good = kernel(*args, seq_lens=seq, block_table=data["table"], **qargs)
    bad = data["table"].clone()
    pages = int(p["k"].shape[0])
    bad[0, :4] = torch.tensor([pages + 5, -1, 1 << 20, 2 ** 31 - 1], dtype=torch.int32)
    out = kernel(*args, seq_lens=seq, block_table=bad, **qargs)
    torch.cuda.synchronize()
    assert torch.isfinite(out.float()).all()
    assert torch.equal(out[1], good[1])


@pytest.mark.parametrize("name", ["paged_i8_p64", "paged_u8_p64"])
def test_torch_op_runs_paged_and_captures(name):
    """attn_opt::decode with block_table (and zero points per page for a uint8 pool): the same
    output as the ctypes launcher, and replayed from a CUDA graph after the table and lengths
    changed on the device (no host sync)."""
    torch_ops = pytest.importorskip("qattn.torch_ops")
    if not torch_ops.HAS_EXTENSION:
        pytest.skip("the attn_opt torch extension is not built")
    c = CASES[name]
    lens = [300, 1, 0, 777]
    data = make_pools(c, lens, seed=1)
    p = data["pools"]
    seq = torch.tensor(lens, dtype=torch.int32, device="cuda")
    kernel = kernel_for(name)
    plan = torch_ops.DecodePlan(kernel, device="cuda", batch=len(lens),
                                kv_len=paged_cases.capacity(name))
    args = (data["q"], p["k"], p["v"], p["k_scale"], p["v_scale"])
    zeros = zero_args(p)
    out = plan.run(*args, seq_lens=seq, block_table=data["table"], **zeros)
    want = kernel(*args, seq_lens=seq, block_table=data["table"], splits=plan.splits, **zeros)
    torch.cuda.synchronize()
    assert rel(out, want.float()) <= 1e-3
    with pytest.raises(qattn.KernelArgumentError, match="block_table"):
        plan.run(*args, seq_lens=seq, **zeros)
    # Capture, then reverse the sequences (queries, table rows, lengths) on the device and replay.
    q_dev, table, lens_dev = data["q"].clone(), data["table"].clone(), seq.clone()
    graph_out = torch.empty_like(out)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        plan.run(q_dev, *args[1:], seq_lens=lens_dev, block_table=table, out=graph_out,
                 **zeros)
    order = [3, 1, 2, 0]
    q_dev.copy_(data["q"][order])
    table.copy_(data["table"][order])
    lens_dev.copy_(seq[order])
    graph.replay()
    torch.cuda.synchronize()
    assert rel(graph_out[order], out.float()) <= 1e-3


def test_dynamic_max_blocks_takes_any_table_width():
    """A kernel compiled with block_table memref<?x?xi32>: tables of 3, 80 and 97 entries per
    sequence give the same output as the contiguous kernel (kv_len = max_blocks · P at each
    launch), through the ctypes launcher and the torch op's plan."""
    name = "paged_i8_p16_dyn"
    c = CASES[name]
    kernel, contig = kernel_for(name), kernel_for(f"{name}_contig")
    assert kernel.meta["paged"]["max_blocks"] == -1
    lens = [37, 0, 33, 1]
    torch_ops = None
    try:
        from qattn import torch_ops
    except ImportError:
        pass
    for blocks in (3, 80, 97):
        data = make_pools(c, lens, seed=blocks, max_blocks=blocks)
        assert tuple(data["table"].shape) == (len(lens), blocks)
        p = data["pools"]
        seq = torch.tensor(lens, dtype=torch.int32, device="cuda")
        args = (data["q"], p["k"], p["v"], p["k_scale"], p["v_scale"])
        out = kernel(*args, seq_lens=seq, block_table=data["table"])
        want = contig(data["q"], data["kc"], data["vc"], data["ks"], data["vs"], seq_lens=seq)
        torch.cuda.synchronize()
        assert rel(out, want.float()) <= 1e-2, blocks
        if torch_ops is not None and torch_ops.HAS_EXTENSION:
            plan = torch_ops.DecodePlan(kernel, device="cuda", batch=len(lens),
                                        kv_len=blocks * c["page_size"])
            got = plan.run(*args, seq_lens=seq, block_table=data["table"])
            torch.cuda.synchronize()
            assert rel(got, out.float()) <= 1e-3, blocks
            with pytest.raises(qattn.KernelArgumentError, match="block_table"):
                plan.run(*args, seq_lens=seq, block_table=data["table"][:, :1].contiguous())
    if torch_ops is not None and torch_ops.HAS_EXTENSION:
        with pytest.raises(qattn.KernelArgumentError, match="multiple of 16"):
            torch_ops.DecodePlan(kernel, device="cuda", batch=len(lens), kv_len=100)
    with pytest.raises(qattn.KernelArgumentError, match="max_blocks >= 1"):
        kernel(*args, seq_lens=seq, block_table=data["table"][:, :0].contiguous())
