"""scripts/gpu-hf-speed.py — decode and prefill speed of a random-weight Llama in Hugging Face
transformers, on attn-opt's kernels (qattn.hf, bf16 / int8 / fp8 caches) against transformers'
SDPA path (bf16 caches) and a Triton int8 decode kernel dropped into transformers, on one GPU.
Writes one JSON file (a row per measurement).

usage: python scripts/gpu-hf-speed.py OUT.json [--config 8b] [--batches 1,8,32]
           [--contexts 2048,8192] [--prefill 8192] [--steps 16] [--paths P,...] [--graphs]
           [--repeat N] [--isolate] [--triton-peer FILE] [--triton-nsplit N]
           [--max-batch CONTEXT] [--mem-gib G] [--budget-s S] [--child-timeout-s S]
           [--page-size P] [--prebuild-command]

--config 8b: 32 layers, hidden 4096, MLP 14336, 32 query / 8 KV heads, head_dim 128, vocabulary
128256 (Llama-3-8B's shapes); --config small: 4 layers, hidden 1024 (a dry run; without CUDA the
paths that need it are recorded as skipped, attn_opt runs qattn.hf's torch reference);
--config tiny: 2 layers, hidden 256 (the CPU tests). One model (bf16, random weights) switches
between attention implementations.

Paths: sdpa_bf16 (transformers' default SDPA, DynamicCache, always eager: a growing cache cannot be
captured), sdpa_flash_bf16 (the same, torch's flash / memory-efficient backends pinned),
sdpa_static_bf16 (SDPA with transformers' StaticCache), attn_opt_{bf16,int8,fp8} (qattn.hf), and
triton_int8 (gpu_hf_triton.py: the split-KV head-packed Triton int8 kernel of the file given by
--triton-peer, registered through transformers' AttentionInterface, over an int8 cache with
per-token, per-head scales; prompts through SDPA; skipped with a message when the file is absent).
Its decode rows also give the first step's logits against attn_opt_int8's on the same cache
contents (relative error of the largest logit difference, argmax agreement).

Decode: each layer's cache is filled with `context` random K/V rows through the cache's own update
(quantized by the cache), then steps of the whole model (embedding, layers, lm_head, argmax),
timed with a synchronization at both ends. Eager: 3 warm-up and `steps` timed steps. --graphs:
every path but sdpa_bf16 / sdpa_flash_bf16 is captured in CUDA graphs; 4 eager steps, then the
replays of the same 4 steps are checked against them (first step's logits, tokens), then `steps`
timed replays. The StaticCache holds context + max(4, steps) slots, every slot a replay writes.
triton_int8 takes the length from the host, so it captures one graph per step (a shared pool).
Default paths: sdpa_bf16, sdpa_flash_bf16, attn_opt_* and triton_int8; with --graphs
sdpa_static_bf16 in place of sdpa_flash_bf16. Rows "sdpa_best" name the fastest SDPA path per
configuration and repetition (of those measured), with attn_opt_int8's speed-up over it and
over triton_int8.
Prefill: one prompt of `--prefill` tokens at batch 1, the last position's logits (not for
sdpa_static_bf16).

--repeat N: the whole grid N times, paths interleaved within a repetition; rows carry "rep".
--isolate: one process per (path, batch, context) and per (path, prefill length); the rows are
merged here (a process holds no memory of a previous configuration). --budget-s: start no process
after that many seconds (the rest is recorded as skipped); --child-timeout-s bounds each.
--max-batch CONTEXT: for each path (default attn_opt_bf16, attn_opt_int8) the largest batch whose
graphed decode fits at that context: doubling from 1, then bisection, one process per probe; the
largest batch's throughput (every repetition) and the int8 / bf16 ratios. --mem-gib caps the
memory of every process (the same budget for every path); default: the whole GPU.

Caches: attn_opt paths hold a paged QattnCache (--page-size, default 64) of context + steps + 8
tokens (eager decode), context + max(4, steps) (graphs), context + 1 (the Triton check) or
prompt + 8 (prefill); its paged decode kernel is compiled per block-table width
(qattn.hf.kernels.table_tokens: the capacity rounded up to a coarse grid).
Kernels: $QATTN_HF_KERNELS, else the package's ahead-of-time set or attn-opt. --prebuild-command
prints the `python -m qattn.hf prebuild` command whose kernels cover this run's caches (contexts,
prefill lengths or the --max-batch context, extra tokens steps + 8, the page size); with
$QATTN_HF_KERNELS set, kernels of the run missing there are named on stderr at the start.
"""

