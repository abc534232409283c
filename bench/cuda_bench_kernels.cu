// The CUDA kernel ladder (llm.c style): softmax, layer norm and segment mean each in a
// naive version 1 and faster versions, the layout kernels swap_axes and rel_shift, every
// version checked against a CPU loop and timed with CUDA events (GB/s of minimal traffic),
// plus the cuBLAS GEMM and attention (TFLOP/s) at the policy's sizes. Exits 0 with a
// message when no GPU is visible, 1 on a mismatch.
//
// N = rows (graph nodes), C = features, R = segments, E = CSR entries, BH = heads,
// Tq = queries in a segment, Tk = keys (memory + current), D = head size,
// (A, n0, B, n1, C) = a swap of axes n0 and n1, S = queries, M = memory, P = positions.
#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "cuda/common.cuh"
#include "cuda/kernels.h"

using namespace gdp::cuda;

namespace {

bool g_all_ok = true;

// ------------------------------------------------------------------ timing and checks

// Mean milliseconds of one call of f over `reps` calls, after 3 warm-up calls.
float time_ms(const std::function<void()>& f, int reps = 20) {
  for (int i = 0; i < 3; ++i) f();
  cudaEvent_t start, stop;
  GDP_CUDA_CHECK(cudaEventCreate(&start));
  GDP_CUDA_CHECK(cudaEventCreate(&stop));
  GDP_CUDA_CHECK(cudaEventRecord(start));
  for (int i = 0; i < reps; ++i) f();
  GDP_CUDA_CHECK(cudaEventRecord(stop));
  GDP_CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0.0f;
  GDP_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  GDP_CUDA_CHECK(cudaEventDestroy(start));
  GDP_CUDA_CHECK(cudaEventDestroy(stop));
  return ms / reps;
}

// Counts elements outside atol + rtol*|ref|.
bool close_enough(const std::vector<float>& got, const std::vector<double>& ref, double atol,
                  double rtol) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    double err = std::fabs(double(got[i]) - ref[i]);
    if (!(err <= atol + rtol * std::fabs(ref[i]))) ++bad;
  }
  if (bad) std::printf("    %zu of %zu elements out of tolerance\n", bad, ref.size());
  return bad == 0;
}

// Runs one rung: clears out, calls f once, checks out against ref, times f.
void rung(const char* kernel, const char* version, const std::string& shape, DeviceBuffer& out,
          const std::vector<double>& ref, double bytes, double atol, double rtol,
          const std::function<void()>& f) {
  GDP_CUDA_CHECK(
      cudaMemset(out.data(), 0xff, out.size() * sizeof(float)));  // NaN: unwritten output fails
  f();
  GDP_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> got(out.size());
  out.download(got.data());
  bool ok = close_enough(got, ref, atol, rtol);
  g_all_ok = g_all_ok && ok;
  float ms = time_ms(f);
  std::printf("%-13s %-40s %-22s %9.4f ms %9.1f GB/s  %s\n", kernel, version, shape.c_str(), ms,
              bytes / (ms * 1e-3) / 1e9, ok ? "ok" : "MISMATCH");
}

std::vector<float> random_vec(std::size_t n, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

DeviceBuffer upload(const std::vector<float>& h) {
  DeviceBuffer d(h.size());
  d.upload(h.data());
  return d;
}

// ------------------------------------------------------------------ softmax ladder

// v1: one thread per row, three passes (max, sum, write); neighbouring threads read
// addresses C floats apart, so nothing is coalesced.
__global__ void softmax_v1(float* out, const float* x, int N, int C) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= N) return;
  const float* xr = x + static_cast<std::size_t>(row) * C;
  float m = -FLT_MAX;
  for (int j = 0; j < C; ++j) m = fmaxf(m, xr[j]);
  float s = 0.0f;
  for (int j = 0; j < C; ++j) s += expf(xr[j] - m);
  for (int j = 0; j < C; ++j) out[static_cast<std::size_t>(row) * C + j] = expf(xr[j] - m) / s;
}

