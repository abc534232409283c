// The cuda paths of the ported ops (float only; compiled when GDP_HAVE_CUDA): forward with the
// kernels of cuda/kernels.h, and closures that ACCUMULATE into the device gradients, mirroring the
// CPU ops in ops_*.cpp and graph_ops.cpp. Every input must live on the device; sizes must fit the
// kernels' int arguments. Declared in nn/ops_internal.h (detail::cuda_ops).
#ifdef GDP_HAVE_CUDA

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/kernels.h"
#include "nn/attention.h"
#include "nn/ops.h"
#include "nn/ops_internal.h"

namespace gdp::nn::detail::cuda_ops {

namespace {

using NodeF = std::shared_ptr<VarNode<float>>;
using IndexBuffer = std::shared_ptr<const gdp::cuda::DeviceIndexBuffer>;

[[noreturn]] void fail(const char* op, const std::string& why) {
  throw std::runtime_error(std::string("nn::") + op + " (cuda): " + why);
}

void require_cuda(const char* op, std::initializer_list<const Var*> inputs) {
  for (const Var* v : inputs)
    if (v->defined() && v->value().device() != Device::cuda)
      fail(op, std::string("all inputs must be cuda tensors, got a ") +
                   device_name(v->value().device()) + " one");
}

// Device tensors of the cuda path must be contiguous (no strided device copies).
Tensor dense(const char* op, const Var& v) {
  const Tensor& t = v.value();
  if (!t.is_contiguous()) fail(op, "strided (non-contiguous) device tensors are not supported");
  return t;
}

int to_int(const char* op, int64_t n) {
  if (n < 0 || n > INT_MAX)
    fail(op, "size " + std::to_string(n) + " does not fit the kernels' int");
  return static_cast<int>(n);
}

Tensor device_empty(const Shape& shape) {
  return Tensor(std::make_shared<Storage<float>>(shape_numel(shape), Device::cuda, false), 0, shape,
                contiguous_strides(shape));
}

float* grad_of(const NodeF& n) { return n && n->requires_grad ? n->grad_buffer().data() : nullptr; }

// dst (n) += src (n) on the device.
void add_into(float* dst, const float* src, int64_t n) {
  if (n > 0) gdp::cuda::add_backward(dst, nullptr, src, 1, to_int("accumulate", n), false);
}

IndexBuffer upload_index(const char* op, const std::vector<int64_t>& index, int64_t bound) {
  std::vector<int> host(index.size());
  for (size_t i = 0; i < index.size(); ++i) {
    if (index[i] < 0 || index[i] >= bound)
      fail(op, "index " + std::to_string(index[i]) + " out of range [0, " + std::to_string(bound) +
                   ")");
    host[i] = static_cast<int>(index[i]);
  }
  auto buf = std::make_shared<gdp::cuda::DeviceIndexBuffer>(host.size());
  if (!host.empty()) buf->upload(host.data());
  return buf;
}

IndexBuffer upload_int32(const std::vector<int32_t>& v) {
  auto buf = std::make_shared<gdp::cuda::DeviceIndexBuffer>(v.size());
  if (!v.empty()) buf->upload(reinterpret_cast<const int*>(v.data()));
  return buf;
}

}  // namespace

void accumulate(Tensor& dst, const Tensor& src) {
  if (dst.numel() != src.numel())
    throw std::logic_error("nn: gradient accumulation with mismatched sizes " +
                           shape_str(dst.shape()) + " and " + shape_str(src.shape()));
  if (dst.device() != Device::cuda || !dst.is_contiguous())
    fail("accumulate", "destination must be a contiguous cuda tensor");
  const Tensor s = src.device() == Device::cuda ? src : src.to_device(Device::cuda);
  if (!s.is_contiguous()) fail("accumulate", "strided device source");
  add_into(dst.data(), s.data(), dst.numel());
}

// ---- matmul / linear ---------------------------------------------------------------------------

namespace {
// Row-major out (M, P) (+)= op(a) @ op(b), batched with element strides.
void gemm_batched(float* out, const float* a, const float* b, int batch, int M, int K, int P,
                  bool ta, bool tb, bool accumulate, long long sa, long long sb, long long so) {
  if (M == 0 || P == 0) return;
  if (K == 0) return;  // the product is zero: nothing to add (forward outputs are zero-filled)
  const float beta = accumulate ? 1.0f : 0.0f;
  if (batch == 1)
    gdp::cuda::gemm(out, a, b, M, P, K, ta, tb, 1.0f, beta);
  else if (batch > 1)
    gdp::cuda::gemm_strided_batched(out, a, b, batch, M, P, K, ta, tb, 1.0f, beta, sa, sb, so);
}
}  // namespace

Var matmul(const Var& a, const Var& b, bool trans_a, bool trans_b) {
  require_cuda("matmul", {&a, &b});
  const Tensor av = dense("matmul", a), bv = dense("matmul", b);
  const MatmulDims md = matmul_dims(av.shape(), bv.shape(), trans_a, trans_b);
  const int64_t batch = md.batch, M = md.M, K = md.K, P = md.P;
  const Shape& out_shape = md.out_shape;
  const int iM = to_int("matmul", M), iK = to_int("matmul", K), iP = to_int("matmul", P),
            ib = to_int("matmul", batch);
  const long long sa = static_cast<long long>(M) * K, sb = static_cast<long long>(K) * P,
                  so = static_cast<long long>(M) * P;
  Tensor y(out_shape, Device::cuda);  // zeros (K == 0 leaves them)
  gemm_batched(y.data(), av.data(), bv.data(), ib, iM, iK, iP, trans_a, trans_b, false, sa, sb, so);
  const bool rg = needs_grad<float>({&a, &b});
  Var out(std::move(y), rg);
  if (!rg) return out;
  NodeF an = a.node(), bn = b.node();
  record(out, [=](Tensor& g) {
    float* da = grad_of(an);
    float* db = grad_of(bn);
    if (da) {
      if (!trans_a)  // (M,K) += dout @ op(b)^T
        gemm_batched(da, g.data(), bv.data(), ib, iM, iP, iK, false, !trans_b, true, so, sb, sa);
      else  // (K,M) += op(b) @ dout^T
        gemm_batched(da, bv.data(), g.data(), ib, iK, iP, iM, trans_b, true, true, sb, so, sa);
    }
    if (db) {
      if (!trans_b)  // (K,P) += op(a)^T @ dout
        gemm_batched(db, av.data(), g.data(), ib, iK, iM, iP, !trans_a, false, true, sa, so, sb);
      else  // (P,K) += dout^T @ op(a)
        gemm_batched(db, g.data(), av.data(), ib, iP, iM, iK, true, trans_a, true, so, sa, sb);
    }
  });
  return out;
}

Var linear(const Var& x, const Var& w, const Var& bias) {
  require_cuda("linear", {&x, &w, &bias});
  const Tensor xv = dense("linear", x), wv = dense("linear", w);
  if (wv.ndim() != 2 || xv.ndim() < 1 || xv.shape().back() != wv.dim(1))
    throw std::invalid_argument("nn::linear: x " + shape_str(xv.shape()) + " and w " +
                                shape_str(wv.shape()) + " (want x (..., IN), w (OUT, IN))");
  const bool has_bias = bias.defined();
  const int64_t IN = wv.dim(1), OUT = wv.dim(0),
                N = shape_numel(Shape(xv.shape().begin(), xv.shape().end() - 1));
  Tensor bv;
  if (has_bias) {
    bv = dense("linear", bias);
    if (bv.numel() != OUT || bv.ndim() != 1)
      throw std::invalid_argument("nn::linear: bias " + shape_str(bv.shape()) +
                                  " for OUT = " + std::to_string(OUT));
  }
  const int iN = to_int("linear", N), iIN = to_int("linear", IN), iOUT = to_int("linear", OUT);
  Shape out_shape = xv.shape();
  out_shape.back() = OUT;
  Tensor y(out_shape, Device::cuda);
  gemm_batched(y.data(), xv.data(), wv.data(), 1, iN, iIN, iOUT, false, true, false, 0, 0, 0);
  if (has_bias && N > 0 && OUT > 0)  // in place: the element-wise kernel reads what it writes
    gdp::cuda::add_forward(y.data(), y.data(), bv.data(), iN, iOUT, true);
  const bool rg = needs_grad<float>({&x, &w, &bias});
  Var out(std::move(y), rg);
  if (!rg) return out;
  NodeF xn = x.node(), wn = w.node(), bn = has_bias ? bias.node() : nullptr;
  record(out, [=](Tensor& g) {
    if (float* dx = grad_of(xn))  // (N, IN) += g (N, OUT) @ w (OUT, IN)
      gemm_batched(dx, g.data(), wv.data(), 1, iN, iOUT, iIN, false, false, true, 0, 0, 0);
    if (float* dw = grad_of(wn))  // (OUT, IN) += g^T @ x
      gemm_batched(dw, g.data(), xv.data(), 1, iOUT, iN, iIN, true, false, true, 0, 0, 0);
    if (float* db = grad_of(bn))
      if (iN > 0 && iOUT > 0) gdp::cuda::add_backward(nullptr, db, g.data(), iN, iOUT, true);
  });
  return out;
}

// ---- element-wise ------------------------------------------------------------------------------

Var binary(const char* op, const Var& a, const Var& b) {
  require_cuda(op, {&a, &b});
  const std::string name = op;
  const bool is_min = name == "minimum", is_max = name == "maximum";
  if (name != "add" && name != "sub" && name != "mul" && name != "div" && !is_min && !is_max)
    fail(op, "unknown binary op");
  const Tensor av = dense(op, a), bv = dense(op, b);
  const Shape out_shape = broadcast_shapes(av.shape(), bv.shape());
  // The kernels take equal shapes, or b a row (its dims all 1 but the last, which equals a's last
  // dim); any other broadcast expands the operands to the output shape first (autograd reduces
  // their gradients back through expand's backward).
  bool b_is_row = false;
  if (av.shape() != bv.shape()) {
    const bool row = out_shape == av.shape() && av.ndim() >= 1 && bv.ndim() >= 1 &&
                     bv.shape().back() == av.shape().back() && bv.numel() == av.shape().back();
    if (!row) {
      const Var ea = av.shape() == out_shape ? a : expand(a, out_shape);
      const Var eb = bv.shape() == out_shape ? b : expand(b, out_shape);
      return binary(op, ea, eb);
    }
    b_is_row = true;
  }
  const int64_t C = av.ndim() == 0 ? 1 : av.shape().back();
  const int64_t N = C == 0 ? 0 : av.numel() / C;
  const int iN = to_int(op, N), iC = to_int(op, C);
  Tensor y = device_empty(out_shape);
  if (iN > 0 && iC > 0) {
    if (name == "add")
      gdp::cuda::add_forward(y.data(), av.data(), bv.data(), iN, iC, b_is_row);
    else if (name == "sub")
      gdp::cuda::sub_forward(y.data(), av.data(), bv.data(), iN, iC, b_is_row);
    else if (name == "mul")
      gdp::cuda::mul_forward(y.data(), av.data(), bv.data(), iN, iC, b_is_row);
    else if (name == "div")
      gdp::cuda::div_forward(y.data(), av.data(), bv.data(), iN, iC, b_is_row);
    else
      gdp::cuda::minmax_forward(y.data(), av.data(), bv.data(), iN, iC, b_is_row, is_max);
  }
  const bool rg = needs_grad<float>({&a, &b});
  Var out(std::move(y), rg);
  if (!rg) return out;
  NodeF an = a.node(), bn = b.node();
  record(out, [=](Tensor& g) {
    float* da = grad_of(an);
    float* db = grad_of(bn);
    if ((!da && !db) || iN == 0 || iC == 0) return;
    if (name == "add")
      gdp::cuda::add_backward(da, db, g.data(), iN, iC, b_is_row);
    else if (name == "sub")
      gdp::cuda::sub_backward(da, db, g.data(), iN, iC, b_is_row);
    else if (name == "mul")
      gdp::cuda::mul_backward(da, db, g.data(), av.data(), bv.data(), iN, iC, b_is_row);
    else if (name == "div")
      gdp::cuda::div_backward(da, db, g.data(), av.data(), bv.data(), iN, iC, b_is_row);
    else
      gdp::cuda::minmax_backward(da, db, g.data(), av.data(), bv.data(), iN, iC, b_is_row, is_max);
  });
  return out;
}

Var unary(const char* op, const Var& x) {
  require_cuda(op, {&x});
  using Fwd = void (*)(float*, const float*, std::size_t);
  using Bwd = void (*)(float*, const float*, const float*, std::size_t);
  const std::string name = op;
  Fwd fwd = nullptr;
  Bwd bwd = nullptr;
  bool uses_output = false;
  if (name == "relu")
    fwd = gdp::cuda::relu_forward, bwd = gdp::cuda::relu_backward;
  else if (name == "gelu")
    fwd = gdp::cuda::gelu_forward, bwd = gdp::cuda::gelu_backward;
  else if (name == "log")
    fwd = gdp::cuda::log_forward, bwd = gdp::cuda::log_backward;
  else if (name == "tanh")
    fwd = gdp::cuda::tanh_forward, bwd = gdp::cuda::tanh_backward, uses_output = true;
  else if (name == "sigmoid")
    fwd = gdp::cuda::sigmoid_forward, bwd = gdp::cuda::sigmoid_backward, uses_output = true;
  else if (name == "exp")
    fwd = gdp::cuda::exp_forward, bwd = gdp::cuda::exp_backward, uses_output = true;
  else
    fail(op, "unknown unary op (cuda unary ops: relu, gelu, tanh, sigmoid, exp, log)");
  const Tensor xv = dense(op, x);
  const std::size_t n = static_cast<std::size_t>(xv.numel());
  Tensor y = device_empty(xv.shape());
  if (n > 0) fwd(y.data(), xv.data(), n);
  const bool rg = needs_grad<float>({&x});
  Var out(y, rg);
  if (!rg) return out;
  NodeF xn = x.node();
  const Tensor saved = uses_output ? y : xv;
  record(out, [xn, saved, bwd, n](Tensor& g) {
    if (float* dx = grad_of(xn))
      if (n > 0) bwd(dx, saved.data(), g.data(), n);
  });
  return out;
}

Var map(const char* op, const Var& x, gdp::cuda::MapOp f, float p0, float p1) {
  require_cuda(op, {&x});
  const Tensor xv = dense(op, x);
  const std::size_t n = static_cast<std::size_t>(xv.numel());
  Tensor y = device_empty(xv.shape());
  if (n > 0) gdp::cuda::map_forward(y.data(), xv.data(), f, p0, p1, n);
  const bool rg = needs_grad<float>({&x});
  Var out(std::move(y), rg);
  if (!rg) return out;
  NodeF xn = x.node();
  record(out, [xn, xv, f, p0, p1, n](Tensor& g) {
    if (float* dx = grad_of(xn))
      if (n > 0) gdp::cuda::map_backward(dx, xv.data(), g.data(), f, p0, p1, n);
  });
  return out;
}

Var dropout(const Var& x, const std::vector<float>& mask) {
  require_cuda("dropout", {&x});
  const Tensor xv = dense("dropout", x);
  if (static_cast<int64_t>(mask.size()) != xv.numel()) fail("dropout", "mask size differs from x");
  // The mask comes from the same host stream as on the cpu (identical results), uploaded once.
  const Var m(Tensor::from_vector(xv.shape(), mask).to_device(Device::cuda), false);
  return binary("mul", x, m);
}

// ---- row ops -----------------------------------------------------------------------------------

Var row_op(const char* op, const Var& x) {
  require_cuda(op, {&x});
  const std::string name = op;
  if (name != "softmax" && name != "log_softmax")
    fail(op, "op not ported to cuda (ported row ops: softmax, log_softmax)");
  const bool is_log = name == "log_softmax";
  const Tensor xv = dense(op, x);
  if (xv.ndim() < 1) throw std::invalid_argument(std::string("nn::") + op + ": needs rank >= 1");
  const int64_t C = xv.shape().back(), N = C == 0 ? 0 : xv.numel() / C;
  const int iN = to_int(op, N), iC = to_int(op, C);
  Tensor y = device_empty(xv.shape());
  if (iN > 0 && iC > 0) {
    if (is_log)
      gdp::cuda::log_softmax_forward(y.data(), xv.data(), iN, iC);
    else
      gdp::cuda::softmax_forward(y.data(), xv.data(), iN, iC);
  }
  const bool rg = needs_grad<float>({&x});
  Var out(y, rg);
  if (!rg) return out;
  NodeF xn = x.node();
  record(out, [xn, y, is_log, iN, iC](Tensor& g) {
    float* dx = grad_of(xn);
    if (!dx || iN == 0 || iC == 0) return;
    if (is_log)
      gdp::cuda::log_softmax_backward(dx, y.data(), g.data(), iN, iC);
    else
      gdp::cuda::softmax_backward(dx, y.data(), g.data(), iN, iC);
  });
  return out;
}

Var layer_norm(const Var& x, const Var& weight, const Var& bias, float eps) {
  require_cuda("layer_norm", {&x, &weight, &bias});
  const Tensor xv = dense("layer_norm", x), wv = dense("layer_norm", weight),
               bv = dense("layer_norm", bias);
  if (xv.ndim() < 1) throw std::invalid_argument("nn::layer_norm: x needs rank >= 1");
  const int64_t C = xv.shape().back(), N = C == 0 ? 0 : xv.numel() / C;
  if (wv.numel() != C || bv.numel() != C)
    throw std::invalid_argument("nn::layer_norm: x " + shape_str(xv.shape()) + ", weight " +
                                shape_str(wv.shape()) + ", bias " + shape_str(bv.shape()));
  const int iN = to_int("layer_norm", N), iC = to_int("layer_norm", C);
  Tensor y = device_empty(xv.shape());
  Tensor mean = device_empty({N}), rstd = device_empty({N});
  if (iN > 0 && iC > 0)
    gdp::cuda::layernorm_forward(y.data(), mean.data(), rstd.data(), xv.data(), wv.data(),
                                 bv.data(), iN, iC, eps);
  const bool rg = needs_grad<float>({&x, &weight, &bias});
  Var out(std::move(y), rg);
  if (!rg) return out;
  NodeF xn = x.node(), wn = weight.node(), bn = bias.node();
  record(out, [=](Tensor& g) {
    float* dx = grad_of(xn);
    float* dw = grad_of(wn);
    float* db = grad_of(bn);
    if (iN == 0 || iC == 0) return;
    if (dx) {
      gdp::cuda::layernorm_backward(dx, dw, db, g.data(), xv.data(), wv.data(), mean.data(),
                                    rstd.data(), iN, iC);
    } else if (dw || db) {  // the kernel always writes dx: give it a scratch buffer
      Tensor scratch = device_empty(xv.shape());
      gdp::cuda::layernorm_backward(scratch.data(), dw, db, g.data(), xv.data(), wv.data(),
                                    mean.data(), rstd.data(), iN, iC);
    }
  });
  return out;
}

// ---- reductions --------------------------------------------------------------------------------

namespace {
// x with `axis` moved to the end, the other dims in order: x viewed as (outer, n, inner) ->
// (outer, inner, n), a swap of the two last dims of the view. Returns the reduced output's shape
// too (without the axis, or with a 1 there when keepdim).
Var move_axis_last(const char* op, const Var& x, int64_t axis, bool keepdim, Shape& reduced_shape) {
  const Shape& s = x.shape();
  const int64_t r = static_cast<int64_t>(s.size()), a = normalize_axis(axis, r, op);
  int64_t outer = 1, inner = 1;
  reduced_shape.clear();
  for (int64_t i = 0; i < r; ++i) {
    if (i < a) outer *= s[i];
    if (i > a) inner *= s[i];
    if (i != a)
      reduced_shape.push_back(s[i]);
    else if (keepdim)
      reduced_shape.push_back(1);
  }
  if (inner == 1) return reshape(x, {outer, s[a]});
  return transpose(reshape(x, {outer, s[a], inner}), 1, 2);
}
}  // namespace

Var sum_axis(const char* op, const Var& x, int64_t axis, bool keepdim, bool is_mean) {
  require_cuda(op, {&x});
  const Tensor xv = dense(op, x);
  const int64_t a = normalize_axis(axis, xv.ndim(), op);
  if (a != xv.ndim() - 1) {
    Shape reduced;
    const Var moved = move_axis_last(op, x, a, keepdim, reduced);
    return reshape(sum_axis(op, moved, -1, false, is_mean), reduced);
  }
  const int64_t C = xv.shape().back(),
                N = shape_numel(Shape(xv.shape().begin(), xv.shape().end() - 1));
  Shape out_shape(xv.shape().begin(), xv.shape().end() - 1);
  if (keepdim) out_shape.push_back(1);
  const int iN = to_int(op, N), iC = to_int(op, C);
  Tensor y(out_shape, Device::cuda);  // zeros (C == 0 leaves them)
  if (iN > 0 && iC > 0) {
    if (is_mean)
      gdp::cuda::mean_forward(y.data(), xv.data(), iN, iC);
    else
      gdp::cuda::sum_forward(y.data(), xv.data(), iN, iC);
  }
  const bool rg = needs_grad<float>({&x});
  Var out(std::move(y), rg);
  if (!rg) return out;
  NodeF xn = x.node();
  record(out, [xn, is_mean, iN, iC](Tensor& g) {
    float* dx = grad_of(xn);
    if (!dx || iN == 0 || iC == 0) return;
    if (is_mean)
      gdp::cuda::mean_backward(dx, g.data(), iN, iC);
    else
      gdp::cuda::sum_backward(dx, g.data(), iN, iC);
  });
  return out;
}

Var max_axis(const Var& x, int64_t axis, bool keepdim) {
  require_cuda("max", {&x});
  const Tensor xv = dense("max", x);
  const int64_t a = normalize_axis(axis, xv.ndim(), "max");
  if (xv.shape()[a] == 0) throw std::invalid_argument("nn::max: empty axis");
  if (a != xv.ndim() - 1) {
    Shape reduced;
    const Var moved = move_axis_last("max", x, a, keepdim, reduced);
    return reshape(max_axis(moved, -1, false), reduced);
  }
  const int64_t C = xv.shape().back(), N = xv.numel() / C;
  Shape out_shape(xv.shape().begin(), xv.shape().end() - 1);
  if (keepdim) out_shape.push_back(1);
  const int iN = to_int("max", N), iC = to_int("max", C);
  Tensor y = device_empty(out_shape);
  auto argmax = std::make_shared<gdp::cuda::DeviceIndexBuffer>(static_cast<std::size_t>(iN));
  if (iN > 0) gdp::cuda::max_forward(y.data(), argmax->data(), xv.data(), iN, iC);
  const bool rg = needs_grad<float>({&x});
  Var out(std::move(y), rg);
  if (!rg) return out;
  NodeF xn = x.node();
  record(out, [xn, argmax, iN, iC](Tensor& g) {
    if (float* dx = grad_of(xn))
      if (iN > 0) gdp::cuda::max_backward(dx, g.data(), argmax->data(), iN, iC);
  });
  return out;
}

Var sum_all(const char* op, const Var& x, bool is_mean) {
  require_cuda(op, {&x});
  const Tensor xv = dense(op, x);
  const std::size_t n = static_cast<std::size_t>(xv.numel());
  const float factor = is_mean ? 1.0f / static_cast<float>(n) : 1.0f;
  Tensor y({}, Device::cuda);  // zeros
  if (n > 0) {
    gdp::cuda::sum_all_forward(y.data(), xv.data(), n);
    if (is_mean) gdp::cuda::scale_forward(y.data(), y.data(), factor, 1);
  }
  const bool rg = needs_grad<float>({&x});
  Var out(std::move(y), rg);
  if (!rg) return out;
  NodeF xn = x.node();
  record(out, [xn, is_mean, factor, n](Tensor& g) {
    float* dx = grad_of(xn);
    if (!dx || n == 0) return;
    if (!is_mean) {
      gdp::cuda::sum_all_backward(dx, g.data(), n);
      return;
    }
    Tensor scaled = device_empty({});
    gdp::cuda::scale_forward(scaled.data(), g.data(), factor, 1);
    gdp::cuda::sum_all_backward(dx, scaled.data(), n);
  });
  return out;
}

// ---- indexing ----------------------------------------------------------------------------------

Var gather(const char* op, const Var& x, const std::vector<int64_t>& index) {
  require_cuda(op, {&x});
  const std::string name = op;
  const bool is_embedding = name == "embedding";
  const Tensor xv = dense(op, x);
  if (xv.ndim() < 1) throw std::invalid_argument(std::string("nn::") + op + ": x needs rank >= 1");
  const int64_t R = xv.dim(0), C = R == 0 ? 0 : xv.numel() / R;
  IndexBuffer idx = upload_index(op, index, R);
  const int64_t M = static_cast<int64_t>(index.size());
  const int iM = to_int(op, M), iC = to_int(op, C);
  to_int(op, R);
  Shape out_shape = xv.shape();
  out_shape[0] = M;
  Tensor y = device_empty(out_shape);
  if (iM > 0 && iC > 0) {
    if (is_embedding)
      gdp::cuda::embedding_forward(y.data(), xv.data(), idx->data(), iM, iC);
    else
      gdp::cuda::gather_rows(y.data(), xv.data(), idx->data(), iM, iC);
  }
  const bool rg = needs_grad<float>({&x});
  Var out(std::move(y), rg);
  if (!rg) return out;
  NodeF xn = x.node();
  record(out, [xn, idx, is_embedding, iM, iC](Tensor& g) {
    float* dx = grad_of(xn);
    if (!dx || iM == 0 || iC == 0) return;
    if (is_embedding)
      gdp::cuda::embedding_backward(dx, g.data(), idx->data(), iM, iC);
    else
      gdp::cuda::scatter_add_rows(dx, g.data(), idx->data(), iM, iC);
  });
  return out;
}

Var scatter_add_rows(const Var& src, const std::vector<int64_t>& index, int64_t num_rows) {
  require_cuda("scatter_add_rows", {&src});
  const Tensor sv = dense("scatter_add_rows", src);
  if (sv.ndim() < 1 || sv.dim(0) != static_cast<int64_t>(index.size()))
    throw std::invalid_argument("nn::scatter_add_rows: src " + shape_str(sv.shape()) + " with " +
                                std::to_string(index.size()) + " indices");
  if (num_rows < 0) throw std::invalid_argument("nn::scatter_add_rows: negative num_rows");
  IndexBuffer idx = upload_index("scatter_add_rows", index, num_rows);
  const int64_t N = sv.dim(0), C = shape_numel(Shape(sv.shape().begin() + 1, sv.shape().end()));
  const int iN = to_int("scatter_add_rows", N), iC = to_int("scatter_add_rows", C);
  to_int("scatter_add_rows", num_rows);
  Shape out_shape = sv.shape();
  out_shape[0] = num_rows;
  Tensor y(out_shape, Device::cuda);  // zeros
  if (iN > 0 && iC > 0) gdp::cuda::scatter_add_rows(y.data(), sv.data(), idx->data(), iN, iC);
  const bool rg = needs_grad<float>({&src});
  Var out(std::move(y), rg);
  if (!rg) return out;
  NodeF sn = src.node();
  record(out, [sn, idx, iN, iC](Tensor& g) {
    float* ds = grad_of(sn);
    if (!ds || iN == 0 || iC == 0) return;
    // d src[i] += d out[index[i]]: a gather into scratch, then added.
    Tensor rows = device_empty({static_cast<int64_t>(iN), static_cast<int64_t>(iC)});
    gdp::cuda::gather_rows(rows.data(), g.data(), idx->data(), iN, iC);
    add_into(ds, rows.data(), static_cast<int64_t>(iN) * iC);
  });
  return out;
}

Var take_along_last(const Var& x, const std::vector<int64_t>& index) {
  require_cuda("take_along_last", {&x});
  const Tensor xv = dense("take_along_last", x);
  if (xv.ndim() != 2 || xv.dim(0) != static_cast<int64_t>(index.size()))
    throw std::invalid_argument("nn::take_along_last: x " + shape_str(xv.shape()) + " with " +
                                std::to_string(index.size()) + " indices (want x (N, C))");
  const int iN = to_int("take_along_last", xv.dim(0)), iC = to_int("take_along_last", xv.dim(1));
  IndexBuffer idx = upload_index("take_along_last", index, iC);
  Tensor y = device_empty({static_cast<int64_t>(iN)});
  if (iN > 0) gdp::cuda::take_along_last_forward(y.data(), xv.data(), idx->data(), iN, iC);
  const bool rg = needs_grad<float>({&x});
  Var out(std::move(y), rg);
  if (!rg) return out;
  NodeF xn = x.node();
  record(out, [xn, idx, iN, iC](Tensor& g) {
    if (float* dx = grad_of(xn))
      if (iN > 0) gdp::cuda::take_along_last_backward(dx, g.data(), idx->data(), iN, iC);
  });
  return out;
}

// ---- layout: expand, concat, slice, reshape, transpose ------------------------------------------

Var expand(const Var& x, const Shape& shape) {
  require_cuda("expand", {&x});
  const Tensor xv = dense("expand", x);
  const Shape& xs = xv.shape();
  const int64_t r = static_cast<int64_t>(shape.size()), xr = xv.ndim();
  if (r > gdp::cuda::kMaxBroadcastDims)
    fail("expand",
         "rank " + std::to_string(r) + " above " + std::to_string(gdp::cuda::kMaxBroadcastDims));
  if (xr > r || broadcast_shapes(xs, shape) != shape)
    throw std::invalid_argument("nn::expand: cannot broadcast " + shape_str(xs) + " to " +
                                shape_str(shape));
  gdp::cuda::BroadcastShape bs;
  bs.ndim = static_cast<int>(r);
  long long stride = 1;
  for (int64_t i = r - 1; i >= 0; --i) {
    bs.dims[i] = to_int("expand", shape[i]);
    const int64_t xi = i - (r - xr);  // x's dim aligned with out dim i (right-aligned)
    if (xi >= 0 && xs[xi] == shape[i] && shape[i] != 1) {
      bs.x_strides[i] = stride;
      stride *= xs[xi];
    } else {
      bs.x_strides[i] = 0;  // broadcast (x dim 1 or missing)
    }
  }
  Tensor y = device_empty(shape);
  if (y.numel() > 0) gdp::cuda::expand_forward(y.data(), xv.data(), bs);
  const bool rg = needs_grad<float>({&x});
  Var out(std::move(y), rg);
  if (!rg) return out;
  NodeF xn = x.node();
  record(out, [xn, bs](Tensor& g) {
    if (float* dx = grad_of(xn))
      if (g.numel() > 0) gdp::cuda::expand_backward(dx, g.data(), bs);
  });
  return out;
}

Var concat(const std::vector<Var>& parts, int64_t axis) {
  std::vector<Tensor> vals;
  std::vector<Shape> shapes;
  for (const Var& p : parts) {
    require_cuda("concat", {&p});
    vals.push_back(dense("concat", p));
    shapes.push_back(vals.back().shape());
  }
  int64_t ax = 0;
  const Shape out_shape = concat_shape(shapes, axis, &ax);
  const Shape& s0 = shapes[0];
  const int64_t r = static_cast<int64_t>(s0.size());
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < ax; ++i) outer *= s0[i];
  for (int64_t i = ax + 1; i < r; ++i) inner *= s0[i];
  const int iouter = to_int("concat", outer), out_row = to_int("concat", out_shape[ax] * inner);
  std::vector<int> lens, offsets;
  int off = 0;
  for (const Tensor& v : vals) {
    lens.push_back(to_int("concat", v.shape()[ax] * inner));
    offsets.push_back(off);
    off += lens.back();
  }
  Tensor y = device_empty(out_shape);
  for (std::size_t k = 0; k < vals.size(); ++k)
    if (iouter > 0 && lens[k] > 0)
      gdp::cuda::copy_2d(y.data() + offsets[k], out_row, vals[k].data(), lens[k], iouter, lens[k],
                         false);
  bool rg = false;
  for (const Var& p : parts) rg = rg || needs_grad<float>({&p});
  Var out(std::move(y), rg);
  if (!rg) return out;
  std::vector<NodeF> nodes;
  for (const Var& p : parts) nodes.push_back(p.node());
  record(out, [nodes, lens, offsets, iouter, out_row](Tensor& g) {
    for (std::size_t k = 0; k < nodes.size(); ++k)
      if (float* d = grad_of(nodes[k]))
        if (iouter > 0 && lens[k] > 0)
          gdp::cuda::copy_2d(d, lens[k], g.data() + offsets[k], out_row, iouter, lens[k], true);
  });
  return out;
}