import argparse
import contextlib
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM, StaticCache

import qattn.hf as qh
from qattn.hf import kernels as hk

CONFIGS = {
    "8b": dict(num_hidden_layers=32, hidden_size=4096, intermediate_size=14336,
               num_attention_heads=32, num_key_value_heads=8, head_dim=128, vocab_size=128256),
    "small": dict(num_hidden_layers=4, hidden_size=1024, intermediate_size=2816,
                  num_attention_heads=8, num_key_value_heads=2, head_dim=128, vocab_size=32000),
    "tiny": dict(num_hidden_layers=2, hidden_size=256, intermediate_size=512,
                 num_attention_heads=4, num_key_value_heads=2, head_dim=64, vocab_size=512),
}
ALL_PATHS = ("sdpa_bf16", "sdpa_flash_bf16", "sdpa_static_bf16", "attn_opt_bf16",
             "attn_opt_int8", "attn_opt_fp8", "triton_int8")
PATHS = ("sdpa_bf16", "sdpa_flash_bf16", "attn_opt_bf16", "attn_opt_int8", "attn_opt_fp8",
         "triton_int8")
GRAPH_DEFAULT = ("sdpa_bf16", "sdpa_static_bf16", "attn_opt_bf16", "attn_opt_int8",
                 "attn_opt_fp8", "triton_int8")
EAGER_ONLY = ("sdpa_bf16", "sdpa_flash_bf16")  # DynamicCache grows: no capture
MAX_BATCH_PATHS = ("attn_opt_bf16", "attn_opt_int8")
CHECK = 4  # eager steps the graph replays are checked against
FILL_CHUNK = 4096
CUDA = torch.cuda.is_available()
DEV = "cuda" if CUDA else "cpu"


def sync():
    if CUDA:
        torch.cuda.synchronize()


def make_model(name):
    cfg = LlamaConfig(max_position_embeddings=65536, initializer_range=0.02, **CONFIGS[name])
    torch.manual_seed(0)
    torch.set_default_dtype(torch.bfloat16)
    with torch.device(DEV):
        model = LlamaForCausalLM(cfg).eval()
    torch.set_default_dtype(torch.float32)
    return cfg, model


def skip_reason(path, graphed, a):
    """Why `path` cannot run here (None: it can). Without CUDA, attn_opt paths run on qattn.hf's
    torch reference backend (a dry run)."""
    if path == "triton_int8":
        if not (a.triton_peer and os.path.isfile(a.triton_peer)):
            return f"no Triton peer file (--triton-peer {a.triton_peer!r})"
        if not CUDA and os.environ.get("TRITON_INTERPRET") != "1":
            return "needs CUDA (or TRITON_INTERPRET=1 for Triton's interpreter)"
    if not CUDA and graphed:
        return "needs CUDA (CUDA graphs)"
    return None


def force_decode_splits(n):
    """Every DecodePlan made from here on for one query token takes n splits (prefill plans, which
    run one split, keep theirs)."""
    from qattn import torch_ops
    base = getattr(torch_ops.DecodePlan, "_unforced", torch_ops.DecodePlan)

    class Forced(base):
        _unforced = base

        def __init__(self, kernel, *args, splits="auto", **kw):
            super().__init__(kernel, *args, splits=n if kw.get("q_len") is None else splits, **kw)
    torch_ops.DecodePlan = Forced


