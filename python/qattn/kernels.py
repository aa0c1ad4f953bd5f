"""Compiled kernels as Python objects: ``build(spec)`` compiles once, caches on disk, and loads.

For CPU specs (the ``attn.pq.*`` NoMAD ops), ``build`` runs ``attn-opt --emit=obj`` and
``--emit=header``, links the object into a shared library with the C compiler (``$CC``, else ``cc``),
and loads it with ``ctypes``. The result is a ``CpuLibrary`` whose attributes are the spec's
functions; each takes NumPy arrays (and ints for ``index`` arguments) in the order of the
``func.func`` and checks every array against the header's buffer description before the call:
dtype, rank, static extents, C-contiguity, at most 2^48 bytes, and — for buffers the kernel
writes — writability and no overlap with another argument; ints must fit an int64. Then come the
header's numbered extent checks (``check k: arg1_dim0 == arg0_dim0``: which dynamic extents of
which arguments must agree, derived from the spec), the same ones the kernel's own prologue
evaluates. A mismatch raises ``KernelArgumentError`` naming the arguments; nothing is coerced
silently. Should the kernel still refuse (its status is not 0), that is a ``KernelArgumentError``
too.

The on-disk cache is keyed by the SHA-256 of (spec text, attn-opt's version line, target, passes),
under ``$QATTN_CACHE_DIR`` (default ``~/.cache/qattn``); an entry is written to a temporary
directory and renamed into place, so concurrent builds of the same spec are safe. GPU specs go
through ``qattn.gpu`` (``build`` returns a ``GpuDecodeKernel`` for them).
"""

from __future__ import annotations

import ast
import ctypes
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from .compiler import (DEFAULT_PASSES, AttnOptNotFound, QattnError, _check_options, _resolve,
                       _spec_text)
from .compiler import compile as _compile
from .compiler import version as _version

CACHE_LAYOUT = 2  # bump when what a cache entry holds changes

_DTYPES = {"f32": np.float32, "f16": np.float16, "f64": np.float64, "i8": np.int8, "ui8": np.uint8,
           "i16": np.int16, "ui16": np.uint16, "i32": np.int32, "ui32": np.uint32, "i64": np.int64,
           "bf16": np.uint16, "f8E4M3FN": np.uint8}  # bf16 and fp8 buffers hold their bits


class KernelArgumentError(QattnError, TypeError):
    """An argument does not match the buffer the kernel was compiled for."""


class BuildError(QattnError):
    """Linking or loading the compiled object failed (attn-opt itself raises CompileError)."""


