//===- Runtime.cpp - the attn GPU runtime over a lazily opened libcuda ----===//
//
// What this file is: the implementation of attn/Runtime/Runtime.h. The CUDA driver entry points
// are looked up with dlopen/dlsym on first use (versioned names, as CUDA 13's cuda.h maps them),
// so nothing here links libcuda; cuda.h is used for types only. Launches go through
// cuLaunchKernelEx with a cluster-dimension attribute when a cluster is asked for. Entry points
// newer than the basic set (tensor maps, events, memset) are optional: a driver without them still
// opens, and only the call that needs one fails, naming it.
//
//===----------------------------------------------------------------------===//

#include "attn/Runtime/Runtime.h"
#include "attn/Dialect/Attn/Transforms/ScheduleHeuristics.h"

#include <cuda.h>
#include <dlfcn.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

namespace {
thread_local std::string lastError;

attn_rt_status fail(attn_rt_status status, const std::string &message) {
  lastError = message;
  return status;
}

/// The driver entry points we use, resolved once.
struct Driver {
  void *handle = nullptr;
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*driverGetVersion)(int *) = nullptr;
  CUresult (*deviceGet)(CUdevice *, int) = nullptr;
  CUresult (*deviceGetAttribute)(int *, CUdevice_attribute, CUdevice) = nullptr;
  CUresult (*deviceGetName)(char *, int, CUdevice) = nullptr;
  CUresult (*primaryCtxRetain)(CUcontext *, CUdevice) = nullptr;
  CUresult (*primaryCtxRelease)(CUdevice) = nullptr;
  CUresult (*ctxSetCurrent)(CUcontext) = nullptr;
  CUresult (*ctxSynchronize)() = nullptr;
  CUresult (*moduleLoadDataEx)(CUmodule *, const void *, unsigned, CUjit_option *,
                               void **) = nullptr;
  CUresult (*moduleUnload)(CUmodule) = nullptr;
  CUresult (*moduleGetFunction)(CUfunction *, CUmodule, const char *) = nullptr;
  CUresult (*funcSetAttribute)(CUfunction, CUfunction_attribute, int) = nullptr;
  CUresult (*launchKernelEx)(const CUlaunchConfig *, CUfunction, void **, void **) = nullptr;
  CUresult (*memAlloc)(CUdeviceptr *, size_t) = nullptr;
  CUresult (*memFree)(CUdeviceptr) = nullptr;
  CUresult (*memcpyHtoD)(CUdeviceptr, const void *, size_t) = nullptr;
  CUresult (*memcpyDtoH)(void *, CUdeviceptr, size_t) = nullptr;
  CUresult (*getErrorName)(CUresult, const char **) = nullptr;
  CUresult (*getErrorString)(CUresult, const char **) = nullptr;
  // Optional entry points (nullptr when the driver lacks them).
  CUresult (*tensorMapEncodeTiled)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
                                   const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
                                   const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
                                   CUtensorMapL2promotion, CUtensorMapFloatOOBfill) = nullptr;
  CUresult (*eventCreate)(CUevent *, unsigned) = nullptr;
  CUresult (*eventDestroy)(CUevent) = nullptr;
  CUresult (*eventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*eventSynchronize)(CUevent) = nullptr;
  CUresult (*eventElapsedTime)(float *, CUevent, CUevent) = nullptr;
  CUresult (*memsetD8)(CUdeviceptr, unsigned char, size_t) = nullptr;
  std::string error;
};

template <typename F> bool resolve(Driver &d, F &fn, const char *symbol) {
  fn = reinterpret_cast<F>(dlsym(d.handle, symbol));
  if (!fn)
    d.error = std::string("the CUDA driver lacks ") + symbol + " (driver too old?)";
  return fn != nullptr;
}

/// Looks up the first of `symbols` the driver has; leaves `fn` null when it has none.
template <typename F> void resolveOptional(Driver &d, F &fn, std::initializer_list<const char *> symbols) {
  for (const char *symbol : symbols)
    if ((fn = reinterpret_cast<F>(dlsym(d.handle, symbol))))
      return;
}

