// Importer for PipeDream per-layer profiles (graph.txt): each layer becomes a forward op and a
// backward op with the measured times; see docs/formats.md for the exact mapping.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "core/error.h"
#include "core/io.h"
#include "core/json_strict.h"

namespace gdp {

namespace {

// Per-value bounds: a time in ms (10^9 ms = 10^6 s, the graph reader's bound on time_s) and
// a size in bytes, each item and each list's sum (10^15 < 2^50, the reader's byte bound).
constexpr double kMaxTimeMs = 1e9;
constexpr double kMaxSize = 1e15;

struct Layer {
  int64_t n = 0;
  size_t line = 0;
  std::string desc;
  double fwd_ms = 0, bwd_ms = 0;
  double act_bytes = 0, param_bytes = 0;
};

struct Link {
  int64_t a = 0, b = 0;  // node numbers: A feeds B
  size_t line = 0;
};

[[noreturn]] void bad(const std::string& src, size_t line, const std::string& what) {
  throw InputError(src + ":" + std::to_string(line) + ": " + what);
}

// Text of the input quoted in a message: bytes outside printable ASCII as \xNN (a bad file
// can hold NUL bytes or invalid UTF-8), cut after 80 bytes.
std::string shown(const std::string& s) {
  std::string out = "'";
  for (size_t k = 0; k < s.size() && k < 80; ++k) {
    const auto c = static_cast<unsigned char>(s[k]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out + (s.size() > 80 ? "'..." : "'");
}

// Offset of the first byte that is not part of valid UTF-8 (or is NUL); npos when clean.
size_t bad_text_at(const std::string& s) {
  size_t k = 0;
  while (k < s.size()) {
    const auto c = static_cast<unsigned char>(s[k]);
    if (c == 0) return k;
    int len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (len == 0 || k + len > s.size()) return k;
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1f) : len == 3 ? (c & 0x0f) : (c & 0x07);
    for (int j = 1; j < len; ++j) {
      const auto cc = static_cast<unsigned char>(s[k + j]);
      if ((cc >> 6) != 0x2) return k;
      cp = (cp << 6) | (cc & 0x3f);
    }
    // Overlong forms, UTF-16 surrogates and code points above U+10FFFF are invalid.
    const uint32_t min_cp[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[len] || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) return k;
    k += len;
  }
  return std::string::npos;
}

void check_text(const std::string& s, const std::string& field, const std::string& src,
                size_t line) {
  size_t k = bad_text_at(s);
  if (k == std::string::npos) return;
  bad(src, line,
      field + ": " + (s[k] == '\0' ? "NUL byte" : "invalid UTF-8") + " at byte " +
          std::to_string(k + 1) + " of " + shown(s) + "; expected UTF-8 text without NUL bytes");
}

int64_t parse_node_id(const std::string& s, const std::string& src, size_t line) {
  // "node" then 1 to 9 decimal digits (ids become 2N and 2N+1: no overflow).
  bool ok = s.rfind("node", 0) == 0 && s.size() > 4 && s.size() <= 13;
  for (size_t k = 4; ok && k < s.size(); ++k) ok = s[k] >= '0' && s[k] <= '9';
  if (!ok) bad(src, line, "expected a node name 'nodeN' (N: 1 to 9 digits), got " + shown(s));
  return std::stoll(s.substr(4));
}

// A decimal number as PipeDream writes it ("0.000", "6291456.0", "1e15"): optional sign,
// digits with an optional fraction, optional exponent. Not hexadecimal, inf or nan (which
// strtod would take). Locale-independent (from_chars).
double parse_number(const std::string& s, const std::string& field, double max_value,
                    const std::string& src, size_t line) {
  auto fail = [&]() {
    char range[64];
    std::snprintf(range, sizeof range, "[0, %g]", max_value);
    bad(src, line,
        "field " + field + ": expected a decimal number in " + range + ", got " + shown(s));
  };
  size_t k = 0, digits = 0;
  if (k < s.size() && (s[k] == '+' || s[k] == '-')) ++k;
  const size_t start = s[0] == '+' ? 1 : 0;  // from_chars takes '-' but not '+'
  for (; k < s.size() && s[k] >= '0' && s[k] <= '9'; ++k) ++digits;
  if (k < s.size() && s[k] == '.')
    for (++k; k < s.size() && s[k] >= '0' && s[k] <= '9'; ++k) ++digits;
  if (digits == 0) fail();
  if (k < s.size() && (s[k] == 'e' || s[k] == 'E')) {
    ++k;
    if (k < s.size() && (s[k] == '+' || s[k] == '-')) ++k;
    size_t exp_digits = 0;
    for (; k < s.size() && s[k] >= '0' && s[k] <= '9'; ++k) ++exp_digits;
    if (exp_digits == 0) fail();
  }
  if (k != s.size()) fail();
  double v = 0;
  auto r = std::from_chars(s.data() + start, s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || !(v >= 0) || v > max_value) fail();
  return v;
}

// "6291456.0" or "[6291456.0; 131072.0]" (several outputs: summed, as PipeDream does). The
// sum is bounded like one value.
double parse_size(std::string s, const std::string& field, const std::string& src, size_t line) {
  if (s.empty() || s.front() != '[') return parse_number(s, field, kMaxSize, src, line);
  if (s.back() != ']') bad(src, line, "field " + field + ": unterminated list " + shown(s));
  s = s.substr(1, s.size() - 2);
  if (s.empty() || s.back() == ';') bad(src, line, "field " + field + ": empty list item");
  double sum = 0;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, ';')) {
    part.erase(0, part.find_first_not_of(' '));
    part.erase(part.find_last_not_of(' ') + 1);
    sum += parse_number(part, field, kMaxSize, src, line);
  }
  if (sum > kMaxSize) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "the list sums to %.6g bytes; expected a sum in [0, %g]", sum,
                  kMaxSize);
    bad(src, line, "field " + field + ": " + buf);
  }
  return sum;
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
  while (!t.empty() && t.back() >= '0' && t.back() <= '9') t.pop_back();  // Input0 -> Input
  return t.empty() ? std::string("Layer") : t;
}

