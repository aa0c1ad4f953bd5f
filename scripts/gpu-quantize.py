#!/usr/bin/env python3
"""What this file is: the GPU quantize kernels (attn.quantize.append / .dynamic on sm_90a) built,
checked and measured, in three steps:

  gpu-quantize.py build DIR [--ptxas PTXAS]  here: every variant → DIR/<name>.ptx + launch JSON
                                             (with --ptxas: assembled for sm_90a, no
                                             register spills)
  gpu-quantize.py check DIR [--out F]        on the GPU: every variant × shapes (batch 1 × 1 token,
                                             appends that overflow the cache, batch 512, outlier
                                             channels, all-zero tokens, ±inf / NaN) against
                                             qattn.quant bit for bit (`hadamard` variants: of the
                                             rotated rows): codes, scales, zero points,
                                             untouched rows; and each format's error bound
  gpu-quantize.py bench DIR [--out F]        on the GPU: append bandwidth beside a device-to-device
                                             copy in the same run (JSON lines)

`build` needs only attn-opt (ATTN_OPT, default build/bin/attn-opt) and the standard library; the
other two need torch with CUDA and NumPy, and import qattn from this checkout.
"""
import json
import os
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from gpu_bench_common import ROOT, build_ptx, run_main, spec_module, time_ms

H, D = 8, 128
GRANS = ["per_tensor", "per_head", "per_channel", "per_token", "per_token_head", "per_group<32>",
         "per_group<64>", "per_group<128>", "per_block<1 x 128>"]
FORMATS = [("i8", True), ("i8", False), ("ui8", False), ("f8E4M3FN", True)]
STATIC = ("per_tensor", "per_head", "per_channel")


def _slug(s):
    return re.sub(r"[^A-Za-z0-9]+", "_", s).strip("_")


def variants():
    """{name: quantize() keywords}."""
    v = {}
    for g in GRANS:
        for code, sym in FORMATS:
            v[f"app_{_slug(g)}_{code}_{'sym' if sym else 'asym'}"] = dict(
                op="append", granularity=g, dtype=code, symmetric=sym)
    for src in ("f16", "f32"):
        v[f"app_src_{src}"] = dict(op="append", granularity="per_token_head", src_dtype=src)
        v[f"app_src_{src}_g32_asym"] = dict(op="append", granularity="per_group<32>",
                                            src_dtype=src, dtype="ui8", symmetric=False)
    for sc in ("f16", "bf16"):
        v[f"app_scale_{sc}"] = dict(op="append", granularity="per_token_head", scale_dtype=sc)
        v[f"app_scale_{sc}_asym"] = dict(op="append", granularity="per_group<64>", dtype="i8",
                                         symmetric=False, scale_dtype=sc)
    v["app_d64"] = dict(op="append", granularity="per_token_head", head_dim=64)
    v["app_d256_g128_e4m3"] = dict(op="append", granularity="per_group<128>", head_dim=256,
                                   dtype="f8E4M3FN")
    v["app_h32_per_token"] = dict(op="append", granularity="per_token", heads=32)
    for g, code, sym in [("per_token_head", "i8", True), ("per_group<64>", "i8", False),
                         ("per_token", "f8E4M3FN", True), ("per_block<1 x 128>", "ui8", False)]:
        v[f"dyn_{_slug(g)}_{code}"] = dict(op="dynamic", granularity=g, dtype=code, symmetric=sym)
    # `hadamard` (rows rotated first): registers, lanes and — f32 at head_dim 256 — chunks.
    v["app_had_per_token_head_i8"] = dict(op="append", granularity="per_token_head", hadamard=True)
    v["app_had_per_token_ui8_asym"] = dict(op="append", granularity="per_token", dtype="ui8",
                                           symmetric=False, hadamard=True)
    v["app_had_d256_f32_e4m3"] = dict(op="append", granularity="per_block<1 x 256>",
                                      head_dim=256, src_dtype="f32", dtype="f8E4M3FN",
                                      hadamard=True)
    v["app_had_d64_f16_per_head"] = dict(op="append", granularity="per_head", head_dim=64,
                                         src_dtype="f16", hadamard=True)
    v["dyn_had_per_token_head_i8"] = dict(op="dynamic", granularity="per_token_head",
                                          hadamard=True)
    return v


def spec_text(spec_mod, name, kw):
    kw = dict(kw)
    op = kw.pop("op")
    heads, head_dim = kw.pop("heads", H), kw.pop("head_dim", D)
    return spec_mod.quantize(op, batch=None, tokens=None, capacity=None, heads=heads,
                             head_dim=head_dim, target="sm_90a", name=name, **kw).text