const Driver &driver() {
  static Driver d = [] {
    Driver d;
    const char *path = std::getenv("ATTN_CUDA_LIBRARY");
    if (!path || !*path)
      path = "libcuda.so.1";
    d.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!d.handle) {
      const char *why = dlerror();
      d.error = std::string("no CUDA driver: cannot open ") + path + " (" + (why ? why : "?") +
                "); GPU kernels need an NVIDIA driver (set ATTN_CUDA_LIBRARY to its libcuda)";
      return d;
    }
    bool ok = resolve(d, d.init, "cuInit") && resolve(d, d.driverGetVersion, "cuDriverGetVersion") &&
              resolve(d, d.deviceGet, "cuDeviceGet") &&
              resolve(d, d.deviceGetAttribute, "cuDeviceGetAttribute") &&
              resolve(d, d.deviceGetName, "cuDeviceGetName") &&
              resolve(d, d.primaryCtxRetain, "cuDevicePrimaryCtxRetain") &&
              resolve(d, d.primaryCtxRelease, "cuDevicePrimaryCtxRelease_v2") &&
              resolve(d, d.ctxSetCurrent, "cuCtxSetCurrent") &&
              resolve(d, d.ctxSynchronize, "cuCtxSynchronize") &&
              resolve(d, d.moduleLoadDataEx, "cuModuleLoadDataEx") &&
              resolve(d, d.moduleUnload, "cuModuleUnload") &&
              resolve(d, d.moduleGetFunction, "cuModuleGetFunction") &&
              resolve(d, d.funcSetAttribute, "cuFuncSetAttribute") &&
              resolve(d, d.launchKernelEx, "cuLaunchKernelEx") &&
              resolve(d, d.memAlloc, "cuMemAlloc_v2") && resolve(d, d.memFree, "cuMemFree_v2") &&
              resolve(d, d.memcpyHtoD, "cuMemcpyHtoD_v2") &&
              resolve(d, d.memcpyDtoH, "cuMemcpyDtoH_v2") &&
              resolve(d, d.getErrorName, "cuGetErrorName") &&
              resolve(d, d.getErrorString, "cuGetErrorString");
    if (!ok) {
      dlclose(d.handle);
      d.handle = nullptr;
      return d;
    }
    resolveOptional(d, d.tensorMapEncodeTiled, {"cuTensorMapEncodeTiled"});
    resolveOptional(d, d.eventCreate, {"cuEventCreate"});
    resolveOptional(d, d.eventDestroy, {"cuEventDestroy_v2", "cuEventDestroy"});
    resolveOptional(d, d.eventRecord, {"cuEventRecord"});
    resolveOptional(d, d.eventSynchronize, {"cuEventSynchronize"});
    // CUDA 12.8 renamed the entry point (cuda.h maps cuEventElapsedTime to _v2); older drivers
    // only have the original.
    resolveOptional(d, d.eventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"});
    resolveOptional(d, d.memsetD8, {"cuMemsetD8_v2"});
    return d;
  }();
  return d;
}

std::string describe(CUresult r) {
  const Driver &d = driver();
  const char *name = nullptr, *text = nullptr;
  if (d.getErrorName)
    d.getErrorName(r, &name);
  if (d.getErrorString)
    d.getErrorString(r, &text);
  return std::string(name ? name : "CUDA error") + " (" + (text ? text : "no description") + ")";
}

attn_rt_status check(CUresult r, const char *what, attn_rt_status status = ATTN_RT_CUDA_ERROR) {
  if (r == CUDA_SUCCESS)
    return ATTN_RT_OK;
  return fail(status, std::string(what) + " failed: " + describe(r));
}

/// Fails with ATTN_RT_NO_DRIVER when the driver is not open or lacks the optional entry point.
template <typename F> attn_rt_status need(const F &fn, const char *symbol) {
  const Driver &d = driver();
  if (!d.handle)
    return fail(ATTN_RT_NO_DRIVER, d.error);
  if (!fn)
    return fail(ATTN_RT_NO_DRIVER, std::string("the CUDA driver lacks ") + symbol +
                                       " (driver too old? it needs CUDA 12 or newer)");
  return ATTN_RT_OK;
}

