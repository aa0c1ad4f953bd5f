"""scripts/gpu-hf-tp.py — qattn.hf under tensor parallelism: a random-weight Llama loaded by
transformers with its own tensor-parallel plan (`DistributedConfig(tp_plan="auto")`, one process
per GPU, launched by torchrun), attention and cache appends on attn-opt's kernels on each rank's
own `cuda:N`. Compared with the same model on one GPU; writes one JSON file (rank 0).

usage: NCCL_NVLS_ENABLE=0 torchrun --nproc-per-node 2 scripts/gpu-hf-tp.py OUT.json
           [--config 8b] [--layers 8] [--cache int8] [--attn attn_opt,sdpa] [--batch 8]
           [--prompt 512] [--new 16] [--context 8192] [--steps 16] [--model-dir DIR]

1. Rank 0 writes the random model (seed 0, `--config` widths, `--layers` layers) with
   `save_pretrained` into --model-dir, unless it is there.
2. Rank 0 alone runs it on cuda:0 (TP = 1), once per attention of --attn (attn_opt: a
   `QattnCache(cache=--cache)`; sdpa: transformers' own attention and bf16 DynamicCache, the
   control): a fixed random prompt of `--prompt` tokens at batch `--batch`, prefill then `--new`
   greedy steps, keeping every step's logits; then `--steps` timed eager decode steps over a cache
   of `--context` random rows.
3. Every rank loads the model with the tensor-parallel plan (query/key/value projections split by
   heads, so each rank's attention sees Hq/N query and Hkv/N KV heads) and repeats 2, fed TP = 1's
   tokens (teacher forcing, so both runs see the same inputs), and the timing. Reported: each
   rank's device and its cache's device and heads; per step, max|Δ| / max|ref| of the logits
   against TP = 1; argmax agreement and the reference's top-2 margin where they differ. A
   row-parallel all-reduce sums in another order than one GPU, so near-ties of random weights may
   flip: the sdpa control shows how much of that TP itself causes.

Kernels: $QATTN_HF_KERNELS must hold the shapes of both runs and the paged decode kernels of both
cache sizes (prompt + new + 8 and context + steps + 11 tokens; `--page-size`, default 64), e.g.
`python -m qattn.hf prebuild DIR --q-heads 32 --kv-heads 8 --head-dim 128 --page-size 64
--capacities 1024 --contexts 2048 --extra-tokens 64` and again with `--q-heads 16 --kv-heads 4`
for two GPUs.
`--device cpu` runs the same flow on the CPU (gloo, the cache's torch reference backend): a check
of the script, not a measurement.
"""

import argparse
import datetime
import json
import os
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
from transformers import AutoModelForCausalLM, DynamicCache, LlamaConfig, LlamaForCausalLM

import qattn.hf as qh

CONFIGS = {
    "8b": dict(hidden_size=4096, intermediate_size=14336, num_attention_heads=32,
               num_key_value_heads=8, head_dim=128, vocab_size=128256),
    "tiny": dict(hidden_size=256, intermediate_size=512, num_attention_heads=8,
                 num_key_value_heads=4, head_dim=32, vocab_size=512),
}


def write_model(a, device):
    d = Path(a.model_dir)
    if (d / "config.json").is_file():
        return
    cfg = LlamaConfig(num_hidden_layers=a.layers, max_position_embeddings=65536,
                      initializer_range=0.02, **CONFIGS[a.config])
    torch.manual_seed(0)
    torch.set_default_dtype(torch.bfloat16)
    with device:
        model = LlamaForCausalLM(cfg)
    torch.set_default_dtype(torch.float32)
    model.save_pretrained(d)
    del model


def load(a, device, tp):
    kw = dict(dtype=torch.bfloat16)
    if tp:
        try:
            from transformers.distributed import DistributedConfig
            kw["distributed_config"] = DistributedConfig(tp_plan="auto")
        except ImportError:  # transformers before DistributedConfig
            kw["tp_plan"] = "auto"
    model = AutoModelForCausalLM.from_pretrained(a.model_dir, **kw).eval()
    return model if tp else model.to(device)


def use(model, a, attn):
    """Switches the model to `attn` (attn_opt or sdpa); returns a cache factory (capacity)."""
    if attn == "sdpa":
        model.set_attn_implementation("sdpa")
        return lambda capacity: DynamicCache(config=model.config)
    qh.enable(model)
    return lambda capacity: qh.QattnCache(model.config, max_cache_len=capacity, cache=a.cache,
                                          backend=a.backend, page_size=a.page_size)


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def greedy(model, a, device, new_cache, forced=None):
    """Prefill of the fixed prompt and `new` steps: (logits per step [float, CPU], argmax tokens).
    Each step's input is the previous argmax, or `forced`'s token (teacher forcing: both runs then
    see the same inputs at every step)."""
    g = torch.Generator().manual_seed(3)
    prompt = torch.randint(0, model.config.vocab_size, (a.batch, a.prompt), generator=g).to(device)
    cache = new_cache(a.prompt + a.new + 8)
    logits, tokens, ids = [], [], prompt
    for i in range(a.new):
        last = model(ids, past_key_values=cache).logits[:, -1].float()
        ids = last.argmax(-1, keepdim=True)
        logits.append(last.cpu())
        tokens.append(ids.cpu())
        if forced is not None:
            ids = forced[:, i:i + 1].to(device)
    keys = cache.layers[0].keys  # ours a pool [num_pages, P, H, D], transformers' [B, H, S, D]
    where = {"cache_device": str(keys.device),
             "cache_kv_heads": int(keys.shape[2] if isinstance(cache, qh.QattnCache)
                                   else keys.shape[1])}
    return torch.stack(logits, 1), torch.cat(tokens, 1), where


