"""torch-native attention ops: attn-opt's GPU kernels registered with ``torch.library``.

Importing this module loads the package's torch extension (``qattn/_torch_ops*.so``, built by
``pip install --no-build-isolation ./python`` where torch is importable) which registers, in C++:

* ``attn_opt::decode_plan(str kernel, int device, int batch, int kv_len, int q_len=-1,
  int splits=0, int check_pages=-1) -> int`` — everything shape-dependent, once per batch layout
  (module load on ``cuda:<device>``, kernel handles, split count, grids, split workspace);
  returns a plan handle. ``check_pages`` (1; -1: when ``QATTN_CHECK_PAGES`` is set and not "0")
  makes a paged plan check its block tables on the device before each launch (``DecodePlan``'s
  ``check_pages``);
* ``attn_opt::decode(int plan, Tensor q, Tensor k, Tensor v, Tensor? k_scale, Tensor? v_scale,
  Tensor? q_scale, Tensor? k_zero, Tensor? v_zero, Tensor? seq_lens, Tensor? alibi_slopes,
  Tensor(a!) out, Tensor(b!)? workspace=None, Tensor? block_table=None, Tensor? sinks=None,
  Tensor(c!)? lse=None, Tensor? cu_seqlens_q=None) -> ()`` — the run:
  checks, K/V tensor maps (cached per address pair), launches on torch's current stream; no host
  sync, no allocation, so CUDA graphs capture it. A paged kernel takes pools of pages k, v
  [num_pages, P, Hkv, D], scales per page and ``block_table`` int32 [B, max_blocks]; a spec with
  attention sinks takes ``sinks`` float32 [Hq], one with an lse output writes ``lse`` float32
  [B, Sq, Hq]; a ragged prefill kernel takes q and out packed as [1, T, Hq, D] (any T) and
  ``cu_seqlens_q`` int32 [B + 1], its plan's q_len being the most new tokens of any sequence;
* ``attn_opt::plan_info(int plan) -> int[]`` and ``attn_opt::release_plan(int plan) -> ()``;
* ``attn_opt::page_errors(int plan, bool reset=False) -> int[]`` — a ``check_pages`` plan's
  block-table report (``qattn.paged.PageErrors.from_state`` reads it), copied to the host: a
  synchronization, for debugging;
* ``attn_opt::check_block_table(Tensor block_table, Tensor? seq_lens, int page_size,
  int num_pages, Tensor(a!) state) -> ()`` — that check on its own, on CPU or CUDA tensors
  (csrc/page_check.cpp; ``check_block_table`` below);
* ``attn_opt::quantize_append(str kernel, Tensor src, Tensor positions, Tensor(a!) dst,
  Tensor(b!) scales, Tensor(c!)? zeros=None) -> ()`` — an ``attn.quantize.append`` kernel
  (csrc/append_op.cpp): new rows quantized into the cache at ``positions[b] + i``, on the current
  stream, without host synchronization (``quantize_append`` below wraps it);
* ``attn_opt::quantize_append_paged(str kernel, Tensor src, Tensor slot_mapping, Tensor(a!) dst,
  Tensor(b!) scales, Tensor(c!)? zeros=None) -> ()`` — an ``attn.quantize.append_paged`` kernel:
  rows [T, H, D] into a pool of pages [num_pages, P, H, D] at vLLM's ``slot_mapping`` (slots
  outside the pool skipped on the device), scales per page (``quantize_append_paged`` below).

The extension is also a Python module whose ``run`` is ``decode`` without the dispatcher:
``DecodePlan.run`` calls it eagerly (it defers to ``torch.ops.attn_opt.decode`` under fake
tensors, modes and ``torch.compile``). The fake (meta) implementation of ``decode`` is
registered here, so FakeTensorMode, ``make_fx`` and ``torch.compile`` trace it. Without the
extension (CPU-only installs) the same schemas are defined from Python, so tracing still works;
running then raises ``GpuError`` naming the fix.
Where the package was built without torch (pip's isolated build) but ships the sources
(``qattn/_csrc``), the extension is compiled on first import on a machine with CUDA.

Typical use::

    kernel = qattn.build(spec)                         # or a path to kernels.ptx
    plan = DecodePlan(kernel, device="cuda:1", batch=8, kv_len=4096)
    plan.run(q, k, v, k_scale, v_scale, seq_lens=lens, out=out)   # or torch.ops.attn_opt.decode
"""