def build(args):
    out = Path(args.dir)
    out.mkdir(parents=True, exist_ok=True)
    spec_mod = spec_module()
    attn_opt = os.environ.get("ATTN_OPT", str(ROOT / "build/bin/attn-opt"))

    def one(item):
        name, kw = item
        src = out / f"{name}.mlir"
        src.write_text(spec_text(spec_mod, name, kw))
        return build_ptx(attn_opt, name, src, out / f"{name}.ptx", args.ptxas)

    vs = variants()
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        errors = [e for e in pool.map(one, vs.items()) if e]
    for e in errors:
        print("ERROR", e)
    what = "assembled for sm_90a without register spills" if args.ptxas else "compiled to PTX"
    print(f"{len(vs) - len(errors)} of {len(vs)} quantize variants {what}")
    return 1 if errors else 0


# ------------------------------------------------------------------------------------------------
# On the GPU
# ------------------------------------------------------------------------------------------------
def _gpu_imports():
    sys.path.insert(0, str(ROOT / "python"))
    import numpy as np
    import torch
    from qattn import quant
    from qattn.gpu_quantize import GpuQuantizeKernel
    from qattn.spec import scale_shape
    return np, torch, quant, GpuQuantizeKernel, scale_shape


def check(args):
    np, torch, quant, Kernel, scale_shape = _gpu_imports()
    fmt_of = {"i8": "i8", "ui8": "u8", "f8E4M3FN": "e4m3"}
    tdt = {"i8": torch.int8, "ui8": torch.uint8, "f8E4M3FN": torch.uint8}
    sdt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
    src_dt = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
    results, failures = [], 0
    rng = np.random.default_rng(0)
    for name, kw in variants().items():
        k = Kernel.from_files(Path(args.dir) / f"{name}.ptx")
        p = k.problem
        h, d = p["heads"], p["head_dim"]
        code, sym, gran = p["code_dtype"], p["symmetric"], p["granularity"]
        sc_t, fmt = p["scale_dtype"], fmt_of[p["code_dtype"]]
        shapes = ([(1, 1, 1, [0]), (3, 5, 8, [0, 4, 2]), (512, 1, 64, None), (2, 0, 4, [0, 1])]
                  if k.append else [(1, 1, 1, None), (3, 7, 7, None), (64, 33, 33, None)])
        for b, s, cap, pos in shapes:
            x = rng.standard_normal((b, s, h, d)).astype(np.float32)
            x[..., 5] *= 30  # outlier channel
            x[..., 1, :] += 3  # a shifted head
            if s:
                x[0, 0] = 0  # an all-zero token
            if b > 2 and s:
                x[2, 0, 0, 7], x[2, 0, 1, 9], x[2, 0, 0, 11] = np.inf, -np.inf, np.nan
            src = torch.from_numpy(x).to(src_dt[p["src_dtype"]]).cuda()
            vals = src.float().cpu().numpy()
            if p.get("hadamard"):  # what the kernel quantizes: rotated rows, non-finite as 0
                vals = quant.hadamard(np.where(np.isfinite(vals), vals, 0))
            if pos is None:
                pos = list(rng.integers(0, cap - s + 1, size=b)) if k.append else None
            positions = torch.tensor(pos, dtype=torch.int32).cuda() if pos is not None else None
            dst = torch.full((b, cap, h, d), 77, dtype=tdt[code]).cuda()
            sshape = tuple(scale_shape(gran, [b, cap, h, d]))
            static = None
            if gran in STATIC:
                clean = np.nan_to_num(vals.reshape(-1, h, d), posinf=0, neginf=0)
                if not clean.size:
                    clean = np.ones((1, h, d), np.float32)
                if sym:
                    static = (quant.round_scale(quant.calibrate(clean, fmt, gran), sc_t), None)
                else:
                    st, zt = quant.calibrate_asym(clean, fmt, gran)
                    static = (quant.round_scale(st, sc_t), zt)
                scales = torch.from_numpy(static[0].astype(np.float32)).to(sdt[sc_t]).cuda()
                zeros = None if sym else torch.from_numpy(static[1]).cuda()
            else:
                scales = torch.full(sshape, 5.0, dtype=sdt[sc_t]).cuda()
                zeros = None if sym else torch.full(sshape, 3, dtype=tdt[code]).cuda()
            k(src, dst, scales, zeros, positions=positions, check_positions=False)
            torch.cuda.synchronize()
            got = dst.cpu().numpy()
            got_s = scales.float().cpu().numpy()
            got_z = zeros.cpu().numpy() if zeros is not None else None
            bad, max_ratio = [], 0.0
            for bi in range(b):
                start = pos[bi] if k.append else 0
                rows = [r for r in range(start, start + s) if 0 <= r < cap]
                untouched = [r for r in range(cap) if r not in rows]
                if untouched and not (got[bi, untouched] == 77).all():
                    bad.append(f"untouched rows b{bi}")
                if not rows:
                    continue
                if sym:
                    c, rs = quant.quantize(vals[bi], fmt, gran, None if static is None else static[0],
                                           scale_dtype=sc_t, nonfinite="saturate")
                    rz = None
                else:
                    c, rs, rz = quant.quantize_asym(vals[bi], fmt, gran,
                                                    *(static or (None, None)), scale_dtype=sc_t,
                                                    nonfinite="saturate")
                gv = (quant.e4m3_from_bits(got[bi, rows]) if code == "f8E4M3FN"
                      else got[bi, rows].astype(np.float32))
                if not np.array_equal(gv, c[:len(rows)].astype(np.float32)):
                    bad.append(f"codes b{bi}")
                if static is None:
                    if not np.array_equal(got_s[bi, rows], rs[:len(rows)]):
                        bad.append(f"scales b{bi}")
                    if not sym and not np.array_equal(got_z[bi, rows], rz[:len(rows)]):
                        bad.append(f"zeros b{bi}")
                # The format's error bound on every finite input: half a step (a whole one when
                # asymmetric: z is rounded too) — plus what x · (1/s), two f32 roundings, may move
                # a value of up to 255 steps: 2^-22 of it (rotated rows, many near the top of the
                # range, meet it); e4m3: half its relative spacing.
                sc = static[0] if static is not None else got_s[bi, rows]
                zp = None if sym else (static[1] if static is not None else got_z[bi, rows])
                x = vals[bi, :len(rows)]
                deq = quant.dequantize(gv, sc, gran, zeros=zp)
                step = quant.dequantize(np.ones_like(gv), sc, gran)
                bound = (np.maximum(step * 2.0 ** -10, np.abs(x) / 16) if code == "f8E4M3FN"
                         else step * (0.5 if sym else 1.0) + (np.abs(x) + 255 * step) * 2.0 ** -22)
                fin = np.isfinite(x)
                with np.errstate(divide="ignore", invalid="ignore"):
                    worst = float(np.max((np.abs(deq - x) / bound)[fin], initial=0))
                max_ratio = max(max_ratio, worst)
                if worst > 1 + 1e-5:
                    bad.append(f"error bound b{bi} ({worst:.3f} of the bound)")
                if len(bad) > 3:
                    break
            results.append({"variant": name, "batch": b, "tokens": s, "capacity": cap,
                            "ok": not bad, "max_error_over_bound": round(max_ratio, 4),
                            "errors": bad[:4]})
            failures += bool(bad)
            pos = None
    if args.out:
        Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in results))
    for r in results:
        if not r["ok"]:
            print("FAIL", json.dumps(r))
    print(f"check: {len(results)} runs, {failures} failures")
    return 1 if failures else 0


