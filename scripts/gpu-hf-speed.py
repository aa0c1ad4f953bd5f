"""scripts/gpu-hf-speed.py — decode and prefill speed of a random-weight Llama in Hugging Face
transformers, on attn-opt's kernels (qattn.hf, bf16 / int8 / fp8 caches) against transformers'
SDPA path with its bf16 DynamicCache, on one GPU. Writes one JSON file (a row per measurement).

usage: python scripts/gpu-hf-speed.py OUT.json [--config 8b] [--batches 1,8,32]
           [--contexts 2048,8192] [--prefill 8192] [--steps 16]

--config 8b: 32 layers, hidden 4096, MLP 14336, 32 query / 8 KV heads, head_dim 128, vocabulary
128256 (Llama-3-8B's shapes); --config small: 4 layers, hidden 1024 (a dry run). One model (bf16,
random weights) switches between attention implementations.

Decode: each layer's cache is filled with `context` random K/V rows through the cache's own update
(our caches quantize them with the append kernel), then 3 warm-up steps and `steps` timed steps of
the whole model (embedding, layers, lm_head, argmax) with a synchronization at both ends. --graphs
captures the step in a CUDA graph (our caches, and SDPA with transformers' StaticCache) and checks
the replays against eager steps. Prefill: one prompt of `--prefill` tokens at batch 1, the last
position's logits only. A configuration that does not fit is recorded with its error; memory a
previous configuration held may stay allocated in the process, so compare the largest
configurations one path per process (--paths).

Kernels: $QATTN_HF_KERNELS (python -m qattn.hf prebuild DIR --q-heads 32 --kv-heads 8
--head-dim 128), else the package's ahead-of-time set or attn-opt.
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
from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM, StaticCache

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
# --graphs: each step captured in a CUDA graph; SDPA through transformers' StaticCache (a
# DynamicCache grows, so it cannot be captured)
GRAPH_PATHS = ("sdpa_static_bf16", "attn_opt_bf16", "attn_opt_int8", "attn_opt_fp8")


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
    if path == "sdpa_static_bf16":
        model.set_attn_implementation("sdpa")
        return lambda cfg, capacity: StaticCache(config=cfg, max_cache_len=capacity)
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
    kwargs = {"cache_position": torch.arange(context, device="cuda")}
    for layer in range(cfg.num_hidden_layers):
        k = torch.randn(shape, device="cuda", dtype=torch.bfloat16, generator=g)
        v = torch.randn(shape, device="cuda", dtype=torch.bfloat16, generator=g)
        cache.layers[layer].update(k, v, kwargs)
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


def decode_graph(model, cfg, new_cache, batch, context, steps, check=4):
    """Decode steps replayed from one CUDA graph: the step's inputs (token, position) live in
    static buffers the graph advances. Checked against as many eager steps from the same cache
    state: the first step's logits (relative error; cuBLAS may pick other GEMM algorithms under
    capture) and the tokens of `check` steps (random weights leave near-ties, so a rounding
    difference may flip a token and every later one)."""
    capacity = context + check + steps + 16
    cache = new_cache(cfg, capacity)
    fill(cache, cfg, batch, context)
    static = isinstance(cache, StaticCache)
    # A StaticCache needs the 2-D mask of the slots written so far (without one, SDPA skips the
    # causal mask of a one-token query and reads every slot of the static cache).
    mask = torch.zeros(batch, capacity, dtype=torch.long, device="cuda") if static else None
    ids = torch.zeros(batch, 1, dtype=torch.long, device="cuda")
    pos = torch.full((batch, 1), context, dtype=torch.long, device="cuda")
    cpos = torch.full((1,), context, dtype=torch.long, device="cuda")
    last = torch.zeros(batch, cfg.vocab_size, dtype=torch.float32, device="cuda")

    def step():
        if static:
            mask.index_fill_(1, cpos, 1)
        out = model(ids, position_ids=pos, cache_position=cpos, past_key_values=cache,
                    attention_mask=mask)
        last.copy_(out.logits[:, -1])
        ids.copy_(last.argmax(-1, keepdim=True))
        pos.add_(1)
        cpos.add_(1)

    def restart():  # the cache back to `context` tokens, the inputs to the first step's
        if static:  # a StaticCache rewrites the same slots
            mask.zero_()
            mask[:, :context] = 1
        else:
            cache.crop(-(cache.get_seq_length() - context))
        ids.zero_()
        pos.fill_(context)
        cpos.fill_(context)

    restart()
    eager, first = [], None
    for _ in range(check):  # also the warm-up before capture
        step()
        eager.append(ids.clone())
        first = last.clone() if first is None else first
    restart()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    restart()  # capturing ran the step's Python (host lengths) but no kernel
    replayed = []
    for i in range(check):
        graph.replay()
        replayed.append(ids.clone())
        if i == 0:
            err = float((last - first).abs().max() / first.abs().max())
    agree = float(torch.cat(eager).eq(torch.cat(replayed)).float().mean())
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        graph.replay()
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    return {"step_ms": dt / steps * 1e3, "tokens_per_s": batch * steps / dt,
            "graph_first_step_logit_rel_err": err, "graph_token_agreement": agree,
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
    ap.add_argument("--paths", default=None, help="comma-separated (default: every path)")
    ap.add_argument("--graphs", action="store_true",
                    help="capture each decode step in a CUDA graph (paths: " + ",".join(GRAPH_PATHS)
                         + ")")
    a = ap.parse_args()
    import transformers
    cfg, model = make_model(a.config)
    rows = [{"command": " ".join(sys.argv), "gpu": torch.cuda.get_device_name(0),
             "torch": torch.__version__, "transformers": transformers.__version__,
             "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "config": a.config,
             "model": CONFIGS[a.config], "weights": "random bf16 (seed 0)"}]
    paths = [p for p in (a.paths or ",".join(GRAPH_PATHS if a.graphs else PATHS)).split(",") if p]
    run = decode_graph if a.graphs else decode
    for tokens in (int(t) for t in a.prefill.split(",") if t):
        for path in paths:
            new_cache = use(model, path)
            measure(rows, a.out, "prefill", lambda: prefill(model, cfg, new_cache, tokens),
                    path=path, tokens=tokens)
    for context in (int(c) for c in a.contexts.split(",")):
        for batch in (int(b) for b in a.batches.split(",")):
            for path in paths:
                new_cache = use(model, path)
                measure(rows, a.out, "decode_graph" if a.graphs else "decode",
                        lambda: run(model, cfg, new_cache, batch, context, a.steps),
                        path=path, batch=batch, context=context)


if __name__ == "__main__":
    main()
