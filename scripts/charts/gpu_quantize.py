"""What this file is: the chart and table of docs/benchmarks/gpu-quantize.md — the bandwidth of a
KV-cache append (bf16 source read, codes and scales written) per scheme, beside a device-to-device
copy measured in the same run, from the JSON lines in bench/results/.

    render(results, out) -> [PNG, Markdown]  (called by scripts/charts.py)
    python3 scripts/charts/gpu_quantize.py [RESULTS]   prints the page's Markdown table
"""
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _columns import labelled_columns, pyplot, save  # noqa: E402

BENCH = "2026-11-23-quantize-bandwidth.jsonl"


def rows(results):
    return [json.loads(line) for line in open(results / BENCH) if line.strip()]


def _label(r):
    code = {"f8E4M3FN": "e4m3"}.get(r["code"], r["code"])
    return f"{r['granularity']} {code} {'sym' if r['symmetric'] else 'asym'}"


def markdown(results):
    out = ["| scheme | batch × tokens (8 heads × 128) | µs | TB/s | of copy | bf16 copy of the source, µs |",
           "|---|---|---|---|---|---|"]
    for r in rows(results):
        out.append(f"| {_label(r)} | {r['batch']} × {r['tokens']} | {r['us']:.2f} | {r['tb_s']:.2f} | "
                   f"**{r['frac_of_copy']:.1%}** | {r['same_size_copy_us']:.1f} |")
    out.append(f"\nCopy peer (1 GiB device-to-device, read + write): {rows(results)[0]['copy_tb_s']:.2f} TB/s.")
    return "\n".join(out)


def render(results: pathlib.Path, out: pathlib.Path) -> list:
    plt = pyplot()
    big = [r for r in rows(results) if r["tokens"] > 1]
    copy = big[0]["copy_tb_s"]
    fig, ax = plt.subplots(figsize=(8, 4.2), dpi=120)
    labelled_columns(ax, [_label(r) for r in big], [r["tb_s"] for r in big],
                     [f"{r['tb_s']:.2f} TB/s, {r['frac_of_copy']:.0%} of copy" for r in big],
                     horizontal=True, inside=True, pad=0.05, color="#2a6fb0")
    ax.axvline(copy, color="#b03030", linestyle="--", linewidth=1.2)
    ax.text(copy - 0.03, len(big) - 0.45, f"device-to-device copy, same run: {copy:.2f} TB/s",
            ha="right", fontsize=8, color="#b03030")
    ax.invert_yaxis()
    ax.set_xlim(0, copy * 1.22)
    ax.set_xlabel("TB/s (bf16 source read + codes, scales and zero points written)")
    ax.set_title("KV append, 128 sequences × 1024 tokens × 8 heads × 128 (H100 SXM)", fontsize=10)
    return save(fig, out, "gpu-quantize-bandwidth.png", "gpu-quantize", "gpu_quantize",
                "## Append bandwidth\n\n" + markdown(results))


if __name__ == "__main__":
    print(markdown(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "bench/results")))
