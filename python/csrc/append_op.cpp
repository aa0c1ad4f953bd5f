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
//   attn_opt::quantize_append_paged(str kernel, Tensor src, Tensor slot_mapping, Tensor(a!) dst,
//                                   Tensor(b!) scales, Tensor(c!)? zeros=None) -> ()
//       An `attn.quantize.append_paged` kernel (vLLM's reshape_and_cache_flash): row t of `src`
//       [T, H, D] into the pool of pages `dst` [num_pages, P, H, D] at slot slot_mapping[t]
//       (int64 or int32 as compiled; slot = page * P + offset), scales stored per page. The
//       kernel skips slots outside [0, num_pages * P) (vLLM pads with -1): no host check.
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
constexpr const char *kPagedOp = "attn_opt.quantize_append_paged";

/// One compiled quantize-append op: its metadata, and its module on each device that ran it.
struct AppendKernel {
  std::string path, ptx, granularity;
  int arch = 0;
  attn::rt::LaunchKernel launch;       // name, block, smem, grid, params (names)
  std::vector<attn_abi::Param> params; // the launch ABI entries of launch.params
  bool paged = false; ///< quantize_append_paged: numTokens, numPages, pageSize, slot
  int64_t batch = -1, newTokens = -1, capacity = -1, heads = 0, headDim = 0;
  int64_t numTokens = -1, numPages = -1, pageSize = 0;
  at::ScalarType slot = at::kLong;
  int64_t groupsPerToken = 0, groupsPerCta = 0;
  at::ScalarType src = at::kBFloat16, scale = at::kFloat;
  std::vector<at::ScalarType> codes; // accepted dtypes of dst; the first is the zero points'
  bool symmetric = true;
  std::mutex mutex;
  std::map<int, attn_rt_kernel *> handles;

  attn_rt_kernel *handle(int device);
};

using attn_abi::Param;
/// The kernel parameters this launcher fills (launch ABI table entries, LaunchABI.h).
constexpr Param kSupplied[] = {Param::Src,   Param::Positions, Param::Dst,       Param::Scales,
                               Param::Zeros, Param::Batch,     Param::NewTokens, Param::Capacity};
constexpr Param kPagedSupplied[] = {Param::Src,   Param::SlotMapping, Param::Dst,     Param::Scales,
                                    Param::Zeros, Param::NumTokens,   Param::NumSlots};

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

/// The problem extents of the metadata: a contiguous append's or a paged one's.
void readExtents(AppendKernel &k, const nlohmann::json &p) {
  if (k.paged) {
    k.numTokens = p.at("num_tokens").get<int64_t>();
    k.numPages = p.at("num_pages").get<int64_t>();
    k.pageSize = p.at("page_size").get<int64_t>();
    k.slot = p.at("slot_dtype").get<std::string>() == "i32" ? at::kInt : at::kLong;
    return;
  }
  k.batch = p.at("batch").get<int64_t>();
  k.newTokens = p.at("new_tokens").get<int64_t>();
  k.capacity = p.at("capacity").get<int64_t>();
}

std::shared_ptr<AppendKernel> readKernel(const std::string &path, bool paged) {
  const char *op = paged ? kPagedOp : kOp;
  const std::string want = paged ? "quantize_append_paged" : "quantize_append";
  auto k = std::make_shared<AppendKernel>();
  k->path = path;
  k->paged = paged;
  std::string json, error;
  TORCH_CHECK_VALUE(attn::rt::readRegularFile(path, 1 << 30, k->ptx, error), cat(op, ": ", error));
  TORCH_CHECK_VALUE(attn::rt::readRegularFile(path + ".launch.json", 1 << 20, json, error),
                    cat(op, ": ", error));
  try {
    const nlohmann::json m = nlohmann::json::parse(json);
    const auto &p = m.at("problem");
    TORCH_CHECK_VALUE(p.at("kind").get<std::string>() == want,
                      cat(op, ": ", path, ": not a ", want, " kernel (kind '",
                          p.at("kind").get<std::string>(), "')"));
    const auto &kernel = m.at("kernels").at(0);
    k->arch = m.at("arch").get<int>();
    attn::rt::LaunchKernel &l = k->launch;
    l.name = kernel.at("name").get<std::string>();
    for (int i = 0; i < 3; ++i) {
      l.block[i] = kernel.at("block").at(i).get<unsigned>();
      const auto &g = kernel.at("grid").at(i);
      if (g.is_string())
        l.grid[i].symbol = g.get<std::string>();
      else
        l.grid[i].value = g.get<int64_t>();
    }
    l.smemBytes = kernel.at("smem_bytes").get<unsigned>();
    l.params = kernel.at("params").get<std::vector<std::string>>();
    readExtents(*k, p);
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
    TORCH_CHECK_VALUE(false, cat(op, ": ", path, ".launch.json: ", e.what()));
  }
  TORCH_CHECK_VALUE(k->groupsPerToken > 0 && k->groupsPerCta > 0 && k->heads > 0 &&
                        k->headDim > 0 && (!paged || k->pageSize > 0),
                    cat(op, ": ", path, ".launch.json: a schedule or problem extent is not "
                                        "positive"));
  attn::rt::ParamValues supplied;
  if (paged)
    for (attn_abi::Param p : kPagedSupplied)
      supplied.set(p, &supplied);
  else
    for (attn_abi::Param p : kSupplied)
      supplied.set(p, &supplied);
  TORCH_CHECK(attn::rt::resolveParams(k->launch.name, k->launch.params, k->params, error) &&
                  attn::rt::checkSupplied(k->launch.name, k->params, supplied, error),
              cat(op, ": ", path, ": ", error));
  return k;
}