from __future__ import annotations

import importlib.util
import os
import warnings
from pathlib import Path

import torch

from . import paged
from ._build_paths import EXTENSION_SOURCES, RUNTIME_SOURCES, cuda_include, json_include
from .gpu import GpuError
from .kernels import KernelArgumentError

NAMESPACE = "attn_opt"
# The schemas, as csrc/torch_ops.cpp registers them (tests compare the two).
SCHEMAS = {
    "decode_plan": "decode_plan(str kernel, int device, int batch, int kv_len, int q_len=-1, "
                   "int splits=0, int check_pages=-1) -> int",
    "page_errors": "page_errors(int plan, bool reset=False) -> int[]",
    "check_block_table": "check_block_table(Tensor block_table, Tensor? seq_lens, int page_size, "
                         "int num_pages, Tensor(a!) state) -> ()",
    "check_cu_seqlens": "check_cu_seqlens(Tensor cu_seqlens_q, int total_q, int max_seqlen_q, "
                        "Tensor(a!) state) -> ()",
    "plan_info": "plan_info(int plan) -> int[]",
    "release_plan": "release_plan(int plan) -> ()",
    "decode": "decode(int plan, Tensor q, Tensor k, Tensor v, Tensor? k_scale, Tensor? v_scale, "
              "Tensor? q_scale, Tensor? k_zero, Tensor? v_zero, Tensor? seq_lens, "
              "Tensor? alibi_slopes, Tensor(a!) out, Tensor(b!)? workspace=None, "
              "Tensor? block_table=None, Tensor? sinks=None, Tensor(c!)? lse=None, "
              "Tensor? cu_seqlens_q=None) -> ()",
    "quantize_append": "quantize_append(str kernel, Tensor src, Tensor positions, Tensor(a!) dst, "
                       "Tensor(b!) scales, Tensor(c!)? zeros=None) -> ()",
    "quantize_append_paged": "quantize_append_paged(str kernel, Tensor src, Tensor slot_mapping, "
                             "Tensor(a!) dst, Tensor(b!) scales, Tensor(c!)? zeros=None) -> ()",
}
# Ops with a fake (meta) implementation: the fallback library gives them CPU / CUDA kernels only.
_TENSOR_OPS = ("decode", "quantize_append", "quantize_append_paged", "check_block_table",
               "check_cu_seqlens")


def extension_path():
    """The built torch extension beside this package, or None."""
    found = sorted(Path(__file__).resolve().parent.glob("_torch_ops*.so"))
    return found[0] if found else None


_FALLBACK_LIB = None


def _no_extension(*args, **kwargs):
    raise GpuError("the attn_opt torch extension is not built: install the package where torch "
                   "and cuda.h are present, with `pip install --no-build-isolation ./python`")


