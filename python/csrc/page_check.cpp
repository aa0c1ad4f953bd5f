//===- page_check.cpp - block-table entries checked on the device ---------===//
//
// What this file is: the debug check of a paged cache's block table (page_check.h) and its op,
//
//   attn_opt::check_block_table(Tensor block_table, Tensor? seq_lens, int page_size,
//                               int num_pages, Tensor(a!) state) -> ()
//
//   attn_opt::check_cu_seqlens(Tensor cu_seqlens_q, int total_q, int max_seqlen_q,
//                              Tensor(a!) state) -> ()
//
// on CPU and CUDA tensors alike (the same ATen ops): what a plan made with check_pages runs
// before each launch (torch_ops.cpp), callable on its own. The state is int64 [15]
// (page_check.h, PageState): [bad entries, first flat index b · max_blocks + i, its entry, the
// pool's pages, max_blocks, bad lengths, first sequence, its length, max_blocks · P, bad
// offsets, first sequence, its start, its end, T, max_seqlen_q], "none" being INT64_MAX; a
// reset state is [0, none, 0, 0, 0, 0, none, 0, 0, 0, none, 0, 0, 0, 0].
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
  state.select(0, FirstOffset).fill_(kNoOffender);
  return state;
}

PageCheck::PageCheck(int64_t batch, int64_t blocks, const at::TensorOptions &device)
    : batch(batch), blocks(blocks) {
  const at::TensorOptions longs = device.dtype(at::kLong), bools = device.dtype(at::kBool);
  outside = at::empty({batch, blocks}, bools);
  used = at::empty({batch, blocks}, bools);
  bad = at::empty({batch, blocks}, bools);
  picked = at::empty({batch, blocks}, longs);
  flat = at::arange(batch * blocks, longs).view({batch, blocks});
  blockIndex = at::arange(blocks, longs).unsqueeze(0);
  lens = at::empty({batch}, longs);
  need = at::empty({batch}, longs);
  badLen = at::empty({batch}, bools);
  seqIndex = at::arange(batch, longs);
  pickedLen = at::empty({batch}, longs);
  lenOver = at::empty({batch}, bools);
  starts = at::empty({batch}, longs);
  ends = at::empty({batch}, longs);
  badOffset = at::empty({batch}, bools);
  offsetOver = at::empty({batch}, bools);
  first = at::empty({}, longs);
  where = at::empty({1}, longs);
  count = at::empty({}, longs);
  take = at::empty({}, bools);
  found = at::empty({}, bools);
  value = at::empty({1}, longs);
  value2 = at::empty({1}, longs);
  entry = at::empty({1}, device.dtype(at::kInt));
  none = at::full({}, kNoOffender, longs);
}

namespace {

/// The first flat index where `bad` holds into `c.first` (kNoOffender: none), and into
/// `c.where` clamped into [0, bad.numel()) (an index to read its value at).
void firstIndex(PageCheck &c, const at::Tensor &bad, const at::Tensor &index, at::Tensor &picked) {
  at::where_out(picked, bad, index, c.none);
  at::amin_out(c.first, picked, at::IntArrayRef{});
  at::clamp_max_out(c.where, c.first.view({1}), bad.numel() - 1);
}

/// Adds the `bad` offenders to the state's `countAt`; when the state has none recorded yet
/// and `c.first` is one, records it at `firstAt` and the values after it: the offender's
/// `picked` values ([1] each, read at `c.where`) first, then the numbers.
void record(PageCheck &c, at::Tensor &state, int64_t countAt, const at::Tensor &bad,
            int64_t firstAt, std::initializer_list<const at::Tensor *> picked,
            std::initializer_list<int64_t> numbers) {
  at::eq_out(c.take, state.select(0, firstAt), kNoOffender);
  at::ne_out(c.found, c.first, kNoOffender);
  c.take.logical_and_(c.found);
  int64_t slot = firstAt + 1;
  auto keep = [&](const at::Tensor &v) {
    at::Tensor s = state.select(0, slot++);
    at::where_out(s, c.take, v, s);
  };
  for (const at::Tensor *v : picked)
    keep(v->squeeze(0));
  for (int64_t n : numbers) {
    c.value.fill_(n);
    keep(c.value.squeeze(0));
  }
  at::Tensor s = state.select(0, firstAt);
  at::where_out(s, c.take, c.first, s);
  at::sum_out(c.count, bad, at::OptionalIntArrayRef{}, false, at::kLong);
  state.select(0, countAt).add_(c.count);
}

} // namespace

void checkBlockTable(const at::Tensor &table, const at::Tensor *seqLens, int64_t pageSize,
                     int64_t numPages, at::Tensor &state, PageCheck &c) {
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
  TORCH_CHECK(
      c.batch == batch && c.blocks == blocks && c.none.device() == table.device(),
      cat(op, ": the scratch is for [", c.batch, ", ", c.blocks, "] tables on ", c.none.device()));
  if (seqLens)
    TORCH_CHECK_TYPE(seqLens->scalar_type() == at::kInt && seqLens->sizes().equals({batch}) &&
                         seqLens->device() == table.device(),
                     cat(op, ": seq_lens must be int32 [", batch, "] on ", table.device(), ", got ",
                         seqLens->scalar_type(), " ", seqLens->sizes(), " on ", seqLens->device()));
  if (table.numel() == 0)
    return;
  // Only out= and in-place ops into the scratch: nothing is allocated on the device.
  at::Tensor &bad = c.outside;
  at::lt_out(c.outside, table, 0);
  at::ge_out(c.bad, table, numPages);
  c.outside.logical_or_(c.bad);
  if (seqLens) {
    c.lens.copy_(*seqLens);
    // Blocks sequence b reads: ceil(len / P) of its clamped length.
    at::clamp_out(c.need, c.lens, 0, capacity);
    c.need.add_(pageSize - 1).div_(pageSize, "floor");
    at::lt_out(c.used, c.blockIndex, c.need.unsqueeze(1));
    bad.logical_and_(c.used);
    at::lt_out(c.badLen, c.lens, 0);
    at::gt_out(c.lenOver, c.lens, capacity);
    c.badLen.logical_or_(c.lenOver);
    firstIndex(c, c.badLen, c.seqIndex, c.pickedLen);
    at::index_select_out(c.value, c.lens, 0, c.where);
    record(c, state, BadLens, c.badLen, FirstLen, {&c.value}, {capacity});
  }
  firstIndex(c, bad, c.flat, c.picked);
  at::index_select_out(c.entry, table.view({-1}), 0, c.where);
  c.value.copy_(c.entry);
  record(c, state, BadEntries, bad, FirstEntry, {&c.value}, {numPages, blocks});
}

