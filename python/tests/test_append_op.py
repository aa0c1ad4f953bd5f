"""The quantize-append torch op (``torch.ops.attn_opt.quantize_append``, qattn.torch_ops
.quantize_append): schema, fake tensors and tracing on any machine with torch; on a GPU, codes and
scales equal to the ctypes launcher's (qattn.gpu_quantize) and to a torch reference of the
quantization, rows outside the cache skipped, a non-default stream, CUDA graph capture and replay,
and clear refusals.

Kernels come from ``qattn.build`` or, on a GPU machine without attn-opt, from the PTX + metadata
prebuilt into ``$QATTN_GPU_KERNELS`` by ``python tests/test_append_op.py --prebuild DIR``.
"""

import json
import os
import sys
from pathlib import Path

import pytest

if __name__ == "__main__":  # run as a script from a checkout: use its qattn
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import qattn  # noqa: E402

# name: (code dtype, symmetric) of an append kernel over 4 KV heads of 128, dynamic extents.
KERNELS = {"append_op_i8": ("i8", True), "append_op_e4m3": ("f8E4M3FN", True),
           "append_op_ui8": ("ui8", False)}
HEADS, DIM = 4, 128


def spec(name):
    dtype, symmetric = KERNELS[name]
    return qattn.quantize("append", batch=None, tokens=None, capacity=None, heads=HEADS,
                          head_dim=DIM, dtype=dtype, symmetric=symmetric, target="sm_90a",
                          name=name)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "--prebuild":
        sys.exit("usage: test_append_op.py --prebuild DIR")
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
needs_cuda = pytest.mark.skipif(not CUDA, reason="no CUDA device")
CODE = {"i8": torch.int8, "f8E4M3FN": torch.float8_e4m3fn, "ui8": torch.uint8}


# --- any machine with torch ------------------------------------------------------------------

def test_mutates_dst_scales_and_zeros_only():
    schema = ops.quantize_append.default._schema
    written = [a.name for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write]
    assert written == ["dst", "scales", "zeros"]
    assert len(schema.returns) == 0


def test_fake_tensors_check_shapes():
    mode = FakeTensorMode(allow_non_fake_inputs=False)
    with mode:
        src = torch.empty(2, 3, HEADS, DIM, dtype=torch.bfloat16, device="cuda")
        dst = torch.empty(2, 64, HEADS, DIM, dtype=torch.int8, device="cuda")
        sc = torch.empty(2, 64, HEADS, dtype=torch.float32, device="cuda")
        pos = torch.empty(2, dtype=torch.int32, device="cuda")
        assert ops.quantize_append("k.ptx", src, pos, dst, sc) is None
        with pytest.raises(qattn.KernelArgumentError, match="does not match"):
            ops.quantize_append("k.ptx", src, pos, dst[:, :, :2], sc)


def test_make_fx_traces_the_op():
    from torch.fx.experimental.proxy_tensor import make_fx

    def step(src, pos, dst, sc):
        torch_ops.quantize_append("k.ptx", src, dst, sc, positions=pos)
        return dst

    args = (torch.zeros(1, 2, HEADS, DIM, dtype=torch.bfloat16), torch.zeros(1, dtype=torch.int32),
            torch.zeros(1, 8, HEADS, DIM, dtype=torch.int8), torch.zeros(1, 8, HEADS))
    gm = make_fx(step, tracing_mode="fake")(*args)
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert ops.quantize_append.default in targets


@pytest.mark.skipif(not torch_ops.HAS_EXTENSION, reason="the torch extension is not built")
def test_cpu_tensors_and_bad_files_are_refused(tmp_path):
    src = torch.zeros(1, 1, HEADS, DIM, dtype=torch.bfloat16)
    dst = torch.zeros(1, 4, HEADS, DIM, dtype=torch.int8)
    with pytest.raises(qattn.KernelArgumentError, match="CUDA tensors"):
        torch_ops.quantize_append(tmp_path / "k.ptx", src, dst, torch.zeros(1, 4, HEADS),
                                  positions=torch.zeros(1, dtype=torch.int32))
    if CUDA:
        with pytest.raises(qattn.KernelArgumentError, match="k.ptx"):
            torch_ops.quantize_append(tmp_path / "k.ptx", src.cuda(), dst.cuda(),
                                      torch.zeros(1, 4, HEADS, device="cuda"),
                                      positions=torch.zeros(1, dtype=torch.int32, device="cuda"))


# --- on a GPU ------------------------------------------------------------------------------------

def kernel(name):
    pre = os.environ.get("QATTN_GPU_KERNELS")
    if pre and (Path(pre) / f"{name}.ptx").is_file():
        from qattn.gpu_quantize import GpuQuantizeKernel
        return GpuQuantizeKernel.from_files(Path(pre) / f"{name}.ptx")
    return qattn.build(spec(name))


def buffers(name, batch, cap, seed=0):
    dtype, symmetric = KERNELS[name]
    dst = torch.zeros(batch, cap, HEADS, DIM, dtype=CODE[dtype], device="cuda")
    sc = torch.zeros(batch, cap, HEADS, dtype=torch.float32, device="cuda")
    zeros = None if symmetric else torch.zeros(batch, cap, HEADS, dtype=CODE[dtype], device="cuda")
    return dst, sc, zeros


