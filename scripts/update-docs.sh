#!/usr/bin/env bash
# scripts/update-docs.sh — regenerate docs/generated/ from the ODS files (the attn and attnk
# dialects: attributes, types, ops; passes). The lit test test/Docs/generated-up-to-date.test
# fails when they drift.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
ninja -C "$build" attn-doc >/dev/null
mkdir -p "$root/docs/generated"
cp "$build/docs/Dialects/AttnDialect.md" "$root/docs/generated/AttnDialect.md"
cp "$build/docs/Dialects/AttnKernelDialect.md" "$root/docs/generated/AttnKernelDialect.md"
cp "$build/docs/Passes/AttnPasses.md" "$root/docs/generated/AttnPasses.md"
cp "$build/docs/Passes/AttnConversionPasses.md" "$root/docs/generated/AttnConversionPasses.md"
echo "docs/generated/ updated"
