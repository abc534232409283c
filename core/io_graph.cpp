// The native graph JSON format (docs/formats.md): strict reader, deterministic writer, and
// format detection between native JSON and PipeDream profiles.
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "core/error.h"
#include "core/io.h"
#include "core/json_strict.h"

namespace gdp {

using nlohmann::json;

std::string read_text_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InputError(path + ": cannot open file for reading");
  // A regular file is read at once into a string of its size (a 300 MB graph is not copied
  // twice); anything else (a pipe), or what a growing file adds, is read in chunks.
  std::string text;
  std::error_code ec;
  const uintmax_t size =
      std::filesystem::is_regular_file(path, ec) ? std::filesystem::file_size(path, ec) : 0;
  if (!ec && size > 0) {
    text.resize(static_cast<size_t>(size));
    f.read(text.data(), static_cast<std::streamsize>(size));
    text.resize(static_cast<size_t>(f.gcount()));
    f.clear();
  }
  char buf[65536];
  while (f.read(buf, sizeof buf) || f.gcount() > 0)
    text.append(buf, static_cast<size_t>(f.gcount()));
  if (f.bad()) throw InputError(path + ": read error");
  return text;
}

void write_text_file_atomic(const std::string& path, const std::string& text) {
  std::error_code sec;
  const auto st = std::filesystem::status(path, sec);
  if (!sec && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st)) {
    if (std::filesystem::is_directory(st))
      throw InputError(path + ": is a directory; expected a file path to write");
    // A device or a pipe (/dev/null, /dev/stdout): written straight through, never replaced
    // by a rename (which would turn /dev/null into a regular file).
    std::ofstream f(path, std::ios::binary);
    if (!f) throw InputError(path + ": cannot open for writing");
    f << text;
    f.flush();
    if (!f) throw InputError(path + ": write error");
    return;
  }
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw InputError(path + ": cannot open '" + tmp + "' for writing");
    f << text;
    f.flush();
    if (!f) {
      std::remove(tmp.c_str());
      throw InputError(path + ": write error");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    throw InputError(path + ": cannot rename temporary file: " + ec.message());
  }
}

namespace {

// The versions this build reads: 2, and 1, whose param_bytes held everything resident on the
// op's device (weights and optimizer state together). Writes version 2.
int graph_format_version(const StrictJson& sj, const json& root) {
  if (root.is_object() && root.contains("version") && root["version"].is_number_integer()) {
    const int64_t v = root["version"].get<int64_t>();
    if (v == 1 || v == kGraphFormatVersion) {
      sj.check_header(root, "gdp-graph", static_cast<int>(v));
      return static_cast<int>(v);
    }
    if (root.contains("format") && root["format"] == "gdp-graph")
      sj.fail("version", "unsupported version " + std::to_string(v) +
                             " (this build reads versions 1 and " +
                             std::to_string(kGraphFormatVersion) + ")");
  }
  sj.check_header(root, "gdp-graph", kGraphFormatVersion);  // throws its own message
  return kGraphFormatVersion;
}

// Version 1 had one resident figure, param_bytes. `gdp gen` wrote 3 x the weights there on
// each VariableV2 op (weights + Adam's m and v; the op's output is the weights): split that
// back. Anything else (e.g. a converted PipeDream profile, weights only) stays weights.
void split_version1_resident_bytes(Op& op) {
  if (op.type != "VariableV2" || op.outputs.size() != 1) return;
  const int64_t w = op.outputs[0].bytes;
  if (w <= 0 || op.param_bytes != 3 * w) return;
  op.param_bytes = w;
  op.optimizer_bytes = 2 * w;
  op.param_dtype = op.outputs[0].dtype;
}

// The fast path of parse_graph_json: reads a valid graph straight from the parser's events
// into the Graph, with no DOM. It accepts only what the checked reader accepts, with the same
// result; at anything else (an unknown, missing or repeated key, a wrong type, a value out of
// range, edges before ops, a syntax error) it stops, and the checked reader reads the text
// again and names the first error. Each handler below lists what is valid where it is.
class FastGraphReader {
 public:
  using json = nlohmann::json;

  explicit FastGraphReader(size_t ops_hint) { by_id_.reserve(ops_hint * 2); }