def rows(batch, s, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(batch, s, HEADS, DIM, generator=g, device="cuda") * 3
    x[:, :, 0, 5] = 40.0  # an outlier per row
    return x.to(torch.bfloat16)


@needs_cuda
@pytest.mark.skipif(not torch_ops.HAS_EXTENSION, reason="the torch extension is not built")
@pytest.mark.parametrize("name", sorted(KERNELS))
@pytest.mark.parametrize("batch,s,cap", [(1, 1, 16), (3, 17, 64), (8, 1, 4096)])
def test_op_equals_ctypes_launcher(name, batch, s, cap):
    k = kernel(name)
    src = rows(batch, s)
    # positions: the first row at 0, others spread, the last running past the cache's end
    pos = torch.tensor([(i * 7) % cap for i in range(batch)], dtype=torch.int32, device="cuda")
    pos[-1] = cap - max(1, s // 2)
    a, b = buffers(name, batch, cap), buffers(name, batch, cap)
    torch_ops.quantize_append(k, src, a[0], a[1], a[2], positions=pos)
    k(src, b[0], b[1], b[2], positions=pos, check_positions=False)
    torch.cuda.synchronize()
    for x, y in zip(a, b):
        if x is not None:
            assert torch.equal(x.view(torch.uint8), y.view(torch.uint8))
    # the rows written hold the quantized rows (symmetric int8: |code · scale − x| ≤ scale / 2)
    last = int(pos[0]) + s
    if KERNELS[name] == ("i8", True) and last <= cap:
        deq = a[0][0, int(pos[0]):last].float() * a[1][0, int(pos[0]):last, :, None]
        assert torch.all((deq - src[0].float()).abs() <= a[1][0, int(pos[0]):last, :, None] * 0.5
                         + 1e-6)
    # rows past the end were skipped, not wrapped: row 0 of the last sequence is untouched
    if batch > 1 and pos[-1] > 0:
        assert not a[1][-1, 0].any()


@needs_cuda
@pytest.mark.skipif(not torch_ops.HAS_EXTENSION, reason="the torch extension is not built")
def test_graph_capture_and_non_default_stream():
    k = kernel("append_op_i8")
    batch, cap = 4, 256
    dst, sc, _ = buffers("append_op_i8", batch, cap)
    src = rows(batch, 1)
    pos = torch.zeros(batch, dtype=torch.int32, device="cuda")
    torch_ops.quantize_append(k, src, dst, sc, positions=pos)  # loads the module first
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        torch_ops.quantize_append(k, src, dst, sc, positions=pos)
        pos.add_(1)
    for step in range(5):
        src.copy_(rows(batch, 1, seed=step + 1))
        graph.replay()
    torch.cuda.synchronize()
    assert pos.tolist() == [5] * batch  # capturing ran nothing; each replay one append
    want_dst, want_sc, _ = buffers("append_op_i8", batch, cap)
    p = torch.zeros(batch, dtype=torch.int32, device="cuda")
    k(rows(batch, 1), want_dst, want_sc, positions=p, check_positions=False)
    for step in range(5):
        k(rows(batch, 1, seed=step + 1), want_dst, want_sc, positions=p + step,
          check_positions=False)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch_ops.quantize_append(k, rows(batch, 1, seed=9), dst, sc,
                                  positions=torch.full_like(pos, 6))
    s.synchronize()
    k(rows(batch, 1, seed=9), want_dst, want_sc, positions=torch.full_like(pos, 6),
      check_positions=False)
    torch.cuda.synchronize()
    assert torch.equal(dst, want_dst) and torch.equal(sc, want_sc)


@needs_cuda
@pytest.mark.skipif(not torch_ops.HAS_EXTENSION, reason="the torch extension is not built")
def test_bad_arguments_are_refused():
    k = kernel("append_op_i8")
    dst, sc, _ = buffers("append_op_i8", 2, 32)
    src = rows(2, 3)
    pos = torch.zeros(2, dtype=torch.int32, device="cuda")
    bad = [
        (dict(src=src.float()), "src has dtype"),
        (dict(dst=dst.view(torch.uint8)), "dst has dtype"),
        (dict(sc=sc[:, :16]), "scales has shape"),
        (dict(pos=pos.long()), "positions has dtype"),
        (dict(pos=pos[:1]), "positions has shape"),
        (dict(src=rows(2, 3)[:, :, :2]), "compiled for|shape"),
        (dict(zeros=torch.zeros_like(dst)), "symmetric"),
        (dict(dst=torch.zeros(2, 32, HEADS, DIM, dtype=torch.int8, device="cuda")
              .transpose(1, 2).contiguous().transpose(1, 2)), "contiguous"),
    ]
    for change, match in bad:
        a = dict(src=src, dst=dst, sc=sc, pos=pos, zeros=None) | change
        with pytest.raises(qattn.KernelArgumentError, match=match):
            torch_ops.quantize_append(k, a["src"], a["dst"], a["sc"], a["zeros"],
                                      positions=a["pos"])
    assert not dst.any() and not sc.any()  # nothing was launched