std::string join(const uint64_t *values, unsigned n) {
  std::string s = "{";
  for (unsigned i = 0; i < n; ++i)
    s += (i ? ", " : "") + std::to_string(values[i]);
  return s + "}";
}
std::string join(const unsigned *values, unsigned n) {
  std::string s = "{";
  for (unsigned i = 0; i < n; ++i)
    s += (i ? ", " : "") + std::to_string(values[i]);
  return s + "}";
}
} // namespace

struct attn_rt_event {
  CUevent event;
};

struct attn_rt_context {
  CUdevice device;
  CUcontext context;
  int capability;
  char name[256];
};

struct attn_rt_kernel {
  CUfunction function;
  unsigned smemConfigured;
};

/// A loaded module owns the kernel handles taken from it; attn_rt_unload_module frees both.
struct attn_rt_module {
  attn_rt_context *ctx;
  CUmodule module;
  std::vector<std::unique_ptr<attn_rt_kernel>> kernels;
};

extern "C" {

const char *attn_rt_status_name(attn_rt_status s) {
  switch (s) {
  case ATTN_RT_OK: return "ok";
  case ATTN_RT_NO_DRIVER: return "no-driver";
  case ATTN_RT_NO_DEVICE: return "no-device";
  case ATTN_RT_WRONG_ARCH: return "wrong-arch";
  case ATTN_RT_LOAD_FAILED: return "load-failed";
  case ATTN_RT_NOT_FOUND: return "not-found";
  case ATTN_RT_INVALID_ARGUMENT: return "invalid-argument";
  case ATTN_RT_CUDA_ERROR: return "cuda-error";
  }
  return "?";
}

const char *attn_rt_last_error(void) { return lastError.c_str(); }

int64_t attn_rt_select_split_kv(int64_t ctas, int64_t kv_len, int64_t q_len, int64_t window_left,
                                int64_t tile_n, int64_t sms) {
  mlir::attn::GPUInfo gpu;
  gpu.numSMs = sms;
  return mlir::attn::selectSplitKv(ctas, mlir::attn::splitKvKeys(kv_len, q_len, window_left),
                                   tile_n, gpu);
}

attn_rt_status attn_rt_init(int ordinal, attn_rt_context **out) {
  lastError.clear();
  if (!out)
    return fail(ATTN_RT_INVALID_ARGUMENT, "attn_rt_init: null output pointer");
  const Driver &d = driver();
  if (!d.handle)
    return fail(ATTN_RT_NO_DRIVER, d.error);
  if (attn_rt_status s = check(d.init(0), "cuInit", ATTN_RT_NO_DEVICE))
    return s;
  CUdevice dev;
  if (attn_rt_status s = check(d.deviceGet(&dev, ordinal), "cuDeviceGet", ATTN_RT_NO_DEVICE))
    return s;
  auto *ctx = new attn_rt_context{};
  ctx->device = dev;
  int major = 0, minor = 0;
  d.deviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  d.deviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  ctx->capability = major * 10 + minor;
  d.deviceGetName(ctx->name, sizeof(ctx->name), dev);
  if (attn_rt_status s = check(d.primaryCtxRetain(&ctx->context, dev), "cuDevicePrimaryCtxRetain")) {
    delete ctx;
    return s;
  }
  if (attn_rt_status s = check(d.ctxSetCurrent(ctx->context), "cuCtxSetCurrent")) {
    d.primaryCtxRelease(dev);
    delete ctx;
    return s;
  }
  *out = ctx;
  return ATTN_RT_OK;
}

void attn_rt_destroy(attn_rt_context *ctx) {
  if (!ctx)
    return;
  driver().primaryCtxRelease(ctx->device);
  delete ctx;
}

int attn_rt_compute_capability(const attn_rt_context *ctx) { return ctx ? ctx->capability : 0; }
const char *attn_rt_device_name(const attn_rt_context *ctx) { return ctx ? ctx->name : ""; }

attn_rt_status attn_rt_load_module(attn_rt_context *ctx, const void *image, size_t size, int arch,
                                   attn_rt_module **out) {
  lastError.clear();
  if (!ctx || !image || size == 0 || !out)
    return fail(ATTN_RT_INVALID_ARGUMENT, "attn_rt_load_module: null context, image or output");
  if (arch != ctx->capability)
    return fail(ATTN_RT_WRONG_ARCH,
                "kernel built for sm_" + std::to_string(arch) + " needs compute capability " +
                    std::to_string(arch / 10) + "." + std::to_string(arch % 10) + "; device '" +
                    ctx->name + "' is " + std::to_string(ctx->capability / 10) + "." +
                    std::to_string(ctx->capability % 10));
  char log[8192] = {0};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log, reinterpret_cast<void *>(static_cast<uintptr_t>(sizeof(log)))};
  CUmodule module;
  CUresult r = driver().moduleLoadDataEx(&module, image, 2, options, values);
  if (r != CUDA_SUCCESS)
    return fail(ATTN_RT_LOAD_FAILED, "cuModuleLoadDataEx failed: " + describe(r) +
                                         (log[0] ? std::string("; JIT log: ") + log : ""));
  *out = new attn_rt_module{ctx, module, {}};
  return ATTN_RT_OK;
}

