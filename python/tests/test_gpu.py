"""qattn on a GPU: decode kernels compiled by attn-opt, launched on torch CUDA tensors.

Skipped without torch + CUDA. Each case builds a spec, launches it through ``qattn.build(...)``
(or, on a GPU machine without attn-opt, loads the PTX + metadata prebuilt by
``python python/tests/test_gpu.py --prebuild DIR`` from ``$QATTN_GPU_KERNELS``), and compares the
output with a float32 torch reference of the quantized math (dequantized K/V) and of the
unquantized math.
"""

import math
import os
import sys
from pathlib import Path

import pytest

if __name__ == "__main__":  # run as a script from a checkout: use its qattn
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import qattn  # noqa: E402

CASES = {
    # name: spec keywords; the launch shapes are in SHAPES
    "i8_mqa_causal": dict(q_len=3, q_heads=16, kv_heads=1, head_dim=128, kv_dtype="i8",
                          granularity="per_token_head", causal=True, seq_lens=True,
                          mode="half_int8"),
    "fp8_gqa": dict(q_len=1, q_heads=8, kv_heads=2, head_dim=64, kv_dtype="f8E4M3FN",
                    granularity="per_token", mode="fp8"),
    "bf16_mha": dict(q_len=2, q_heads=4, kv_heads=4, head_dim=128, kv_dtype="bf16",
                     granularity=None, seq_lens=True),
    # int8 queries: Q·Kᵀ on int8 tensor cores (S = s_q · s_k · q̂·k̂)
    "i8q_gqa": dict(q_len=2, q_heads=16, kv_heads=2, head_dim=128, kv_dtype="i8",
                    granularity="per_token_head", q_dtype="i8", q_granularity="per_token_head",
                    causal=True, seq_lens=True),
    # int8 queries with one scale per token for all its heads (q_scale [B, S]); GQA 8:1 at q_len 4
    # puts two tokens in a consumer thread's two rows
    "i8qt_gqa": dict(q_len=4, q_heads=32, kv_heads=4, head_dim=128, kv_dtype="i8",
                     granularity="per_token", q_dtype="i8", q_granularity="per_token",
                     causal=True, seq_lens=True),
    # asymmetric caches: zero points folded into the producer's conversion (k̂ − z exact in bf16)
    "i8asym_gqa": dict(q_len=2, q_heads=8, kv_heads=2, head_dim=128, kv_dtype="i8",
                       granularity="per_token_head", symmetric=False, seq_lens=True),
    "u8asym_mqa": dict(q_len=3, q_heads=16, kv_heads=1, head_dim=64, kv_dtype="ui8",
                       granularity="per_token", symmetric=False, causal=True),
    # prefill: the same kernel over query chunks (64 / pack tokens per CTA)
    "prefill_gqa_causal": dict(kind="prefill", q_len=70, q_heads=8, kv_heads=2, head_dim=128,
                               kv_dtype="bf16", granularity=None, causal=True, seq_lens=True),
    # prefill with a dynamic query length (a kernel parameter): q_len 0 in CASES means "?"
    "prefill_dyn_mha": dict(kind="prefill", q_len=None, q_heads=4, kv_heads=4, head_dim=64,
                            kv_dtype="bf16", granularity=None, causal=True),
    "prefill_i8q_mqa": dict(kind="prefill", q_len=33, q_heads=16, kv_heads=1, head_dim=128,
                            kv_dtype="i8", granularity="per_token_head", q_dtype="i8",
                            q_granularity="per_token_head"),
    "prefill_i8qt_gqa": dict(kind="prefill", q_len=77, q_heads=16, kv_heads=4, head_dim=128,
                             kv_dtype="i8", granularity="per_token", q_dtype="i8",
                             q_granularity="per_token", causal=True),
    # int8 queries at head_dim 64 (two s8 K-steps per Q·Kᵀ), GQA 4:1, causal, ragged lengths
    "prefill_i8q_d64": dict(kind="prefill", q_len=70, q_heads=8, kv_heads=2, head_dim=64,
                            kv_dtype="i8", granularity="per_token_head", q_dtype="i8",
                            q_granularity="per_token_head", causal=True, seq_lens=True),
    # fp8 prefill: both GEMMs on e4m3 tensor cores, one scale per block of 128 tokens of a head
    # (queries: 64), P rounded to e4m3
    "prefill_fp8_mqa": dict(kind="prefill", q_len=100, q_heads=16, kv_heads=1, head_dim=128,
                            kv_dtype="f8E4M3FN", granularity="per_block<128x128>",
                            q_dtype="f8E4M3FN", q_granularity="per_block<64x128>", causal=True),
    # the same at head_dim 64 (K in 64-byte swizzled rows, V in plain ones), GQA 4:1
    "prefill_fp8_d64": dict(kind="prefill", q_len=77, q_heads=16, kv_heads=4, head_dim=64,
                            kv_dtype="f8E4M3FN", granularity="per_block<128x64>",
                            q_dtype="f8E4M3FN", q_granularity="per_block<64x64>", causal=True),
    # full_int8 prefill: both GEMMs on int8 tensor cores, P quantized to u8 per row and tile
    "prefill_full_int8_gqa": dict(kind="prefill", q_len=77, q_heads=16, kv_heads=4, head_dim=128,
                                  kv_dtype="i8", granularity="per_token_head", q_dtype="i8",
                                  q_granularity="per_token_head", mode="full_int8", causal=True,
                                  seq_lens=True),
    # FA3's persistent grid: one CTA per SM walks the (query chunk, group, batch) items
    "prefill_persistent": dict(kind="prefill", q_len=130, q_heads=8, kv_heads=2, head_dim=128,
                               kv_dtype="bf16", granularity=None, causal=True, seq_lens=True,
                               schedule={"persistent": True}),
}
SHAPES = {  # (batch, kv_len, splits)
    "i8_mqa_causal": [(4, 1000, "auto"), (1, 1, 1), (2, 4096, 3), (1, 4096, "auto")],  # 32: wide
    "fp8_gqa": [(3, 257, "auto"), (16, 2048, 1)],
    "bf16_mha": [(2, 1, "auto"), (2, 777, 2)],
    "i8q_gqa": [(5, 1500, "auto"), (1, 33, 1), (70, 300, "auto")],  # 140 CTAs: the 2-CTA kernel
    "i8qt_gqa": [(3, 1000, "auto"), (2, 300, 2)],
    "i8asym_gqa": [(3, 1000, "auto"), (1, 1, 1), (2, 300, 2)],
    "u8asym_mqa": [(4, 777, "auto"), (2, 64, 1)],
    "prefill_gqa_causal": [(3, 70, "auto"), (2, 300, 1), (1, 5, "auto")],
    "prefill_i8q_mqa": [(2, 500, "auto")],
    "prefill_i8qt_gqa": [(2, 500, "auto"), (3, 77, "auto")],
    "prefill_i8q_d64": [(3, 70, "auto"), (2, 300, 1)],
    "prefill_dyn_mha": [(2, 300, "auto", 200), (1, 90, "auto", 129), (3, 10, "auto", 1)],
    "prefill_fp8_mqa": [(2, 300, "auto"), (1, 100, "auto")],
    "prefill_fp8_d64": [(3, 77, "auto"), (2, 500, "auto")],
    "prefill_persistent": [(3, 500, "auto"), (1, 64, "auto")],
    "prefill_full_int8_gqa": [(2, 300, "auto"), (1, 77, "auto")],
}


