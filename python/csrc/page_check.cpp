//===- page_check.cpp - block-table entries checked on the device ---------===//
//
// What this file is: the debug check of a paged cache's block table (page_check.h) and its op,
//
//   attn_opt::check_block_table(Tensor block_table, Tensor? seq_lens, int page_size,
//                               int num_pages, Tensor(a!) state) -> ()
//
// on CPU and CUDA tensors alike (the same ATen ops): what a plan made with check_pages runs
// before each launch (torch_ops.cpp), callable on its own. The state is int64 [9]
// (page_check.h, PageState): [bad entries, first flat index b · max_blocks + i, its entry, the
// pool's pages, max_blocks, bad lengths, first sequence, its length, max_blocks · P], "none"
// being INT64_MAX; a reset state is [0, none, 0, 0, 0, 0, none, 0, 0].
//
//===----------------------------------------------------------------------===//

#include "page_check.h"

#include "common.h"

#include <torch/library.h>
#if ATTN_OPT_C10_CUDA
#include <c10/cuda/CUDAGraphsC10Utils.h>
#endif

namespace attn_opt_ext {

at::Tensor newPageState(const at::TensorOptions &options) {
  at::Tensor state = at::zeros({PageStateSize}, options.dtype(at::kLong));
  state.select(0, FirstEntry).fill_(kNoOffender);
  state.select(0, FirstLen).fill_(kNoOffender);
  return state;
}

namespace {

/// The first index (flat) where `bad` holds, as a 0-d int64 tensor (kNoOffender: none).
at::Tensor firstIndex(const at::Tensor &bad) {
  const at::Tensor index =
      at::arange(bad.numel(), bad.options().dtype(at::kLong)).view(bad.sizes());
  return at::where(bad, index, kNoOffender).amin();
}

/// Adds `count` offenders to the state's `countAt`; when the state has none recorded yet and
/// `first` is one, records it at `firstAt` and `values` (tensors or numbers) after it.
void record(at::Tensor &state, int64_t countAt, const at::Tensor &count, int64_t firstAt,
            const at::Tensor &first, std::initializer_list<at::Tensor> values) {
  const at::Tensor take =
      state.select(0, firstAt).eq(kNoOffender).logical_and(first.ne(kNoOffender));
  int64_t at = firstAt + 1;
  for (const at::Tensor &v : values) {
    at::Tensor slot = state.select(0, at++);
    slot.copy_(at::where(take, v.to(at::kLong), slot));
  }
  at::Tensor slot = state.select(0, firstAt);
  slot.copy_(at::where(take, first, slot));
  state.select(0, countAt).add_(count);
}

} // namespace

void checkBlockTable(const at::Tensor &table, const at::Tensor *seqLens, int64_t pageSize,
                     int64_t numPages, at::Tensor &state) {
  constexpr const char *op = "attn_opt.check_block_table";
  TORCH_CHECK_VALUE(
      pageSize >= 1 && numPages >= 0,
      cat(op, ": page_size must be >= 1 and num_pages >= 0, got ", pageSize, ", ", numPages));
  TORCH_CHECK_TYPE(table.scalar_type() == at::kInt && table.dim() == 2,
                   cat(op, ": block_table must be int32 [B, max_blocks], got ", table.scalar_type(),
                       " ", table.sizes()));
  TORCH_CHECK_TYPE(state.scalar_type() == at::kLong && state.dim() == 1 &&
                       state.size(0) == PageStateSize && state.is_contiguous() &&
                       state.device() == table.device(),
                   cat(op, ": state must be a contiguous int64 [", int64_t(PageStateSize),
                       "] tensor on ", table.device(), ", got ", state.scalar_type(), " ",
                       state.sizes(), " on ", state.device()));
  const int64_t batch = table.size(0), blocks = table.size(1), capacity = blocks * pageSize;
  if (seqLens)
    TORCH_CHECK_TYPE(seqLens->scalar_type() == at::kInt && seqLens->sizes().equals({batch}) &&
                         seqLens->device() == table.device(),
                     cat(op, ": seq_lens must be int32 [", batch, "] on ", table.device(), ", got ",
                         seqLens->scalar_type(), " ", seqLens->sizes(), " on ", seqLens->device()));
  if (table.numel() == 0)
    return;
  const at::TensorOptions longs = table.options().dtype(at::kLong);
  const at::Tensor outside = table.lt(0).logical_or(table.ge(numPages));
  at::Tensor bad = outside;
  if (seqLens) {
    const at::Tensor lens = seqLens->to(at::kLong);
    // Blocks sequence b reads: ceil(len / P) of its clamped length.
    const at::Tensor used = lens.clamp(0, capacity).add(pageSize - 1).div(pageSize, "floor");
    bad = outside.logical_and(at::arange(blocks, longs).unsqueeze(0).lt(used.unsqueeze(1)));
    const at::Tensor badLen = lens.lt(0).logical_or(lens.gt(capacity));
    const at::Tensor first = firstIndex(badLen);
    const at::Tensor len = lens.index_select(0, first.clamp_max(batch - 1).view({1})).squeeze(0);
    record(state, BadLens, badLen.sum(), FirstLen, first,
           {len, at::scalar_tensor(capacity, longs)});
  }
  const at::Tensor first = firstIndex(bad);
  const at::Tensor entry =
      table.reshape({-1}).index_select(0, first.clamp_max(table.numel() - 1).view({1})).squeeze(0);
  record(state, BadEntries, bad.sum(), FirstEntry, first,
         {entry, at::scalar_tensor(numPages, longs), at::scalar_tensor(blocks, longs)});
}

std::vector<int64_t> readPageState(at::Tensor &state, bool reset) {
  c10::DeviceGuard guard(state.device());
#if ATTN_OPT_C10_CUDA
  TORCH_CHECK(!state.is_cuda() || c10::cuda::currentStreamCaptureStatusMayInitCtx() ==
                                      c10::cuda::CaptureStatus::None,
              "attn_opt: the block-table check's report is read on the host (a synchronization) "
              "and cannot be read while the current stream is captured into a CUDA graph: read "
              "it after the capture (it then holds what the replays recorded)");
#endif
  const at::Tensor host = state.to(at::kCPU);
  std::vector<int64_t> values(host.data_ptr<int64_t>(), host.data_ptr<int64_t>() + host.numel());
  if (reset)
    state.copy_(newPageState(state.options()));
  return values;
}

} // namespace attn_opt_ext

namespace {
using namespace attn_opt_ext;

void checkBlockTableOp(const at::Tensor &table, const std::optional<at::Tensor> &seqLens,
                       int64_t pageSize, int64_t numPages, at::Tensor state) {
  c10::DeviceGuard guard(table.device());
  checkBlockTable(table, seqLens.has_value() ? &*seqLens : nullptr, pageSize, numPages, state);
}

} // namespace

TORCH_LIBRARY_FRAGMENT(attn_opt, m) {
  m.def("check_block_table(Tensor block_table, Tensor? seq_lens, int page_size, int num_pages, "
        "Tensor(a!) state) -> ()");
}
TORCH_LIBRARY_IMPL(attn_opt, CPU, m) { m.impl("check_block_table", &checkBlockTableOp); }
TORCH_LIBRARY_IMPL(attn_opt, CUDA, m) { m.impl("check_block_table", &checkBlockTableOp); }
TORCH_LIBRARY_IMPL(attn_opt, Autograd, m) {
  m.impl("check_block_table", torch::CppFunction::makeFallthrough());
}
