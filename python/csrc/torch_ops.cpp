//===- torch_ops.cpp - attn-opt's GPU attention kernels as torch ops ------===//
//
// What this file is: a torch extension (no nvcc, no CUDA runtime headers) that registers the
// `attn_opt` op namespace with torch.library and launches the decode / prefill kernels attn-opt
// compiled (PTX + `*.launch.json`, docs/GPUDecode.md) through the attn runtime (Runtime.cpp,
// compiled into this library; libcuda is opened lazily). Ops:
//
//   attn_opt::decode_plan(str kernel, int device, int batch, int kv_len, int q_len=-1,
//                         int splits=0, int check_pages=-1) -> int
//       Everything shape-dependent, once per batch layout: loads the module on cuda:<device>
//       (its primary context, the one torch uses), takes the kernel handles, chooses the split
//       count and the decode / combine kernels, resolves their grids and allocates the split
//       workspace. Returns a plan handle. check_pages (a paged kernel; -1: when the environment
//       sets QATTN_CHECK_PAGES to anything but "" or "0") is a debug mode: each run first checks
//       the used block-table entries and seq_lens on the device (page_check.cpp, tensor ops on
//       the current stream: no host sync, capturable, out= ops into scratch allocated here) into a
//       state the plan allocates here; page_errors reads it.
//   attn_opt::decode(int plan, Tensor q, Tensor k, Tensor v, Tensor? k_scale, Tensor? v_scale,
//                    Tensor? q_scale, Tensor? k_zero, Tensor? v_zero, Tensor? seq_lens,
//                    Tensor? alibi_slopes, Tensor(a!) out, Tensor(b!)? workspace=None,
//                    Tensor? block_table=None, Tensor? sinks=None, Tensor(c!)? lse=None,
//                    Tensor? cu_seqlens_q=None) -> ()
//       The run: checks every tensor against the plan, encodes the K/V tensor maps (cached per
//       K/V address pair), and launches on torch's current stream of the tensors' device. No host
//       synchronization and no allocation, so it can be captured in a CUDA graph. A paged kernel
//       (metadata `paged`) takes pools of pages k, v [num_pages, P, Hkv, D], scales per page and
//       block_table int32 [B, max_blocks]; its plan's kv_len is max_blocks · P (any max_blocks
//       when the kernel's is dynamic). A spec with attention sinks takes sinks float32 [Hq];
//       one with an lse output writes lse float32 [B, Sq, Hq]. A ragged prefill kernel (metadata
//       problem.ragged) takes q, out (and q_scale, lse) packed as [1, T, ...] with any T, and
//       cu_seqlens_q int32 [B + 1]; its plan's q_len is the most new tokens of any sequence
//       (FlashAttention's max_seqlen_q).
//   attn_opt::plan_info(int plan) -> int[]   [device, batch, kv_len, q_len, splits,
//                                             cluster_merge, workspace_floats, check_pages]
//   attn_opt::page_errors(int plan, bool reset=False) -> list[int]
//       A check_pages plan's block-table report (page_check.h, PageState), copied to the host: a
//       synchronization, for debugging; refused while the current stream is being captured.
//   attn_opt::release_plan(int plan) -> ()
//
// The library is also a Python module (PyInit_<TORCH_EXTENSION_NAME>) whose `run(plan, q, k, v,
// k_scale, v_scale, q_scale, k_zero, v_zero, seq_lens, alibi_slopes, out, workspace,
// block_table, sinks, lse, cu_seqlens_q)` is the
// same run without the dispatcher: DecodePlan.run calls it eagerly (about 4 µs less host time
// per call than torch.ops, docs/benchmarks/torch-ops.md). It returns NotImplemented, launching
// nothing, when an argument is not a plain torch.Tensor or a dispatch / torch-function mode or a
// TLS dispatch key is active (fake tensors, tracing, functionalization): the caller then goes
// through torch.ops.attn_opt.decode.
// `decode` has an Autograd fallthrough (it has no gradient), so the dispatcher's boxed autograd
// fallback is skipped.
//
// The launch logic is the one of qattn.gpu.GpuDecodeKernel.__call__ and attn-bench.
//
//===----------------------------------------------------------------------===//

#include <Python.h> // first, as Python asks

#include "common.h"
#include "kernel_files.h"
#include "page_check.h"

#include "attn/Runtime/LaunchMetadata.h"

#include <ATen/ATen.h>
#include <ATen/PythonTorchFunctionTLS.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/core/impl/TorchDispatchModeTLS.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/library.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace {
namespace rt = attn::rt;
using namespace attn_opt_ext;

//===----------------------------------------------------------------------===//
// Plans
//===----------------------------------------------------------------------===//

using attn_abi::Param;

/// The kernel parameters this launcher fills (launch ABI table entries, LaunchABI.h).
constexpr Param kSupplied[] = {Param::Q,       Param::KMap,   Param::VMap,      Param::KScale,
                               Param::VScale,  Param::KZero,  Param::VZero,     Param::QScale,
                               Param::SeqLens, Param::Alibi,  Param::Out,       Param::Workspace,
                               Param::Batch,   Param::KvLen,  Param::QLen,      Param::NumSplits,
                               Param::BlockTable, Param::NumSlots, Param::Sinks, Param::Lse,
                               Param::CuSeqlensQ, Param::TotalQ};