// v3: one warp per row, the row held in registers as float4 (kVec per lane, C % 4 == 0,
// C <= 128 kVec): one read and one write of the row, nothing re-read.
template <int kVec>
__global__ void softmax_v3(float* out, const float* x, int N, int C) {
  int row = blockIdx.x * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  int lane = threadIdx.x % kWarp;
  if (row >= N) return;
  const float4* xr = reinterpret_cast<const float4*>(x + static_cast<std::size_t>(row) * C);
  float4* yr = reinterpret_cast<float4*>(out + static_cast<std::size_t>(row) * C);
  int C4 = C / 4;
  float4 v[kVec];
  float m = -FLT_MAX;
#pragma unroll
  for (int t = 0; t < kVec; ++t) {
    int j = lane + t * kWarp;
    if (j < C4) {
      v[t] = xr[j];
      m = fmaxf(m, fmaxf(fmaxf(v[t].x, v[t].y), fmaxf(v[t].z, v[t].w)));
    }
  }
  m = warp_max(m);
  float s = 0.0f;
#pragma unroll
  for (int t = 0; t < kVec; ++t) {
    int j = lane + t * kWarp;
    if (j < C4) {
      v[t].x = expf(v[t].x - m);
      v[t].y = expf(v[t].y - m);
      v[t].z = expf(v[t].z - m);
      v[t].w = expf(v[t].w - m);
      s += (v[t].x + v[t].y) + (v[t].z + v[t].w);
    }
  }
  float inv = 1.0f / warp_sum(s);
#pragma unroll
  for (int t = 0; t < kVec; ++t) {
    int j = lane + t * kWarp;
    if (j < C4) yr[j] = make_float4(v[t].x * inv, v[t].y * inv, v[t].z * inv, v[t].w * inv);
  }
}

void softmax_ladder(int N, int C, std::mt19937& rng) {
  auto x = random_vec(std::size_t(N) * C, rng, -5.0f, 5.0f);
  std::vector<double> ref(x.size());
  for (int i = 0; i < N; ++i) {
    const float* xr = &x[std::size_t(i) * C];
    double m = *std::max_element(xr, xr + C), s = 0;
    for (int j = 0; j < C; ++j) s += std::exp(double(xr[j]) - m);
    for (int j = 0; j < C; ++j) ref[std::size_t(i) * C + j] = std::exp(double(xr[j]) - m) / s;
  }
  DeviceBuffer d_x = upload(x), d_y(x.size());
  double bytes = 2.0 * x.size() * sizeof(float);
  std::string shape = "N=" + std::to_string(N) + " C=" + std::to_string(C);
  rung("softmax", "v1 thread per row, 3 passes", shape, d_y, ref, bytes, 1e-6, 1e-4,
       [&] { softmax_v1<<<ceil_div(N, 128), 128>>>(d_y.data(), d_x.data(), N, C); });
  rung("softmax", "v2 warp per row, online (library)", shape, d_y, ref, bytes, 1e-6, 1e-4,
       [&] { softmax_forward(d_y.data(), d_x.data(), N, C); });
  if (C % 4 == 0 && C <= 128 * 4) {
    rung("softmax", "v3 warp per row, float4 in registers", shape, d_y, ref, bytes, 1e-6, 1e-4,
         [&] {
           if (C <= 128)
             softmax_v3<1><<<rows_grid(N), kRowBlock>>>(d_y.data(), d_x.data(), N, C);
           else
             softmax_v3<4><<<rows_grid(N), kRowBlock>>>(d_y.data(), d_x.data(), N, C);
         });
  }
}

// ------------------------------------------------------------------ layer norm ladder

// v1: one thread per row, three passes (mean, variance, write), uncoalesced.
__global__ void layernorm_v1(float* out, float* mean, float* rstd, const float* x, const float* w,
                             const float* b, int N, int C, float eps) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= N) return;
  const float* xr = x + static_cast<std::size_t>(row) * C;
  float m = 0.0f;
  for (int j = 0; j < C; ++j) m += xr[j];
  m /= C;
  float v = 0.0f;
  for (int j = 0; j < C; ++j) v += (xr[j] - m) * (xr[j] - m);
  float rs = rsqrtf(v / C + eps);
  for (int j = 0; j < C; ++j)
    out[static_cast<std::size_t>(row) * C + j] = (xr[j] - m) * rs * w[j] + b[j];
  mean[row] = m;
  rstd[row] = rs;
}

