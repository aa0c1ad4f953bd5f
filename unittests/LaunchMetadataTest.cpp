//===- LaunchMetadataTest.cpp - tests of the JSON / launch metadata reader -===//
//
// What this file is: unit tests of attn/Runtime/LaunchMetadata.h: strict JSON (escapes, numbers,
// malformed input with its position, duplicate keys, nesting), the bounded file reader and the
// decode `*.launch.json` reader (the example of docs/GPUDecode.md, missing / mistyped /
// inconsistent fields, grid symbols, a paged cache).
//
//===----------------------------------------------------------------------===//

#include "attn/Runtime/LaunchMetadata.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

using namespace attn::rt;

namespace {
// The example of docs/GPUDecode.md.
const char *kGood = R"({
  "format": "attn-launch-v1", "arch": 90,
  "problem": {"kind": "decode", "batch": -1, "q_len": 3, "q_heads": 16, "kv_heads": 1,
              "head_dim": 128, "kv_len": -1, "kv_dtype": "i8", "k_quant": "per_token_head",
              "v_quant": "per_token_head", "out_dtype": "bf16", "causal": true,
              "alibi": false, "seq_lens": true, "softmax_scale": 0.08838834764831845},
  "schedule": {"pack_q_heads": 16, "rows_per_cta": 48, "groups": 1, "tile_n": 128,
               "stages": 2, "split_kv": 0, "producer_regs": 40, "consumer_regs": 232},
  "workspace_floats_per_split": 6240,
  "tensor_maps": {"k": {"dtype": "u8", "box": [128, 1, 128, 1]},
                  "v": {"dtype": "u8", "box": [128, 1, 128, 1]}},
  "kernels": [
    {"name": "f_decode", "role": "decode", "block": [256, 1, 1], "cluster": [1, 1, 1],
     "smem_bytes": 147456, "grid": ["num_splits", "groups", "batch"],
     "params": ["k_map", "v_map", "q", "k_scale", "v_scale", "seq_lens", "alibi", "out",
                "workspace", "batch", "kv_len", "num_splits"]},
    {"name": "f_combine", "role": "combine", "block": [128, 1, 1], "cluster": [1, 1, 1],
     "smem_bytes": 0, "grid": ["row_blocks", "groups", "batch"],
     "params": ["workspace", "out", "batch", "num_splits"]}
  ]
})";

std::string replaced(std::string s, const std::string &from, const std::string &to) {
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos)
    s.replace(at, from.size(), to);
  return s;
}

std::string parseError(const std::string &json) {
  DecodeLaunch m;
  std::string error;
  EXPECT_FALSE(parseDecodeLaunch(json, m, error));
  return error;
}
} // namespace

