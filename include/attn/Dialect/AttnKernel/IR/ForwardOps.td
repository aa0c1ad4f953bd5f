//===- ForwardOps.td - the forward kernel's frame and roles --*- tablegen -*-===//
//
// What this file is: the ops of the forward-attention kernel (`<f>_decode`, `<f>_decode_2cta`,
// `<f>_prefill`) that are not yet spelled in the pipeline and compute ops: the CTA's work
// (`attnk.forward.work`), the prologue (`attnk.forward.prologue`) and one op per warp role
// (`attnk.forward.producer`, `attnk.forward.consumer`) and the consumer's epilogue
// (`attnk.forward.merge_warpgroups`, `attnk.forward.epilogue`). Each carries the kernel's resolved
// configuration (`plan`, a dictionary written by attn-build-kernel) and takes the kernel's
// parameters, rings and work values as operands.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNK_FORWARD_OPS_TD
#define ATTNK_FORWARD_OPS_TD

def AttnKernel_ForwardWorkOp : AttnKernel_Op<"forward.work"> {
  let summary = "the work of a forward-attention CTA: thread id and grid coordinates";
  let description = [{
    The thread's id in the CTA and, without a persistent grid (`plan.persistent` false), the
    CTA's work: its KV split (prefill: 0), first query token, head group, batch element, KV
    head and first packed query head — read from `ctaid` (prefill with a causal mask takes the
    query chunks in reverse order). With a persistent grid only the thread id: every work item
    sets up its own ids in the roles.

    Example: `%tid, %split, %q0, %grp, %b, %hkv, %head = attnk.forward.work {plan = {...}} : i32, i32, i32, i32, i32, i32, i32`
  }];
  let arguments = (ins DictionaryAttr:$plan);
  let results = (outs Variadic<I32>:$work);
  let assemblyFormat = "attr-dict `:` type($work)";
  let hasVerifier = 1;
}

class AttnKernel_ForwardStepOp<string mnemonic, list<Trait> traits = []>
    : AttnKernel_Op<mnemonic, !listconcat(traits, [AttrSizedOperandSegments])> {
  let arguments = (ins Variadic<AnyType>:$params, Variadic<AttnKernel_RingType>:$rings,
                       Variadic<I32>:$work, DictionaryAttr:$plan);
  let assemblyFormat = [{
    `params` `(` $params `:` type($params) `)` `rings` `(` $rings `:` qualified(type($rings)) `)`
    `work` `(` $work `)` attr-dict
  }];
  let hasVerifier = 1;
}

def AttnKernel_ForwardPrologueOp : AttnKernel_ForwardStepOp<"forward.prologue"> {
  let summary = "the forward kernel's prologue: key tiles, barriers, first loads, queries";
  let description = [{
    Before the roles start: the CTA's key tiles (without a persistent grid; results: the
    sequence length, the first tile and the tile count, and with a ragged batch — the plan's
    `ragged`, `cu_seqlens_q` — the sequence's first packed query row and its query count),
    thread 0's initialization of the rings'
    mbarriers and the first TMA loads, the query tile's copy into shared memory (without a
    persistent grid), `fence.proxy.async` and a CTA barrier. Operands: the kernel's parameters,
    its rings and the `attnk.forward.work` values.
  }];
  let results = (outs Variadic<I32>:$tiles);
  let assemblyFormat = [{
    `params` `(` $params `:` type($params) `)` `rings` `(` $rings `:` qualified(type($rings)) `)`
    `work` `(` $work `)` attr-dict (`:` type($tiles)^)?
  }];
}

class AttnKernel_ForwardProducerStepOp<string mnemonic>
    : AttnKernel_Op<mnemonic, [AttrSizedOperandSegments]> {
  let arguments = (ins Variadic<AnyType>:$args, Variadic<AnyType>:$params,
                       Variadic<AttnKernel_RingType>:$rings, Variadic<I32>:$work,
                       DictionaryAttr:$plan);
  let hasVerifier = 1;
}

