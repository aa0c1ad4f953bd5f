//===- PipelineOps.cpp - warp roles, rings and TMA loads -------------------===//
//
// What this file is: the custom syntax and verifier of `attnk.warp_specialize` (register budget
// of the roles), the verifiers of the ring protocol (each acquire paired with one later commit
// of the same rings in its block, each wait with one release, no use of a stage after it is
// handed on, an acquire's expect_tx equal to the bytes its TMA loads copy), of
// `attnk.subtile` and of `attnk.tma_load` (box versus stage, addressing operands).
//
//===----------------------------------------------------------------------===//

#include "attn/Dialect/AttnKernel/IR/AttnKernel.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::attnk;

//===----------------------------------------------------------------------===//
// KernelOp
//===----------------------------------------------------------------------===//

ParseResult KernelOp::parse(OpAsmParser &parser, OperationState &result) {
  StringAttr name;
  SmallVector<OpAsmParser::Argument> args;
  int64_t threads = 0;
  if (parser.parseSymbolName(name, getSymNameAttrName(result.name), result.attributes) ||
      parser.parseArgumentList(args, OpAsmParser::Delimiter::Paren, /*allowType=*/true) ||
      parser.parseKeyword("threads") || parser.parseEqual() || parser.parseInteger(threads))
    return failure();
  result.addAttribute(getThreadsAttrName(result.name),
                      parser.getBuilder().getI64IntegerAttr(threads));
  if (succeeded(parser.parseOptionalKeyword("programmatic")))
    result.addAttribute(getProgrammaticAttrName(result.name), parser.getBuilder().getUnitAttr());
  if (parser.parseOptionalAttrDictWithKeyword(result.attributes))
    return failure();
  Region *body = result.addRegion();
  if (parser.parseRegion(*body, args))
    return failure();
  if (body->empty())
    body->emplaceBlock();
  return success();
}

void KernelOp::print(OpAsmPrinter &p) {
  p << ' ';
  p.printSymbolName(getSymName());
  p << '(';
  llvm::interleaveComma(getBody().getArguments(), p,
                        [&](BlockArgument a) { p.printRegionArgument(a); });
  p << ") threads = " << getThreads();
  if (getProgrammatic())
    p << " programmatic";
  p.printOptionalAttrDictWithKeyword(
      (*this)->getAttrs(), {getSymNameAttrName(), getThreadsAttrName(), getProgrammaticAttrName()});
  p << ' ';
  p.printRegion(getBody(), /*printEntryBlockArgs=*/false, /*printBlockTerminators=*/false);
}

LogicalResult KernelOp::verify() {
  int64_t threads = getThreads();
  if (threads < 32 || threads > 1024 || threads % 32 != 0)
    return emitOpError("needs a block of whole warps, at most 1024 threads, got ") << threads;
  for (BlockArgument a : getBody().getArguments()) {
    Type t = a.getType();
    if (!isa<MemRefType, TensorMapType>(t) && !t.isSignlessInteger(32))
      return emitOpError("parameter #") << a.getArgNumber() << " is " << t
                                        << " (kernel parameters are memrefs, tensor maps or i32)";
  }
  if (getMetadata() && !getLaunch())
    return emitOpError("has launch metadata but no launch ABI");
  if (LaunchAttr l = getLaunchAttr()) {
    if (l.getParams().size() != getBody().getNumArguments())
      return emitOpError("launch ABI names ")
             << l.getParams().size() << " parameters, the kernel has "
             << getBody().getNumArguments();
    if (l.getBlock()[0] != threads || l.getBlock()[1] != 1 || l.getBlock()[2] != 1)
      return emitOpError("launch ABI's block is not [") << threads << ", 1, 1]";
    if (l.getProgrammatic() != getProgrammatic())
      return emitOpError("is ") << (getProgrammatic() ? "" : "not ")
                                << "programmatic, its launch ABI "
                                << (l.getProgrammatic() ? "is" : "is not");
  }
  return success();
}

//===----------------------------------------------------------------------===//
// WarpSpecializeOp
//===----------------------------------------------------------------------===//