TEST(LaunchMetadata, StringsAndNumbersFollowJson) {
  // Escapes (incl. a surrogate pair) decode to UTF-8; an integer may be written as 1.0 or 1e0.
  std::string esc = replaced(kGood, R"("name": "f_decode")", R"("name": "f_\u00e9\ud83d\ude00")");
  esc = replaced(esc, R"("arch": 90)", R"("arch": 9.0e1)");
  DecodeLaunch m;
  std::string error;
  ASSERT_TRUE(parseDecodeLaunch(esc, m, error)) << error;
  EXPECT_EQ(m.kernels[0].name, "f_\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(m.arch, 90);
  EXPECT_EQ(parseError(replaced(kGood, R"("arch": 90)", R"("arch": 90.5)")),
            "field \"arch\" must be an integer in 10..1000, got 90.5");
}

TEST(LaunchMetadata, MalformedJsonSaysWhatAndWhere) {
  struct Case {
    const char *text, *message;
  } cases[] = {
      {"{\"a\": 1,}", "line 1, column 9: syntax error while parsing object key"},
      {"[1, 2", "unexpected end of input; expected ']'"},
      {"{\"a\" 1}", "expected ':'"},
      {"\"abc", "missing closing quote"},
      {"\"a\\x\"", "forbidden character after backslash"},
      {"\"\\u12g4\"", "'\\u' must be followed by 4 hex digits"},
      {"\"\\udc00\"", "surrogate U+DC00..U+DFFF must follow U+D800..U+DBFF"},
      {"{\"a\": \"\x01\"}", "control character U+0001"},
      {"01", "line 1, column 2"},
      {"-", "expected digit after '-'"},
      {"1.", "expected digit after '.'"},
      {"1e", "after exponent"},
      {"1e999", "number overflow parsing '1e999'"},
      {"tru", "invalid literal"},
      {"{} x", "expected end of input"},
      {"{\"a\": 1} // comment", "line 1, column 10"},
      {"", "unexpected end of input"},
      {"\n\n  [nul]", "line 3, column "},
      {"{\"a\": 1, \"a\": 2}", "duplicate key \"a\" at the top level"},
      {R"({"p": {"k": [1, {"b": 1, "b": 2}]}})", "duplicate key \"b\" in \"p.k[1]\""},
  };
  for (const Case &c : cases) {
    std::string error = parseError(c.text);
    EXPECT_EQ(error.rfind("malformed JSON: ", 0), 0u) << c.text << " -> " << error;
    EXPECT_NE(error.find(c.message), std::string::npos) << c.text << " -> " << error;
  }
  // A duplicate key inside the real document is refused, not silently overwritten.
  EXPECT_EQ(parseError(replaced(kGood, R"("arch": 90)", R"("arch": 90, "arch": 80)")),
            "malformed JSON: duplicate key \"arch\" at the top level");
  EXPECT_EQ(parseError(replaced(kGood, R"("tile_n": 128)", R"("tile_n": 128, "tile_n": 64)")),
            "malformed JSON: duplicate key \"tile_n\" in \"schedule\"");
  // Deep nesting is refused, not a stack overflow (closed or not).
  EXPECT_EQ(parseError(std::string(100000, '[')),
            "malformed JSON: JSON nested deeper than 256 levels");
  EXPECT_EQ(parseError(std::string(300, '[') + std::string(300, ']')),
            "malformed JSON: JSON nested deeper than 256 levels");
}

TEST(LaunchMetadata, ReadsTheDocumentedExample) {
  DecodeLaunch m;
  std::string error;
  ASSERT_TRUE(parseDecodeLaunch(kGood, m, error)) << error;
  EXPECT_EQ(m.format, "attn-launch-v1");
  EXPECT_EQ(m.arch, 90);
  EXPECT_EQ(m.kind, "decode");
  EXPECT_EQ(m.batch, -1);
  EXPECT_EQ(m.qLen, 3);
  EXPECT_EQ(m.qHeads, 16);
  EXPECT_EQ(m.kvHeads, 1);
  EXPECT_EQ(m.headDim, 128);
  EXPECT_EQ(m.kvLen, -1);
  EXPECT_EQ(m.kvDtype, "i8");
  EXPECT_EQ(m.kQuant, "per_token_head");
  EXPECT_EQ(m.vQuant, "per_token_head");
  EXPECT_TRUE(m.causal);
  EXPECT_FALSE(m.alibi);
  EXPECT_TRUE(m.seqLens);
  EXPECT_DOUBLE_EQ(m.softmaxScale, 0.08838834764831845);
  EXPECT_EQ(m.packQHeads, 16);
  EXPECT_EQ(m.rowsPerCta, 48);
  EXPECT_EQ(m.groups, 1);
  EXPECT_EQ(m.tileN, 128);
  EXPECT_EQ(m.stages, 2);
  EXPECT_EQ(m.splitKv, 0);
  EXPECT_EQ(m.producerRegs, 40);
  EXPECT_EQ(m.consumerRegs, 232);
  EXPECT_EQ(m.workspaceFloatsPerSplit, 6240);
  EXPECT_EQ(m.kMap.dtype, "u8");
  EXPECT_EQ(m.vMap.box, (std::vector<unsigned>{128, 1, 128, 1}));
  ASSERT_EQ(m.kernels.size(), 2u);
  const LaunchKernel *d = m.kernel("decode");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->name, "f_decode");
  EXPECT_EQ(d->block[0], 256u);
  EXPECT_EQ(d->cluster[2], 1u);
  EXPECT_EQ(d->smemBytes, 147456u);
  EXPECT_EQ(d->grid[0].symbol, "num_splits");
  EXPECT_EQ(d->grid[2].symbol, "batch");
  ASSERT_EQ(d->params.size(), 12u);
  EXPECT_EQ(d->params[0], "k_map");
  EXPECT_EQ(d->params[11], "num_splits");
  const LaunchKernel *c = m.kernel("combine");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->params, (std::vector<std::string>{"workspace", "out", "batch", "num_splits"}));

  unsigned grid[3];
  ASSERT_TRUE(resolveGrid(*d, {{"num_splits", 4}, {"groups", 1}, {"batch", 16}}, grid, error))
      << error;
  EXPECT_EQ(grid[0], 4u);
  EXPECT_EQ(grid[1], 1u);
  EXPECT_EQ(grid[2], 16u);
  EXPECT_FALSE(resolveGrid(*c, {{"groups", 1}, {"batch", 16}}, grid, error));
  EXPECT_NE(error.find("grid symbol \"row_blocks\" (ceil_div(rows, 4)) needs the launch input "
                       "\"rows\""),
            std::string::npos)
      << error;
  ASSERT_TRUE(resolveGrid(*c, {{"rows", 130}, {"groups", 1}, {"batch", 16}}, grid, error)) << error;
  EXPECT_EQ(grid[0], 33u); // ceil(130 / 4)
  EXPECT_FALSE(resolveGrid(*d, {{"num_splits", 1}, {"groups", 1}, {"batch", 70000}}, grid, error));
  EXPECT_NE(error.find("outside 1..65535"), std::string::npos) << error;
}