def timed_decode(model, a, device, new_cache, kv_heads):
    """Eager decode steps over `context` random rows per layer (appended through the cache)."""
    cache = new_cache(a.context + 3 + a.steps + 8)
    g = torch.Generator(device=device).manual_seed(1)
    shape = (a.batch, kv_heads, a.context, model.config.head_dim)
    kwargs = {"cache_position": torch.arange(a.context, device=device)}
    for layer in range(model.config.num_hidden_layers):
        k = torch.randn(shape, device=device, dtype=torch.bfloat16, generator=g)
        cache.layers[layer].update(k, torch.randn_like(k), kwargs)
    tok = torch.zeros(a.batch, 1, dtype=torch.long, device=device)
    for i in range(3 + a.steps):
        if i == 3:
            if dist.is_initialized():
                dist.barrier()
            sync(device)
            t0 = time.perf_counter()
        tok = model(tok, past_key_values=cache).logits[:, -1].argmax(-1, keepdim=True)
    sync(device)
    dt = time.perf_counter() - t0
    return {"step_ms": dt / a.steps * 1e3, "tokens_per_s": a.batch * a.steps / dt}


def run(a, device, world, forced=None):
    """Every attention of --attn on one rank (tensor-parallel over `world` ranks if > 1):
    {attn: (logits, tokens, facts)}; `forced` {attn: tokens} teacher-forces the steps."""
    model = load(a, device, tp=world > 1)
    out = {}
    with torch.inference_mode():
        for attn in a.attn.split(","):
            new_cache = use(model, a, attn)
            logits, tokens, where = greedy(model, a, device, new_cache,
                                           forced[attn] if forced else None)
            if a.steps:  # each rank holds its share of the KV heads
                where.update(timed_decode(model, a, device, new_cache,
                                          model.config.num_key_value_heads // world))
            where["device"] = str(device)
            out[attn] = (logits, tokens, where)
    del model
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return out


def compare(ref, got):
    """Teacher-forced: both runs saw the same inputs; per step, max|Δ| / max|ref| of the logits,
    argmax agreement, and the reference's top-2 margin where the argmaxes differ."""
    (rl, rt), (gl, gt) = ref, got
    err = (gl - rl).abs().amax(dim=-1) / rl.abs().amax(dim=-1)  # [batch, step]
    top2 = rl.topk(2, dim=-1).values
    differ = gt.ne(rt)
    return {"logit_rel_err_per_step": [round(float(x), 5) for x in err.amax(0)],
            "token_agreement": float((~differ).float().mean()),
            "margins_where_different": [round(float(x), 4)
                                        for x in (top2[..., 0] - top2[..., 1])[differ]]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--config", choices=sorted(CONFIGS), default="8b")
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--cache", default="int8", choices=["int8", "fp8", "bf16"])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--prompt", type=int, default=512)
    ap.add_argument("--new", type=int, default=16)
    ap.add_argument("--context", type=int, default=8192)
    ap.add_argument("--steps", type=int, default=16, help="timed decode steps (0: no timing)")
    ap.add_argument("--model-dir", default="/tmp/qattn-tp-model")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--page-size", type=int, default=64, help="tokens per page of our cache")
    ap.add_argument("--attn", default="attn_opt,sdpa",
                    help="attention implementations, comma-separated: attn_opt (a QattnCache of "
                         "--cache) and sdpa (transformers' with its bf16 DynamicCache)")
    a = ap.parse_args()
    a.backend = "kernels" if a.device == "cuda" else "torch"
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    local = int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device(a.device, local) if a.device == "cuda" else torch.device("cpu")
    rows = {"command": " ".join(sys.argv), "world_size": world, "config": a.config,
            "layers": a.layers, "cache": a.cache, "batch": a.batch, "prompt": a.prompt,
            "new_tokens": a.new, "context": a.context,
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "gpus": ([torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
                     if device.type == "cuda" else [])}
    ref = None
    if rank == 0:  # before the process group: transformers' loading synchronizes ranks once there
        write_model(a, device)
        ref = run(a, device, 1)
        rows["tp1"] = {attn: r[2] for attn, r in ref.items()}
        print(json.dumps(rows["tp1"]), flush=True)
    if world > 1:  # the other ranks wait here for rank 0's single-GPU run
        if device.type == "cuda":
            torch.cuda.set_device(device)
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo",
                                device_id=device if device.type == "cuda" else None,
                                timeout=datetime.timedelta(minutes=30))
        forced = [{attn: r[1] for attn, r in ref.items()} if rank == 0 else None]
        dist.broadcast_object_list(forced, src=0)
        got = run(a, device, world, forced[0])
        ranks = [None] * world
        dist.all_gather_object(ranks, {attn: r[2] for attn, r in got.items()})
        if rank == 0:
            rows["tp"] = ranks
            rows["tp_vs_tp1"] = {attn: compare(ref[attn][:2], got[attn][:2]) for attn in got}
        dist.destroy_process_group()
    if rank == 0:
        print(json.dumps(rows), flush=True)
        Path(a.out).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