Var slice(const Var& x, int64_t axis, int64_t start, int64_t end) {
  require_cuda("slice", {&x});
  const Tensor xv = dense("slice", x);
  const int64_t r = xv.ndim(), ax = normalize_axis(axis, r, "slice"), n = xv.shape()[ax];
  if (start < 0 || end > n || start > end)
    throw std::out_of_range("nn::slice: [" + std::to_string(start) + ", " + std::to_string(end) +
                            ") on axis " + std::to_string(ax) + " of " + shape_str(xv.shape()));
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < ax; ++i) outer *= xv.shape()[i];
  for (int64_t i = ax + 1; i < r; ++i) inner *= xv.shape()[i];
  const int iouter = to_int("slice", outer), in_row = to_int("slice", n * inner),
            len = to_int("slice", (end - start) * inner), first = to_int("slice", start * inner);
  Shape out_shape = xv.shape();
  out_shape[ax] = end - start;
  Tensor y = device_empty(out_shape);
  if (iouter > 0 && len > 0)
    gdp::cuda::copy_2d(y.data(), len, xv.data() + first, in_row, iouter, len, false);
  const bool rg = needs_grad<float>({&x});
  Var out(std::move(y), rg);
  if (!rg) return out;
  NodeF xn = x.node();
  record(out, [xn, iouter, in_row, len, first](Tensor& g) {
    if (float* d = grad_of(xn))
      if (iouter > 0 && len > 0)
        gdp::cuda::copy_2d(d + first, in_row, g.data(), len, iouter, len, true);
  });
  return out;
}

