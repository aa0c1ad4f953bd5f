"""The ragged prefill kernels on a GPU (specs with ``cu_seqlens_q``): one launch over sequences
with different numbers of new tokens — chunked prefill beside decode rows of one token — their
queries packed as [1, T, Hq, D]. Each sequence's rows are checked against
qattn.reference.paged_attention and against the prefill kernel of the same spec without the
packing (tests/paged_cases.py ``RAGGED_BASE``), which runs every sequence with the longest count
of new tokens, on the same tokens: the ragged kernel's rows of sequence b are that kernel's last
n_b rows. Over a shuffled pool of pages and over the contiguous twin; offsets outside the
packed rows stay inside q and out.

Skipped without torch + CUDA. Kernels come from ``qattn.build`` or, on a GPU machine without
attn-opt, from ``$QATTN_GPU_KERNELS`` (``python python/tests/test_gpu_ragged.py --prebuild DIR``).
"""

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if __name__ == "__main__":  # run as a script from a checkout: use its qattn
    sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import qattn  # noqa: E402
import paged_cases  # noqa: E402
from paged_cases import PREFILL_CASES, RAGGED_BASE, RAGGED_LAUNCHES  # noqa: E402

if __name__ == "__main__":
    import gpu_prebuild
    wanted = set(RAGGED_BASE) | set(RAGGED_BASE.values())
    gpu_prebuild.main("test_gpu_ragged.py", [(n, s) for n, s in paged_cases.specs(qattn.spec)
                                              if n.removesuffix("_contig") in wanted])

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

from qattn.gpu import KernelArgumentError  # noqa: E402
from test_gpu import rel  # noqa: E402
from test_gpu_paged import kernel_for, make_pools, paged_reference, query_args  # noqa: E402


def pack(x, counts):
    """The last counts[b] rows of x[b] ([B, Q, ...]) of every sequence, packed as [1, T, ...],
    and cu_seqlens_q (int32 [B + 1])."""
    q_len = int(x.shape[1])
    packed = torch.cat([x[b, q_len - n:] for b, n in enumerate(counts)]).unsqueeze(0)
    cu = [0]
    for n in counts:
        cu.append(cu[-1] + n)
    return packed.contiguous(), torch.tensor(cu, dtype=torch.int32, device="cuda")


def launch(name, lens, counts, seed, layout):
    """The ragged kernel `name` (layout "paged" or "contiguous") and its unpacked base on the
    same tokens; returns (case, data, dequantized queries, cu, ragged out, base out)."""
    base = RAGGED_BASE[name]
    q_len = max(max(counts), 1)
    c = dict(PREFILL_CASES[base], q_len=q_len)
    data = make_pools(c, lens, seed=seed)
    qk, qargs, q_ref = query_args(c, data["q"])
    packed, cu = pack(qk, counts)
    packed_args = {key: pack(t, counts)[0] for key, t in qargs.items()}  # q_scale [1, T, Hq]
    seq = torch.tensor(lens, dtype=torch.int32, device="cuda")
    if layout == "paged":
        p = data["pools"]
        cache = (p["k"], p["v"], p.get("k_scale"), p.get("v_scale"))
        extra, suffix = {"block_table": data["table"]}, ""
    else:
        cache = (data["kc"], data["vc"], data["ks"], data["vs"])
        extra, suffix = {}, "_contig"
    out = kernel_for(name + suffix)(packed, *cache, seq_lens=seq, cu_seqlens_q=cu,
                                    max_seqlen_q=q_len, **packed_args, **extra)
    unpacked = kernel_for(base + suffix)(qk, *cache, seq_lens=seq, **qargs, **extra)
    torch.cuda.synchronize()
    return c, data, q_ref, cu, out, unpacked


@pytest.mark.parametrize("layout", ["paged", "contiguous"])
@pytest.mark.parametrize("name,i", [(n, i) for n in RAGGED_BASE
                                    for i in range(len(RAGGED_LAUNCHES))])
def test_ragged_matches_reference_and_unpacked(name, i, layout):
    lens, counts = RAGGED_LAUNCHES[i]
    lens = [min(n, paged_cases.capacity(name)) for n in lens]
    c, data, q_ref, cu, out, unpacked = launch(name, lens, counts, seed=i, layout=layout)
    want = paged_reference(c, data, q_ref, lens)
    assert out.shape == (1, sum(counts), c["q_heads"], c["head_dim"])
    assert torch.isfinite(out.float()).all()
    q_len = int(unpacked.shape[1])
    for b, n in enumerate(counts):
        if n == 0:
            continue
        rows = out[0, int(cu[b]):int(cu[b + 1])]
        err_ref = rel(rows, want[b, q_len - n:])
        err_unpacked = rel(rows, unpacked[b, q_len - n:].float())
        print(f"{name} {layout} seq {b} (len {lens[b]}, {n} new): rel err vs reference "
              f"{err_ref:.2e}, vs the unpacked kernel {err_unpacked:.2e}")
        assert err_ref <= 1e-2, (b, err_ref)
        assert err_unpacked <= 1e-3, (b, err_unpacked)


