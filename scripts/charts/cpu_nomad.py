"""Charts and tables of docs/benchmarks/cpu-nomad.md: NoMAD lookups on CPUs against OpenBLAS.

Reads the scripts/bench-cpu runs in bench/results/ (one JSON object per kernel configuration, every
time a median over the run's repetitions, the OpenBLAS peer measured in the same run) and writes:
  cpu-nomad-vs-sgemv.png    NoMAD scores ÷ sgemv and NoMAD decode ÷ dense f32 decode, per key count
  cpu-nomad-isa.png         AVX-512 lookups against AVX2 on the Xeon, with the read-bandwidth bound
  cpu-nomad-centroids.png   output error against lookup time for 16 / 32 / 64 centroids
  cpu-nomad-tables.md       every row of those runs as Markdown tables
"""
import collections
import json
import pathlib
import statistics

DEV = "2026-11-22-cpu-nomad-epyc-avx2.jsonl"          # 2-core AMD EPYC (AVX2), 30 repetitions
XEON = ["2026-11-23-cpu-nomad-xeon-vnni-run1.jsonl",  # Sapphire Rapids Xeon core 7, 40 repetitions
        "2026-11-23-cpu-nomad-xeon-vnni-run2.jsonl"]
T65536 = "2026-11-23-cpu-nomad-xeon-t65536.jsonl"     # same call as the read-bandwidth loop
BANDWIDTH = "2026-11-23-cpu-read-bandwidth-xeon.jsonl"
ISA_COLORS = {"scalar": "#999999", "avx2": "#4878d0", "avx512": "#6acc64", "avx512_vnni": "#d65f5f"}


def load(path: pathlib.Path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _save(fig, path: pathlib.Path):
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    return path


def chart_vs_blas(dev, xeon, path):
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(2, 2, figsize=(10, 7), sharex=True)
    machines = [("2-core AMD EPYC (AVX2), 2026-11-22", dev),
                ("Xeon (Sapphire Rapids), one pinned core, 2026-11-23", xeon)]
    for col, (title, rows) in enumerate(machines):
        for row, (num, den, label) in enumerate([
                ("sgemv_us", "nomad_scores_us", "NoMAD scores (LUT + lookups) ÷ OpenBLAS sgemv"),
                ("dense_decode_us", "nomad_decode_us", "NoMAD decode ÷ dense f32 decode")]):
            ax = axes[row][col]
            for isa in ISA_COLORS:
                for keys, style in (("clustered", "-"), ("gaussian", "--")):
                    pts = sorted((r["t"], r[num] / r[den]) for r in rows
                                 if r["isa"] == isa and r["keys"] == keys and r["dsub"] == 1
                                 and r["centroids"] == 16)
                    if pts:
                        ax.plot(*zip(*pts), style, marker="o", color=ISA_COLORS[isa],
                                label=f"{isa}, {keys} keys")
            ax.axhline(1.0, color="black", lw=0.6)
            ax.set_xscale("log", base=2)
            ax.set_xticks([4096, 16384, 65536], ["4096", "16384", "65536"])
            ax.set_ylabel(f"speed-up (×)\n{label}", fontsize=8)
            ax.grid(alpha=0.3)
            if row == 0:
                ax.set_title(title, fontsize=9)
            else:
                ax.set_xlabel("keys t (head_dim 128, dsub 1, 16 centroids, one thread)")
        axes[0][col].legend(fontsize=7)
    return _save(fig, path)


def isa_ratios(runs, num, den="avx2"):
    """{t: [fastest-run speed-up of `num` over `den`, per run and key set]} at dsub 1, 16 centroids."""
    out = collections.defaultdict(list)
    for rows in runs:
        by = collections.defaultdict(dict)
        for r in rows:
            if r["dsub"] == 1 and r["centroids"] == 16:
                by[(r["keys"], r["t"])][r["isa"]] = r["nomad_lookup_min_us"]
        for (keys, t), isas in by.items():
            if num in isas and den in isas:
                out[t].append(isas[den] / isas[num])
    return out


def read_bound(t65536, bandwidth):
    """avx2 lookup time ÷ the time to only read the 4 MiB of codes, per key set (same call)."""
    read_us = min(r["best_us"] for r in bandwidth if r["kind"] == "read_bandwidth" and r["mib"] == 4)
    return {r["keys"]: r["nomad_lookup_min_us"] / read_us for r in t65536
            if r["isa"] == "avx2" and r["centroids"] == 16 and r["dsub"] == 1}


def chart_isa(xeon_runs, bound, path):
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 4.2))
    ts = [4096, 16384, 65536]
    for i, isa in enumerate(["avx512", "avx512_vnni"]):
        ratios = isa_ratios(xeon_runs, isa)
        mids = [statistics.median(ratios[t]) for t in ts]
        lo = [m - min(ratios[t]) for m, t in zip(mids, ts)]
        hi = [max(ratios[t]) - m for m, t in zip(mids, ts)]
        xs = [j + (i - 0.5) * 0.35 for j in range(len(ts))]
        ax.bar(xs, mids, 0.35, yerr=[lo, hi], capsize=3, color=ISA_COLORS[isa],
               label=f"{isa} ÷ avx2 (median, range over 2 runs × 2 key sets)")
    b = sorted(bound.values())
    ax.plot([1.6, 2.4], [b[0], b[0]], color="black", lw=1.2)
    ax.plot([1.6, 2.4], [b[-1], b[-1]], color="black", lw=1.2,
            label=f"only reading the codes ÷ avx2 at t = 65536 ({b[0]:.2f}–{b[-1]:.2f})")
    ax.axhline(1.0, color="black", lw=0.6)
    ax.set_xticks(range(len(ts)), [str(t) for t in ts])
    ax.set_xlabel("keys t (head_dim 128, dsub 1, 16 centroids; 4 MiB of codes at 65536)")
    ax.set_ylabel("lookup speed-up over avx2 (fastest runs)")
    ax.set_title("AVX-512 lookups on one Xeon core (2026-11-23)", fontsize=10)
    ax.legend(fontsize=8, loc="upper right")
    ax.set_ylim(0, 2.4)
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


