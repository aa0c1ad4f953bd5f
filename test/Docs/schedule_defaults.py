"""Checks the defaults that docs/generated/AttnPasses.md states for `attn-select-schedule` against
what the pass does: every number in the prefill and decode items is read from the generated text
and compared with the schedule attn-opt writes for a spec of that kind.

Run by test/Docs/schedule-defaults.test: schedule_defaults.py ATTN_OPT ATTN_PASSES_MD
"""
import re
import subprocess
import sys

WORDS = {"one": 1, "two": 2, "three": 3, "four": 4}
FAILURES = []


def number(text):
    return WORDS[text] if text in WORDS else int(text)


def claim(doc, pattern):
    m = re.search(pattern, doc)
    if not m:
        sys.exit(f"schedule_defaults.py: the generated pass reference no longer says /{pattern}/; "
                 "update this check together with include/attn/Dialect/Attn/Transforms/Passes.td")
    return [number(g) for g in m.groups()]


def prefill(kind, seq=1024, d=128, causal=False, schedule=""):
    """One prefill op: batch 2, 16 query heads on one KV head, `seq` query and key tokens."""
    q, kv = f"2x{seq}x16x{d}", f"2x{seq}x1x{d}"
    attrs = ["causal"] if causal else []
    if kind == "bf16":
        ty, scales, args = "bf16", "", ""
    elif kind == "fp8":  # one scale per 64 query rows and per 128-key tile
        ty = "f8E4M3FN"
        args = f", %qs: memref<2x{seq // 64}x16x1xf32>, %ks: memref<2x{seq // 128}x1x1xf32>"
        scales = (f" q_scale(%qs : memref<2x{seq // 64}x16x1xf32>) k_scale(%ks : memref<2x{seq // 128}x1x1xf32>)"
                  f" v_scale(%ks : memref<2x{seq // 128}x1x1xf32>)")
        attrs += ["q_quant = #attn.quant<f8E4M3FN, per_block<64x128>>",
                  "k_quant = #attn.quant<f8E4M3FN, per_block<128x128>>",
                  "v_quant = #attn.quant<f8E4M3FN, per_block<128x128>>", "mode = #attn.mode<fp8>"]
    else:  # half_int8 / full_int8 with a scale per token and head
        ty = "i8"
        args = f", %qs: memref<2x{seq}x16xf32>, %ks: memref<2x{seq}x1xf32>"
        scales = (f" q_scale(%qs : memref<2x{seq}x16xf32>) k_scale(%ks : memref<2x{seq}x1xf32>)"
                  f" v_scale(%ks : memref<2x{seq}x1xf32>)")
        attrs += [f"{p}_quant = #attn.quant<i8, per_token_head>" for p in "qkv"]
        attrs.append(f"mode = #attn.mode<{kind}>")
    attrs.append("target = #attn.target<sm_90a>")
    if schedule:
        attrs.append(f"schedule = #attn.schedule<{schedule}>")
    return (f"func.func @f(%q: memref<{q}x{ty}>, %k: memref<{kv}x{ty}>, %v: memref<{kv}x{ty}>, "
            f"%o: memref<{q}xbf16>{args}) {{\n"
            f"  attn.attention prefill ins(%q, %k, %v : memref<{q}x{ty}>, memref<{kv}x{ty}>, "
            f"memref<{kv}x{ty}>){scales} outs(%o : memref<{q}xbf16>) {{{', '.join(attrs)}}}\n"
            "  return\n}\n")


def decode():
    return ("func.func @f(%q: memref<4x1x8x128xbf16>, %k: memref<4x4096x1x128xbf16>, "
            "%v: memref<4x4096x1x128xbf16>, %o: memref<4x1x8x128xbf16>) {\n"
            "  attn.attention decode ins(%q, %k, %v : memref<4x1x8x128xbf16>, "
            "memref<4x4096x1x128xbf16>, memref<4x4096x1x128xbf16>) outs(%o : memref<4x1x8x128xbf16>)"
            " {target = #attn.target<sm_90a>}\n  return\n}\n")