Layer parse_node_line(const std::string& line, const std::string& src, size_t ln) {
  auto parts = split_dashes(line);
  if (parts.size() < 3)
    bad(src, ln, "expected 'nodeN -- <layer> -- forward_compute_time=..., ...'");
  if (parts.size() > 3) {  // optional trailing " -- stage_id=N"; descriptions never contain " -- "
    if (parts.back().rfind("stage_id=", 0) == 0) parts.pop_back();
    std::string desc = parts[1];
    for (size_t k = 2; k + 1 < parts.size(); ++k) desc += " -- " + parts[k];
    parts = {parts[0], desc, parts.back()};
  }
  Layer L;
  L.line = ln;
  L.n = parse_node_id(parts[0], src, ln);
  L.desc = parts[1];
  check_text(L.desc, "layer description", src, ln);
  // key=value fields, each of the four once, in any order.
  static const char* const kKeys[] = {"forward_compute_time", "backward_compute_time",
                                      "activation_size", "parameter_size"};
  std::string value[4];
  bool seen[4] = {false, false, false, false};
  const std::string& fields = parts[2];
  for (size_t pos = 0; pos <= fields.size();) {
    size_t comma = std::min(fields.find(',', pos), fields.size());
    std::string f = fields.substr(pos, comma - pos);
    pos = comma + 1;
    f.erase(0, f.find_first_not_of(' '));
    if (f.empty() && pos > fields.size()) break;  // nothing after a trailing comma
    size_t eq = f.find('=');
    if (eq == std::string::npos) bad(src, ln, "expected key=value, got " + shown(f));
    const std::string key = f.substr(0, eq);
    int k = 0;
    while (k < 4 && key != kKeys[k]) ++k;
    if (k == 4)
      bad(src, ln,
          "unknown field " + shown(key) +
              "; expected forward_compute_time, backward_compute_time, activation_size, "
              "parameter_size");
    if (seen[k]) bad(src, ln, "field " + key + " appears twice");
    seen[k] = true;
    value[k] = f.substr(eq + 1);
    value[k].erase(value[k].find_last_not_of(' ') + 1);
  }
  for (int k = 0; k < 4; ++k)
    if (!seen[k]) bad(src, ln, std::string("missing field ") + kKeys[k]);
  L.fwd_ms = parse_number(value[0], kKeys[0], kMaxTimeMs, src, ln);
  L.bwd_ms = parse_number(value[1], kKeys[1], kMaxTimeMs, src, ln);
  L.act_bytes = parse_size(value[2], kKeys[2], src, ln);
  L.param_bytes = parse_size(value[3], kKeys[3], src, ln);
  return L;
}

