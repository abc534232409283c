// Masked multi-head attention of a query block over [memory; current] keys (the
// Transformer-XL segment step): cuBLAS strided-batched GEMMs for QK^T, PV and the
// backward products, plus one warp-per-row kernel for bias + mask + softmax and one for
// its backward. Derivation: docs/cuda.md.
#include <cfloat>
#include <cmath>

#include "cuda/common.cuh"
#include "cuda/kernels.h"

namespace gdp::cuda {

namespace {

// In place on att (BH*Tq rows of Tk): att = softmax(att + pos_bias) over the keys a query
// may see; masked keys get probability 0. Query i sees keys j <= (Tk-Tq) + i if causal.
__global__ void attention_softmax_kernel(float* att, const float* pos_bias, int rows, int Tq,
                                         int Tk, bool causal) {
  int r = blockIdx.x * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  int lane = threadIdx.x % kWarp;
  if (r >= rows) return;
  int i = r % Tq;
  int visible = causal ? (Tk - Tq) + i + 1 : Tk;  // keys [0, visible)
  std::size_t off = static_cast<std::size_t>(r) * Tk;
  float* a = att + off;
  const float* pb = pos_bias ? pos_bias + off : nullptr;
  float m = -FLT_MAX, s = 0.0f;
  for (int j = lane; j < visible; j += kWarp) {
    float v = a[j] + (pb ? pb[j] : 0.0f);
    if (v > m) {
      s *= expf(m - v);
      m = v;
    }
    s += expf(v - m);
  }
  float wm = warp_max(m);
  s = warp_sum(s * expf(m - wm));
  m = wm;
  float inv = s > 0.0f ? 1.0f / s : 0.0f;
  for (int j = lane; j < Tk; j += kWarp)
    a[j] = j < visible ? expf(a[j] + (pb ? pb[j] : 0.0f) - m) * inv : 0.0f;
}

// In place on datt (rows of Tk): dscore = att * (datt - <datt, att>); dpos_bias += dscore.
__global__ void attention_softmax_backward_kernel(float* datt, float* dpos_bias, const float* att,
                                                  int rows, int Tk) {
  int r = blockIdx.x * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  int lane = threadIdx.x % kWarp;
  if (r >= rows) return;
  std::size_t off = static_cast<std::size_t>(r) * Tk;
  float* g = datt + off;
  const float* p = att + off;
  float dot = 0.0f;
  for (int j = lane; j < Tk; j += kWarp) dot += g[j] * p[j];
  dot = warp_sum(dot);
  for (int j = lane; j < Tk; j += kWarp) {
    float d = p[j] * (g[j] - dot);
    g[j] = d;
    if (dpos_bias) dpos_bias[off + j] += d;
  }
}

void check_sizes(int BH, int Tq, int Tk, int D, bool causal) {
  if (BH < 0 || Tq < 0 || Tk < 0 || D <= 0)
    throw std::invalid_argument("attention: need BH, Tq, Tk >= 0 and D > 0");
  if (causal && Tk < Tq) throw std::invalid_argument("attention: causal masking needs Tk >= Tq");
}

}  // namespace

void attention_forward(float* out, float* att, const float* q, const float* k, const float* v,
                       const float* pos_bias, int BH, int Tq, int Tk, int D, bool causal) {
  check_sizes(BH, Tq, Tk, D, causal);
  if (BH == 0 || Tq == 0) return;
  long long sq = static_cast<long long>(Tq) * D, sk = static_cast<long long>(Tk) * D;
  long long sa = static_cast<long long>(Tq) * Tk;
  float scale = 1.0f / std::sqrt(static_cast<float>(D));
  // att (Tq,Tk) = scale * q (Tq,D) k^T (D,Tk), per head
  gemm_strided_batched(att, q, k, BH, Tq, Tk, D, false, true, scale, 0.0f, sq, sk, sa);
  int rows = BH * Tq;
  attention_softmax_kernel<<<rows_grid(rows), kRowBlock>>>(att, pos_bias, rows, Tq, Tk, causal);
  GDP_CUDA_CHECK_LAUNCH();
  // out (Tq,D) = att (Tq,Tk) v (Tk,D)
  gemm_strided_batched(out, att, v, BH, Tq, D, Tk, false, false, 1.0f, 0.0f, sa, sk, sq);
}

void attention_backward(float* dq, float* dk, float* dv, float* dpos_bias, float* scratch,
                        const float* dout, const float* q, const float* k, const float* v,
                        const float* att, int BH, int Tq, int Tk, int D) {
  check_sizes(BH, Tq, Tk, D, false);
  if (BH == 0 || Tq == 0) return;
  long long sq = static_cast<long long>(Tq) * D, sk = static_cast<long long>(Tk) * D;
  long long sa = static_cast<long long>(Tq) * Tk;
  float scale = 1.0f / std::sqrt(static_cast<float>(D));
  // datt (Tq,Tk) = dout (Tq,D) v^T (D,Tk)
  gemm_strided_batched(scratch, dout, v, BH, Tq, Tk, D, false, true, 1.0f, 0.0f, sq, sk, sa);
  // dv (Tk,D) += att^T (Tk,Tq) dout (Tq,D)
  gemm_strided_batched(dv, att, dout, BH, Tk, D, Tq, true, false, 1.0f, 1.0f, sa, sq, sk);
  int rows = BH * Tq;
  attention_softmax_backward_kernel<<<rows_grid(rows), kRowBlock>>>(scratch, dpos_bias, att, rows,
                                                                    Tk);
  GDP_CUDA_CHECK_LAUNCH();
  // dq (Tq,D) += scale * dscore (Tq,Tk) k (Tk,D);  dk (Tk,D) += scale * dscore^T (Tk,Tq) q (Tq,D)
  gemm_strided_batched(dq, scratch, k, BH, Tq, D, Tk, false, false, scale, 1.0f, sa, sk, sq);
  gemm_strided_batched(dk, scratch, q, BH, Tk, D, Tq, true, false, scale, 1.0f, sa, sq, sk);
}

}  // namespace gdp::cuda
