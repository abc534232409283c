// GraphBuilder implementation: forward recording with formula costs, then reverse-mode
// derivation of the backward ops and the per-variable Adam updates (see builder.h).
#include "datasets/builder.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <utility>

#include "core/error.h"

namespace gdp::datasets {

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t tensor_bytes(const std::vector<int64_t>& shape, DType dtype) {
  return numel(shape) * dtype_size_bytes(dtype);
}

double matmul_flops(int64_t m, int64_t n, int64_t k) {
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
}

double conv2d_flops(int64_t n, int64_t ho, int64_t wo, int64_t kh, int64_t kw, int64_t cin,
                    int64_t cout) {
  return 2.0 * static_cast<double>(n) * ho * wo * kh * kw * static_cast<double>(cin) * cout;
}

std::string indexed(const std::string& prefix, int64_t k) {
  std::string s = prefix;
  s += std::to_string(k);
  return s;
}

int64_t conv_out_size(int64_t in, int64_t kernel, int64_t stride, int64_t dilation, Padding p) {
  if (p == Padding::same) return (in + stride - 1) / stride;
  int64_t eff = (kernel - 1) * dilation + 1;
  return in >= eff ? (in - eff) / stride + 1 : 0;
}

namespace {

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + ")";
}

// Numpy broadcast of two shapes; empty optional (false) when incompatible.
bool broadcast_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                     std::vector<int64_t>* out) {
  size_t n = std::max(a.size(), b.size());
  out->assign(n, 1);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) return false;
    (*out)[i] = std::max(da, db);
  }
  return true;
}

double d(int64_t x) { return static_cast<double>(x); }

}  // namespace

GraphBuilder::GraphBuilder(std::string graph_name, DType dtype)
    : graph_name_(std::move(graph_name)), dtype_(dtype) {}

void GraphBuilder::push_scope(const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos)
    throw InputError("GraphBuilder: scope name '" + name + "' must be non-empty without '/'");
  scopes_.push_back(name);
}

void GraphBuilder::pop_scope() {
  if (scopes_.empty()) throw InputError("GraphBuilder: pop_scope() without a scope");
  scopes_.pop_back();
}

std::string GraphBuilder::scope() const {
  std::string s;
  for (size_t i = 0; i < scopes_.size(); ++i) s += (i ? "/" : "") + scopes_[i];
  return s;
}

std::string GraphBuilder::unique_name(const std::string& base) {
  int32_t& c = name_counts_[base];
  std::string n = c == 0 ? base : base + "_" + std::to_string(c);
  ++c;
  // A generated "x_1" could collide with a user name "x_1": keep counting until free.
  while (c > 1 && name_counts_.count(n) && n != base) {
    n = base + "_" + std::to_string(c);
    ++c;
  }
  if (n != base) name_counts_[n] = 1;
  return n;
}

void GraphBuilder::check(Tensor t, const char* what) const {
  if (t.op < 0 || t.op >= static_cast<int32_t>(fwd_.size()))
    throw InputError(std::string("GraphBuilder: invalid tensor handle for ") + what);
  if (t.index < 0 || t.index >= static_cast<int32_t>(fwd_[t.op].op.outputs.size()))
    throw InputError(std::string("GraphBuilder: op '") + fwd_[t.op].op.name + "' has no output " +
                     std::to_string(t.index) + " (" + what + ")");
}

const std::vector<int64_t>& GraphBuilder::shape(Tensor t) const {
  check(t, "shape");
  return fwd_[t.op].op.outputs[t.index].shape;
}
DType GraphBuilder::dtype_of(Tensor t) const {
  check(t, "dtype");
  return fwd_[t.op].op.outputs[t.index].dtype;
}
int64_t GraphBuilder::bytes(Tensor t) const {
  check(t, "bytes");
  return fwd_[t.op].op.outputs[t.index].bytes;
}
bool GraphBuilder::requires_grad(Tensor t) const {
  check(t, "requires_grad");
  return fwd_[t.op].out_requires_grad[t.index];
}

