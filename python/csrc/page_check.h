//===- page_check.h - block-table entries checked on the device -----------===//
//
// What this file is: the debug check of a paged cache's block table (page_check.cpp): the used
// entries of block_table [B, max_blocks] validated against the pool [0, num_pages), and seq_lens
// against the table's capacity max_blocks · P — and of a ragged batch's cu_seqlens_q — with
// tensor ops on the tensors' device and
// current stream (no host synchronization), the first offender and a count accumulated into a
// small int64 state tensor. Reading the state synchronizes (debug only).
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_OPT_PYTHON_CSRC_PAGE_CHECK_H
#define ATTN_OPT_PYTHON_CSRC_PAGE_CHECK_H

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace attn_opt_ext {

/// The state's entries (int64 [PageStateSize]); "none" entries hold kNoOffender.
enum PageState : int64_t {
  BadEntries = 0, // used table entries outside [0, num_pages), over every check since the reset
  FirstEntry,     // the first one's flat index b · max_blocks + i (kNoOffender: none)
  Entry,          // its value
  EntryPages,     // the pool's pages when it was recorded
  EntryBlocks,    // the table's max_blocks then
  BadLens,        // seq_lens outside [0, max_blocks · P]
  FirstLen,       // the first one's sequence (kNoOffender: none)
  Len,            // its length
  LenCapacity,    // max_blocks · P then
  BadOffsets,     // ragged sequences whose rows cu_seqlens_q[b] ..< cu_seqlens_q[b + 1] are out
                  // of order, outside [0, T] or more than max_seqlen_q
  FirstOffset,    // the first one's sequence (kNoOffender: none)
  OffsetStart,    // its cu_seqlens_q[b]
  OffsetEnd,      // its cu_seqlens_q[b + 1]
  OffsetRows,     // T, the packed rows, then
  OffsetMost,     // max_seqlen_q then
  PageStateSize
};
constexpr int64_t kNoOffender = INT64_MAX;

/// A reset state on the device of `options`.
at::Tensor newPageState(const at::TensorOptions &options);

/// The check's scratch for tables [batch, blocks] on one device, allocated once (a plan's, so
/// that a run allocates nothing on the device, under CUDA graph capture too).
struct PageCheck {
  PageCheck(int64_t batch, int64_t blocks, const at::TensorOptions &device);
  int64_t batch, blocks;
  at::Tensor outside, used, bad, picked, flat, blockIndex;         // [batch, blocks] ([1, blocks])
  at::Tensor lens, need, badLen, lenOver, seqIndex, pickedLen;     // [batch]
  at::Tensor starts, ends, badOffset, offsetOver;                  // [batch]
  at::Tensor first, where, count, take, found, value, value2, entry, none; // 0-d or [1]
};

/// Checks the used entries of `table` (int32 [B, M], contiguous: entries (b, i) with i <
/// ceil(len_b / P), len_b = seq_lens[b] clamped to [0, M · P], or every entry without seq_lens)
/// against [0, numPages) and seq_lens against [0, M · P]; adds the offenders to `state` (int64
/// [PageStateSize] on the table's device), keeping the first one recorded since its reset. Only
/// asynchronous out= and in-place tensor ops into `scratch` on the current stream: no host
/// sync, no device allocation, capturable in a CUDA graph. Argument errors raise ValueError /
/// TypeError.
void checkBlockTable(const at::Tensor &table, const at::Tensor *seqLens, int64_t pageSize,
                     int64_t numPages, at::Tensor &state, PageCheck &scratch);

/// Checks a ragged batch's offsets `cuSeqlensQ` (int32 [B + 1], contiguous, B the scratch's
/// batch): sequence b's rows cu[b] ..< cu[b + 1] must lie in [0, totalQ], in order, and number at
/// most maxSeqlenQ; adds the offenders to `state` as checkBlockTable does (same constraints: no
/// host sync, no allocation).
void checkCuSeqlens(const at::Tensor &cuSeqlensQ, int64_t totalQ, int64_t maxSeqlenQ,
                    at::Tensor &state, PageCheck &scratch);

/// The state's values (a copy to the host: synchronizes), reset on the device when `reset`.
/// Raises RuntimeError while the current stream is being captured.
std::vector<int64_t> readPageState(at::Tensor &state, bool reset);

} // namespace attn_opt_ext

#endif // ATTN_OPT_PYTHON_CSRC_PAGE_CHECK_H
