"""``python -m qattn.hf prebuild DIR --q-heads 32 --kv-heads 8 --head-dim 128``: compiles the
decode / prefill / append kernels of one model shape with attn-opt into DIR, for machines without
attn-opt (``QATTN_HF_KERNELS=DIR``)."""

import argparse
import sys

from .kernels import prebuild


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m qattn.hf")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prebuild", help="compile one model shape's kernels into a directory")
    p.add_argument("dir")
    p.add_argument("--q-heads", type=int, required=True)
    p.add_argument("--kv-heads", type=int, required=True)
    p.add_argument("--head-dim", type=int, required=True)
    p.add_argument("--formats", default="int8,fp8,bf16", help="comma-separated cache formats")
    a = ap.parse_args(argv)
    formats = [f for f in a.formats.split(",") if f]
    for name in prebuild(a.dir, a.q_heads, a.kv_heads, a.head_dim, formats):
        print(name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