def AttnKernel_ForwardKeyScalesOp : AttnKernel_ForwardProducerStepOp<"forward.key_scales"> {
  let summary = "transitional: the K and V scales of one key, loaded by a producer thread";
  let description = [{
    Loads the K and V scales of key `token` of the CTA's batch element and KV head (clamped
    into the sequence, so that the address is valid; V's is 1 where the consumers apply V's
    scale in their epilogue) from the `k_scale` / `v_scale` parameters, as the granularity of
    each scheme indexes them. A paged cache (the plan's `pageSize`) takes a second argument,
    the page of the clamped key (`attnk.page_lookup`, looked up a tile ahead), so that the
    scale loads do not wait for the block table. Results: the two scales (zeros for a cache without scales),
    then, for an asymmetric cache (the plan's `zeroPoints`), the K and V zero points as f32,
    read at the same (clamped) row as the scales.
    Transitional: the scales are to become scale operands of the producer's
    `attnk.convert_tile` and a ring of their own; until then this op and
    `attnk.forward.stage_scales` carry them, with the kernel's `plan`.

    Example: `%ks, %vs = attnk.forward.key_scales args(%tok : i32) params(...) rings(...) work(...) {plan = {...}} : f32, f32`
  }];
  let results = (outs Variadic<F32>:$scales);
  let assemblyFormat = [{
    `args` `(` $args `:` type($args) `)` `params` `(` $params `:` type($params) `)`
    `rings` `(` $rings `:` qualified(type($rings)) `)` `work` `(` $work `)` attr-dict
    `:` type($scales)
  }];
}

def AttnKernel_ForwardStageScalesOp : AttnKernel_ForwardProducerStepOp<"forward.stage_scales"> {
  let summary = "transitional: a converted tile's scales, staged for the consumers";
  let description = [{
    Threads below `tile_n` store their key's K scale (times softmax_scale · log2(e); the bare
    factor for a bf16 cache) and V scale into the scale buffer of conversion stage `buf`, which
    the consumers read beside the converted tile (`args`: K scale, V scale, buf).
    Transitional, as `attnk.forward.key_scales`.

    Example: `attnk.forward.stage_scales args(%ks, %vs, %buf : f32, f32, i32) params(...) rings(...) work(...) {plan = {...}}`
  }];
  let assemblyFormat = [{
    `args` `(` $args `:` type($args) `)` `params` `(` $params `:` type($params) `)`
    `rings` `(` $rings `:` qualified(type($rings)) `)` `work` `(` $work `)` attr-dict
  }];
}

def AttnKernel_ForwardProducerOp : AttnKernel_ForwardStepOp<"forward.producer"> {
  let summary = "transitional: the producer role of a persistent, bf16 or zero-point kernel";
  let description = [{
    Transitional: the producer of the forward kernels whose role region is not yet spelled in
    ring, TMA and conversion ops — persistent grids (prefill), bf16 caches (TMA straight into
    the stages the WGMMAs read), asymmetric caches (zero points staged per tile), 8-bit K
    read from the stages and int8 K copied into wider rows (head_dim 64 with int8 queries). Every other forward kernel's producer region is an `scf.for` over
    the CTA's key tiles of `attnk.ring.wait` / `ring.acquire` / `attnk.convert_tile` /
    `ring.commit` / `ring.release` and the refill `ring.acquire` (expect_tx) /
    `attnk.tma_load` / `ring.commit` (attn-build-kernel).

    The producer warpgroups' program: TMA loads of the CTA's K/V tiles into the stage ring,
    their conversion into the conversion ring (int8 / e4m3 → bf16 or f16, copies of int8 K,
    transposes of 8-bit V), the staged scales — over the work items of a persistent grid — and
    the producers' part of a cluster merge. Operands: the kernel's parameters, its rings and the
    work values of `attnk.forward.work` and `attnk.forward.prologue`.
  }];
}

