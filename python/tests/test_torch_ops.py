"""The attn_opt torch ops (qattn.torch_ops): schemas, fake tensors and tracing on any machine with
torch; on a GPU, results against the ctypes launcher (qattn.gpu) and a float32 torch reference,
on cuda:0 and cuda:1, on a non-default stream, under CUDA graph capture of a 32-layer decode step,
and the host time per call.

GPU kernels come from ``qattn.build`` or, on a GPU machine without attn-opt, from the PTX +
metadata prebuilt into ``$QATTN_GPU_KERNELS`` by ``python tests/test_gpu.py --prebuild DIR`` and
``python tests/test_torch_ops.py --prebuild DIR``. ``$QATTN_TORCH_OPS_REPORT`` names a JSON file
the host-time and graph tests write their measurements to.
"""

import json
import os
import sys
import time
from pathlib import Path

import pytest

if __name__ == "__main__":  # run as a script from a checkout: use its qattn
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import qattn  # noqa: E402

# A decode layer of a GQA 8:1 model (32 query heads on 4 KV heads, head_dim 128, int8 cache).
LAYER = dict(q_len=1, q_heads=32, kv_heads=4, head_dim=128, kv_dtype="i8",
             granularity="per_token_head", seq_lens=True, mode="half_int8")


def layer_spec():
    return qattn.attention("decode", batch=None, kv_len=None, name="layer_gqa8", **LAYER)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "--prebuild":
        sys.exit("usage: test_torch_ops.py --prebuild DIR")
    out = Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    kern = qattn.build(layer_spec())
    (out / "layer_gqa8.ptx").write_text(kern.ptx)
    (out / "layer_gqa8.ptx.launch.json").write_text(json.dumps(kern.meta))
    print(out / "layer_gqa8.ptx")
    sys.exit(0)

torch = pytest.importorskip("torch")
from qattn import torch_ops  # noqa: E402
from qattn.torch_ops import SCHEMAS, DecodePlan, ops  # noqa: E402

from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not CUDA, reason="no CUDA device")


def report(key, value):
    path = os.environ.get("QATTN_TORCH_OPS_REPORT")
    print(f"{key}: {value}")
    if path:
        data = json.loads(Path(path).read_text()) if Path(path).is_file() else {}
        data[key] = value
        Path(path).write_text(json.dumps(data, indent=1))


# --- any machine with torch ------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_schemas_are_registered(name):
    schema = getattr(ops, name).default._schema
    assert str(schema) == f"attn_opt::{SCHEMAS[name]}"


def test_decode_mutates_out_workspace_and_lse_only():
    schema = ops.decode.default._schema
    written = [a.name for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write]
    assert written == ["out", "workspace", "lse"]
    assert len(schema.returns) == 0


def fake_inputs(mode, b=2, sq=1, hq=8, hkv=2, d=128, skv=64):
    with mode:
        q = torch.empty(b, sq, hq, d, dtype=torch.bfloat16, device="cuda")
        k = torch.empty(b, skv, hkv, d, dtype=torch.int8, device="cuda")
        s = torch.empty(b, skv, hkv, dtype=torch.float32, device="cuda")
        out = torch.empty(b, sq, hq, d, dtype=torch.bfloat16, device="cuda")
    return q, k, s, out


def test_fake_tensor_mode_runs_the_fake():
    mode = FakeTensorMode(allow_non_fake_inputs=False)
    q, k, s, out = fake_inputs(mode)
    with mode:
        assert ops.decode(7, q, k, k, s, s, None, None, None, None, None, out) is None
        with pytest.raises(qattn.KernelArgumentError, match="out must be"):
            ops.decode(7, q, k, k, s, s, None, None, None, None, None, out[:, :, :4])
        with pytest.raises(qattn.KernelArgumentError, match="do not match"):
            ops.decode(7, q, k, k[:, :, :, :64], s, s, None, None, None, None, None, out)


def test_fake_checks_sinks_and_lse():
    mode = FakeTensorMode(allow_non_fake_inputs=False)
    q, k, s, out = fake_inputs(mode)
    with mode:
        sinks = torch.empty(8, dtype=torch.float32, device="cuda")
        lse = torch.empty(2, 1, 8, dtype=torch.float32, device="cuda")
        assert ops.decode(7, q, k, k, s, s, None, None, None, None, None, out, None, None,
                          sinks, lse) is None
        with pytest.raises(qattn.KernelArgumentError, match=r"sinks must be float32 \[8\]"):
            ops.decode(7, q, k, k, s, s, None, None, None, None, None, out, None, None,
                       sinks[:4], lse)
        with pytest.raises(qattn.KernelArgumentError, match=r"lse must be float32 \[2, 1, 8\]"):
            ops.decode(7, q, k, k, s, s, None, None, None, None, None, out, None, None,
                       sinks, lse.to(torch.bfloat16))


