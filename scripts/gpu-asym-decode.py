#!/usr/bin/env python3
"""What this file is: asymmetric (zero-point) int8 / uint8 K/V decode on the GPU beside the
symmetric int8 kernel, on the Table-3 rows (q_len 3, 16 query heads on 1 KV head, head_dim 128,
per_token_head scales), in the same run:

  gpu-asym-decode.py build DIR     here: the three specs (i8 sym, i8 asym, ui8 asym) → PTX
  gpu-asym-decode.py run DIR [--out F]
                                   on the GPU (torch, NumPy): time per row (CUDA events around
                                   back-to-back launches queued while the GPU sleeps), effective
                                   bandwidth (codes + scales + zero points), and the relative
                                   error against dequantize-then-attend in fp32 on skewed data

`build` needs attn-opt (ATTN_OPT) and the standard library only.
"""
import json
import math
import os
import subprocess
import sys
from pathlib import Path

from gpu_bench_common import ROOT, run_main, spec_module, time_ms

ROWS = [(1024, 256), (2048, 128), (4096, 64), (8192, 32), (16384, 16), (32768, 8), (65536, 4),
        (131072, 2)]
KINDS = {"i8_sym": ("i8", True), "i8_asym": ("i8", False), "ui8_asym": ("ui8", False)}


def build(args):
    spec = spec_module()
    out = Path(args.dir)
    out.mkdir(parents=True, exist_ok=True)
    attn_opt = os.environ.get("ATTN_OPT", str(ROOT / "build/bin/attn-opt"))
    for name, (dtype, sym) in KINDS.items():
        text = spec.attention("decode", batch=None, q_len=3, kv_len=None, q_heads=16, kv_heads=1,
                              head_dim=128, kv_dtype=dtype, granularity="per_token_head",
                              symmetric=sym, name=name).text
        (out / f"{name}.mlir").write_text(text)
        subprocess.run([attn_opt, str(out / f"{name}.mlir"), "--emit=ptx", "-o",
                        str(out / f"{name}.ptx")], check=True)
    print(f"built {len(KINDS)} kernels into {out}")
    return 0


def run(args):
    sys.path.insert(0, str(ROOT / "python"))
    import torch
    from qattn.gpu import GpuDecodeKernel

    kernels = {n: GpuDecodeKernel.from_files(Path(args.dir) / f"{n}.ptx") for n in KINDS}
    def time_us(fn):
        return time_ms(torch, fn) * 1e3

    def quantize(x, dtype, sym):
        if sym:
            s = torch.clamp(x.abs().amax(dim=3, keepdim=True) / 127, min=1e-8)
            c = torch.clamp(torch.round(x / s), -127, 127).to(torch.int8)
            return c, s[..., 0], None
        lo, hi = (-128, 127) if dtype == "i8" else (0, 255)
        mn = torch.clamp(x.amin(dim=3, keepdim=True), max=0)
        mx = torch.clamp(x.amax(dim=3, keepdim=True), min=0)
        s = torch.clamp((mx - mn) / (hi - lo), min=1e-8)
        z = torch.clamp(torch.round(lo - mn / s), lo, hi)
        tdt = torch.int8 if dtype == "i8" else torch.uint8
        c = torch.clamp(torch.round(x / s + z), lo, hi).to(tdt)
        return c, s[..., 0], z[..., 0].to(tdt)

    def dequant(c, s, z):
        x = c.float() - (z.float()[..., None] if z is not None else 0)
        return x * s[..., None]

    lines = []
    g = torch.Generator(device="cuda").manual_seed(0)
    for ctx, batch in ROWS:
        q = torch.randn(batch, 3, 16, 128, generator=g, device="cuda").to(torch.bfloat16)
        k = torch.randn(batch, ctx, 1, 128, generator=g, device="cuda")
        k += 4 * torch.rand(128, generator=g, device="cuda")  # skewed: shifted channels
        v = 2 * torch.randn(batch, ctx, 1, 128, generator=g, device="cuda").abs()
        row = {"ctx": ctx, "batch": batch}
        for name, (dtype, sym) in KINDS.items():
            kc, ks, kz = quantize(k, dtype, sym)
            vc, vs, vz = quantize(v, dtype, sym)
            kw = {} if sym else {"k_zero": kz, "v_zero": vz}
            kern = kernels[name]
            out = kern(q, kc, vc, ks, vs, **kw)
            us = time_us(lambda: kern(q, kc, vc, ks, vs, out=out, **kw))
            # Error on batch element 0 (fp32 dequantize-then-attend).
            kk, vv = dequant(kc[0], ks[0], None if sym else kz[0]), dequant(vc[0], vs[0], None if sym else vz[0])
            sc = torch.einsum("ihd,thd->hit", q[0].float(), kk.expand(-1, 16, -1)) / math.sqrt(128)
            want = torch.einsum("hit,thd->ihd", torch.softmax(sc, -1), vv.expand(-1, 16, -1))
            ref_u = torch.einsum("hit,thd->ihd", torch.softmax(
                torch.einsum("ihd,thd->hit", q[0].float(), k[0].expand(-1, 16, -1)) / math.sqrt(128), -1),
                v[0].expand(-1, 16, -1))
            bytes_ = 2 * batch * ctx * 128 + 2 * batch * ctx * 4 + (0 if sym else 2 * batch * ctx)
            want16 = want.to(torch.bfloat16).float()  # the reference in the output's type
            row[name] = {"us": round(us, 2), "tb_s": round(bytes_ / us / 1e6, 3),
                         "rel_err_dequant": float((out[0].float() - want).norm() / want.norm()),
                         "rel_err_dequant_bf16": float((out[0].float() - want16).norm() / want16.norm()),
                         "rel_err_unquant": float((out[0].float() - ref_u).norm() / ref_u.norm())}
        lines.append(row)
        print(json.dumps(row), flush=True)
    if args.out:
        Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in lines))
    return 0


if __name__ == "__main__":
    run_main(__doc__, {"build": build, "run": run})
