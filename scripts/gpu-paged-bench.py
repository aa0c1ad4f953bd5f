#!/usr/bin/env python3
"""scripts/gpu-paged-bench.py — attn-opt's paged decode kernels against the paged Triton peer
(scripts/gpu_paged_decode_peer.py) and against our contiguous kernels, in one process, on the same
shuffled page pools.

    python3 scripts/gpu-paged-bench.py build DIR      # here, with attn-opt: the kernels
    python3 scripts/gpu-paged-bench.py run DIR OUT.json   # on the GPU machine (torch, triton)
    python3 scripts/gpu-paged-bench.py window DIR OUT.json   # the sliding window's tile skipping

Shapes: the Table-3 rows (q_len 3, 16 query heads on 1 KV head, head_dim 128, context × batch
1024 × 256 … 131072 × 2) and GQA 8:1 (q_len 1, 32 on 4) at context 4096, batch 1-256; pages of
16 and 64 tokens; int8 K/V with per-(token, head) scales and bf16 K/V; bf16 queries. Each row:
the peer's best split count (its own `bench` rule), our kernel with the schedule's split rule,
our paged kernel over the same pages in sequence order (what shuffling them costs), our
contiguous kernel over the same tokens gathered in order, medians of
triton.testing.do_bench (µs), and the largest difference between our output and the peer's.

`window`: the kernels with a sliding window of 128 keys (`window = array<i64: 127, 0>`, int8, the
Table-3 row shape at batch 32) at context 8192 and 131072, contiguous and paged, against the
kernel without a window at context 128 and at the same context: the window's tiles are skipped,
so the first should take about the time of the second.
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
TABLE3 = [(1024, 256), (2048, 128), (4096, 64), (8192, 32), (16384, 16), (32768, 8),
          (65536, 4), (131072, 2)]
# (context, batch, q_len, q_heads, kv_heads)
SHAPES = ([(ctx, b, 3, 16, 1) for ctx, b in TABLE3]
          + [(4096, b, 1, 32, 4) for b in (1, 8, 64, 256)])
PAGES = (16, 64)
KV = {"int8": "i8", "bf16": "bf16"}

# (context, batch) of the window timing; the window's left bound.
WINDOW_SHAPES = [(8192, 32), (131072, 2)]
WINDOW_LEFT = 127

SPEC = """func.func @{name}(%q: memref<?x{sq}x{hq}x128xbf16>, %k: memref<?x{pk}x{hkv}x128x{et}>, %v: memref<?x{pk}x{hkv}x128x{et}>,{scale_args} %lens: memref<?xi32>,{table_arg} %o: memref<?x{sq}x{hq}x128xbf16>) {{
  attn.attention decode ins(%q, %k, %v : memref<?x{sq}x{hq}x128xbf16>, memref<?x{pk}x{hkv}x128x{et}>, memref<?x{pk}x{hkv}x128x{et}>)
      {scales}seq_lens(%lens : memref<?xi32>) {table}outs(%o : memref<?x{sq}x{hq}x128xbf16>)
      {{{page}{quant}{window}target = #attn.target<sm_90a>}}
  return
}}
"""


def kernel_name(ctx, sq, hq, hkv, kv, page, window=None):
    where = f"p{page}_ctx{ctx}" if page else "contig"
    return f"decode_{kv}_q{sq}x{hq}_kv{hkv}_{where}" + (f"_w{window}" if window else "")


def spec(ctx, sq, hq, hkv, kv, page, window=None):
    """The MLIR of one kernel: paged (static max_blocks = ctx / page) or contiguous (dynamic)."""
    et = KV[kv]
    pk = str(page) if page else "?"
    s_ty = f"memref<?x{pk}x{hkv}xf32>"
    quantized = kv != "bf16"
    return SPEC.format(
        name=kernel_name(ctx, sq, hq, hkv, kv, page, window), sq=sq, hq=hq, hkv=hkv, et=et, pk=pk,
        scale_args=f" %ks: {s_ty}, %vs: {s_ty}," if quantized else "",
        table_arg=f" %t: memref<?x{ctx // page}xi32>," if page else "",
        scales=f"k_scale(%ks : {s_ty}) v_scale(%vs : {s_ty})\n      " if quantized else "",
        table=f"block_table(%t : memref<?x{ctx // page}xi32>)\n      " if page else "",
        page=f"page_size = {page}, " if page else "",
        window=f"window = array<i64: {window}, 0>, " if window else "",
        quant=("k_quant = #attn.quant<i8, per_token_head>, "
               "v_quant = #attn.quant<i8, per_token_head>, ") if quantized else "")


def kernels():
    """(name, mlir) of every kernel `run` needs."""
    out = {}
    for ctx, _, sq, hq, hkv in SHAPES:
        for kv in KV:
            for page in (0, *PAGES):
                out[kernel_name(ctx, sq, hq, hkv, kv, page)] = spec(ctx, sq, hq, hkv, kv, page)
    for ctx, _ in WINDOW_SHAPES:
        for page in (0, *PAGES):
            for w in (None, WINDOW_LEFT):
                out[kernel_name(ctx, 3, 16, 1, "int8", page, w)] = spec(ctx, 3, 16, 1, "int8",
                                                                        page, w)
        out[kernel_name(128, 3, 16, 1, "int8", 0)] = spec(128, 3, 16, 1, "int8", 0)
    return sorted(out.items())


def build(args):
    exe = args.attn_opt or os.environ.get("ATTN_OPT") or str(ROOT / "build" / "bin" / "attn-opt")
    d = pathlib.Path(args.dir)
    d.mkdir(parents=True, exist_ok=True)
    for name, text in kernels():
        src = d / f"{name}.mlir"
        src.write_text(text)
        subprocess.run([exe, str(src), "--emit=ptx", "-o", str(d / f"{name}.ptx")], check=True)
    print(f"{len(kernels())} kernels in {d}")


def contiguous(pool, table, ctx):
    """[B, ctx, ...] of a pool's pages in each sequence's order."""
    b, blocks = table.shape
    rows = pool[table.long()]  # [B, blocks, P, ...]
    return rows.reshape(b, blocks * pool.shape[1], *pool.shape[2:])[:, :ctx].contiguous()


def run(args):
    import torch
    import triton.testing
    sys.path.insert(0, str(ROOT / "scripts"))
    import gpu_paged_decode_peer as peer
    from qattn.torch_ops import DecodePlan

    def median_us(fn):
        return 1e3 * triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")

    d = pathlib.Path(args.dir)
    rows = []
    for ctx, b, sq, hq, hkv in SHAPES:
        for page in PAGES:
            for kv in KV:
                q, k, v, table, lens, ks, vs = peer.make_cache(b, ctx, sq, hq, hkv, 128, page, kv)
                best = None
                for nsplit in (1, 2, 4, 8, 16, 32, 64):
                    if ctx // nsplit < 128:
                        break
                    us = median_us(lambda: peer.paged_decode(q, k, v, table, lens, ks, vs,
                                                             nsplit=nsplit))
                    best = min(best or (us, nsplit), (us, nsplit))
                want = peer.paged_decode(q, k, v, table, lens, ks, vs, nsplit=best[1])
                out = torch.empty_like(q)
                plan = DecodePlan(str(d / f"{kernel_name(ctx, sq, hq, hkv, kv, page)}.ptx"),
                                  device=q.device, batch=b, kv_len=ctx)
                ours = median_us(lambda: plan.run(q, k, v, ks, vs, seq_lens=lens, out=out,
                                                  block_table=table))
                plan.run(q, k, v, ks, vs, seq_lens=lens, out=out, block_table=table)
                err = float((out.float() - want.float()).abs().max() / want.float().abs().max())
                # The same pages in sequence order (page i of sequence b at b · blocks + i): what
                # scattering them costs, with the kernel unchanged.
                flat = table.flatten().long()
                ko, vo = k[flat], v[flat]
                kso = ks[flat] if ks is not None else None
                vso = vs[flat] if vs is not None else None
                in_order = torch.arange(flat.numel(), dtype=torch.int32,
                                        device=q.device).reshape(table.shape)
                oout = torch.empty_like(q)
                ordered = median_us(lambda: plan.run(q, ko, vo, kso, vso, seq_lens=lens, out=oout,
                                                     block_table=in_order))
                plan.run(q, ko, vo, kso, vso, seq_lens=lens, out=oout, block_table=in_order)
                if not torch.equal(oout, out):
                    raise AssertionError(f"pages in order gave another output at {ctx} x {b}")
                del ko, vo, kso, vso
                kc, vc = contiguous(k, table, ctx), contiguous(v, table, ctx)
                ksc = contiguous(ks, table, ctx) if ks is not None else None
                vsc = contiguous(vs, table, ctx) if vs is not None else None
                cplan = DecodePlan(str(d / f"{kernel_name(ctx, sq, hq, hkv, kv, 0)}.ptx"),
                                   device=q.device, batch=b, kv_len=ctx)
                cout = torch.empty_like(q)
                contig = median_us(lambda: cplan.run(q, kc, vc, ksc, vsc, seq_lens=lens,
                                                     out=cout))
                cplan.run(q, kc, vc, ksc, vsc, seq_lens=lens, out=cout)
                same = float((out.float() - cout.float()).abs().max())
                row = dict(ctx=ctx, batch=b, q_len=sq, q_heads=hq, kv_heads=hkv, page=page,
                           kv=kv, ours_us=round(ours, 1), ours_splits=plan.splits,
                           peer_us=round(best[0], 1), peer_splits=best[1],
                           ours_contiguous_us=round(contig, 1), ours_in_order_us=round(ordered, 1),
                           peer_over_ours=round(best[0] / ours, 3),
                           paged_over_contiguous=round(ours / contig, 3),
                           in_order_over_contiguous=round(ordered / contig, 3),
                           rel_err_vs_peer=err, max_abs_diff_vs_contiguous=same)
                rows.append(row)
                print(json.dumps(row), flush=True)
                del q, k, v, kc, vc, plan, cplan
                torch.cuda.empty_cache()
    header = dict(command=" ".join(sys.argv), gpu=torch.cuda.get_device_name(0),
                  torch=torch.__version__, triton=triton.__version__)
    pathlib.Path(args.out).write_text(json.dumps([header, *rows], indent=1))


def run_window(args):
    """The window kernels at their context against the plain kernel at 128 keys and at the same
    context, same data (the last 128 keys of each sequence for the short one)."""
    import torch
    import triton.testing
    sys.path.insert(0, str(ROOT / "scripts"))
    import gpu_paged_decode_peer as peer
    from qattn.torch_ops import DecodePlan

    def median_us(fn):
        return 1e3 * triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")

    d = pathlib.Path(args.dir)
    rows = []
    for ctx, b in WINDOW_SHAPES:
        for page in (0, *PAGES):
            q, k, v, table, lens, ks, vs = peer.make_cache(b, ctx, 3, 16, 1, 128, page or 16,
                                                           "int8")
            flat = [contiguous(x, table, ctx) for x in (k, v, ks, vs)]  # in sequence order
            if not page:
                k, v, ks, vs = flat
            tbl = dict(block_table=table) if page else {}
            times = {}
            for label, w in (("window", WINDOW_LEFT), ("plain", None)):
                path = d / f"{kernel_name(ctx, 3, 16, 1, 'int8', page, w)}.ptx"
                plan = DecodePlan(str(path), device=q.device, batch=b, kv_len=ctx)
                out = torch.empty_like(q)
                times[label] = median_us(lambda: plan.run(q, k, v, ks, vs, seq_lens=lens,
                                                          out=out, **tbl))
                times[label + "_splits"] = plan.splits
            short = [x[:, -128:].contiguous() for x in flat]
            plan = DecodePlan(str(d / f"{kernel_name(128, 3, 16, 1, 'int8', 0)}.ptx"),
                              device=q.device, batch=b, kv_len=128)
            out = torch.empty_like(q)
            n128 = torch.full_like(lens, 128)
            times["plain_128"] = median_us(lambda: plan.run(q, *short, seq_lens=n128, out=out))
            row = dict(ctx=ctx, batch=b, page=page, window_left=WINDOW_LEFT,
                       window_us=round(times["window"], 1), window_splits=times["window_splits"],
                       plain_us=round(times["plain"], 1), plain_splits=times["plain_splits"],
                       plain_kv128_us=round(times["plain_128"], 1))
            rows.append(row)
            print(json.dumps(row), flush=True)
            del q, k, v, ks, vs, flat, short
            torch.cuda.empty_cache()
    header = dict(command=" ".join(sys.argv), gpu=torch.cuda.get_device_name(0),
                  torch=torch.__version__)
    pathlib.Path(args.out).write_text(json.dumps([header, *rows], indent=1))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("dir")
    b.add_argument("--attn-opt", default=None)
    r = sub.add_parser("run")
    r.add_argument("dir")
    r.add_argument("out")
    w = sub.add_parser("window")
    w.add_argument("dir")
    w.add_argument("out")
    a = ap.parse_args(argv)
    {"build": build, "run": run, "window": run_window}[a.cmd](a)


if __name__ == "__main__":
    main()
