#!/usr/bin/env bash
# What this file is: builds, on the development machine, everything the GPU machine runs for the
# decode kernels: PTX + launch metadata of every variant of the grid
# (test/Conversion/AttnToNVVM/Inputs/decode_variants.py) and of the Table-3 benchmark specs
# (examples/bench/), and the headers attn-bench builds with there, into DIR (default
# build/gpu-decode, git-ignored; carry it with the run).
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-build/gpu-decode}
ATTN_OPT=${ATTN_OPT:-build/bin/attn-opt}
rm -rf "$DIR" && mkdir -p "$DIR/variants" "$DIR/bench"
python3 test/Conversion/AttnToNVVM/Inputs/decode_variants.py "$DIR/variants" >/dev/null
for f in "$DIR"/variants/*.mlir examples/bench/*.mlir; do
  out="$DIR/$(basename "$(dirname "$f")")/$(basename "${f%.mlir}").ptx"
  [[ "$f" == examples/* ]] && out="$DIR/bench/$(basename "${f%.mlir}").ptx"
  "$ATTN_OPT" "$f" --emit=ptx -o "$out"
done
# table3_i8q.mlir with the batch written into the spec, one per Table-3 row (i8qs_bB): a static
# batch lets attn-select-schedule pick two CTAs per SM where 256 CTAs would take two waves.
for B in 256 128 64 32 16 8 4 2 ${STATIC_BATCHES:-}; do
  sed -E "s/memref<\?x/memref<${B}x/g; s/@table3_i8q/@table3_i8qs_b${B}/" examples/bench/table3_i8q.mlir \
    > "$DIR/bench/table3_i8qs_b$B.mlir"
  "$ATTN_OPT" "$DIR/bench/table3_i8qs_b$B.mlir" --emit=ptx -o "$DIR/bench/table3_i8qs_b$B.ptx"
done
# attn-bench's header-only dependencies (libcli11-dev, nlohmann-json3-dev), for its g++ build there.
mkdir -p "$DIR/include" && cp -r /usr/include/CLI /usr/include/nlohmann "$DIR/include/"
cp ../shared/bench/gpu_decode_anchor.py "$DIR/" 2>/dev/null || true
echo "built $(ls "$DIR"/*/*.ptx | wc -l) kernels into $DIR"