  // The graph (not finalized) when the text is a valid graph, except perhaps for repeated op
  // names or a cycle (found by Graph::finalize); else nothing.
  std::optional<Graph> read(const std::string& text) {
    const bool ok = json::sax_parse(text.data(), text.data() + text.size(), this);
    if (!ok || at_ != At::end) return std::nullopt;
    return std::move(g_);
  }

  // ---- nlohmann SAX interface; returning false stops the parser ----
  bool null() { return false; }  // no field is null or boolean
  bool boolean(bool) { return false; }
  bool number_integer(json::number_integer_t x) { return integer(x); }
  bool number_unsigned(json::number_unsigned_t x) {
    if (x <= uint64_t{INT64_MAX}) return integer(static_cast<int64_t>(x));
    return number(static_cast<double>(x));
  }
  bool number_float(json::number_float_t x, const json::string_t&) { return number(x); }
  bool binary(json::binary_t&) { return false; }
  bool parse_error(std::size_t, const std::string&, const json::exception&) { return false; }

  bool string(json::string_t& s) {
    switch (at_) {
      case At::root:
        if (key_ == kFormat) return s == "gdp-graph";
        if (key_ == kName) return set(g_.name, std::move(s));
        return false;
      case At::op:
        switch (key_) {
          case kOpName:
            return !s.empty() && set(op_.name, std::move(s));
          case kOpType:
            return set(op_.type, std::move(s));
          case kOpPhase:
            return parse_phase(s, &op_.phase);
          case kOpScope:
            return set(op_.scope, std::move(s));
          case kOpColocation:
            return !s.empty() && set(op_.colocation, std::move(s));
          case kOpParamDtype:
            return parse_dtype(s, &op_.param_dtype);
          default:
            return false;
        }
      case At::output:
        return key_ == kOutDtype && parse_dtype(s, &tensor_.dtype);
      case At::measurement:
        return key_ == kMeasKind && set(measured_.device_kind, std::move(s));
      default:
        return false;
    }
  }

  bool key(json::string_t& k) {
    const std::string_view* names;
    size_t count;
    uint32_t* seen;
    switch (at_) {
      case At::root:
        names = kRootKeys, count = std::size(kRootKeys), seen = &root_seen_;
        break;
      case At::op:
        names = kOpKeys, count = std::size(kOpKeys), seen = &op_seen_;
        break;
      case At::output:
        names = kOutKeys, count = std::size(kOutKeys), seen = &out_seen_;
        break;
      case At::measurement:
        names = kMeasKeys, count = std::size(kMeasKeys), seen = &meas_seen_;
        break;
      case At::edge:
        names = kEdgeKeys, count = std::size(kEdgeKeys), seen = &edge_seen_;
        break;
      default:
        return false;
    }
    int i = 0;
    while (i < static_cast<int>(count) && names[i] != k) ++i;
    if (i == static_cast<int>(count) || (*seen >> i & 1)) return false;  // unknown or repeated
    *seen |= 1u << i;
    key_ = i;
    return true;
  }

  bool start_object(std::size_t) {
    switch (at_) {
      case At::start:
        at_ = At::root;
        return true;
      case At::ops:
        at_ = At::op, op_ = Op(), op_seen_ = 0;
        return true;
      case At::outputs:
        at_ = At::output, tensor_ = TensorSpec(), out_seen_ = 0;
        return true;
      case At::measured:
        at_ = At::measurement, measured_ = MeasuredTime(), meas_seen_ = 0;
        return true;
      case At::edges:
        at_ = At::edge, edge_ = Edge(), src_id_ = dst_id_ = -1, edge_seen_ = 0;
        return true;
      default:
        return false;
    }
  }