def bench(args):
    np, torch, quant, Kernel, scale_shape = _gpu_imports()
    lines = []
    # The device's copy bandwidth: a 1 GiB device-to-device copy (bytes read + written / time).
    a = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    bcopy = torch.empty_like(a)
    copy_ms = time_ms(torch, lambda: bcopy.copy_(a))
    copy_tbs = 2 * a.numel() / copy_ms / 1e9
    del a, bcopy
    cases = [("app_per_token_head_i8_sym", 128, 1024), ("app_per_token_head_i8_sym", 512, 1),
             ("app_per_token_head_f8E4M3FN_sym", 128, 1024), ("app_per_group_64_ui8_asym", 128, 1024),
             ("app_per_token_i8_sym", 128, 1024), ("app_per_channel_i8_sym", 128, 1024)]
    for name, b, s in cases:
        k = Kernel.from_files(Path(args.dir) / f"{name}.ptx")
        p = k.problem
        h, d = p["heads"], p["head_dim"]
        cap = s
        src = torch.randn(b, s, h, d, device="cuda").to(torch.bfloat16)
        dst = torch.empty(b, cap, h, d, device="cuda",
                          dtype=torch.uint8 if p["code_dtype"] != "i8" else torch.int8)
        sshape = tuple(scale_shape(p["granularity"], [b, cap, h, d]))
        scales = torch.full(sshape, 0.05, device="cuda")
        zeros = None if p["symmetric"] else torch.zeros(sshape, device="cuda", dtype=dst.dtype)
        pos = torch.zeros(b, dtype=torch.int32, device="cuda")
        ms = time_ms(torch, lambda: k(src, dst, scales, zeros, positions=pos, check_positions=False))
        moved = src.numel() * 2 + dst.numel()
        if p["dynamic_scales"]:
            moved += scales.numel() * 4 + (zeros.numel() if zeros is not None else 0)
        # The copy peer of the same bytes in the same run: bf16 src → a bf16 buffer.
        peer = torch.empty_like(src)
        peer_ms = time_ms(torch, lambda: peer.copy_(src))
        tbs = moved / ms / 1e9
        lines.append({"variant": name, "batch": b, "tokens": s, "heads": h, "head_dim": d,
                      "granularity": p["granularity"], "code": p["code_dtype"],
                      "symmetric": p["symmetric"], "bytes": moved, "us": round(ms * 1e3, 2),
                      "tb_s": round(tbs, 3), "copy_tb_s": round(copy_tbs, 3),
                      "frac_of_copy": round(tbs / copy_tbs, 3),
                      "same_size_copy_us": round(peer_ms * 1e3, 2)})
        print(json.dumps(lines[-1]), flush=True)
    if args.out:
        Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in lines))
    return 0


if __name__ == "__main__":
    run_main(__doc__, {"build": build, "check": check, "bench": bench})
