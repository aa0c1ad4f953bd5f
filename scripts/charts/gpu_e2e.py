"""What this file is: the chart and table of docs/benchmarks/gpu-e2e.md — decode tokens/s of the
8B configuration in Hugging Face transformers against batch, one line per attention path (our
kernels with bf16 / int8 / fp8 caches, transformers' SDPA eager and graphed, the Triton int8
decode kernel), from the graphed grid of scripts/gpu-hf-speed.py in bench/results/ (two
repetitions in one process; each cell shows both, the chart the faster of the two).

    render(results, out) -> [PNG, Markdown]  (called by scripts/charts.py)
    python3 scripts/charts/gpu_e2e.py [RESULTS]   prints the page's Markdown table
"""
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _columns import pyplot, save  # noqa: E402

GRID = "2026-11-27-hf-8b-h100-graphs-2reps.json"
LABELS = {"attn_opt_int8": "attn-opt, int8 cache (graph)",
          "attn_opt_fp8": "attn-opt, fp8 cache (graph)",
          "attn_opt_bf16": "attn-opt, bf16 cache (graph)",
          "triton_int8": "Triton int8 decode (graph)",
          "sdpa_bf16": "SDPA, bf16 DynamicCache (eager)",
          "sdpa_static_bf16": "SDPA, bf16 StaticCache (graph)"}


def decode_rows(results):
    """{(path, batch): [row of repetition 1, 2, ...]} of the measured decode cells."""
    cells = {}
    for r in json.loads((results / GRID).read_text()):
        if r.get("what", "").startswith("decode") and "tokens_per_s" in r:
            cells.setdefault((r["path"], r["batch"]), []).append(r)
    return {k: sorted(v, key=lambda r: r["rep"]) for k, v in cells.items()}


def markdown(results):
    cells = decode_rows(results)
    batches = sorted({b for _, b in cells})
    out = ["| path | " + " | ".join(f"batch {b}" for b in batches) + " |",
           "|---|" + "---|" * len(batches)]
    for path, label in LABELS.items():
        row = []
        for b in batches:
            reps = cells.get((path, b), [])
            row.append(" / ".join(f"{r['tokens_per_s']:.0f}" for r in reps) if reps else "—")
        out.append(f"| {label} | " + " | ".join(row) + " |")
    out.append("\nTokens/s of repetitions 1 / 2 (one process). Context 8192, 32 layers, 32 / 8 "
               "heads × 128, random bf16 weights, one H100; \"—\": did not fit in memory beside "
               "the paths measured before it in the same process.")
    return "\n".join(out)


def render(results: pathlib.Path, out: pathlib.Path) -> list:
    plt = pyplot()
    cells = decode_rows(results)
    fig, ax = plt.subplots(figsize=(7.5, 4.2), dpi=120)
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
    ax.set_ylabel("tokens/s (whole model, faster of two repetitions)")
    ax.set_title("8B decode at context 8192 in transformers (H100, 2026-11-27)", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    return save(fig, out, "gpu-e2e-decode.png", "gpu-e2e", "gpu_e2e",
                "## Decode, one CUDA graph per step where the path allows\n\n" + markdown(results))


if __name__ == "__main__":
    print(markdown(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "bench/results")))