Var transpose(const Var& x, int64_t axis0, int64_t axis1) {
  require_cuda("transpose", {&x});
  const Tensor xv = dense("transpose", x);
  const int64_t r = xv.ndim();
  int64_t a0 = normalize_axis(axis0, r, "transpose"), a1 = normalize_axis(axis1, r, "transpose");
  if (a0 > a1) std::swap(a0, a1);
  const Shape& s = xv.shape();
  Shape out_shape = s;
  std::swap(out_shape[a0], out_shape[a1]);
  int64_t A = 1, B = 1, C = 1;
  for (int64_t i = 0; i < a0; ++i) A *= s[i];
  for (int64_t i = a0 + 1; i < a1; ++i) B *= s[i];
  for (int64_t i = a1 + 1; i < r; ++i) C *= s[i];
  // a0 == a1: x viewed as (A, s[a0], 1, 1, C), whose swap is a plain copy.
  const int iA = to_int("transpose", A), iB = to_int("transpose", B), iC = to_int("transpose", C),
            n0 = to_int("transpose", s[a0]), n1 = a0 == a1 ? 1 : to_int("transpose", s[a1]);
  Tensor y = device_empty(out_shape);
  if (y.numel() > 0) gdp::cuda::swap_axes(y.data(), xv.data(), iA, n0, iB, n1, iC, false);
  const bool rg = needs_grad<float>({&x});
  Var out(std::move(y), rg);
  if (!rg) return out;
  NodeF xn = x.node();
  const int64_t numel = xv.numel();
  record(out, [xn, numel, iA, iB, iC, n0, n1](Tensor& g) {
    if (float* d = grad_of(xn))  // g is (A, n1, B, n0, C)
      if (numel > 0) gdp::cuda::swap_axes(d, g.data(), iA, n1, iB, n0, iC, true);
  });
  return out;
}