Tensor GraphBuilder::record(OpSpec spec) {
  if (spec.type.empty()) throw InputError("GraphBuilder: op without a type");
  if (spec.outputs.empty())
    throw InputError("GraphBuilder: op '" + spec.name + "' (" + spec.type + ") has no outputs");
  for (const Tensor& t : spec.inputs) check(t, spec.type.c_str());
  FwdOp f;
  std::string sc = scope();
  std::string base = spec.name.empty() ? spec.type : spec.name;
  f.op.name = unique_name(sc.empty() ? base : sc + "/" + base);
  f.op.type = spec.type;
  f.op.scope = sc;
  f.op.phase = Phase::forward;
  double in_bytes = 0;
  for (const Tensor& t : spec.inputs) in_bytes += d(bytes(t));
  for (auto& o : spec.outputs) {
    if (o.bytes == 0) o.bytes = tensor_bytes(o.shape, o.dtype);
  }
  f.op.outputs = std::move(spec.outputs);
  f.op.flops = spec.flops;
  f.op.bytes_accessed = in_bytes + d(f.op.output_bytes()) + spec.extra_bytes;
  f.op.temp_bytes = spec.temp_bytes;
  bool rg = false;
  for (const Tensor& t : spec.inputs) rg = rg || requires_grad(t);
  rg = rg && !spec.grads.empty();
  for (const GradSpec& g : spec.grads) {
    if (g.input < 0 || g.input >= static_cast<int32_t>(spec.inputs.size()))
      throw InputError("GraphBuilder: op '" + f.op.name + "' gradient for input " +
                       std::to_string(g.input) + " out of range");
    for (int32_t s : g.saved_inputs)
      if (s < 0 || s >= static_cast<int32_t>(spec.inputs.size()))
        throw InputError("GraphBuilder: op '" + f.op.name + "' saves a missing input");
    for (int32_t s : g.saved_outputs)
      if (s < 0 || s >= static_cast<int32_t>(f.op.outputs.size()))
        throw InputError("GraphBuilder: op '" + f.op.name + "' saves a missing output");
  }
  f.out_requires_grad.assign(f.op.outputs.size(), rg);
  f.inputs = std::move(spec.inputs);
  f.grads = std::move(spec.grads);
  fwd_.push_back(std::move(f));
  return Tensor{static_cast<int32_t>(fwd_.size()) - 1, 0};
}

// ---- Sources ----

Tensor GraphBuilder::input(const std::string& name, std::vector<int64_t> shape, DType dt) {
  OpSpec s;
  s.type = "IteratorGetNext";
  s.name = name;
  s.outputs = {TensorSpec{std::move(shape), dt, 0}};
  return record(std::move(s));
}

Tensor GraphBuilder::constant(const std::string& name, std::vector<int64_t> shape, DType dt) {
  OpSpec s;
  s.type = "Const";
  s.name = name;
  s.outputs = {TensorSpec{std::move(shape), dt, 0}};
  return record(std::move(s));
}

Tensor GraphBuilder::variable(const std::string& name, std::vector<int64_t> shape) {
  OpSpec v;
  v.type = "VariableV2";
  v.name = name;
  v.outputs = {TensorSpec{shape, dtype_, 0}};
  Tensor var = record(std::move(v));
  FwdOp& vf = fwd_[var.op];
  int64_t wbytes = vf.op.outputs[0].bytes;
  vf.op.param_bytes = wbytes;  // resident: the weights, and Adam's m and v beside them
  vf.op.optimizer_bytes = optimizer_state_buffers(Optimizer::adam) * wbytes;
  vf.op.param_dtype = dtype_;
  vf.op.bytes_accessed = d(wbytes);
  vf.op.colocation = vf.op.name;
  Var rec;
  rec.name = vf.op.name;
  rec.var_op = var.op;
  rec.bytes = wbytes;
  rec.elements = numel(shape);

  // The read: "<var>/read" (Identity), outside of the scope push (name is explicit).
  FwdOp r;
  r.op.name = unique_name(rec.name + "/read");
  r.op.type = "Identity";
  r.op.scope = vf.op.scope;
  r.op.outputs = {TensorSpec{std::move(shape), dtype_, wbytes}};
  r.op.bytes_accessed = 0;  // a read of a variable aliases its buffer
  r.op.colocation = rec.name;
  r.inputs = {var};
  r.out_requires_grad = {true};
  r.variable = static_cast<int32_t>(vars_.size());
  fwd_.push_back(std::move(r));
  rec.read_op = static_cast<int32_t>(fwd_.size()) - 1;
  vars_.push_back(rec);
  return Tensor{rec.read_op, 0};
}

// ---- Dense algebra ----

Tensor GraphBuilder::matmul(Tensor a, Tensor b, bool ta, bool tb, const std::string& name) {
  const auto& sa = shape(a);
  const auto& sb = shape(b);
  if (sa.size() != 2 || sb.size() != 2)
    throw InputError("GraphBuilder::matmul: 2-D operands expected, got " + shape_str(sa) + " x " +
                     shape_str(sb));
  int64_t m = ta ? sa[1] : sa[0], k = ta ? sa[0] : sa[1];
  int64_t k2 = tb ? sb[1] : sb[0], n = tb ? sb[0] : sb[1];
  if (k != k2)
    throw InputError("GraphBuilder::matmul: inner dimensions differ: " + shape_str(sa) + " x " +
                     shape_str(sb));
  double f = matmul_flops(m, n, k);
  OpSpec s;
  s.type = "MatMul";
  s.name = name;
  s.inputs = {a, b};
  s.outputs = {TensorSpec{{m, n}, dtype_of(a), 0}};
  s.flops = f;
  s.grads = {GradSpec{"MatMul", 0, {1}, {}, f, 0}, GradSpec{"MatMul", 1, {0}, {}, f, 0}};
  return record(std::move(s));
}

