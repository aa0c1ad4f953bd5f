//===- kernel_files.cpp - compiled decode / prefill kernels, per device ---===//
//
// What this file is: kernel_files.h's definitions — reading a kernel's PTX and launch metadata,
// loading its module on a device, and the dtypes of the metadata's names.
//
//===----------------------------------------------------------------------===//

#include "kernel_files.h"

#include <array>
#include <fstream>
#include <sstream>

namespace attn_opt_ext {

DeviceModule &KernelFiles::load(int device) {
  std::lock_guard<std::mutex> lock(mutex);
  auto &slot = devices[device];
  if (slot)
    return *slot;
  auto m = std::make_unique<DeviceModule>();
  m->ctx = contextFor(device);
  check(attn_rt_load_module(m->ctx, ptx.c_str(), ptx.size() + 1, meta.arch, &m->module),
        "loading " + path + " on cuda:" + std::to_string(device));
  for (const attn::rt::LaunchKernel &k : meta.kernels) {
    attn_rt_kernel *handle = nullptr;
    check(attn_rt_get_kernel(m->module, k.name.c_str(), &handle), "kernel " + k.name);
    m->kernels[k.name] = handle;
  }
  check(attn_rt_sm_count(m->ctx, &m->sms), "querying the SM count");
  slot = std::move(m);
  return *slot;
}

std::shared_ptr<KernelFiles> kernelFiles(const std::string &path) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<KernelFiles>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(path);
  if (it != cache.end())
    return it->second;
  auto files = std::make_shared<KernelFiles>();
  files->path = path;
  std::ifstream in(path, std::ios::binary);
  TORCH_CHECK_VALUE(in, cat("attn_opt: cannot read the kernel ", path));
  std::stringstream text;
  text << in.rdbuf();
  files->ptx = text.str();
  std::string error;
  TORCH_CHECK_VALUE(attn::rt::readDecodeLaunch(path + ".launch.json", files->meta, error),
                    cat("attn_opt: ", error));
  const std::string &kind = files->meta.kind;
  TORCH_CHECK_VALUE(kind == "decode" || kind == "prefill",
                    cat("attn_opt: ", path, ": not a decode / prefill kernel (kind '", kind, "')"));
  cache[path] = files;
  return files;
}

Dtypes kvDtypes(const std::string &kv) {
  static const std::array<at::ScalarType, 2> i8 = {at::kChar, at::kByte},
                                             f8 = {at::kFloat8_e4m3fn, at::kByte};
  static const std::array<at::ScalarType, 1> u8 = {at::kByte}, bf16 = {at::kBFloat16};
  return kv == "i8"         ? Dtypes(i8)
         : kv == "ui8"      ? Dtypes(u8)
         : kv == "f8E4M3FN" ? Dtypes(f8)
                            : Dtypes(bf16);
}

Dtypes qDtypes(const std::string &q) {
  static const std::array<at::ScalarType, 1> i8 = {at::kChar}, bf16 = {at::kBFloat16};
  static const std::array<at::ScalarType, 2> f8 = {at::kFloat8_e4m3fn, at::kByte};
  return q == "i8" ? Dtypes(i8) : q == "f8E4M3FN" ? Dtypes(f8) : Dtypes(bf16);
}

attn_rt_dtype mapDtype(const std::string &dtype) {
  return dtype == "bf16"  ? ATTN_RT_DTYPE_BF16
         : dtype == "f16" ? ATTN_RT_DTYPE_F16
                          : ATTN_RT_DTYPE_U8;
}

} // namespace attn_opt_ext
