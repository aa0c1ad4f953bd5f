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
    kernel's dynamic shared memory, aligned to 1024 bytes (the 128-byte swizzle's atom); it is
    decided by the shared-memory plan of the kernel. Lowered to the shared-memory address of
    the first stage (`!llvm.ptr<3>`).

    Example:
    ```mlir
    %k = attnk.ring.alloc at 8192 : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 2>
    ```

    [PTX ISA: mbarrier.init](https://docs.nvidia.com/cuda/parallel-thread-execution/#parallel-synchronization-and-communication-instructions-mbarrier-init)
  }];
  let arguments = (ins OptionalAttr<I64Attr>:$offset);
  let results = (outs AttnKernel_RingType:$ring);
  let assemblyFormat = "(`at` $offset^)? attr-dict `:` qualified(type($ring))";
}

class AttnKernel_RingEnterOp<string mnemonic>
    : AttnKernel_Op<mnemonic, [
        TypesMatchWith<"the stage is one of the ring's", "ring", "buffer",
                       "::llvm::cast<RingType>($_self).getStageType()">]> {
  let arguments = (ins AttnKernel_RingType:$ring, I32:$stage, I1:$phase);
  let results = (outs AttnKernel_StageType:$buffer);
  let assemblyFormat = [{
    $ring `[` $stage `]` `phase` $phase attr-dict `:` qualified(type($ring))
  }];
  let hasVerifier = 1;
}

class AttnKernel_RingExitOp<string mnemonic> : AttnKernel_Op<mnemonic, [
    TypesMatchWith<"the stage is one of the ring's", "ring", "buffer",
                   "::llvm::cast<RingType>($_self).getStageType()">]> {
  let arguments = (ins AttnKernel_RingType:$ring, AttnKernel_StageType:$buffer);
  let assemblyFormat = "$ring `,` $buffer attr-dict `:` qualified(type($ring))";
  let hasVerifier = 1;
}

