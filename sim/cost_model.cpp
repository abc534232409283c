// The op cost model: classification of op types, the roofline estimate, and the strict
// reader/writer of device profile JSON (equations and defaults in docs/cost-model.md).
#include "sim/cost_model.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "core/error.h"
#include "core/json_strict.h"

namespace gdp {

namespace {

std::string normalize_type(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (std::isalnum(c)) out.push_back(static_cast<char>(std::tolower(c)));
  }
  return out;
}

const std::unordered_map<std::string, OpClass>& exact_types() {
  static const std::unordered_map<std::string, OpClass> table = [] {
    std::unordered_map<std::string, OpClass> t;
    for (const char* s :
         {"dense", "linear", "einsum", "fullyconnected", "fc", "innerproduct", "addmm", "bmm", "mm",
          "lstm", "gru", "lstmblockcell", "grublockcell", "attention", "multiheadattention"})
      t[s] = OpClass::matmul;
    for (const char* s : {"add",          "addv2",
                          "addn",         "sub",
                          "mul",          "div",
                          "realdiv",      "floordiv",
                          "neg",          "relu",
                          "relu6",        "leakyrelu",
                          "elu",          "selu",
                          "gelu",         "silu",
                          "swish",        "sigmoid",
                          "tanh",         "exp",
                          "log",          "log1p",
                          "sqrt",         "rsqrt",
                          "square",       "squareddifference",
                          "pow",          "maximum",
                          "minimum",      "biasadd",
                          "dropout",      "cast",
                          "select",       "selectv2",
                          "where",        "greater",
                          "greaterequal", "less",
                          "lessequal",    "equal",
                          "notequal",     "logicaland",
                          "logicalor",    "logicalnot",
                          "floor",        "ceil",
                          "round",        "abs",
                          "sign",         "softplus",
                          "softsign",     "reciprocal",
                          "inv",          "erf",
                          "clipbyvalue",  "scale",
                          "bias",         "activation",
                          "residual",     "sgd",
                          "adam",         "momentum",
                          "update",       "optimizer"})
      t[s] = OpClass::elementwise;
    for (const char* s : {"sum",
                          "mean",
                          "prod",
                          "min",
                          "max",
                          "argmax",
                          "argmin",
                          "all",
                          "any",
                          "softmax",
                          "logsoftmax",
                          "l2loss",
                          "topk",
                          "topkv2",
                          "loss",
                          "crossentropy",
                          "softmaxcrossentropywithlogits",
                          "sparsesoftmaxcrossentropywithlogits",
                          "biasaddgrad",
                          "cumsum",
                          "segmentsum",
                          "unsortedsegmentsum",
                          "batchnorm",
                          "layernorm",
                          "fusedbatchnorm",
                          "fusedbatchnormv3",
                          "instancenorm",
                          "groupnorm"})
      t[s] = OpClass::reduction;
    for (const char* s : {"reshape",         "transpose",    "concat",      "concatv2",
                          "slice",           "stridedslice", "split",       "splitv",
                          "identity",        "identityn",    "gather",      "gatherv2",
                          "gathernd",        "scatter",      "scatternd",   "pad",
                          "padv2",           "mirrorpad",    "tile",        "copy",
                          "squeeze",         "expanddims",   "pack",        "unpack",
                          "stack",           "unstack",      "shape",       "fill",
                          "zeroslike",       "oneslike",     "const",       "constant",
                          "variable",        "variablev2",   "varhandleop", "readvariableop",
                          "placeholder",     "send",         "recv",        "embedding",
                          "embeddinglookup", "onehot",       "reverse",     "reversev2",
                          "broadcastto",     "flatten",      "view",        "permute",
                          "input",           "output",       "noop",        "upsample",
                          "resize",          "parameter"})
      t[s] = OpClass::memory;
    return t;
  }();
  return table;
}

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

OpClass classify_normalized(const std::string& n) {
  const auto& table = exact_types();
  auto it = table.find(n);
  if (it != table.end()) return it->second;
  if (contains(n, "matmul") || contains(n, "gemm") || contains(n, "lstm") || contains(n, "gru"))
    return OpClass::matmul;
  if (contains(n, "conv")) return OpClass::conv;
  if (n.rfind("apply", 0) == 0 || n.rfind("resourceapply", 0) == 0 || n.rfind("assign", 0) == 0)
    return OpClass::elementwise;  // optimizer updates, variable assignment
  if (contains(n, "pool") || contains(n, "norm") || contains(n, "softmax") || contains(n, "reduce"))
    return OpClass::reduction;
  return OpClass::other;
}

// PyTorch aten ops as gdp.torch writes them ("aten.<name>", docs/formats.md, "PyTorch
// training graphs"): the name without leading/trailing underscores and without a
// "_backward"/"_backward_data" suffix (a gradient costs like its forward op).
const std::unordered_map<std::string, OpClass>& aten_types() {
  static const std::unordered_map<std::string, OpClass> table = [] {
    std::unordered_map<std::string, OpClass> t;
    for (const char* s :
         {"mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "addmv", "mv", "dot", "einsum"})
      t[s] = OpClass::matmul;
    for (const char* s : {"convolution", "conv2d", "conv1d", "conv3d", "conv_transpose2d"})
      t[s] = OpClass::conv;
    for (const char* s : {"add",
                          "sub",
                          "rsub",
                          "mul",
                          "div",
                          "addcmul",
                          "addcdiv",
                          "neg",
                          "relu",
                          "relu6",
                          "threshold",
                          "gelu",
                          "silu",
                          "sigmoid",
                          "tanh",
                          "hardswish",
                          "hardsigmoid",
                          "hardtanh",
                          "leaky_relu",
                          "elu",
                          "mish",
                          "softplus",
                          "exp",
                          "expm1",
                          "log",
                          "log1p",
                          "sqrt",
                          "rsqrt",
                          "pow",
                          "abs",
                          "sign",
                          "reciprocal",
                          "erf",
                          "sin",
                          "cos",
                          "clamp",
                          "clamp_min",
                          "clamp_max",
                          "maximum",
                          "minimum",
                          "where",
                          "eq",
                          "ne",
                          "lt",
                          "le",
                          "gt",
                          "ge",
                          "logical_and",
                          "logical_or",
                          "logical_not",
                          "masked_fill",
                          "bernoulli",
                          "native_dropout",
                          "dropout",
                          "lerp",
                          "floor",
                          "ceil",
                          "round",
                          "trunc",
                          "uniform",
                          "normal"})
      t[s] = OpClass::elementwise;
    for (const char* s : {"sum",
                          "mean",
                          "amax",
                          "amin",
                          "max",
                          "min",
                          "argmax",
                          "argmin",
                          "prod",
                          "var",
                          "std",
                          "norm",
                          "all",
                          "any",
                          "cumsum",
                          "softmax",
                          "log_softmax",
                          "native_batch_norm",
                          "native_batch_norm_legit",
                          "native_layer_norm",
                          "native_group_norm",
                          "nll_loss_forward",
                          "nll_loss",
                          "nll_loss2d_forward",
                          "max_pool2d_with_indices",
                          "avg_pool2d",
                          "adaptive_avg_pool2d",
                          "adaptive_max_pool2d"})
      t[s] = OpClass::reduction;
    for (const char* s : {"cat",
                          "stack",
                          "clone",
                          "copy",
                          "to_copy",
                          "contiguous",
                          "constant_pad_nd",
                          "roll",
                          "index",
                          "index_put",
                          "index_select",
                          "gather",
                          "scatter",
                          "scatter_add",
                          "index_add",
                          "slice",
                          "select",
                          "embedding",
                          "embedding_dense",
                          "new_zeros",
                          "new_ones",
                          "new_full",
                          "zeros",
                          "zeros_like",
                          "ones",
                          "ones_like",
                          "full",
                          "full_like",
                          "fill",
                          "zero",
                          "lift_fresh_copy",
                          "repeat",
                          "flip",
                          "tril",
                          "triu",
                          "upsample_nearest2d",
                          "view",
                          "reshape",
                          "permute",
                          "transpose",
                          "expand",
                          "t",
                          "unsqueeze",
                          "squeeze",
                          "as_strided",
                          "masked_select",
                          "nonzero",
                          "arange",
                          "scalar_tensor"})
      t[s] = OpClass::memory;
    return t;
  }();
  return table;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() > suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// name: the part after "aten." / "aten::", e.g. "convolution_backward", "_softmax", "relu_".
OpClass classify_aten(std::string name) {
  while (!name.empty() && name.front() == '_') name.erase(0, 1);
  while (!name.empty() && name.back() == '_') name.pop_back();
  for (const char* suffix : {"_backward_data", "_backward_input", "_backward"}) {
    if (ends_with(name, suffix)) {
      name.resize(name.size() - std::string(suffix).size());
      break;
    }
  }
  const auto& table = aten_types();
  auto it = table.find(name);
  if (it != table.end()) return it->second;
  return classify_normalized(normalize_type(name));
}

}  // namespace

OpClass classify_op(const std::string& op_type) {
  if (op_type.rfind("aten.", 0) == 0) return classify_aten(op_type.substr(5));
  if (op_type.rfind("aten::", 0) == 0) return classify_aten(op_type.substr(6));
  std::string n = normalize_type(op_type);
  OpClass c = classify_normalized(n);
  // Gradient ops ("ReluGrad", "TanhGrad", "MatMul_grad") cost like their forward op.
  if (c == OpClass::other && n.size() > 4 && n.compare(n.size() - 4, 4, "grad") == 0)
    c = classify_normalized(n.substr(0, n.size() - 4));
  return c;
}

const char* op_class_name(OpClass c) {
  switch (c) {
    case OpClass::matmul:
      return "matmul";
    case OpClass::conv:
      return "conv";
    case OpClass::elementwise:
      return "elementwise";
    case OpClass::reduction:
      return "reduction";
    case OpClass::memory:
      return "memory";
    case OpClass::other:
      return "other";
  }
  return "other";
}

std::vector<OpClass> all_op_classes() {
  return {OpClass::matmul,    OpClass::conv,   OpClass::elementwise,
          OpClass::reduction, OpClass::memory, OpClass::other};
}

bool parse_op_class(const std::string& s, OpClass* out) {
  for (OpClass c : all_op_classes()) {
    if (s == op_class_name(c)) {
      *out = c;
      return true;
    }
  }
  return false;
}

DeviceProfile default_device_profile() {
  // Sources and reasoning: docs/cost-model.md, "Default efficiencies".
  DeviceProfile p;
  p.device_kind = "";
  p.compute_efficiency = {{OpClass::matmul, 0.75},     {OpClass::conv, 0.6},
                          {OpClass::elementwise, 0.5}, {OpClass::reduction, 0.5},
                          {OpClass::memory, 0.5},      {OpClass::other, 0.5}};
  p.memory_efficiency = {{OpClass::matmul, 0.8},       {OpClass::conv, 0.8},
                         {OpClass::elementwise, 0.85}, {OpClass::reduction, 0.7},
                         {OpClass::memory, 0.8},       {OpClass::other, 0.7}};
  p.use_fp16_peak = false;
  p.roofline_max = true;
  return p;
}

CostModel::CostModel() : default_(default_device_profile()) {}

void CostModel::set_profile(const DeviceProfile& p) {
  if (p.device_kind.empty())
    default_ = p;
  else
    by_kind_[p.device_kind] = p;
}

const DeviceProfile& CostModel::profile(const std::string& device_kind) const {
  auto it = by_kind_.find(device_kind);
  return it == by_kind_.end() ? default_ : it->second;
}

OpCostBreakdown CostModel::op_cost(const Op& op, const DeviceSpec& dev) const {
  OpCostBreakdown b;
  b.op_class = classify_op(op.type);
  // A measurement for this exact device kind wins over one for any kind ("*").
  const MeasuredTime* hit = nullptr;
  for (const auto& m : op.measured) {
    if (m.device_kind == dev.kind) {
      hit = &m;
      break;
    }
    if (m.device_kind == "*" && !hit) hit = &m;
  }
  if (hit) {
    b.measured = true;
    b.time_s = hit->time_s;
    return b;
  }
  const DeviceProfile& p = profile(dev.kind);
  auto eff = [&](const std::map<OpClass, double>& m) {
    auto it = m.find(b.op_class);
    return it == m.end() ? 1.0 : it->second;
  };
  if (op.flops > 0) {
    double peak =
        (p.use_fp16_peak && dev.peak_fp16_flops > 0) ? dev.peak_fp16_flops : dev.peak_fp32_flops;
    if (!(peak > 0))
      throw InputError("cost model: device '" + dev.name + "' (kind '" + dev.kind +
                       "') has no positive peak flop/s, needed for op '" + op.name + "'");
    b.compute_s = op.flops / (peak * eff(p.compute_efficiency));
  }
  // Bytes moved: bytes_accessed when the graph gives it, else the bytes the op writes.
  double bytes = op.bytes_accessed > 0 ? op.bytes_accessed : static_cast<double>(op.output_bytes());
  if (bytes > 0) {
    if (!(dev.mem_bandwidth_Bps > 0))
      throw InputError("cost model: device '" + dev.name + "' (kind '" + dev.kind +
                       "') has no positive memory bandwidth, needed for op '" + op.name + "'");
    b.memory_s = bytes / (dev.mem_bandwidth_Bps * eff(p.memory_efficiency));
  }
  b.launch_s = dev.launch_overhead_s;
  b.time_s =
      b.launch_s + (p.roofline_max ? std::max(b.compute_s, b.memory_s) : b.compute_s + b.memory_s);
  return b;
}

double CostModel::op_time_s(const Op& op, const DeviceSpec& dev) const {
  return op_cost(op, dev).time_s;
}

// ---- strict JSON profile reader ----

namespace {

using nlohmann::json;

const char* kProfileFormat = "gdp-device-profile";
constexpr int kProfileVersion = 1;

[[noreturn]] void fail(const std::string& source, const std::string& path,
                       const std::string& what) {
  throw InputError(source + ": " + (path.empty() ? std::string("(top level)") : path) + ": " +
                   what);
}

std::string type_name(const json& j) { return j.type_name(); }

void check_keys(const json& obj, const std::string& source, const std::string& path,
                const std::vector<std::string>& keys) {
  if (!obj.is_object()) fail(source, path, "expected an object, got " + type_name(obj));
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (std::find(keys.begin(), keys.end(), it.key()) == keys.end()) {
      std::string allowed;
      for (const auto& k : keys) allowed += (allowed.empty() ? "" : ", ") + k;
      fail(source, path + (path.empty() ? "" : ".") + it.key(),
           "unknown key (expected one of: " + allowed + ")");
    }
  }
  for (const auto& k : keys)
    if (!obj.contains(k)) fail(source, path + (path.empty() ? "" : ".") + k, "missing key");
}

double read_efficiency(const json& j, const std::string& source, const std::string& path) {
  if (!j.is_number()) fail(source, path, "expected a number in (0, 1], got " + type_name(j));
  double v = j.get<double>();
  if (!std::isfinite(v) || !(v > 0) || v > 1) {
    std::ostringstream os;
    os << "expected a number in (0, 1], got " << v;
    fail(source, path, os.str());
  }
  return v;
}

bool read_bool(const json& j, const std::string& source, const std::string& path) {
  if (!j.is_boolean()) fail(source, path, "expected true or false, got " + type_name(j));
  return j.get<bool>();
}

std::map<OpClass, double> read_class_map(const json& j, const std::string& source,
                                         const std::string& path) {
  std::vector<std::string> keys;
  for (OpClass c : all_op_classes()) keys.push_back(op_class_name(c));
  check_keys(j, source, path, keys);
  std::map<OpClass, double> m;
  for (OpClass c : all_op_classes())
    m[c] = read_efficiency(j.at(op_class_name(c)), source, path + "." + op_class_name(c));
  return m;
}

DeviceProfile read_profile(const json& j, const std::string& source, const std::string& path) {
  check_keys(
      j, source, path,
      {"device_kind", "compute_efficiency", "memory_efficiency", "use_fp16_peak", "roofline_max"});
  DeviceProfile p;
  if (!j.at("device_kind").is_string())
    fail(source, path + ".device_kind",
         "expected a string (\"\" = any kind), got " + type_name(j.at("device_kind")));
  p.device_kind = j.at("device_kind").get<std::string>();
  p.compute_efficiency =
      read_class_map(j.at("compute_efficiency"), source, path + ".compute_efficiency");
  p.memory_efficiency =
      read_class_map(j.at("memory_efficiency"), source, path + ".memory_efficiency");
  p.use_fp16_peak = read_bool(j.at("use_fp16_peak"), source, path + ".use_fp16_peak");
  p.roofline_max = read_bool(j.at("roofline_max"), source, path + ".roofline_max");
  return p;
}

json profile_to_json(const DeviceProfile& p) {
  json j = json::object();
  j["device_kind"] = p.device_kind;
  json ce = json::object(), me = json::object();
  for (OpClass c : all_op_classes()) {
    auto a = p.compute_efficiency.find(c);
    auto b = p.memory_efficiency.find(c);
    ce[op_class_name(c)] = a == p.compute_efficiency.end() ? 1.0 : a->second;
    me[op_class_name(c)] = b == p.memory_efficiency.end() ? 1.0 : b->second;
  }
  j["compute_efficiency"] = ce;
  j["memory_efficiency"] = me;
  j["use_fp16_peak"] = p.use_fp16_peak;
  j["roofline_max"] = p.roofline_max;
  return j;
}

}  // namespace

CostModel CostModel::from_json_text(const std::string& text, const std::string& source) {
  json j = StrictJson(source).parse(text);  // syntax, overflow and repeated keys
  check_keys(j, source, "", {"format", "version", "profiles"});
  if (!j.at("format").is_string() || j.at("format").get<std::string>() != kProfileFormat)
    fail(source, "format", std::string("expected the string \"") + kProfileFormat + "\"");
  if (!j.at("version").is_number_integer() || j.at("version").get<int64_t>() != kProfileVersion)
    fail(source, "version", "expected the integer " + std::to_string(kProfileVersion));
  const json& arr = j.at("profiles");
  if (!arr.is_array() || arr.empty())
    fail(source, "profiles", "expected a non-empty array of profiles, got " + type_name(arr));
  CostModel m;
  std::vector<std::string> seen;
  for (size_t i = 0; i < arr.size(); ++i) {
    std::string path = "profiles[" + std::to_string(i) + "]";
    DeviceProfile p = read_profile(arr[i], source, path);
    if (std::find(seen.begin(), seen.end(), p.device_kind) != seen.end())
      fail(source, path + ".device_kind", "duplicate device kind \"" + p.device_kind + "\"");
    seen.push_back(p.device_kind);
    m.set_profile(p);
  }
  return m;
}

CostModel CostModel::from_json_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InputError(path + ": cannot open device profile file");
  std::stringstream ss;
  ss << f.rdbuf();
  return from_json_text(ss.str(), path);
}

std::string CostModel::to_json() const {
  json j = json::object();
  j["format"] = kProfileFormat;
  j["version"] = kProfileVersion;
  json arr = json::array();
  arr.push_back(profile_to_json(default_));
  for (const auto& [kind, p] : by_kind_) arr.push_back(profile_to_json(p));
  j["profiles"] = arr;
  return j.dump(2) + "\n";
}

}  // namespace gdp