struct PlannedLaunch {
  attn_rt_kernel *handle = nullptr;
  attn_rt_launch_config config{};
  std::vector<Param> params;
  std::string name;
};

/// Tensor maps of one K/V address pair (cuTensorMapEncodeTiled's 128-byte descriptors).
struct TensorMaps {
  alignas(64) unsigned char k[128];
  alignas(64) unsigned char v[128];
  uint64_t kPtr = 0, vPtr = 0;
  uint64_t rows = 0; // a paged pool's num_pages · P (the pool size is part of the map)
};

constexpr size_t kMapCacheSize = 128; // K/V pairs per plan (a layer each in a decode step)

struct Plan {
  std::shared_ptr<KernelFiles> files;
  attn_rt_context *ctx = nullptr;
  int device = 0;
  int64_t batch = 0, kvLen = 0, qLen = 0, splits = 1, workspaceFloats = 0;
  bool clusterMerge = false;
  PlannedLaunch decode, combine; // combine.handle null: no combine launch
  at::Tensor workspace;          // the plan's own split workspace (undefined when none is needed)
  std::vector<int64_t> qShape, kvShape, kScaleShape, vScaleShape, qScaleShape;
  // What the run checks and encodes, resolved from the metadata once (no string compares per call)
  Dtypes qTypes, kvTypes, zeroTypes;
  bool kScales = false, vScales = false, zeros = false, qScales = false, seqLens = false,
       alibi = false, sinks = false, lse = false;
  /// A ragged prefill: q's packed rows T are q's dim 1 at each run (qShape[1] and the q-scale
  /// shape's are -1 here), qGran the q scales' granularity for the shape at the run.
  bool ragged = false;
  std::string qGran;
  /// A paged cache (meta.pageSize > 0): pages in the pool (-1: k's dim 0 at each run), and
  /// whether the K / V scales are stored per page (their dim 0 is the pool's too).
  int64_t pageSize = 0, maxBlocks = 0, numPages = -1;
  bool kScalesPaged = false, vScalesPaged = false;
  /// check_pages: each run validates the block table on the device into pageState (page_check.h).
  bool checkPages = false;
  at::Tensor pageState;
  std::unique_ptr<PageCheck> pageCheck; // its scratch, for tables [batch, maxBlocks]
  attn_rt_dtype kMapType = ATTN_RT_DTYPE_U8, vMapType = ATTN_RT_DTYPE_U8;
  uint64_t mapDims[4] = {}, mapStrides[3] = {};
  std::mutex mutex; // guards the tensor map cache
  std::vector<std::unique_ptr<TensorMaps>> maps;
  size_t nextMap = 0, lastMap = 0;
};

std::mutex plansMutex;
std::unordered_map<int64_t, std::shared_ptr<Plan>> plans;
int64_t nextPlanId = 1;

std::shared_ptr<Plan> findPlan(int64_t id) {
  std::lock_guard<std::mutex> lock(plansMutex);
  auto it = plans.find(id);
  TORCH_CHECK_VALUE(it != plans.end(), cat("attn_opt: no plan ", id, " (released, or never made)"));
  return it->second;
}

PlannedLaunch planLaunch(const rt::LaunchKernel &k, DeviceModule &dm,
                         const std::map<std::string, int64_t> &symbols, const unsigned *cluster) {
  PlannedLaunch p;
  p.name = k.name;
  p.handle = dm.kernels.at(k.name);
  std::string why;
  TORCH_CHECK_VALUE(rt::resolveGrid(k, symbols, p.config.grid, why),
                    cat("attn_opt: ", k.name, ": ", why));
  for (int i = 0; i < 3; ++i) {
    p.config.block[i] = k.block[i];
    p.config.cluster[i] = cluster ? cluster[i] : k.cluster[i];
  }
  p.config.smem_bytes = k.smemBytes;
  p.config.programmatic = k.programmatic ? 1 : 0;
  rt::ParamValues supplied;
  for (Param s : kSupplied)
    supplied.set(s, &supplied);
  TORCH_CHECK(rt::resolveParams(k.name, k.params, p.params, why) &&
                  rt::checkSupplied(k.name, p.params, supplied, why),
              cat("attn_opt: ", why));
  return p;
}

