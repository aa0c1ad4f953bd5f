#!/usr/bin/env python3
"""Checks every spec in examples/ and the tutorial built from them.

For each examples/*.mlir: it parses and verifies; printing and re-parsing gives the same text;
attn-normalize + attn-select-schedule accept it; and --emit for its target kind either produces
an artifact or refuses with a located "not supported yet" (never an empty success). For
docs/Tutorial.md: every ```mlir block preceded by `<!-- example: NAME -->` is exactly the file
examples/NAME, and every example is shown in the tutorial. Prints one line per example.
"""
import pathlib
import re
import subprocess
import sys


def run(cmd, stdin=None):
    return subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=120)


def main():
    attn_opt, examples_dir, tutorial = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
    failures = []
    examples = sorted(examples_dir.glob("*.mlir"))
    if not examples:
        print("no examples found", file=sys.stderr)
        return 1
    for ex in examples:
        first = run([attn_opt, str(ex)])
        if first.returncode != 0:
            failures.append(f"{ex.name}: does not parse/verify:\n{first.stderr}")
            continue
        second = run([attn_opt, "-"], stdin=first.stdout)
        if second.returncode != 0 or second.stdout != first.stdout:
            failures.append(f"{ex.name}: printed form does not round-trip")
            continue
        sched = run([attn_opt, "--attn-normalize", "--attn-select-schedule", str(ex)])
        if sched.returncode != 0:
            failures.append(f"{ex.name}: normalize/select-schedule failed:\n{sched.stderr}")
            continue
        gpu = "#attn.target<sm_90a>" in sched.stdout
        emit = "ptx" if gpu else "obj"
        out = pathlib.Path(f"{ex.stem}.{emit}")
        em = run([attn_opt, "--attn-normalize", "--attn-select-schedule", f"--emit={emit}", str(ex),
                  "-o", str(out)])
        if em.returncode == 0:
            if not out.exists() or out.stat().st_size == 0:
                failures.append(f"{ex.name}: --emit={emit} succeeded with an empty artifact")
                continue
            verdict = f"emit={emit}: {out.stat().st_size} bytes"
        else:
            if not re.search(r"\.mlir:\d+:\d+: error: not supported yet( by [\w-]+)?: ", em.stderr):
                failures.append(f"{ex.name}: --emit={emit} failed without a located "
                                f"'not supported yet':\n{em.stderr}")
                continue
            verdict = f"emit={emit}: not supported yet"
        print(f"EXAMPLE {ex.name}: roundtrip ok, scheduled ok, {verdict}")

    text = tutorial.read_text()
    shown = {}
    for m in re.finditer(r"<!-- example: (\S+) -->\s*```mlir\n(.*?)```", text, re.S):
        shown[m.group(1)] = m.group(2)
    for ex in examples:
        if ex.name not in shown:
            failures.append(f"tutorial does not show examples/{ex.name}")
        elif shown[ex.name] != ex.read_text():
            failures.append(f"tutorial copy of examples/{ex.name} differs from the file")
    for name in shown:
        if not (examples_dir / name).exists():
            failures.append(f"tutorial shows examples/{name}, which does not exist")
    if failures:
        print("\n".join(failures), file=sys.stderr)
        return 1
    print(f"TUTORIAL ok: {len(shown)} examples shown")
    return 0


if __name__ == "__main__":
    sys.exit(main())
