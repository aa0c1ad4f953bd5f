"""The paged prefill kernels on a GPU: each sequence's last q_len tokens attend to its K/V (and
their scales) in a pool of shuffled pages read through a block table — chunked prefill over a
paged cache — against qattn.reference.paged_attention and against the contiguous kernel of the
same spec on the same tokens.

Skipped without torch + CUDA. Kernels come from ``qattn.build`` or, on a GPU machine without
attn-opt, from ``$QATTN_GPU_KERNELS`` (``python python/tests/test_gpu_paged.py --prebuild DIR``
builds every case of tests/paged_cases.py, these among them). Launches have ragged lengths (0
and 1 among them, sequences shorter than q_len, lengths that are not a multiple of the tile or
the page), a pool larger than the pages in use, poisoned table entries past each sequence's
pages and poisoned token slots past each sequence's end (test_gpu_paged.make_pools).
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
from paged_cases import PREFILL_CASES, PREFILL_LAUNCHES  # noqa: E402

if __name__ == "__main__":
    import gpu_prebuild
    gpu_prebuild.main("test_gpu_paged_prefill.py",
                      [(n, s) for n, s in paged_cases.specs(qattn.spec)
                       if n.removesuffix("_contig") in PREFILL_CASES])

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

from test_gpu import rel  # noqa: E402
from test_gpu import reference as dense_reference  # noqa: E402
from test_gpu_paged import (check_entries_past_the_pool, kernel_for, make_pools,  # noqa: E402
                            paged_reference, query_args)


def run_both(name, lens, q_len, seed):
    """The paged kernel and its contiguous twin on the same tokens, and the paged reference."""
    c = dict(PREFILL_CASES[name], q_len=q_len)
    data = make_pools(c, lens, seed=seed)
    qk, qargs, q_ref = query_args(c, data["q"])
    seq = torch.tensor(lens, dtype=torch.int32, device="cuda")
    p = data["pools"]
    out = kernel_for(name)(qk, p["k"], p["v"], p.get("k_scale"), p.get("v_scale"), seq_lens=seq,
                           block_table=data["table"], **qargs)
    contiguous = kernel_for(f"{name}_contig")(qk, data["kc"], data["vc"], data["ks"], data["vs"],
                                              seq_lens=seq, **qargs)
    torch.cuda.synchronize()
    return c, data, q_ref, seq, out, contiguous


@pytest.mark.parametrize("name,launch",
                         [(n, i) for n in PREFILL_CASES for i in range(len(PREFILL_LAUNCHES))])
def test_paged_prefill_matches_reference_and_contiguous(name, launch):
    lens, q_len = PREFILL_LAUNCHES[launch]
    lens = [min(n, paged_cases.capacity(name)) for n in lens]
    c, data, q_ref, seq, out, contiguous = run_both(name, lens, q_len, seed=launch)
    want = paged_reference(c, data, q_ref, lens)
    assert torch.isfinite(out.float()).all()
    err_ref, err_contig = rel(out, want), rel(out, contiguous.float())
    same = torch.equal(out, contiguous)
    print(f"{name} {lens} q_len {q_len}: rel err vs paged reference {err_ref:.2e}, vs the "
          f"contiguous kernel {err_contig:.2e} (bit-identical: {same})")
    assert err_ref <= 1e-2, err_ref
    assert err_contig <= 1e-3, err_contig
    for i, n in enumerate(lens):  # an empty sequence gives zeros
        if n == 0:
            assert not out[i].float().abs().any()
    if c["kv_dtype"] != "bf16":
        # Against unquantized attention the kernel loses no more than the quantization does.
        want_u = dense_reference(q_ref, data["k"], data["v"], seq, c.get("causal", False))
        slack = 1e-2 if c.get("mode") == "full_int8" else 5e-3
        assert rel(out, want_u) <= 1.05 * rel(want, want_u) + slack, \
            (rel(out, want_u), rel(want, want_u))


@pytest.mark.parametrize("name", ["paged_pf_bf16_p16", "paged_pf_i8q_p16"])
def test_paged_prefill_entries_past_the_pool_stay_inside_it(name):
    """Block-table entries outside [0, num_pages) in the pages sequence 0 uses: finite output,
    and sequence 1 bit for bit as with a good table. (Run under compute-sanitizer memcheck to
    see no read outside the pool.)"""
    check_entries_past_the_pool(name, dict(PREFILL_CASES[name], q_len=64), [300, 77], seed=3)


def test_paged_prefill_torch_op_captures():
    """attn_opt::decode's plan over a paged prefill kernel: the ctypes launcher's output, and a
    CUDA-graph replay after the table and lengths changed on the device."""
    torch_ops = pytest.importorskip("qattn.torch_ops")
    if not torch_ops.HAS_EXTENSION:
        pytest.skip("the attn_opt torch extension is not built")
    name, q_len, lens = "paged_pf_i8q_p16", 96, [300, 1, 0, 777]
    c = dict(PREFILL_CASES[name], q_len=q_len)
    data = make_pools(c, lens, seed=5)
    qk, qargs, _ = query_args(c, data["q"])
    p = data["pools"]
    seq = torch.tensor(lens, dtype=torch.int32, device="cuda")
    kernel = kernel_for(name)
    plan = torch_ops.DecodePlan(kernel, device="cuda", batch=len(lens),
                                kv_len=paged_cases.capacity(name), q_len=q_len)
    args = (p["k"], p["v"], p["k_scale"], p["v_scale"])
    out = plan.run(qk, *args, seq_lens=seq, block_table=data["table"], **qargs)
    want = kernel(qk, *args, seq_lens=seq, block_table=data["table"], **qargs)
    torch.cuda.synchronize()
    assert rel(out, want.float()) <= 1e-3
    q_dev, qs_dev = qk.clone(), qargs["q_scale"].clone()
    table, lens_dev = data["table"].clone(), seq.clone()
    graph_out = torch.empty_like(out)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        plan.run(q_dev, *args, seq_lens=lens_dev, block_table=table, out=graph_out,
                 q_scale=qs_dev)
    order = [3, 1, 2, 0]
    q_dev.copy_(qk[order])
    qs_dev.copy_(qargs["q_scale"][order])
    table.copy_(data["table"][order])
    lens_dev.copy_(seq[order])
    graph.replay()
    torch.cuda.synchronize()
    assert rel(graph_out[order], out.float()) <= 1e-3
