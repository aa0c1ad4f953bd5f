"""``python -m qattn.hf prebuild DIR --q-heads 32 --kv-heads 8 --head-dim 128 --page-size 64
--contexts 2048,8192,32768``: compiles the paged decode, paged append and prefill kernels of one
model shape with attn-opt into DIR, for machines without attn-opt (``QATTN_HF_KERNELS=DIR``).

The paged decode kernels are compiled per block-table width (``qattn.hf.kernels.max_blocks``):
``--contexts C,...`` covers every cache of C to C + ``--extra-tokens`` tokens per sequence (a
context plus its decode steps), ``--capacities N,...`` caches of exactly N tokens."""

import argparse
import sys

from .kernels import DEFAULT_PAGE_SIZE, capacities_for, prebuild, table_tokens


def _ints(text):
    return [int(t) for t in text.split(",") if t.strip()]


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m qattn.hf")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prebuild", help="compile one model shape's kernels into a directory")
    p.add_argument("dir")
    p.add_argument("--q-heads", type=int, required=True)
    p.add_argument("--kv-heads", type=int, required=True)
    p.add_argument("--head-dim", type=int, required=True)
    p.add_argument("--formats", default="int8,fp8,bf16", help="comma-separated cache formats")
    p.add_argument("--page-size", type=int, default=DEFAULT_PAGE_SIZE)
    p.add_argument("--contexts", default="", help="comma-separated context lengths: caches of "
                   "C .. C + --extra-tokens tokens per sequence")
    p.add_argument("--extra-tokens", type=int, default=64)
    p.add_argument("--capacities", default="", help="comma-separated cache sizes (tokens per "
                   "sequence)")
    a = ap.parse_args(argv)
    try:
        contexts, caps = _ints(a.contexts), _ints(a.capacities)
        if any(n <= 0 for n in contexts + caps):
            raise ValueError("--contexts and --capacities take positive integers")
        widths = sorted(set(capacities_for(contexts, a.extra_tokens))
                        | {table_tokens(c) for c in caps})
        if not widths:
            raise ValueError("give --contexts or --capacities: the paged decode kernels are "
                             "compiled per cache size")
        formats = [f for f in a.formats.split(",") if f]
        names = prebuild(a.dir, a.q_heads, a.kv_heads, a.head_dim, formats, widths,
                         a.page_size)
    except ValueError as e:
        ap.error(str(e))
    for name in names:
        print(name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