Tensor GraphBuilder::batch_matmul(Tensor a, Tensor b, bool adj_a, bool adj_b,
                                  const std::string& name) {
  const auto sa = shape(a);
  const auto sb = shape(b);
  if (sa.size() < 3 || sa.size() != sb.size())
    throw InputError("GraphBuilder::batch_matmul: equal rank >= 3 expected, got " + shape_str(sa) +
                     " x " + shape_str(sb));
  size_t r = sa.size();
  for (size_t i = 0; i + 2 < r; ++i)
    if (sa[i] != sb[i])
      throw InputError("GraphBuilder::batch_matmul: batch dims differ: " + shape_str(sa) + " x " +
                       shape_str(sb));
  int64_t m = adj_a ? sa[r - 1] : sa[r - 2], k = adj_a ? sa[r - 2] : sa[r - 1];
  int64_t k2 = adj_b ? sb[r - 1] : sb[r - 2], n = adj_b ? sb[r - 2] : sb[r - 1];
  if (k != k2)
    throw InputError("GraphBuilder::batch_matmul: inner dimensions differ: " + shape_str(sa) +
                     " x " + shape_str(sb));
  int64_t batch = 1;
  std::vector<int64_t> out(sa.begin(), sa.end() - 2);
  for (int64_t x : out) batch *= x;
  out.push_back(m);
  out.push_back(n);
  double f = d(batch) * matmul_flops(m, n, k);
  OpSpec s;
  s.type = "BatchMatMulV2";
  s.name = name;
  s.inputs = {a, b};
  s.outputs = {TensorSpec{out, dtype_of(a), 0}};
  s.flops = f;
  s.grads = {GradSpec{"BatchMatMulV2", 0, {1}, {}, f, 0},
             GradSpec{"BatchMatMulV2", 1, {0}, {}, f, 0}};
  return record(std::move(s));
}

Tensor GraphBuilder::bias_add(Tensor x, Tensor b, const std::string& name) {
  const auto& sx = shape(x);
  const auto& sb = shape(b);
  if (sb.size() != 1 || sx.empty() || sx.back() != sb[0])
    throw InputError("GraphBuilder::bias_add: bias " + shape_str(sb) + " does not match " +
                     shape_str(sx));
  int64_t n = numel(sx);
  OpSpec s;
  s.type = "BiasAdd";
  s.name = name;
  s.inputs = {x, b};
  s.outputs = {TensorSpec{sx, dtype_of(x), 0}};
  s.flops = d(n);
  // dx is the upstream gradient itself (no op); db is a reduction over all but the last axis.
  s.grads = {GradSpec{"", 0, {}, {}, 0, 0}, GradSpec{"BiasAddGrad", 1, {}, {}, d(n), 0}};
  return record(std::move(s));
}

Tensor GraphBuilder::elementwise_binary(const std::string& type, Tensor a, Tensor b,
                                        const std::string& name) {
  std::vector<int64_t> out;
  const auto sa = shape(a);
  const auto sb = shape(b);
  if (!broadcast_shape(sa, sb, &out))
    throw InputError("GraphBuilder::" + type + ": shapes do not broadcast: " + shape_str(sa) +
                     " and " + shape_str(sb));
  int64_t n = numel(out);
  OpSpec s;
  s.type = type;
  s.name = name;
  s.inputs = {a, b};
  s.outputs = {TensorSpec{out, dtype_of(a), 0}};
  s.flops = d(n);
  for (int32_t i = 0; i < 2; ++i) {
    bool same = (i == 0 ? sa : sb) == out;
    if (type == "Mul") {
      // d(a*b)/da = g*b: a Mul, plus a Sum where the operand was broadcast.
      s.grads.push_back(GradSpec{"Mul", i, {1 - i}, {}, same ? d(n) : 2.0 * d(n), 0});
    } else if (type == "Sub" && i == 1) {
      s.grads.push_back(GradSpec{same ? "Neg" : "Sum", i, {}, {}, d(n), 0});
    } else {
      s.grads.push_back(same ? GradSpec{"", i, {}, {}, 0, 0} : GradSpec{"Sum", i, {}, {}, d(n), 0});
    }
  }
  return record(std::move(s));
}

Tensor GraphBuilder::add(Tensor a, Tensor b, const std::string& name) {
  return elementwise_binary("Add", a, b, name);
}
Tensor GraphBuilder::sub(Tensor a, Tensor b, const std::string& name) {
  return elementwise_binary("Sub", a, b, name);
}
Tensor GraphBuilder::mul(Tensor a, Tensor b, const std::string& name) {
  return elementwise_binary("Mul", a, b, name);
}

