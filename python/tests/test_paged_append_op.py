"""The paged quantize-append torch op (``torch.ops.attn_opt.quantize_append_paged``,
qattn.torch_ops.quantize_append_paged: vLLM's ``reshape_and_cache_flash`` into a quantized paged
cache): schema, fake tensors and tracing on any machine with torch; on a GPU, codes and scales
equal to the CPU reference (qattn.paged.append_slots) bit for bit at pages 16 and 64 for every
format, with shuffled, negative and out-of-pool slots; i32 slots and f16 rows; a CUDA graph; clear
refusals before any launch.

Kernels come from ``qattn.build`` or, on a GPU machine without attn-opt, from the PTX + metadata
prebuilt into ``$QATTN_GPU_KERNELS`` by ``python tests/test_paged_append_op.py --prebuild DIR``.
"""

import json
import os
import sys
from pathlib import Path

import pytest

if __name__ == "__main__":  # run as a script from a checkout: use its qattn
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

import qattn  # noqa: E402
from qattn import paged  # noqa: E402

HEADS, DIM = 4, 128
# name: (code dtype, granularity, symmetric, page size, slot dtype, source dtype); the pool's
# page count and the row count are dynamic.
KERNELS = {}
for _page in (16, 64):
    for _code, _gran, _sym in [("i8", "per_token_head", True), ("i8", "per_token", True),
                               ("i8", "per_group<32>", True), ("ui8", "per_token_head", False),
                               ("i8", "per_group<64>", False), ("f8E4M3FN", "per_token_head", True),
                               ("i8", "per_block<1 x 64>", True)]:
        _slug = _gran.replace("<", "").replace(">", "").replace(" ", "")
        KERNELS[f"paged_append_p{_page}_{_code}_{_slug}"] = (_code, _gran, _sym, _page, "i64",
                                                             "bf16")
KERNELS["paged_append_p16_i8_i32_slots"] = ("i8", "per_token_head", True, 16, "i32", "bf16")
KERNELS["paged_append_p64_e4m3_f16_rows"] = ("f8E4M3FN", "per_token", True, 64, "i64", "f16")


def spec(name):
    code, gran, sym, page, slot, src = KERNELS[name]
    return qattn.quantize_paged(tokens=None, num_pages=None, page_size=page, heads=HEADS,
                                head_dim=DIM, src_dtype=src, dtype=code, granularity=gran,
                                symmetric=sym, slot_dtype=slot, target="sm_90a", name=name)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "--prebuild":
        sys.exit("usage: test_paged_append_op.py --prebuild DIR")
    out = Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    for name in KERNELS:
        kern = qattn.build(spec(name))
        (out / f"{name}.ptx").write_text(kern.ptx)
        (out / f"{name}.ptx.launch.json").write_text(json.dumps(kern.meta))
        print(out / f"{name}.ptx")
    sys.exit(0)

torch = pytest.importorskip("torch")
from qattn import torch_ops  # noqa: E402
from qattn.torch_ops import ops  # noqa: E402

from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

CUDA = torch.cuda.is_available()
needs_gpu = pytest.mark.skipif(not CUDA or not torch_ops.HAS_EXTENSION,
                               reason="needs a CUDA device and the torch extension")
CODE = {"i8": torch.int8, "f8E4M3FN": torch.float8_e4m3fn, "ui8": torch.uint8}
SRC = {"bf16": torch.bfloat16, "f16": torch.float16}


# --- any machine with torch ------------------------------------------------------------------

def test_schema_mutates_dst_scales_and_zeros_only():
    schema = ops.quantize_append_paged.default._schema
    assert str(schema) == f"attn_opt::{torch_ops.SCHEMAS['quantize_append_paged']}"
    written = [a.name for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write]
    assert written == ["dst", "scales", "zeros"]
    assert len(schema.returns) == 0