ParseResult WarpSpecializeOp::parse(OpAsmParser &parser, OperationState &result) {
  if (parser.parseOptionalAttrDictWithKeyword(result.attributes))
    return failure();
  SmallVector<Attribute> roles;
  while (true) {
    Attribute role;
    OptionalParseResult parsed = parser.parseOptionalAttribute(role);
    if (!parsed.has_value())
      break;
    if (failed(*parsed))
      return failure();
    roles.push_back(role);
    Region *region = result.addRegion();
    if (parser.parseRegion(*region, /*arguments=*/{}))
      return failure();
    if (region->empty())
      region->emplaceBlock();
  }
  result.addAttribute(getRolesAttrName(result.name), parser.getBuilder().getArrayAttr(roles));
  return success();
}

void WarpSpecializeOp::print(OpAsmPrinter &p) {
  p.printOptionalAttrDictWithKeyword((*this)->getAttrs(), {getRolesAttrName()});
  for (auto [role, region] : llvm::zip(getRoles(), getRoleRegions())) {
    p.printNewline();
    p.printAttribute(role);
    p << ' ';
    p.printRegion(region, /*printEntryBlockArgs=*/false, /*printBlockTerminators=*/false);
  }
}

LogicalResult WarpSpecializeOp::verify() {
  if (getRoles().empty())
    return emitOpError("needs at least one role");
  if (getRoles().size() != getRoleRegions().size())
    return emitOpError("has ") << getRoles().size() << " roles but " << getRoleRegions().size()
                               << " regions";
  int64_t ctas = getCtasPerSm();
  if (ctas < 1 || ctas > 4)
    return emitOpError("ctas_per_sm must be in [1, 4], got ") << ctas;
  int64_t threads = 0, registers = 0;
  for (auto role : getRoles().getAsRange<attn::WarpRoleAttr>()) {
    threads += role.getWarpgroups() * kThreadsPerWarpgroup;
    registers += role.getWarpgroups() * kThreadsPerWarpgroup * role.getRegs();
  }
  if (threads > 1024)
    return emitOpError("roles need ") << threads << " threads, more than a CTA's 1024";
  if (registers * ctas > kRegistersPerSM)
    return emitOpError("register budgets need ")
           << registers << " registers per CTA x " << ctas << " CTAs per SM, more than the "
           << kRegistersPerSM << " of an SM";
  return success();
}

//===----------------------------------------------------------------------===//
// Ring protocol
//===----------------------------------------------------------------------===//

LogicalResult RingAllocOp::verify() {
  if (bool(getFullBarriers()) != bool(getEmptyBarriers()))
    return emitOpError("needs both barrier offsets (full, empty) or neither");
  if (getStride() && *getStride() < getRing().getType().getStageBytes())
    return emitOpError("stride ") << *getStride() << " is shorter than a stage ("
                                  << getRing().getType().getStageBytes() << " bytes)";
  return success();
}

/// Rings entered by one op: each stage one of its ring's; several rings share their barriers.
static LogicalResult verifyRingSet(Operation *op, ValueRange rings, ValueRange stages) {
  if (rings.empty())
    return op->emitOpError("needs at least one ring");
  for (auto [r, st] : llvm::zip(rings, stages))
    if (cast<RingType>(r.getType()).getStageType() != st.getType())
      return op->emitOpError("stage type ") << st.getType() << " is not the ring's";
  if (rings.size() == 1)
    return success();
  auto barriersOf = [](Value r) -> std::optional<std::pair<uint64_t, uint64_t>> {
    auto alloc = r.getDefiningOp<RingAllocOp>();
    if (!alloc || !alloc.getFullBarriers())
      return std::nullopt;
    return std::make_pair(*alloc.getFullBarriers(), *alloc.getEmptyBarriers());
  };
  auto first = barriersOf(rings[0]);
  for (Value r : rings)
    if (!first || barriersOf(r) != first ||
        cast<RingType>(r.getType()).getStages() != cast<RingType>(rings[0].getType()).getStages())
      return op->emitOpError("rings entered together must share their barriers (ring.alloc "
                             "with the same `barriers`) and their stage count");
  return success();
}

/// The stage a TMA load or subtile refers to, through subtiles.
static Value rootStage(Value stage) {
  while (auto sub = stage.getDefiningOp<SubtileOp>())
    stage = sub.getSource();
  return stage;
}