void checkCuSeqlens(const at::Tensor &cu, int64_t totalQ, int64_t maxSeqlenQ, at::Tensor &state,
                    PageCheck &c) {
  constexpr const char *op = "attn_opt.check_cu_seqlens";
  TORCH_CHECK_TYPE(cu.scalar_type() == at::kInt && cu.dim() == 1 && cu.size(0) == c.batch + 1 &&
                       cu.is_contiguous() && cu.device() == state.device(),
                   cat(op, ": cu_seqlens_q must be a contiguous int32 [", c.batch + 1, "] on ",
                       state.device(), ", got ", cu.scalar_type(), " ", cu.sizes(), " on ",
                       cu.device()));
  TORCH_CHECK_TYPE(state.scalar_type() == at::kLong && state.dim() == 1 &&
                       state.size(0) == PageStateSize && state.is_contiguous(),
                   cat(op, ": state must be a contiguous int64 [", int64_t(PageStateSize),
                       "] tensor, got ", state.scalar_type(), " ", state.sizes()));
  TORCH_CHECK(c.none.device() == cu.device(),
              cat(op, ": the scratch is on ", c.none.device(), ", the offsets on ", cu.device()));
  // Only out= and in-place ops into the scratch: nothing is allocated on the device.
  c.starts.copy_(cu.narrow(0, 0, c.batch));
  c.ends.copy_(cu.narrow(0, 1, c.batch));
  at::lt_out(c.badOffset, c.starts, 0);
  at::lt_out(c.offsetOver, c.ends, c.starts);
  c.badOffset.logical_or_(c.offsetOver);
  at::gt_out(c.offsetOver, c.ends, totalQ);
  c.badOffset.logical_or_(c.offsetOver);
  at::sub_out(c.pickedLen, c.ends, c.starts);
  at::gt_out(c.offsetOver, c.pickedLen, maxSeqlenQ);
  c.badOffset.logical_or_(c.offsetOver);
  firstIndex(c, c.badOffset, c.seqIndex, c.pickedLen);
  at::index_select_out(c.value, c.starts, 0, c.where);
  at::index_select_out(c.value2, c.ends, 0, c.where);
  record(c, state, BadOffsets, c.badOffset, FirstOffset, {&c.value, &c.value2},
         {totalQ, maxSeqlenQ});
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
  TORCH_CHECK_TYPE(table.dim() == 2, cat("attn_opt.check_block_table: block_table must be int32 "
                                         "[B, max_blocks], got ",
                                         table.scalar_type(), " ", table.sizes()));
  PageCheck scratch(table.size(0), table.size(1), table.options());
  checkBlockTable(table.contiguous(), seqLens.has_value() ? &*seqLens : nullptr, pageSize, numPages,
                  state, scratch);
}

void checkCuSeqlensOp(const at::Tensor &cu, int64_t totalQ, int64_t maxSeqlenQ,
                      at::Tensor state) {
  c10::DeviceGuard guard(cu.device());
  TORCH_CHECK_TYPE(cu.dim() == 1 && cu.size(0) >= 2,
                   cat("attn_opt.check_cu_seqlens: cu_seqlens_q must be int32 [B + 1] with B >= "
                       "1, got ",
                       cu.scalar_type(), " ", cu.sizes()));
  PageCheck scratch(cu.size(0) - 1, 0, cu.options());
  checkCuSeqlens(cu.contiguous(), totalQ, maxSeqlenQ, state, scratch);
}

} // namespace

TORCH_LIBRARY_FRAGMENT(attn_opt, m) {
  m.def("check_block_table(Tensor block_table, Tensor? seq_lens, int page_size, int num_pages, "
        "Tensor(a!) state) -> ()");
  m.def("check_cu_seqlens(Tensor cu_seqlens_q, int total_q, int max_seqlen_q, Tensor(a!) state) "
        "-> ()");
}
TORCH_LIBRARY_IMPL(attn_opt, CPU, m) {
  m.impl("check_block_table", &checkBlockTableOp);
  m.impl("check_cu_seqlens", &checkCuSeqlensOp);
}
TORCH_LIBRARY_IMPL(attn_opt, CUDA, m) {
  m.impl("check_block_table", &checkBlockTableOp);
  m.impl("check_cu_seqlens", &checkCuSeqlensOp);
}
TORCH_LIBRARY_IMPL(attn_opt, Autograd, m) {
  m.impl("check_block_table", torch::CppFunction::makeFallthrough());
  m.impl("check_cu_seqlens", torch::CppFunction::makeFallthrough());
}
