//===- LaunchMetadata.cpp - JSON parser and *.launch.json reader ----------===//
//
// What this file is: the implementation of attn/Runtime/LaunchMetadata.h — a recursive-descent
// JSON parser with line/column error messages (nesting capped so hostile input cannot overflow
// the stack) and the typed reader of the decode launch metadata of docs/GPUDecode.md.
//
//===----------------------------------------------------------------------===//

#include "attn/Runtime/LaunchMetadata.h"

#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <initializer_list>
#include <sstream>

using namespace attn::rt;

const JsonValue *JsonValue::find(const std::string &key) const {
  if (kind != Object)
    return nullptr;
  for (const auto &member : object)
    if (member.first == key)
      return &member.second;
  return nullptr;
}

const char *attn::rt::jsonKindName(JsonValue::Kind kind) {
  switch (kind) {
  case JsonValue::Null:
    return "null";
  case JsonValue::Bool:
    return "boolean";
  case JsonValue::Number:
    return "number";
  case JsonValue::String:
    return "string";
  case JsonValue::Array:
    return "array";
  case JsonValue::Object:
    return "object";
  }
  return "?";
}

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

namespace {
class Parser {
public:
  explicit Parser(const std::string &text) : s(text) {}

  bool document(JsonValue &out, std::string &error) {
    skipSpace();
    if (!value(out, 0))
      return report(error);
    skipSpace();
    if (pos != s.size()) {
      why = "unexpected text after the JSON value";
      return report(error);
    }
    return true;
  }

private:
  static constexpr int kMaxDepth = 256;
  const std::string &s;
  size_t pos = 0;
  std::string why;

