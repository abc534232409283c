// The kernel plans of `gdp validate` over the calibration's CPU kernels (validate/kernels.h).
// No Eigen here: the kernels are called through calib/cpu_kernels.h's raw-pointer interface.
#include "validate/kernels.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace gdp::validate {

const char* kernel_kind_name(KernelKind k) {
  switch (k) {
    case KernelKind::none:
      return "none";
    case KernelKind::gemm:
      return "gemm";
    case KernelKind::conv2d:
      return "conv2d";
    case KernelKind::add:
      return "add";
    case KernelKind::relu:
      return "relu";
    case KernelKind::tanh:
      return "tanh";
    case KernelKind::gelu:
      return "gelu";
    case KernelKind::row_sum:
      return "row_sum";
    case KernelKind::softmax:
      return "softmax";
    case KernelKind::layer_norm:
      return "layer_norm";
    case KernelKind::transpose:
      return "transpose";
    case KernelKind::copy:
      return "copy";
  }
  return "?";
}

namespace {

double conv_out(const calib::ConvShape& s) { return double(s.B * s.Ho() * s.Wo() * s.Co); }
double conv_in(const calib::ConvShape& s) { return double(s.B * s.H * s.W * s.Ci); }
double conv_w(const calib::ConvShape& s) { return double(s.KH * s.KW * s.Ci * s.Co); }

}  // namespace

double KernelPlan::flops() const {
  const double mn = double(m) * double(n);
  switch (kind) {
    case KernelKind::gemm:
      return 2.0 * mn * double(k);
    case KernelKind::conv2d:
      return 2.0 * conv_out(conv) * double(conv.KH * conv.KW * conv.Ci);
    case KernelKind::add:
    case KernelKind::relu:
      return double(n);
    case KernelKind::tanh:
      return 4.0 * double(n);
    case KernelKind::gelu:
      return 8.0 * double(n);
    case KernelKind::row_sum:
      return mn;
    case KernelKind::softmax:
      return 5.0 * mn;
    case KernelKind::layer_norm:
      return 8.0 * mn;
    case KernelKind::none:
    case KernelKind::transpose:
    case KernelKind::copy:
      return 0.0;
  }
  return 0.0;
}

double KernelPlan::bytes() const {
  const double mn = double(m) * double(n);
  switch (kind) {
    case KernelKind::none:
      return 0.0;
    case KernelKind::gemm:
      return 4.0 * (double(m) * double(k) + double(k) * double(n) + mn);
    case KernelKind::conv2d:
      return 4.0 * (conv_in(conv) + conv_w(conv) + conv_out(conv));
    case KernelKind::add:
      return 12.0 * double(n);
    case KernelKind::relu:
    case KernelKind::tanh:
    case KernelKind::gelu:
    case KernelKind::copy:
      return 8.0 * double(n);
    case KernelKind::row_sum:
      return 4.0 * (mn + double(m));
    case KernelKind::softmax:
    case KernelKind::transpose:
      return 8.0 * mn;
    case KernelKind::layer_norm:
      return 8.0 * mn + 8.0 * double(n);
  }
  return 0.0;
}

int64_t KernelPlan::workspace_floats() const {
  switch (kind) {
    case KernelKind::none:
      return 0;
    case KernelKind::gemm:
      return m * k + k * n + m * n;
    case KernelKind::conv2d:
      return static_cast<int64_t>(conv_in(conv) + conv_w(conv) + conv_out(conv)) +
             conv.col_elements();
    case KernelKind::add:
      return 3 * n;
    case KernelKind::relu:
    case KernelKind::tanh:
    case KernelKind::gelu:
    case KernelKind::copy:
      return 2 * n;
    case KernelKind::row_sum:
      return m * n + m;
    case KernelKind::softmax:
    case KernelKind::transpose:
      return 2 * m * n;
    case KernelKind::layer_norm:
      return 2 * m * n + 2 * n;
  }
  return 0;
}

