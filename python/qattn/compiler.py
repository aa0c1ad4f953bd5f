"""Running `attn-opt` from Python: locating the executable, compiling specs, reading diagnostics.

Everything goes through a subprocess: the spec is fed on stdin, the requested artifact is written
to a temporary file with ``-o``, and a non-zero exit status becomes a ``CompileError`` whose
``diagnostics`` are parsed from attn-opt's stderr (``<stdin>:7:3: error: ...``). Nothing is ever
made up: if attn-opt cannot produce an artifact (e.g. "not supported yet"), the caller gets the
exception, not an empty or placeholder result.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import List, NamedTuple, Optional, Sequence, Union

#: Artifacts ``--emit`` can produce, and whether they are binary.
EMIT_KINDS = {"mlir": False, "ptx": False, "header": False, "cubin": True, "obj": True}

DEFAULT_PASSES = ("attn-normalize", "attn-select-schedule")
DEFAULT_TIMEOUT = 120.0


class QattnError(Exception):
    """Base class of every error raised by qattn."""


class AttnOptNotFound(QattnError):
    """The attn-opt executable could not be located."""


class Diagnostic(NamedTuple):
    """One diagnostic from attn-opt's stderr; ``line``/``column`` are None when it has no location."""

    severity: str  # "error", "warning", "note" or "remark"
    line: Optional[int]
    column: Optional[int]
    message: str

    def __str__(self) -> str:
        where = f"{self.line}:{self.column}: " if self.line is not None else ""
        return f"{where}{self.severity}: {self.message}"


class CompileError(QattnError):
    """attn-opt rejected the spec or failed to produce the requested output."""

    def __init__(self, message: str, *, diagnostics: Sequence[Diagnostic] = (), stderr: str = "",
                 command: Sequence[str] = (), returncode: Optional[int] = None):
        self.diagnostics: List[Diagnostic] = list(diagnostics)
        self.stderr = stderr
        self.command = list(command)
        self.returncode = returncode
        shown = [str(d) for d in self.diagnostics if d.severity != "note"]
        if not shown and stderr.strip():
            shown = [stderr.strip()]
        super().__init__("\n  ".join([message] + shown))

    @property
    def errors(self) -> List[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]


class CompileResult(NamedTuple):
    """What a successful ``compile`` returns."""

    output: Union[str, bytes]  # str for mlir/ptx/header, bytes for cubin/obj
    emit: str
    command: List[str]  # the attn-opt command line that produced it
    stderr: str  # warnings/remarks attn-opt printed, if any
    launch: Optional[str] = None  # the launch metadata (JSON) written beside GPU kernels


_DIAG_RE = re.compile(
    r"^(?:(?P<file>.*?):(?P<line>\d+):(?P<col>\d+): )?"
    r"(?P<sev>error|warning|note|remark): (?P<msg>.*)$")


def parse_diagnostics(stderr: str) -> List[Diagnostic]:
    """Parse MLIR-style diagnostics; the source excerpt and caret lines that follow are skipped."""
    diags = []
    for raw in stderr.splitlines():
        m = _DIAG_RE.match(raw)
        if m:
            line = int(m["line"]) if m["line"] else None
            col = int(m["col"]) if m["col"] else None
            diags.append(Diagnostic(m["sev"], line, col, m["msg"].strip()))
    if not diags and stderr.strip():
        # Not MLIR-formatted (e.g. a command-line error): keep the text as one located-nowhere error.
        diags.append(Diagnostic("error", None, None, stderr.strip()))
    return diags


def _check_executable(path: Union[str, Path], origin: str) -> str:
    p = Path(path)
    if not p.is_file() or not os.access(p, os.X_OK):
        raise AttnOptNotFound(f"{origin} points to {str(path)!r}, which is not an executable file")
    return str(p)


def find_attn_opt() -> str:
    """Locate attn-opt: ``$ATTN_OPT``, else ``attn-opt`` on PATH, else ``build/bin/attn-opt`` of
    the source checkout this package runs from (only when it exists)."""
    env = os.environ.get("ATTN_OPT")
    if env:
        return _check_executable(env, "the ATTN_OPT environment variable")
    on_path = shutil.which("attn-opt")
    if on_path:
        return on_path
    pkg_root = Path(__file__).resolve().parent.parent  # .../python when run from a checkout
    candidate = pkg_root.parent / "build" / "bin" / "attn-opt"
    if (pkg_root / "pyproject.toml").is_file() and candidate.is_file() and os.access(candidate, os.X_OK):
        return str(candidate)
    raise AttnOptNotFound(
        "cannot find the attn-opt executable: set ATTN_OPT to its path, put it on PATH, "
        "or build it in the source checkout (build/bin/attn-opt)")


def _resolve(attn_opt: Optional[Union[str, Path]]) -> str:
    if attn_opt is None:
        return find_attn_opt()
    return _check_executable(attn_opt, "attn_opt")


def _spec_text(spec) -> str:
    text = getattr(spec, "text", spec)  # a Spec object, or MLIR text
    if isinstance(text, os.PathLike):
        try:
            return Path(text).read_text()
        except (OSError, UnicodeDecodeError) as e:
            raise QattnError(f"cannot read the spec {os.fspath(text)!r}: {e}") from None
    if not isinstance(text, str):
        raise TypeError(f"spec must be MLIR text, a Spec or a path, not {type(spec).__name__}")
    return text


