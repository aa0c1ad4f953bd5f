"""The ahead-of-time kernel set: decode kernels for common configurations, compiled by attn-opt
while the package is built and shipped in ``qattn/_aot``, so that GPU machines without attn-opt
run them.

What this file is: the set (names → ``qattn.attention`` keywords), its build (``build_set``, which
python/setup.py runs with this file and spec.py loaded by path, importing nothing else of qattn)
and its lookup (``find`` / ``require``, which ``qattn.build``, ``DecodePlan`` and ``qattn.hf``
ask first).

The set: decode (one query token, dynamic batch and KV length, per-sequence ``seq_lens``) at
head_dim 64, 128 and 256, GQA ratios 1, 4, 8 and 16 on 8 KV heads (8, 32, 64 and 128 query
heads), bf16 queries and output, over

* a contiguous cache [B, S, Hkv, D] in the KV formats

  - ``i8``: int8 codes, one float32 scale per (token, head), symmetric (``half_int8`` mode);
  - ``u8``: uint8 codes with per-(token, head) scales and zero points (asymmetric);
  - ``e4m3``: float8 e4m3 codes with per-(token, head) scales (``fp8`` mode);
  - ``bf16``: an unquantized cache;

* a paged cache (docs/PagedKV.md): pools of pages [num_pages, P, Hkv, D] with a dynamic
  ``num_pages``, scales stored per page, and a block table ``memref<?x?xi32>`` whose width
  (``max_blocks``) is dynamic too, so one kernel serves every cache size; page sizes
  ``QATTN_AOT_PAGES`` (16 and 64 in the catalog), formats ``i8``, ``u8`` (zero points stored per
  page like the scales), ``e4m3`` and ``bf16``.

A contiguous kernel is named ``decode_d<head_dim>_g<ratio>_kv<kv_heads>_<format>``
(``decode_d128_g4_kv8_i8``: Llama-3-8B's layer), a paged one adds ``_p<page_size>``
(``decode_d128_g4_kv8_i8_p16``). Choosing the set at build time (environment of ``pip install``):

* ``QATTN_AOT``: ``none`` builds nothing; ``default`` (or unset) the contiguous set and the paged
  set at ``QATTN_AOT_PAGES``; otherwise a comma list of ``default`` and shell patterns over kernel
  names (``decode_d128_*``, ``*_i8``, ``default,*_p16``), matched against every kernel of the
  catalog at pages 16, 64 and those of ``QATTN_AOT_PAGES``;
* ``QATTN_AOT_PAGES``: the page sizes of the default set's paged kernels, comma-separated powers
  of two (default ``64``, ``qattn.hf``'s page size; ``16,64`` adds vLLM's, ``none`` leaves the
  paged kernels out). Each page size adds 48 kernels to the 48 contiguous ones, about as long to
  compile each (python/README.md has the times);
* ``QATTN_AOT_KV_HEADS``: the KV head counts, comma-separated (default ``8``);
* ``QATTN_AOT_JOBS``: attn-opt processes at a time (default: the CPU count).

``python -m qattn.aot --selection`` lists what these choose; ``python -m qattn.aot`` what shipped.

A spec is found in the set when its MLIR text equals a set member's up to the function's name and
the block table's width: a spec with a static ``max_blocks`` (``qattn.hf``'s, one per table
width) finds the member with a dynamic one, which takes tables of any width at launch.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

try:
    from .compiler import AttnOptNotFound
    from .spec import attention
except ImportError:  # loaded by path (setup.py): spec.py beside this file, by path too
    import importlib.util

    _spec = importlib.util.spec_from_file_location(
        "qattn_aot_spec", Path(__file__).resolve().parent / "spec.py")
    _module = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_module)
    attention = _module.attention
    AttnOptNotFound = LookupError

HEAD_DIMS = (64, 128, 256)
GQA_RATIOS = (1, 4, 8, 16)
FORMATS = {
    "i8": dict(kv_dtype="i8", granularity="per_token_head", mode="half_int8"),
    "u8": dict(kv_dtype="ui8", granularity="per_token_head", symmetric=False),
    "e4m3": dict(kv_dtype="f8E4M3FN", granularity="per_token_head", mode="fp8"),
    "bf16": dict(kv_dtype="bf16"),
}
#: The paged kernels' formats (every one of the contiguous set).
PAGED_FORMATS = ("i8", "u8", "e4m3", "bf16")
#: Page sizes whose paged kernels the catalog always holds (QATTN_AOT patterns match them).
PAGE_SIZES = (16, 64)
#: QATTN_AOT_PAGES when unset: the page sizes of the default set's paged kernels.
DEFAULT_PAGES = (64,)
_CODE_BYTES = {"i8": 1, "u8": 1, "e4m3": 1, "bf16": 2}
PASSES = ("--attn-normalize", "--attn-select-schedule")
KERNEL_FILE = "kernels.ptx"  # as qattn.gpu.KERNEL_FILE: each kernel is a directory build() loads
INDEX = "index.json"
DIR = Path(__file__).resolve().parent / "_aot"


class KernelNotAvailable(AttnOptNotFound):
    """No kernel for a spec in the ahead-of-time set, and no attn-opt to compile one."""


def paged_supported(page_size: int, head_dim: int, fmt: str) -> bool:
    """Whether attn-opt compiles a paged decode kernel of this page size, head_dim and format:
    bf16 pages of at least 8 tokens, pages of at least 128 bytes per head
    (docs/PagedKV.md, "Lowering")."""
    return (fmt in PAGED_FORMATS and not (fmt == "bf16" and page_size < 8)
            and page_size * head_dim * _CODE_BYTES[fmt] >= 128)


def catalog(kv_heads=(8,), pages=()):
    """{name: attention() keywords} of every kernel the set can hold: the contiguous kernels and,
    per page size in ``pages``, the paged ones (dynamic num_pages and max_blocks)."""
    out = {}
    for hkv in kv_heads:
        for d in HEAD_DIMS:
            for g in GQA_RATIOS:
                base = dict(q_len=1, q_heads=g * hkv, kv_heads=hkv, head_dim=d, seq_lens=True)
                for fmt, kw in FORMATS.items():
                    out[f"decode_d{d}_g{g}_kv{hkv}_{fmt}"] = dict(base, **kw)
                for p in pages:
                    for fmt in PAGED_FORMATS:
                        if paged_supported(p, d, fmt):
                            out[f"decode_d{d}_g{g}_kv{hkv}_{fmt}_p{p}"] = dict(
                                base, page_size=p, num_pages=None, **FORMATS[fmt])
    return out


def spec_of(name: str, keywords: dict):
    return attention("decode", batch=None, kv_len=None, name=name, **keywords)


def key(text: str) -> str:
    """The lookup key of a spec's MLIR text: its hash with the function's name left out."""
    canonical = re.sub(r"func\.func\s+@[\w$.]+", "func.func @k", str(text))
    # A block table's static width (max_blocks) reads as dynamic: the set's paged kernels take
    # tables of any width. Only a block table is a 2-D i32 memref in an attention spec.
    canonical = re.sub(r"memref<([?\d]+)x\d+xi32>", r"memref<\1x?xi32>", canonical)
    canonical = " ".join(canonical.split())  # the name's length moves the continuation lines
    return hashlib.sha256(canonical.encode()).hexdigest()


_NAME = re.compile(r"decode_d\d+_g\d+_kv(\d+)_[a-z0-9]+(?:_p(\d+))?")


def _int_list(env, var, default):
    text = env.get(var, default).strip()
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ValueError(f"{var} must be comma-separated integers, got {text!r}") from None


def page_sizes(env=None):
    """The page sizes QATTN_AOT_PAGES asks for (default DEFAULT_PAGES; ``none``: none)."""
    env = os.environ if env is None else env
    text = env.get("QATTN_AOT_PAGES", ",".join(map(str, DEFAULT_PAGES))).strip()
    if text.lower() == "none":
        return ()
    pages = _int_list({"QATTN_AOT_PAGES": text}, "QATTN_AOT_PAGES", "")
    bad = [p for p in pages if not 1 <= p <= 256 or p & (p - 1)]
    if bad:
        raise ValueError(f"QATTN_AOT_PAGES must list powers of two in [1, 256] (or be 'none'), "
                         f"got {text!r}")
    return tuple(dict.fromkeys(pages))


def selection(env=None):
    """The names the build environment asks for (QATTN_AOT, QATTN_AOT_PAGES,
    QATTN_AOT_KV_HEADS), as a catalog."""
    env = os.environ if env is None else env
    choice = env.get("QATTN_AOT", "default").strip() or "default"
    heads = _int_list(env, "QATTN_AOT_KV_HEADS", "8") or (8,)
    pages = page_sizes(env)
    if choice == "none":
        return {}
    default = catalog(heads, pages)
    every = catalog(heads, tuple(dict.fromkeys(PAGE_SIZES + pages)))
    patterns = [p.strip() for p in choice.split(",") if p.strip()]
    chosen = {n: kw for n, kw in every.items()
              if ("default" in patterns and n in default)
              or any(fnmatch.fnmatchcase(n, p) for p in patterns)}
    for p in patterns:  # a full name: at any KV head count and page size the catalog can hold
        named = _NAME.fullmatch(p)
        if named and p not in chosen:
            page = (int(named.group(2)),) if named.group(2) else ()
            chosen.update((n, kw) for n, kw in catalog((int(named.group(1)),), page).items()
                          if n == p)
    if not chosen:
        raise ValueError(f"QATTN_AOT={choice!r} matches no kernel of the set (names such as "
                         f"{next(iter(every))} or {next(n for n in every if '_p' in n)}; "
                         f"'default' is the default set, 'none' builds nothing)")
    return chosen


def _compile_one(exe, name, keywords, out_root: Path):
    """(name, index entry) or (name, error text)."""
    spec = spec_of(name, keywords)
    dst = out_root / name
    dst.mkdir(parents=True, exist_ok=True)
    cmd = [exe, *PASSES, "--emit=ptx", "-", "-o", str(dst / KERNEL_FILE)]
    try:
        proc = subprocess.run(cmd, input=spec.text.encode(), capture_output=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as e:
        return name, f"{' '.join(cmd)}: {e}"
    if proc.returncode != 0 or not (dst / (KERNEL_FILE + ".launch.json")).is_file():
        return name, proc.stderr.decode(errors="replace").strip()[:2000] or "no output"
    return name, {"key": key(spec.text), "spec": keywords}


def build_set(out_root, attn_opt: str, chosen: dict, jobs=None, log=print):
    """Compiles the chosen kernels into out_root/<name>/ with attn-opt, `jobs` at a time, and
    writes out_root/index.json. A kernel attn-opt rejects is left out (logged). Returns the
    index."""
    out_root = Path(out_root)
    out_root.mkdir(parents=True, exist_ok=True)
    jobs = jobs or int(os.environ.get("QATTN_AOT_JOBS", "0") or 0) or os.cpu_count() or 1
    index = {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(_compile_one, attn_opt, n, kw, out_root) for n, kw in chosen.items()]
        for f in futures:
            name, result = f.result()
            if isinstance(result, dict):
                index[name] = result
            else:
                log(f"ahead-of-time kernel {name} left out: {result}")
    try:
        version = subprocess.run([attn_opt, "--version"], capture_output=True,
                                 timeout=60).stdout.decode(errors="replace").strip()
    except (OSError, subprocess.TimeoutExpired):
        version = ""
    (out_root / INDEX).write_text(json.dumps({"attn_opt": version, "kernels": index}, indent=1,
                                             sort_keys=True))
    return index


def index(root=None) -> dict:
    """{name: entry} of the set shipped in `root` (default: the package's), {} when none."""
    path = Path(root or DIR) / INDEX
    try:
        return json.loads(path.read_text()).get("kernels", {})
    except (OSError, ValueError):
        return {}


def names(root=None):
    return sorted(index(root))


def find(spec, root=None):
    """The directory of the set's kernel for `spec` (a Spec, MLIR text or a kernel name), or
    None."""
    root = Path(root or DIR)
    entries = index(root)
    text = getattr(spec, "text", spec)
    if isinstance(text, str) and text in entries:
        found = text
    else:
        k = key(text)
        found = next((n for n, e in entries.items() if e.get("key") == k), None)
    if found is None or not (root / found / KERNEL_FILE).is_file():
        return None
    return root / found


def describe(spec) -> str:
    """One line naming a spec: its attn.attention line and quantization attributes."""
    text = str(getattr(spec, "text", spec))
    lines = [line.strip() for line in text.splitlines()
             if line.strip().startswith(("attn.attention", "k_quant", "{k_quant", "mode",
                                         "v_quant", "seq_lens", "k_zero", "block_table",
                                         "page_size", "{page_size"))]
    return " ".join(lines).rstrip(",") or text.strip().splitlines()[0]


def member(spec):
    """The catalog's name for `spec` (at its KV head count and page size), or None: the name a
    build must be given (QATTN_AOT) to ship it."""
    text = str(getattr(spec, "text", spec))
    pool = re.search(r"attn\.attention\s+decode\s+ins\([^:]*:\s*memref<[^>]*>,\s*"
                     r"memref<([?\d]+)x([?\d]+)x(\d+)x", text)
    if pool is None:
        return None
    page = re.search(r"page_size\s*=\s*(\d+)", text)
    k = key(text)
    pages = (int(page.group(1)),) if page else ()
    return next((n for n, kw in catalog((int(pool.group(3)),), pages).items()
                 if key(spec_of(n, kw).text) == k), None)


def require(spec, root=None):
    """find(), else KernelNotAvailable naming the spec and how to compile it."""
    found = find(spec, root)
    if found is not None:
        return found
    have = names(root)
    shipped = (f"the package's ahead-of-time set has {len(have)} kernels ({have[0]} ... "
               f"{have[-1]}; python -m qattn.aot lists them)" if have
               else "the package has no ahead-of-time kernels (attn-opt was not found when it "
                    "was built)")
    name = member(spec)
    reinstall = (f"or reinstall the package with attn-opt on PATH and QATTN_AOT=default,{name} "
                 f"(this spec is the set's {name})" if name else
                 "or reinstall the package with attn-opt on PATH and QATTN_AOT naming it")
    raise KernelNotAvailable(
        f"no compiled kernel for the spec [{describe(spec)}]: {shipped}. Compile it where attn-opt "
        f"is installed: save the spec's text as spec.mlir and run `attn-opt {' '.join(PASSES)} "
        f"--emit=ptx spec.mlir -o kernel.ptx` (writes kernel.ptx and kernel.ptx.launch.json, "
        f"which DecodePlan takes; qattn.build(spec) does the same), {reinstall}")


def main(argv):
    """python -m qattn.aot [ROOT]: lists the shipped set; ``--selection``: the kernels a build in
    this environment would compile (QATTN_AOT, QATTN_AOT_PAGES, QATTN_AOT_KV_HEADS)."""
    if argv[1:] == ["--selection"]:
        try:
            chosen = selection()
        except ValueError as e:
            print(f"qattn.aot: {e}", file=sys.stderr)
            return 2
        print("\n".join(chosen))
        return 0
    for n in names(argv[1] if len(argv) > 1 else None):
        print(n)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
