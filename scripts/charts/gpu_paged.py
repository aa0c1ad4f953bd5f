"""What this file is: the chart and table of docs/benchmarks/gpu-paged.md — attn-opt's paged decode
kernels against the paged split-KV Triton peer and our contiguous kernels, and over the same
pages in sequence order, from scripts/gpu-paged-bench.py's two runs in bench/results/, and each
row's read ceiling: the fastest plain reader of scripts/gpu-bandwidth-probe.cu at the row's K/V
bytes on the same machine (the time no kernel that reads those bytes can beat).

    render(results, out) -> [PNG, Markdown]  (called by scripts/charts.py)
    python3 scripts/charts/gpu_paged.py [RESULTS]   prints the page's Markdown table
"""
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _columns import pyplot, save  # noqa: E402

DATA = ("2026-11-28-paged-decode-h100-51214bc-r1.json", "2026-11-28-paged-decode-h100-51214bc-r2.json")
PROBE = "2026-11-28-read-probe-h100-sizes.jsonl"


def rows(results, rep=0):
    return json.loads((results / DATA[rep]).read_text())[1:]


def kv_bytes(r):
    """The K/V bytes a row reads: codes of K and V, and for int8 two f32 scales per token and
    head."""
    per_token = 2 * 128 * (2 if r["kv"] == "bf16" else 1) + (0 if r["kv"] == "bf16" else 8)
    return r["ctx"] * r["batch"] * r["kv_heads"] * per_token


def read_ceilings(results):
    """{bytes: µs} of the fastest plain reader (vec, bulk) the probe ran at each size."""
    best = {}
    for line in (results / PROBE).read_text().splitlines():
        x = json.loads(line)
        if x["kernel"] in ("vec", "bulk"):
            best[x["bytes"]] = min(best.get(x["bytes"], float("inf")), x["us"])
    return best


def label(r):
    gqa = "" if r["kv_heads"] == 1 else f" GQA {r['q_heads']}:{r['kv_heads']}"
    return f"{r['ctx']}×{r['batch']}{gqa}"


def markdown(results):
    out = ["| context × batch | page | cache | ours µs (splits) | Triton µs (splits) | Triton ÷ ours "
           "| our contiguous µs | paged ÷ contiguous | pages in order ÷ contiguous "
           "| rel. diff to Triton | read ceiling µs | Triton ÷ ceiling |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    ceilings = read_ceilings(results)
    for r, r2 in zip(rows(results), rows(results, 1)):
        c = ceilings.get(kv_bytes(r))
        ceiling = (f"| {c:.1f} | {r['peer_us'] / c:.2f} / {r2['peer_us'] / c:.2f} " if c
                   else "| – | – ")
        out.append(f"| {label(r)} | {r['page']} | {r['kv']} | {r['ours_us']} ({r['ours_splits']}) "
                   f"| {r['peer_us']} ({r['peer_splits']}) "
                   f"| {r['peer_over_ours']:.2f} / {r2['peer_over_ours']:.2f} "
                   f"| {r['ours_contiguous_us']} "
                   f"| {r['paged_over_contiguous']:.3f} / {r2['paged_over_contiguous']:.3f} "
                   f"| {r['in_order_over_contiguous']:.3f} / {r2['in_order_over_contiguous']:.3f} "
                   f"| {r['rel_err_vs_peer']:.1e} " + ceiling + "|")
    out.append("\nMedians of triton.testing.do_bench, one H100, one process per repetition (µs: the "
               "first; ratios: first / second); Triton's best split count per row; bf16 queries, "
               "head_dim 128; the same shuffled pools for all three, and our paged kernel once more "
               "over the same pages moved into sequence order. Read ceiling: the fastest plain "
               "reader of scripts/gpu-bandwidth-probe.cu at the row's K/V bytes on the same machine "
               "(no kernel reading those bytes is faster), so Triton ÷ ceiling is the most any "
               "kernel could lead the peer by; – where the probe has no such size (batch 1).")
    return "\n".join(out)


def render(results: pathlib.Path, out: pathlib.Path) -> list:
    plt = pyplot()
    data = [r for r in rows(results) if r["kv"] == "int8"]
    fig, (peer, cost) = plt.subplots(1, 2, figsize=(11, 4.4), dpi=120)
    names = list(dict.fromkeys(label(r) for r in data))  # the run's order
    for page, marker in ((16, "o"), (64, "s")):
        def line(ax, key, style, text):
            pts = {label(r): r[key] for r in data if r["page"] == page}
            ax.plot(names, [pts[n] for n in names], marker=marker, linestyle=style,
                    label=f"{text}, page {page}")
        line(peer, "peer_over_ours", "-", "Triton ÷ ours")
        line(cost, "paged_over_contiguous", "--", "shuffled pages")
        line(cost, "in_order_over_contiguous", ":", "pages in sequence order")
    peer.set_title("Triton time ÷ ours (above 1: ours faster)", fontsize=9)
    cost.set_title("our paged time ÷ our contiguous time", fontsize=9)
    for ax in (peer, cost):
        ax.axhline(1.0, color="gray", linewidth=0.8)
        ax.set_ylabel("time ratio")
        ax.tick_params(axis="x", labelrotation=60, labelsize=7)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("Paged int8 decode, H100, 2026-11-28", fontsize=10)
    return save(fig, out, "gpu-paged-decode.png", "gpu-paged", "gpu_paged",
                "## Paged decode against the Triton peer and our contiguous kernels\n\n"
                + markdown(results))


if __name__ == "__main__":
    print(markdown(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "bench/results")))
