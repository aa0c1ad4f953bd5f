// One case per verifier message of the kernel-level dialect: types, attributes and ops.
// RUN: attn-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{a shared-memory tile has rank 2, got rank 3}}
func.func @f(%a: !attnk.stage<2x64x64xbf16, none>) { return }

// -----

// expected-error @+1 {{tile extents must be in [1, 65536], got 0}}
func.func @f(%a: !attnk.stage<0x64xbf16, none>) { return }

// -----

// expected-error @+1 {{tile element type must have 8, 16 or 32 bits, got 'f64'}}
func.func @f(%a: !attnk.stage<64x64xf64, none>) { return }

// -----

// expected-error @+1 {{a tile row must be a multiple of 16 bytes, got 8}}
func.func @f(%a: !attnk.stage<64x8xi8, none>) { return }

// -----

// expected-error @+1 {{a row of 192 bytes is neither within one swizzle_128b span nor a whole number of them}}
func.func @f(%a: !attnk.stage<64x96xbf16, swizzle_128b>) { return }

// -----

// expected-error @+1 {{expected none, swizzle_32b, swizzle_64b or swizzle_128b, got 'swizzle_16b'}}
func.func @f(%a: !attnk.stage<64x64xbf16, swizzle_16b>) { return }

// -----

// expected-error @+1 {{a ring has 1 to 8 stages, got 9}}
func.func @f(%a: !attnk.ring<64x64xbf16, stages = 9, swizzle_128b, producers = 1, consumers = 1>) { return }

// -----

// expected-error @+1 {{a ring needs at least one producer and one consumer arrival}}
func.func @f(%a: !attnk.ring<64x64xbf16, stages = 2, swizzle_128b, producers = 1, consumers = 0>) { return }

// -----

// expected-error @+1 {{the ring needs 262208 bytes of shared memory, more than the 232448 an sm_90 CTA has}}
func.func @f(%a: !attnk.ring<256x128xbf16, stages = 4, swizzle_128b, producers = 1, consumers = 1>) { return }

// -----

// expected-error @+1 {{a tensor map box has 1 to 5 dimensions, got 6}}
func.func @f(%a: !attnk.tensor_map<1x1x1x1x64x64xbf16, none>) { return }

// -----

// expected-error @+1 {{a tensor map box extent must be in [1, 256], got 512}}
func.func @f(%a: !attnk.tensor_map<512x64xbf16, none>) { return }

// -----

// expected-error @+1 {{tensor map element type must have 8, 16 or 32 bits, got 'i1'}}
func.func @f(%a: !attnk.tensor_map<64x128xi1, none>) { return }

// -----

// expected-error @+1 {{the box's innermost extent must be a multiple of 16 bytes, got 8}}
func.func @f(%a: !attnk.tensor_map<64x4xbf16, none>) { return }

// -----

// expected-error @+1 {{the box's innermost 256 bytes exceed the swizzle_128b span of 128 bytes}}
func.func @f(%a: !attnk.tensor_map<64x128xbf16, swizzle_128b>) { return }

// -----

// expected-error @+1 {{a warpgroup accumulator has 64 rows (m64nN), got 128}}
func.func @f(%a: !attnk.acc<128x64xf32>) { return }

// -----

// expected-error @+1 {{accumulator columns must be a multiple of 8 in [8, 256], got 260}}
func.func @f(%a: !attnk.acc<64x260xf32>) { return }

// -----

// expected-error @+1 {{accumulator element type must be f32 or i32 (s32), got 'f16'}}
func.func @f(%a: !attnk.acc<64x64xf16>) { return }

// -----

// expected-error @+1 {{expected ROWSxCOLSxELEM}}
func.func @f(%a: !attnk.acc<64xf32>) { return }

// -----

// expected-error @+1 {{a register A operand has 64 rows, got 32}}
func.func @f(%a: !attnk.frag<32x64xbf16>) { return }

// -----

// expected-error @+1 {{register A operand element type must be bf16, f16, f8E4M3FN, f8E5M2, i8 or ui8, got 'f32'}}
func.func @f(%a: !attnk.frag<64x64xf32>) { return }

// -----

// expected-error @+1 {{register A operand K must be a positive multiple of 32 for 'i8', got 48}}
func.func @f(%a: !attnk.frag<64x48xi8>) { return }

// -----

// expected-error @+1 {{paged addressing needs a positive page size, got 0}}
func.func @f() attributes {a = #attnk.addressing<paged>} { return }

// -----

// expected-error @+1 {{only paged addressing has a page size}}
func.func @f() attributes {a = #attnk.addressing<contiguous, page = 64>} { return }

// -----

func.func @f() {
  // expected-error @+1 {{needs at least one role}}
  attnk.warp_specialize
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{has 1 roles but 2 regions}}
  "attnk.warp_specialize"() ({
    %x = arith.constant 0 : i32
  }, {
    %y = arith.constant 0 : i32
  }) {roles = [#attn.role<producer, warpgroups = 1, regs = 40>]} : () -> ()
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{ctas_per_sm must be in [1, 4], got 5}}
  attnk.warp_specialize attributes {ctas_per_sm = 5}
    #attn.role<producer, warpgroups = 1, regs = 40> {
    }
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{roles need 1152 threads, more than a CTA's 1024}}
  attnk.warp_specialize
    #attn.role<producer, warpgroups = 1, regs = 24> {
    }
    #attn.role<consumer, warpgroups = 4, regs = 24> {
    }
    #attn.role<consumer, warpgroups = 4, regs = 24> {
    }
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{register budgets need 69632 registers per CTA x 1 CTAs per SM, more than the 65536 of an SM}}
  attnk.warp_specialize
    #attn.role<producer, warpgroups = 1, regs = 64> {
    }
    #attn.role<consumer, warpgroups = 2, regs = 240> {
    }
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{register budgets need 36864 registers per CTA x 2 CTAs per SM, more than the 65536 of an SM}}
  attnk.warp_specialize attributes {ctas_per_sm = 2}
    #attn.role<producer, warpgroups = 1, regs = 48> {
    }
    #attn.role<consumer, warpgroups = 1, regs = 240> {
    }
  return
}

// -----

func.func @f() {
  // expected-error @+2 {{consumer regs must be a multiple of 8 in [24, 256] (setmaxnreg), got 260}}
  attnk.warp_specialize
    #attn.role<consumer, warpgroups = 1, regs = 260> {
    }
  return
}

// -----

func.func @f(%i: i32, %p: i1) {
  %k = attnk.ring.alloc : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  // expected-error @+1 {{stage is never handed on: expected one attnk.ring.commit of it later in the same block}}
  %st = attnk.ring.acquire %k[%i] phase %p : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  return
}

// -----

func.func @f(%i: i32, %p: i1) {
  %k = attnk.ring.alloc : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  %k2 = attnk.ring.alloc : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  // expected-error @+1 {{stage is handed to attnk.ring.commit of other rings}}
  %st = attnk.ring.acquire %k[%i] phase %p : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  attnk.ring.commit %k2[%st] : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  return
}

// -----

func.func @f(%i: i32, %p: i1, %c: i1) {
  %k = attnk.ring.alloc : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  // expected-error @+1 {{stage must be handed on by attnk.ring.commit in the same block}}
  %st = attnk.ring.acquire %k[%i] phase %p : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  scf.if %c {
    attnk.ring.commit %k[%st] : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  }
  return
}

// -----

func.func @f(%i: i32, %p: i1) {
  %k = attnk.ring.alloc : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  // expected-error @+1 {{stage is handed on more than once by attnk.ring.release}}
  %st = attnk.ring.wait %k[%i] phase %p : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  attnk.ring.release %k[%st] : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  attnk.ring.release %k[%st] : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  return
}

// -----

func.func @f(%i: i32, %p: i1, %q: !attnk.stage<64x128xi8, swizzle_128b>, %acc: !attnk.acc<64x128xi32>) {
  %k = attnk.ring.alloc : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  %st = attnk.ring.wait %k[%i] phase %p : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  attnk.ring.release %k[%st] : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  // expected-error @+1 {{uses a stage after its attnk.ring.release}}
  %s = attnk.wgmma %q, %st, %acc : !attnk.stage<64x128xi8, swizzle_128b>, !attnk.stage<128x128xi8, swizzle_128b>, !attnk.acc<64x128xi32>
  return
}

// -----

func.func @f(%i: i32, %p: i1) {
  %k = attnk.ring.alloc : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  %st = attnk.ring.wait %k[%i] phase %p : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  // expected-error @+1 {{expects the stages one attnk.ring.acquire returned, in order}}
  attnk.ring.commit %k[%st] : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  attnk.ring.release %k[%st] : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  return
}

// -----

func.func @f(%k: !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>, %st: !attnk.stage<128x128xi8, swizzle_128b>) {
  // expected-error @+1 {{expects the stages one attnk.ring.wait returned, in order}}
  attnk.ring.release %k[%st] : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  return
}

// -----

func.func @f(%m: !attnk.tensor_map<1x128x1x128xi8, swizzle_128b>, %r: !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>, %i: i32, %p: i1) {
  %st = attnk.ring.acquire %r[%i] phase %p expect_tx 16384 : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  // expected-error @+1 {{needs one coordinate per box dimension (4), got 2}}
  attnk.tma_load %m[%i, %i] #attnk.addressing<contiguous> into %st : !attnk.tensor_map<1x128x1x128xi8, swizzle_128b>, !attnk.stage<128x128xi8, swizzle_128b>
  attnk.ring.commit %r[%st] : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  return
}