Tensor GraphBuilder::add_n(const std::vector<Tensor>& xs, const std::string& name) {
  if (xs.empty()) throw InputError("GraphBuilder::add_n: no inputs");
  const auto s0 = shape(xs[0]);
  for (Tensor t : xs)
    if (shape(t) != s0)
      throw InputError("GraphBuilder::add_n: shapes differ: " + shape_str(s0) + " and " +
                       shape_str(shape(t)));
  OpSpec s;
  s.type = "AddN";
  s.name = name;
  s.inputs = xs;
  s.outputs = {TensorSpec{s0, dtype_of(xs[0]), 0}};
  s.flops = d(numel(s0)) * d(static_cast<int64_t>(xs.size()) - 1);
  for (int32_t i = 0; i < static_cast<int32_t>(xs.size()); ++i)
    s.grads.push_back(GradSpec{"", i, {}, {}, 0, 0});
  return record(std::move(s));
}

Tensor GraphBuilder::unary(const std::string& type, Tensor x, double flops_per_elt,
                           bool grad_reads_output, const std::string& name) {
  const auto sx = shape(x);
  double n = d(numel(sx));
  OpSpec s;
  s.type = type;
  s.name = name.empty() ? type : name;
  s.inputs = {x};
  s.outputs = {TensorSpec{sx, dtype_of(x), 0}};
  s.flops = flops_per_elt * n;
  GradSpec g{type + "Grad", 0, {}, {}, std::max(2.0, flops_per_elt) * n, 0};
  if (grad_reads_output)
    g.saved_outputs = {0};
  else
    g.saved_inputs = {0};
  s.grads = {g};
  return record(std::move(s));
}

Tensor GraphBuilder::sigmoid(Tensor x, const std::string& name) {
  return unary("Sigmoid", x, kFlopsSigmoid, true, name);
}
Tensor GraphBuilder::tanh(Tensor x, const std::string& name) {
  return unary("Tanh", x, kFlopsTanh, true, name);
}
Tensor GraphBuilder::relu(Tensor x, const std::string& name) {
  return unary("Relu", x, kFlopsRelu, true, name);
}
Tensor GraphBuilder::gelu(Tensor x, const std::string& name) {
  return unary("Gelu", x, kFlopsGelu, false, name);
}

Tensor GraphBuilder::dropout(Tensor x, const std::string& name) {
  const auto sx = shape(x);
  double n = d(numel(sx));
  OpSpec s;
  s.type = "Dropout";
  s.name = name;
  s.inputs = {x};
  // Output 0: the scaled kept values; output 1: the keep mask (bytes), saved for backward.
  s.outputs = {TensorSpec{sx, dtype_of(x), 0}, TensorSpec{sx, DType::u8, 0}};
  s.flops = 3 * n;  // random draw, compare, scale
  s.grads = {GradSpec{"Mul", 0, {}, {1}, 2 * n, 0}};
  return record(std::move(s));
}

Tensor GraphBuilder::softmax(Tensor x, const std::string& name) {
  const auto sx = shape(x);
  double n = d(numel(sx));
  OpSpec s;
  s.type = "Softmax";
  s.name = name;
  s.inputs = {x};
  s.outputs = {TensorSpec{sx, dtype_of(x), 0}};
  s.flops = kFlopsSoftmax * n;
  s.grads = {GradSpec{"SoftmaxGrad", 0, {}, {0}, 4 * n, 0}};
  return record(std::move(s));
}

Tensor GraphBuilder::layer_norm(Tensor x, Tensor gamma, Tensor beta, const std::string& name) {
  const auto sx = shape(x);
  if (sx.empty() || shape(gamma) != std::vector<int64_t>{sx.back()} ||
      shape(beta) != std::vector<int64_t>{sx.back()})
    throw InputError("GraphBuilder::layer_norm: gamma/beta must be (" +
                     std::to_string(sx.empty() ? 0 : sx.back()) + ")");
  double n = d(numel(sx));
  OpSpec s;
  s.type = "LayerNorm";
  s.name = name;
  s.inputs = {x, gamma, beta};
  s.outputs = {TensorSpec{sx, dtype_of(x), 0}};
  s.flops = kFlopsNorm * n;
  s.grads = {GradSpec{"LayerNormGrad", 0, {0, 1}, {}, 10 * n, 0},
             GradSpec{"LayerNormGammaGrad", 1, {0}, {}, 4 * n, 0},
             GradSpec{"BiasAddGrad", 2, {}, {}, n, 0}};
  return record(std::move(s));
}

Tensor GraphBuilder::batch_norm(Tensor x, Tensor gamma, Tensor beta, const std::string& name) {
  const auto sx = shape(x);
  if (sx.size() != 4 || shape(gamma) != std::vector<int64_t>{sx[3]} ||
      shape(beta) != std::vector<int64_t>{sx[3]})
    throw InputError("GraphBuilder::batch_norm: NHWC input and (C) scale/offset expected, got " +
                     shape_str(sx));
  double n = d(numel(sx));
  OpSpec s;
  s.type = "FusedBatchNormV3";
  s.name = name;
  s.inputs = {x, gamma, beta};
  s.outputs = {TensorSpec{sx, dtype_of(x), 0}};
  s.flops = kFlopsNorm * n;
  s.grads = {GradSpec{"FusedBatchNormGradV3", 0, {0, 1}, {}, 10 * n, 0},
             GradSpec{"FusedBatchNormScaleGrad", 1, {0}, {}, 4 * n, 0},
             GradSpec{"BiasAddGrad", 2, {}, {}, n, 0}};
  return record(std::move(s));
}

