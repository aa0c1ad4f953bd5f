/*===- Runtime.h - the attn GPU runtime (C API) -------------------*- C -*-===//
 *
 * What this file is: the small C API that loads a kernel attn-opt compiled (PTX or cubin) and
 * launches it — with thread-block clusters and large dynamic shared memory — through the CUDA
 * driver API. libcuda is opened lazily with dlopen (override the path with ATTN_CUDA_LIBRARY), so
 * programs linking this runtime build and run on machines without a GPU and get a clear
 * ATTN_RT_NO_DRIVER there. Every call returns a status; attn_rt_last_error() says why, in words.
 *
 *===----------------------------------------------------------------------===*/
#ifndef ATTN_RUNTIME_RUNTIME_H
#define ATTN_RUNTIME_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  ATTN_RT_OK = 0,
  ATTN_RT_NO_DRIVER,        /* libcuda could not be opened, or lacks a needed entry point */
  ATTN_RT_NO_DEVICE,        /* cuInit failed, or no device with that ordinal */
  ATTN_RT_WRONG_ARCH,       /* the kernel's architecture does not match the device's */
  ATTN_RT_LOAD_FAILED,      /* the driver rejected the PTX / cubin (JIT log in the message) */
  ATTN_RT_NOT_FOUND,        /* no kernel of that name in the module */
  ATTN_RT_INVALID_ARGUMENT, /* a shape or launch configuration out of range */
  ATTN_RT_CUDA_ERROR        /* any other driver error (its name in the message) */
} attn_rt_status;

typedef struct attn_rt_context attn_rt_context;
typedef struct attn_rt_module attn_rt_module;
typedef struct attn_rt_kernel attn_rt_kernel;

typedef struct {
  unsigned grid[3];     /* CTAs per dimension (all >= 1) */
  unsigned block[3];    /* threads per CTA (product <= 1024) */
  unsigned cluster[3];  /* CTAs per cluster ({0,0,0} or {1,1,1}: no cluster); must divide grid */
  unsigned smem_bytes;  /* dynamic shared memory per CTA */
} attn_rt_launch_config;

/* Why the last call of this thread failed ("" after a success). */
const char *attn_rt_last_error(void);

/* Opens the driver, initializes device `ordinal` and makes its primary context current. */
attn_rt_status attn_rt_init(int ordinal, attn_rt_context **out);
void attn_rt_destroy(attn_rt_context *ctx);
/* Compute capability as major * 10 + minor (90 for H100/H200) and the device's name. */
int attn_rt_compute_capability(const attn_rt_context *ctx);
const char *attn_rt_device_name(const attn_rt_context *ctx);

/* Loads a PTX (NUL-terminated text) or cubin image built for sm_<arch> (e.g. 90 for sm_90a);
 * fails with ATTN_RT_WRONG_ARCH unless the device has exactly that compute capability. */
attn_rt_status attn_rt_load_module(attn_rt_context *ctx, const void *image, size_t size,
                                   int arch, attn_rt_module **out);
/* Unloads the module; kernel handles taken from it become invalid. */
void attn_rt_unload_module(attn_rt_module *module);
/* The kernel handle is owned by its module (valid until attn_rt_unload_module). */
attn_rt_status attn_rt_get_kernel(attn_rt_module *module, const char *name, attn_rt_kernel **out);

/* Launches with the given configuration; `args` points to each kernel parameter's value. */
attn_rt_status attn_rt_launch(attn_rt_kernel *kernel, const attn_rt_launch_config *config,
                              void **args, void *stream);
attn_rt_status attn_rt_synchronize(attn_rt_context *ctx);

/* Device memory, for tests and benchmarks. */
attn_rt_status attn_rt_malloc(attn_rt_context *ctx, size_t bytes, uint64_t *ptr);
attn_rt_status attn_rt_free(attn_rt_context *ctx, uint64_t ptr);
attn_rt_status attn_rt_copy_to_device(attn_rt_context *ctx, uint64_t dst, const void *src,
                                      size_t bytes);
attn_rt_status attn_rt_copy_to_host(attn_rt_context *ctx, void *dst, uint64_t src, size_t bytes);

#ifdef __cplusplus
}
#endif

#endif /* ATTN_RUNTIME_RUNTIME_H */