void attn_rt_unload_module(attn_rt_module *module) {
  if (!module)
    return;
  driver().moduleUnload(module->module);
  delete module;
}

attn_rt_status attn_rt_get_kernel(attn_rt_module *module, const char *name, attn_rt_kernel **out) {
  lastError.clear();
  if (!module || !name || !out)
    return fail(ATTN_RT_INVALID_ARGUMENT, "attn_rt_get_kernel: null module, name or output");
  CUfunction fn;
  CUresult r = driver().moduleGetFunction(&fn, module->module, name);
  if (r != CUDA_SUCCESS)
    return fail(ATTN_RT_NOT_FOUND, std::string("no kernel '") + name + "' in the module: " +
                                       describe(r));
  module->kernels.push_back(std::make_unique<attn_rt_kernel>(attn_rt_kernel{fn, 0}));
  *out = module->kernels.back().get();
  return ATTN_RT_OK;
}

attn_rt_status attn_rt_launch(attn_rt_kernel *kernel, const attn_rt_launch_config *c, void **args,
                              void *stream) {
  lastError.clear();
  if (!kernel || !c)
    return fail(ATTN_RT_INVALID_ARGUMENT, "attn_rt_launch: null kernel or configuration");
  unsigned threads = 1;
  const unsigned maxGrid[3] = {0x7FFFFFFFu, 65535u, 65535u}; // the launch limits of sm_90
  for (int i = 0; i < 3; ++i) {
    if (c->grid[i] == 0 || c->block[i] == 0)
      return fail(ATTN_RT_INVALID_ARGUMENT, "attn_rt_launch: grid and block extents must be >= 1");
    if (c->grid[i] > maxGrid[i])
      return fail(ATTN_RT_INVALID_ARGUMENT, "attn_rt_launch: grid extent " + std::to_string(i) +
                                                " of " + std::to_string(c->grid[i]) +
                                                " exceeds " + std::to_string(maxGrid[i]));
    if (c->block[i] > 1024) // checked alone first: the product must not wrap around
      return fail(ATTN_RT_INVALID_ARGUMENT, "attn_rt_launch: block extent " +
                                                std::to_string(c->block[i]) + " exceeds 1024");
    threads *= c->block[i];
  }
  if (threads > 1024)
    return fail(ATTN_RT_INVALID_ARGUMENT,
                "attn_rt_launch: " + std::to_string(threads) + " threads per CTA exceed 1024");
  bool cluster = false;
  unsigned clusterSize = 1;
  for (int i = 0; i < 3; ++i) {
    unsigned e = c->cluster[i] ? c->cluster[i] : 1;
    if (e > 8)
      return fail(ATTN_RT_INVALID_ARGUMENT, "attn_rt_launch: cluster extent " + std::to_string(e) +
                                                " exceeds the portable maximum of 8");
    cluster |= e > 1;
    clusterSize *= e;
    if (c->grid[i] % e != 0)
      return fail(ATTN_RT_INVALID_ARGUMENT, "attn_rt_launch: cluster extent " + std::to_string(e) +
                                                " does not divide grid extent " +
                                                std::to_string(c->grid[i]));
  }
  if (clusterSize > 8)
    return fail(ATTN_RT_INVALID_ARGUMENT, "attn_rt_launch: cluster of " +
                                              std::to_string(clusterSize) +
                                              " CTAs exceeds the portable maximum of 8");
  const Driver &d = driver();
  if (c->smem_bytes > 48 * 1024 && kernel->smemConfigured < c->smem_bytes) {
    if (attn_rt_status s = check(
            d.funcSetAttribute(kernel->function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                               static_cast<int>(c->smem_bytes)),
            "setting the dynamic shared memory size", ATTN_RT_INVALID_ARGUMENT))
      return s;
    kernel->smemConfigured = c->smem_bytes;
  }
  CUlaunchAttribute attrs[2]{};
  unsigned numAttrs = 0;
  CUlaunchConfig config{};
  config.gridDimX = c->grid[0];
  config.gridDimY = c->grid[1];
  config.gridDimZ = c->grid[2];
  config.blockDimX = c->block[0];
  config.blockDimY = c->block[1];
  config.blockDimZ = c->block[2];
  config.sharedMemBytes = c->smem_bytes;
  config.hStream = static_cast<CUstream>(stream);
  if (cluster) {
    CUlaunchAttribute &attr = attrs[numAttrs++];
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = c->cluster[0] ? c->cluster[0] : 1;
    attr.value.clusterDim.y = c->cluster[1] ? c->cluster[1] : 1;
    attr.value.clusterDim.z = c->cluster[2] ? c->cluster[2] : 1;
  }
  static const bool noPdl = [] {
    const char *e = std::getenv("ATTN_RT_NO_PDL");
    return e && std::string(e) == "1";
  }();
  if (c->programmatic && !noPdl) {
    CUlaunchAttribute &attr = attrs[numAttrs++];
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
  }
  config.attrs = numAttrs ? attrs : nullptr;
  config.numAttrs = numAttrs;
  return check(d.launchKernelEx(&config, kernel->function, args, nullptr), "cuLaunchKernelEx");
}

