"""GPU decode kernels from Python: launch what ``convert-attn-to-nvvm`` generated on torch tensors.

``qattn.build(spec)`` on an ``attn.attention decode`` spec compiles it to PTX plus launch metadata
(docs/GPUDecode.md) and returns a ``GpuDecodeKernel``. Calling it launches the decode kernel (and
the split-KV combine kernel) through the attn runtime's C API (``libattn_rt.so``, which opens
libcuda lazily) on the current torch CUDA stream, reading and writing the tensors' device memory in
place::

    kernel = qattn.build(spec)                 # PTX + launch metadata, cached on disk
    out = kernel(q, k, v, k_scale, v_scale, seq_lens=lens)   # torch CUDA tensors

Every tensor is checked against the metadata before anything is launched — device, dtype, shape
(static extents must match; batch and kv_len may be dynamic), contiguity, 16-byte alignment of the
K/V base — and a mismatch raises ``KernelArgumentError``; runtime failures (no driver, wrong
architecture, launch errors) raise ``GpuError`` with the runtime's message.

``libattn_rt.so`` is found at ``$ATTN_RT_LIBRARY``, else beside attn-opt (``<prefix>/lib``), else
in the source checkout's ``build/lib``, else in the installed package (``qattn/lib``).
"""

from __future__ import annotations

import ctypes
import json
import math
import os
from pathlib import Path

from . import paged
from .compiler import DEFAULT_PASSES, CompileError, QattnError, find_attn_opt
from .compiler import compile as compile_spec
from .kernels import KernelArgumentError
from .launch_abi import GRID_INPUTS, GRID_SYMBOLS, PARAMS

KERNEL_FILE = "kernels.ptx"


class GpuError(QattnError):
    """The attn runtime failed (no driver or device, wrong architecture, load or launch error)."""


def compile_decode(text: str, out_dir: Path, *, passes=DEFAULT_PASSES, target=None, attn_opt=None):
    """attn-opt --emit=ptx into out_dir/kernels.ptx, with its launch metadata beside it."""
    res = compile_spec(text, emit="ptx", passes=passes, target=target, attn_opt=attn_opt,
                       timeout=300)
    if res.launch is None:
        raise CompileError("attn-opt wrote PTX but no launch metadata", stderr=res.stderr,
                           command=res.command)
    ptx = Path(out_dir) / KERNEL_FILE
    ptx.write_text(res.output)
    Path(str(ptx) + ".launch.json").write_text(res.launch)


def runtime_library() -> str:
    env = os.environ.get("ATTN_RT_LIBRARY")
    if env:
        return env
    candidates = []
    try:
        candidates.append(Path(find_attn_opt()).resolve().parent.parent / "lib" / "libattn_rt.so")
    except QattnError:
        pass
    candidates.append(Path(__file__).resolve().parents[2] / "build" / "lib" / "libattn_rt.so")
    candidates.append(Path(__file__).resolve().parent / "lib" / "libattn_rt.so")  # pip install
    for c in candidates:
        if c.is_file():
            return str(c)
    raise GpuError("cannot find libattn_rt.so: set ATTN_RT_LIBRARY or build the project "
                   "(build/lib/libattn_rt.so)")


_RT = None


def _rt():
    global _RT
    if _RT is None:
        lib = ctypes.CDLL(runtime_library())
        vp, u64, i32 = ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int
        for name, args in {"attn_rt_init": [i32, ctypes.POINTER(vp)],
                           "attn_rt_load_module": [vp, ctypes.c_char_p, ctypes.c_size_t, i32,
                                                   ctypes.POINTER(vp)],
                           "attn_rt_get_kernel": [vp, ctypes.c_char_p, ctypes.POINTER(vp)],
                           "attn_rt_launch": [vp, vp, ctypes.POINTER(vp), vp],
                           "attn_rt_sm_count": [vp, ctypes.POINTER(i32)],
                           "attn_rt_tensor_map_encode": [vp, vp, i32, ctypes.c_uint,
                                                         ctypes.POINTER(u64), ctypes.POINTER(u64),
                                                         ctypes.POINTER(ctypes.c_uint),
                                                         ctypes.c_uint, u64]}.items():
            getattr(lib, name).argtypes = args
            getattr(lib, name).restype = i32
        lib.attn_rt_last_error.restype = ctypes.c_char_p
        lib.attn_rt_status_name.restype = ctypes.c_char_p
        lib.attn_rt_status_name.argtypes = [i32]
        lib.attn_rt_select_split_kv.argtypes = [ctypes.c_int64] * 6
        lib.attn_rt_select_split_kv.restype = ctypes.c_int64
        _RT = lib
    return _RT


