//===- append_op.cpp - the quantize-append kernel as a torch op -----------===//
//
// What this file is: `attn_opt::quantize_append`, the `attn.quantize.append` kernel attn-opt
// compiled (PTX + `*.launch.json`, docs/GPUQuantize.md) as a torch op of this extension:
//
//   attn_opt::quantize_append(str kernel, Tensor src, Tensor positions, Tensor(a!) dst,
//                             Tensor(b!) scales, Tensor(c!)? zeros=None) -> ()
//       Quantizes `src` [B, S, H, D] into the cache `dst` [B, capacity, H, D] at rows
//       positions[b] + i, writing the rows' scales (and zero points); on torch's current stream of
//       the tensors' device. The kernel skips rows outside [0, capacity), so positions need no
//       host check: no synchronization and no allocation, and a CUDA graph captures it.
//
// The kernel file is read once per path and its module loaded once per device. Checks are those
// of qattn.gpu_quantize.GpuQuantizeKernel (dtypes, shapes of every operand from the metadata's
// problem, contiguity, 16-byte alignment, one device).
//
//===----------------------------------------------------------------------===//

#include "common.h"

#include "attn/Runtime/LaunchMetadata.h"

#include <nlohmann/json.hpp>
#include <torch/library.h>

#include <memory>
#include <vector>

namespace {
using namespace attn_opt_ext;
constexpr const char *kOp = "attn_opt.quantize_append";

/// One compiled quantize-append op: its metadata, and its module on each device that ran it.
struct AppendKernel {
  std::string path, ptx, name, granularity;
  int arch = 0;
  unsigned block[3] = {1, 1, 1};
  unsigned smem = 0;
  std::vector<std::string> params;
  int64_t batch = -1, newTokens = -1, capacity = -1, heads = 0, headDim = 0;
  int64_t groupsPerToken = 0, groupsPerCta = 0;
  at::ScalarType src = at::kBFloat16, scale = at::kFloat;
  std::vector<at::ScalarType> codes; // accepted dtypes of dst; the first is the zero points'
  bool symmetric = true;
  std::mutex mutex;
  std::map<int, attn_rt_kernel *> handles;

  attn_rt_kernel *handle(int device);
};

at::ScalarType floatType(const std::string &d, const std::string &path) {
  if (d == "bf16")
    return at::kBFloat16;
  if (d == "f16")
    return at::kHalf;
  TORCH_CHECK_VALUE(d == "f32", cat(kOp, ": ", path, ": unknown float dtype '", d, "'"));
  return at::kFloat;
}

std::vector<at::ScalarType> codeTypes(const std::string &d, const std::string &path) {
  if (d == "i8")
    return {at::kChar};
  if (d == "ui8")
    return {at::kByte};
  TORCH_CHECK_VALUE(d == "f8E4M3FN", cat(kOp, ": ", path, ": unknown code dtype '", d, "'"));
  return {at::kFloat8_e4m3fn, at::kByte};
}

std::shared_ptr<AppendKernel> readKernel(const std::string &path) {
  auto k = std::make_shared<AppendKernel>();
  k->path = path;
  std::string json, error;
  TORCH_CHECK_VALUE(attn::rt::readRegularFile(path, 1 << 30, k->ptx, error),
                    cat(kOp, ": ", error));
  TORCH_CHECK_VALUE(attn::rt::readRegularFile(path + ".launch.json", 1 << 20, json, error),
                    cat(kOp, ": ", error));
  try {
    const nlohmann::json m = nlohmann::json::parse(json);
    const auto &p = m.at("problem");
    TORCH_CHECK_VALUE(p.at("kind").get<std::string>() == "quantize_append",
                      cat(kOp, ": ", path, ": not a quantize-append kernel (kind '",
                          p.at("kind").get<std::string>(), "')"));
    const auto &kernel = m.at("kernels").at(0);
    k->arch = m.at("arch").get<int>();
    k->name = kernel.at("name").get<std::string>();
    for (int i = 0; i < 3; ++i)
      k->block[i] = kernel.at("block").at(i).get<unsigned>();
    k->smem = kernel.at("smem_bytes").get<unsigned>();
    k->params = kernel.at("params").get<std::vector<std::string>>();
    k->batch = p.at("batch").get<int64_t>();
    k->newTokens = p.at("new_tokens").get<int64_t>();
    k->capacity = p.at("capacity").get<int64_t>();
    k->heads = p.at("heads").get<int64_t>();
    k->headDim = p.at("head_dim").get<int64_t>();
    k->granularity = p.at("granularity").get<std::string>();
    k->symmetric = p.at("symmetric").get<bool>();
    k->src = floatType(p.at("src_dtype").get<std::string>(), path);
    k->scale = floatType(p.at("scale_dtype").get<std::string>(), path);
    k->codes = codeTypes(p.at("code_dtype").get<std::string>(), path);
    const auto &s = m.at("schedule");
    k->groupsPerToken = s.at("groups_per_token").get<int64_t>();
    k->groupsPerCta = s.at("groups_per_cta").get<int64_t>();
  } catch (const nlohmann::json::exception &e) {
    TORCH_CHECK_VALUE(false, cat(kOp, ": ", path, ".launch.json: ", e.what()));
  }
  TORCH_CHECK_VALUE(k->groupsPerToken > 0 && k->groupsPerCta > 0 && k->heads > 0 && k->headDim > 0,
                    cat(kOp, ": ", path, ".launch.json: a schedule or problem extent is not "
                                         "positive"));
  return k;
}

std::shared_ptr<AppendKernel> kernelAt(const std::string &path) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<AppendKernel>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto &slot = cache[path];
  if (!slot)
    slot = readKernel(path); // throws, leaving the slot empty for the next try
  return slot;
}

