//===- Runtime.cpp - the attn GPU runtime over a lazily opened libcuda ----===//
//
// What this file is: the implementation of attn/Runtime/Runtime.h. The CUDA driver entry points
// are looked up with dlopen/dlsym on first use (versioned names, as CUDA 13's cuda.h maps them),
// so nothing here links libcuda; cuda.h is used for types only. Launches go through
// cuLaunchKernelEx with a cluster-dimension attribute when a cluster is asked for.
//
//===----------------------------------------------------------------------===//

#include "attn/Runtime/Runtime.h"

#include <cuda.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
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
  std::string error;
};

template <typename F> bool resolve(Driver &d, F &fn, const char *symbol) {
  fn = reinterpret_cast<F>(dlsym(d.handle, symbol));
  if (!fn)
    d.error = std::string("the CUDA driver lacks ") + symbol + " (driver too old?)";
  return fn != nullptr;
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
    }
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
} // namespace

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

const char *attn_rt_last_error(void) { return lastError.c_str(); }

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
  for (int i = 0; i < 3; ++i) {
    if (c->grid[i] == 0 || c->block[i] == 0)
      return fail(ATTN_RT_INVALID_ARGUMENT, "attn_rt_launch: grid and block extents must be >= 1");
    threads *= c->block[i];
  }
  if (threads > 1024)
    return fail(ATTN_RT_INVALID_ARGUMENT,
                "attn_rt_launch: " + std::to_string(threads) + " threads per CTA exceed 1024");
  bool cluster = false;
  unsigned clusterSize = 1;
  for (int i = 0; i < 3; ++i) {
    unsigned e = c->cluster[i] ? c->cluster[i] : 1;
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
  CUlaunchAttribute attr{};
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
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = c->cluster[0] ? c->cluster[0] : 1;
    attr.value.clusterDim.y = c->cluster[1] ? c->cluster[1] : 1;
    attr.value.clusterDim.z = c->cluster[2] ? c->cluster[2] : 1;
    config.attrs = &attr;
    config.numAttrs = 1;
  }
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

} // extern "C"