void choosePlan(Plan &p, DeviceModule &dm, int64_t splits) {
  const rt::DecodeLaunch &m = p.files->meta;
  const bool prefill = m.kind == "prefill";
  if (prefill) {
    TORCH_CHECK_VALUE(splits == 0 || splits == 1,
                      cat("attn_opt: prefill kernels run one split, not ", splits));
    splits = 1;
  }
  TORCH_CHECK_VALUE(splits >= 0, cat("attn_opt: splits must be >= 1 or 0 (auto), got ", splits));
  if (splits == 0)
    splits = m.splitKv ? m.splitKv
                       : attn_rt_select_split_kv(p.batch * m.groups, p.kvLen, p.qLen,
                                                 m.windowLeft, m.tileN, dm.sms);
  p.splits = splits;
  const char *noCluster = std::getenv("ATTN_RT_NO_CLUSTER_MERGE");
  p.clusterMerge = m.clusterMerges(splits) && !(noCluster && *noCluster);
  const rt::LaunchKernel *combine =
      splits > 1 && !p.clusterMerge ? m.combineKernel(splits) : nullptr;
  TORCH_CHECK_VALUE(
      splits == 1 || p.clusterMerge || combine,
      cat("attn_opt: ", splits, " splits need a combine kernel, and ", p.files->path, " has none"));
  p.workspaceFloats = combine ? p.batch * m.groups * splits * m.workspaceFloatsPerSplit : 0;
  // The launch inputs of the grid formulas (LaunchABI.h).
  const std::map<std::string, int64_t> symbols = {
      {"num_splits", splits}, {"groups", m.groups},   {"batch", p.batch},
      {"rows", m.rowsPerCta}, {"kv_heads", m.kvHeads}, {"q_heads", m.qHeads},
      {"q_len", p.qLen},      {"q_chunk", m.qChunk},  {"sms", dm.sms}};
  const rt::LaunchKernel *decode = m.decodeKernel(splits, p.batch * m.groups, dm.sms);
  TORCH_CHECK_VALUE(decode, cat("attn_opt: ", p.files->path, " has no decode kernel"));
  const unsigned clusterOfSplits[3] = {unsigned(splits), 1, 1};
  p.decode = planLaunch(*decode, dm, symbols, p.clusterMerge ? clusterOfSplits : nullptr);
  if (combine)
    p.combine = planLaunch(*combine, dm, symbols, nullptr);
}

/// Whether a plan checks its block tables and ragged offsets: `checkPages` 1 (a paged or ragged
/// kernel only), 0, or -1 (when QATTN_CHECK_PAGES is set to anything but "" or "0", and the
/// kernel is paged or ragged).
bool wantsPageCheck(int64_t checkPages, bool paged, const std::string &path) {
  TORCH_CHECK_VALUE(
      checkPages >= -1 && checkPages <= 1,
      cat("attn_opt: check_pages must be 0, 1 or -1 (QATTN_CHECK_PAGES), got ", checkPages));
  TORCH_CHECK_VALUE(checkPages != 1 || paged,
                    cat("attn_opt: check_pages checks a block table or a ragged batch's "
                        "cu_seqlens_q, and ",
                        path, " has neither"));
  if (checkPages >= 0)
    return checkPages == 1;
  const char *env = std::getenv("QATTN_CHECK_PAGES");
  return paged && env && *env && std::string(env) != "0";
}