  bool end_object() {
    switch (at_) {
      case At::root:  // every key present (ops before edges: checked at the edges)
        at_ = At::end;
        return root_seen_ == (1u << std::size(kRootKeys)) - 1 && g_.num_ops() > 0;
      case At::op: {
        at_ = At::ops;
        if ((op_seen_ & kOpRequired) != kOpRequired) return false;
        // (Repeated names are found by Graph::finalize.)
        if (!by_id_.emplace(op_.id, g_.num_ops()).second) return false;
        g_.add_op(std::move(op_));
        return true;
      }
      case At::output:
        at_ = At::outputs;
        if (out_seen_ != (1u << std::size(kOutKeys)) - 1) return false;
        op_.outputs.push_back(std::move(tensor_));
        return true;
      case At::measurement:
        at_ = At::measured;
        if (meas_seen_ != (1u << std::size(kMeasKeys)) - 1) return false;
        for (const auto& prev : op_.measured)
          if (prev.device_kind == measured_.device_kind) return false;
        op_.measured.push_back(std::move(measured_));
        return true;
      case At::edge: {
        at_ = At::edges;
        if ((edge_seen_ & kEdgeRequired) != kEdgeRequired) return false;
        auto src = by_id_.find(src_id_), dst = by_id_.find(dst_id_);
        if (src == by_id_.end() || dst == by_id_.end() || src->second == dst->second) return false;
        edge_.src = src->second;
        edge_.dst = dst->second;
        const auto& outs = g_.op(edge_.src).outputs;
        if (edge_.src_output >= static_cast<int32_t>(outs.size())) return false;
        if (!(edge_seen_ >> kEdgeBytes & 1)) edge_.bytes = outs[edge_.src_output].bytes;
        g_.add_edge(edge_);
        return true;
      }
      default:
        return false;
    }
  }

  bool start_array(std::size_t) {
    switch (at_) {
      case At::root:
        if (key_ == kOps) return go(At::ops);
        // Edges are resolved against the ops: a file with edges first takes the checked path.
        if (key_ == kEdges && (root_seen_ >> kOps & 1)) return go(At::edges);
        return false;
      case At::op:
        if (key_ == kOpOutputs) return go(At::outputs);
        if (key_ == kOpMeasured) return go(At::measured);
        return false;
      case At::output:
        return key_ == kOutShape && go(At::shape);
      default:
        return false;
    }
  }

  bool end_array() {
    switch (at_) {
      case At::ops:
      case At::edges:
        at_ = At::root;
        return true;
      case At::outputs:
      case At::measured:
        at_ = At::op;
        return true;
      case At::shape:
        at_ = At::output;
        return true;
      default:
        return false;
    }
  }

 private:
  enum class At : uint8_t {
    start,
    root,
    ops,
    op,
    outputs,
    output,
    shape,
    measured,
    measurement,
    edges,
    edge,
    end
  };
  // Keys of each object, in bit order of its `seen` mask; required keys first.
  static constexpr std::string_view kRootKeys[] = {"format", "version", "name", "ops", "edges"};
  enum { kFormat, kVersion, kName, kOps, kEdges };
  static constexpr std::string_view kOpKeys[] = {
      "id",          "name",           "type",     "phase",       "outputs",
      "flops",       "bytes_accessed", "scope",    "param_bytes", "optimizer_bytes",
      "param_dtype", "temp_bytes",     "measured", "colocation"};
  enum {
    kOpId,
    kOpName,
    kOpType,
    kOpPhase,
    kOpOutputs,
    kOpFlops,
    kOpBytesAccessed,
    kOpScope,
    kOpParamBytes,
    kOpOptimizerBytes,
    kOpParamDtype,
    kOpTempBytes,
    kOpMeasured,
    kOpColocation
  };
  static constexpr uint32_t kOpRequired = (1u << 7) - 1;
  static constexpr std::string_view kOutKeys[] = {"shape", "dtype", "bytes"};
  enum { kOutShape, kOutDtype, kOutBytes };
  static constexpr std::string_view kMeasKeys[] = {"device_kind", "time_s"};
  enum { kMeasKind, kMeasTime };
  static constexpr std::string_view kEdgeKeys[] = {"src", "dst", "output", "bytes"};
  enum { kEdgeSrc, kEdgeDst, kEdgeOutput, kEdgeBytes };
  static constexpr uint32_t kEdgeRequired = (1u << 2) - 1;

  template <class T, class V>
  static bool set(T& field, V&& value) {
    field = std::forward<V>(value);
    return true;
  }
  bool go(At at) {
    at_ = at;
    return true;
  }

