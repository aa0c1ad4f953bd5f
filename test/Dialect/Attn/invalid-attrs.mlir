// RUN: attn-opt %s -split-input-file -verify-diagnostics
// One case per diagnostic of the attn attributes (#attn.quant, #attn.schedule, #attn.role, #attn.pq).

// expected-error @+1 {{quantized element type must be i8, ui8, i4, f8E4M3FN or f8E5M2, got 'f32'}}
#bad = #attn.quant<f32, per_token>
func.func private @use() attributes {q = #bad}

// -----

// expected-error @+1 {{asymmetric quantization needs an integer element type, got 'f8E4M3FN'}}
func.func private @f() attributes {q = #attn.quant<f8E4M3FN, per_token, asymmetric>}

// -----

// expected-error @+1 {{scale type must be f32, f16 or bf16, got 'i32'}}
func.func private @f() attributes {q = #attn.quant<i8, per_token, scale = i32>}

// -----

// expected-error @+1 {{per_group size must be positive, got 0}}
func.func private @f() attributes {q = #attn.quant<i8, per_group<0>>}

// -----

// expected-error @+1 {{per_block extents must be positive, got 0x128}}
func.func private @f() attributes {q = #attn.quant<i8, per_block<0x128>>}

// -----

// expected-error @+1 {{per_block takes two extents <rows x cols>}}
func.func private @f() attributes {q = #attn.quant<i8, per_block<128>>}

// -----

// expected-error @+1 {{unknown granularity 'per_row'}}
func.func private @f() attributes {q = #attn.quant<i8, per_row>}

// -----

// expected-error @+1 {{expected 'symmetric', 'asymmetric' or 'scale = <type>', got 'signed'}}
func.func private @f() attributes {q = #attn.quant<i8, per_token, signed>}

// -----

// expected-error @+1 {{consumer warpgroups must be in [1, 4], got 5}}
func.func private @f() attributes {s = #attn.schedule<roles = [consumer<warpgroups = 5, regs = 64>]>}

// -----

// expected-error @+1 {{producer regs must be a multiple of 8 in [24, 256] (setmaxnreg), got 20}}
func.func private @f() attributes {s = #attn.schedule<roles = [producer<warpgroups = 1, regs = 20>, consumer<warpgroups = 1, regs = 64>]>}

// -----

// expected-error @+1 {{unknown warp role 'loader'; expected producer or consumer}}
func.func private @f() attributes {s = #attn.schedule<roles = [loader<warpgroups = 1, regs = 24>]>}

// -----

// expected-error @+1 {{roles take at most one producer entry}}
func.func private @f() attributes {s = #attn.schedule<roles = [producer<warpgroups = 1, regs = 64>, producer<warpgroups = 1, regs = 64>, consumer<warpgroups = 1, regs = 64>]>}

// -----

// expected-error @+1 {{with several consumer entries each is one warpgroup (its own register budget), got warpgroups = 2}}
func.func private @f() attributes {s = #attn.schedule<roles = [consumer<warpgroups = 1, regs = 64>, consumer<warpgroups = 2, regs = 64>]>}

// -----

// expected-error @+1 {{roles need a consumer entry}}
func.func private @f() attributes {s = #attn.schedule<roles = [producer<warpgroups = 1, regs = 24>]>}

// -----

// expected-error @+1 {{warp roles need 68608 registers, more than the SM's register file (65536)}}
func.func private @f() attributes {s = #attn.schedule<roles = [producer<warpgroups = 1, regs = 24>, consumer<warpgroups = 2, regs = 256>]>}

// -----

// Two CTAs per SM share its register file.
// expected-error @+1 {{warp roles need 59392 registers per CTA, 118784 for 2 CTAs per SM, more than the SM's register file (65536)}}
func.func private @f() attributes {s = #attn.schedule<roles = [producer<warpgroups = 2, regs = 56>, consumer<warpgroups = 2, regs = 176>], ctas_per_sm = 2>}

// -----

// expected-error @+1 {{ctas_per_sm must be in [1, 4], got 5}}
func.func private @f() attributes {s = #attn.schedule<ctas_per_sm = 5>}

// -----

// expected-error @+1 {{schedule field 'ctas_per_sm' must be positive, got 0}}
func.func private @f() attributes {s = #attn.schedule<ctas_per_sm = 0>}

// -----

// expected-error @+1 {{split_kv must be positive or 'auto', got 0}}
func.func private @f() attributes {s = #attn.schedule<split_kv = 0>}

// -----

// expected-error @+1 {{schedule field 'pack_q_heads' must be positive, got -2}}
func.func private @f() attributes {s = #attn.schedule<pack_q_heads = -2>}

// -----

// expected-error @+1 {{tile_n must be a positive multiple of 8 up to 512, got 100}}
func.func private @f() attributes {s = #attn.schedule<tile_n = 100>}

// -----

// expected-error @+1 {{stages must be in [1, 8], got 9}}
func.func private @f() attributes {s = #attn.schedule<stages = 9>}

// -----

// expected-error @+1 {{schedule field 'stages' must be positive, got 0}}
func.func private @f() attributes {s = #attn.schedule<stages = 0>}

// -----

// expected-error @+1 {{cluster takes 1 to 3 extents, each at least 1}}
func.func private @f() attributes {s = #attn.schedule<cluster = [2, 0]>}

// -----

// expected-error @+1 {{cluster of 4 × 4 CTAs exceeds the portable maximum of 8}}
func.func private @f() attributes {s = #attn.schedule<cluster = [4, 4]>}

// -----

// Extents whose product overflows int64 are refused, not wrapped (found by the UBSan fuzz run).
// expected-error @+1 {{cluster of 16 × 9223372036854775807 CTAs exceeds the portable maximum of 8}}
func.func private @f() attributes {s = #attn.schedule<cluster = [16, 9223372036854775807]>}

// -----

// expected-error @+1 {{crossover needs a 2-CTA cluster, got 4 CTAs}}
func.func private @f() attributes {s = #attn.schedule<cluster = [4], crossover = true>}

// -----

// expected-error @+1 {{schedule field 'tile_n' given twice}}
func.func private @f() attributes {s = #attn.schedule<tile_n = 64, tile_n = 128>}

// -----

// expected-error @+1 {{unknown schedule field 'warps'}}
func.func private @f() attributes {s = #attn.schedule<warps = 4>}

// -----

// expected-error @+1 {{expected 'true' or 'false', got 'yes'}}
func.func private @f() attributes {s = #attn.schedule<pingpong = yes>}

// -----

// expected-error @+1 {{dsub must be 1, 2, 4 or 8, got 3}}
func.func private @f() attributes {p = #attn.pq<dsub = 3>}

// -----

// expected-error @+1 {{centroids must be 16 (4-bit codes), 32 or 64 (8-bit codes, vpermb), got 256}}
func.func private @f() attributes {p = #attn.pq<dsub = 1, centroids = 256>}

// -----

// expected-error @+1 {{only 32-key code blocks are supported, got 64}}
func.func private @f() attributes {p = #attn.pq<dsub = 1, block = 64>}