int64_t decodePlan(const std::string &kernel, int64_t device, int64_t batch, int64_t kvLen,
                   int64_t qLen, int64_t splits, int64_t checkPages) {
  auto p = std::make_shared<Plan>();
  p->files = kernelFiles(kernel);
  const rt::DecodeLaunch &m = p->files->meta;
  TORCH_CHECK_VALUE(device >= 0, cat("attn_opt: device must be a CUDA ordinal >= 0, got ", device));
  p->checkPages = wantsPageCheck(checkPages, m.pageSize > 0 || m.ragged, kernel);
  TORCH_CHECK_VALUE(m.batch < 0 || m.batch == batch,
                    cat("attn_opt: the kernel was compiled for batch ", m.batch, ", got ", batch));
  TORCH_CHECK_VALUE(m.kvLen < 0 || m.kvLen == kvLen,
                    cat("attn_opt: the kernel was compiled for kv_len ", m.kvLen,
                        m.pageSize ? " (max_blocks · page_size)" : "", ", got ", kvLen));
  TORCH_CHECK_VALUE(batch >= 1 && batch <= 65535 && kvLen >= 1 && kvLen < (int64_t(1) << 31),
                    cat("attn_opt: batch must be in 1..65535 and kv_len in 1..2^31-1 (got ", batch,
                        ", ", kvLen, ")"));
  if (m.qLen >= 0) {
    TORCH_CHECK_VALUE(qLen < 0 || qLen == m.qLen,
                      cat("attn_opt: the kernel was compiled for q_len ", m.qLen, ", got ", qLen));
    qLen = m.qLen;
  }
  TORCH_CHECK_VALUE(
      qLen >= 1 && qLen < (int64_t(1) << 31),
      cat("attn_opt: the kernel has a dynamic q_len: give q_len in 1..2^31-1 (got ", qLen, ")"));
  p->device = int(device);
  p->batch = batch;
  p->kvLen = kvLen;
  p->qLen = qLen;
  const c10::Device dev(c10::DeviceType::CUDA, c10::DeviceIndex(device));
  c10::DeviceGuard guard(dev); // the runtime makes the primary context current: restore torch's
  DeviceModule &dm = p->files->load(p->device);
  p->ctx = dm.ctx;
  choosePlan(*p, dm, splits);
  if (p->workspaceFloats)
    p->workspace =
        at::empty({p->workspaceFloats}, at::TensorOptions().dtype(at::kFloat).device(dev));
  p->ragged = m.ragged;
  p->qShape = {m.ragged ? 1 : batch, m.ragged ? -1 : qLen, m.qHeads, m.headDim};
  // K/V (and per-token scales) [B, kv_len, ...], or a paged cache's pools [num_pages, P, ...].
  p->pageSize = m.pageSize;
  p->maxBlocks = m.maxBlocks;
  if (m.pageSize && m.maxBlocks < 0) { // a dynamic max_blocks: kv_len / P (kv_len = max_blocks · P)
    TORCH_CHECK_VALUE(kvLen % m.pageSize == 0,
                      cat("attn_opt: the paged kernel's max_blocks is dynamic: kv_len must be "
                          "max_blocks · page_size, a multiple of ",
                          m.pageSize, ", got ", kvLen));
    p->maxBlocks = kvLen / m.pageSize;
  }
  p->numPages = m.numPages;
  if (p->checkPages) { // allocated here: a checked run allocates nothing, captured or not
    p->pageState = newPageState(at::TensorOptions().device(dev));
    p->pageCheck = std::make_unique<PageCheck>(batch, p->maxBlocks, p->pageState.options());
  }
  const int64_t rows0 = m.pageSize ? m.numPages : batch, rows1 = m.pageSize ? m.pageSize : kvLen;
  p->kvShape = {rows0, rows1, m.kvHeads, m.headDim};
  constexpr const char *kOp = "attn_opt.decode_plan";
  p->kScaleShape = scaleShape(kOp, m.kQuant, rows0, rows1, m.kvHeads, m.headDim, m.kBlockRows);
  p->vScaleShape = scaleShape(kOp, m.vQuant, rows0, rows1, m.kvHeads, m.headDim, m.vBlockRows);
  auto perPage = [&](const std::string &g) {
    return m.pageSize && g != "none" && g != "per_head" && g != "per_tensor" && g != "per_channel";
  };
  p->kScalesPaged = perPage(m.kQuant);
  p->vScalesPaged = perPage(m.vQuant);
  p->qGran = m.qQuant == "per_block" || m.qQuant == "per_token" ? m.qQuant : "per_token_head";
  p->qScaleShape = scaleShape(kOp, p->qGran, batch, qLen, m.qHeads, m.headDim, m.qBlockRows);
  p->qTypes = qDtypes(m.qDtype);
  p->kvTypes = kvDtypes(m.kvDtype);
  p->zeroTypes = p->kvTypes.slice(0, 1);
  p->kScales = m.kQuant != "none";
  p->vScales = m.vQuant != "none";
  p->zeros = m.zeroPoints;
  p->qScales = m.qDtype != "bf16";
  p->seqLens = m.seqLens;
  p->alibi = m.alibi;
  p->sinks = m.sinks;
  p->lse = m.lse;
  p->kMapType = mapDtype(m.kMap.dtype);
  p->vMapType = mapDtype(m.vMap.dtype);
  const uint64_t e = m.kvDtype == "bf16" ? 2 : 1, d = uint64_t(m.headDim),
                 h = uint64_t(m.kvHeads), s = uint64_t(kvLen);
  // A pool of pages is mapped as one sequence of num_pages · P rows (mapsFor, per pool size).
  const uint64_t dims[4] = {d, h, s, uint64_t(m.pageSize ? 1 : batch)},
                 strides[3] = {d * e, h * d * e, s * h * d * e};
  std::copy(dims, dims + 4, p->mapDims);
  std::copy(strides, strides + 3, p->mapStrides);
  std::lock_guard<std::mutex> lock(plansMutex);
  int64_t id = nextPlanId++;
  plans[id] = std::move(p);
  return id;
}

void releasePlan(int64_t id) {
  std::shared_ptr<Plan> p;
  {
    std::lock_guard<std::mutex> lock(plansMutex);
    auto it = plans.find(id);
    TORCH_CHECK_VALUE(it != plans.end(),
                      cat("attn_opt: no plan ", id, " (released, or never made)"));
    p = std::move(it->second);
    plans.erase(it);
  }
}

std::vector<int64_t> planInfo(int64_t id) {
  std::shared_ptr<Plan> p = findPlan(id);
  return {p->device,          p->batch,
          p->kvLen,           p->qLen,
          p->splits,          p->clusterMerge ? 1 : 0,
          p->workspaceFloats, p->checkPages ? 1 : 0};
}

/// The plan's block-table check state (page_check.h), read on the host (synchronizes).
std::vector<int64_t> pageErrors(int64_t id, bool reset) {
  std::shared_ptr<Plan> p = findPlan(id);
  TORCH_CHECK_VALUE(p->checkPages,
                    cat("attn_opt.page_errors: plan ", id, " was made without check_pages"));
  std::lock_guard<std::mutex> lock(p->mutex);
  return readPageState(p->pageState, reset);
}

//===----------------------------------------------------------------------===//
// The run
//===----------------------------------------------------------------------===//

