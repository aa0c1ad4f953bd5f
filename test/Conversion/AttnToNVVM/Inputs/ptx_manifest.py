#!/usr/bin/env python3
"""What this file is: the PTX manifest check. It compiles every sm_90a kernel variant the GPU
scripts build — the decode / prefill grid of decode_variants.py (split-KV variants carry their
combine kernel in the same module), the MLA decode and MLA cache-quantize variants of
scripts/gpu-mla.py, the quantize variants of scripts/gpu-quantize.py and the paged-append ones
below (PAGED_APPEND), every sm_90a spec in examples/ and examples/bench/, the static-batch
Table-3 specs of scripts/gpu-decode-build.sh and the paged decode kernels of
python/tests/paged_cases.py — with `attn-opt --emit=ptx` (each with the flags its producer
uses), and compares the sha256 of
each variant's PTX and of its launch metadata JSON against a committed manifest
(ptx-manifest.txt: one `name ptx-sha256 launch-sha256` line per variant, sorted by name).

Usage: ptx_manifest.py [--update] [--only REGEX] [--jobs N] ATTN_OPT WORKDIR MANIFEST

Without --update it prints one line per changed, new or missing variant and exits 1 on any
difference; with --update it rewrites MANIFEST (scripts/update-ptx-manifest.sh). --only restricts
both to the variants whose name the regular expression matches (e.g. '^quantize/'; with --update,
the other lines stay as they are). Compiles run in parallel, one attn-opt process per core.
"""
import argparse
import hashlib
import importlib.util
import os
import re
import resource
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[3]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "scripts"))
import decode_variants  # noqa: E402

SCHEDULED = ("--attn-normalize", "--attn-select-schedule")
# scripts/gpu-decode-build.sh: table3_i8q.mlir with the batch written into the spec.
STATIC_BATCHES = (256, 128, 64, 32, 16, 8, 4, 2)


# attn.quantize.append_paged (slot-mapped writes into a paged cache), pages 16 and 64.
PAGED_APPEND = {
    "paged_p16_i8_per_token_head": dict(page_size=16),
    "paged_p64_i8_per_token_head": dict(page_size=64),
    "paged_p16_ui8_g32_asym": dict(page_size=16, dtype="ui8", symmetric=False,
                                   granularity="per_group<32>"),
    "paged_p64_e4m3_per_token": dict(page_size=64, dtype="f8E4M3FN", granularity="per_token"),
    "paged_p16_i8_block1x64_i32": dict(page_size=16, granularity="per_block<1 x 64>",
                                       slot_dtype="i32"),
    "paged_p64_f16_per_head": dict(page_size=64, src_dtype="f16", granularity="per_head"),
}


PAGED_SINKS_LSE = {
    "paged_i8_p16_sinks_lse": dict(page_size=16, max_blocks=260, q_len=2, q_heads=16, kv_heads=2,
                                   head_dim=128, kv_dtype="i8", granularity="per_token_head",
                                   causal=True, sinks=True, lse=True),
    "paged_bf16_p64_lse": dict(page_size=64, max_blocks=20, q_len=1, q_heads=8, kv_heads=2,
                               head_dim=64, kv_dtype="bf16", lse=True),
}