def AttnKernel_RingAcquireOp : AttnKernel_RingEnterOp<"ring.acquire"> {
  let summary = "producer: wait until a stage is empty and take it to fill";
  let description = [{
    Waits on `empty[stage]` with the given phase parity (the first pass over the ring passes at
    once) and returns the stage to fill. The stage must be handed on by exactly one
    `attnk.ring.commit` of the same ring later in the same block, and no op after that commit
    may use it (checked by the verifier).

    Example:
    ```mlir
    %st = attnk.ring.acquire %k[%i] phase %ph : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 2>
    attnk.tma_load %kmap[%c0, %row, %h, %c0] #attnk.addressing<contiguous> into %st : ...
    attnk.ring.commit %k, %st : !attnk.ring<...>
    ```

    [PTX ISA: mbarrier.try_wait.parity](https://docs.nvidia.com/cuda/parallel-thread-execution/#parallel-synchronization-and-communication-instructions-mbarrier-test-wait-try-wait)
  }];
}

def AttnKernel_RingCommitOp : AttnKernel_RingExitOp<"ring.commit"> {
  let summary = "producer: hand a filled stage to the consumers";
  let description = [{
    Arrives on `full[stage]` of the stage an `attnk.ring.acquire` returned. For a stage filled
    by TMA the arrival carries `expect_tx` of the stage's bytes (so the barrier completes when
    the copies land); for a stage written by threads it follows a `fence.proxy.async` (so WGMMA's
    async proxy sees the writes).

    Example: `attnk.ring.commit %k, %st : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 2>`

    [PTX ISA: mbarrier.arrive.expect_tx](https://docs.nvidia.com/cuda/parallel-thread-execution/#parallel-synchronization-and-communication-instructions-mbarrier-arrive)
  }];
}

def AttnKernel_RingWaitOp : AttnKernel_RingEnterOp<"ring.wait"> {
  let summary = "consumer: wait until a stage is full and take it to read";
  let description = [{
    Waits on `full[stage]` with the given phase parity and returns the stage to read. The stage
    must be handed back by exactly one `attnk.ring.release` of the same ring later in the same
    block, and no op after that release may use it: a stage is released only after the last op
    that reads it (checked by the verifier).

    Example:
    ```mlir
    %st = attnk.ring.wait %k[%i] phase %ph : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 2>
    %s = attnk.wgmma %q, %st, %acc : ...
    attnk.ring.release %k, %st : !attnk.ring<...>
    ```

    [PTX ISA: mbarrier.try_wait.parity](https://docs.nvidia.com/cuda/parallel-thread-execution/#parallel-synchronization-and-communication-instructions-mbarrier-test-wait-try-wait)
  }];
}

def AttnKernel_RingReleaseOp : AttnKernel_RingExitOp<"ring.release"> {
  let summary = "consumer: hand a read stage back to the producer";
  let description = [{
    Arrives on `empty[stage]` (one arrival per consumer warpgroup) of the stage an
    `attnk.ring.wait` returned.

    Example: `attnk.ring.release %k, %st : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 2>`

    [PTX ISA: mbarrier.arrive](https://docs.nvidia.com/cuda/parallel-thread-execution/#parallel-synchronization-and-communication-instructions-mbarrier-arrive)
  }];
}

def AttnKernel_TmaLoadOp : AttnKernel_Op<"tma_load", [AttrSizedOperandSegments]> {
  let summary = "TMA copy of a tile from global memory into a ring stage";
  let description = [{
    Copies the tile of the destination stage from the tensor map's tensor, one box per
    `box cols` of the stage's columns, completing on the stage's `full` barrier
    (`cp.async.bulk.tensor.*.shared::cluster.global.mbarrier::complete_tx::bytes`). The
    coordinates are the box's start, innermost dimension last, one per box dimension. The
    addressing attribute says how rows are found:

    * `#attnk.addressing<contiguous>`: as given;
    * `#attnk.addressing<paged, page = P>`: the row coordinate (the second innermost non-unit
      box dimension) is a logical token position; `block_table` ([batch, logical page], i32)
      gives the physical page;
    * `#attnk.addressing<gathered>`: `indices` (i32) names the token of each row.

    Example (a contiguous K tile and a paged one):
    ```mlir
    attnk.tma_load %kmap[%b, %row, %h, %c0] #attnk.addressing<contiguous> into %st
        : !attnk.tensor_map<1x128x1x128xi8, swizzle_128b>, !attnk.stage<128x128xi8, swizzle_128b>
    attnk.tma_load %kmap[%b, %row, %h, %c0] #attnk.addressing<paged, page = 64> into %st
        block_table(%bt : memref<?x?xi32>)
        : !attnk.tensor_map<1x64x1x128xi8, swizzle_128b>, !attnk.stage<128x128xi8, swizzle_128b>
    ```

    [PTX ISA: cp.async.bulk.tensor](https://docs.nvidia.com/cuda/parallel-thread-execution/#data-movement-and-conversion-instructions-cp-async-bulk-tensor)
  }];
  let arguments = (ins AttnKernel_TensorMapType:$map, Variadic<I32>:$coords,
                       AttnKernel_StageType:$dest, AttnKernel_AddressingAttr:$addressing,
                       Optional<MemRefRankOf<[I32], [2]>>:$blockTable,
                       Optional<AnyTypeOf<[MemRefOf<[I32]>, VectorOfRankAndType<[1], [I32]>]>>:$indices);
  let assemblyFormat = [{
    $map `[` $coords `]` qualified($addressing) `into` $dest
    (`block_table` `(` $blockTable^ `:` qualified(type($blockTable)) `)`)?
    (`indices` `(` $indices^ `:` qualified(type($indices)) `)`)?
    attr-dict `:` qualified(type($map)) `,` qualified(type($dest))
  }];
  let hasVerifier = 1;
}

#endif // ATTNK_PIPELINE_OPS_TD
