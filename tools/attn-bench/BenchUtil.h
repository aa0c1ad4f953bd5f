//===- BenchUtil.h - small utilities of attn-bench ------------------*- C++ -*-===//
//
// What this file is: attn-bench's utilities that know nothing of kernels: JSON text of strings,
// numbers and grids, and the host-memory query. Header-only.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TOOLS_ATTN_BENCH_BENCHUTIL_H
#define ATTN_TOOLS_ATTN_BENCH_BENCHUTIL_H

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

namespace attn::bench {

inline std::string jsonString(const std::string &s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}
inline std::string jsonNumber(double x, const char *format = "%.4e") {
  if (!std::isfinite(x))
    return "null";
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, x);
  return buf;
}
inline std::string baseName(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}
inline std::string gridJson(const unsigned g[3]) {
  return "[" + std::to_string(g[0]) + ", " + std::to_string(g[1]) + ", " + std::to_string(g[2]) +
         "]";
}

/// MemAvailable of /proc/meminfo (MemFree when that is missing); 0 when unknown.
inline double availableHostBytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kb = 0;
  while (in >> key >> kb) {
    if (key == "MemAvailable:")
      return kb * 1024;
    in.ignore(256, '\n');
  }
  long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? double(pages) * double(page) : 0;
}

} // namespace attn::bench

#endif // ATTN_TOOLS_ATTN_BENCH_BENCHUTIL_H