std::string graph_name_of(const std::string& src) {
  size_t slash = src.find_last_of('/');
  std::string base = slash == std::string::npos ? src : src.substr(slash + 1);
  std::string name = base.substr(0, base.find('.'));
  // ".../<model>/graph.txt" (PipeDream's own layout): name it after the folder.
  if (name == "graph" && slash != std::string::npos) {
    std::string dir = src.substr(0, slash);
    name = dir.substr(dir.find_last_of('/') + 1);
  }
  if (bad_text_at(name) != std::string::npos)
    throw InputError(src + ": the graph name taken from the path, " + shown(name) +
                     ", is not valid UTF-8; expected a UTF-8 file name");
  return name;
}

}  // namespace

bool looks_like_pipedream(const std::string& text) {
  size_t k = text.find_first_not_of(" \t\r\n");
  return k != std::string::npos && text.compare(k, 4, "node") == 0 &&
         text.find("forward_compute_time=") != std::string::npos;
}

namespace {

// Pass 1: the records of a profile, in file order. Lines may end in CRLF and carry trailing
// blanks.
struct Records {
  std::vector<Layer> layers;
  std::vector<Link> links;
};
Records read_records(const std::string& text, const std::string& src) {
  Records r;
  std::unordered_map<int64_t, size_t> line_of_node;
  std::string line;
  size_t ln = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = std::min(text.find('\n', pos), text.size());
    line.assign(text, pos, end - pos);
    pos = end + 1;
    ++ln;
    line.erase(line.find_last_not_of(" \t\r") + 1);
    if (line.empty()) continue;
    if (line[0] == '\t') {
      auto parts = split_dashes(line.substr(1));
      if (parts.size() != 2) bad(src, ln, "expected an edge '\\tnodeA -- nodeB'");
      r.links.push_back({parse_node_id(parts[0], src, ln), parse_node_id(parts[1], src, ln), ln});
      continue;
    }
    Layer L = parse_node_line(line, src, ln);
    if (!line_of_node.emplace(L.n, ln).second)
      bad(src, ln,
          "duplicate node node" + std::to_string(L.n) + " (first on line " +
              std::to_string(line_of_node[L.n]) + ")");
    r.layers.push_back(std::move(L));
  }
  if (r.layers.empty()) throw InputError(src + ": no nodes found; expected a PipeDream profile");
  return r;
}

// The links resolved to layer indices (the layers sorted by node id); each consumer's
// predecessors in file order (CSR); a link's slot among its consumer's predecessors is the
// backward op's output index. Hash set: linear in the edges.
struct Resolved {
  std::vector<int32_t> la, lb, slot;
  std::vector<int64_t> pred_ptr;
  std::vector<int32_t> preds;
};
Resolved resolve_links(const std::vector<Layer>& layers, const std::vector<Link>& links,
                       const std::string& src) {
  const auto L = static_cast<int32_t>(layers.size());
  std::unordered_map<int64_t, int32_t> index_of;
  index_of.reserve(layers.size() * 2);
  for (int32_t k = 0; k < L; ++k) index_of.emplace(layers[k].n, k);
  Resolved r;
  r.la.resize(links.size());
  r.lb.resize(links.size());
  r.slot.resize(links.size());
  r.pred_ptr.assign(static_cast<size_t>(L) + 1, 0);
  std::unordered_set<uint64_t> seen;
  seen.reserve(links.size() * 2);
  for (size_t e = 0; e < links.size(); ++e) {
    auto ia = index_of.find(links[e].a), ib = index_of.find(links[e].b);
    if (ia == index_of.end() || ib == index_of.end())
      bad(src, links[e].line,
          "edge refers to an undefined node node" +
              std::to_string(ia == index_of.end() ? links[e].a : links[e].b));
    r.la[e] = ia->second;
    r.lb[e] = ib->second;
    if (!seen.insert(static_cast<uint64_t>(r.la[e]) << 32 | static_cast<uint32_t>(r.lb[e])).second)
      bad(src, links[e].line,
          "duplicate edge node" + std::to_string(links[e].a) + " -- node" +
              std::to_string(links[e].b));
    r.slot[e] = static_cast<int32_t>(r.pred_ptr[r.lb[e] + 1]++);
  }
  for (int32_t k = 0; k < L; ++k) r.pred_ptr[k + 1] += r.pred_ptr[k];
  r.preds.resize(links.size());
  for (size_t e = 0; e < links.size(); ++e) r.preds[r.pred_ptr[r.lb[e]] + r.slot[e]] = r.la[e];
  return r;
}

