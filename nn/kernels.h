// Raw CPU kernels (llm.c style): free functions on pointers, outputs first, then inputs, then
// sizes. Backward kernels ACCUMULATE (+=) into the input-gradient pointers. These are the CPU
// reference that the CUDA kernels are checked against; autograd ops in ops.cpp wrap them.
//
// Dimension letters: N = rows, C = channels (last dim, contiguous), V = table rows,
// M, K, P = matmul dims (row-major: A (M, K), B (K, P), out (M, P)). n = element count.
// Templated on T and explicitly instantiated for float and double in kernels.cpp.
#pragma once

#include <cstdint>

namespace gdp::nn {

// ---- matmul (row-major, Eigen GEMM) ----
// out (M, P) = op(a) @ op(b) (+ out if accumulate); op(a) is (M, K): a is (M, K) or, with
// trans_a, (K, M); op(b) is (K, P): b is (K, P) or, with trans_b, (P, K).
template <typename T>
void matmul_forward(T* out, const T* a, const T* b, int64_t M, int64_t K, int64_t P, bool trans_a,
                    bool trans_b, bool accumulate = false);

// ---- element-wise (n elements) ----
template <typename T>
void relu_forward(T* out, const T* in, int64_t n);
template <typename T>
void relu_backward(T* din, const T* in, const T* dout, int64_t n);
template <typename T>
void gelu_forward(T* out, const T* in, int64_t n);  // tanh approximation
template <typename T>
void gelu_backward(T* din, const T* in, const T* dout, int64_t n);
template <typename T>
void tanh_forward(T* out, const T* in, int64_t n);
template <typename T>
void tanh_backward(T* din, const T* out, const T* dout, int64_t n);  // uses the output
template <typename T>
void sigmoid_forward(T* out, const T* in, int64_t n);
template <typename T>
void sigmoid_backward(T* din, const T* out, const T* dout, int64_t n);  // uses the output
template <typename T>
void exp_forward(T* out, const T* in, int64_t n);
template <typename T>
void exp_backward(T* din, const T* out, const T* dout, int64_t n);  // uses the output
template <typename T>
void log_forward(T* out, const T* in, int64_t n);
template <typename T>
void log_backward(T* din, const T* in, const T* dout, int64_t n);

// ---- row ops over the last dim: in (N, C) ----
template <typename T>
void softmax_forward(T* out, const T* in, int64_t N, int64_t C);
template <typename T>
void softmax_backward(T* din, const T* out, const T* dout, int64_t N, int64_t C);
template <typename T>
void log_softmax_forward(T* out, const T* in, int64_t N, int64_t C);
template <typename T>
void log_softmax_backward(T* din, const T* out, const T* dout, int64_t N, int64_t C);
// out, in (N, C); mean, rstd (N) saved for backward; w, b (C).
template <typename T>
void layernorm_forward(T* out, T* mean, T* rstd, const T* in, const T* w, const T* b, int64_t N,
                       int64_t C, T eps);
// din (N, C), dw, db (C) accumulate; any of them may be null.
template <typename T>
void layernorm_backward(T* din, T* dw, T* db, const T* dout, const T* in, const T* w, const T* mean,
                        const T* rstd, int64_t N, int64_t C);
// out (C) += column sums of in (N, C) (bias gradients).
template <typename T>
void sum_rows_accumulate(T* out, const T* in, int64_t N, int64_t C);

// ---- indexing: rows of C contiguous elements ----
// out (N, C) = table[index[i]] (V rows); index values are checked by the op, not here.
template <typename T>
void embedding_forward(T* out, const T* table, const int64_t* index, int64_t N, int64_t C);
// dtable (V, C) += dout rows scattered by index (deterministic: sequential over i per column).
template <typename T>
void embedding_backward(T* dtable, const T* dout, const int64_t* index, int64_t N, int64_t C);

// ---- optimizer (flat arrays of n parameters) ----
// AdamW when weight_decay > 0 and decoupled; classic Adam L2 otherwise. t is the 1-based step.
template <typename T>
void adam_update(T* params, T* m, T* v, const T* grads, int64_t n, T lr, T beta1, T beta2, T eps,
                 T weight_decay, bool decoupled, int64_t t);

}  // namespace gdp::nn
