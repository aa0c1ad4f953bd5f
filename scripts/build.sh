#!/usr/bin/env bash
# scripts/build.sh — configure (once) and build attn-opt, its tools, unit tests and generated docs.
#   BUILD_DIR    build folder (default: build)
#   SANITIZE=1   ASan + UBSan build (default folder: build-asan)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if [ "${SANITIZE:-0}" = 1 ]; then
  build=${BUILD_DIR:-$root/build-asan}
  extra=(-DATTN_ENABLE_SANITIZERS=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo)
else
  build=${BUILD_DIR:-$root/build}
  extra=(-DCMAKE_BUILD_TYPE=Release)
fi
if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -S "$root" -B "$build" "${extra[@]}" \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 >/dev/null
fi
ninja -C "$build" "$@"
