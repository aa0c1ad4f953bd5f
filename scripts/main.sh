#!/usr/bin/env bash
# scripts/main.sh — the main job (README.md): install what is missing, build, then compile every
# spec in examples/ — verify, normalize, select a schedule, emit for its target — and run what can
# run on this machine, printing what it did.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup.sh
echo "== build"
scripts/build.sh >/dev/null
opt=build/bin/attn-opt
"$opt" --version
out=build/examples
mkdir -p "$out"
for spec in examples/*.mlir; do
  name=$(basename "$spec" .mlir)
  echo "== $spec"
  "$opt" --attn-normalize --attn-select-schedule "$spec" -o "$out/$name.scheduled.mlir"
  grep -oE 'attn\.[a-z_.]+ |schedule = #attn\.schedule<[^>]*(<[^>]*>[^>]*)*>|target = #attn\.target<[a-z0-9_]+>' \
    "$out/$name.scheduled.mlir" | sed 's/^/   /' || true
  if grep -q 'target = #attn.target<sm_90a>' "$out/$name.scheduled.mlir"; then
    kinds="ptx"
  else
    kinds="obj header"
  fi
  for kind in $kinds; do
    if "$opt" --emit="$kind" "$out/$name.scheduled.mlir" -o "$out/$name.$kind" 2>"$out/$name.$kind.err"; then
      echo "   emit=$kind: wrote $out/$name.$kind ($(wc -c <"$out/$name.$kind") bytes)"
    else
      echo "   emit=$kind: refused — $(grep -m1 -o 'error: .*' "$out/$name.$kind.err")"
    fi
  done
done
# Run what runs here: the NoMAD CPU kernels, compiled for this host's best ISA, against the C++
# reference (the full grid is in the test command).
isa=scalar
grep -qw avx2 /proc/cpuinfo && isa=avx2
grep -qw avx512bw /proc/cpuinfo && isa=avx512
echo "== running the NoMAD kernels on this CPU ($isa, head_dim 128, dsub 1)"
/usr/bin/python3 test/Conversion/AttnToCPU/Inputs/run_nomad.py --attn-opt "$opt" --src . --isa "$isa" \
  --configs 128:1 | sed 's/^/   /'
# The decode example's PTX came with its launch metadata (decode_int8_mqa.ptx.launch.json).
bench=(build/bin/attn-bench "$out/decode_int8_mqa.ptx")
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  echo "== GPU present: running the int8 MQA decode kernel against the fp64 references"
  "${bench[@]}" --iters 50 | sed 's/^/   /'
else
  echo "== no GPU on this machine: the decode kernel's launch plan (run it where a GPU is:"
  echo "   ${bench[*]}; results of the H100 runs in docs/benchmarks/gpu-decode.md)"
  "${bench[@]}" --dry-run | sed 's/^/   /'
fi
echo "== done: scheduled specs and artifacts are in $out/"