def cache_dir() -> Path:
    env = os.environ.get("QATTN_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "qattn"


def _compiler_identity(exe) -> str:
    """attn-opt's version line plus its binary's size and modification time: a rebuilt compiler
    (same version, new code) must not be served kernels its predecessor compiled."""
    try:
        st = Path(exe).stat()
        stamp = f" [{st.st_size} bytes, mtime {st.st_mtime_ns}]"
    except OSError:
        stamp = ""
    return _version(attn_opt=exe) + stamp


def cache_key(text: str, compiler_version: str, target: Optional[str], passes: Sequence[str],
              kind: str) -> str:
    blob = json.dumps({"layout": CACHE_LAYOUT, "spec": text, "compiler": compiler_version,
                       "target": target, "passes": list(passes), "kind": kind}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


# ------------------------------------------------------------------------------------------------
# Header parsing: the buffer list of each function (the header is attn-opt's documented ABI).
# ------------------------------------------------------------------------------------------------
class Arg:
    """One parameter of a kernel: a memref buffer (shape with None for '?', dtype, access) or an
    index scalar."""

    def __init__(self, index: int, access: Optional[str], mlir_type: str):
        self.index = index
        self.access = access  # "read", "written", "read/written" or None for an index
        self.mlir_type = mlir_type
        self.shape: Optional[Tuple[Optional[int], ...]] = None
        self.dtype = None
        m = re.fullmatch(r"memref<(.*)x([A-Za-z0-9]+)>", mlir_type)
        if m:
            self.shape = tuple(None if d == "?" else int(d) for d in m.group(1).split("x"))
            elem = m.group(2)
            if elem not in _DTYPES or _DTYPES[elem] is None:
                raise BuildError(f"arg{index}: element type {elem} has no NumPy equivalent")
            self.dtype = np.dtype(_DTYPES[elem])
        elif mlir_type != "index":
            raise BuildError(f"arg{index}: cannot bind an argument of type {mlir_type}")

    @property
    def is_buffer(self) -> bool:
        return self.shape is not None

    def __repr__(self) -> str:
        return f"arg{self.index}: {self.access or ''} {self.mlir_type}".replace("  ", " ")


_FUNC_RE = re.compile(r"^/\* (\w+) — target (\S+)\.$")
_ARG_RE = re.compile(r"^ \*   arg(\d+): (?:(read/written|read|written)\s+)?.*\((.+)\)\s*$")
_CHECK_RE = re.compile(r"^ \*   check (\d+): (.+?)  \((.*)\)$")

#: The largest buffer a kernel takes (its prologue refuses larger ones).
MAX_BUFFER_BYTES = 1 << 48
_INDEX_MIN, _INDEX_MAX = -(1 << 63), (1 << 63) - 1


class ExtentCheck:
    """One numbered extent check of a kernel, e.g. ``arg1_dim0 == arg0_dim0``: comparisons of
    ``argN_dimD`` names and ints combined with ``*`` and ``%`` (the header's C expression)."""

    _NODES = (ast.Expression, ast.Compare, ast.BinOp, ast.Name, ast.Constant, ast.Load, ast.Mult,
              ast.Mod, ast.Eq, ast.LtE, ast.GtE)

    def __init__(self, number: int, expr: str, why: str):
        self.number, self.expr, self.why = number, expr, why
        try:
            tree = ast.parse(expr, mode="eval")
        except SyntaxError:
            raise BuildError(f"header check {number} is not an extent check: {expr!r}") from None
        for node in ast.walk(tree):
            ok = isinstance(node, self._NODES) and not (
                isinstance(node, ast.Name) and not re.fullmatch(r"arg\d+_dim\d+", node.id)) and \
                not (isinstance(node, ast.Constant) and type(node.value) is not int)
            if not ok:
                raise BuildError(f"header check {number} is not an extent check: {expr!r}")
        self.names = sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)})
        self._code = compile(tree, f"<check {number}>", "eval")

    def holds(self, extents: Dict[str, int]) -> bool:
        return bool(eval(self._code, {"__builtins__": {}}, extents))

    def __repr__(self) -> str:
        return f"check {self.number}: {self.expr}"


def parse_header(header: str) -> Dict[str, Tuple[str, List[Arg]]]:
    """{function name: (target, [Arg...])} from an ``--emit=header`` header."""
    return {name: (tgt, args) for name, (tgt, args, _) in parse_header_checks(header).items()}


def parse_header_checks(header: str) -> Dict[str, Tuple[str, List[Arg], List[ExtentCheck]]]:
    """{function name: (target, [Arg...], [ExtentCheck...])} from an ``--emit=header`` header."""
    funcs: Dict[str, Tuple[str, List[Arg], List[ExtentCheck]]] = {}
    current = None
    for line in header.splitlines():
        m = _FUNC_RE.match(line)
        if m:
            current = m.group(1)
            funcs[current] = (m.group(2), [], [])
            continue
        m = _ARG_RE.match(line)
        if m and current is not None:
            args = funcs[current][1]
            if int(m.group(1)) != len(args):
                raise BuildError(f"{current}: header lists arg{m.group(1)} out of order")
            args.append(Arg(len(args), m.group(2), m.group(3)))
            continue
        m = _CHECK_RE.match(line)
        if m and current is not None:
            checks = funcs[current][2]
            if int(m.group(1)) != len(checks) + 1:
                raise BuildError(f"{current}: header lists check {m.group(1)} out of order")
            checks.append(ExtentCheck(len(checks) + 1, m.group(2), m.group(3)))
        elif line.startswith(" */"):
            current = None
    if not funcs:
        raise BuildError("the header declares no kernel")
    return funcs


def _memref_type(rank: int):
    class Desc(ctypes.Structure):
        _fields_ = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p),
                    ("offset", ctypes.c_int64), ("sizes", ctypes.c_int64 * rank),
                    ("strides", ctypes.c_int64 * rank)]
    return Desc


_DESC_TYPES: Dict[int, type] = {}


def _desc_type(rank: int):
    if rank not in _DESC_TYPES:
        _DESC_TYPES[rank] = _memref_type(rank)
    return _DESC_TYPES[rank]


