// The verifiers of the forward kernel's consumer ops (attnk.forward.consumer,
// attnk.forward.merge_warpgroups, attnk.forward.epilogue): one case per message. The thread's
// rows (`!attnk.rows`) are `partial` exactly for a prefill plan.
// RUN: attn-opt %s -split-input-file -verify-diagnostics

func.func @f(%m: !attnk.tensor_map<1x128x1x128xi8, none>, %i: i32) {
  %st = attnk.ring.alloc at 0 : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>
  // expected-error @+1 {{yields 5 state value(s) with this plan, got 0}}
  attnk.forward.consumer params(%m, %m : !attnk.tensor_map<1x128x1x128xi8, none>, !attnk.tensor_map<1x128x1x128xi8, none>)
      rings(%st : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>)
      work(%i, %i, %i, %i, %i, %i, %i, %i, %i, %i) {plan = {persistent = false}}
  return
}

// -----

func.func @f(%m: !attnk.tensor_map<1x128x1x128xi8, none>, %i: i32) {
  %st = attnk.ring.alloc at 0 : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>
  // expected-error @+1 {{yields 0 state value(s) with this plan, got 5}}
  %s:5 = attnk.forward.consumer params(%m, %m : !attnk.tensor_map<1x128x1x128xi8, none>, !attnk.tensor_map<1x128x1x128xi8, none>)
      rings(%st : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>)
      work(%i) {plan = {persistent = true}} : !attnk.acc<64x128xf32>, vector<64xf32>, vector<64xf32>, f32, !attnk.rows
  return
}

// -----

func.func @f(%m: !attnk.tensor_map<1x128x1x128xi8, none>, %i: i32) {
  %st = attnk.ring.alloc at 0 : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>
  // expected-error @+1 {{takes O as an f32 accumulator, got '!attnk.acc<64x128xi32>'}}
  %s:5 = attnk.forward.consumer params(%m, %m : !attnk.tensor_map<1x128x1x128xi8, none>, !attnk.tensor_map<1x128x1x128xi8, none>)
      rings(%st : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>)
      work(%i, %i, %i, %i, %i, %i, %i, %i, %i, %i) {plan = {persistent = false}}
      : !attnk.acc<64x128xi32>, vector<64xf32>, vector<64xf32>, f32, !attnk.rows
  return
}

// -----

func.func @f(%m: !attnk.tensor_map<1x128x1x128xi8, none>, %i: i32) {
  %st = attnk.ring.alloc at 0 : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>
  // expected-error @+1 {{takes O with the plan's head_dim (128) columns, got 64}}
  %s:5 = attnk.forward.consumer params(%m, %m : !attnk.tensor_map<1x128x1x128xi8, none>, !attnk.tensor_map<1x128x1x128xi8, none>)
      rings(%st : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>)
      work(%i, %i, %i, %i, %i, %i, %i, %i, %i, %i) {plan = {headDim = 128, persistent = false}}
      : !attnk.acc<64x64xf32>, vector<64xf32>, vector<64xf32>, f32, !attnk.rows
  return
}

// -----

func.func @f(%m: !attnk.tensor_map<1x128x1x128xi8, none>, %i: i32) {
  %st = attnk.ring.alloc at 0 : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>
  // expected-error @+1 {{takes row vectors of O's 64 rows, got 'vector<32xf32>'}}
  %s:5 = attnk.forward.consumer params(%m, %m : !attnk.tensor_map<1x128x1x128xi8, none>, !attnk.tensor_map<1x128x1x128xi8, none>)
      rings(%st : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>)
      work(%i, %i, %i, %i, %i, %i, %i, %i, %i, %i) {plan = {persistent = false}}
      : !attnk.acc<64x128xf32>, vector<64xf32>, vector<32xf32>, f32, !attnk.rows
  return
}

// -----

func.func @f(%m: !attnk.tensor_map<1x128x1x128xi8, none>, %i: i32) {
  %st = attnk.ring.alloc at 0 : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>
  // expected-error @+1 {{yields O's unit (f32) and the thread's rows (!attnk.rows) last}}
  %s:5 = attnk.forward.consumer params(%m, %m : !attnk.tensor_map<1x128x1x128xi8, none>, !attnk.tensor_map<1x128x1x128xi8, none>)
      rings(%st : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>)
      work(%i, %i, %i, %i, %i, %i, %i, %i, %i, %i) {plan = {persistent = false}}
      : !attnk.acc<64x128xf32>, vector<64xf32>, vector<64xf32>, f32, i32
  return
}

