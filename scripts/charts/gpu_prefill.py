"""What this file is: the chart and table of docs/benchmarks/gpu-prefill.md — prefill speed over
cuDNN's bf16 attention of the same run, per Table-1/2 row (S × batch, causal or not) and mode,
from the JSON lines in bench/results/ (three repetitions per file; bars are medians, whiskers the
range over the repetitions).

    render(results, out) -> [PNG paths]     (called by scripts/charts.py)
    python3 scripts/charts/gpu_prefill.py [RESULTS]   prints the page's Markdown table
"""
import json
import pathlib
import statistics
import sys

TABLE12 = "2026-11-26-prefill-table12.jsonl"          # bf16, half_int8_pb, half_int8, fp8
TRANSPOSE = "2026-11-26-prefill-table12-8bit-transpose.jsonl"  # full_int8 at the same build
MODES = [("bf16", "bf16", TABLE12), ("half_int8_pb", "half-int8, tile scales", TABLE12),
         ("half_int8", "half-int8, per-key scales", TABLE12), ("fp8", "fp8 (e4m3)", TABLE12),
         ("full_int8", "full int8", TRANSPOSE)]


def _lines(path):
    return [json.loads(line) for line in open(path) if line.strip()]


def rows(results):
    """[(S, B, causal, {mode: [x cuDNN per repetition]}, [cuDNN TFLOP/s], {mode: [rel err]})]."""
    table = {}
    for mode, _, name in MODES:
        for r in _lines(results / name):
            key = (r["S"], r["B"], r["causal"])
            t = table.setdefault(key, ({}, [], {}))
            t[0].setdefault(mode, []).append(r[mode + "_x_cudnn"])
            t[2].setdefault(mode, []).append(r[mode + "_rel_err"])
            if name == TABLE12 and mode == "bf16":
                t[1].append(r["cudnn_tflops"])
    order = sorted(table, key=lambda k: (k[0], k[2]))
    return [(s, b, c, *table[(s, b, c)]) for s, b, c in order]


def _span(xs):
    lo, hi = min(xs), max(xs)
    return f"{lo:.2f}" if f"{lo:.2f}" == f"{hi:.2f}" else f"{lo:.2f}–{hi:.2f}"


def markdown(results):
    head = ["S × batch", "causal", "cuDNN TFLOP/s"] + [label for _, label, _ in MODES]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for s, b, causal, x, cudnn, _ in rows(results):
        cells = [f"{s} × {b}", "yes" if causal else "no", f"{statistics.median(cudnn):.0f}"]
        cells += [_span(x[m]) for m, _, _ in MODES]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def render(results: pathlib.Path, out: pathlib.Path) -> list:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = rows(results)
    colors = ["#7f7f7f", "#2a6fb0", "#8fb8de", "#d9822b", "#6a9f58"]
    fig, ax = plt.subplots(figsize=(11, 5), dpi=120)
    n, w = len(MODES), 0.16
    for j, (mode, label, _) in enumerate(MODES):
        xs = [i + (j - (n - 1) / 2) * w for i in range(len(data))]
        med = [statistics.median(d[3][mode]) for d in data]
        lo = [m - min(d[3][mode]) for m, d in zip(med, data)]
        hi = [max(d[3][mode]) - m for m, d in zip(med, data)]
        ax.bar(xs, med, w, color=colors[j], label=label, yerr=[lo, hi], capsize=1.5,
               error_kw={"elinewidth": 0.7})
    ax.axhline(1.0, color="black", linewidth=1, label="cuDNN bf16, same run (1.0)")
    ax.set_xticks(range(len(data)),
                  [f"{s}×{b}\n{'causal' if c else 'non-causal'}" for s, b, c, *_ in data],
                  fontsize=7)
    ax.set_ylabel("speed over cuDNN bf16 (×)")
    ax.set_ylim(0.5, 1.75)
    ax.set_xlabel("S × batch (16 query heads on 1 KV head, head_dim 128)")
    ax.set_title("Prefill on H100 SXM: speedup over cuDNN per Table-1/2 row "
                 "(median of 3, range as whiskers)", fontsize=11)
    ax.legend(ncol=3, fontsize=8, loc="upper left", framealpha=0.95)
    fig.tight_layout()
    out.mkdir(parents=True, exist_ok=True)
    path = out / "gpu-prefill-speedup.png"
    fig.savefig(path)
    plt.close(fig)
    return [path]


if __name__ == "__main__":
    print(markdown(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "bench/results")))
