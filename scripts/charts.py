#!/usr/bin/env python3
"""scripts/charts.py — regenerate every benchmark chart and table from bench/results/.

Each module scripts/charts/<name>.py (names starting with "_" are skipped) provides
    render(results: pathlib.Path, out: pathlib.Path) -> list[pathlib.Path]
which reads the data files it needs from `results` and writes PNG charts and Markdown tables into
`out`, returning the paths it wrote. The benchmark pages under docs/benchmarks/ embed those files.

Usage: scripts/charts.py [--results bench/results] [--out docs/benchmarks/img] [--only NAME ...]
Needs matplotlib (pip install './python[plot]' or the Debian package python3-matplotlib).
"""
import argparse
import importlib.util
import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def chart_modules(only):
    for path in sorted((ROOT / "scripts" / "charts").glob("*.py")):
        if path.name.startswith("_") or (only and path.stem not in only):
            continue
        spec = importlib.util.spec_from_file_location(f"charts_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        if not hasattr(module, "render"):
            raise SystemExit(f"{path}: no render(results, out) function")
        yield path.stem, module


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--results", type=pathlib.Path, default=ROOT / "bench" / "results",
                    help="folder of the measured data")
    ap.add_argument("--out", type=pathlib.Path, default=ROOT / "docs" / "benchmarks" / "img",
                    help="folder the charts and tables are written to")
    ap.add_argument("--only", nargs="*", default=[], help="module names (e.g. cpu_nomad)")
    args = ap.parse_args(argv)
    os.environ.setdefault("MPLBACKEND", "Agg")
    try:
        import matplotlib
    except ImportError:
        print("charts.py: matplotlib is not installed (pip install matplotlib)", file=sys.stderr)
        return 1
    matplotlib.use("Agg")
    if not args.results.is_dir():
        print(f"charts.py: no results folder {args.results}", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    found = False
    for name, module in chart_modules(set(args.only)):
        found = True
        for path in module.render(args.results, args.out):
            print(f"{name}: {os.path.relpath(path, ROOT)}")
    if not found:
        print("charts.py: no chart module matched", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