/// Checks that the stages of `enter` (returned on `rings`) are handed on by exactly one
/// `ExitOp` of the same rings, later in the block of `enter`, and that nothing after that exit
/// uses them. Returns the exit op.
template <typename ExitOp>
static FailureOr<ExitOp> verifyPairing(Operation *enter, ValueRange rings, ValueRange stages,
                                       StringRef exitName) {
  Block *block = enter->getBlock();
  ExitOp exit;
  for (Value stage : stages)
    for (Operation *user : stage.getUsers()) {
      auto candidate = dyn_cast<ExitOp>(user);
      if (!candidate || candidate == exit)
        continue;
      if (candidate.getRings() != rings)
        return enter->emitOpError("stage is handed to ") << exitName << " of other rings";
      if (candidate->getBlock() != block)
        return enter->emitOpError("stage must be handed on by ")
               << exitName << " in the same block";
      if (exit)
        return enter->emitOpError("stage is handed on more than once by ") << exitName;
      exit = candidate;
    }
  if (!exit)
    return enter->emitOpError("stage is never handed on: expected one ")
           << exitName << " of it later in the same block";
  for (Value stage : stages)
    for (Operation *user : stage.getUsers()) {
      Operation *inBlock = block->findAncestorOpInBlock(*user);
      if (user != exit.getOperation() && inBlock && exit->isBeforeInBlock(inBlock))
        return user->emitOpError("uses a stage after its ") << exitName;
    }
  return exit;
}

/// Checks that an exit op hands on the stages of one `EnterOp`, all of them, in order (that
/// the rings are the same is the enter op's check).
template <typename EnterOp>
static LogicalResult verifyExit(Operation *exit, ValueRange rings, ValueRange stages,
                                StringRef enterName) {
  if (failed(verifyRingSet(exit, rings, stages)))
    return failure();
  auto enter = stages.empty() ? EnterOp() : stages.front().getDefiningOp<EnterOp>();
  if (!enter || enter.getBuffers() != stages)
    return exit->emitOpError("expects the stages one ") << enterName << " returned, in order";
  return success();
}

LogicalResult RingAcquireOp::verify() {
  if (failed(verifyRingSet(*this, getRings(), getBuffers())))
    return failure();
  FailureOr<RingCommitOp> commit =
      verifyPairing<RingCommitOp>(*this, getRings(), getBuffers(), "attnk.ring.commit");
  if (failed(commit))
    return failure();
  std::optional<uint64_t> tx = getExpectTx();
  if (!tx)
    return success();
  if (*tx == 0)
    return emitOpError("expect_tx needs a positive byte count");
  // The bytes of the TMA loads into the stages before the commit must be the announced ones.
  int64_t bytes = 0;
  Block *block = (*this)->getBlock();
  (*this)->getParentRegion()->walk([&](TmaLoadOp load) {
    Value root = rootStage(load.getDest());
    Operation *inBlock = block->findAncestorOpInBlock(*load);
    if (llvm::is_contained(getBuffers(), root) && inBlock && inBlock->isBeforeInBlock(*commit))
      bytes += load.getDest().getType().getBytes();
  });
  if (bytes != static_cast<int64_t>(*tx))
    return emitOpError("expect_tx ") << *tx << " differs from the " << bytes
                                     << " bytes the TMA loads into the stage copy before its "
                                        "commit";
  return success();
}

LogicalResult RingCommitOp::verify() {
  return verifyExit<RingAcquireOp>(*this, getRings(), getBuffers(), "attnk.ring.acquire");
}

LogicalResult RingWaitOp::verify() {
  if (!getPhase())
    return emitOpError("needs the phase parity of the fill it waits for");
  if (getExpectTx())
    return emitOpError("expect_tx announces a producer's TMA bytes: ring.acquire only");
  if (failed(verifyRingSet(*this, getRings(), getBuffers())))
    return failure();
  return verifyPairing<RingReleaseOp>(*this, getRings(), getBuffers(), "attnk.ring.release");
}

LogicalResult RingReleaseOp::verify() {
  if (std::optional<uint64_t> b = getNamedBarrier(); b && (*b < 1 || *b > 15))
    return emitOpError("named barrier must be in [1, 15] (0 is the CTA's), got ") << *b;
  return verifyExit<RingWaitOp>(*this, getRings(), getBuffers(), "attnk.ring.wait");
}