attn_rt_status attn_rt_synchronize(attn_rt_context *) {
  lastError.clear();
  return check(driver().ctxSynchronize(), "cuCtxSynchronize");
}

attn_rt_status attn_rt_malloc(attn_rt_context *, size_t bytes, uint64_t *ptr) {
  lastError.clear();
  CUdeviceptr p = 0;
  attn_rt_status s = check(driver().memAlloc(&p, bytes), "cuMemAlloc");
  if (s == ATTN_RT_OK)
    *ptr = p;
  return s;
}

attn_rt_status attn_rt_free(attn_rt_context *, uint64_t ptr) {
  lastError.clear();
  return check(driver().memFree(ptr), "cuMemFree");
}

attn_rt_status attn_rt_copy_to_device(attn_rt_context *, uint64_t dst, const void *src,
                                      size_t bytes) {
  lastError.clear();
  return check(driver().memcpyHtoD(dst, src, bytes), "cuMemcpyHtoD");
}

attn_rt_status attn_rt_copy_to_host(attn_rt_context *, void *dst, uint64_t src, size_t bytes) {
  lastError.clear();
  return check(driver().memcpyDtoH(dst, src, bytes), "cuMemcpyDtoH");
}

attn_rt_status attn_rt_memset_d8(attn_rt_context *, uint64_t dst, unsigned char value,
                                 size_t bytes) {
  lastError.clear();
  const Driver &d = driver();
  if (attn_rt_status s = need(d.memsetD8, "cuMemsetD8_v2"))
    return s;
  return check(d.memsetD8(dst, value, bytes), "cuMemsetD8");
}

attn_rt_status attn_rt_sm_count(attn_rt_context *ctx, int *out) {
  lastError.clear();
  if (!ctx || !out)
    return fail(ATTN_RT_INVALID_ARGUMENT, "attn_rt_sm_count: null context or output");
  int n = 0;
  if (attn_rt_status s =
          check(driver().deviceGetAttribute(&n, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                            ctx->device),
                "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)"))
    return s;
  *out = n;
  return ATTN_RT_OK;
}