/// Checks device, dtype, shape, contiguity and 16-byte alignment; messages name the operand.
void expect(const Plan &p, const char *name, const at::Tensor &t, Dtypes dtypes,
            c10::IntArrayRef shape) {
  expectTensor("attn_opt.decode", name, t, p.device, dtypes, shape);
}

/// The K/V tensor maps of these addresses: cached, else encoded into the next cache slot.
const TensorMaps &mapsFor(Plan &p, uint64_t k, uint64_t v, uint64_t rows) {
  if (!p.maps.empty()) {
    const TensorMaps &last = *p.maps[p.lastMap];
    if (last.kPtr == k && last.vPtr == v && last.rows == rows)
      return last;
  }
  for (size_t i = 0; i < p.maps.size(); ++i)
    if (p.maps[i]->kPtr == k && p.maps[i]->vPtr == v && p.maps[i]->rows == rows) {
      p.lastMap = i;
      return *p.maps[i];
    }
  if (p.maps.size() < kMapCacheSize) {
    p.maps.push_back(std::make_unique<TensorMaps>());
    p.lastMap = p.maps.size() - 1;
  } else {
    p.lastMap = p.nextMap;
    p.nextMap = (p.nextMap + 1) % kMapCacheSize;
  }
  TensorMaps &m = *p.maps[p.lastMap];
  m.kPtr = m.vPtr = 0; // invalid until both are encoded
  const rt::DecodeLaunch &meta = p.files->meta;
  uint64_t dims[4], strides[3];
  std::copy(p.mapDims, p.mapDims + 4, dims);
  std::copy(p.mapStrides, p.mapStrides + 3, strides);
  if (p.pageSize) { // the pool: num_pages · P rows of one sequence
    dims[2] = rows;
    strides[2] = rows * strides[1];
  }
  check(attn_rt_tensor_map_encode(p.ctx, m.k, p.kMapType, 4, dims, strides, meta.kMap.box.data(),
                                  meta.kMap.swizzle, k),
        "encoding the K tensor map");
  check(attn_rt_tensor_map_encode(p.ctx, m.v, p.vMapType, 4, dims, strides, meta.vMap.box.data(),
                                  meta.vMap.swizzle, v),
        "encoding the V tensor map");
  m.kPtr = k;
  m.vPtr = v;
  m.rows = rows;
  return m;
}

void launch(const PlannedLaunch &l, const rt::ParamValues &values, void *stream) {
  void *args[32];
  TORCH_CHECK(l.params.size() <= 32, cat("attn_opt: ", l.name, " has too many parameters"));
  rt::bindArgs(l.params, values, args);
  attn_rt_launch_config config = l.config;
  const attn_rt_status status = attn_rt_launch(l.handle, &config, args, stream);
  if (status != ATTN_RT_OK) // the message is built on failure only
    check(status, "launching " + l.name);
}

using OptTensor = std::optional<at::Tensor>;

/// The run's operands, borrowed (null: not given).
struct Operands {
  const at::Tensor *q, *k, *v, *kScale, *vScale, *qScale, *kZero, *vZero, *seqLens, *alibi, *out,
      *workspace, *blockTable, *sinks, *lse, *cuSeqlensQ;
};

/// An optional operand the metadata asks for (`needed`) or forbids (`why` says why); returns its
/// address or 0.
uint64_t optionalOperand(const Plan &p, const char *name, const at::Tensor *t, bool needed,
                         const char *why, Dtypes dtypes, c10::IntArrayRef shape,
                         bool optionalEvenIfNeeded = false) {
  const bool given = t && t->defined();
  if (!needed) {
    TORCH_CHECK_VALUE(!given, cat("attn_opt.decode: ", name, " given, but ", why));
    return 0;
  }
  if (!given) {
    TORCH_CHECK_VALUE(optionalEvenIfNeeded, cat("attn_opt.decode: ", name, " (", dtypeList(dtypes),
                                                " ", shape, ") is required by ", p.files->path));
    return 0;
  }
  expect(p, name, *t, dtypes, shape);
  return address(*t);
}

/// Checks every operand against the plan (before anything is launched), then launches on the
/// current stream of the plan's device.
/// A paged plan's pool extent: num_pages (from the metadata, else k's dim 0, at least 1).
int64_t poolPages(const Plan &p, const at::Tensor &k) {
  if (!p.pageSize)
    return 0;
  if (p.numPages > 0)
    return p.numPages;
  TORCH_CHECK_VALUE(k.dim() == 4 && k.size(0) >= 1,
                    cat("attn_opt.decode: k must be a pool of pages [num_pages, ", p.pageSize,
                        ", Hkv, D], got ", k.sizes()));
  // The kernel clamps a block-table entry into the pool by its rows (num_slots, an int32).
  TORCH_CHECK_VALUE(k.size(0) * p.pageSize < (int64_t(1) << 31),
                    cat("attn_opt.decode: a pool of ", k.size(0), " pages of ", p.pageSize,
                        " tokens has 2^31 rows or more"));
  return k.size(0);
}