// ---- Convolutions and pooling ----

Tensor GraphBuilder::conv2d(Tensor x, Tensor w, int64_t sh, int64_t sw, Padding p, int64_t dh,
                            int64_t dw, const std::string& name) {
  const auto sx = shape(x);
  const auto sk = shape(w);
  if (sx.size() != 4 || sk.size() != 4 || sk[2] != sx[3] || sh < 1 || sw < 1 || dh < 1 || dw < 1)
    throw InputError("GraphBuilder::conv2d: x (N,H,W,Cin) and w (Kh,Kw,Cin,Cout) expected, got " +
                     shape_str(sx) + " and " + shape_str(sk));
  int64_t ho = conv_out_size(sx[1], sk[0], sh, dh, p);
  int64_t wo = conv_out_size(sx[2], sk[1], sw, dw, p);
  if (ho <= 0 || wo <= 0)
    throw InputError("GraphBuilder::conv2d: kernel larger than input " + shape_str(sx));
  double f = conv2d_flops(sx[0], ho, wo, sk[0], sk[1], sk[2], sk[3]);
  OpSpec s;
  s.type = "Conv2D";
  s.name = name;
  s.inputs = {x, w};
  s.outputs = {TensorSpec{{sx[0], ho, wo, sk[3]}, dtype_of(x), 0}};
  s.flops = f;
  s.grads = {GradSpec{"Conv2DBackpropInput", 0, {1}, {}, f, 0},
             GradSpec{"Conv2DBackpropFilter", 1, {0}, {}, f, 0}};
  return record(std::move(s));
}

Tensor GraphBuilder::depthwise_conv2d(Tensor x, Tensor w, int64_t stride, Padding p,
                                      int64_t dilation, const std::string& name) {
  const auto sx = shape(x);
  const auto sk = shape(w);
  if (sx.size() != 4 || sk.size() != 4 || sk[2] != sx[3] || stride < 1 || dilation < 1)
    throw InputError(
        "GraphBuilder::depthwise_conv2d: x (N,H,W,C) and w (Kh,Kw,C,M) expected, got " +
        shape_str(sx) + " and " + shape_str(sk));
  int64_t ho = conv_out_size(sx[1], sk[0], stride, dilation, p);
  int64_t wo = conv_out_size(sx[2], sk[1], stride, dilation, p);
  if (ho <= 0 || wo <= 0)
    throw InputError("GraphBuilder::depthwise_conv2d: kernel larger than input " + shape_str(sx));
  double f = 2.0 * d(sx[0]) * d(ho) * d(wo) * d(sk[0]) * d(sk[1]) * d(sx[3]) * d(sk[3]);
  OpSpec s;
  s.type = "DepthwiseConv2dNative";
  s.name = name;
  s.inputs = {x, w};
  s.outputs = {TensorSpec{{sx[0], ho, wo, sx[3] * sk[3]}, dtype_of(x), 0}};
  s.flops = f;
  s.grads = {GradSpec{"DepthwiseConv2dNativeBackpropInput", 0, {1}, {}, f, 0},
             GradSpec{"DepthwiseConv2dNativeBackpropFilter", 1, {0}, {}, f, 0}};
  return record(std::move(s));
}

Tensor GraphBuilder::pool(const std::string& type, Tensor x, int64_t k, int64_t stride, Padding p,
                          const std::string& name) {
  const auto sx = shape(x);
  if (sx.size() != 4 || k < 1 || stride < 1)
    throw InputError("GraphBuilder::" + type + ": NHWC input expected, got " + shape_str(sx));
  int64_t ho = conv_out_size(sx[1], k, stride, 1, p);
  int64_t wo = conv_out_size(sx[2], k, stride, 1, p);
  if (ho <= 0 || wo <= 0)
    throw InputError("GraphBuilder::" + type + ": window larger than input " + shape_str(sx));
  std::vector<int64_t> out{sx[0], ho, wo, sx[3]};
  double f = d(numel(out)) * d(k * k);
  OpSpec s;
  s.type = type;
  s.name = name.empty() ? type : name;
  s.inputs = {x};
  s.outputs = {TensorSpec{out, dtype_of(x), 0}};
  s.flops = f;
  if (type == "MaxPool")
    s.grads = {GradSpec{"MaxPoolGrad", 0, {0}, {0}, f, 0}};
  else
    s.grads = {GradSpec{"AvgPoolGrad", 0, {}, {}, f, 0}};
  return record(std::move(s));
}

