"""Building `attn.attention` specs from keyword arguments instead of writing MLIR by hand.

``attention(...)`` turns sizes, dtypes and a quantization granularity into one ``func.func``
holding an ``attn.attention`` op: it derives every memref type (``None`` extents become ``?``) and
the scale operand shapes the granularity implies. Only type-level nonsense (an unknown dtype,
a malformed granularity, a negative extent) is rejected here, with ``ValueError``; whether the spec
makes sense (head counts, mode vs. dtypes, schedule limits) is attn-opt's call, so its
diagnostics come back as ``CompileError`` from ``compile``.
"""

from __future__ import annotations

import re
from typing import List, Mapping, Optional, Sequence

Dim = Optional[int]

Q_DTYPES = ("bf16", "i8", "f8E4M3FN")
KV_DTYPES = ("bf16", "i8", "ui8", "f8E4M3FN", "f8E5M2")
OUT_DTYPES = ("bf16", "f16", "f32")
MODES = ("bf16", "half_int8", "full_int8", "fp8")
TARGETS = ("sm_90a", "avx2", "avx512", "avx512_vbmi", "avx512_vnni", "neon", "scalar")
UNQUANTIZED = ("bf16",)

_SIMPLE_GRANULARITIES = ("per_tensor", "per_token", "per_head", "per_token_head", "per_channel")
_GROUP_RE = re.compile(r"^per_group<\s*(\d+)\s*>$")
_BLOCK_RE = re.compile(r"^per_block<\s*(\d+)\s*x\s*(\d+)\s*>$")
_SYMBOL_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_$.]*$")


class Spec:
    """An MLIR spec: ``text`` is the module text, ``name`` the function it defines."""

    def __init__(self, text: str, name: str = ""):
        self.text = text
        self.name = name

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"Spec(name={self.name!r}, {len(self.text.splitlines())} lines)"


def _memref(shape: Sequence[Dim], elem: str) -> str:
    dims = "x".join("?" if d is None else str(d) for d in shape)
    return f"memref<{dims}x{elem}>"


def _ceil_div(n: Dim, d: int) -> Dim:
    return None if n is None else -(-n // d)


def _check_choice(what: str, value, choices: Sequence[str]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"unknown {what} {value!r}; expected one of {', '.join(choices)}")
    return value


def _check_target_name(target: Optional[str], name: str) -> None:
    """A known target (or None) and a valid MLIR symbol name, or ValueError."""
    if target is not None:
        _check_choice("target", target, TARGETS)
    if not isinstance(name, str) or not _SYMBOL_RE.match(name):
        raise ValueError(f"name {name!r} is not a valid MLIR symbol name")


#: The largest static extent a spec may state (attn-opt's own limits are checked when compiling).
MAX_EXTENT = (1 << 63) - 1


def _check_dim(what: str, value) -> Dim:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_EXTENT:
        raise ValueError(f"{what} must be a positive int or None (dynamic), not {value!r}")
    return value


def _check_size(what: str, value) -> int:
    """A static positive int (no None)."""
    if _check_dim(what, value) is None:
        raise ValueError(f"{what} must be a positive int, not None")
    return value


def _check_bool(what: str, value) -> bool:
    """Flags are bools: a string such as "false" is truthy and would turn the feature on."""
    if not isinstance(value, bool):
        raise TypeError(f"{what} must be True or False, not {value!r}")
    return value


def _check_granularity(what: str, value) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a granularity string such as 'per_token_head', "
                         f"not {value!r}")
    scale_shape(value, [1, 1, 1, 1])  # raises ValueError naming the valid ones
    return value


def scale_shape(granularity: str, bshd: Sequence[Dim]) -> List[Dim]:
    """Shape of the scales of a [B, S, H, D] tensor quantized with ``granularity``."""
    b, s, h, d = bshd
    if not isinstance(granularity, str):
        raise ValueError(f"granularity must be a string such as 'per_token_head', "
                         f"not {granularity!r}")
    g = granularity.strip()
    simple = {"per_tensor": [1], "per_token": [b, s], "per_head": [h],
              "per_token_head": [b, s, h], "per_channel": [h, d]}
    if g in simple:
        return simple[g]
    m = _GROUP_RE.match(g)
    if m and int(m[1]) > 0:
        return [b, s, h, _ceil_div(d, int(m[1]))]
    m = _BLOCK_RE.match(g)
    if m and int(m[1]) > 0 and int(m[2]) > 0:
        return [b, _ceil_div(s, int(m[1])), h, _ceil_div(d, int(m[2]))]
    raise ValueError(f"unknown granularity {granularity!r}; expected one of "
                     f"{', '.join(_SIMPLE_GRANULARITIES)}, per_group<G> or per_block<RxC>")


