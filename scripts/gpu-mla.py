#!/usr/bin/env python3
"""What this file is: the sm_90a MLA decode kernels (attn.mla_decode: FP8 sparse with and
without the 2-CTA crossover, dense FP8, dense bf16) and the kernels that write their FP8 cache
(attn.quantize.mla_append from bf16, f16, f32) built, checked and measured, in three steps:

  gpu-mla.py build DIR [--ptxas PTXAS]  here: every variant → DIR/<name>.ptx + launch JSON (with
                                        --ptxas: assembled for sm_90a, no register spills)
  gpu-mla.py check DIR [--out F]        on the GPU: every variant × shapes (1 key; top-k not a
                                        multiple of 64 and larger than the cache; invalid, repeated
                                        and out-of-range indices; an empty cache; batch 64;
                                        outlier channels; causal; per-batch lengths) against the
                                        float64 reference of the quantized math (qattn.mla) and of
                                        the unquantized one
                                        (env MLA_VARIANTS=a,b: those only; MLA_QUICK=1: the
                                        three small shapes, for compute-sanitizer)
  gpu-mla.py bench DIR [--out F]        on the GPU: FlashMLA's configuration (batch 128, 128 heads,
                                        s_q 2, top-2048) with crossover on and off in the same run,
                                        TFLOP/s as FlashMLA counts them (2·h·(Dk + Dv) per key)

`build` needs only attn-opt (ATTN_OPT, default build/bin/attn-opt) and the standard library; the
other two need torch with CUDA and NumPy, and import qattn from this checkout.
"""
import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from gpu_bench_common import ROOT, build_ptx, run_main, spec_module, time_ms


def variants():
    """{name: mla_decode() keywords} (batch, s_q, cache length and top-k dynamic)."""
    sp = dict(batch=None, sq=None, kv_len=None, topk=None)
    dn = dict(batch=None, sq=None, kv_len=None, sparse=False)
    return {
        "sp_x_h128": dict(sp, heads=128, crossover=True),
        "sp_1_h128": dict(sp, heads=128, crossover=False),
        "sp_1_h64": dict(sp, heads=64),
        "sp_x_causal_lens": dict(sp, heads=128, crossover=True, causal=True, seq_lens=True),
        "dn_x_fp8_causal": dict(dn, heads=128, crossover=True, causal=True, seq_lens=True),
        "dn_bf16_h64_causal": dict(dn, heads=64, fp8=False, causal=True, seq_lens=True),
        "dn_bf16_h128": dict(dn, heads=128, fp8=False),
    }


QUANT_VARIANTS = {f"q_{d}": d for d in ("bf16", "f16", "f32")}


def build(args):
    out = Path(args.dir)
    out.mkdir(parents=True, exist_ok=True)
    spec_mod = spec_module()
    attn_opt = os.environ.get("ATTN_OPT", str(ROOT / "build/bin/attn-opt"))

    def one(item):
        name, kw = item
        src = out / f"{name}.mlir"
        src.write_text(spec_mod.mla_decode(name=name, **kw).text)
        return build_ptx(attn_opt, name, src, out / f"{name}.ptx", args.ptxas,
                         passes=("--attn-select-schedule",))

    def one_quant(item):
        name, src_dtype = item
        src = out / f"{name}.mlir"
        src.write_text(spec_mod.mla_quantize(batch=None, tokens=None, capacity=None,
                                             src_dtype=src_dtype, name=name).text)
        return build_ptx(attn_opt, name, src, out / f"{name}.ptx")

    qerrors = [e for e in map(one_quant, QUANT_VARIANTS.items()) if e]
    vs = variants()
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        errors = [e for e in pool.map(one, vs.items()) if e]
    for e in errors + qerrors:
        print("ERROR", e)
    what = ("assembled for sm_90a without register spills or serialized WGMMAs" if args.ptxas
            else "compiled to PTX")
    print(f"{len(vs) - len(errors)} of {len(vs)} MLA variants {what}")
    return 1 if errors or qerrors else 0


# ------------------------------------------------------------------------------------------------
# On the GPU
# ------------------------------------------------------------------------------------------------
def _gpu_imports():
    sys.path.insert(0, str(ROOT / "python"))
    import numpy as np
    import torch
    from qattn import mla, quant
    from qattn.gpu_mla import GpuMLAKernel
    return np, torch, mla, quant, GpuMLAKernel


