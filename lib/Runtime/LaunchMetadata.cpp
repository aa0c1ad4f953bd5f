//===- LaunchMetadata.cpp - the *.launch.json reader ----------------------===//
//
// What this file is: the implementation of attn/Runtime/LaunchMetadata.h — strict JSON parsing on
// nlohmann-json (RFC 8259, plus refusals of duplicate keys and deep nesting, with line / column or
// member-path messages), the typed reader of the decode launch metadata of docs/GPUDecode.md, and
// the bounded reading of regular files.
//
//===----------------------------------------------------------------------===//

#include "attn/Runtime/LaunchMetadata.h"

#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <set>
#include <sstream>

using namespace attn::rt;
using Json = nlohmann::json;

//===----------------------------------------------------------------------===//
// Files
//===----------------------------------------------------------------------===//

bool attn::rt::readRegularFile(const std::string &path, uint64_t maxBytes, std::string &out,
                               std::string &error) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    error = path + ": " + std::strerror(errno);
    return false;
  }
  if (S_ISDIR(st.st_mode)) {
    error = path + " is a directory, not a file";
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    error = path + " is not a regular file (a device, pipe or socket)";
    return false;
  }
  auto tooLarge = [&](uint64_t size) {
    error = path + " is " + std::to_string(size) + " bytes, more than the limit of " +
            std::to_string(maxBytes) + " bytes";
    return false;
  };
  if (static_cast<uint64_t>(st.st_size) > maxBytes)
    return tooLarge(static_cast<uint64_t>(st.st_size));
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = path + ": cannot open for reading";
    return false;
  }
  // Read at most maxBytes + 1: a file that grows while it is read still cannot exhaust memory.
  out.assign(static_cast<size_t>(st.st_size), '\0');
  in.read(out.data(), static_cast<std::streamsize>(out.size()));
  out.resize(static_cast<size_t>(in.gcount()));
  char extra[4096];
  while (in.read(extra, sizeof(extra)) || in.gcount() > 0) {
    out.append(extra, static_cast<size_t>(in.gcount()));
    if (out.size() > maxBytes)
      return tooLarge(out.size());
  }
  if (in.bad()) {
    error = path + ": read error";
    return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Strict JSON
//===----------------------------------------------------------------------===//

namespace {
constexpr int kMaxDepth = 256;

/// Thrown from the parse callback to stop at the first refused construct.
struct Refusal {
  std::string why;
};

/// nlohmann-json accepts what RFC 8259 allows; launch metadata is stricter: a duplicate key is
/// refused (the last one would silently win), and so is nesting deeper than kMaxDepth. The
/// callback tracks each open container's path ("problem", "kernels[1].grid") for the message.
class StrictParse {
public:
  bool operator()(int /*depth*/, Json::parse_event_t event, Json &parsed) {
    switch (event) {
    case Json::parse_event_t::object_start:
    case Json::parse_event_t::array_start:
      if (frames.size() >= kMaxDepth)
        throw Refusal{"JSON nested deeper than " + std::to_string(kMaxDepth) + " levels"};
      frames.push_back({childPath(), event == Json::parse_event_t::object_start, {}, {}, 0});
      break;
    case Json::parse_event_t::key: {
      Frame &f = frames.back();
      f.key = parsed.get<std::string>();
      if (!f.keys.insert(f.key).second)
        throw Refusal{"duplicate key \"" + f.key + "\"" +
                      (f.path.empty() ? std::string(" at the top level")
                                      : " in \"" + f.path + "\"")};
      break;
    }
    case Json::parse_event_t::value:
      childPath(); // advances an array's index
      break;
    case Json::parse_event_t::object_end:
    case Json::parse_event_t::array_end:
      frames.pop_back();
      break;
    }
    return true;
  }

private:
  struct Frame {
    std::string path;
    bool object;
    std::set<std::string> keys;
    std::string key;
    size_t index;
  };
  std::vector<Frame> frames;

  /// The path of the value that starts now (an array's index advances).
  std::string childPath() {
    if (frames.empty())
      return "";
    Frame &f = frames.back();
    if (f.object)
      return f.path.empty() ? f.key : f.path + "." + f.key;
    return f.path + "[" + std::to_string(f.index++) + "]";
  }
};

/// Parses `text` into `out`; on failure `error` says what and where ("line L, column C: ...").
bool parseStrictJson(const std::string &text, Json &out, std::string &error) {
  try {
    StrictParse strict;
    out = Json::parse(text, std::ref(strict), /*allow_exceptions=*/true,
                      /*ignore_comments=*/false);
    return true;
  } catch (const Refusal &r) {
    error = r.why;
  } catch (const Json::exception &e) {
    // "[json.exception.parse_error.101] parse error at line 2, column 44: syntax error ..."
    error = e.what();
    size_t bracket = error.find("] ");
    if (error.rfind("[json.exception.", 0) == 0 && bracket != std::string::npos)
      error.erase(0, bracket + 2);
    if (error.rfind("parse error at ", 0) == 0)
      error.erase(0, std::strlen("parse error at "));
  }
  return false;
}

enum class Kind { Object, Array, String, Number, Bool };

bool hasKind(const Json &v, Kind kind) {
  switch (kind) {
  case Kind::Object:
    return v.is_object();
  case Kind::Array:
    return v.is_array();
  case Kind::String:
    return v.is_string();
  case Kind::Number:
    return v.is_number();
  case Kind::Bool:
    return v.is_boolean();
  }
  return false;
}
const char *kindName(Kind kind) {
  switch (kind) {
  case Kind::Object:
    return "object";
  case Kind::Array:
    return "array";
  case Kind::String:
    return "string";
  case Kind::Number:
    return "number";
  case Kind::Bool:
    return "boolean";
  }
  return "?";
}
/// "a number", "an object": a kind name with its article, for messages.
std::string withArticle(const char *kind) {
  return std::string(kind[0] == 'a' || kind[0] == 'o' ? "an " : "a ") + kind;
}
/// The member `key` of an object, or nullptr (also when `obj` is not an object).
const Json *find(const Json &obj, const char *key) {
  if (!obj.is_object())
    return nullptr;
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}
} // namespace

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

  const Json *member(const Json &obj, const std::string &path, const char *key, Kind kind) {
    std::string full = path.empty() ? key : path + "." + key;
    const Json *v = find(obj, key);
    if (!v) {
      error = "missing field \"" + full + "\"";
      return nullptr;
    }
    if (!hasKind(*v, kind)) {
      error = "field \"" + full + "\" must be " + withArticle(kindName(kind)) + ", not " +
              withArticle(v->type_name());
      return nullptr;
    }
    return v;
  }
  bool integer(const Json &v, const std::string &full, int64_t lo, int64_t hi, int64_t &out) {
    if (!v.is_number()) {
      error = "field \"" + full + "\" must be a number, not " + withArticle(v.type_name());
      return false;
    }
    const double x = v.get<double>();
    if (x != std::floor(x) || x < static_cast<double>(lo) || x > static_cast<double>(hi)) {
      // snprintf, not an ostringstream: this reader is also compiled into a torch extension,
      // where a toolchain's static libstdc++ can crash formatting numbers into streams.
      char got[32];
      std::snprintf(got, sizeof(got), "%g", x);
      error = "field \"" + full + "\" must be an integer in " + std::to_string(lo) + ".." +
              std::to_string(hi) + ", got " + got;
      return false;
    }
    out = static_cast<int64_t>(x);
    return true;
  }
  bool integer(const Json &obj, const std::string &path, const char *key, int64_t lo, int64_t hi,
               int64_t &out) {
    const Json *v = member(obj, path, key, Kind::Number);
    return v && integer(*v, path.empty() ? key : path + "." + key, lo, hi, out);
  }
  bool str(const Json &obj, const std::string &path, const char *key, std::string &out,
           std::initializer_list<const char *> allowed = {}) {
    const Json *v = member(obj, path, key, Kind::String);
    if (!v)
      return false;
    out = v->get<std::string>();
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
  bool boolean(const Json &obj, const std::string &path, const char *key, bool &out) {
    const Json *v = member(obj, path, key, Kind::Bool);
    if (v)
      out = v->get<bool>();
    return v != nullptr;
  }
  bool triple(const Json &obj, const std::string &path, const char *key, int64_t lo, int64_t hi,
              unsigned out[3]) {
    const Json *v = member(obj, path, key, Kind::Array);
    if (!v)
      return false;
    std::string full = path + "." + key;
    if (v->size() != 3) {
      error = "field \"" + full + "\" must have 3 entries, has " + std::to_string(v->size());
      return false;
    }
    for (size_t i = 0; i < 3; ++i) {
      int64_t x;
      if (!integer((*v)[i], full + "[" + std::to_string(i) + "]", lo, hi, x))
        return false;
      out[i] = static_cast<unsigned>(x);
    }
    return true;
  }
};

constexpr int64_t kI32Max = 2147483647;
} // namespace

