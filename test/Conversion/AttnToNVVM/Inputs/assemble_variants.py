#!/usr/bin/env python3
"""What this file is: compiles every decode variant of decode_variants.py with
`attn-opt --emit=ptx` and assembles it with `ptxas -arch=sm_90a -v`; fails on any error, on
register spills in the attention (decode or prefill) kernel (persistent-grid variants: more than
32 bytes; fp8 and half-int8 prefill on three consumer warpgroups: more than 160 bytes), and on
WGMMAs ptxas serializes.
Usage: assemble_variants.py ATTN_OPT PTXAS WORKDIR."""
import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(__file__))
import decode_variants  # noqa: E402

attn_opt, ptxas, work = sys.argv[1:4]
PERSISTENT_SPILL_BYTES = 32
# fp8 prefill's default three consumer warpgroups leave the producer 32 registers: its V
# transpose (16 words in flight) spills 124–140 bytes, all in the producer (cuobjdump -sass: no
# STL after the consumers' setmaxnreg) — and still runs 10–15% faster than two consumers
# (docs/benchmarks/gpu-prefill.md). Half-int8 on three consumers (also its default)
# spills 4–140 bytes, mostly values parked once across the tile loop; per tile, its
# per_block kernels reload 0–4 words and store 0–2 (scripts/bench/sass_spills.py,
# docs/benchmarks/gpu-prefill.md).
THREE_CONSUMER_SPILL_BYTES = 160
# The persistent grid on three consumers (fp8 and half-int8's non-causal default)
# adds the work-item loop's state to the consumers: 6–11 words stored once, 7–34 reloads in
# the item and tile loops (sass_spills.py); with fp8's producer spills and rotation 164 bytes.
THREE_CONSUMER_PERSISTENT_SPILL_BYTES = 192
# Half-int8 with FA3's overlap at head_dim 64 parks one word: stored in the prologue, reloaded
# once per tile by the consumers and twice by the producer (sass_spills.py).
OVERLAP_D64_SPILL_BYTES = 4
os.makedirs(work, exist_ok=True)


def one(v):
    name = v[0]
    src = os.path.join(work, name + ".mlir")
    with open(src, "w") as f:
        f.write(decode_variants.spec(*v))
    ptx = os.path.join(work, name + ".ptx")
    r = subprocess.run([attn_opt, src, "--emit=ptx", "-o", ptx], capture_output=True, text=True)
    if r.returncode:
        return f"{name}: attn-opt failed: {r.stderr.strip()}"
    r = subprocess.run([ptxas, "-arch=sm_90a", "-v", ptx, "-o", os.devnull],
                       capture_output=True, text=True)
    if r.returncode:
        return f"{name}: ptxas failed: {r.stderr.strip()[:400]}"
    m = re.search(r"'\w+_(?:decode|prefill)'.*?(\d+) bytes spill stores", r.stderr, re.S)
    with open(ptx + ".launch.json") as f:
        meta = json.load(f)
    consumers = meta["schedule"]["consumer_warpgroups"]
    persistent = meta["kernels"][0]["grid"][0] == "persistent_ctas"
    # The persistent grid keeps the work-item loop's state across the consumers' loop: a few
    # words (bf16 on three consumers, its default up to 2048 keys: 0–16 bytes).
    allowed = PERSISTENT_SPILL_BYTES if persistent else 0
    if name.startswith(("pf_f8", "pf_i8q")) and consumers == 3:
        allowed = (THREE_CONSUMER_PERSISTENT_SPILL_BYTES if persistent
                   else THREE_CONSUMER_SPILL_BYTES)
    if "_d64_" in name and name.endswith("_ov"):
        allowed = OVERLAP_D64_SPILL_BYTES
    if m and int(m.group(1)) > allowed:
        return f"{name}: the attention kernel spills {m.group(1)} bytes (allowed: {allowed})"
    if "C7513" in r.stderr:  # "wgmma.mma_async instructions are serialized due to ..."
        return f"{name}: ptxas serializes the WGMMAs: {r.stderr.strip()[:300]}"
    return None


with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
    errors = [e for e in pool.map(one, decode_variants.variants()) if e]
for e in errors:
    print("ERROR", e)
print(f"{len(decode_variants.variants()) - len(errors)} of {len(decode_variants.variants())} "
      "decode variants assembled for sm_90a without spills (persistent grid: at most "
      f"{PERSISTENT_SPILL_BYTES} bytes; fp8 and half-int8 prefill on three consumers: at most "
      f"{THREE_CONSUMER_SPILL_BYTES}, with the persistent grid "
      f"{THREE_CONSUMER_PERSISTENT_SPILL_BYTES}; "
      "half-int8 with the overlap at head_dim 64: "
      f"{OVERLAP_D64_SPILL_BYTES}) or serialized WGMMAs")
sys.exit(1 if errors else 0)