TEST(LaunchMetadata, CombineKernelBySplitCount) {
  // A second combine kernel for 17 splits and more; the first stays the default from 2.
  std::string json = replaced(kGood, R"("params": ["workspace", "out", "batch", "num_splits"]})",
                              R"("params": ["workspace", "out", "batch", "num_splits"]},
    {"name": "f_wide", "role": "combine", "min_splits": 17, "programmatic": true,
     "block": [512, 1, 1], "cluster": [1, 1, 1], "smem_bytes": 8448,
     "grid": ["row_blocks", "groups", "batch"],
     "params": ["workspace", "out", "batch", "num_splits"]})");
  DecodeLaunch m;
  std::string error;
  ASSERT_TRUE(parseDecodeLaunch(json, m, error)) << error;
  EXPECT_EQ(m.combineKernel(1), nullptr);
  EXPECT_EQ(m.combineKernel(2)->name, "f_combine");
  EXPECT_FALSE(m.combineKernel(2)->programmatic);
  EXPECT_EQ(m.combineKernel(16)->name, "f_combine");
  EXPECT_EQ(m.combineKernel(17)->name, "f_wide");
  EXPECT_TRUE(m.combineKernel(17)->programmatic);
  EXPECT_EQ(m.combineKernel(1000)->name, "f_wide");
  EXPECT_EQ(m.combineKernel(1000)->block[0], 512u);
  // Two combine kernels for the same split counts are ambiguous.
  EXPECT_EQ(parseError(replaced(json, R"("min_splits": 17)", R"("min_splits": 2)")),
            "two kernels with role \"combine\" and min_splits 2");
}

TEST(LaunchMetadata, ClusterMergedSplits) {
  // Without cluster_splits every split count needs a combine kernel.
  DecodeLaunch m;
  std::string error;
  ASSERT_TRUE(parseDecodeLaunch(kGood, m, error)) << error;
  EXPECT_FALSE(m.clusterMerges(2));
  std::string json =
      replaced(kGood, R"("role": "decode",)", R"("role": "decode", "cluster_splits": 2,)");
  ASSERT_TRUE(parseDecodeLaunch(json, m, error)) << error;
  EXPECT_FALSE(m.clusterMerges(1)); // one split: nothing to merge
  EXPECT_TRUE(m.clusterMerges(2));
  EXPECT_FALSE(m.clusterMerges(3));
  EXPECT_EQ(parseError(replaced(json, R"("cluster_splits": 2)", R"("cluster_splits": 17)")),
            "field \"kernels[0].cluster_splits\" must be an integer in 0..16, got 17");
}

