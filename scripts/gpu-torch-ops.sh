#!/usr/bin/env bash
# scripts/gpu-torch-ops.sh — on a GPU machine with torch and the CUDA toolkit but without attn-opt:
# installs the package from this checkout (`pip install --no-build-isolation --no-deps`: builds
# libattn_rt.so and the attn_opt torch extension against the machine's torch), then runs the
# torch-op tests (tests/test_torch_ops.py: results against the ctypes launcher and a torch
# reference, cuda:0 and cuda:1, non-default stream, a 32-layer decode step in one CUDA graph, host
# time per call) and the ctypes launcher's tests (tests/test_gpu.py) from the installed package.
#
# usage: scripts/gpu-torch-ops.sh KERNEL_DIR [OUT_DIR]
#   KERNEL_DIR  PTX + launch metadata prebuilt where attn-opt is, by
#               `python python/tests/test_gpu.py --prebuild DIR` and
#               `python python/tests/test_torch_ops.py --prebuild DIR`
#   OUT_DIR     logs and torch_ops.json (the measurements); default $OUT, else /tmp/gpu-torch-ops
# PYTHON selects the interpreter (default python3). Wheels in $WHEELS (default <checkout>/whl) are
# installed first when pytest is missing. Ends with one "N passed, N failed" line.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 1 ] && [ -d "$1" ] || { echo "usage: $0 KERNEL_DIR [OUT_DIR]" >&2; exit 2; }
kernels=$(cd "$1" && pwd)
out=${2:-${OUT:-/tmp/gpu-torch-ops}}
mkdir -p "$out"
out=$(cd "$out" && pwd)
py=${PYTHON:-python3}
wheels=${WHEELS:-$root/whl}

if ! "$py" -c "import pytest" 2>/dev/null; then
  "$py" -m pip install -q --no-index --no-deps "$wheels"/*.whl || { echo "no pytest"; exit 1; }
fi
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; "$py" -c \
  "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'gpus', torch.cuda.device_count())"
  date -u; } >"$out/env.txt" 2>&1
cat "$out/env.txt"

echo "== pip install --no-build-isolation --no-deps $root/python"
rm -rf "$root/python/build"
if ! "$py" -m pip install --no-build-isolation --no-deps --no-index -v "$root/python" \
    >"$out/install.log" 2>&1; then
  tail -40 "$out/install.log"
  echo "0 passed, 1 failed"
  exit 1
fi
grep -E "attn-opt setup|Successfully" "$out/install.log"

cd /tmp  # import the installed package, not the checkout's
"$py" -c "import qattn, qattn.torch_ops as t; print(qattn.__file__, 'extension:', t.extension_path())"
export QATTN_GPU_KERNELS="$kernels" QATTN_TORCH_OPS_REPORT="$out/torch_ops.json"
rm -f "$out/torch_ops.json"
passed=0
failed=0
for t in test_torch_ops test_gpu; do
  echo "== $t"
  "$py" -m pytest -q -rs -s -p no:cacheprovider "$root/python/tests/$t.py" >"$out/$t.log" 2>&1
  rc=$?
  grep -E "^(FAILED|ERROR|SKIPPED)|passed|failed|Fatal" "$out/$t.log" | tail -15
  last=$(tail -1 "$out/$t.log")
  p=$(grep -oP '\b\K[0-9]+(?= passed)' <<<"$last")
  f=$(grep -oP '\b\K[0-9]+(?= (failed|errors?))' <<<"$last")
  [ "$rc" != 0 ] && [ -z "$f" ] && f=1  # a crash: no summary line
  passed=$((passed + ${p:-0}))
  failed=$((failed + ${f:-0}))
done
[ -f "$out/torch_ops.json" ] && cat "$out/torch_ops.json"
echo "$passed passed, $failed failed"