  // An integer value (what the checked reader's integer() accepts, as there).
  bool integer(int64_t x) {
    auto in = [x](int64_t lo, int64_t hi) { return x >= lo && x <= hi; };
    switch (at_) {
      case At::root:  // version 1 files take the checked path (it splits their param_bytes)
        return key_ == kVersion && x == kGraphFormatVersion;
      case At::op:
        switch (key_) {
          case kOpId:
            return in(0, INT64_MAX / 4) && set(op_.id, x);
          case kOpParamBytes:
            return in(0, kMaxBytes) && set(op_.param_bytes, x);
          case kOpOptimizerBytes:
            return in(0, kMaxBytes) && set(op_.optimizer_bytes, x);
          case kOpTempBytes:
            return in(0, kMaxBytes) && set(op_.temp_bytes, x);
          default:
            return number(static_cast<double>(x));
        }
      case At::shape:
        if (x < 0) return false;
        tensor_.shape.push_back(x);
        return true;
      case At::output:
        return key_ == kOutBytes && in(0, kMaxBytes) && set(tensor_.bytes, x);
      case At::measurement:
        return number(static_cast<double>(x));
      case At::edge:
        switch (key_) {
          case kEdgeSrc:
            return x >= 0 && set(src_id_, x);
          case kEdgeDst:
            return x >= 0 && set(dst_id_, x);
          case kEdgeOutput:
            return in(0, INT32_MAX) && set(edge_.src_output, static_cast<int32_t>(x));
          case kEdgeBytes:
            return in(0, kMaxBytes) && set(edge_.bytes, x);
          default:
            return false;
        }
      default:
        return false;
    }
  }

  // A number value (what the checked reader's number() accepts, as there).
  bool number(double d) {
    auto in = [d](double lo, double hi) { return std::isfinite(d) && d >= lo && d <= hi; };
    if (at_ == At::op && key_ == kOpFlops) return in(0, kMaxNumber) && set(op_.flops, d);
    if (at_ == At::op && key_ == kOpBytesAccessed)
      return in(0, kMaxNumber) && set(op_.bytes_accessed, d);
    if (at_ == At::measurement && key_ == kMeasTime) return in(0, 1e6) && set(measured_.time_s, d);
    return false;
  }

  Graph g_;
  std::unordered_map<int64_t, int32_t> by_id_;
  At at_ = At::start;
  int key_ = -1;  // the key whose value comes next, in the current object's key list
  uint32_t root_seen_ = 0, op_seen_ = 0, out_seen_ = 0, meas_seen_ = 0, edge_seen_ = 0;
  Op op_;
  TensorSpec tensor_;
  MeasuredTime measured_;
  Edge edge_;
  int64_t src_id_ = -1, dst_id_ = -1;
};

}  // namespace

Graph parse_graph_json(const std::string& text, const std::string& source) {
  std::optional<Graph> g = FastGraphReader(text.size() / 256).read(text);
  if (g) {
    try {
      g->finalize();
      return std::move(*g);
    } catch (const InputError&) {
    }
  }
  return parse_graph_json_reference(text, source);  // names the first error
}

