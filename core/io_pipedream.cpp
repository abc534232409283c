// Importer for PipeDream per-layer profiles (graph.txt): each layer becomes a forward op and a
// backward op with the measured times; see docs/formats.md for the exact mapping.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>

#include "core/error.h"
#include "core/io.h"

namespace gdp {

namespace {

struct Layer {
  int64_t n = 0;
  std::string desc;
  double fwd_ms = 0, bwd_ms = 0;
  double act_bytes = 0, param_bytes = 0;
};

[[noreturn]] void bad(const std::string& src, size_t line, const std::string& what) {
  throw InputError(src + ":" + std::to_string(line) + ": " + what);
}

int64_t parse_node_id(const std::string& s, const std::string& src, size_t line) {
  // "node" then 1 to 9 decimal digits (ids become 2N and 2N+1: no overflow).
  bool ok = s.rfind("node", 0) == 0 && s.size() > 4 && s.size() <= 13;
  for (size_t k = 4; ok && k < s.size(); ++k) ok = std::isdigit(static_cast<unsigned char>(s[k])) != 0;
  if (!ok) bad(src, line, "expected a node name 'nodeN' (N: 1 to 9 digits), got '" + s + "'");
  return std::stoll(s.substr(4));
}

double parse_number(const std::string& s, const std::string& field, const std::string& src, size_t line) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end == s.c_str() || *end != '\0' || !std::isfinite(v) || v < 0 || v > 1e15)
    bad(src, line, "field " + field + ": expected a number in [0, 1e15], got '" + s + "'");
  return v;
}

// "6291456.0" or "[6291456.0; 131072.0]" (several outputs: summed, as PipeDream does).
double parse_size(std::string s, const std::string& field, const std::string& src, size_t line) {
  if (!s.empty() && s.front() == '[') {
    if (s.back() != ']') bad(src, line, "field " + field + ": unterminated list '" + s + "'");
    s = s.substr(1, s.size() - 2);
    double sum = 0;
    std::stringstream ss(s);
    std::string part;
    if (s.empty() || s.back() == ';') bad(src, line, "field " + field + ": empty list item");
    while (std::getline(ss, part, ';')) {
      part.erase(0, part.find_first_not_of(' '));
      part.erase(part.find_last_not_of(' ') + 1);
      sum += parse_number(part, field, src, line);
    }
    return sum;
  }
  return parse_number(s, field, src, line);
}

std::vector<std::string> split_dashes(const std::string& line) {
  std::vector<std::string> parts;
  size_t pos = 0;
  for (;;) {
    size_t k = line.find(" -- ", pos);
    if (k == std::string::npos) {
      parts.push_back(line.substr(pos));
      return parts;
    }
    parts.push_back(line.substr(pos, k - pos));
    pos = k + 4;
  }
}

std::string layer_type(const std::string& desc) {
  std::string t = desc.substr(0, desc.find('('));
  while (!t.empty() && std::isdigit(static_cast<unsigned char>(t.back()))) t.pop_back();  // Input0 -> Input
  return t.empty() ? std::string("Layer") : t;
}

}  // namespace

bool looks_like_pipedream(const std::string& text) {
  size_t k = text.find_first_not_of(" \t\r\n");
  return k != std::string::npos && text.compare(k, 4, "node") == 0 &&
         text.find("forward_compute_time=") != std::string::npos;
}

