"""What this file is: the paged decode kernels the GPU tests run (tests/test_gpu_paged.py) and the
PTX manifest pins (test/Conversion/AttnToNVVM/Inputs/ptx_manifest.py): each a decode spec over a
pool of pages with a static number of pages per sequence (``max_blocks``; one case dynamic), a
dynamic batch and pool, and per-sequence lengths, and its contiguous twin (the same spec without pages) that the
tests compare against on the same tokens. Plain Python (no torch, no pytest): ``specs(spec_mod)``
takes the spec module (``qattn.spec``) so the manifest can load it without the package.
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

# (batch lengths, splits): ragged lengths with 0 and 1, lengths that are not a multiple of the
# tile or the page, one sequence filling the whole table.
LAUNCHES = [
    ([0, 1, 37, 200, 129, 1000], "auto"),
    ([513, 1, 64, 0], 2),
    ([1024], "auto"),
]


def kw(name):
    """qattn.attention keywords of a case: paged, dynamic batch and pool, seq_lens (and, with
    ``dynamic_blocks``, a dynamic max_blocks)."""
    k = dict(CASES[name])
    if k.get("granularity") is None:
        k.pop("granularity", None)
    if k.pop("dynamic_blocks", False):
        k["max_blocks"] = None
    return dict(k, batch=None, kv_len=None, seq_lens=True, num_pages=None, name=name)


def contiguous_kw(name):
    """The same spec over a contiguous cache [B, kv_len, Hkv, D] (dynamic kv_len)."""
    k = kw(name)
    for key in ("page_size", "max_blocks", "num_pages"):
        k.pop(key)
    return dict(k, name=f"{name}_contig")


def capacity(name):
    """Tokens a sequence may hold: max_blocks · page_size (the tables the tests build)."""
    return CASES[name]["page_size"] * CASES[name]["max_blocks"]


def specs(spec_mod):
    """[(name, Spec)] of every case and its contiguous twin."""
    out = []
    for name in CASES:
        out.append((name, spec_mod.attention("decode", **kw(name))))
        out.append((f"{name}_contig", spec_mod.attention("decode", **contiguous_kw(name))))
    return out