def use(model, path, a):
    """Switches the model's attention; returns a fresh cache for `capacity` tokens."""
    if path == "sdpa_static_bf16":
        model.set_attn_implementation("sdpa")
        return lambda cfg, capacity: StaticCache(config=cfg, max_cache_len=capacity)
    if path.startswith("sdpa"):
        model.set_attn_implementation("sdpa")
        return lambda cfg, capacity: DynamicCache(config=cfg)
    if path == "triton_int8":
        import gpu_hf_triton as ht
        if ht._state["peer"] is None:
            ht.load_peer(a.triton_peer)
        model.set_attn_implementation(ht.register())
        return lambda cfg, capacity: ht.TritonInt8Cache(cfg, max_cache_len=capacity,
                                                        nsplit=a.triton_nsplit)
    qh.enable(model)
    if a.decode_splits:
        force_decode_splits(a.decode_splits)
    fmt = path.rsplit("_", 1)[1]
    backend = "auto" if CUDA else "torch"  # torch: qattn's CPU reference (dry runs)
    return lambda cfg, capacity: qh.QattnCache(cfg, max_cache_len=capacity, cache=fmt,
                                               backend=backend, page_size=a.page_size)


def fill(cache, cfg, batch, context):
    """Every layer's cache holds `context` random K/V rows (the step's speed does not depend on
    their values), written through each layer's own update, FILL_CHUNK rows at a time."""
    g = torch.Generator(device=DEV).manual_seed(1)
    for layer in range(cfg.num_hidden_layers):
        for start in range(0, context, FILL_CHUNK):
            n = min(FILL_CHUNK, context - start)
            shape = (batch, cfg.num_key_value_heads, n, cfg.head_dim)
            k = torch.randn(shape, device=DEV, dtype=torch.bfloat16, generator=g)
            v = torch.randn(shape, device=DEV, dtype=torch.bfloat16, generator=g)
            kwargs = {"cache_position": torch.arange(start, start + n, device=DEV)}
            cache.layers[layer].update(k, v, kwargs)
            del k, v


def cache_info(cache):
    nsplit = getattr(cache, "nsplit", None)
    return {} if nsplit is None else {"triton_nsplit": nsplit}


def peak():
    return {"peak_gib": torch.cuda.max_memory_allocated() / 2**30} if CUDA else {}


def timed(fn, batch, steps):
    sync()
    t0 = time.perf_counter()
    for i in range(steps):
        fn(i)
    sync()
    dt = time.perf_counter() - t0
    return {"step_ms": dt / steps * 1e3, "tokens_per_s": batch * steps / dt}


def decode(model, cfg, new_cache, batch, context, steps):
    cache = new_cache(cfg, context + steps + 8)
    fill(cache, cfg, batch, context)
    tok = [torch.zeros(batch, 1, dtype=torch.long, device=DEV)]

    def step(_):
        tok[0] = model(tok[0], past_key_values=cache).logits[:, -1].argmax(-1, keepdim=True)

    for i in range(3):  # warm-up (plans, tensor maps, the Triton split sweep)
        step(i)
    return {**timed(step, batch, steps), **cache_info(cache), **peak()}


class GraphStep:
    """One decode step on static buffers (token, position) that the step advances; `restart`
    puts the cache back to `context` tokens and the buffers to the first step's."""

    def __init__(self, model, cfg, cache, batch, context, capacity):
        self.model, self.cache, self.context = model, cache, context
        self.static = isinstance(cache, StaticCache)
        # A StaticCache needs the 2-D mask of the slots written so far (without one, SDPA skips
        # the causal mask of a one-token query and reads every slot of the static cache).
        self.mask = (torch.zeros(batch, capacity, dtype=torch.long, device=DEV)
                     if self.static else None)
        self.ids = torch.zeros(batch, 1, dtype=torch.long, device=DEV)
        self.pos = torch.full((batch, 1), context, dtype=torch.long, device=DEV)
        self.cpos = torch.full((1,), context, dtype=torch.long, device=DEV)
        self.last = torch.zeros(batch, cfg.vocab_size, dtype=torch.float32, device=DEV)

    def __call__(self):
        if self.static:
            self.mask.index_fill_(1, self.cpos, 1)
        out = self.model(self.ids, position_ids=self.pos, cache_position=self.cpos,
                         past_key_values=self.cache, attention_mask=self.mask)
        self.last.copy_(out.logits[:, -1])
        self.ids.copy_(self.last.argmax(-1, keepdim=True))
        self.pos.add_(1)
        self.cpos.add_(1)

    def restart(self):
        if self.static:  # the StaticCache writes at its own device-side length
            self.mask.zero_()
            self.mask[:, :self.context] = 1
            for layer in self.cache.layers:
                layer.cumulative_length.fill_(self.context)
        else:
            self.cache.crop(-(self.cache.get_seq_length() - self.context))
        self.ids.zero_()
        self.pos.fill_(self.context)
        self.cpos.fill_(self.context)