// -----

func.func @f(%m: !attnk.tensor_map<128x128xui8, swizzle_128b>, %r: !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>, %i: i32, %p: i1) {
  %st = attnk.ring.acquire %r[%i] phase %p expect_tx 16384 : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  // expected-error @+1 {{tensor map element type 'ui8' differs from the stage's 'i8'}}
  attnk.tma_load %m[%i, %i] #attnk.addressing<contiguous> into %st : !attnk.tensor_map<128x128xui8, swizzle_128b>, !attnk.stage<128x128xi8, swizzle_128b>
  attnk.ring.commit %r[%st] : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  return
}

// -----

func.func @f(%m: !attnk.tensor_map<128x64xi8, swizzle_64b>, %r: !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>, %i: i32, %p: i1) {
  %st = attnk.ring.acquire %r[%i] phase %p expect_tx 16384 : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  // expected-error @+1 {{tensor map swizzle swizzle_64b differs from the stage's swizzle_128b}}
  attnk.tma_load %m[%i, %i] #attnk.addressing<contiguous> into %st : !attnk.tensor_map<128x64xi8, swizzle_64b>, !attnk.stage<128x128xi8, swizzle_128b>
  attnk.ring.commit %r[%st] : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  return
}

// -----

func.func @f(%m: !attnk.tensor_map<96x128xi8, swizzle_128b>, %r: !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>, %i: i32, %p: i1) {
  %st = attnk.ring.acquire %r[%i] phase %p expect_tx 16384 : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  // expected-error @+1 {{stage tile 128x128 is not a whole number of 96x128 boxes}}
  attnk.tma_load %m[%i, %i] #attnk.addressing<contiguous> into %st : !attnk.tensor_map<96x128xi8, swizzle_128b>, !attnk.stage<128x128xi8, swizzle_128b>
  attnk.ring.commit %r[%st] : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  return
}

// -----

func.func @f(%m: !attnk.tensor_map<64x128xi8, swizzle_128b>, %r: !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>, %i: i32, %p: i1) {
  %st = attnk.ring.acquire %r[%i] phase %p expect_tx 16384 : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  // expected-error @+1 {{a block_table operand goes with paged addressing, and only with it}}
  attnk.tma_load %m[%i, %i] #attnk.addressing<paged, page = 64> into %st : !attnk.tensor_map<64x128xi8, swizzle_128b>, !attnk.stage<128x128xi8, swizzle_128b>
  attnk.ring.commit %r[%st] : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  return
}

// -----

func.func @f(%m: !attnk.tensor_map<64x128xi8, swizzle_128b>, %r: !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>, %i: i32, %p: i1) {
  %st = attnk.ring.acquire %r[%i] phase %p expect_tx 16384 : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  // expected-error @+1 {{an indices operand goes with gathered addressing, and only with it}}
  attnk.tma_load %m[%i, %i] #attnk.addressing<gathered> into %st : !attnk.tensor_map<64x128xi8, swizzle_128b>, !attnk.stage<128x128xi8, swizzle_128b>
  attnk.ring.commit %r[%st] : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  return
}

// -----

func.func @f(%m: !attnk.tensor_map<64x128xi8, swizzle_128b>, %r: !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>, %i: i32, %p: i1, %bt: memref<?x?xi32>) {
  %st = attnk.ring.acquire %r[%i] phase %p expect_tx 16384 : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  // expected-error @+1 {{page size 32 is not a multiple of the box's 64 rows: a box would straddle two pages}}
  attnk.tma_load %m[%i, %i] #attnk.addressing<paged, page = 32> into %st block_table(%bt : memref<?x?xi32>) : !attnk.tensor_map<64x128xi8, swizzle_128b>, !attnk.stage<128x128xi8, swizzle_128b>
  attnk.ring.commit %r[%st] : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  return
}

// -----