def _import_extension(path):
    """Loads the built extension as a Python module (its static initializers register the ops)."""
    spec = importlib.util.spec_from_file_location(f"{__package__}._torch_ops", str(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _jit_build():
    """Compiles the shipped sources (qattn/_csrc) with torch.utils.cpp_extension.load and loads
    them as a module; None (with a warning) when that cannot be done here."""
    src = Path(__file__).resolve().parent / "_csrc"
    cuda = cuda_include()
    json = json_include()
    if (not (src / "torch_ops.cpp").is_file() or cuda is None or json is None
            or torch.version.cuda is None):
        return None
    from torch.utils.cpp_extension import load
    try:
        return load(name="qattn_attn_opt_ops", is_python_module=True,
             sources=[str(src / n) for n in (*EXTENSION_SOURCES,
                                             *(Path(f).name for f in RUNTIME_SOURCES))],
             extra_include_paths=[str(src / "include"), cuda, json],
             extra_cflags=["-O2", "-DATTN_OPT_C10_CUDA=1"], extra_ldflags=["-ldl", "-lc10_cuda"])
    except Exception as e:  # no compiler, no headers: the schemas-only fallback below
        warnings.warn(f"qattn.torch_ops: compiling the attn_opt extension failed ({e}); the ops "
                      "are defined without a GPU implementation")
        return None


def _load():
    """Loads the extension (its module) or defines the schemas from Python (None). Without a
    built extension, it is compiled from the shipped sources on first use where CUDA is available
    (QATTN_TORCH_OPS_JIT=0: never, =1: even without a visible GPU)."""
    global _FALLBACK_LIB
    path = extension_path()
    if path is not None:
        return _import_extension(path)
    jit = os.environ.get("QATTN_TORCH_OPS_JIT", "auto")
    module = _jit_build() if jit == "1" or (jit == "auto" and torch.cuda.is_available()) else None
    if module is not None:
        return module
    if _FALLBACK_LIB is None:
        _FALLBACK_LIB = torch.library.Library(NAMESPACE, "DEF")
        for name, schema in SCHEMAS.items():
            _FALLBACK_LIB.define(schema)
            if name not in _TENSOR_OPS:
                _FALLBACK_LIB.impl(name, _no_extension, "CompositeExplicitAutograd")
        for name in _TENSOR_OPS:
            for key in ("CPU", "CUDA"):
                _FALLBACK_LIB.impl(name, _no_extension, key)
    return None


_EXTENSION = _load()
HAS_EXTENSION = _EXTENSION is not None
ops = getattr(torch.ops, NAMESPACE)
# The run without the dispatcher (None: no extension); NotImplemented where it must go through it.
_run_direct = getattr(_EXTENSION, "run", None)
_decode = ops.decode.default
_is_compiling = torch.compiler.is_compiling


@torch.library.register_fake(f"{NAMESPACE}::decode")
def _decode_fake(plan, q, k, v, k_scale, v_scale, q_scale, k_zero, v_zero, seq_lens,
                 alibi_slopes, out, workspace=None, block_table=None, sinks=None, lse=None,
                 cu_seqlens_q=None):
    """Shape rules that hold for every plan: q and out [B, Sq, Hq, D], K/V [B, Skv, Hkv, D]
    (paged: pools [num_pages, P, Hkv, D] and block_table [B, max_blocks]), sinks float32 [Hq],
    lse float32 [B, Sq, Hq]; a ragged batch: q and out [1, T, Hq, D], cu_seqlens_q [B + 1]."""
    _check_sinks_lse(q, sinks, lse)
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        raise KernelArgumentError("q, k and v must be 4-D: [B, Sq, Hq, D] and [B, Skv, Hkv, D]")
    if tuple(out.shape) != tuple(q.shape) or out.dtype != torch.bfloat16:
        raise KernelArgumentError(f"out must be bfloat16 of q's shape {tuple(q.shape)}, got "
                                  f"{out.dtype} {tuple(out.shape)}")
    b = q.shape[0]
    if cu_seqlens_q is not None:
        if cu_seqlens_q.dim() != 1 or cu_seqlens_q.shape[0] < 2 or q.shape[0] != 1:
            raise KernelArgumentError(f"a ragged batch takes q [1, T, Hq, D] and cu_seqlens_q "
                                      f"[B + 1], got {tuple(q.shape)} and "
                                      f"{tuple(cu_seqlens_q.shape)}")
        b = cu_seqlens_q.shape[0] - 1
    if block_table is not None and (block_table.dim() != 2 or block_table.shape[0] != b):
        raise KernelArgumentError(f"block_table must be [B, max_blocks] with B = {b}, "
                                  f"got {tuple(block_table.shape)}")
    batch_ok = block_table is not None or k.shape[0] == b
    if tuple(k.shape) != tuple(v.shape) or not batch_ok or k.shape[3] != q.shape[3]:
        raise KernelArgumentError(f"k {tuple(k.shape)} and v {tuple(v.shape)} do not match q "
                                  f"{tuple(q.shape)}")
    return None


def _check_sinks_lse(q, sinks, lse):
    """sinks float32 [Hq] and lse float32 [B, Sq, Hq] for q [B, Sq, Hq, D] (None: not given)."""
    if q.dim() != 4:
        return
    for name, t, shape in (("sinks", sinks, (q.shape[2],)), ("lse", lse, tuple(q.shape[:3]))):
        if t is not None and (t.dtype != torch.float32 or tuple(t.shape) != tuple(shape)):
            raise KernelArgumentError(f"{name} must be float32 {list(shape)}, got {t.dtype} "
                                      f"{list(t.shape)}")


@torch.library.register_fake(f"{NAMESPACE}::quantize_append")
def _quantize_append_fake(kernel, src, positions, dst, scales, zeros=None):
    """Shape rules that hold for every kernel: src [B, S, H, D], dst [B, capacity, H, D]."""
    if src.dim() != 4 or dst.dim() != 4:
        raise KernelArgumentError("src and dst must be 4-D: [B, S, H, D] and [B, capacity, H, D]")
    if (src.shape[0], src.shape[2], src.shape[3]) != (dst.shape[0], dst.shape[2], dst.shape[3]):
        raise KernelArgumentError(f"src {tuple(src.shape)} does not match dst {tuple(dst.shape)}")
    return None


def _checked(op, *args):
    """op(*args) with the extension's argument errors (TypeError, ValueError) raised as
    KernelArgumentError and its launch errors (RuntimeError) as GpuError."""
    try:
        return op(*args)
    except (TypeError, ValueError) as e:
        raise KernelArgumentError(str(e)) from e
    except RuntimeError as e:
        raise GpuError(str(e)) from e


def quantize_append(kernel, src, dst, scales, zeros=None, *, positions):
    """Quantizes ``src`` [B, S, H, D] into the cache ``dst`` [B, capacity, H, D] at rows
    ``positions[b] + i`` (int32 [B], on the device: rows outside the cache are skipped, no host
    check), writing their ``scales`` (and ``zeros``): ``torch.ops.attn_opt.quantize_append`` on
    the current stream, capturable in a CUDA graph. ``kernel``: a compiled
    ``attn.quantize.append`` (``GpuQuantizeKernel``) or the path of its PTX. Returns ``dst``."""
    _checked(ops.quantize_append, str(getattr(kernel, "path", kernel)), src, positions, dst,
             scales, zeros)
    return dst


@torch.library.register_fake(f"{NAMESPACE}::quantize_append_paged")
def _quantize_append_paged_fake(kernel, src, slot_mapping, dst, scales, zeros=None):
    """Shape rules that hold for every kernel: src [T, H, D], slot_mapping [T] int64 / int32,
    dst [num_pages, P, H, D]."""
    if src.dim() != 3 or dst.dim() != 4:
        raise KernelArgumentError("src must be 3-D [T, H, D] and dst 4-D [num_pages, P, H, D]")
    if (src.shape[1], src.shape[2]) != (dst.shape[2], dst.shape[3]):
        raise KernelArgumentError(f"src {tuple(src.shape)} does not match dst {tuple(dst.shape)}")
    if tuple(slot_mapping.shape) != (src.shape[0],) or slot_mapping.dtype not in (torch.int64,
                                                                                  torch.int32):
        raise KernelArgumentError(f"slot_mapping must be int64 or int32 [{src.shape[0]}], got "
                                  f"{slot_mapping.dtype} {tuple(slot_mapping.shape)}")
    return None


def quantize_append_paged(kernel, src, dst, scales, zeros=None, *, slot_mapping):
    """vLLM's ``reshape_and_cache_flash`` into a quantized paged cache: row t of ``src`` [T, H, D]
    is quantized into the pool of pages ``dst`` [num_pages, P, H, D] at slot ``slot_mapping[t]``
    (= page · P + offset; int64 or int32 as the kernel was compiled, on the device: a slot outside
    the pool, such as vLLM's padding −1, skips its row without a host check), writing its
    ``scales`` (and ``zeros``) stored per page: ``torch.ops.attn_opt.quantize_append_paged`` on
    the current stream, capturable in a CUDA graph. ``kernel``: a compiled
    ``attn.quantize.append_paged`` (``qattn.quantize_paged`` spec) or the path of its PTX. The
    reference on the CPU is ``qattn.paged.append_slots``. Returns ``dst``."""
    _checked(ops.quantize_append_paged, str(getattr(kernel, "path", kernel)), src, slot_mapping,
             dst, scales, zeros)
    return dst


@torch.library.register_fake(f"{NAMESPACE}::check_block_table")
def _check_block_table_fake(block_table, seq_lens, page_size, num_pages, state):
    """Shape rules: block_table int32 [B, max_blocks], state int64 [PAGE_STATE_SIZE]."""
    if block_table.dim() != 2 or state.dim() != 1 or state.shape[0] != paged.PAGE_STATE_SIZE:
        raise KernelArgumentError(f"block_table must be [B, max_blocks] and state "
                                  f"[{paged.PAGE_STATE_SIZE}], got {tuple(block_table.shape)}, "
                                  f"{tuple(state.shape)}")
    return None


def check_block_table(block_table, seq_lens, page_size, num_pages, state=None):
    """``torch.ops.attn_opt.check_block_table``: the used entries of ``block_table`` (int32 [B,
    max_blocks]; (b, i) with i < ceil(seq_lens[b] / P), every entry without ``seq_lens``)
    checked against [0, ``num_pages``) and ``seq_lens`` against [0, max_blocks · P] with tensor
    ops on the tensors' device and current stream (no host synchronization); the offenders are
    added to ``state`` (``qattn.paged.new_page_state``; made when None), returned. The same
    check as ``qattn.paged.check_block_table``, in C++; a check_pages plan runs it before each
    launch. ``qattn.paged.PageErrors.from_state(state.tolist())`` reads it (a sync)."""
    if state is None:
        state = paged.new_page_state(block_table.device)
    _checked(ops.check_block_table, block_table, seq_lens, int(page_size), int(num_pages), state)
    return state


@torch.library.register_fake(f"{NAMESPACE}::check_cu_seqlens")
def _check_cu_seqlens_fake(cu_seqlens_q, total_q, max_seqlen_q, state):
    """Shape rules: cu_seqlens_q int32 [B + 1], state int64 [PAGE_STATE_SIZE]."""
    if cu_seqlens_q.dim() != 1 or cu_seqlens_q.shape[0] < 2 or state.dim() != 1 \
            or state.shape[0] != paged.PAGE_STATE_SIZE:
        raise KernelArgumentError(f"cu_seqlens_q must be [B + 1] and state "
                                  f"[{paged.PAGE_STATE_SIZE}], got {tuple(cu_seqlens_q.shape)}, "
                                  f"{tuple(state.shape)}")
    return None


def check_cu_seqlens(cu_seqlens_q, total_q, max_seqlen_q, state=None):
    """``torch.ops.attn_opt.check_cu_seqlens``: a ragged batch's offsets (int32 [B + 1];
    sequence b's rows cu_seqlens_q[b] ..< cu_seqlens_q[b + 1]) checked to lie in [0,
    ``total_q``], in order, at most ``max_seqlen_q`` rows each, with tensor ops on the tensor's
    device and current stream (no host synchronization); the offenders are added to ``state``
    (``qattn.paged.new_page_state``; made when None), returned. The same check as
    ``qattn.paged.check_cu_seqlens``, in C++; a check_pages plan over a ragged kernel runs it
    before each launch."""
    if state is None:
        state = paged.new_page_state(cu_seqlens_q.device)
    _checked(ops.check_cu_seqlens, cu_seqlens_q, int(total_q), int(max_seqlen_q), state)
    return state


def _device_index(device) -> int:
    device = torch.device(device)
    if device.type != "cuda":
        raise KernelArgumentError(f"plans run on CUDA devices, got {device}")
    return device.index if device.index is not None else torch.cuda.current_device()


def _kernel_path(kernel):
    """The PTX path of a kernel given as a GpuDecodeKernel, a path, a Spec (the package's
    ahead-of-time set first, else qattn.build) or the name of a kernel of that set."""
    from . import aot
    if hasattr(kernel, "path"):
        return kernel.path
    if hasattr(kernel, "text"):  # a Spec
        found = aot.find(kernel)
        if found is None:
            from .kernels import build
            return build(kernel).path  # KernelNotAvailable without attn-opt
        return found / aot.KERNEL_FILE
    if isinstance(kernel, str) and os.sep not in kernel and not os.path.exists(kernel):
        found = aot.find(kernel)
        if found is not None:
            return found / aot.KERNEL_FILE
    return kernel


class DecodePlan:
    """One batch layout of one compiled decode / prefill kernel on one device.

    ``kernel`` is a ``GpuDecodeKernel`` (``qattn.build``'s result), the path of its PTX (the
    launch metadata beside it), a ``Spec`` (looked up in the package's ahead-of-time set first,
    ``qattn.aot``; else compiled, which needs attn-opt) or the name of a kernel of that set
    (``"decode_d128_g4_kv8_i8"``). ``splits``: "auto" (the schedule's rule) or a count. The plan
    owns its split workspace; give ``workspace`` to ``run`` to use another (for concurrent
    streams).

    ``check_pages`` (a paged or ragged kernel; a debug mode) makes each run first check the
    block table on the device: its used entries (sequence b's first ceil(seq_lens[b] / P);
    unused entries, such as vLLM's -1 padding, may hold anything) against the pool [0,
    num_pages), and seq_lens against [0, max_blocks · P] — and a ragged batch's cu_seqlens_q
    (each sequence's rows in order, inside [0, T], at most the plan's q_len), with tensor ops on the current stream before the launch — no
    host synchronization, capturable in a CUDA graph (out= and in-place ops into scratch the plan
    allocates when it is made). The first offender and a count accumulate in a
    small device tensor the plan owns; ``page_errors()`` reads it and ``check_pages()`` raises
    ``qattn.paged.BlockTableError`` naming the sequence, the block, the entry and the pool size
    (both synchronize). ``"record"`` only records; ``True`` / ``"raise"`` also calls
    ``check_pages()`` at the end of each eager ``run`` (a sync); under CUDA graph capture and
    ``torch.compile`` it records only, and the next eager run or ``check_pages()`` raises what
    the replays recorded. ``None`` (the default) takes the mode from ``QATTN_CHECK_PAGES``
    ("record"; "0" or unset: off; anything else: "raise") and checks paged and ragged plans
    only. The kernels themselves never read outside the pool or the packed rows, checked or
    not.
    """

    #: The page check this plan runs: None, "record" or "raise".
    check_pages_mode = None

    def __init__(self, kernel, *, device="cuda", batch: int, kv_len: int, q_len=None,
                 splits="auto", check_pages=None):
        path = _kernel_path(kernel)
        n = 0 if splits in ("auto", None) else int(splits)
        try:
            mode = paged.check_pages_mode(check_pages)
        except ValueError as e:
            raise KernelArgumentError(str(e)) from e
        check = -1 if check_pages is None else int(mode is not None)
        try:
            self.handle = int(ops.decode_plan(str(path), _device_index(device), int(batch),
                                              int(kv_len), -1 if q_len is None else int(q_len), n,
                                              check))
        except ValueError as e:
            raise KernelArgumentError(str(e)) from e
        except RuntimeError as e:
            raise GpuError(str(e)) from e
        info = list(ops.plan_info(self.handle))
        self.device = torch.device("cuda", info[0])
        self.batch, self.kv_len, self.q_len, self.splits = info[1:5]
        self.cluster_merge, self.workspace_floats = bool(info[5]), info[6]
        self.check_pages_mode = mode if info[7] else None

    def __repr__(self) -> str:
        return (f"<qattn DecodePlan {self.handle} on {self.device}: batch {self.batch}, kv_len "
                f"{self.kv_len}, q_len {self.q_len}, {self.splits} split(s)>")

    def run(self, q, k, v, k_scale=None, v_scale=None, *, q_scale=None, k_zero=None, v_zero=None,
            seq_lens=None, alibi_slopes=None, out=None, workspace=None, block_table=None,
            sinks=None, lse=None, cu_seqlens_q=None):
        """Attention into ``out`` (allocated when None: bf16, q's shape); returns ``out``. A
        paged kernel takes pools k, v [num_pages, P, Hkv, D] and ``block_table`` [B, max_blocks]
        (int32, on the device; its plan's kv_len is max_blocks · P). A spec with attention sinks
        takes ``sinks`` float32 [Hq]; one with an lse output writes each row's log-sum-exp into
        ``lse`` float32 [B, Sq, Hq] (required: the run allocates nothing). A ragged prefill
        (a spec with ``cu_seqlens_q``) takes q and out packed as [1, T, Hq, D] and
        ``cu_seqlens_q`` int32 [B + 1] on the device (sequence b's rows cu_seqlens_q[b] ..<
        cu_seqlens_q[b + 1]); the plan's q_len is FlashAttention's max_seqlen_q, the most rows
        of any sequence (one with more is cut to it).

        Eagerly this is the extension's ``run`` (no dispatcher); under fake tensors, modes or
        ``torch.compile`` it is ``torch.ops.attn_opt.decode`` — the same checks and launch."""
        if out is None:
            out = torch.empty(q.shape, dtype=torch.bfloat16, device=q.device)
        _check_sinks_lse(q, sinks, lse)
        try:
            if (_run_direct is None or _is_compiling()
                    or _run_direct(self.handle, q, k, v, k_scale, v_scale, q_scale, k_zero,
                                   v_zero, seq_lens, alibi_slopes, out, workspace, block_table,
                                   sinks, lse, cu_seqlens_q)
                    is NotImplemented):
                _decode(self.handle, q, k, v, k_scale, v_scale, q_scale, k_zero, v_zero,
                        seq_lens, alibi_slopes, out, workspace, block_table, sinks, lse,
                        cu_seqlens_q)
        except (TypeError, ValueError) as e:
            raise KernelArgumentError(str(e)) from e
        except RuntimeError as e:
            raise GpuError(str(e)) from e
        if self.check_pages_mode == "raise" and not _is_compiling() and not self._capturing():
            self.check_pages()
        return out

    __call__ = run

    def _capturing(self) -> bool:
        """Whether the current stream of the plan's device is being captured."""
        with torch.cuda.device(self.device):
            return torch.cuda.is_current_stream_capturing()

    def page_errors(self, reset: bool = False):
        """What this plan's block-table checks recorded since the last reset, a
        ``qattn.paged.PageErrors`` (false when nothing was); ``reset`` clears it. Copies the
        device state to the host: a synchronization, for debugging; refused while the current
        stream is being captured. Needs a plan made with ``check_pages``."""
        if torch.cuda.is_available() and self._capturing():
            raise GpuError("DecodePlan.page_errors reads the block-table report on the host (a "
                           "synchronization), which a CUDA graph capture cannot do: read it "
                           "after the capture (it then holds what the replays recorded)")
        values = _checked(ops.page_errors, self.handle, bool(reset))
        return paged.PageErrors.from_state(values)

    def check_pages(self):
        """Raises ``qattn.paged.BlockTableError`` (sequence, block, entry, pool size; the count)
        when this plan's checks recorded a block-table entry outside the pool or a length past
        the table, and resets the record; a synchronization (``page_errors``)."""
        errors = self.page_errors(reset=True)
        if errors:
            raise paged.BlockTableError(errors)

    def release(self):
        """Frees the plan (its workspace and tensor map cache) now; later runs raise."""
        handle, self.handle = getattr(self, "handle", None), None
        if handle is not None and HAS_EXTENSION:
            ops.release_plan(handle)

    def __del__(self):
        try:
            self.release()
        except Exception:  # interpreter shutdown: the library may be gone
            pass
