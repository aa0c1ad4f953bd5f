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
#               `python python/tests/test_torch_ops.py --prebuild DIR` (and, for the cache-write
#               ops, `python python/tests/test_append_op.py --prebuild DIR` and
#               `python python/tests/test_paged_append_op.py --prebuild DIR`)
#   OUT_DIR     logs and torch_ops.json (the measurements); default $OUT, else /tmp/gpu-torch-ops
# PYTHON selects the interpreter (default python3); wheels in $WHEELS (default <checkout>/whl)
# provide what is missing (scripts/gpu-env.sh). TESTS names the test files to run (default
# "test_torch_ops test_gpu"; e.g. TESTS="test_append_op test_paged_append_op"). After the tests, tests/host_time.py measures the host time per call
# of every entry point into OUT_DIR/host_time.json. Ends with one "N passed, N failed" line.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 1 ] && [ -d "$1" ] || { echo "usage: $0 KERNEL_DIR [OUT_DIR]" >&2; exit 2; }
kernels=$(cd "$1" && pwd)
out=${2:-${OUT:-/tmp/gpu-torch-ops}}
mkdir -p "$out"
out=$(cd "$out" && pwd)
py=${PYTHON:-python3}

. "$root/scripts/gpu-env.sh"
gpu_env_setup "$out"
gpu_install_package "$out" || { echo "0 passed, 1 failed"; exit 1; }

cd /tmp  # import the installed package, not the checkout's
"$py" -c "import qattn, qattn.torch_ops as t; print(qattn.__file__, 'extension:', t.extension_path())"
export QATTN_GPU_KERNELS="$kernels" QATTN_TORCH_OPS_REPORT="$out/torch_ops.json"
rm -f "$out/torch_ops.json"
passed=0
failed=0
for t in ${TESTS:-test_torch_ops test_gpu}; do
  echo "== $t"
  "$py" -m pytest -q -rs -s -p no:cacheprovider "$root/python/tests/$t.py" >"$out/$t.log" 2>&1
  rc=$?
  grep -E "^(FAILED|ERROR|SKIPPED)|passed|failed|Fatal" "$out/$t.log" | tail -15
  gpu_count_pytest "$out/$t.log" "$rc"
done
[ -f "$out/torch_ops.json" ] && cat "$out/torch_ops.json"
echo "== host time per call (tests/host_time.py)"
if "$py" "$root/python/tests/host_time.py" "$kernels" "$out/host_time.json" >"$out/host_time.log" 2>&1; then
  grep burst_ "$out/host_time.log"
else
  tail -20 "$out/host_time.log"
  failed=$((failed + 1))
fi
echo "$passed passed, $failed failed"
