"""Build script of the attn-opt distribution (import name ``qattn``); metadata is in pyproject.toml.

Besides the pure-Python package it builds, without LLVM or nvcc:

* ``qattn/lib/libattn_rt.so``: the GPU runtime (lib/Runtime/Runtime.cpp, which opens libcuda
  lazily), used by ``qattn.gpu`` through ctypes;
* ``qattn/_torch_ops*.so``: the torch extension that registers the ``attn_opt`` ops
  (csrc/torch_ops.cpp with the runtime compiled in), when torch is importable while building —
  i.e. ``pip install --no-build-isolation ./python`` in an environment that has torch.

Both need the CUDA driver API header ``cuda.h`` (types only; found through ``CUDA_HOME``,
``CUDA_PATH``, ``/usr/local/cuda`` or torch's CUDA home). Without it, or without the runtime
sources beside this directory, only the pure-Python package is installed: the CPU paths work, and
the GPU paths say what is missing. ``ATTN_OPT_NO_EXTENSIONS=1`` skips both on purpose. The
extension's sources also ship (``qattn/_csrc``): where the wheel was built without torch,
``qattn.torch_ops`` compiles them on first use (torch.utils.cpp_extension.load).

Where attn-opt is found ($ATTN_OPT, then PATH), the ahead-of-time kernel set of qattn/aot.py
(decode kernels for common configurations, over contiguous and paged caches) is compiled into
``qattn/_aot``, several attn-opt processes at a time (QATTN_AOT_JOBS); QATTN_AOT chooses the set
(``none`` skips it) and QATTN_AOT_PAGES the page sizes of its paged kernels (see qattn/aot.py).
"""

import importlib.util
import os
import shutil
import sys
import time
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

try:  # setuptools >= 70.1 carries bdist_wheel; before, the wheel package does
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:
    try:
        from wheel.bdist_wheel import bdist_wheel
    except ImportError:  # no wheel to build (a legacy `setup.py install`)
        bdist_wheel = None

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# The schedule heuristic (selectSplitKv, attn_rt_select_split_kv) is part of the runtime: launchers
# pick split counts at launch with the rule attn-select-schedule uses (its sources:
# qattn/_build_paths.py, RUNTIME_SOURCES).
HEURISTIC_HEADERS = [Path("attn") / "Dialect" / "Attn" / "Transforms" / f"{name}.h"
                     for name in ("ScheduleHeuristics", "ForwardSharedMemory")]
RUNTIME_NAME = "qattn.lib.libattn_rt"


def note(msg):
    print(f"attn-opt setup: {msg}", file=sys.stderr)