def _check(status: int, what: str):
    if status != 0:
        rt = _rt()
        raise GpuError(f"{what}: {rt.attn_rt_status_name(status).decode()}: "
                       f"{rt.attn_rt_last_error().decode()}")


class _LaunchConfig(ctypes.Structure):
    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3),
                ("cluster", ctypes.c_uint * 3), ("smem_bytes", ctypes.c_uint),
                ("programmatic", ctypes.c_uint)]


def select_split_kv(ctas: int, kv_len: int, tile_n: int, sm_count: int, *, q_len: int = 1,
                    window_left: int = -1) -> int:
    """The split rule of attn-select-schedule (ScheduleHeuristics.cpp selectSplitKv, compiled
    into the runtime library); with a left window the splits share the window_left + q_len keys
    that reach the last query (splitKvKeys)."""
    return int(_rt().attn_rt_select_split_kv(ctas, kv_len, q_len, window_left, tile_n, sm_count))


_TORCH_KV = {"i8": ("int8", "uint8"), "ui8": ("uint8",), "f8E4M3FN": ("float8_e4m3fn", "uint8"),
             "bf16": ("bfloat16",)}


def load_module(ptx: str, arch: int, names):
    """(context, module, {name: kernel handle}, SM count) of PTX loaded through the runtime."""
    rt = _rt()
    ctx = ctypes.c_void_p()
    _check(rt.attn_rt_init(0, ctypes.byref(ctx)), "initializing the GPU")
    mod = ctypes.c_void_p()
    image = ptx.encode() + b"\0"
    _check(rt.attn_rt_load_module(ctx, image, len(image), int(arch), ctypes.byref(mod)),
           "loading the kernel")
    handles = {}
    for name in names:
        h = ctypes.c_void_p()
        _check(rt.attn_rt_get_kernel(mod, name.encode(), ctypes.byref(h)), name)
        handles[name] = h
    sms = ctypes.c_int()
    _check(rt.attn_rt_sm_count(ctx, ctypes.byref(sms)), "querying the SM count")
    return ctx, mod, handles, sms.value