# `hadamard` end to end: the quantize kernel rotates (attn.quantize.dynamic with hadamard) what
# the rotated prefill kernel reads (attn.attention with hadamard); both also without it.
HADAMARD = {
    **{f"had_quantize{sfx}": dict(op="dynamic", batch=None, tokens=None, heads=4, head_dim=128,
                                  src_dtype="f32", dtype="i8", granularity="per_token_head",
                                  hadamard=h, target="sm_90a") for sfx, h in (("", True), ("_plain", False))},
    **{f"had_prefill{sfx}": dict(q_len=130, q_heads=4, kv_heads=4, head_dim=128, kv_dtype="i8",
                                 granularity="per_token_head", q_dtype="i8",
                                 q_granularity="per_token_head", causal=True, hadamard=h)
       for sfx, h in (("", True), ("_plain", False))},
}


def spec_for(name):
    if name in HADAMARD:
        kw = dict(HADAMARD[name])
        if name.startswith("had_quantize"):
            return qattn.quantize(kw.pop("op"), name=name, **kw)
        return qattn.attention("prefill", batch=None, kv_len=None, name=name, **kw)
    kw = dict(CASES[name])
    gran = kw.pop("granularity")
    if gran is not None:
        kw["granularity"] = gran
    kind = kw.pop("kind", "decode")
    return qattn.attention(kind, batch=None, kv_len=None, name=name, **kw)


