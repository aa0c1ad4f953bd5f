//===- BenchOptions.h - attn-bench's command line -------------------*- C++ -*-===//
//
// What this file is: attn-bench's options (the values main() runs with) and their parsing with
// CLI11 (Debian libcli11-dev, header-only): defaults in --help, checked values, and clear
// messages for bad arguments.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TOOLS_ATTN_BENCH_BENCHOPTIONS_H
#define ATTN_TOOLS_ATTN_BENCH_BENCHOPTIONS_H

#include "attn/Reference/DecodeReference.h"

#include <cstdint>
#include <string>

namespace attn::bench {

/// The largest kernel file attn-bench reads (real PTX is a few MiB at most).
constexpr uint64_t kMaxKernelBytes = uint64_t(256) << 20;

struct Options {
  std::string kernelPath, metaPath;
  int64_t batch = -2, kvLen = -2, qLen = -2; // -2: not given
  ref::SeqLenMode seqLens = ref::SeqLenMode::Full;
  std::string splits; // "" = metadata
  bool outliers = false, skewed = false; // skewed implies outliers
  uint64_t seed = 0;
  int64_t warmup = 10, iters = 50;
  bool noTime = false, dryRun = false;
  double tolQuant = 1e-2, tolUnquant = -1;
  int64_t smCount = 0;
};

/// Parses argv into `o`; returns -1 to go on, else the exit code (0 after --help, 2 for a bad
/// command line, with a message on stderr).
int parseOptions(int argc, char **argv, Options &o);

} // namespace attn::bench

#endif // ATTN_TOOLS_ATTN_BENCH_BENCHOPTIONS_H
