// Element-wise kernels: binary ops (arithmetic, min/max) with an optional row-broadcast
// bias, unary activations, parametrised maps, and scaling; one grid-stride kernel per op
// family, templated on the op.
#include <stdexcept>

#include "cuda/common.cuh"
#include "cuda/kernels.h"

namespace gdp::cuda {

namespace {

enum class Bin { Add, Sub, Mul, Div, Min, Max };
enum class Un { Relu, Gelu, Tanh, Sigmoid, Exp, Log };

// Whether the gradients need the forward inputs a and b (Add/Sub never read them).
template <Bin op>
constexpr bool kReadsInputs = op != Bin::Add&& op != Bin::Sub;

// Min/max: a wins ties (a <= b for min, a >= b for max), as the gradient rule below.
template <Bin op>
__device__ inline bool a_wins(float a, float b) {
  if constexpr (op == Bin::Min) return a <= b;
  return a >= b;
}

template <Bin op>
__device__ inline float bin_apply(float a, float b) {
  if constexpr (op == Bin::Add) return a + b;
  if constexpr (op == Bin::Sub) return a - b;
  if constexpr (op == Bin::Mul) return a * b;
  if constexpr (op == Bin::Div) return a / b;
  return a_wins<op>(a, b) ? a : b;
}

// Gradients of out = a op b w.r.t. a and b, given dout.
template <Bin op>
__device__ inline void bin_grad(float dout, float a, float b, float& ga, float& gb) {
  if constexpr (op == Bin::Add) {
    ga = dout;
    gb = dout;
  } else if constexpr (op == Bin::Sub) {
    ga = dout;
    gb = -dout;
  } else if constexpr (op == Bin::Mul) {
    ga = dout * b;
    gb = dout * a;
  } else if constexpr (op == Bin::Div) {
    ga = dout / b;
    gb = -dout * a / (b * b);
  } else {  // Min, Max: all of dout to the winner
    bool aw = a_wins<op>(a, b);
    ga = aw ? dout : 0.0f;
    gb = aw ? 0.0f : dout;
  }
}

// out (N,C) = a (N,C) op b (N,C, or C when b_is_row).
template <Bin op>
__global__ void binary_forward_kernel(float* out, const float* a, const float* b, std::size_t n,
                                      int C, bool b_is_row) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    float bv = b[b_is_row ? i % C : i];
    out[i] = bin_apply<op>(a[i], bv);
  }
}

// da (N,C) += ga; db (N,C) += gb when !b_is_row. Add/Sub never read a or b.
template <Bin op>
__global__ void binary_backward_kernel(float* da, float* db, const float* dout, const float* a,
                                       const float* b, std::size_t n, int C, bool b_is_row) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    float av = 0.0f, bv = 0.0f;
    if constexpr (kReadsInputs<op>) {
      av = a[i];
      bv = b[b_is_row ? i % C : i];
    }
    float ga, gb;
    bin_grad<op>(dout[i], av, bv, ga, gb);
    if (da) da[i] += ga;
    if (db && !b_is_row) db[i] += gb;
  }
}

// db (C) += sum over rows of gb: a (32 x 8) block owns 32 columns and a slice of rows;
// partial sums meet in shared memory, then one atomicAdd per column per block.
template <Bin op>
__global__ void binary_backward_rowbias_kernel(float* db, const float* dout, const float* a,
                                               const float* b, int N, int C) {
  __shared__ float part[8][33];
  int col = blockIdx.x * 32 + threadIdx.x;
  float acc = 0.0f;
  if (col < C) {
    float bv = 0.0f;
    if constexpr (kReadsInputs<op>) bv = b[col];
    for (int r = blockIdx.y * 8 + threadIdx.y; r < N; r += gridDim.y * 8) {
      std::size_t i = static_cast<std::size_t>(r) * C + col;
      float av = 0.0f;
      if constexpr (kReadsInputs<op>) av = a[i];
      float ga, gb;
      bin_grad<op>(dout[i], av, bv, ga, gb);
      acc += gb;
    }
  }
  part[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && col < C) {
    float s = 0.0f;
    for (int y = 0; y < 8; ++y) s += part[y][threadIdx.x];
    atomicAdd(&db[col], s);
  }
}

