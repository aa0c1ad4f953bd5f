# lit configuration of the check-attn suite: test formats, substitutions, and the hardware
# features detected at run time (ptxas, qemu-aarch64, cuda-device).
import os
import shutil
import subprocess

import lit.formats
from lit.llvm import llvm_config

config.name = "ATTN"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "Inputs", "CMakeLists.txt", "README.md"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.attn_obj_root, "test")

llvm_config.with_system_environment(["HOME", "PATH", "CUDA_HOME"])
llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.attn_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

config.substitutions.append(("%attn_src", config.attn_src_root))
config.substitutions.append(("%attn_obj", config.attn_obj_root))
config.substitutions.append(("%examples", os.path.join(config.attn_src_root, "examples")))
config.substitutions.append(("%python", "/usr/bin/python3"))
tool_dirs = [config.attn_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(["attn-opt", "attn-fuzz-verifier", "attn-spec-fuzz", "attn-rt-smoke", "attn-bench", "FileCheck", "not", "llvm-nm"],
                                   tool_dirs)

# --- hardware / toolchain features -------------------------------------------------------------
ptxas = config.ptxas_path or shutil.which("ptxas")
if ptxas and os.path.exists(ptxas):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))

# Host ISA features, for tests that execute x86 objects.
try:
    with open("/proc/cpuinfo") as f:
        cpu_flags = next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), [])
except OSError:
    cpu_flags = []
for flag in ("avx2", "avx512bw", "avx512vbmi", "avx512_vnni"):
    if flag in cpu_flags:
        config.available_features.add("host-" + flag)
if shutil.which("g++"):
    config.available_features.add("host-cxx")

if shutil.which("qemu-aarch64") and shutil.which("aarch64-linux-gnu-g++"):
    config.available_features.add("qemu-aarch64")


def has_cuda_device():
    if os.environ.get("ATTN_NO_CUDA_DEVICE"):
        return False
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and "GPU" in out.stdout


if has_cuda_device():
    config.available_features.add("cuda-device")

if config.sanitizers in ("ON", "1", "TRUE"):
    config.available_features.add("asan")
    # Our code is instrumented, libMLIR is not: LLVM's BumpPtrAllocator, inlined into our code,
    # poisons fresh slabs that libMLIR's (uninstrumented) copy then hands out without unpoisoning,
    # which ASan reports as use-after-poison on valid attribute storage. Ignore manual poisoning;
    # heap errors of malloc/new are still caught.
    config.environment["ASAN_OPTIONS"] = "allow_user_poisoning=0"
# Full LLVM code generation in the fuzz run: every 50th accepted module normally, every 500th in
# the (about 10× slower) sanitizer build; all of them still go through --emit=header and ptx.
config.substitutions.append(
    ("%fuzz_codegen_every", "500" if "asan" in config.available_features else "50"))
