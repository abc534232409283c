// Layout kernels: strided 2-D block copies, axis swaps, broadcast ("expand") and the
// Transformer-XL relative shift. They move data, they compute nothing, so each is one
// grid-stride loop over its output with 64-bit index math.
//
// A, B, C = the untouched leading, middle and trailing blocks of a swap; n0, n1 = the
// swapped axes; BH = batch*heads, S = queries, K = keys, P = relative positions.
#include <stdexcept>
#include <string>

#include "cuda/common.cuh"
#include "cuda/kernels.h"

namespace gdp::cuda {

namespace {

// dst[r * ld_dst + c] = (or +=) src[r * ld_src + c]; one thread per element of the block.
__global__ void copy_2d_kernel(float* dst, std::size_t ld_dst, const float* src, std::size_t ld_src,
                               std::size_t n, std::size_t cols, bool accumulate) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    std::size_t r = i / cols, c = i % cols;
    float v = src[r * ld_src + c];
    float* d = dst + r * ld_dst + c;
    *d = accumulate ? *d + v : v;
  }
}

// out (A,n1,B,n0,C) [a,j,b,i,c] = (or +=) x (A,n0,B,n1,C) [a,i,b,j,c]; one thread per
// output element, so writes are coalesced and reads are too whenever C is not tiny.
__global__ void swap_axes_kernel(float* out, const float* x, std::size_t n, std::size_t n0,
                                 std::size_t B, std::size_t n1, std::size_t C, bool accumulate) {
  for (std::size_t o = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; o < n;
       o += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    std::size_t c = o % C, t = o / C;
    std::size_t i = t % n0;
    t /= n0;
    std::size_t b = t % B;
    t /= B;
    std::size_t j = t % n1, a = t / n1;
    float v = x[(((a * n0 + i) * B + b) * n1 + j) * C + c];
    out[o] = accumulate ? out[o] + v : v;
  }
}

// The C == 1, B == 1 case is a batched transpose (A, n0, n1) -> (A, n1, n0): 32x32 tiles
// through shared memory (one padding column against bank conflicts), so both the reads
// and the writes are coalesced. Block (32, 8); a grid-stride loop over all tiles.
constexpr int kTile = 32;
constexpr int kTileRows = 8;

__global__ void transpose_tiled_kernel(float* out, const float* x, std::size_t A, int n0, int n1,
                                       bool accumulate) {
  __shared__ float tile[kTile][kTile + 1];
  std::size_t tiles0 = (static_cast<std::size_t>(n0) + kTile - 1) / kTile;
  std::size_t tiles1 = (static_cast<std::size_t>(n1) + kTile - 1) / kTile;
  std::size_t tiles = A * tiles0 * tiles1;
  for (std::size_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    std::size_t a = t / (tiles0 * tiles1), rest = t % (tiles0 * tiles1);
    int i0 = static_cast<int>(rest / tiles1) * kTile;  // first row of x in this tile (axis n0)
    int j0 = static_cast<int>(rest % tiles1) * kTile;  // first column of x (axis n1)
    const float* xa = x + a * n0 * n1;
    float* oa = out + a * n0 * n1;
    // read x[a, i0 + r, j0 + tx] into tile[r][tx]
    for (int r = threadIdx.y; r < kTile; r += kTileRows) {
      int i = i0 + r, j = j0 + static_cast<int>(threadIdx.x);
      if (i < n0 && j < n1) tile[r][threadIdx.x] = xa[static_cast<std::size_t>(i) * n1 + j];
    }
    __syncthreads();
    // write out[a, j0 + r, i0 + tx] = tile[tx][r]
    for (int r = threadIdx.y; r < kTile; r += kTileRows) {
      int j = j0 + r, i = i0 + static_cast<int>(threadIdx.x);
      if (i < n0 && j < n1) {
        float v = tile[threadIdx.x][r];
        float* d = oa + static_cast<std::size_t>(j) * n0 + i;
        *d = accumulate ? *d + v : v;
      }
    }
    __syncthreads();  // the tile is reused by the next iteration
  }
}

// out (dims...) [o] = x[sum_k i_k * x_strides[k]], o = the row-major index of (i_0..i_{d-1}).
__device__ inline long long broadcast_source(std::size_t o, const BroadcastShape& s) {
  long long off = 0;
  for (int k = s.ndim - 1; k >= 0; --k) {
    std::size_t d = static_cast<std::size_t>(s.dims[k]);
    off += static_cast<long long>(o % d) * s.x_strides[k];
    o /= d;
  }
  return off;
}