TEST(LaunchMetadata, WideBatchCompanion) {
  // A second decode kernel with ctas_per_sm 2 runs one split of more CTAs than SMs.
  const std::string wide =
      R"({"name": "f_decode_2cta", "role": "decode", "ctas_per_sm": 2, "tile_n": 64,
     "block": [256, 1, 1], "cluster": [1, 1, 1], "smem_bytes": 92288,
     "grid": ["num_splits", "groups", "batch"], "params": ["k_map"]},
    {"name": "f_combine")";
  std::string json = replaced(kGood, R"({"name": "f_combine")", wide);
  DecodeLaunch m;
  std::string error;
  ASSERT_TRUE(parseDecodeLaunch(json, m, error)) << error;
  EXPECT_EQ(m.kernel("decode")->name, "f_decode");
  EXPECT_EQ(m.decodeKernel(1, 256, 132)->name, "f_decode_2cta");
  EXPECT_EQ(m.decodeKernel(1, 256, 132)->tileN, 64);
  EXPECT_EQ(m.decodeKernel(1, 132, 132)->name, "f_decode"); // one wave already
  EXPECT_EQ(m.decodeKernel(2, 256, 132)->name, "f_decode"); // splits: the first kernel
  // Without a companion: always the first decode kernel.
  ASSERT_TRUE(parseDecodeLaunch(kGood, m, error)) << error;
  EXPECT_EQ(m.decodeKernel(1, 1000, 132)->name, "f_decode");
  // The first decode kernel runs one CTA per SM; two with the same ctas_per_sm are an error.
  EXPECT_EQ(
      parseError(replaced(kGood, R"("role": "decode",)", R"("role": "decode", "ctas_per_sm": 2,)")),
      "the first decode kernel (f_decode) has ctas_per_sm 2 (the first one runs one CTA "
      "per SM)");
  EXPECT_EQ(parseError(replaced(json, R"("ctas_per_sm": 2, "tile_n": 64,)", "")),
            "two kernels with role \"decode\" and ctas_per_sm 1");
  EXPECT_EQ(parseError(replaced(json, R"("ctas_per_sm": 2)", R"("ctas_per_sm": 5)")),
            "field \"kernels[1].ctas_per_sm\" must be an integer in 1..4, got 5");
}

TEST(LaunchMetadata, HadamardIsOptional) {
  DecodeLaunch m;
  std::string error;
  ASSERT_TRUE(parseDecodeLaunch(kGood, m, error)) << error;
  EXPECT_FALSE(m.hadamard); // metadata before `hadamard`: unrotated inputs
  std::string json = replaced(kGood, R"("alibi": false,)", R"("alibi": false, "hadamard": true,)");
  ASSERT_TRUE(parseDecodeLaunch(json, m, error)) << error;
  EXPECT_TRUE(m.hadamard);
  EXPECT_EQ(parseError(replaced(kGood, R"("alibi": false,)", R"("alibi": false, "hadamard": 1,)")),
            "field \"problem.hadamard\" must be a boolean, not a number");
}

TEST(LaunchMetadata, WindowIsOptional) {
  DecodeLaunch m;
  std::string error;
  ASSERT_TRUE(parseDecodeLaunch(kGood, m, error)) << error;
  EXPECT_EQ(m.windowLeft, -1); // no window: unbounded both ways
  EXPECT_EQ(m.windowRight, -1);
  std::string json = replaced(kGood, R"("alibi": false,)", R"("alibi": false, "window": [127, 0],)");
  ASSERT_TRUE(parseDecodeLaunch(json, m, error)) << error;
  EXPECT_EQ(m.windowLeft, 127);
  EXPECT_EQ(m.windowRight, 0);
  EXPECT_EQ(parseError(replaced(json, "[127, 0]", "[127]")),
            "field \"problem.window\" must have 2 entries, has 1");
  EXPECT_EQ(parseError(replaced(json, "[127, 0]", "[-2, 0]")),
            "field \"problem.window[0]\" must be an integer in -1..2147483647, got -2");
  EXPECT_EQ(parseError(replaced(json, "[127, 0]", "[1, 0.5]")),
            "field \"problem.window[1]\" must be an integer in -1..2147483647, got 0.5");
  EXPECT_EQ(parseError(replaced(json, "[127, 0]", "127")),
            "field \"problem.window\" must be an array, not a number");
}

