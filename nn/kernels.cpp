// Raw CPU kernels on pointers (llm.c style), OpenMP over rows/elements for large sizes, Eigen for
// GEMM and vectorized transcendental functions. Backward kernels accumulate into the gradients.
#include "nn/kernels.h"

#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <vector>

#include "nn/tensor.h"

namespace gdp::nn {

namespace {

// Below this many elements a kernel runs on one thread (thread start-up would dominate).
constexpr int64_t kParallelElems = 1 << 15;

template <typename T>
using Arr = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T>
using CArr = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

// Calls fn(begin, end) over [0, n) split into one chunk per thread (contiguous, static).
template <typename Fn>
void parallel_chunks(int64_t n, Fn&& fn) {
  if (n < kParallelElems || omp_in_parallel() || omp_get_max_threads() == 1) {
    fn(int64_t(0), n);
    return;
  }
#pragma omp parallel
  {
    const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
    // Chunk boundaries on multiples of 16 elements keep SIMD loads aligned-ish.
    const int64_t per = ((n + nt - 1) / nt + 15) / 16 * 16;
    const int64_t b = std::min(n, t * per), e = std::min(n, b + per);
    if (b < e) fn(b, e);
  }
}

// Calls fn(row) for rows [0, N) in parallel when N*C is large.
template <typename Fn>
void parallel_rows(int64_t N, int64_t C, Fn&& fn) {
  if (N * C < kParallelElems || N < 2) {
    for (int64_t i = 0; i < N; ++i) fn(i);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < N; ++i) fn(i);
}

}  // namespace

// ---- matmul ----

namespace {
// One serial Eigen GEMM on a block: C (rows, P) (+)= op(A)[rows] @ op(B) restricted to k range.
template <typename T, typename CM, typename AM, typename BM>
void gemm_block(CM&& C, const AM& A, const BM& B, bool accumulate) {
  if (accumulate)
    C.noalias() += A * B;
  else
    C.noalias() = A * B;
}
}  // namespace

// GEMM threading is done here, not inside Eigen: Eigen's parallel GEMM busy-waits between
// blocks, which collapses when the machine is oversubscribed. Large outputs are split by rows
// (independent blocks); short-and-deep products (weight gradients, M small, K huge) are split
// along K into per-thread partial products summed in a fixed order (deterministic).
template <typename T>
void matmul_forward(T* out, const T* a, const T* b, int64_t M, int64_t K, int64_t P, bool trans_a,
                    bool trans_b, bool accumulate) {
  MatrixMap<T> C(out, M, P);
  if (K == 0) {
    if (!accumulate) C.setZero();
    return;
  }
  const ConstMatrixMap<T> A(a, trans_a ? K : M, trans_a ? M : K);
  const ConstMatrixMap<T> B(b, trans_b ? P : K, trans_b ? K : P);
  // op(A) rows [r0, r0+nr) and k range [k0, k0+nk); op(B) k range.
  auto opA = [&](int64_t r0, int64_t nr, int64_t k0, int64_t nk) {
    return trans_a ? Eigen::Block<const ConstMatrixMap<T>>(A, k0, r0, nk, nr)
                   : Eigen::Block<const ConstMatrixMap<T>>(A, r0, k0, nr, nk);
  };
  auto opB = [&](int64_t k0, int64_t nk) {
    return trans_b ? Eigen::Block<const ConstMatrixMap<T>>(B, 0, k0, P, nk)
                   : Eigen::Block<const ConstMatrixMap<T>>(B, k0, 0, nk, P);
  };
  auto run = [&](auto&& Cblk, int64_t r0, int64_t nr, int64_t k0, int64_t nk, bool acc) {
    const auto Ab = opA(r0, nr, k0, nk);
    const auto Bb = opB(k0, nk);
    if (!trans_a && !trans_b) gemm_block<T>(Cblk, Ab, Bb, acc);
    if (!trans_a && trans_b) gemm_block<T>(Cblk, Ab, Bb.transpose(), acc);
    if (trans_a && !trans_b) gemm_block<T>(Cblk, Ab.transpose(), Bb, acc);
    if (trans_a && trans_b) gemm_block<T>(Cblk, Ab.transpose(), Bb.transpose(), acc);
  };
  const int nt = omp_in_parallel() ? 1 : omp_get_max_threads();
  const double flops =
      2.0 * static_cast<double>(M) * static_cast<double>(K) * static_cast<double>(P);
  if (nt == 1 || flops < 4e6) {
    run(C, 0, M, 0, K, accumulate);
    return;
  }
  if (M >= 32 * nt) {
#pragma omp parallel num_threads(nt)
    {
      const int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
      const int64_t per = (M + n - 1) / n, r0 = std::min(M, t * per), r1 = std::min(M, r0 + per);
      if (r0 < r1) {
        auto Cb = C.middleRows(r0, r1 - r0);
        run(Cb, r0, r1 - r0, 0, K, accumulate);
      }
    }
    return;
  }
  // Split K: partial products per thread, then a fixed-order sum.
  std::vector<RowMatrix<T>> part(nt);
#pragma omp parallel num_threads(nt)
  {
    const int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
    const int64_t per = (K + n - 1) / n, k0 = std::min(K, t * per), k1 = std::min(K, k0 + per);
    part[t].setZero(M, P);
    if (k0 < k1) run(part[t], 0, M, k0, k1 - k0, false);
  }
  if (!accumulate) C.setZero();
  for (int t = 0; t < nt; ++t)
    if (part[t].size() == M * P) C += part[t];
}

// ---- element-wise ----

template <typename T>
void relu_forward(T* out, const T* in, int64_t n) {
  parallel_chunks(
      n, [&](int64_t b, int64_t e) { Arr<T>(out + b, e - b) = CArr<T>(in + b, e - b).max(T(0)); });
}
template <typename T>
void relu_backward(T* din, const T* in, const T* dout, int64_t n) {
  parallel_chunks(n, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) din[i] += in[i] > T(0) ? dout[i] : T(0);
  });
}

