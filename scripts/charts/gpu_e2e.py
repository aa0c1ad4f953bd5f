"""What this file is: the chart and table of docs/benchmarks/gpu-e2e.md — decode tokens/s of the
8B configuration in Hugging Face transformers against batch, one panel per context (2048, 8192),
one line per attention path (our kernels with paged bf16 / int8 / fp8 caches, transformers' SDPA
eager and graphed, the Triton int8 decode kernel), from the graphed grids of
scripts/gpu-hf-speed.py in bench/results/ (two repetitions in one process, plus batch 64 at 8192
in its own processes; each cell shows every repetition, the chart the fastest).

    render(results, out) -> [PNG, Markdown]  (called by scripts/charts.py)
    python3 scripts/charts/gpu_e2e.py [RESULTS]   prints the page's Markdown table
"""
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _columns import pyplot, save  # noqa: E402

# context -> the result files of its cells
GRIDS = {2048: ["2026-11-27-hf-8b-h100-paged-graphs-2k-2reps.json"],
         8192: ["2026-11-27-hf-8b-h100-paged-graphs-2reps.json",
                "2026-11-27-hf-8b-h100-paged-b64-8k.json"]}
LABELS = {"attn_opt_int8": "attn-opt, int8 cache (graph)",
          "attn_opt_fp8": "attn-opt, fp8 cache (graph)",
          "attn_opt_bf16": "attn-opt, bf16 cache (graph)",
          "triton_int8": "Triton int8 decode (graph)",
          "sdpa_bf16": "SDPA, bf16 DynamicCache (eager)",
          "sdpa_static_bf16": "SDPA, bf16 StaticCache (graph)"}


def decode_rows(results, context):
    """{(path, batch): [row of repetition 1, 2, ...]} of the measured decode cells of a context."""
    cells = {}
    for name in GRIDS[context]:
        for r in json.loads((results / name).read_text()):
            if (r.get("what", "").startswith("decode") and "tokens_per_s" in r
                    and not r.get("probe")):
                cells.setdefault((r["path"], r["batch"]), []).append(r)
    return {k: sorted(v, key=lambda r: r["rep"]) for k, v in cells.items()}


def markdown(results):
    return "\n\n".join(context_table(results, c) for c in GRIDS)


def context_table(results, context):
    cells = decode_rows(results, context)
    batches = sorted({b for _, b in cells})
    out = [f"Context {context}:\n",
           "| path | " + " | ".join(f"batch {b}" for b in batches) + " |",
           "|---|" + "---|" * len(batches)]
    for path, label in LABELS.items():
        row = []
        for b in batches:
            reps = cells.get((path, b), [])
            row.append(" / ".join(f"{r['tokens_per_s']:.0f}" for r in reps) if reps else "—")
        out.append(f"| {label} | " + " | ".join(row) + " |")
    out.append("\nTokens/s of repetitions 1 / 2 (one process; batch 64 at context 8192: one "
               "process per path, one repetition). 32 layers, 32 / 8 heads × 128, random bf16 "
               "weights, paged caches of 64-token pages, one H100; \"—\": does not fit (a bf16 "
               "cache of 64 × 8192 tokens is 64 GiB beside 16 GiB of weights) or not measured.")
    return "\n".join(out)


def render(results: pathlib.Path, out: pathlib.Path) -> list:
    plt = pyplot()
    fig, axes = plt.subplots(1, len(GRIDS), figsize=(11, 4.2), dpi=120, sharey=True)
    for ax, context in zip(axes, GRIDS):
        cells = decode_rows(results, context)
        for path, label in LABELS.items():
            pts = sorted((b, max(r["tokens_per_s"] for r in reps))
                         for (p, b), reps in cells.items() if p == path)
            if pts:
                dashed = path.startswith(("sdpa", "triton"))
                ax.plot(*zip(*pts), marker="o", linestyle="--" if dashed else "-", label=label)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        batches = sorted({b for _, b in cells})
        ax.set_xticks(batches, [str(b) for b in batches])
        ax.set_xlabel("batch (sequences decoded together)")
        ax.set_title(f"context {context}", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("tokens/s (whole model, fastest repetition)")
    axes[0].legend(fontsize=7)
    fig.suptitle("8B decode in transformers, paged caches (H100, 2026-11-27)", fontsize=10)
    return save(fig, out, "gpu-e2e-decode.png", "gpu-e2e", "gpu_e2e",
                "## Decode, one CUDA graph per step where the path allows\n\n" + markdown(results))


if __name__ == "__main__":
    print(markdown(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "bench/results")))