def _inputs(np, mla, quant, rng, p, b, sq, t, topk, outliers):
    """q (bf16-exact f32), the cache as the kernel reads it, the f32 cache it came from, indices,
    lengths."""
    dv, dk = p["head_dim_v"], p["head_dim_v"] + p["rope_dim"]
    q = quant.round_bf16(rng.standard_normal((b, sq, p["heads"], dk)).astype(np.float32))
    kv = rng.standard_normal((b, t, dk)).astype(np.float32)
    if outliers:
        kv[..., [3, 77, 300, 511]] *= 20
        q[..., [5, 200]] *= 8
    if p["kv_format"] == "bf16":
        kv = quant.round_bf16(kv)
        cache, deq = kv, kv
    else:
        cache = mla.pack_fp8(kv, dv, p["quant_tile"])
        deq = mla.unpack_fp8(cache, dv, p["rope_dim"], p["quant_tile"])
    idx = None
    if p["sparse"]:
        # Mostly valid positions, with -1, out-of-range ones and repeats mixed in.
        idx = rng.integers(-1, t + 3, size=(b, sq, topk)).astype(np.int32) if t else \
            np.full((b, sq, topk), -1, np.int32)
    lens = rng.integers(0, t + 1, size=b).astype(np.int32) if p["seq_lens"] else None
    if lens is not None and b:
        lens[0] = t  # one full-length element
    return q, cache, kv, deq, idx, lens


def check(args):
    np, torch, mla, quant, Kernel = _gpu_imports()
    results, failures = check_quantize(np, torch, mla, quant, Path(args.dir))
    shapes = [  # (batch, s_q, cache length, top-k, outliers)
        (1, 1, 1, 1, False), (2, 2, 300, 100, False), (3, 1, 1000, 2048, False),
        (1, 2, 0, 64, False), (64, 2, 777, 256, False), (2, 1, 500, 300, True)]
    if os.environ.get("MLA_QUICK"):  # sanitizer runs: the three small shapes
        shapes = shapes[:3]
    only = [v for v in os.environ.get("MLA_VARIANTS", "").split(",") if v]
    rng = np.random.default_rng(0)
    for name in variants():
        if only and name not in only:
            continue
        k = Kernel.from_files(Path(args.dir) / f"{name}.ptx")
        p = k.problem
        for b, sq, t, topk, outl in shapes:
            q, cache, kv, deq, idx, lens = _inputs(np, mla, quant, rng, p, b, sq, t, topk, outl)
            tq = torch.from_numpy(q).to(torch.bfloat16).cuda()
            tkv = (torch.from_numpy(cache).to(torch.bfloat16) if p["kv_format"] == "bf16"
                   else torch.from_numpy(cache)).cuda()
            tidx = torch.from_numpy(idx).cuda() if idx is not None else None
            tlens = torch.from_numpy(lens).cuda() if lens is not None else None
            out = torch.full((b, sq, p["heads"], p["head_dim_v"]), float("nan"),
                             dtype=torch.bfloat16, device="cuda")
            k(tq, tkv, tidx, seq_lens=tlens, out=out)
            torch.cuda.synchronize()
            got = out.float().cpu().numpy().astype(np.float64)
            kw = dict(indices=idx, seq_lens=lens, causal=p["causal"],
                      softmax_scale=p["softmax_scale"])
            ref_q = mla.reference(q, deq, p["head_dim_v"], **kw)
            ref_u = mla.reference(q, kv, p["head_dim_v"], **kw)

            def rel(ref):
                n = np.linalg.norm(ref)
                return float(np.linalg.norm(got - ref) / n) if n > 0 else float(np.abs(got).max(initial=0))
            finite = bool(np.isfinite(got).all())
            eq, eu = rel(ref_q), rel(ref_u)
            ok = finite and eq <= 1e-2
            results.append({"variant": name, "batch": b, "sq": sq, "kv_len": t,
                            "topk": topk if p["sparse"] else None, "outliers": outl,
                            "ok": ok, "rel_err_quant": round(eq, 6), "rel_err_unquant": round(eu, 6),
                            "finite": finite})
            failures += not ok
            print(json.dumps(results[-1]), flush=True)
    if args.out:
        Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in results))
    for r in results:
        if not r["ok"]:
            print("FAIL", json.dumps(r))
    print(f"check: {len(results)} runs, {failures} failures")
    return 1 if failures else 0


