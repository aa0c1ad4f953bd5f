"""What this file is: the chart of docs/benchmarks/gpu-mla.md — MLA decode TFLOP/s in FlashMLA's
configuration (batch 128, s_q 2, 128 heads, top-2048 sparse over 8192 tokens), ours with the
two-CTA crossover and without it (same run), beside FlashMLA's published figure for the same
configuration (not a run of ours), from the JSON lines in bench/results/.

    render(results, out) -> [PNG, Markdown]  (called by scripts/charts.py)
"""
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _columns import labelled_columns, pyplot, save  # noqa: E402

BENCH = "2026-11-24-mla-bench.jsonl"
# FlashMLA's own published number for this configuration (H800, FP8 sparse, top-k 2048); it is
# not measured here: FlashMLA was not installed on the machine that ran ours.
FLASHMLA_PUBLISHED_TFLOPS = 410.0


def variants(results):
    recs = [json.loads(line) for line in open(results / BENCH) if line.strip()]
    return {("crossover" if r["crossover"] else "single"): r for r in recs if "variant" in r}


def render(results: pathlib.Path, out: pathlib.Path) -> list:
    plt = pyplot()
    v = variants(results)
    names = ["attn-opt, 2-CTA crossover", "attn-opt, one CTA", "FlashMLA (published, H800)"]
    vals = [v["crossover"]["tflops"], v["single"]["tflops"], FLASHMLA_PUBLISHED_TFLOPS]
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
    columns = labelled_columns(ax, names, vals, [f"{x:.1f}" for x in vals], pad=6,
                               color=["#2a6fb0", "#8fb8de", "#ffffff"], edgecolor="#333333",
                               width=0.6)
    columns[2].set_hatch("//")
    ax.set_ylabel("TFLOP/s (2·h·(576 + 512) per attended key)")
    ax.set_ylim(0, max(vals) * 1.18)
    ax.set_title("MLA decode, FP8 sparse top-2048, batch 128 × s_q 2 × 128 heads (H100 SXM)",
                 fontsize=10)
    ax.tick_params(axis="x", labelsize=9)
    return save(fig, out, "gpu-mla-tflops.png", "gpu-mla", "gpu_mla", markdown(results))


def markdown(results):
    v = variants(results)
    rows = ["| variant | µs | TFLOP/s |", "|---|---|---|"]
    for key, name in (("crossover", "2-CTA crossover"), ("single", "one CTA per (batch, head group)")):
        rows.append(f"| {name} | {v[key]['us']:.1f} | {v[key]['tflops']:.1f} |")
    rows.append(f"| FlashMLA, published (H800) | — | {FLASHMLA_PUBLISHED_TFLOPS:.0f} |")
    ratio = v["crossover"]["tflops"] / v["single"]["tflops"]
    return "\n".join(rows) + f"\n\nCrossover over one CTA: {ratio:.2f}×."