namespace {
template <typename T>
constexpr T kGeluScale = T(0.7978845608028654);  // sqrt(2/pi)
template <typename T>
constexpr T kGeluCube = T(0.044715);
}  // namespace

template <typename T>
void gelu_forward(T* out, const T* in, int64_t n) {
  parallel_chunks(n, [&](int64_t b, int64_t e) {
    const CArr<T> x(in + b, e - b);
    Arr<T>(out + b, e - b) =
        T(0.5) * x * (T(1) + (kGeluScale<T> * (x + kGeluCube<T> * x * x * x)).tanh());
  });
}
template <typename T>
void gelu_backward(T* din, const T* in, const T* dout, int64_t n) {
  parallel_chunks(n, [&](int64_t b, int64_t e) {
    const CArr<T> x(in + b, e - b);
    const auto t = (kGeluScale<T> * (x + kGeluCube<T> * x * x * x)).tanh().eval();
    const auto du = kGeluScale<T> * (T(1) + T(3) * kGeluCube<T> * x * x);
    Arr<T>(din + b, e - b) +=
        CArr<T>(dout + b, e - b) * (T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * du);
  });
}
template <typename T>
void tanh_forward(T* out, const T* in, int64_t n) {
  parallel_chunks(
      n, [&](int64_t b, int64_t e) { Arr<T>(out + b, e - b) = CArr<T>(in + b, e - b).tanh(); });
}
template <typename T>
void tanh_backward(T* din, const T* out, const T* dout, int64_t n) {
  parallel_chunks(n, [&](int64_t b, int64_t e) {
    const CArr<T> y(out + b, e - b);
    Arr<T>(din + b, e - b) += CArr<T>(dout + b, e - b) * (T(1) - y * y);
  });
}
template <typename T>
void sigmoid_forward(T* out, const T* in, int64_t n) {
  parallel_chunks(
      n, [&](int64_t b, int64_t e) { Arr<T>(out + b, e - b) = CArr<T>(in + b, e - b).logistic(); });
}
template <typename T>
void sigmoid_backward(T* din, const T* out, const T* dout, int64_t n) {
  parallel_chunks(n, [&](int64_t b, int64_t e) {
    const CArr<T> y(out + b, e - b);
    Arr<T>(din + b, e - b) += CArr<T>(dout + b, e - b) * y * (T(1) - y);
  });
}
template <typename T>
void exp_forward(T* out, const T* in, int64_t n) {
  parallel_chunks(
      n, [&](int64_t b, int64_t e) { Arr<T>(out + b, e - b) = CArr<T>(in + b, e - b).exp(); });
}
template <typename T>
void exp_backward(T* din, const T* out, const T* dout, int64_t n) {
  parallel_chunks(n, [&](int64_t b, int64_t e) {
    Arr<T>(din + b, e - b) += CArr<T>(dout + b, e - b) * CArr<T>(out + b, e - b);
  });
}
template <typename T>
void log_forward(T* out, const T* in, int64_t n) {
  parallel_chunks(
      n, [&](int64_t b, int64_t e) { Arr<T>(out + b, e - b) = CArr<T>(in + b, e - b).log(); });
}
template <typename T>
void log_backward(T* din, const T* in, const T* dout, int64_t n) {
  parallel_chunks(n, [&](int64_t b, int64_t e) {
    Arr<T>(din + b, e - b) += CArr<T>(dout + b, e - b) / CArr<T>(in + b, e - b);
  });
}