def _signal_name(returncode: int) -> str:
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def _keep_spec(spec, text: str) -> str:
    """Where the spec that made attn-opt crash can be found again: its own path when it came from
    a file, else a copy written to the temporary directory."""
    own = getattr(spec, "text", spec)
    if isinstance(own, os.PathLike):
        return os.fspath(own)
    fd, path = tempfile.mkstemp(prefix="qattn-crash-", suffix=".mlir")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path


def _failure(spec, text: str, cmd: List[str], proc) -> CompileError:
    stderr = proc.stderr.decode(errors="replace")
    if proc.returncode < 0:  # killed by a signal: a crash, not a diagnostic
        where = _keep_spec(spec, text)
        tail = "; its stderr:" if stderr.strip() else "; it printed nothing on stderr"
        return CompileError(f"attn-opt crashed ({_signal_name(proc.returncode)}) on the spec "
                            f"{where}; command: {' '.join(cmd)}{tail}",
                            stderr=stderr, command=cmd, returncode=proc.returncode)
    return CompileError(f"attn-opt failed (exit status {proc.returncode}):",
                        diagnostics=parse_diagnostics(stderr), stderr=stderr,
                        command=cmd, returncode=proc.returncode)


def _check_options(passes, target, timeout) -> None:
    """Strict types for compile's options: a str or a sequence of str for ``passes``, None or a
    str for ``target``, None or a positive finite number for ``timeout``."""
    names = (passes,) if isinstance(passes, str) else passes
    if not isinstance(names, (list, tuple)) or not all(isinstance(p, str) and p.strip()
                                                       for p in names):
        raise TypeError(f"passes must be a pass name or a list of pass names, not {passes!r}")
    if target is not None and (not isinstance(target, str) or not re.fullmatch(r"\w+", target)):
        raise ValueError(f"target must be None or a target name such as 'avx2', not {target!r}")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not 0 < timeout < float("inf")):
        raise ValueError(f"timeout must be None or a positive number of seconds, not {timeout!r}")


def _pass_flags(passes: Sequence[str], target: Optional[str]) -> List[str]:
    if isinstance(passes, str):
        passes = (passes,)
    names = [p[2:] if p.startswith("--") else p for p in passes]
    if target is not None:
        # The default target is an option of attn-normalize; add that pass if it isn't listed.
        if not any(n.split("=", 1)[0] == "attn-normalize" for n in names):
            names.insert(0, "attn-normalize")
        names = [f"attn-normalize=target={target}" if n.split("=", 1)[0] == "attn-normalize" else n
                 for n in names]
    return [f"--{n}" for n in names]


def compile(spec, *, emit: str = "mlir", passes: Sequence[str] = DEFAULT_PASSES,
            target: Optional[str] = None, attn_opt: Optional[Union[str, Path]] = None,
            timeout: Optional[float] = DEFAULT_TIMEOUT) -> CompileResult:
    """Run attn-opt on ``spec`` (MLIR text, a ``Spec`` or a path to a .mlir file).

    ``passes`` are pass names as on the command line, without ``--`` (``()`` only parses and
    verifies); ``target`` is the default target given to ops that have none (via attn-normalize);
    ``emit`` is one of mlir, ptx, header (returned as str), cubin, obj (returned as bytes).
    Raises ``CompileError`` on any failure and ``AttnOptNotFound`` if there is no attn-opt.
    """
    if not isinstance(emit, str) or emit not in EMIT_KINDS:
        raise ValueError(f"emit must be one of {', '.join(EMIT_KINDS)}, not {emit!r}")
    _check_options(passes, target, timeout)
    text = _spec_text(spec)
    exe = _resolve(attn_opt)
    with tempfile.TemporaryDirectory(prefix="qattn-") as tmp:
        out_path = os.path.join(tmp, f"out.{emit}")
        cmd = [exe, *_pass_flags(passes, target), f"--emit={emit}", "-", "-o", out_path]
        try:
            proc = subprocess.run(cmd, input=text.encode(), capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            stderr = (e.stderr or b"").decode(errors="replace")
            raise CompileError(f"attn-opt timed out after {timeout} s", stderr=stderr,
                               command=cmd) from None
        stderr = proc.stderr.decode(errors="replace")
        if proc.returncode != 0:
            raise _failure(spec, text, cmd, proc)
        if not os.path.isfile(out_path):
            raise CompileError(f"attn-opt exited successfully but wrote no {emit} output",
                               stderr=stderr, command=cmd, returncode=proc.returncode)
        with open(out_path, "rb") as f:
            data = f.read()
        launch_path = out_path + ".launch.json"
        launch = Path(launch_path).read_text() if os.path.isfile(launch_path) else None
    output = data if EMIT_KINDS[emit] else data.decode()
    return CompileResult(output=output, emit=emit, command=cmd, stderr=stderr, launch=launch)


def version(*, attn_opt: Optional[Union[str, Path]] = None) -> str:
    """The version line of attn-opt, e.g. ``attn-opt 0.1.0 (built with LLVM/MLIR 22.1.8)``."""
    exe = _resolve(attn_opt)
    proc = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30)
    if proc.returncode != 0:
        raise CompileError("attn-opt --version failed:", stderr=proc.stderr,
                           command=[exe, "--version"], returncode=proc.returncode)
    lines = (proc.stdout or proc.stderr).strip().splitlines()
    if not lines:
        raise CompileError("attn-opt --version printed nothing", command=[exe, "--version"])
    return lines[0].strip()
