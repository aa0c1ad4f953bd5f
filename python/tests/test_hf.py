"""qattn.hf: attn-opt's kernels in Hugging Face transformers. Without torch or transformers (>= 5)
everything is skipped. On the CPU: the registration, the cache's bookkeeping and quantization (the
torch reference backend against qattn.quant and transformers' SDPA), and every documented error.
On a GPU (kernels from $QATTN_HF_KERNELS, the ahead-of-time set or attn-opt): the kernels backend
against the reference backend and against SDPA."""

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers", minversion="5")

import qattn.hf as qh  # noqa: E402
from qattn import quant  # noqa: E402
from qattn.hf import kernels as hk  # noqa: E402
from qattn.hf.cache import UnsupportedError, quantize_rows, take_pending  # noqa: E402
from transformers import AttentionInterface, DynamicCache  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402
from transformers.masking_utils import AttentionMaskInterface  # noqa: E402

CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not CUDA, reason="no CUDA device")


def tiny_config(**kw):
    base = dict(vocab_size=96, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                max_position_embeddings=256, initializer_range=0.2)
    base.update(kw)
    return LlamaConfig(**base)


def model_pair(cfg, device="cpu", dtype=torch.float32):
    """(SDPA model, attn_opt model) with the same weights and separate configs."""
    torch.manual_seed(0)
    ref = LlamaForCausalLM(copy.deepcopy(cfg)).to(device, dtype).eval()
    ref.set_attn_implementation("sdpa")
    ours = LlamaForCausalLM(copy.deepcopy(cfg)).to(device, dtype).eval()
    ours.load_state_dict(ref.state_dict())
    qh.enable(ours)
    return ref, ours


def prompt(batch=2, length=9, vocab=96, device="cpu", seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab, (batch, length), generator=g).to(device)


def forced(model, ids, tokens, cache):
    out = [model(ids, past_key_values=cache).logits[:, -1].float()]
    for t in range(tokens.shape[1] - 1):
        out.append(model(tokens[:, t:t + 1], past_key_values=cache).logits[:, -1].float())
    return torch.stack(out)


# --- registration and API ------------------------------------------------------------------------

def test_register_and_enable():
    assert qh.register() == "attn_opt"
    assert AttentionInterface._global_mapping["attn_opt"] is qh.attn_opt_attention
    assert AttentionMaskInterface._global_mapping["attn_opt"] is qh.attn_opt_mask
    _, ours = model_pair(tiny_config())
    assert ours.config._attn_implementation == "attn_opt"
    assert ours.model.layers[0].self_attn.config._attn_implementation == "attn_opt"


def test_from_pretrained_and_enable_with_a_format(tmp_path):
    cfg = tiny_config()
    ref, _ = model_pair(cfg)
    ref.save_pretrained(tmp_path)
    qh.register()
    loaded = LlamaForCausalLM.from_pretrained(tmp_path, attn_implementation="attn_opt")
    assert loaded.config._attn_implementation == "attn_opt"
    ids = prompt()
    with torch.inference_mode():
        want = ref.generate(ids, max_new_tokens=3, min_new_tokens=3, do_sample=False,
                            attention_mask=torch.ones_like(ids))
        qh.enable(loaded, cache="bf16")
        assert loaded.qattn_cache_format == "bf16"
        got = qh.generate(loaded, ids, backend="torch", max_new_tokens=3, min_new_tokens=3,
                          attention_mask=torch.ones_like(ids))
    assert torch.equal(got, want)
    with pytest.raises(ValueError, match="unknown cache format"):
        qh.enable(loaded, cache="int3")