def _schedule_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_schedule_value(v) for v in value) + "]"
    return str(value)


def schedule_attr(schedule: Mapping[str, object]) -> str:
    """``{"pack_q_heads": 16, "split_kv": "auto"}`` -> ``#attn.schedule<pack_q_heads = 16, ...>``.

    Values: ints, ``"auto"``, bools, lists (``cluster = [2, 1, 1]``) or verbatim strings
    (``roles = ["producer<warpgroups = 1, regs = 40>", ...]``).
    """
    fields = ", ".join(f"{k} = {_schedule_value(v)}" for k, v in schedule.items())
    return f"#attn.schedule<{fields}>"


def attention(kind: str = "decode", *, batch: Dim, q_len: Dim, kv_len: Dim, q_heads: Dim,
              kv_heads: Dim, head_dim: Dim, kv_dtype: str = "bf16",
              granularity: str = "per_token_head", q_dtype: str = "bf16",
              q_granularity: Optional[str] = None, v_granularity: Optional[str] = None,
              out_dtype: str = "bf16", causal: bool = False, mode: Optional[str] = None, target: Optional[str] = "sm_90a",
              schedule: Optional[Mapping[str, object]] = None, alibi: bool = False,
              seq_lens: bool = False, symmetric: bool = True, hadamard: bool = False,
              page_size: Optional[int] = None, num_pages: Dim = None, max_blocks: Dim = None,
              sinks: bool = False, lse: bool = False, softcap: Optional[float] = None,
              window: Optional[Sequence[int]] = None, ragged: bool = False,
              name: str = "attention") -> Spec:
    """A spec with one ``attn.attention`` op over [B, S, H, D] tensors.

    K and V use ``kv_dtype``; a quantized one (i8, ui8, f8E4M3FN, f8E5M2) gets ``k_scale``/``v_scale``
    operands and ``k_quant``/``v_quant`` with ``granularity`` (e.g. ``"per_token_head"``,
    ``"per_group<64>"``, ``"per_block<1x128>"``). A quantized ``q_dtype`` likewise gets ``q_scale``
    with ``q_granularity`` (default: ``granularity``); V may have its own ``v_granularity``
    (default: ``granularity``, e.g. ``"per_head"`` to scale O instead of P). ``alibi`` adds per-query-head slopes,
    ``seq_lens`` per-batch K/V lengths. ``symmetric=False`` makes K/V asymmetric: ``k_zero`` /
    ``v_zero`` operands of the scales' shape and the code type (i8 or ui8).
    ``hadamard=True``: the caller passes Q, K and V rotated by the normalized Walsh–Hadamard matrix
    along head_dim (``qattn.quant.hadamard``) before quantizing them; the kernel rotates O back.
    ``target=None`` leaves the target to ``compile(target=...)``.

    ``sinks=True`` adds attention sinks (gpt-oss): a ``sinks`` operand [q_heads] f32 of learned
    logits, each joining its head's softmax denominator as ``exp(s_h - m)`` without a value row.
    ``lse=True`` adds the output ``lse`` [batch, q_len, q_heads] f32, the natural log-sum-exp of
    each row's scaled, masked logits (the sink included; ``-inf`` for a row with no key and no
    sink). ``softcap=c`` caps the logits (Gemma 2, Grok; FlashAttention-3's convention): each
    scaled logit x becomes ``c * tanh(x / c)`` before ALiBi and the masks.
    ``window=(left, right)`` is sliding-window attention (FA3's and FlashInfer's convention;
    Mistral, Gemma, gpt-oss): the query at position i sees key j only if
    ``i - left <= j <= i + right``, ``-1`` leaving that side unbounded (with ``causal`` the right
    bound is ``min(right, 0)``); the kernels skip the key tiles outside the window (decode and
    prefill). Sinks, lse and softcap are decode features of the sm_90a kernel.

    ``page_size=P`` makes the K/V cache paged (vLLM's and FA3's layout): K and V become pools of
    ``num_pages`` pages ``[num_pages, P, kv_heads, head_dim]`` (default: dynamic), their scales and
    zero points are stored per page (the granularity applied to the pool), and a ``block_table``
    operand ``[batch, max_blocks]`` i32 lists each sequence's pages (``max_blocks`` defaults to
    ``ceil(kv_len / P)``, dynamic with a dynamic ``kv_len``). ``qattn.paged`` builds such caches.

    ``ragged=True`` (prefill on sm_90a; FlashAttention's varlen layout) is a ragged batch: q and
    the output become ``[1, q_len, q_heads, head_dim]``, the new tokens of all ``batch``
    sequences packed along their q_len (the total; usually dynamic), and a ``cu_seqlens_q``
    operand ``[batch + 1]`` i32 holds each sequence's first packed row and the end. Query
    scales follow q's packed shape.
    """
    _check_choice("attention kind", kind, ("decode", "prefill"))
    _check_choice("q_dtype", q_dtype, Q_DTYPES)
    _check_choice("kv_dtype", kv_dtype, KV_DTYPES)
    _check_choice("out_dtype", out_dtype, OUT_DTYPES)
    if mode is not None:
        _check_choice("mode", mode, MODES)
    _check_target_name(target, name)
    for flag, value in (("causal", causal), ("alibi", alibi), ("seq_lens", seq_lens),
                        ("symmetric", symmetric), ("hadamard", hadamard), ("sinks", sinks),
                        ("lse", lse), ("ragged", ragged)):
        _check_bool(flag, value)
    _check_granularity("granularity", granularity)
    for what, g in (("q_granularity", q_granularity), ("v_granularity", v_granularity)):
        if g is not None:
            _check_granularity(what, g)
    if softcap is not None and (isinstance(softcap, bool) or not isinstance(softcap, (int, float))
                                or not 0 < softcap < float("inf")):
        raise ValueError(f"softcap must be a positive finite number, not {softcap!r}")
    if window is not None:
        try:
            left, right = window
        except (TypeError, ValueError):
            raise ValueError(f"window must be a pair (left, right), not {window!r}") from None
        if any(isinstance(x, bool) or not isinstance(x, int) or x < -1 for x in (left, right)):
            raise ValueError(f"window bounds must be integers >= -1 (-1: unbounded), "
                             f"not {window!r}")
    if schedule is not None and not isinstance(schedule, Mapping):
        raise TypeError(f"schedule must be a mapping of field names to values, not {schedule!r}")
    B, Sq, Skv = (_check_dim(n, v) for n, v in (("batch", batch), ("q_len", q_len), ("kv_len", kv_len)))
    Hq, Hkv, D = (_check_dim(n, v) for n, v in
                  (("q_heads", q_heads), ("kv_heads", kv_heads), ("head_dim", head_dim)))
    q_gran = granularity if q_granularity is None else q_granularity
    v_gran = granularity if v_granularity is None else v_granularity
    # The cache's own [B, S, H, D]: a pool of pages when paged.
    cache = [B, Skv, Hkv, D]
    table_ty = None
    if page_size is None:
        if num_pages is not None or max_blocks is not None:
            raise ValueError("num_pages and max_blocks describe a paged cache: give page_size too")
    else:
        P = _check_size("page_size", page_size)
        pages = _check_dim("num_pages", num_pages)
        blocks = (_ceil_div(Skv, P) if max_blocks is None
                  else _check_dim("max_blocks", max_blocks))
        cache = [pages, P, Hkv, D]
        table_ty = _memref([B, blocks], "i32")

    if ragged and kind != "prefill":
        raise ValueError("ragged (cu_seqlens_q) is a prefill layout; decode takes the same "
                         "number of new tokens per sequence")
    QB = 1 if ragged else B  # a ragged batch packs every sequence's queries along Sq
    q_ty = _memref([QB, Sq, Hq, D], q_dtype)
    kv_ty = _memref(cache, kv_dtype)
    o_ty = _memref([QB, Sq, Hq, D], out_dtype)
    args = [("q", q_ty), ("k", kv_ty), ("v", kv_ty)]
    clauses: List[str] = []
    attrs: List[str] = ["causal"] if causal else []
    if hadamard:
        attrs.append("hadamard")

    if q_dtype not in UNQUANTIZED:
        qs_ty = _memref(scale_shape(q_gran, [QB, Sq, Hq, D]), "f32")
        args.append(("qs", qs_ty))
        clauses.append(f"q_scale(%qs : {qs_ty})")
        attrs.append(f"q_quant = #attn.quant<{q_dtype}, {q_gran.strip()}>")
    elif q_granularity is not None:
        raise ValueError("q_granularity given but q_dtype is unquantized bf16")
    if not symmetric and kv_dtype not in ("i8", "ui8"):
        raise ValueError(f"asymmetric K/V needs integer codes (i8 or ui8), not {kv_dtype}")
    if v_granularity is not None and kv_dtype in UNQUANTIZED:
        raise ValueError(f"v_granularity given but kv_dtype is unquantized {kv_dtype}")
    if kv_dtype not in UNQUANTIZED:
        s_ty = _memref(scale_shape(granularity, cache), "f32")
        vs_ty = _memref(scale_shape(v_gran, cache), "f32")
        args += [("ks", s_ty), ("vs", vs_ty)]
        clauses += [f"k_scale(%ks : {s_ty})", f"v_scale(%vs : {vs_ty})"]
        asym = "" if symmetric else ", asymmetric"
        if not symmetric:
            z_ty = _memref(scale_shape(granularity, cache), kv_dtype)
            vz_ty = _memref(scale_shape(v_gran, cache), kv_dtype)
            args += [("kz", z_ty), ("vz", vz_ty)]
            clauses += [f"k_zero(%kz : {z_ty})", f"v_zero(%vz : {vz_ty})"]
        attrs += [f"k_quant = #attn.quant<{kv_dtype}, {granularity.strip()}{asym}>",
                  f"v_quant = #attn.quant<{kv_dtype}, {v_gran.strip()}{asym}>"]
    if seq_lens:
        lens_ty = _memref([B], "i32")
        args.append(("lens", lens_ty))
        clauses.append(f"seq_lens(%lens : {lens_ty})")
    if alibi:
        slopes_ty = _memref([Hq], "f32")
        args.append(("slopes", slopes_ty))
        clauses.append(f"alibi(%slopes : {slopes_ty})")
    if table_ty is not None:
        args.append(("pages", table_ty))
        clauses.append(f"block_table(%pages : {table_ty})")
        attrs.append(f"page_size = {page_size}")
    if sinks:
        sinks_ty = _memref([Hq], "f32")
        args.append(("sinks", sinks_ty))
        clauses.append(f"sinks(%sinks : {sinks_ty})")
    if ragged:
        cu_ty = _memref([None if B is None else B + 1], "i32")
        args.append(("cu_q", cu_ty))
        clauses.append(f"cu_seqlens_q(%cu_q : {cu_ty})")
    args.append(("o", o_ty))
    lse_ty = _memref([QB, Sq, Hq], "f32") if lse else None
    if lse_ty:
        args.append(("lse", lse_ty))
    if softcap is not None:
        attrs.append(f"softcap = {float(softcap)!r} : f32")
    if window is not None:
        attrs.append(f"window = array<i64: {int(window[0])}, {int(window[1])}>")
    if mode is not None:
        attrs.append(f"mode = #attn.mode<{mode}>")
    if target is not None:
        attrs.append(f"target = #attn.target<{target}>")
    if schedule:
        attrs.append(f"schedule = {schedule_attr(schedule)}")

    indent = " " * 6
    signature = ",\n".join(f"{' ' * (len(name) + 12)}%{a}: {t}" for a, t in args).lstrip()
    lines = [f"func.func @{name}({signature}) {{",
             f"  attn.attention {kind} ins(%q, %k, %v : {q_ty}, {kv_ty}, {kv_ty})"]
    lines += [indent + c for c in clauses]
    lines.append(f"{indent}outs(%o : {o_ty})" + (f" lse(%lse : {lse_ty})" if lse_ty else ""))
    if attrs:
        lines.append(indent + "{" + (",\n" + indent + " ").join(attrs) + "}")
    lines += ["  return", "}", ""]
    return Spec("\n".join(lines), name)


