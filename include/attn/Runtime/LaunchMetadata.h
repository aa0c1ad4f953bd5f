//===- LaunchMetadata.h - reader of attn-opt's *.launch.json -----*- C++ -*-===//
//
// What this file is: the reader of the launch metadata attn-opt writes beside a GPU kernel
// (`X.ptx.launch.json`, format "attn-launch-v1", docs/GPUDecode.md) into a plain struct, for
// launchers (attn-bench) that must not depend on MLIR/LLVM, and a bounded reader of regular files.
// Plain C++17 (JSON through nlohmann-json, an implementation detail); every function returns
// false and a message in `error` when the input is not what it should be.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_LAUNCHMETADATA_H
#define ATTN_RUNTIME_LAUNCHMETADATA_H

#include "attn/Runtime/LaunchABI.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace attn::rt {

/// Reads the regular file `path` into `out`. Refuses, with a message naming the file, what does
/// not exist, a directory, anything that is not a regular file (a device such as /dev/zero, a
/// pipe) and files over `maxBytes` (also when one grows while it is read).
bool readRegularFile(const std::string &path, uint64_t maxBytes, std::string &out,
                     std::string &error);

/// The largest launch metadata file readDecodeLaunch reads (real ones are a few KiB).
constexpr uint64_t kMaxLaunchMetadataBytes = uint64_t(16) << 20;

/// One grid extent of a kernel: a symbol ("num_splits", "groups", "batch", "row_blocks", ...)
/// evaluated at launch, or a constant (empty symbol).
struct GridExtent {
  std::string symbol;
  int64_t value = 0;
};

struct LaunchKernel {
  std::string name;
  std::string role; // "decode" or "combine"
  unsigned block[3] = {1, 1, 1};
  unsigned cluster[3] = {1, 1, 1};
  unsigned smemBytes = 0;
  /// Launch as a programmatic dependent of the stream's previous kernel (PDL): the kernel begins
  /// with griddepcontrol.wait, so it may be scheduled before that kernel has finished.
  bool programmatic = false;
  /// Combine kernels: the fewest splits this one is for (the launcher takes the combine kernel
  /// with the largest min_splits ≤ the split count).
  int64_t minSplits = 2;
  /// Decode kernels: split counts from 2 up to this one merge inside the decode kernel when it
  /// is launched with a cluster of {num_splits, 1, 1} CTAs (then no combine kernel runs); 0: never.
  int64_t clusterSplits = 0;
  /// Decode kernels: CTAs it is built to share an SM with (1: the first decode kernel). A second
  /// decode kernel with 2 is the wide-batch companion (DecodeLaunch::decodeKernel).
  int64_t ctasPerSm = 1;
  /// The companion's tile_n, if it differs from the schedule's (0: the schedule's).
  int64_t tileN = 0;
  GridExtent grid[3];
  std::vector<std::string> params; // parameter names in order
};

struct TensorMapInfo {
  std::string dtype; // "u8", "bf16", "f16", "f32", "i32"
  std::vector<unsigned> box;
  /// cuTensorMapEncodeTiled's swizzle in bytes: 0 (none), 32, 64 or 128.
  unsigned swizzle = 0;
};

/// Everything of a decode `*.launch.json`. -1 marks a dimension known only at launch.
struct DecodeLaunch {
  std::string format; // "attn-launch-v1"
  int arch = 0;       // 90 for sm_90a
  // problem
  std::string kind;   // "decode" or "prefill" (query chunks of q_chunk tokens, one split)
  int64_t qChunk = 1; // query tokens per CTA (q_len for decode)
  int64_t batch = -1, qLen = 1, qHeads = 1, kvHeads = 1, headDim = 0, kvLen = -1;
  std::string qDtype = "bf16"; // "bf16", "i8" or "f8E4M3FN" (prefill; parameter q_scale)
  std::string qQuant;          // "none" (bf16), "per_token_head", "per_token" or "per_block"
  std::string kvDtype;         // "i8", "ui8" (asymmetric only), "f8E4M3FN", "bf16"
  bool zeroPoints = false;     // asymmetric K/V: parameters k_zero / v_zero (code-typed)
  std::string kQuant, vQuant;  // "per_token_head", "per_token", "per_head", "per_tensor",
                               // "per_block" (fp8 prefill), "none"
  /// Tokens of one head per scale for "per_block" (1 otherwise).
  int64_t qBlockRows = 1, kBlockRows = 1, vBlockRows = 1;
  std::string outDtype; // "bf16"
  bool causal = false, alibi = false, seqLens = false;
  /// Q, K and V are rotated by the normalized Walsh–Hadamard matrix along head_dim (the caller
  /// rotates before quantizing; the kernel rotates O back). Optional in the JSON, default false.
  bool hadamard = false;
  /// Decode: attention sinks (parameter `sinks`, f32 [Hq]) and the log-sum-exp output
  /// (parameter `lse`, f32 [B, Sq, Hq]). Optional in the JSON, default false.
  bool sinks = false, lse = false;
  /// Prefill: a ragged batch (parameters `cu_seqlens_q`, `total_q`): q and out are [1, T, Hq, D],
  /// sequence b's rows cu_seqlens_q[b] ..< cu_seqlens_q[b + 1]; q_len is the most of any.
  /// Optional in the JSON, default false.
  bool ragged = false;
  /// Logit soft-capping c (0: none; optional in the JSON): logits become c · tanh(x / c).
  double softcap = 0;
  /// Sliding window (member "window": [left, right], optional, default [-1, -1]): the query at
  /// position i sees keys i − left ≤ j ≤ i + right; −1: unbounded on that side.
  int64_t windowLeft = -1, windowRight = -1;
  double softmaxScale = 0;
  /// A paged cache (member "paged"; page_size 0: contiguous): tokens per page, block-table entries
  /// per sequence (-1: the launch's kv_len / page_size), pages in the pool (-1: known at launch). The K/V tensor maps cover the pool as
  /// [1, num_pages · page_size, Hkv, D]; the kernel takes `block_table` ([B, max_blocks] i32).
  int64_t pageSize = 0, maxBlocks = 0, numPages = -1;
  // schedule
  int64_t packQHeads = 1, rowsPerCta = 1, groups = 1, tileN = 0, stages = 0, splitKv = 0;
  int64_t producerRegs = 0, consumerRegs = 0;
  int64_t workspaceFloatsPerSplit = 0;
  TensorMapInfo kMap, vMap;
  std::vector<LaunchKernel> kernels;

