#!/usr/bin/env python3
"""What this file is: runs one prefill kernel built by `gpu-prefill-bench.py build` (DIR/pf_MODE_sS.ptx)
three times on the Table-1/2 shape S × (32768 / S) with random inputs, for a profiler to catch a
launch (the second: --launch-skip 1):

  ncu --kernel-name regex:prefill --launch-skip 1 --launch-count 1 --section SourceCounters \\
      --section WarpStateStats --csv --page source --print-source sass \\
      python3 scripts/bench/prefill_once.py DIR MODE [S] > F.csv
  python3 scripts/bench/ncu_stalls.py F.csv

MODE: bf16, half_int8, half_int8_pb (per_block K and V), full_int8 or fp8, or a mode of
gpu-prefill-bench.py named after one of them (bf16_pers, …); needs torch and a GPU.
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
from qattn.gpu import GpuDecodeKernel  # noqa: E402

d, mode = Path(sys.argv[1]), sys.argv[2]
S = int(sys.argv[3]) if len(sys.argv) > 3 else 8192
B, HQ, D = max(1, 32768 // S), 16, 128
kern = GpuDecodeKernel.from_files(d / f"pf_{mode}_s{S}.ptx")
g = torch.Generator(device="cuda").manual_seed(0)
q, k, v = (torch.randn(B, S, h, D, generator=g, device="cuda") for h in (HQ, 1, 1))


def quant_i8(x):  # per (token, head)
    s = torch.clamp(x.abs().amax(dim=3, keepdim=True) / 127, min=1e-8)
    return torch.round(x / s).clamp(-127, 127).to(torch.int8), s[..., 0]


def quant_block(x, fp8, r=128):  # e4m3 or int8 per block of r tokens of a head
    b_, s_, h_, d_ = x.shape
    xb = x.view(b_, s_ // r, r, h_, d_)
    s = torch.clamp(xb.abs().amax(dim=(2, 4), keepdim=True) / (448 if fp8 else 127), min=1e-8)
    codes = (xb / s).to(torch.float8_e4m3fn) if fp8 else \
        torch.round(xb / s).clamp(-127, 127).to(torch.int8)
    return codes.view(b_, s_, h_, d_), s[:, :, 0].contiguous()


if mode.startswith("bf16"):
    args, kw = (q.bfloat16(), k.bfloat16(), v.bfloat16()), {}
else:
    if mode.startswith("fp8"):
        quants = [quant_block(x, fp8=True) for x in (q, k, v)]
    elif mode.startswith("half_int8_pb"):  # per_token_head Q, per_block<128x128> K and V
        quants = [quant_i8(q), quant_block(k, fp8=False), quant_block(v, fp8=False)]
    else:
        quants = [quant_i8(x) for x in (q, k, v)]
    (q8, qs), (k8, ks), (v8, vs) = quants
    args, kw = (q8, k8, v8, ks, vs), {"q_scale": qs}
for _ in range(3):
    kern(*args, **kw)
torch.cuda.synchronize()
