//===- TmaLowering.cpp - TMA tile loads to NVVM ---------------------------===//
//
// What this file is: the lowering of `attnk.tma_load` (PipelineOps.td) with contiguous and
// paged addressing: one `cp.async.bulk.tensor` per box of the destination tile — column block after
// column block (the swizzled layout stores a block of `box cols` columns for all rows before
// the next), row band after row band — into the stage's shared memory, completing on the full
// barrier of the stage the destination belongs to. The op's coordinates are outermost first;
// the instruction takes them innermost first. Paged: the row coordinate is a token of the
// sequence the batch coordinate names; each band's row in the pool is page · P + token mod P
// (batch coordinate 0), its page given by the op (`pages`) or read from the block table
// (table[b][token / P]). Also `attnk.page_lookup`: one block-table entry.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"

#include "../AttnToNVVM/ForwardKernelImpl.h"

#include "attn/Dialect/AttnKernel/IR/AttnKernel.h"

using namespace mlir;
using namespace mlir::attnk;
using attn::nvvm::KernelBuilder;

namespace {
struct TmaLoadLowering : OpConversionPattern<TmaLoadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(TmaLoadOp op, OpAdaptor a,
                                ConversionPatternRewriter &rewriter) const override {
    AddressingKind kind = op.getAddressing().getKind();
    if (kind == AddressingKind::gathered)
      return op.emitOpError("not supported yet: lowering ")
             << stringifyAddressingKind(kind) << " addressing";
    bool paged = kind == AddressingKind::paged;
    int64_t maxBlocks = 0;
    if (paged && op.getBlockTable())
      maxBlocks = op.getBlockTable().getType().getDimSize(1);
    if (paged && (ShapedType::isDynamic(maxBlocks) || op.getMap().getType().getBox().size() != 4))
      return op.emitOpError("not supported yet: lowering paged addressing other than a 4-D "
                            "[batch, token, head, column] map with the pages of its bands or a "
                            "block table of a static number of pages per sequence");
    FailureOr<std::pair<RingLayout, Value>> stage = stageBarrierOf(rewriter, op.getDest());
    if (failed(stage))
      return op.emitOpError("needs a stage of a ring allocated with its offsets and barriers");
    KernelBuilder k(rewriter, op.getLoc());
    Value bar = stage->first.barrier(k, stage->second, /*fullBarrier=*/true);
    TensorMapType map = op.getMap().getType();
    ArrayRef<int64_t> box = map.getBox();
    SmallVector<int64_t, 2> boxTile = map.getTileShape(); // rows, columns
    // The box dimension that advances with the tile's rows: the innermost non-unit one
    // outside the columns (none: one row band).
    int64_t rowDim = -1;
    for (int64_t d = static_cast<int64_t>(box.size()) - 2; d >= 0 && rowDim < 0; --d)
      if (box[d] != 1)
        rowDim = d;
    StageType dest = op.getDest().getType();
    int64_t rows = dest.getShape()[0], cols = dest.getShape()[1];
    int64_t elemBytes = dest.getBytes() / (rows * cols);
    Value destOff = stageOffsetOf(k, op.getDest(), a.getDest());
    ValueRange coords = a.getCoords();
    int64_t n = static_cast<int64_t>(coords.size());
    // Paged: each band's row in the pool of pages (seen as one sequence of num_pages · P rows,
    // batch coordinate 0): page · P + token mod P, the page given (`pages`) or read from the
    // block table here, one entry per band: a band lies in one page.
    SmallVector<Value> bandRows;
    int64_t page = op.getAddressing().getPageSize();
    for (int64_t r0 = 0, i = 0; paged && r0 < rows; r0 += boxTile[0], ++i) {
      Value tok = k.add(coords[1], r0);
      bandRows.push_back(
          a.getPages().empty()
              ? attn::nvvm::pagedRow(k, a.getBlockTable(), maxBlocks, Value(), page, -1,
                                     coords[0], tok)
              : attn::nvvm::pageRow(k, a.getPages()[i], page, -1, tok, Value()));
    }
    for (int64_t blk = 0; blk < cols / boxTile[1]; ++blk) {
      for (int64_t r0 = 0; r0 < rows; r0 += boxTile[0]) {
        SmallVector<Value> inner(llvm::reverse(coords));
        inner[0] = k.add(coords[n - 1], blk * boxTile[1]);
        if (paged) {
          inner[n - 2] = bandRows[r0 / boxTile[0]];
          inner[n - 1] = k.i32(0);
        } else if (rowDim >= 0) {
          inner[n - 1 - rowDim] = k.add(coords[rowDim], r0);
        }
        int64_t off = (blk * rows + r0) * boxTile[1] * elemBytes;
        k.tmaLoad(k.gep(stage->first.base, k.add(destOff, off)), a.getMap(), inner, bar);
      }
    }
    rewriter.eraseOp(op);
    return success();
  }
};
/// `attnk.page_lookup`: table[b][min(token / P, max_blocks − 1)].
struct PageLookupLowering : OpConversionPattern<PageLookupOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(PageLookupOp op, OpAdaptor a,
                                ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    int64_t maxBlocks = op.getTable().getType().getDimSize(1);
    rewriter.replaceOp(op, attn::nvvm::pageOf(k, a.getTable(), maxBlocks, a.getBlocks(),
                                              op.getPageSize(), a.getBatch(), a.getToken()));
    return success();
  }
};
} // namespace

void mlir::attnk::populateTmaPatterns(const TypeConverter &tc, RewritePatternSet &patterns) {
  patterns.add<TmaLoadLowering, PageLookupLowering>(tc, patterns.getContext());
}