__global__ void expand_forward_kernel(float* out, const float* x, BroadcastShape shape,
                                      std::size_t n) {
  for (std::size_t o = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; o < n;
       o += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    out[o] = x[broadcast_source(o, shape)];
}

// dx[source(o)] += dout[o]; atomics because broadcast elements share their source.
__global__ void expand_backward_kernel(float* dx, const float* dout, BroadcastShape shape,
                                       std::size_t n) {
  for (std::size_t o = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; o < n;
       o += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    atomicAdd(&dx[broadcast_source(o, shape)], dout[o]);
}

// out (BH,S,K) [b,i,j] = scale * bd (BH,S,P) [b,i,base+i-j] inside [0, P), else 0.
__global__ void rel_shift_forward_kernel(float* out, const float* bd, std::size_t n, int S, int K,
                                         int P, int base, float scale) {
  for (std::size_t o = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; o < n;
       o += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    std::size_t t = o / K;  // = b * S + i
    long long j = static_cast<long long>(o % K), i = static_cast<long long>(t % S);
    long long p = static_cast<long long>(base) + i - j;
    out[o] = (p >= 0 && p < P) ? scale * bd[t * P + static_cast<std::size_t>(p)] : 0.0f;
  }
}

// dbd[b,i,base+i-j] += scale * dout[b,i,j]; within a row (b,i) the map j -> p is one to
// one, so every thread owns its target and no atomics are needed.
__global__ void rel_shift_backward_kernel(float* dbd, const float* dout, std::size_t n, int S,
                                          int K, int P, int base, float scale) {
  for (std::size_t o = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; o < n;
       o += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    std::size_t t = o / K;
    long long j = static_cast<long long>(o % K), i = static_cast<long long>(t % S);
    long long p = static_cast<long long>(base) + i - j;
    if (p >= 0 && p < P) dbd[t * P + static_cast<std::size_t>(p)] += scale * dout[o];
  }
}

// Elements of the broadcast output; 0 when a dim is 0. Rejects shapes the kernels cannot index.
std::size_t broadcast_numel(const BroadcastShape& s, const char* who) {
  if (s.ndim < 0 || s.ndim > kMaxBroadcastDims)
    throw std::invalid_argument(std::string("cuda::") + who + ": ndim " + std::to_string(s.ndim) +
                                " outside [0, " + std::to_string(kMaxBroadcastDims) + "]");
  std::size_t n = 1;
  for (int k = 0; k < s.ndim; ++k) {
    if (s.dims[k] < 0)
      throw std::invalid_argument(std::string("cuda::") + who + ": negative dim " +
                                  std::to_string(s.dims[k]));
    n *= static_cast<std::size_t>(s.dims[k]);
  }
  return n;
}

}  // namespace

void copy_2d(float* dst, int ld_dst, const float* src, int ld_src, int rows, int cols,
             bool accumulate) {
  if (rows <= 0 || cols <= 0) return;
  std::size_t n = static_cast<std::size_t>(rows) * cols;
  copy_2d_kernel<<<grid_for(n, 256), 256>>>(dst, static_cast<std::size_t>(ld_dst), src,
                                            static_cast<std::size_t>(ld_src), n,
                                            static_cast<std::size_t>(cols), accumulate);
  GDP_CUDA_CHECK_LAUNCH();
}

void swap_axes(float* out, const float* x, int A, int n0, int B, int n1, int C, bool accumulate) {
  if (A <= 0 || n0 <= 0 || B <= 0 || n1 <= 0 || C <= 0) return;
  if (C == 1 && B == 1 && n0 > 1 && n1 > 1) {
    std::size_t tiles = static_cast<std::size_t>(A) *
                        ceil_div(static_cast<std::size_t>(n0), kTile) *
                        ceil_div(static_cast<std::size_t>(n1), kTile);
    unsigned int grid = tiles > 65535u * 16u ? 65535u * 16u : static_cast<unsigned int>(tiles);
    transpose_tiled_kernel<<<grid, dim3(kTile, kTileRows)>>>(out, x, static_cast<std::size_t>(A),
                                                             n0, n1, accumulate);
    GDP_CUDA_CHECK_LAUNCH();
    return;
  }
  std::size_t n = static_cast<std::size_t>(A) * n0 * B * n1 * C;
  swap_axes_kernel<<<grid_for(n, 256), 256>>>(
      out, x, n, static_cast<std::size_t>(n0), static_cast<std::size_t>(B),
      static_cast<std::size_t>(n1), static_cast<std::size_t>(C), accumulate);
  GDP_CUDA_CHECK_LAUNCH();
}

void expand_forward(float* out, const float* x, const BroadcastShape& shape) {
  std::size_t n = broadcast_numel(shape, "expand_forward");
  if (n == 0) return;
  expand_forward_kernel<<<grid_for(n, 256), 256>>>(out, x, shape, n);
  GDP_CUDA_CHECK_LAUNCH();
}

void expand_backward(float* dx, const float* dout, const BroadcastShape& shape) {
  std::size_t n = broadcast_numel(shape, "expand_backward");
  if (n == 0) return;
  expand_backward_kernel<<<grid_for(n, 256), 256>>>(dx, dout, shape, n);
  GDP_CUDA_CHECK_LAUNCH();
}

void rel_shift_forward(float* out, const float* bd, int BH, int S, int K, int P, int base,
                       float scale) {
  if (BH <= 0 || S <= 0 || K <= 0) return;
  std::size_t n = static_cast<std::size_t>(BH) * S * K;
  rel_shift_forward_kernel<<<grid_for(n, 256), 256>>>(out, bd, n, S, K, P, base, scale);
  GDP_CUDA_CHECK_LAUNCH();
}

void rel_shift_backward(float* dbd, const float* dout, int BH, int S, int K, int P, int base,
                        float scale) {
  if (BH <= 0 || S <= 0 || K <= 0 || P <= 0) return;
  std::size_t n = static_cast<std::size_t>(BH) * S * K;
  rel_shift_backward_kernel<<<grid_for(n, 256), 256>>>(dbd, dout, n, S, K, P, base, scale);
  GDP_CUDA_CHECK_LAUNCH();
}

}  // namespace gdp::cuda