def test_cache_formats_and_kernel_names():
    assert [qh.cache_format(n) for n in ("int8", "FP8", "e4m3", "bf16")] == \
        ["i8", "e4m3", "e4m3", "bf16"]
    with pytest.raises(ValueError, match="unknown cache format 'int4'"):
        qh.cache_format("int4")
    n = hk.names(32, 8, 128, "i8", 64, 144)
    assert n == {"decode": "decode_q32_kv8_d128_i8_p64_mb144",
                 "prefill": "prefill_q32_kv8_d128_bf16",
                 "stateless_decode": "decode_q32_kv8_d128_bf16",
                 "append": "append_paged_h8_d128_i8_p64"}
    assert "append" not in hk.names(32, 8, 128, "bf16")
    assert "decode" not in hk.names(32, 8, 128, "i8")  # the paged decode needs a table width
    text = hk.spec("decode", 32, 8, 128, "e4m3", 16, 576).text
    assert "f8E4M3FN" in text and "per_token_head" in text
    assert "page_size = 16" in text and "memref<?x576xi32>" in text  # static max_blocks
    assert "memref<?x16x8x128xf8E4M3FN>" in text and "memref<?x16x8xf32>" in text  # pools
    assert "causal" in hk.spec("prefill", 32, 8, 128, "i8").text
    text = hk.spec("append", 0, 8, 128, "i8", 64).text
    assert "attn.quantize.append_paged" in text and "memref<?x64x8x128xi8>" in text
    assert "memref<?xi64>" in text and "sm_90a" in text
    with pytest.raises(ValueError, match="table width"):
        hk.spec("decode", 32, 8, 128, "i8")
    with pytest.raises(ValueError, match="no 'append' kernel for format bf16"):
        hk.spec("append", 0, 8, 128, "bf16")


def test_table_widths_cover_contexts_with_few_kernels():
    """Capacities round up to a coarse grid (<= 1024 tokens or 12.5% above), so the speed
    script's caches (context + up to 24 tokens) need two decode kernels per context."""
    assert [hk.table_tokens(n) for n in (1, 96, 1024, 1025, 2048, 2072, 8216, 32792)] == \
        [1024, 1024, 1024, 2048, 2048, 3072, 9216, 36864]
    for n in (1, 700, 4097, 30000, 65536 + 7):
        t = hk.table_tokens(n)
        assert n <= t <= max(n + 1024, n * 1.125) and t % 1024 == 0
    assert hk.capacities_for([2048, 8192, 32768]) == [2048, 3072, 8192, 9216, 32768, 36864]
    assert hk.capacities_for([100], extra_tokens=0) == [1024]
    assert hk.max_blocks(32792, 64) == 576 and hk.max_blocks(32792, 16) == 2304
    for bad in (0, 3, 512, True):
        with pytest.raises(ValueError, match="power of two"):
            hk.max_blocks(100, bad)
    with pytest.raises(ValueError, match="capacity must be positive"):
        hk.table_tokens(0)


def test_stateless_decode_spec_is_the_ahead_of_time_one():
    """A model with 8 KV heads finds its contiguous bf16 decode kernel (caches other than
    QattnCache) in the package's set."""
    from qattn import aot
    name = "decode_d128_g4_kv8_bf16"
    want = aot.spec_of(name, aot.catalog()[name]).text
    assert aot.key(hk.spec("stateless_decode", 32, 8, 128, "i8").text) == aot.key(want)


def test_prebuilt_directory_is_preferred(tmp_path, monkeypatch):
    (tmp_path / "decode_q8_kv2_d128_i8_p16_mb64.ptx").write_text("")
    monkeypatch.setenv("QATTN_HF_KERNELS", str(tmp_path))
    assert hk.source("decode", 8, 2, 128, "i8", 16, 64) == \
        tmp_path / "decode_q8_kv2_d128_i8_p16_mb64.ptx"
    assert hasattr(hk.source("decode", 8, 2, 128, "i8", 16, 128), "text")  # another width
    assert hasattr(hk.source("prefill", 8, 2, 128, "i8"), "text")  # not prebuilt: the spec