SRC_DTYPES = ("bf16", "f16", "f32")
CODE_DTYPES = ("i8", "ui8", "f8E4M3FN")
SCALE_DTYPES = ("f32", "f16", "bf16")


def quantize(op: str = "append", *, batch: Dim, tokens: Dim, heads: int, head_dim: int,
             capacity: Dim = None, src_dtype: str = "bf16", dtype: str = "i8",
             granularity: str = "per_token_head", symmetric: bool = True,
             scale_dtype: str = "f32", hadamard: bool = False, target: Optional[str] = None,
             name: str = "quantize") -> Spec:
    """A spec with one ``attn.quantize.append`` (``op="append"``: ``tokens`` new tokens per batch
    element written into a cache of ``capacity`` tokens at per-batch positions) or
    ``attn.quantize.dynamic`` (``op="dynamic"``: a [B, S, H, D] tensor quantized in place of
    shape) op. ``dtype`` is the code type (i8, ui8 — asymmetric only — or f8E4M3FN); asymmetric
    schemes get a ``zeros`` operand of the scales' shape. ``hadamard=True`` rotates each head's row
    by the Walsh–Hadamard matrix before quantizing it (the inputs of an ``attention(...,
    hadamard=True)``)."""
    _check_choice("quantize op", op, ("append", "dynamic"))
    _check_choice("src_dtype", src_dtype, SRC_DTYPES)
    _check_choice("dtype", dtype, CODE_DTYPES)
    _check_choice("scale_dtype", scale_dtype, SCALE_DTYPES)
    _check_target_name(target, name)
    _check_bool("symmetric", symmetric)
    _check_bool("hadamard", hadamard)
    _check_granularity("granularity", granularity)
    B, S, C = (_check_dim(n, v) for n, v in (("batch", batch), ("tokens", tokens),
                                             ("capacity", capacity)))
    H, D = _check_dim("heads", heads), _check_dim("head_dim", head_dim)
    if H is None or D is None:
        raise ValueError("heads and head_dim must be static")
    src_ty = _memref([B, S, H, D], src_dtype)
    rows = C if op == "append" else S
    dst_ty = _memref([B, rows, H, D], dtype)
    s_shape = scale_shape(granularity, [B, rows, H, D])
    s_ty, z_ty = _memref(s_shape, scale_dtype), _memref(s_shape, dtype)
    quant = _quant_attr(dtype, granularity, symmetric, scale_dtype)
    attrs = [f"quant = {quant}"] + (["hadamard"] if hadamard else []) + \
        ([f"target = #attn.target<{target}>"] if target else [])
    args = [("src", src_ty)] + ([("pos", _memref([B], "i32"))] if op == "append" else [])
    args += [("dst", dst_ty), ("scales", s_ty)] + ([] if symmetric else [("zeros", z_ty)])
    signature = ", ".join(f"%{a}: {t}" for a, t in args)
    body = f"  attn.quantize.{op} ins(%src : {src_ty})"
    if op == "append":
        body += f" positions(%pos : {_memref([B], 'i32')})"
    body += f"\n      outs(%dst, %scales : {dst_ty}, {s_ty})"
    if not symmetric:
        body += f" zeros(%zeros : {z_ty})"
    body += "\n      {" + ", ".join(attrs) + "}"
    return Spec("\n".join([f"func.func @{name}({signature}) {{", body, "  return", "}", ""]), name)


