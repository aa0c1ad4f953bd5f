"""The installed package's ahead-of-time kernels on a GPU (qattn.aot): every paged kernel of the
set the package shipped, run by name through the torch op (``DecodePlan``) over a pool of
shuffled pages, against qattn.reference.paged_attention — what a GPU machine without attn-opt
runs after ``pip install``.

Skipped without torch + CUDA, and where the imported package has no ahead-of-time set (one built
without attn-opt, or the checkout's ``python/`` on the path instead of the installed package).
``QATTN_AOT_TEST`` narrows the kernels (shell patterns, comma-separated, e.g. ``*_d128_*``).
The kernels are named, never compiled: a name missing from the set is an error, not a build.
"""

import fnmatch
import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

from qattn import aot  # noqa: E402

# The set's formats: spec kv_dtype → (make_pools' kv_dtype, granularity, symmetric).
FORMATS = {"i8": ("i8", "per_token_head", True), "ui8": ("ui8", "per_token_head", False),
           "f8E4M3FN": ("f8E4M3FN", "per_token_head", True), "bf16": ("bf16", None, True)}


def shipped_paged():
    """(name, its attention() keywords) of the installed set's paged kernels, narrowed by
    QATTN_AOT_TEST."""
    patterns = [p for p in os.environ.get("QATTN_AOT_TEST", "*").split(",") if p]
    return [(n, e["spec"]) for n, e in sorted(aot.index().items())
            if e["spec"].get("page_size") and any(fnmatch.fnmatch(n, p) for p in patterns)]


PAGED = shipped_paged()
if not PAGED:
    pytest.skip(f"the imported qattn ({aot.DIR}) has no paged ahead-of-time kernels",
                allow_module_level=True)

from qattn import torch_ops  # noqa: E402
from test_gpu_paged import make_pools, paged_reference, zero_args  # noqa: E402
from test_gpu import rel  # noqa: E402

# Ragged lengths: 0, 1, not a multiple of any page or tile, one long sequence.
LENS = [0, 1, 37, 300, 1000]


def case_of(spec):
    """make_pools' case of a set member's keywords (its format must be one FORMATS knows)."""
    kv_dtype, gran, symmetric = FORMATS[spec["kv_dtype"]]
    page = spec["page_size"]
    return dict(q_len=spec["q_len"], q_heads=spec["q_heads"], kv_heads=spec["kv_heads"],
                head_dim=spec["head_dim"], page_size=page, kv_dtype=kv_dtype, granularity=gran,
                symmetric=symmetric, max_blocks=-(-max(LENS) // page))


def test_set_is_the_installed_one():
    """The kernels come from the installed package, not from a checkout's build."""
    assert (aot.DIR / aot.INDEX).is_file()
    print(f"qattn: {aot.DIR.parent}; {len(aot.index())} kernels, {len(PAGED)} paged under test; "
          f"attn-opt on PATH: {__import__('shutil').which('attn-opt')}, "
          f"ATTN_OPT={os.environ.get('ATTN_OPT')}")


@pytest.mark.parametrize("name,spec", PAGED, ids=[n for n, _ in PAGED])
def test_shipped_paged_kernel_matches_reference(name, spec):
    c = case_of(spec)
    data = make_pools(c, LENS, seed=len(name))
    p = data["pools"]
    seq = torch.tensor(LENS, dtype=torch.int32, device="cuda")
    plan = torch_ops.DecodePlan(name, batch=len(LENS), kv_len=c["max_blocks"] * c["page_size"])
    out = plan.run(data["q"], p["k"], p["v"], p.get("k_scale"), p.get("v_scale"), seq_lens=seq,
                   block_table=data["table"], **zero_args(p))
    torch.cuda.synchronize()
    want = paged_reference(c, data, data["q"].float(), LENS)
    err = rel(out, want)
    print(f"{name}: {plan.splits} split(s), rel err vs the paged reference {err:.2e}")
    assert torch.isfinite(out.float()).all()
    assert err <= (5e-2 if c["kv_dtype"] == "f8E4M3FN" else 1e-2), err
    assert not out[0].float().abs().any()  # the empty sequence
    plan.release()