// v3: one warp per row, row in registers as float4 (C % 4 == 0, C <= 128 kVec).
template <int kVec>
__global__ void layernorm_v3(float* out, float* mean, float* rstd, const float* x, const float* w,
                             const float* b, int N, int C, float eps) {
  int row = blockIdx.x * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  int lane = threadIdx.x % kWarp;
  if (row >= N) return;
  const float4* xr = reinterpret_cast<const float4*>(x + static_cast<std::size_t>(row) * C);
  float4* yr = reinterpret_cast<float4*>(out + static_cast<std::size_t>(row) * C);
  const float4* w4 = reinterpret_cast<const float4*>(w);
  const float4* b4 = reinterpret_cast<const float4*>(b);
  int C4 = C / 4;
  float4 v[kVec];
  float s = 0.0f;
#pragma unroll
  for (int t = 0; t < kVec; ++t) {
    int j = lane + t * kWarp;
    if (j < C4) {
      v[t] = xr[j];
      s += (v[t].x + v[t].y) + (v[t].z + v[t].w);
    }
  }
  float m = warp_sum(s) / C;
  float q = 0.0f;
#pragma unroll
  for (int t = 0; t < kVec; ++t) {
    int j = lane + t * kWarp;
    if (j < C4) {
      v[t].x -= m;
      v[t].y -= m;
      v[t].z -= m;
      v[t].w -= m;
      q += (v[t].x * v[t].x + v[t].y * v[t].y) + (v[t].z * v[t].z + v[t].w * v[t].w);
    }
  }
  float rs = rsqrtf(warp_sum(q) / C + eps);
#pragma unroll
  for (int t = 0; t < kVec; ++t) {
    int j = lane + t * kWarp;
    if (j < C4) {
      float4 ww = w4[j], bb = b4[j];
      yr[j] = make_float4(v[t].x * rs * ww.x + bb.x, v[t].y * rs * ww.y + bb.y,
                          v[t].z * rs * ww.z + bb.z, v[t].w * rs * ww.w + bb.w);
    }
  }
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = rs;
  }
}

void layernorm_ladder(int N, int C, std::mt19937& rng) {
  const float eps = 1e-5f;
  auto x = random_vec(std::size_t(N) * C, rng, -2.0f, 3.0f), w = random_vec(C, rng),
       b = random_vec(C, rng);
  std::vector<double> ref(x.size());
  for (int i = 0; i < N; ++i) {
    const float* xr = &x[std::size_t(i) * C];
    double m = 0, v = 0;
    for (int j = 0; j < C; ++j) m += xr[j];
    m /= C;
    for (int j = 0; j < C; ++j) v += (xr[j] - m) * (xr[j] - m);
    double rs = 1.0 / std::sqrt(v / C + eps);
    for (int j = 0; j < C; ++j) ref[std::size_t(i) * C + j] = (xr[j] - m) * rs * w[j] + b[j];
  }
  DeviceBuffer d_x = upload(x), d_w = upload(w), d_b = upload(b), d_y(x.size()), d_m(N), d_r(N);
  double bytes = 2.0 * x.size() * sizeof(float) + 2.0 * N * sizeof(float);
  std::string shape = "N=" + std::to_string(N) + " C=" + std::to_string(C);
  rung("layernorm", "v1 thread per row, 3 passes", shape, d_y, ref, bytes, 1e-4, 1e-4, [&] {
    layernorm_v1<<<ceil_div(N, 128), 128>>>(d_y.data(), d_m.data(), d_r.data(), d_x.data(),
                                            d_w.data(), d_b.data(), N, C, eps);
  });
  rung("layernorm", "v2 warp per row, 3 reads (library)", shape, d_y, ref, bytes, 1e-4, 1e-4, [&] {
    layernorm_forward(d_y.data(), d_m.data(), d_r.data(), d_x.data(), d_w.data(), d_b.data(), N, C,
                      eps);
  });
  if (C % 4 == 0 && C <= 128 * 4) {
    rung("layernorm", "v3 warp per row, float4 in registers", shape, d_y, ref, bytes, 1e-4, 1e-4,
         [&] {
           if (C <= 128)
             layernorm_v3<1><<<rows_grid(N), kRowBlock>>>(
                 d_y.data(), d_m.data(), d_r.data(), d_x.data(), d_w.data(), d_b.data(), N, C, eps);
           else
             layernorm_v3<4><<<rows_grid(N), kRowBlock>>>(
                 d_y.data(), d_m.data(), d_r.data(), d_x.data(), d_w.data(), d_b.data(), N, C, eps);
         });
  }
}