def _quant_attr(dtype, granularity, symmetric, scale_dtype):
    """The `#attn.quant<...>` of a quantize op's scheme."""
    return (f"#attn.quant<{dtype}, {granularity.strip()}" + ("" if symmetric else ", asymmetric")
            + ("" if scale_dtype == "f32" else f", scale = {scale_dtype}") + ">")


def quantize_paged(*, tokens: Dim, num_pages: Dim, page_size: int, heads: int, head_dim: int,
                   src_dtype: str = "bf16", dtype: str = "i8",
                   granularity: str = "per_token_head", symmetric: bool = True,
                   scale_dtype: str = "f32", slot_dtype: str = "i64", hadamard: bool = False,
                   target: Optional[str] = None, name: str = "quantize_paged") -> Spec:
    """A spec with one ``attn.quantize.append_paged``: ``tokens`` new rows [T, H, D] written
    into a pool of ``num_pages`` pages [num_pages, page_size, H, D] at the slots of a slot
    mapping [T] (``slot_dtype`` i64 as vLLM's ``slot_mapping``, or i32; slot = page · P +
    offset, a slot outside the pool skips its row), with scales stored per page. The other
    keywords are ``quantize``'s."""
    _check_choice("src_dtype", src_dtype, SRC_DTYPES)
    _check_choice("dtype", dtype, CODE_DTYPES)
    _check_choice("scale_dtype", scale_dtype, SCALE_DTYPES)
    _check_choice("slot_dtype", slot_dtype, ("i64", "i32"))
    _check_target_name(target, name)
    _check_bool("symmetric", symmetric)
    _check_bool("hadamard", hadamard)
    _check_granularity("granularity", granularity)
    page = _check_size("page_size", page_size)
    if page > 256 or page & (page - 1):
        raise ValueError(f"page_size must be a power of two in [1, 256], not {page_size!r}")
    T, N = _check_dim("tokens", tokens), _check_dim("num_pages", num_pages)
    H, D = _check_size("heads", heads), _check_size("head_dim", head_dim)
    src_ty, map_ty = _memref([T, H, D], src_dtype), _memref([T], slot_dtype)
    dst_ty = _memref([N, page, H, D], dtype)
    s_shape = scale_shape(granularity, [N, page, H, D])
    s_ty, z_ty = _memref(s_shape, scale_dtype), _memref(s_shape, dtype)
    quant = _quant_attr(dtype, granularity, symmetric, scale_dtype)
    attrs = [f"page_size = {page}", f"quant = {quant}"] + (["hadamard"] if hadamard else []) + \
        ([f"target = #attn.target<{target}>"] if target else [])
    args = [("src", src_ty), ("slots", map_ty), ("dst", dst_ty), ("scales", s_ty)]
    args += [] if symmetric else [("zeros", z_ty)]
    signature = ", ".join(f"%{a}: {t}" for a, t in args)
    body = (f"  attn.quantize.append_paged ins(%src : {src_ty}) slot_mapping(%slots : {map_ty})"
            f"\n      outs(%dst, %scales : {dst_ty}, {s_ty})")
    if not symmetric:
        body += f" zeros(%zeros : {z_ty})"
    body += "\n      {" + ", ".join(attrs) + "}"
    return Spec("\n".join([f"func.func @{name}({signature}) {{", body, "  return", "}", ""]), name)