def test_fake_tensors_check_shapes():
    with FakeTensorMode(allow_non_fake_inputs=False):
        src = torch.empty(5, HEADS, DIM, dtype=torch.bfloat16, device="cuda")
        dst = torch.empty(8, 16, HEADS, DIM, dtype=torch.int8, device="cuda")
        sc = torch.empty(8, 16, HEADS, dtype=torch.float32, device="cuda")
        slots = torch.empty(5, dtype=torch.int64, device="cuda")
        assert ops.quantize_append_paged("k.ptx", src, slots, dst, sc) is None
        for args, match in [((src, slots, dst[:, :, :2], sc), "does not match"),
                            ((src, slots[:4], dst, sc), "slot_mapping must be"),
                            ((src, slots.float(), dst, sc), "slot_mapping must be"),
                            ((src[None], slots, dst, sc), "3-D")]:
            with pytest.raises(qattn.KernelArgumentError, match=match):
                ops.quantize_append_paged("k.ptx", *args)


def test_make_fx_traces_the_op():
    from torch.fx.experimental.proxy_tensor import make_fx

    def step(src, slots, dst, sc):
        torch_ops.quantize_append_paged("k.ptx", src, dst, sc, slot_mapping=slots)
        return dst

    args = (torch.zeros(3, HEADS, DIM, dtype=torch.bfloat16), torch.zeros(3, dtype=torch.int64),
            torch.zeros(2, 16, HEADS, DIM, dtype=torch.int8), torch.zeros(2, 16, HEADS))
    gm = make_fx(step, tracing_mode="fake")(*args)
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert ops.quantize_append_paged.default in targets


@pytest.mark.skipif(not torch_ops.HAS_EXTENSION, reason="the torch extension is not built")
def test_cpu_tensors_and_wrong_kernels_are_refused(tmp_path):
    src = torch.zeros(1, HEADS, DIM, dtype=torch.bfloat16)
    dst = torch.zeros(1, 16, HEADS, DIM, dtype=torch.int8)
    with pytest.raises(qattn.KernelArgumentError, match="CUDA tensors"):
        torch_ops.quantize_append_paged(tmp_path / "k.ptx", src, dst, torch.zeros(1, 16, HEADS),
                                        slot_mapping=torch.zeros(1, dtype=torch.int64))


# --- on a GPU ------------------------------------------------------------------------------------

def kernel(name):
    pre = os.environ.get("QATTN_GPU_KERNELS")
    if pre and (Path(pre) / f"{name}.ptx").is_file():
        return str(Path(pre) / f"{name}.ptx")
    return qattn.build(spec(name)).path


def pools(name, num_pages, fill=0):
    code, gran, sym, page, _, _ = KERNELS[name]
    shape = qattn.spec.scale_shape(gran, [num_pages, page, HEADS, DIM])
    dst = torch.full((num_pages, page, HEADS, DIM), fill, dtype=torch.uint8, device="cuda")
    dst = dst.view(CODE[code])
    sc = torch.full(shape, -1.0, dtype=torch.float32, device="cuda")
    zeros = None if sym else torch.full(shape, fill, dtype=CODE[code], device="cuda")
    return dst, sc, zeros