// ---- CSR segments (graph_ops) ------------------------------------------------------------------

namespace {
struct DeviceCsr {
  IndexBuffer row_ptr, col_idx;
  const int32_t* row_ptr_src = nullptr;  // the host arrays it was made from (a copied Csr has
  const int32_t* col_idx_src = nullptr;  // other arrays, so it re-uploads instead of reusing)
  std::size_t row_ptr_n = 0, col_idx_n = 0;
};

std::mutex g_csr_cache_mutex;

// The device copy of csr, uploaded on first use and kept in csr.device_copy.
std::shared_ptr<const DeviceCsr> device_csr(const Csr& csr) {
  const std::lock_guard<std::mutex> lock(g_csr_cache_mutex);
  auto cached = std::static_pointer_cast<const DeviceCsr>(csr.device_copy);
  if (!cached || cached->row_ptr_src != csr.row_ptr.data() ||
      cached->col_idx_src != csr.col_idx.data() || cached->row_ptr_n != csr.row_ptr.size() ||
      cached->col_idx_n != csr.col_idx.size()) {
    cached = std::make_shared<const DeviceCsr>(
        DeviceCsr{upload_int32(csr.row_ptr), upload_int32(csr.col_idx), csr.row_ptr.data(),
                  csr.col_idx.data(), csr.row_ptr.size(), csr.col_idx.size()});
    csr.device_copy = cached;
  }
  return cached;
}

Var segment_op(const char* op, const Var& x, const Csr& csr, bool is_max) {
  require_cuda(op, {&x});
  const Tensor xv = dense(op, x);
  if (xv.ndim() != 2) throw std::invalid_argument(std::string("nn::") + op + ": x must be (N, C)");
  if (csr.row_ptr.empty())
    throw std::invalid_argument(std::string("nn::") + op + ": empty row_ptr");
  const int R = to_int(op, static_cast<int64_t>(csr.row_ptr.size()) - 1), C = to_int(op, xv.dim(1));
  to_int(op, xv.dim(0));
  const std::shared_ptr<const DeviceCsr> dev = device_csr(csr);
  const IndexBuffer rp = dev->row_ptr, ci = dev->col_idx;
  Tensor y = device_empty({static_cast<int64_t>(R), static_cast<int64_t>(C)});
  std::shared_ptr<gdp::cuda::DeviceIndexBuffer> argmax;
  if (is_max)
    argmax = std::make_shared<gdp::cuda::DeviceIndexBuffer>(static_cast<std::size_t>(R) * C);
  if (R > 0 && C > 0) {
    if (is_max)
      gdp::cuda::segment_max_forward(y.data(), argmax->data(), xv.data(), rp->data(), ci->data(), R,
                                     C);
    else
      gdp::cuda::segment_mean_forward(y.data(), xv.data(), rp->data(), ci->data(), R, C);
  }
  const bool rg = needs_grad<float>({&x});
  Var out(std::move(y), rg);
  if (!rg) return out;
  NodeF xn = x.node();
  record(out, [xn, rp, ci, argmax, is_max, R, C](Tensor& g) {
    float* dx = grad_of(xn);
    if (!dx || R == 0 || C == 0) return;
    if (is_max)
      gdp::cuda::segment_max_backward(dx, g.data(), argmax->data(), R, C);
    else
      gdp::cuda::segment_mean_backward(dx, g.data(), rp->data(), ci->data(), R, C);
  });
  return out;
}
}  // namespace

