"""scripts/gpu-hf-speed.py — decode and prefill speed of a random-weight Llama in Hugging Face
transformers, on attn-opt's kernels (qattn.hf, bf16 / int8 / fp8 caches) against transformers'
SDPA path with its bf16 DynamicCache, on one GPU. Writes one JSON file (a row per measurement).

usage: python scripts/gpu-hf-speed.py OUT.json [--config 8b] [--batches 1,8,32]
           [--contexts 2048,8192] [--prefill 8192] [--steps 16]

--config 8b: 32 layers, hidden 4096, MLP 14336, 32 query / 8 KV heads, head_dim 128, vocabulary
128256 (Llama-3-8B's shapes); --config small: 4 layers, hidden 1024 (a dry run). One model (bf16,
random weights) switches between attention implementations. Decode: each layer's cache is filled
with `context` random K/V rows through the cache's own update (our caches quantize them with the
append kernel), then 3 warm-up steps and `steps` timed steps of the whole model (embedding, layers,
lm_head, argmax) with a synchronization at both ends; no CUDA graphs. Prefill: one prompt of
`--prefill` tokens at batch 1, the last position's logits only. A configuration whose caches do
not fit is recorded with its error. Kernels: $QATTN_HF_KERNELS (python -m qattn.hf prebuild DIR
--q-heads 32 --kv-heads 8 --head-dim 128), else the package's ahead-of-time set or attn-opt.
"""

import argparse
import contextlib
import gc
import json
import sys
import time
import traceback

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM

import qattn.hf as qh

CONFIGS = {
    "8b": dict(num_hidden_layers=32, hidden_size=4096, intermediate_size=14336,
               num_attention_heads=32, num_key_value_heads=8, head_dim=128, vocab_size=128256),
    "small": dict(num_hidden_layers=4, hidden_size=1024, intermediate_size=2816,
                  num_attention_heads=8, num_key_value_heads=2, head_dim=128, vocab_size=32000),
}
# sdpa_bf16: transformers' default; sdpa_flash_bf16: torch's flash / memory-efficient backends
# pinned (no cuDNN)
PATHS = ("sdpa_bf16", "sdpa_flash_bf16", "attn_opt_bf16", "attn_opt_int8", "attn_opt_fp8")


def make_model(name):
    cfg = LlamaConfig(max_position_embeddings=65536, initializer_range=0.02, **CONFIGS[name])
    torch.manual_seed(0)
    torch.set_default_dtype(torch.bfloat16)
    with torch.device("cuda"):
        model = LlamaForCausalLM(cfg).eval()
    torch.set_default_dtype(torch.float32)
    return cfg, model


def use(model, path):
    """Switches the model's attention; returns a fresh cache for `capacity` tokens."""
    if path.startswith("sdpa"):
        model.set_attn_implementation("sdpa")
        return lambda cfg, capacity: DynamicCache(config=cfg)
    qh.enable(model)
    fmt = path.rsplit("_", 1)[1]
    return lambda cfg, capacity: qh.QattnCache(cfg, max_cache_len=capacity, cache=fmt)


def fill(cache, cfg, batch, context):
    """Every layer's cache holds `context` random K/V rows (the step's speed does not depend on
    their values), written through each layer's own update."""
    g = torch.Generator(device="cuda").manual_seed(1)
    shape = (batch, cfg.num_key_value_heads, context, cfg.head_dim)
    for layer in range(cfg.num_hidden_layers):
        k = torch.randn(shape, device="cuda", dtype=torch.bfloat16, generator=g)
        v = torch.randn(shape, device="cuda", dtype=torch.bfloat16, generator=g)
        cache.layers[layer].update(k, v)
        del k, v


def decode(model, cfg, new_cache, batch, context, steps):
    cache = new_cache(cfg, context + steps + 8)
    fill(cache, cfg, batch, context)
    tok = torch.zeros(batch, 1, dtype=torch.long, device="cuda")
    for _ in range(3):  # warm-up (plans, tensor maps)
        tok = model(tok, past_key_values=cache).logits[:, -1].argmax(-1, keepdim=True)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        tok = model(tok, past_key_values=cache).logits[:, -1].argmax(-1, keepdim=True)
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    return {"step_ms": dt / steps * 1e3, "tokens_per_s": batch * steps / dt,
            "peak_gib": torch.cuda.max_memory_allocated() / 2**30}


def prefill(model, cfg, new_cache, tokens):
    g = torch.Generator(device="cuda").manual_seed(2)
    prompt = torch.randint(0, cfg.vocab_size, (1, tokens), device="cuda", generator=g)
    times = []
    for _ in range(2):  # the first run includes one-time setup
        cache = new_cache(cfg, tokens + 8)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        model(prompt, past_key_values=cache, logits_to_keep=1)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        del cache
    return {"prefill_ms": times[-1] * 1e3, "first_run_ms": times[0] * 1e3}


def measure(rows, out, what, fn, **key):
    r = dict(key, what=what)
    pinned = (sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION])
              if key["path"] == "sdpa_flash_bf16" else contextlib.nullcontext())
    try:
        torch.cuda.reset_peak_memory_stats()
        with torch.inference_mode(), pinned:
            r.update(fn())
    except Exception as e:  # e.g. out of memory: recorded, the grid goes on
        r["error"] = f"{type(e).__name__}: {str(e)[:300]}"
        traceback.print_exc()
    gc.collect()  # transformers' caches hold reference cycles: free the last one's memory now
    torch.cuda.empty_cache()
    rows.append(r)
    print(json.dumps(r), flush=True)
    with open(out, "w") as f:
        json.dump(rows, f, indent=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--config", choices=sorted(CONFIGS), default="8b")
    ap.add_argument("--batches", default="1,8,32")
    ap.add_argument("--contexts", default="2048,8192")
    ap.add_argument("--prefill", default="8192", help="comma-separated prompt lengths")
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--paths", default=",".join(PATHS))
    a = ap.parse_args()
    import transformers
    cfg, model = make_model(a.config)
    rows = [{"command": " ".join(sys.argv), "gpu": torch.cuda.get_device_name(0),
             "torch": torch.__version__, "transformers": transformers.__version__,
             "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "config": a.config,
             "model": CONFIGS[a.config], "weights": "random bf16 (seed 0)"}]
    paths = [p for p in a.paths.split(",") if p]
    for tokens in (int(t) for t in a.prefill.split(",") if t):
        for path in paths:
            new_cache = use(model, path)
            measure(rows, a.out, "prefill", lambda: prefill(model, cfg, new_cache, tokens),
                    path=path, tokens=tokens)
    for context in (int(c) for c in a.contexts.split(",")):
        for batch in (int(b) for b in a.batches.split(",")):
            for path in paths:
                new_cache = use(model, path)
                measure(rows, a.out, "decode",
                        lambda: decode(model, cfg, new_cache, batch, context, a.steps),
                        path=path, batch=batch, context=context)


if __name__ == "__main__":
    main()