def kernel_for(name):
    pre = os.environ.get("QATTN_GPU_KERNELS")
    if pre:
        if name.startswith("had_quantize"):
            from qattn.gpu_quantize import GpuQuantizeKernel
            return GpuQuantizeKernel.from_files(Path(pre) / f"{name}.ptx")
        return qattn.GpuDecodeKernel.from_files(Path(pre) / f"{name}.ptx")
    return qattn.build(spec_for(name))


torch = pytest.importorskip("torch") if __name__ != "__main__" else None
if torch is not None and not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)


def quantize(x, dtype, gran):
    """Symmetric quantization of x [B, S, H, D] (float32) as docs/GPUDecode.md: codes, scales."""
    if dtype == "bf16":
        return x.to(torch.bfloat16), None
    if gran.startswith("per_block<"):  # r tokens of a head share a scale: [B, ceil(S/r), H, 1]
        r = block_rows(gran)
        b, sl, h, d = x.shape
        nb = -(-sl // r)
        xp = torch.zeros(b, nb * r, h, d, device=x.device)
        xp[:, :sl] = x
        s = torch.clamp(xp.view(b, nb, r, h, d).abs().amax(dim=(2, 4)) / 448.0, min=1e-8)
        y = x / s.repeat_interleave(r, dim=1)[:, :sl, :, None]
        return y.to(torch.float8_e4m3fn), s[..., None].contiguous()
    dims = {"per_token_head": (3,), "per_token": (2, 3)}[gran]
    qmax = 127.0 if dtype == "i8" else 448.0
    s = torch.clamp(x.abs().amax(dim=dims, keepdim=True) / qmax, min=1e-8)
    y = x / s
    if dtype == "i8":
        codes = torch.clamp(torch.sign(y) * torch.floor(y.abs() + 0.5), -127, 127).to(torch.int8)
    else:
        codes = y.to(torch.float8_e4m3fn)
    return codes, s.reshape(s.shape[:2] + ((x.shape[2],) if gran == "per_token_head" else ()))


def quantize_asym(x, dtype, gran):
    """Asymmetric quantization of x [B, S, H, D] (docs/QuantSchemes.md): codes, scales, zeros."""
    dims = {"per_token_head": (3,), "per_token": (2, 3)}[gran]
    lo, hi = (-128, 127) if dtype == "i8" else (0, 255)
    mn = torch.clamp(x.amin(dim=dims, keepdim=True), max=0)
    mx = torch.clamp(x.amax(dim=dims, keepdim=True), min=0)
    s = torch.clamp((mx - mn) / (hi - lo), min=1e-8)
    z = torch.clamp(torch.round(lo - mn / s), lo, hi)
    codes = torch.clamp(torch.round(x / s + z), lo, hi)
    tdt = torch.int8 if dtype == "i8" else torch.uint8
    shape = s.shape[:2] + ((x.shape[2],) if gran == "per_token_head" else ())
    return codes.to(tdt), s.reshape(shape), z.reshape(shape).to(tdt)


def block_rows(gran):
    """r of per_block<r x c> (1 for the other granularities)."""
    return int(gran[len("per_block<"):].split("x")[0]) if gran and gran.startswith("per_block<") else 1


def dequant(codes, s, z=None, rows=1):
    x = codes.float()
    if s is None:
        return x
    if s.dim() == 4:  # per_block: [B, ceil(S/rows), H, 1]
        return x * s.repeat_interleave(rows, dim=1)[:, :x.shape[1]]
    if z is not None:
        x = x - (z.float()[..., None] if z.dim() == 3 else z.float()[..., None, None])
    return x * (s[..., None] if s.dim() == 3 else s[..., None, None])


def reference(q, k, v, lens, causal):
    b, sq, hq, d = q.shape
    hkv = k.shape[2]
    out = torch.zeros(b, sq, hq, d, device=q.device)
    for bi in range(b):
        L = int(lens[bi])
        if L == 0:
            continue
        kk = k[bi, :L].repeat_interleave(hq // hkv, dim=1)  # [L, Hq, D]
        vv = v[bi, :L].repeat_interleave(hq // hkv, dim=1)
        s = torch.einsum("ihd,thd->hit", q[bi].float(), kk) / math.sqrt(d)
        if causal:
            pos = L - sq + torch.arange(sq, device=q.device)
            mask = torch.arange(L, device=q.device)[None, :] > pos[:, None]
            s = s.masked_fill(mask[None], float("-inf"))
        p = torch.softmax(s, dim=-1).nan_to_num(0.0)
        out[bi] = torch.einsum("hit,thd->ihd", p, vv)
    return out


def rel(a, b):
    return float((a.float() - b).norm() / max(float(b.norm()), 1e-30))


@pytest.mark.parametrize("name,shape", [(n, s) for n in CASES for s in SHAPES[n]])
def test_decode_matches_reference(name, shape):
    kernel = kernel_for(name)
    c = CASES[name]
    batch, kv_len, splits = shape[:3]
    q_len = shape[3] if len(shape) > 3 else c["q_len"]  # dynamic-q_len specs: the launch's
    g = torch.Generator(device="cuda").manual_seed(0)
    dev = "cuda"
    q = torch.randn(batch, q_len, c["q_heads"], c["head_dim"], generator=g, device=dev)
    k = torch.randn(batch, kv_len, c["kv_heads"], c["head_dim"], generator=g, device=dev)
    v = torch.randn(batch, kv_len, c["kv_heads"], c["head_dim"], generator=g, device=dev)
    k[..., 3] *= 20  # an outlier channel
    asym = c.get("symmetric") is False
    if asym:  # skewed data, where zero points pay off: shifted K channels, one-sided V
        k += 4 * torch.rand(c["head_dim"], generator=g, device=dev)
        v = 2 * v.abs()
    qb = q.to(torch.bfloat16)
    qargs, q_in, q_quant = {}, qb, qb.float()
    if c.get("q_dtype") in ("i8", "f8E4M3FN"):  # quantized queries; the reference reads s·q̂
        q_in, qs = quantize(qb.float(), c["q_dtype"], c.get("q_granularity", "per_token_head"))
        qargs = {"q_scale": qs}
        q_quant = dequant(q_in, qs, rows=block_rows(c.get("q_granularity")))
    kz = vz = None
    if asym:
        kc, ks, kz = quantize_asym(k, c["kv_dtype"], c["granularity"])
        vc, vs, vz = quantize_asym(v, c["kv_dtype"], c["granularity"])
        qargs.update(k_zero=kz, v_zero=vz)
    else:
        kc, ks = quantize(k, c["kv_dtype"], c["granularity"])
        vc, vs = quantize(v, c["kv_dtype"], c["granularity"])
    lens = torch.full((batch,), kv_len, dtype=torch.int32, device=dev)
    if c.get("seq_lens") and batch > 1:
        lens[1] = kv_len // 3  # ragged
    out = kernel(q_in, kc, vc, ks, vs, seq_lens=lens if c.get("seq_lens") else None, splits=splits,
                 **qargs)
    torch.cuda.synchronize()
    r = block_rows(c["granularity"])
    want_q = reference(q_quant, dequant(kc, ks, kz, r), dequant(vc, vs, vz, r), lens,
                       c.get("causal", False))
    want_u = reference(qb, k, v, lens, c.get("causal", False))
    assert not torch.isnan(out.float()).any()
    err_q = rel(out, want_q)
    # The kernel's own rounding floor: bf16 P and a bf16 output (the fp32 reference rounded to
    # bf16 is already ~1e-3 away from itself).
    floor = rel(want_q.to(torch.bfloat16), want_q)
    # Against the reference rounded to the output type, as the kernel's output is.
    err_q16 = rel(out, want_q.to(torch.bfloat16).float())
    print(f"{name} {shape}: rel err vs dequantize-then-attend {err_q:.2e}, vs it rounded to bf16 "
          f"{err_q16:.2e} (bf16 output rounding alone {floor:.2e})")
    # fp8 also rounds P to e4m3 (3 mantissa bits), which the reference leaves exact.
    # full_int8 rounds P to u8 (per row and tile), which it leaves exact too.
    fp8 = c.get("q_dtype") == "f8E4M3FN"
    fi8 = c.get("mode") == "full_int8"
    assert err_q <= (5e-2 if fp8 else 1e-2), err_q
    # Against unquantized attention the kernel may lose no more than the quantization itself does.
    assert rel(out, want_u) <= 1.05 * rel(want_q, want_u) + (3e-2 if fp8 else 1e-2 if fi8 else 5e-3), \
        (rel(out, want_u), rel(want_q, want_u))


def test_non_default_stream_and_reuse():
    kernel = kernel_for("i8_mqa_causal")
    c = CASES["i8_mqa_causal"]
    q = torch.randn(2, 3, 16, 128, device="cuda").to(torch.bfloat16)
    k = torch.randn(2, 600, 1, 128, device="cuda")
    kc, ks = quantize(k, "i8", "per_token_head")
    vc, vs = quantize(torch.randn_like(k), "i8", "per_token_head")
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        out = kernel(q, kc, vc, ks, vs)  # the current (non-default) stream
    stream.synchronize()
    lens = torch.full((2,), 600, dtype=torch.int32, device="cuda")
    want = reference(q, dequant(kc, ks), dequant(vc, vs), lens, c["causal"])
    assert rel(out, want) <= 1e-2
    out2 = torch.full_like(out, float("nan"))
    kernel(q, kc, vc, ks, vs, out=out2)  # given output buffer, same result
    torch.cuda.synchronize()
    assert torch.equal(out, out2)


def test_hadamard_end_to_end():
    """With ×20 outlier channels in K and V, rotated int8 quantization on the GPU feeding the
    rotated half-int8 prefill kernel stays within 2.5e-2 of unquantized attention —
    several times closer than the same kernels without the rotation — and the rotated kernel
    matches its own quantized math (the rotated codes dequantized, attended, rotated back)."""
    import numpy as np
    from qattn import quant as qquant
    g = torch.Generator(device="cuda").manual_seed(3)
    b, sq, skv, h, d = 2, 130, 700, 4, 128
    q = torch.randn(b, sq, h, d, generator=g, device="cuda")
    k = torch.randn(b, skv, h, d, generator=g, device="cuda")
    v = torch.randn(b, skv, h, d, generator=g, device="cuda")
    for c in (3, 35, 67, 99):  # ref::outlierChannels(128)
        k[..., c] *= 20
        v[..., c] *= 20
    lens = torch.full((b,), skv, dtype=torch.int32, device="cuda")
    want = reference(q, k, v, lens, True)
    errs = {}
    for sfx in ("", "_plain"):
        quantize_k, attend = kernel_for(f"had_quantize{sfx}"), kernel_for(f"had_prefill{sfx}")
        codes = {}
        for n, x in (("q", q), ("k", k), ("v", v)):
            dst = torch.empty(x.shape, dtype=torch.int8, device="cuda")
            sc = torch.empty(x.shape[:3], dtype=torch.float32, device="cuda")
            quantize_k(x.contiguous(), dst, sc)
            codes[n] = (dst, sc)
        out = attend(codes["q"][0], codes["k"][0], codes["v"][0], codes["k"][1], codes["v"][1],
                     q_scale=codes["q"][1])
        torch.cuda.synchronize()
        assert not torch.isnan(out.float()).any()
        errs[sfx] = rel(out, want)
        if sfx == "":  # the quantized math in the rotated basis, rotated back
            hm = torch.tensor(qquant.hadamard(np.eye(d)), dtype=torch.float32, device="cuda")
            deq = [dequant(*codes[n]) for n in "qkv"]
            want_q = reference(*deq, lens, True) @ hm
            assert rel(out, want_q) <= 1e-2, rel(out, want_q)
    print(f"hadamard end to end: rel err vs unquantized {errs['']:.2e} rotated, "
          f"{errs['_plain']:.2e} plain")
    assert errs[""] <= 2.5e-2, errs
    assert errs["_plain"] >= 2 * errs[""], errs


def test_bad_arguments_are_refused():
    kernel = kernel_for("i8_mqa_causal")
    q = torch.zeros(2, 3, 16, 128, device="cuda", dtype=torch.bfloat16)
    k = torch.zeros(2, 64, 1, 128, device="cuda", dtype=torch.int8)
    s = torch.ones(2, 64, 1, device="cuda")
    with pytest.raises(qattn.KernelArgumentError, match="dtype"):
        kernel(q.float(), k, k, s, s)
    with pytest.raises(qattn.KernelArgumentError, match="shape"):
        kernel(q, k, k, s[:, :32], s)
    with pytest.raises(qattn.KernelArgumentError, match="required"):
        kernel(q, k, k, None, s)
    with pytest.raises(qattn.KernelArgumentError, match="CUDA"):
        kernel(q.cpu(), k, k, s, s)


if __name__ == "__main__":
    # Prebuild the PTX + metadata of every case for a GPU machine without attn-opt.
    import gpu_prebuild
    gpu_prebuild.main("test_gpu.py", ((n, spec_for(n)) for n in [*CASES, *HADAMARD]))