def rows(t, src="bf16", seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(t, HEADS, DIM, generator=g, device="cuda") * 3
    x[:, 0, 5] = 40.0  # an outlier per row
    return x.to(SRC[src])


def shuffled_slots(t, num_pages, page, seed=0):
    """t slots: distinct in-pool slots of shuffled pages, with -1 padding at every fourth row and
    slots past the pool at every eighth (both skipped)."""
    rng = np.random.default_rng(seed)
    free = rng.permutation(num_pages * page)[:t]
    slots = free.astype(np.int64)
    slots[3::4] = -1
    slots[1::8] = num_pages * page + rng.integers(0, 1000, slots[1::8].shape)
    return slots


def as_numpy_codes(dst, code):
    if code == "f8E4M3FN":
        return dst.float().cpu().numpy()
    return dst.cpu().numpy()


@needs_gpu
@pytest.mark.parametrize("name", sorted(KERNELS))
@pytest.mark.parametrize("t", [1, 37, 300])
def test_op_equals_reference(name, t):
    code, gran, sym, page, slot_dtype, src_dtype = KERNELS[name]
    num_pages = 3 + 700 // page
    path = kernel(name)
    src = rows(t, src_dtype, seed=t)
    slots = shuffled_slots(t, num_pages, page, seed=t)
    dst, sc, zeros = pools(name, num_pages, fill=77)
    torch_ops.quantize_append_paged(path, src, dst, sc, zeros, slot_mapping=torch.from_numpy(
        slots).to("cuda", torch.int32 if slot_dtype == "i32" else torch.int64))
    torch.cuda.synchronize()
    want_dst = np.full(dst.shape, 77, np.uint8).view(np.int8 if code == "i8" else np.uint8)
    if code == "f8E4M3FN":
        want_dst = torch.full(dst.shape, 77, dtype=torch.uint8).view(torch.float8_e4m3fn) \
            .float().numpy()
    want_sc = np.full(sc.shape, -1.0, np.float32)
    want_z = None if sym else np.full(zeros.shape, 77, np.uint8).view(want_dst.dtype)
    written = paged.append_slots(src.float().cpu().numpy(), slots, want_dst, want_sc, want_z,
                                 dtype=code, granularity=gran, symmetric=sym)
    assert written.any()
    assert np.array_equal(as_numpy_codes(dst, code), want_dst, equal_nan=True)
    assert np.array_equal(sc.cpu().numpy(), want_sc)
    if not sym:
        assert np.array_equal(zeros.cpu().numpy(), want_z)


@needs_gpu
def test_graph_capture_and_non_default_stream():
    name = "paged_append_p16_i8_per_token_head"
    path = kernel(name)
    num_pages, t = 8, 4
    dst, sc, _ = pools(name, num_pages)
    src = rows(t)
    slots = torch.tensor([0, 17, -1, 40], dtype=torch.int64, device="cuda")
    torch_ops.quantize_append_paged(path, src, dst, sc, slot_mapping=slots)  # loads the module
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        torch_ops.quantize_append_paged(path, src, dst, sc, slot_mapping=slots)
        slots.add_(1)
    for step in range(3):
        src.copy_(rows(t, seed=step + 1))
        graph.replay()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch_ops.quantize_append_paged(path, rows(t, seed=9), dst, sc,
                                        slot_mapping=torch.tensor([100, -1, -1, -1],
                                                                  device="cuda"))
    s.synchronize()
    torch.cuda.synchronize()
    want_dst = np.zeros(dst.shape, np.int8)
    want_sc = np.full(sc.shape, -1.0, np.float32)
    base = np.array([0, 17, -1, 40])
    paged.append_slots(rows(t).float().cpu().numpy(), base, want_dst, want_sc)
    for step in range(3):  # replay `step` reads the slots before its increment
        paged.append_slots(rows(t, seed=step + 1).float().cpu().numpy(), base + step, want_dst,
                           want_sc)
    paged.append_slots(rows(t, seed=9).float().cpu().numpy()[:1], np.array([100]), want_dst,
                       want_sc)
    assert slots.tolist() == [3, 20, 2, 43]  # capturing ran nothing; each replay one append
    assert np.array_equal(dst.cpu().numpy(), want_dst)
    assert np.array_equal(sc.cpu().numpy(), want_sc)


@needs_gpu
def test_bad_arguments_are_refused_before_any_launch():
    name = "paged_append_p16_i8_per_token_head"
    path = kernel(name)
    dst, sc, _ = pools(name, 4)
    src = rows(3)
    slots = torch.zeros(3, dtype=torch.int64, device="cuda")
    bad = [
        (dict(src=src.float()), "src has dtype"),
        (dict(dst=dst.view(torch.uint8)), "dst has dtype"),
        (dict(sc=sc[:, :8]), "scales has shape"),
        (dict(slots=slots.int()), "slot_mapping has dtype"),
        (dict(slots=slots[:2]), "slot_mapping"),
        (dict(dst=torch.zeros(4, 32, HEADS, DIM, dtype=torch.int8, device="cuda")),
         "compiled for page_size 16"),
        (dict(src=src[:, :2]), "does not match|shape"),
        (dict(zeros=torch.zeros_like(sc, dtype=torch.int8)), "symmetric"),
        (dict(slots=slots.cpu()), "slot_mapping must be on cuda"),
    ]
    for change, match in bad:
        a = dict(src=src, dst=dst, sc=sc, slots=slots, zeros=None) | change
        with pytest.raises(qattn.KernelArgumentError, match=match):
            torch_ops.quantize_append_paged(path, a["src"], a["dst"], a["sc"], a["zeros"],
                                            slot_mapping=a["slots"])
    torch.cuda.synchronize()
    assert not dst.any() and (sc == -1).all()  # nothing was launched
