# scripts/gpu-env.sh — sourced by the GPU-machine scripts (gpu-torch-ops.sh, gpu-hf.sh): what they
# share on a machine with torch and the CUDA toolkit but without attn-opt or a network.
#
#   gpu_env_setup OUT_DIR         installs the wheels of $WHEELS whose modules are missing
#                                 (pytest, nlohmann_json for the extension's build, gguf and
#                                 accelerate for GGUF models), records the machine in OUT_DIR/env.txt
#   gpu_install_package OUT_DIR   pip install --no-build-isolation --no-deps <checkout>/python
#                                 (libattn_rt.so and the attn_opt torch extension against the
#                                 machine's torch); log in OUT_DIR/install.log; non-zero on failure
#   gpu_count_pytest LOG RC       adds the "N passed / N failed" of a pytest log to $passed, $failed
#
# Expects $root (the checkout) and $py (the interpreter); $WHEELS defaults to <checkout>/whl.

gpu_env_setup() {
  local out=$1 wheels=${WHEELS:-$root/whl} whl mod
  for whl in "$wheels"/*.whl; do
    [ -e "$whl" ] || continue
    mod=$(basename "$whl" | cut -d- -f1)
    "$py" -c "import $mod" 2>/dev/null || "$py" -m pip install -q --no-index --no-deps "$whl"
  done
  { nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    "$py" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'gpus', torch.cuda.device_count())"
    "$py" -c "import transformers; print('transformers', transformers.__version__)" 2>/dev/null
    date -u; } >"$out/env.txt" 2>&1
  cat "$out/env.txt"
}

gpu_install_package() {
  local out=$1
  echo "== pip install --no-build-isolation --no-deps $root/python"
  rm -rf "$root/python/build"
  if ! "$py" -m pip install --no-build-isolation --no-deps --no-index -v "$root/python" \
      >"$out/install.log" 2>&1; then
    tail -40 "$out/install.log"
    return 1
  fi
  grep -E "attn-opt setup|Successfully" "$out/install.log"
}

gpu_count_pytest() {
  local log=$1 rc=$2 last p f
  last=$(tail -1 "$log")
  p=$(grep -oP '\b\K[0-9]+(?= passed)' <<<"$last")
  f=$(grep -oP '\b\K[0-9]+(?= (failed|errors?))' <<<"$last")
  [ "$rc" != 0 ] && [ -z "$f" ] && f=1  # a crash: no summary line
  passed=$((passed + ${p:-0}))
  failed=$((failed + ${f:-0}))
}