/// A shape whose dim 0 is the pool's pages when `paged` (a dynamic num_pages).
std::vector<int64_t> withPages(std::vector<int64_t> shape, bool paged, int64_t pages) {
  if (paged && !shape.empty())
    shape[0] = pages;
  return shape;
}

/// A ragged plan's packed query rows T: q's dim 1 (q [1, T, Hq, D]), checked into 1..2^31-1.
int64_t packedRows(const Plan &p, const at::Tensor &q) {
  TORCH_CHECK_VALUE(q.dim() == 4 && q.size(0) == 1 && q.size(1) >= 1 &&
                        q.size(1) < (int64_t(1) << 31),
                    cat("attn_opt.decode: a ragged batch packs its queries as [1, T, ",
                        p.files->meta.qHeads, ", ", p.files->meta.headDim,
                        "] with T in 1..2^31-1, got ", q.sizes()));
  return q.size(1);
}

void runPlan(Plan &p, const Operands &o) {
  const int64_t pages = poolPages(p, *o.k);
  // q's (and out's, q_scale's, lse's) shapes: the plan's, or a ragged batch's at this run's T
  std::vector<int64_t> raggedQ, raggedQScale;
  c10::IntArrayRef qShape = p.qShape, qScaleShape = p.qScaleShape;
  const int32_t totalQ = p.ragged ? int32_t(packedRows(p, *o.q)) : 0;
  if (p.ragged) {
    const rt::DecodeLaunch &m = p.files->meta;
    raggedQ = {1, totalQ, m.qHeads, m.headDim};
    raggedQScale = scaleShape("attn_opt.decode", p.qGran, 1, totalQ, m.qHeads, m.headDim,
                              m.qBlockRows);
    qShape = raggedQ;
    qScaleShape = raggedQScale;
  }
  const std::vector<int64_t> kvShape = withPages(p.kvShape, p.pageSize, pages),
                             kScaleShape = withPages(p.kScaleShape, p.kScalesPaged, pages),
                             vScaleShape = withPages(p.vScaleShape, p.vScalesPaged, pages);
  expect(p, "q", *o.q, p.qTypes, qShape);
  expect(p, "k", *o.k, p.kvTypes, kvShape);
  expect(p, "v", *o.v, p.kvTypes, kvShape);
  expect(p, "out", *o.out, {at::kBFloat16}, qShape);
  enum {
    KScale,
    VScale,
    KZero,
    VZero,
    QScale,
    SeqLens,
    Alibi,
    Q,
    Out,
    Workspace,
    Table,
    Sinks,
    Lse,
    CuSeqlensQ,
    NumPtrs
  };
  uint64_t ptrs[NumPtrs] = {};
  ptrs[Table] = optionalOperand(p, "block_table", o.blockTable, p.pageSize,
                                "the kernel reads a contiguous cache", {at::kInt},
                                {p.batch, p.maxBlocks});
  ptrs[KScale] = optionalOperand(p, "k_scale", o.kScale, p.kScales, "the cache has no K scales",
                                 {at::kFloat}, kScaleShape);
  ptrs[VScale] = optionalOperand(p, "v_scale", o.vScale, p.vScales, "the cache has no V scales",
                                 {at::kFloat}, vScaleShape);
  ptrs[KZero] = optionalOperand(p, "k_zero", o.kZero, p.zeros, "the cache is symmetric",
                                p.zeroTypes, kScaleShape);
  ptrs[VZero] = optionalOperand(p, "v_zero", o.vZero, p.zeros, "the cache is symmetric",
                                p.zeroTypes, vScaleShape);
  ptrs[QScale] = optionalOperand(p, "q_scale", o.qScale, p.qScales, "the spec has bf16 queries",
                                 {at::kFloat}, qScaleShape);
  ptrs[SeqLens] = optionalOperand(p, "seq_lens", o.seqLens, p.seqLens,
                                  "the spec has no seq_lens operand", {at::kInt}, {p.batch}, true);
  ptrs[Alibi] = optionalOperand(p, "alibi_slopes", o.alibi, p.alibi, "the spec has no ALiBi",
                                {at::kFloat}, {p.files->meta.qHeads});
  TORCH_CHECK_VALUE(p.sinks == (o.sinks && o.sinks->defined()),
                    p.sinks ? "attn_opt.decode: sinks (float32 [Hq]) is required: the spec has "
                              "attention sinks"
                            : "attn_opt.decode: sinks given, but the spec has no attention sinks");
  TORCH_CHECK_VALUE(p.lse == (o.lse && o.lse->defined()),
                    p.lse ? "attn_opt.decode: lse (float32 [B, Sq, Hq]) is required: the spec has "
                            "an lse output"
                          : "attn_opt.decode: lse given, but the spec has no lse output");
  ptrs[Sinks] = optionalOperand(p, "sinks", o.sinks, p.sinks, "the spec has no attention sinks",
                                {at::kFloat}, {p.files->meta.qHeads});
  ptrs[Lse] = optionalOperand(p, "lse", o.lse, p.lse, "the spec has no lse output", {at::kFloat},
                              {qShape[0], qShape[1], qShape[2]});
  ptrs[CuSeqlensQ] = optionalOperand(p, "cu_seqlens_q", o.cuSeqlensQ, p.ragged,
                                     "the spec has no ragged batch", {at::kInt}, {p.batch + 1});
  ptrs[Q] = address(*o.q);
  ptrs[Out] = address(*o.out);
  if (p.workspaceFloats) {
    const at::Tensor &ws = o.workspace && o.workspace->defined() ? *o.workspace : p.workspace;
    TORCH_CHECK_VALUE(
        ws.is_cuda() && ws.get_device() == p.device && ws.scalar_type() == at::kFloat &&
            ws.is_contiguous() && ws.numel() >= p.workspaceFloats,
        cat("attn_opt.decode: workspace must be a contiguous float32 tensor of at least ",
            p.workspaceFloats, " elements on cuda:", p.device));
    ptrs[Workspace] = address(ws);
  }
  int32_t ints[4] = {int32_t(p.batch), int32_t(p.kvLen), int32_t(p.qLen), int32_t(p.splits)};

  const c10::Device dev = o.q->device();
  c10::DeviceGuard guard(dev);
  void *stream = currentStream(dev);
  std::lock_guard<std::mutex> lock(p.mutex);
  if (p.checkPages && p.pageSize) // debug: tensor ops on this stream before the launch, no sync
    checkBlockTable(*o.blockTable, o.seqLens && o.seqLens->defined() ? o.seqLens : nullptr,
                    p.pageSize, pages, p.pageState, *p.pageCheck);
  if (p.checkPages && p.ragged)
    checkCuSeqlens(*o.cuSeqlensQ, totalQ, p.qLen, p.pageState, *p.pageCheck);
  const TensorMaps &maps = mapsFor(p, address(*o.k), address(*o.v), uint64_t(pages * p.pageSize));
  rt::ParamValues values; // every entry of kSupplied
  values.set(Param::KMap, maps.k);
  values.set(Param::VMap, maps.v);
  values.set(Param::Q, &ptrs[Q]);
  values.set(Param::KScale, &ptrs[KScale]);
  values.set(Param::VScale, &ptrs[VScale]);
  values.set(Param::KZero, &ptrs[KZero]);
  values.set(Param::VZero, &ptrs[VZero]);
  values.set(Param::QScale, &ptrs[QScale]);
  values.set(Param::SeqLens, &ptrs[SeqLens]);
  values.set(Param::Alibi, &ptrs[Alibi]);
  values.set(Param::Out, &ptrs[Out]);
  values.set(Param::Workspace, &ptrs[Workspace]);
  values.set(Param::Batch, &ints[0]);
  values.set(Param::KvLen, &ints[1]);
  values.set(Param::QLen, &ints[2]);
  values.set(Param::NumSplits, &ints[3]);
  values.set(Param::BlockTable, &ptrs[Table]);
  const int32_t numSlots = int32_t(pages * p.pageSize); // a paged pool's rows (else 0)
  values.set(Param::NumSlots, &numSlots);
  values.set(Param::Sinks, &ptrs[Sinks]);
  values.set(Param::Lse, &ptrs[Lse]);
  values.set(Param::CuSeqlensQ, &ptrs[CuSeqlensQ]);
  values.set(Param::TotalQ, &totalQ);
  launch(p.decode, values, stream);
  if (p.combine.handle)
    launch(p.combine, values, stream);
}

