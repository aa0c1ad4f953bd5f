//===- attn-bench.cpp - check and time a generated GPU decode kernel ------===//
//
// What this file is: the launcher of the decode kernels convert-attn-to-nvvm generates. It reads
// the kernel (PTX or cubin) and its `*.launch.json` (docs/GPUDecode.md), generates seeded inputs,
// quantizes K/V as the metadata says, computes two fp64 host references (quantized and
// unquantized math), launches decode (+ combine) through the attn runtime, checks every output,
// times the launches with events, and prints one JSON line and PASS / FAIL (...).
// Exit codes: 0 pass, 1 fail, 2 usage or runtime error (no driver, bad metadata, ...).
// Plain C++17 over AttnRuntime and AttnScheduleHeuristics; no MLIR. The command line is in
// BenchOptions.cpp.
//
//===----------------------------------------------------------------------===//

#include "attn/Dialect/Attn/Transforms/ScheduleHeuristics.h"
#include "attn/Reference/DecodeReference.h"
#include "attn/Runtime/LaunchMetadata.h"
#include "attn/Runtime/Runtime.h"

#include "BenchOptions.h"
#include "BenchUtil.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

using namespace attn;
using namespace attn::bench;

namespace {
/// The largest absolute difference of the kernel's log-sum-exps from the quantized math's: the
/// kernel's row sums are f32 (log2 by the special-function unit), its logits the reference's.
constexpr double kLseTolerance = 1e-2;

int error(const std::string &message) {
  std::fprintf(stderr, "attn-bench: %s\n", message.c_str());
  return 2;
}

#define TRY(call, what)                                                                            \
  do {                                                                                             \
    attn_rt_status s_ = (call);                                                                    \
    if (s_ != ATTN_RT_OK)                                                                          \
      return error(std::string(what) + ": " + attn_rt_status_name(s_) + ": " +                     \
                   attn_rt_last_error());                                                          \
  } while (0)

/// The resolved launch: extents, splits and grids.
struct Plan {
  int64_t batch = 0, kvLen = 0, qLen = 0, numSplits = 1, smCount = 0;
  /// A paged kernel: block-table entries per sequence (the metadata's, or kv_len / page_size
  /// where it is dynamic).
  int64_t maxBlocks = 0;
  ref::KvType kvType = ref::KvType::I8;
  bool asymmetric = false, unsignedCodes = false; // zero points; ui8 codes
  ref::Granularity qGran = ref::Granularity::None, kGran = ref::Granularity::None,
                   vGran = ref::Granularity::None;
  ref::SeqLenMode seqLens = ref::SeqLenMode::Full;
  unsigned decodeGrid[3] = {1, 1, 1}, combineGrid[3] = {1, 1, 1};
  size_t workspaceFloats = 0;
  bool clusterMerge = false; // splits merged in a cluster (ATTN_RT_NO_CLUSTER_MERGE=1: combine)
  const rt::LaunchKernel *decode = nullptr; // the decode kernel (or its wide-batch companion)
};

/// Checks the requested shape against the metadata (extents the kernel cannot take → message).
bool resolveShape(const Options &o, const rt::DecodeLaunch &m, Plan &p, std::string &why) {
  auto flag = [](const std::string &name) {
    return name == "batch" ? std::string("batch") : name == "kv_len" ? "kv-len" : "q-len";
  };
  auto extent = [&](const char *name, int64_t given, int64_t fixed, int64_t &out) {
    if (fixed >= 0) {
      if (given != -2 && given != fixed) {
        why = std::string("the kernel was compiled for ") + name + " " + std::to_string(fixed) +
              "; --" + flag(name) + " " + std::to_string(given) + " does not match";
        return false;
      }
      out = fixed;
      return true;
    }
    if (given == -2) {
      why = std::string("--") + flag(name) + " is required: the kernel's " + name + " is dynamic";
      return false;
    }
    out = given;
    return true;
  };
  if (!extent("batch", o.batch, m.batch, p.batch) || !extent("kv_len", o.kvLen, m.kvLen, p.kvLen) ||
      !extent("q_len", o.qLen, m.qLen, p.qLen))
    return false;
  if (p.qLen < 1 || p.qLen >= (INT64_C(1) << 31)) {
    why = "q_len " + std::to_string(p.qLen) + " is outside 1..2^31-1";
    return false;
  }
  if (p.batch < 1 || p.batch > 65535) {
    why = "batch " + std::to_string(p.batch) + " is outside 1..65535 (the grid's z extent)";
    return false;
  }
  if (p.kvLen < 0 || p.kvLen >= (INT64_C(1) << 31)) {
    why = "kv_len " + std::to_string(p.kvLen) + " is outside 0..2^31-1 (an i32 kernel argument)";
    return false;
  }
  if (m.groups > 65535) {
    why = "groups " + std::to_string(m.groups) + " exceed the grid's y extent 65535";
    return false;
  }
  // A dynamic max_blocks is kv_len / page_size (the kernel's kv_len is max_blocks · P).
  p.maxBlocks = m.maxBlocks;
  if (m.pageSize && m.maxBlocks < 0) {
    if (p.kvLen < m.pageSize || p.kvLen % m.pageSize) {
      why = "kv_len " + std::to_string(p.kvLen) + " is not a positive multiple of page_size " +
            std::to_string(m.pageSize) + " (the paged kernel's max_blocks is kv_len / page_size)";
      return false;
    }
    p.maxBlocks = p.kvLen / m.pageSize;
  }
  // A paged kernel reads the batch's cache as a pool of batch · max_blocks pages, sequence b's
  // page i being page b · max_blocks + i (pagedTable).
  if (m.pageSize && m.numPages > 0 && m.numPages != p.batch * p.maxBlocks) {
    why = "the paged kernel's pool has " + std::to_string(m.numPages) +
          " pages; attn-bench lays the batch's cache out as batch · max_blocks = " +
          std::to_string(p.batch * p.maxBlocks) + " pages";
    return false;
  }
  // ui8 codes are asymmetric int8 codes read as unsigned.
  p.asymmetric = m.zeroPoints;
  p.unsignedCodes = m.kvDtype == "ui8";
  if (p.unsignedCodes != (p.asymmetric && m.kvDtype == "ui8") ||
      (p.asymmetric && m.kvDtype != "i8" && m.kvDtype != "ui8")) {
    why = "zero points are defined for i8 / ui8 caches only, and ui8 caches need them";
    return false;
  }
  if (!ref::parseKvType(p.unsignedCodes ? "i8" : m.kvDtype, p.kvType) ||
      !ref::parseGranularity(m.qQuant, p.qGran) || !ref::parseGranularity(m.kQuant, p.kGran) ||
      !ref::parseGranularity(m.vQuant, p.vGran)) {
    why = "unsupported kv_dtype/q_quant/k_quant/v_quant in the metadata";
    return false;
  }
  p.seqLens = m.seqLens ? o.seqLens : ref::SeqLenMode::Full;
  if (!m.seqLens && o.seqLens != ref::SeqLenMode::Full)
    std::fprintf(stderr,
                 "attn-bench: note: the kernel's spec has no seq_lens; every batch uses "
                 "kv_len (--seq-lens %s ignored)\n",
                 ref::seqLenModeName(o.seqLens));
  // Host memory: f32 K, V, dequantized K, V and codes, with some slack.
  const double elems = double(p.batch) * double(p.kvLen) * double(m.kvHeads) * double(m.headDim);
  const double need = elems * (16.0 + 2.0 * ref::kvElementBytes(p.kvType)) * 1.1 +
                      double(p.batch) * double(p.qLen) * double(m.qHeads) * double(m.headDim) * 24;
  const double avail = availableHostBytes();
  if (avail > 0 && need > avail) {
    char buf[160];
    std::snprintf(buf, sizeof(buf),
                  "the host inputs and references need about %.1f GiB, only %.1f GiB are available",
                  need / 1073741824.0, avail / 1073741824.0);
    why = buf;
    return false;
  }
  return true;
}

bool resolveSplits(const Options &o, const rt::DecodeLaunch &m, Plan &p, std::string &why) {
  int64_t n = m.splitKv;
  if (!o.splits.empty())
    n = o.splits == "auto" ? 0 : std::atoll(o.splits.c_str());
  if (n == 0) {
    mlir::attn::GPUInfo gpu;
    gpu.numSMs = p.smCount;
    n = mlir::attn::selectSplitKv(p.batch * m.groups,
                                  mlir::attn::splitKvKeys(p.kvLen, p.qLen, m.windowLeft), m.tileN,
                                  gpu);
  }
  if (m.kind == "prefill" && n != 1) {
    why = "prefill kernels run one split (got " + std::to_string(n) + ")";
    return false;
  }
  p.numSplits = n;
  p.decode = m.decodeKernel(n, p.batch * m.groups, p.smCount);
  const char *noCluster = std::getenv("ATTN_RT_NO_CLUSTER_MERGE");
  p.clusterMerge = m.clusterMerges(n) && !(noCluster && *noCluster);
  if (n > 1 && !p.clusterMerge && !m.combineKernel(n)) {
    why = std::to_string(n) + " splits need a \"combine\" kernel, and the metadata has none";
    return false;
  }
  p.workspaceFloats = n > 1 && !p.clusterMerge ? size_t(p.batch) * size_t(m.groups) * size_t(n) *
                                                     size_t(m.workspaceFloatsPerSplit)
                                               : 0;
  // The launch inputs of the grid formulas (LaunchABI.h).
  const std::map<std::string, int64_t> symbols = {
      {"num_splits", n},       {"groups", m.groups},   {"batch", p.batch},
      {"rows", m.rowsPerCta},  {"kv_heads", m.kvHeads}, {"q_heads", m.qHeads},
      {"q_len", p.qLen},       {"q_chunk", m.qChunk},  {"sms", p.smCount}};
  if (!rt::resolveGrid(*p.decode, symbols, p.decodeGrid, why))
    return false;
  if (n > 1 && !p.clusterMerge &&
      !rt::resolveGrid(*m.combineKernel(n), symbols, p.combineGrid, why))
    return false;
  return true;
}

/// One copy of the K/V inputs on the device (several rotate while timing, to defeat the L2).
struct DeviceKv {
  alignas(64) unsigned char kMap[128];
  alignas(64) unsigned char vMap[128];
  uint64_t k = 0, v = 0, kScale = 0, vScale = 0;
  uint64_t kZero = 0, vZero = 0; // asymmetric caches only (null otherwise)
};

/// Host inputs and references.
struct HostData {
  std::vector<uint16_t> qBits;
  std::vector<float> qDeq; // s·q̂ for int8 / e4m3 queries (q_dtype "i8", "f8E4M3FN"), else q
  std::vector<float> q, k, v, kDeq, vDeq, refQuant, refUnquant, slopes;
  // Attention sinks (spec `sinks`: 2 · N(0, 1) per query head) and the references' log-sum-exps
  // (spec `lse`); empty without.
  std::vector<float> sinks, lseQuant, lseUnquant;
  std::vector<int32_t> seqLens;
  ref::QuantizedKv qq, kq, vq; // qq: quantized queries (codes and scales), as a cache would be
};

void makeHostData(const Options &o, const rt::DecodeLaunch &m, const Plan &p, HostData &h) {
  const ref::KvShape kv{p.batch, p.kvLen, m.kvHeads, m.headDim};
  const ref::KvShape kShape{p.batch, p.kvLen, m.kvHeads, m.headDim, m.kBlockRows},
      vShape{p.batch, p.kvLen, m.kvHeads, m.headDim, m.vBlockRows};
  const size_t qElems = size_t(p.batch) * size_t(p.qLen) * size_t(m.qHeads) * size_t(m.headDim);
  h.q.resize(qElems);
  h.qBits.resize(qElems);
  ref::fillGaussian(h.q.data(), qElems, o.seed, 1);
  for (size_t i = 0; i < qElems; ++i) {
    h.qBits[i] = ref::floatToBf16(h.q[i]);
    h.q[i] = ref::bf16ToFloat(h.qBits[i]);
  }
  // `hadamard` kernels take rotated inputs (x · H along head_dim) and rotate O back; the
  // unquantized reference stays on the tensors as generated.
  auto rotated = [&](const std::vector<float> &x) {
    std::vector<float> r = x;
    if (m.hadamard)
      ref::hadamardRows(r.data(), r.size() / size_t(m.headDim), m.headDim);
    return r;
  };
  std::vector<float> qIn = rotated(h.q);
  if (m.hadamard && m.qDtype == "bf16")
    for (size_t i = 0; i < qElems; ++i)
      h.qBits[i] = ref::floatToBf16(qIn[i]);
  h.qDeq = qIn;
  if (m.qDtype == "bf16")
    for (size_t i = 0; i < qElems; ++i)
      h.qDeq[i] = ref::bf16ToFloat(h.qBits[i]);
  if (m.qDtype != "bf16") { // int8 / e4m3 per (batch, token, head) row or block, as K/V are
    const ref::KvShape qs{p.batch, p.qLen, m.qHeads, m.headDim, m.qBlockRows};
    ref::quantizeKv(qIn.data(), qs, m.qDtype == "i8" ? ref::KvType::I8 : ref::KvType::F8E4M3,
                    p.qGran, h.qq);
    ref::dequantizeKv(h.qq, qs, h.qDeq.data());
  }
  h.k.resize(kv.elements());
  h.v.resize(kv.elements());
  ref::fillGaussian(h.k.data(), h.k.size(), o.seed, 2);
  ref::fillGaussian(h.v.data(), h.v.size(), o.seed, 3);
  if (o.outliers) {
    std::vector<int64_t> channels = ref::outlierChannels(m.headDim);
    const size_t rows = kv.elements() / size_t(m.headDim);
    ref::scaleChannels(h.k.data(), rows, m.headDim, channels, 20.0f);
    ref::scaleChannels(h.v.data(), rows, m.headDim, channels, 20.0f);
  }
  if (o.skewed) { // V tile scales 4000x apart, and all-zero blocks (the scale floor)
    const size_t rowLen = size_t(m.kvHeads * m.headDim);
    for (size_t row = 0; row < h.v.size() / rowLen; ++row) {
      int64_t block = int64_t(row % size_t(p.kvLen)) / 128;
      float f = block % 7 <= 1 ? 0.0f : block % 4 == 1 ? 40.0f : block % 4 == 3 ? 0.01f : 1.0f;
      for (size_t i = 0; i < rowLen; ++i)
        h.v[row * rowLen + i] *= f;
    }
  }
  std::vector<float> kIn = rotated(h.k), vIn = rotated(h.v);
  ref::quantizeKv(kIn.data(), kShape, p.kvType, p.kGran, h.kq, 0, p.asymmetric, p.unsignedCodes);
  ref::quantizeKv(vIn.data(), vShape, p.kvType, p.vGran, h.vq, 0, p.asymmetric, p.unsignedCodes);
  if (o.skewed) // the all-zero groups' scales (at the floor) become 0 and subnormal, alternately
    for (size_t i = 0, n = 0; i < h.vq.scales.size(); ++i)
      if (h.vq.scales[i] == ref::kMinScale)
        h.vq.scales[i] = n++ % 2 ? 1e-40f : 0.0f;
  h.kDeq.resize(kv.elements());
  h.vDeq.resize(kv.elements());
  ref::dequantizeKv(h.kq, kShape, h.kDeq.data());
  ref::dequantizeKv(h.vq, vShape, h.vDeq.data());
  h.seqLens = ref::makeSeqLens(p.batch, p.kvLen, p.seqLens, o.seed);
  h.slopes = m.alibi ? ref::alibiSlopes(m.qHeads) : std::vector<float>(size_t(m.qHeads), 0.0f);

  ref::DecodeProblem prob;
  prob.batch = p.batch;
  prob.qLen = p.qLen;
  prob.qHeads = m.qHeads;
  prob.kvHeads = m.kvHeads;
  prob.headDim = m.headDim;
  prob.kvLen = p.kvLen;
  prob.causal = m.causal;
  prob.alibi = m.alibi;
  prob.softmaxScale = m.softmaxScale;
  prob.softcap = m.softcap;
  prob.windowLeft = m.windowLeft;
  prob.windowRight = m.windowRight;
  h.refQuant.resize(qElems);
  h.refUnquant.resize(qElems);
  ref::DecodeExtras quantExtras, unquantExtras;
  if (m.sinks) {
    h.sinks.resize(size_t(m.qHeads));
    ref::fillGaussian(h.sinks.data(), h.sinks.size(), o.seed, 4);
    for (float &x : h.sinks)
      x *= 2;
    quantExtras.sinks = unquantExtras.sinks = h.sinks.data();
  }
  if (m.lse) {
    h.lseQuant.resize(qElems / size_t(m.headDim));
    h.lseUnquant.resize(qElems / size_t(m.headDim));
    quantExtras.lse = h.lseQuant.data();
    unquantExtras.lse = h.lseUnquant.data();
  }
  ref::decodeReference(prob, h.qDeq.data(), h.kDeq.data(), h.vDeq.data(), h.seqLens.data(),
                       h.slopes.data(), h.refQuant.data(), 0, quantExtras);
  if (m.hadamard) // the quantized math in the rotated basis, rotated back as the kernel does
    ref::hadamardRows(h.refQuant.data(), qElems / size_t(m.headDim), m.headDim);
  ref::decodeReference(prob, h.q.data(), h.k.data(), h.v.data(), h.seqLens.data(), h.slopes.data(),
                       h.refUnquant.data(), 0, unquantExtras);
  // Slots past each length hold NaN where the type has one: they must not reach P · V.
  ref::poisonPastLengths(h.kq, kv, h.seqLens);
  ref::poisonPastLengths(h.vq, kv, h.seqLens);
}

/// Bytes of K, V and scales the kernel reads: every visible token of every batch.
double bytesRead(const rt::DecodeLaunch &m, const Plan &p, const std::vector<int32_t> &lens) {
  double tokens = 0;
  for (int32_t l : lens)
    tokens += l;
  double bytes = 2 * tokens * double(m.kvHeads) * double(m.headDim) * ref::kvElementBytes(p.kvType);
  for (auto [g, rows] : {std::pair{p.kGran, m.kBlockRows}, std::pair{p.vGran, m.vBlockRows}}) {
    switch (g) {
    case ref::Granularity::PerTokenHead:
      bytes += 4 * tokens * double(m.kvHeads);
      break;
    case ref::Granularity::PerToken:
      bytes += 4 * tokens;
      break;
    case ref::Granularity::PerHead:
      bytes += 4 * double(m.kvHeads);
      break;
    case ref::Granularity::PerTensor:
      bytes += 4;
      break;
    case ref::Granularity::PerBlock: // one per `rows` tokens of a head
      bytes += 4 * std::ceil(tokens / double(rows)) * double(m.kvHeads);
      break;
    case ref::Granularity::None:
      break;
    }
  }
  return bytes;
}

struct Kernel {
  const rt::LaunchKernel *meta = nullptr;
  attn_rt_kernel *handle = nullptr;
  attn_rt_launch_config config{};
};

/// The values of the kernel parameters for one input copy.
struct ArgValues {
  const DeviceKv *kv = nullptr;
  uint64_t q = 0, qScale = 0, seqLens = 0, alibi = 0, out = 0, workspace = 0, blockTable = 0;
  uint64_t sinks = 0, lse = 0;
  int32_t batch = 0, kvLen = 0, numSplits = 1, qLen = 0;
  int32_t numSlots = 0; // a paged pool's rows
};

/// Binds `k`'s parameters by their launch ABI entries (LaunchABI.h) to the values of `a`.
bool buildArgs(const rt::LaunchKernel &k, ArgValues &a, std::vector<void *> &args,
               std::string &why) {
  using attn_abi::Param;
  rt::ParamValues v;
  v.set(Param::KMap, a.kv->kMap);
  v.set(Param::VMap, a.kv->vMap);
  v.set(Param::Q, &a.q);
  v.set(Param::QScale, &a.qScale);
  v.set(Param::KScale, &a.kv->kScale);
  v.set(Param::VScale, &a.kv->vScale);
  v.set(Param::KZero, &a.kv->kZero);
  v.set(Param::VZero, &a.kv->vZero);
  v.set(Param::SeqLens, &a.seqLens);
  v.set(Param::Alibi, &a.alibi);
  v.set(Param::Out, &a.out);
  v.set(Param::Workspace, &a.workspace);
  v.set(Param::Batch, &a.batch);
  v.set(Param::KvLen, &a.kvLen);
  v.set(Param::NumSplits, &a.numSplits);
  v.set(Param::QLen, &a.qLen);
  v.set(Param::BlockTable, &a.blockTable);
  v.set(Param::NumSlots, &a.numSlots);
  v.set(Param::Sinks, &a.sinks);
  v.set(Param::Lse, &a.lse);
  std::vector<attn_abi::Param> params;
  if (!rt::resolveParams(k.name, k.params, params, why) ||
      !rt::checkSupplied(k.name, params, v, why))
    return false;
  args.resize(params.size());
  rt::bindArgs(params, v, args.data());
  return true;
}

} // namespace