Tensor GraphBuilder::max_pool(Tensor x, int64_t k, int64_t stride, Padding p,
                              const std::string& name) {
  return pool("MaxPool", x, k, stride, p, name);
}
Tensor GraphBuilder::avg_pool(Tensor x, int64_t k, int64_t stride, Padding p,
                              const std::string& name) {
  return pool("AvgPool", x, k, stride, p, name);
}

// ---- Shape and reduction ----

Tensor GraphBuilder::reshape(Tensor x, std::vector<int64_t> shp, const std::string& name) {
  if (numel(shp) != numel(shape(x)))
    throw InputError("GraphBuilder::reshape: " + shape_str(shape(x)) + " to " + shape_str(shp) +
                     " changes the element count");
  OpSpec s;
  s.type = "Reshape";
  s.name = name;
  s.inputs = {x};
  s.outputs = {TensorSpec{std::move(shp), dtype_of(x), 0}};
  s.grads = {GradSpec{"Reshape", 0, {}, {}, 0, 0}};
  Tensor t = record(std::move(s));
  fwd_[t.op].op.bytes_accessed = 0;  // a view: no data movement
  return t;
}

Tensor GraphBuilder::transpose(Tensor x, const std::vector<int32_t>& perm,
                               const std::string& name) {
  const auto sx = shape(x);
  if (perm.size() != sx.size())
    throw InputError("GraphBuilder::transpose: permutation rank differs from " + shape_str(sx));
  std::vector<int64_t> out(sx.size());
  std::vector<bool> seen(sx.size(), false);
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] < 0 || perm[i] >= static_cast<int32_t>(sx.size()) || seen[perm[i]])
      throw InputError("GraphBuilder::transpose: invalid permutation");
    seen[perm[i]] = true;
    out[i] = sx[perm[i]];
  }
  OpSpec s;
  s.type = "Transpose";
  s.name = name;
  s.inputs = {x};
  s.outputs = {TensorSpec{out, dtype_of(x), 0}};
  s.grads = {GradSpec{"Transpose", 0, {}, {}, 0, 0}};
  return record(std::move(s));
}

Tensor GraphBuilder::concat(const std::vector<Tensor>& xs, int32_t axis, const std::string& name) {
  if (xs.empty()) throw InputError("GraphBuilder::concat: no inputs");
  std::vector<int64_t> out = shape(xs[0]);
  if (axis < 0 || axis >= static_cast<int32_t>(out.size()))
    throw InputError("GraphBuilder::concat: axis out of range for " + shape_str(out));
  for (size_t i = 1; i < xs.size(); ++i) {
    const auto& si = shape(xs[i]);
    bool ok = si.size() == out.size();
    for (size_t a = 0; ok && a < si.size(); ++a)
      if (static_cast<int32_t>(a) != axis && si[a] != out[a]) ok = false;
    if (!ok)
      throw InputError("GraphBuilder::concat: " + shape_str(si) + " does not match " +
                       shape_str(out) + " off axis " + std::to_string(axis));
    out[axis] += si[axis];
  }
  OpSpec s;
  s.type = "ConcatV2";
  s.name = name;
  s.inputs = xs;
  s.outputs = {TensorSpec{out, dtype_of(xs[0]), 0}};
  for (int32_t i = 0; i < static_cast<int32_t>(xs.size()); ++i)
    s.grads.push_back(GradSpec{"Slice", i, {}, {}, 0, 0});
  return record(std::move(s));
}

std::vector<Tensor> GraphBuilder::split(Tensor x, int32_t axis, int32_t parts,
                                        const std::string& name) {
  std::vector<int64_t> sx = shape(x);
  if (axis < 0 || axis >= static_cast<int32_t>(sx.size()) || parts < 1 || sx[axis] % parts != 0)
    throw InputError("GraphBuilder::split: cannot split " + shape_str(sx) + " into " +
                     std::to_string(parts) + " along axis " + std::to_string(axis));
  std::vector<int64_t> part = sx;
  part[axis] /= parts;
  OpSpec s;
  s.type = "Split";
  s.name = name;
  s.inputs = {x};
  for (int32_t i = 0; i < parts; ++i) s.outputs.push_back(TensorSpec{part, dtype_of(x), 0});
  s.grads = {GradSpec{"ConcatV2", 0, {}, {}, 0, 0}};
  Tensor t = record(std::move(s));
  std::vector<Tensor> r;
  for (int32_t i = 0; i < parts; ++i) r.push_back(Tensor{t.op, i});
  return r;
}

Tensor GraphBuilder::slice(Tensor x, int32_t axis, int64_t begin, int64_t size,
                           const std::string& name) {
  std::vector<int64_t> sx = shape(x);
  if (axis < 0 || axis >= static_cast<int32_t>(sx.size()) || begin < 0 || size < 1 ||
      begin + size > sx[axis])
    throw InputError("GraphBuilder::slice: [" + std::to_string(begin) + ", +" +
                     std::to_string(size) + ") out of range of " + shape_str(sx));
  sx[axis] = size;
  OpSpec s;
  s.type = "Slice";
  s.name = name;
  s.inputs = {x};
  s.outputs = {TensorSpec{sx, dtype_of(x), 0}};
  s.grads = {GradSpec{"Pad", 0, {}, {}, 0, 0}};
  return record(std::move(s));
}

