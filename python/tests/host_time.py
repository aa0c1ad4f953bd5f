"""Host time per call of the attn_opt decode run, by every entry point, on a CUDA machine.

What this file is: the measurement behind docs/benchmarks/torch-ops.md, importable by
tests/test_torch_ops.py and runnable alone against whichever qattn is importable:

    python tests/host_time.py KERNEL_DIR [OUT.json]     # KERNEL_DIR holds layer_gqa8.ptx
    python tests/host_time.py --table A.json B.json ...  # runs side by side

Two ways of timing n back-to-back calls with a reused plan and no synchronization between them:

* ``loop``: one run of 1000 calls, host time / 1000 (the page's first method). When the GPU is
  the slower side, the launch queue fills and the host waits, so this bounds the host time from
  above by the GPU time per call;
* ``burst``: 200 bursts of 16 calls, each after a synchronization (the queue never fills); the
  median burst's host time / 16. This is the host cost alone.

Entry points: ``torch.ops.attn_opt.decode`` (the packet), its ``.default`` overload,
``DecodePlan.run``, the extension's dispatcher-free ``run`` where present, and a plain torch launch
(``torch.add(x, 1, out=y)`` on 16 elements) for scale.
"""

import json
import statistics
import sys
import time
from pathlib import Path


def loop_us(fn, n=1000):
    """(host µs per call, GPU µs per call) of n back-to-back calls."""
    import torch
    start_ev, end_ev = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start_ev.record()
    start = time.perf_counter()
    for _ in range(n):
        fn()
    host = (time.perf_counter() - start) / n * 1e6
    end_ev.record()
    torch.cuda.synchronize()
    return host, start_ev.elapsed_time(end_ev) * 1e3 / n


def burst_us(fn, bursts=200, n=16):
    """Median host µs per call over bursts of n calls, each burst after a synchronization."""
    import torch
    times = []
    for _ in range(bursts):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(n):
            fn()
        times.append((time.perf_counter() - start) / n * 1e6)
    torch.cuda.synchronize()
    return statistics.median(times)


def layer_inputs(batch, kv_len, device="cuda"):
    """Inputs of the GQA 8:1 int8 layer kernel (32 query heads, 4 KV heads, head_dim 128)."""
    import torch
    g = torch.Generator(device=device).manual_seed(batch * 7919 + kv_len)
    q = torch.randn(batch, 1, 32, 128, generator=g, device=device).to(torch.bfloat16)
    k = torch.randint(-127, 128, (batch, kv_len, 4, 128), generator=g, device=device,
                      dtype=torch.int8)
    v = torch.randint(-127, 128, (batch, kv_len, 4, 128), generator=g, device=device,
                      dtype=torch.int8)
    ks = torch.rand(batch, kv_len, 4, generator=g, device=device) / 64
    vs = torch.rand(batch, kv_len, 4, generator=g, device=device) / 64
    lens = torch.full((batch,), kv_len, dtype=torch.int32, device=device)
    return q, k, v, ks, vs, lens


def launch_cost_us(fn, calls=100):
    """Mean duration of the driver's launch calls under torch.profiler (None when not traced)."""
    import torch
    try:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                fn()
            torch.cuda.synchronize()
        d = [e.time_range.elapsed_us() for e in prof.events() if "cuLaunchKernel" in e.name]
        return sum(d) / len(d) if d else None
    except Exception:  # a torch without kineto or CUPTI
        return None


def measure(kernel_path, shapes=((1, 128, 0), (8, 4096, 0), (8, 4096, 1), (1, 4096, 0))):
    """{key: µs} for each (batch, kv_len, splits; 0 = auto) and entry point."""
    import torch
    from qattn import torch_ops
    from qattn.torch_ops import DecodePlan, ops
    direct = getattr(torch_ops, "_run_direct", None)
    results = {}
    x, y = torch.ones(16, device="cuda"), torch.empty(16, device="cuda")
    for _ in range(100):
        torch.add(x, 1, out=y)
    results["burst_host_us_torch_add"] = burst_us(lambda: torch.add(x, 1, out=y))
    for batch, kv_len, splits in shapes:
        q, k, v, ks, vs, lens = layer_inputs(batch, kv_len)
        plan = DecodePlan(str(kernel_path), device="cuda", batch=batch, kv_len=kv_len,
                          splits=splits or "auto")
        out = torch.empty_like(q)
        h, packet, overload = plan.handle, ops.decode, ops.decode.default
        entries = {
            "torch_ops_decode": lambda: packet(h, q, k, v, ks, vs, None, None, None, lens, None,
                                               out),
            "torch_ops_decode_default": lambda: overload(h, q, k, v, ks, vs, None, None, None,
                                                         lens, None, out),
            "DecodePlan_run": lambda: plan.run(q, k, v, ks, vs, seq_lens=lens, out=out),
        }
        if direct is not None:
            entries["extension_run"] = lambda: direct(h, q, k, v, ks, vs, None, None, None, lens,
                                                      None, out, None, None)
        tag = f"b{batch}_kv{kv_len}_splits{plan.splits}"
        tag += "_cluster" if plan.cluster_merge else ""
        for name, fn in entries.items():
            for _ in range(50):
                fn()
            host, gpu = loop_us(fn)
            results[f"loop_host_us_{name}_{tag}"] = host
            results[f"loop_gpu_us_{name}_{tag}"] = gpu
            results[f"burst_host_us_{name}_{tag}"] = burst_us(fn)
        cost = launch_cost_us(entries["torch_ops_decode"])
        if cost is not None:
            results[f"driver_launch_us_{tag}"] = cost
        plan.release()
    return results


def table(paths):
    """Prints the burst host times (and loop host / GPU times) of several runs side by side."""
    runs = [(Path(p).stem, json.loads(Path(p).read_text())) for p in paths]
    keys = [k for k in runs[0][1] if k.startswith(("burst_", "loop_", "driver_"))]
    print(f"{'µs per call':78s}" + "".join(f"{name:>16s}" for name, _ in runs))
    for k in keys:
        cells = "".join(f"{r[k]:16.2f}" if isinstance(r.get(k), float) else f"{'-':>16s}"
                        for _, r in runs)
        print(f"{k:78s}{cells}")


def main(argv):
    if len(argv) >= 3 and argv[1] == "--table":
        return table(argv[2:])
    if len(argv) not in (2, 3):
        sys.exit("usage: host_time.py KERNEL_DIR [OUT.json] | "
                 "host_time.py --table A.json B.json ...")
    import qattn
    results = {"qattn": str(Path(qattn.__file__).parent)}
    results.update(measure(Path(argv[1]) / "layer_gqa8.ptx"))
    for key, value in results.items():
        print(f"{key:70s} {value:.2f}" if isinstance(value, float) else f"{key} {value}")
    if len(argv) == 3:
        Path(argv[2]).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main(sys.argv)