/// A paged kernel's block table over the contiguous [batch, kv_len] cache: sequence b's page i
/// is page b · max_blocks + i of the pool of batch · max_blocks pages (empty when contiguous).
std::vector<int32_t> pagedTable(const rt::DecodeLaunch &m, const Plan &p) {
  std::vector<int32_t> table;
  for (int64_t i = 0; m.pageSize && i < p.batch * p.maxBlocks; ++i)
    table.push_back(static_cast<int32_t>(i));
  return table;
}

int main(int argc, char **argv) {
  Options o;
  if (int rc = parseOptions(argc, argv, o); rc != -1)
    return rc;
  std::string image, why;
  if (!rt::readRegularFile(o.kernelPath, kMaxKernelBytes, image, why))
    return error("cannot read kernel: " + why);
  rt::DecodeLaunch m;
  if (!rt::readDecodeLaunch(o.metaPath, m, why))
    return error(why);
  Plan p;
  if (!resolveShape(o, m, p, why))
    return error(why);
  const bool cubin = image.size() >= 4 && image.compare(0, 4,
                                                        "\x7f"
                                                        "ELF") == 0;
  // Checked before the dry run too: a plan printed for a file the driver cannot load misleads.
  if (!cubin && (image.find(".version") == std::string::npos ||
                 image.find(".entry") == std::string::npos))
    return error("the kernel " + o.kernelPath + " is neither a cubin (ELF) nor PTX text (it has "
                 "no .version and .entry directives)");

  std::string head =
      "{\"kernel\": " + jsonString(baseName(o.kernelPath)) +
      ", \"batch\": " + std::to_string(p.batch) + ", \"kv_len\": " + std::to_string(p.kvLen) +
      ", \"q_len\": " + std::to_string(p.qLen) + ", \"q_heads\": " + std::to_string(m.qHeads) +
      ", \"kv_heads\": " + std::to_string(m.kvHeads) +
      ", \"head_dim\": " + std::to_string(m.headDim) + ", \"q_dtype\": " + jsonString(m.qDtype) +
      ", \"kv_dtype\": " + jsonString(m.kvDtype) + ", \"k_quant\": " + jsonString(m.kQuant) +
      ", \"v_quant\": " + jsonString(m.vQuant) +
      ", \"zero_points\": " + (m.zeroPoints ? "true" : "false") +
      ", \"causal\": " + (m.causal ? "true" : "false") +
      ", \"alibi\": " + (m.alibi ? "true" : "false") +
      ", \"hadamard\": " + (m.hadamard ? "true" : "false") +
      (m.sinks ? ", \"sinks\": true" : "") + (m.lse ? ", \"lse\": true" : "") +
      (m.softcap > 0 ? ", \"softcap\": " + jsonNumber(m.softcap, "%g") : std::string()) +
      (m.windowLeft >= 0 || m.windowRight >= 0
           ? ", \"window\": [" + std::to_string(m.windowLeft) + ", " +
                 std::to_string(m.windowRight) + "]"
           : std::string()) +
      ", \"seq_lens\": " + jsonString(ref::seqLenModeName(p.seqLens)) +
      ", \"data\": " + jsonString(o.skewed ? "skewed" : o.outliers ? "outliers" : "gaussian");
  if (m.pageSize) // a paged cache: batch · max_blocks pages of page_size tokens
    head += ", \"page_size\": " + std::to_string(m.pageSize) +
            ", \"num_pages\": " + std::to_string(p.batch * p.maxBlocks);

  if (o.dryRun) {
    p.smCount = o.smCount ? o.smCount : 132;
    if (!resolveSplits(o, m, p, why))
      return error(why);
    const bool combined = p.numSplits > 1 && !p.clusterMerge;
    std::printf("%s, \"num_splits\": %lld, \"sm_count\": %lld, \"decode_kernel\": %s, "
                "\"decode_grid\": %s, \"combine_kernel\": %s, \"combine_grid\": %s, "
                "\"cluster_merge\": %s, \"workspace_bytes\": %zu, \"dry_run\": true}\n",
                head.c_str(), static_cast<long long>(p.numSplits),
                static_cast<long long>(p.smCount), jsonString(p.decode->name).c_str(),
                gridJson(p.decodeGrid).c_str(),
                combined ? jsonString(m.combineKernel(p.numSplits)->name).c_str() : "null",
                combined ? gridJson(p.combineGrid).c_str() : "null",
                p.clusterMerge ? "true" : "false", p.workspaceFloats * sizeof(float));
    return 0;
  }

  // The device first: without a driver there is no point generating inputs.
  attn_rt_context *ctx = nullptr;
  TRY(attn_rt_init(0, &ctx), "initializing the GPU");
  int sms = 0;
  TRY(attn_rt_sm_count(ctx, &sms), "reading the SM count");
  p.smCount = o.smCount ? o.smCount : sms;
  if (!resolveSplits(o, m, p, why))
    return error(why);
  if (!cubin)
    image.push_back('\0');
  attn_rt_module *module = nullptr;
  TRY(attn_rt_load_module(ctx, image.data(), image.size(), m.arch, &module),
      "loading " + o.kernelPath);
  Kernel decode, combine;
  decode.meta = p.decode;
  combine.meta = p.clusterMerge ? nullptr : m.combineKernel(p.numSplits);
  for (Kernel *k : {&decode, &combine}) {
    if (!k->meta || (k == &combine && p.numSplits == 1))
      continue;
    TRY(attn_rt_get_kernel(module, k->meta->name.c_str(), &k->handle), "finding the kernel");
    const unsigned *grid = k == &decode ? p.decodeGrid : p.combineGrid;
    for (int d = 0; d < 3; ++d) {
      k->config.grid[d] = grid[d];
      k->config.block[d] = k->meta->block[d];
      k->config.cluster[d] = k->meta->cluster[d];
    }
    if (k == &decode && p.clusterMerge) // one cluster per (group, batch): its splits
      k->config.cluster[0] = unsigned(p.numSplits);
    k->config.smem_bytes = k->meta->smemBytes;
    k->config.programmatic = k->meta->programmatic ? 1 : 0;
  }

  HostData h;
  makeHostData(o, m, p, h);

  // Device buffers. A zero-length cache still gets one token so the tensor maps are valid.
  const int e = ref::kvElementBytes(p.kvType);
  const uint64_t allocLen = uint64_t(std::max<int64_t>(p.kvLen, 1));
  const size_t kvBytes = size_t(p.batch) * allocLen * size_t(m.kvHeads) * size_t(m.headDim) * e;
  const size_t kScaleBytes = h.kq.scales.size() * sizeof(float);
  const size_t vScaleBytes = h.vq.scales.size() * sizeof(float);
  const size_t footprint = 2 * kvBytes + kScaleBytes + vScaleBytes;
  size_t copies = 1;
  if (!o.noTime && footprint < (size_t(100) << 20))
    copies = std::min<size_t>(
        64, std::max<size_t>(2, ((size_t(256) << 20) + footprint - 1) / footprint));
  std::vector<DeviceKv> kvs(copies);
  std::vector<uint64_t> allocations;
  auto alloc = [&](size_t bytes, uint64_t &ptr) {
    attn_rt_status s = attn_rt_malloc(ctx, std::max<size_t>(bytes, 16), &ptr);
    if (s == ATTN_RT_OK)
      allocations.push_back(ptr);
    return s;
  };
  // Paged: the pool, one sequence of batch · max_blocks · page_size rows.
  const uint64_t mapRows = m.pageSize ? allocLen * uint64_t(p.batch) : allocLen;
  const uint64_t dims[4] = {uint64_t(m.headDim), uint64_t(m.kvHeads), mapRows,
                            uint64_t(m.pageSize ? 1 : p.batch)};
  const uint64_t rowBytes = uint64_t(m.headDim) * uint64_t(e);
  const uint64_t strides[3] = {rowBytes, rowBytes * uint64_t(m.kvHeads),
                               rowBytes * uint64_t(m.kvHeads) * mapRows};
  const attn_rt_dtype mapType =
      p.kvType == ref::KvType::BF16 ? ATTN_RT_DTYPE_BF16 : ATTN_RT_DTYPE_U8;
  for (size_t c = 0; c < copies; ++c) {
    DeviceKv &d = kvs[c];
    TRY(alloc(kvBytes, d.k), "allocating K");
    TRY(alloc(kvBytes, d.v), "allocating V");
    TRY(attn_rt_copy_to_device(ctx, d.k, h.kq.codes.data(), h.kq.codes.size()), "copying K");
    TRY(attn_rt_copy_to_device(ctx, d.v, h.vq.codes.data(), h.vq.codes.size()), "copying V");
    if (kScaleBytes) {
      TRY(alloc(kScaleBytes, d.kScale), "allocating K scales");
      TRY(attn_rt_copy_to_device(ctx, d.kScale, h.kq.scales.data(), kScaleBytes),
          "copying K scales");
    }
    if (vScaleBytes) {
      TRY(alloc(vScaleBytes, d.vScale), "allocating V scales");
      TRY(attn_rt_copy_to_device(ctx, d.vScale, h.vq.scales.data(), vScaleBytes),
          "copying V scales");
    }
    if (!h.kq.zeros.empty()) {
      TRY(alloc(h.kq.zeros.size(), d.kZero), "allocating K zero points");
      TRY(attn_rt_copy_to_device(ctx, d.kZero, h.kq.zeros.data(), h.kq.zeros.size()),
          "copying K zero points");
      TRY(alloc(h.vq.zeros.size(), d.vZero), "allocating V zero points");
      TRY(attn_rt_copy_to_device(ctx, d.vZero, h.vq.zeros.data(), h.vq.zeros.size()),
          "copying V zero points");
    }
    TRY(attn_rt_tensor_map_encode(ctx, d.kMap, mapType, 4, dims, strides, m.kMap.box.data(),
                                  m.kMap.swizzle, d.k),
        "encoding the K tensor map");
    TRY(attn_rt_tensor_map_encode(ctx, d.vMap, mapType, 4, dims, strides, m.vMap.box.data(),
                                  m.vMap.swizzle, d.v),
        "encoding the V tensor map");
  }
  const size_t outElems = h.q.size();
  ArgValues a;
  a.batch = static_cast<int32_t>(p.batch);
  a.kvLen = static_cast<int32_t>(p.kvLen);
  a.numSplits = static_cast<int32_t>(p.numSplits);
  a.qLen = static_cast<int32_t>(p.qLen);
  if (m.qDtype != "bf16") {
    TRY(alloc(outElems, a.q), "allocating Q");
    TRY(attn_rt_copy_to_device(ctx, a.q, h.qq.codes.data(), outElems), "copying Q");
    TRY(alloc(h.qq.scales.size() * 4, a.qScale), "allocating the Q scales");
    TRY(attn_rt_copy_to_device(ctx, a.qScale, h.qq.scales.data(), h.qq.scales.size() * 4),
        "copying the Q scales");
  } else {
    TRY(alloc(outElems * 2, a.q), "allocating Q");
    TRY(attn_rt_copy_to_device(ctx, a.q, h.qBits.data(), outElems * 2), "copying Q");
  }
  TRY(alloc(outElems * 2, a.out), "allocating the output");
  if (m.seqLens) {
    TRY(alloc(h.seqLens.size() * 4, a.seqLens), "allocating seq_lens");
    TRY(attn_rt_copy_to_device(ctx, a.seqLens, h.seqLens.data(), h.seqLens.size() * 4),
        "copying seq_lens");
  }
  if (m.alibi) {
    TRY(alloc(h.slopes.size() * 4, a.alibi), "allocating the ALiBi slopes");
    TRY(attn_rt_copy_to_device(ctx, a.alibi, h.slopes.data(), h.slopes.size() * 4),
        "copying the ALiBi slopes");
  }
  if (m.sinks) {
    TRY(alloc(h.sinks.size() * 4, a.sinks), "allocating the sinks");
    TRY(attn_rt_copy_to_device(ctx, a.sinks, h.sinks.data(), h.sinks.size() * 4),
        "copying the sinks");
  }
  const size_t lseElems = h.lseQuant.size();
  if (m.lse)
    TRY(alloc(lseElems * 4, a.lse), "allocating the lse output");
  if (p.workspaceFloats)
    TRY(alloc(p.workspaceFloats * 4, a.workspace), "allocating the workspace");
  if (const std::vector<int32_t> table = pagedTable(m, p); !table.empty()) {
    TRY(alloc(table.size() * 4, a.blockTable), "allocating the block table");
    a.numSlots = int32_t(mapRows);
    TRY(attn_rt_copy_to_device(ctx, a.blockTable, table.data(), table.size() * 4),
        "copying the block table");
  }

  // Arguments of each copy (the pointers stay valid: kvs and a do not move from here on).
  std::vector<std::vector<void *>> decodeArgs(copies), combineArgs(copies);
  std::vector<ArgValues> perCopy(copies, a);
  for (size_t c = 0; c < copies; ++c) {
    perCopy[c].kv = &kvs[c];
    if (!buildArgs(*decode.meta, perCopy[c], decodeArgs[c], why) ||
        (combine.handle && !buildArgs(*combine.meta, perCopy[c], combineArgs[c], why)))
      return error(why);
  }
  auto launch = [&](size_t c) {
    attn_rt_status s = attn_rt_launch(decode.handle, &decode.config, decodeArgs[c].data(), nullptr);
    if (s == ATTN_RT_OK && combine.handle)
      s = attn_rt_launch(combine.handle, &combine.config, combineArgs[c].data(), nullptr);
    return s;
  };

  // The checked run: poisoned output (0xFFFF is a bf16 NaN) and workspace.
  TRY(attn_rt_memset_d8(ctx, a.out, 0xFF, outElems * 2), "poisoning the output");
  if (a.lse)
    TRY(attn_rt_memset_d8(ctx, a.lse, 0xFF, lseElems * 4), "poisoning the lse output");
  if (a.workspace)
    TRY(attn_rt_memset_d8(ctx, a.workspace, 0xFF, p.workspaceFloats * 4),
        "poisoning the workspace");
  TRY(launch(0), "launching " + decode.meta->name);
  TRY(attn_rt_synchronize(ctx), "running " + decode.meta->name);
  std::vector<uint16_t> outBits(outElems);
  TRY(attn_rt_copy_to_host(ctx, outBits.data(), a.out, outElems * 2), "copying the output back");
  std::vector<float> got(outElems);
  for (size_t i = 0; i < outElems; ++i)
    got[i] = ref::bf16ToFloat(outBits[i]);
  size_t unwritten = 0;
  const double errQuant = ref::relativeError(got.data(), h.refQuant.data(), outElems, &unwritten);
  const double errUnquant = ref::relativeError(got.data(), h.refUnquant.data(), outElems);
  // The log-sum-exps: the largest absolute difference (−inf must match −inf; NaN is unwritten).
  double lseErrQuant = 0, lseErrUnquant = 0;
  if (a.lse) {
    std::vector<float> lse(lseElems);
    TRY(attn_rt_copy_to_host(ctx, lse.data(), a.lse, lseElems * 4), "copying the lse back");
    auto diff = [](float got, float want) {
      if (std::isinf(want) || std::isinf(got))
        return got == want ? 0.0 : double(INFINITY);
      return std::fabs(double(got) - double(want));
    };
    for (size_t i = 0; i < lseElems; ++i) {
      if (std::isnan(lse[i])) {
        ++unwritten;
        continue;
      }
      lseErrQuant = std::max(lseErrQuant, diff(lse[i], h.lseQuant[i]));
      lseErrUnquant = std::max(lseErrUnquant, diff(lse[i], h.lseUnquant[i]));
    }
  }

  // Timing: back-to-back iterations between events, median.
  double timeUs = NAN, gbps = NAN;
  if (!o.noTime) {
    for (int64_t i = 0; i < o.warmup; ++i)
      TRY(launch(size_t(i) % copies), "launching (warm-up)");
    std::vector<attn_rt_event *> events(size_t(o.iters) + 1, nullptr);
    for (attn_rt_event *&ev : events)
      TRY(attn_rt_event_create(ctx, &ev), "creating an event");
    TRY(attn_rt_event_record(events[0], nullptr), "recording an event");
    for (int64_t i = 0; i < o.iters; ++i) {
      TRY(launch(size_t(i + o.warmup) % copies), "launching (timed)");
      TRY(attn_rt_event_record(events[size_t(i) + 1], nullptr), "recording an event");
    }
    std::vector<double> ms(size_t(o.iters));
    for (int64_t i = 0; i < o.iters; ++i) {
      float t = 0;
      TRY(attn_rt_event_elapsed_ms(events[size_t(i)], events[size_t(i) + 1], &t), "timing");
      ms[size_t(i)] = t;
    }
    for (attn_rt_event *ev : events)
      attn_rt_event_destroy(ev);
    std::sort(ms.begin(), ms.end());
    size_t n = ms.size();
    double median = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
    timeUs = median * 1e3;
    gbps = timeUs > 0 ? bytesRead(m, p, h.seqLens) / (timeUs * 1e3) : NAN;
  }
  for (uint64_t ptr : allocations)
    attn_rt_free(ctx, ptr);
  attn_rt_unload_module(module);
  attn_rt_destroy(ctx);

  std::printf("%s, \"num_splits\": %lld, \"cluster_merge\": %s, \"rel_err_quant\": %s, "
              "\"rel_err_unquant\": %s, \"lse_err_quant\": %s, \"lse_err_unquant\": %s, "
              "\"unwritten\": %zu, \"time_us\": %s, \"gbps\": %s}\n",
              head.c_str(), static_cast<long long>(p.numSplits), p.clusterMerge ? "true" : "false",
              jsonNumber(errQuant).c_str(), jsonNumber(errUnquant).c_str(),
              a.lse ? jsonNumber(lseErrQuant).c_str() : "null",
              a.lse ? jsonNumber(lseErrUnquant).c_str() : "null", unwritten,
              jsonNumber(timeUs, "%.2f").c_str(), jsonNumber(gbps, "%.1f").c_str());
  std::string reasons;
  auto because = [&](const std::string &r) { reasons += (reasons.empty() ? "" : "; ") + r; };
  if (unwritten)
    because(std::to_string(unwritten) + " of " + std::to_string(outElems) +
            " outputs unwritten or NaN");
  if (!(errQuant <= o.tolQuant))
    because("rel_err_quant " + jsonNumber(errQuant) + " > " + jsonNumber(o.tolQuant, "%g"));
  if (a.lse && !(lseErrQuant <= kLseTolerance))
    because("lse_err_quant " + jsonNumber(lseErrQuant) + " > " + jsonNumber(kLseTolerance, "%g"));
  if (o.tolUnquant >= 0 && !(errUnquant <= o.tolUnquant))
    because("rel_err_unquant " + jsonNumber(errUnquant) + " > " + jsonNumber(o.tolUnquant, "%g"));
  std::printf(reasons.empty() ? "PASS\n" : "FAIL (%s)\n", reasons.c_str());
  return reasons.empty() ? 0 : 1;
}
