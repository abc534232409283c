// The per-class CPU kernels of `gdp validate` (validate/kernels.h).
#include "validate/kernels.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>

namespace gdp::validate {

const char* kernel_kind_name(KernelKind k) {
  switch (k) {
    case KernelKind::none:
      return "none";
    case KernelKind::gemm:
      return "gemm";
    case KernelKind::scale_add:
      return "scale_add";
    case KernelKind::copy:
      return "copy";
    case KernelKind::reduce:
      return "reduce";
  }
  return "?";
}

double KernelPlan::flops() const {
  return kind == KernelKind::gemm ? 2.0 * double(m) * double(n) * double(k) : 0.0;
}

double KernelPlan::bytes() const {
  if (kind == KernelKind::gemm) return 4.0 * double(m * k + k * n + m * n);
  return 4.0 * double(in_floats + out_floats);
}

int64_t KernelPlan::workspace_floats() const {
  if (kind == KernelKind::gemm) return m * k + k * n + m * n;
  return in_floats + out_floats;
}

namespace {

KernelPlan gemm_plan(double flops) {
  KernelPlan p;
  p.kind = KernelKind::gemm;
  const double fma = std::max(flops / 2, 1.0);  // multiply-adds
  p.m = p.n = std::max<int64_t>(1, static_cast<int64_t>(std::floor(std::cbrt(fma))));
  p.k = std::max<int64_t>(1, std::llround(fma / (double(p.m) * double(p.n))));
  return p;
}

KernelPlan stream_plan(KernelKind kind, double bytes) {
  KernelPlan p;
  p.kind = kind;
  const int64_t floats = std::max<int64_t>(2, std::llround(bytes / 4));
  if (kind == KernelKind::reduce) {
    p.out_floats = std::max<int64_t>(1, floats / (kReduceWidth + 1));
    p.in_floats = p.out_floats * kReduceWidth;
  } else {
    p.in_floats = p.out_floats = floats / 2;
  }
  return p;
}

}  // namespace

KernelPlan plan_kernel(OpClass c, double flops, double bytes) {
  const bool compute_class = c == OpClass::matmul || c == OpClass::conv;
  if (!(flops > 0) && !(bytes > 0)) return KernelPlan{};
  if ((compute_class && flops > 0) || !(bytes > 0)) return gemm_plan(flops);
  switch (c) {
    case OpClass::memory:
      return stream_plan(KernelKind::copy, bytes);
    case OpClass::reduction:
      return stream_plan(KernelKind::reduce, bytes);
    default:
      return stream_plan(KernelKind::scale_add, bytes);
  }
}

KernelPlan plan_kernel(const Op& op) {
  const double bytes =
      op.bytes_accessed > 0 ? op.bytes_accessed : static_cast<double>(op.output_bytes());
  return plan_kernel(classify_op(op.type), op.flops, bytes);
}

void init_workspace(float* ws, int64_t floats) {
  for (int64_t i = 0; i < floats; ++i) ws[i] = 0.001f * static_cast<float>(i % 97);
}

void run_kernel(const KernelPlan& p, float* ws) {
  switch (p.kind) {
    case KernelKind::none:
      return;
    case KernelKind::gemm: {
      using Mat = Eigen::Map<Eigen::MatrixXf>;
      Mat a(ws, p.m, p.k);                          // (M, K)
      Mat b(ws + p.m * p.k, p.k, p.n);              // (K, N)
      Mat c(ws + p.m * p.k + p.k * p.n, p.m, p.n);  // (M, N)
      c.noalias() = a * b;
      return;
    }
    case KernelKind::scale_add: {
      Eigen::Map<Eigen::ArrayXf> in(ws, p.in_floats);                  // (in)
      Eigen::Map<Eigen::ArrayXf> out(ws + p.in_floats, p.out_floats);  // (out == in)
      out = 0.5f * in + 0.25f;
      return;
    }
    case KernelKind::copy:
      std::memcpy(ws + p.in_floats, ws, static_cast<size_t>(p.out_floats) * sizeof(float));
      return;
    case KernelKind::reduce: {
      Eigen::Map<Eigen::MatrixXf> in(ws, kReduceWidth, p.out_floats);      // (W, out)
      Eigen::Map<Eigen::RowVectorXf> out(ws + p.in_floats, p.out_floats);  // (out)
      out.noalias() = in.colwise().sum();
      return;
    }
  }
}

}  // namespace gdp::validate
