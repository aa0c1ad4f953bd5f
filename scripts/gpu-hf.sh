#!/usr/bin/env bash
# scripts/gpu-hf.sh — on a GPU machine with torch, transformers and the CUDA toolkit but without
# attn-opt: installs the package from this checkout (`pip install --no-build-isolation --no-deps`:
# libattn_rt.so and the attn_opt torch extension against the machine's torch), runs
# scripts/gpu-hf.py (a random-weight Llama through qattn.hf against transformers' SDPA: token
# agreement, logit error, decode tokens/s), then tests/test_hf.py (the GPU cases included).
# Extra arguments after OUT_DIR go to gpu-hf.py; TEST_TIMEOUT / BENCH_TIMEOUT bound each part (s).
#
# usage: scripts/gpu-hf.sh KERNEL_DIR [OUT_DIR]
#   KERNEL_DIR  the model shape's kernels, prebuilt where attn-opt is by
#               `python -m qattn.hf prebuild DIR --q-heads 8 --kv-heads 2 --head-dim 128
#               --capacities 1024 --contexts 2048 --extra-tokens 64` (gpu-hf.py's caches) and
#               `python python/tests/test_hf.py --prebuild DIR` (the tests' page sizes and caches)
#   OUT_DIR     logs and hf.json; default $OUT, else /tmp/gpu-hf
# PYTHON selects the interpreter (default python3); wheels in $WHEELS (default <checkout>/whl)
# provide what is missing (scripts/gpu-env.sh). Ends with one "N passed, N failed" line.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 1 ] && [ -d "$1" ] || { echo "usage: $0 KERNEL_DIR [OUT_DIR]" >&2; exit 2; }
kernels=$(cd "$1" && pwd)
out=${2:-${OUT:-/tmp/gpu-hf}}
mkdir -p "$out"
out=$(cd "$out" && pwd)
py=${PYTHON:-python3}

. "$root/scripts/gpu-env.sh"
gpu_env_setup "$out"
QATTN_AOT=none
export QATTN_AOT
gpu_install_package "$out" || { echo "0 passed, 1 failed"; exit 1; }

cd /tmp  # import the installed package, not the checkout's
export QATTN_HF_KERNELS="$kernels"
failed=0
echo "== gpu-hf.py"
if timeout "${BENCH_TIMEOUT:-200}" "$py" "$root/scripts/gpu-hf.py" "$out/hf.json" "${@:3}" >"$out/gpu-hf.log" 2>&1; then
  grep -E "^\{|^(bf16|int8|fp8) " "$out/gpu-hf.log" | cut -c1-300
else
  tail -30 "$out/gpu-hf.log"
  failed=$((failed + 1))
fi
echo "== test_hf"
timeout "${TEST_TIMEOUT:-170}" "$py" -m pytest -q -rs -p no:cacheprovider "$root/python/tests/test_hf.py" >"$out/test_hf.log" 2>&1
rc=$?
grep -E "^(FAILED|ERROR)|passed|failed" "$out/test_hf.log" | tail -15
passed=0
gpu_count_pytest "$out/test_hf.log" "$rc"
echo "$passed passed, $failed failed"