def _check_rope(rope_dim) -> int:
    if isinstance(rope_dim, bool) or not isinstance(rope_dim, int) or not 0 <= rope_dim <= MAX_EXTENT:
        raise ValueError(f"rope_dim must be a non-negative int, not {rope_dim!r}")
    return rope_dim


def mla_decode(*, batch: Dim, sq: Dim, heads: int, kv_len: Dim, sparse: bool = True,
               topk: Dim = None, fp8: bool = True, head_dim_v: int = 512, rope_dim: int = 64,
               quant_tile: int = 128, causal: bool = False, seq_lens: bool = False,
               softmax_scale: Optional[float] = None, crossover: Optional[bool] = None,
               target: Optional[str] = "sm_90a", name: str = "mla") -> Spec:
    """A spec with one ``attn.mla_decode``: q [B, Sq, heads, Dv + rope] bf16 over a cache of
    ``kv_len`` tokens per batch element — FP8 (``fp8``: [B, T, Dv + 4·Dv/tile + 2·rope] i8 bytes)
    or bf16 [B, T, Dk] — ``sparse`` with ``topk`` indices per query token (None: known at launch),
    else dense. ``crossover``
    None leaves it to attn-select-schedule (on when the cache is FP8 and heads is a multiple of
    128)."""
    _check_target_name(target, name)
    for flag, value in (("sparse", sparse), ("fp8", fp8), ("causal", causal),
                        ("seq_lens", seq_lens)):
        _check_bool(flag, value)
    if crossover is not None:
        _check_bool("crossover", crossover)
    heads, head_dim_v, quant_tile = (_check_size(n, v) for n, v in (
        ("heads", heads), ("head_dim_v", head_dim_v), ("quant_tile", quant_tile)))
    _check_rope(rope_dim)
    if softmax_scale is not None and (isinstance(softmax_scale, bool) or
                                      not isinstance(softmax_scale, (int, float)) or
                                      not 0 < softmax_scale < float("inf")):
        raise ValueError(f"softmax_scale must be None or a positive finite number, "
                         f"not {softmax_scale!r}")
    B, S, T = (_check_dim(n, v) for n, v in (("batch", batch), ("sq", sq), ("kv_len", kv_len)))
    K = _check_dim("topk", topk)
    dk = head_dim_v + rope_dim
    q_ty = _memref([B, S, heads, dk], "bf16")
    bytes_ = head_dim_v + 4 * (head_dim_v // quant_tile) + 2 * rope_dim
    kv_ty = _memref([B, T, bytes_], "i8") if fp8 else _memref([B, T, dk], "bf16")
    o_ty = _memref([B, S, heads, head_dim_v], "bf16")
    args = [("q", q_ty), ("kv", kv_ty)]
    if sparse:
        args.append(("idx", _memref([B, S, K], "i32")))
    if seq_lens:
        args.append(("lens", _memref([B], "i32")))
    args.append(("o", o_ty))
    attrs = [f"head_dim_v = {head_dim_v} : i64", f"rope_dim = {rope_dim} : i64"]
    if fp8:
        attrs.append(f"kv_quant = #attn.quant<f8E4M3FN, per_block<1 x {quant_tile}>>")
    if causal:
        attrs.append("causal")
    if softmax_scale is not None:
        attrs.append(f"softmax_scale = {float(softmax_scale)!r} : f32")
    if target:
        attrs.append(f"target = #attn.target<{target}>")
    if crossover is not None:
        cluster = "[2, 1, 1]" if crossover else "[1, 1, 1]"
        attrs.append(f"schedule = #attn.schedule<cluster = {cluster}, "
                     f"crossover = {'true' if crossover else 'false'}>")
    signature = ", ".join(f"%{a}: {t}" for a, t in args)
    body = f"  attn.mla_decode ins(%q, %kv : {q_ty}, {kv_ty})"
    if sparse:
        body += f"\n      indices(%idx : {_memref([B, S, K], 'i32')})"
    if seq_lens:
        body += f"\n      seq_lens(%lens : {_memref([B], 'i32')})"
    body += f"\n      outs(%o : {o_ty})\n      {{" + ", ".join(attrs) + "}"
    return Spec("\n".join([f"func.func @{name}({signature}) {{", body, "  return", "}", ""]), name)


def mla_quantize(*, batch: Dim, tokens: Dim, capacity: Dim, src_dtype: str = "bf16",
                 head_dim_v: int = 512, rope_dim: int = 64, quant_tile: int = 128,
                 target: Optional[str] = "sm_90a", name: str = "mla_quantize") -> Spec:
    """A spec with one ``attn.quantize.mla_append``: ``tokens`` new latent tokens [B, S, Dk] per
    batch element written at per-batch positions into the FP8 token cache [B, capacity, bytes]
    that ``mla_decode(fp8=True)`` reads."""
    _check_choice("src_dtype", src_dtype, SRC_DTYPES)
    _check_target_name(target, name)
    head_dim_v, quant_tile = (_check_size(n, v) for n, v in (("head_dim_v", head_dim_v),
                                                             ("quant_tile", quant_tile)))
    _check_rope(rope_dim)
    B, S, C = (_check_dim(n, v) for n, v in (("batch", batch), ("tokens", tokens),
                                             ("capacity", capacity)))
    dk = head_dim_v + rope_dim
    bytes_ = head_dim_v + 4 * (head_dim_v // quant_tile) + 2 * rope_dim
    src_ty, pos_ty = _memref([B, S, dk], src_dtype), _memref([B], "i32")
    cache_ty = _memref([B, C, bytes_], "i8")
    attrs = [f"head_dim_v = {head_dim_v} : i64", f"rope_dim = {rope_dim} : i64",
             f"kv_quant = #attn.quant<f8E4M3FN, per_block<1 x {quant_tile}>>"]
    if target:
        attrs.append(f"target = #attn.target<{target}>")
    lines = [f"func.func @{name}(%src: {src_ty}, %pos: {pos_ty}, %cache: {cache_ty}) {{",
             f"  attn.quantize.mla_append ins(%src : {src_ty}) positions(%pos : {pos_ty})",
             f"      outs(%cache : {cache_ty}) {{" + ", ".join(attrs) + "}",
             "  return", "}", ""]
    return Spec("\n".join(lines), name)