  /// The (first) kernel with role `role`, or nullptr.
  const LaunchKernel *kernel(const std::string &role) const;
  /// The combine kernel for `splits` splits (the largest min_splits ≤ splits), or nullptr.
  const LaunchKernel *combineKernel(int64_t splits) const;
  /// The decode kernel to launch: the wide-batch companion (`ctas_per_sm` 2) when there is one
  /// and one split's `ctas` (batch · groups) exceed `numSms` — two CTAs per SM then run in one
  /// wave what takes two at one per SM — else the first decode kernel.
  const LaunchKernel *decodeKernel(int64_t splits, int64_t ctas, int64_t numSms) const;
  /// Whether `splits` (> 1) splits merge inside the decode kernel launched with a cluster of
  /// {splits, 1, 1} (the decode kernel's `cluster_splits`), so no combine kernel runs.
  bool clusterMerges(int64_t splits) const;
};

/// Fills `out` from the text of a launch metadata file: strict JSON (RFC 8259; a duplicate key or
/// nesting deeper than 256 levels is refused; errors say "malformed JSON: line L, column C: ..."
/// or name the member), then checks that every required field is
/// present with the right type and an allowed value, and that the schedule is consistent with the
/// problem (rows_per_cta = q_len · pack_q_heads, groups = q_heads / pack_q_heads, workspace =
/// rows_per_cta · (head_dim + 2), a "decode" kernel, tensor map boxes of rank 4). Unknown members
/// are ignored (forward compatible).
bool parseDecodeLaunch(const std::string &json, DecodeLaunch &out, std::string &error);

/// Reads (readRegularFile, at most kMaxLaunchMetadataBytes) and parses `path`; the error names
/// the file.
bool readDecodeLaunch(const std::string &path, DecodeLaunch &out, std::string &error);

/// Evaluates a kernel's grid: each symbol through its formula in the launch ABI table
/// (LaunchABI.h) over `inputs` (the table's grid inputs: batch, num_splits, groups, rows, ...);
/// fails on a symbol outside the table, an input the symbol needs and `inputs` lacks, or an extent
/// outside 1..2^31-1 (x) / 1..65535 (y, z).
bool resolveGrid(const LaunchKernel &kernel, const std::map<std::string, int64_t> &inputs,
                 unsigned grid[3], std::string &error);

/// The launch ABI entries of a kernel's parameters (`names`, in order); fails, naming `kernel`
/// and the parameter, on a name outside the table.
bool resolveParams(const std::string &kernel, const std::vector<std::string> &names,
                   std::vector<attn_abi::Param> &out, std::string &error);

/// A launcher's values of the parameters it supplies, by table entry: the address of a value of
/// the entry's C type (a tensor map: the 64-byte aligned descriptor). Null: not supplied.
struct ParamValues {
  void *values[attn_abi::kNumParams] = {};
  void set(attn_abi::Param p, void *value) { values[size_t(p)] = value; }
  void set(attn_abi::Param p, const void *value) { set(p, const_cast<void *>(value)); }
  void *operator[](attn_abi::Param p) const { return values[size_t(p)]; }
};

/// Whether `values` supplies every parameter of `params`; else false, naming `kernel`, the first
/// parameter not supplied and its meaning in the table.
bool checkSupplied(const std::string &kernel, const std::vector<attn_abi::Param> &params,
                   const ParamValues &values, std::string &error);

/// The kernel argument array of a launch: args[i] = values[params[i]] (checkSupplied first).
inline void bindArgs(const std::vector<attn_abi::Param> &params, const ParamValues &values,
                     void **args) {
  for (size_t i = 0; i < params.size(); ++i)
    args[i] = values[params[i]];
}

} // namespace attn::rt

#endif // ATTN_RUNTIME_LAUNCHMETADATA_H
