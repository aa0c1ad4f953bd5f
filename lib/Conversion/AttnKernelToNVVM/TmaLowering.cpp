//===- TmaLowering.cpp - TMA tile loads to NVVM ---------------------------===//
//
// What this file is: the lowering of `attnk.tma_load` (PipelineOps.td) with contiguous and
// paged addressing: one `cp.async.bulk.tensor` per box of the destination tile — column block after
// column block (the swizzled layout stores a block of `box cols` columns for all rows before
// the next), row band after row band — into the stage's shared memory, completing on the full
// barrier of the stage the destination belongs to. The op's coordinates are outermost first;
// the instruction takes them innermost first. Paged: the row coordinate is a token of the
// sequence the batch coordinate names; each band's row in the pool comes from the block table
// (table[b][token / P] · P + token mod P, batch coordinate 0).
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
    int64_t maxBlocks = 0;
    if (kind == AddressingKind::paged) {
      maxBlocks = op.getBlockTable().getType().getDimSize(1);
      if (ShapedType::isDynamic(maxBlocks) || op.getMap().getType().getBox().size() != 4)
        return op.emitOpError("not supported yet: lowering paged addressing other than a 4-D "
                              "[batch, token, head, column] map with a block table of a static "
                              "number of pages per sequence");
    }
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
    // batch coordinate 0) from the block table, one entry per band: a band lies in one page.
    SmallVector<Value> bandRows;
    for (int64_t r0 = 0; maxBlocks && r0 < rows; r0 += boxTile[0])
      bandRows.push_back(attn::nvvm::pagedRow(k, a.getBlockTable(), maxBlocks,
                                              op.getAddressing().getPageSize(), -1, coords[0],
                                              k.add(coords[1], r0)));
    for (int64_t blk = 0; blk < cols / boxTile[1]; ++blk) {
      for (int64_t r0 = 0; r0 < rows; r0 += boxTile[0]) {
        SmallVector<Value> inner(llvm::reverse(coords));
        inner[0] = k.add(coords[n - 1], blk * boxTile[1]);
        if (maxBlocks) {
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
} // namespace

void mlir::attnk::populateTmaPatterns(const TypeConverter &tc, RewritePatternSet &patterns) {
  patterns.add<TmaLoadLowering>(tc, patterns.getContext());
}