# Sliding-window decode (its tiles before the window skipped), contiguous with split-KV and its
# combine kernels, int8 queries with the two-CTA companion, and paged.
I8 = dict(kv_dtype="i8", granularity="per_token_head")
WINDOW = {
    "window_i8_gqa8_q2_l127_r0": dict(q_len=2, q_heads=16, kv_heads=2, head_dim=128,
                                      window=(127, 0), sinks=True, lse=True, **I8),
    "window_bf16_gqa4_q2_l127": dict(q_len=2, q_heads=8, kv_heads=2, head_dim=128,
                                     window=(127, -1), kv_dtype="bf16", lse=True),
    "window_i8q_mqa_q3_l63_causal": dict(q_len=3, q_heads=16, kv_heads=1, head_dim=128,
                                         window=(63, 0), q_dtype="i8",
                                         q_granularity="per_token_head", causal=True, **I8),
    "window_fp8_gqa4_d64_q2_l127": dict(q_len=2, q_heads=8, kv_heads=2, head_dim=64,
                                        window=(127, 0), kv_dtype="f8E4M3FN",
                                        granularity="per_token", mode="fp8"),
    "window_paged_i8_p16_l127": dict(page_size=16, max_blocks=260, q_len=2, q_heads=16,
                                     kv_heads=2, head_dim=128, window=(127, 0), sinks=True,
                                     lse=True, num_pages=None, **I8),
    "window_paged_bf16_p64_l63": dict(page_size=64, max_blocks=70, q_len=1, q_heads=8,
                                      kv_heads=2, head_dim=128, window=(63, -1),
                                      kv_dtype="bf16", num_pages=None),
}


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def variants():
    """[(name, spec text, extra attn-opt flags)] of every sm_90a variant, names unique."""
    out = []
    for v in decode_variants.variants():
        out.append((f"decode/{v[0]}", decode_variants.spec(*v), ()))
    mla = _load(ROOT / "scripts/gpu-mla.py", "gpu_mla")
    quantize = _load(ROOT / "scripts/gpu-quantize.py", "gpu_quantize")
    spec_mod = _load(ROOT / "python/qattn/spec.py", "qattn_spec")
    for name, kw in mla.variants().items():
        out.append((f"mla/{name}", spec_mod.mla_decode(name=name, **kw).text,
                    ("--attn-select-schedule",)))
    for name, src_dtype in mla.QUANT_VARIANTS.items():
        text = spec_mod.mla_quantize(batch=None, tokens=None, capacity=None, src_dtype=src_dtype,
                                     name=name).text
        out.append((f"mla/{name}", text, ()))
    for name, kw in quantize.variants().items():
        out.append((f"quantize/{name}", quantize.spec_text(spec_mod, name, kw), ()))
    # The paged decode kernels of the GPU tests (python/tests/paged_cases.py; their contiguous
    # twins are not pinned).
    paged = _load(ROOT / "python/tests/paged_cases.py", "paged_cases")
    for name, spec in paged.specs(spec_mod):
        if not name.endswith("_contig"):
            out.append((f"paged/{name}", spec.text, ()))
    # Paged decode with attention sinks and the log-sum-exp output (their parameters follow
    # block_table): int8 pages converted by the producer region, bf16 pages read in place.
    for name, kw in PAGED_SINKS_LSE.items():
        text = spec_mod.attention("decode", batch=None, kv_len=None, seq_lens=True,
                                  num_pages=None, name=name, **kw).text
        out.append((f"paged/{name}", text, ()))
    for name, kw in WINDOW.items():
        text = spec_mod.attention("decode", batch=None, kv_len=None, seq_lens=True, name=name,
                                  **kw).text
        out.append((f"window/{name}", text, ()))
    for name, kw in PAGED_APPEND.items():
        text = spec_mod.quantize_paged(tokens=None, num_pages=None, heads=8, head_dim=128,
                                       target="sm_90a", name=name, **kw).text
        out.append((f"paged_append/{name}", text, ()))
    for f in sorted((ROOT / "examples").glob("*.mlir")):
        text = f.read_text()
        code = "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("//"))
        if "#attn.target<sm_90a>" in code:
            out.append((f"example/{f.stem}", text, SCHEDULED))
    for f in sorted((ROOT / "examples/bench").glob("*.mlir")):
        out.append((f"bench/{f.stem}", f.read_text(), ()))
    table3 = (ROOT / "examples/bench/table3_i8q.mlir").read_text()
    for b in STATIC_BATCHES:
        text = re.sub(r"memref<\?x", f"memref<{b}x", table3)
        text = text.replace("@table3_i8q", f"@table3_i8qs_b{b}")
        out.append((f"bench/table3_i8qs_b{b}", text, ()))
    names = [n for n, _, _ in out]
    assert len(set(names)) == len(names), "variant names must be unique"
    return out


