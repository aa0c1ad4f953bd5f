//===- SpecGenerator.h - well-formed hostile specs for attn-spec-fuzz -----*- C++ -*-===//
//
// What this file is: the generator of attn-spec-fuzz. Each call writes one complete MLIR module
// holding one kernel spec (GPU decode or prefill attention, CPU NoMAD LUT or dynamic quantize),
// drawing every dimension a hostile user controls — extents (static, dynamic, zero, 2^31, 2^40),
// layouts, memory spaces, where the op sits, the function's name, schedule fields, an output
// aliasing an input — and records what the artifact must show if the spec is accepted, and
// whether it must be refused.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TOOLS_ATTN_SPEC_FUZZ_SPECGENERATOR_H
#define ATTN_TOOLS_ATTN_SPEC_FUZZ_SPECGENERATOR_H

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace attnfuzz {

/// A dynamic extent (`?`).
constexpr int64_t kDyn = -1;

enum class SpecKind { Decode, Prefill, PQLut, QuantizeDynamic };

struct GeneratedSpec {
  std::string text;  ///< the module
  SpecKind kind;
  bool gpu = false;
  std::string name;  ///< the function's name (unescaped)
  /// Attention extents as the launch metadata reports them (-1: dynamic).
  int64_t batch = 1, qLen = 1, qHeads = 1, kvHeads = 1, kvLen = 1, headDim = 1;
  /// Parameters the C header's wrapper must take (buffers plus dynamic extents), CPU specs.
  int64_t headerParams = 0;
  /// Why the spec must be refused ("" when it may be accepted).
  std::string mustRefuse;
};

class SpecGenerator {
public:
  explicit SpecGenerator(uint64_t seed) : rng(seed) {}
  GeneratedSpec next();

private:
  std::mt19937_64 rng;
  size_t pick(size_t n) { return n ? static_cast<size_t>(rng() % n) : 0; }
  bool chance(unsigned percent) { return pick(100) < percent; }

  int64_t extent(std::initializer_list<int64_t> usual, bool mayBeDynamic, GeneratedSpec &g);
  struct Arg {
    std::string name, type;
    int dynamic = 0; ///< dynamic extents of the type
  };
  Arg memref(const std::string &name, const std::vector<int64_t> &shape,
             const std::string &elem, GeneratedSpec &g);
  std::string functionName(GeneratedSpec &g);
  std::string schedule(GeneratedSpec &g);
  void attention(GeneratedSpec &g, std::vector<Arg> &args, std::string &op);
  void pqLut(GeneratedSpec &g, std::vector<Arg> &args, std::string &op);
  void quantizeDynamic(GeneratedSpec &g, std::vector<Arg> &args, std::string &op);
  std::string place(GeneratedSpec &g, std::vector<Arg> args, const std::string &op);
};

} // namespace attnfuzz

#endif // ATTN_TOOLS_ATTN_SPEC_FUZZ_SPECGENERATOR_H
