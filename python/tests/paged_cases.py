"""What this file is: the paged decode and prefill kernels the GPU tests run
(tests/test_gpu_paged.py, tests/test_gpu_paged_prefill.py) and the PTX manifest pins
(test/Conversion/AttnToNVVM/Inputs/ptx_manifest.py): each a spec over a pool of pages with a
static number of pages per sequence (``max_blocks``; one case dynamic), a dynamic batch and pool,
and per-sequence lengths (prefill: a dynamic query length too), and its contiguous twin (the
same spec without pages) that the tests compare against on the same tokens. Plain Python (no
torch, no pytest): ``specs(spec_mod)`` takes the spec module (``qattn.spec``) so the manifest
can load it without the package.
"""

# name: spec keywords of qattn.attention("decode", ...) besides batch / kv_len / paging.
# Page sizes 1 (int8, head_dim 128), 16, 64 and 256; pages shorter and longer than tile_n;
# symmetric and asymmetric (``symmetric=False``: zero points) pools.
CASES = {
    # GQA 8:1, int8 per (token, head), two query tokens, causal
    "paged_i8_p16": dict(page_size=16, max_blocks=80, q_len=2, q_heads=16, kv_heads=2,
                         head_dim=128, kv_dtype="i8", granularity="per_token_head", causal=True),
    "paged_i8_p64": dict(page_size=64, max_blocks=20, q_len=1, q_heads=8, kv_heads=1,
                         head_dim=128, kv_dtype="i8", granularity="per_token_head"),
    "paged_i8_p1": dict(page_size=1, max_blocks=1100, q_len=1, q_heads=8, kv_heads=2,
                        head_dim=128, kv_dtype="i8", granularity="per_token_head"),
    "paged_i8_p256_d64": dict(page_size=256, max_blocks=5, q_len=1, q_heads=8, kv_heads=2,
                              head_dim=64, kv_dtype="i8", granularity="per_token_head"),
    # int8 queries (Q·Kᵀ on s8 tensor cores), K copied from the pages
    "paged_i8q_p16": dict(page_size=16, max_blocks=80, q_len=1, q_heads=16, kv_heads=2,
                          head_dim=128, kv_dtype="i8", granularity="per_token_head",
                          q_dtype="i8", q_granularity="per_token_head"),
    # e4m3 pages, one scale per token for all its heads
    "paged_fp8_p16": dict(page_size=16, max_blocks=80, q_len=1, q_heads=8, kv_heads=2,
                          head_dim=64, kv_dtype="f8E4M3FN", granularity="per_token", mode="fp8"),
    # bf16 pages: TMA writes them straight into the swizzled tiles the WGMMAs read
    "paged_bf16_p16": dict(page_size=16, max_blocks=80, q_len=1, q_heads=8, kv_heads=2,
                           head_dim=128, kv_dtype="bf16", granularity=None),
    "paged_bf16_p64": dict(page_size=64, max_blocks=20, q_len=2, q_heads=4, kv_heads=4,
                           head_dim=64, kv_dtype="bf16", granularity=None, causal=True),
    # asymmetric pools: uint8 codes with zero points stored per page as the scales are (per
    # (token, head) at page 16, per token at page 64), and int8 codes with zero points
    "paged_u8_p16": dict(page_size=16, max_blocks=80, q_len=2, q_heads=16, kv_heads=2,
                         head_dim=128, kv_dtype="ui8", granularity="per_token_head",
                         symmetric=False, causal=True),
    "paged_u8_p64": dict(page_size=64, max_blocks=20, q_len=1, q_heads=8, kv_heads=1,
                         head_dim=128, kv_dtype="ui8", granularity="per_token", symmetric=False),
    "paged_i8a_p16": dict(page_size=16, max_blocks=80, q_len=1, q_heads=8, kv_heads=2,
                          head_dim=64, kv_dtype="i8", granularity="per_token_head",
                          symmetric=False),
    # max_blocks dynamic (block_table memref<?x?xi32>): any table width at launch, the kernel's
    # kv_len being max_blocks · P; the tests launch it with tables of 80 entries per sequence.
    "paged_i8_p16_dyn": dict(page_size=16, max_blocks=80, dynamic_blocks=True, q_len=1,
                             q_heads=16, kv_heads=2, head_dim=128, kv_dtype="i8",
                             granularity="per_token_head"),
}

