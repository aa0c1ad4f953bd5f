//===- common.h - what the attn_opt torch ops share -----------------------===//
//
// What this file is: what the attn_opt torch extension's op files share (torch_ops.cpp: the
// decode / prefill plans and runs; append_op.cpp: the quantize-append op) — messages, runtime
// status checks, the runtime context of each device, the current stream, tensor checks.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_OPT_PYTHON_CSRC_COMMON_H
#define ATTN_OPT_PYTHON_CSRC_COMMON_H

#include "attn/Runtime/Runtime.h"

#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#if ATTN_OPT_C10_CUDA // torch with CUDA: its current stream directly (else through c10::Stream)
#include <c10/cuda/CUDAStream.h>
#endif

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <type_traits>

namespace attn_opt_ext {

/// Messages are built here as one std::string (std::to_string, no std::ostringstream): a toolchain
/// that links its own static libstdc++ into this library crashes formatting numbers through
/// streams whose locale another libstdc++ set up. TORCH_CHECK passes a single string through.
inline std::string text(const std::string &s) { return s; }
inline std::string text(const char *s) { return s; }
template <typename T, typename = std::enable_if_t<std::is_integral_v<T>>> std::string text(T v) {
  return std::to_string(v);
}
inline std::string text(c10::IntArrayRef values) {
  std::string s = "(";
  for (size_t i = 0; i < values.size(); ++i)
    s += (i ? ", " : "") + std::to_string(values[i]);
  return s + (values.size() == 1 ? ",)" : ")");
}
inline std::string text(const c10::Device &d) { return d.str(); }
inline std::string text(at::ScalarType t) { return std::string("torch.") + c10::toString(t); }
template <typename... A> std::string cat(const A &...parts) {
  std::string s;
  ((s += text(parts)), ...);
  return s;
}

/// Raises RuntimeError with the runtime's message unless `status` is ATTN_RT_OK.
inline void check(attn_rt_status status, const std::string &what) {
  TORCH_CHECK(status == ATTN_RT_OK, cat("attn_opt: ", what, ": ", attn_rt_status_name(status), ": ",
                                        attn_rt_last_error()));
}

/// The runtime context of cuda:<device> (its primary context, the one torch uses), made once.
inline attn_rt_context *contextFor(int device) {
  static std::mutex mutex;
  static std::map<int, attn_rt_context *> contexts;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = contexts.find(device);
  if (it != contexts.end())
    return it->second;
  attn_rt_context *ctx = nullptr;
  check(attn_rt_init(device, &ctx), "initializing cuda:" + std::to_string(device));
  contexts[device] = ctx;
  return ctx;
}

/// torch's current stream on `dev`.
inline void *currentStream(const c10::Device &dev) {
#if ATTN_OPT_C10_CUDA
  return c10::cuda::getCurrentCUDAStream(dev.index()).stream();
#else
  return c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->getStream(dev).native_handle();
#endif
}

inline uint64_t address(const at::Tensor &t) { return reinterpret_cast<uint64_t>(t.data_ptr()); }

using Dtypes = c10::ArrayRef<at::ScalarType>;

inline std::string dtypeList(Dtypes dtypes) {
  std::string s;
  for (at::ScalarType d : dtypes)
    s += (s.empty() ? "" : " or ") + std::string(c10::toString(d));
  return s;
}

/// Checks device, dtype, shape, contiguity and 16-byte alignment; messages name the op and the
/// operand.
inline void expectTensor(const char *op, const char *name, const at::Tensor &t, int device,
                         Dtypes dtypes, c10::IntArrayRef shape) {
  TORCH_CHECK_VALUE(t.is_cuda() && t.get_device() == device,
                    cat(op, ": ", name, " must be on cuda:", device, ", got ", t.device()));
  bool ok = false;
  for (at::ScalarType d : dtypes)
    ok |= t.scalar_type() == d;
  TORCH_CHECK_TYPE(ok, cat(op, ": ", name, " has dtype ", t.scalar_type(), ", expected ",
                           dtypeList(dtypes)));
  TORCH_CHECK_VALUE(t.sizes().equals(shape),
                    cat(op, ": ", name, " has shape ", t.sizes(), ", expected ", shape));
  TORCH_CHECK_VALUE(t.is_contiguous(), cat(op, ": ", name, " must be contiguous"));
  TORCH_CHECK_VALUE(address(t) % 16 == 0, cat(op, ": ", name, " must be 16-byte aligned"));
}

} // namespace attn_opt_ext

#endif // ATTN_OPT_PYTHON_CSRC_COMMON_H