// ------------------------------------------------------------------ segment mean ladder

// v1: one thread per segment looping over all columns: uncoalesced gathers.
__global__ void segment_mean_v1(float* out, const float* x, const int* row_ptr, const int* col_idx,
                                int R, int C) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= R) return;
  int e0 = row_ptr[r], e1 = row_ptr[r + 1];
  float inv = e1 > e0 ? 1.0f / (e1 - e0) : 0.0f;
  for (int c = 0; c < C; ++c) {
    float acc = 0.0f;
    for (int e = e0; e < e1; ++e) acc += x[static_cast<std::size_t>(col_idx[e]) * C + c];
    out[static_cast<std::size_t>(r) * C + c] = acc * inv;
  }
}

// v3: one warp per segment, float4 columns (C % 4 == 0, C <= 128 kVec); the warp loads 32
// neighbour ids at once and broadcasts them with shuffles, so each neighbour row is one
// coalesced 16-byte-per-lane read.
template <int kVec>
__global__ void segment_mean_v3(float* out, const float* x, const int* row_ptr, const int* col_idx,
                                int R, int C) {
  int r = blockIdx.x * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  int lane = threadIdx.x % kWarp;
  if (r >= R) return;
  int e0 = row_ptr[r], e1 = row_ptr[r + 1];
  int C4 = C / 4;
  float4 acc[kVec];
#pragma unroll
  for (int t = 0; t < kVec; ++t) acc[t] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  for (int base = e0; base < e1; base += kWarp) {
    int mine = base + lane < e1 ? col_idx[base + lane] : 0;
    int cnt = min(kWarp, e1 - base);
    for (int t = 0; t < cnt; ++t) {
      int nb = __shfl_sync(0xffffffffu, mine, t);
      const float4* xr = reinterpret_cast<const float4*>(x + static_cast<std::size_t>(nb) * C);
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        int j = lane + k * kWarp;
        if (j < C4) {
          float4 v = xr[j];
          acc[k].x += v.x;
          acc[k].y += v.y;
          acc[k].z += v.z;
          acc[k].w += v.w;
        }
      }
    }
  }
  float inv = e1 > e0 ? 1.0f / (e1 - e0) : 0.0f;
  float4* yr = reinterpret_cast<float4*>(out + static_cast<std::size_t>(r) * C);
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    int j = lane + k * kWarp;
    if (j < C4) yr[j] = make_float4(acc[k].x * inv, acc[k].y * inv, acc[k].z * inv, acc[k].w * inv);
  }
}

