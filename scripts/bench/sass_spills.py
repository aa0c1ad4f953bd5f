#!/usr/bin/env python3
"""What this file is: locates a kernel's register spills in its SASS (`cuobjdump -sass` of a
ptxas cubin): every STL / LDL by warp role — the prologue (before the producer's `setmaxnreg`
dealloc), the producer, the consumers (from their `setmaxnreg` alloc) — and whether it sits in a
loop (the range of a backward branch; the out-of-line mbarrier wait stubs after the last EXIT,
which branch back into the code, are not loops). `ptxas -v` gives only a kernel's spilled bytes;
this tells a value parked once across the tile loop (cold) from one reloaded on every tile.

  ptxas -arch=sm_90a K.ptx -o K.cubin
  python3 scripts/bench/sass_spills.py K.cubin [K2.cubin ...]

cuobjdump is not in the Debian CUDA toolkit; PyPI has it (docs/Hopper.md):
  pip download --no-deps -d /tmp/w nvidia-cuda-cuobjdump && unzip -o /tmp/w/*.whl -d /tmp/w
  export PATH=/tmp/w/nvidia/cu13/bin:$PATH
"""
import collections
import re
import subprocess
import sys

INS = re.compile(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
BRANCH = re.compile(r"\bBRA(?:\.\S+)?\s+(?:!?U?P\d,\s*)?0x([0-9a-f]+)")


def functions(sass):
    """{kernel name: [(address, instruction)]} of a cuobjdump -sass listing."""
    out, cur = {}, None
    for line in sass.splitlines():
        m = re.search(r"Function : (\S+)", line)
        if m:
            cur = out.setdefault(m.group(1), [])
            continue
        m = INS.match(line)
        if m and cur is not None:
            cur.append((int(m.group(1), 16), m.group(2)))
    return out


def spills(ins):
    """Counts of spill instructions keyed by (role, 'loop' | 'cold', 'st' | 'ld')."""
    last_exit = max((a for a, t in ins if re.match(r"EXIT\b", t)), default=ins[-1][0])
    loops = []
    for a, t in ins:
        m = BRANCH.search(t)
        if m and a <= last_exit and int(m.group(1), 16) < a:
            loops.append((int(m.group(1), 16), a))
    dealloc = next((a for a, t in ins if "USETMAXREG.DEALLOC" in t), None)
    alloc = next((a for a, t in ins if "USETMAXREG.TRY_ALLOC" in t), None)

    def role(a):
        if dealloc is None:
            return "kernel"
        if a < dealloc:
            return "prologue"
        return "producer" if alloc is None or a < alloc else "consumer"

    out = collections.Counter()
    for a, t in ins:
        m = re.search(r"\b(STL|LDL)\b", t)
        if m:
            where = "loop" if any(lo <= a <= hi for lo, hi in loops) else "cold"
            out[(role(a), where, "st" if m.group(1) == "STL" else "ld")] += 1
    return out


def main(paths):
    for path in paths:
        sass = subprocess.run(["cuobjdump", "-sass", path], capture_output=True, text=True,
                              check=True).stdout
        for name, ins in functions(sass).items():
            if not ins:
                continue
            counts = spills(ins)
            text = " ".join(f"{r}/{w}/{s}={n}" for (r, w, s), n in sorted(counts.items()))
            print(f"{name}: {text or 'no spills'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
