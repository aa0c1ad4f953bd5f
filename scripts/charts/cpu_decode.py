"""Chart of docs/benchmarks/cpu-nomad.md's end-to-end decode section: where a CPU decode step's
time goes, dense against NoMAD attention, per context length.

Reads the scripts/cpu-decode runs in bench/results/ (files *-cpu-decode-*.jsonl: one JSON object
per (context, attention) with the median step and attention times) and writes:
  cpu-decode-split.png   stacked columns per context: attention (all layers) and the rest of the step,
                         for dense and each NoMAD dsub, tokens/s above each column
"""
import json
import pathlib

COLORS = {"attention": "#d65f5f", "rest": "#8c8c8c"}


def load(path: pathlib.Path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def chart(path_in: pathlib.Path, rows, path: pathlib.Path):
    import matplotlib.pyplot as plt
    contexts = sorted({r["context"] for r in rows})
    modes = sorted({r["attention"] for r in rows}, key=lambda m: (m != "dense", m))
    fig, ax = plt.subplots(figsize=(10, 4.2))
    width = 0.8 / len(modes)
    for i, t in enumerate(contexts):
        for j, m in enumerate(modes):
            r = next((r for r in rows if r["context"] == t and r["attention"] == m), None)
            if r is None:
                continue
            x = i + (j - (len(modes) - 1) / 2) * width
            rest = r["step_ms"] - r["attention_ms"]
            ax.bar(x, r["attention_ms"], width * 0.95, color=COLORS["attention"],
                   label="attention (all layers)" if i == j == 0 else None)
            ax.bar(x, rest, width * 0.95, bottom=r["attention_ms"], color=COLORS["rest"],
                   label="rest of the step" if i == j == 0 else None)
            ax.text(x, r["step_ms"], f"{m.replace('nomad_', '')}\n{r['tokens_per_s']:.2f}/s",
                    ha="center", va="bottom", fontsize=6)
    first = rows[0]
    ax.set_xticks(range(len(contexts)), [str(t) for t in contexts])
    ax.set_xlabel("context (tokens in the KV cache)")
    ax.set_ylabel("ms per decode step (median)")
    ax.set_title(f"{first['model']}: one-token decode, {first['threads']} thread(s), "
                 f"{first['cpu']} ({path_in.name})", fontsize=8)
    ax.legend(fontsize=7, loc="upper left")
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    return path


def render(results: pathlib.Path, out: pathlib.Path):
    files = sorted(results.glob("*-cpu-decode-*.jsonl"))
    if not files:
        return []
    return [chart(files[-1], load(files[-1]), out / "cpu-decode-split.png")]
