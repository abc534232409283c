// The CUDA runtime calls of the emulator: one device, "device memory" from the host heap
// (exact-size allocations, so AddressSanitizer sees overruns; fresh memory is filled with
// 0xff bytes, NaN as floats and -1 as ints, so reads of unwritten memory show), range checks
// of every copy and memset against the live allocations, and CUDA's last-error slot.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>

#include "cuda_emu.h"
#include "emu_state.h"

namespace emu::detail {

namespace {

constexpr std::size_t kDeviceBytes = std::size_t{16} << 30;  // the emulated device's memory

cudaError_t g_last = cudaSuccess;
std::map<const char*, std::size_t> g_allocs;  // base -> bytes
std::size_t g_used = 0;

cudaError_t fail(cudaError_t err, const char* call, const char* why) {
  std::fprintf(stderr, "cuda emulator: %s: %s\n", call, why);
  set_error(err);
  return err;
}

}  // namespace

void set_error(cudaError_t err) { g_last = err; }

bool device_range(const void* p, std::size_t bytes) {
  const char* c = static_cast<const char*>(p);
  auto it = g_allocs.upper_bound(c);
  if (it == g_allocs.begin()) return false;
  --it;
  const std::size_t off = static_cast<std::size_t>(c - it->first);
  return off <= it->second && bytes <= it->second - off;
}

}  // namespace emu::detail

using emu::detail::device_range;
using emu::detail::fail;
using emu::detail::g_allocs;

cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (device != 0) {  // an expected answer to a query: no message
    emu::detail::set_error(cudaErrorInvalidDevice);
    return cudaErrorInvalidDevice;
  }
  *prop = cudaDeviceProp{};
  std::snprintf(prop->name, sizeof(prop->name), "gdp CUDA emulator (CPU)");
  prop->totalGlobalMem = emu::detail::kDeviceBytes;
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize() {
  return cudaSuccess;
}  // every launch has finished when it returns

cudaError_t cudaGetLastError() {
  cudaError_t e = emu::detail::g_last;
  emu::detail::g_last = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError() { return emu::detail::g_last; }

const char* cudaGetErrorString(cudaError_t err) {
  switch (err) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      return "invalid argument";
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorInvalidConfiguration:
      return "invalid configuration argument";
    case cudaErrorInvalidDevice:
      return "invalid device ordinal";
    case cudaErrorLaunchFailure:
      return "unspecified launch failure (emulator: see stderr)";
  }
  return "unknown error";
}

cudaError_t cudaMalloc(void** ptr, std::size_t bytes) {
  *ptr = nullptr;
  if (bytes == 0) return cudaSuccess;
  if (bytes > emu::detail::kDeviceBytes - emu::detail::g_used)
    return fail(cudaErrorMemoryAllocation, "cudaMalloc",
                "request exceeds the emulated device memory");
  void* p = std::malloc(bytes);
  if (!p) return fail(cudaErrorMemoryAllocation, "cudaMalloc", "host allocation failed");
  std::memset(p, 0xff, bytes);
  g_allocs[static_cast<const char*>(p)] = bytes;
  emu::detail::g_used += bytes;
  *ptr = p;
  return cudaSuccess;
}

cudaError_t cudaFree(void* ptr) {
  if (!ptr) return cudaSuccess;
  auto it = g_allocs.find(static_cast<const char*>(ptr));
  if (it == g_allocs.end())
    return fail(cudaErrorInvalidValue, "cudaFree", "not a live device allocation");
  emu::detail::g_used -= it->second;
  g_allocs.erase(it);
  std::free(ptr);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
  if (bytes == 0) return cudaSuccess;
  const bool dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  const bool src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  if (kind == cudaMemcpyDefault || kind == cudaMemcpyHostToHost)
    return fail(cudaErrorInvalidValue, "cudaMemcpy", "only H2D, D2H and D2D copies are emulated");
  if (dst_dev && !device_range(dst, bytes))
    return fail(cudaErrorInvalidValue, "cudaMemcpy",
                "destination is not inside one device allocation");
  if (src_dev && !device_range(src, bytes))
    return fail(cudaErrorInvalidValue, "cudaMemcpy", "source is not inside one device allocation");
  if (!dst_dev && device_range(dst, 1))
    return fail(cudaErrorInvalidValue, "cudaMemcpy",
                "host destination is device memory (wrong kind)");
  if (!src_dev && device_range(src, 1))
    return fail(cudaErrorInvalidValue, "cudaMemcpy", "host source is device memory (wrong kind)");
  std::memmove(dst, src, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemset(void* dst, int value, std::size_t bytes) {
  if (bytes == 0) return cudaSuccess;
  if (!device_range(dst, bytes))
    return fail(cudaErrorInvalidValue, "cudaMemset", "range is not inside one device allocation");
  std::memset(dst, value, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* dst, int value, std::size_t bytes, cudaStream_t) {
  return cudaMemset(dst, value, bytes);
}
