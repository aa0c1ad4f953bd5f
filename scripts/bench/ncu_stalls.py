#!/usr/bin/env python3
"""What this file is: summarizes an Nsight Compute source page (`--page source --print-source sass
--csv`, with SourceCounters) of one decode/prefill kernel by warp role: instructions and stall
samples of the prologue, the producer (from setmaxnreg's dealloc) and the consumers (from its
alloc), the largest stall reasons of each, and the consumer instructions with the most samples.

  python3 scripts/bench/ncu_stalls.py F.csv [F2.csv ...]
"""
import collections
import csv
import sys


def load(path):
    lines = [l for l in open(path) if l.startswith('"0x') or l.startswith('"Address')]
    rows = list(csv.reader(lines))
    return [dict(zip(rows[0], r)) for r in rows[1:]]


def num(x):
    try:
        return int(x.replace(",", ""))
    except ValueError:
        return 0


def main(paths):
    for path in paths:
        recs = load(path)
        reasons = [h for h in recs[0] if h.startswith("stall_") and "Not Issued" not in h]
        cons = next(i for i, r in enumerate(recs) if "TRY_ALLOC" in r["Source"])
        prod = next(i for i, r in enumerate(recs) if "DEALLOC" in r["Source"])
        regions = {"producer": recs[prod:cons], "consumer": recs[cons:], "pre": recs[:prod]}
        total = sum(num(r["Warp Stall Sampling (All Samples)"]) for r in recs)
        print("==", path)
        for name, rr in regions.items():
            s = sum(num(r["Warp Stall Sampling (All Samples)"]) for r in rr)
            n = sum(num(r["Instructions Executed"]) for r in rr)
            agg = collections.Counter()
            for r in rr:
                for h in reasons:
                    agg[h] += num(r[h])
            print(f" {name:9} instr {n / 1e6:8.1f}M samples {100 * s / total:5.1f}%  " +
                  ", ".join(f"{k[6:]} {100 * v / max(s, 1):.0f}%" for k, v in agg.most_common(6)))
        top = sorted(regions["consumer"], key=lambda r: -num(r["Warp Stall Sampling (All Samples)"]))
        for r in top[:14]:
            s = num(r["Warp Stall Sampling (All Samples)"])
            why = sorted(((num(r[h]), h[6:]) for h in reasons), reverse=True)[:2]
            print(f"   {r['Address'][-5:]} {100 * s / total:5.1f}% {r['Source'].strip()[:60]:60} {why}")


if __name__ == "__main__":
    main(sys.argv[1:])
