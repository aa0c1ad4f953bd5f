"""What this file is: the paged split-KV Triton decode peer — the kind of kernel vLLM's Triton
attention backend runs — over a paged K/V cache (block table, any power-of-two page size, int8 or
e4m3 codes with per-(token, head) scales, or bf16), with a pure-torch reference and a benchmark.

Layout (attn.attention with `block_table`, qattn.paged): K/V pools [num_pages, P, Hkv, D]; scales
[num_pages, P, Hkv] f32; block table [B, max_blocks] i32 (token t of sequence b is row t mod P of
page block_table[b, t / P]); seq_lens [B] i32, 0 allowed. q [B, Sq, Hq, D] bf16, the last Sq
positions of each sequence (bottom-right causal alignment with `causal`). Each CTA takes one KV
head of one sequence with all its Sq · Hq / Hkv query rows packed into one tile, over one of
`nsplit` chunks of the keys; a second kernel merges the chunks' partial softmax states.

  python3 scripts/gpu_paged_decode_peer.py check        # kernel vs reference, page 16 and 64
  python3 scripts/gpu_paged_decode_peer.py bench        # Table-3 rows and GQA 8:1, JSON rows

Needs torch and triton on a CUDA device; importing it needs neither (the CPU tests import it and
run the reference where torch is installed)."""
import json
import math
import os
import sys

try:
    import torch
except ImportError:  # the CPU test machine may have neither
    torch = None
try:
    import triton
    import triton.language as tl
except ImportError:
    triton = tl = None

HAVE_TRITON = triton is not None and torch is not None