func.func @f(%s: !attnk.stage<128x128xi8, swizzle_128b>, %d: !attnk.stage<128x128xbf16, swizzle_128b>, %sc: vector<128xf32>) {
  // expected-error @+1 {{needs either an `into` stage or a result, not both or neither}}
  attnk.convert_tile %s scales(%sc : vector<128xf32>) {quant = [#attn.quant<i8, per_token_head>]} : !attnk.stage<128x128xi8, swizzle_128b>
  return
}

// -----

func.func @f(%s: !attnk.frag<64x128xi8>) {
  // expected-error @+1 {{transpose converts a stage into a stage}}
  %r = attnk.convert_tile %s {transpose} : !attnk.frag<64x128xi8> -> !attnk.frag<64x128xbf16>
  return
}

// -----

func.func @f(%s: !attnk.stage<128x128xi8, swizzle_128b>, %sc: vector<128xf32>) {
  // expected-error @+1 {{converts a 128x128 tile into a 64x128 tile}}
  %r = attnk.convert_tile %s scales(%sc : vector<128xf32>) {quant = [#attn.quant<i8, per_token_head>]} : !attnk.stage<128x128xi8, swizzle_128b> -> !attnk.frag<64x128xbf16>
  return
}

// -----

func.func @f(%s: !attnk.stage<64x128xbf16, swizzle_128b>) {
  // expected-error @+1 {{an accumulator converts into an accumulator, and only an accumulator does}}
  %r = attnk.convert_tile %s : !attnk.stage<64x128xbf16, swizzle_128b> -> !attnk.acc<64x128xf32>
  return
}

// -----

func.func @f(%a: !attnk.acc<64x128xi32>, %sc: vector<64xf32>) {
  // expected-error @+1 {{takes at most two schemes (the two operands of a GEMM), got 3}}
  %r = attnk.convert_tile %a scales(%sc, %sc, %sc : vector<64xf32>, vector<64xf32>, vector<64xf32>) {part = #attnk.part<scales>, quant = [#attn.quant<i8, per_token_head>, #attn.quant<i8, per_token_head>, #attn.quant<i8, per_token_head>]} : !attnk.acc<64x128xi32> -> !attnk.acc<64x128xf32>
  return
}

// -----

func.func @f(%s: !attnk.stage<128x128xi8, swizzle_128b>, %d: !attnk.stage<128x128xbf16, swizzle_128b>) {
  // expected-error @+1 {{needs one scale operand per scheme, got 0}}
  attnk.convert_tile %s into %d {quant = [#attn.quant<i8, per_token_head>]} : !attnk.stage<128x128xi8, swizzle_128b> into !attnk.stage<128x128xbf16, swizzle_128b>
  return
}

// -----

func.func @f(%s: !attnk.stage<128x128xui8, swizzle_128b>, %d: !attnk.stage<128x128xbf16, swizzle_128b>, %sc: vector<128xf32>) {
  // expected-error @+1 {{needs one zero-point operand per asymmetric scheme (1), got 0}}
  attnk.convert_tile %s into %d scales(%sc : vector<128xf32>) {quant = [#attn.quant<ui8, per_token, asymmetric>]} : !attnk.stage<128x128xui8, swizzle_128b> into !attnk.stage<128x128xbf16, swizzle_128b>
  return
}

// -----

func.func @f(%a: !attnk.acc<64x128xi32>) {
  // expected-error @+1 {{on an accumulator applies scales only: part = scales and a scheme}}
  %r = attnk.convert_tile %a : !attnk.acc<64x128xi32> -> !attnk.acc<64x128xf32>
  return
}

// -----

func.func @f(%a: !attnk.acc<64x128xf32>, %sc: vector<64xf32>) {
  // expected-error @+1 {{result accumulator must be f32, got 'i32'}}
  %r = attnk.convert_tile %a scales(%sc : vector<64xf32>) {part = #attnk.part<scales>, quant = [#attn.quant<i8, per_token_head>]} : !attnk.acc<64x128xf32> -> !attnk.acc<64x128xi32>
  return
}

// -----

func.func @f(%s: !attnk.stage<128x128xi8, swizzle_128b>, %d: !attnk.stage<128x128xbf16, swizzle_128b>, %sc: vector<128xf32>) {
  // expected-error @+1 {{part = scales applies to an accumulator}}
  attnk.convert_tile %s into %d scales(%sc : vector<128xf32>) {part = #attnk.part<scales>, quant = [#attn.quant<i8, per_token_head>]} : !attnk.stage<128x128xi8, swizzle_128b> into !attnk.stage<128x128xbf16, swizzle_128b>
  return
}

// -----

func.func @f(%s: !attnk.stage<128x128xi8, swizzle_128b>, %d: !attnk.stage<128x128xbf16, swizzle_128b>, %sc: vector<128xf32>) {
  // expected-error @+1 {{a tile of codes has one scheme, got 2}}
  attnk.convert_tile %s into %d scales(%sc, %sc : vector<128xf32>, vector<128xf32>) {quant = [#attn.quant<i8, per_token_head>, #attn.quant<i8, per_token_head>]} : !attnk.stage<128x128xi8, swizzle_128b> into !attnk.stage<128x128xbf16, swizzle_128b>
  return
}

// -----

func.func @f(%s: !attnk.stage<128x128xi8, swizzle_128b>, %d: !attnk.stage<128x128xbf16, swizzle_128b>, %sc: vector<128xf32>) {
  // expected-error @+1 {{source element type 'i8' is not the scheme's 'f8E4M3FN'}}
  attnk.convert_tile %s into %d scales(%sc : vector<128xf32>) {quant = [#attn.quant<f8E4M3FN, per_token>]} : !attnk.stage<128x128xi8, swizzle_128b> into !attnk.stage<128x128xbf16, swizzle_128b>
  return
}

// -----

func.func @f(%s: !attnk.stage<128x128xf8E5M2, swizzle_128b>, %d: !attnk.stage<128x128xbf16, swizzle_128b>, %sc: vector<128xf32>) {
  // expected-error @+1 {{not supported yet: dequantizing 'f8E5M2' (i8, ui8, f8E4M3FN)}}
  attnk.convert_tile %s into %d scales(%sc : vector<128xf32>) {quant = [#attn.quant<f8E5M2, per_token>]} : !attnk.stage<128x128xf8E5M2, swizzle_128b> into !attnk.stage<128x128xbf16, swizzle_128b>
  return
}

// -----

func.func @f(%s: !attnk.stage<128x128xi8, swizzle_128b>, %d: !attnk.stage<128x32xf32, swizzle_128b>, %sc: vector<128xf32>) {
  // expected-error @+1 {{converts a 128x128 tile into a 128x32 tile}}
  attnk.convert_tile %s into %d scales(%sc : vector<128xf32>) {quant = [#attn.quant<i8, per_token_head>]} : !attnk.stage<128x128xi8, swizzle_128b> into !attnk.stage<128x32xf32, swizzle_128b>
  return
}

// -----

func.func @f(%s: !attnk.stage<64x128xi8, swizzle_128b>, %sc: vector<128xf32>) {
  // expected-error @+1 {{dequantizes to bf16 or f16, got 'i8'}}
  %r = attnk.convert_tile %s scales(%sc : vector<128xf32>) {quant = [#attn.quant<i8, per_token_head>]} : !attnk.stage<64x128xi8, swizzle_128b> -> !attnk.frag<64x128xi8>
  return
}

// -----

func.func @f(%s: !attnk.stage<128x128xi8, swizzle_128b>, %d: !attnk.stage<128x128xbf16, swizzle_128b>, %sc: vector<128xf16>) {
  // expected-error @+1 {{scale operand type 'vector<128xf16>' does not hold the scheme's 'f32' scales}}
  attnk.convert_tile %s into %d scales(%sc : vector<128xf16>) {quant = [#attn.quant<i8, per_token_head>]} : !attnk.stage<128x128xi8, swizzle_128b> into !attnk.stage<128x128xbf16, swizzle_128b>
  return
}

// -----

func.func @f(%s: !attnk.stage<128x128xui8, swizzle_128b>, %d: !attnk.stage<128x128xbf16, swizzle_128b>, %sc: vector<128xf32>, %z: vector<128xi8>) {
  // expected-error @+1 {{zero-point operand type 'vector<128xi8>' does not hold 'ui8' codes}}
  attnk.convert_tile %s into %d scales(%sc : vector<128xf32>) zero_points(%z : vector<128xi8>) {quant = [#attn.quant<ui8, per_token, asymmetric>]} : !attnk.stage<128x128xui8, swizzle_128b> into !attnk.stage<128x128xbf16, swizzle_128b>
  return
}

// -----

// Zero points as one f32 per thread are for stage → stage conversions only.
func.func @f(%s: !attnk.stage<64x128xui8, swizzle_128b>, %sc: vector<64xf32>, %z: f32) {
  // expected-error @+1 {{zero-point operand type 'f32' does not hold 'ui8' codes}}
  %r = attnk.convert_tile %s scales(%sc : vector<64xf32>) zero_points(%z : f32) {quant = [#attn.quant<ui8, per_token, asymmetric>]} : !attnk.stage<64x128xui8, swizzle_128b> -> !attnk.frag<64x128xbf16>
  return
}

// -----

func.func @f(%a: !attnk.stage<64x128xbf16, swizzle_128b>, %b: !attnk.stage<128x128xi8, swizzle_128b>, %c: !attnk.acc<64x128xf32>) {
  // expected-error @+1 {{no WGMMA multiplies 'bf16' by 'i8' into 'f32' (bf16/f16 -> f32, e4m3/e5m2 -> f32, i8/ui8 -> i32)}}
  %r = attnk.wgmma %a, %b, %c : !attnk.stage<64x128xbf16, swizzle_128b>, !attnk.stage<128x128xi8, swizzle_128b>, !attnk.acc<64x128xf32>
  return
}

// -----

func.func @f(%a: !attnk.stage<64x128xi8, swizzle_128b>, %b: !attnk.stage<128x128xi8, swizzle_128b>, %c: !attnk.acc<64x128xi32>) {
  // expected-error @+1 {{transposed operands exist for 16-bit types only (PTX imm-trans)}}
  %r = attnk.wgmma %a, %b, %c {transpose_b} : !attnk.stage<64x128xi8, swizzle_128b>, !attnk.stage<128x128xi8, swizzle_128b>, !attnk.acc<64x128xi32>
  return
}

// -----

func.func @f(%a: !attnk.frag<64x128xbf16>, %b: !attnk.stage<128x128xbf16, swizzle_128b>, %c: !attnk.acc<64x128xf32>) {
  // expected-error @+1 {{transpose_a applies to a shared-memory A}}
  %r = attnk.wgmma %a, %b, %c {transpose_a} : !attnk.frag<64x128xbf16>, !attnk.stage<128x128xbf16, swizzle_128b>, !attnk.acc<64x128xf32>
  return
}

// -----

func.func @f(%a: !attnk.stage<64x128xbf16, swizzle_128b>, %b: !attnk.stage<64x128xbf16, swizzle_128b>, %c: !attnk.acc<64x128xf32>) {
  // expected-error @+1 {{A·Bᵀ is 64x64, the accumulator 64x128}}
  %r = attnk.wgmma %a, %b, %c : !attnk.stage<64x128xbf16, swizzle_128b>, !attnk.stage<64x128xbf16, swizzle_128b>, !attnk.acc<64x128xf32>
  return
}

// -----

func.func @f(%a: !attnk.stage<64x64xbf16, swizzle_128b>, %b: !attnk.stage<128x128xbf16, swizzle_128b>, %c: !attnk.acc<64x128xf32>) {
  // expected-error @+1 {{A has K = 64, B has K = 128}}
  %r = attnk.wgmma %a, %b, %c : !attnk.stage<64x64xbf16, swizzle_128b>, !attnk.stage<128x128xbf16, swizzle_128b>, !attnk.acc<64x128xf32>
  return
}

// -----

func.func @f(%a: !attnk.stage<64x16xi8, none>, %b: !attnk.stage<128x16xi8, none>, %c: !attnk.acc<64x128xi32>) {
  // expected-error @+1 {{K = 16 is not a multiple of the instruction's K = 32}}
  %r = attnk.wgmma %a, %b, %c : !attnk.stage<64x16xi8, none>, !attnk.stage<128x16xi8, none>, !attnk.acc<64x128xi32>
  return
}

// -----

func.func @f(%a: !attnk.stage<64x32xi8, none>, %b: !attnk.stage<40x32xi8, none>, %c: !attnk.acc<64x40xi32>) {
  // expected-error @+1 {{8-bit integer WGMMAs take N = 8, 16, 24 or a multiple of 16, got 40}}
  %r = attnk.wgmma %a, %b, %c : !attnk.stage<64x32xi8, none>, !attnk.stage<40x32xi8, none>, !attnk.acc<64x40xi32>
  return
}

// -----

func.func @f(%c: !attnk.acc<64x128xf32>) {
  // expected-error @+1 {{pending must be in [0, 7], got 8}}
  %r = attnk.wgmma_wait %c pending = 8 : !attnk.acc<64x128xf32>
  return
}

// -----

func.func @f(%s: !attnk.acc<64x128xi32>, %m: vector<64xf32>) {
  // expected-error @+1 {{scores must be an f32 accumulator, got 'i32'}}
  %p, %m1, %l1, %c = attnk.softmax_step %s, %m, %m scale_log2 = 0.125 : !attnk.acc<64x128xi32>, vector<64xf32> -> !attnk.frag<64x128xbf16>
  return
}

// -----

func.func @f(%s: !attnk.acc<64x128xf32>, %m: vector<32xf32>) {
  // expected-error @+1 {{row statistics need one value per score row (64)}}
  %p, %m1, %l1, %c = attnk.softmax_step %s, %m, %m scale_log2 = 0.125 : !attnk.acc<64x128xf32>, vector<32xf32> -> !attnk.frag<64x128xbf16>
  return
}

// -----

func.func @f(%s: !attnk.acc<64x128xf32>, %m: vector<64xf32>) {
  // expected-error @+1 {{P is 64x64, the scores 64x128}}
  %p, %m1, %l1, %c = attnk.softmax_step %s, %m, %m scale_log2 = 0.125 : !attnk.acc<64x128xf32>, vector<64xf32> -> !attnk.frag<64x64xbf16>
  return
}

// -----

func.func @f(%s: !attnk.acc<64x128xf32>, %m: vector<64xf32>) {
  // expected-error @+1 {{not supported yet: integer P}}
  %p, %m1, %l1, %c = attnk.softmax_step %s, %m, %m scale_log2 = 0.125 : !attnk.acc<64x128xf32>, vector<64xf32> -> !attnk.frag<64x128xui8>
  return
}

// -----

func.func @f(%s: !attnk.acc<64x128xf32>, %m: vector<64xf32>, %a: vector<32xf32>) {
  // expected-error @+1 {{alibi needs one slope per score row}}
  %p, %m1, %l1, %c = attnk.softmax_step %s, %m, %m scale_log2 = 0.125 alibi(%a : vector<32xf32>) : !attnk.acc<64x128xf32>, vector<64xf32> -> !attnk.frag<64x128xbf16>
  return
}

// -----

func.func @f(%s: !attnk.acc<64x128xf32>, %m: vector<64xf32>) {
  // expected-error @+1 {{scale_log2 must be positive}}
  %p, %m1, %l1, %c = attnk.softmax_step %s, %m, %m scale_log2 = -1.0 : !attnk.acc<64x128xf32>, vector<64xf32> -> !attnk.frag<64x128xbf16>
  return
}

// -----

func.func @f(%o: !attnk.acc<64x128xi32>, %l: vector<64xf32>, %rows: !attnk.rows) {
  // expected-error @+1 {{finishes an f32 accumulator, got 'i32'}}
  %o1, %l1 = attnk.softmax_finish %o, %l rows(%rows : !attnk.rows) : !attnk.acc<64x128xi32>, vector<64xf32>
  return
}

// -----

func.func @f(%o: !attnk.acc<64x128xf32>, %l: vector<32xf32>, %rows: !attnk.rows) {
  // expected-error @+1 {{needs one row sum per accumulator row (64)}}
  %o1, %l1 = attnk.softmax_finish %o, %l rows(%rows : !attnk.rows) : !attnk.acc<64x128xf32>, vector<32xf32>
  return
}

// -----

func.func @f(%o: !attnk.acc<64x96xf32>, %l: vector<64xf32>, %rows: !attnk.rows) {
  // expected-error @+1 {{with hadamard, O's columns must be a power of two, got 96}}
  %o1, %l1 = attnk.softmax_finish %o, %l rows(%rows : !attnk.rows) {hadamard} : !attnk.acc<64x96xf32>, vector<64xf32>
  return
}

// -----

func.func @f(%o: !attnk.acc<64x128xi32>, %m: vector<64xf32>, %s: memref<8xf32>, %split: i32, %rows: !attnk.rows) {
  // expected-error @+1 {{takes an f32 accumulator, got 'i32'}}
  %o1, %m1, %l1 = attnk.softmax_sink %o, %m, %m sinks(%s : memref<8xf32>) split(%split) rows(%rows : !attnk.rows) : !attnk.acc<64x128xi32>, vector<64xf32>
  return
}

// -----

func.func @f(%o: !attnk.acc<64x128xf32>, %m: vector<32xf32>, %s: memref<8xf32>, %split: i32, %rows: !attnk.rows) {
  // expected-error @+1 {{needs one row maximum and sum per accumulator row (64)}}
  %o1, %m1, %l1 = attnk.softmax_sink %o, %m, %m sinks(%s : memref<8xf32>) split(%split) rows(%rows : !attnk.rows) : !attnk.acc<64x128xf32>, vector<32xf32>
  return
}

// -----

func.func @f(%o: !attnk.acc<64x128xf32>, %m: vector<64xf32>, %s: memref<8xf32>, %split: i32, %rows: !attnk.rows<partial>) {
  // expected-error @+1 {{folds sinks into decode rows; prefill's partial rows are not supported}}
  %o1, %m1, %l1 = attnk.softmax_sink %o, %m, %m sinks(%s : memref<8xf32>) split(%split) rows(%rows : !attnk.rows<partial>) : !attnk.acc<64x128xf32>, vector<64xf32>
  return
}

// -----

func.func @f(%o: !attnk.acc<64x128xi32>, %c: vector<64xf32>) {
  // expected-error @+1 {{rescales an f32 accumulator}}
  %r = attnk.rescale_output %o, %c : !attnk.acc<64x128xi32>, vector<64xf32>
  return
}

// -----

func.func @f(%o: !attnk.acc<64x128xf32>, %c: vector<128xf32>) {
  // expected-error @+1 {{needs one factor per accumulator row}}
  %r = attnk.rescale_output %o, %c : !attnk.acc<64x128xf32>, vector<128xf32>
  return
}

// -----

func.func @f(%o: !attnk.acc<64x128xf32>, %m: vector<64xf32>) {
  // expected-error @+1 {{merges 2 to 8 CTAs of a (portable) cluster, got 16}}
  %o2, %m2, %l2 = attnk.merge.cluster %o, %m, %m splits = 16 scale_log2 = 0.125 : !attnk.acc<64x128xf32>, vector<64xf32>
  return
}

// -----

func.func @f(%o: !attnk.acc<64x128xi32>, %m: vector<64xf32>) {
  // expected-error @+1 {{merges f32 accumulators}}
  %o2, %m2, %l2 = attnk.merge.cluster %o, %m, %m splits = 2 scale_log2 = 0.125 : !attnk.acc<64x128xi32>, vector<64xf32>
  return
}

// -----

func.func @f(%o: !attnk.acc<64x128xf32>, %m: vector<128xf32>) {
  // expected-error @+1 {{row statistics need one value per accumulator row}}
  %o2, %m2, %l2 = attnk.merge.cluster %o, %m, %m splits = 2 scale_log2 = 0.125 : !attnk.acc<64x128xf32>, vector<128xf32>
  return
}

// -----

func.func @f(%ws: memref<?xf32>, %out: memref<?x?x16x128xbf16>, %n: i32) {
  // expected-error @+1 {{needs a static query length, head count and head_dim, got 'memref<?x?x16x128xbf16>'}}
  attnk.merge.combine %ws into %out splits(%n) narrow kv_heads = 2 pack = 8 : memref<?xf32>, memref<?x?x16x128xbf16>
  return
}

// -----

func.func @f(%ws: memref<?xf32>, %out: memref<?x1x16x128xbf16>, %n: i32) {
  // expected-error @+1 {{expected a combine form (narrow or wide), got 'medium'}}
  attnk.merge.combine %ws into %out splits(%n) medium kv_heads = 2 pack = 8 : memref<?xf32>, memref<?x1x16x128xbf16>
  return
}

// -----

func.func @f(%ws: memref<?xf32>, %out: memref<?x1x16x96xbf16>, %n: i32) {
  // expected-error @+1 {{needs a head_dim that is a multiple of 64, got 96}}
  attnk.merge.combine %ws into %out splits(%n) narrow kv_heads = 2 pack = 8 : memref<?xf32>, memref<?x1x16x96xbf16>
  return
}

// -----

func.func @f(%ws: memref<?xf32>, %out: memref<?x1x16x128xbf16>, %n: i32) {
  // expected-error @+1 {{needs kv_heads dividing the 16 query heads, got 3}}
  attnk.merge.combine %ws into %out splits(%n) narrow kv_heads = 3 pack = 1 : memref<?xf32>, memref<?x1x16x128xbf16>
  return
}

// -----

func.func @f(%ws: memref<?xf32>, %out: memref<?x1x16x128xbf16>, %n: i32) {
  // expected-error @+1 {{needs pack dividing the 8 query heads per KV head with pack · q_len ≤ 64, got 3}}
  attnk.merge.combine %ws into %out splits(%n) narrow kv_heads = 2 pack = 3 : memref<?xf32>, memref<?x1x16x128xbf16>
  return
}

// -----

attnk.kernel @k(%ws: memref<?xf32>, %out: memref<?x1x16x128xbf16>, %n: i32) threads = 128 {
  // expected-error @+1 {{of form wide runs on 512 threads, the kernel has 128}}
  attnk.merge.combine %ws into %out splits(%n) wide kv_heads = 2 pack = 8 : memref<?xf32>, memref<?x1x16x128xbf16>
}

// -----

func.func @f(%ws: memref<?xf32>, %out: memref<4x1x16x128xbf16>, %lse: memref<4x16x1xf32>, %n: i32) {
  // expected-error @+1 {{needs an lse of shape [batch, q_len, heads] of the output 'memref<4x1x16x128xbf16>', got 'memref<4x16x1xf32>'}}
  attnk.merge.combine %ws into %out lse(%lse : memref<4x16x1xf32>) splits(%n) narrow kv_heads = 2 pack = 8 : memref<?xf32>, memref<4x1x16x128xbf16>
  return
}

// -----

// expected-error @+1 {{needs a block of whole warps, at most 1024 threads, got 100}}
attnk.kernel @k() threads = 100 {
}

// -----

// expected-error @+1 {{parameter #0 is 'f32' (kernel parameters are memrefs, tensor maps or i32)}}
attnk.kernel @k(%x: f32) threads = 128 {
}

// -----

// expected-error @+1 {{a group holds f32 values or i8, ui8 or f8E4M3FN codes (contiguous groups also bf16), got 'bf16'}}
func.func @f(%a: !attnk.groups<128xbf16, lanes = 16, vec = 8>) { return }

// -----

// expected-error @+1 {{a group spans a power of two of at most 32 lanes, got 12}}
func.func @f(%a: !attnk.groups<96xf32, lanes = 12, vec = 8>) { return }

// -----

// expected-error @+1 {{a group's vectors hold a power of two of at most 16 elements, got 6}}
func.func @f(%a: !attnk.groups<96xf32, lanes = 16, vec = 6>) { return }

// -----

// expected-error @+1 {{a group of 100 elements is not whole chunks of 16 lanes × 8 elements}}
func.func @f(%a: !attnk.groups<100xf32, lanes = 16, vec = 8>) { return }

// -----

func.func @f(%b: i32, %n: i32) {
  // expected-error @+1 {{needs a power of two of at most 32 lanes per group, got 64}}
  %g:4 = attnk.group_index %b, %n slot 0 of 2 lanes = 64 groups_per_token = 8
  return
}

// -----

func.func @f(%b: i32, %n: i32) {
  // expected-error @+1 {{slot 2 is not one of 2}}
  %g:4 = attnk.group_index %b, %n slot 2 of 2 lanes = 16 groups_per_token = 8
  return
}

// -----

func.func @f(%b: i32, %n: i32) {
  // expected-error @+1 {{needs at least one group per token, got 0}}
  %g:4 = attnk.group_index %b, %n slot 0 of 2 lanes = 16 groups_per_token = 0
  return
}

// -----

func.func @f(%s: memref<?x?x8x128xbf16>, %i: i32) {
  // expected-error @+1 {{needs a power of two of at most 32 lanes per group, got 3}}
  %x = attnk.load_groups %s[%i, %i] lane(%i) lanes = 3 : memref<?x?x8x128xbf16> -> vector<1x8xbf16>
  return
}

// -----

func.func @f(%s: memref<?x?x8x128xbf16>, %i: i32) {
  // expected-error @+1 {{loads 'bf16' elements, not 'f16'}}
  %x = attnk.load_groups %s[%i, %i] lane(%i) lanes = 16 : memref<?x?x8x128xbf16> -> vector<1x8xf16>
  return
}

// -----

func.func @f(%s: memref<?x?x8x128xbf16>, %i: i32) {
  // expected-error @+1 {{loads vectors of 4, 8 or 16 bytes, got 32}}
  %x = attnk.load_groups %s[%i, %i] lane(%i) lanes = 8 : memref<?x?x8x128xbf16> -> vector<1x16xbf16>
  return
}

// -----

func.func @f(%s: memref<?x?x?x128xbf16>, %i: i32) {
  // expected-error @+1 {{needs a static head count and head_dim, got 'memref<?x?x?x128xbf16>'}}
  %x = attnk.load_groups %s[%i, %i] lane(%i) lanes = 16 : memref<?x?x?x128xbf16> -> vector<1x8xbf16>
  return
}

// -----

func.func @f(%s: memref<?x?x1x96xbf16>, %i: i32) {
  // expected-error @+1 {{a group of 128 elements does not divide a token's row of 96}}
  %x = attnk.load_groups %s[%i, %i] lane(%i) lanes = 16 : memref<?x?x1x96xbf16> -> vector<1x8xbf16>
  return
}

// -----

func.func @f(%x: vector<1x8xbf16>) {
  // expected-error @+1 {{widens loaded chunks into an f32 groups value, without schemes}}
  %w = attnk.convert_tile %x : vector<1x8xbf16> -> !attnk.frag<64x16xbf16>
  return
}

// -----

func.func @f(%x: vector<2x8xbf16>) {
  // expected-error @+1 {{widens 2 chunks of 8 elements into f32 groups of as many, got '!attnk.groups<128xf32, lanes = 16, vec = 8>'}}
  %w = attnk.convert_tile %x : vector<2x8xbf16> -> !attnk.groups<128xf32, lanes = 16, vec = 8>
  return
}

// -----

func.func @f(%x: !attnk.acc<64x128xf32>) {
  // expected-error @+1 {{produces a groups value only from loaded chunks}}
  %w = attnk.convert_tile %x : !attnk.acc<64x128xf32> -> !attnk.groups<128xf32, lanes = 16, vec = 8>
  return
}

// -----

func.func @f(%x: !attnk.groups<128xi8, lanes = 16, vec = 8>, %r: i32) {
  // expected-error @+1 {{rotates f32 values, got 'i8'}}
  %h = attnk.hadamard %x lane(%r) size = 128 : !attnk.groups<128xi8, lanes = 16, vec = 8>
  return
}

// -----

func.func @f(%x: !attnk.groups<128xf32, lanes = 16, vec = 8>, %r: i32) {
  // expected-error @+1 {{rotates rows of a power of two of elements dividing the group's 128, got 96}}
  %h = attnk.hadamard %x lane(%r) size = 96 : !attnk.groups<128xf32, lanes = 16, vec = 8>
  return
}

// -----

func.func @f(%x: !attnk.groups<128xi8, lanes = 16, vec = 8>) {
  // expected-error @+1 {{reads f32 values, got 'i8'}}
  %s = attnk.group_scales %x {quant = #attn.quant<i8, per_token_head>} : !attnk.groups<128xi8, lanes = 16, vec = 8> -> f32
  return
}

// -----

func.func @f(%x: !attnk.groups<128xf32, lanes = 16, vec = 8>, %i: i32, %sc: memref<8xf32>) {
  // expected-error @+1 {{computes the scales of a per_token_head scheme from the values: no operands}}
  %s = attnk.group_scales %x[%i] from(%sc : memref<8xf32>) {quant = #attn.quant<i8, per_token_head>} : !attnk.groups<128xf32, lanes = 16, vec = 8> -> f32
  return
}

// -----

func.func @f(%x: !attnk.groups<128xf32, lanes = 16, vec = 8>) {
  // expected-error @+1 {{reads the scales of a per_head scheme: needs [group] and from(...)}}
  %s = attnk.group_scales %x {quant = #attn.quant<i8, per_head>} : !attnk.groups<128xf32, lanes = 16, vec = 8> -> f32
  return
}

// -----

func.func @f(%x: !attnk.groups<128xf32, lanes = 16, vec = 8>, %i: i32, %sc: memref<8x128xf32>) {
  // expected-error @+1 {{reads per_channel scales per element: needs lane(...)}}
  %s = attnk.group_scales %x[%i] from(%sc : memref<8x128xf32>) {quant = #attn.quant<i8, per_channel>} : !attnk.groups<128xf32, lanes = 16, vec = 8> -> !attnk.groups<128xf32, lanes = 16, vec = 8>
  return
}

// -----

func.func @f(%x: !attnk.groups<128xf32, lanes = 16, vec = 8>, %i: i32, %sc: memref<8xf32>) {
  // expected-error @+1 {{reads zero points exactly when the scheme is asymmetric}}
  %s, %z = attnk.group_scales %x[%i] from(%sc : memref<8xf32>) {quant = #attn.quant<i8, per_head, asymmetric>} : !attnk.groups<128xf32, lanes = 16, vec = 8> -> f32, f32
  return
}

// -----

func.func @f(%x: !attnk.groups<128xf32, lanes = 16, vec = 8>, %i: i32, %sc: memref<8xf16>) {
  // expected-error @+1 {{scales are 'f32', not 'f16'}}
  %s = attnk.group_scales %x[%i] from(%sc : memref<8xf16>) {quant = #attn.quant<i8, per_head>} : !attnk.groups<128xf32, lanes = 16, vec = 8> -> f32
  return
}

// -----

func.func @f(%x: !attnk.groups<128xf32, lanes = 16, vec = 8>, %i: i32, %sc: memref<8xf32>, %zp: memref<8xi32>) {
  // expected-error @+1 {{zero points are codes of type 'i8'}}
  %s, %z = attnk.group_scales %x[%i] from(%sc : memref<8xf32>) zero_points(%zp : memref<8xi32>) {quant = #attn.quant<i8, per_head, asymmetric>} : !attnk.groups<128xf32, lanes = 16, vec = 8> -> f32, f32
  return
}

// -----

func.func @f(%x: !attnk.groups<128xf32, lanes = 16, vec = 8>) {
  // expected-error @+1 {{returns a zero point exactly when the scheme is asymmetric}}
  %s = attnk.group_scales %x {quant = #attn.quant<i8, per_token, asymmetric>} : !attnk.groups<128xf32, lanes = 16, vec = 8> -> f32
  return
}

// -----

func.func @f(%x: !attnk.groups<128xf32, lanes = 16, vec = 8>) {
  // expected-error @+1 {{returns 'f32' scales for a per_token scheme}}
  %s = attnk.group_scales %x {quant = #attn.quant<i8, per_token>} : !attnk.groups<128xf32, lanes = 16, vec = 8> -> !attnk.groups<128xf32, lanes = 16, vec = 8>
  return
}

// -----

func.func @f(%x: !attnk.groups<128xi8, lanes = 16, vec = 8>, %s: f32) {
  // expected-error @+1 {{quantizes f32 values, got 'i8'}}
  %q = attnk.quantize_tile %x scales(%s : f32) {quant = #attn.quant<i8, per_token>} : !attnk.groups<128xi8, lanes = 16, vec = 8> -> !attnk.groups<128xi8, lanes = 16, vec = 8>
  return
}

// -----

func.func @f(%x: !attnk.groups<128xf32, lanes = 16, vec = 8>, %s: f32) {
  // expected-error @+1 {{not supported yet: 'i4' codes (i8, ui8, f8E4M3FN)}}
  %q = attnk.quantize_tile %x scales(%s : f32) {quant = #attn.quant<i4, per_token>} : !attnk.groups<128xf32, lanes = 16, vec = 8> -> !attnk.groups<128xi8, lanes = 16, vec = 8>
  return
}

// -----

func.func @f(%x: !attnk.groups<128xf32, lanes = 16, vec = 8>, %s: f32) {
  // expected-error @+1 {{returns the scheme's 'i8' codes in the layout of its source}}
  %q = attnk.quantize_tile %x scales(%s : f32) {quant = #attn.quant<i8, per_token>} : !attnk.groups<128xf32, lanes = 16, vec = 8> -> !attnk.groups<128xi8, lanes = 8, vec = 8>
  return
}

// -----

func.func @f(%x: !attnk.groups<128xf32, lanes = 16, vec = 8>, %s: f32) {
  // expected-error @+1 {{takes a zero point exactly when the scheme is asymmetric}}
  %q = attnk.quantize_tile %x scales(%s : f32) {quant = #attn.quant<ui8, per_token, asymmetric>} : !attnk.groups<128xf32, lanes = 16, vec = 8> -> !attnk.groups<128xui8, lanes = 16, vec = 8>
  return
}

// -----

func.func @f(%x: !attnk.groups<128xf32, lanes = 16, vec = 8>, %s: f32) {
  // expected-error @+1 {{takes '!attnk.groups<128xf32, lanes = 16, vec = 8>' scales for a per_channel scheme}}
  %q = attnk.quantize_tile %x scales(%s : f32) {quant = #attn.quant<i8, per_channel>} : !attnk.groups<128xf32, lanes = 16, vec = 8> -> !attnk.groups<128xi8, lanes = 16, vec = 8>
  return
}

// -----

func.func @f(%q: !attnk.groups<128xi8, lanes = 16, vec = 8>, %d: memref<?x?x8x128xui8>, %i: i32) {
  // expected-error @+1 {{stores 'i8' codes into 'memref<?x?x8x128xui8>'}}
  attnk.store_groups %q, %d[%i, %i, %i] lane(%i) tokens(%i, %i) capacity(%i) : !attnk.groups<128xi8, lanes = 16, vec = 8>, memref<?x?x8x128xui8>
  return
}

// -----

func.func @f(%q: !attnk.groups<128xi8, lanes = 16, vec = 8>, %d: memref<?x?x8x128xi8>, %i: i32, %z: f32, %zd: memref<?xi8>) {
  // expected-error @+1 {{stores a zero point only with its scale}}
  attnk.store_groups %q, %d[%i, %i, %i] lane(%i) tokens(%i, %i) capacity(%i) zero_point(%z into %zd : memref<?xi8>) : !attnk.groups<128xi8, lanes = 16, vec = 8>, memref<?x?x8x128xi8>
  return
}

// -----

func.func @f(%q: !attnk.groups<128xi8, lanes = 16, vec = 8>, %d: memref<?x16x8x128xi8>, %i: i32, %pos: memref<?xi32>, %slots: memref<?xi64>) {
  // expected-error @+1 {{takes the rows from positions(...) or from slots(...), not both}}
  attnk.store_groups %q, %d[%i, %i, %i] lane(%i) tokens(%i, %i) capacity(%i) positions(%pos : memref<?xi32>) slots(%slots : memref<?xi64>) : !attnk.groups<128xi8, lanes = 16, vec = 8>, memref<?x16x8x128xi8>
  return
}

// -----

func.func @f(%o: !attnk.acc<64x128xf32>, %out: memref<?x?xbf16>, %c0: index) {
  // expected-error @+1 {{needs one index per destination dimension (2), got 1}}
  attnk.store_tile %o, %out[%c0] : !attnk.acc<64x128xf32>, memref<?x?xbf16>
  return
}

// -----

func.func @f(%o: !attnk.acc<64x128xi32>, %out: memref<?x?xbf16>, %c0: index) {
  // expected-error @+1 {{stores an f32 accumulator (convert an i32 one with attnk.convert_tile first)}}
  attnk.store_tile %o, %out[%c0, %c0] : !attnk.acc<64x128xi32>, memref<?x?xbf16>
  return
}

// -----

func.func @f(%o: !attnk.acc<64x128xf32>, %out: memref<?xbf16>, %c0: index) {
  // expected-error @+1 {{stores a tile into a destination of rank 2 or more}}
  attnk.store_tile %o, %out[%c0] : !attnk.acc<64x128xf32>, memref<?xbf16>
  return
}

// -----

func.func @f(%o: !attnk.acc<64x128xf32>, %out: memref<?x?xi8>, %c0: index) {
  // expected-error @+1 {{stores into bf16, f16 or f32, got 'i8'}}
  attnk.store_tile %o, %out[%c0, %c0] : !attnk.acc<64x128xf32>, memref<?x?xi8>
  return
}

// -----

func.func @f(%v: vector<64xf32>, %out: memref<?xbf16>, %c0: index) {
  // expected-error @+1 {{stores a row vector into f32, got 'bf16'}}
  attnk.store_tile %v, %out[%c0] : vector<64xf32>, memref<?xbf16>
  return
}

// -----

func.func @f(%m: !attnk.tensor_map<128x128xi8, swizzle_128b>, %st: !attnk.stage<128x128xi8, swizzle_128b>, %i: i32) {
  // expected-error @+1 {{loads into a stage that attnk.ring.acquire did not return}}
  attnk.tma_load %m[%i, %i] #attnk.addressing<contiguous> into %st : !attnk.tensor_map<128x128xi8, swizzle_128b>, !attnk.stage<128x128xi8, swizzle_128b>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{needs a plan with a boolean 'persistent' entry}}
  %w = attnk.forward.work {plan = {tileN = 128}} : i32
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{yields 7 work value(s) with this plan, got 1}}
  %w = attnk.forward.work {plan = {persistent = false}} : i32
  return
}

// -----

func.func @f(%m: !attnk.tensor_map<1x128x1x128xi8, none>, %i: i32) {
  %st = attnk.ring.alloc at 0 : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>
  // expected-error @+1 {{takes 10 work value(s) with this plan, got 1}}
  attnk.forward.producer params(%m, %m : !attnk.tensor_map<1x128x1x128xi8, none>, !attnk.tensor_map<1x128x1x128xi8, none>)
      rings(%st : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>) work(%i) {plan = {persistent = false}}
  return
}

// -----

func.func @f(%m: !attnk.tensor_map<1x128x1x128xi8, none>, %q: memref<?xf32>, %i: i32) {
  %st = attnk.ring.alloc at 0 : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>
  // expected-error @+1 {{takes the K and V tensor maps as its first two parameters}}
  attnk.forward.consumer params(%m, %q : !attnk.tensor_map<1x128x1x128xi8, none>, memref<?xf32>)
      rings(%st : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>) work(%i) {plan = {persistent = true}}
  return
}

// -----

func.func @f(%m: !attnk.tensor_map<1x128x1x128xi8, none>, %i: i32) {
  %st = attnk.ring.alloc at 0 : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>
  // expected-error @+1 {{yields 0 tile value(s) with this plan, got 3}}
  %t:3 = attnk.forward.prologue params(%m, %m : !attnk.tensor_map<1x128x1x128xi8, none>, !attnk.tensor_map<1x128x1x128xi8, none>)
      rings(%st : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>) work(%i) {plan = {persistent = true}} : i32, i32, i32
  return
}

// -----

// expected-error @+1 {{a contiguous group holds whole i32 words of codes per lane: 2 elements per lane is not a multiple of 4}}
func.func @f(%x: !attnk.groups<64xf32, lanes = 32, vec = 2, contiguous>) { return }

// -----

func.func @f(%b: i32, %n: i32) {
  // expected-error @+1 {{with whole_tokens a warp holds one token: one slot and 32 lanes per token, got 1 slots of 8 groups × 8 lanes}}
  %g:4 = attnk.group_index %b, %n slot 0 of 1 lanes = 8 groups_per_token = 8 whole_tokens
  return
}

// -----

func.func @f(%s: memref<576xbf16>, %i: i32) {
  // expected-error @+1 {{reads a token's row without indices}}
  %x = attnk.load_groups %s[%i, %i] lane(%i) lanes = 8 : memref<576xbf16> -> !attnk.groups<128xf32, lanes = 8, vec = 8, contiguous>
  return
}

// -----

func.func @f(%s: memref<576xbf16>, %i: i32) {
  // expected-error @+1 {{reads a row into contiguous f32 groups, got '!attnk.groups<128xf32, lanes = 8, vec = 8>'}}
  %x = attnk.load_groups %s lane(%i) lanes = 8 : memref<576xbf16> -> !attnk.groups<128xf32, lanes = 8, vec = 8>
  return
}

// -----

func.func @f(%s: memref<576xbf16>, %i: i32) {
  // expected-error @+1 {{reads 16-byte vectors of 8 elements on 8 lanes, got '!attnk.groups<128xf32, lanes = 8, vec = 4, contiguous>'}}
  %x = attnk.load_groups %s lane(%i) lanes = 8 : memref<576xbf16> -> !attnk.groups<128xf32, lanes = 8, vec = 4, contiguous>
  return
}

// -----

func.func @f(%s: memref<576xbf16>, %i: i32) {
  // expected-error @+1 {{a group of 128 elements at 512 is not within the row 'memref<576xbf16>'}}
  %x = attnk.load_groups %s lane(%i) lanes = 8 offset = 512 : memref<576xbf16> -> !attnk.groups<128xf32, lanes = 8, vec = 8, contiguous>
  return
}

// -----

func.func @f(%s: memref<?x?x8x128xbf16>, %i: i32) {
  // expected-error @+1 {{loads from [token, group] of a [batch, tokens, heads, D] source into vector chunks}}
  %x = attnk.load_groups %s lane(%i) lanes = 16 : memref<?x?x8x128xbf16> -> vector<1x8xbf16>
  return
}

// -----

func.func @f(%x: !attnk.groups<128xf32, lanes = 8, vec = 8, contiguous>) {
  // expected-error @+1 {{computes symmetric scales only for contiguous groups}}
  %s, %z = attnk.group_scales %x {quant = #attn.quant<ui8, per_token, asymmetric>} : !attnk.groups<128xf32, lanes = 8, vec = 8, contiguous> -> f32, f32
  return
}

// -----

func.func @f(%x: !attnk.groups<128xf32, lanes = 8, vec = 8, contiguous>, %s: f32) {
  // expected-error @+1 {{not supported yet: 'i8' codes of contiguous groups (f8E4M3FN)}}
  %q = attnk.quantize_tile %x scales(%s : f32) {quant = #attn.quant<i8, per_token>} : !attnk.groups<128xf32, lanes = 8, vec = 8, contiguous> -> !attnk.groups<128xi8, lanes = 8, vec = 8, contiguous>
  return
}

// -----

func.func @f(%q: !attnk.groups<128xf8E4M3FN, lanes = 8, vec = 8, contiguous>, %row: memref<656xi8>, %i: i32) {
  // expected-error @+1 {{writes a token's row without indices, token counts, positions, slots or zero points}}
  attnk.store_groups %q, %row lane(%i) tokens(%i, %i) : !attnk.groups<128xf8E4M3FN, lanes = 8, vec = 8, contiguous>, memref<656xi8>
  return
}

// -----

func.func @f(%q: !attnk.groups<128xi8, lanes = 8, vec = 8>, %row: memref<656xi8>, %i: i32) {
  // expected-error @+1 {{writes contiguous groups into a row, got '!attnk.groups<128xi8, lanes = 8, vec = 8>'}}
  attnk.store_groups %q, %row lane(%i) : !attnk.groups<128xi8, lanes = 8, vec = 8>, memref<656xi8>
  return
}

// -----

func.func @f(%q: !attnk.groups<64xbf16, lanes = 8, vec = 8, contiguous>, %row: memref<656xi8>, %i: i32) {
  // expected-error @+1 {{a group's 128 bytes at 600 are not within the row 'memref<656xi8>'}}
  attnk.store_groups %q, %row lane(%i) offset = 600 : !attnk.groups<64xbf16, lanes = 8, vec = 8, contiguous>, memref<656xi8>
  return
}

// -----

func.func @f(%q: !attnk.groups<128xf8E4M3FN, lanes = 8, vec = 8, contiguous>, %row: memref<656xi8>, %other: memref<656xi8>, %s: f32, %i: i32) {
  // expected-error @+1 {{writes the f32 scales of groups of at least 4 lanes within the row}}
  attnk.store_groups %q, %row lane(%i) scale(%s into %other : memref<656xi8>) scale_offset = 512 : !attnk.groups<128xf8E4M3FN, lanes = 8, vec = 8, contiguous>, memref<656xi8>
  return
}

// -----

func.func @f(%q: !attnk.groups<128xi8, lanes = 16, vec = 8>, %d: memref<?x?x8x128xi8>, %i: i32) {
  // expected-error @+1 {{writes [group, token, group in token] of a [batch, capacity, heads, D] cache: needs the indices, tokens(...) and capacity(...)}}
  attnk.store_groups %q, %d lane(%i) : !attnk.groups<128xi8, lanes = 16, vec = 8>, memref<?x?x8x128xi8>
  return
}

// -----

func.func @f(%x: !attnk.groups<64xf32, lanes = 8, vec = 8>) {
  // expected-error @+1 {{rounds contiguous f32 groups to bf16 groups of the same layout, without schemes}}
  %r = attnk.convert_tile %x : !attnk.groups<64xf32, lanes = 8, vec = 8> -> !attnk.groups<64xbf16, lanes = 8, vec = 8, contiguous>
  return
}

// -----

func.func @f(%src: memref<?x?x?xbf16>, %pos: memref<?xi32>, %cache: memref<?x?x656xi8>, %i: i32) {
  // expected-error @+1 {{needs static row lengths, got 'memref<?x?x?xbf16>' and 'memref<?x?x656xi8>'}}
  attnk.token_rows %src[%i], %cache positions(%pos : memref<?xi32>) tokens(%i, %i) capacity(%i) : memref<?x?x?xbf16>, memref<?x?x656xi8> {
  ^bb0(%x: memref<576xbf16>, %row: memref<656xi8>):
  }
  return
}

// -----

func.func @f(%src: memref<?x?x576xbf16>, %pos: memref<?xi32>, %cache: memref<?x?x656xi8>, %i: i32) {
  // expected-error @+1 {{body takes the rows 'memref<576xbf16>' and 'memref<656xi8>'}}
  attnk.token_rows %src[%i], %cache positions(%pos : memref<?xi32>) tokens(%i, %i) capacity(%i) : memref<?x?x576xbf16>, memref<?x?x656xi8> {
  ^bb0(%x: memref<576xf32>, %row: memref<656xi8>):
  }
  return
}

// -----

// expected-error @+1 {{a launch's role is an identifier, got ""}}
func.func @f() attributes {l = #attnk.launch<"", grid = [1, 1, 1], block = [32, 1, 1], cluster = [1, 1, 1], smem = 0, params = []>} { return }

// -----

// expected-error @+1 {{a grid is three extents, each a positive number or a symbol, got [0, 1, 1]}}
func.func @f() attributes {l = #attnk.launch<quantize, grid = [0, 1, 1], block = [32, 1, 1], cluster = [1, 1, 1], smem = 0, params = []>} { return }

// -----

// expected-error @+1 {{block and cluster are three positive extents each}}
func.func @f() attributes {l = #attnk.launch<quantize, grid = ["rows", 1, 1], block = [32, 1], cluster = [1, 1, 1], smem = 0, params = []>} { return }

// -----

// expected-error @+1 {{shared memory of -1 bytes}}
func.func @f() attributes {l = #attnk.launch<quantize, grid = ["rows", 1, 1], block = [32, 1, 1], cluster = [1, 1, 1], smem = -1, params = []>} { return }

// -----

// expected-error @+1 {{parameters are named by strings, got [1]}}
func.func @f() attributes {l = #attnk.launch<quantize, grid = ["rows", 1, 1], block = [32, 1, 1], cluster = [1, 1, 1], smem = 0, params = [1]>} { return }

// -----

// expected-error @+1 {{unknown kernel parameter "q_sacle" (the launch ABI table, include/attn/Runtime/LaunchABI.json, has none of that name)}}
func.func @f() attributes {l = #attnk.launch<quantize, grid = ["rows", 1, 1], block = [32, 1, 1], cluster = [1, 1, 1], smem = 0, params = ["q", "q_sacle"]>} { return }

// -----

// expected-error @+1 {{unknown grid symbol "row" (the launch ABI table, include/attn/Runtime/LaunchABI.json, has none of that name)}}
func.func @f() attributes {l = #attnk.launch<quantize, grid = ["row", 1, 1], block = [32, 1, 1], cluster = [1, 1, 1], smem = 0, params = []>} { return }

// -----

// expected-error @+1 {{has launch metadata but no launch ABI}}
attnk.kernel @k(%n: i32) threads = 32 attributes {metadata = {problem = {}}} {
}

// -----

// expected-error @+1 {{launch ABI names 2 parameters, the kernel has 1}}
attnk.kernel @k(%n: i32) threads = 32 attributes {launch = #attnk.launch<quantize, grid = ["rows", 1, 1], block = [32, 1, 1], cluster = [1, 1, 1], smem = 0, params = ["batch", "kv_len"]>} {
}

// -----

// expected-error @+1 {{launch ABI's block is not [32, 1, 1]}}
attnk.kernel @k(%n: i32) threads = 32 attributes {launch = #attnk.launch<quantize, grid = ["rows", 1, 1], block = [64, 1, 1], cluster = [1, 1, 1], smem = 0, params = ["batch"]>} {
}

// -----

// expected-error @+1 {{is programmatic, its launch ABI is not}}
attnk.kernel @k(%n: i32) threads = 32 programmatic attributes {launch = #attnk.launch<combine, grid = ["rows", 1, 1], block = [32, 1, 1], cluster = [1, 1, 1], smem = 0, params = ["batch"]>} {
}

// -----

func.func @f() {
  // expected-error @+1 {{needs both barrier offsets (full, empty) or neither}}
  %k = "attnk.ring.alloc"() {full_barriers = 0 : i64} : () -> !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{stride 8192 is shorter than a stage (16384 bytes)}}
  %k = attnk.ring.alloc at 0 stride 8192 : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  return
}

// -----

func.func @f(%i: i32) {
  // expected-error @+1 {{needs at least one ring}}
  "attnk.ring.acquire"(%i) {operandSegmentSizes = array<i32: 0, 1, 0>} : (i32) -> ()
  return
}

// -----

func.func @f(%k: !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>, %i: i32) {
  // expected-error @+1 {{stage type '!attnk.stage<64x128xi8, swizzle_128b>' is not the ring's}}
  %st = "attnk.ring.acquire"(%k, %i) {operandSegmentSizes = array<i32: 1, 1, 0>} : (!attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>, i32) -> !attnk.stage<64x128xi8, swizzle_128b>
  return
}

// -----

func.func @f(%i: i32, %p: i1) {
  %a = attnk.ring.alloc at 0 barriers 65536, 65552 : !attnk.ring<128x128xbf16, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  %b = attnk.ring.alloc at 32768 barriers 65568, 65584 : !attnk.ring<128x128xbf16, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  // expected-error @+1 {{rings entered together must share their barriers (ring.alloc with the same `barriers`) and their stage count}}
  %sa, %sb = attnk.ring.acquire %a, %b[%i] phase %p : !attnk.ring<128x128xbf16, stages = 2, swizzle_128b, producers = 1, consumers = 1>, !attnk.ring<128x128xbf16, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  attnk.ring.commit %a, %b[%sa, %sb] : !attnk.ring<128x128xbf16, stages = 2, swizzle_128b, producers = 1, consumers = 1>, !attnk.ring<128x128xbf16, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  return
}

// -----

func.func @f(%k: !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>, %i: i32) {
  // expected-error @+1 {{expect_tx needs a positive byte count}}
  %st = attnk.ring.acquire %k[%i] expect_tx 0 : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  attnk.ring.commit %k[%st] : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  return
}

// -----

func.func @f(%m: !attnk.tensor_map<1x64x1x128xi8, swizzle_128b>, %k: !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>, %i: i32) {
  // expected-error @+1 {{expect_tx 16384 differs from the 8192 bytes the TMA loads into the stage copy before its commit}}
  %st = attnk.ring.acquire %k[%i] expect_tx 16384 : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  %top = attnk.subtile %st[0] : !attnk.stage<128x128xi8, swizzle_128b> -> !attnk.stage<64x128xi8, swizzle_128b>
  attnk.tma_load %m[%i, %i, %i, %i] #attnk.addressing<contiguous> into %top : !attnk.tensor_map<1x64x1x128xi8, swizzle_128b>, !attnk.stage<64x128xi8, swizzle_128b>
  attnk.ring.commit %k[%st] : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  return
}

// -----

func.func @f(%k: !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>, %i: i32) {
  // expected-error @+1 {{needs the phase parity of the fill it waits for}}
  %st = attnk.ring.wait %k[%i] : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  attnk.ring.release %k[%st] : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  return
}

// -----

func.func @f(%k: !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>, %i: i32, %p: i1) {
  // expected-error @+1 {{expect_tx announces a producer's TMA bytes: ring.acquire only}}
  %st = attnk.ring.wait %k[%i] phase %p expect_tx 16384 : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  attnk.ring.release %k[%st] : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  return
}

// -----

func.func @f(%k: !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>, %i: i32, %p: i1) {
  %st = attnk.ring.wait %k[%i] phase %p : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  // expected-error @+1 {{named barrier must be in [1, 15] (0 is the CTA's), got 0}}
  attnk.ring.release %k[%st] {named_barrier = 0 : i64} : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  return
}

// -----

func.func @f(%st: !attnk.stage<256x128xi8, none>) {
  // expected-error @+1 {{keeps the stage's columns, element type and swizzle}}
  %a = attnk.subtile %st[0] : !attnk.stage<256x128xi8, none> -> !attnk.stage<128x64xi8, none>
  return
}

// -----

func.func @f(%st: !attnk.stage<256x128xi8, none>) {
  // expected-error @+1 {{rows 96 do not divide the stage's 256}}
  %a = attnk.subtile %st[0] : !attnk.stage<256x128xi8, none> -> !attnk.stage<96x128xi8, none>
  return
}

// -----

func.func @f(%st: !attnk.stage<256x128xi8, none>) {
  // expected-error @+1 {{index 2 is past the stage's 2 bands}}
  %a = attnk.subtile %st[2] : !attnk.stage<256x128xi8, none> -> !attnk.stage<128x128xi8, none>
  return
}

// -----

func.func @f(%st: !attnk.stage<128x128xi8, swizzle_128b>) {
  // expected-error @+1 {{a swizzled band takes whole 8-row swizzle atoms, got 4 rows}}
  %a = attnk.subtile %st[0] : !attnk.stage<128x128xi8, swizzle_128b> -> !attnk.stage<4x128xi8, swizzle_128b>
  return
}

// -----

func.func @f(%m: !attnk.tensor_map<1x128x1x128xi8, swizzle_128b>, %r: !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>, %i: i32, %p: i1) {
  %st = attnk.ring.acquire %r[%i] phase %p : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  // expected-error @+1 {{loads into a stage acquired without expect_tx (the TMA bytes its full barrier must expect)}}
  attnk.tma_load %m[%i, %i, %i, %i] #attnk.addressing<contiguous> into %st : !attnk.tensor_map<1x128x1x128xi8, swizzle_128b>, !attnk.stage<128x128xi8, swizzle_128b>
  attnk.ring.commit %r[%st] : !attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 1>
  return
}

// -----

func.func @f(%s: !attnk.stage<64x128xi8, swizzle_128b>, %n: i32) {
  // expected-error @+1 {{`rows` and `role` go with a stage to stage conversion}}
  %f = attnk.convert_tile %s rows(%n) : !attnk.stage<64x128xi8, swizzle_128b> -> !attnk.frag<64x128xbf16>
  return
}

// -----

func.func @f(%kmap: !attnk.tensor_map<1x128x1x128xi8, none>, %vmap: !attnk.tensor_map<1x128x1x128xi8, none>,
             %r: !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>, %tid: i32, %x: f32) {
  // expected-error @+1 {{takes args (i32)}}
  %s:2 = attnk.forward.key_scales args(%x : f32) params(%kmap, %vmap : !attnk.tensor_map<1x128x1x128xi8, none>, !attnk.tensor_map<1x128x1x128xi8, none>)
      rings(%r : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>) work(%tid) {plan = {persistent = true}} : f32, f32
  return
}

// -----

func.func @f(%kmap: !attnk.tensor_map<1x128x1x128xi8, none>, %vmap: !attnk.tensor_map<1x128x1x128xi8, none>,
             %r: !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>, %tid: i32) {
  // expected-error @+1 {{yields the K and V scales, got 1 results}}
  %s = attnk.forward.key_scales args(%tid : i32) params(%kmap, %vmap : !attnk.tensor_map<1x128x1x128xi8, none>, !attnk.tensor_map<1x128x1x128xi8, none>)
      rings(%r : !attnk.ring<256x128xi8, stages = 2, none, producers = 1, consumers = 128>) work(%tid) {plan = {persistent = true}} : f32
  return
}

// -----

func.func @tma_paged_pages_count(%m: !attnk.tensor_map<16x128xi8, swizzle_128b>, %r: !attnk.ring<64x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 128>, %i: i32) {
  %st = attnk.ring.acquire %r[%i] expect_tx 8192 : !attnk.ring<64x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 128>
  // expected-error @+1 {{needs one page per band of 16 rows (4), got 2}}
  attnk.tma_load %m[%i, %i] #attnk.addressing<paged, page = 16> into %st pages(%i, %i) : !attnk.tensor_map<16x128xi8, swizzle_128b>, !attnk.stage<64x128xi8, swizzle_128b>
  attnk.ring.commit %r[%st] : !attnk.ring<64x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 128>
  return
}

// -----

func.func @tma_paged_table_and_pages(%m: !attnk.tensor_map<64x128xi8, swizzle_128b>, %r: !attnk.ring<64x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 128>, %i: i32, %bt: memref<?x?xi32>) {
  %st = attnk.ring.acquire %r[%i] expect_tx 8192 : !attnk.ring<64x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 128>
  // expected-error @+1 {{takes a block_table or the pages of its bands, not both}}
  attnk.tma_load %m[%i, %i] #attnk.addressing<paged, page = 64> into %st block_table(%bt : memref<?x?xi32>) pages(%i) : !attnk.tensor_map<64x128xi8, swizzle_128b>, !attnk.stage<64x128xi8, swizzle_128b>
  attnk.ring.commit %r[%st] : !attnk.ring<64x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 128>
  return
}

// -----

func.func @tma_contiguous_pages(%m: !attnk.tensor_map<64x128xi8, swizzle_128b>, %r: !attnk.ring<64x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 128>, %i: i32) {
  %st = attnk.ring.acquire %r[%i] expect_tx 8192 : !attnk.ring<64x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 128>
  // expected-error @+1 {{a block_table operand goes with paged addressing, and only with it}}
  attnk.tma_load %m[%i, %i] #attnk.addressing<contiguous> into %st pages(%i) : !attnk.tensor_map<64x128xi8, swizzle_128b>, !attnk.stage<64x128xi8, swizzle_128b>
  attnk.ring.commit %r[%st] : !attnk.ring<64x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 128>
  return
}

// -----

func.func @page_lookup_dynamic_without_blocks(%t: memref<?x?xi32>, %i: i32) {
  // expected-error @+1 {{takes a blocks operand exactly when the table's pages per sequence are dynamic}}
  %p = attnk.page_lookup %t[%i, %i] page = 16 : memref<?x?xi32>
  return
}

// -----

func.func @page_lookup_page_size(%t: memref<?x8xi32>, %i: i32) {
  // expected-error @+1 {{page size must be a positive power of two, got 24}}
  %p = attnk.page_lookup %t[%i, %i] page = 24 : memref<?x8xi32>
  return
}
