// One case per verifier message of the MLA decode kernel's ops (MLAOps.td).
// RUN: attn-opt %s -split-input-file -verify-diagnostics

!ring = !attnk.ring<64x576xbf16, stages = 2, none, producers = 128, consumers = 2>
func.func @no_crossover(%q: memref<?xbf16>, %n: i32, %r: !ring) {
  // expected-error @+1 {{'attnk.mla.prologue' op needs a plan with a boolean 'crossover' entry}}
  %k:4 = attnk.mla.prologue params(%q, %q, %q, %q, %q, %n, %n, %n, %n : memref<?xbf16>, memref<?xbf16>, memref<?xbf16>, memref<?xbf16>, memref<?xbf16>, i32, i32, i32, i32)
      rings(%r : !ring) work(%n, %n, %n, %n) {plan = {tileN = 64}} : i32, i32, i32, i32
  return
}

// -----

!ring = !attnk.ring<64x576xbf16, stages = 2, none, producers = 128, consumers = 2>
func.func @params(%q: memref<?xbf16>, %n: i32, %r: !ring) {
  // expected-error @+1 {{'attnk.mla.prologue' op takes the MLA kernel's 9 parameters, got 8}}
  %k:4 = attnk.mla.prologue params(%q, %q, %q, %q, %q, %n, %n, %n : memref<?xbf16>, memref<?xbf16>, memref<?xbf16>, memref<?xbf16>, memref<?xbf16>, i32, i32, i32)
      rings(%r : !ring) work(%n, %n, %n, %n) {plan = {crossover = false}} : i32, i32, i32, i32
  return
}

// -----

!ring = !attnk.ring<64x576xbf16, stages = 2, none, producers = 128, consumers = 2>
func.func @buffer(%q: memref<?xbf16>, %n: i32, %r: !ring) {
  // expected-error @+1 {{'attnk.mla.producer' op parameter #4 must be a memref, got 'i32'}}
  attnk.mla.producer params(%q, %q, %q, %q, %n, %n, %n, %n, %n : memref<?xbf16>, memref<?xbf16>, memref<?xbf16>, memref<?xbf16>, i32, i32, i32, i32, i32)
      rings(%r : !ring) work(%n, %n, %n, %n, %n, %n, %n, %n) {plan = {crossover = false}}
  return
}

// -----

!ring = !attnk.ring<64x576xbf16, stages = 2, none, producers = 128, consumers = 2>
func.func @extent(%q: memref<?xbf16>, %n: i32, %r: !ring) {
  // expected-error @+1 {{'attnk.mla.consumers' op parameter #8 must be an i32, got 'memref<?xbf16>'}}
  attnk.mla.consumers params(%q, %q, %q, %q, %q, %n, %n, %n, %q : memref<?xbf16>, memref<?xbf16>, memref<?xbf16>, memref<?xbf16>, memref<?xbf16>, i32, i32, i32, memref<?xbf16>)
      rings(%r : !ring) work(%n, %n, %n, %n, %n, %n, %n, %n) {plan = {crossover = false}}
  return
}

// -----

func.func @no_ring(%q: memref<?xbf16>, %n: i32) {
  // expected-error @+1 {{'attnk.mla.producer' op takes at least one ring (the kernel's shared memory)}}
  "attnk.mla.producer"(%q, %q, %q, %q, %q, %n, %n, %n, %n, %n, %n, %n, %n, %n, %n, %n, %n)
      <{operandSegmentSizes = array<i32: 9, 0, 8>, plan = {crossover = false}}>
      : (memref<?xbf16>, memref<?xbf16>, memref<?xbf16>, memref<?xbf16>, memref<?xbf16>, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32) -> ()
  return
}

// -----

!ring = !attnk.ring<64x576xbf16, stages = 2, none, producers = 128, consumers = 4>
func.func @role_work(%q: memref<?xbf16>, %n: i32, %r: !ring) {
  // expected-error @+1 {{'attnk.mla.producer' op takes 10 work value(s) with this plan, got 8}}
  attnk.mla.producer params(%q, %q, %q, %q, %q, %n, %n, %n, %n : memref<?xbf16>, memref<?xbf16>, memref<?xbf16>, memref<?xbf16>, memref<?xbf16>, i32, i32, i32, i32)
      rings(%r : !ring) work(%n, %n, %n, %n, %n, %n, %n, %n) {plan = {crossover = true}}
  return
}

// -----

!ring = !attnk.ring<64x576xbf16, stages = 2, none, producers = 128, consumers = 2>
func.func @prologue_work(%q: memref<?xbf16>, %n: i32, %r: !ring) {
  // expected-error @+1 {{'attnk.mla.prologue' op takes 4 work value(s) with this plan, got 5}}
  %k:4 = attnk.mla.prologue params(%q, %q, %q, %q, %q, %n, %n, %n, %n : memref<?xbf16>, memref<?xbf16>, memref<?xbf16>, memref<?xbf16>, memref<?xbf16>, i32, i32, i32, i32)
      rings(%r : !ring) work(%n, %n, %n, %n, %n) {plan = {crossover = false}} : i32, i32, i32, i32
  return
}

// -----

!ring = !attnk.ring<64x576xbf16, stages = 2, none, producers = 128, consumers = 4>
func.func @prologue_keys(%q: memref<?xbf16>, %n: i32, %r: !ring) {
  // expected-error @+1 {{'attnk.mla.prologue' op yields 6 value(s) with this plan, got 4}}
  %k:4 = attnk.mla.prologue params(%q, %q, %q, %q, %q, %n, %n, %n, %n : memref<?xbf16>, memref<?xbf16>, memref<?xbf16>, memref<?xbf16>, memref<?xbf16>, i32, i32, i32, i32)
      rings(%r : !ring) work(%n, %n, %n, %n) {plan = {crossover = true}} : i32, i32, i32, i32
  return
}