  bool report(std::string &error) {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos && i < s.size(); ++i) {
      if (s[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    error = "line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + why;
    return false;
  }
  bool failHere(const std::string &message) {
    why = message;
    return false;
  }
  void skipSpace() {
    while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\t' || s[pos] == '\n' || s[pos] == '\r'))
      ++pos;
  }
  bool literal(const char *word) {
    size_t n = std::char_traits<char>::length(word);
    if (s.compare(pos, n, word) != 0)
      return false;
    pos += n;
    return true;
  }

  bool value(JsonValue &out, int depth) {
    if (depth > kMaxDepth)
      return failHere("JSON nested deeper than " + std::to_string(kMaxDepth) + " levels");
    if (pos >= s.size())
      return failHere("unexpected end of input, expected a value");
    char c = s[pos];
    if (c == '{')
      return object(out, depth);
    if (c == '[')
      return array(out, depth);
    if (c == '"') {
      out.kind = JsonValue::String;
      return string(out.string);
    }
    if (c == '-' || (c >= '0' && c <= '9'))
      return number(out);
    if (literal("true")) {
      out.kind = JsonValue::Bool;
      out.boolean = true;
      return true;
    }
    if (literal("false")) {
      out.kind = JsonValue::Bool;
      out.boolean = false;
      return true;
    }
    if (literal("null")) {
      out.kind = JsonValue::Null;
      return true;
    }
    return failHere(std::string("unexpected character '") + c + "', expected a value");
  }

  bool object(JsonValue &out, int depth) {
    out.kind = JsonValue::Object;
    ++pos; // '{'
    skipSpace();
    if (pos < s.size() && s[pos] == '}') {
      ++pos;
      return true;
    }
    while (true) {
      skipSpace();
      if (pos >= s.size() || s[pos] != '"')
        return failHere("expected a string key in the object");
      std::string key;
      if (!string(key))
        return false;
      if (out.find(key)) {
        pos -= 1;
        return failHere("duplicate key \"" + key + "\"");
      }
      skipSpace();
      if (pos >= s.size() || s[pos] != ':')
        return failHere("expected ':' after the key \"" + key + "\"");
      ++pos;
      skipSpace();
      out.object.emplace_back(key, JsonValue());
      if (!value(out.object.back().second, depth + 1))
        return false;
      skipSpace();
      if (pos < s.size() && s[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < s.size() && s[pos] == '}') {
        ++pos;
        return true;
      }
      return failHere("expected ',' or '}' in the object");
    }
  }

  bool array(JsonValue &out, int depth) {
    out.kind = JsonValue::Array;
    ++pos; // '['
    skipSpace();
    if (pos < s.size() && s[pos] == ']') {
      ++pos;
      return true;
    }
    while (true) {
      skipSpace();
      out.array.emplace_back();
      if (!value(out.array.back(), depth + 1))
        return false;
      skipSpace();
      if (pos < s.size() && s[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < s.size() && s[pos] == ']') {
        ++pos;
        return true;
      }
      return failHere("expected ',' or ']' in the array");
    }
  }

  static void appendUtf8(std::string &out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  bool hex4(uint32_t &cp) {
    if (pos + 4 > s.size())
      return failHere("truncated \\u escape");
    cp = 0;
    for (int i = 0; i < 4; ++i) {
      char c = s[pos++];
      cp <<= 4;
      if (c >= '0' && c <= '9')
        cp |= static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f')
        cp |= static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        cp |= static_cast<uint32_t>(c - 'A' + 10);
      else
        return --pos, failHere("bad hex digit in a \\u escape");
    }
    return true;
  }

  bool string(std::string &out) {
    ++pos; // '"'
    out.clear();
    while (true) {
      if (pos >= s.size())
        return failHere("unterminated string");
      unsigned char c = static_cast<unsigned char>(s[pos]);
      if (c == '"') {
        ++pos;
        return true;
      }
      if (c < 0x20)
        return failHere("control character in a string (escape it)");
      if (c != '\\') {
        out += static_cast<char>(c);
        ++pos;
        continue;
      }
      ++pos;
      if (pos >= s.size())
        return failHere("unterminated escape in a string");
      char e = s[pos++];
      switch (e) {
      case '"':
        out += '"';
        break;
      case '\\':
        out += '\\';
        break;
      case '/':
        out += '/';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        uint32_t cp;
        if (!hex4(cp))
          return false;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          uint32_t low;
          if (pos + 2 > s.size() || s[pos] != '\\' || s[pos + 1] != 'u')
            return failHere("high surrogate without a following \\u low surrogate");
          pos += 2;
          if (!hex4(low))
            return false;
          if (low < 0xDC00 || low > 0xDFFF)
            return failHere("invalid low surrogate in a \\u escape");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          return failHere("lone low surrogate in a \\u escape");
        }
        appendUtf8(out, cp);
        break;
      }
      default:
        --pos;
        return failHere(std::string("unknown escape '\\") + e + "' in a string");
      }
    }
  }

  bool number(JsonValue &out) {
    size_t start = pos;
    auto digits = [&] {
      size_t from = pos;
      while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9')
        ++pos;
      return pos > from;
    };
    if (s[pos] == '-')
      ++pos;
    if (pos < s.size() && s[pos] == '0') {
      ++pos;
    } else if (!digits()) {
      return failHere("expected digits in a number");
    }
    if (pos < s.size() && s[pos] == '.') {
      ++pos;
      if (!digits())
        return failHere("expected digits after '.' in a number");
    }
    if (pos < s.size() && (s[pos] == 'e' || s[pos] == 'E')) {
      ++pos;
      if (pos < s.size() && (s[pos] == '+' || s[pos] == '-'))
        ++pos;
      if (!digits())
        return failHere("expected digits in a number's exponent");
    }
    if (pos < s.size() && s[pos] >= '0' && s[pos] <= '9')
      return failHere("leading zeros are not allowed in a number");
    std::string text = s.substr(start, pos - start);
    out.kind = JsonValue::Number;
    out.number = std::strtod(text.c_str(), nullptr);
    if (!std::isfinite(out.number)) {
      pos = start;
      return failHere("number " + text + " is out of range");
    }
    return true;
  }
};
} // namespace

bool attn::rt::parseJson(const std::string &text, JsonValue &out, std::string &error) {
  out = JsonValue();
  return Parser(text).document(out, error);
}

//===----------------------------------------------------------------------===//
// Decode launch metadata
//===----------------------------------------------------------------------===//

const LaunchKernel *DecodeLaunch::kernel(const std::string &role) const {
  for (const LaunchKernel &k : kernels)
    if (k.role == role)
      return &k;
  return nullptr;
}

const LaunchKernel *DecodeLaunch::combineKernel(int64_t splits) const {
  const LaunchKernel *best = nullptr;
  for (const LaunchKernel &k : kernels)
    if (k.role == "combine" && k.minSplits <= splits && (!best || k.minSplits > best->minSplits))
      best = &k;
  return best;
}

const LaunchKernel *DecodeLaunch::decodeKernel(int64_t splits, int64_t ctas,
                                               int64_t numSms) const {
  if (splits == 1 && ctas > numSms)
    for (const LaunchKernel &k : kernels)
      if (k.role == "decode" && k.ctasPerSm == 2)
        return &k;
  return kernel("decode");
}

bool DecodeLaunch::clusterMerges(int64_t splits) const {
  const LaunchKernel *d = kernel("decode");
  return d && splits > 1 && splits <= d->clusterSplits;
}

namespace {
/// Typed access to members with "path.to.field: ..." messages.
struct Reader {
  std::string &error;

  const JsonValue *member(const JsonValue &obj, const std::string &path, const char *key,
                          JsonValue::Kind kind) {
    std::string full = path.empty() ? key : path + "." + key;
    const JsonValue *v = obj.find(key);
    if (!v) {
      error = "missing field \"" + full + "\"";
      return nullptr;
    }
    if (v->kind != kind) {
      error = "field \"" + full + "\" must be a " + jsonKindName(kind) + ", not a " +
              jsonKindName(v->kind);
      return nullptr;
    }
    return v;
  }
  bool integer(const JsonValue &v, const std::string &full, int64_t lo, int64_t hi, int64_t &out) {
    if (v.kind != JsonValue::Number) {
      error = "field \"" + full + "\" must be a number, not a " + jsonKindName(v.kind);
      return false;
    }
    if (v.number != std::floor(v.number) || v.number < static_cast<double>(lo) ||
        v.number > static_cast<double>(hi)) {
      // snprintf, not an ostringstream: this reader is also compiled into a torch extension,
      // where a toolchain's static libstdc++ can crash formatting numbers into streams.
      char got[32];
      std::snprintf(got, sizeof(got), "%g", v.number);
      error = "field \"" + full + "\" must be an integer in " + std::to_string(lo) + ".." +
              std::to_string(hi) + ", got " + got;
      return false;
    }
    out = static_cast<int64_t>(v.number);
    return true;
  }
  bool integer(const JsonValue &obj, const std::string &path, const char *key, int64_t lo,
               int64_t hi, int64_t &out) {
    const JsonValue *v = member(obj, path, key, JsonValue::Number);
    return v && integer(*v, path.empty() ? key : path + "." + key, lo, hi, out);
  }
  bool str(const JsonValue &obj, const std::string &path, const char *key, std::string &out,
           std::initializer_list<const char *> allowed = {}) {
    const JsonValue *v = member(obj, path, key, JsonValue::String);
    if (!v)
      return false;
    out = v->string;
    if (allowed.size() == 0)
      return true;
    std::string list;
    for (const char *a : allowed) {
      if (out == a)
        return true;
      list += list.empty() ? "" : ", ";
      list += a;
    }
    error = "field \"" + path + "." + key + "\" is \"" + out + "\"; expected one of " + list;
    return false;
  }
  bool boolean(const JsonValue &obj, const std::string &path, const char *key, bool &out) {
    const JsonValue *v = member(obj, path, key, JsonValue::Bool);
    if (v)
      out = v->boolean;
    return v != nullptr;
  }
  bool triple(const JsonValue &obj, const std::string &path, const char *key, int64_t lo,
              int64_t hi, unsigned out[3]) {
    const JsonValue *v = member(obj, path, key, JsonValue::Array);
    if (!v)
      return false;
    std::string full = path + "." + key;
    if (v->array.size() != 3) {
      error = "field \"" + full + "\" must have 3 entries, has " + std::to_string(v->array.size());
      return false;
    }
    for (int i = 0; i < 3; ++i) {
      int64_t x;
      if (!integer(v->array[i], full + "[" + std::to_string(i) + "]", lo, hi, x))
        return false;
      out[i] = static_cast<unsigned>(x);
    }
    return true;
  }
};

constexpr int64_t kI32Max = 2147483647;
} // namespace

bool attn::rt::parseDecodeLaunch(const std::string &json, DecodeLaunch &out, std::string &error) {
  out = DecodeLaunch();
  JsonValue root;
  std::string why;
  if (!parseJson(json, root, why)) {
    error = "malformed JSON: " + why;
    return false;
  }
  if (root.kind != JsonValue::Object) {
    error =
        std::string("the launch metadata must be a JSON object, not a ") + jsonKindName(root.kind);
    return false;
  }
  Reader r{error};
  int64_t arch;
  if (!r.str(root, "", "format", out.format))
    return false;
  if (out.format != "attn-launch-v1") {
    error = "unsupported format \"" + out.format + "\" (this reader knows \"attn-launch-v1\")";
    return false;
  }
  if (!r.integer(root, "", "arch", 10, 1000, arch))
    return false;
  out.arch = static_cast<int>(arch);

  const JsonValue *p = r.member(root, "", "problem", JsonValue::Object);
  if (!p || !r.str(*p, "problem", "kind", out.kind, {"decode", "prefill"}) ||
      !r.integer(*p, "problem", "batch", -1, kI32Max, out.batch) ||
      !r.integer(*p, "problem", "q_len", -1, kI32Max, out.qLen) ||
      !r.integer(*p, "problem", "q_heads", 1, kI32Max, out.qHeads) ||
      !r.integer(*p, "problem", "kv_heads", 1, kI32Max, out.kvHeads) ||
      !r.integer(*p, "problem", "head_dim", 1, 1024, out.headDim) ||
      !r.integer(*p, "problem", "kv_len", -1, kI32Max, out.kvLen) ||
      (p->find("q_dtype") &&
       !r.str(*p, "problem", "q_dtype", out.qDtype, {"bf16", "i8", "f8E4M3FN"})) ||
      (p->find("q_quant") && !r.str(*p, "problem", "q_quant", out.qQuant,
                                    {"none", "per_token_head", "per_token", "per_block"})) ||
      (p->find("q_block_rows") &&
       !r.integer(*p, "problem", "q_block_rows", 1, kI32Max, out.qBlockRows)) ||
      (p->find("k_block_rows") &&
       !r.integer(*p, "problem", "k_block_rows", 1, kI32Max, out.kBlockRows)) ||
      (p->find("v_block_rows") &&
       !r.integer(*p, "problem", "v_block_rows", 1, kI32Max, out.vBlockRows)) ||
      !r.str(*p, "problem", "kv_dtype", out.kvDtype, {"i8", "ui8", "f8E4M3FN", "bf16"}) ||
      (p->find("zero_points") && !r.boolean(*p, "problem", "zero_points", out.zeroPoints)) ||
      !r.str(*p, "problem", "k_quant", out.kQuant,
             {"per_token_head", "per_token", "per_head", "per_tensor", "per_block", "none"}) ||
      !r.str(*p, "problem", "v_quant", out.vQuant,
             {"per_token_head", "per_token", "per_head", "per_tensor", "per_block", "none"}) ||
      !r.str(*p, "problem", "out_dtype", out.outDtype, {"bf16"}) ||
      !r.boolean(*p, "problem", "causal", out.causal) ||
      !r.boolean(*p, "problem", "alibi", out.alibi) ||
      (p->find("hadamard") && !r.boolean(*p, "problem", "hadamard", out.hadamard)) ||
      !r.boolean(*p, "problem", "seq_lens", out.seqLens))
    return false;
  if (out.qLen == 0 || (out.qLen < 0 && out.kind != "prefill")) {
    error = "field \"problem.q_len\" must be >= 1 (or -1, dynamic, for prefill)";
    return false;
  }
  if (out.batch == 0) {
    error = "field \"problem.batch\" must be -1 (dynamic) or >= 1";
    return false;
  }
  const JsonValue *scale = r.member(*p, "problem", "softmax_scale", JsonValue::Number);
  if (!scale)
    return false;
  out.softmaxScale = scale->number;
  if (out.qHeads % out.kvHeads != 0) {
    error = "problem.q_heads (" + std::to_string(out.qHeads) + ") is not a multiple of kv_heads (" +
            std::to_string(out.kvHeads) + ")";
    return false;
  }
  if (out.qQuant.empty()) // older metadata: int8 queries were per_token_head
    out.qQuant = out.qDtype == "bf16" ? "none" : "per_token_head";
  if ((out.qDtype == "bf16") != (out.qQuant == "none")) {
    error = "problem.q_quant must be \"none\" exactly when q_dtype is bf16 (q_dtype \"" +
            out.qDtype + "\", q_quant \"" + out.qQuant + "\")";
    return false;
  }
  bool quantized = out.kvDtype != "bf16";
  if (quantized == (out.kQuant == "none") || quantized == (out.vQuant == "none")) {
    error = "problem.k_quant/v_quant must be \"none\" exactly when kv_dtype is bf16 (kv_dtype \"" +
            out.kvDtype + "\", k_quant \"" + out.kQuant + "\", v_quant \"" + out.vQuant + "\")";
    return false;
  }

  const JsonValue *sc = r.member(root, "", "schedule", JsonValue::Object);
  if (!sc || !r.integer(*sc, "schedule", "pack_q_heads", 1, kI32Max, out.packQHeads) ||
      !r.integer(*sc, "schedule", "rows_per_cta", 1, kI32Max, out.rowsPerCta) ||
      !r.integer(*sc, "schedule", "groups", 1, kI32Max, out.groups) ||
      !r.integer(*sc, "schedule", "tile_n", 1, 65536, out.tileN) ||
      !r.integer(*sc, "schedule", "stages", 1, 64, out.stages) ||
      !r.integer(*sc, "schedule", "split_kv", 0, kI32Max, out.splitKv))
    return false;
  out.qChunk = std::max<int64_t>(out.qLen, 1);
  if (sc->find("q_chunk") && !r.integer(*sc, "schedule", "q_chunk", 1, kI32Max, out.qChunk))
    return false;
  if (out.kind == "decode" && out.qChunk != out.qLen) {
    error = "schedule.q_chunk must equal problem.q_len for decode";
    return false;
  }
  // Register counts are informational; read them when present.
  if (sc->find("producer_regs") &&
      !r.integer(*sc, "schedule", "producer_regs", 0, 255, out.producerRegs))
    return false;
  if (sc->find("consumer_regs") &&
      !r.integer(*sc, "schedule", "consumer_regs", 0, 255, out.consumerRegs))
    return false;
  if (!r.integer(root, "", "workspace_floats_per_split", 0, INT64_C(1) << 40,
                 out.workspaceFloatsPerSplit))
    return false;

  // Consistency of the schedule with the problem (docs/GPUDecode.md).
  int64_t ratio = out.qHeads / out.kvHeads;
  if (ratio % out.packQHeads != 0) {
    error = "schedule.pack_q_heads (" + std::to_string(out.packQHeads) +
            ") does not divide q_heads / kv_heads (" + std::to_string(ratio) + ")";
    return false;
  }
  if (out.rowsPerCta != out.qChunk * out.packQHeads) {
    error = "schedule.rows_per_cta (" + std::to_string(out.rowsPerCta) +
            ") is not q_chunk · pack_q_heads (" + std::to_string(out.qChunk * out.packQHeads) + ")";
    return false;
  }
  if (out.groups != out.kvHeads * (ratio / out.packQHeads)) {
    error = "schedule.groups (" + std::to_string(out.groups) +
            ") is not kv_heads · (q_heads / kv_heads) / pack_q_heads (" +
            std::to_string(out.kvHeads * (ratio / out.packQHeads)) + ")";
    return false;
  }
  // rows_per_cta · (head_dim + 2) floats, padded to a multiple of 4 (16-byte aligned slots).
  int64_t expectW = (out.rowsPerCta * (out.headDim + 2) + 3) / 4 * 4;
  if (out.workspaceFloatsPerSplit != expectW) {
    error = "workspace_floats_per_split (" + std::to_string(out.workspaceFloatsPerSplit) +
            ") is not rows_per_cta · (head_dim + 2) rounded up to a multiple of 4 (" +
            std::to_string(expectW) + ")";
    return false;
  }

  const JsonValue *maps = r.member(root, "", "tensor_maps", JsonValue::Object);
  if (!maps)
    return false;
  for (const char *which : {"k", "v"}) {
    std::string path = std::string("tensor_maps.") + which;
    const JsonValue *m = r.member(*maps, "tensor_maps", which, JsonValue::Object);
    TensorMapInfo &info = which[0] == 'k' ? out.kMap : out.vMap;
    if (!m || !r.str(*m, path, "dtype", info.dtype, {"u8", "bf16", "f16", "f32", "i32"}))
      return false;
    const JsonValue *box = r.member(*m, path, "box", JsonValue::Array);
    if (!box)
      return false;
    if (box->array.size() != 4) {
      error = "field \"" + path + ".box\" must have 4 entries (D, 1, tile_n, 1), has " +
              std::to_string(box->array.size());
      return false;
    }
    for (size_t i = 0; i < box->array.size(); ++i) {
      int64_t x;
      if (!r.integer(box->array[i], path + ".box[" + std::to_string(i) + "]", 1, 256, x))
        return false;
      info.box.push_back(static_cast<unsigned>(x));
    }
    if (m->find("swizzle")) {
      int64_t sw;
      if (!r.integer(*m, path, "swizzle", 0, 128, sw))
        return false;
      int64_t elem = info.dtype == "u8" ? 1 : info.dtype == "f32" || info.dtype == "i32" ? 4 : 2;
      if (sw != 0 && sw != 32 && sw != 64 && sw != 128) {
        error = "field \"" + path + ".swizzle\" must be 0, 32, 64 or 128, is " + std::to_string(sw);
        return false;
      }
      if (sw && info.box[0] * elem > sw) {
        error = "field \"" + path + ".box[0]\" spans " + std::to_string(info.box[0] * elem) +
                " bytes, more than the swizzle of " + std::to_string(sw);
        return false;
      }
      info.swizzle = static_cast<unsigned>(sw);
    }
    std::string want = out.kvDtype == "bf16" ? "bf16" : "u8";
    if (info.dtype != want) {
      error = "field \"" + path + ".dtype\" is \"" + info.dtype + "\" but a " + out.kvDtype +
              " cache needs \"" + want + "\"";
      return false;
    }
  }

  const JsonValue *kernels = r.member(root, "", "kernels", JsonValue::Array);
  if (!kernels)
    return false;
  for (size_t i = 0; i < kernels->array.size(); ++i) {
    const JsonValue &kv = kernels->array[i];
    std::string path = "kernels[" + std::to_string(i) + "]";
    if (kv.kind != JsonValue::Object) {
      error = "\"" + path + "\" must be an object, not a " + jsonKindName(kv.kind);
      return false;
    }
    LaunchKernel k;
    int64_t smem;
    if (!r.str(kv, path, "name", k.name) ||
        !r.str(kv, path, "role", k.role, {"decode", "combine"}) ||
        !r.triple(kv, path, "block", 1, 1024, k.block) ||
        !r.triple(kv, path, "cluster", 1, 16, k.cluster) ||
        !r.integer(kv, path, "smem_bytes", 0, 1 << 30, smem))
      return false;
    if (k.name.empty()) {
      error = "field \"" + path + ".name\" is empty";
      return false;
    }
    k.smemBytes = static_cast<unsigned>(smem);
    if ((kv.find("programmatic") && !r.boolean(kv, path, "programmatic", k.programmatic)) ||
        (kv.find("min_splits") && !r.integer(kv, path, "min_splits", 2, kI32Max, k.minSplits)) ||
        (kv.find("cluster_splits") &&
         !r.integer(kv, path, "cluster_splits", 0, 16, k.clusterSplits)) ||
        (kv.find("ctas_per_sm") && !r.integer(kv, path, "ctas_per_sm", 1, 4, k.ctasPerSm)) ||
        (kv.find("tile_n") && !r.integer(kv, path, "tile_n", 1, 65536, k.tileN)))
      return false;
    const JsonValue *grid = r.member(kv, path, "grid", JsonValue::Array);
    if (!grid)
      return false;
    if (grid->array.size() != 3) {
      error = "field \"" + path + ".grid\" must have 3 entries, has " +
              std::to_string(grid->array.size());
      return false;
    }
    for (int d = 0; d < 3; ++d) {
      const JsonValue &g = grid->array[d];
      std::string full = path + ".grid[" + std::to_string(d) + "]";
      if (g.kind == JsonValue::String) {
        if (g.string.empty()) {
          error = "field \"" + full + "\" is an empty symbol";
          return false;
        }
        k.grid[d].symbol = g.string;
      } else if (!r.integer(g, full, 1, kI32Max, k.grid[d].value)) {
        error += " (or a symbol such as \"batch\")";
        return false;
      }
    }
    const JsonValue *params = r.member(kv, path, "params", JsonValue::Array);
    if (!params)
      return false;
    for (size_t j = 0; j < params->array.size(); ++j) {
      if (params->array[j].kind != JsonValue::String) {
        error = "field \"" + path + ".params[" + std::to_string(j) + "]\" must be a string";
        return false;
      }
      k.params.push_back(params->array[j].string);
    }
    // One decode kernel per ctas_per_sm (the first one's is 1); combine kernels differ in the
    // split counts they take.
    if (k.role == "decode" && !out.kernel("decode") && k.ctasPerSm != 1) {
      error = "the first decode kernel (" + k.name + ") has ctas_per_sm " +
              std::to_string(k.ctasPerSm) + " (the first one runs one CTA per SM)";
      return false;
    }
    for (const LaunchKernel &o : out.kernels)
      if (o.role == k.role && (k.role != "combine" || o.minSplits == k.minSplits) &&
          (k.role != "decode" || o.ctasPerSm == k.ctasPerSm)) {
        error = "two kernels with role \"" + k.role + "\"" +
                (k.role == "combine"  ? " and min_splits " + std::to_string(k.minSplits)
                 : k.role == "decode" ? " and ctas_per_sm " + std::to_string(k.ctasPerSm)
                                      : "");
        return false;
      }
    out.kernels.push_back(std::move(k));
  }
  if (!out.kernel("decode")) {
    error = "no kernel with role \"decode\" in \"kernels\"";
    return false;
  }
  return true;
}

bool attn::rt::readDecodeLaunch(const std::string &path, DecodeLaunch &out, std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot read launch metadata " + path;
    return false;
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string why;
  if (!parseDecodeLaunch(buffer.str(), out, why)) {
    error = path + ": " + why;
    return false;
  }
  return true;
}

bool attn::rt::resolveGrid(const LaunchKernel &kernel,
                           const std::map<std::string, int64_t> &symbols, unsigned grid[3],
                           std::string &error) {
  for (int d = 0; d < 3; ++d) {
    int64_t v = kernel.grid[d].value;
    if (!kernel.grid[d].symbol.empty()) {
      auto it = symbols.find(kernel.grid[d].symbol);
      if (it == symbols.end()) {
        error = "kernel " + kernel.name + ": unknown grid symbol \"" + kernel.grid[d].symbol + "\"";
        return false;
      }
      v = it->second;
    }
    int64_t hi = d == 0 ? kI32Max : 65535;
    if (v < 1 || v > hi) {
      error = "kernel " + kernel.name + ": grid extent " + std::to_string(d) + " (" +
              (kernel.grid[d].symbol.empty() ? std::string("constant")
                                             : "\"" + kernel.grid[d].symbol + "\"") +
              ") = " + std::to_string(v) + " is outside 1.." + std::to_string(hi);
      return false;
    }
    grid[d] = static_cast<unsigned>(v);
  }
  return true;
}