//===----------------------------------------------------------------------===//
// SubtileOp
//===----------------------------------------------------------------------===//

LogicalResult SubtileOp::verify() {
  StageType in = getSource().getType(), out = getResult().getType();
  if (in.getElementType() != out.getElementType() || in.getSwizzle() != out.getSwizzle() ||
      in.getShape()[1] != out.getShape()[1])
    return emitOpError("keeps the stage's columns, element type and swizzle");
  int64_t rows = out.getShape()[0];
  if (in.getShape()[0] % rows != 0)
    return emitOpError("rows ") << rows << " do not divide the stage's " << in.getShape()[0];
  if (getIndex() >= static_cast<uint64_t>(in.getShape()[0] / rows))
    return emitOpError("index ") << getIndex() << " is past the stage's "
                                 << in.getShape()[0] / rows << " bands";
  if (in.getSwizzle() != Swizzle::none && rows % 8 != 0)
    return emitOpError("a swizzled band takes whole 8-row swizzle atoms, got ") << rows
                                                                                << " rows";
  return success();
}

//===----------------------------------------------------------------------===//
// TmaLoadOp
//===----------------------------------------------------------------------===//

LogicalResult TmaLoadOp::verify() {
  TensorMapType map = getMap().getType();
  StageType stage = getDest().getType();
  auto acquire = rootStage(getDest()).getDefiningOp<RingAcquireOp>();
  if (!acquire)
    return emitOpError("loads into a stage that attnk.ring.acquire did not return");
  if (!acquire.getExpectTx())
    return emitOpError("loads into a stage acquired without expect_tx (the TMA bytes its full "
                       "barrier must expect)");
  if (getCoords().size() != map.getBox().size())
    return emitOpError("needs one coordinate per box dimension (")
           << map.getBox().size() << "), got " << getCoords().size();
  if (map.getElementType() != stage.getElementType())
    return emitOpError("tensor map element type ")
           << map.getElementType() << " differs from the stage's " << stage.getElementType();
  if (map.getSwizzle() != stage.getSwizzle())
    return emitOpError("tensor map swizzle ")
           << stringifySwizzle(map.getSwizzle()) << " differs from the stage's "
           << stringifySwizzle(stage.getSwizzle());
  SmallVector<int64_t, 2> box = map.getTileShape();
  ArrayRef<int64_t> tile = stage.getShape();
  if (tile[1] % box[1] != 0 || tile[0] % box[0] != 0)
    return emitOpError("stage tile ") << tile[0] << "x" << tile[1] << " is not a whole number of "
                                      << box[0] << "x" << box[1] << " boxes";
  AddressingKind kind = getAddressing().getKind();
  bool pagedOperand = getBlockTable() || !getPages().empty();
  if ((kind == AddressingKind::paged) != pagedOperand)
    return emitOpError("a block_table operand goes with paged addressing, and only with it");
  if (getBlockTable() && !getPages().empty())
    return emitOpError("takes a block_table or the pages of its bands, not both");
  if (!getPages().empty() && static_cast<int64_t>(getPages().size()) != tile[0] / box[0])
    return emitOpError("needs one page per band of ")
           << box[0] << " rows (" << tile[0] / box[0] << "), got " << getPages().size();
  if ((kind == AddressingKind::gathered) != bool(getIndices()))
    return emitOpError("an indices operand goes with gathered addressing, and only with it");
  if (kind == AddressingKind::paged && getAddressing().getPageSize() % box[0] != 0)
    return emitOpError("page size ")
           << getAddressing().getPageSize() << " is not a multiple of the box's " << box[0]
           << " rows: a box would straddle two pages";
  return success();
}

//===----------------------------------------------------------------------===//
// PageLookupOp
//===----------------------------------------------------------------------===//

LogicalResult PageLookupOp::verify() {
  int64_t page = getPageSize();
  if (page < 1 || (page & (page - 1)) != 0)
    return emitOpError("page size must be a positive power of two, got ") << page;
  bool dynamic = getTable().getType().isDynamicDim(1);
  if (dynamic != bool(getBlocks()))
    return emitOpError("takes a blocks operand exactly when the table's pages per sequence are "
                       "dynamic");
  return success();
}