std::shared_ptr<AppendKernel> kernelAt(const std::string &path, bool paged = false) {
  static std::mutex mutex;
  static std::map<std::pair<std::string, bool>, std::shared_ptr<AppendKernel>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto &slot = cache[{path, paged}];
  if (!slot)
    slot = readKernel(path, paged); // throws, leaving the slot empty for the next try
  return slot;
}

/// Launches `k` on the current stream of `dev` with the parameter values `values`.
void launch(AppendKernel &k, const char *op, const c10::Device &dev,
            const std::map<std::string, int64_t> &gridInputs, const attn::rt::ParamValues &values) {
  attn_rt_launch_config config{};
  std::string error;
  TORCH_CHECK_VALUE(attn::rt::resolveGrid(k.launch, gridInputs, config.grid, error),
                    cat(op, ": ", error));
  for (int i = 0; i < 3; ++i) {
    config.block[i] = k.launch.block[i];
    config.cluster[i] = 1;
  }
  config.smem_bytes = k.launch.smemBytes;
  void *args[attn_abi::kNumParams];
  TORCH_CHECK(k.params.size() <= attn_abi::kNumParams,
              cat(op, ": ", k.launch.name, " has too many parameters"));
  attn::rt::bindArgs(k.params, values, args);
  c10::DeviceGuard guard(dev);
  attn_rt_kernel *handle = k.handle(dev.index());
  const attn_rt_status status = attn_rt_launch(handle, &config, args, currentStream(dev));
  if (status != ATTN_RT_OK)
    check(status, "launching " + k.launch.name);
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
  check(attn_rt_get_kernel(module, launch.name.c_str(), &h), "kernel " + launch.name);
  handles[device] = h;
  return h;
}

/// Checks `scales` of `shape` and the zero points, which an asymmetric scheme requires and a
/// symmetric one refuses; returns whether zero points were given.
bool expectScales(const char *op, const AppendKernel &k, const at::Tensor &scales,
                  const std::optional<at::Tensor> &zeros, int device,
                  const std::vector<int64_t> &shape) {
  expectTensor(op, "scales", scales, device, {k.scale}, shape);
  const bool hasZeros = zeros.has_value() && zeros->defined();
  TORCH_CHECK_VALUE(hasZeros != k.symmetric,
                    cat(op, ": ", k.symmetric ? "zeros given, but the scheme is symmetric"
                                              : "zeros are required: the scheme is asymmetric"));
  if (hasZeros)
    expectTensor(op, "zeros", *zeros, device, {k.codes.front()}, shape);
  return hasZeros;
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
  const std::vector<int64_t> shape = scaleShape(kOp, k->granularity, b, cap, h, d);
  const bool hasZeros = expectScales(kOp, *k, scales, zeros, device, shape);
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
  attn::rt::ParamValues values; // every entry of kSupplied
  values.set(Param::Src, &ptrs[0]);
  values.set(Param::Positions, &ptrs[1]);
  values.set(Param::Dst, &ptrs[2]);
  values.set(Param::Scales, &ptrs[3]);
  values.set(Param::Zeros, &ptrs[4]);
  values.set(Param::Batch, &ints[0]);
  values.set(Param::NewTokens, &ints[1]);
  values.set(Param::Capacity, &ints[2]);
  launch(*k, kOp, src.device(),
         {{"batch", b},
          {"new_tokens", s},
          {"groups_per_token", k->groupsPerToken},
          {"groups_per_cta", k->groupsPerCta}},
         values);
}

