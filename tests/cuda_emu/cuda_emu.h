// A CPU emulator of the CUDA runtime, the device built-ins and the cuBLAS calls that
// cuda/*.cu use, so the REAL kernel code runs (compiled by g++) on machines without a GPU.
// Only the emulator targets see it (as cuda_runtime.h / cublas_v2.h, tests/cuda_emu/include).
//
// Model: blocks run one after another; inside a block every GPU thread is a fiber on ONE OS
// thread, scheduled round-robin (deterministic: increasing thread order in even blocks,
// decreasing in odd ones). __syncthreads is a block
// barrier (exited threads count as arrived); __shfl_*_sync is a warp barrier with a real
// exchange between the 32 lanes. Kernels that never reach a barrier (as flagged by
// rewrite.py) run each GPU thread as a plain call instead. See docs/cuda.md, "CUDA emulator".
#pragma once

#include <math.h>

#include <cfloat>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

// ---------------------------------------------------------------- qualifiers
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __launch_bounds__(...)
// Blocks run one at a time, so a function-static array is exactly one block's shared memory.
#define __shared__ static

// ---------------------------------------------------------------- geometry
struct uint3 {
  unsigned int x = 0, y = 0, z = 0;
};
struct dim3 {
  unsigned int x = 1, y = 1, z = 1;
  constexpr dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1)
      : x(x_), y(y_), z(z_) {}
};
constexpr int warpSize = 32;

namespace emu::detail {
inline uint3 g_thread_idx, g_block_idx;
inline dim3 g_block_dim, g_grid_dim;
}  // namespace emu::detail

// Read-only views, as on the device.
inline const uint3& threadIdx = emu::detail::g_thread_idx;
inline const uint3& blockIdx = emu::detail::g_block_idx;
inline const dim3& blockDim = emu::detail::g_block_dim;
inline const dim3& gridDim = emu::detail::g_grid_dim;

// ---------------------------------------------------------------- runtime API
enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDevice = 101,
  cudaErrorLaunchFailure = 719,
};
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};
struct CUstream_st;
using cudaStream_t = CUstream_st*;
struct cudaDeviceProp {
  char name[256] = {};
  std::size_t totalGlobalMem = 0;
  int warpSize = 32;
  int maxThreadsPerBlock = 1024;
  int multiProcessorCount = 1;
  int major = 0, minor = 0;
};

cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
const char* cudaGetErrorString(cudaError_t err);
cudaError_t cudaMalloc(void** ptr, std::size_t bytes);
cudaError_t cudaFree(void* ptr);
cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemset(void* dst, int value, std::size_t bytes);
cudaError_t cudaMemsetAsync(void* dst, int value, std::size_t bytes, cudaStream_t stream = nullptr);
template <class T>
cudaError_t cudaMalloc(T** ptr, std::size_t bytes) {
  return cudaMalloc(reinterpret_cast<void**>(ptr), bytes);
}

// ---------------------------------------------------------------- device math
// libm in float; rsqrtf and the fast intrinsics as their exact forms.
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __fdividef(float a, float b) { return a / b; }

