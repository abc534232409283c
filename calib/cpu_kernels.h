// The CPU kernels that `gdp calibrate --backend cpu` times: one plain, single-threaded version
// of each op class's typical kernel (Eigen GEMM, implicit-GEMM convolution, element-wise,
// reductions, softmax, layer norm, transpose, copy). Shared: another tool that runs ops on the
// CPU device kind can use the same kernels so that it runs what was calibrated.
//
// Glossary: M, N, K = GEMM sizes (C(M, N) = A(M, K) B(K, N)); B = batch, H, W = input height and
// width, Ci, Co = input and output channels, KH, KW = kernel size, Ho, Wo = output size;
// R = rows, C = columns. Tensors are dense, row-major, float32; convolutions are NHWC.
// Arguments: outputs, then inputs, then sizes (llm.c style).
#pragma once

#include <cstdint>

namespace gdp::calib {

// C = A B.  C: (M, N), A: (M, K), B: (K, N).
void gemm(float* C, const float* A, const float* B, int64_t M, int64_t N, int64_t K);

struct ConvShape {
  int64_t B = 1, H = 1, W = 1, Ci = 1, Co = 1, KH = 1, KW = 1, stride = 1, pad = 0;
  int64_t Ho() const { return (H + 2 * pad - KH) / stride + 1; }
  int64_t Wo() const { return (W + 2 * pad - KW) / stride + 1; }
  int64_t col_elements() const { return B * Ho() * Wo() * KH * KW * Ci; }  // im2col scratch
};
// Convolution as an implicit GEMM: im2col into `col` (col_elements()), then
// out(B*Ho*Wo, Co) = col(B*Ho*Wo, KH*KW*Ci) w(KH*KW*Ci, Co).
// out: (B, Ho, Wo, Co), in: (B, H, W, Ci), w: (KH, KW, Ci, Co); zero padding.
void conv2d_im2col(float* out, float* col, const float* in, const float* w, const ConvShape& s);
// The same convolution by direct loops: the reference the tests check conv2d_im2col against.
void conv2d_reference(float* out, const float* in, const float* w, const ConvShape& s);

// Element-wise over n elements.
void add(float* out, const float* a, const float* b, int64_t n);
void relu(float* out, const float* x, int64_t n);
void tanh_op(float* out, const float* x, int64_t n);
void gelu(float* out, const float* x, int64_t n);  // tanh approximation

// Reductions over rows. out: (R), x: (R, C).
void row_sum(float* out, const float* x, int64_t R, int64_t C);
// out, x: (R, C); softmax of each row (max-subtracted).
void softmax(float* out, const float* x, int64_t R, int64_t C);
// out, x: (R, C), gamma, beta: (C); (x - mean) / sqrt(var + eps) * gamma + beta per row.
void layer_norm(float* out, const float* x, const float* gamma, const float* beta, int64_t R,
                int64_t C, float eps = 1e-5f);

// Memory. out: (C, R), x: (R, C), blocked.
void transpose(float* out, const float* x, int64_t R, int64_t C);
void copy(float* out, const float* x, int64_t n);  // memcpy

}  // namespace gdp::calib