void segment_mean_ladder(int R, int C, int max_deg, std::mt19937& rng) {
  std::vector<int> row_ptr = {0}, col_idx;
  std::uniform_int_distribution<int> deg(0, max_deg), node(0, R - 1);
  for (int r = 0; r < R; ++r) {
    int d = deg(rng);
    for (int e = 0; e < d; ++e) col_idx.push_back(node(rng));
    row_ptr.push_back(static_cast<int>(col_idx.size()));
  }
  auto x = random_vec(std::size_t(R) * C, rng);
  std::vector<double> ref(std::size_t(R) * C, 0.0);
  for (int r = 0; r < R; ++r) {
    int e0 = row_ptr[r], e1 = row_ptr[r + 1];
    for (int e = e0; e < e1; ++e)
      for (int c = 0; c < C; ++c) ref[std::size_t(r) * C + c] += x[std::size_t(col_idx[e]) * C + c];
    if (e1 > e0)
      for (int c = 0; c < C; ++c) ref[std::size_t(r) * C + c] /= (e1 - e0);
  }
  DeviceBuffer d_x = upload(x), d_y(ref.size());
  DeviceIndexBuffer d_rp(row_ptr.size()), d_ci(std::max<std::size_t>(col_idx.size(), 1));
  d_rp.upload(row_ptr.data());
  if (!col_idx.empty()) copy_to_device(d_ci.data(), col_idx.data(), col_idx.size());
  std::size_t E = col_idx.size();
  double bytes =
      (double(E) * C + double(R) * C) * sizeof(float) + (double(E) + R + 1) * sizeof(int);
  std::string shape =
      "R=" + std::to_string(R) + " C=" + std::to_string(C) + " E=" + std::to_string(E);
  rung("segment_mean", "v1 thread per segment", shape, d_y, ref, bytes, 1e-5, 1e-5, [&] {
    segment_mean_v1<<<ceil_div(R, 128), 128>>>(d_y.data(), d_x.data(), d_rp.data(), d_ci.data(), R,
                                               C);
  });
  rung("segment_mean", "v2 warp per segment (library)", shape, d_y, ref, bytes, 1e-5, 1e-5,
       [&] { segment_mean_forward(d_y.data(), d_x.data(), d_rp.data(), d_ci.data(), R, C); });
  if (C % 4 == 0 && C <= 128 * 4) {
    rung("segment_mean", "v3 warp per segment, float4, shuffled ids", shape, d_y, ref, bytes, 1e-5,
         1e-5, [&] {
           if (C <= 128)
             segment_mean_v3<1><<<rows_grid(R), kRowBlock>>>(d_y.data(), d_x.data(), d_rp.data(),
                                                             d_ci.data(), R, C);
           else
             segment_mean_v3<4><<<rows_grid(R), kRowBlock>>>(d_y.data(), d_x.data(), d_rp.data(),
                                                             d_ci.data(), R, C);
         });
  }
}

// ------------------------------------------------------------------ layout: swap_axes, rel_shift

// v1: one thread per output element, its source found by div/mod; reads stride n1*C
// floats apart when C is 1 (a plain transpose), so nothing is coalesced then.
__global__ void swap_axes_v1(float* out, const float* x, std::size_t n, int n0, int B, int n1,
                             int C) {
  std::size_t o = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (o >= n) return;
  std::size_t c = o % C, t = o / C;
  std::size_t i = t % n0;
  t /= n0;
  std::size_t b = t % B;
  t /= B;
  std::size_t j = t % n1, a = t / n1;
  out[o] = x[(((a * n0 + i) * B + b) * n1 + j) * C + c];
}

void swap_axes_ladder(int A, int n0, int B, int n1, int C, std::mt19937& rng) {
  std::size_t n = std::size_t(A) * n0 * B * n1 * C;
  auto x = random_vec(n, rng);
  std::vector<double> ref(n);
  for (int a = 0; a < A; ++a)
    for (int i = 0; i < n0; ++i)
      for (int b = 0; b < B; ++b)
        for (int j = 0; j < n1; ++j)
          for (int c = 0; c < C; ++c)
            ref[(((std::size_t(a) * n1 + j) * B + b) * n0 + i) * C + c] =
                x[(((std::size_t(a) * n0 + i) * B + b) * n1 + j) * C + c];
  DeviceBuffer d_x = upload(x), d_y(n);
  double bytes = 2.0 * n * sizeof(float);
  std::string shape = "(" + std::to_string(A) + "," + std::to_string(n0) + "," + std::to_string(B) +
                      "," + std::to_string(n1) + "," + std::to_string(C) + ")";
  rung("swap_axes", "v1 thread per output, div/mod", shape, d_y, ref, bytes, 0.0, 0.0,
       [&] { swap_axes_v1<<<ceil_div(n, 256), 256>>>(d_y.data(), d_x.data(), n, n0, B, n1, C); });
  rung("swap_axes", "v2 grid-stride; 32x32 smem tiles if C=B=1", shape, d_y, ref, bytes, 0.0, 0.0,
       [&] { swap_axes(d_y.data(), d_x.data(), A, n0, B, n1, C, false); });
}

