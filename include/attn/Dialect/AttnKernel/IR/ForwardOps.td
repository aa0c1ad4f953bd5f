//===- ForwardOps.td - the forward kernel's frame and roles --*- tablegen -*-===//
//
// What this file is: the ops of the forward-attention kernel (`<f>_decode`, `<f>_decode_2cta`,
// `<f>_prefill`) that are not yet spelled in the pipeline and compute ops: the CTA's work
// (`attnk.forward.work`), the prologue (`attnk.forward.prologue`) and one op per warp role
// (`attnk.forward.producer`, `attnk.forward.consumer`). Each carries the kernel's resolved
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
    sequence length, the first tile and the tile count), thread 0's initialization of the rings'
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
    each scheme indexes them. Results: the two scales (zeros for a cache without scales).
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
  let summary = "the forward kernel's consumer role: GEMMs, online softmax, merge, store";
  let description = [{
    The consumer warpgroups' program: S = Q·Kᵀ, masks, the online softmax, O += P·V, the merge
    of the consumers' (and of a cluster's splits') partial states and the store of the output
    or of the split's partial — over the work items of a persistent grid —, then (decode) the
    trigger of the programmatic dependents. Operands as `attnk.forward.producer`.
  }];
}

#endif // ATTNK_FORWARD_OPS_TD
