//===- SpecGenerator.cpp - well-formed hostile specs for attn-spec-fuzz ---===//
//
// What this file is: the implementation of SpecGenerator.h. Most draws are ordinary (so that
// accepted specs, and their artifacts, are exercised too); a few percent of each dimension are
// hostile, and each hostile draw that no target can take marks the spec as one to refuse.
//
//===----------------------------------------------------------------------===//

#include "SpecGenerator.h"

#include <cstdio>

using namespace attnfuzz;

namespace {
constexpr int64_t kMaxExtent = (int64_t(1) << 31) - 1;
constexpr int64_t kExtreme[] = {0, 65536, 70000, kMaxExtent, int64_t(1) << 31, int64_t(1) << 40};

void refuse(GeneratedSpec &g, const std::string &why) {
  if (g.mustRefuse.empty())
    g.mustRefuse = why;
}

std::string dim(int64_t d) { return d == kDyn ? "?" : std::to_string(d); }

/// `name` as an MLIR symbol: @"..." with everything outside printable ASCII as \XX.
std::string symbol(const std::string &name) {
  std::string s = "@\"";
  for (unsigned char c : name) {
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      s += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "\\%02X", c);
      s += buf;
    }
  }
  return s + "\"";
}
} // namespace

int64_t SpecGenerator::extent(std::initializer_list<int64_t> usual, bool mayBeDynamic,
                              GeneratedSpec &g) {
  if (mayBeDynamic && chance(15))
    return kDyn;
  if (chance(4)) {
    int64_t e = kExtreme[pick(std::size(kExtreme))];
    if (e < 1 || e > kMaxExtent)
      refuse(g, "extent " + std::to_string(e));
    return e;
  }
  return *(usual.begin() + pick(usual.size()));
}

SpecGenerator::Arg SpecGenerator::memref(const std::string &name,
                                         const std::vector<int64_t> &shape,
                                         const std::string &elem, GeneratedSpec &g) {
  Arg a{name, "memref<", 0};
  for (int64_t d : shape) {
    a.type += dim(d) + "x";
    a.dynamic += d == kDyn;
  }
  a.type += elem;
  size_t rank = shape.size();
  if (chance(3)) { // strided, possibly not contiguous
    a.type += ", strided<[";
    for (size_t i = 0; i + 1 < rank; ++i)
      a.type += "?, ";
    a.type += "1], offset: ?>";
    refuse(g, "layout");
  } else if (chance(2) && rank >= 2) { // permuted
    std::string dims, rev;
    for (size_t i = 0; i < rank; ++i) {
      dims += (i ? ", d" : "d") + std::to_string(i);
      rev += (i ? ", d" : "d") + std::to_string(rank - 1 - i);
    }
    a.type += ", affine_map<(" + dims + ") -> (" + rev + ")>";
    refuse(g, "layout");
  }
  if (chance(3)) {
    static const char *const spaces[] = {"1", "3", "257", "#gpu.address_space<global>"};
    a.type += std::string(", ") + spaces[pick(std::size(spaces))];
    refuse(g, "memory space");
  }
  a.type += ">";
  return a;
}

std::string SpecGenerator::functionName(GeneratedSpec &g) {
  static const char *const hostile[] = {
      "a b", "a.b", "d\xC3\xA9", "int", "x\n#include <evil.h>", "__x", "attn_memref_4d",
      "9abc", "x); int y(void", "main", "a-b", "_mlir_ciface_x", "x\x1b[2J", "", "static"};
  if (chance(12)) {
    g.name = pick(8) ? hostile[pick(std::size(hostile))] : std::string(129 + pick(200), 'a');
    refuse(g, "name");
  } else {
    static const char *const prefixes[] = {"k", "decode", "spec", "f", "Kernel", "_x"};
    g.name = std::string(prefixes[pick(std::size(prefixes))]) + "_" + std::to_string(pick(1000));
  }
  return symbol(g.name);
}