def _check_inputs(q, k, v, block_table, seq_lens, k_scale, v_scale):
    """ValueError / TypeError naming what is wrong, before any launch."""
    if q.dim() != 4 or k.dim() != 4 or k.shape != v.shape:
        raise ValueError(f"q must be [B, Sq, Hq, D] and k, v pools [num_pages, P, Hkv, D] of one "
                         f"shape, got {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    b, _, hq, d = q.shape
    pages, p, hkv, dk = k.shape
    if dk != d or hq % hkv:
        raise ValueError(f"pages {tuple(k.shape)} do not match q {tuple(q.shape)}")
    if p < 1 or p > 256 or p & (p - 1):
        raise ValueError(f"page size must be a power of two in [1, 256], got {p}")
    if block_table.dtype != torch.int32 or block_table.dim() != 2 or block_table.shape[0] != b:
        raise ValueError(f"block_table must be int32 [B={b}, max_blocks], got "
                         f"{block_table.dtype} {tuple(block_table.shape)}")
    if seq_lens.dtype != torch.int32 or tuple(seq_lens.shape) != (b,):
        raise ValueError(f"seq_lens must be int32 [{b}], got {seq_lens.dtype} "
                         f"{tuple(seq_lens.shape)}")
    quantized = k.dtype in (torch.int8, torch.float8_e4m3fn)
    if not quantized and k.dtype != torch.bfloat16:
        raise TypeError(f"K/V pools must be int8, float8_e4m3fn or bfloat16, got {k.dtype}")
    if quantized != (k_scale is not None and v_scale is not None):
        raise ValueError("int8 / e4m3 pools need k_scale and v_scale; bf16 pools take none")
    for s in (k_scale, v_scale) if quantized else ():
        if s.dtype != torch.float32 or tuple(s.shape) != (pages, p, hkv):
            raise ValueError(f"scales must be float32 [num_pages, P, Hkv] = "
                             f"{[pages, p, hkv]}, got {s.dtype} {tuple(s.shape)}")
    devices = {t.device for t in (q, k, v, block_table, seq_lens)}
    if len(devices) != 1 or next(iter(devices)).type != "cuda":
        raise ValueError(f"every tensor must be on one CUDA device, got "
                         f"{sorted(map(str, devices))}")
    return quantized


def reference(q, k, v, block_table, seq_lens, k_scale=None, v_scale=None, causal=False,
              softmax_scale=None):
    """float32 [B, Sq, Hq, D] in plain torch on the tensors' device: gather each sequence's pages
    through the block table, dequantize, attend (GQA); a query without keys gets 0."""
    b, sq, hq, d = q.shape
    p, hkv = k.shape[1], k.shape[2]
    scale = 1 / math.sqrt(d) if softmax_scale is None else softmax_scale
    kf, vf = k.float(), v.float()
    if k_scale is not None:
        kf, vf = kf * k_scale[..., None], vf * v_scale[..., None]
    out = torch.zeros(b, sq, hq, d, dtype=torch.float32, device=q.device)
    for i, n in enumerate(int(x) for x in seq_lens.tolist()):
        if n == 0:
            continue
        pages = block_table[i, :(n + p - 1) // p].long()
        kk = kf[pages].reshape(-1, hkv, d)[:n].repeat_interleave(hq // hkv, dim=1)
        vv = vf[pages].reshape(-1, hkv, d)[:n].repeat_interleave(hq // hkv, dim=1)
        s = torch.einsum("shd,thd->hst", q[i].float(), kk) * scale
        if causal:
            pos = n - sq + torch.arange(sq, device=q.device)
            s = s.masked_fill(torch.arange(n, device=q.device)[None, :] > pos[:, None],
                              -math.inf)
        w = torch.softmax(s, dim=-1).nan_to_num(0.0)  # rows with every key masked: 0
        out[i] = torch.einsum("hst,thd->shd", w, vv)
    return out


if HAVE_TRITON:
    @triton.jit
    def _paged_split(Q, K, V, KS, VS, BT, LENS, OP, MP, LP, sm_scale, MAXB, CHUNK,
                     SQ: tl.constexpr, HQ: tl.constexpr, HKV: tl.constexpr, G: tl.constexpr,
                     ROWS: tl.constexpr, PAGE: tl.constexpr, BM: tl.constexpr,
                     BN: tl.constexpr, D: tl.constexpr, NSPLIT: tl.constexpr,
                     QUANT: tl.constexpr, CAUSAL: tl.constexpr):
        sp = tl.program_id(0)
        g = tl.program_id(1)
        b = tl.program_id(2)
        rows = tl.arange(0, BM)
        d = tl.arange(0, D)
        n = tl.arange(0, BN)
        s_of = rows // G  # the query token of a packed row
        head = g * G + rows % G
        rm = rows < ROWS
        q = tl.load(Q + ((b * SQ + s_of[:, None]) * HQ + head[:, None]) * D + d[None, :],
                    mask=rm[:, None], other=0.0)
        ctx = tl.load(LENS + b)
        pos = ctx - SQ + s_of  # each row's position: it sees keys <= pos (causal)
        m_i = tl.full([BM], float("-inf"), tl.float32)
        l_i = tl.zeros([BM], tl.float32)
        acc = tl.zeros([BM, D], tl.float32)
        lo = sp * CHUNK
        hi = tl.minimum(lo + CHUNK, ctx)
        qk_scale = sm_scale * 1.44269504
        for s0 in range(lo, hi, BN):
            cols = s0 + n
            cm = cols < hi
            page = tl.load(BT + b * MAXB + cols // PAGE, mask=cm, other=0)
            slot = (page.to(tl.int64) * PAGE + cols % PAGE) * HKV + g
            # Masked lanes load nothing; their undefined values are zeroed (0 · NaN is NaN).
            k = tl.load(K + slot[None, :] * D + d[:, None], mask=cm[None, :])
            k = tl.where(cm[None, :], k.to(tl.bfloat16), 0.0).to(tl.bfloat16)
            s = tl.dot(q, k)
            if QUANT:
                ks = tl.load(KS + slot, mask=cm, other=0.0)
                s = s * (ks * qk_scale)[None, :]
            else:
                s = s * qk_scale
            keep = cm[None, :] & rm[:, None]
            if CAUSAL:
                keep = keep & (cols[None, :] <= pos[:, None])
            s = tl.where(keep, s, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(s, 1))
            m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
            p = tl.math.exp2(s - m_safe[:, None])
            alpha = tl.math.exp2(m_i - m_safe)
            l_i = l_i * alpha + tl.sum(p, 1)
            v = tl.load(V + slot[:, None] * D + d[None, :], mask=cm[:, None])
            v = tl.where(cm[:, None], v.to(tl.bfloat16), 0.0).to(tl.bfloat16)
            if QUANT:
                vs = tl.load(VS + slot, mask=cm, other=0.0)
                p = p * vs[None, :]
            acc = tl.dot(p.to(tl.bfloat16), v, acc * alpha[:, None])
            m_i = m_new
        base = ((b * HKV + g) * NSPLIT + sp) * BM
        tl.store(OP + (base + rows[:, None]) * D + d[None, :], acc)
        tl.store(MP + base + rows, m_i)
        tl.store(LP + base + rows, l_i)

    @triton.jit
    def _paged_combine(OP, MP, LP, O, SQ: tl.constexpr, HQ: tl.constexpr, HKV: tl.constexpr,
                       G: tl.constexpr, BM: tl.constexpr, D: tl.constexpr,
                       NSPLIT: tl.constexpr):
        r = tl.program_id(0)
        g = tl.program_id(1)
        b = tl.program_id(2)
        sp = tl.arange(0, NSPLIT)
        d = tl.arange(0, D)
        base = ((b * HKV + g) * NSPLIT + sp) * BM + r
        m = tl.load(MP + base)
        l = tl.load(LP + base)
        mx = tl.max(m, 0)
        w = tl.where(m == float("-inf"), 0.0, tl.math.exp2(m - mx))
        o = tl.sum(tl.load(OP + base[:, None] * D + d[None, :]) * w[:, None], 0)
        den = tl.sum(l * w, 0)
        o = tl.where(den > 0, o / tl.where(den > 0, den, 1.0), 0.0)  # no keys: 0
        tok = r // G
        head = g * G + r % G
        tl.store(O + ((b * SQ + tok) * HQ + head) * D + d, o.to(tl.bfloat16))


def default_splits(batch, kv_heads, max_len, block_n=64, sms=132):
    """Splits that fill one wave of `sms` SMs with CTAs: SMs / (B · Hkv), at most one per key
    tile, a power of two (the combine's split axis is a Triton range)."""
    want = max(1, min(sms // max(1, batch * kv_heads), -(-max_len // block_n)))
    return 1 << (want.bit_length() - 1)


def paged_decode(q, k, v, block_table, seq_lens, k_scale=None, v_scale=None, *, nsplit=None,
                 causal=False, softmax_scale=None, block_n=64, num_warps=4, num_stages=2):
    """bf16 [B, Sq, Hq, D]: the Triton peer over a paged cache (module docstring)."""
    if not HAVE_TRITON:
        raise RuntimeError("the paged Triton peer needs torch and triton")
    quantized = _check_inputs(q, k, v, block_table, seq_lens, k_scale, v_scale)
    b, sq, hq, d = q.shape
    page, hkv = k.shape[1], k.shape[2]
    g = hq // hkv
    rows = sq * g
    if rows > 128:
        raise ValueError(f"Sq · Hq / Hkv = {rows} packed rows exceed the 128-row tile")
    bm = max(16, 1 << (rows - 1).bit_length())
    max_len = block_table.shape[1] * page
    dev = q.device
    nsplit = nsplit or default_splits(
        b, hkv, max_len, block_n, torch.cuda.get_device_properties(dev).multi_processor_count)
    if nsplit & (nsplit - 1):
        raise ValueError(f"nsplit must be a power of two, got {nsplit}")
    chunk = triton.cdiv(triton.cdiv(max_len, nsplit), block_n) * block_n
    op = torch.empty(b, hkv, nsplit, bm, d, device=dev, dtype=torch.float32)
    mp = torch.empty(b, hkv, nsplit, bm, device=dev, dtype=torch.float32)
    lp = torch.empty_like(mp)
    o = torch.empty(b, sq, hq, d, device=dev, dtype=torch.bfloat16)
    scale = 1 / math.sqrt(d) if softmax_scale is None else softmax_scale
    ks = k_scale if quantized else seq_lens  # unread placeholders for bf16
    vs = v_scale if quantized else seq_lens
    _paged_split[(nsplit, hkv, b)](q, k, v, ks, vs, block_table, seq_lens, op, mp, lp, scale,
                                   block_table.shape[1], chunk, sq, hq, hkv, g, rows, page, bm,
                                   block_n, d, nsplit, quantized, causal,
                                   num_warps=num_warps, num_stages=num_stages)
    _paged_combine[(rows, hkv, b)](op, mp, lp, o, sq, hq, hkv, g, bm, d, nsplit, num_warps=4)
    return o


def make_cache(batch, ctx, q_len, q_heads, kv_heads, head_dim, page, dtype, seed=0,
               lens=None, spare_pages=0):
    """Random q and a paged cache of `dtype` ("int8", "e4m3" or "bf16") whose pages are handed
    out in a shuffled order; `lens` (default: ctx for every sequence) may be ragged."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    dev = "cuda"
    lens = torch.full((batch,), ctx, dtype=torch.int32) if lens is None else \
        torch.as_tensor(lens, dtype=torch.int32)
    blocks = -(-ctx // page)
    need = [-(-int(n) // page) for n in lens.tolist()]
    pages = sum(need) + spare_pages or 1
    order = torch.randperm(pages, generator=gen, device=dev).to(torch.int32)
    table = torch.zeros(batch, max(blocks, 1), dtype=torch.int32, device=dev)
    start = 0
    for i, n in enumerate(need):
        table[i, :n] = order[start:start + n]
        start += n
    q = torch.randn(batch, q_len, q_heads, head_dim, generator=gen, device=dev,
                    dtype=torch.bfloat16)
    shape = (pages, page, kv_heads, head_dim)
    kf = torch.randn(shape, generator=gen, device=dev)
    vf = torch.randn(shape, generator=gen, device=dev)
    if dtype == "bf16":
        return q, kf.bfloat16(), vf.bfloat16(), table, lens.to(dev), None, None
    qmax, code = (127.0, torch.int8) if dtype == "int8" else (448.0, torch.float8_e4m3fn)
    ks = kf.abs().amax(-1).clamp(min=1e-6) / qmax
    vs = vf.abs().amax(-1).clamp(min=1e-6) / qmax
    kq, vq = kf / ks[..., None], vf / vs[..., None]
    if code == torch.int8:
        kq, vq = kq.round().clamp(-127, 127), vq.round().clamp(-127, 127)
    return q, kq.to(code), vq.to(code), table, lens.to(dev), ks, vs


def check(page_sizes=(16, 64), dtypes=("int8", "bf16", "e4m3"), tol=2e-2):
    """Kernel against the reference on ragged lengths with 0 and 1, shuffled pages, MQA and GQA,
    causal or not; returns rows with the relative error, raises when one exceeds `tol`."""
    rows = []
    lens = [0, 1, 17, 64, 333, 1000, 1024, 5]
    for page in page_sizes:
        for dtype in dtypes:
            for sq, hq, hkv, causal in ((3, 16, 1, False), (1, 32, 4, False), (2, 16, 2, True)):
                args = make_cache(len(lens), 1024, sq, hq, hkv, 128, page, dtype,
                                  lens=lens, spare_pages=7)
                q, k, v, table, sl, ks, vs = args
                want = reference(q, k, v, table, sl, ks, vs, causal=causal)
                for nsplit in (1, 4):
                    got = paged_decode(q, k, v, table, sl, ks, vs, nsplit=nsplit, causal=causal)
                    err = float((got.float() - want).norm() / want.norm())
                    row = dict(page=page, dtype=dtype, sq=sq, hq=hq, hkv=hkv, causal=causal,
                               nsplit=nsplit, relerr=round(err, 5))
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                    if not err <= tol:
                        raise AssertionError(f"paged Triton peer off the reference: {row}")
    return rows


def bench(out_dir):
    """Table-3 rows (q_len 3, 16:1, hd 128) and GQA 8:1 hd 128 at batch 1-256, pages 16 and 64,
    int8 and bf16: the best split's median µs (triton.testing.do_bench)."""
    shapes = [(ctx, b, 3, 16, 1) for ctx, b in ((1024, 256), (2048, 128), (4096, 64),
                                                (8192, 32), (16384, 16), (32768, 8),
                                                (65536, 4), (131072, 2))]
    shapes += [(4096, b, 1, 32, 4) for b in (1, 8, 64, 256)]
    rows = []
    for ctx, b, sq, hq, hkv in shapes:
        for page in (16, 64):
            for dtype in ("int8", "bf16"):
                q, k, v, table, sl, ks, vs = make_cache(b, ctx, sq, hq, hkv, 128, page, dtype)
                best = None
                for nsplit in (1, 2, 4, 8, 16, 32, 64):
                    if ctx // nsplit < 128:
                        break
                    us = 1e3 * triton.testing.do_bench(
                        lambda: paged_decode(q, k, v, table, sl, ks, vs, nsplit=nsplit),
                        warmup=25, rep=100, return_mode="median")
                    best = min(best or (us, nsplit), (us, nsplit))
                row = dict(ctx=ctx, B=b, q_len=sq, hq=hq, hkv=hkv, page=page, kv=dtype,
                           us=round(best[0], 1), split=best[1])
                rows.append(row)
                print(json.dumps(row), flush=True)
                del q, k, v
    with open(os.path.join(out_dir, "paged_decode_peer.json"), "w") as f:
        json.dump(rows, f, indent=1)
    return rows


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in ("check", "bench"):
        print(__doc__.split("\n\n")[2], file=sys.stderr)
        return 2
    if not HAVE_TRITON or not torch.cuda.is_available():
        print("needs torch, triton and a CUDA device", file=sys.stderr)
        return 1
    if argv[0] == "check":
        check()
    else:
        bench(os.environ.get("OUT", "/tmp"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