// ---- row ops ----

template <typename T>
void softmax_forward(T* out, const T* in, int64_t N, int64_t C) {
  parallel_rows(N, C, [&](int64_t i) {
    const CArr<T> x(in + i * C, C);
    Arr<T> y(out + i * C, C);
    const T mx = C > 0 ? x.maxCoeff() : T(0);
    y = (x - mx).exp();
    y *= T(1) / y.sum();
  });
}
template <typename T>
void softmax_backward(T* din, const T* out, const T* dout, int64_t N, int64_t C) {
  parallel_rows(N, C, [&](int64_t i) {
    const CArr<T> y(out + i * C, C), dy(dout + i * C, C);
    const T dot = (y * dy).sum();
    Arr<T>(din + i * C, C) += y * (dy - dot);
  });
}
template <typename T>
void log_softmax_forward(T* out, const T* in, int64_t N, int64_t C) {
  parallel_rows(N, C, [&](int64_t i) {
    const CArr<T> x(in + i * C, C);
    const T mx = C > 0 ? x.maxCoeff() : T(0);
    const T lse = mx + std::log((x - mx).exp().sum());
    Arr<T>(out + i * C, C) = x - lse;
  });
}
template <typename T>
void log_softmax_backward(T* din, const T* out, const T* dout, int64_t N, int64_t C) {
  parallel_rows(N, C, [&](int64_t i) {
    const CArr<T> y(out + i * C, C), dy(dout + i * C, C);
    const T s = dy.sum();
    Arr<T>(din + i * C, C) += dy - y.exp() * s;
  });
}

template <typename T>
void layernorm_forward(T* out, T* mean, T* rstd, const T* in, const T* w, const T* b, int64_t N,
                       int64_t C, T eps) {
  const CArr<T> wa(w, C), ba(b, C);
  parallel_rows(N, C, [&](int64_t i) {
    const CArr<T> x(in + i * C, C);
    const T m = x.sum() / T(C);
    const T var = (x - m).square().sum() / T(C);
    const T r = T(1) / std::sqrt(var + eps);
    Arr<T>(out + i * C, C) = (x - m) * r * wa + ba;
    mean[i] = m;
    rstd[i] = r;
  });
}

template <typename T>
void layernorm_backward(T* din, T* dw, T* db, const T* dout, const T* in, const T* w, const T* mean,
                        const T* rstd, int64_t N, int64_t C) {
  const CArr<T> wa(w, C);
  const bool par = N * C >= kParallelElems && N >= 2 && !omp_in_parallel();
  const int nt = par ? omp_get_max_threads() : 1;
  // Per-thread partial sums for dw/db, reduced in a fixed order (deterministic).
  std::vector<T> part_w((dw ? nt : 0) * C, T(0)), part_b((db ? nt : 0) * C, T(0));
#pragma omp parallel num_threads(nt) if (par)
  {
    const int t = omp_get_thread_num();
    Eigen::Array<T, Eigen::Dynamic, 1> norm(C), dnorm(C);
#pragma omp for schedule(static)
    for (int64_t i = 0; i < N; ++i) {
      const CArr<T> x(in + i * C, C), dy(dout + i * C, C);
      norm = (x - mean[i]) * rstd[i];
      if (dw) Arr<T>(part_w.data() + t * C, C) += dy * norm;
      if (db) Arr<T>(part_b.data() + t * C, C) += dy;
      if (din) {
        dnorm = wa * dy;
        const T dnorm_mean = dnorm.sum() / T(C);
        const T dnorm_norm_mean = (dnorm * norm).sum() / T(C);
        Arr<T>(din + i * C, C) += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * rstd[i];
      }
    }
  }
  for (int t = 0; t < nt; ++t) {
    if (dw) Arr<T>(dw, C) += Arr<T>(part_w.data() + t * C, C);
    if (db) Arr<T>(db, C) += Arr<T>(part_b.data() + t * C, C);
  }
}

template <typename T>
void sum_rows_accumulate(T* out, const T* in, int64_t N, int64_t C) {
  const bool par = N * C >= kParallelElems && N >= 2 && !omp_in_parallel();
  const int nt = par ? omp_get_max_threads() : 1;
  if (nt == 1) {
    Arr<T> o(out, C);
    for (int64_t i = 0; i < N; ++i) o += CArr<T>(in + i * C, C);
    return;
  }
  std::vector<T> part(nt * C, T(0));
#pragma omp parallel num_threads(nt)
  {
    const int t = omp_get_thread_num();
    Arr<T> p(part.data() + t * C, C);
#pragma omp for schedule(static)
    for (int64_t i = 0; i < N; ++i) p += CArr<T>(in + i * C, C);
  }
  for (int t = 0; t < nt; ++t) Arr<T>(out, C) += Arr<T>(part.data() + t * C, C);
}