def test_ragged_offsets_outside_the_rows_stay_inside():
    """cu_seqlens_q entries past T, negative or decreasing, and a sequence longer than
    max_seqlen_q: the launch reads and writes only q's and out's rows (run under
    compute-sanitizer memcheck to see it) and the output stays finite. Where no malformed
    sequence's clamped rows reach sequence 0's (its offsets well-formed), those are a good
    launch's, bit for bit."""
    name, lens, counts = "ragged_pf_bf16_p16", [300, 77, 500, 64], [40, 20, 30, 10]
    c = dict(PREFILL_CASES[RAGGED_BASE[name]], q_len=max(counts))
    data = make_pools(c, lens, seed=7)
    packed, cu = pack(data["q"], counts)
    seq = torch.tensor(lens, dtype=torch.int32, device="cuda")
    p, kernel = data["pools"], kernel_for(name)
    args = (packed, p["k"], p["v"], None, None)
    kw = dict(seq_lens=seq, block_table=data["table"], max_seqlen_q=max(counts))
    good = kernel(*args, cu_seqlens_q=cu, **kw)
    total = int(packed.shape[1])
    for bad, apart in (([0, 40, 1 << 30, 60, total], True), ([0, 40, 2 ** 31 - 1, 50, -1], True),
                       ([0, 40, 30, -7, total + 9], False)):
        out = torch.zeros_like(good)
        kernel(*args, cu_seqlens_q=torch.tensor(bad, dtype=torch.int32, device="cuda"), out=out,
               **kw)
        torch.cuda.synchronize()
        assert torch.isfinite(out.float()).all()
        if apart:
            assert torch.equal(out[0, :40], good[0, :40])
    # Sequence 0 has 40 rows but max_seqlen_q is 16: only its first 16 rows are written.
    out = torch.zeros_like(good)
    kernel(*args, cu_seqlens_q=cu, out=out, **dict(kw, max_seqlen_q=16))
    torch.cuda.synchronize()
    assert not out[0, 16:40].float().abs().any()


def test_ragged_argument_errors():
    name = "ragged_pf_bf16_p16"
    c = dict(PREFILL_CASES[RAGGED_BASE[name]], q_len=8)
    data = make_pools(c, [100, 50], seed=1)
    packed, cu = pack(data["q"], [8, 3])
    p, kernel = data["pools"], kernel_for(name)
    seq = torch.tensor([100, 50], dtype=torch.int32, device="cuda")
    args = (p["k"], p["v"], None, None)
    kw = dict(seq_lens=seq, block_table=data["table"])
    with pytest.raises(KernelArgumentError, match="cu_seqlens_q .* and max_seqlen_q are required"):
        kernel(packed, *args, **kw)
    with pytest.raises(KernelArgumentError, match=r"packs its queries as \[1, T, Hq, D\]"):
        kernel(data["q"], *args, cu_seqlens_q=cu, max_seqlen_q=8, **kw)
    with pytest.raises(KernelArgumentError, match="max_seqlen_q must be an int"):
        kernel(packed, *args, cu_seqlens_q=cu, max_seqlen_q=0, **kw)
    with pytest.raises(KernelArgumentError, match="cu_seqlens_q has dtype"):
        kernel(packed, *args, cu_seqlens_q=cu.long(), max_seqlen_q=8, **kw)
    with pytest.raises(KernelArgumentError, match="block_table has shape"):
        kernel(packed, *args, cu_seqlens_q=cu[:2], max_seqlen_q=8, **kw)
    base = kernel_for(RAGGED_BASE[name])
    with pytest.raises(KernelArgumentError, match="the spec has no ragged batch"):
        base(data["q"], *args, cu_seqlens_q=cu, max_seqlen_q=8, **kw)


