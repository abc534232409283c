// Samples from PipeDream profiles and measured gdp graphs, with the flop rules for PyTorch
// module descriptions.
#include "calib/profile_samples.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "core/io.h"

namespace gdp::calib {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The module class: text before '(' without trailing digits ("Input0" -> "input"), lower case.
std::string module_type(const std::string& desc) {
  std::string t = desc.substr(0, desc.find('('));
  while (!t.empty() && (std::isdigit(static_cast<unsigned char>(t.back())) || t.back() == ' '))
    t.pop_back();
  return lower(t);
}

// The argument text of the call that opens at `open` (the index of '('), without the parens.
std::string call_args(const std::string& s, size_t open) {
  int depth = 0;
  for (size_t k = open; k < s.size(); ++k) {
    if (s[k] == '(') ++depth;
    if (s[k] == ')' && --depth == 0) return s.substr(open + 1, k - open - 1);
  }
  return s.substr(open + 1);
}

// Leading comma-separated integers of an argument list: "128, 256, kernel_size=..." -> 128, 256.
std::vector<double> leading_ints(const std::string& args) {
  std::vector<double> v;
  size_t k = 0;
  for (;;) {
    while (k < args.size() && args[k] == ' ') ++k;
    size_t start = k;
    while (k < args.size() && std::isdigit(static_cast<unsigned char>(args[k]))) ++k;
    if (k == start || (k < args.size() && args[k] != ',' && args[k] != ' ' && args[k] != ')'))
      return v;
    v.push_back(std::stod(args.substr(start, k - start)));
    while (k < args.size() && args[k] == ' ') ++k;
    if (k >= args.size() || args[k] != ',') return v;
    ++k;
  }
}

// The numbers after "key=": "(3, 3)" or "3"; empty when absent.
std::vector<double> kv_numbers(const std::string& args, const std::string& key) {
  size_t p = args.find(key + "=");
  if (p == std::string::npos) return {};
  p += key.size() + 1;
  if (p < args.size() && args[p] == '(') return leading_ints(call_args(args, p));
  return leading_ints(args.substr(p));
}

double product(const std::vector<double>& v, double def) {
  if (v.empty()) return def;
  double p = 1;
  for (double x : v) p *= x;
  return p;
}

// Matrix-product modules inside a description (a plain Linear or LSTM, or a container such as
// GNMT's RecurrentAttention and Classifier): flops per row of the output, and the width of the
// last one (its output features, or hidden size x directions).
struct Dense {
  double flops_per_row = 0;
  double last_width = 0;
  size_t last_pos = 0;  // where the last module starts in the description
};
Dense dense_modules(const std::string& desc) {
  Dense d;
  for (const char* name : {"Linear(", "LSTM("}) {
    for (size_t p = desc.find(name); p != std::string::npos; p = desc.find(name, p + 1)) {
      const size_t open = p + std::string(name).size() - 1;
      const std::string args = call_args(desc, open);
      std::vector<double> io = leading_ints(args);
      if (name[1] == 'i') {  // Linear(in, out) or Linear(in_features=a, out_features=b)
        std::vector<double> in = kv_numbers(args, "in_features");
        std::vector<double> out = kv_numbers(args, "out_features");
        if (in.size() == 1 && out.size() == 1) io = {in[0], out[0]};
        if (io.size() < 2) continue;
        d.flops_per_row += 2 * io[0] * io[1];
        if (d.last_width == 0 || p > d.last_pos) {
          d.last_width = io[1];
          d.last_pos = p;
        }
      } else {  // LSTM(in, hidden[, num_layers=k][, bidirectional=True]): 4 gates, 2 GEMMs
        if (io.size() < 2) continue;
        const double dirs = args.find("bidirectional=True") != std::string::npos ? 2 : 1;
        const double layers = product(kv_numbers(args, "num_layers"), 1);
        const double H = io[1];
        double in = io[0];
        for (int l = 0; l < static_cast<int>(layers); ++l) {
          d.flops_per_row += dirs * 8 * H * (in + H);
          in = H * dirs;
        }
        if (d.last_width == 0 || p > d.last_pos) {
          d.last_width = H * dirs;
          d.last_pos = p;
        }
      }
    }
  }
  return d;
}

// activation_size's first item ("[6291456.0; 131072.0]" -> 6291456): the layer's main output.
double first_size(const std::string& fields) {
  size_t p = fields.find("activation_size=");
  if (p == std::string::npos) return 0;
  p += 16;
  if (p < fields.size() && fields[p] == '[') ++p;
  size_t e = fields.find_first_of(";],", p);
  try {
    return std::stod(fields.substr(p, e == std::string::npos ? std::string::npos : e - p));
  } catch (...) {
    return 0;
  }
}

// nodeN -> (description, first activation bytes), from the text the importer already accepted.
std::map<int64_t, std::pair<std::string, double>> pipedream_descriptions(const std::string& text) {
  std::map<int64_t, std::pair<std::string, double>> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = std::min(text.find('\n', pos), text.size());
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.rfind("node", 0) != 0) continue;
    size_t a = line.find(" -- ");
    size_t b = line.rfind(" -- ");
    if (a == std::string::npos || a == b) continue;
    std::string fields = line.substr(b + 4);
    if (fields.rfind("stage_id=", 0) == 0) {  // optional trailing field
      size_t c = line.rfind(" -- ", b - 1);
      if (c == std::string::npos || c <= a) continue;
      fields = line.substr(c + 4, b - c - 4);
      b = c;
    }
    out[std::stoll(line.substr(4, a - 4))] = {line.substr(a + 4, b - a - 4), first_size(fields)};
  }
  return out;
}

