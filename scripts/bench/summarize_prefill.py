#!/usr/bin/env python3
"""What this file is: turns the JSON lines of `gpu-prefill-bench.py run` into the Markdown table of
docs/benchmarks/gpu-prefill.md: per (S × batch, causal) cuDNN's TFLOP/s and, for every mode in the
file, ours and the ratio to cuDNN from the same run.

  summarize_prefill.py FILE.jsonl
"""
import json
import sys


def main(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    modes = [k[: -len("_tflops")] for k in rows[0] if k.endswith("_tflops") and k != "cudnn_tflops"]
    head = ["S × batch", "causal", "cuDNN bf16 TFLOP/s"]
    for m in modes:
        head += [f"{m} TFLOP/s", f"{m} × cuDNN"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        cells = [f"{r['S']}×{r['B']}", "yes" if r["causal"] else "no", f"{r['cudnn_tflops']:.1f}"]
        for m in modes:
            cells += [f"{r[m + '_tflops']:.1f}", f"**{r[m + '_x_cudnn']:.2f}**"]
        print("| " + " | ".join(cells) + " |")
    for m in modes:
        xs = [r[m + "_x_cudnn"] for r in rows]
        errs = [r[m + "_rel_err"] for r in rows]
        print(f"\n{m}: {min(xs):.2f}–{max(xs):.2f}× cuDNN; relative error vs SDPA ≤ {max(errs):.1e}",
              end="")
    print()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