TEST(LaunchMetadata, PagedCacheIsOptional) {
  DecodeLaunch m;
  std::string error;
  ASSERT_TRUE(parseDecodeLaunch(kGood, m, error)) << error;
  EXPECT_EQ(m.pageSize, 0); // a contiguous cache
  std::string paged = R"("workspace_floats_per_split": 6240,
  "paged": {"page_size": 16, "max_blocks": 64, "num_pages": -1},)";
  std::string json = replaced(kGood, R"("workspace_floats_per_split": 6240,)", paged);
  ASSERT_TRUE(parseDecodeLaunch(json, m, error)) << error;
  EXPECT_EQ(m.pageSize, 16);
  EXPECT_EQ(m.maxBlocks, 64);
  EXPECT_EQ(m.numPages, -1);
  const char *why = "field \"paged.page_size\" must be a power of two and \"paged.max_blocks\" "
                    "and \"paged.num_pages\" >= 1 (or -1: known at launch)";
  EXPECT_EQ(parseError(replaced(json, R"("page_size": 16)", R"("page_size": 48)")), why);
  EXPECT_EQ(parseError(replaced(json, R"("page_size": 16)", R"("page_size": 512)")),
            "field \"paged.page_size\" must be an integer in 1..256, got 512");
  EXPECT_EQ(parseError(replaced(json, R"("max_blocks": 64)", R"("max_blocks": 0)")), why);
  EXPECT_EQ(parseError(replaced(json, R"("max_blocks": 64)", R"("max_blocks": -2)")),
            "field \"paged.max_blocks\" must be an integer in -1..2147483647, got -2");
  // A dynamic max_blocks: the launch's kv_len / page_size.
  ASSERT_TRUE(parseDecodeLaunch(replaced(json, R"("max_blocks": 64)", R"("max_blocks": -1)"), m,
                                error))
      << error;
  EXPECT_EQ(m.maxBlocks, -1);
}

TEST(LaunchMetadata, ConstantGridsAndUnknownMembers) {
  std::string json = replaced(kGood, R"("grid": ["num_splits", "groups", "batch"])",
                              R"("grid": [1, "groups", 7], "future": {"x": [null]})");
  DecodeLaunch m;
  std::string error;
  ASSERT_TRUE(parseDecodeLaunch(json, m, error)) << error;
  unsigned grid[3];
  ASSERT_TRUE(resolveGrid(*m.kernel("decode"), {{"groups", 2}}, grid, error)) << error;
  EXPECT_EQ(grid[0], 1u);
  EXPECT_EQ(grid[1], 2u);
  EXPECT_EQ(grid[2], 7u);
}

TEST(LaunchMetadata, GridSymbolsAndParamsComeFromTheABITable) {
  DecodeLaunch m;
  std::string error;
  ASSERT_TRUE(parseDecodeLaunch(replaced(kGood, R"("grid": ["num_splits", "groups", "batch"])",
                                         R"("grid": ["persistent_ctas", 1, "bogus"])"),
                                m, error))
      << error;
  unsigned grid[3];
  EXPECT_FALSE(resolveGrid(*m.kernel("decode"), {{"sms", 132}}, grid, error));
  EXPECT_NE(error.find("needs the launch input \"q_len\""), std::string::npos) << error;
  EXPECT_FALSE(resolveGrid(*m.kernel("decode"),
                           {{"sms", 132}, {"q_len", 1000}, {"q_chunk", 64}, {"groups", 2},
                            {"batch", 3}},
                           grid, error));
  EXPECT_NE(error.find("unknown grid symbol \"bogus\""), std::string::npos) << error;
  ASSERT_TRUE(parseDecodeLaunch(replaced(kGood, R"("grid": ["num_splits", "groups", "batch"])",
                                         R"("grid": ["persistent_ctas", 1, 1])"),
                                m, error));
  const std::map<std::string, int64_t> in = {
      {"sms", 132}, {"q_len", 1000}, {"q_chunk", 64}, {"groups", 2}, {"batch", 3}};
  ASSERT_TRUE(resolveGrid(*m.kernel("decode"), in, grid, error)) << error;
  EXPECT_EQ(grid[0], 96u); // min(132, ceil(1000 / 64) · 2 · 3)

  std::vector<attn_abi::Param> params;
  ASSERT_TRUE(resolveParams("f", {"k_map", "q", "num_splits"}, params, error)) << error;
  EXPECT_EQ(params, (std::vector<attn_abi::Param>{attn_abi::Param::KMap, attn_abi::Param::Q,
                                                   attn_abi::Param::NumSplits}));
  EXPECT_FALSE(resolveParams("f", {"q", "qq"}, params, error));
  EXPECT_EQ(error, "kernel f has a parameter \"qq\" that is not in the launch ABI table "
                   "(LaunchABI.h)");
  ParamValues values;
  uint64_t q = 7;
  int32_t splits = 2;
  values.set(attn_abi::Param::Q, &q);
  values.set(attn_abi::Param::NumSplits, &splits);
  EXPECT_FALSE(checkSupplied("f", params = {attn_abi::Param::Q, attn_abi::Param::KMap}, values,
                             error));
  EXPECT_NE(error.find("parameter \"k_map\" (tiled map over the K cache) this launcher does "
                       "not supply"),
            std::string::npos)
      << error;
  params = {attn_abi::Param::NumSplits, attn_abi::Param::Q};
  ASSERT_TRUE(checkSupplied("f", params, values, error)) << error;
  void *args[2];
  bindArgs(params, values, args);
  EXPECT_EQ(args[0], &splits);
  EXPECT_EQ(args[1], &q);
}