def test_prebuild_compiles_one_decode_kernel_per_table_width(tmp_path, monkeypatch, capsys):
    """prebuild (and its command line) with the compiler replaced by a recorder."""
    import qattn.kernels
    from qattn.hf.__main__ import main
    built = []

    class Fake:
        ptx, meta = "// ptx", {"kernels": []}

    def fake_build(spec, attn_opt=None):
        built.append(spec.name)
        return Fake()
    monkeypatch.setattr(qattn.kernels, "build", fake_build)
    assert main(["prebuild", str(tmp_path), "--q-heads", "9", "--kv-heads", "3", "--head-dim",
                 "64", "--page-size", "16", "--contexts", "2048", "--capacities", "100",
                 "--formats", "int8,bf16"]) == 0
    assert sorted(built) == sorted([
        "prefill_q9_kv3_d64_bf16", "decode_q9_kv3_d64_bf16", "append_paged_h3_d64_i8_p16",
        "decode_q9_kv3_d64_i8_p16_mb64", "decode_q9_kv3_d64_i8_p16_mb128",
        "decode_q9_kv3_d64_i8_p16_mb192", "decode_q9_kv3_d64_bf16_p16_mb64",
        "decode_q9_kv3_d64_bf16_p16_mb128", "decode_q9_kv3_d64_bf16_p16_mb192"])
    assert (tmp_path / "decode_q9_kv3_d64_i8_p16_mb192.ptx.launch.json").is_file()
    built.clear()  # kernels already there are kept
    assert hk.prebuild(tmp_path, 9, 3, 64, ["int8"], [3000], 16) == []
    assert built == []
    for argv, msg in ((["--contexts", "0"], "positive"), ([], "give --contexts"),
                      (["--capacities", "64", "--page-size", "48"], "power of two")):
        with pytest.raises(SystemExit):
            main(["prebuild", str(tmp_path), "--q-heads", "9", "--kv-heads", "3",
                  "--head-dim", "64"] + argv)
        assert msg in capsys.readouterr().err


# --- the torch reference backend on the CPU ------------------------------------------------------

@pytest.mark.parametrize("fmt,bound", [("bf16", 2e-2), ("int8", 5e-2), ("fp8", 2e-1)])
@pytest.mark.parametrize("pages", [{}, dict(page_size=4, page_seed=5)])
def test_reference_backend_matches_sdpa(fmt, bound, pages):
    """Default pages (64: one per sequence) and shuffled pages of 4 (15 tokens: no multiple)."""
    cfg = tiny_config()
    ref, ours = model_pair(cfg)
    ids = prompt()
    with torch.inference_mode():
        want = ref.generate(ids, max_new_tokens=6, min_new_tokens=6, do_sample=False,
                            attention_mask=torch.ones_like(ids))
        tokens = want[:, ids.shape[1]:]
        a = forced(ref, ids, tokens, DynamicCache(config=cfg))
        cache = qh.QattnCache(cfg, max_cache_len=32, cache=fmt, backend="torch", **pages)
        b = forced(ours, ids, tokens, cache)
        got = qh.generate(ours, ids, cache=fmt, backend="torch", max_new_tokens=6,
                          min_new_tokens=6, attention_mask=torch.ones_like(ids))
    err = float((a - b).abs().max() / a.abs().max())
    assert err < bound, err
    assert cache.get_seq_length() == ids.shape[1] + tokens.shape[1] - 1
    assert torch.equal(got, want)
    with torch.inference_mode():  # the prompt's attention takes its bf16 rows and drops them
        prompt_only = qh.QattnCache(cfg, max_cache_len=32, cache=fmt, backend="torch")
        ours(ids, past_key_values=prompt_only)
    assert all(layer.new_rows is None for layer in prompt_only.layers)