std::string SpecGenerator::schedule(GeneratedSpec &g) {
  if (chance(55))
    return "";
  std::vector<std::string> fields;
  auto field = [&](const char *key, std::initializer_list<int64_t> values) {
    if (!chance(40))
      return;
    int64_t v = *(values.begin() + pick(values.size()));
    if (v < 1)
      refuse(g, std::string("schedule ") + key);
    fields.push_back(std::string(key) + " = " + std::to_string(v));
  };
  field("pack_q_heads", {1, 2, 4, 8, 3, 0, -1});
  field("tile_n", {32, 64, 128, 100, 0});
  field("stages", {1, 2, 3, 4, 9, 0});
  if (chance(40)) {
    int64_t splits[] = {1, 2, 4, 16, 0, int64_t(1) << 40};
    int64_t s = splits[pick(std::size(splits))];
    if (!pick(5)) {
      fields.push_back("split_kv = auto");
    } else {
      if (s < 1)
        refuse(g, "schedule split_kv");
      if (s > (int64_t(1) << 34))
        refuse(g, "split-KV workspace");
      fields.push_back("split_kv = " + std::to_string(s));
    }
  }
  if (chance(10)) {
    bool empty = pick(2);
    fields.push_back(empty ? "cluster = []" : "cluster = [2]");
    if (empty)
      refuse(g, "empty cluster");
  }
  std::string s = ", schedule = #attn.schedule<";
  for (size_t i = 0; i < fields.size(); ++i)
    s += (i ? ", " : "") + fields[i];
  return s + ">";
}

void SpecGenerator::attention(GeneratedSpec &g, std::vector<Arg> &args, std::string &op) {
  bool prefill = g.kind == SpecKind::Prefill;
  int64_t b = extent({1, 2, 4, 32}, true, g);
  int64_t s = prefill ? extent({64, 128, 256}, true, g) : extent({1, 2, 4}, false, g);
  int64_t hkv = extent({1, 2, 8}, false, g);
  int64_t ratio = *(std::initializer_list<int64_t>{1, 2, 4, 8}.begin() + pick(4));
  int64_t hq = hkv <= kMaxExtent / ratio ? hkv * ratio : hkv;
  int64_t d = extent({64, 128, 256}, false, g);
  int64_t t = extent({128, 256, 1000, 4096}, true, g);
  if (b > 65535 || hq > 65535)
    refuse(g, "grid");
  g.batch = b, g.qLen = s, g.qHeads = hq, g.kvHeads = hkv, g.kvLen = t, g.headDim = d;
  bool i8 = chance(40);
  std::string kv = i8 ? "i8" : "bf16";
  args.push_back(memref("%q", {b, s, hq, d}, "bf16", g));
  args.push_back(memref("%k", {b, t, hkv, d}, kv, g));
  args.push_back(memref("%v", {b, t, hkv, d}, kv, g));
  if (i8) {
    args.push_back(memref("%ks", {b, t, hkv}, "f32", g));
    args.push_back(memref("%vs", {b, t, hkv}, "f32", g));
  }
  bool alias = chance(3);
  Arg out = alias ? args[0] : memref("%o", {b, s, hq, d}, "bf16", g);
  if (alias)
    refuse(g, "alias");
  else
    args.push_back(out);
  op = std::string("attn.attention ") + (prefill ? "prefill" : "decode") + " ins(%q, %k, %v : " +
       args[0].type + ", " + args[1].type + ", " + args[2].type + ")";
  if (i8)
    op += " k_scale(%ks : " + args[3].type + ") v_scale(%vs : " + args[4].type + ")";
  op += " outs(" + out.name + " : " + out.type + ") {";
  if (i8)
    op += "k_quant = #attn.quant<i8, per_token_head>, v_quant = #attn.quant<i8, per_token_head>, ";
  op += "target = #attn.target<sm_90a>" + schedule(g) + "}";
}

void SpecGenerator::pqLut(GeneratedSpec &g, std::vector<Arg> &args, std::string &op) {
  int64_t n = extent({1, 4, 16}, true, g);
  int64_t d = extent({64, 128, 256}, false, g);
  args.push_back(memref("%q", {n, d}, "f32", g));
  args.push_back(memref("%cb", {1, d, 16, 1}, "f32", g));
  args.push_back(memref("%l", {n, d, 16}, "ui8", g));
  args.push_back(memref("%pp", {n, 2}, "f32", g));
  static const char *const targets[] = {"avx2", "avx512_vbmi", "scalar"};
  op = "attn.pq.lut ins(%q, %cb : " + args[0].type + ", " + args[1].type + ") outs(%l, %pp : " +
       args[2].type + ", " + args[3].type + ") {pq = #attn.pq<dsub = 1>, target = #attn.target<" +
       targets[pick(std::size(targets))] + ">}";
}