def test_plan_run_checks_sinks_and_lse_before_anything_runs():
    q, k, s, out = fake_inputs(FakeTensorMode())
    plan = DecodePlan.__new__(DecodePlan)  # no kernel: the checks come first
    plan.handle = None
    with q.fake_mode:
        bad = torch.empty(2, 8, 1, dtype=torch.float32, device="cuda")
        with pytest.raises(qattn.KernelArgumentError, match="lse must be float32"):
            plan.run(q, k, k, s, s, out=out, lse=bad)


def test_make_fx_traces_the_op():
    from torch.fx.experimental.proxy_tensor import make_fx

    def step(q, k, s, out):
        ops.decode(3, q, k, k, s, s, None, None, None, None, None, out)
        return out * 2

    q, k, s, out = fake_inputs(FakeTensorMode())
    gm = make_fx(step, tracing_mode="fake")(
        *(torch.empty(t.shape, dtype=t.dtype) for t in (q, k, s, out)))
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert ops.decode.default in targets


def test_torch_compile_traces_without_graph_break():
    seen = []

    def backend(gm, example_inputs):
        seen.append([n.target for n in gm.graph.nodes if n.op == "call_function"])
        return lambda *args: (args[-1],)  # never runs the kernel: this checks tracing only

    def step(q, k, s, out):
        ops.decode(5, q, k, k, s, s, None, None, None, None, None, out)
        return out

    torch._dynamo.reset()
    compiled = torch.compile(step, backend=backend, fullgraph=True)
    q = torch.zeros(2, 1, 8, 128, dtype=torch.bfloat16)
    k = torch.zeros(2, 64, 2, 128, dtype=torch.int8)
    s = torch.ones(2, 64, 2)
    compiled(q, k, s, torch.empty_like(q))
    assert seen and any("attn_opt.decode" in str(t) for t in seen[0]), seen


def test_cpu_tensors_and_devices_are_refused():
    q = torch.zeros(2, 1, 8, 128, dtype=torch.bfloat16)
    with pytest.raises((ValueError, qattn.GpuError), match="CUDA|not built"):
        ops.decode(1, q, q, q, None, None, None, None, None, None, None, q)
    with pytest.raises(qattn.KernelArgumentError, match="CUDA"):
        DecodePlan("nowhere.ptx", device="cpu", batch=1, kv_len=1)


@pytest.mark.skipif(not torch_ops.HAS_EXTENSION, reason="the torch extension is not built")
def test_direct_run_defers_to_the_dispatcher_where_needed():
    run = torch_ops._run_direct
    assert run is not None
    q, k, s, out = fake_inputs(FakeTensorMode())
    none5 = (None,) * 5  # workspace, block_table, sinks, lse, cu_seqlens_q
    assert run(7, q, k, k, s, s, None, None, None, None, None, out, *none5) is NotImplemented
    real = torch.zeros(2, 1, 8, 128, dtype=torch.bfloat16)
    with FakeTensorMode(allow_non_fake_inputs=True):
        assert run(7, real, real, real, None, None, None, None, None, None, None, real,
                   *none5) is NotImplemented
    with pytest.raises(ValueError, match="no plan 7"):
        run(7, real, real, real, None, None, None, None, None, None, None, real, *none5)
    with pytest.raises(TypeError, match="k must be a torch.Tensor, got int"):
        run(7, real, 3, real, None, None, None, None, None, None, None, real, *none5)
    with pytest.raises(TypeError, match="17 positional arguments"):
        run(7, real, real, real)


def unplanned(handle=7):
    """A DecodePlan object with a handle and no plan behind it (no GPU needed to trace it)."""
    plan = DecodePlan.__new__(DecodePlan)
    plan.handle = None  # release() on collection: nothing to free
    return plan, handle