Graph parse_pipedream(const std::string& text, const std::string& src) {
  std::map<int64_t, Layer> layers;
  std::vector<std::pair<int64_t, int64_t>> links;
  std::vector<size_t> link_lines;
  std::stringstream in(text);
  std::string line;
  size_t ln = 0;
  while (std::getline(in, line)) {
    ++ln;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    if (line[0] == '\t') {
      auto parts = split_dashes(line.substr(1));
      if (parts.size() != 2) bad(src, ln, "expected an edge '\\tnodeA -- nodeB'");
      links.push_back({parse_node_id(parts[0], src, ln), parse_node_id(parts[1], src, ln)});
      link_lines.push_back(ln);
      continue;
    }
    auto parts = split_dashes(line);
    if (parts.size() < 3) bad(src, ln, "expected 'nodeN -- <layer> -- forward_compute_time=..., ...'");
    size_t fi = 2;
    if (parts.size() > 3) {  // optional trailing " -- stage_id=N"; descriptions never contain " -- "
      if (parts.back().rfind("stage_id=", 0) == 0) parts.pop_back();
      std::string desc = parts[1];
      for (size_t k = 2; k + 1 < parts.size(); ++k) desc += " -- " + parts[k];
      parts = {parts[0], desc, parts.back()};
    }
    Layer L;
    L.n = parse_node_id(parts[0], src, ln);
    L.desc = parts[1];
    std::map<std::string, std::string> kv;
    std::stringstream fs(parts[fi]);
    std::string f;
    while (std::getline(fs, f, ',')) {
      f.erase(0, f.find_first_not_of(' '));
      size_t eq = f.find('=');
      if (eq == std::string::npos) bad(src, ln, "expected key=value, got '" + f + "'");
      if (!kv.emplace(f.substr(0, eq), f.substr(eq + 1)).second)
        bad(src, ln, "field " + f.substr(0, eq) + " appears twice");
    }
    for (const char* key : {"forward_compute_time", "backward_compute_time", "activation_size", "parameter_size"})
      if (!kv.count(key)) bad(src, ln, std::string("missing field ") + key);
    if (kv.size() != 4) bad(src, ln, "unexpected field; expected forward_compute_time, backward_compute_time, activation_size, parameter_size");
    L.fwd_ms = parse_number(kv["forward_compute_time"], "forward_compute_time", src, ln);
    L.bwd_ms = parse_number(kv["backward_compute_time"], "backward_compute_time", src, ln);
    L.act_bytes = parse_size(kv["activation_size"], "activation_size", src, ln);
    L.param_bytes = parse_size(kv["parameter_size"], "parameter_size", src, ln);
    if (!layers.emplace(L.n, L).second) bad(src, ln, "duplicate node node" + std::to_string(L.n));
  }
  if (layers.empty()) throw InputError(src + ": no nodes found; expected a PipeDream profile");

  Graph g;
  {
    size_t slash = src.find_last_of('/');
    std::string base = slash == std::string::npos ? src : src.substr(slash + 1);
    g.name = base.substr(0, base.find('.'));
    // ".../<model>/graph.txt" (PipeDream's own layout): name it after the folder.
    if (g.name == "graph" && slash != std::string::npos) {
      std::string dir = src.substr(0, slash);
      g.name = dir.substr(dir.find_last_of('/') + 1);
    }
  }
  // Forward op of layer N: id 2N; backward op: id 2N+1. Both in colocation group "nodeN"
  // (the layer's parameters live with it). Measured times apply to any device kind ("*").
  std::map<int64_t, int32_t> fwd, bwd;
  std::map<int64_t, std::vector<int64_t>> preds;
  for (size_t k = 0; k < links.size(); ++k) {
    auto [a, b] = links[k];
    if (!layers.count(a) || !layers.count(b))
      bad(src, link_lines[k], "edge refers to an undefined node node" + std::to_string(layers.count(a) ? b : a));
    if (std::find(preds[b].begin(), preds[b].end(), a) != preds[b].end())
      bad(src, link_lines[k], "duplicate edge node" + std::to_string(a) + " -- node" + std::to_string(b));
    preds[b].push_back(a);
  }
  auto tensor = [](double bytes) {
    TensorSpec t;
    t.bytes = static_cast<int64_t>(std::llround(bytes));
    t.shape = {(t.bytes + 3) / 4};
    t.dtype = DType::f32;
    return t;
  };
  for (const auto& [n, L] : layers) {
    const std::string base = "node" + std::to_string(n);
    Op f;
    f.id = 2 * n;
    f.name = base + "/forward";
    f.type = layer_type(L.desc);
    f.scope = base;
    f.phase = Phase::forward;
    f.outputs.push_back(tensor(L.act_bytes));
    f.bytes_accessed = L.act_bytes;
    f.measured.push_back({"*", L.fwd_ms * 1e-3});
    f.param_bytes = static_cast<int64_t>(std::llround(L.param_bytes));
    f.colocation = base;
    fwd[n] = g.add_op(std::move(f));
  }
  for (const auto& [n, L] : layers) {
    const std::string base = "node" + std::to_string(n);
    Op b;
    b.id = 2 * n + 1;
    b.name = base + "/backward";
    b.type = layer_type(L.desc) + "Grad";
    b.scope = base;
    b.phase = Phase::backward;
    // Output k: the gradient with respect to the layer's k-th input (that input's size).
    for (int64_t p : preds[n]) b.outputs.push_back(tensor(layers[p].act_bytes));
    b.bytes_accessed = 2 * L.act_bytes;
    b.measured.push_back({"*", L.bwd_ms * 1e-3});
    b.colocation = base;
    bwd[n] = g.add_op(std::move(b));
  }
  for (const auto& [n, L] : layers) {
    // The activation stays alive until the layer's own backward op.
    g.add_edge(fwd[n], 0, bwd[n], g.op(fwd[n]).outputs[0].bytes);
  }
  for (auto [a, b] : links) {
    g.add_edge(fwd[a], 0, fwd[b], g.op(fwd[a]).outputs[0].bytes);  // forward data
    const auto& pb = preds[b];
    int32_t k = static_cast<int32_t>(std::find(pb.begin(), pb.end(), a) - pb.begin());
    g.add_edge(bwd[b], k, bwd[a], g.op(bwd[b]).outputs[k].bytes);  // gradient, mirrored
  }
  try {
    g.finalize();
  } catch (const InputError& e) {
    throw InputError(src + ": " + e.what());
  }
  return g;
}

}  // namespace gdp
