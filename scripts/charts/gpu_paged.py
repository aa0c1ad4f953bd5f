"""What this file is: the chart and table of docs/benchmarks/gpu-paged.md — attn-opt's paged decode
kernels against the paged split-KV Triton peer and our contiguous kernels, from
scripts/gpu-paged-bench.py's run in bench/results/.

    render(results, out) -> [PNG, Markdown]  (called by scripts/charts.py)
    python3 scripts/charts/gpu_paged.py [RESULTS]   prints the page's Markdown table
"""
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _columns import pyplot, save  # noqa: E402

DATA = "2026-11-27-paged-decode-h100-vs-triton.json"


def rows(results):
    return json.loads((results / DATA).read_text())[1:]


def label(r):
    gqa = "" if r["kv_heads"] == 1 else f" GQA {r['q_heads']}:{r['kv_heads']}"
    return f"{r['ctx']}×{r['batch']}{gqa}"


def markdown(results):
    out = ["| context × batch | page | cache | ours µs (splits) | Triton µs (splits) | Triton ÷ ours "
           "| our contiguous µs | paged ÷ contiguous | rel. diff to Triton |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in rows(results):
        out.append(f"| {label(r)} | {r['page']} | {r['kv']} | {r['ours_us']} ({r['ours_splits']}) "
                   f"| {r['peer_us']} ({r['peer_splits']}) | {r['peer_over_ours']:.2f} "
                   f"| {r['ours_contiguous_us']} | {r['paged_over_contiguous']:.2f} "
                   f"| {r['rel_err_vs_peer']:.1e} |")
    out.append("\nMedians of triton.testing.do_bench, one H100, one process; Triton's best split "
               "count per row; bf16 queries, head_dim 128; the same shuffled pools for all three.")
    return "\n".join(out)


def render(results: pathlib.Path, out: pathlib.Path) -> list:
    plt = pyplot()
    data = [r for r in rows(results) if r["kv"] == "int8"]
    fig, ax = plt.subplots(figsize=(8.5, 4.2), dpi=120)
    names = list(dict.fromkeys(label(r) for r in data))  # the run's order
    for page, marker in ((16, "o"), (64, "s")):
        pts = {label(r): r["peer_over_ours"] for r in data if r["page"] == page}
        ax.plot(names, [pts[n] for n in names], marker=marker, label=f"Triton ÷ ours, page {page}")
        pc = {label(r): r["paged_over_contiguous"] for r in data if r["page"] == page}
        ax.plot(names, [pc[n] for n in names], marker=marker, linestyle="--",
                label=f"our paged ÷ our contiguous, page {page}")
    ax.axhline(1.0, color="gray", linewidth=0.8)
    ax.set_ylabel("time ratio")
    ax.set_title("Paged int8 decode, H100, 2026-11-27 (above 1: ours faster / paging costs)",
                 fontsize=10)
    ax.tick_params(axis="x", labelrotation=45, labelsize=7)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    return save(fig, out, "gpu-paged-decode.png", "gpu-paged", "gpu_paged",
                "## Paged decode against the Triton peer and our contiguous kernels\n\n"
                + markdown(results))


if __name__ == "__main__":
    print(markdown(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "bench/results")))