// The checked reader (the DOM of the whole text, then every check in order, each naming the
// file, the JSON path and the expectation): the reference for the fast path, and the reader
// that names the first error when the fast path stops.
Graph parse_graph_json_reference(const std::string& text, const std::string& source) {
  StrictJson sj(source);
  json root = sj.parse(text);
  const int version = graph_format_version(sj, root);
  sj.check_keys(root, "", {"format", "version", "name", "ops", "edges"}, {});
  Graph g;
  g.name = sj.string(root, "name", "");
  const json& ops = sj.array(root, "ops", "");
  if (ops.empty()) sj.fail("ops", "expected at least one op (the graph is empty)");
  std::unordered_map<int64_t, int32_t> by_id;
  std::unordered_map<std::string, size_t> by_name;
  by_id.reserve(ops.size() * 2);
  by_name.reserve(ops.size() * 2);
  for (size_t i = 0; i < ops.size(); ++i) {
    const std::string p = json_path("ops", i);
    const json& jo = ops[i];
    if (version == 1)
      sj.check_keys(jo, p, {"id", "name", "type", "phase", "outputs", "flops", "bytes_accessed"},
                    {"scope", "param_bytes", "temp_bytes", "measured", "colocation"});
    else
      sj.check_keys(jo, p, {"id", "name", "type", "phase", "outputs", "flops", "bytes_accessed"},
                    {"scope", "param_bytes", "optimizer_bytes", "param_dtype", "temp_bytes",
                     "measured", "colocation"});
    Op op;
    op.id = sj.integer(jo, "id", p, 0, INT64_MAX / 4);
    op.name = sj.string(jo, "name", p);
    if (op.name.empty()) sj.fail(json_path(p, "name"), "expected a non-empty string");
    op.type = sj.string(jo, "type", p);
    std::string ph = sj.string(jo, "phase", p);
    if (!parse_phase(ph, &op.phase))
      sj.fail(json_path(p, "phase"),
              "expected \"forward\", \"backward\" or \"update\", got \"" + ph + "\"");
    const json& outs = sj.array(jo, "outputs", p);
    for (size_t k = 0; k < outs.size(); ++k) {
      const std::string q = json_path(json_path(p, "outputs"), k);
      sj.check_keys(outs[k], q, {"shape", "dtype", "bytes"}, {});
      TensorSpec t;
      const json& shape = sj.array(outs[k], "shape", q);
      for (size_t d = 0; d < shape.size(); ++d)
        t.shape.push_back(sj.integer_value(shape[d], json_path(json_path(q, "shape"), d)));
      std::string dt = sj.string(outs[k], "dtype", q);
      if (!parse_dtype(dt, &t.dtype))
        sj.fail(json_path(q, "dtype"),
                "expected one of f32, f16, bf16, f64, i32, i64, u8, bool; got \"" + dt + "\"");
      t.bytes = sj.integer(outs[k], "bytes", q, 0, kMaxBytes);
      op.outputs.push_back(std::move(t));
    }
    op.flops = sj.number(jo, "flops", p);
    op.bytes_accessed = sj.number(jo, "bytes_accessed", p);
    if (jo.contains("scope")) op.scope = sj.string(jo, "scope", p);
    if (jo.contains("param_bytes")) op.param_bytes = sj.integer(jo, "param_bytes", p, 0, kMaxBytes);
    if (jo.contains("optimizer_bytes"))
      op.optimizer_bytes = sj.integer(jo, "optimizer_bytes", p, 0, kMaxBytes);
    if (jo.contains("param_dtype")) {
      std::string dt = sj.string(jo, "param_dtype", p);
      if (!parse_dtype(dt, &op.param_dtype))
        sj.fail(json_path(p, "param_dtype"),
                "expected one of f32, f16, bf16, f64, i32, i64, u8, bool; got \"" + dt + "\"");
    }
    if (jo.contains("temp_bytes")) op.temp_bytes = sj.integer(jo, "temp_bytes", p, 0, kMaxBytes);
    if (jo.contains("colocation")) {
      op.colocation = sj.string(jo, "colocation", p);
      if (op.colocation.empty())
        sj.fail(json_path(p, "colocation"),
                "expected a non-empty group name (omit the key for none)");
    }
    if (jo.contains("measured")) {
      const json& ms = sj.array(jo, "measured", p);
      for (size_t k = 0; k < ms.size(); ++k) {
        const std::string q = json_path(json_path(p, "measured"), k);
        sj.check_keys(ms[k], q, {"device_kind", "time_s"}, {});
        MeasuredTime mt;
        mt.device_kind = sj.string(ms[k], "device_kind", q);
        mt.time_s = sj.number(ms[k], "time_s", q, 0, 1e6);
        for (const auto& prev : op.measured)
          if (prev.device_kind == mt.device_kind)
            sj.fail(json_path(q, "device_kind"),
                    "duplicate device kind \"" + mt.device_kind + "\"");
        op.measured.push_back(mt);
      }
    }
    if (version == 1) split_version1_resident_bytes(op);
    if (!by_id.emplace(op.id, static_cast<int32_t>(i)).second)
      sj.fail(json_path(p, "id"), "duplicate op id " + std::to_string(op.id));
    if (!by_name.emplace(op.name, i).second)
      sj.fail(json_path(p, "name"), "duplicate op name \"" + op.name + "\"");
    g.add_op(std::move(op));
  }
  const json& edges = sj.array(root, "edges", "");
  for (size_t e = 0; e < edges.size(); ++e) {
    const std::string p = json_path("edges", e);
    const json& je = edges[e];
    sj.check_keys(je, p, {"src", "dst"}, {"output", "bytes"});
    auto resolve = [&](const char* key) {
      int64_t id = sj.integer(je, key, p);
      auto it = by_id.find(id);
      if (it == by_id.end())
        sj.fail(json_path(p, key), "refers to missing op id " + std::to_string(id));
      return it->second;
    };
    Edge ed;
    ed.src = resolve("src");
    ed.dst = resolve("dst");
    if (ed.src == ed.dst) sj.fail(p, "self-loop on op \"" + g.op(ed.src).name + "\"");
    const Op& s = g.op(ed.src);
    ed.src_output = 0;
    if (je.contains("output"))
      ed.src_output = static_cast<int32_t>(sj.integer(je, "output", p, 0, INT32_MAX));
    if (ed.src_output >= static_cast<int32_t>(s.outputs.size()))
      sj.fail(json_path(p, "output"), "op \"" + s.name + "\" has " +
                                          std::to_string(s.outputs.size()) +
                                          " outputs; expected an index below that");
    ed.bytes = je.contains("bytes") ? sj.integer(je, "bytes", p, 0, kMaxBytes)
                                    : s.outputs[ed.src_output].bytes;
    g.add_edge(ed);
  }
  try {
    g.finalize();
  } catch (const InputError& e) {
    throw InputError(source + ": " + e.what());
  }
  return g;
}