void SpecGenerator::quantizeDynamic(GeneratedSpec &g, std::vector<Arg> &args, std::string &op) {
  int64_t b = extent({1, 2}, true, g), s = extent({1, 8, 64}, true, g);
  int64_t h = extent({1, 4}, false, g), d = extent({64, 128}, false, g);
  args.push_back(memref("%x", {b, s, h, d}, "bf16", g));
  bool alias = chance(3);
  Arg y = memref("%y", {b, s, h, d}, "i8", g);
  Arg sc = alias ? y : memref("%s", {b, s}, "f32", g);
  if (alias)
    refuse(g, "alias");
  args.push_back(y);
  if (!alias)
    args.push_back(sc);
  op = "attn.quantize.dynamic ins(%x : " + args[0].type + ") outs(%y, " + sc.name + " : " +
       y.type + ", " + sc.type + ") {quant = #attn.quant<i8, per_token>, target = " +
       "#attn.target<avx512>}";
}

std::string SpecGenerator::place(GeneratedSpec &g, std::vector<Arg> args, const std::string &op) {
  std::string sym = functionName(g);
  unsigned where = chance(80) ? 0 : 1 + pick(5);
  auto signature = [&](const std::vector<Arg> &as) {
    std::string s = "(";
    for (size_t i = 0; i < as.size(); ++i)
      s += (i ? ", " : "") + as[i].name + ": " + as[i].type;
    return s + ")";
  };
  for (const Arg &a : args)
    g.headerParams += 1 + a.dynamic;
  switch (where) {
  case 1: { // at module level, on allocations
    refuse(g, "placement: module level");
    std::string s = "%c4 = arith.constant 4 : index\n";
    for (const Arg &a : args) {
      std::string sizes;
      for (int i = 0; i < a.dynamic; ++i)
        sizes += (i ? ", " : "") + std::string("%c4");
      s += a.name + " = memref.alloc(" + sizes + ") : " + a.type + "\n";
    }
    return s + op + "\n";
  }
  case 2: // in a nested module
    refuse(g, "placement: nested module");
    return "module {\nmodule @inner {\n  func.func " + sym + signature(args) + " {\n    " + op +
           "\n    return\n  }\n}\n}\n";
  case 3: // in a gpu.func
    refuse(g, "placement: gpu.func");
    return "module attributes {gpu.container_module} {\n  gpu.module @m {\n    gpu.func " + sym +
           signature(args) + " kernel {\n      " + op + "\n      gpu.return\n    }\n  }\n}\n";
  case 4: { // in a loop (fine on CPU: the loop is lowered too)
    if (g.gpu)
      refuse(g, "placement: loop in a GPU function");
    args.push_back({"%n", "index", 0});
    g.headerParams += 1;
    return "func.func " + sym + signature(args) +
           " {\n  %c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n"
           "  scf.for %i = %c0 to %n step %c1 {\n    " +
           op + "\n  }\n  return\n}\n";
  }
  case 5: { // next to a store (fine on CPU)
    if (g.gpu)
      refuse(g, "placement: other ops in a GPU function");
    args.push_back({"%side", "memref<4xf32>", 0});
    g.headerParams += 1;
    return "func.func " + sym + signature(args) + " {\n  " + op +
           "\n  %c0 = arith.constant 0 : index\n  %f = arith.constant 1.0 : f32\n"
           "  memref.store %f, %side[%c0] : memref<4xf32>\n  return\n}\n";
  }
  default:
    return "func.func " + sym + signature(args) + " {\n  " + op + "\n  return\n}\n";
  }
}

GeneratedSpec SpecGenerator::next() {
  GeneratedSpec g;
  static const SpecKind kinds[] = {SpecKind::Decode, SpecKind::Decode, SpecKind::Prefill,
                                   SpecKind::PQLut, SpecKind::QuantizeDynamic};
  g.kind = kinds[pick(std::size(kinds))];
  g.gpu = g.kind == SpecKind::Decode || g.kind == SpecKind::Prefill;
  std::vector<Arg> args;
  std::string op;
  if (g.gpu)
    attention(g, args, op);
  else if (g.kind == SpecKind::PQLut)
    pqLut(g, args, op);
  else
    quantizeDynamic(g, args, op);
  g.text = place(g, args, op);
  return g;
}
