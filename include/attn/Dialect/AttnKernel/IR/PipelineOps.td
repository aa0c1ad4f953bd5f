//===- PipelineOps.td - warp roles, rings and TMA loads ----*- tablegen -*-===//
//
// What this file is: the ops that structure a kernel's pipeline — `attnk.warp_specialize` (one
// region per warp role with its register budget), the shared-memory ring (`attnk.ring.alloc`)
// and its hand-off protocol (`ring.acquire` / `ring.commit` on the producer side, `ring.wait` /
// `ring.release` on the consumer side, paired and checked by the verifiers) and the TMA tile
// load into a ring stage (`attnk.tma_load`, contiguous, paged or gathered).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNK_PIPELINE_OPS_TD
#define ATTNK_PIPELINE_OPS_TD

def AttnKernel_KernelOp : AttnKernel_Op<"kernel", [
    Symbol, IsolatedFromAbove, SingleBlock, NoTerminator]> {
  let summary = "one GPU kernel: its parameters, block size and body";
  let description = [{
    A kernel of `gpu.module @attn_kernels` at the kernel level: a symbol, its parameters (the
    region's arguments: global buffers as memrefs, TMA tensor maps as `!attnk.tensor_map`
    (passed by value, 64-byte aligned, as grid constants), scalars as i32), its block size and whether
    it is launched as the programmatic dependent (PDL) of the kernel before it — then its body
    starts with `griddepcontrol.wait`. `launch` is its launch ABI (`#attnk.launch`: grid,
    block, shared memory, one named parameter per region argument); the main kernel of a spec
    also holds the spec's `metadata` (problem, schedule, … as a dictionary), from which, with
    the launch ABIs, the metadata writer makes the launch JSON. Lowered to an `llvm.func` with
    `nvvm.kernel` and `nvvm.maxntid = [threads, 1, 1]`, memref parameters becoming
    `!llvm.ptr<1>`; a kernel with `metadata` gets its launch JSON as `attn.launch`.

    Example:
    ```mlir
    attnk.kernel @d_combine(%ws: memref<?xf32>, %out: memref<?x1x16x128xbf16>, %batch: i32,
                            %splits: i32) threads = 128 programmatic {
      attnk.merge.combine %ws into %out splits(%splits) narrow kv_heads = 2 pack = 8
          : memref<?xf32>, memref<?x1x16x128xbf16>
    }
    ```

    [PTX ISA: griddepcontrol](https://docs.nvidia.com/cuda/parallel-thread-execution/#parallel-synchronization-and-communication-instructions-griddepcontrol)
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, I64Attr:$threads, UnitAttr:$programmatic,
                       OptionalAttr<AttnKernel_LaunchAttr>:$launch,
                       OptionalAttr<DictionaryAttr>:$metadata);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
}

def AttnKernel_WarpSpecializeOp : AttnKernel_Op<"warp_specialize", [
    NoTerminator, SingleBlock, RecursiveMemoryEffects]> {
  let summary = "warp-specialized roles, one region each, with their register budgets";
  let description = [{
    The CTA's warpgroups split into roles; each region is the program of one role, run by
    that role's warpgroups only. A role is the spec level's `#attn.role`: its kind (producer
    or consumer), its warpgroups (128 threads each) and the per-thread register count it sets
    with `setmaxnreg` on entry (a multiple of 8 in [24, 256]). The register file of the SM is
    shared by the `ctas_per_sm` CTAs built to run beside each other, so the verifier checks
    `ctas_per_sm · Σ warpgroups · 128 · regs ≤ 65536` and at most 1024 threads per CTA.

    Regions run concurrently and talk only through shared memory (rings) and barriers; values
    defined above the op (rings, tensor maps, kernel arguments) are visible in every region.
    Lowered late: the role's warpgroup id is read once (warp-uniform), the budgets become
    `setmaxnreg.inc/dec`, and the kernel gets `.maxntid` and `.minnctapersm`.

    Example (one TMA producer warpgroup, two consumer warpgroups):
    ```mlir
    attnk.warp_specialize
      #attn.role<producer, warpgroups = 1, regs = 40> {
        ...
      }
      #attn.role<consumer, warpgroups = 2, regs = 232> {
        ...
      }
    ```

    [PTX ISA: setmaxnreg](https://docs.nvidia.com/cuda/parallel-thread-execution/#miscellaneous-instructions-setmaxnreg)
  }];
  let arguments = (ins AttnKernel_RoleArray:$roles,
                       DefaultValuedAttr<I64Attr, "1">:$ctas_per_sm);
  let regions = (region VariadicRegion<SizedRegion<1>>:$roleRegions);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
}

def AttnKernel_RingAllocOp : AttnKernel_Op<"ring.alloc"> {
  let summary = "a shared-memory ring of stages and its full/empty mbarriers";
  let description = [{
    Reserves the ring's stages and mbarriers in the CTA's shared memory; the barriers
    (`full[s]` expecting the type's producer arrivals, `empty[s]` its consumer arrivals) are
    initialized before the roles start. `at` is the byte offset of the first stage from the
    kernel's dynamic shared memory, aligned to 1024 bytes (the 128-byte swizzle's atom);
    `stride` the bytes from one stage to the next (default: the stage's bytes rounded up to
    1024; two rings may interleave their stages, e.g. a converted K and V buffer pair);
    `barriers` the offsets of `full[0]` and `empty[0]` (8 bytes per stage each); both are
    decided by the shared-memory plan of the kernel. Rings allocated with the same `barriers`
    share them: they are filled and read together, stage for stage (a converted K and V), and
    are entered and left by one ring op over all of them. Lowered to the shared-memory address
    of the first stage (`!llvm.ptr<3>`).

    Example:
    ```mlir
    %k = attnk.ring.alloc at 8192 barriers 0, 16 : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 2>
    ```

    [PTX ISA: mbarrier.init](https://docs.nvidia.com/cuda/parallel-thread-execution/#parallel-synchronization-and-communication-instructions-mbarrier-init)
  }];
  let arguments = (ins OptionalAttr<I64Attr>:$offset, OptionalAttr<I64Attr>:$stride,
                       OptionalAttr<I64Attr>:$full_barriers,
                       OptionalAttr<I64Attr>:$empty_barriers);
  let results = (outs AttnKernel_RingType:$ring);
  let assemblyFormat = [{
    (`at` $offset^)? (`stride` $stride^)? (`barriers` $full_barriers^ `,` $empty_barriers)?
    attr-dict `:`
    qualified(type($ring))
  }];
  let hasVerifier = 1;
}

class AttnKernel_RingEnterOp<string mnemonic>
    : AttnKernel_Op<mnemonic, [AttrSizedOperandSegments]> {
  let arguments = (ins Variadic<AttnKernel_RingType>:$rings, I32:$stage, Optional<I1>:$phase,
                       OptionalAttr<I64Attr>:$expect_tx);
  let results = (outs Variadic<AttnKernel_StageType>:$buffers);
  let assemblyFormat = [{
    $rings `[` $stage `]` (`phase` $phase^)? (`expect_tx` $expect_tx^)? attr-dict `:`
    custom<RingStages>(type($rings), type($buffers))
  }];
  let hasVerifier = 1;
}

class AttnKernel_RingExitOp<string mnemonic>
    : AttnKernel_Op<mnemonic, [SameVariadicOperandSize]> {
  let arguments = (ins Variadic<AttnKernel_RingType>:$rings,
                       Variadic<AttnKernel_StageType>:$buffers);
  let assemblyFormat = [{
    $rings `[` $buffers `]` attr-dict `:` custom<RingStages>(type($rings), type($buffers))
  }];
  let hasVerifier = 1;
}

def AttnKernel_RingAcquireOp : AttnKernel_RingEnterOp<"ring.acquire"> {
  let summary = "producer: wait until a stage is empty and take it to fill";
  let description = [{
    Waits on `empty[stage]` with the given phase parity (the first pass over the ring passes at
    once) and returns the stage to fill, one per ring (rings that share their barriers are
    acquired together, stage for stage). Without `phase` there is no wait: the stage is known
    to be empty — its first use, or its readers were the producer's own threads, which handed
    it back with a named barrier (`ring.release` with `named_barrier`). The stages must be handed on by exactly one `attnk.ring.commit` of the
    same rings later in the same block, and no op after that commit may use them (checked by
    the verifier).

    `expect_tx = N`: the stage is filled by TMA. A TMA copy completes on the stage's `full`
    barrier by its byte count, and the one producer arrival must announce those bytes
    (`mbarrier.arrive.expect_tx`) no later than the copies are issued; the acquire makes that
    arrival, right after its wait, so that the copies follow it (issuing them first would let
    the barrier's transaction count go negative). `N` must equal the bytes of the
    `attnk.tma_load`s into the stage (or into its `attnk.subtile`s) between the acquire and its
    commit, which the verifier adds up; the commit then marks the end of the fill and lowers to
    nothing. Without `expect_tx` the stage is written by threads and its commit arrives.

    Example:
    ```mlir
    %st = attnk.ring.acquire %k[%i] phase %ph expect_tx 16384 : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 2>
    attnk.tma_load %kmap[%c0, %row, %h, %c0] #attnk.addressing<contiguous> into %st : ...
    attnk.ring.commit %k[%st] : !attnk.ring<...>
    ```

    [PTX ISA: mbarrier.try_wait.parity](https://docs.nvidia.com/cuda/parallel-thread-execution/#parallel-synchronization-and-communication-instructions-mbarrier-test-wait-try-wait),
    [mbarrier.arrive.expect_tx](https://docs.nvidia.com/cuda/parallel-thread-execution/#parallel-synchronization-and-communication-instructions-mbarrier-arrive)
  }];
}

def AttnKernel_RingCommitOp : AttnKernel_RingExitOp<"ring.commit"> {
  let summary = "producer: hand a filled stage to the consumers";
  let description = [{
    Hands on the stages an `attnk.ring.acquire` returned (same rings, same order). For a stage
    filled by threads it is a `fence.proxy.async` (so WGMMA's async proxy sees the writes) and
    one arrival on `full[stage]`. For a stage acquired with `expect_tx` (filled by TMA) the
    acquire made the arrival and the copies complete the barrier: the commit lowers to nothing
    and only closes the fill, whose bytes the acquire's verifier checks.

    Example: `attnk.ring.commit %k[%st] : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 2>`

    [PTX ISA: mbarrier.arrive](https://docs.nvidia.com/cuda/parallel-thread-execution/#parallel-synchronization-and-communication-instructions-mbarrier-arrive)
  }];
}

def AttnKernel_RingWaitOp : AttnKernel_RingEnterOp<"ring.wait"> {
  let summary = "consumer: wait until a stage is full and take it to read";
  let description = [{
    Waits on `full[stage]` with the given phase parity and returns the stage to read, one per
    ring. The stages must be handed back by exactly one `attnk.ring.release` of the same rings
    later in the same block, and no op after that release may use them: a stage is released
    only after the last op that reads it (checked by the verifier). `phase` is required;
    `expect_tx` is the acquire's.

    Example:
    ```mlir
    %st = attnk.ring.wait %k[%i] phase %ph : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 2>
    %s = attnk.wgmma %q, %st, %acc : ...
    attnk.ring.release %k[%st] : !attnk.ring<...>
    ```

    [PTX ISA: mbarrier.try_wait.parity](https://docs.nvidia.com/cuda/parallel-thread-execution/#parallel-synchronization-and-communication-instructions-mbarrier-test-wait-try-wait)
  }];
}

def AttnKernel_RingReleaseOp : AttnKernel_RingExitOp<"ring.release"> {
  let summary = "consumer: hand a read stage back to the producer";
  let description = [{
    Hands back the stages an `attnk.ring.wait` returned: an arrival on `empty[stage]` (one per
    consumer warpgroup) — or, with `named_barrier = B`, when the readers are the producer's own
    threads (the ring's consumers are the producer role's threads, which converted the stage),
    `bar.sync B` over those threads: after it the producer refills the stage without waiting
    (`ring.acquire` without `phase`).

    Example: `attnk.ring.release %k[%st] : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 2>`

    [PTX ISA: mbarrier.arrive](https://docs.nvidia.com/cuda/parallel-thread-execution/#parallel-synchronization-and-communication-instructions-mbarrier-arrive),
    [bar.sync](https://docs.nvidia.com/cuda/parallel-thread-execution/#parallel-synchronization-and-communication-instructions-bar)
  }];
  let arguments = (ins Variadic<AttnKernel_RingType>:$rings,
                       Variadic<AttnKernel_StageType>:$buffers,
                       OptionalAttr<I64Attr>:$named_barrier);
}

def AttnKernel_SubtileOp : AttnKernel_Op<"subtile", [Pure]> {
  let summary = "a band of rows of a stage";
  let description = [{
    Rows `[index · R, (index + 1) · R)` of a stage whose tile is made of stacked R-row tiles
    stored one after the other (R: the result's rows; e.g. the K and V halves of a K/V stage,
    or one TMA box of a tile): same columns, element type and swizzle, at byte offset
    `index · R · row bytes`. R must be a multiple of 8 when the stage is swizzled (whole
    swizzle atoms). Lowered to that offset.

    Example: `%v = attnk.subtile %st[1] : !attnk.stage<256x128xi8, none> -> !attnk.stage<128x128xi8, none>`
  }];
  let arguments = (ins AttnKernel_StageType:$source, I64Attr:$index);
  let results = (outs AttnKernel_StageType:$result);
  let assemblyFormat = [{
    $source `[` $index `]` attr-dict `:` qualified(type($source)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def AttnKernel_TmaLoadOp : AttnKernel_Op<"tma_load", [AttrSizedOperandSegments]> {
  let summary = "TMA copy of a tile from global memory into a ring stage";
  let description = [{
    Copies the tile of the destination stage from the tensor map's tensor, completing on the
    stage's `full` barrier
    (`cp.async.bulk.tensor.*.shared::cluster.global.mbarrier::complete_tx::bytes`). The
    destination is a stage that an `attnk.ring.acquire` with `expect_tx` returned, or an
    `attnk.subtile` of one (the K or V half of a K/V stage, one box's rows): its bytes count
    toward the acquire's `expect_tx`. The tile is copied one box per `box cols` of its columns
    (column block after column block, as the swizzled layout of `box cols` stores them) and per
    `box rows` of its rows. The coordinates are the tile's start, innermost dimension last, one
    per box dimension. The addressing attribute says how rows are found:

    * `#attnk.addressing<contiguous>`: as given;
    * `#attnk.addressing<paged, page = P>`: the row coordinate (the second innermost non-unit
      box dimension) is a logical token position; `block_table` ([batch, logical page], i32)
      gives the physical page — read where the copies are issued — or `pages` names the
      physical page of each band of `box rows` rows, read earlier (`attnk.page_lookup`: a
      producer loads the entries of a tile before the wait that precedes its copies);
    * `#attnk.addressing<gathered>`: `indices` (i32) names the token of each row.

    Example (a contiguous K tile and a paged one):
    ```mlir
    attnk.tma_load %kmap[%b, %row, %h, %c0] #attnk.addressing<contiguous> into %st
        : !attnk.tensor_map<1x128x1x128xi8, swizzle_128b>, !attnk.stage<128x128xi8, swizzle_128b>
    attnk.tma_load %kmap[%b, %row, %h, %c0] #attnk.addressing<paged, page = 64> into %st
        block_table(%bt : memref<?x?xi32>)
        : !attnk.tensor_map<1x64x1x128xi8, swizzle_128b>, !attnk.stage<128x128xi8, swizzle_128b>
    attnk.tma_load %kmap[%b, %row, %h, %c0] #attnk.addressing<paged, page = 64> into %st
        pages(%p0, %p1) : !attnk.tensor_map<1x64x1x128xi8, swizzle_128b>, !attnk.stage<128x128xi8, swizzle_128b>
    ```

    [PTX ISA: cp.async.bulk.tensor](https://docs.nvidia.com/cuda/parallel-thread-execution/#data-movement-and-conversion-instructions-cp-async-bulk-tensor)
  }];
  let arguments = (ins AttnKernel_TensorMapType:$map, Variadic<I32>:$coords,
                       AttnKernel_StageType:$dest, AttnKernel_AddressingAttr:$addressing,
                       Optional<MemRefRankOf<[I32], [2]>>:$blockTable,
                       Optional<AnyTypeOf<[MemRefOf<[I32]>, VectorOfRankAndType<[1], [I32]>]>>:$indices,
                       Variadic<I32>:$pages);
  let assemblyFormat = [{
    $map `[` $coords `]` qualified($addressing) `into` $dest
    (`block_table` `(` $blockTable^ `:` qualified(type($blockTable)) `)`)?
    (`pages` `(` $pages^ `)`)?
    (`indices` `(` $indices^ `:` qualified(type($indices)) `)`)?
    attr-dict `:` qualified(type($map)) `,` qualified(type($dest))
  }];
  let hasVerifier = 1;
}

def AttnKernel_PageLookupOp : AttnKernel_Op<"page_lookup"> {
  let summary = "the physical page of a logical token of a paged K/V cache";
  let description = [{
    `block_table[b][min(token / P, max_blocks − 1)]`: the page of the pool that holds token
    `token` (≥ 0) of sequence `b`, the block index clamped into the table's row so that no entry
    outside it is read. `max_blocks` is the table's second extent, or the `blocks` operand where
    that extent is dynamic (the kernel's `kv_len / P`). One global load of the (invariant) table,
    issued where the op is: a producer looks a tile's pages up a step ahead and hands them to
    `attnk.tma_load … pages(...)` or to `attnk.forward.key_scales`, so that no load waits for a
    table entry.

    Example: `%pg = attnk.page_lookup %table[%b, %tok] page = 16 : memref<?x80xi32>`
  }];
  let arguments = (ins MemRefRankOf<[I32], [2]>:$table, I32:$batch, I32:$token,
                       Optional<I32>:$blocks, I64Attr:$pageSize);
  let results = (outs I32:$page);
  let assemblyFormat = [{
    $table `[` $batch `,` $token `]` `page` `=` $pageSize (`blocks` `(` $blocks^ `)`)? attr-dict
    `:` qualified(type($table))
  }];
  let hasVerifier = 1;
}

#endif // ATTNK_PIPELINE_OPS_TD