const at::Tensor *given(const OptTensor &t) { return t.has_value() ? &*t : nullptr; }

void decodeRun(int64_t planId, const at::Tensor &q, const at::Tensor &k, const at::Tensor &v,
               const OptTensor &kScale, const OptTensor &vScale, const OptTensor &qScale,
               const OptTensor &kZero, const OptTensor &vZero, const OptTensor &seqLens,
               const OptTensor &alibi, const at::Tensor &out, const OptTensor &workspace,
               const OptTensor &blockTable, const OptTensor &sinks, const OptTensor &lse,
               const OptTensor &cuSeqlensQ) {
  std::shared_ptr<Plan> plan = findPlan(planId);
  runPlan(*plan, {&q, &k, &v, given(kScale), given(vScale), given(qScale), given(kZero),
                  given(vZero), given(seqLens), given(alibi), &out, given(workspace),
                  given(blockTable), given(sinks), given(lse), given(cuSeqlensQ)});
}

void decodeOnCpu(int64_t, const at::Tensor &q, const at::Tensor &, const at::Tensor &,
                 const OptTensor &, const OptTensor &, const OptTensor &, const OptTensor &,
                 const OptTensor &, const OptTensor &, const OptTensor &, const at::Tensor &,
                 const OptTensor &, const OptTensor &, const OptTensor &, const OptTensor &,
                 const OptTensor &) {
  TORCH_CHECK_VALUE(false, cat("attn_opt.decode runs on CUDA tensors; q is on ", q.device()));
}

//===----------------------------------------------------------------------===//
// The run without the dispatcher, for Python (the module's `run`)
//===----------------------------------------------------------------------===//