// ---- indexing ----

template <typename T>
void embedding_forward(T* out, const T* table, const int64_t* index, int64_t N, int64_t C) {
  parallel_rows(N, C, [&](int64_t i) {
    std::copy(table + index[i] * C, table + index[i] * C + C, out + i * C);
  });
}

template <typename T>
void embedding_backward(T* dtable, const T* dout, const int64_t* index, int64_t N, int64_t C) {
  const bool par = N * C >= kParallelElems && !omp_in_parallel();
  if (!par) {
    for (int64_t i = 0; i < N; ++i) Arr<T>(dtable + index[i] * C, C) += CArr<T>(dout + i * C, C);
    return;
  }
  // Each thread owns the destination rows r with r % nt == t and walks all of index in order,
  // so the sums are race-free and identical to the sequential order.
#pragma omp parallel
  {
    const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
    for (int64_t i = 0; i < N; ++i)
      if (index[i] % nt == t) Arr<T>(dtable + index[i] * C, C) += CArr<T>(dout + i * C, C);
  }
}

// ---- optimizer ----

template <typename T>
void adam_update(T* params, T* m, T* v, const T* grads, int64_t n, T lr, T beta1, T beta2, T eps,
                 T weight_decay, bool decoupled, int64_t t) {
  const T bc1 = T(1) - static_cast<T>(std::pow(static_cast<double>(beta1), static_cast<double>(t)));
  const T bc2 = T(1) - static_cast<T>(std::pow(static_cast<double>(beta2), static_cast<double>(t)));
  parallel_chunks(n, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      T g = grads[i];
      if (!decoupled) g += weight_decay * params[i];
      m[i] = beta1 * m[i] + (T(1) - beta1) * g;
      v[i] = beta2 * v[i] + (T(1) - beta2) * g * g;
      const T mhat = m[i] / bc1, vhat = v[i] / bc2;
      if (decoupled) params[i] -= lr * weight_decay * params[i];
      params[i] -= lr * mhat / (std::sqrt(vhat) + eps);
    }
  });
}

#define GDP_NN_INSTANTIATE_KERNELS(T)                                                            \
  template void matmul_forward<T>(T*, const T*, const T*, int64_t, int64_t, int64_t, bool, bool, \
                                  bool);                                                         \
  template void relu_forward<T>(T*, const T*, int64_t);                                          \
  template void relu_backward<T>(T*, const T*, const T*, int64_t);                               \
  template void gelu_forward<T>(T*, const T*, int64_t);                                          \
  template void gelu_backward<T>(T*, const T*, const T*, int64_t);                               \
  template void tanh_forward<T>(T*, const T*, int64_t);                                          \
  template void tanh_backward<T>(T*, const T*, const T*, int64_t);                               \
  template void sigmoid_forward<T>(T*, const T*, int64_t);                                       \
  template void sigmoid_backward<T>(T*, const T*, const T*, int64_t);                            \
  template void exp_forward<T>(T*, const T*, int64_t);                                           \
  template void exp_backward<T>(T*, const T*, const T*, int64_t);                                \
  template void log_forward<T>(T*, const T*, int64_t);                                           \
  template void log_backward<T>(T*, const T*, const T*, int64_t);                                \
  template void softmax_forward<T>(T*, const T*, int64_t, int64_t);                              \
  template void softmax_backward<T>(T*, const T*, const T*, int64_t, int64_t);                   \
  template void log_softmax_forward<T>(T*, const T*, int64_t, int64_t);                          \
  template void log_softmax_backward<T>(T*, const T*, const T*, int64_t, int64_t);               \
  template void layernorm_forward<T>(T*, T*, T*, const T*, const T*, const T*, int64_t, int64_t, \
                                     T);                                                         \
  template void layernorm_backward<T>(T*, T*, T*, const T*, const T*, const T*, const T*,        \
                                      const T*, int64_t, int64_t);                               \
  template void sum_rows_accumulate<T>(T*, const T*, int64_t, int64_t);                          \
  template void embedding_forward<T>(T*, const T*, const int64_t*, int64_t, int64_t);            \
  template void embedding_backward<T>(T*, const T*, const int64_t*, int64_t, int64_t);           \
  template void adam_update<T>(T*, T*, T*, const T*, int64_t, T, T, T, T, T, bool, int64_t);

GDP_NN_INSTANTIATE_KERNELS(float)
GDP_NN_INSTANTIATE_KERNELS(double)

}  // namespace gdp::nn
