#!/usr/bin/env bash
# scripts/update-ptx-manifest.sh — recompute the PTX manifest of every sm_90a kernel variant
# (test/Conversion/AttnToNVVM/Inputs/ptx-manifest.txt: sha256 of each variant's PTX and launch
# metadata) after a deliberate change to the generated kernels. The lit test
# test/Conversion/AttnToNVVM/ptx-manifest.test fails while the manifest and the kernels differ.
#   ATTN_OPT   attn-opt to compile with (default: build/bin/attn-opt)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
attn_opt=${ATTN_OPT:-$root/build/bin/attn-opt}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 "$root/test/Conversion/AttnToNVVM/Inputs/ptx_manifest.py" --update "$attn_opt" "$work" \
  "$root/test/Conversion/AttnToNVVM/Inputs/ptx-manifest.txt"
