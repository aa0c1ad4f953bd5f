#!/usr/bin/env python3
"""Machine-code size of every function of a CPU kernel of N attn.quantize.dynamic ops.

Compiles one function of N ops (dynamic extents, so the kernel checks their relations) for each N
given, with `attn-opt --emit=asm`, counts the instructions of every function of the assembly and
checks that compile work is linear in N: no function grows with N except the entry point and the
unpacked wrapper (one call per op), and those grow at most in proportion to N. LLVM's register
allocator takes superlinear time in the size of one function, so a function that grows with N
(one check function over every buffer, say) makes compile time superlinear.
"""
import argparse
import re
import subprocess
import sys


def spec(n):
    args, ops = [], []
    for i in range(n):
        args.append(f"%x{i}: memref<?x?x2x64xf32>, %y{i}: memref<?x?x2x64xi8>, "
                    f"%s{i}: memref<?x?x2xf32>")
        ops.append(f"  attn.quantize.dynamic ins(%x{i} : memref<?x?x2x64xf32>) "
                   f"outs(%y{i}, %s{i} : memref<?x?x2x64xi8>, memref<?x?x2xf32>) "
                   "{quant = #attn.quant<i8, per_token_head>, target = #attn.target<avx2>}")
    return "func.func @many(" + ", ".join(args) + ") {\n" + "\n".join(ops) + "\n  return\n}\n"


def function_sizes(attn_opt, n):
    asm = subprocess.run([attn_opt, "-", "--emit=asm"], input=spec(n), capture_output=True,
                         text=True, check=True).stdout
    sizes, current = {}, None
    for line in asm.splitlines():
        m = re.match(r"\s*\.type\s+([^,]+),@function", line)
        if m:
            current = m.group(1).strip('"')
            sizes[current] = 0
        elif line.startswith(".Lfunc_end"):
            current = None
        elif current and line.startswith("\t") and not line.lstrip().startswith((".", "#")):
            sizes[current] += 1
    return sizes


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--attn-opt", default="attn-opt")
    parser.add_argument("counts", type=int, nargs=2, help="two op counts, the second larger")
    a = parser.parse_args()
    small, large = a.counts
    growing = {"_mlir_ciface___attn_many", "__attn_many"}
    by_n = {n: function_sizes(a.attn_opt, n) for n in (small, large)}
    failures = []
    for n, sizes in by_n.items():
        others = {k: v for k, v in sizes.items() if k not in growing}
        print(f"N={n}: {len(sizes)} functions, entry {sizes['_mlir_ciface___attn_many']} "
              f"instructions, largest other {max(others.values())}")
    bound = max(v for k, v in by_n[small].items() if k not in growing)
    for name, size in by_n[large].items():
        if name not in growing and size > bound:
            failures.append(f"{name}: {size} instructions at N={large}, more than any such "
                            f"function at N={small} ({bound})")
    for name in growing:
        ratio = by_n[large][name] / by_n[small][name]
        if ratio > 1.1 * large / small:
            failures.append(f"{name}: {ratio:.2f}x the instructions for {large / small:.2f}x ops")
    for f in failures:
        print("FAIL", f)
    if not failures:
        print("PASS: no function grows faster than the op count")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
