#!/usr/bin/env python3
"""What this file is: our prefill kernels on the Table-1/2 shapes of the Character.AI seed (16 query
heads on 1 KV head, head_dim 128, S × batch = 1024 × 32 … 32768 × 1), causal and not, beside
cuDNN (PyTorch SDPA's cuDNN backend, bf16) in the same run:

  gpu-prefill-bench.py build DIR       here: one spec per (S, mode, causal) → PTX (S is static;
                                       MODES=bf16,half_int8 by default; others in MODES below)
  gpu-prefill-bench.py run DIR [--out F]
                                       (MODES=bf16_p16,half_int8_p64,...: paged twins over
                                       shuffled pages, timed beside the contiguous mode:
                                       <mode>_over_contig is paged time / contiguous time;
                                       bf16_r16,half_int8_r64,...: the same with a ragged
                                       batch, cu_seqlens_q over the packed queries)
                                       on the GPU (torch): TFLOP/s of ours (bf16, and half-int8:
                                       int8 Q·Kᵀ with per-(token, head) Q and K scales, int8 V
                                       upcast; half_int8_vh: one V scale per head, applied to
                                       O as in the seed; half_int8_pb: K and V per block of 128
                                       tokens; fp8: e4m3 Q, K, V with per-block scales of
                                       128 tokens, both GEMMs in e4m3; full_int8: half-int8's
                                       inputs, both GEMMs in int8) and of cuDNN, the ratio,
                                       and our relative error against SDPA's bf16 output;
                                       `*_had` modes: Q, K and V rotated by the Walsh–Hadamard
                                       matrix before quantization (`hadamard` specs, O rotated
                                       back in the kernel). DATA=outliers: 4 channels of K and V
                                       ×20, as attn-bench --data outliers. HEAD_DIM=64 (build
                                       and run): the same rows at head_dim 64. Where the
                                       `sageattention` package (PyPI, Triton) is importable,
                                       SageAttention beside them: `sage` is its sageattn call
                                       (Q and K quantized per block to int8 in the call, K
                                       smoothed, fp16 P·V), `sage_kernel` its attention kernel
                                       alone on inputs quantized beforehand, as our modes are
                                       timed; half_int8_x_sage_kernel is the ratio of the two
                                       int8-Q·Kᵀ kernels

`build` needs attn-opt (ATTN_OPT) and the standard library only.
"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from gpu_bench_common import ROOT, run_main, spec_module, time_ms

SHAPES = [(1024, 32), (2048, 16), (4096, 8), (8192, 4), (16384, 2), (32768, 1)]
HQ, HKV = 16, 1
D = int(os.environ.get("HEAD_DIM", "128"))  # the Table-1/2 shapes are 128; HEAD_DIM=64 for d64


def name(s, mode, causal):
    return f"pf_{mode}_s{s}{'_causal' if causal else ''}"


# Mode → (spec keywords, schedule fields the spec fixes; None: attn-select-schedule's defaults,
# for bf16 intra-warpgroup overlap on three stages). `_noov`: no overlap, two stages (`_s3`: three); `_ov2`:
# overlap on two stages; `bf16_pp`: pingpong on top of the overlap; `half_int8_ov`: overlap (three V buffers); `*1p`: one producer
# warpgroup (40 registers) and two consumers of 232.
BF16 = dict(kv_dtype="bf16")
HALF_INT8 = dict(kv_dtype="i8", granularity="per_token_head", q_dtype="i8",
                 q_granularity="per_token_head")
FP8 = dict(kv_dtype="f8E4M3FN", granularity=f"per_block<128x{D}>", q_dtype="f8E4M3FN")
FULL_INT8 = dict(HALF_INT8, mode="full_int8")
HALF_INT8_VH = dict(HALF_INT8, v_granularity="per_head")  # the seed's design: s_v scales O
HALF_INT8_PB = dict(HALF_INT8, granularity=f"per_block<128x{D}>")  # one K and V scale per tile
OV1P = {"intra_wg_overlap": True, "roles": [
    "producer<warpgroups = 1, regs = 40>", "consumer<warpgroups = 2, regs = 232>"]}
MODES = {"bf16": (BF16, None), "half_int8": (HALF_INT8, None), "fp8": (FP8, None),
         "full_int8": (FULL_INT8, None),
         "half_int8_vh": (HALF_INT8_VH, None), "half_int8_pb": (HALF_INT8_PB, None),
         "half_int8_vh_ov1p": (HALF_INT8_VH, OV1P), "half_int8_pb_ov1p": (HALF_INT8_PB, OV1P),
         "half_int8_pb_ov1p_pp": (HALF_INT8_PB, dict(OV1P, pingpong=True)),
         "half_int8_pb_ov1p_pp_s3": (HALF_INT8_PB, dict(OV1P, pingpong=True, stages=3)),
         "half_int8_pb_ov1p_s3": (HALF_INT8_PB, dict(OV1P, stages=3)),
         "half_int8_vh_ov1p_pp": (HALF_INT8_VH, dict(OV1P, pingpong=True)),
         "full_int8_s3": (FULL_INT8, {"stages": 3}),
         "full_int8_ov": (FULL_INT8, {"intra_wg_overlap": True, "stages": 3}),
         "fp8_nopp": (FP8, {"pingpong": False}),
         "fp8_s4": (FP8, {"stages": 4}),
         "fp8_2p": (FP8, {"roles": ["producer<warpgroups = 2, regs = 56>",
                                    "consumer<warpgroups = 2, regs = 200>"]}),
         "half_int8_ov2p": (HALF_INT8, {"intra_wg_overlap": True, "stages": 3, "roles": [
             "producer<warpgroups = 2, regs = 40>", "consumer<warpgroups = 2, regs = 216>"]}),
         "half_int8_ov2p56": (HALF_INT8, {"intra_wg_overlap": True, "stages": 3, "roles": [
             "producer<warpgroups = 2, regs = 56>", "consumer<warpgroups = 2, regs = 200>"]}),
         "fp8_pers": (FP8, {"persistent": True}),
         # A/B of a compiler change: the defaults, built (MODES=…_prev) by another ATTN_OPT.
         "bf16_prev": (BF16, None), "fp8_prev": (FP8, None),
         "half_int8_prev": (HALF_INT8, None), "full_int8_prev": (FULL_INT8, None),
         "half_int8_vh_prev": (HALF_INT8_VH, None), "half_int8_pb_prev": (HALF_INT8_PB, None),
         "bf16_pers": (BF16, {"persistent": True}),
         "half_int8_pb_pers": (HALF_INT8_PB, {"persistent": True}),
         "bf16_pers_prev": (BF16, {"persistent": True}), "fp8_pers_prev": (FP8, {"persistent": True}),
         "half_int8_pb_pers_prev": (HALF_INT8_PB, {"persistent": True}),
         # Two stages: what leaves room for a second set of query tiles in a persistent grid.
         "bf16_pers_s2": (BF16, {"persistent": True, "stages": 2}),
         "half_int8_pb_s2": (HALF_INT8_PB, {"stages": 2}),
         "half_int8_pb_pers_s2": (HALF_INT8_PB, {"persistent": True, "stages": 2}),
         "bf16_noov": (BF16, {"stages": 2, "intra_wg_overlap": False}),
         "bf16_s3": (BF16, {"stages": 3, "intra_wg_overlap": False}),
         "bf16_ov2": (BF16, {"stages": 2, "intra_wg_overlap": True}),
         "bf16_pp": (BF16, {"pingpong": True}),
         "half_int8_ov": (HALF_INT8, {"intra_wg_overlap": True}),
         "half_int8_ov1p": (HALF_INT8, {"intra_wg_overlap": True, "roles": [
             "producer<warpgroups = 1, regs = 40>", "consumer<warpgroups = 2, regs = 232>"]}),
         "half_int8_1p": (HALF_INT8, {"roles": [
             "producer<warpgroups = 1, regs = 40>", "consumer<warpgroups = 2, regs = 232>"]}),
         "half_int8_ov1p_s3": (HALF_INT8, {"intra_wg_overlap": True, "stages": 3, "roles": [
             "producer<warpgroups = 1, regs = 40>", "consumer<warpgroups = 2, regs = 232>"]}),
         # Two CTAs per SM, each one producer (40) and one consumer (216) of 64 query rows, tile_n
         # 64 on two stages (what fits twice), without and with the intra-warpgroup overlap.
         "bf16_2cta": (BF16, {"ctas_per_sm": 2, "tile_n": 64, "stages": 2,
                              "intra_wg_overlap": False, "roles": [
             "producer<warpgroups = 1, regs = 40>", "consumer<warpgroups = 1, regs = 216>"]}),
         "bf16_2cta_ov": (BF16, {"ctas_per_sm": 2, "tile_n": 64, "stages": 2,
                                 "intra_wg_overlap": True, "roles": [
             "producer<warpgroups = 1, regs = 40>", "consumer<warpgroups = 1, regs = 216>"]})}
# Three consumer warpgroups (192 query rows per CTA) without the overlap, two stages: the
# per-CTA fixed cost spread over 1.5 times the rows.
W3 = {"stages": 2, "intra_wg_overlap": False, "pingpong": False,
      "roles": ["producer<warpgroups = 1, regs = 32>", "consumer<warpgroups = 3, regs = 160>"]}
for _m in ("bf16", "half_int8_pb", "half_int8", "fp8"):
    MODES[_m + "_w3"] = (MODES[_m][0], W3)
    MODES[_m + "_w3s3"] = (MODES[_m][0], dict(W3, stages=3))  # the same on three stages
    MODES[_m + "_w3pers"] = (MODES[_m][0], dict(W3, persistent=True))
    MODES[_m + "_w3s3pers"] = (MODES[_m][0], dict(W3, stages=3, persistent=True))
# Paged twins (`_p16`, `_p64`): the same kernel over a pool of pages of 16 or 64 tokens in
# shuffled order, read through a block table (vLLM's layout); timed beside the contiguous mode,
# whose output they must reproduce bit for bit.
# Ragged twins (`_r16`, `_r64`): the paged twin with cu_seqlens_q, every sequence's S queries
# packed as [1, B·S, Hq, D] (FlashAttention's varlen layout), timed the same way.
for _m in ("bf16", "half_int8"):
    for _p in (16, 64):
        MODES[f"{_m}_p{_p}"] = (dict(MODES[_m][0], page_size=_p), MODES[_m][1])
        MODES[f"{_m}_r{_p}"] = (dict(MODES[_m][0], page_size=_p, ragged=True), MODES[_m][1])
# Rotated inputs (`hadamard`): each quantized mode's defaults on Q·H, K·H, V·H.
for _m in ("half_int8", "half_int8_pb", "half_int8_vh", "fp8", "full_int8"):
    MODES[_m + "_had"] = (dict(MODES[_m][0], hadamard=True), None)


def build(args):
    spec = spec_module()
    out = Path(args.dir)
    out.mkdir(parents=True, exist_ok=True)
    attn_opt = os.environ.get("ATTN_OPT", str(ROOT / "build/bin/attn-opt"))
    modes = os.environ.get("MODES", "bf16,half_int8").split(",")
    n = 0
    for s, _ in SHAPES:
        for mode in modes:
            kw, sched = MODES[mode]
            for causal in (False, True):
                nm = name(s, mode, causal)
                # Paged twins: a pool of any size, kv_len / P table entries per sequence.
                paging = {"num_pages": None} if "page_size" in kw else {}
                q_len = None if kw.get("ragged") else s  # ragged: the packed rows, B·S
                text = spec.attention("prefill", batch=None, q_len=q_len, kv_len=None, q_heads=HQ,
                                      kv_heads=HKV, head_dim=D, causal=causal, name=nm,
                                      schedule=sched, **paging, **kw).text
                (out / f"{nm}.mlir").write_text(text)
                subprocess.run([attn_opt, str(out / f"{nm}.mlir"), "--emit=ptx", "-o",
                                str(out / f"{nm}.ptx")], check=True)
                n += 1
    print(f"built {n} kernels into {out}")
    return 0


def sage_peer(torch):
    """SageAttention 1.x (sageattention on PyPI) as the int8-Q·Kᵀ peer, or None where it is not
    installed: (q, k, v [B, S, H, D] bf16, causal) → {"sage": its sageattn call, "sage_kernel":
    its attention kernel on Q and K quantized (per_block_int8, K smoothed) and V made fp16
    beforehand}. Output bf16, [B, S, H, D] (the "NHD" layout)."""
    try:
        import sageattention
        from sageattention.core import attn_false, attn_true, per_block_int8
    except ImportError:
        return None
    print(f"SageAttention {getattr(sageattention, '__version__', '?')} "
          f"({sageattention.__file__})", flush=True)

    def calls(q, k, v, causal):
        kc, vc = k.clone(), v.clone()  # sageattn smooths K in place
        km = k.float().mean(dim=1, keepdim=True)
        qi, qs, ki, ks = per_block_int8(q, (k.float() - km).to(k.dtype), tensor_layout="NHD")
        v16 = v.to(torch.float16)
        attn = attn_true if causal else attn_false
        return {"sage": lambda: sageattention.sageattn(q, kc, vc, tensor_layout="NHD",
                                                       is_causal=causal),
                "sage_kernel": lambda: attn(qi, ki, v16, qs, ks, tensor_layout="NHD",
                                            output_dtype=torch.bfloat16)}
    return calls


def run(args):
    sys.path.insert(0, str(ROOT / "python"))
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import numpy as np
    from qattn.gpu import GpuDecodeKernel
    from qattn.quant import hadamard

    def bench_ms(fn):
        return time_ms(torch, fn, iters=5, reps=3, warmup=1)

    def quant(x, dims):  # symmetric int8 per (batch, token, head) row
        s = torch.clamp(x.float().abs().amax(dim=dims, keepdim=True) / 127, min=1e-8)
        return torch.clamp(torch.round(x.float() / s), -127, 127).to(torch.int8), s[..., 0]

    def quant_block(x, fp8, r=128):  # int8 or e4m3 per block of r tokens of a head
        b_, s_, h_, d_ = x.shape   # scales [B, S/r, H, 1]
        xb = x.float().view(b_, s_ // r, r, h_, d_)
        s = torch.clamp(xb.abs().amax(dim=(2, 4), keepdim=True) / (448 if fp8 else 127), min=1e-8)
        codes = (xb / s).to(torch.float8_e4m3fn) if fp8 else \
            torch.clamp(torch.round(xb / s), -127, 127).to(torch.int8)
        return codes.view(b_, s_, h_, d_), s[:, :, 0].contiguous()

    def paged_args(args, page, gen):
        """(q, k, v, k_scale, v_scale) with K, V and their per-token scales moved into pools of
        `page`-token pages in shuffled order (two spare pages), and the block table."""
        q_, k_, v_, ks_, vs_ = args
        b_, s_ = k_.shape[:2]
        blocks = s_ // page
        perm = torch.randperm(b_ * blocks + 2, generator=gen, device="cuda")[:b_ * blocks]
        table = perm.view(b_, blocks).to(torch.int32)

        def pool(x):
            if x is None:
                return None
            p = torch.zeros((b_ * blocks + 2, page) + tuple(x.shape[2:]), dtype=x.dtype,
                            device="cuda")
            p[table.long()] = x.reshape((b_, blocks, page) + tuple(x.shape[2:]))
            return p
        return (q_, pool(k_), pool(v_), pool(ks_), pool(vs_)), table

    def quantized(q, k, v):  # every mode's inputs from (possibly rotated) q, k, v
        t = {}
        t["qi"], t["qs"] = quant(q, (3,))
        t["ki"], t["ks"] = quant(k, (3,))
        t["vi"], t["vs"] = quant(v, (3,))
        t["vh"], vhs = quant(v, (0, 1, 3))  # one scale per KV head: [1, 1, H] → [H]
        t["vhs"] = vhs.reshape(-1).contiguous()
        t["kb"], t["kbs"] = quant_block(k, fp8=False)
        t["vb"], t["vbs"] = quant_block(v, fp8=False)
        t["q8"], t["q8s"] = quant_block(q, fp8=True)
        t["k8"], t["k8s"] = quant_block(k, fp8=True)
        t["v8"], t["v8s"] = quant_block(v, fp8=True)
        return t

    # The normalized Walsh–Hadamard matrix of order D: qattn's rotation of the identity's rows.
    had = torch.from_numpy(hadamard(np.eye(D, dtype=np.float32))).cuda()

    sage = sage_peer(torch)
    data = os.environ.get("DATA", "gaussian")
    lines = []
    g = torch.Generator(device="cuda").manual_seed(0)
    for s, b in SHAPES:
        q = torch.randn(b, s, HQ, D, generator=g, device="cuda").to(torch.bfloat16)
        k = torch.randn(b, s, HKV, D, generator=g, device="cuda")
        v = torch.randn(b, s, HKV, D, generator=g, device="cuda")
        if data == "outliers":  # the channels of ref::outlierChannels(D): (j·D/4 + 3) mod D
            for c in [(j * D // 4 + 3) % D for j in range(4)]:
                k[..., c] *= 20
                v[..., c] *= 20
        k, v = k.to(torch.bfloat16), v.to(torch.bfloat16)
        plain = quantized(q, k, v)
        rotated = None
        if any(m.endswith("_had") for m in MODES if (Path(args.dir) / f"{name(s, m, False)}.ptx").exists()):
            rotated = quantized(*((x.float() @ had) for x in (q, k, v)))
        qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        for causal in (False, True):
            flops = 4 * b * HQ * s * s * D / (2 if causal else 1)
            row = {"S": s, "B": b, "causal": causal, "data": data}
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                f = lambda: torch.nn.functional.scaled_dot_product_attention(
                    qt, kt, vt, is_causal=causal, enable_gqa=True)
                ref = f().transpose(1, 2).float()
                row["cudnn_tflops"] = round(flops / bench_ms(f) / 1e9, 1)
            if sage:
                for key, fn in sage(q, k, v, causal).items():
                    row[f"{key}_tflops"] = round(flops / bench_ms(fn) / 1e9, 1)
                    row[f"{key}_rel_err"] = float((fn().float() - ref).norm() / ref.norm())
            outs = {}  # contiguous mode -> (output, ms)
            for mode in MODES:
                ptx = Path(args.dir) / f"{name(s, mode, causal)}.ptx"
                if not ptx.exists():  # modes not built (MODES at build time)
                    continue
                kern = GpuDecodeKernel.from_files(ptx)
                kw = dict(MODES[mode][0])
                t = rotated if kw.pop("hadamard", False) else plain
                page = kw.pop("page_size", None)
                ragged = kw.pop("ragged", False)
                qargs = {}
                if kw == BF16:
                    inputs = (q, k, v, None, None)
                elif kw == FP8:
                    inputs, qargs = (t["q8"], t["k8"], t["v8"], t["k8s"], t["v8s"]), {"q_scale": t["q8s"]}
                elif kw == HALF_INT8_VH:
                    inputs, qargs = (t["qi"], t["ki"], t["vh"], t["ks"], t["vhs"]), {"q_scale": t["qs"]}
                elif kw == HALF_INT8_PB:
                    inputs, qargs = (t["qi"], t["kb"], t["vb"], t["kbs"], t["vbs"]), {"q_scale": t["qs"]}
                else:
                    inputs, qargs = (t["qi"], t["ki"], t["vi"], t["ks"], t["vs"]), {"q_scale": t["qs"]}
                if page:
                    inputs, qargs["block_table"] = paged_args(inputs, page, g)
                if ragged:  # every sequence's S rows packed along Sq of a batch of one
                    inputs = (inputs[0].reshape(1, b * s, HQ, -1),) + inputs[1:]
                    if "q_scale" in qargs:
                        qargs["q_scale"] = qargs["q_scale"].reshape(1, b * s, HQ)
                    qargs["cu_seqlens_q"] = torch.arange(0, b * s + 1, s, dtype=torch.int32,
                                                         device="cuda")
                    qargs["max_seqlen_q"] = s
                call = lambda: kern(*inputs, **qargs)
                out = call().float().reshape(b, s, HQ, -1)
                ms = bench_ms(call)
                twin = re.sub(r"_[pr]\d+$", "", mode)
                if page and twin in outs:  # the contiguous twin, timed before it
                    row[f"{mode}_same_as_contig"] = bool(torch.equal(out, outs[twin][0]))
                    row[f"{mode}_over_contig"] = round(ms / outs[twin][1], 4)
                elif not page:  # kept for its paged twins
                    outs[mode] = (out, ms)
                row[f"{mode}_tflops"] = round(flops / ms / 1e9, 1)
                row[f"{mode}_x_cudnn"] = round(row[f"{mode}_tflops"] / row["cudnn_tflops"], 3)
                row[f"{mode}_rel_err"] = float((out - ref).norm() / ref.norm())
                if sage:
                    row[f"{mode}_x_sage_kernel"] = round(
                        row[f"{mode}_tflops"] / row["sage_kernel_tflops"], 3)
            lines.append(row)
            print(json.dumps(row), flush=True)
        del q, k, v, qt, kt, vt, plain, rotated
    if args.out:
        Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in lines))
    return 0


if __name__ == "__main__":
    run_main(__doc__, {"build": build, "run": run})