def chart_centroids(xeon, path):
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 4.2))
    markers = {4096: "o", 16384: "s", 65536: "^"}
    for keys, color in (("clustered", "#4878d0"), ("gaussian", "#ee854a")):
        for t, m in markers.items():
            pts = sorted((r["nomad_lookup_us"], r["rel_err"], r["centroids"], r["top32_overlap"])
                         for r in xeon if r["isa"] == "avx512_vnni" and r["dsub"] == 1
                         and r["t"] == t and r["keys"] == keys)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "-", marker=m, color=color,
                    alpha=0.8, label=f"{keys}, t = {t}")
            for us, err, c, top in pts:
                ax.annotate(f"{c}", (us, err), textcoords="offset points", xytext=(4, 3),
                            fontsize=7)
    ax.set_xscale("log")
    ax.set_xlabel("lookup time µs (avx512_vnni, one core; log scale)")
    ax.set_ylabel("‖o_NoMAD − o_dense‖ / ‖o_dense‖")
    ax.set_title("Centroids per sub-quantizer (labels): accuracy against time, dsub 1", fontsize=10)
    ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=0.3)
    return _save(fig, path)


def table_rows(rows):
    head = ("| keys | t | dsub | C | isa | scores µs | lookup µs | sgemv µs | scores × sgemv "
            "| decode µs (f16 V) | decode µs (f32 V) | dense decode µs | decode × dense "
            "| rel. err | top-32 |\n" + "|---" * 15 + "|\n")
    body = "".join(
        f"| {r['keys']} | {r['t']} | {r['dsub']} | {r['centroids']} | {r['isa']} | "
        f"{r['nomad_scores_us']} | {r['nomad_lookup_us']} | {r['sgemv_us']} | "
        f"{r['sgemv_us'] / r['nomad_scores_us']:.1f} | {r['nomad_decode_us']} | "
        f"{r['nomad_decode_f32v_us']} | {r['dense_decode_us']} | "
        f"{r['dense_decode_us'] / r['nomad_decode_us']:.1f} | {r['rel_err']:.3f} | "
        f"{r['top32_overlap']:.2f} |\n" for r in sorted(rows, key=lambda r: (
            r["keys"], r["t"], r["dsub"], r["centroids"], list(ISA_COLORS).index(r["isa"]))))
    return head + body


def tables(dev, xeon_runs, t65536, bandwidth, bound):
    ratio = "| t | avx512 ÷ avx2 | avx512_vnni ÷ avx2 |\n|---|---|---|\n"
    r512, rvnni = isa_ratios(xeon_runs, "avx512"), isa_ratios(xeon_runs, "avx512_vnni")
    for t in sorted(r512):
        ratio += (f"| {t} | {min(r512[t]):.2f}–{max(r512[t]):.2f} | "
                  f"{min(rvnni[t]):.2f}–{max(rvnni[t]):.2f} |\n")
    bw = "| loads | MiB | best µs | GB/s |\n|---|---|---|---|\n" + "".join(
        f"| {r['loads']} | {r['mib']} | {r['best_us']} | {r['gb_per_s']} |\n"
        for r in bandwidth if r["kind"] == "read_bandwidth")
    look = "| isa | keys | centroids | fastest lookup µs | codes GB/s |\n|---|---|---|---|---|\n" + "".join(
        f"| {r['isa']} | {r['keys']} | {r['centroids']} | {r['nomad_lookup_min_us']} | "
        f"{r['codes_gb_per_s']} |\n" for r in bandwidth if r["kind"] == "lookup")
    return (
        "# NoMAD on CPUs: every measured row\n\n"
        "Generated by `scripts/charts.py` from bench/results/; see "
        "[cpu-nomad.md](../cpu-nomad.md) for the setup and commands.\n\n"
        f"## 2-core AMD EPYC, AVX2 (2026-11-22, `{DEV}`)\n\n"
        + table_rows([r for r in dev if r["isa"] != "scalar"]) +
        f"\n## Xeon (Sapphire Rapids), one pinned core (2026-11-23, `{XEON[0]}`)\n\n"
        + table_rows(xeon_runs[0]) +
        f"\n## AVX-512 lookups ÷ AVX2, dsub 1, fastest runs (range over `{XEON[0]}`, "
        f"`{XEON[1]}`, both key sets)\n\n" + ratio +
        f"\n## One core's read bandwidth (`{BANDWIDTH}`)\n\n" + bw + "\n" + look +
        "\nOnly reading the codes ÷ avx2 lookups at t = 65536: "
        + ", ".join(f"{k} {v:.2f}" for k, v in sorted(bound.items())) + "\n")


def render(results: pathlib.Path, out: pathlib.Path):
    dev = load(results / DEV)
    xeon_runs = [load(results / f) for f in XEON]
    t65536, bandwidth = load(results / T65536), load(results / BANDWIDTH)
    bound = read_bound(t65536, bandwidth)
    written = [
        chart_vs_blas(dev, xeon_runs[0], out / "cpu-nomad-vs-sgemv.png"),
        chart_isa(xeon_runs, bound, out / "cpu-nomad-isa.png"),
        chart_centroids(xeon_runs[0], out / "cpu-nomad-centroids.png"),
    ]
    md = out / "cpu-nomad-tables.md"
    md.write_text(tables(dev, xeon_runs, t65536, bandwidth, bound))
    return written + [md]