Tensor GraphBuilder::reduce(const std::string& type, Tensor x, const std::vector<int32_t>& axes,
                            const std::string& name) {
  const auto sx = shape(x);
  std::vector<bool> drop(sx.size(), false);
  for (int32_t a : axes) {
    if (a < 0 || a >= static_cast<int32_t>(sx.size()) || drop[a])
      throw InputError("GraphBuilder::" + type + ": invalid axis for " + shape_str(sx));
    drop[a] = true;
  }
  std::vector<int64_t> out;
  for (size_t i = 0; i < sx.size(); ++i)
    if (!drop[i]) out.push_back(sx[i]);
  double n = d(numel(sx));
  OpSpec s;
  s.type = type;
  s.name = name.empty() ? type : name;
  s.inputs = {x};
  s.outputs = {TensorSpec{out, dtype_of(x), 0}};
  s.flops = n;
  s.grads = {GradSpec{"Tile", 0, {}, {}, n, 0}};
  return record(std::move(s));
}

Tensor GraphBuilder::reduce_mean(Tensor x, const std::vector<int32_t>& axes,
                                 const std::string& name) {
  return reduce("Mean", x, axes, name);
}
Tensor GraphBuilder::reduce_sum(Tensor x, const std::vector<int32_t>& axes,
                                const std::string& name) {
  return reduce("Sum", x, axes, name);
}

// ---- Embeddings and losses ----

Tensor GraphBuilder::embedding_lookup(Tensor table, Tensor ids, const std::string& name) {
  const auto st = shape(table);
  if (st.size() != 2) throw InputError("GraphBuilder::embedding_lookup: table (V, D) expected");
  std::vector<int64_t> out = shape(ids);
  out.push_back(st[1]);
  double n = d(numel(out));
  OpSpec s;
  s.type = "GatherV2";
  s.name = name;
  s.inputs = {table, ids};
  s.outputs = {TensorSpec{out, dtype_of(table), 0}};
  s.flops = 0;
  s.grads = {GradSpec{"UnsortedSegmentSum", 0, {1}, {}, n, 0}};
  Tensor t = record(std::move(s));
  // Reads only the gathered rows, not the whole table.
  FwdOp& f = fwd_[t.op];
  f.op.bytes_accessed = 2 * d(f.op.output_bytes()) + d(bytes(ids));
  return t;
}

Tensor GraphBuilder::softmax_cross_entropy(Tensor logits, Tensor labels, const std::string& name) {
  const auto sl = shape(logits);
  if (sl.size() != 2 || shape(labels) != std::vector<int64_t>{sl[0]})
    throw InputError(
        "GraphBuilder::softmax_cross_entropy: logits (B, C) and labels (B) expected, got " +
        shape_str(sl) + " and " + shape_str(shape(labels)));
  double n = d(numel(sl));
  OpSpec s;
  s.type = "SparseSoftmaxCrossEntropyWithLogits";
  s.name = name;
  s.inputs = {logits, labels};
  // Output 0: loss (B); output 1: backprop (B, C) = softmax - onehot, saved for backward.
  s.outputs = {TensorSpec{{sl[0]}, dtype_of(logits), 0}, TensorSpec{sl, dtype_of(logits), 0}};
  s.flops = (kFlopsSoftmax + 1) * n;
  s.grads = {GradSpec{"Mul", 0, {}, {1}, n, 0}};
  return record(std::move(s));
}

// ---- Building ----

int64_t GraphBuilder::parameter_count() const {
  int64_t n = 0;
  for (const Var& v : vars_) n += v.elements;
  return n;
}

double GraphBuilder::forward_flops() const {
  double f = 0;
  for (const FwdOp& o : fwd_) f += o.op.flops;
  return f;
}

Graph GraphBuilder::build_training_graph() const { return build(true); }
Graph GraphBuilder::build_forward_graph() const { return build(false); }