def _load_beside(name):
    """qattn/<name>.py loaded by path (importing qattn would import its dependencies)."""
    spec = importlib.util.spec_from_file_location(f"qattn_setup_{name}",
                                                  HERE / "qattn" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BUILD_PATHS = _load_beside("_build_paths")  # cuda.h and nlohmann/json.hpp, as qattn.torch_ops
RUNTIME_SOURCES = [ROOT / f for f in BUILD_PATHS.RUNTIME_SOURCES]
cuda_include = BUILD_PATHS.cuda_include
json_include = BUILD_PATHS.json_include


def staged(sources):
    """The runtime sources copied under build/ (setuptools takes relative source paths only, and
    a ../ path would put the objects outside build/temp.*), as paths relative to this folder."""
    dst = HERE / "build" / "runtime-src"
    dst.mkdir(parents=True, exist_ok=True)
    out = []
    for src in sources:
        target = dst / src.name
        if not target.is_file() or target.read_bytes() != src.read_bytes():
            shutil.copyfile(src, target)
        out.append(os.path.relpath(target, HERE))
    return out


def extensions():
    """(ext_modules, build_ext class): the runtime and, with torch, the torch extension."""
    if os.environ.get("ATTN_OPT_NO_EXTENSIONS") == "1":
        note("ATTN_OPT_NO_EXTENSIONS=1: pure-Python package only")
        return [], build_ext
    if not all(p.is_file() for p in RUNTIME_SOURCES):
        note(f"runtime sources not found under {ROOT / 'lib' / 'Runtime'}: pure-Python package only")
        return [], build_ext
    cuda = cuda_include()
    if cuda is None:
        note("cuda.h not found (set CUDA_HOME): no libattn_rt.so and no torch extension; the CPU "
             "paths work, GPU kernels need ATTN_RT_LIBRARY")
        return [], build_ext
    includes = [str(ROOT / "include"), cuda]
    flags = ["-O2", "-std=c++17"]
    runtime_sources = staged(RUNTIME_SOURCES)
    # The headers the sources include: a change rebuilds the libraries (their launch ABI table
    # is a header), which setuptools otherwise judges by the sources' times alone.
    headers = sorted(str(h) for h in (ROOT / "include" / "attn" / "Runtime").glob("*.h"))
    headers += [str(ROOT / "include" / h) for h in HEURISTIC_HEADERS]
    runtime = Extension(RUNTIME_NAME, sources=runtime_sources[:3], include_dirs=includes,
                        extra_compile_args=flags, libraries=["dl"], language="c++",
                        depends=headers)
    try:
        import torch  # noqa: F401
        from torch.utils.cpp_extension import BuildExtension, CppExtension
    except ImportError:
        note("torch is not importable while building (pip builds in an isolated environment "
             "unless --no-build-isolation): libattn_rt.so only, no torch extension")
        return [runtime], build_ext
    # torch with CUDA: take the current stream from c10_cuda (cuda_runtime_api.h beside cuda.h);
    # a CPU-only torch builds the same ops (they then refuse CUDA work at run time).
    json = json_include()
    if json is None:
        note("nlohmann/json.hpp not found (pip install nlohmann_json): libattn_rt.so only, no "
             "torch extension")
        return [runtime], build_ext
    includes.append(json)
    c10_cuda = torch.version.cuda is not None and (Path(cuda) / "cuda_runtime_api.h").is_file()
    ops = CppExtension("qattn._torch_ops",
                       sources=[f"csrc/{n}" for n in BUILD_PATHS.EXTENSION_SOURCES]
                       + runtime_sources,
                       include_dirs=includes, libraries=["dl"] + (["c10_cuda"] if c10_cuda else []),
                       depends=headers + [str(h) for h in sorted((HERE / "csrc").glob("*.h"))],
                       extra_compile_args=["-O2", f"-DATTN_OPT_C10_CUDA={int(c10_cuda)}"])
    return [runtime, ops], BuildExtension.with_options(use_ninja=False)


def with_runtime_name(base):
    class BuildExt(base):
        """Names the runtime libattn_rt.so (a plain shared library, not a Python module)."""

        def get_ext_filename(self, fullname):
            # distutils passes the last component (get_ext_fullpath adds the package folders)
            if fullname in (RUNTIME_NAME, RUNTIME_NAME.rsplit(".", 1)[1]):
                return os.path.join(*fullname.split(".")[:-1], "libattn_rt.so")
            return super().get_ext_filename(fullname)

        def get_export_symbols(self, ext):
            return [] if ext.name == RUNTIME_NAME else super().get_export_symbols(ext)

    return BuildExt


def build_aot_set(dst):
    """The ahead-of-time kernel set (qattn/aot.py) into dst, where attn-opt is found ($ATTN_OPT,
    then PATH); QATTN_AOT and QATTN_AOT_PAGES choose the set ('none': skip). A set left in dst
    by an earlier build goes first."""
    shutil.rmtree(dst, ignore_errors=True)
    aot = _load_beside("aot")
    chosen = aot.selection()
    if not chosen:
        note("QATTN_AOT=none: no ahead-of-time kernels")
        return
    exe = os.environ.get("ATTN_OPT") or shutil.which("attn-opt")
    if not exe or not Path(exe).is_file():
        note("attn-opt not found ($ATTN_OPT, PATH): no ahead-of-time kernels; GPU specs then "
             "need attn-opt where they run")
        return
    start = time.monotonic()
    index = aot.build_set(dst, exe, chosen, log=note)
    note(f"ahead-of-time kernels: {len(index)} of {len(chosen)} compiled by {exe} in "
         f"{time.monotonic() - start:.0f} s into {dst}")


def drop_stale_extensions(package):
    """Removes from the build folder (python/build/lib.*, reused by every build of this checkout)
    the compiled libraries this build does not make: a torch extension left by a build where torch
    was importable would otherwise ship in a wheel built without it (against another torch, or
    without the current ops), and so would a runtime left by a build that had cuda.h."""
    names = {e.name for e in ext_modules}
    stale = [] if "qattn._torch_ops" in names else list(package.glob("_torch_ops*.so"))
    if RUNTIME_NAME not in names:
        stale += list((package / "lib").glob("libattn_rt.so"))
    for path in stale:
        note(f"removing {path} left by an earlier build")
        path.unlink()


class BuildPyWithSources(build_py):
    """Ships the extension's sources as qattn/_csrc, for qattn.torch_ops to compile on first use
    where the wheel was built without torch (pip's default isolated build), and the
    ahead-of-time kernel set as qattn/_aot."""

    def run(self):
        drop_stale_extensions(Path(self.build_lib) / "qattn")
        super().run()
        build_aot_set(Path(self.build_lib) / "qattn" / "_aot")
        headers = [h.relative_to(ROOT / "include")
                   for h in sorted((ROOT / "include" / "attn" / "Runtime").glob("*.h"))]
        headers += HEURISTIC_HEADERS
        if not all(p.is_file() for p in RUNTIME_SOURCES) or not headers:
            return
        dst = Path(self.build_lib) / "qattn" / "_csrc"
        dst.mkdir(parents=True, exist_ok=True)
        for src in [*sorted((HERE / "csrc").glob("*.[ch]*")), *RUNTIME_SOURCES]:
            self.copy_file(str(src), str(dst / src.name))
        for h in headers:
            (dst / "include" / h.parent).mkdir(parents=True, exist_ok=True)
            self.copy_file(str(ROOT / "include" / h), str(dst / "include" / h))


ext_modules, build_cls = extensions()


commands = {"build_ext": with_runtime_name(build_cls), "build_py": BuildPyWithSources}
if bdist_wheel is not None:
    class BdistWheel(bdist_wheel):
        """A wheel without the torch extension holds no Python extension module (libattn_rt.so
        is a plain library, loaded through ctypes; the extension's sources compile on first
        use): it is tagged py3-none-<platform>, so that every Python 3 there installs it."""

        def get_tag(self):
            python, abi, plat = super().get_tag()
            if not any(e.name == "qattn._torch_ops" for e in ext_modules):
                python, abi = "py3", "none"
            return python, abi, plat

    commands["bdist_wheel"] = BdistWheel
setup(ext_modules=ext_modules, cmdclass=commands)