def capture(step, count):
    """`count` graphs of consecutive steps in one memory pool (replayed in capture order)."""
    pool, graphs = torch.cuda.graph_pool_handle(), []
    for _ in range(count):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, pool=pool):
            step()
        graphs.append(g)
    return graphs


def decode_graph(model, cfg, new_cache, batch, context, steps):
    """Decode steps replayed from CUDA graphs. Checked against as many eager steps from the same
    cache state: the first step's logits (relative error; cuBLAS may pick other GEMM algorithms
    under capture) and the tokens of CHECK steps (random weights leave near-ties, so a rounding
    difference may flip a token and every later one). A cache whose kernels take the length from
    the host (`graph_per_step`) gets one graph per step."""
    span = max(CHECK, steps)
    cache = new_cache(cfg, context + span)
    fill(cache, cfg, batch, context)
    step = GraphStep(model, cfg, cache, batch, context, context + span)
    step.restart()
    eager = []
    for _ in range(CHECK):  # also the warm-up before capture
        step()
        eager.append((step.ids.clone(), step.last.clone()))
    step.restart()
    graphs = capture(step, span if getattr(cache, "graph_per_step", False) else 1)
    step.restart()  # capturing ran the step's Python (host lengths) but no kernel
    replayed = []
    for i in range(CHECK):
        graphs[i % len(graphs)].replay()
        replayed.append((step.ids.clone(), step.last.clone()))
    first, again = eager[0][1], replayed[0][1]
    err = float((again - first).abs().max() / first.abs().max())
    agree = float(torch.cat([e[0] for e in eager]).eq(torch.cat([r[0] for r in replayed]))
                  .float().mean())
    step.restart()
    r = timed(lambda i: graphs[i % len(graphs)].replay(), batch, steps)
    return {**r, "graph_first_step_logit_rel_err": err, "graph_token_agreement": agree,
            "graphs": len(graphs), **cache_info(cache), **peak()}


def first_logits(model, cfg, new_cache, batch, context):
    """The first decode step's logits [batch, vocab] over a freshly filled cache."""
    cache = new_cache(cfg, context + 1)
    fill(cache, cfg, batch, context)
    tok = torch.zeros(batch, 1, dtype=torch.long, device=DEV)
    out = model(tok, past_key_values=cache).logits[:, -1].float()
    del cache
    free()
    return out


def triton_check(model, cfg, a, batch, context):
    """triton_int8's first step against attn_opt_int8's, the same random rows in both caches."""
    ours = first_logits(model, cfg, use(model, "attn_opt_int8", a), batch, context)
    peer = first_logits(model, cfg, use(model, "triton_int8", a), batch, context)
    return {"vs_attn_opt_int8_first_step_logit_rel_err":
            float((peer - ours).abs().max() / ours.abs().max()),
            "vs_attn_opt_int8_argmax_agreement":
            float(peer.argmax(-1).eq(ours.argmax(-1)).float().mean())}


def prefill(model, cfg, new_cache, tokens):
    g = torch.Generator(device=DEV).manual_seed(2)
    prompt = torch.randint(0, cfg.vocab_size, (1, tokens), device=DEV, generator=g)
    times = []
    for _ in range(2):  # the first run includes one-time setup
        cache = new_cache(cfg, tokens + 8)
        sync()
        t0 = time.perf_counter()
        model(prompt, past_key_values=cache, logits_to_keep=1)
        sync()
        times.append(time.perf_counter() - t0)
        del cache
    return {"prefill_ms": times[-1] * 1e3, "first_run_ms": times[0] * 1e3}


def free():
    gc.collect()  # transformers' caches hold reference cycles: free the last one's memory now
    if CUDA:
        torch.cuda.empty_cache()


def graphed(path, a):
    return bool(a.graphs) and path not in EAGER_ONLY