Graph GraphBuilder::build(bool training) const {
  Graph g;
  g.name = graph_name_;
  const int32_t nf = static_cast<int32_t>(fwd_.size());
  for (const FwdOp& f : fwd_) g.add_op(f.op);
  for (int32_t i = 0; i < nf; ++i)
    for (const Tensor& t : fwd_[i].inputs) g.add_edge(t.op, t.index, i, bytes(t));
  if (!training) {  // no optimizer: the variables hold their weights only
    for (int32_t i = 0; i < g.num_ops(); ++i) {
      g.mutable_ops()[i].id = i;
      g.mutable_ops()[i].optimizer_bytes = 0;
    }
    g.finalize();
    return g;
  }
  if (!loss_.valid()) throw InputError("GraphBuilder: build_training_graph() without set_loss()");
  check(loss_, "loss");
  if (!requires_grad(loss_))
    throw InputError("GraphBuilder: the loss does not depend on any variable");

  std::unordered_map<std::string, int32_t> names = name_counts_;
  auto uniq = [&names](const std::string& base) {
    int32_t& c = names[base];
    std::string n = c == 0 ? base : base + "_" + std::to_string(c);
    ++c;
    while (n != base && names.count(n)) n = base + "_" + std::to_string(c++);
    if (n != base) names[n] = 1;
    return n;
  };
  // Gradient contributions per forward tensor: (dense op, output) pairs in the graph.
  std::vector<std::vector<std::vector<std::pair<int32_t, int32_t>>>> contrib(nf);
  for (int32_t i = 0; i < nf; ++i) contrib[i].resize(fwd_[i].op.outputs.size());

  auto add_backward = [&](const FwdOp& f, const std::string& type, const TensorSpec& out,
                          double flops, int64_t temp) {
    Op o;
    o.name = uniq("gradients/" + f.op.name + "_grad/" + type);
    o.type = type;
    o.scope = f.op.scope;
    o.phase = Phase::backward;
    o.outputs = {out};
    o.flops = flops;
    o.temp_bytes = temp;
    o.bytes_accessed = d(out.bytes);
    return g.add_op(std::move(o));
  };
  auto connect = [&](int32_t src, int32_t src_out, int32_t dst) {
    int64_t b = g.op(src).outputs[src_out].bytes;
    g.add_edge(src, src_out, dst, b);
    g.mutable_ops()[dst].bytes_accessed += d(b);
  };

  // Seed: d loss / d loss = 1.
  {
    Op seed;
    seed.name = uniq("gradients/Fill");
    seed.type = "Fill";
    seed.scope = fwd_[loss_.op].op.scope;
    seed.phase = Phase::backward;
    seed.outputs = {fwd_[loss_.op].op.outputs[loss_.index]};
    seed.bytes_accessed = d(seed.outputs[0].bytes);
    seed.flops = 0;
    contrib[loss_.op][loss_.index].push_back({g.add_op(std::move(seed)), 0});
  }

  std::vector<std::pair<int32_t, int32_t>> var_grad(vars_.size(), {-1, 0});
  for (int32_t i = nf - 1; i >= 0; --i) {
    const FwdOp& f = fwd_[i];
    // Accumulate each output's gradient (AddN where several consumers contributed).
    std::vector<std::pair<int32_t, int32_t>> up(f.op.outputs.size(), {-1, 0});
    bool any = false;
    for (size_t o = 0; o < f.op.outputs.size(); ++o) {
      auto& cs = contrib[i][o];
      if (cs.empty()) continue;
      any = true;
      if (cs.size() == 1) {
        up[o] = cs[0];
        continue;
      }
      const TensorSpec& ts = f.op.outputs[o];
      int32_t a = add_backward(f, "AddN", ts, d(numel(ts.shape)) * d(cs.size() - 1), 0);
      for (auto [src, so] : cs) connect(src, so, a);
      up[o] = {a, 0};
    }
    if (!any) continue;
    if (f.variable >= 0) {
      var_grad[f.variable] = up[0];
      continue;
    }
    for (const GradSpec& gs : f.grads) {
      const Tensor in = f.inputs[gs.input];
      if (!requires_grad(in)) continue;
      if (gs.type.empty()) {  // pass-through: the upstream gradient is the input's gradient
        if (up[0].first < 0) continue;
        contrib[in.op][in.index].push_back(up[0]);
        continue;
      }
      const TensorSpec& ts = fwd_[in.op].op.outputs[in.index];
      int32_t b = add_backward(f, gs.type, ts, gs.flops, gs.temp_bytes);
      for (auto [src, so] : up)
        if (src >= 0) connect(src, so, b);
      for (int32_t s : gs.saved_inputs) connect(f.inputs[s].op, f.inputs[s].index, b);
      for (int32_t s : gs.saved_outputs) connect(i, s, b);
      contrib[in.op][in.index].push_back({b, 0});
    }
  }

  // One ApplyAdam per trained variable, colocated with the variable and its read.
  for (size_t v = 0; v < vars_.size(); ++v) {
    if (var_grad[v].first < 0) continue;
    const Var& var = vars_[v];
    Op o;
    o.name = uniq(var.name + "/Adam/ApplyAdam");
    o.type = "ApplyAdam";
    o.scope = fwd_[var.var_op].op.scope;
    o.phase = Phase::update;
    o.colocation = var.name;
    // Updates the variable in place: no output tensor.
    o.flops = kFlopsAdam * d(var.elements);
    // Reads gradient, weights, m, v; writes weights, m, v.
    o.bytes_accessed = 6 * d(var.bytes);
    int32_t u = g.add_op(std::move(o));
    connect(var_grad[v].first, var_grad[v].second, u);
  }
  for (int32_t i = 0; i < g.num_ops(); ++i) g.mutable_ops()[i].id = i;
  g.finalize();
  return g;
}

}  // namespace gdp::datasets
