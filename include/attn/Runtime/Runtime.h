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
  unsigned programmatic; /* 1: a programmatic dependent of the stream's previous kernel (PDL; the
                            kernel must begin with griddepcontrol.wait). Ignored when the
                            environment sets ATTN_RT_NO_PDL=1 */
} attn_rt_launch_config;

/* A short name of a status ("ok", "no-driver", "wrong-arch", ...), for messages. */
const char *attn_rt_status_name(attn_rt_status status);

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
/* The split-KV count attn-select-schedule's heuristic (selectSplitKv) picks for a decode launch of
 * `ctas` CTAs per split over `kv_len` keys in tiles of `tile_n`, on `sms` SMs: what a launcher
 * uses when the kernel's split_kv is 0 (decided at launch). With a left window (`window_left`
 * >= 0; -1: none) the splits share the window_left + q_len keys that reach the last of the
 * `q_len` queries (splitKvKeys). */
int64_t attn_rt_select_split_kv(int64_t ctas, int64_t kv_len, int64_t q_len, int64_t window_left,
                                int64_t tile_n, int64_t sms);

/* Device memory, for tests and benchmarks. */
attn_rt_status attn_rt_malloc(attn_rt_context *ctx, size_t bytes, uint64_t *ptr);
attn_rt_status attn_rt_free(attn_rt_context *ctx, uint64_t ptr);
attn_rt_status attn_rt_copy_to_device(attn_rt_context *ctx, uint64_t dst, const void *src,
                                      size_t bytes);
attn_rt_status attn_rt_copy_to_host(attn_rt_context *ctx, void *dst, uint64_t src, size_t bytes);
/* Sets `bytes` bytes at `dst` to `value` (cuMemsetD8; e.g. 0xFF poisons bf16/f32 buffers with NaN). */
attn_rt_status attn_rt_memset_d8(attn_rt_context *ctx, uint64_t dst, unsigned char value,
                                 size_t bytes);
/* Number of streaming multiprocessors of the context's device (132 on an H100 SXM). */
attn_rt_status attn_rt_sm_count(attn_rt_context *ctx, int *out);

/* Element types of tensor maps. */
typedef enum {
  ATTN_RT_DTYPE_U8 = 0, /* also i8 and f8E4M3FN caches: TMA copies bytes */
  ATTN_RT_DTYPE_BF16,
  ATTN_RT_DTYPE_F16,
  ATTN_RT_DTYPE_F32,
  ATTN_RT_DTYPE_I32
} attn_rt_dtype;

/* Bytes of one element of `dtype` (0 for an unknown value). */
size_t attn_rt_dtype_size(attn_rt_dtype dtype);

/* Encodes a tiled TMA descriptor (cuTensorMapEncodeTiled) into `out128`: 128 bytes, 64-byte
 * aligned, passed to a kernel by value. `dims` (rank entries, innermost first, each 1..2^32),
 * `byte_strides` (rank-1 entries: strides of dims 1..rank-1, multiples of 16, < 2^40), `box`
 * (rank entries, 1..256, box[0] * element size a multiple of 16), `swizzle_bytes` 0 (none), 32,
 * 64 or 128 (box[0] * element size must not exceed it), `base_ptr` 16-byte aligned. Element
 * strides 1, no interleave, L2 promotion 256 B, out-of-bounds elements read as zeros. Arguments
 * out of range give ATTN_RT_INVALID_ARGUMENT before the driver is asked; a driver rejection gives
 * ATTN_RT_INVALID_ARGUMENT with the driver's error name and the arguments in the message; a
 * driver without cuTensorMapEncodeTiled (older than CUDA 12) gives ATTN_RT_NO_DRIVER. */
attn_rt_status attn_rt_tensor_map_encode(attn_rt_context *ctx, void *out128, attn_rt_dtype dtype,
                                         unsigned rank, const uint64_t *dims,
                                         const uint64_t *byte_strides, const unsigned *box,
                                         unsigned swizzle_bytes, uint64_t base_ptr);

/* Events, for timing launches on a stream (NULL = the default stream). */
typedef struct attn_rt_event attn_rt_event;
attn_rt_status attn_rt_event_create(attn_rt_context *ctx, attn_rt_event **out);
void attn_rt_event_destroy(attn_rt_event *event);
attn_rt_status attn_rt_event_record(attn_rt_event *event, void *stream);
/* Waits for `end` to complete, then gives the milliseconds between the two recorded events. */
attn_rt_status attn_rt_event_elapsed_ms(attn_rt_event *start, attn_rt_event *end, float *ms);

#ifdef __cplusplus
}
#endif

#endif /* ATTN_RUNTIME_RUNTIME_H */
