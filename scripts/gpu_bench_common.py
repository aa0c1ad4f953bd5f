"""What this file is: what the GPU scripts (gpu-quantize.py, gpu-asym-decode.py,
gpu-prefill-bench.py) share — loading qattn/spec.py without NumPy (to write specs where only the
standard library is installed), timing launches on the GPU, and the subcommand front end."""
import argparse
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def spec_module():
    """python/qattn/spec.py on its own (no NumPy needed to write specs)."""
    m = importlib.util.spec_from_file_location("qattn_spec", ROOT / "python/qattn/spec.py")
    mod = importlib.util.module_from_spec(m)
    m.loader.exec_module(mod)
    return mod


def build_ptx(attn_opt, name, src, ptx, ptxas=None, passes=()):
    """attn-opt `src` → `ptx` (+ launch JSON); with `ptxas`, assemble it for sm_90a too. Returns
    None, or why it failed: attn-opt or ptxas errors, register spills (beyond the one 8-byte
    spill rcp.rn.f32's slow-path subroutine may hold) or WGMMAs ptxas serialized (C7511)."""
    r = subprocess.run([str(attn_opt), str(src), *passes, "--emit=ptx", "-o", str(ptx)],
                       capture_output=True, text=True)
    if r.returncode:
        return f"{name}: attn-opt failed: {r.stderr.strip()}"
    if ptxas:
        r = subprocess.run([ptxas, "-arch=sm_90a", "-v", str(ptx), "-o", os.devnull],
                           capture_output=True, text=True)
        if r.returncode:
            return f"{name}: ptxas failed: {r.stderr.strip()[:400]}"
        m = re.search(r"(\d+) bytes spill stores", r.stderr)
        if m and int(m.group(1)) > 8:
            return f"{name}: spills {m.group(1)} bytes"
        if "C7511" in r.stderr:  # ptxas serialized the WGMMAs (a 2-3x slower kernel)
            return f"{name}: ptxas serialized its WGMMAs (C7511)"
    return None


def time_ms(torch, fn, iters=20, reps=5, warmup=3):
    """Median over `reps` of the mean GPU time (ms) of `iters` back-to-back calls of `fn`. The GPU
    first sleeps while the host queues them all, so host-side launch overhead (Python argument
    checks, ctypes) is not counted — only what the GPU spends (docs/Hopper.md, "Timing")."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        torch.cuda._sleep(20_000_000)  # ~10 ms: longer than queueing `iters` launches
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / iters)
    return sorted(times)[len(times) // 2]


def main(doc, commands):
    """Runs `commands[name](args)` for the subcommand `name DIR [--out F] [--ptxas P]`."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in commands:
        c = sub.add_parser(name)
        c.add_argument("dir")
        if name == "build":
            c.add_argument("--ptxas")
        else:
            c.add_argument("--out")
    args = ap.parse_args()
    return commands[args.cmd](args)


def run_main(doc, commands):
    sys.exit(main(doc, commands))