namespace {

int64_t at_least_1(double x) { return std::max<int64_t>(1, static_cast<int64_t>(x)); }

KernelPlan gemm_plan(double flops) {
  KernelPlan p;
  p.kind = KernelKind::gemm;
  const double fma = std::max(flops / 2, 1.0);  // multiply-adds
  p.m = p.n = at_least_1(std::floor(std::cbrt(fma)));
  p.k = std::max<int64_t>(1, std::llround(fma / (double(p.m) * double(p.n))));
  return p;
}

// 3x3, stride 1, padding 1, batch 1: Ho = H, Wo = W, flops = 18 H W Ci Co.
KernelPlan conv_plan(double flops) {
  KernelPlan p;
  p.kind = KernelKind::conv2d;
  const double per_pixel_pair = std::max(flops / 18, 1.0);  // H W Ci Co
  calib::ConvShape& s = p.conv;
  s.KH = s.KW = 3;
  s.stride = 1;
  s.pad = 1;
  s.H = s.W = at_least_1(std::floor(std::pow(per_pixel_pair, 0.25)));
  const double channels = per_pixel_pair / double(s.H * s.W);  // Ci Co
  s.Ci = at_least_1(std::floor(std::sqrt(channels)));
  s.Co = std::max<int64_t>(1, std::llround(channels / double(s.Ci)));
  return p;
}

// Sized so that the kernel's bytes (KernelPlan::bytes) are about `bytes`, at least one element.
KernelPlan stream_plan(KernelKind kind, double bytes) {
  KernelPlan p;
  p.kind = kind;
  const double floats = bytes / 4;
  switch (kind) {
    case KernelKind::add:
      p.n = at_least_1(std::llround(floats / 3));
      break;
    case KernelKind::row_sum:
      p.n = kRowWidth;
      p.m = at_least_1(std::llround(floats / double(kRowWidth + 1)));
      break;
    case KernelKind::softmax:
      p.n = kRowWidth;
      p.m = at_least_1(std::llround(floats / double(2 * kRowWidth)));
      break;
    case KernelKind::layer_norm:
      p.n = kRowWidth;
      p.m = at_least_1(std::llround((floats - 2 * kRowWidth) / double(2 * kRowWidth)));
      break;
    case KernelKind::transpose: {
      const double elements = std::max(floats / 2, 1.0);
      p.m = at_least_1(std::floor(std::sqrt(elements)));
      p.n = at_least_1(std::llround(elements / double(p.m)));
      break;
    }
    default:  // relu, tanh, gelu, copy: read n, write n
      p.n = at_least_1(std::llround(floats / 2));
      break;
  }
  return p;
}

std::string lower(const std::string& s) {
  std::string r(s);
  for (char& ch : r) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return r;
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }
bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// The calibrated streaming kernel that stands for an op of class `c` and type `type`.
KernelKind stream_kind(OpClass c, const std::string& type) {
  const std::string t = lower(type);
  switch (c) {
    case OpClass::elementwise:
      if (starts_with(t, "relu")) return KernelKind::relu;
      if (starts_with(t, "tanh") || starts_with(t, "sigmoid")) return KernelKind::tanh;
      if (starts_with(t, "gelu")) return KernelKind::gelu;
      return KernelKind::add;
    case OpClass::reduction:
      if (contains(t, "softmax")) return KernelKind::softmax;
      if (contains(t, "norm")) return KernelKind::layer_norm;
      return KernelKind::row_sum;
    case OpClass::memory:
      return starts_with(t, "transpose") ? KernelKind::transpose : KernelKind::copy;
    default:  // other, and matmul / conv without flops
      return KernelKind::add;
  }
}

}  // namespace

KernelPlan plan_kernel(OpClass c, const std::string& type, double flops, double bytes) {
  if (!(flops > 0) && !(bytes > 0)) return KernelPlan{};
  if (c == OpClass::conv && flops > 0) return conv_plan(flops);
  if ((c == OpClass::matmul && flops > 0) || !(bytes > 0)) return gemm_plan(flops);
  return stream_plan(stream_kind(c, type), bytes);
}

KernelPlan plan_kernel(const Op& op) {
  const double bytes =
      op.bytes_accessed > 0 ? op.bytes_accessed : static_cast<double>(op.output_bytes());
  return plan_kernel(classify_op(op.type), op.type, op.flops, bytes);
}

void init_workspace(float* ws, int64_t floats) {
  for (int64_t i = 0; i < floats; ++i) ws[i] = 0.001f * static_cast<float>(i % 97);
}

void run_kernel(const KernelPlan& p, float* ws) {
  const int64_t m = p.m, n = p.n, k = p.k;
  switch (p.kind) {
    case KernelKind::none:
      return;
    case KernelKind::gemm:
      calib::gemm(ws + m * k + k * n, ws, ws + m * k, m, n, k);
      return;
    case KernelKind::conv2d: {
      const calib::ConvShape& s = p.conv;
      const int64_t in = s.B * s.H * s.W * s.Ci, w = s.KH * s.KW * s.Ci * s.Co;
      float* col = ws + in + w;
      calib::conv2d_im2col(col + s.col_elements(), col, ws, ws + in, s);
      return;
    }
    case KernelKind::add:
      calib::add(ws + 2 * n, ws, ws + n, n);
      return;
    case KernelKind::relu:
      calib::relu(ws + n, ws, n);
      return;
    case KernelKind::tanh:
      calib::tanh_op(ws + n, ws, n);
      return;
    case KernelKind::gelu:
      calib::gelu(ws + n, ws, n);
      return;
    case KernelKind::copy:
      calib::copy(ws + n, ws, n);
      return;
    case KernelKind::row_sum:
      calib::row_sum(ws + m * n, ws, m, n);
      return;
    case KernelKind::softmax:
      calib::softmax(ws + m * n, ws, m, n);
      return;
    case KernelKind::layer_norm:
      calib::layer_norm(ws + m * n + 2 * n, ws, ws + m * n, ws + m * n + n, m, n);
      return;
    case KernelKind::transpose:
      calib::transpose(ws + m * n, ws, m, n);
      return;
  }
}

}  // namespace gdp::validate