def test_cache_bookkeeping_and_quantize_on_append():
    cfg = tiny_config()
    cache = qh.QattnCache(cfg, max_cache_len=8, cache="int8", backend="torch", page_size=4)
    assert len(cache.layers) == 2 and cache.get_seq_length() == 0
    k = torch.randn(2, 2, 3, 16)
    v = torch.randn(2, 2, 3, 16)
    rk, rv = cache.update(k, v, 0)
    assert rk is k and rv is v  # the new rows only: attention reads the cache
    assert take_pending(k)[1] is cache.layers[0]  # what the attention call consumes
    layer = cache.layers[0]
    assert layer.new_rows[0].shape == (2, 3, 2, 16)  # a prompt: attended on its bf16 rows
    # 2 pages of 4 per sequence and a scratch page; a table of 1024 / 4 blocks, shared
    assert layer.keys.shape == (5, 4, 2, 16) and layer.keys.dtype == torch.int8
    assert layer.k_scale.shape == (5, 4, 2)
    assert layer.block_table.shape == (2, 256) and layer.block_table.dtype == torch.int32
    assert layer.block_table[:, :2].tolist() == [[0, 1], [2, 3]]
    assert bool((layer.block_table[:, 2:] == 4).all())  # past a sequence's pages: scratch
    assert cache.layers[1].block_table is layer.block_table
    assert layer.seq_lens.tolist() == [3, 3] and cache.get_seq_length(0) == 3
    codes, scales = quantize_rows(k.transpose(1, 2).to(torch.bfloat16), "i8")
    assert torch.equal(layer.keys[0, :3], codes[0]) and torch.equal(layer.keys[2, :3], codes[1])
    assert torch.equal(layer.k_scale[2, :3], scales[1])
    k2 = torch.randn(2, 2, 2, 16)
    cache.update(k2, k2.clone(), 0)  # rows 3 and 4: the second one opens each row's next page
    assert layer.new_rows is None  # past the prompt nothing reads them: no bf16 copy kept
    assert take_pending(k2)[0] is cache and take_pending(k2) is None
    assert layer.seq_lens.tolist() == [5, 5]
    want = quantize_rows(k2.transpose(1, 2).to(torch.bfloat16), "i8")[0]
    assert torch.equal(layer.keys[0, 3], want[0, 0]) and torch.equal(layer.keys[1, 0], want[0, 1])
    assert torch.equal(layer.keys[3, 0], want[1, 1])
    assert layer.get_mask_sizes(1) == (6, 0) and cache.get_max_length() == 8
    deq, _ = layer.dequantized()
    assert deq.shape == (2, 5, 2, 16)
    assert float((deq[:, :3] - k.transpose(1, 2)).abs().max()) < float(k.abs().max()) / 100
    cache.crop(-2)  # transformers' form: drop the last tokens
    assert cache.get_seq_length(0) == 3 and layer.seq_lens.tolist() == [3, 3]
    cache.crop(5)  # the legacy form: the length to keep; a longer one changes nothing
    assert cache.get_seq_length(0) == 3 and layer.seq_lens.tolist() == [3, 3]
    cache.crop(4)
    cache.crop(0)
    assert cache.get_seq_length(0) == 3
    with pytest.raises(UnsupportedError, match="exceed the capacity 8"):
        cache.update(torch.randn(2, 2, 6, 16), torch.randn(2, 2, 6, 16), 0)
    with pytest.raises(UnsupportedError, match="batch 2"):
        cache.update(torch.randn(3, 2, 1, 16), torch.randn(3, 2, 1, 16), 0)
    cache.crop(2)  # the legacy form shortens to 2
    assert cache.get_seq_length(0) == 2 and layer.seq_lens.tolist() == [2, 2]
    cache.reset()
    assert cache.get_seq_length(0) == 0 and layer.seq_lens.tolist() == [0, 0]
    # layer 0 only (layer 1 has had no update): K and V pools, K and V scales
    assert cache.memory_bytes == 2 * (5 * 4 * 2 * 16) + 2 * (5 * 4 * 2 * 4)
    with pytest.raises(ValueError, match="power of two"):
        qh.QattnCache(cfg, max_cache_len=8, page_size=12)


@pytest.mark.parametrize("fmt,qfmt", [("i8", "i8"), ("e4m3", "e4m3")])
def test_reference_quantization_is_qattn_quant(fmt, qfmt):
    x = torch.randn(3, 5, 2, 64) * torch.linspace(0.01, 10, 64)
    codes, scales = quantize_rows(x, fmt)
    want_codes, want_scales = quant.quantize(x.reshape(15, 2, 64).numpy(), qfmt, "per_token_head")
    np.testing.assert_array_equal(scales.reshape(15, 2).numpy(), want_scales)
    np.testing.assert_array_equal(codes.float().reshape(15, 2, 64).numpy(),
                                  np.asarray(want_codes, dtype=np.float32))


# --- errors --------------------------------------------------------------------------------------

def test_padding_mask_raises():
    _, ours = model_pair(tiny_config())
    ids = prompt()
    mask = torch.ones_like(ids)
    mask[0, :2] = 0
    with torch.inference_mode(), pytest.raises(UnsupportedError, match="padded batches"):
        qh.generate(ours, ids, cache="bf16", backend="torch", max_new_tokens=2,
                    attention_mask=mask)


def test_cpu_tensors_without_the_reference_raise():
    cfg = tiny_config()
    _, ours = model_pair(cfg)
    ids = prompt()
    with torch.inference_mode():
        with pytest.raises(UnsupportedError, match="CUDA"):
            ours(ids, past_key_values=qh.QattnCache(cfg, max_cache_len=16))
        with pytest.raises(UnsupportedError, match="CUDA"):  # any other cache: kernels only
            ours(ids, past_key_values=DynamicCache(config=cfg))
        with pytest.raises(UnsupportedError, match="CUDA"):
            ours(ids, past_key_values=qh.QattnCache(cfg, max_cache_len=16, backend="kernels"))


