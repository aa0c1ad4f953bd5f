#!/usr/bin/env bash
# What this file is: builds the naive ABI kernels of naive_decode.cu (nvcc -ptx, sm_90a) in a few
# configurations, each with the *.launch.json attn-opt would write, and the conversions_check
# program into OUTDIR (default build/attn-bench-selftest); run-selftest.sh then checks attn-bench
# against them on a GPU.
#   usage: tools/attn-bench/selftest/make-selftest.sh [OUTDIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../../../build/attn-bench-selftest}
mkdir -p "$out"
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}

# name kv(i8|f8E4M3FN|bf16) kq vq q_len hq hkv d tile causal alibi seq_lens batch kv_len
# [ext=ptx|cubin] [defs=extra nvcc -D flags]
variant() {
  local name=$1 kv=$2 kq=$3 vq=$4 qlen=$5 hq=$6 hkv=$7 d=$8 tile=$9 causal=${10} alibi=${11}
  local seql=${12} batch=${13} kvlen=${14} ext=${15:-ptx} defs=${16:-}
  local code kg vg e dtype
  case $kv in i8) code=0 e=1 dtype=u8 ;; f8E4M3FN) code=1 e=1 dtype=u8 ;; bf16) code=2 e=2 dtype=bf16 ;; esac
  gran() { case $1 in per_token_head) echo 0 ;; per_token) echo 1 ;; per_head) echo 2 ;; per_tensor) echo 3 ;; none) echo 4 ;; esac; }
  kg=$(gran "$kq"); vg=$(gran "$vq")
  local pack=$((hq / hkv)) rows=$((qlen * hq / hkv))
  local smem=$((2 * tile * d * e + 2 * rows * d * 4))
  local scale
  scale=$(awk -v d="$d" 'BEGIN { printf "%.17g", 1 / sqrt(d) }')
  # shellcheck disable=SC2086
  "$nvcc" -arch=sm_90a -$ext -o "$out/$name.$ext" "$here/naive_decode.cu" $defs \
    -DKV=$code -DKG=$kg -DVG=$vg -DQ_LEN=$qlen -DHQ=$hq -DHKV=$hkv -DD=$d -DTILE_N=$tile \
    -DCAUSAL=$([ "$causal" = true ] && echo 1 || echo 0) -DALIBI=$([ "$alibi" = true ] && echo 1 || echo 0) \
    -DSEQ_LENS=$([ "$seql" = true ] && echo 1 || echo 0) -DSCALE=${scale}f
  cat >"$out/$name.$ext.launch.json" <<JSON
{
  "format": "attn-launch-v1", "arch": 90,
  "problem": {"kind": "decode", "batch": $batch, "q_len": $qlen, "q_heads": $hq, "kv_heads": $hkv,
              "head_dim": $d, "kv_len": $kvlen, "kv_dtype": "$kv", "k_quant": "$kq",
              "v_quant": "$vq", "out_dtype": "bf16", "causal": $causal,
              "alibi": $alibi, "seq_lens": $seql, "softmax_scale": $scale},
  "schedule": {"pack_q_heads": $pack, "rows_per_cta": $rows, "groups": $hkv, "tile_n": $tile,
               "stages": 1, "split_kv": 0, "producer_regs": 0, "consumer_regs": 0},
  "workspace_floats_per_split": $((rows * (d + 2))),
  "tensor_maps": {"k": {"dtype": "$dtype", "box": [$d, 1, $tile, 1]},
                  "v": {"dtype": "$dtype", "box": [$d, 1, $tile, 1]}},
  "kernels": [
    {"name": "f_decode", "role": "decode", "block": [256, 1, 1], "cluster": [1, 1, 1],
     "smem_bytes": $smem, "grid": ["num_splits", "groups", "batch"],
     "params": ["k_map", "v_map", "q", "k_scale", "v_scale", "seq_lens", "alibi", "out",
                "workspace", "batch", "kv_len", "num_splits"]},
    {"name": "f_combine", "role": "combine", "block": [128, 1, 1], "cluster": [1, 1, 1],
     "smem_bytes": 0, "grid": ["row_blocks", "groups", "batch"],
     "params": ["workspace", "out", "batch", "num_splits"]}
  ]
}
JSON
}

variant mqa_i8     i8       per_token_head per_token_head 3 16 1 128 128 true  false true  -1 -1
variant gqa_f8     f8E4M3FN per_token      per_head       1  8 2 128  64 false true  false -1 -1
variant mha_bf16   bf16     none           none           2  4 4  64 128 true  true  true  -1 -1
variant static_i8  i8       per_tensor     per_token_head 1 32 8 128 128 false false false  4 1000
variant cubin_i8   i8       per_token_head per_token_head 3 16 1 128 128 true  false true  -1 -1 cubin
variant broken_i8  i8       per_token_head per_token_head 3 16 1 128 128 true  false true  -1 -1 ptx -DBROKEN=1
"$nvcc" -O2 -std=c++17 -arch=sm_90a -I "$here/../../../include" -o "$out/conversions_check" \
  "$here/conversions_check.cu" "$here/../../../lib/Reference/DecodeReference.cpp"
echo "$out"
