// Optimizer kernel: one fused Adam / AdamW step over the flat parameter arrays (the device
// counterpart of nn::adam_update in nn/kernels.cpp; same operation order).
#include <cmath>

#include "cuda/common.cuh"
#include "cuda/kernels.h"

namespace gdp::cuda {

namespace {

__global__ void adam_update_kernel(float* p, float* m, float* v, const float* g, std::size_t n,
                                   float lr, float beta1, float beta2, float eps,
                                   float weight_decay, bool decoupled, float bc1, float bc2) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    float gi = g[i];
    if (!decoupled) gi += weight_decay * p[i];
    const float mi = beta1 * m[i] + (1.0f - beta1) * gi;
    const float vi = beta2 * v[i] + (1.0f - beta2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    const float mhat = mi / bc1, vhat = vi / bc2;
    float pi = p[i];
    if (decoupled) pi -= lr * weight_decay * pi;
    p[i] = pi - lr * mhat / (sqrtf(vhat) + eps);
  }
}

}  // namespace

void adam_update(float* params, float* m, float* v, const float* grads, std::size_t n, float lr,
                 float beta1, float beta2, float eps, float weight_decay, bool decoupled,
                 long long t) {
  if (n == 0) return;
  // As nn::adam_update: the power in double, rounded to float, then subtracted in float.
  const float bc1 =
      1.0f - static_cast<float>(std::pow(static_cast<double>(beta1), static_cast<double>(t)));
  const float bc2 =
      1.0f - static_cast<float>(std::pow(static_cast<double>(beta2), static_cast<double>(t)));
  constexpr int kBlock = 256;
  adam_update_kernel<<<grid_for(n, kBlock), kBlock>>>(params, m, v, grads, n, lr, beta1, beta2, eps,
                                                      weight_decay, decoupled, bc1, bc2);
  GDP_CUDA_CHECK_LAUNCH();
}

}  // namespace gdp::cuda