Var segment_mean(const Var& x, const Csr& csr) { return segment_op("segment_mean", x, csr, false); }
Var segment_max(const Var& x, const Csr& csr) { return segment_op("segment_max", x, csr, true); }

// ---- Transformer-XL relative attention ---------------------------------------------------------
// Per head: content scores (q + u) k^T and position scores (q + vb) rk^T as strided-batched GEMMs,
// the position scores moved onto the keys by the relative shift, then the masked-softmax
// attention kernel; the heads are split (S, H, Dh) -> (H, S, Dh) and merged back by axis swaps.
// Same maths as nn/attention.h (derivation in docs/attention.md).

Var rel_attention(const Var& q, const Var& k, const Var& v, const Var& rk, const Var& u,
                  const Var& vb, const RelAttentionDims& d) {
  const char* op = "rel_attention";
  require_cuda(op, {&q, &k, &v, &rk, &u, &vb});
  d.validate();
  const Tensor qv = dense(op, q), kv = dense(op, k), vv = dense(op, v), rkv = dense(op, rk),
               uv = dense(op, u), vbv = dense(op, vb);
  // Shapes are checked by the caller (nn/graph_ops.cpp) for both devices.
  const int H = d.H, S = d.S, K = d.K(), P = d.P(), Dh = d.Dh, D = d.D();
  to_int(op, static_cast<int64_t>(H) * S * P);
  const int base = d.M + d.rel_offset();
  const float scale = 1.0f / std::sqrt(static_cast<float>(Dh));
  // (rows, H, Dh) -> (H, rows, Dh) and back.
  auto split = [&](float* out, const float* x, int rows) {
    gdp::cuda::swap_axes(out, x, 1, rows, 1, H, Dh, false);
  };
  const long long sS = static_cast<long long>(S) * Dh, sP = static_cast<long long>(P) * Dh,
                  sSP = static_cast<long long>(S) * P;

  Tensor tmp = device_empty({S, D});
  Tensor qu_h = device_empty({H, S, Dh}), qv_h = device_empty({H, S, Dh}),
         k_h = device_empty({H, K, Dh}), v_h = device_empty({H, K, Dh}),
         rk_h = device_empty({H, P, Dh});
  gdp::cuda::add_forward(tmp.data(), qv.data(), uv.data(), S, D, true);
  split(qu_h.data(), tmp.data(), S);
  gdp::cuda::add_forward(tmp.data(), qv.data(), vbv.data(), S, D, true);
  split(qv_h.data(), tmp.data(), S);
  split(k_h.data(), kv.data(), K);
  split(v_h.data(), vv.data(), K);
  split(rk_h.data(), rkv.data(), P);
  Tensor pos = device_empty({H, S, K});
  {
    Tensor bd = device_empty({H, S, P});  // (q + vb) rk^T per head
    gdp::cuda::gemm_strided_batched(bd.data(), qv_h.data(), rk_h.data(), H, S, P, Dh, false, true,
                                    1.0f, 0.0f, sS, sP, sSP);
    gdp::cuda::rel_shift_forward(pos.data(), bd.data(), H, S, K, P, base, scale);
  }
  Tensor att = device_empty({H, S, K}), out_h = device_empty({H, S, Dh});
  gdp::cuda::attention_forward(out_h.data(), att.data(), qu_h.data(), k_h.data(), v_h.data(),
                               pos.data(), H, S, K, Dh, d.causal);
  Tensor y = device_empty({S, D});
  gdp::cuda::swap_axes(y.data(), out_h.data(), 1, H, 1, S, Dh, false);
  const bool rg = needs_grad<float>({&q, &k, &v, &rk, &u, &vb});
  Var out(std::move(y), rg);
  if (!rg) return out;
  NodeF qn = q.node(), kn = k.node(), vn = v.node(), rn = rk.node(), un = u.node(), bn = vb.node();
  record(out, [=](Tensor& g) {
    float *dq = grad_of(qn), *dk = grad_of(kn), *dv = grad_of(vn), *drk = grad_of(rn),
          *du = grad_of(un), *dvb = grad_of(bn);
    // (H, rows, Dh) += ... merged into (rows, H, Dh).
    auto merge_into = [&](float* dst, const float* x_h, int rows, bool accumulate = true) {
      gdp::cuda::swap_axes(dst, x_h, 1, H, 1, rows, Dh, accumulate);
    };
    Tensor g_h = device_empty({H, S, Dh});
    gdp::cuda::swap_axes(g_h.data(), g.data(), 1, S, 1, H, Dh, false);
    Tensor dqu_h({H, S, Dh}, Device::cuda), dk_h({H, K, Dh}, Device::cuda),
        dv_h({H, K, Dh}, Device::cuda),
        dpos({H, S, K}, Device::cuda);  // zeros: the kernels accumulate
    Tensor scratch = device_empty({H, S, K});
    gdp::cuda::attention_backward(dqu_h.data(), dk_h.data(), dv_h.data(), dpos.data(),
                                  scratch.data(), g_h.data(), qu_h.data(), k_h.data(), v_h.data(),
                                  att.data(), H, S, K, Dh);
    if (dk) merge_into(dk, dk_h.data(), K);
    if (dv) merge_into(dv, dv_h.data(), K);
    Tensor dbd({H, S, P}, Device::cuda);
    gdp::cuda::rel_shift_backward(dbd.data(), dpos.data(), H, S, K, P, base, scale);
    if (drk) {  // (H, P, Dh) = dbd^T (q + vb)
      Tensor drk_h = device_empty({H, P, Dh});
      gdp::cuda::gemm_strided_batched(drk_h.data(), dbd.data(), qv_h.data(), H, P, Dh, S, true,
                                      false, 1.0f, 0.0f, sSP, sS, sP);
      merge_into(drk, drk_h.data(), P);
    }
    if (dq || du) {  // content path: dq += dqu, du += column sums
      Tensor m = device_empty({S, D});
      merge_into(m.data(), dqu_h.data(), S, false);
      if (dq) add_into(dq, m.data(), static_cast<int64_t>(S) * D);
      if (du) gdp::cuda::add_backward(nullptr, du, m.data(), S, D, true);
    }
    if (dq || dvb) {  // position path: dqv = dbd rk per head
      Tensor dqv_h = device_empty({H, S, Dh});
      gdp::cuda::gemm_strided_batched(dqv_h.data(), dbd.data(), rk_h.data(), H, S, Dh, P, false,
                                      false, 1.0f, 0.0f, sSP, sP, sS);
      Tensor m = device_empty({S, D});
      merge_into(m.data(), dqv_h.data(), S, false);
      if (dq) add_into(dq, m.data(), static_cast<int64_t>(S) * D);
      if (dvb) gdp::cuda::add_backward(nullptr, dvb, m.data(), S, D, true);
    }
  });
  return out;
}

}  // namespace gdp::nn::detail::cuda_ops

#endif  // GDP_HAVE_CUDA