attn_rt_kernel *AppendKernel::handle(int device) {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = handles.find(device);
  if (it != handles.end())
    return it->second;
  attn_rt_module *module = nullptr;
  check(attn_rt_load_module(contextFor(device), ptx.c_str(), ptx.size() + 1, arch, &module),
        "loading " + path + " on cuda:" + std::to_string(device));
  attn_rt_kernel *h = nullptr;
  check(attn_rt_get_kernel(module, name.c_str(), &h), "kernel " + name);
  handles[device] = h;
  return h;
}

/// The scales' shape of a [b, s, h, d] tensor under `g` (qattn.spec.scale_shape).
std::vector<int64_t> scaleShape(const std::string &g, int64_t b, int64_t s, int64_t h,
                                int64_t d) {
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
  const std::string group = "per_group<";
  if (g.rfind(group, 0) == 0 && g.back() == '>') {
    int64_t n = 0;
    for (size_t i = group.size(); i + 1 < g.size() && n < (int64_t(1) << 31); ++i)
      n = '0' <= g[i] && g[i] <= '9' ? n * 10 + (g[i] - '0') : -1;
    if (n > 0)
      return {b, s, h, (d + n - 1) / n};
  }
  TORCH_CHECK_VALUE(false, cat(kOp, ": the granularity '", g, "' has no scale shape here"));
  return {};
}