TEST(LaunchMetadata, MissingAndMistypedFields) {
  EXPECT_EQ(parseError(replaced(kGood, R"("tile_n": 128,)", "")),
            "missing field \"schedule.tile_n\"");
  EXPECT_EQ(parseError(replaced(kGood, R"("causal": true)", R"("causal": 1)")),
            "field \"problem.causal\" must be a boolean, not a number");
  EXPECT_EQ(parseError(replaced(kGood, R"("head_dim": 128)", R"("head_dim": 12.5)")),
            "field \"problem.head_dim\" must be an integer in 1..1024, got 12.5");
  EXPECT_NE(parseError(replaced(kGood, R"("kv_dtype": "i8")", R"("kv_dtype": "i4")"))
                .find("expected one of i8, ui8, f8E4M3FN, bf16"),
            std::string::npos);
  EXPECT_NE(parseError(replaced(kGood, R"("format": "attn-launch-v1")", R"("format": "v2")"))
                .find("unsupported format \"v2\""),
            std::string::npos);
  EXPECT_EQ(parseError(replaced(kGood, R"("role": "decode")", R"("role": "combine")")),
            "two kernels with role \"combine\" and min_splits 2");
  EXPECT_NE(parseError(replaced(kGood, R"("name": "f_combine", "role": "combine",)",
                                R"("name": "f_combine", "role": "combine", "min_splits": 1,)"))
                .find("\"kernels[1].min_splits\" must be an integer in 2.."),
            std::string::npos);
  EXPECT_EQ(parseError(replaced(kGood, R"("role": "combine", "block": [128, 1, 1],)",
                                R"("role": "combine", "programmatic": 1, "block": [128, 1, 1],)")),
            "field \"kernels[1].programmatic\" must be a boolean, not a number");
  EXPECT_NE(parseError(replaced(kGood, R"("block": [256, 1, 1])", R"("block": [256, 1])"))
                .find("\"kernels[0].block\" must have 3 entries"),
            std::string::npos);
  EXPECT_NE(parseError(replaced(kGood, R"("box": [128, 1, 128, 1]})", R"("box": [128, 1, 128]})"))
                .find("must have 4 entries"),
            std::string::npos);
  EXPECT_EQ(parseError("[1, 2]"), "the launch metadata must be a JSON object, not an array");
  EXPECT_EQ(parseError(replaced(kGood, R"("problem": {)", R"("problem": [], "x": {)")),
            "field \"problem\" must be an object, not an array");
}

TEST(LaunchMetadata, TensorMapSwizzle) {
  DecodeLaunch m;
  std::string error;
  ASSERT_TRUE(parseDecodeLaunch(kGood, m, error)) << error;
  EXPECT_EQ(m.kMap.swizzle, 0u); // absent: none
  std::string swz = replaced(kGood, R"("k": {"dtype": "u8", "box": [128, 1, 128, 1]})",
                             R"("k": {"dtype": "u8", "box": [128, 1, 128, 1], "swizzle": 128})");
  ASSERT_TRUE(parseDecodeLaunch(swz, m, error)) << error;
  EXPECT_EQ(m.kMap.swizzle, 128u);
  EXPECT_EQ(m.vMap.swizzle, 0u);
  EXPECT_EQ(parseError(replaced(swz, R"("swizzle": 128)", R"("swizzle": 96)")),
            "field \"tensor_maps.k.swizzle\" must be 0, 32, 64 or 128, is 96");
  EXPECT_EQ(parseError(replaced(swz, R"("swizzle": 128)", R"("swizzle": 64)")),
            "field \"tensor_maps.k.box[0]\" spans 128 bytes, more than the swizzle of 64");
}