@pytest.mark.parametrize("name", sorted(RAGGED_BASE))
def test_ragged_torch_op_matches_the_launcher_and_replays(name):
    """attn_opt::decode's plan over a ragged prefill kernel (q_len = max_seqlen_q): the ctypes
    launcher's output bit for bit, argument errors before any launch, and a CUDA-graph replay
    after the offsets, lengths and table changed on the device (same T)."""
    torch_ops = pytest.importorskip("qattn.torch_ops")
    if not torch_ops.HAS_EXTENSION:
        pytest.skip("the attn_opt torch extension is not built")
    lens, counts = [300, 1, 77, 500], [40, 1, 0, 23]
    q_len = max(counts)
    c = dict(PREFILL_CASES[RAGGED_BASE[name]], q_len=q_len)
    data = make_pools(c, lens, seed=11)
    qk, qargs, _ = query_args(c, data["q"])
    p, kernel = data["pools"], kernel_for(name)
    cache = (p["k"], p["v"], p.get("k_scale"), p.get("v_scale"))
    seq = torch.tensor(lens, dtype=torch.int32, device="cuda")

    def packed_launch(order):
        n = [counts[i] for i in order]
        packed, cu = pack(qk[order], n)
        return packed, cu, {key: pack(t[order], n)[0] for key, t in qargs.items()}

    plan = torch_ops.DecodePlan(kernel, device="cuda", batch=len(lens),
                                kv_len=paged_cases.capacity(name), q_len=q_len)
    packed, cu, pargs = packed_launch([0, 1, 2, 3])
    kw = dict(seq_lens=seq, block_table=data["table"], **pargs)
    out = plan.run(packed, *cache, cu_seqlens_q=cu, **kw)
    want = kernel(packed, *cache, cu_seqlens_q=cu, max_seqlen_q=q_len, **kw)
    torch.cuda.synchronize()
    assert torch.equal(out, want)
    with pytest.raises(KernelArgumentError, match=r"cu_seqlens_q \(Int \(5,\)\) is required"):
        plan.run(packed, *cache, **kw)
    with pytest.raises(KernelArgumentError, match="cu_seqlens_q has shape"):
        plan.run(packed, *cache, cu_seqlens_q=cu[:3], **kw)
    with pytest.raises(KernelArgumentError, match=r"packs its queries as \[1, T"):
        plan.run(qk, *cache, cu_seqlens_q=cu, **dict(kw, **qargs))
    unpacked = torch_ops.DecodePlan(kernel_for(RAGGED_BASE[name]), device="cuda",
                                    batch=len(lens), kv_len=paged_cases.capacity(name),
                                    q_len=q_len)
    with pytest.raises(KernelArgumentError, match="cu_seqlens_q given, but the spec has no "
                                                  "ragged batch"):
        unpacked.run(qk, *cache, cu_seqlens_q=cu, **dict(kw, **qargs))
    # Captured once; replayed over the sequences in another order, packed to the same T.
    q_dev, cu_dev = packed.clone(), cu.clone()
    table, lens_dev = data["table"].clone(), seq.clone()
    scales = {key: t.clone() for key, t in pargs.items()}
    graph_out = torch.empty_like(out)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        plan.run(q_dev, *cache, seq_lens=lens_dev, block_table=table, cu_seqlens_q=cu_dev,
                 out=graph_out, **scales)
    order = [3, 1, 2, 0]
    packed2, cu2, pargs2 = packed_launch(order)
    for dst, src in ((q_dev, packed2), (cu_dev, cu2), (table, data["table"][order]),
                     (lens_dev, seq[order]), *((scales[key], pargs2[key]) for key in scales)):
        dst.copy_(src)
    graph.replay()
    want2 = kernel(packed2, *cache, seq_lens=seq[order], block_table=data["table"][order],
                   cu_seqlens_q=cu2, max_seqlen_q=q_len, **pargs2)
    torch.cuda.synchronize()
    assert torch.equal(graph_out, want2)


def test_ragged_check_pages_reports_a_cut_sequence():
    """check_pages over a ragged kernel: offsets with a sequence longer than max_seqlen_q are
    reported (the kernel would cut it) by both launchers; well-formed ones are not."""
    from qattn.paged import BlockTableError
    name, lens, counts = "ragged_pf_bf16_p16", [300, 77], [40, 20]
    c = dict(PREFILL_CASES[RAGGED_BASE[name]], q_len=max(counts))
    data = make_pools(c, lens, seed=3)
    packed, cu = pack(data["q"], counts)
    p, kernel = data["pools"], kernel_for(name)
    seq = torch.tensor(lens, dtype=torch.int32, device="cuda")
    args = (packed, p["k"], p["v"], None, None)
    kw = dict(seq_lens=seq, block_table=data["table"])
    kernel(*args, cu_seqlens_q=cu, max_seqlen_q=40, check_pages=True, **kw)  # well formed
    with pytest.raises(BlockTableError, match=r"cu_seqlens_q\[0\], cu_seqlens_q\[1\] = 0, 40"):
        kernel(*args, cu_seqlens_q=cu, max_seqlen_q=16, check_pages=True, **kw)
    torch_ops = pytest.importorskip("qattn.torch_ops")
    if not torch_ops.HAS_EXTENSION:
        pytest.skip("the attn_opt torch extension is not built")
    plan = torch_ops.DecodePlan(kernel, device="cuda", batch=2,
                                kv_len=paged_cases.capacity(name), q_len=16,
                                check_pages="record")
    plan.run(*args, cu_seqlens_q=cu, **kw)
    errors = plan.page_errors(reset=True)
    assert errors.bad_offsets == 2 and errors.offset == (0, 0, 40, 60, 16)