/// The optional member "paged" (a paged cache: the pool and its block table) into `out`.
static bool readPaged(Reader &r, const Json &root, DecodeLaunch &out) {
  const Json *pg = find(root, "paged");
  if (!pg)
    return true;
  if (!r.integer(*pg, "paged", "page_size", 1, 256, out.pageSize) ||
      !r.integer(*pg, "paged", "max_blocks", -1, kI32Max, out.maxBlocks) ||
      !r.integer(*pg, "paged", "num_pages", -1, kI32Max, out.numPages))
    return false;
  if ((out.pageSize & (out.pageSize - 1)) != 0 || out.numPages == 0 || out.maxBlocks == 0) {
    r.error = "field \"paged.page_size\" must be a power of two and \"paged.max_blocks\" and "
              "\"paged.num_pages\" >= 1 (or -1: known at launch)";
    return false;
  }
  return true;
}

/// The optional member "problem.window" ([left, right], each >= -1) into `out`.
static bool readWindow(Reader &r, const Json &problem, DecodeLaunch &out, std::string &error) {
  const Json *w = r.member(problem, "problem", "window", Kind::Array);
  if (!w)
    return false;
  if (w->size() != 2) {
    error = "field \"problem.window\" must have 2 entries, has " + std::to_string(w->size());
    return false;
  }
  return r.integer((*w)[0], "problem.window[0]", -1, kI32Max, out.windowLeft) &&
         r.integer((*w)[1], "problem.window[1]", -1, kI32Max, out.windowRight);
}

