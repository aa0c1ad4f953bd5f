"""What this file is: the chart and tables of docs/benchmarks/gpu-decode.md — Table-3 decode as a
roofline (achieved bytes/s per row against the read-only ceiling measured at the same bytes, the
Triton peer of the same run beside ours), from the JSON lines in bench/results/.

    render(results, out) -> [PNG, Markdown]  (called by scripts/charts.py)
    python3 scripts/charts/gpu_decode.py [RESULTS]   prints the page's Markdown tables
"""
import json
import pathlib
import sys

TABLE3 = "2026-11-25-decode-table3-triton.jsonl"
CEILING = "2026-11-24-decode-read-ceiling.jsonl"
HADAMARD = "2026-11-25-decode-table3-hadamard.jsonl"
# Table 3: q_len 3, 16 query heads on one KV head, head_dim 128; int8 K and V codes plus one f32
# scale each per (token, head): 2 * 128 + 8 bytes per token, batch * ctx = 262144 tokens per row.
BYTES_PER_TOKEN = 2 * 128 + 8


def _lines(path):
    return [json.loads(line) for line in open(path) if line.strip()]


def table3(results):
    """Rows of Table 3 with the bytes each reads and the achieved TB/s of ours and the peer."""
    rows = _lines(results / TABLE3)
    for r in rows:
        nbytes = r["batch"] * r["ctx"] * BYTES_PER_TOKEN
        r["bytes"] = nbytes
        for k in ("i8qs", "i8", "fp8", "triton_int8"):
            r[k + "_tbs"] = nbytes / (r[k + "_us"] * 1e-6) / 1e12
        r["x_triton"] = r["triton_int8_us"] / r["i8qs_us"]
    return rows


def ceilings(results):
    """The read-only ceiling at Table-3 bytes (decode's layout and loads: 4-D tensor maps of
    128-row boxes, scales by bulk copies, two stages) and DRAM's steady-state read rate (1 GiB)."""
    probe = _lines(results / CEILING)
    tma = [p for p in probe if p["kernel"] == "tma_kv" and p["rank"] == 4 and p["box_rows"] == 128
           and p["boxes"] == 1 and p["stages"] == 2][0]
    steady = max(p["TBps"] for p in probe if p.get("bytes") == 1 << 30)
    return {"read_only_us": tma["us"], "read_only_tbs": tma["TBps"], "steady_tbs": steady}


def markdown(results):
    rows, c = table3(results), ceilings(results)
    out = ["| ctx × batch | ours, int8 queries µs | TB/s | of the read-only ceiling | "
           "ours, bf16 queries µs | fp8 µs | Triton int8 µs | Triton TB/s | ours × Triton |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['ctx']} × {r['batch']} | {r['i8qs_us']:.1f} | **{r['i8qs_tbs']:.2f}** | "
                   f"{r['i8qs_tbs'] / c['read_only_tbs']:.0%} | {r['i8_us']:.1f} | {r['fp8_us']:.1f} | "
                   f"{r['triton_int8_us']:.1f} | {r['triton_int8_tbs']:.2f} | **{r['x_triton']:.2f}** |")
    return "\n".join(out)


def hadamard_markdown(results):
    """Mean µs per row, Gaussian data, plain against rotated (`hadamard`), and the outlier error."""
    recs = _lines(results / HADAMARD)
    rows = {}
    for r in recs:
        key = (r["kv_len"], r["batch"])
        d = rows.setdefault(key, {"plain": [], "rot": [], "err": {}})
        if r["data"] == "gaussian":
            d["rot" if r["hadamard"] else "plain"].append(r["time_us"])
        else:
            d["err"]["rot" if r["hadamard"] else "plain"] = r["rel_err_unquant"]
    out = ["| ctx × batch | plain µs | rotated µs | Δ µs | error vs unquantized, outliers: plain → rotated |",
           "|---|---|---|---|---|"]
    for (ctx, b), d in sorted(rows.items()):
        p, q = sum(d["plain"]) / len(d["plain"]), sum(d["rot"]) / len(d["rot"])
        out.append(f"| {ctx} × {b} | {p:.1f} | {q:.1f} | +{q - p:.2f} | "
                   f"{d['err']['plain']:.1e} → {d['err']['rot']:.1e} |")
    return "\n".join(out)


def render(results: pathlib.Path, out: pathlib.Path) -> list:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows, c = table3(results), ceilings(results)
    labels = [f"{r['ctx']}\n× {r['batch']}" for r in rows]
    x = range(len(rows))
    fig, ax = plt.subplots(figsize=(9, 4.8), dpi=120)
    w = 0.38
    ax.bar([i - w / 2 for i in x], [r["i8qs_tbs"] for r in rows], w, color="#2a6fb0",
           label="attn-opt, int8 queries + int8 K/V")
    ax.bar([i + w / 2 for i in x], [r["triton_int8_tbs"] for r in rows], w, color="#c0c0c0",
           label="Triton int8 decode (same run)")
    for i, r in zip(x, rows):
        ax.text(i - w / 2, r["i8qs_tbs"] + 0.03, f"{r['i8qs_tbs']:.2f}", ha="center", fontsize=7)
        ax.text(i + w / 2, r["triton_int8_tbs"] + 0.03, f"{r['x_triton']:.2f}×", ha="center",
                fontsize=7, color="#555555")
    ax.axhline(c["read_only_tbs"], color="#b03030", linestyle="--", linewidth=1.2)
    ax.text(len(rows) - 0.5, c["read_only_tbs"] + 0.04,
            f"read-only kernel, same bytes and loads: {c['read_only_tbs']:.2f} TB/s "
            f"({c['read_only_us']:.1f} µs)", ha="right", fontsize=8, color="#b03030")
    ax.axhline(c["steady_tbs"], color="#707070", linestyle=":", linewidth=1.2)
    ax.text(len(rows) - 0.5, c["steady_tbs"] + 0.04,
            f"DRAM steady-state read (1 GiB): {c['steady_tbs']:.2f} TB/s", ha="right", fontsize=8,
            color="#505050")
    ax.set_xticks(list(x), labels, fontsize=8)
    ax.set_xlabel("context length × batch (69.2 MB of K, V and scales per row)")
    ax.set_ylabel("achieved TB/s (bytes read ÷ time)")
    ax.set_ylim(0, c["steady_tbs"] * 1.22)
    ax.set_title("Table-3 decode on H100 SXM: bytes/s against the read ceiling", fontsize=11)
    ax.plot([], [], " ", label="grey labels: attn-opt's speedup over Triton")
    ax.legend(loc="upper left", fontsize=8, framealpha=0.95)
    fig.tight_layout()
    out.mkdir(parents=True, exist_ok=True)
    path = out / "gpu-decode-roofline.png"
    fig.savefig(path)
    plt.close(fig)
    md = out / "gpu-decode-tables.md"
    md.write_text("# Tables of gpu-decode.md\n\nGenerated by scripts/charts/gpu_decode.py from "
                  "bench/results/; see [gpu-decode.md](../gpu-decode.md) for the setup and "
                  "commands.\n\n## Table 3 beside Triton\n\n" + markdown(results) +
                  "\n\n## Rotated inputs\n\n" + hadamard_markdown(results) + "\n")
    return [path, md]


if __name__ == "__main__":
    res = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "bench/results")
    print(markdown(res))
    print()
    print(hadamard_markdown(res))