// -----

func.func @f(%o: !attnk.acc<64x128xf32>, %r: vector<64xf32>, %rows: !attnk.rows, %i: i32) {
  %st = attnk.ring.alloc at 0 : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>
  // expected-error @+1 {{is not part of a persistent-grid kernel (its consumer op stores)}}
  %a, %b, %c = attnk.forward.merge_warpgroups %o, %r, %r rows(%rows : !attnk.rows) in %st {plan = {persistent = true}}
      : !attnk.acc<64x128xf32>, vector<64xf32>, !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>
  return
}

// -----

func.func @f(%o: !attnk.acc<64x128xf32>, %r: vector<64xf32>, %rows: !attnk.rows, %i: i32) {
  %st = attnk.ring.alloc at 0 : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>
  // expected-error @+1 {{merges the two consumer warpgroups of a decode plan}}
  %a, %b, %c = attnk.forward.merge_warpgroups %o, %r, %r rows(%rows : !attnk.rows) in %st {plan = {consumerWGs = 3, persistent = false}}
      : !attnk.acc<64x128xf32>, vector<64xf32>, !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>
  return
}

// -----

func.func @f(%o: !attnk.acc<64x128xf32>, %r: vector<64xf32>, %u: f32, %rows: !attnk.rows, %i: i32) {
  %st = attnk.ring.alloc at 0 : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>
  // expected-error @+1 {{takes 10 work values, got 1}}
  attnk.forward.epilogue %o, %r, %r, %u rows(%rows : !attnk.rows) in %st work(%i) {plan = {persistent = false}}
      : !attnk.acc<64x128xf32>, vector<64xf32>, !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>
  return
}

// -----

func.func @f(%o: !attnk.acc<64x128xf32>, %r: vector<64xf32>, %u: f32, %rows: !attnk.rows, %i: i32) {
  %st = attnk.ring.alloc at 0 : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>
  // expected-error @+1 {{reads the launch parameters of an enclosing forward kernel (15 or more)}}
  attnk.forward.epilogue %o, %r, %r, %u rows(%rows : !attnk.rows) in %st work(%i, %i, %i, %i, %i, %i, %i, %i, %i, %i) {plan = {persistent = false}}
      : !attnk.acc<64x128xf32>, vector<64xf32>, !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>
  return
}

// -----

func.func @f(%m: !attnk.tensor_map<1x128x1x128xi8, none>, %i: i32) {
  %st = attnk.ring.alloc at 0 : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>
  // expected-error @+1 {{takes rows with 'partial' with a prefill plan, got '!attnk.rows'}}
  %s:5 = attnk.forward.consumer params(%m, %m : !attnk.tensor_map<1x128x1x128xi8, none>, !attnk.tensor_map<1x128x1x128xi8, none>)
      rings(%st : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>)
      work(%i, %i, %i, %i, %i, %i, %i, %i, %i, %i) {plan = {persistent = false, prefill = true}}
      : !attnk.acc<64x128xf32>, vector<64xf32>, vector<64xf32>, f32, !attnk.rows
  return
}

// -----

func.func @f(%o: !attnk.acc<64x128xf32>, %r: vector<64xf32>, %rows: !attnk.rows<partial>) {
  %st = attnk.ring.alloc at 0 : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>
  // expected-error @+1 {{takes a decode warpgroup's rows, without 'partial'}}
  %a, %b, %c = attnk.forward.merge_warpgroups %o, %r, %r rows(%rows : !attnk.rows<partial>) in %st {plan = {persistent = false}}
      : !attnk.acc<64x128xf32>, vector<64xf32>, !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>
  return
}

// -----

func.func @f(%o: !attnk.acc<64x128xf32>, %r: vector<64xf32>, %u: f32, %rows: !attnk.rows<partial>, %i: i32) {
  %st = attnk.ring.alloc at 0 : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>
  // expected-error @+1 {{takes rows without 'partial' with a decode plan, got '!attnk.rows<partial>'}}
  attnk.forward.epilogue %o, %r, %r, %u rows(%rows : !attnk.rows<partial>) in %st work(%i, %i, %i, %i, %i, %i, %i, %i, %i, %i) {plan = {persistent = false, prefill = false}}
      : !attnk.acc<64x128xf32>, vector<64xf32>, !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>
  return
}
