"""What this file is: the ``--prebuild DIR`` entry the GPU test files share (test_gpu.py,
test_gpu_paged.py, test_gpu_sinks.py): each case's spec compiled by attn-opt into DIR as
``<name>.ptx`` and ``<name>.ptx.launch.json``, which ``$QATTN_GPU_KERNELS`` then points a GPU
machine without attn-opt at."""
import json
import sys
from pathlib import Path

import qattn


def main(script, specs):
    """``python <script> --prebuild DIR``: builds every (name, spec) of ``specs`` and exits."""
    if len(sys.argv) != 3 or sys.argv[1] != "--prebuild":
        sys.exit(f"usage: {script} --prebuild DIR")
    out = Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    for name, spec in specs:
        kern = qattn.build(spec)
        (out / f"{name}.ptx").write_text(kern.ptx)
        (out / f"{name}.ptx.launch.json").write_text(json.dumps(kern.meta))
        print(out / f"{name}.ptx")
    sys.exit(0)
