//===- BuildCombine.cpp - the kernel level of the split-KV combine kernels ===//
//
// What this file is: the combine kernels of a split-KV decode spec at the kernel level — two
// `attnk.kernel`s launched as programmatic dependents of the attention kernel, each one
// `attnk.merge.combine`: `<name>_combine` (narrow, 2 to 16 splits) and `<name>_combine_wide`
// (more), with their launch ABIs (which the attention kernel's metadata lists). The attention
// kernel itself is built by convert-attn-to-nvvm, which places these after it. Also the
// launch-ABI builder the quantize kernels share.
//
//===----------------------------------------------------------------------===//

#include "Build.h"

#include "attn/Dialect/AttnKernel/IR/AttnKernel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace mlir::attn;
using attn_abi::Param;
using G = attn_abi::GridSymbol;

Attribute mlir::attn::kernel::gridSymbol(Builder &b, G s) {
  return b.getStringAttr(attn_abi::kGridSymbols[size_t(s)].name);
}

bool mlir::attn::kernel::buildCombineKernels(OpBuilder &b, gpu::GPUModuleOp module,
                                             AttentionOp op) {
  if (op.getKind() == AttentionKind::prefill)
    return false;
  auto fn = op->getParentOfType<func::FuncOp>();
  ScheduleAttr s = op.getScheduleAttr();
  MemRefType out = op.getOut().getType(), k = op.getK().getType();
  if (!fn || !s || !s.getPackQHeads() || !out.getElementType().isBF16() || out.getRank() != 4 ||
      out.isDynamicDim(1) || out.isDynamicDim(2) || out.isDynamicDim(3) || k.isDynamicDim(2))
    return false;
  int64_t qLen = out.getDimSize(1), heads = out.getDimSize(2), d = out.getDimSize(3);
  int64_t kvHeads = k.getDimSize(2), pack = s.getPackQHeads();
  if (d % 64 || kvHeads < 1 || heads % kvHeads || pack < 1 || (heads / kvHeads) % pack ||
      pack * qLen > 64)
    return false;

  OpBuilder::InsertionGuard g(b);
  Location loc = fn.getLoc();
  Type i32 = b.getI32Type();
  auto ws = MemRefType::get({ShapedType::kDynamic}, b.getF32Type());
  // Parameters: workspace, out, batch, num_splits[, lse].
  Value lse = op.getLse();
  const Param withLse[] = {Param::Workspace, Param::Out, Param::Batch, Param::NumSplits,
                           Param::Lse};
  for (attnk::CombineForm form : {attnk::CombineForm::narrow, attnk::CombineForm::wide}) {
    b.setInsertionPointToEnd(module.getBody());
    std::string name =
        (fn.getSymName() + (form == attnk::CombineForm::narrow ? "_combine" : "_combine_wide"))
            .str();
    // Grid: 4 rows per CTA (narrow) or one.
    bool narrow = form == attnk::CombineForm::narrow;
    int64_t threads = attnk::MergeCombineOp::getThreads(form);
    attnk::LaunchAttr launch = makeLaunch(
        b, "combine",
        {gridSymbol(b, narrow ? G::RowBlocks : G::Rows), gridSymbol(b, G::Groups),
         gridSymbol(b, G::Batch)},
        threads, attnk::MergeCombineOp::getSharedBytes(form, d),
        lse ? ArrayRef<Param>(withLse) : ArrayRef<Param>(withLse).drop_back(),
        /*programmatic=*/true,
        {b.getNamedAttr("min_splits", b.getI64IntegerAttr(
                                          narrow ? 2 : attnk::MergeCombineOp::kNarrowSplits + 1))});
    auto kernel =
        attnk::KernelOp::create(b, loc, b.getStringAttr(name), b.getI64IntegerAttr(threads),
                                b.getUnitAttr(), launch, DictionaryAttr());
    Block *body = b.createBlock(&kernel.getBody());
    for (Type t : {Type(ws), Type(out), i32, i32})
      body->addArgument(t, loc);
    Value lseArg = lse ? body->addArgument(lse.getType(), loc) : Value();
    attnk::MergeCombineOp::create(b, loc, body->getArgument(0), body->getArgument(1),
                                  body->getArgument(3), form, kvHeads, pack, lseArg);
  }
  return true;
}

attnk::LaunchAttr mlir::attn::kernel::makeLaunch(Builder &b, StringRef role,
                                                 ArrayRef<Attribute> grid, int64_t threads,
                                                 int64_t smem, ArrayRef<Param> params,
                                                 bool programmatic, ArrayRef<NamedAttribute> extra,
                                                 int64_t cluster) {
  SmallVector<Attribute> names;
  for (Param p : params)
    names.push_back(b.getStringAttr(attn_abi::name(p)));
  return attnk::LaunchAttr::get(b.getContext(), role, b.getArrayAttr(grid), {threads, 1, 1},
                                {cluster, 1, 1}, smem, b.getArrayAttr(names), programmatic,
                                b.getDictionaryAttr(extra));
}
