#!/usr/bin/env python3
"""scripts/bench/mca_block.py — cycles per 32-key block of a lookup kernel, from llvm-mca.

What this file is: the static model behind the per-block tables of docs/benchmarks/cpu-nomad.md.
It takes one kernel's body from an assembly file, expands the loop over the sub-quantizers to its
trip count (so that the block's whole work is straight-line code, as it runs), and feeds that to
llvm-mca for each CPU model; the block loop's body is one llvm-mca iteration.

  ours:  attn-opt --emit=asm K.mlir -o K.s
         scripts/bench/mca_block.py K.s __attn_scan_avx2_2 --subs 64
  FAISS: a disassembled fast-scan loop (llvm-objdump -d --no-show-raw-insn --no-leading-addr of
         the AVX2 accumulate_to_mem_impl: its block prologue, its sub-quantizer loop, its
         epilogue) in three files, the loop repeated M / 2 times:
         scripts/bench/mca_block.py --faiss PRO.s LOOP.s EPI.s --subs 64

The loop is the one nested in the block loop (or the block loop alone when the sub-quantizer loop
is straight-line already); its trip count is the lookups of a block (one vpshufb per sub-quantizer
row of a 256-bit register, a 512-bit one covers two) less those outside it, over those per pass.
"""
import argparse
import re
import subprocess
import sys

MCA = "/usr/lib/llvm-22/bin/llvm-mca"


def instructions(lines):
    return [l for l in lines if l.startswith("\t") and not l.strip().startswith(".")]


def kernel_block(asm, func, subs):
    lines = open(asm).read().split("\n")
    if func + ":" not in lines:
        sys.exit(f"error: no function {func} in {asm}")
    body = []
    for l in lines[lines.index(func + ":") + 1:]:
        if re.match(r"^[A-Za-z_][\w.]*:", l):
            break
        body.append(l)
    labels = {m.group(1): i for i, l in enumerate(body) if (m := re.match(r"^(\.LBB\w+):", l))}
    loops = []  # (label line, backward jump line)
    for i, l in enumerate(body):
        m = re.match(r"\s+j\w+\s+(\.LBB\w+)", l)
        if m and m.group(1) in labels and labels[m.group(1)] < i:
            loops.append((labels[m.group(1)], i))
    if not loops:
        sys.exit(f"error: {func} has no loop")
    nested = [o for o in loops if any(o[0] < x[0] and x[1] < o[1] for x in loops)]
    outer = nested[0] if nested else loops[0]
    inner = [x for x in loops if outer[0] < x[0] and x[1] < outer[1]]
    count = lambda lines: sum(1 for l in lines if "vpshufb" in l)
    per_row = 0.5 if "zmm" in "".join(body[outer[0]:outer[1]]) else 1.0
    # lookups of the block outside its inner loop (steps peeled off or unrolled by LLVM)
    straight = count(instructions(body[outer[0] + 1:outer[1] + 1]))
    straight -= sum(count(instructions(body[a + 1:b + 1])) for a, b in inner)
    text, pos = [], outer[0] + 1
    for a, b in inner:
        text += instructions(body[pos:a])
        loop = instructions(body[a + 1:b + 1])
        trips = (subs * per_row - straight) / count(loop) if count(loop) else 1
        text += loop * max(1, round(trips))
        pos = b + 1
    text += instructions(body[pos:outer[1] + 1])
    return text


def faiss_block(pro, loop, epi, subs):
    read = lambda f: [l for l in open(f).read().split("\n") if l.strip()]
    text = read(pro) + read(loop) * (subs // 2) + read(epi)
    # jumps to absolute addresses → to a label llvm-mca can parse
    return [".Ltarget:"] + [re.sub(r"(j\w+)\s+0x[0-9a-f]+.*", r"\1 .Ltarget", l) for l in text]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("asm", nargs="?", help="assembly of our kernels (attn-opt --emit=asm)")
    ap.add_argument("func", nargs="?", help="the kernel's symbol, e.g. __attn_scan_avx2_2")
    ap.add_argument("--faiss", nargs=3, metavar=("PRO", "LOOP", "EPI"),
                    help="FAISS's block prologue, loop and epilogue (disassembly) instead")
    ap.add_argument("--subs", type=int, required=True, help="sub-quantizers (128 / dsub)")
    ap.add_argument("--cpus", default="sapphirerapids,znver3", help="llvm-mca -mcpu models")
    ap.add_argument("--iterations", type=int, default=100)
    args = ap.parse_args()
    if args.faiss:
        text = faiss_block(*args.faiss, args.subs)
    elif args.asm and args.func:
        text = kernel_block(args.asm, args.func, args.subs)
    else:
        ap.error("give ASM FUNC or --faiss PRO LOOP EPI")
    for cpu in args.cpus.split(","):
        r = subprocess.run([MCA, f"-mcpu={cpu}", f"-iterations={args.iterations}"],
                           input="\n".join(text) + "\n", capture_output=True, text=True)
        m = re.search(r"Total Cycles:\s+(\d+)", r.stdout)
        if not m:
            sys.exit(f"error: llvm-mca failed: {r.stderr.strip()}")
        print(f"{args.func or 'faiss'} {cpu} subs={args.subs}: "
              f"{int(m.group(1)) / args.iterations:.1f} cycles per block")
    return 0


if __name__ == "__main__":
    sys.exit(main())