// Transformer-XL relative shift of the position scores (BH,S,P) onto the keys (BH,S,K),
// with the causal base (P = M + S, base = M) or the full-mask one (P = M + 2S - 1).
void rel_shift_bench(int BH, int S, int M, bool full, std::mt19937& rng) {
  const int K = M + S, P = full ? M + 2 * S - 1 : M + S, base = full ? M + S - 1 : M;
  const float scale = 0.125f;
  std::size_t nout = std::size_t(BH) * S * K, nbd = std::size_t(BH) * S * P;
  auto bd = random_vec(nbd, rng);
  std::vector<double> ref(nout, 0.0);
  for (int b = 0; b < BH; ++b)
    for (int i = 0; i < S; ++i)
      for (int j = 0; j < K; ++j) {
        long long p = static_cast<long long>(base) + i - j;
        if (p >= 0 && p < P)
          ref[(std::size_t(b) * S + i) * K + j] = scale * bd[(std::size_t(b) * S + i) * P + p];
      }
  DeviceBuffer d_bd = upload(bd), d_y(nout);
  double bytes = double(nout + nbd) * sizeof(float);
  char shape[64];
  std::snprintf(shape, sizeof shape, "BH=%d S=%d K=%d P=%d", BH, S, K, P);
  rung("rel_shift", full ? "forward, full-mask base (library)" : "forward, causal base (library)",
       shape, d_y, ref, bytes, 0.0, 0.0,
       [&] { rel_shift_forward(d_y.data(), d_bd.data(), BH, S, K, P, base, scale); });
}

// ------------------------------------------------------------------ GEMM and attention

// Row-major C (M,N) = A (M,K) B (K,N); checks the first rows against the CPU, prints TFLOP/s.
void gemm_bench(int M, int N, int K, std::mt19937& rng) {
  auto A = random_vec(std::size_t(M) * K, rng), B = random_vec(std::size_t(K) * N, rng);
  DeviceBuffer d_A = upload(A), d_B = upload(B), d_C(std::size_t(M) * N);
  gemm(d_C.data(), d_A.data(), d_B.data(), M, N, K, false, false);
  std::vector<float> C(std::size_t(M) * N);
  d_C.download(C.data());
  int check_rows = std::min(M, 64);
  std::vector<double> ref(std::size_t(check_rows) * N, 0.0);
  for (int i = 0; i < check_rows; ++i)
    for (int k = 0; k < K; ++k)
      for (int j = 0; j < N; ++j)
        ref[std::size_t(i) * N + j] +=
            double(A[std::size_t(i) * K + k]) * B[std::size_t(k) * N + j];
  bool ok = close_enough(std::vector<float>(C.begin(), C.begin() + ref.size()), ref, 1e-3, 1e-4);
  g_all_ok = g_all_ok && ok;
  float ms = time_ms([&] { gemm(d_C.data(), d_A.data(), d_B.data(), M, N, K, false, false); });
  std::printf("%-13s %-40s M=%d N=%d K=%-8d %9.4f ms %9.2f TFLOP/s  %s\n", "gemm",
              "cuBLAS sgemm, row-major", M, N, K, ms, 2.0 * M * N * K / (ms * 1e-3) / 1e12,
              ok ? "ok" : "MISMATCH");
}