class CpuFunction:
    """One kernel of a ``CpuLibrary``; call it with the ``func.func``'s arguments in order."""

    def __init__(self, lib: ctypes.CDLL, name: str, target: str, args: List[Arg],
                 checks: Sequence[ExtentCheck] = ()):
        self.name = name
        self.target = target
        self.args = args
        self.checks = list(checks)
        self._fn = getattr(lib, f"_mlir_ciface___attn_{name}")
        self._fn.restype = ctypes.c_int32
        self._fn.argtypes = [ctypes.POINTER(_desc_type(len(a.shape))) if a.is_buffer
                             else ctypes.c_int64 for a in args]

    def __repr__(self) -> str:
        return f"<qattn kernel {self.name} ({self.target}): {', '.join(map(repr, self.args))}>"

    def _check(self, a: Arg, value):
        where = f"{self.name}: arg{a.index} ({a.mlir_type})"
        if not a.is_buffer:
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                raise KernelArgumentError(f"{where} takes an int, not {type(value).__name__}")
            if not _INDEX_MIN <= int(value) <= _INDEX_MAX:
                raise KernelArgumentError(f"{where} takes an int64, and {int(value)} is out of "
                                          f"its range [-2**63, 2**63 - 1]")
            return ctypes.c_int64(int(value))
        if not isinstance(value, np.ndarray):
            raise KernelArgumentError(f"{where} takes a numpy array, not {type(value).__name__}")
        if value.dtype != a.dtype:
            raise KernelArgumentError(f"{where} takes dtype {a.dtype}, not {value.dtype}")
        if value.ndim != len(a.shape) or any(s is not None and s != v
                                             for s, v in zip(a.shape, value.shape)):
            want = "x".join("?" if s is None else str(s) for s in a.shape)
            raise KernelArgumentError(f"{where} takes shape {want}, not {value.shape}")
        if not value.flags.c_contiguous:
            raise KernelArgumentError(f"{where} must be C-contiguous (np.ascontiguousarray)")
        if a.access and "written" in a.access and not value.flags.writeable:
            raise KernelArgumentError(f"{where} is written by the kernel but the array is read-only")
        if value.nbytes > MAX_BUFFER_BYTES:
            raise KernelArgumentError(f"{where} holds {value.nbytes} bytes, more than the 2**48 "
                                      "a kernel buffer may hold")
        desc = _desc_type(value.ndim)()
        ptr = value.ctypes.data
        desc.allocated = desc.aligned = ptr
        desc.offset = 0
        stride = 1
        for d in range(value.ndim - 1, -1, -1):
            desc.sizes[d] = value.shape[d]
            desc.strides[d] = stride
            stride *= value.shape[d]
        return ctypes.byref(desc)

    def _check_overlap(self, values):
        """A buffer the kernel writes shares no memory with another argument."""
        arrays = [(a, v) for a, v in zip(self.args, values) if a.is_buffer and v.size]
        for i, (a, v) in enumerate(arrays):
            for b, w in arrays[i + 1:]:
                written = "written" in (a.access or "") or "written" in (b.access or "")
                if written and np.may_share_memory(v, w):
                    raise KernelArgumentError(
                        f"{self.name}: arg{a.index} and arg{b.index} overlap in memory, and the "
                        "kernel writes one of them; pass separate arrays")

    def _check_extents(self, values):
        """The header's extent checks, in order, on the arrays' extents."""
        extents = {f"arg{a.index}_dim{d}": int(n) for a, v in zip(self.args, values)
                   if a.is_buffer for d, n in enumerate(v.shape)}
        for c in self.checks:
            if not c.holds(extents):
                got = ", ".join(f"{n} = {extents[n]}" for n in c.names)
                raise KernelArgumentError(f"{self.name}: extent check {c.number} fails: {c.expr} "
                                          f"with {got} ({c.why})")

    def __call__(self, *values):
        if len(values) != len(self.args):
            raise KernelArgumentError(f"{self.name} takes {len(self.args)} arguments, "
                                      f"got {len(values)}")
        converted = [self._check(a, v) for a, v in zip(self.args, values)]
        self._check_overlap(values)
        self._check_extents(values)
        status = self._fn(*converted)
        if status == -2:
            raise MemoryError(f"{self.name}: the kernel could not allocate its scratch memory "
                              f"(status -2); the op that needed it did not run")
        if status != 0:
            why = ("a buffer descriptor is malformed" if status < 0 else
                   repr(self.checks[status - 1]) if status <= len(self.checks) else "unknown")
            raise KernelArgumentError(f"{self.name}: the kernel refused its arguments "
                                      f"(status {status}: {why}); nothing ran")


