//===- AttnKernelAttrs.td - attnk enums and attributes -----*- tablegen -*-===//
//
// What this file is: the enums and attributes of the kernel level: the shared-memory swizzle
// (part of ring, stage and tensor-map types), the addressing of a TMA tile load (contiguous,
// paged through a block table, gathered by indices), which part of a dequantization a
// `convert_tile` performs, the form of a split merge, and a kernel's launch ABI.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNK_ATTRS_TD
#define ATTNK_ATTRS_TD

include "attn/Dialect/AttnKernel/IR/AttnKernelDialect.td"
include "mlir/IR/EnumAttr.td"

def AttnKernel_Swizzle : I32EnumAttr<"Swizzle", "shared-memory swizzle of a tile's rows", [
    I32EnumAttrCase<"none", 0>,
    I32EnumAttrCase<"swizzle_32b", 1>,
    I32EnumAttrCase<"swizzle_64b", 2>,
    I32EnumAttrCase<"swizzle_128b", 3>]> {
  let cppNamespace = "::mlir::attnk";
  let genSpecializedAttr = 0;
}

def AttnKernel_AddressingKind : I32EnumAttr<"AddressingKind", "how a TMA load finds its rows", [
    I32EnumAttrCase<"contiguous", 0>,
    I32EnumAttrCase<"paged", 1>,
    I32EnumAttrCase<"gathered", 2>]> {
  let cppNamespace = "::mlir::attnk";
  let genSpecializedAttr = 0;
}

def AttnKernel_ConvertPart : I32EnumAttr<"ConvertPart", "what part of a dequantization runs", [
    I32EnumAttrCase<"full", 0>,
    I32EnumAttrCase<"codes", 1>,
    I32EnumAttrCase<"scales", 2>]> {
  let cppNamespace = "::mlir::attnk";
  let genSpecializedAttr = 0;
}

def AttnKernel_CombineForm : I32EnumAttr<"CombineForm", "how a combine kernel spreads its work", [
    I32EnumAttrCase<"narrow", 0>,
    I32EnumAttrCase<"wide", 1>]> {
  let cppNamespace = "::mlir::attnk";
  let genSpecializedAttr = 0;
}

class AttnKernel_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<AttnKernel_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def AttnKernel_SwizzleAttr : EnumAttr<AttnKernel_Dialect, AttnKernel_Swizzle, "swizzle"> {
  let summary = "shared-memory swizzle: none, swizzle_32b, swizzle_64b or swizzle_128b";
  let assemblyFormat = "`<` $value `>`";
}

def AttnKernel_ConvertPartAttr : EnumAttr<AttnKernel_Dialect, AttnKernel_ConvertPart, "part"> {
  let summary = "part of a dequantization: full (codes and scales), codes only, or scales only";
  let assemblyFormat = "`<` $value `>`";
}

def AttnKernel_CombineFormAttr : EnumAttr<AttnKernel_Dialect, AttnKernel_CombineForm, "combine_form"> {
  let summary = "combine kernel form: narrow (a warp per row) or wide (a CTA per row)";
  let assemblyFormat = "$value";
}

def AttnKernel_AddressingAttr : AttnKernel_Attr<"Addressing", "addressing"> {
  let summary = "how a TMA tile load addresses its rows";
  let description = [{
    * `#attnk.addressing<contiguous>`: the tile's rows are consecutive rows of the tensor map's
      tensor, at the load's coordinates.
    * `#attnk.addressing<paged, page = P>`: the row coordinate is a logical position in a
      sequence whose KV cache is stored in pages of P tokens; the load reads the page number
      from the block table operand (`[batch, logical page]`, i32) and turns the row into
      `page · P + row mod P`. A box never straddles two pages (P is a multiple of the box rows).
    * `#attnk.addressing<gathered>`: each row of the tile is the row of the tensor named by the
      i32 index operand (top-k sparse attention); rows are fetched one box row at a time.
  }];
  let parameters = (ins "::mlir::attnk::AddressingKind":$kind,
                        DefaultValuedParameter<"int64_t", "0">:$pageSize);
  let assemblyFormat = "`<` $kind (`,` `page` `=` $pageSize^)? `>`";
  let genVerifyDecl = 1;
}


def AttnKernel_LaunchAttr : AttnKernel_Attr<"Launch", "launch"> {
  let summary = "the launch ABI of one kernel: grid, block, cluster, shared memory, parameters";
  let description = [{
    How a launcher starts one kernel — what the runtime, qattn and attn-bench read from the
    `kernels[]` entries of the launch metadata (docs/GPUDecode.md):

    * `role`: what the kernel is to its spec (`quantize`, `combine`, `decode`);
    * `grid`: three extents, each a number or a symbol the launcher resolves from the problem
      (`"quantize_ctas"`, `"token_ctas"`, `"rows"`, `"row_blocks"`, `"groups"`, `"batch"`, …);
    * `block`, `cluster`: three extents each; `smem`: dynamic shared memory in bytes;
    * `params`: the kernel's parameters in order, by the name a launcher binds a value to
      (`attnk.kernel` checks one per parameter);
    * `programmatic`: launched as the programmatic dependent of the kernel before it;
    * `extra`: further entries of the kernel's metadata (e.g. `min_splits` of a combine kernel).

    The main kernel of a spec also carries the spec's `metadata` (problem, schedule); the
    metadata writer turns both into the JSON of `attn.launch` (`attnk::launchDocumentJSON`).

    Example:
    ```mlir
    #attnk.launch<combine, grid = ["row_blocks", "groups", "batch"], block = [128, 1, 1],
                  cluster = [1, 1, 1], smem = 2048,
                  params = ["workspace", "out", "batch", "num_splits"], programmatic,
                  extra = {min_splits = 2 : i64}>
    ```
  }];
  let parameters = (ins StringRefParameter<"the kernel's role">:$role, "::mlir::ArrayAttr":$grid,
                        ArrayRefParameter<"int64_t">:$block,
                        ArrayRefParameter<"int64_t">:$cluster, "int64_t":$smem,
                        "::mlir::ArrayAttr":$params, "bool":$programmatic,
                        "::mlir::DictionaryAttr":$extra);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

#endif // ATTNK_ATTRS_TD
