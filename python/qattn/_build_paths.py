"""Where the headers the native parts of qattn build against are: cuda.h and nlohmann/json.hpp.

What this file is: the one header lookup that python/setup.py (at package build time, loaded by
path so that qattn/__init__ and its dependencies are not imported) and qattn.torch_ops (compiling
the extension on first use) share. Standard library only; torch is asked for its CUDA home when
it is importable.
"""

import os
from pathlib import Path

# The runtime's sources, relative to the checkout (libattn_rt.so is the first three; the torch
# extension compiles all four in), and the extension's own (python/csrc, shipped as
# qattn/_csrc beside the runtime's): what setup.py builds and qattn.torch_ops compiles on first
# use.
RUNTIME_SOURCES = ("lib/Runtime/Runtime.cpp", "lib/Dialect/Attn/Transforms/ScheduleHeuristics.cpp",
                   "lib/Dialect/Attn/Transforms/ForwardSharedMemory.cpp",
                   "lib/Runtime/LaunchMetadata.cpp")
EXTENSION_SOURCES = ("torch_ops.cpp", "kernel_files.cpp", "append_op.cpp", "page_check.cpp")


def cuda_include():
    """A directory holding cuda.h (the driver API header; types only), or None. Looked for under
    $CUDA_HOME, $CUDA_PATH, /usr/local/cuda and torch's CUDA home, in that order."""
    homes = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    try:
        from torch.utils.cpp_extension import CUDA_HOME
        homes.append(CUDA_HOME)
    except Exception:  # no torch, or torch without CUDA: not an error here
        pass
    for home in homes:
        if home and (Path(home) / "include" / "cuda.h").is_file():
            return str(Path(home) / "include")
    return None


def json_include():
    """A directory holding nlohmann/json.hpp (the launch-metadata reader's JSON library): the
    PyPI package nlohmann_json (a build requirement, and the `torch` extra's), else the system's,
    else None."""
    try:
        import nlohmann_json
        inc = Path(nlohmann_json.__file__).resolve().parent / "include"
        if (inc / "nlohmann" / "json.hpp").is_file():
            return str(inc)
    except ImportError:
        pass
    for inc in ("/usr/include", "/usr/local/include"):
        if (Path(inc) / "nlohmann" / "json.hpp").is_file():
            return inc
    return None
