"""qattn: a Python front end for `attn-opt`, the MLIR compiler for quantized attention kernels.

Build a spec (``attention(...)``) or write MLIR by hand, then ``compile`` it::

    import qattn
    spec = qattn.attention("decode", batch=16, q_len=3, kv_len=8192, q_heads=16, kv_heads=1,
                           head_dim=128, kv_dtype="i8", mode="half_int8")
    print(qattn.compile(spec).output)

The compiler itself is the `attn-opt` executable; ``find_attn_opt`` says how it is located.
``qattn.nomad`` trains and stores the product-quantization codebooks of NoMAD-Attention
(``train_codebooks``, ``encode``, ``inertia``, ``save_codebooks``, ``load_codebooks``).
"""

from .compiler import (
    AttnOptNotFound,
    CompileError,
    CompileResult,
    Diagnostic,
    QattnError,
    compile,
    find_attn_opt,
    parse_diagnostics,
    version,
)
from .cpu import attend as nomad_attend
from .gpu import GpuDecodeKernel, GpuError
from .kernels import BuildError, CpuLibrary, KernelArgumentError, build
from .nomad import encode, inertia, load_codebooks, save_codebooks, train_codebooks
from .spec import Spec, attention, quantize, quantize_paged

__version__ = "0.1.0"

__all__ = [
    "AttnOptNotFound",
    "BuildError",
    "CpuLibrary",
    "GpuDecodeKernel",
    "GpuError",
    "KernelArgumentError",
    "build",
    "CompileError",
    "CompileResult",
    "Diagnostic",
    "QattnError",
    "Spec",
    "attention",
    "compile",
    "encode",
    "find_attn_opt",
    "inertia",
    "nomad_attend",
    "load_codebooks",
    "parse_diagnostics",
    "quantize",
    "quantize_paged",
    "save_codebooks",
    "train_codebooks",
    "version",
]