template <Bin op>
void binary_forward(float* out, const float* a, const float* b, int N, int C, bool b_is_row) {
  std::size_t n = static_cast<std::size_t>(N) * C;
  if (n == 0) return;
  binary_forward_kernel<op><<<grid_for(n, 256), 256>>>(out, a, b, n, C, b_is_row);
  GDP_CUDA_CHECK_LAUNCH();
}

template <Bin op>
void binary_backward(float* da, float* db, const float* dout, const float* a, const float* b, int N,
                     int C, bool b_is_row) {
  std::size_t n = static_cast<std::size_t>(N) * C;
  if (n == 0) return;
  if (da || (db && !b_is_row)) {
    binary_backward_kernel<op><<<grid_for(n, 256), 256>>>(da, db, dout, a, b, n, C, b_is_row);
    GDP_CUDA_CHECK_LAUNCH();
  }
  if (db && b_is_row) {
    unsigned int gy = ceil_div(static_cast<std::size_t>(N), 8 * 32);
    if (gy > 256) gy = 256;
    dim3 grid(ceil_div(static_cast<std::size_t>(C), 32), gy);
    binary_backward_rowbias_kernel<op><<<grid, dim3(32, 8)>>>(db, dout, a, b, N, C);
    GDP_CUDA_CHECK_LAUNCH();
  }
}

constexpr float kGeluS = 0.7978845608028654f;  // sqrt(2/pi)
constexpr float kGeluA = 0.044715f;

template <Un op>
__device__ inline float un_apply(float x) {
  if constexpr (op == Un::Relu) return x > 0.0f ? x : 0.0f;
  if constexpr (op == Un::Gelu) return 0.5f * x * (1.0f + tanhf(kGeluS * (x + kGeluA * x * x * x)));
  if constexpr (op == Un::Tanh) return tanhf(x);
  if constexpr (op == Un::Sigmoid) return 1.0f / (1.0f + expf(-x));
  if constexpr (op == Un::Exp) return expf(x);
  return logf(x);
}

// f' from the saved tensor s: the input x for Relu, Gelu, Log; the output y otherwise.
template <Un op>
__device__ inline float un_grad(float s) {
  if constexpr (op == Un::Relu) return s > 0.0f ? 1.0f : 0.0f;
  if constexpr (op == Un::Gelu) {
    float t = tanhf(kGeluS * (s + kGeluA * s * s * s));
    return 0.5f * (1.0f + t) + 0.5f * s * (1.0f - t * t) * kGeluS * (1.0f + 3.0f * kGeluA * s * s);
  }
  if constexpr (op == Un::Tanh) return 1.0f - s * s;
  if constexpr (op == Un::Sigmoid) return s * (1.0f - s);
  if constexpr (op == Un::Exp) return s;
  return 1.0f / s;
}

template <Un op>
__global__ void unary_forward_kernel(float* out, const float* x, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    out[i] = un_apply<op>(x[i]);
}

template <Un op>
__global__ void unary_backward_kernel(float* dx, const float* saved, const float* dout,
                                      std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    dx[i] += un_grad<op>(saved[i]) * dout[i];
}

template <Un op>
void unary_forward(float* out, const float* x, std::size_t n) {
  if (n == 0) return;
  unary_forward_kernel<op><<<grid_for(n, 256), 256>>>(out, x, n);
  GDP_CUDA_CHECK_LAUNCH();
}

template <Un op>
void unary_backward(float* dx, const float* saved, const float* dout, std::size_t n) {
  if (n == 0) return;
  unary_backward_kernel<op><<<grid_for(n, 256), 256>>>(dx, saved, dout, n);
  GDP_CUDA_CHECK_LAUNCH();
}