def test_our_cache_with_other_attention_raises():
    cfg = tiny_config()
    ref, ours = model_pair(cfg)
    with torch.inference_mode():
        with pytest.raises(UnsupportedError, match="attn_implementation"):
            ref(prompt(), past_key_values=qh.QattnCache(cfg, max_cache_len=16, backend="torch"))
        # a rejected call leaves nothing behind: the next forward runs
        with pytest.raises(UnsupportedError, match="dropout"):
            qh.attn_opt_attention(ours.model.layers[0].self_attn, torch.randn(1, 4, 1, 16),
                                  torch.randn(1, 2, 1, 16), torch.randn(1, 2, 1, 16), None,
                                  dropout=0.5)
        logits = ours(prompt(), past_key_values=qh.QattnCache(cfg, max_cache_len=16,
                                                              backend="torch")).logits
        assert torch.isfinite(logits).all()


def test_chunked_prefill_int8_raises_bf16_matches():
    cfg = tiny_config()
    ref, ours = model_pair(cfg)
    ids = prompt(length=10)
    with torch.inference_mode():
        want = ref(ids).logits
        cache = qh.QattnCache(cfg, max_cache_len=16, cache="bf16", backend="torch",
                              page_size=4, page_seed=2)  # the prefix's pages gathered
        ours(ids[:, :6], past_key_values=cache)
        got = ours(ids[:, 6:], past_key_values=cache).logits
        assert float((got - want[:, 6:]).abs().max()) < 2e-2 * float(want.abs().max())
        cache = qh.QattnCache(cfg, max_cache_len=16, cache="int8", backend="torch")
        ours(ids[:, :6], past_key_values=cache)
        with pytest.raises(UnsupportedError, match="4 query tokens after 6 cached"):
            ours(ids[:, 6:], past_key_values=cache)


def test_attention_function_rejects_what_the_kernels_cannot_do():
    class Module:
        is_causal = True
    q = torch.randn(1, 4, 1, 16, dtype=torch.bfloat16)
    k = torch.randn(1, 2, 3, 16, dtype=torch.bfloat16)
    cases = [(dict(scaling=0.5), "head_dim \\*\\* -0.5"), (dict(dropout=0.1), "dropout"),
             (dict(softcap=30.0), "softcap"), (dict(sliding_window=4), "sliding_window"),
             (dict(attention_mask=torch.ones(1, 1, 1, 3, dtype=torch.bool)), "explicit")]
    for kw, msg in cases:
        mask = kw.pop("attention_mask", None)
        with pytest.raises(UnsupportedError, match=msg):
            qh.attn_opt_attention(Module(), q, k, k, mask, **kw)
    with pytest.raises(UnsupportedError, match="plain causal"):
        qh.attn_opt_mask(1, 2, 2, mask_function=lambda *a: True)
    with pytest.raises(UnsupportedError, match="sliding window"):
        qh.attn_opt_mask(1, 2, 2, local_size=4)
    assert qh.attn_opt_mask(2, 1, 5, attention_mask=torch.ones(2, 5, dtype=torch.bool)) is None


def test_unknown_backend_and_capacity():
    with pytest.raises(ValueError, match="backend"):
        qh.QattnCache(tiny_config(), max_cache_len=4, backend="cpu")
    with pytest.raises(ValueError, match="max_cache_len"):
        qh.QattnCache(tiny_config(), max_cache_len=0)


# --- GPU -----------------------------------------------------------------------------------------

def gpu_config():
    return tiny_config(hidden_size=1024, num_attention_heads=8, num_key_value_heads=2,
                       head_dim=128, intermediate_size=2048, vocab_size=512,
                       initializer_range=0.05)


# Relative max logit errors. The logits are bf16 (2 ulps at the top of the range: 1.6%); the
# bounds for int8 and fp8 caches sit above what the H100 gave on a 4-layer model of this shape
# (docs/benchmarks/gpu-e2e.md: 5% and 22% against SDPA) — e4m3's 3 mantissa bits cost most.
# Pages: the default (64: 70 + 8 tokens span two pages) and shuffled pages of 16.
GPU_PAGES = [{}, dict(page_size=16, page_seed=4)]