void quantizeAppend(const std::string &path, const at::Tensor &src, const at::Tensor &positions,
                    const at::Tensor &dst, const at::Tensor &scales,
                    const std::optional<at::Tensor> &zeros) {
  std::shared_ptr<AppendKernel> k = kernelAt(path);
  TORCH_CHECK_VALUE(src.dim() == 4 && dst.dim() == 4,
                    cat(kOp, ": src and dst must be 4-D [B, S, H, D], got ", src.sizes(), " and ",
                        dst.sizes()));
  const int64_t b = src.size(0), s = src.size(1), cap = dst.size(1);
  for (auto [name, want, got] : {std::tuple{"batch", k->batch, b},
                                 std::tuple{"new_tokens", k->newTokens, s},
                                 std::tuple{"capacity", k->capacity, cap}})
    TORCH_CHECK_VALUE(want < 0 || want == got, cat(kOp, ": the kernel was compiled for ", name,
                                                   " ", want, ", got ", got));
  TORCH_CHECK_VALUE(src.is_cuda(), cat(kOp, ": src must be a CUDA tensor, got ", src.device()));
  const int device = src.get_device();
  const int64_t h = k->heads, d = k->headDim;
  expectTensor(kOp, "src", src, device, {k->src}, {b, s, h, d});
  expectTensor(kOp, "dst", dst, device, k->codes, {b, cap, h, d});
  const std::vector<int64_t> shape = scaleShape(k->granularity, b, cap, h, d);
  expectTensor(kOp, "scales", scales, device, {k->scale}, shape);
  const bool hasZeros = zeros.has_value() && zeros->defined();
  TORCH_CHECK_VALUE(hasZeros != k->symmetric,
                    cat(kOp, ": ", k->symmetric ? "zeros given, but the scheme is symmetric"
                                                : "zeros are required: the scheme is asymmetric"));
  if (hasZeros)
    expectTensor(kOp, "zeros", *zeros, device, {k->codes.front()}, shape);
  expectTensor(kOp, "positions", positions, device, {at::kInt}, {b});
  const int64_t groups = b * s * k->groupsPerToken;
  TORCH_CHECK_VALUE(groups < (int64_t(1) << 31),
                    cat(kOp, ": ", groups, " scale groups in one launch (at most 2^31 - 1)"));
  TORCH_CHECK_VALUE(cap < (int64_t(1) << 31), cat(kOp, ": capacity ", cap, " exceeds int32"));
  if (groups == 0)
    return;

  uint64_t ptrs[5] = {address(src), address(positions), address(dst), address(scales),
                      hasZeros ? address(*zeros) : 0};
  int32_t ints[3] = {int32_t(b), int32_t(s), int32_t(cap)};
  static const char *kNames[8] = {"src",   "positions", "dst",        "scales",
                                  "zeros", "batch",     "new_tokens", "capacity"};
  void *args[8];
  TORCH_CHECK(k->params.size() <= 8, cat(kOp, ": ", k->name, " has too many parameters"));
  for (size_t i = 0; i < k->params.size(); ++i) {
    int slot = -1;
    for (int n = 0; n < 8; ++n)
      if (k->params[i] == kNames[n])
        slot = n;
    TORCH_CHECK(slot >= 0, cat(kOp, ": kernel ", k->name, " has a parameter '", k->params[i],
                               "' this launcher does not know"));
    args[i] = slot < 5 ? static_cast<void *>(&ptrs[slot]) : static_cast<void *>(&ints[slot - 5]);
  }
  attn_rt_launch_config config{};
  config.grid[0] = unsigned((groups + k->groupsPerCta - 1) / k->groupsPerCta);
  config.grid[1] = config.grid[2] = 1;
  for (int i = 0; i < 3; ++i) {
    config.block[i] = k->block[i];
    config.cluster[i] = 1;
  }
  config.smem_bytes = k->smem;
  const c10::Device dev = src.device();
  c10::DeviceGuard guard(dev);
  attn_rt_kernel *handle = k->handle(device);
  const attn_rt_status status = attn_rt_launch(handle, &config, args, currentStream(dev));
  if (status != ATTN_RT_OK)
    check(status, "launching " + k->name);
}

void quantizeAppendOnCpu(const std::string &, const at::Tensor &src, const at::Tensor &,
                         const at::Tensor &, const at::Tensor &,
                         const std::optional<at::Tensor> &) {
  TORCH_CHECK_VALUE(false, cat(kOp, " runs on CUDA tensors; src is on ", src.device()));
}

} // namespace

TORCH_LIBRARY_FRAGMENT(attn_opt, m) {
  m.def("quantize_append(str kernel, Tensor src, Tensor positions, Tensor(a!) dst, "
        "Tensor(b!) scales, Tensor(c!)? zeros=None) -> ()");
}

TORCH_LIBRARY_IMPL(attn_opt, CUDA, m) { m.impl("quantize_append", &quantizeAppend); }
TORCH_LIBRARY_IMPL(attn_opt, CPU, m) { m.impl("quantize_append", &quantizeAppendOnCpu); }
// No gradient: skip the boxed autograd fallback.
TORCH_LIBRARY_IMPL(attn_opt, Autograd, m) {
  m.impl("quantize_append", torch::CppFunction::makeFallthrough());
}
