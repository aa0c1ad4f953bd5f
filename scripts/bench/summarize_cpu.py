#!/usr/bin/env python3
"""Renders one scripts/bench-cpu run (JSON lines) as Markdown tables, to read a new run quickly.

The tables of docs/benchmarks/cpu-nomad.md come from scripts/charts.py (scripts/charts/cpu_nomad.py).

Usage: summarize_cpu.py RESULTS.jsonl [--isa-ratio avx512:avx2]
"""
import argparse
import collections
import json


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("jsonl")
    ap.add_argument("--isa-ratio", help="NUM:DEN, e.g. avx512:avx2: lookup-time ratio table")
    args = ap.parse_args()
    rows = [json.loads(l) for l in open(args.jsonl) if l.strip()]
    rows = [r for r in rows if r.get("centroids", 16) == 16 or r["isa"] == "avx512_vbmi"]
    print("| keys | t | dsub | C | isa | scores µs (LUT+lookup) | lookup µs | sgemv µs | scores × sgemv "
          "| decode µs (f16 V) | decode µs (f32 V) | dense decode µs | decode × dense | rel. err | top-32 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if r["isa"] == "scalar":
            continue
        print(f"| {r['keys']} | {r['t']} | {r['dsub']} | {r.get('centroids', 16)} | {r['isa']} | "
              f"{r['nomad_scores_us']} | {r['nomad_lookup_us']} | {r['sgemv_us']} | "
              f"{r['sgemv_us'] / r['nomad_scores_us']:.1f} | {r['nomad_decode_us']} | "
              f"{r['nomad_decode_f32v_us']} | {r['dense_decode_us']} | "
              f"{r['dense_decode_us'] / r['nomad_decode_us']:.1f} | {r['rel_err']:.3f} | "
              f"{r['top32_overlap']:.2f} |")
    if args.isa_ratio:
        num, den = args.isa_ratio.split(":")
        by = collections.defaultdict(dict)
        for r in rows:
            if r.get("centroids", 16) == 16:
                by[(r["keys"], r["t"], r["dsub"])][r["isa"]] = r
        print(f"\n| keys | t | dsub | {den} lookup µs | {num} lookup µs | {num} ÷ {den} speed-up "
              f"(medians) | fastest runs: {den} µs | {num} µs | speed-up |")
        print("|---|---|---|---|---|---|---|---|---|")
        for (keys, t, dsub), isas in sorted(by.items()):
            if num in isas and den in isas:
                a, b = isas[den]["nomad_lookup_us"], isas[num]["nomad_lookup_us"]
                fast = " – | – | – |"  # runs from before nomad_lookup_min_us existed
                if "nomad_lookup_min_us" in isas[den] and "nomad_lookup_min_us" in isas[num]:
                    fa, fb = isas[den]["nomad_lookup_min_us"], isas[num]["nomad_lookup_min_us"]
                    fast = f" {fa} | {fb} | {fa / fb:.2f} |"
                print(f"| {keys} | {t} | {dsub} | {a} | {b} | {a / b:.2f} |{fast}")


if __name__ == "__main__":
    main()