@needs_cuda
@pytest.mark.parametrize("fmt,to_ref,to_sdpa", [("bf16", 3e-2, 3e-2), ("int8", 6e-2, 8e-2),
                                                ("fp8", 0.3, 0.35)])
@pytest.mark.parametrize("pages", GPU_PAGES)
def test_kernels_match_sdpa_and_reference(fmt, to_ref, to_sdpa, pages):
    """The paged kernels (append, decode through the block table) against the torch backend
    over the same page table and against SDPA."""
    cfg = gpu_config()
    ref, ours = model_pair(cfg, "cuda", torch.bfloat16)
    ids = prompt(batch=3, length=70, vocab=512, device="cuda")
    with torch.inference_mode():
        want = ref.generate(ids, max_new_tokens=8, min_new_tokens=8, do_sample=False,
                            attention_mask=torch.ones_like(ids))
        tokens = want[:, ids.shape[1]:]
        a = forced(ref, ids, tokens, DynamicCache(config=cfg))
        kern = forced(ours, ids, tokens, qh.QattnCache(cfg, max_cache_len=96, cache=fmt,
                                                       **pages))
        torch_ref = forced(ours, ids, tokens, qh.QattnCache(cfg, max_cache_len=96, cache=fmt,
                                                            backend="torch", **pages))
    scale = float(a.abs().max())
    assert float((kern - torch_ref).abs().max()) / scale < to_ref
    assert float((kern - a).abs().max()) / scale < to_sdpa


@needs_cuda
@pytest.mark.parametrize("fmt", ["int8", "fp8", "bf16"])
def test_kernels_append_writes_the_reference_pages(fmt):
    """The slot-mapped append kernel (int8 / fp8) and the bf16 scatter write what the torch
    backend writes, at the same slots of shuffled pages of 16; a length of 37 + 2."""
    cfg = gpu_config()
    caches = [qh.QattnCache(cfg, max_cache_len=50, cache=fmt, backend=b, page_size=16,
                            page_seed=9) for b in ("kernels", "torch")]
    g = torch.Generator(device="cuda").manual_seed(0)
    for n in (37, 1, 1):
        k = torch.randn(2, 2, n, 128, device="cuda", dtype=torch.bfloat16, generator=g)
        v = torch.randn(2, 2, n, 128, device="cuda", dtype=torch.bfloat16, generator=g)
        for c in caches:
            c.layers[0].update(k, v)
    kern, ref = (c.layers[0] for c in caches)
    assert torch.equal(kern.block_table, ref.block_table)
    assert kern.seq_lens.tolist() == [39, 39]
    owned = kern.block_table[:, :3].flatten().long()  # 39 tokens: 3 pages of 16 each
    for a, b in ((kern.keys, ref.keys), (kern.values, ref.values)):
        a, b = a.float()[owned], b.float()[owned]
        if fmt == "bf16":
            assert torch.equal(a, b)
        else:  # a rounding apart at most (int8: one code; e4m3: one step of 3 mantissa bits)
            assert float((a - b).abs().max()) <= (1.0 if fmt == "int8" else 32.0)
            assert float((a - b).abs().mean()) < 0.01 * float(b.abs().mean())
    if fmt != "bf16":
        torch.testing.assert_close(kern.k_scale[owned], ref.k_scale[owned], rtol=1e-5, atol=0)
    dk, _ = kern.dequantized()
    rk, _ = ref.dequantized()
    assert float((dk - rk).abs().max()) <= 0.1 * float(rk.abs().max())


