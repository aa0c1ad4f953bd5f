"""Charts of docs/benchmarks/cpu-decode.md: where a CPU decode step's time goes, dense against
NoMAD attention, per context length, and what NoMAD gains end to end.

Reads the scripts/cpu-decode runs listed in RUNS (bench/results/*.jsonl: one JSON object per
(context, attention mode) with the median step and attention times of interleaved steps) and
writes, per run:
  cpu-decode-<run>-split.png   stacked columns per context: attention (all layers) and the rest of
                               the step for every mode, tokens/s above each column
  cpu-decode-<run>-share.png   left: attention's share of the step against context (the crossover
                               is where a line passes 50 %); right: speed-up over dense, end to end
                               (solid) and attention alone (dashed)
and cpu-decode-tables.md with every row.
"""
import json
import pathlib

RUNS = {  # name: (file, title)
    "epyc-t1": ("2026-11-27-cpu-decode-grouped-epyc-t1.jsonl", "AMD EPYC (AVX2), 1 thread"),
    "epyc-t2": ("2026-11-27-cpu-decode-grouped-epyc-t2.jsonl", "AMD EPYC (AVX2), 2 threads"),
    "xeon-t1": ("2026-11-27-cpu-decode-grouped-xeon-t1.jsonl", "Xeon (AVX-512), 1 core"),
    "xeon-tall": ("2026-11-27-cpu-decode-grouped-xeon-tall.jsonl", "Xeon (AVX-512), all cores"),
}
COLORS = {"attention": "#d65f5f", "rest": "#8c8c8c"}


def load(path: pathlib.Path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def modes_of(rows):
    return sorted({r["attention"] for r in rows},
                  key=lambda m: (not m.startswith("dense"), not m.startswith("torch"), m))


def model_of(rows) -> str:
    m = rows[0]["model"]
    return "SmolLM2-135M architecture, random weights" if m.startswith("random") else "SmolLM2-135M"


def split_chart(rows, title: str, path: pathlib.Path):
    import matplotlib.pyplot as plt
    contexts = sorted({r["context"] for r in rows})
    modes = modes_of(rows)
    fig, ax = plt.subplots(figsize=(11, 4.4))
    width = 0.85 / len(modes)
    for i, t in enumerate(contexts):
        for j, m in enumerate(modes):
            r = next((r for r in rows if r["context"] == t and r["attention"] == m), None)
            if r is None:
                continue
            x = i + (j - (len(modes) - 1) / 2) * width
            ax.bar(x, r["attention_ms"], width * 0.95, color=COLORS["attention"],
                   label="attention (all layers)" if i == j == 0 else None)
            ax.bar(x, r["step_ms"] - r["attention_ms"], width * 0.95, bottom=r["attention_ms"],
                   color=COLORS["rest"], label="rest of the step" if i == j == 0 else None)
            ax.text(x, r["step_ms"], f"{m.replace('nomad_', '')}\n{r['tokens_per_s']:.1f}/s",
                    ha="center", va="bottom", fontsize=5.5, rotation=90)
    ax.set_xticks(range(len(contexts)), [str(t) for t in contexts])
    ax.set_xlabel("context (tokens in the KV cache)")
    ax.set_ylabel("ms per decode step (median)")
    ax.set_ylim(0, max(r["step_ms"] for r in rows) * 1.35)
    ax.set_title(f"{model_of(rows)}: one-token decode, {title}", fontsize=9)
    ax.legend(fontsize=7, loc="upper left")
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return path


PALETTE = {"dense": "black", "torch_f32": "#8c8c8c", "torch_f16": "#b0b0b0",
           "nomad_dsub1": "#4878d0", "nomad_dsub1_f16": "#6acc64", "nomad_dsub1_i8": "#d65f5f",
           "nomad_dsub2": "#956cb4", "nomad_dsub2_f16": "#dbb000", "nomad_dsub2_i8": "#ee854a"}


def style(mode: str) -> dict:
    """One colour per (dsub, values); the previous kernels (``_base``) dotted and faint."""
    base = mode.endswith("_base")
    return {"color": PALETTE.get(mode[:-5] if base else mode, "#797979"),
            "ls": ":" if base else "-", "alpha": 0.6 if base else 1.0,
            "marker": "x" if base else "o"}


def share_chart(rows, title: str, path: pathlib.Path):
    import matplotlib.pyplot as plt
    contexts = sorted({r["context"] for r in rows})
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.4))
    for m in modes_of(rows):
        rs = sorted((r for r in rows if r["attention"] == m), key=lambda r: r["context"])
        xs = [r["context"] for r in rs]
        st = style(m)
        a.plot(xs, [100 * r["attention_share"] for r in rs], label=m, **st)
        if m != "dense" and all("speedup" in r for r in rs):
            b.plot(xs, [r["speedup"] for r in rs], label=m, **st)
            if not m.endswith("_base"):
                b.plot(xs, [r["attention_speedup"] for r in rs], **dict(st, ls="--", marker=None))
    a.axhline(50, color="black", lw=0.7)
    a.set_ylabel("attention share of the step (%); line: 50 %")
    b.axhline(1, color="black", lw=0.7)
    b.set_ylabel("× dense: end to end (solid), attention (dashed)")
    for ax in (a, b):
        ax.set_xscale("log", base=2)
        ax.set_xticks(contexts, [str(t) for t in contexts])
        ax.set_xlabel("context (tokens)")
        ax.grid(alpha=0.3)
    a.legend(fontsize=6.5, ncol=2)
    b.legend(fontsize=6.5, ncol=2)
    base = any(r["attention"].endswith("_base") for r in rows)
    fig.suptitle(f"{model_of(rows)}: attention share and NoMAD speed-up, {title}"
                 + (" (dotted: previous kernels)" if base else ""), fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return path


def table(name, file, title, rows):
    head = (f"## {title}\n\nFrom `bench/results/{file}`; {rows[0]['cpu']}, target "
            f"{rows[0]['isa']}, load average {min(r['load'] for r in rows):.1f}–"
            f"{max(r['load_after'] for r in rows):.1f} during the run.\n\n"
            "| context | mode | V | ms/step | attention ms | rest ms | attention share | tokens/s "
            "| × dense | attention × dense |\n|---|---|---|---|---|---|---|---|---|---|\n")
    body = "".join(
        f"| {r['context']} | {r['attention']} | {r.get('values', 'f32')} | {r['step_ms']:.1f} | "
        f"{r['attention_ms']:.1f} | {r['rest_ms']:.1f} | {100 * r['attention_share']:.0f}% | "
        f"{r['tokens_per_s']:.2f} | {r.get('speedup', 1):.2f} | {r.get('attention_speedup', 1):.2f} |\n"
        for r in sorted(rows, key=lambda r: r["context"]))
    return head + body


def render(results: pathlib.Path, out: pathlib.Path):
    written, md = [], ["# CPU decode: every measured row\n\nGenerated by `scripts/charts.py` from "
                       "bench/results/; see [cpu-decode.md](../cpu-decode.md) for the commands.\n"]
    for name, (file, title) in RUNS.items():
        if not (results / file).is_file():
            continue
        rows = load(results / file)
        written.append(split_chart(rows, title, out / f"cpu-decode-{name}-split.png"))
        written.append(share_chart(rows, title, out / f"cpu-decode-{name}-share.png"))
        md.append("\n" + table(name, file, title, rows))
    if not written:
        return []
    path = out / "cpu-decode-tables.md"
    path.write_text("".join(md))
    return written + [path]