// Parametrised maps f(x; p0, p1) and f'(x) from the forward input (see cuda/kernels.h).
template <MapOp op>
__device__ inline float map_apply(float x, float p0, float p1) {
  if constexpr (op == MapOp::affine) return p0 * x + p1;
  if constexpr (op == MapOp::square) return x * x;
  if constexpr (op == MapOp::sqrt) return sqrtf(x);
  float lo = x < p0 ? p0 : x;  // std::min(std::max(x, p0), p1), as the CPU op
  return p1 < lo ? p1 : lo;
}

template <MapOp op>
__device__ inline float map_grad(float x, float p0, float p1) {
  if constexpr (op == MapOp::affine) return p0;
  if constexpr (op == MapOp::square) return 2.0f * x;
  if constexpr (op == MapOp::sqrt) return 0.5f / sqrtf(x);
  return (x >= p0 && x <= p1) ? 1.0f : 0.0f;
}

template <MapOp op>
__global__ void map_forward_kernel(float* out, const float* x, float p0, float p1, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    out[i] = map_apply<op>(x[i], p0, p1);
}

template <MapOp op>
__global__ void map_backward_kernel(float* dx, const float* x, const float* dout, float p0,
                                    float p1, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    dx[i] += map_grad<op>(x[i], p0, p1) * dout[i];
}

template <MapOp op>
void map_forward_t(float* out, const float* x, float p0, float p1, std::size_t n) {
  map_forward_kernel<op><<<grid_for(n, 256), 256>>>(out, x, p0, p1, n);
  GDP_CUDA_CHECK_LAUNCH();
}

template <MapOp op>
void map_backward_t(float* dx, const float* x, const float* dout, float p0, float p1,
                    std::size_t n) {
  map_backward_kernel<op><<<grid_for(n, 256), 256>>>(dx, x, dout, p0, p1, n);
  GDP_CUDA_CHECK_LAUNCH();
}

// out (n) = s * x (n) when acc is false; out += s * x when acc is true.
__global__ void scale_kernel(float* out, const float* x, float s, std::size_t n, bool acc) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    out[i] = acc ? out[i] + s * x[i] : s * x[i];
}

}  // namespace

void add_forward(float* out, const float* a, const float* b, int N, int C, bool r) {
  binary_forward<Bin::Add>(out, a, b, N, C, r);
}
void sub_forward(float* out, const float* a, const float* b, int N, int C, bool r) {
  binary_forward<Bin::Sub>(out, a, b, N, C, r);
}
void mul_forward(float* out, const float* a, const float* b, int N, int C, bool r) {
  binary_forward<Bin::Mul>(out, a, b, N, C, r);
}
void div_forward(float* out, const float* a, const float* b, int N, int C, bool r) {
  binary_forward<Bin::Div>(out, a, b, N, C, r);
}

void add_backward(float* da, float* db, const float* dout, int N, int C, bool r) {
  binary_backward<Bin::Add>(da, db, dout, nullptr, nullptr, N, C, r);
}
void sub_backward(float* da, float* db, const float* dout, int N, int C, bool r) {
  binary_backward<Bin::Sub>(da, db, dout, nullptr, nullptr, N, C, r);
}
void mul_backward(float* da, float* db, const float* dout, const float* a, const float* b, int N,
                  int C, bool r) {
  binary_backward<Bin::Mul>(da, db, dout, a, b, N, C, r);
}
void div_backward(float* da, float* db, const float* dout, const float* a, const float* b, int N,
                  int C, bool r) {
  binary_backward<Bin::Div>(da, db, dout, a, b, N, C, r);
}

