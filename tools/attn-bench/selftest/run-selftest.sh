#!/usr/bin/env bash
# What this file is: runs attn-bench (BENCH, default build/bin/attn-bench) on the naive kernels
# make-selftest.sh built in DIR, over shapes, seq_lens modes, split counts and data; every run
# must PASS. Needs a Hopper GPU. Ends with "N passed, N failed".
#   usage: tools/attn-bench/selftest/run-selftest.sh [DIR] [BENCH]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-$here/../../../build/attn-bench-selftest}
bench=${2:-$here/../../../build/bin/attn-bench}
passed=0 failed=0
# expect_rc RC KERNEL.ext ARGS...: attn-bench must exit with RC.
expect_rc() {
  local want=$1 kernel=$2; shift 2
  "$bench" "$dir/$kernel" --iters 5 --warmup 2 "$@"
  local rc=$?
  if [ "$rc" -eq "$want" ]; then
    passed=$((passed + 1))
  else
    echo "^^^ FAILED (exit $rc, wanted $want): $kernel $*"
    failed=$((failed + 1))
  fi
}
run() {
  local kernel=$1; shift
  expect_rc 0 "$kernel.ptx" "$@"
}
if [ -x "$dir/conversions_check" ]; then
  if "$dir/conversions_check"; then passed=$((passed + 1)); else echo "^^^ FAILED: conversions_check"; failed=$((failed + 1)); fi
fi
run mqa_i8 --batch 16 --kv-len 8192
run mqa_i8 --batch 16 --kv-len 8192 --splits 1
run mqa_i8 --batch 16 --kv-len 8192 --splits 7 --seq-lens random --seed 3
run mqa_i8 --batch 9 --kv-len 1000 --seq-lens ragged --splits 5
run mqa_i8 --batch 4 --kv-len 0 --splits 3
run mqa_i8 --batch 3 --kv-len 1 --seq-lens ragged
run mqa_i8 --batch 8 --kv-len 4096 --data outliers --tol-unquant 0.2
run mqa_i8 --batch 256 --kv-len 1024 --no-time
run mqa_i8 --batch 2 --kv-len 131072 --no-time
run gqa_f8 --batch 3 --kv-len 777
run gqa_f8 --batch 3 --kv-len 777 --splits 3 --data outliers
run gqa_f8 --batch 64 --kv-len 2048 --seq-lens random
run mha_bf16 --batch 5 --kv-len 300 --seq-lens ragged --splits 4 --tol-unquant 0.01
run mha_bf16 --batch 2 --kv-len 5000 --seq-lens random
run static_i8 --splits 2
run static_i8 --batch 4 --kv-len 1000 --check-only
expect_rc 0 cubin_i8.cubin --batch 3 --kv-len 2500 --seq-lens random
expect_rc 1 mqa_i8.ptx --batch 2 --kv-len 300 --tol-quant 1e-6 --no-time
expect_rc 1 mqa_i8.ptx --batch 2 --kv-len 300 --data outliers --tol-unquant 1e-3 --no-time
expect_rc 1 broken_i8.ptx --batch 2 --kv-len 300 --splits 1 --no-time
expect_rc 1 broken_i8.ptx --batch 2 --kv-len 3000 --splits 4 --no-time
expect_rc 2 static_i8.ptx --batch 5
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
