// The native graph JSON format (docs/formats.md): strict reader, deterministic writer, and
// format detection between native JSON and PipeDream profiles.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include <unistd.h>

#include "core/error.h"
#include "core/io.h"
#include "core/json_strict.h"

namespace gdp {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

std::string read_text_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InputError(path + ": cannot open file for reading");
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) throw InputError(path + ": read error");
  return ss.str();
}

void write_text_file_atomic(const std::string& path, const std::string& text) {
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

}  // namespace

Graph parse_graph_json(const std::string& text, const std::string& source) {
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
      sj.fail(json_path(p, "phase"), "expected \"forward\", \"backward\" or \"update\", got \"" + ph + "\"");
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
        sj.fail(json_path(q, "dtype"), "expected one of f32, f16, bf16, f64, i32, i64, u8, bool; got \"" + dt + "\"");
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
      if (op.colocation.empty()) sj.fail(json_path(p, "colocation"), "expected a non-empty group name (omit the key for none)");
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
            sj.fail(json_path(q, "device_kind"), "duplicate device kind \"" + mt.device_kind + "\"");
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
      if (it == by_id.end()) sj.fail(json_path(p, key), "refers to missing op id " + std::to_string(id));
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
      sj.fail(json_path(p, "output"), "op \"" + s.name + "\" has " + std::to_string(s.outputs.size()) +
                                          " outputs; expected an index below that");
    ed.bytes = je.contains("bytes") ? sj.integer(je, "bytes", p, 0, kMaxBytes) : s.outputs[ed.src_output].bytes;
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

// j.dump(), with nlohmann's error on a string that is not UTF-8 turned into an InputError that
// names the graph and the op (names, types, scopes and groups must be valid UTF-8).
std::string dump_text(const ojson& j, const Graph& g, const std::string& what) {
  try {
    return j.dump();
  } catch (const nlohmann::json::type_error& e) {
    throw InputError("graph '" + g.name + "': cannot write " + what +
                     " as JSON: a name, type, scope, group or device kind is not valid UTF-8 (" +
                     e.what() + "); expected UTF-8 text");
  }
}

}  // namespace

std::string graph_to_json(const Graph& g) {
  // One op / edge per line: diff-friendly and fast to write for 100k-op graphs.
  std::string out;
  out.reserve(static_cast<size_t>(g.num_ops()) * 256 + static_cast<size_t>(g.num_edges()) * 64);
  ojson head;
  head["format"] = "gdp-graph";
  head["version"] = kGraphFormatVersion;
  head["name"] = g.name;
  std::string h = dump_text(head, g, "the graph name");
  out += h.substr(0, h.size() - 1);  // drop the closing brace
  out += ",\n\"ops\": [\n";
  for (int32_t i = 0; i < g.num_ops(); ++i) {
    const Op& o = g.op(i);
    ojson j;
    j["id"] = o.id;
    j["name"] = o.name;
    j["type"] = o.type;
    if (!o.scope.empty()) j["scope"] = o.scope;
    j["phase"] = phase_name(o.phase);
    ojson outs = ojson::array();
    for (const auto& t : o.outputs)
      outs.push_back(ojson{{"shape", t.shape}, {"dtype", dtype_name(t.dtype)}, {"bytes", t.bytes}});
    j["outputs"] = std::move(outs);
    j["flops"] = o.flops;
    j["bytes_accessed"] = o.bytes_accessed;
    if (o.param_bytes) j["param_bytes"] = o.param_bytes;
    if (o.optimizer_bytes) j["optimizer_bytes"] = o.optimizer_bytes;
    if (o.param_dtype != DType::f32) j["param_dtype"] = dtype_name(o.param_dtype);
    if (o.temp_bytes) j["temp_bytes"] = o.temp_bytes;
    if (!o.measured.empty()) {
      ojson ms = ojson::array();
      for (const auto& m : o.measured) ms.push_back(ojson{{"device_kind", m.device_kind}, {"time_s", m.time_s}});
      j["measured"] = std::move(ms);
    }
    if (!o.colocation.empty()) j["colocation"] = o.colocation;
    out += "  ";
    out += dump_text(j, g, "op #" + std::to_string(i) + " (id " + std::to_string(o.id) + ")");
    out += (i + 1 < g.num_ops()) ? ",\n" : "\n";
  }
  out += "],\n\"edges\": [\n";
  const auto& es = g.edges();
  for (size_t e = 0; e < es.size(); ++e) {
    const Edge& ed = es[e];
    ojson j;
    j["src"] = g.op(ed.src).id;
    j["dst"] = g.op(ed.dst).id;
    if (ed.src_output) j["output"] = ed.src_output;
    if (ed.bytes != g.op(ed.src).outputs[ed.src_output].bytes) j["bytes"] = ed.bytes;
    out += "  ";
    out += j.dump();
    out += (e + 1 < es.size()) ? ",\n" : "\n";
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
  throw InputError(path + ": unrecognized graph format: expected a gdp-graph JSON object or a "
                   "PipeDream profile (lines 'nodeN -- <layer> -- forward_compute_time=...')");
}

}  // namespace gdp