// One segment step of the placement network's attention: forward, then backward.
void attention_bench(int BH, int Tq, int Tm, int D, std::mt19937& rng) {
  int Tk = Tm + Tq;
  std::size_t nq = std::size_t(BH) * Tq * D, nk = std::size_t(BH) * Tk * D,
              na = std::size_t(BH) * Tq * Tk;
  auto q = random_vec(nq, rng), k = random_vec(nk, rng), v = random_vec(nk, rng),
       bias = random_vec(na, rng);
  DeviceBuffer d_q = upload(q), d_k = upload(k), d_v = upload(v), d_bias = upload(bias),
               d_g = upload(q);
  DeviceBuffer d_out(nq), d_att(na), d_scr(na), d_dq(nq), d_dk(nk), d_dv(nk), d_db(na);
  // check the output of query row 0 of head 0 (causal: sees memory + itself)
  attention_forward(d_out.data(), d_att.data(), d_q.data(), d_k.data(), d_v.data(), d_bias.data(),
                    BH, Tq, Tk, D, true);
  std::vector<float> out(nq);
  d_out.download(out.data());
  std::vector<double> ref(D, 0.0);
  {
    int visible = Tm + 1;
    std::vector<double> s(visible);
    double m = -1e300, z = 0;
    for (int j = 0; j < visible; ++j) {
      double dot = 0;
      for (int d = 0; d < D; ++d) dot += double(q[d]) * k[std::size_t(j) * D + d];
      s[j] = dot / std::sqrt(double(D)) + bias[j];
      m = std::max(m, s[j]);
    }
    for (int j = 0; j < visible; ++j) z += std::exp(s[j] - m);
    for (int j = 0; j < visible; ++j)
      for (int d = 0; d < D; ++d) ref[d] += std::exp(s[j] - m) / z * v[std::size_t(j) * D + d];
  }
  bool ok = close_enough(std::vector<float>(out.begin(), out.begin() + D), ref, 1e-5, 1e-4);
  g_all_ok = g_all_ok && ok;
  double gemm_flops = 2.0 * 2.0 * BH * Tq * Tk * D;  // QK^T and PV
  float fwd = time_ms([&] {
    attention_forward(d_out.data(), d_att.data(), d_q.data(), d_k.data(), d_v.data(), d_bias.data(),
                      BH, Tq, Tk, D, true);
  });
  float bwd = time_ms([&] {
    attention_backward(d_dq.data(), d_dk.data(), d_dv.data(), d_db.data(), d_scr.data(), d_g.data(),
                       d_q.data(), d_k.data(), d_v.data(), d_att.data(), BH, Tq, Tk, D);
  });
  char shape[64];
  std::snprintf(shape, sizeof shape, "BH=%d Tq=%d Tk=%d D=%d", BH, Tq, Tk, D);
  std::printf("%-13s %-40s %-22s %9.4f ms %9.2f TFLOP/s  %s\n", "attention",
              "forward (cuBLAS + mask/softmax)", shape, fwd, gemm_flops / (fwd * 1e-3) / 1e12,
              ok ? "ok" : "MISMATCH");
  std::printf("%-13s %-40s %-22s %9.4f ms %9.2f TFLOP/s\n", "attention",
              "backward (4 GEMMs + softmax bwd)", shape, bwd,
              2.0 * gemm_flops / (bwd * 1e-3) / 1e12);
}

}  // namespace

int main() {
  if (cuda_device_count() == 0) {
    std::printf("cuda_bench_kernels: no CUDA GPU visible (%s); nothing to measure.\n",
                cuda_last_error_string().c_str());
    return 0;
  }
  try {
    std::printf("device: %s\n", cuda_device_name(0).c_str());
    std::printf("%-13s %-40s %-22s %12s %14s\n", "kernel", "version", "shape", "time", "rate");
    std::mt19937 rng(2024);
    softmax_ladder(50000, 128, rng);    // node-feature rows
    softmax_ladder(4 * 256, 512, rng);  // attention scores: 4 heads x 256 queries x 512 keys
    softmax_ladder(4097, 1000, rng);    // odd row count, C not a multiple of 128
    layernorm_ladder(50000, 128, rng);
    layernorm_ladder(4 * 256, 512, rng);
    segment_mean_ladder(50000, 128, 8, rng);
    segment_mean_ladder(50000, 128, 32, rng);
    swap_axes_ladder(1, 4096, 1, 4097, 1, rng);  // a plain transpose, odd width
    swap_axes_ladder(1, 4096, 1, 8, 64, rng);    // split (S, H, Dh) into heads (H, S, Dh)
    swap_axes_ladder(4, 1000, 8, 7, 3, rng);     // general swap, small C
    rel_shift_bench(4 * 8, 256, 256, false, rng);
    rel_shift_bench(4 * 8, 256, 256, true, rng);
    gemm_bench(50000, 128, 128, rng);   // node-embedding linear layer
    gemm_bench(4096, 4096, 4096, rng);  // square reference point
    attention_bench(4, 256, 256, 32, rng);
    synchronize();
  } catch (const std::exception& e) {
    std::printf("cuda_bench_kernels: %s\n", e.what());
    return 1;
  }
  std::printf(g_all_ok ? "ALL VERSIONS MATCH THE CPU REFERENCE\n"
                       : "SOME VERSIONS MISMATCH (see above)\n");
  return g_all_ok ? 0 : 1;
}
