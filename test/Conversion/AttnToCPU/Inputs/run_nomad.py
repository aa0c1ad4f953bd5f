#!/usr/bin/env python3
"""Builds and runs the NoMAD kernel checks for one ISA over a grid of configurations.

For each (head_dim, dsub, centroids): fills nomad_kernels.mlir.in, compiles it with
`attn-opt --emit=obj` and `--emit=header`, builds nomad_harness.cpp against the object (the
aarch64 cross compiler for neon, run under qemu-aarch64), runs it, and prints its verdict.
A configuration the host cannot execute (e.g. AVX-512 on a CPU without it) is compiled and
reported as "COMPILED (not run: ...)". Exits non-zero on any failure.
"""
import argparse
import os
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent


def host_flags():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--attn-opt", required=True)
    ap.add_argument("--src", required=True, help="repository root")
    ap.add_argument("--isa", required=True)
    ap.add_argument("--configs", default="64:1,64:2,64:4,128:1,128:2,128:4",
                    help="comma-separated head_dim:dsub[:centroids]")
    ap.add_argument("--build-only", metavar="DIR",
                    help="build static harnesses into DIR (harness_<isa>_<d>_<dsub>_<c>) to run on "
                         "another machine, instead of running them here")
    args = ap.parse_args()

    flags = host_flags()
    needs = {"avx2": {"avx2", "f16c", "fma"}, "avx512": {"avx512bw", "avx512vl", "avx512dq"},
             "avx512_vbmi": {"avx512bw", "avx512vl", "avx512vbmi"},
             "avx512_vnni": {"avx512bw", "avx512vl", "avx512vbmi", "avx512_vnni"}}.get(args.isa, set())
    missing = sorted(needs - flags)
    neon = args.isa == "neon"
    cxx = ["aarch64-linux-gnu-g++", "-static"] if neon else ["g++"]
    if args.build_only:
        cxx = cxx + ["-static"] if not neon else cxx
        missing = []
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for cfg in args.configs.split(","):
            parts = [int(x) for x in cfg.split(":")]
            d, dsub = parts[0], parts[1]
            c = parts[2] if len(parts) > 2 else 16
            s, r = d // dsub, (16 if c == 16 else 32)
            work = pathlib.Path(tmp) / f"{args.isa}_{d}_{dsub}_{c}"
            work.mkdir()
            spec = (HERE / "nomad_kernels.mlir.in").read_text()
            for k, v in {"@D@": d, "@DSUB@": dsub, "@S@": s, "@C@": c, "@R@": r,
                         "@ISA@": args.isa}.items():
                spec = spec.replace(k, str(v))
            (work / "kernels.mlir").write_text(spec)
            name = f"isa={args.isa} D={d} dsub={dsub} C={c}"
            for kind, out in (("obj", "kernels.o"), ("header", "kernels.h")):
                res = subprocess.run([args.attn_opt, f"--emit={kind}", str(work / "kernels.mlir"),
                                      "-o", str(work / out)], capture_output=True, text=True)
                if res.returncode != 0:
                    print(f"FAIL {name}: attn-opt --emit={kind}\n{res.stderr}")
                    ok = False
                    break
            else:
                build = cxx + ["-std=c++17", "-O2", "-ffp-contract=off", f"-DATTN_D={d}",
                               f"-DATTN_DSUB={dsub}", f"-DATTN_C={c}", f"-I{work}",
                               f"-I{pathlib.Path(args.src) / 'include'}",
                               str(HERE / "nomad_harness.cpp"), str(work / "kernels.o"),
                               "-o", str(work / "harness"), "-lm"]
                res = subprocess.run(build, capture_output=True, text=True)
                if res.returncode != 0:
                    print(f"FAIL {name}: harness build\n{res.stderr}")
                    ok = False
                    continue
                if args.build_only:
                    import shutil
                    shutil.copy(work / "harness",
                                pathlib.Path(args.build_only) / f"harness_{args.isa}_{d}_{dsub}_{c}")
                    print(f"BUILT {name}")
                    continue
                if missing:
                    print(f"COMPILED {name} (not run: host lacks {' '.join(missing)})")
                    continue
                cmd = [str(work / "harness")]
                env = dict(os.environ)
                if neon:
                    cmd = ["qemu-aarch64"] + cmd
                    env["QEMU_LD_PREFIX"] = "/usr/aarch64-linux-gnu"
                res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
                out = res.stdout.strip()
                print(f"{name}: {out}")
                if res.returncode != 0:
                    print(res.stderr)
                    ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