def job_fn(model, cfg, a, job):
    """The measurement of one job: prefill {path, tokens} or decode {path, batch, context}."""
    path = job["path"]
    if job["what"] == "prefill":
        return lambda: prefill(model, cfg, use(model, path, a), job["tokens"])
    b, c = job["batch"], job["context"]

    def run():
        r = {}
        if path == "triton_int8":
            try:
                r = triton_check(model, cfg, a, b, c)
            except Exception as e:  # e.g. no attn-opt kernels here: the timing still runs
                r = {"vs_attn_opt_int8_error": f"{type(e).__name__}: {str(e)[:200]}"}
                free()
        fn = decode_graph if graphed(path, a) else decode
        r.update(fn(model, cfg, use(model, path, a), b, c, a.steps))
        return r
    return run


def run_job(model, cfg, a, job):
    """Runs one job here; returns its row (an error or a skip is recorded, never raised)."""
    r = dict(job)
    if job["what"] == "decode":
        r["what"] = "decode_graph" if graphed(job["path"], a) else "decode"
    why = skip_reason(job["path"], graphed(job["path"], a) and job["what"] == "decode", a)
    if why:
        print(f"skipped {job['path']}: {why}", file=sys.stderr, flush=True)
        return dict(r, skipped=why)
    pinned = (sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION])
              if job["path"] == "sdpa_flash_bf16" else contextlib.nullcontext())
    try:
        if CUDA:
            torch.cuda.reset_peak_memory_stats()
        with torch.inference_mode(), pinned:
            r.update(job_fn(model, cfg, a, job)())
    except Exception as e:  # e.g. out of memory: recorded, the grid goes on
        r["error"] = f"{type(e).__name__}: {str(e)[:300]}"
        traceback.print_exc()
    free()
    return r


def ints(text):
    return [int(t) for t in text.split(",") if t.strip()]


def plan(a, paths):
    """The jobs of the grid: per repetition, prefill then decode, paths interleaved."""
    jobs = []
    for rep in range(1, a.repeat + 1):
        for tokens in ints(a.prefill):
            jobs += [dict(what="prefill", path=p, tokens=tokens, rep=rep)
                     for p in paths if p != "sdpa_static_bf16"]
        for context in ints(a.contexts):
            for batch in ints(a.batches):
                jobs += [dict(what="decode", path=p, batch=batch, context=context, rep=rep)
                         for p in paths]
    return jobs


def child_argv(a, job, out, graphs):
    argv = [sys.executable, os.path.abspath(__file__), out, "--config", a.config, "--steps",
            str(a.steps), "--job", json.dumps(job)]
    argv += ["--graphs"] if graphs else []
    argv += ["--triton-peer", a.triton_peer] if a.triton_peer else []
    argv += ["--triton-nsplit", str(a.triton_nsplit)] if a.triton_nsplit else []
    argv += ["--mem-gib", str(a.mem_gib)] if a.mem_gib else []
    argv += ["--decode-splits", str(a.decode_splits)] if a.decode_splits else []
    argv += ["--page-size", str(a.page_size)]
    return argv


def run_child(a, job, out, graphs):
    """Runs one job in a process of its own; returns its row with the process's wall time."""
    t0 = time.perf_counter()
    try:
        rc = subprocess.run(child_argv(a, job, out, graphs), timeout=a.child_timeout_s).returncode
    except subprocess.TimeoutExpired:
        rc = "timeout"
    try:
        with open(out) as f:
            rows = json.load(f)[1:]
    except (OSError, ValueError):
        rows = []
    row = rows[-1] if rows else dict(job, error=f"the process ended ({rc}) without a row")
    return dict(row, process_s=round(time.perf_counter() - t0, 1), process_rc=rc)


def make_runner(a, isolate):
    """job, graphs -> row: in this process (one model) or one process per job; no job starts
    once --budget-s seconds have passed."""
    start, model = time.perf_counter(), []
    tmp = tempfile.mkdtemp(prefix="gpu-hf-speed-")
    count = [0]

    def run(job, graphs=a.graphs):
        if a.budget_s and time.perf_counter() - start > a.budget_s:
            return dict(job, skipped=f"time budget of {a.budget_s} s spent")
        if isolate:
            count[0] += 1
            return run_child(a, job, os.path.join(tmp, f"job{count[0]}.json"), graphs)
        if not model:
            model.extend(make_model(a.config))
        return run_job(model[1], model[0], argparse.Namespace(**{**vars(a), "graphs": graphs}),
                       job)
    return run


