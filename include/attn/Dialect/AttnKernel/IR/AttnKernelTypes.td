//===- AttnKernelTypes.td - attnk types --------------------*- tablegen -*-===//
//
// What this file is: the types of the kernel level. Shared memory: a ring of stages with its
// mbarriers (`!attnk.ring`) and one stage of it (`!attnk.stage`), the swizzle part of both; the
// TMA tensor map (`!attnk.tensor_map`); registers: the warpgroup accumulator fragment of a WGMMA
// (`!attnk.acc`, m64nN × f32/s32), the register A operand of a WGMMA (`!attnk.frag`) and where
// a consumer thread's accumulator rows live in the problem (`!attnk.rows`).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNK_TYPES_TD
#define ATTNK_TYPES_TD

include "attn/Dialect/AttnKernel/IR/AttnKernelAttrs.td"

class AttnKernel_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<AttnKernel_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

// A tile: its shape, element type and swizzle, shared by rings, stages and tensor maps.
class AttnKernel_TileType<string name, string typeMnemonic> : AttnKernel_Type<name, typeMnemonic> {
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

def AttnKernel_RingType : AttnKernel_TileType<"Ring", "ring"> {
  let summary = "shared-memory ring of pipeline stages with its full and empty mbarriers";
  let description = [{
    `!attnk.ring<ROWSxCOLSxELEM, stages = N, SWIZZLE, producers = P, consumers = C>`

    N buffers of one ROWS × COLS tile each, in the shared memory of the CTA, row-major with
    the rows swizzled as the tensor map that fills them does (`none`, `swizzle_32b`,
    `swizzle_64b`, `swizzle_128b`: 16-byte chunks of a row XOR-permuted over 2, 4 or 8 rows,
    as TMA writes them and as a WGMMA shared-memory descriptor's layout type reads them), and
    two mbarriers per stage (8 bytes each):

    * `full[s]` completes when the stage holds its tile: P arrivals (a TMA producer arrives once
      with `expect_tx` of the stage's bytes; a producer that writes the stage with threads
      arrives once per warp, P = its warps);
    * `empty[s]` completes when every consumer is done reading it: C arrivals (one per consumer
      warpgroup).

    The ring's footprint is `N · (ROWS · COLS · bits / 8) + 16 · N` bytes, each stage aligned
    to the swizzle span (1024 bytes for `swizzle_128b`); the total must fit the 227 KB of
    dynamic shared memory of an sm_90 CTA.

    Example: `!attnk.ring<128x128xi8, stages = 2, swizzle_128b, producers = 1, consumers = 2>`.

    [PTX ISA: mbarrier](https://docs.nvidia.com/cuda/parallel-thread-execution/#parallel-synchronization-and-communication-instructions-mbarrier),
    [tensor swizzling modes](https://docs.nvidia.com/cuda/parallel-thread-execution/#tensor-swizzling-modes)
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$shape, "::mlir::Type":$elementType,
                        "int64_t":$stages, "::mlir::attnk::Swizzle":$swizzle,
                        "int64_t":$producers, "int64_t":$consumers);
  let extraClassDeclaration = [{
    /// The type of one stage of this ring.
    StageType getStageType() const;
    /// Bytes of one stage's tile.
    int64_t getStageBytes() const;
  }];
}

def AttnKernel_StageType : AttnKernel_TileType<"Stage", "stage"> {
  let summary = "one stage of a ring: a swizzled tile in shared memory";
  let description = [{
    `!attnk.stage<ROWSxCOLSxELEM, SWIZZLE>`: the tile a `ring.acquire` hands a producer to
    fill or a `ring.wait` hands a consumer to read; a WGMMA reads it through a shared-memory
    matrix descriptor derived from this type (base address, leading and stride byte offsets,
    layout type from the swizzle).

    Example: `!attnk.stage<128x128xi8, swizzle_128b>`.

    [PTX ISA: matrix descriptor](https://docs.nvidia.com/cuda/parallel-thread-execution/#asynchronous-warpgroup-level-matrix-shared-memory-layout-matrix-descriptor)
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$shape, "::mlir::Type":$elementType,
                        "::mlir::attnk::Swizzle":$swizzle);
  let extraClassDeclaration = [{
    int64_t getBytes() const;
  }];
}

def AttnKernel_TensorMapType : AttnKernel_TileType<"TensorMap", "tensor_map"> {
  let summary = "TMA tensor map: the box one copy moves, its element type and swizzle";
  let description = [{
    `!attnk.tensor_map<BOXxELEM, SWIZZLE>`: a 128-byte `CUtensorMap` the host encodes with
    `cuTensorMapEncodeTiled` and passes as a `__grid_constant__` kernel parameter. The box
    has one extent per dimension of the global tensor (innermost last, each at most 256); its
    innermost extent times the element size is a multiple of 16 bytes and, when swizzled, at
    most the swizzle span (32, 64 or 128 bytes).

    Example: the K cache [B, S, H, D] of int8 read 128 tokens × 128 channels of one head at a
    time: `!attnk.tensor_map<1x128x1x128xi8, swizzle_128b>`.

    [PTX ISA: tensor map](https://docs.nvidia.com/cuda/parallel-thread-execution/#tensor-map)
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$box, "::mlir::Type":$elementType,
                        "::mlir::attnk::Swizzle":$swizzle);
  let extraClassDeclaration = [{
    /// The box's two innermost extents that are not 1, as [rows, cols] (a 1-D box: [1, cols]).
    ::llvm::SmallVector<int64_t, 2> getTileShape() const;
  }];
}

def AttnKernel_AccType : AttnKernel_Type<"Acc", "acc"> {
  let summary = "warpgroup accumulator fragment of a WGMMA (m64nN × f32 or s32)";
  let description = [{
    `!attnk.acc<64xNxf32>` or `!attnk.acc<64xNxi32>`: the D matrix of `wgmma.mma_async`, held
    by the 128 threads of one warpgroup, N / 2 registers per thread. Thread t (warp w = t / 32,
    lane l) holds, in register i, row `16·w + l/4 + 8·((i/2) mod 2)` and column
    `8·(i/4) + 2·(l mod 4) + (i mod 2)`. N is a multiple of 8 in [8, 256].

    [PTX ISA: WGMMA D fragment](https://docs.nvidia.com/cuda/parallel-thread-execution/#wgmma-64n16-d)
  }];
  let parameters = (ins "int64_t":$m, "int64_t":$n, "::mlir::Type":$elementType);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

def AttnKernel_FragType : AttnKernel_Type<"Frag", "frag"> {
  let summary = "register A operand of a WGMMA (m64 × K of a 16-bit or 8-bit type)";
  let description = [{
    `!attnk.frag<64xKxELEM>`: the A matrix of a `wgmma.mma_async` read from registers, in the
    accumulator's row/column ownership (so a softmax's P, computed in an `!attnk.acc`, becomes
    the A operand of P·V without going through shared memory). ELEM: bf16, f16, f8E4M3FN,
    f8E5M2, i8 or ui8; K a multiple of the instruction's K (16 for 16-bit, 32 for 8-bit types).

    [PTX ISA: WGMMA A in registers](https://docs.nvidia.com/cuda/parallel-thread-execution/#wgmma-64n16-a)
  }];
  let parameters = (ins "int64_t":$m, "int64_t":$k, "::mlir::Type":$elementType);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

def AttnKernel_RowsType : AttnKernel_Type<"Rows", "rows"> {
  let summary = "a consumer thread's rows of an m64 accumulator fragment";
  let description = [{
    `!attnk.rows` or `!attnk.rows<partial>`: where a consumer thread's two rows of an
    `!attnk.acc<64xNxf32>` (O) and of its row vectors live in the attention problem — the
    thread's consumer warpgroup (warp-uniform) and index in it, its fragment rows r0 and
    r0 + 8 and column base, each row's query token and head, and the warpgroup's first query
    token. The tile loop computes them once; the merge of two warpgroups and the epilogue read
    them as this value, so the instructions stay where the loop placed them. With `partial`
    (prefill, whose last query chunk may be short) each row also carries whether it exists.

    Per thread: 10 i32 values (12 with `partial`: two i1 more).

    Example: `%o, %m, %l, %unit, %rows = attnk.forward.consumer ... : ..., f32, !attnk.rows`.
  }];
  let parameters = (ins DefaultValuedParameter<"bool", "false">:$partial);
  let hasCustomAssemblyFormat = 1;
  let extraClassDeclaration = [{
    /// The i32 values of a thread's rows (without the two i1 flags of a partial tile).
    static constexpr unsigned kIndexValues = 10;
  }];
}

def AttnKernel_GroupsType : AttnKernel_Type<"Groups", "groups"> {
  let summary = "one scale group of a quantize kernel, spread over the lanes of a warp";
  let description = [{
    `!attnk.groups<CxELEM, lanes = L, vec = V>`: C consecutive elements of a row (one scale
    group) held by L lanes of a warp (L a power of two ≤ 32, so a warp holds 32 / L groups):
    the lane of rank r holds the C / L elements `(r + c · L) · V + j` for chunks c of V
    elements (j < V) — the order 16-byte loads read them. ELEM: f32 (values widened for
    quantization) or the codes: i8, ui8, f8E4M3FN.

    With `contiguous`, the lane of rank r holds the C / L consecutive elements
    `r · C / L + c · V + j` instead (the layout of a row kernel whose lanes read consecutive
    16-byte vectors, MLA's cache quantization); ELEM may then also be bf16 (values rounded
    for storing).

    Example: `!attnk.groups<128xf32, lanes = 16, vec = 8>` (a per_token_head group of 128
    bf16 values, 8 elements per lane in one chunk); `!attnk.groups<128xf32, lanes = 8,
    vec = 8, contiguous>` (one 1 × 128 tile of an MLA latent row, 16 consecutive elements per
    lane).
  }];
  let parameters = (ins "int64_t":$elems, "::mlir::Type":$elementType, "int64_t":$lanes,
                        "int64_t":$vec, DefaultValuedParameter<"bool", "false">:$contiguous);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Chunks of V elements per lane.
    int64_t getChunks() const { return getElems() / (getLanes() * getVec()); }
    /// Elements per lane.
    int64_t getLaneElems() const { return getElems() / getLanes(); }
    /// The registers of one thread: f32 groups hold each element twice (as loaded, and with NaN
    /// as 0), codes one i8 per element; contiguous groups hold f32 values once (as loaded),
    /// bf16 values two and codes four to an i32 word.
    ::llvm::SmallVector<::mlir::Type> getRegisterTypes() const;
  }];
}

#endif // ATTNK_TYPES_TD