def _sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def compile_one(attn_opt, work, item):
    """Compiles one variant in WORK; returns (name, ptx sha, launch sha) or (name, error)."""
    name, text, flags = item
    stem = name.replace("/", "__")
    src, ptx = work / f"{stem}.mlir", work / f"{stem}.ptx"
    src.write_text(text)
    # Relative paths: nothing of WORK's location can reach the artifacts.
    r = subprocess.run([attn_opt, src.name, *flags, "--emit=ptx", "-o", ptx.name], cwd=work,
                       capture_output=True, text=True)
    if r.returncode:
        return name, f"attn-opt failed: {r.stderr.strip()[:600]}"
    launch = work / f"{stem}.ptx.launch.json"
    if not ptx.exists() or not launch.exists():
        return name, "attn-opt wrote no PTX or no launch metadata"
    return name, _sha(ptx), _sha(launch)


def read_manifest(path):
    entries = {}
    if path.exists():
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if line.strip() and not line.startswith("#"):
                fields = line.split()
                if len(fields) != 3:
                    sys.exit(f"{path}:{n}: expected `name ptx-sha256 launch-sha256`, got {line!r}")
                entries[fields[0]] = (fields[1], fields[2])
    return entries


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("attn_opt")
    ap.add_argument("work")
    ap.add_argument("manifest")
    ap.add_argument("--update", action="store_true", help="rewrite the manifest")
    ap.add_argument("--only", help="only the variants whose name matches this regex")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = ap.parse_args()
    work, manifest = Path(args.work).resolve(), Path(args.manifest)
    if os.sep in args.attn_opt:  # compiles run in WORK: a relative path would not resolve there
        args.attn_opt = os.path.abspath(args.attn_opt)
    work.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    items = variants()
    selected = (lambda name: re.search(args.only, name)) if args.only else (lambda name: True)
    items = [it for it in items if selected(it[0])]
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(lambda it: compile_one(args.attn_opt, work, it), items))
    errors = [r for r in results if len(r) == 2]
    for name, why in errors:
        print(f"ERROR {name}: {why}")
    got = {r[0]: (r[1], r[2]) for r in results if len(r) == 3}
    elapsed = time.monotonic() - start
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"compiled {len(results)} variants in {elapsed:.0f} s wall, "
          f"{cpu.ru_utime + cpu.ru_stime:.0f} s CPU, {args.jobs} jobs")
    if errors:
        return 1
    recorded = read_manifest(manifest)
    if args.update:
        merged = {n: v for n, v in recorded.items() if not selected(n)}
        merged.update(got)
        lines = [f"{n} {p} {l}\n" for n, (p, l) in sorted(merged.items())]
        manifest.write_text("".join(lines))
        print(f"wrote {len(lines)} variants to {manifest} ({len(got)} compiled)")
        return 0
    want = {n: v for n, v in recorded.items() if selected(n)}
    diffs = []
    for name in sorted(set(got) | set(want)):
        if name not in want:
            diffs.append(f"NEW {name}: not in the manifest")
        elif name not in got:
            diffs.append(f"MISSING {name}: in the manifest, no longer built")
        elif got[name] != want[name]:
            what = [w for w, a, b in zip(("ptx", "launch"), got[name], want[name]) if a != b]
            diffs.append(f"CHANGED {name}: {' and '.join(what)}")
    for d in diffs:
        print(d)
    if diffs:
        print(f"{len(diffs)} differences from {manifest.name} ({len(got)} variants compiled); if "
              "the change is deliberate, run scripts/update-ptx-manifest.sh")
        return 1
    print(f"{len(got)} of {len(want)} variants match the PTX manifest "
          f"(PTX and launch metadata, sha256)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