TEST(LaunchMetadata, MalformedJson) {
  std::string error = parseError(replaced(kGood, R"("arch": 90,)", R"("arch": 90,,)"));
  EXPECT_EQ(error.rfind("malformed JSON: line 2, column ", 0), 0u) << error;
  EXPECT_NE(error.find("syntax error while parsing object key - unexpected ','; expected string "
                       "literal"),
            std::string::npos)
      << error;
}

TEST(LaunchMetadata, PrefillChunks) {
  // A prefill kernel: q_len 1000 in chunks of 3 tokens × 16 packed heads = 48 rows per CTA.
  std::string pre = replaced(replaced(kGood, R"("kind": "decode")", R"("kind": "prefill")"),
                             R"("q_len": 3)", R"("q_len": 1000)");
  pre = replaced(pre, R"("split_kv": 0)", R"("split_kv": 1, "q_chunk": 3)");
  DecodeLaunch m;
  std::string error;
  ASSERT_TRUE(parseDecodeLaunch(pre, m, error)) << error;
  EXPECT_EQ(m.kind, "prefill");
  EXPECT_EQ(m.qChunk, 3);
  EXPECT_EQ(m.qLen, 1000);
  // A dynamic query length (-1) is for prefill only.
  ASSERT_TRUE(parseDecodeLaunch(replaced(pre, R"("q_len": 1000)", R"("q_len": -1)"), m, error))
      << error;
  EXPECT_EQ(m.qLen, -1);
  EXPECT_NE(parseError(replaced(kGood, R"("q_len": 3)", R"("q_len": -1)"))
                .find("must be >= 1 (or -1, dynamic, for prefill)"),
            std::string::npos);
  // A ragged batch (cu_seqlens_q): optional, prefill only.
  EXPECT_FALSE(m.ragged);
  const std::string ragged = R"("alibi": false, "ragged": true,)";
  ASSERT_TRUE(parseDecodeLaunch(replaced(pre, R"("alibi": false,)", ragged), m, error)) << error;
  EXPECT_TRUE(m.ragged);
  EXPECT_EQ(parseError(replaced(kGood, R"("alibi": false,)", ragged)),
            "field \"problem.ragged\": only a prefill kernel takes a ragged batch");
  // Decode kernels take all their tokens in one chunk.
  EXPECT_NE(parseError(replaced(kGood, R"("split_kv": 0)", R"("split_kv": 0, "q_chunk": 1)"))
                .find("q_chunk must equal problem.q_len for decode"),
            std::string::npos);
}

TEST(LaunchMetadata, InconsistentSchedules) {
  EXPECT_NE(parseError(replaced(kGood, R"("rows_per_cta": 48)", R"("rows_per_cta": 64)"))
                .find("rows_per_cta (64) is not q_chunk · pack_q_heads (48)"),
            std::string::npos);
  EXPECT_NE(
      parseError(replaced(kGood, R"("groups": 1,)", R"("groups": 2,)")).find("schedule.groups (2)"),
      std::string::npos);
  EXPECT_NE(parseError(replaced(kGood, R"("workspace_floats_per_split": 6240)",
                                R"("workspace_floats_per_split": 6144)"))
                .find("rows_per_cta · (head_dim + 2) rounded up to a multiple of 4 (6240)"),
            std::string::npos);
  EXPECT_NE(parseError(replaced(kGood, R"("q_heads": 16, "kv_heads": 1)",
                                R"("q_heads": 16, "kv_heads": 3)"))
                .find("not a multiple of kv_heads"),
            std::string::npos);
  EXPECT_NE(parseError(replaced(kGood, R"("k_quant": "per_token_head")", R"("k_quant": "none")"))
                .find("must be \"none\" exactly when kv_dtype is bf16"),
            std::string::npos);
  EXPECT_NE(parseError(replaced(kGood, R"("dtype": "u8")", R"("dtype": "bf16")"))
                .find("a i8 cache needs \"u8\""),
            std::string::npos);
  std::string good = kGood;
  std::string noKernels = good.substr(0, good.find(R"("kernels": [)")) + R"("kernels": []})";
  EXPECT_EQ(parseError(noKernels), "no kernel with role \"decode\" in \"kernels\"");
}