def check_quantize(np, torch, mla, quant, d):
    """The quantize kernels against pack_fp8, byte for byte; rows outside the append untouched."""
    from qattn.gpu_mla import GpuMLAQuantizeKernel
    results, failures = [], 0
    rng = np.random.default_rng(1)
    dt = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
    for name, src_dtype in QUANT_VARIANTS.items():
        k = GpuMLAQuantizeKernel.from_files(d / f"{name}.ptx")
        for b, s, cap, pos in [(1, 1, 1, [0]), (3, 5, 8, [0, 6, -2]), (512, 2, 4, None)]:
            x = rng.standard_normal((b, s, 576)).astype(np.float32)
            x[0, 0, 130] = 900.0
            x[0, 0, 256:384] = 0
            x[-1, -1, 7], x[-1, -1, 300], x[-1, -1, 11], x[-1, -1, 520] = np.inf, -np.inf, np.nan, np.nan
            src = torch.from_numpy(x).to(dt[src_dtype]).cuda()
            vals = src.float().cpu().numpy()
            if pos is None:
                pos = list(rng.integers(0, cap - s + 1, size=b))
            cache = torch.full((b, cap, 656), 77, dtype=torch.uint8, device="cuda")
            k(src, cache, torch.tensor(pos, dtype=torch.int32, device="cuda"))
            got = cache.cpu().numpy()
            want = mla.pack_fp8(vals)
            bad = 0
            for bi in range(b):
                rows = [pos[bi] + i for i in range(s)]
                for i, r in enumerate(rows):
                    if 0 <= r < cap and not np.array_equal(got[bi, r], want[bi, i]):
                        bad += 1
                untouched = [r for r in range(cap) if r not in rows]
                bad += int(not (got[bi, untouched] == 77).all())
            results.append({"variant": name, "batch": b, "tokens": s, "capacity": cap,
                            "ok": bad == 0, "bad_rows": bad})
            failures += bad > 0
            print(json.dumps(results[-1]), flush=True)
    return results, failures


def bench(args):
    np, torch, mla, quant, Kernel = _gpu_imports()
    lines = []
    b, sq, h, topk, t = 128, 2, 128, 2048, 8192
    dv, dk = 512, 576
    g = torch.Generator(device="cuda").manual_seed(0)
    q = torch.randn(b, sq, h, dk, device="cuda", generator=g).to(torch.bfloat16)
    # Random tokens: codes and scales as the format holds them (content does not change timing).
    cache = torch.randint(0, 256, (b, t, 656), device="cuda", dtype=torch.uint8, generator=g)
    codes = cache[..., :dv]
    codes[(codes & 0x7F) == 0x7F] = 0  # no NaN codes
    cache[..., dv:dv + 16] = torch.full((b, t, 4), 0.01, device="cuda").view(torch.uint8).view(b, t, 16)
    cache[..., dv + 16:] = torch.randn(b, t, 64, device="cuda", generator=g).to(
        torch.bfloat16).view(torch.uint8).view(b, t, 128)
    idx = torch.stack([torch.randperm(t, device="cuda", generator=g)[:topk].to(torch.int32)
                       for _ in range(b * sq)]).view(b, sq, topk)
    flops = 2.0 * b * sq * h * topk * (dk + dv)
    times = {}
    for name in ("sp_x_h128", "sp_1_h128"):
        k = Kernel.from_files(Path(args.dir) / f"{name}.ptx")
        out = torch.empty(b, sq, h, dv, dtype=torch.bfloat16, device="cuda")
        ms = time_ms(torch, lambda: k(q, cache, idx, out=out))
        times[name] = ms
        lines.append({"variant": name, "crossover": k.schedule["crossover"], "batch": b, "sq": sq,
                      "heads": h, "topk": topk, "kv_len": t, "us": round(ms * 1e3, 1),
                      "tflops": round(flops / ms / 1e9, 1)})
        print(json.dumps(lines[-1]), flush=True)
    lines.append({"crossover_speedup": round(times["sp_1_h128"] / times["sp_x_h128"], 3)})
    print(json.dumps(lines[-1]), flush=True)
    if args.out:
        Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in lines))
    return 0


if __name__ == "__main__":
    run_main(__doc__, {"build": build, "check": check, "bench": bench})