class CpuLibrary:
    """The functions of one compiled CPU spec, loaded from ``path`` (a shared library)."""

    def __init__(self, path: Union[str, Path], header: str):
        self.path = str(path)
        self.header = header
        try:
            self._lib = ctypes.CDLL(self.path)
        except OSError as e:
            raise BuildError(f"cannot load {self.path}: {e}") from None
        self.functions = {name: CpuFunction(self._lib, name, tgt, args, checks)
                          for name, (tgt, args, checks) in parse_header_checks(header).items()}

    def __getattr__(self, name):
        funcs = self.__dict__.get("functions", {})
        if name in funcs:
            return funcs[name]
        raise AttributeError(f"no kernel named {name!r} (have: {', '.join(funcs)})")

    def __repr__(self) -> str:
        return f"<qattn CpuLibrary {self.path}: {', '.join(self.functions)}>"


def _link(obj: Path, out: Path):
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        raise BuildError("no C compiler to link the kernel object (set CC or install gcc)")
    proc = subprocess.run([cc, "-shared", "-o", str(out), str(obj), "-lm"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"linking {obj} failed: {proc.stderr.strip()}")


def _is_gpu(text: str) -> bool:
    return "attn.attention" in text or "attn.mla" in text or "#attn.target<sm_90a>" in text


def build(spec, *, target: Optional[str] = None, passes: Sequence[str] = DEFAULT_PASSES,
          attn_opt=None, cache: bool = True):
    """Compile ``spec`` (MLIR text, a ``Spec`` or a path) and load it.

    CPU specs give a ``CpuLibrary``; GPU specs (decode attention, MLA decode, or a quantize op
    targeting sm_90a) give a ``qattn.gpu.GpuDecodeKernel``, ``qattn.gpu_mla.GpuMLAKernel`` or
    ``qattn.gpu_quantize.GpuQuantizeKernel`` (PTX + launch metadata; running it needs a GPU). Compilation happens once per cache key; later
    calls load the cached artifacts. ``cache=False`` always recompiles (into a fresh directory).
    A GPU spec found in the package's ahead-of-time set (``qattn.aot``) is loaded from there
    (default passes, no ``target``/``attn_opt``, ``cache=True``), without attn-opt; one that is
    not, where attn-opt is missing, raises ``qattn.aot.KernelNotAvailable`` naming the spec.
    """
    text = _spec_text(spec)
    _check_options(passes, target, None)
    if not isinstance(cache, bool):
        raise TypeError(f"cache must be True or False, not {cache!r}")
    kind = "gpu" if _is_gpu(text) else "cpu"
    if kind == "gpu" and cache and attn_opt is None and target is None and \
            tuple(passes) == DEFAULT_PASSES:
        from . import aot  # the package's ahead-of-time set first: no attn-opt needed
        found = aot.find(text)
        if found is not None:
            from .gpu import load_gpu_kernel
            return load_gpu_kernel(found)
    try:
        exe = _resolve(attn_opt)
    except AttnOptNotFound:
        if kind == "gpu" and attn_opt is None:
            from . import aot
            aot.require(text)  # raises KernelNotAvailable naming the spec and the command
        raise
    key = cache_key(text, _compiler_identity(exe), target, passes, kind)
    root = cache_dir()
    entry = root / key
    if not (cache and (entry / "ok").is_file()):
        root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=root))
        try:
            (tmp / "spec.mlir").write_text(text)
            if kind == "cpu":
                obj = _compile(text, emit="obj", passes=passes, target=target, attn_opt=exe)
                hdr = _compile(text, emit="header", passes=passes, target=target, attn_opt=exe)
                (tmp / "kernels.o").write_bytes(obj.output)
                (tmp / "kernels.h").write_text(hdr.output)
                _link(tmp / "kernels.o", tmp / "kernels.so")
            else:
                from .gpu import compile_decode
                compile_decode(text, tmp, passes=passes, target=target, attn_opt=exe)
            (tmp / "ok").write_text(key + "\n")
            if cache:
                try:
                    os.rename(tmp, entry)
                except OSError:  # another process got there first: use its entry
                    shutil.rmtree(tmp, ignore_errors=True)
            else:
                entry = tmp
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    if kind == "cpu":
        return CpuLibrary(entry / "kernels.so", (entry / "kernels.h").read_text())
    from .gpu import load_gpu_kernel
    return load_gpu_kernel(entry)


__all__ = ["BuildError", "CpuFunction", "CpuLibrary", "ExtentCheck", "KernelArgumentError", "build",
           "cache_dir", "parse_header", "parse_header_checks"]