def resolve_grid(kernel_meta: dict, inputs: dict) -> tuple:
    """The grid of one kernel of the metadata: numbers as they are, each symbol through its formula
    in the launch ABI table (``qattn.launch_abi.GRID_SYMBOLS``) over ``inputs`` (the table's
    ``GRID_INPUTS``: batch, num_splits, groups, rows, ...). Raises GpuError for a symbol outside
    the table, an input a formula needs and ``inputs`` lacks, or an extent outside 1..2^31-1 (x) /
    1..65535 (y, z)."""
    name = kernel_meta["name"]

    def value(expr, symbol):
        if isinstance(expr, int):
            return expr
        if isinstance(expr, str):
            if expr in GRID_INPUTS:
                if expr not in inputs:
                    raise GpuError(f"{name}: grid symbol {symbol!r} needs the launch input "
                                   f"{expr!r}, which this launcher does not give")
                return int(inputs[expr])
            return value(GRID_SYMBOLS[expr][0], symbol)
        op, *args = expr
        vals = [value(a, symbol) for a in args]
        if op == "ceil_div":
            return -(-vals[0] // vals[1])
        return math.prod(vals) if op == "mul" else min(vals)

    grid = []
    for d, x in enumerate(kernel_meta["grid"]):
        if isinstance(x, str):
            if x not in GRID_SYMBOLS:
                raise GpuError(f"{name}: unknown grid symbol {x!r} (not in the launch ABI table, "
                               "qattn.launch_abi)")
            x = value(GRID_SYMBOLS[x][0], x)
        hi = 2 ** 31 - 1 if d == 0 else 65535
        if not 1 <= int(x) <= hi:
            raise GpuError(f"{name}: grid extent {d} ({kernel_meta['grid'][d]!r}) = {x} is "
                           f"outside 1..{hi}")
        grid.append(int(x))
    return tuple(grid)


def kernel_args(kernel_meta: dict, values: dict, keep: list):
    """The argument array of one kernel of the metadata, bound by the launch ABI table
    (``qattn.launch_abi.PARAMS``): ``values`` maps each parameter the launcher supplies to an int —
    a device address (``pointer``, ``workspace``), the host address of a tensor map's descriptor
    (``tensor_map``), or the value of an ``int32`` extent (refused outside 0..2^31-1). Storage the
    launch reads is appended to ``keep``. Raises GpuError for a name outside the table or one the
    launcher does not supply."""
    name = kernel_meta["name"]
    args = []
    for param in kernel_meta["params"]:
        if param not in PARAMS:
            raise GpuError(f"{name}: parameter {param!r} is not in the launch ABI table "
                           "(qattn.launch_abi)")
        kind, _, doc = PARAMS[param]
        if param not in values:
            raise GpuError(f"{name}: parameter {param!r} ({doc}) is not supplied by this launcher")
        if kind == "tensor_map":  # passed by value: the descriptor's address
            args.append(int(values[param]))
            continue
        val = int32_arg(name, param, values[param]) if kind == "int32" \
            else ctypes.c_uint64(int(values[param]))
        keep.append(val)
        args.append(ctypes.addressof(val))
    return (ctypes.c_void_p * len(args))(*args)


def launch_kernel(handle, kernel_meta: dict, grid, values: dict, stream_handle, keep: list,
                  cluster=None):
    """Launches one kernel of the metadata on ``grid`` (``resolve_grid``) with the parameter
    ``values`` of ``kernel_args``; ``cluster`` overrides the metadata's cluster dimensions."""
    rt = _rt()
    argv = kernel_args(kernel_meta, values, keep)
    cfg = _LaunchConfig((ctypes.c_uint * 3)(*grid), (ctypes.c_uint * 3)(*kernel_meta["block"]),
                        (ctypes.c_uint * 3)(*(cluster or kernel_meta["cluster"])),
                        int(kernel_meta["smem_bytes"]),
                        int(bool(kernel_meta.get("programmatic", False))))
    _check(rt.attn_rt_launch(handle, ctypes.byref(cfg), argv, ctypes.c_void_p(stream_handle)),
           f"launching {kernel_meta['name']}")


def int32_arg(where: str, name: str, value: int) -> ctypes.c_int32:
    """A launch scalar the kernels take as int32: refused, not wrapped, outside [0, 2^31 - 1]."""
    value = int(value)
    if not 0 <= value < 2 ** 31:
        raise KernelArgumentError(f"{where}: {name} = {value} is outside the kernel's int32 "
                                  "range [0, 2**31 - 1]")
    return ctypes.c_int32(value)


def expect_tensor(where: str, t, torch, dtypes, shape):
    """Raises KernelArgumentError unless ``t`` is a contiguous, 16-byte aligned torch CUDA tensor
    of one of ``dtypes`` (names without ``torch.``) and exactly ``shape``."""
    if not isinstance(t, torch.Tensor) or not t.is_cuda:
        raise KernelArgumentError(f"{where} must be a torch CUDA tensor")
    if str(t.dtype).replace("torch.", "") not in dtypes:
        raise KernelArgumentError(f"{where} has dtype {t.dtype}, expected {' or '.join(dtypes)}")
    if tuple(t.shape) != tuple(shape):
        raise KernelArgumentError(f"{where} has shape {tuple(t.shape)}, expected {tuple(shape)}")
    if not t.is_contiguous():
        raise KernelArgumentError(f"{where} must be contiguous")
    if t.data_ptr() % 16:
        raise KernelArgumentError(f"{where} must be 16-byte aligned")


def load_gpu_kernel(d):
    """The kernel object for the PTX + launch metadata in directory ``d``, by problem kind."""
    meta = json.loads((Path(d) / (KERNEL_FILE + ".launch.json")).read_text())
    kind = meta.get("problem", {}).get("kind", "")
    if kind == "quantize_mla":
        from .gpu_mla import GpuMLAQuantizeKernel
        return GpuMLAQuantizeKernel.from_dir(d)
    if kind.startswith("quantize"):
        from .gpu_quantize import GpuQuantizeKernel
        return GpuQuantizeKernel.from_dir(d)
    if kind == "mla_decode":
        from .gpu_mla import GpuMLAKernel
        return GpuMLAKernel.from_dir(d)
    return GpuDecodeKernel.from_dir(d)


class LaunchFiles:
    """``from_dir`` / ``from_files`` of the GPU kernel classes: PTX plus the launch metadata
    attn-opt writes beside it (``<ptx>.launch.json``)."""

    @classmethod
    def from_dir(cls, d):
        return cls.from_files(Path(d) / KERNEL_FILE)

    @classmethod
    def from_files(cls, ptx_path, meta_path=None):
        ptx_path = Path(ptx_path)
        meta_path = Path(meta_path) if meta_path else Path(str(ptx_path) + ".launch.json")
        return cls(ptx_path.read_text(), json.loads(meta_path.read_text()), str(ptx_path))

    def _take(self, ptx: str, meta: dict, path: str, accepts, what: str) -> str:
        """Keeps the PTX and metadata of a kernel class whose problem kinds ``accepts`` takes;
        raises GpuError naming ``what`` otherwise. Returns the kind."""
        kind = meta.get("problem", {}).get("kind", "")
        if meta.get("format") != "attn-launch-v1" or not accepts(kind):
            raise GpuError(f"{path}: not {what} launch metadata (format {meta.get('format')!r}, "
                           f"kind {kind!r})")
        self.ptx, self.meta, self.path = ptx, meta, path
        self.problem, self.schedule = meta["problem"], meta["schedule"]
        self._loaded = None
        return kind


class GpuDecodeKernel(LaunchFiles):
    """One compiled decode op: PTX + launch metadata; loaded on the GPU at the first call."""

    def __init__(self, ptx: str, meta: dict, path: str = ""):
        kind = self._take(ptx, meta, path, lambda k: k in ("decode", "prefill"), "decode / prefill")
        self.prefill = kind == "prefill"
        # `hadamard` specs take Q, K and V rotated before quantization (qattn.quant.hadamard) and
        # return the unrotated output: the caller rotates, the kernel cannot tell.
        self.hadamard = bool(meta["problem"].get("hadamard", False))
        # The sliding window (left, right) the kernel was built with; (-1, -1): none.
        self.window = tuple(int(x) for x in meta["problem"].get("window", (-1, -1)))
        decodes = [k for k in meta["kernels"] if k["role"] == "decode"]
        self.kernels = {"decode": decodes[0]} if decodes else {}
        # The wide-batch companion (two CTAs per SM), launched when one split's CTAs exceed the
        # SMs (docs/GPUDecode.md).
        self.wide = next((k for k in decodes[1:] if int(k.get("ctas_per_sm", 1)) == 2), None)
        # Combine kernels by the fewest splits each is for: a launch takes the last that fits.
        self.combines = sorted((k for k in meta["kernels"] if k["role"] == "combine"),
                               key=lambda k: int(k.get("min_splits", 2)))

    def __repr__(self) -> str:
        p = self.problem
        return (f"<qattn GpuDecodeKernel {self.kernels['decode']['name']}: q_len {p['q_len']}, "
                f"{p['q_heads']}/{p['kv_heads']} heads, head_dim {p['head_dim']}, {p['kv_dtype']} KV"
                + (f", window {self.window}" if "window" in p else "") + ">")

    def combine_for(self, splits: int) -> dict:
        """The metadata of the combine kernel for ``splits`` (> 1) splits."""
        fits = [k for k in self.combines if int(k.get("min_splits", 2)) <= splits]
        if not fits:
            raise GpuError(f"{self.path}: {splits} splits need a combine kernel, and the metadata "
                           "has none")
        return fits[-1]

    def decode_for(self, splits: int, ctas: int, sms: int) -> dict:
        """The decode kernel for ``splits`` splits of ``ctas`` CTAs each on ``sms`` SMs: the
        wide-batch companion for one split of more CTAs than SMs, when the module has one."""
        if splits == 1 and ctas > sms and self.wide is not None:
            return self.wide
        return self.kernels["decode"]

    def merges_in_cluster(self, splits: int) -> bool:
        """Whether ``splits`` splits merge inside the decode kernel, launched with a cluster of
        them (the metadata's ``cluster_splits``), instead of through a combine kernel;
        ``ATTN_RT_NO_CLUSTER_MERGE=1`` turns it off, as in attn-bench."""
        limit = int(self.kernels["decode"].get("cluster_splits", 0))
        return 1 < splits <= limit and not os.environ.get("ATTN_RT_NO_CLUSTER_MERGE")

    def _all(self) -> list:
        return list(self.kernels.values()) + ([self.wide] if self.wide else []) + self.combines

    def _load(self):
        if self._loaded is None:
            ctx, mod, by_name, sms = load_module(self.ptx, self.meta["arch"],
                                                 [k["name"] for k in self._all()])
            handles = {k["name"]: by_name[k["name"]] for k in self._all()}
            self._loaded = (ctx, mod, handles, sms)
        return self._loaded

    # -------------------------------------------------------------------------------------------
    def _expect(self, name, t, torch, dtypes, shape):
        expect_tensor(f"{self.kernels['decode']['name']}: {name}", t, torch, dtypes, shape)

    def _paged(self, b, k, block_table, torch):
        """A paged kernel's cache: checks ``block_table`` (int32 [B, max_blocks]; any max_blocks
        >= 1 when the kernel's is dynamic, -1 in its metadata) and the pool ``k`` ([num_pages, P,
        Hkv, D]); returns (kv_len = max_blocks · P, rows of the pool as the scales' leading
        extents, the table's address). (0, None, 0) for a contiguous kernel."""
        pg = self.meta.get("paged")
        if pg is None:
            if block_table is not None:
                raise KernelArgumentError("block_table given, but the kernel reads a contiguous "
                                          "cache (compile the spec with page_size=)")
            return 0, None, 0
        page, blocks, pages = int(pg["page_size"]), int(pg["max_blocks"]), int(pg["num_pages"])
        if block_table is None:
            raise KernelArgumentError(f"block_table (int32 [B, {blocks if blocks > 0 else 'max_blocks'}]) "
                                      f"is required: the kernel reads a paged cache (page_size {page})")
        if k.dim() != 4 or int(k.shape[1]) != page or (pages > 0 and int(k.shape[0]) != pages):
            raise KernelArgumentError(f"k and v must be pools of pages [{pages if pages > 0 else 'num_pages'}, "
                                      f"{page}, Hkv, D], got {list(k.shape)}")
        if int(k.shape[0]) * page >= 2 ** 31:  # num_slots, the kernel's clamp of table entries
            raise KernelArgumentError(f"a pool of {int(k.shape[0])} pages of {page} tokens has "
                                      f"2^31 rows or more")
        if blocks < 0:  # a dynamic max_blocks: the table's own (the kernel's kv_len / P)
            if block_table.dim() != 2 or int(block_table.shape[1]) < 1:
                raise KernelArgumentError(f"block_table must be int32 [B, max_blocks] with "
                                          f"max_blocks >= 1, got {list(block_table.shape)}")
            blocks = int(block_table.shape[1])
            if blocks * page >= 2 ** 31:
                raise KernelArgumentError(f"max_blocks {blocks} · page_size {page} must be below 2^31")
        self._expect("block_table", block_table, torch, ("int32",), (b, blocks))
        return blocks * page, (int(k.shape[0]), page), block_table.data_ptr()

    def _ragged(self, q, cu_seqlens_q, max_seqlen_q, torch):
        """A ragged prefill's batch (the spec's ``cu_seqlens_q``): q [1, T, Hq, D] packs the
        new tokens of every sequence; ``cu_seqlens_q`` int32 [B + 1] holds each sequence's first
        packed row and the end, ``max_seqlen_q`` at least the most of any sequence (a host int,
        FlashAttention's ``max_seqlen_q``: the kernel reads the offsets on the device, so the
        launch needs no synchronization; a sequence with more rows is cut to it). Returns (B, T,
        max_seqlen_q); (q's B, its Sq, None) without a ragged spec."""
        if not self.problem.get("ragged", False):
            if cu_seqlens_q is not None or max_seqlen_q is not None:
                raise KernelArgumentError("cu_seqlens_q / max_seqlen_q given, but the spec has "
                                          "no ragged batch (compile it with cu_seqlens_q)")
            return int(q.shape[0]), int(q.shape[1]), None
        if cu_seqlens_q is None or max_seqlen_q is None:
            raise KernelArgumentError("cu_seqlens_q (int32 [B + 1]) and max_seqlen_q are "
                                      "required: the spec has a ragged batch")
        if int(q.shape[0]) != 1:
            raise KernelArgumentError(f"a ragged batch packs its queries as [1, T, Hq, D], got "
                                      f"{list(q.shape)}")
        if cu_seqlens_q.dim() != 1 or int(cu_seqlens_q.shape[0]) < 2:
            raise KernelArgumentError(f"cu_seqlens_q must be int32 [B + 1] with B >= 1, got "
                                      f"{list(cu_seqlens_q.shape)}")
        b, total = int(cu_seqlens_q.shape[0]) - 1, int(q.shape[1])
        self._expect("cu_seqlens_q", cu_seqlens_q, torch, ("int32",), (b + 1,))
        if isinstance(max_seqlen_q, bool) or not isinstance(max_seqlen_q, int) or \
                not 1 <= max_seqlen_q < 2 ** 31:
            raise KernelArgumentError(f"max_seqlen_q must be an int in 1..2^31-1, got "
                                      f"{max_seqlen_q!r}")
        if not 1 <= total < 2 ** 31:
            raise KernelArgumentError(f"q must hold 1..2^31-1 packed rows, got {total}")
        return b, total, max_seqlen_q

    def _check_pages(self, block_table, seq_lens, pool, torch, ragged=None):
        """The debug check of a paged or ragged launch (`ragged`: (cu_seqlens_q, T,
        max_seqlen_q)): raises BlockTableError (a sync)."""
        with torch.cuda.device((block_table if pool is not None else ragged[0]).device):
            if torch.cuda.is_current_stream_capturing():
                raise GpuError("check_pages reads the block-table check on the host (a "
                               "synchronization), which a CUDA graph capture cannot do: capture "
                               "without it, or use a torch_ops.DecodePlan with check_pages")
            state = None
            if pool is not None:
                state = paged.check_block_table(block_table, seq_lens, pool[1], pool[0])
            if ragged is not None:
                state = paged.check_cu_seqlens(*ragged, state=state)
        errors = paged.PageErrors.from_state(state.tolist())
        if errors:
            raise paged.BlockTableError(errors)

    def __call__(self, q, k, v, k_scale=None, v_scale=None, *, q_scale=None, k_zero=None,
                 v_zero=None, seq_lens=None, alibi_slopes=None, out=None, splits="auto",
                 stream=None, block_table=None, sinks=None, lse=None, check_pages=None,
                 cu_seqlens_q=None, max_seqlen_q=None):
        """Decode attention; returns ``out`` (allocated when not given), bf16 [B, Sq, Hq, D].
        Specs with int8 queries take q as int8 and ``q_scale`` float32 [B, Sq, Hq]; asymmetric
        caches take ``k_zero`` / ``v_zero`` of the scales' shape and the codes' dtype. A paged
        kernel takes pools of pages k, v [num_pages, P, Hkv, D], scales per page ([num_pages, P,
        Hkv] for per_token_head) and ``block_table`` int32 [B, max_blocks]. A spec with sinks
        takes ``sinks`` float32 [Hq]; a spec with an lse output writes it into ``lse`` float32
        [B, Sq, Hq] (allocated when not given) and returns ``(out, lse)``.

        ``check_pages`` (a paged or ragged kernel; debug): before the launch, checks the used
        block-table entries against the pool and ``seq_lens`` against the table on the device
        (``qattn.paged.check_block_table``), and a ragged batch's ``cu_seqlens_q`` against q's T
        and ``max_seqlen_q`` (``qattn.paged.check_cu_seqlens``), reads the result (a
        synchronization, so refused under CUDA graph capture) and raises
        ``qattn.paged.BlockTableError`` naming the first offender, launching nothing. None: when
        ``QATTN_CHECK_PAGES`` is set and not "0".

        A ragged prefill (a spec with ``cu_seqlens_q``) takes q and out as [1, T, Hq, D], the
        rows of every sequence packed, ``cu_seqlens_q`` int32 [B + 1] and ``max_seqlen_q``
        (``_ragged``); its query scales follow q's packed shape."""
        import torch

        p, s = self.problem, self.schedule
        if q.dim() != 4 or k.dim() != 4:
            raise KernelArgumentError("q and k must be 4-D: [B, Sq, Hq, D] and [B, Skv, Hkv, D]")
        b, total, max_q = self._ragged(q, cu_seqlens_q, max_seqlen_q, torch)
        skv = int(k.shape[1])
        paged_len, pool, table_ptr = self._paged(b, k, block_table, torch)
        if pool is not None:
            skv = paged_len
        for key, val in (("batch", b), ("kv_len", skv)):
            if p[key] >= 0 and p[key] != val:
                raise KernelArgumentError(f"the kernel was compiled for {key} {p[key]}, got {val}")
        if not 1 <= b <= 65535 or skv < 1 or skv >= 2 ** 31:
            raise KernelArgumentError(f"batch must be in 1..65535 and kv_len in 1..2^31-1 "
                                      f"(got {b}, {skv})")
        sq, hq, hkv, d = p["q_len"], p["q_heads"], p["kv_heads"], p["head_dim"]
        if sq < 0:  # a prefill kernel compiled with a dynamic query length
            sq = max_q or int(q.shape[1])
            if not 1 <= sq < 2 ** 31:
                raise KernelArgumentError(f"q_len must be in 1..2^31-1, got {sq}")
        # q's and out's leading extents: [B, Sq], or a ragged batch's [1, T]
        qb, qs = (1, total) if max_q else (b, sq)
        q_dtype = p.get("q_dtype", "bf16")
        q_quantized = q_dtype != "bf16"  # int8 or e4m3 queries with q_scale
        self._expect("q", q, torch, {"bf16": ("bfloat16",), "i8": ("int8",),
                                     "f8E4M3FN": ("float8_e4m3fn", "uint8")}[q_dtype],
                     (qb, qs, hq, d))
        kvt = _TORCH_KV[p["kv_dtype"]]
        rows = pool or (b, skv)  # leading extents of K/V and their per-token scales
        self._expect("k", k, torch, kvt, (*rows, hkv, d))
        self._expect("v", v, torch, kvt, (*rows, hkv, d))
        scale_shapes = {"per_token_head": (*rows, hkv), "per_token": rows, "per_head": (hkv,),
                        "per_tensor": (1,)}
        blocks = lambda n, key: -(-n // int(p.get(key, 1)))  # per_block<r x D>: ceil(n / r)
        ptrs = {"block_table": table_ptr}
        for name, t, g in (("k_scale", k_scale, p["k_quant"]), ("v_scale", v_scale, p["v_quant"])):
            scale_shapes["per_block"] = (rows[0], blocks(rows[1], name[0] + "_block_rows"), hkv, 1)
            if g == "none":
                if t is not None:
                    raise KernelArgumentError(f"{name} given for a {p['kv_dtype']} cache, which has none")
                ptrs[name] = 0
            else:
                if t is None:
                    raise KernelArgumentError(f"{name} is required ({g} scales)")
                self._expect(name, t, torch, ("float32",), scale_shapes[g])
                ptrs[name] = t.data_ptr()
        ptrs["k_zero"] = ptrs["v_zero"] = 0
        if p.get("zero_points", False):
            for name, t, g in (("k_zero", k_zero, p["k_quant"]), ("v_zero", v_zero, p["v_quant"])):
                if t is None:
                    raise KernelArgumentError(f"{name} is required: the cache is asymmetric")
                self._expect(name, t, torch, kvt[:1], scale_shapes[g])
                ptrs[name] = t.data_ptr()
        elif k_zero is not None or v_zero is not None:
            raise KernelArgumentError("k_zero / v_zero given, but the cache is symmetric")
        ptrs["q_scale"] = 0
        if q_quantized:
            q_shape = {"per_block": (qb, blocks(qs, "q_block_rows"), hq, 1),
                       "per_token": (qb, qs)}.get(p.get("q_quant"), (qb, qs, hq))
            if q_scale is None:
                raise KernelArgumentError(f"q_scale ({list(q_shape)} float32) is required: the "
                                          f"spec has {q_dtype} queries")
            self._expect("q_scale", q_scale, torch, ("float32",), q_shape)
            ptrs["q_scale"] = q_scale.data_ptr()
        elif q_scale is not None:
            raise KernelArgumentError("q_scale given, but the spec has bf16 queries")
        ptrs["seq_lens"] = ptrs["alibi"] = 0
        if p["seq_lens"]:
            if seq_lens is not None:
                self._expect("seq_lens", seq_lens, torch, ("int32",), (b,))
                ptrs["seq_lens"] = seq_lens.data_ptr()
        elif seq_lens is not None:
            raise KernelArgumentError("seq_lens given, but the spec has no seq_lens operand")
        if p["alibi"]:
            if alibi_slopes is None:
                raise KernelArgumentError("alibi_slopes ([Hq] float32) is required by this spec")
            self._expect("alibi_slopes", alibi_slopes, torch, ("float32",), (hq,))
            ptrs["alibi"] = alibi_slopes.data_ptr()
        elif alibi_slopes is not None:
            raise KernelArgumentError("alibi_slopes given, but the spec has no ALiBi")
        ptrs["sinks"] = ptrs["lse"] = 0
        if p.get("sinks", False):
            if sinks is None:
                raise KernelArgumentError("sinks ([Hq] float32) is required: the spec has "
                                          "attention sinks")
            self._expect("sinks", sinks, torch, ("float32",), (hq,))
            ptrs["sinks"] = sinks.data_ptr()
        elif sinks is not None:
            raise KernelArgumentError("sinks given, but the spec has no attention sinks")
        if p.get("lse", False):
            if lse is None:
                lse = torch.empty((b, sq, hq), dtype=torch.float32, device=q.device)
            self._expect("lse", lse, torch, ("float32",), (b, sq, hq))
            ptrs["lse"] = lse.data_ptr()
        elif lse is not None:
            raise KernelArgumentError("lse given, but the spec has no lse output")
        if out is None:
            out = torch.empty((qb, qs, hq, d), dtype=torch.bfloat16, device=q.device)
        self._expect("out", out, torch, ("bfloat16",), (qb, qs, hq, d))
        try:
            checked = ((pool is not None or max_q is not None)
                       and paged.check_pages_mode(check_pages) is not None)
        except ValueError as e:
            raise KernelArgumentError(str(e)) from e
        if checked:
            self._check_pages(block_table, seq_lens, pool, torch,
                              ragged=(cu_seqlens_q, total, max_q) if max_q else None)

        rt = _rt()
        ctx, _, handles, sms = self._load()
        groups, rows = int(s["groups"]), int(s["rows_per_cta"])
        if self.prefill:  # one CTA per query chunk, one split
            if splits not in ("auto", 0, None, 1):
                raise KernelArgumentError(f"prefill kernels run one split, not {splits}")
            splits = 1
        if splits in ("auto", 0, None):
            splits = int(s["split_kv"]) or select_split_kv(
                b * groups, skv, int(s["tile_n"]), sms, q_len=sq, window_left=self.window[0])
        splits = int(splits)
        if splits < 1:
            raise KernelArgumentError(f"splits must be >= 1 or 'auto', got {splits}")
        in_cluster = self.merges_in_cluster(splits)
        ws = None
        if splits > 1 and not in_cluster:
            ws = torch.empty(b * groups * splits * int(self.meta["workspace_floats_per_split"]),
                             dtype=torch.float32, device=q.device)
        ptrs.update(q=q.data_ptr(), out=out.data_ptr(), workspace=ws.data_ptr() if ws is not None else 0)

        keep = []  # storage that must outlive the launch call
        e = k.element_size()
        # A pool of pages is mapped as one sequence of num_pages · P rows (batch 1).
        map_rows, map_batch = (pool[0] * pool[1], 1) if pool else (skv, b)
        dims = (ctypes.c_uint64 * 4)(d, hkv, map_rows, map_batch)
        strides = (ctypes.c_uint64 * 3)(d * e, hkv * d * e, map_rows * hkv * d * e)
        maps = {}
        for name, t in (("k_map", k), ("v_map", v)):
            tmap = self.meta["tensor_maps"][name[0]]
            box = (ctypes.c_uint * 4)(*tmap["box"])
            raw = ctypes.create_string_buffer(128 + 64)
            addr = (ctypes.addressof(raw) + 63) & ~63
            dtype = 0 if e == 1 else 1  # ATTN_RT_DTYPE_U8 / ATTN_RT_DTYPE_BF16
            _check(rt.attn_rt_tensor_map_encode(ctx, addr, dtype, 4, dims, strides, box,
                                                int(tmap.get("swizzle", 0)),
                                                t.data_ptr()), f"encoding the {name[0].upper()} tensor map")
            keep.append(raw)
            maps[name] = addr
        stream_handle = stream if stream is not None else torch.cuda.current_stream(q.device).cuda_stream
        values = dict(maps, **ptrs, batch=b, kv_len=skv, q_len=sq, num_splits=splits,
                      num_slots=pool[0] * pool[1] if pool else 0, total_q=total,
                      cu_seqlens_q=cu_seqlens_q.data_ptr() if max_q else 0)
        inputs = {"batch": b, "num_splits": splits, "groups": groups, "rows": rows,
                  "q_heads": hq, "kv_heads": hkv, "q_len": sq, "q_chunk": int(s.get("q_chunk", sq)),
                  "sms": sms}

        def launch(kernel, cluster=None):
            launch_kernel(handles[kernel["name"]], kernel, resolve_grid(kernel, inputs), values,
                          stream_handle, keep, cluster)

        with torch.cuda.device(q.device):
            if self.kernels["decode"]["grid"][0] == "persistent_ctas":  # one CTA per SM
                launch(self.kernels["decode"])
            else:
                launch(self.decode_for(splits, groups * b, sms),
                       (splits, 1, 1) if in_cluster else None)
            if splits > 1 and not in_cluster:
                launch(self.combine_for(splits))
        if ws is not None:  # keep the workspace alive until the stream is done with it
            ws.record_stream(torch.cuda.ExternalStream(stream_handle) if stream is not None
                             else torch.cuda.current_stream(q.device))
        return (out, lse) if p.get("lse", False) else out
