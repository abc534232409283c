// Which of the calibration's CPU kernels (calib/cpu_kernels.h) an op of the graph runs during
// `gdp validate`, and at what size, so that validation runs exactly what `gdp calibrate
// --backend cpu` timed. Only the amount of work is reproduced, not the op's arithmetic: a GEMM
// or an implicit-GEMM convolution of the op's flops, or a streaming kernel over the op's bytes.
// No Eigen type crosses this interface (raw pointers only): see calib/CMakeLists.txt.
//
// Glossary: M, N, K = GEMM sizes (C(M, N) = A(M, K) B(K, N)); R = rows, C = columns;
// n = elements. All buffers are float32, row-major, carved out of one workspace.
#pragma once

#include <cstdint>
#include <string>

#include "calib/cpu_kernels.h"
#include "core/graph.h"
#include "sim/cost_model.h"

namespace gdp::validate {

enum class KernelKind : uint8_t {
  none,        // nothing to do (an op with neither flops nor bytes)
  gemm,        // calib::gemm
  conv2d,      // calib::conv2d_im2col (3x3, stride 1, zero padding 1, batch 1)
  add,         // calib::add
  relu,        // calib::relu
  tanh,        // calib::tanh_op
  gelu,        // calib::gelu
  row_sum,     // calib::row_sum
  softmax,     // calib::softmax
  layer_norm,  // calib::layer_norm
  transpose,   // calib::transpose
  copy,        // calib::copy (memcpy)
};
const char* kernel_kind_name(KernelKind k);

constexpr int64_t kRowWidth = 64;  // C of the row kernels (row_sum, softmax, layer_norm)

struct KernelPlan {
  KernelKind kind = KernelKind::none;
  // gemm: M, N, K. Row kernels (row_sum, softmax, layer_norm, transpose): m = R, n = C.
  // Element-wise kernels and copy: n elements (m = k = 0).
  int64_t m = 0, n = 0, k = 0;
  calib::ConvShape conv;  // conv2d only
  // The flops and bytes of the kernel by the calibration's conventions (calib/cpu_bench.cpp):
  // gemm 2MNK and 4(MK + KN + MN); conv 2 B Ho Wo Co KH KW Ci and 4(in + weights + out);
  // add 1 and 12 per element; relu, tanh, gelu 1, 4, 8 and 8 per element; row_sum 1 per
  // element and 4(RC + R); softmax 5 and 8 per element; layer_norm 8 per element and
  // 8RC + 8C; transpose, copy 0 and 8 per element.
  double flops() const;
  double bytes() const;
  int64_t workspace_floats() const;  // the kernel's buffers (conv: with the im2col scratch)
};

// The kernel for an op of class `c` and type `type` with `flops` floating point operations and
// `bytes` bytes moved (Op::bytes_accessed, else its output bytes: the cost model's rule).
// - matmul runs a GEMM of near-square shape: M = N = floor(cbrt(flops/2)), K = round(flops /
//   (2MN)), each at least 1; conv an implicit-GEMM convolution with 3x3 kernels, stride 1,
//   padding 1, batch 1, H = W = floor((flops/18)^(1/4)), Ci = floor(sqrt(flops / (18 H W))),
//   Co = round(flops / (18 H W Ci)), each at least 1.
// - The other classes stream over `bytes`, with the calibrated kernel the op's type names
//   (case-insensitive, gradients alike): elementwise relu*, tanh* and sigmoid* (tanh), gelu*,
//   else add; reduction *softmax*, *norm* (layer_norm), else row_sum (rows of kRowWidth);
//   memory transpose* (near-square), else copy; other: add.
// - A memory-bound op without bytes but with flops runs the GEMM; a matmul or conv without
//   flops streams its bytes through add.
KernelPlan plan_kernel(OpClass c, const std::string& type, double flops, double bytes);
KernelPlan plan_kernel(const Op& op);  // classify_op(op.type), op.type, op.flops, its bytes

// Fills a workspace of `floats` floats with small finite values (touching every page, so that
// the timed runs do not fault).
void init_workspace(float* ws, int64_t floats);
// Runs the kernel on `ws` (plan.workspace_floats() floats, initialized), laid out as: gemm
// A(M, K), B(K, N), C(M, N); conv2d in(B, H, W, Ci), w(KH, KW, Ci, Co), col(im2col),
// out(B, Ho, Wo, Co); add a(n), b(n), out(n); relu, tanh, gelu, copy x(n), out(n); row_sum
// x(R, C), out(R); softmax x(R, C), out(R, C); layer_norm x(R, C), gamma(C), beta(C),
// out(R, C); transpose x(R, C), out(C, R). Single-threaded (the caller's thread is the device).
void run_kernel(const KernelPlan& plan, float* ws);

}  // namespace gdp::validate