@needs_cuda
def test_kernels_chunked_bf16_prefill_and_graph_replay():
    """Several query tokens over a bf16 prefix (the pages gathered) match SDPA; a decode step
    captured in a CUDA graph (slot mapping and lengths on the device) replays the eager steps."""
    cfg = gpu_config()
    ref, ours = model_pair(cfg, "cuda", torch.bfloat16)
    ids = prompt(batch=2, length=40, vocab=512, device="cuda")
    with torch.inference_mode():
        want = ref(ids).logits.float()
        cache = qh.QattnCache(cfg, max_cache_len=64, cache="bf16", page_size=16, page_seed=1)
        ours(ids[:, :23], past_key_values=cache)
        got = ours(ids[:, 23:], past_key_values=cache).logits.float()
        assert float((got - want[:, 23:]).abs().max()) < 3e-2 * float(want.abs().max())
        cache = qh.QattnCache(cfg, max_cache_len=64, cache="int8", page_size=16, page_seed=1)
        ours(ids[:, :30], past_key_values=cache)
        tok = ids[:, 30:31].clone()
        pos = torch.full((2, 1), 30, device="cuda")
        cpos = torch.full((1,), 30, device="cuda")
        eager = [ours(tok, position_ids=pos + i, cache_position=cpos + i,
                      past_key_values=cache).logits.float() for i in range(3)]
        cache.crop(30)
        assert cache.get_seq_length() == 30
        step = torch.cuda.CUDAGraph()
        out = [None]
        with torch.cuda.graph(step):
            out[0] = ours(tok, position_ids=pos, cache_position=cpos,
                          past_key_values=cache).logits.float()
            pos.add_(1)
            cpos.add_(1)
        cache.crop(30)
        pos.fill_(30)
        cpos.fill_(30)
        for i in range(3):
            step.replay()
            assert float((out[0] - eager[i]).abs().max()) < 2e-2 * float(eager[i].abs().max())
        assert cache.layers[0].seq_lens.tolist() == [33, 33]


@needs_cuda
def test_kernels_stateless_path_matches_sdpa():
    cfg = gpu_config()
    ref, ours = model_pair(cfg, "cuda", torch.bfloat16)
    ids = prompt(batch=2, length=33, vocab=512, device="cuda")
    with torch.inference_mode():
        want = ref(ids).logits.float()
        got = ours(ids).logits.float()
        cache = DynamicCache(config=cfg)
        ours(ids[:, :-1], past_key_values=cache)
        last = ours(ids[:, -1:], past_key_values=cache).logits.float()
    scale = float(want.abs().max())
    assert float((got - want).abs().max()) / scale < 3e-2
    assert float((last[:, -1] - want[:, -1]).abs().max()) / scale < 3e-2


@needs_cuda
def test_kernels_reject_float32_models():
    cfg = gpu_config()
    _, ours = model_pair(cfg, "cuda", torch.float32)
    with torch.inference_mode(), pytest.raises(UnsupportedError, match="bfloat16"):
        ours(prompt(device="cuda", vocab=512), past_key_values=qh.QattnCache(cfg, max_cache_len=16))