void relu_forward(float* out, const float* x, std::size_t n) { unary_forward<Un::Relu>(out, x, n); }
void gelu_forward(float* out, const float* x, std::size_t n) { unary_forward<Un::Gelu>(out, x, n); }
void tanh_forward(float* out, const float* x, std::size_t n) { unary_forward<Un::Tanh>(out, x, n); }
void sigmoid_forward(float* out, const float* x, std::size_t n) {
  unary_forward<Un::Sigmoid>(out, x, n);
}
void exp_forward(float* out, const float* x, std::size_t n) { unary_forward<Un::Exp>(out, x, n); }
void log_forward(float* out, const float* x, std::size_t n) { unary_forward<Un::Log>(out, x, n); }
void relu_backward(float* dx, const float* x, const float* dout, std::size_t n) {
  unary_backward<Un::Relu>(dx, x, dout, n);
}
void gelu_backward(float* dx, const float* x, const float* dout, std::size_t n) {
  unary_backward<Un::Gelu>(dx, x, dout, n);
}
void tanh_backward(float* dx, const float* y, const float* dout, std::size_t n) {
  unary_backward<Un::Tanh>(dx, y, dout, n);
}
void sigmoid_backward(float* dx, const float* y, const float* dout, std::size_t n) {
  unary_backward<Un::Sigmoid>(dx, y, dout, n);
}
void exp_backward(float* dx, const float* y, const float* dout, std::size_t n) {
  unary_backward<Un::Exp>(dx, y, dout, n);
}
void log_backward(float* dx, const float* x, const float* dout, std::size_t n) {
  unary_backward<Un::Log>(dx, x, dout, n);
}

void scale_forward(float* out, const float* x, float s, std::size_t n) {
  if (n == 0) return;
  scale_kernel<<<grid_for(n, 256), 256>>>(out, x, s, n, false);
  GDP_CUDA_CHECK_LAUNCH();
}
void scale_backward(float* dx, const float* dout, float s, std::size_t n) {
  if (n == 0) return;
  scale_kernel<<<grid_for(n, 256), 256>>>(dx, dout, s, n, true);
  GDP_CUDA_CHECK_LAUNCH();
}

void map_forward(float* out, const float* x, MapOp op, float p0, float p1, std::size_t n) {
  if (n == 0) return;
  switch (op) {
    case MapOp::affine:
      map_forward_t<MapOp::affine>(out, x, p0, p1, n);
      return;
    case MapOp::square:
      map_forward_t<MapOp::square>(out, x, p0, p1, n);
      return;
    case MapOp::sqrt:
      map_forward_t<MapOp::sqrt>(out, x, p0, p1, n);
      return;
    case MapOp::clamp:
      map_forward_t<MapOp::clamp>(out, x, p0, p1, n);
      return;
  }
  throw std::invalid_argument("cuda::map_forward: unknown MapOp");
}

void map_backward(float* dx, const float* x, const float* dout, MapOp op, float p0, float p1,
                  std::size_t n) {
  if (n == 0) return;
  switch (op) {
    case MapOp::affine:
      map_backward_t<MapOp::affine>(dx, x, dout, p0, p1, n);
      return;
    case MapOp::square:
      map_backward_t<MapOp::square>(dx, x, dout, p0, p1, n);
      return;
    case MapOp::sqrt:
      map_backward_t<MapOp::sqrt>(dx, x, dout, p0, p1, n);
      return;
    case MapOp::clamp:
      map_backward_t<MapOp::clamp>(dx, x, dout, p0, p1, n);
      return;
  }
  throw std::invalid_argument("cuda::map_backward: unknown MapOp");
}

void minmax_forward(float* out, const float* a, const float* b, int N, int C, bool r, bool is_max) {
  if (is_max)
    binary_forward<Bin::Max>(out, a, b, N, C, r);
  else
    binary_forward<Bin::Min>(out, a, b, N, C, r);
}

void minmax_backward(float* da, float* db, const float* dout, const float* a, const float* b, int N,
                     int C, bool r, bool is_max) {
  if (is_max)
    binary_backward<Bin::Max>(da, db, dout, a, b, N, C, r);
  else
    binary_backward<Bin::Min>(da, db, dout, a, b, N, C, r);
}

}  // namespace gdp::cuda
