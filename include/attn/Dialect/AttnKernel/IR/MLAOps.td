//===- MLAOps.td - the MLA decode kernel's frame and roles ---*- tablegen -*-===//
//
// What this file is: the ops of the MLA decode kernel (`<f>_mla`, attn.mla_decode) that are not
// yet spelled in the pipeline and compute ops: the CTA's work (`attnk.mla.work`), the prologue
// (`attnk.mla.prologue`), one op per warp role (`attnk.mla.producer`, `attnk.mla.consumers`)
// and the cluster's closing barrier (`attnk.mla.cluster_sync`). They are transitional: each is
// lowered by calling the existing MLA builders (lib/Conversion/AttnToNVVM/MLAKernel.cpp). Each
// step carries the kernel's resolved configuration (`plan`, a dictionary written by
// attn-build-kernel) and takes the kernel's parameters, rings and work values as operands.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNK_MLA_OPS_TD
#define ATTNK_MLA_OPS_TD

def AttnKernel_MLAWorkOp : AttnKernel_Op<"mla.work", [Pure]> {
  let summary = "the work of an MLA decode CTA: thread id, head group, query token, batch";
  let description = [{
    The thread's id in the CTA and the CTA's work, read from `ctaid`: its group of 64 query
    heads (x), its query token (y) and its batch element (z).

    Example: `%tid, %grp, %qi, %b = attnk.mla.work {plan = {...}}`
  }];
  let arguments = (ins DictionaryAttr:$plan);
  let results = (outs I32:$tid, I32:$group, I32:$token, I32:$batch);
  let assemblyFormat = "attr-dict";
}

class AttnKernel_MLAStepOp<string mnemonic, list<Trait> traits = []>
    : AttnKernel_Op<mnemonic, !listconcat(traits, [AttrSizedOperandSegments])> {
  let arguments = (ins Variadic<AnyType>:$params, Variadic<AttnKernel_RingType>:$rings,
                       Variadic<I32>:$work, DictionaryAttr:$plan);
  let assemblyFormat = [{
    `params` `(` $params `:` type($params) `)` `rings` `(` $rings `:` qualified(type($rings)) `)`
    `work` `(` $work `)` attr-dict
  }];
  let hasVerifier = 1;
}

def AttnKernel_MLAPrologueOp : AttnKernel_MLAStepOp<"mla.prologue"> {
  let summary = "the MLA kernel's prologue: keys, barriers, query tile, CTA barrier";
  let description = [{
    Before the roles start: with `plan.crossover`, the CTA's rank in its 2-CTA cluster and the
    address of the peer's shared memory; the keys of the CTA's query token (its length from
    `seq_lens`, the last key it sees, the entries — top-k indices or cache positions — and
    their blocks of 64); thread 0's initialization of the mbarriers of the key/value ring
    (full, remote, empty), of P's hand-over and of the row sums; the query tile's copy into
    shared memory; `fence.proxy.async` and a CTA barrier (a cluster barrier with crossover).
    Operands: the kernel's 9 parameters, its rings and the `attnk.mla.work` values. Results:
    length, limit, entries, blocks, then (crossover) rank and peer base.
  }];
  let results = (outs Variadic<I32>:$keys);
  let assemblyFormat = [{
    `params` `(` $params `:` type($params) `)` `rings` `(` $rings `:` qualified(type($rings)) `)`
    `work` `(` $work `)` attr-dict `:` type($keys)
  }];
}

def AttnKernel_MLAProducerOp : AttnKernel_MLAStepOp<"mla.producer"> {
  let summary = "the MLA kernel's producer role: gather, dequantize, interleave the key blocks";
  let description = [{
    The producer warpgroup's program: for each block of 64 keys it gathers the tokens (top-k
    entries or cache positions) with 16-byte loads, dequantizes the e4m3 part with its tile
    scale into bf16 (or copies a bf16 cache), copies the RoPE part and writes one stage of the
    key/value ring and the block's key mask — with `plan.crossover`, its half of the block
    into both CTAs' stages (st.async to the peer). Its register budget is the warp
    specialization's producer role. Operands: the kernel's parameters, its rings, the
    `attnk.mla.work` and `attnk.mla.prologue` values.
  }];
}

def AttnKernel_MLAConsumersOp : AttnKernel_MLAStepOp<"mla.consumers"> {
  let summary = "the MLA kernel's consumer roles: S, softmax, P·V, epilogue";
  let description = [{
    The two consumer warpgroups' program. Consumer 0: S = Q·Kᵀ on WGMMA, the online softmax,
    P into shared memory for consumer 1, O[:, :Dv/2] += P·V; consumer 1: O[:, Dv/2:] += P·V
    from the shared P. Each sets its own register budget (`plan.consumerRegs`,
    `plan.consumer1Regs`; the warp specialization's consumer role keeps the budget the kernel
    enters with). Then both write O / l as bf16. Operands as `attnk.mla.producer`.
  }];
}

def AttnKernel_MLAClusterSyncOp : AttnKernel_Op<"mla.cluster_sync"> {
  let summary = "the 2-CTA cluster's closing barrier";
  let description = [{
    `barrier.cluster.arrive` and `.wait` after the roles: with crossover the peer may still
    write into (or arrive on) this CTA's shared memory until it is done.
  }];
  let assemblyFormat = "attr-dict";
}

#endif // ATTNK_MLA_OPS_TD
