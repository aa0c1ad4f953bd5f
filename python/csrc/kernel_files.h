//===- kernel_files.h - compiled decode / prefill kernels, per device -----===//
//
// What this file is: the PTX and launch metadata (`*.launch.json`, docs/GPUDecode.md) of one
// decode or prefill kernel attn-opt compiled, read once per path, and its module and kernel
// handles loaded lazily on each device that runs it (kernel_files.cpp); the torch dtypes the
// metadata's dtype names stand for. torch_ops.cpp builds its plans on them.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_OPT_PYTHON_CSRC_KERNEL_FILES_H
#define ATTN_OPT_PYTHON_CSRC_KERNEL_FILES_H

#include "common.h"

#include "attn/Runtime/LaunchMetadata.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace attn_opt_ext {

/// One kernel file's module on one device.
struct DeviceModule {
  attn_rt_context *ctx = nullptr;
  attn_rt_module *module = nullptr;
  std::map<std::string, attn_rt_kernel *> kernels;
  int sms = 0;
};

/// PTX + launch metadata of one compiled op, loaded lazily on each device that runs it.
struct KernelFiles {
  std::string path;
  std::string ptx;
  attn::rt::DecodeLaunch meta;
  std::mutex mutex;
  std::map<int, std::unique_ptr<DeviceModule>> devices;

  /// The module on cuda:<device>, loaded on first use (its primary context).
  DeviceModule &load(int device);
};

/// The files at `path` (PTX) and `path`.launch.json, read once per path; a decode or prefill
/// kernel, else ValueError.
std::shared_ptr<KernelFiles> kernelFiles(const std::string &path);

/// torch dtypes of K/V codes ("i8", "ui8", "f8E4M3FN", "bf16"); the first is the zero points'.
Dtypes kvDtypes(const std::string &kv);
/// torch dtypes of the queries ("bf16", "i8", "f8E4M3FN").
Dtypes qDtypes(const std::string &q);
/// The runtime's tensor-map element type of a map dtype ("bf16", "f16", else u8).
attn_rt_dtype mapDtype(const std::string &dtype);

} // namespace attn_opt_ext

#endif // ATTN_OPT_PYTHON_CSRC_KERNEL_FILES_H
