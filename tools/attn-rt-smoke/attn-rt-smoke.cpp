//===- attn-rt-smoke.cpp - end-to-end check of the attn GPU runtime -------===//
//
// What this file is: loads a PTX file with an `axpy(x, y, a, n)` kernel through the attn runtime
// (lazy libcuda), runs it on n elements (not a multiple of the block) with a 2-CTA cluster launch
// and, for large shared memory, a 100 KiB dynamic allocation, checks every element exactly
// against the host's fma, and prints one JSON line and PASS. Exit codes: 0 pass, 1 wrong result,
// 2 runtime error (the message says which: no driver, wrong architecture, load failure, ...).
//
//===----------------------------------------------------------------------===//

#include "attn/Runtime/Runtime.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#define TRY(call)                                                                                  \
  do {                                                                                             \
    attn_rt_status s_ = (call);                                                                    \
    if (s_ != ATTN_RT_OK) {                                                                        \
      std::fprintf(stderr, "attn-rt-smoke: %s: %s\n", attn_rt_status_name(s_), attn_rt_last_error());     \
      return 2;                                                                                    \
    }                                                                                              \
  } while (0)

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: attn-rt-smoke KERNEL.ptx [n] [arch]\n");
    return 2;
  }
  std::ifstream in(argv[1]);
  if (!in) {
    std::fprintf(stderr, "attn-rt-smoke: cannot read %s\n", argv[1]);
    return 2;
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string ptx = buffer.str();
  const unsigned n = argc > 2 ? static_cast<unsigned>(std::atol(argv[2])) : (1u << 20) + 3;
  const int arch = argc > 3 ? std::atoi(argv[3]) : 90;

  attn_rt_context *ctx = nullptr;
  TRY(attn_rt_init(0, &ctx));
  attn_rt_module *module = nullptr;
  TRY(attn_rt_load_module(ctx, ptx.c_str(), ptx.size() + 1, arch, &module));
  attn_rt_kernel *kernel = nullptr;
  TRY(attn_rt_get_kernel(module, "axpy", &kernel));

  std::vector<float> x(n), y(n), want(n);
  for (unsigned i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i % 97) * 0.25f - 3.f;
    y[i] = static_cast<float>(i % 13) - 6.5f;
  }
  const float a = 1.75f;
  for (unsigned i = 0; i < n; ++i)
    want[i] = std::fma(a, x[i], y[i]);
  uint64_t dx = 0, dy = 0;
  TRY(attn_rt_malloc(ctx, n * sizeof(float) + 4, &dx));
  TRY(attn_rt_malloc(ctx, n * sizeof(float) + 4, &dy));
  TRY(attn_rt_copy_to_device(ctx, dx, x.data(), n * sizeof(float)));
  TRY(attn_rt_copy_to_device(ctx, dy, y.data(), n * sizeof(float)));

  // A bad configuration is refused before the driver sees it.
  attn_rt_launch_config bad = {{3, 1, 1}, {256, 1, 1}, {2, 1, 1}, 0, 0};
  if (attn_rt_launch(kernel, &bad, nullptr, nullptr) != ATTN_RT_INVALID_ARGUMENT) {
    std::fprintf(stderr, "attn-rt-smoke: a cluster that does not divide the grid was accepted\n");
    return 1;
  }
  unsigned blocks = (n + 255) / 256;
  blocks += blocks % 2; // whole 2-CTA clusters
  attn_rt_launch_config config = {{blocks, 1, 1}, {256, 1, 1}, {2, 1, 1}, 100 * 1024, 0};
  unsigned nArg = n;
  float aArg = a;
  void *args[] = {&dx, &dy, &aArg, &nArg};
  TRY(attn_rt_launch(kernel, &config, args, nullptr));
  TRY(attn_rt_synchronize(ctx));
  std::vector<float> got(n);
  TRY(attn_rt_copy_to_host(ctx, got.data(), dy, n * sizeof(float)));
  unsigned wrong = 0;
  for (unsigned i = 0; i < n; ++i)
    wrong += got[i] != want[i];
  std::printf("{\"kernel\": \"axpy\", \"n\": %u, \"grid\": %u, \"cluster\": 2, \"smem_bytes\": %u, "
              "\"device\": \"%s\", \"cc\": %d, \"mismatches\": %u}\n",
              n, blocks, config.smem_bytes, attn_rt_device_name(ctx),
              attn_rt_compute_capability(ctx), wrong);
  attn_rt_free(ctx, dx);
  attn_rt_free(ctx, dy);
  attn_rt_unload_module(module);
  attn_rt_destroy(ctx);
  std::printf(wrong ? "FAIL\n" : "PASS\n");
  return wrong ? 1 : 0;
}