# Prefill (``kind="prefill"``): each sequence's last q_len tokens attend to its cache (chunked
# prefill over a paged cache); Table 1/2's 16 query heads on one KV head, and GQA 8:2 at
# head_dim 64. bf16 pages are read in place by the WGMMAs, int8 K under int8 queries too (half
# int8), V converted; fp8 pages converted for both; full_int8 converts K and V.
PREFILL_CASES = {
    "paged_pf_bf16_p16": dict(kind="prefill", page_size=16, max_blocks=80, q_heads=16,
                              kv_heads=1, head_dim=128, kv_dtype="bf16", granularity=None,
                              causal=True),
    "paged_pf_bf16_p64_d64": dict(kind="prefill", page_size=64, max_blocks=20, q_heads=8,
                                  kv_heads=2, head_dim=64, kv_dtype="bf16", granularity=None),
    "paged_pf_i8q_p16": dict(kind="prefill", page_size=16, max_blocks=80, q_heads=16, kv_heads=1,
                             head_dim=128, kv_dtype="i8", granularity="per_token_head",
                             q_dtype="i8", q_granularity="per_token_head", causal=True),
    "paged_pf_i8q_p64_d64": dict(kind="prefill", page_size=64, max_blocks=20, q_heads=8,
                                 kv_heads=2, head_dim=64, kv_dtype="i8",
                                 granularity="per_token_head", q_dtype="i8",
                                 q_granularity="per_token_head", causal=True),
    "paged_pf_fi8_p64": dict(kind="prefill", page_size=64, max_blocks=20, q_heads=16, kv_heads=1,
                             head_dim=128, kv_dtype="i8", granularity="per_token_head",
                             q_dtype="i8", q_granularity="per_token_head", mode="full_int8",
                             causal=True),
}
# Ragged prefill (``ragged=True``: cu_seqlens_q): the new tokens of every sequence packed along
# Sq of a batch of one, each sequence with its own count — one launch for chunked prefill and
# decode rows. The paged case and its contiguous twin against the prefill kernel of the same
# spec without the packing (its base case) on the same tokens.
RAGGED_CASES = {
    "ragged_pf_bf16_p16": dict(PREFILL_CASES["paged_pf_bf16_p16"], ragged=True),
    # one CTA per (query chunk, group, sequence) instead of the persistent grid: the
    # sequence's rows come with the prologue's work values
    "ragged_pf_i8q_p64_d64": dict(PREFILL_CASES["paged_pf_i8q_p64_d64"], ragged=True,
                                  schedule={"persistent": False}),
}
RAGGED_BASE = {"ragged_pf_bf16_p16": "paged_pf_bf16_p16",
               "ragged_pf_i8q_p64_d64": "paged_pf_i8q_p64_d64"}
ALL_CASES = {**CASES, **PREFILL_CASES, **RAGGED_CASES}

# (batch lengths, splits): ragged lengths with 0 and 1, lengths that are not a multiple of the
# tile or the page, one sequence filling the whole table.
LAUNCHES = [
    ([0, 1, 37, 200, 129, 1000], "auto"),
    ([513, 1, 64, 0], 2),
    ([1024], "auto"),
]


# Ragged launches: (K/V lengths, new tokens per sequence): 0 and 1 new tokens (decode rows)
# beside long chunks, more new tokens than keys (rows before the first key), counts that are
# not a multiple of the query chunk.
RAGGED_LAUNCHES = [
    ([0, 1, 37, 200, 129, 1000], [0, 1, 37, 5, 129, 64]),
    ([513, 64, 300, 5], [1, 64, 300, 9]),
    ([1280, 700, 77], [1280, 1, 0]),
]


# Prefill launches: (batch lengths, q_len). Sequences shorter than q_len (0 and 1 among them)
# have query rows before their first key, which see no key under causal masking.
PREFILL_LAUNCHES = [
    ([0, 1, 37, 200, 129, 1000], 37),
    ([513, 64, 300], 192),
    ([1280], 1280),
]


def kind(name):
    """"decode" or "prefill"."""
    return ALL_CASES[name].get("kind", "decode")


def kw(name):
    """qattn.attention keywords of a case: paged, dynamic batch and pool, seq_lens (and, with
    ``dynamic_blocks``, a dynamic max_blocks; prefill: a dynamic q_len)."""
    k = dict(ALL_CASES[name])
    k.pop("kind", None)
    if k.get("granularity") is None:
        k.pop("granularity", None)
    if k.pop("dynamic_blocks", False):
        k["max_blocks"] = None
    if kind(name) == "prefill":
        k["q_len"] = None
    return dict(k, batch=None, kv_len=None, seq_lens=True, num_pages=None, name=name)


def contiguous_kw(name):
    """The same spec over a contiguous cache [B, kv_len, Hkv, D] (dynamic kv_len)."""
    k = kw(name)
    for key in ("page_size", "max_blocks", "num_pages"):
        k.pop(key)
    return dict(k, name=f"{name}_contig")


def capacity(name):
    """Tokens a sequence may hold: max_blocks · page_size (the tables the tests build)."""
    return ALL_CASES[name]["page_size"] * ALL_CASES[name]["max_blocks"]


def specs(spec_mod):
    """[(name, Spec)] of every case and its contiguous twin."""
    out = []
    for name in ALL_CASES:
        out.append((name, spec_mod.attention(kind(name), **kw(name))))
        out.append((f"{name}_contig", spec_mod.attention(kind(name), **contiguous_kw(name))))
    return out