std::string shortened(const std::string& s, size_t n) {
  std::string t;
  for (char c : s)
    if (!(c == ' ' && !t.empty() && t.back() == ' ')) t += c;  // collapse runs of blanks
  return t.size() > n ? t.substr(0, n - 3) + "..." : t;
}

}  // namespace

bool pipedream_has_weights(const std::string& desc) {
  const std::string t = module_type(desc);
  return t.find("conv") != std::string::npos || dense_modules(desc).flops_per_row > 0;
}

double pipedream_forward_flops(const std::string& desc, double out, double in) {
  const std::string t = module_type(desc);
  const size_t open = desc.find('(');
  const std::string args = open == std::string::npos ? "" : call_args(desc, open);
  if (t.find("conv") != std::string::npos) {
    std::vector<double> io = leading_ints(args);
    if (io.empty()) return out;
    const double groups = product(kv_numbers(args, "groups"), 1);
    return 2 * out * (io[0] / groups) * product(kv_numbers(args, "kernel_size"), 1);
  }
  Dense d = dense_modules(desc);
  if (d.flops_per_row > 0 && d.last_width > 0) return d.flops_per_row * out / d.last_width;
  if (t.find("adaptive") != std::string::npos && t.find("pool") != std::string::npos) return in;
  if (t.find("pool") != std::string::npos) {
    // "kernel_size=3" of a 2-d pool is 3 x 3.
    std::vector<double> k = kv_numbers(args, "kernel_size");
    if (k.size() == 1 && t.find("2d") != std::string::npos) k.push_back(k[0]);
    return out * product(k, 1);
  }
  if (t.find("norm") != std::string::npos) return 8 * out;  // datasets/builder.h: kFlopsNorm
  if (t.find("softmax") != std::string::npos) return 5 * out;
  if (t == "dropout") return 3 * out;
  if (t == "sigmoid" || t == "tanh") return 4 * out;
  if (t == "relu" || t == "relu6" || t == "hardtanh" || t == "add" || t == "mul" ||
      t == "leakyrelu")
    return out;
  return 0;  // input, view, size, __getitem__, concat, embedding, hidden, ...
}

ProfileSamples read_profile_samples(const std::string& path, const std::string& device_kind) {
  GraphFileFormat format = GraphFileFormat::gdp_json;
  Graph g = read_graph_file(path, PipeDreamOptions{}, &format);
  ProfileSamples ps;
  ps.source = path;
  ps.graph = g.name;
  ps.pipedream = format == GraphFileFormat::pipedream;
  auto in_bytes = [&](int32_t i) {
    double s = 0;
    for (int64_t k = g.in_ptr()[i]; k < g.in_ptr()[i + 1]; ++k)
      s += static_cast<double>(g.edges()[g.in_edge_ids()[k]].bytes);
    return s;
  };
  std::map<int64_t, std::pair<std::string, double>> desc;
  if (ps.pipedream) desc = pipedream_descriptions(read_text_file(path));
  for (int32_t i = 0; i < g.num_ops(); ++i) {
    const Op& op = g.op(i);
    const MeasuredTime* hit = nullptr;
    for (const auto& m : op.measured) {
      if (m.device_kind == device_kind) {
        hit = &m;
        break;
      }
      if (m.device_kind == "*" && !hit) hit = &m;
    }
    if (!hit) {
      ++ps.unmeasured;
      continue;
    }
    OpSample s;
    s.op_class = classify_op(op.type);
    s.time_s = hit->time_s;
    if (ps.pipedream) {
      // Layer N: forward op id 2N, backward 2N+1 (core/io_pipedream.cpp). The forward op reads
      // its inputs and weights and writes its output; the backward op reads the output's
      // gradient, its inputs and weights and writes the inputs' and weights' gradients.
      const int64_t layer = op.id / 2;
      const bool forward = op.phase == Phase::forward;
      const auto& [text, first_bytes] = desc[layer];
      if (module_type(text) == "input") {
        ++ps.inputs;
        continue;
      }
      const int32_t f = forward ? i : g.find_op("node" + std::to_string(layer) + "/forward");
      const double out_b = static_cast<double>(g.op(f).output_bytes());
      const double in_b = in_bytes(f);
      const double w_b = static_cast<double>(g.op(f).param_bytes);
      const double fwd =
          pipedream_forward_flops(text, (first_bytes > 0 ? first_bytes : out_b) / 4, in_b / 4);
      if (forward) {
        s.flops = fwd;
        s.bytes = in_b + out_b + w_b;
      } else {
        s.flops = pipedream_has_weights(text) ? 2 * fwd : fwd;
        s.bytes = 2 * in_b + out_b + 2 * w_b;
      }
      s.label = g.name + " " + op.name + " " + shortened(text, 60);
    } else {
      s.flops = op.flops;
      s.bytes = op.bytes_accessed > 0 ? op.bytes_accessed : static_cast<double>(op.output_bytes());
      s.label = g.name + " " + op.name + " (" + op.type + ")";
    }
    if (!(s.time_s > 0)) ++ps.zero_time;
    ps.samples.push_back(std::move(s));
  }
  return ps;
}

}  // namespace gdp::calib