bool attn::rt::parseDecodeLaunch(const std::string &json, DecodeLaunch &out, std::string &error) {
  out = DecodeLaunch();
  Json root;
  std::string why;
  if (!parseStrictJson(json, root, why)) {
    error = "malformed JSON: " + why;
    return false;
  }
  if (!root.is_object()) {
    error = "the launch metadata must be a JSON object, not " + withArticle(root.type_name());
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

  const Json *p = r.member(root, "", "problem", Kind::Object);
  if (!p || !r.str(*p, "problem", "kind", out.kind, {"decode", "prefill"}) ||
      !r.integer(*p, "problem", "batch", -1, kI32Max, out.batch) ||
      !r.integer(*p, "problem", "q_len", -1, kI32Max, out.qLen) ||
      !r.integer(*p, "problem", "q_heads", 1, kI32Max, out.qHeads) ||
      !r.integer(*p, "problem", "kv_heads", 1, kI32Max, out.kvHeads) ||
      !r.integer(*p, "problem", "head_dim", 1, 1024, out.headDim) ||
      !r.integer(*p, "problem", "kv_len", -1, kI32Max, out.kvLen) ||
      (find(*p, "q_dtype") &&
       !r.str(*p, "problem", "q_dtype", out.qDtype, {"bf16", "i8", "f8E4M3FN"})) ||
      (find(*p, "q_quant") && !r.str(*p, "problem", "q_quant", out.qQuant,
                                    {"none", "per_token_head", "per_token", "per_block"})) ||
      (find(*p, "q_block_rows") &&
       !r.integer(*p, "problem", "q_block_rows", 1, kI32Max, out.qBlockRows)) ||
      (find(*p, "k_block_rows") &&
       !r.integer(*p, "problem", "k_block_rows", 1, kI32Max, out.kBlockRows)) ||
      (find(*p, "v_block_rows") &&
       !r.integer(*p, "problem", "v_block_rows", 1, kI32Max, out.vBlockRows)) ||
      !r.str(*p, "problem", "kv_dtype", out.kvDtype, {"i8", "ui8", "f8E4M3FN", "bf16"}) ||
      (find(*p, "zero_points") && !r.boolean(*p, "problem", "zero_points", out.zeroPoints)) ||
      !r.str(*p, "problem", "k_quant", out.kQuant,
             {"per_token_head", "per_token", "per_head", "per_tensor", "per_block", "none"}) ||
      !r.str(*p, "problem", "v_quant", out.vQuant,
             {"per_token_head", "per_token", "per_head", "per_tensor", "per_block", "none"}) ||
      !r.str(*p, "problem", "out_dtype", out.outDtype, {"bf16"}) ||
      !r.boolean(*p, "problem", "causal", out.causal) ||
      !r.boolean(*p, "problem", "alibi", out.alibi) ||
      (find(*p, "hadamard") && !r.boolean(*p, "problem", "hadamard", out.hadamard)) ||
      (find(*p, "sinks") && !r.boolean(*p, "problem", "sinks", out.sinks)) ||
      (find(*p, "lse") && !r.boolean(*p, "problem", "lse", out.lse)) ||
      (find(*p, "ragged") && !r.boolean(*p, "problem", "ragged", out.ragged)) ||
      !r.boolean(*p, "problem", "seq_lens", out.seqLens))
    return false;
  if (out.ragged && out.kind != "prefill") {
    error = "field \"problem.ragged\": only a prefill kernel takes a ragged batch";
    return false;
  }
  if (out.qLen == 0 || (out.qLen < 0 && out.kind != "prefill")) {
    error = "field \"problem.q_len\" must be >= 1 (or -1, dynamic, for prefill)";
    return false;
  }
  if (out.batch == 0) {
    error = "field \"problem.batch\" must be -1 (dynamic) or >= 1";
    return false;
  }
  const Json *scale = r.member(*p, "problem", "softmax_scale", Kind::Number);
  if (!scale)
    return false;
  out.softmaxScale = scale->get<double>();
  if (find(*p, "softcap")) {
    const Json *cap = r.member(*p, "problem", "softcap", Kind::Number);
    if (!cap)
      return false;
    out.softcap = cap->get<double>();
    if (!(out.softcap > 0) || !std::isfinite(out.softcap)) {
      error = "field \"problem.softcap\" must be a positive finite number";
      return false;
    }
  }
  if (find(*p, "window") && !readWindow(r, *p, out, error))
    return false;
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

  if (!readPaged(r, root, out))
    return false;

  const Json *sc = r.member(root, "", "schedule", Kind::Object);
  if (!sc || !r.integer(*sc, "schedule", "pack_q_heads", 1, kI32Max, out.packQHeads) ||
      !r.integer(*sc, "schedule", "rows_per_cta", 1, kI32Max, out.rowsPerCta) ||
      !r.integer(*sc, "schedule", "groups", 1, kI32Max, out.groups) ||
      !r.integer(*sc, "schedule", "tile_n", 1, 65536, out.tileN) ||
      !r.integer(*sc, "schedule", "stages", 1, 64, out.stages) ||
      !r.integer(*sc, "schedule", "split_kv", 0, kI32Max, out.splitKv))
    return false;
  out.qChunk = std::max<int64_t>(out.qLen, 1);
  if (find(*sc, "q_chunk") && !r.integer(*sc, "schedule", "q_chunk", 1, kI32Max, out.qChunk))
    return false;
  if (out.kind == "decode" && out.qChunk != out.qLen) {
    error = "schedule.q_chunk must equal problem.q_len for decode";
    return false;
  }
  // Register counts are informational; read them when present.
  if (find(*sc, "producer_regs") &&
      !r.integer(*sc, "schedule", "producer_regs", 0, 255, out.producerRegs))
    return false;
  if (find(*sc, "consumer_regs") &&
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

  const Json *maps = r.member(root, "", "tensor_maps", Kind::Object);
  if (!maps)
    return false;
  for (const char *which : {"k", "v"}) {
    std::string path = std::string("tensor_maps.") + which;
    const Json *m = r.member(*maps, "tensor_maps", which, Kind::Object);
    TensorMapInfo &info = which[0] == 'k' ? out.kMap : out.vMap;
    if (!m || !r.str(*m, path, "dtype", info.dtype, {"u8", "bf16", "f16", "f32", "i32"}))
      return false;
    const Json *box = r.member(*m, path, "box", Kind::Array);
    if (!box)
      return false;
    if (box->size() != 4) {
      error = "field \"" + path + ".box\" must have 4 entries (D, 1, tile_n, 1), has " +
              std::to_string(box->size());
      return false;
    }
    for (size_t i = 0; i < box->size(); ++i) {
      int64_t x;
      if (!r.integer((*box)[i], path + ".box[" + std::to_string(i) + "]", 1, 256, x))
        return false;
      info.box.push_back(static_cast<unsigned>(x));
    }
    if (find(*m, "swizzle")) {
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

  const Json *kernels = r.member(root, "", "kernels", Kind::Array);
  if (!kernels)
    return false;
  for (size_t i = 0; i < kernels->size(); ++i) {
    const Json &kv = (*kernels)[i];
    std::string path = "kernels[" + std::to_string(i) + "]";
    if (!kv.is_object()) {
      error = "\"" + path + "\" must be an object, not " + withArticle(kv.type_name());
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
    if ((find(kv, "programmatic") && !r.boolean(kv, path, "programmatic", k.programmatic)) ||
        (find(kv, "min_splits") && !r.integer(kv, path, "min_splits", 2, kI32Max, k.minSplits)) ||
        (find(kv, "cluster_splits") &&
         !r.integer(kv, path, "cluster_splits", 0, 16, k.clusterSplits)) ||
        (find(kv, "ctas_per_sm") && !r.integer(kv, path, "ctas_per_sm", 1, 4, k.ctasPerSm)) ||
        (find(kv, "tile_n") && !r.integer(kv, path, "tile_n", 1, 65536, k.tileN)))
      return false;
    const Json *grid = r.member(kv, path, "grid", Kind::Array);
    if (!grid)
      return false;
    if (grid->size() != 3) {
      error = "field \"" + path + ".grid\" must have 3 entries, has " +
              std::to_string(grid->size());
      return false;
    }
    for (int d = 0; d < 3; ++d) {
      const Json &g = (*grid)[d];
      std::string full = path + ".grid[" + std::to_string(d) + "]";
      if (g.is_string()) {
        if (g.get<std::string>().empty()) {
          error = "field \"" + full + "\" is an empty symbol";
          return false;
        }
        k.grid[d].symbol = g.get<std::string>();
      } else if (!r.integer(g, full, 1, kI32Max, k.grid[d].value)) {
        error += " (or a symbol such as \"batch\")";
        return false;
      }
    }
    const Json *params = r.member(kv, path, "params", Kind::Array);
    if (!params)
      return false;
    for (size_t j = 0; j < params->size(); ++j) {
      if (!(*params)[j].is_string()) {
        error = "field \"" + path + ".params[" + std::to_string(j) + "]\" must be a string";
        return false;
      }
      k.params.push_back((*params)[j].get<std::string>());
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
  std::string text, why;
  if (!readRegularFile(path, kMaxLaunchMetadataBytes, text, why)) {
    error = "cannot read launch metadata: " + why;
    return false;
  }
  if (!parseDecodeLaunch(text, out, why)) {
    error = path + ": " + why;
    return false;
  }
  return true;
}

namespace {
/// The launch inputs a grid formula reads; records the first one `inputs` lacks.
struct GridInputs {
  const std::map<std::string, int64_t> &inputs;
  std::string missing;
  int64_t operator()(const char *name) {
    auto it = inputs.find(name);
    if (it != inputs.end())
      return it->second;
    if (missing.empty())
      missing = name;
    return -1;
  }
};
} // namespace

bool attn::rt::resolveGrid(const LaunchKernel &kernel,
                           const std::map<std::string, int64_t> &inputs, unsigned grid[3],
                           std::string &error) {
  for (int d = 0; d < 3; ++d) {
    int64_t v = kernel.grid[d].value;
    const std::string &symbol = kernel.grid[d].symbol;
    if (!symbol.empty()) {
      attn_abi::GridSymbol s;
      if (!attn_abi::findGridSymbol(symbol, s)) {
        error = "kernel " + kernel.name + ": unknown grid symbol \"" + symbol +
                "\" (not in the launch ABI table, LaunchABI.h)";
        return false;
      }
      GridInputs in{inputs, {}};
      v = attn_abi::gridSymbolValue(s, in);
      if (!in.missing.empty()) {
        error = "kernel " + kernel.name + ": grid symbol \"" + symbol + "\" (" +
                attn_abi::kGridSymbols[size_t(s)].formula + ") needs the launch input \"" +
                in.missing + "\", which this launcher does not give";
        return false;
      }
    }
    int64_t hi = d == 0 ? kI32Max : 65535;
    if (v < 1 || v > hi) {
      error = "kernel " + kernel.name + ": grid extent " + std::to_string(d) + " (" +
              (symbol.empty() ? std::string("constant") : "\"" + symbol + "\"") + ") = " +
              std::to_string(v) + " is outside 1.." + std::to_string(hi);
      return false;
    }
    grid[d] = static_cast<unsigned>(v);
  }
  return true;
}

bool attn::rt::resolveParams(const std::string &kernel, const std::vector<std::string> &names,
                             std::vector<attn_abi::Param> &out, std::string &error) {
  out.clear();
  for (const std::string &name : names) {
    attn_abi::Param p;
    if (!attn_abi::findParam(name, p)) {
      error = "kernel " + kernel + " has a parameter \"" + name +
              "\" that is not in the launch ABI table (LaunchABI.h)";
      return false;
    }
    out.push_back(p);
  }
  return true;
}

bool attn::rt::checkSupplied(const std::string &kernel, const std::vector<attn_abi::Param> &params,
                             const ParamValues &values, std::string &error) {
  for (attn_abi::Param p : params)
    if (!values[p]) {
      const attn_abi::ParamInfo &info = attn_abi::info(p);
      error = "kernel " + kernel + " has a parameter \"" + info.name + "\" (" + info.doc +
              ") this launcher does not supply";
      return false;
    }
  return true;
}