def schedule(attn_opt, spec):
    out = subprocess.run([attn_opt, "--attn-select-schedule", "-"], input=spec, text=True,
                         capture_output=True)
    if out.returncode != 0:
        sys.exit(f"schedule_defaults.py: attn-opt failed on\n{spec}\n{out.stderr}")
    text = re.search(r"schedule = #attn.schedule<(.*?)>\}", out.stdout).group(1)
    fields = {k: v for k, v in re.findall(r"(\w+) = (true|false|\d+|auto)", text)}
    fields["consumers"] = int(re.search(r"consumer<warpgroups = (\d+)", text).group(1))
    fields["producers"] = int(re.search(r"producer<warpgroups = (\d+)", text).group(1))
    return fields


def expect(what, fields, **want):
    for key, value in want.items():
        got = fields.get(key)
        if str(got) != str(value).lower():
            FAILURES.append(f"{what}: the reference says {key} = {value}, the pass gives {got}")


def main():
    attn_opt, doc_path = sys.argv[1], sys.argv[2]
    doc = " ".join(open(doc_path).read().split())
    run = lambda spec: schedule(attn_opt, spec)

    (tile_m,) = claim(doc, r"one (\d+)-row query tile per consumer warpgroup")
    consumers, rows, producers, stages, limit = claim(
        doc, r"bf16, fp8 and half-int8 up to head_dim 128 run (\w+) consumer warpgroups \((\d+) "
             r"query rows per CTA\) beside (\w+) producer warpgroup on (\w+) stages, on FA3's "
             r"persistent grid up to (\d+) keys")
    if rows != consumers * tile_m:
        FAILURES.append(f"the reference says {rows} query rows for {consumers} × {tile_m}")
    for kind in ("bf16", "half_int8"):
        expect(f"{kind} prefill at {limit} keys", run(prefill(kind, limit)), tile_m=tile_m,
               consumers=consumers, producers=producers, stages=stages, split_kv=1,
               persistent=True)
        expect(f"{kind} prefill at {2 * limit} keys", run(prefill(kind, 2 * limit)),
               consumers=consumers, persistent=False)
    (causal_limit, fp8_stages) = claim(
        doc, r"up to (\d+) keys with it; fp8 at head_dim 128 then on (\w+) stages")
    expect("fp8 prefill, non-causal, 4 × the limit", run(prefill("fp8", 4 * causal_limit)),
           consumers=consumers, persistent=True, stages=fp8_stages)
    expect(f"fp8 prefill, causal, {causal_limit} keys",
           run(prefill("fp8", causal_limit, causal=True)), persistent=True, stages=fp8_stages)
    expect(f"fp8 prefill, causal, {2 * causal_limit} keys",
           run(prefill("fp8", 2 * causal_limit, causal=True)), persistent=False)
    full, wide = claim(doc, r"full_int8 runs (\w+) consumer warpgroups, head_dim 256 (\w+)")
    expect("full_int8 prefill", run(prefill("full_int8")), consumers=full)
    expect("bf16 prefill at head_dim 256", run(prefill("bf16", d=256)), consumers=wide)
    fixed, fa3_stages = claim(doc, r"gets (\w+) consumer warpgroups instead \(bf16: with FA3's "
                                   r"intra-warpgroup overlap and pingpong on (\w+) stages\)")
    expect("bf16 prefill with persistent = true",
           run(prefill("bf16", schedule="persistent = true")), consumers=fixed,
           stages=fa3_stages, pingpong=True, intra_wg_overlap=True)
    (decode_rows,) = claim(doc, r"decode: pack the query heads of one KV head into the (\d+)-row")
    expect("decode", run(decode()), tile_m=decode_rows)

    for f in FAILURES:
        print("FAIL:", f)
    if FAILURES:
        print("Fix include/attn/Dialect/Attn/Transforms/Passes.td, then scripts/update-docs.sh.")
        return 1
    print("the generated reference states the pass's defaults")
    return 0


if __name__ == "__main__":
    sys.exit(main())