// ---------------------------------------------------------------- emulator internals
namespace emu {

// Where a kernel launch comes from (filled in by rewrite.py).
struct KernelSite {
  const char* kernel;  // the kernel's name as written at the launch
  const char* file;
  int line;
  bool uses_barriers;  // it (or a device function it calls) reaches __syncthreads or a shuffle
};

namespace detail {
using Thunk = void (*)(void*);
void launch_impl(const KernelSite& site, dim3 grid, dim3 block, std::size_t smem, Thunk thunk,
                 void* fn);
// Warp exchange: every lane of `mask` gives `value`, gets the value of lane src_lane (its own
// when src_lane is out of range); a warp barrier. `what` names the intrinsic for errors.
std::uint32_t shuffle(unsigned int mask, std::uint32_t value, int src_lane, const char* what);
void syncthreads();
// Lane of the calling thread (linear thread index % 32).
int lane_id();
// Fills a __shared__ array with 0xff bytes (NaN as float) the first time a block reaches its
// declaration (rewrite.py adds the call), as fresh shared memory holds garbage.
void fresh_shared(void* array, std::size_t bytes);

template <class T>
std::uint32_t to_bits(T v) {
  static_assert(sizeof(T) == 4 && std::is_trivially_copyable_v<T>,
                "emulated shuffles move 32-bit values");
  std::uint32_t u;
  std::memcpy(&u, &v, 4);
  return u;
}
template <class T>
T from_bits(std::uint32_t u) {
  T v;
  std::memcpy(&v, &u, 4);
  return v;
}
}  // namespace detail

// k<<<grid, block, smem, stream>>>(args) becomes
// emu::launch(site, grid, block, smem, stream, [=] { k(args); }).
template <class F>
void launch(const KernelSite& site, dim3 grid, dim3 block, std::size_t smem, cudaStream_t, F&& f) {
  using Fn = std::remove_reference_t<F>;
  detail::launch_impl(
      site, grid, block, smem, [](void* p) { (*static_cast<Fn*>(p))(); },
      const_cast<void*>(static_cast<const void*>(&f)));
}
template <class F>
void launch(const KernelSite& site, dim3 grid, dim3 block, F&& f) {
  launch(site, grid, block, 0, nullptr, static_cast<F&&>(f));
}
template <class F>
void launch(const KernelSite& site, dim3 grid, dim3 block, std::size_t smem, F&& f) {
  launch(site, grid, block, smem, nullptr, static_cast<F&&>(f));
}

// Statistics of the emulator (for its own tests and for timing notes).
struct Stats {
  unsigned long long launches = 0, fiber_launches = 0, blocks = 0, threads = 0, switches = 0;
};
Stats stats();

}  // namespace emu

// ---------------------------------------------------------------- device built-ins
inline void __syncthreads() { emu::detail::syncthreads(); }

template <class T>
T __shfl_xor_sync(unsigned int mask, T v, int lane_mask, int width = warpSize) {
  int lane = emu::detail::lane_id();
  int src = lane ^ lane_mask;
  if (src / width != lane / width) src = lane;  // outside the caller's segment: own value
  return emu::detail::from_bits<T>(
      emu::detail::shuffle(mask, emu::detail::to_bits(v), src, "__shfl_xor_sync"));
}
template <class T>
T __shfl_sync(unsigned int mask, T v, int src_lane, int width = warpSize) {
  int lane = emu::detail::lane_id();
  int src = (lane / width) * width + (src_lane % width);
  return emu::detail::from_bits<T>(
      emu::detail::shuffle(mask, emu::detail::to_bits(v), src, "__shfl_sync"));
}
template <class T>
T __shfl_down_sync(unsigned int mask, T v, unsigned int delta, int width = warpSize) {
  int lane = emu::detail::lane_id();
  int src = lane + static_cast<int>(delta);
  if (src / width != lane / width) src = lane;
  return emu::detail::from_bits<T>(
      emu::detail::shuffle(mask, emu::detail::to_bits(v), src, "__shfl_down_sync"));
}
template <class T>
T __shfl_up_sync(unsigned int mask, T v, unsigned int delta, int width = warpSize) {
  int lane = emu::detail::lane_id();
  int src = lane - static_cast<int>(delta);
  if (src < 0 || src / width != lane / width) src = lane;
  return emu::detail::from_bits<T>(
      emu::detail::shuffle(mask, emu::detail::to_bits(v), src, "__shfl_up_sync"));
}
inline void __syncwarp(unsigned int mask = 0xffffffffu) {
  (void)emu::detail::shuffle(mask, 0u, emu::detail::lane_id(), "__syncwarp");
}

// One OS thread runs every GPU thread and switches only at barriers, so a read-modify-write
// is atomic. Returns the old value, as CUDA does.
template <class T>
T atomicAdd(T* address, T value) {
  static_assert(std::is_arithmetic_v<T>, "atomicAdd on float, double, int, unsigned");
  T old = *address;
  *address = old + value;
  return old;
}
template <class T>
T atomicMax(T* address, T value) {
  T old = *address;
  *address = old < value ? value : old;
  return old;
}
template <class T>
T atomicMin(T* address, T value) {
  T old = *address;
  *address = value < old ? value : old;
  return old;
}
template <class T>
T atomicExch(T* address, T value) {
  T old = *address;
  *address = value;
  return old;
}