size_t attn_rt_dtype_size(attn_rt_dtype dtype) {
  switch (dtype) {
  case ATTN_RT_DTYPE_U8: return 1;
  case ATTN_RT_DTYPE_BF16: return 2;
  case ATTN_RT_DTYPE_F16: return 2;
  case ATTN_RT_DTYPE_F32: return 4;
  case ATTN_RT_DTYPE_I32: return 4;
  }
  return 0;
}

attn_rt_status attn_rt_tensor_map_encode(attn_rt_context *ctx, void *out128, attn_rt_dtype dtype,
                                         unsigned rank, const uint64_t *dims,
                                         const uint64_t *byte_strides, const unsigned *box,
                                         unsigned swizzle_bytes, uint64_t base_ptr) {
  lastError.clear();
  const std::string where = "attn_rt_tensor_map_encode: ";
  if (!ctx || !out128 || !dims || !box || (rank > 1 && !byte_strides))
    return fail(ATTN_RT_INVALID_ARGUMENT, where + "null context, output, dims, strides or box");
  if (reinterpret_cast<uintptr_t>(out128) % 64 != 0)
    return fail(ATTN_RT_INVALID_ARGUMENT, where + "the 128-byte output must be 64-byte aligned");
  const size_t elem = attn_rt_dtype_size(dtype); // 0 for a value outside the enum (from C)
  if (elem == 0)
    return fail(ATTN_RT_INVALID_ARGUMENT,
                where + "unknown element type " + std::to_string(static_cast<int>(dtype)));
  CUtensorMapDataType type = CU_TENSOR_MAP_DATA_TYPE_UINT8;
  switch (dtype) {
  case ATTN_RT_DTYPE_U8: type = CU_TENSOR_MAP_DATA_TYPE_UINT8; break;
  case ATTN_RT_DTYPE_BF16: type = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16; break;
  case ATTN_RT_DTYPE_F16: type = CU_TENSOR_MAP_DATA_TYPE_FLOAT16; break;
  case ATTN_RT_DTYPE_F32: type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32; break;
  case ATTN_RT_DTYPE_I32: type = CU_TENSOR_MAP_DATA_TYPE_INT32; break;
  }
  if (rank < 1 || rank > 5)
    return fail(ATTN_RT_INVALID_ARGUMENT,
                where + "rank " + std::to_string(rank) + " is not in 1..5");
  CUtensorMapSwizzle swizzle;
  switch (swizzle_bytes) {
  case 0: swizzle = CU_TENSOR_MAP_SWIZZLE_NONE; break;
  case 32: swizzle = CU_TENSOR_MAP_SWIZZLE_32B; break;
  case 64: swizzle = CU_TENSOR_MAP_SWIZZLE_64B; break;
  case 128: swizzle = CU_TENSOR_MAP_SWIZZLE_128B; break;
  default:
    return fail(ATTN_RT_INVALID_ARGUMENT, where + "swizzle of " + std::to_string(swizzle_bytes) +
                                              " bytes is not 0, 32, 64 or 128");
  }
  const std::string args = "dims " + join(dims, rank) + ", byte strides " +
                           join(byte_strides, rank - 1) + ", box " + join(box, rank) +
                           ", element bytes " + std::to_string(elem) + ", swizzle " +
                           std::to_string(swizzle_bytes) + ", base 0x";
  char base[32];
  std::snprintf(base, sizeof(base), "%" PRIx64, base_ptr);
  const std::string described = args + base;
  for (unsigned i = 0; i < rank; ++i) {
    if (dims[i] == 0 || dims[i] > (uint64_t(1) << 32))
      return fail(ATTN_RT_INVALID_ARGUMENT,
                  where + "dimension " + std::to_string(i) + " must be in 1..2^32 (" + described + ")");
    if (box[i] == 0 || box[i] > 256)
      return fail(ATTN_RT_INVALID_ARGUMENT,
                  where + "box extent " + std::to_string(i) + " must be in 1..256 (" + described + ")");
  }
  for (unsigned i = 0; i + 1 < rank; ++i)
    if (byte_strides[i] % 16 != 0 || byte_strides[i] >= (uint64_t(1) << 40))
      return fail(ATTN_RT_INVALID_ARGUMENT, where + "byte stride of dimension " +
                                                std::to_string(i + 1) +
                                                " must be a multiple of 16 below 2^40 (" +
                                                described + ")");
  if (box[0] * elem % 16 != 0)
    return fail(ATTN_RT_INVALID_ARGUMENT,
                where + "the box's inner extent must span a multiple of 16 bytes (" + described + ")");
  if (swizzle_bytes && box[0] * elem > swizzle_bytes)
    return fail(ATTN_RT_INVALID_ARGUMENT, where + "the box's inner extent (" +
                                              std::to_string(box[0] * elem) +
                                              " bytes) exceeds the swizzle span (" + described + ")");
  if (base_ptr % 16 != 0)
    return fail(ATTN_RT_INVALID_ARGUMENT,
                where + "the base address must be 16-byte aligned (" + described + ")");
  const Driver &d = driver();
  if (attn_rt_status s = need(d.tensorMapEncodeTiled, "cuTensorMapEncodeTiled"))
    return s;
  cuuint64_t globalDim[5], globalStrides[4];
  cuuint32_t boxDim[5], elementStrides[5];
  for (unsigned i = 0; i < rank; ++i) {
    globalDim[i] = dims[i];
    boxDim[i] = box[i];
    elementStrides[i] = 1;
    if (i + 1 < rank)
      globalStrides[i] = byte_strides[i];
  }
  CUresult r = d.tensorMapEncodeTiled(
      static_cast<CUtensorMap *>(out128), type, rank,
      reinterpret_cast<void *>(static_cast<uintptr_t>(base_ptr)), globalDim, globalStrides, boxDim,
      elementStrides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return fail(ATTN_RT_INVALID_ARGUMENT,
                "cuTensorMapEncodeTiled failed: " + describe(r) + " (" + described + ")");
  return ATTN_RT_OK;
}

attn_rt_status attn_rt_event_create(attn_rt_context *ctx, attn_rt_event **out) {
  lastError.clear();
  if (!ctx || !out)
    return fail(ATTN_RT_INVALID_ARGUMENT, "attn_rt_event_create: null context or output");
  const Driver &d = driver();
  if (attn_rt_status s = need(d.eventCreate, "cuEventCreate"))
    return s;
  if (attn_rt_status s = need(d.eventDestroy, "cuEventDestroy_v2"))
    return s;
  CUevent e;
  if (attn_rt_status s = check(d.eventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate"))
    return s;
  *out = new attn_rt_event{e};
  return ATTN_RT_OK;
}

void attn_rt_event_destroy(attn_rt_event *event) {
  if (!event)
    return;
  driver().eventDestroy(event->event);
  delete event;
}

attn_rt_status attn_rt_event_record(attn_rt_event *event, void *stream) {
  lastError.clear();
  if (!event)
    return fail(ATTN_RT_INVALID_ARGUMENT, "attn_rt_event_record: null event");
  const Driver &d = driver();
  if (attn_rt_status s = need(d.eventRecord, "cuEventRecord"))
    return s;
  return check(d.eventRecord(event->event, static_cast<CUstream>(stream)), "cuEventRecord");
}

attn_rt_status attn_rt_event_elapsed_ms(attn_rt_event *start, attn_rt_event *end, float *ms) {
  lastError.clear();
  if (!start || !end || !ms)
    return fail(ATTN_RT_INVALID_ARGUMENT, "attn_rt_event_elapsed_ms: null event or output");
  const Driver &d = driver();
  if (attn_rt_status s = need(d.eventSynchronize, "cuEventSynchronize"))
    return s;
  if (attn_rt_status s = need(d.eventElapsedTime, "cuEventElapsedTime"))
    return s;
  if (attn_rt_status s = check(d.eventSynchronize(end->event), "cuEventSynchronize"))
    return s;
  return check(d.eventElapsedTime(ms, start->event, end->event), "cuEventElapsedTime");
}

} // extern "C"