void quantizeAppendPaged(const std::string &path, const at::Tensor &src,
                         const at::Tensor &slotMapping, const at::Tensor &dst,
                         const at::Tensor &scales, const std::optional<at::Tensor> &zeros) {
  std::shared_ptr<AppendKernel> k = kernelAt(path, /*paged=*/true);
  TORCH_CHECK_VALUE(src.dim() == 3 && dst.dim() == 4,
                    cat(kPagedOp, ": src must be 3-D [T, H, D] and dst 4-D [num_pages, P, H, D], "
                                  "got ",
                        src.sizes(), " and ", dst.sizes()));
  const int64_t t = src.size(0), pages = dst.size(0), p = dst.size(1);
  for (auto [name, want, got] : {std::tuple{"num_tokens", k->numTokens, t},
                                 std::tuple{"num_pages", k->numPages, pages},
                                 std::tuple{"page_size", k->pageSize, p}})
    TORCH_CHECK_VALUE(want < 0 || want == got, cat(kPagedOp, ": the kernel was compiled for ",
                                                   name, " ", want, ", got ", got));
  TORCH_CHECK_VALUE(src.is_cuda(), cat(kPagedOp, ": src must be a CUDA tensor, got ", src.device()));
  const int device = src.get_device();
  const int64_t h = k->heads, d = k->headDim;
  expectTensor(kPagedOp, "src", src, device, {k->src}, {t, h, d});
  expectTensor(kPagedOp, "dst", dst, device, k->codes, {pages, p, h, d});
  const std::vector<int64_t> shape = scaleShape(kPagedOp, k->granularity, pages, p, h, d);
  const bool hasZeros = expectScales(kPagedOp, *k, scales, zeros, device, shape);
  expectTensor(kPagedOp, "slot_mapping", slotMapping, device, {k->slot}, {t});
  const int64_t groups = t * k->groupsPerToken, slots = pages * p;
  TORCH_CHECK_VALUE(groups < (int64_t(1) << 31),
                    cat(kPagedOp, ": ", groups, " scale groups in one launch (at most 2^31 - 1)"));
  TORCH_CHECK_VALUE(slots < (int64_t(1) << 31),
                    cat(kPagedOp, ": ", slots, " cache slots (num_pages * P) exceed int32"));
  if (groups == 0)
    return;
  uint64_t ptrs[5] = {address(src), address(slotMapping), address(dst), address(scales),
                      hasZeros ? address(*zeros) : 0};
  int32_t ints[2] = {int32_t(t), int32_t(slots)};
  attn::rt::ParamValues values; // every entry of kPagedSupplied
  values.set(Param::Src, &ptrs[0]);
  values.set(Param::SlotMapping, &ptrs[1]);
  values.set(Param::Dst, &ptrs[2]);
  values.set(Param::Scales, &ptrs[3]);
  values.set(Param::Zeros, &ptrs[4]);
  values.set(Param::NumTokens, &ints[0]);
  values.set(Param::NumSlots, &ints[1]);
  launch(*k, kPagedOp, src.device(),
         {{"num_tokens", t},
          {"groups_per_token", k->groupsPerToken},
          {"groups_per_cta", k->groupsPerCta}},
         values);
}

void quantizeAppendOnCpu(const std::string &, const at::Tensor &src, const at::Tensor &,
                         const at::Tensor &, const at::Tensor &,
                         const std::optional<at::Tensor> &) {
  TORCH_CHECK_VALUE(false, cat(kOp, " runs on CUDA tensors; src is on ", src.device()));
}

void quantizeAppendPagedOnCpu(const std::string &, const at::Tensor &src, const at::Tensor &,
                              const at::Tensor &, const at::Tensor &,
                              const std::optional<at::Tensor> &) {
  TORCH_CHECK_VALUE(false, cat(kPagedOp, " runs on CUDA tensors; src is on ", src.device()));
}

} // namespace

TORCH_LIBRARY_FRAGMENT(attn_opt, m) {
  m.def("quantize_append(str kernel, Tensor src, Tensor positions, Tensor(a!) dst, "
        "Tensor(b!) scales, Tensor(c!)? zeros=None) -> ()");
  m.def("quantize_append_paged(str kernel, Tensor src, Tensor slot_mapping, Tensor(a!) dst, "
        "Tensor(b!) scales, Tensor(c!)? zeros=None) -> ()");
}

TORCH_LIBRARY_IMPL(attn_opt, CUDA, m) {
  m.impl("quantize_append", &quantizeAppend);
  m.impl("quantize_append_paged", &quantizeAppendPaged);
}
TORCH_LIBRARY_IMPL(attn_opt, CPU, m) {
  m.impl("quantize_append", &quantizeAppendOnCpu);
  m.impl("quantize_append_paged", &quantizeAppendPagedOnCpu);
}
// No gradient: skip the boxed autograd fallback.
TORCH_LIBRARY_IMPL(attn_opt, Autograd, m) {
  m.impl("quantize_append", torch::CppFunction::makeFallthrough());
  m.impl("quantize_append_paged", torch::CppFunction::makeFallthrough());
}