namespace {

// JSON text exactly as nlohmann's dump() writes it (the writer's output is unchanged), without
// building a DOM per op: 4x faster on million-op graphs.
void append_json(std::string& out, int64_t x) {
  char buf[24];
  out.append(buf, std::to_chars(buf, buf + sizeof buf, x).ptr);
}
void append_json(std::string& out, double x) { out += json(x).dump(); }
void append_json(std::string& out, const std::string& s) {
  for (unsigned char c : s)
    if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {  // escapes, UTF-8 checks: nlohmann's
      out += json(s).dump();
      return;
    }
  out += '"';
  out += s;
  out += '"';
}
// ,"key":value
template <class T>
void append_member(std::string& out, const char* key, const T& value) {
  out += ",\"";
  out += key;
  out += "\":";
  append_json(out, value);
}

// Runs `write`; nlohmann's error on a string that is not UTF-8 becomes an InputError that
// names the graph and `what` (names, types, scopes and groups must be valid UTF-8).
template <class F>
void utf8_checked(const Graph& g, const std::string& what, F&& write) {
  try {
    write();
  } catch (const nlohmann::json::type_error& e) {
    throw InputError("graph '" + g.name + "': cannot write " + what +
                     " as JSON: a name, type, scope, group or device kind is not valid UTF-8 (" +
                     e.what() + "); expected UTF-8 text");
  }
}

}  // namespace

nlohmann::ordered_json graph_summary_json(const Graph& g) {
  const GraphSummary s = g.summary();
  return nlohmann::ordered_json{{"name", g.name},
                                {"ops", s.ops},
                                {"edges", s.edges},
                                {"flops", s.flops},
                                {"flops_forward", s.flops_forward},
                                {"flops_backward", s.flops_backward},
                                {"flops_update", s.flops_update},
                                {"ops_forward", s.ops_forward},
                                {"ops_backward", s.ops_backward},
                                {"ops_update", s.ops_update},
                                {"parameters", s.parameters},
                                {"parameter_bytes", s.parameter_bytes},
                                {"optimizer_state_bytes", s.optimizer_bytes},
                                {"activation_bytes", s.activation_bytes},
                                {"temp_bytes", s.temp_bytes},
                                {"colocation_groups", s.colocation_groups},
                                {"depth", s.depth}};
}