TensorSpec f32_tensor(double bytes) {
  TensorSpec t;
  t.bytes = static_cast<int64_t>(std::llround(bytes));
  t.shape = {(t.bytes + 3) / 4};
  t.dtype = DType::f32;
  return t;
}

// Forward op of layer N: id 2N, in colocation group "nodeN" (the layer's parameters live with
// it); it holds the weights and their optimizer state. Measured times apply to any device kind
// ("*").
Op forward_op(const Layer& ly, const PipeDreamOptions& options, const std::string& src) {
  const int64_t buffers = optimizer_state_buffers(options.optimizer);
  const std::string base = "node" + std::to_string(ly.n);
  Op f;
  f.id = 2 * ly.n;
  f.name = base + "/forward";
  f.type = layer_type(ly.desc);
  f.scope = base;
  f.phase = Phase::forward;
  f.outputs.push_back(f32_tensor(ly.act_bytes));
  f.bytes_accessed = ly.act_bytes;
  f.measured.push_back({"*", ly.fwd_ms * 1e-3});
  f.param_bytes = static_cast<int64_t>(std::llround(ly.param_bytes));
  f.param_dtype = DType::f32;
  f.optimizer_bytes = buffers * f.param_bytes;
  if (f.optimizer_bytes > kMaxBytes)
    bad(src, ly.line,
        "field parameter_size: the " + std::string(optimizer_name(options.optimizer)) +
            " optimizer's state (" + std::to_string(buffers) + " x " +
            std::to_string(f.param_bytes) + " bytes) exceeds 2^50 bytes; expected at most " +
            std::to_string(kMaxBytes / buffers) + " bytes of parameters");
  f.colocation = base;
  return f;
}

// Backward op of layer k (node N): id 2N+1, beside its forward op; output p is the gradient
// with respect to the layer's p-th input (that input's size).
Op backward_op(const std::vector<Layer>& layers, int32_t k, const Resolved& r) {
  const Layer& ly = layers[k];
  const std::string base = "node" + std::to_string(ly.n);
  Op b;
  b.id = 2 * ly.n + 1;
  b.name = base + "/backward";
  b.type = layer_type(ly.desc) + "Grad";
  b.scope = base;
  b.phase = Phase::backward;
  for (int64_t p = r.pred_ptr[k]; p < r.pred_ptr[k + 1]; ++p)
    b.outputs.push_back(f32_tensor(layers[r.preds[p]].act_bytes));
  b.bytes_accessed = 2 * ly.act_bytes;
  b.measured.push_back({"*", ly.bwd_ms * 1e-3});
  b.colocation = base;
  return b;
}

}  // namespace

Graph parse_pipedream(const std::string& text, const std::string& src,
                      const PipeDreamOptions& options) {
  Records rec = read_records(text, src);
  std::vector<Layer>& layers = rec.layers;
  // Layers in node order: layer k (k-th smallest N) is forward op k and backward op L + k.
  std::sort(layers.begin(), layers.end(), [](const Layer& x, const Layer& y) { return x.n < y.n; });
  const auto L = static_cast<int32_t>(layers.size());
  const Resolved r = resolve_links(layers, rec.links, src);
  Graph g;
  g.name = graph_name_of(src);
  for (const Layer& ly : layers) g.add_op(forward_op(ly, options, src));
  for (int32_t k = 0; k < L; ++k) g.add_op(backward_op(layers, k, r));
  // The activation stays alive until the layer's own backward op.
  for (int32_t k = 0; k < L; ++k) g.add_edge(k, 0, L + k, g.op(k).outputs[0].bytes);
  for (size_t e = 0; e < rec.links.size(); ++e) {
    g.add_edge(r.la[e], 0, r.lb[e], g.op(r.la[e]).outputs[0].bytes);  // forward data
    g.add_edge(L + r.lb[e], r.slot[e], L + r.la[e],
               g.op(L + r.lb[e]).outputs[r.slot[e]].bytes);  // gradient, mirrored
  }
  try {
    g.finalize();
  } catch (const InputError& e) {
    throw InputError(src + ": " + e.what());
  }
  return g;
}

}  // namespace gdp