def emit(rows, out, row):
    rows.append(row)
    print(json.dumps(row), flush=True)
    with open(out, "w") as f:
        json.dump(rows, f, indent=1)


def first_guess(a, path):
    """estimate_max_batch for this GPU (or --mem-gib); 1 without either."""
    gpu_bytes = (a.mem_gib * (1 << 30) if a.mem_gib else
                 torch.cuda.get_device_properties(0).total_memory if CUDA else None)
    if not gpu_bytes:
        return 1
    return estimate_max_batch(LlamaConfig(**CONFIGS[a.config]), path, a.max_batch, gpu_bytes)


def search_max_batch(fits, limit=1 << 14, start=1):
    """The largest batch b <= limit with fits(b) (fits is monotone): from `start` (an estimate)
    up in growing steps (+1, +2, +4, ...; from 1 that is doubling), or down by bisection when
    `start` does not fit; 0 when batch 1 does not fit."""
    start = max(1, min(start, limit))
    lo, hi = 0, None
    if fits(start):
        lo, step = start, 1
        while lo + step <= limit:
            if not fits(lo + step):
                hi = lo + step
                break
            lo, step = lo + step, step * 2
        if hi is None:
            return lo
    else:
        hi = start
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def estimate_max_batch(cfg, path, context, gpu_bytes, margin=0.9):
    """A first guess for search_max_batch: the sequences whose cache fits in `margin` of the memory
    the bf16 weights leave (int8 / fp8 rows carry one f32 scale per token and head)."""
    layers, heads, dim = cfg.num_hidden_layers, cfg.num_key_value_heads, cfg.head_dim
    emb = cfg.vocab_size * cfg.hidden_size
    per_layer = (cfg.hidden_size * dim * (cfg.num_attention_heads * 2 + heads * 2)
                 + 3 * cfg.hidden_size * cfg.intermediate_size)
    weights = 2 * (2 * emb + layers * per_layer)
    row = dim * 2 if path.endswith("bf16") else dim + 4
    per_seq = layers * 2 * heads * row * context
    return max(1, int((margin * gpu_bytes - weights) // per_seq))


def ok(row):
    return "error" not in row and "skipped" not in row and row.get("process_rc", 0) == 0


def max_batch(a, paths, rows):
    """--max-batch: per path the largest batch whose graphed decode fits, its throughput in
    every repetition, then the ratios of the last path to the first."""
    run, found = make_runner(a, isolate=True), {}
    for path in paths:
        probes = []

        def fits(b, path=path):
            row = dict(run(dict(what="decode", path=path, batch=b, context=a.max_batch, rep=1),
                           graphs=True), probe=True)
            emit(rows, a.out, row)
            probes.append(row)
            return ok(row)
        best = search_max_batch(fits, start=first_guess(a, path))
        reps = [r for r in probes if r["batch"] == best and ok(r)]
        for rep in range(2, a.repeat + 1):
            row = run(dict(what="decode", path=path, batch=best, context=a.max_batch, rep=rep),
                      graphs=True)
            emit(rows, a.out, row)
            reps += [row] if ok(row) else []
        tps = [r["tokens_per_s"] for r in reps]
        found[path] = (best, min(tps) if tps else 0.0)
        emit(rows, a.out, dict(what="max_batch", path=path, context=a.max_batch, batch=best,
                               tokens_per_s=tps, step_ms=[r["step_ms"] for r in reps],
                               complete=not any("skipped" in r for r in probes)))
    (b0, t0), (b1, t1) = found[paths[0]], found[paths[-1]]
    if len(paths) >= 2 and b0 and t0:
        emit(rows, a.out, dict(what="max_batch_ratio", paths=[paths[-1], paths[0]],
                               context=a.max_batch, batch_ratio=b1 / b0,
                               min_tokens_per_s_ratio=t1 / t0))


def summarize(rows):
    """Per (rep, batch, context): the fastest SDPA path measured (eager DynamicCache, the same
    with flash pinned, StaticCache) and attn_opt_int8's speed-up over it and over triton_int8."""
    cells = {}
    for r in rows:
        if r.get("what", "").startswith("decode") and "tokens_per_s" in r and not r.get("probe"):
            cells.setdefault((r["rep"], r["batch"], r["context"]), {})[r["path"]] = r
    out = []
    for (rep, batch, context), by in sorted(cells.items()):
        sdpa = [by[p] for p in ("sdpa_bf16", "sdpa_flash_bf16", "sdpa_static_bf16") if p in by]
        if not sdpa:
            continue
        best = max(sdpa, key=lambda r: r["tokens_per_s"])
        s = dict(what="sdpa_best", rep=rep, batch=batch, context=context, path=best["path"],
                 tokens_per_s=best["tokens_per_s"],
                 **{f"{r['path']}_tokens_per_s": r["tokens_per_s"] for r in sdpa})
        for p in ("sdpa_best", "triton_int8"):
            other = best if p == "sdpa_best" else by.get(p)
            if "attn_opt_int8" in by and other:
                s[f"attn_opt_int8_over_{p}"] = (by["attn_opt_int8"]["tokens_per_s"]
                                                / other["tokens_per_s"])
        out.append(s)
    return out


def cache_contexts(a):
    """The context lengths whose caches this run makes (prompt lengths included): each cache
    holds one of them plus at most extra_tokens(a)."""
    if a.max_batch:
        return [a.max_batch]
    return sorted(set(ints(a.contexts)) | set(ints(a.prefill)))


def extra_tokens(a):
    return max(CHECK, a.steps) + 8


def prebuild_command(a):
    """The prebuild command whose kernels cover every cache of this run."""
    m = CONFIGS[a.config]
    formats = sorted({p.rsplit("_", 1)[1] for p in (a.paths or ALL_PATHS)
                      if p.startswith("attn_opt_")}) or ["int8"]
    return (f"python -m qattn.hf prebuild DIR --q-heads {m['num_attention_heads']} --kv-heads "
            f"{m['num_key_value_heads']} --head-dim {m['head_dim']} --formats "
            f"{','.join(formats)} --page-size {a.page_size} --contexts "
            f"{','.join(map(str, cache_contexts(a)))} --extra-tokens {extra_tokens(a)}")


def missing_kernels(a, paths):
    """Names of the paged decode kernels this run needs that $QATTN_HF_KERNELS lacks."""
    d = hk.prebuilt_dir()
    if d is None:
        return []
    m = CONFIGS[a.config]
    shape = (m["num_attention_heads"], m["num_key_value_heads"], m["head_dim"])
    widths = hk.capacities_for(cache_contexts(a), extra_tokens(a))
    need = []
    for p in paths:
        if p.startswith("attn_opt_"):
            fmt = hk.cache_format(p.rsplit("_", 1)[1])
            need += [hk.names(*shape, fmt, a.page_size, w // a.page_size)["decode"]
                     for w in widths]
    return [n for n in need if not (d / f"{n}.ptx").is_file()]


def header(a):
    import transformers
    try:
        commit = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)),
                                 "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip() or None
    except OSError:
        commit = None
    return {"command": " ".join(sys.argv), "commit": commit,
            "gpu": torch.cuda.get_device_name(0) if CUDA else "none (CPU)",
            "gpu_memory_gib": torch.cuda.get_device_properties(0).total_memory / 2**30
            if CUDA else None, "mem_gib": a.mem_gib,
            "torch": torch.__version__, "transformers": transformers.__version__,
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "config": a.config,
            "model": CONFIGS[a.config], "weights": "random bf16 (seed 0)",
            "page_size": a.page_size, "prebuild": prebuild_command(a)}


def parse(argv=None):
    ap = argparse.ArgumentParser(description="Decode and prefill speed of a random-weight Llama "
                                 "in transformers (see the module docstring).")
    ap.add_argument("out")
    ap.add_argument("--config", choices=sorted(CONFIGS), default="8b")
    ap.add_argument("--batches", default="1,8,32")
    ap.add_argument("--contexts", default="2048,8192")
    ap.add_argument("--prefill", default="8192", help="comma-separated prompt lengths")
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--paths", default=None, help="comma-separated, of: " + ",".join(ALL_PATHS))
    ap.add_argument("--graphs", action="store_true", help="capture decode steps in CUDA graphs "
                    "(every path but " + ", ".join(EAGER_ONLY) + ")")
    ap.add_argument("--repeat", type=int, default=1, help="repetitions of the whole grid")
    ap.add_argument("--isolate", action="store_true", help="one process per configuration")
    ap.add_argument("--triton-peer", default=None, help="the Triton int8 decode kernel's file")
    ap.add_argument("--triton-nsplit", type=int, default=None,
                    help="its split count (default: the fastest of 1..64 at the first step)")
    ap.add_argument("--max-batch", type=int, default=None, metavar="CONTEXT",
                    help="search the largest batch that fits at CONTEXT instead of the grid")
    ap.add_argument("--decode-splits", type=int, default=None, metavar="N",
                    help="run our decode kernels with N KV splits instead of the schedule's "
                         "rule (a control for the split heuristic)")
    ap.add_argument("--mem-gib", type=float, default=None, help="memory cap per process (GiB)")
    ap.add_argument("--budget-s", type=float, default=None, help="start no job after this")
    ap.add_argument("--child-timeout-s", type=float, default=300)
    ap.add_argument("--page-size", type=int, default=hk.DEFAULT_PAGE_SIZE,
                    help="tokens per page of the attn_opt caches")
    ap.add_argument("--prebuild-command", action="store_true",
                    help="print the prebuild command covering this run's caches and exit")
    ap.add_argument("--job", default=None, help=argparse.SUPPRESS)  # one job (--isolate's)
    a = ap.parse_args(argv)
    try:
        a.paths = [p for p in (a.paths or "").split(",") if p] or None
        bad = [p for p in a.paths or [] if p not in ALL_PATHS]
        if bad:
            raise ValueError(f"unknown path(s) {','.join(bad)} (known: {','.join(ALL_PATHS)})")
        for name in ("batches", "contexts", "prefill"):
            if any(n <= 0 for n in ints(getattr(a, name))):
                raise ValueError(f"--{name} takes positive integers")
        if a.steps < 1 or a.repeat < 1 or (a.max_batch is not None and a.max_batch < 1):
            raise ValueError("--steps, --repeat and --max-batch take positive integers")
        if a.triton_nsplit is not None and (a.triton_nsplit < 1
                                            or a.triton_nsplit & (a.triton_nsplit - 1)):
            raise ValueError("--triton-nsplit takes a power of two")
        hk.check_page_size(a.page_size)
        a.job = json.loads(a.job) if a.job else None
    except ValueError as e:
        ap.error(str(e))
    return a


def main(argv=None):
    a = parse(argv)
    if a.prebuild_command:
        return print(prebuild_command(a))
    if not a.job:
        missing = missing_kernels(a, a.paths or list(MAX_BATCH_PATHS if a.max_batch else
                                                     GRAPH_DEFAULT if a.graphs else PATHS))
        if missing:
            print(f"$QATTN_HF_KERNELS lacks {len(missing)} kernel(s) of this run "
                  f"({', '.join(missing[:4])}{', ...' if len(missing) > 4 else ''}); "
                  f"prebuild them with: {prebuild_command(a)}", file=sys.stderr, flush=True)
    if CUDA and a.mem_gib:
        total = torch.cuda.get_device_properties(0).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, a.mem_gib * 2**30 / total))
    rows = [header(a)]
    if a.job:  # one job of --isolate / --max-batch
        cfg, model = make_model(a.config)
        return emit(rows, a.out, run_job(model, cfg, a, a.job))
    if a.max_batch:
        if not CUDA:
            return emit(rows, a.out, dict(what="max_batch", skipped="needs CUDA"))
        return max_batch(a, a.paths or list(MAX_BATCH_PATHS), rows)
    paths = a.paths or list(GRAPH_DEFAULT if a.graphs else PATHS)
    run = make_runner(a, a.isolate)
    for job in plan(a, paths):
        emit(rows, a.out, run(job))
    for row in summarize(rows):
        emit(rows, a.out, row)


if __name__ == "__main__":
    main()