std::string graph_to_json(const Graph& g) {
  // One op / edge per line: diff-friendly and fast to write for 100k-op graphs. Keys in this
  // order, compact separators; optional keys only when not the default.
  std::string out;
  out.reserve(static_cast<size_t>(g.num_ops()) * 256 + static_cast<size_t>(g.num_edges()) * 64);
  out += "{\"format\":\"gdp-graph\"";
  append_member(out, "version", int64_t{kGraphFormatVersion});
  utf8_checked(g, "the graph name", [&] { append_member(out, "name", g.name); });
  out += ",\n\"ops\": [\n";
  for (int32_t i = 0; i < g.num_ops(); ++i) {
    const Op& o = g.op(i);
    utf8_checked(g, "op #" + std::to_string(i) + " (id " + std::to_string(o.id) + ")", [&] {
      out += "  {\"id\":";
      append_json(out, o.id);
      append_member(out, "name", o.name);
      append_member(out, "type", o.type);
      if (!o.scope.empty()) append_member(out, "scope", o.scope);
      append_member(out, "phase", std::string(phase_name(o.phase)));
      out += ",\"outputs\":[";
      for (size_t k = 0; k < o.outputs.size(); ++k) {
        const TensorSpec& t = o.outputs[k];
        out += k ? ",{\"shape\":[" : "{\"shape\":[";
        for (size_t d = 0; d < t.shape.size(); ++d) {
          if (d) out += ',';
          append_json(out, t.shape[d]);
        }
        out += ']';
        append_member(out, "dtype", std::string(dtype_name(t.dtype)));
        append_member(out, "bytes", t.bytes);
        out += '}';
      }
      out += ']';
      append_member(out, "flops", o.flops);
      append_member(out, "bytes_accessed", o.bytes_accessed);
      if (o.param_bytes) append_member(out, "param_bytes", o.param_bytes);
      if (o.optimizer_bytes) append_member(out, "optimizer_bytes", o.optimizer_bytes);
      if (o.param_dtype != DType::f32)
        append_member(out, "param_dtype", std::string(dtype_name(o.param_dtype)));
      if (o.temp_bytes) append_member(out, "temp_bytes", o.temp_bytes);
      if (!o.measured.empty()) {
        out += ",\"measured\":[";
        for (size_t k = 0; k < o.measured.size(); ++k) {
          out += k ? ",{\"device_kind\":" : "{\"device_kind\":";
          append_json(out, o.measured[k].device_kind);
          append_member(out, "time_s", o.measured[k].time_s);
          out += '}';
        }
        out += ']';
      }
      if (!o.colocation.empty()) append_member(out, "colocation", o.colocation);
    });
    out += (i + 1 < g.num_ops()) ? "},\n" : "}\n";
  }
  out += "],\n\"edges\": [\n";
  const auto& es = g.edges();
  for (size_t e = 0; e < es.size(); ++e) {
    const Edge& ed = es[e];
    out += "  {\"src\":";
    append_json(out, g.op(ed.src).id);
    append_member(out, "dst", g.op(ed.dst).id);
    if (ed.src_output) append_member(out, "output", int64_t{ed.src_output});
    if (ed.bytes != g.op(ed.src).outputs[ed.src_output].bytes)
      append_member(out, "bytes", ed.bytes);
    out += (e + 1 < es.size()) ? "},\n" : "}\n";
  }
  out += "]}\n";
  return out;
}

void write_graph_file(const Graph& g, const std::string& path) {
  write_text_file_atomic(path, graph_to_json(g));
}

Graph read_graph_file(const std::string& path, const PipeDreamOptions& pipedream,
                      GraphFileFormat* format) {
  std::string text = read_text_file(path);
  size_t k = text.find_first_not_of(" \t\r\n");
  if (k == std::string::npos) throw InputError(path + ": the file is empty; expected a graph");
  if (text[k] == '{') {
    if (format) *format = GraphFileFormat::gdp_json;
    return parse_graph_json(text, path);
  }
  if (looks_like_pipedream(text)) {
    if (format) *format = GraphFileFormat::pipedream;
    return parse_pipedream(text, path, pipedream);
  }
  throw InputError(path +
                   ": unrecognized graph format: expected a gdp-graph JSON object or a "
                   "PipeDream profile (lines 'nodeN -- <layer> -- forward_compute_time=...')");
}

}  // namespace gdp