def test_plan_run_goes_through_the_op_under_fake_tensors_and_compile():
    plan, handle = unplanned()
    q, k, s, out = fake_inputs(FakeTensorMode())
    plan.handle = handle
    with q.fake_mode:
        assert plan.run(q, k, k, s, s, out=out) is out  # the fake implementation ran
        with pytest.raises(qattn.KernelArgumentError, match="out must be"):
            plan.run(q, k, k, s, s, out=out[:, :, :4])
    seen = []

    def backend(gm, example_inputs):
        seen.append([str(n.target) for n in gm.graph.nodes if n.op == "call_function"])
        return lambda *args: (args[-1],)

    def step(q, k, s, out):
        return plan.run(q, k, k, s, s, out=out)

    torch._dynamo.reset()
    q = torch.zeros(2, 1, 8, 128, dtype=torch.bfloat16)
    k = torch.zeros(2, 64, 2, 128, dtype=torch.int8)
    torch.compile(step, backend=backend, fullgraph=True)(q, k, torch.ones(2, 64, 2),
                                                         torch.empty_like(q))
    plan.handle = None
    assert seen and any("attn_opt.decode" in t for t in seen[0]), seen


def test_plan_takes_an_ahead_of_time_kernel_by_spec_or_name(monkeypatch, tmp_path):
    from qattn import aot
    name = "decode_d128_g4_kv8_i8"
    spec = aot.spec_of("my_layer", aot.catalog()[name])
    (tmp_path / name).mkdir()
    (tmp_path / name / aot.KERNEL_FILE).write_text("// placeholder\n")
    (tmp_path / aot.INDEX).write_text(json.dumps(
        {"kernels": {name: {"key": aot.key(spec.text), "spec": {}}}}))
    monkeypatch.setattr(aot, "DIR", tmp_path)
    want = tmp_path / name / aot.KERNEL_FILE
    assert torch_ops._kernel_path(spec) == want
    assert torch_ops._kernel_path(name) == want
    assert torch_ops._kernel_path("elsewhere.ptx") == "elsewhere.ptx"
    monkeypatch.setenv("ATTN_OPT", str(tmp_path / "no-attn-opt"))
    monkeypatch.setenv("PATH", str(tmp_path))
    other = aot.spec_of("x", aot.catalog()["decode_d64_g1_kv8_bf16"])
    with pytest.raises(aot.KernelNotAvailable, match="attn-opt --attn-normalize"):
        DecodePlan(other, device="cuda:0", batch=1, kv_len=16)


@pytest.mark.skipif(not torch_ops.HAS_EXTENSION, reason="the torch extension is not built")
def test_plan_errors_are_clear(tmp_path):
    with pytest.raises(qattn.KernelArgumentError, match="cannot read"):
        DecodePlan(tmp_path / "missing.ptx", device="cuda:0", batch=1, kv_len=1)
    (tmp_path / "k.ptx").write_text("// not a kernel\n")
    (tmp_path / "k.ptx.launch.json").write_text('{"format": "other"}')
    with pytest.raises(qattn.KernelArgumentError, match="k.ptx.launch.json"):
        DecodePlan(tmp_path / "k.ptx", device="cuda:0", batch=1, kv_len=1)


# --- GPU ---------------------------------------------------------------------------------------

def gpu_helpers():
    """test_gpu's kernels, quantizers and reference (importable only where CUDA is)."""
    import test_gpu
    return test_gpu


def layer_kernel():
    pre = os.environ.get("QATTN_GPU_KERNELS")
    if pre:
        return qattn.GpuDecodeKernel.from_files(Path(pre) / "layer_gqa8.ptx")
    return qattn.build(layer_spec())


