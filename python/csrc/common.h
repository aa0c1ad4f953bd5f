//===- common.h - what the attn_opt torch ops share -----------------------===//
//
// What this file is: what the attn_opt torch extension's op files share (torch_ops.cpp: the
// decode / prefill plans and runs; append_op.cpp: the quantize-append op) — messages, runtime
// status checks, the runtime context of each device, the current stream, tensor checks, scale
// shapes.
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
#include <vector>

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

namespace detail {
/// The positive decimal number `text[from, to)`, or -1 (also past 2^31).
inline int64_t positive(const std::string &text, size_t from, size_t to) {
  int64_t n = 0;
  for (size_t i = from; i < to; ++i) {
    if (text[i] < '0' || text[i] > '9' || n >= (int64_t(1) << 31))
      return -1;
    n = n * 10 + (text[i] - '0');
  }
  return from < to && n > 0 ? n : -1;
}
} // namespace detail

/// The scales' shape of a [b, s, h, d] tensor quantized with granularity `g`, as
/// qattn.spec.scale_shape: per_token_head [b, s, h], per_token [b, s], per_head [h], per_tensor
/// [1], per_channel [h, d], per_group<G> [b, s, h, ceil(d / G)], per_block<RxC> [b, ceil(s / R),
/// h, ceil(d / C)], and the launch metadata's bare per_block (R = `blockRows`, C = d). "none"
/// (no scales) has the empty shape; spaces are ignored (MLIR prints `per_block<1 x 64>`). Anything
/// else raises ValueError naming `op`.
inline std::vector<int64_t> scaleShape(const char *op, const std::string &given, int64_t b,
                                       int64_t s, int64_t h, int64_t d, int64_t blockRows = 1) {
  auto ceilDiv = [](int64_t x, int64_t y) { return (x + y - 1) / y; };
  std::string g;
  for (char ch : given)
    if (ch != ' ')
      g += ch;
  if (g == "none")
    return {};
  if (g == "per_token_head")
    return {b, s, h};
  if (g == "per_token")
    return {b, s};
  if (g == "per_head")
    return {h};
  if (g == "per_tensor")
    return {1};
  if (g == "per_channel")
    return {h, d};
  if (g == "per_block" && blockRows > 0)
    return {b, ceilDiv(s, blockRows), h, 1};
  const std::string group = "per_group<", block = "per_block<";
  if (g.size() > group.size() && g.back() == '>' && g.compare(0, group.size(), group) == 0) {
    const int64_t n = detail::positive(g, group.size(), g.size() - 1);
    if (n > 0)
      return {b, s, h, ceilDiv(d, n)};
  }
  if (g.size() > block.size() && g.back() == '>' && g.compare(0, block.size(), block) == 0) {
    const size_t x = g.find('x', block.size());
    const int64_t r = x == std::string::npos ? -1 : detail::positive(g, block.size(), x);
    const int64_t c = x == std::string::npos ? -1 : detail::positive(g, x + 1, g.size() - 1);
    if (r > 0 && c > 0)
      return {b, ceilDiv(s, r), h, ceilDiv(d, c)};
  }
  TORCH_CHECK_VALUE(false, cat(op, ": the granularity '", given, "' has no scale shape"));
  return {};
}

} // namespace attn_opt_ext

#endif // ATTN_OPT_PYTHON_CSRC_COMMON_H
