// The forward kernel's kernel level refuses to lower what it cannot build, on the op: a ring
// without its shared-memory offset, a plan with a missing entry or outside what the builders
// build, a step without the launch ABI's parameters.
// RUN: attn-opt %s -split-input-file -verify-diagnostics --convert-attnk-to-nvvm

gpu.module @m {
  attnk.kernel @k(%kmap: !attnk.tensor_map<1x128x1x128xi8, none>) threads = 384 {
    // expected-error @+2 {{needs its shared-memory offset (`at`) to be lowered}}
    // expected-error @+1 {{failed to legalize operation 'attnk.ring.alloc'}}
    %st = attnk.ring.alloc : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>
  }
}

// -----

gpu.module @m {
  attnk.kernel @k() threads = 384 {
    // expected-error @+2 {{forward plan without a valid 'batch' entry}}
    // expected-error @+1 {{failed to legalize operation 'attnk.forward.work'}}
    %tid = attnk.forward.work {plan = {persistent = true}} : i32
  }
}

// -----

gpu.module @m {
  attnk.kernel @k() threads = 384 {
    // expected-error @+2 {{forward plan outside what the kernel builds}}
    // expected-error @+1 {{failed to legalize operation 'attnk.forward.work'}}
    %tid = attnk.forward.work {plan = {alibi = false, batch = 16 : i64, causal = true, consumerRegs = 200 : i64, consumerWGs = 2 : i64, ctasPerSm = 1 : i64, fp8 = false, fullI8 = false, hadamard = false, headDim = 128 : i64, kBlock = 1 : i64, kGran = "per_token_head", kv = "i8", kvHeads = 1 : i64, kvLen = 8192 : i64, mode = "half_int8", name = "d", overlap = false, pack = 16 : i64, persistent = true, pingpong = false, prefill = false, producerRegs = 56 : i64, producerWGs = 2 : i64, qBlock = 1 : i64, qBuffers = 1 : i64, qChunk = 1 : i64, qGran = "per_token_head", qHeads = 16 : i64, qI8 = false, qLen = 3 : i64, seqLens = true, softmaxScale = 0.088388347648311, splitKv = 0 : i64, stages = 2 : i64, tileN = 96 : i64, tmaBoxRows = 0 : i64, unsignedCodes = false, vBlock = 1 : i64, vGran = "per_token_head", wideBatch = false, zeroPoints = false}} : i32
  }
}

// -----

gpu.module @m {
  attnk.kernel @k(%kmap: !attnk.tensor_map<1x128x1x128xi8, none>, %vmap: !attnk.tensor_map<1x128x1x128xi8, none>) threads = 512 {
    %tid = attnk.forward.work {plan = {alibi = false, batch = 16 : i64, causal = true, consumerRegs = 200 : i64, consumerWGs = 2 : i64, ctasPerSm = 1 : i64, fp8 = false, fullI8 = false, hadamard = false, headDim = 128 : i64, kBlock = 1 : i64, kGran = "per_token_head", kv = "i8", kvHeads = 1 : i64, kvLen = 8192 : i64, mode = "half_int8", name = "d", overlap = false, pack = 16 : i64, persistent = true, pingpong = false, prefill = false, producerRegs = 56 : i64, producerWGs = 2 : i64, qBlock = 1 : i64, qBuffers = 1 : i64, qChunk = 1 : i64, qGran = "per_token_head", qHeads = 16 : i64, qI8 = false, qLen = 3 : i64, seqLens = true, softmaxScale = 0.088388347648311, splitKv = 0 : i64, stages = 2 : i64, tileN = 128 : i64, tmaBoxRows = 0 : i64, unsignedCodes = false, vBlock = 1 : i64, vGran = "per_token_head", wideBatch = false, zeroPoints = false}} : i32
    %st = attnk.ring.alloc at 16384 : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>
    // expected-error @+2 {{takes the forward kernel's 15 parameters and at least one ring}}
    // expected-error @+1 {{failed to legalize operation 'attnk.forward.prologue'}}
    attnk.forward.prologue params(%kmap, %vmap : !attnk.tensor_map<1x128x1x128xi8, none>, !attnk.tensor_map<1x128x1x128xi8, none>) rings(%st : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>) work(%tid) {plan = {alibi = false, batch = 16 : i64, causal = true, consumerRegs = 200 : i64, consumerWGs = 2 : i64, ctasPerSm = 1 : i64, fp8 = false, fullI8 = false, hadamard = false, headDim = 128 : i64, kBlock = 1 : i64, kGran = "per_token_head", kv = "i8", kvHeads = 1 : i64, kvLen = 8192 : i64, mode = "half_int8", name = "d", overlap = false, pack = 16 : i64, persistent = true, pingpong = false, prefill = false, producerRegs = 56 : i64, producerWGs = 2 : i64, qBlock = 1 : i64, qBuffers = 1 : i64, qChunk = 1 : i64, qGran = "per_token_head", qHeads = 16 : i64, qI8 = false, qLen = 3 : i64, seqLens = true, softmaxScale = 0.088388347648311, splitKv = 0 : i64, stages = 2 : i64, tileN = 128 : i64, tmaBoxRows = 0 : i64, unsignedCodes = false, vBlock = 1 : i64, vGran = "per_token_head", wideBatch = false, zeroPoints = false}}
  }
}