TEST(LaunchMetadata, ReadFileNamesTheFile) {
  DecodeLaunch m;
  std::string error;
  EXPECT_FALSE(readDecodeLaunch("/nonexistent/x.launch.json", m, error));
  EXPECT_EQ(error,
            "cannot read launch metadata: /nonexistent/x.launch.json: No such file or directory");
  // Not a regular file: refused before anything is read.
  EXPECT_FALSE(readDecodeLaunch("/", m, error));
  EXPECT_EQ(error, "cannot read launch metadata: / is a directory, not a file");
  EXPECT_FALSE(readDecodeLaunch("/dev/zero", m, error));
  EXPECT_EQ(error,
            "cannot read launch metadata: /dev/zero is not a regular file (a device, pipe or socket)");
}

TEST(LaunchMetadata, ReadRegularFileHasASizeLimit) {
  std::string path = ::testing::TempDir() + "attn-read-limit.json";
  {
    std::ofstream f(path, std::ios::binary);
    f << std::string(100, 'x');
  }
  std::string out, error;
  EXPECT_TRUE(readRegularFile(path, 100, out, error)) << error;
  EXPECT_EQ(out, std::string(100, 'x'));
  EXPECT_FALSE(readRegularFile(path, 99, out, error));
  EXPECT_EQ(error, path + " is 100 bytes, more than the limit of 99 bytes");
  std::remove(path.c_str());
}

TEST(LaunchMetadata, QuantizedQueriesAndBlockScales) {
  // Older metadata has no q_quant: bf16 queries are "none", int8 ones per_token_head.
  DecodeLaunch m;
  std::string error;
  ASSERT_TRUE(parseDecodeLaunch(kGood, m, error)) << error;
  EXPECT_EQ(m.qDtype, "bf16");
  EXPECT_EQ(m.qQuant, "none");
  EXPECT_EQ(m.kBlockRows, 1);
  // fp8 prefill: e4m3 queries, per_block scales with their token counts.
  std::string fp8 = replaced(kGood, R"("kv_dtype": "i8", "k_quant": "per_token_head",
              "v_quant": "per_token_head",)",
                             R"("kv_dtype": "f8E4M3FN", "k_quant": "per_block",
              "v_quant": "per_head", "q_dtype": "f8E4M3FN", "q_quant": "per_block",
              "q_block_rows": 64, "k_block_rows": 256, "v_block_rows": 1,)");
  ASSERT_TRUE(parseDecodeLaunch(fp8, m, error)) << error;
  EXPECT_EQ(m.qDtype, "f8E4M3FN");
  EXPECT_EQ(m.qQuant, "per_block");
  EXPECT_EQ(m.qBlockRows, 64);
  EXPECT_EQ(m.kQuant, "per_block");
  EXPECT_EQ(m.kBlockRows, 256);
  EXPECT_EQ(m.vQuant, "per_head");
  EXPECT_EQ(parseError(replaced(fp8, R"("q_quant": "per_block")", R"("q_quant": "none")")),
            "problem.q_quant must be \"none\" exactly when q_dtype is bf16 (q_dtype \"f8E4M3FN\", "
            "q_quant \"none\")");
  EXPECT_NE(parseError(replaced(fp8, R"("k_block_rows": 256)", R"("k_block_rows": 0)")), "");
  EXPECT_NE(parseError(replaced(fp8, R"("q_dtype": "f8E4M3FN")", R"("q_dtype": "f8E5M2")")), "");
  // int8 queries with one scale per token for all its heads (q_scale [B, S]).
  std::string perToken = replaced(kGood, R"("kv_dtype": "i8",)",
                                  R"("kv_dtype": "i8", "q_dtype": "i8", "q_quant": "per_token",)");
  ASSERT_TRUE(parseDecodeLaunch(perToken, m, error)) << error;
  EXPECT_EQ(m.qDtype, "i8");
  EXPECT_EQ(m.qQuant, "per_token");
  EXPECT_NE(parseError(replaced(perToken, R"("q_quant": "per_token")", R"("q_quant": "per_head")")),
            "");
}