def case_inputs(name, batch, kv_len, q_len=None, device="cuda", seed=0):
    """Random inputs of a test_gpu case: (positional tensors, keyword tensors, reference)."""
    tg = gpu_helpers()
    c = tg.CASES[name] if name in tg.CASES else LAYER
    q_len = q_len or c["q_len"]
    g = torch.Generator(device=device).manual_seed(seed)
    q = torch.randn(batch, q_len, c["q_heads"], c["head_dim"], generator=g, device=device)
    k = torch.randn(batch, kv_len, c["kv_heads"], c["head_dim"], generator=g, device=device)
    v = torch.randn(batch, kv_len, c["kv_heads"], c["head_dim"], generator=g, device=device)
    qb = q.to(torch.bfloat16)
    gran = c.get("granularity")
    kz = vz = None
    kw = {}
    if c.get("symmetric") is False:
        kc, ks, kz = tg.quantize_asym(k, c["kv_dtype"], gran)
        vc, vs, vz = tg.quantize_asym(v, c["kv_dtype"], gran)
        kw.update(k_zero=kz, v_zero=vz)
    else:
        kc, ks = tg.quantize(k, c["kv_dtype"], gran)
        vc, vs = tg.quantize(v, c["kv_dtype"], gran)
    lens = torch.full((batch,), kv_len, dtype=torch.int32, device=device)
    if c.get("seq_lens"):
        if batch > 1:
            lens[1] = max(1, kv_len // 3)
        kw["seq_lens"] = lens
    r = tg.block_rows(gran)
    want = tg.reference(qb.float(), tg.dequant(kc, ks, kz, r), tg.dequant(vc, vs, vz, r), lens,
                        c.get("causal", False))
    return (qb, kc, vc, ks, vs), kw, want


CASES = [("i8_mqa_causal", 4, 1000, "auto", None), ("i8_mqa_causal", 2, 4096, 3, None),
         ("i8_mqa_causal", 1, 4096, "auto", None), ("fp8_gqa", 3, 257, "auto", None),
         ("bf16_mha", 2, 777, 2, None), ("i8asym_gqa", 3, 1000, "auto", None),
         ("prefill_gqa_causal", 3, 70, "auto", None), ("prefill_dyn_mha", 2, 300, "auto", 200)]


@needs_cuda
@pytest.mark.parametrize("name,batch,kv_len,splits,q_len", CASES)
def test_op_matches_ctypes_and_reference(name, batch, kv_len, splits, q_len):
    tg = gpu_helpers()
    kernel = tg.kernel_for(name)
    args, kw, want = case_inputs(name, batch, kv_len, q_len)
    plan = DecodePlan(kernel, device="cuda:0", batch=batch, kv_len=kv_len, q_len=q_len,
                      splits=splits)
    out = plan.run(*args, **kw)
    via_ctypes = kernel(*args, **kw, splits=plan.splits)
    torch.cuda.synchronize()
    assert torch.equal(out, via_ctypes)
    assert tg.rel(out, want) <= (5e-2 if "fp8" in name else 1e-2)
    if splits != "auto":
        assert plan.splits == splits


@needs_cuda
@pytest.mark.skipif(CUDA and torch.cuda.device_count() < 2, reason="one GPU")
def test_second_device_keeps_current_device():
    tg = gpu_helpers()
    torch.cuda.set_device(0)
    args, kw, want = case_inputs("layer_gqa8", 4, 2048, device="cuda:1")
    plan = DecodePlan(layer_kernel(), device="cuda:1", batch=4, kv_len=2048)
    out = plan.run(*args, **kw)
    torch.cuda.synchronize(1)
    assert out.device == torch.device("cuda", 1)
    assert torch.cuda.current_device() == 0
    assert tg.rel(out, want) <= 1e-2


@needs_cuda
def test_non_default_stream():
    tg = gpu_helpers()
    args, kw, want = case_inputs("layer_gqa8", 8, 3000)
    plan = DecodePlan(layer_kernel(), device="cuda", batch=8, kv_len=3000)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        out = plan.run(*args, **kw)
    stream.synchronize()
    assert tg.rel(out, want) <= 1e-2


@needs_cuda
def test_bad_run_arguments_are_refused():
    args, kw, _ = case_inputs("layer_gqa8", 2, 256)
    q, k, v, ks, vs = args
    plan = DecodePlan(layer_kernel(), device="cuda", batch=2, kv_len=256)
    with pytest.raises(qattn.KernelArgumentError, match="dtype"):
        plan.run(q.float(), k, v, ks, vs, **kw)
    with pytest.raises(qattn.KernelArgumentError, match="shape"):
        plan.run(q, k[:, :128], v, ks, vs, **kw)
    with pytest.raises(qattn.KernelArgumentError, match="required"):
        plan.run(q, k, v, None, vs, **kw)
    with pytest.raises(qattn.KernelArgumentError, match="cuda:0"):
        plan.run(q.cpu(), k, v, ks, vs, **kw)
    handle = plan.handle
    plan.release()
    with pytest.raises(ValueError, match="no plan"):
        ops.decode(handle, q, k, v, ks, vs, None, None, None, kw["seq_lens"], None,
                   torch.empty_like(q))


LAYERS = 32


@needs_cuda
def test_graph_captures_a_32_layer_decode_step():
    tg = gpu_helpers()
    batch, kv_len = 8, 4096
    layers = [case_inputs("layer_gqa8", batch, kv_len, seed=i) for i in range(LAYERS)]
    plan = DecodePlan(layer_kernel(), device="cuda", batch=batch, kv_len=kv_len)
    q_static = torch.zeros_like(layers[0][0][0])
    outs = [torch.full_like(q_static, float("nan")) for _ in range(LAYERS)]
    for i, (args, kw, _) in enumerate(layers):  # warm-up: tensor maps encoded, modules loaded
        plan.run(q_static, *args[1:], **kw, out=outs[i])
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i, (args, kw, _) in enumerate(layers):
            ops.decode(plan.handle, q_static, *args[1:], None, None, None, kw["seq_lens"], None,
                       outs[i], None)
    errors = []
    for i, (args, _, want) in enumerate(layers):  # each layer's own q, replayed one at a time
        q_static.copy_(args[0])
        for o in outs:
            o.fill_(float("nan"))
        start = time.perf_counter()
        graph.replay()
        torch.cuda.synchronize()
        errors.append(tg.rel(outs[i], want))
        if i == 0:
            report("graph_replay_ms_incl_sync", (time.perf_counter() - start) * 1e3)
    report("graph_32_layer_max_rel_err", max(errors))
    assert max(errors) <= 1e-2, errors
    assert not any(torch.isnan(o.float()).any() for o in outs)


def timed_calls(fn, n):
    """(host µs per call, GPU µs per call) of n back-to-back calls with no sync in between."""
    from host_time import loop_us
    return loop_us(fn, n)


@needs_cuda
@pytest.mark.parametrize("batch,kv_len", [(1, 128), (8, 4096)])
def test_host_time_per_call(batch, kv_len):
    """Host time with a reused plan of the op, DecodePlan.run and the ctypes launcher: 1000
    back-to-back calls (the GPU time beside it tells whether the loop was host-bound) and the
    median of bursts of 16 calls after a synchronization (tests/host_time.py)."""
    from host_time import burst_us
    args, kw, want = case_inputs("layer_gqa8", batch, kv_len)
    q, k, v, ks, vs = args
    kernel = layer_kernel()
    plan = DecodePlan(kernel, device="cuda", batch=batch, kv_len=kv_len)
    out = torch.empty_like(q)
    lens, h, decode = kw["seq_lens"], plan.handle, ops.decode
    for _ in range(20):
        decode(h, q, k, v, ks, vs, None, None, None, lens, None, out)
    op_fn = lambda: decode(h, q, k, v, ks, vs, None, None, None, lens, None, out)  # noqa: E731
    run_fn = lambda: plan.run(q, k, v, ks, vs, seq_lens=lens, out=out)  # noqa: E731
    op = timed_calls(op_fn, 1000)
    wrapped = timed_calls(run_fn, 1000)
    via_ctypes = timed_calls(lambda: kernel(q, k, v, ks, vs, seq_lens=lens, out=out), 200)
    op_burst, run_burst = burst_us(op_fn), burst_us(run_fn)
    tag = f"b{batch}_kv{kv_len}_splits{plan.splits}"
    report(f"host_us_per_call_torch_ops_decode_{tag}", op[0])
    report(f"gpu_us_per_call_torch_ops_decode_{tag}", op[1])
    report(f"host_us_per_call_DecodePlan_run_{tag}", wrapped[0])
    report(f"host_us_per_call_ctypes_{tag}", via_ctypes[0])
    report(f"burst_host_us_per_call_torch_ops_decode_{tag}", op_burst)
    report(f"burst_host_us_per_call_DecodePlan_run_{tag}", run_burst)
    assert gpu_helpers().rel(out, want) <= 1e-2
    assert op[0] < via_ctypes[0]
    assert op_burst < via_ctypes[0] and run_burst < via_ctypes[0]


@needs_cuda
def test_graph_replay_host_time():
    """A captured 32-layer step: host time of graph.replay() (no per-layer host work)."""
    batch, kv_len = 4, 1024
    args, kw, _ = case_inputs("layer_gqa8", batch, kv_len)
    q, k, v, ks, vs = args
    plan = DecodePlan(layer_kernel(), device="cuda", batch=batch, kv_len=kv_len)
    outs = [torch.empty_like(q) for _ in range(LAYERS)]
    for o in outs:
        plan.run(q, k, v, ks, vs, seq_lens=kw["seq_lens"], out=o)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for o in outs:
            ops.decode(plan.handle, q, k, v, ks, vs, None, None, None, kw["seq_lens"], None, o)
    host, gpu = timed_calls(graph.replay, 50)
    report("graph_replay_32_layers_host_us", host)
    report("graph_replay_32_layers_gpu_us", gpu)
    assert all(torch.equal(o, outs[0]) for o in outs)


@pytest.mark.skipif(not torch_ops.HAS_EXTENSION, reason="the torch extension is not built")
def test_unknown_plan_handle_is_refused():
    with pytest.raises(ValueError, match="no plan 123456"):
        ops.plan_info(123456)
    with pytest.raises(ValueError, match="no plan 123457"):
        ops.release_plan(123457)