def AttnKernel_ForwardConsumerOp : AttnKernel_ForwardStepOp<"forward.consumer"> {
  let summary = "transitional: the consumer warpgroups' tile loop (GEMMs, online softmax)";
  let description = [{
    Transitional: the consumer warpgroups' main loop, not yet spelled in ring, WGMMA and
    softmax ops — per K/V tile the wait on the stage or conversion ring, S = Q·Kᵀ, masks, the
    online softmax, the rescale of O and O += P·V, each stage released after the GEMM that read
    it.

    Without a persistent grid its results are the warpgroup's loop state, which
    `attnk.softmax_finish` turns into the final state the epilogue ops take: O
    (`!attnk.acc<64xDxf32>`, unnormalized), the row maxima and the row sums of the thread's own
    columns (`vector<64xf32>`, base-2 logits), O's unit (the V scale O is kept in with per-tile V
    scales, else 1) and the thread's rows (`!attnk.rows`: its consumer warpgroup, fragment
    rows, query tokens and heads; `partial` for prefill). With a persistent grid
    it has no results and runs the whole role, finish and epilogue included, over the CTA's work
    items.
    Operands: the kernel's parameters, its rings and the work values of `attnk.forward.work`
    and `attnk.forward.prologue`.

    Example:
    ```mlir
    %o, %m, %l, %unit, %rows = attnk.forward.consumer params(...) rings(...) work(...) {plan = #plan}
        : !attnk.acc<64x128xf32>, vector<64xf32>, vector<64xf32>, f32, !attnk.rows
    ```
  }];
  let results = (outs Variadic<AnyType>:$state);
  let assemblyFormat = [{
    `params` `(` $params `:` type($params) `)` `rings` `(` $rings `:` qualified(type($rings)) `)`
    `work` `(` $work `)` attr-dict (`:` qualified(type($state))^)?
  }];
  let extraClassDeclaration = [{
    /// The final state's parts (null with a persistent grid).
    ::mlir::Value getOutput() { return getState().empty() ? Value() : getState()[0]; }
    ::mlir::Value getRowMax() { return getState().empty() ? Value() : getState()[1]; }
    ::mlir::Value getRowSum() { return getState().empty() ? Value() : getState()[2]; }
    ::mlir::Value getUnit() { return getState().empty() ? Value() : getState()[3]; }
    ::mlir::Value getRows() { return getState().empty() ? Value() : getState()[4]; }
  }];
}