def test_rows_land_at_device_slots_and_past_the_pages_in_scratch():
    """Appends write row i of sequence b at position seq_lens[b] + i read on the device (what a
    CUDA graph replays at each step) through the shuffled block table; rows past a sequence's
    pages land in the scratch page, never in another sequence's."""
    from qattn.hf.cache import PageTable, QattnLayer
    for fmt in ("bf16", "i8"):
        pages = PageTable(6, page_size=4, seed=7)  # 2 pages (8 slots) per sequence
        layer = QattnLayer(fmt, 6, "torch", pages)
        k = torch.randn(3, 2, 2, 16)
        layer.update(k, k.clone())
        table = layer.block_table
        assert sorted(table[:, :2].flatten().tolist()) == list(range(6))
        assert table[:, :2].flatten().tolist() != list(range(6))  # shuffled
        before = layer.keys.clone()
        layer.seq_lens.copy_(torch.tensor([7, 0, 8], dtype=torch.int32))  # row 2 is full
        rows = torch.randn(3, 2, 3, 16)
        layer.update(rows, rows.clone())
        got = layer.keys.float() if fmt == "bf16" else layer.dequantized()[0]
        want = rows.transpose(1, 2).to(torch.bfloat16).float()
        tol = 0 if fmt == "bf16" else float(want.abs().max()) / 100
        if fmt == "bf16":
            def at(b, t):
                return got[int(table[b, t // 4]), t % 4]
        else:  # dequantized: [B, length = 5, H, D] gathered through the table (length 2 + 3)
            full = layer.pages.gather(layer.keys, 12).float() * \
                layer.pages.gather(layer.k_scale, 12)[..., None]

            def at(b, t):
                return full[b, t]
        assert float((at(0, 7) - want[0, 0]).abs().max()) <= tol
        for i in range(3):
            assert float((at(1, i) - want[1, i]).abs().max()) <= tol
        owned = table[:, :2].flatten().long()
        changed = (layer.keys[owned] != before[owned]).flatten(1).any(1)
        # sequence 0's last page (slot 7) and sequence 1's first page (slots 0..2) only
        assert changed.tolist() == [p in (int(table[0, 1]), int(table[1, 0]))
                                    for p in owned.tolist()]


@pytest.mark.parametrize("fmt", ["i8", "e4m3", "bf16"])
@pytest.mark.parametrize("page_size", [1, 4, 16])
def test_reference_backend_is_paged_attention(fmt, page_size):
    """The torch backend's decode over shuffled pages and a length that is no page multiple
    equals qattn.reference.paged_attention over the layer's own pools, scales and table."""
    from qattn import reference
    from qattn.hf.attention import _attend_cache
    from qattn.hf.cache import PageTable, QattnLayer
    layer = QattnLayer(fmt, 30, "torch", PageTable(30, page_size, seed=3))
    g = torch.Generator().manual_seed(0)
    layer.update(torch.randn(2, 2, 21, 16, generator=g), torch.randn(2, 2, 21, 16, generator=g))
    for _ in range(2):
        layer.update(torch.randn(2, 2, 1, 16, generator=g), torch.randn(2, 2, 1, 16, generator=g))
    assert layer.length == 23 and 23 % page_size or page_size == 1
    q = torch.randn(2, 1, 4, 16, generator=g)
    got = _attend_cache(layer, q).float().numpy()
    scales = {} if fmt == "bf16" else dict(k_scale=layer.k_scale.numpy(),
                                          v_scale=layer.v_scale.numpy(),
                                          k_granularity="per_token_head")
    want = reference.paged_attention(q.numpy(), layer.keys.float().numpy(),
                                     layer.values.float().numpy(), layer.block_table.numpy(),
                                     layer.seq_lens.numpy(), **scales)
    np.testing.assert_allclose(got, want, atol=1e-2 * float(np.abs(want).max()), rtol=0)
    # the same rows in a contiguous copy: equal (the layout changes nothing)
    k, v = layer.dequantized()
    np.testing.assert_allclose(reference.attention(q.numpy(), k.numpy(), v.numpy()), want,
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("fmt", ["int8", "fp8"])
def test_reorder_cache_copies_pages(fmt):
    cfg = tiny_config()
    cache = qh.QattnCache(cfg, max_cache_len=10, cache=fmt, backend="torch", page_size=4,
                          page_seed=1)
    for i in range(2):
        cache.layers[i].update(torch.randn(3, 2, 6, 16), torch.randn(3, 2, 6, 16))
    layer = cache.layers[1]
    before_k, before_v = layer.dequantized()
    table = layer.block_table.clone()
    cache.reorder_cache(torch.tensor([2, 2, 0]))
    after_k, after_v = layer.dequantized()
    assert torch.equal(layer.block_table, table)
    assert torch.equal(after_k[0], before_k[2]) and torch.equal(after_k[1], before_k[2])
    assert torch.equal(after_v[2], before_v[0])


# The kernels of the GPU cases above: gpu_config's shape, every page size and cache size they use.
GPU_SHAPE = dict(q_heads=8, kv_heads=2, head_dim=128)
GPU_PAGE_SIZES = (64, 16)
GPU_CAPACITIES = (50, 64, 96)


def test_gpu_cases_are_covered_by_their_prebuild():
    caps = {hk.table_tokens(c) for c in GPU_CAPACITIES}
    assert caps == {1024}  # one table width per page size
    assert {p.get("page_size", hk.DEFAULT_PAGE_SIZE) for p in GPU_PAGES} == set(GPU_PAGE_SIZES)
    cfg = gpu_config()
    assert (cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim) == \
        tuple(GPU_SHAPE.values())


def prebuild_gpu_kernels(out_dir):
    """``python python/tests/test_hf.py --prebuild DIR`` (where attn-opt is): the kernels of the
    GPU cases, for ``QATTN_HF_KERNELS=DIR`` on a GPU host without attn-opt."""
    names = []
    for page_size in GPU_PAGE_SIZES:
        names += hk.prebuild(out_dir, *GPU_SHAPE.values(), ("i8", "e4m3", "bf16"),
                             GPU_CAPACITIES, page_size)
    return names


if __name__ == "__main__":
    import sys
    if len(sys.argv) != 3 or sys.argv[1] != "--prebuild":
        sys.exit("usage: python python/tests/test_hf.py --prebuild DIR")
    print("\n".join(prebuild_gpu_kernels(sys.argv[2])))