/// True when a plain call may skip the dispatcher: no dispatch or torch-function mode and no key
/// included in this thread's dispatch beyond the defaults (functionalization, vmap, Python
/// dispatch).
bool plainDispatch() {
  return c10::impl::TorchDispatchModeTLS::stack_len() == 0 &&
         !at::impl::torch_function_mode_enabled() &&
         (c10::impl::tls_local_dispatch_key_set().included_ -
          c10::DispatchKeySet({c10::DispatchKey::BackendSelect, c10::DispatchKey::ADInplaceOrView}))
             .empty();
}

constexpr Py_ssize_t kRunArgs = 17;
constexpr const char *kRunArgNames[kRunArgs] = {
    "plan",     "q",            "k",   "v",         "k_scale",     "v_scale", "q_scale", "k_zero",
    "v_zero",   "seq_lens",     "alibi_slopes",     "out",         "workspace",
    "block_table", "sinks",     "lse",         "cu_seqlens_q"};

PyObject *pyRun(PyObject *, PyObject *const *args, Py_ssize_t n) {
  HANDLE_TH_ERRORS
  if (n != kRunArgs) {
    PyErr_Format(PyExc_TypeError, "run() takes %d positional arguments (%zd given)", int(kRunArgs),
                 n);
    return nullptr;
  }
  const int64_t planId = PyLong_AsLongLong(args[0]);
  if (planId == -1 && PyErr_Occurred())
    return nullptr;
  const at::Tensor *t[kRunArgs] = {};
  for (Py_ssize_t i = 1; i < kRunArgs; ++i) {
    PyObject *a = args[i];
    const bool required = i <= 3 || i == 11;
    if (a == Py_None && !required)
      continue;
    if (a == Py_None || !THPVariable_Check(a)) {
      PyErr_Format(PyExc_TypeError, "run(): %s must be a torch.Tensor%s, got %s", kRunArgNames[i],
                   required ? "" : " or None", Py_TYPE(a)->tp_name);
      return nullptr;
    }
    if (!THPVariable_CheckExact(a)) // a subclass (fake, functional...): through the dispatcher
      Py_RETURN_NOTIMPLEMENTED;
    t[i] = &THPVariable_Unpack(a);
  }
  if (!plainDispatch())
    Py_RETURN_NOTIMPLEMENTED;
  std::shared_ptr<Plan> plan = findPlan(planId);
  runPlan(*plan, {t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[9], t[10], t[11], t[12],
                  t[13], t[14], t[15], t[16]});
  Py_RETURN_NONE;
  END_HANDLE_TH_ERRORS
}

PyMethodDef moduleMethods[] = {
    {"run", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(pyRun)), METH_FASTCALL,
     "run(plan, q, k, v, k_scale, v_scale, q_scale, k_zero, v_zero, seq_lens, alibi_slopes, out, "
     "workspace, block_table, sinks, lse, cu_seqlens_q): attn_opt::decode without the dispatcher; "
     "NotImplemented (nothing launched) where the dispatcher is needed"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef moduleDef = {PyModuleDef_HEAD_INIT, "attn_opt_ops",
                         "attn-opt's torch ops: the plan run without the dispatcher", -1,
                         moduleMethods};

} // namespace

#define ATTN_OPT_CONCAT_(a, b) a##b
#define ATTN_OPT_CONCAT(a, b) ATTN_OPT_CONCAT_(a, b)
#ifndef TORCH_EXTENSION_NAME
#define TORCH_EXTENSION_NAME _torch_ops
#endif
PyMODINIT_FUNC ATTN_OPT_CONCAT(PyInit_, TORCH_EXTENSION_NAME)(void) {
  return PyModule_Create(&moduleDef);
}

TORCH_LIBRARY(attn_opt, m) {
  m.def("decode_plan(str kernel, int device, int batch, int kv_len, int q_len=-1, int splits=0, "
        "int check_pages=-1) -> int",
        &decodePlan);
  m.def("page_errors(int plan, bool reset=False) -> int[]", &pageErrors);
  m.def("plan_info(int plan) -> int[]", &planInfo);
  m.def("release_plan(int plan) -> ()", &releasePlan);
  m.def("decode(int plan, Tensor q, Tensor k, Tensor v, Tensor? k_scale, Tensor? v_scale, "
        "Tensor? q_scale, Tensor? k_zero, Tensor? v_zero, Tensor? seq_lens, "
        "Tensor? alibi_slopes, Tensor(a!) out, Tensor(b!)? workspace=None, "
        "Tensor? block_table=None, Tensor? sinks=None, Tensor(c!)? lse=None, "
        "Tensor? cu_seqlens_q=None) -> ()");
}

TORCH_LIBRARY_IMPL(attn_opt, CUDA, m) { m.impl("decode", &decodeRun); }
TORCH_LIBRARY_IMPL(attn_opt, CPU, m) { m.impl("decode", &decodeOnCpu); }
// No gradient: skip the boxed autograd fallback, which scans every argument on each call.
TORCH_LIBRARY_IMPL(attn_opt, Autograd, m) {
  m.impl("decode", torch::CppFunction::makeFallthrough());
}