def AttnKernel_ForwardMergeWarpgroupsOp : AttnKernel_Op<"forward.merge_warpgroups", [
    AllTypesMatch<["acc", "result"]>,
    AllTypesMatch<["rowMax", "rowSum", "newMax", "newSum"]>]> {
  let summary = "merge the partial states of two consumer warpgroups through shared memory";
  let description = [{
    Decode with two consumer warpgroups over alternate key tiles: each holds a partial
    (O, m, l) in the same fragment layout. After a barrier of both (every stage read), warpgroup
    1 parks its state in the stage ring `ring` (idle once both loops are done; thread-major,
    conflict-free), a second barrier, and warpgroup 0 merges:
    `m = max(m₀, m₁)`, `l = 2^(m₀−m)·l₀ + 2^(m₁−m)·l₁`, `O = 2^(m₀−m)·O₀ + 2^(m₁−m)·O₁`.
    The results are meaningful in warpgroup 0 (`rows`: the loop's rows of the thread, whose
    consumer warpgroup and index in it choose who parks, who merges and where).

    Example:
    ```mlir
    %o2, %m2, %l2 = attnk.forward.merge_warpgroups %o, %m, %l rows(%rows : !attnk.rows) in %st
        {plan = #plan} : !attnk.acc<64x128xf32>, vector<64xf32>, !attnk.ring<256x128xi8, ...>
    ```

    [PTX ISA: bar.sync](https://docs.nvidia.com/cuda/parallel-thread-execution/#parallel-synchronization-and-communication-instructions-bar)
  }];
  let arguments = (ins AttnKernel_AccType:$acc, AttnKernel_RowVector:$rowMax,
                       AttnKernel_RowVector:$rowSum, AttnKernel_RowsType:$rows,
                       AttnKernel_RingType:$ring, DictionaryAttr:$plan);
  let results = (outs AttnKernel_AccType:$result, AttnKernel_RowVector:$newMax,
                      AttnKernel_RowVector:$newSum);
  let assemblyFormat = [{
    $acc `,` $rowMax `,` $rowSum `rows` `(` $rows `:` qualified(type($rows)) `)` `in` $ring
    attr-dict `:` qualified(type($acc)) `,` qualified(type($rowMax)) `,` qualified(type($ring))
  }];
  let hasVerifier = 1;
}

def AttnKernel_ForwardEpilogueOp : AttnKernel_Op<"forward.epilogue", [
    AttrSizedOperandSegments, AllTypesMatch<["rowMax", "rowSum"]>]> {
  let summary = "transitional: the consumer's epilogue (normalize and store, or split merge)";
  let description = [{
    The end of the consumer role without a persistent grid, on its final state (O, m, l, O's
    unit; after `attnk.forward.merge_warpgroups` where there is one). With one KV split (the
    `num_splits` parameter, at run time): O · unit / l (0 for a row without keys; per-head and
    per-tensor V scales applied here) stored as bf16 to the output rows the warpgroup owns
    (`rows`, the loop's: decode warpgroup 0's; prefill each warpgroup's, through its query
    tile in the ring memory at `ring`'s base). With several: launched in a cluster of the splits, the splits merge through
    distributed shared memory and the leader's share of the merged output is stored; otherwise
    the split's partial (O, m, l) goes to the workspace for the combine kernel. Then (decode)
    the trigger of the programmatic dependents. The launch parameters it reads (`out`,
    `workspace`, `num_splits`, `v_scale`, `q_len`) are the enclosing `attnk.kernel`'s; `work`:
    the values of `attnk.forward.work` and `attnk.forward.prologue`. With `lse` (decode, [B,
    q_len, Hq] f32) the row's natural log-sum-exp `(m + log2 l) · ln 2` (−inf where l is 0)
    is stored beside O (one split; the cluster merge: of the merged rows, by rank 0); split
    partials leave it to the combine kernel.

    Transitional: the run-time choice between the store, the cluster merge and the partial is
    one op; `attnk.rescale_output`, `attnk.merge.cluster` and `attnk.store_tile` are to take
    its parts.

    Example:
    ```mlir
    attnk.forward.epilogue %o, %m, %l, %unit rows(%rows : !attnk.rows) in %st work(%w#0, ...)
        {plan = #plan} : !attnk.acc<64x128xf32>, vector<64xf32>, !attnk.ring<256x128xi8, ...>
    ```

    [PTX ISA: griddepcontrol](https://docs.nvidia.com/cuda/parallel-thread-execution/#parallel-synchronization-and-communication-instructions-griddepcontrol)
  }];
  let arguments = (ins AttnKernel_AccType:$acc, AttnKernel_RowVector:$rowMax,
                       AttnKernel_RowVector:$rowSum, F32:$unit, AttnKernel_RowsType:$rows,
                       AttnKernel_RingType:$ring, Variadic<I32>:$work,
                       Arg<Optional<MemRefRankOf<[F32], [3]>>, "log-sum-exp [B, q_len, Hq]",
                           [MemWrite]>:$lse,
                       DictionaryAttr:$plan);
  let assemblyFormat = [{
    $acc `,` $rowMax `,` $rowSum `,` $unit `rows` `(` $rows `:` qualified(type($rows)) `)` `in` $ring
    `work` `(` $work `)` (`lse` `(` $lse^ `:` type($lse) `)`)? attr-dict `:` qualified(type($acc))
    `,` qualified(type($rowMax)) `,` qualified(type($ring))
  }];
  let hasVerifier = 1;
}

#endif // ATTNK_FORWARD_OPS_TD
