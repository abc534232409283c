// Timing, streams and copies of the CUDA backend for the GPU calibration (calib/cuda_bench.h)
// and the GPU executor of `gdp validate` (validate/cuda_executor.h): device selection and
// properties, streams and events (elapsed times, cross-stream dependencies), copies between the
// host and devices and between devices (peer access where the driver allows it), and a cuBLAS
// GEMM on any device. A plain C++ header like cuda/kernels.h: no CUDA type crosses it, handles
// are opaque. Host code only (cuda/bench.cpp): the kernels of cuda/kernels.h run on the current
// device's legacy default stream (Stream::default_stream), and events on that stream time them.
//
// Why `gemm_on` duplicates cuda/kernels.h's gemm: that one's cuBLAS handle is process-wide,
// bound to the first device that used it; the executor needs a GEMM on every device, so
// `gemm_on` keeps one cuBLAS handle per device and sets the stream per call.
//
// Every function that can fail throws std::runtime_error naming the CUDA call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace gdp::cuda {

// ---------------------------------------------------------------- devices
struct DeviceProperties {
  std::string name;          // cudaDeviceProp::name, e.g. "NVIDIA H200"
  int sm_count = 0;          // multiprocessors
  int64_t memory_bytes = 0;  // global memory
  int cc_major = 0, cc_minor = 0;
  double sm_clock_hz = 0;      // peak SM clock (0 when the runtime does not say)
  double memory_clock_hz = 0;  // peak memory clock (0 when the runtime does not say)
  int memory_bus_bits = 0;     // 0 when the runtime does not say
};
int device_count();  // throws (unlike cuda_device_count) when the runtime fails
void set_device(int device);
int get_device();
DeviceProperties device_properties(int device);

// ---------------------------------------------------------------- streams and events
// A stream on `device`: an owned non-blocking stream, or (default_stream) the device's legacy
// default stream, where the functions of cuda/kernels.h run. Move-only.
class Stream {
 public:
  Stream() = default;
  explicit Stream(int device);  // creates a non-blocking stream on `device`
  static Stream default_stream(int device);
  ~Stream();
  Stream(Stream&& o) noexcept;
  Stream& operator=(Stream&& o) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  int device() const { return device_; }
  void* native() const { return stream_; }  // cudaStream_t (nullptr: the default stream)
  void synchronize() const;                 // waits for the stream's work; throws on errors

 private:
  void* stream_ = nullptr;
  int device_ = 0;
  bool owned_ = false;
};

// An event on `device` with timing. Move-only.
class Event {
 public:
  Event() = default;
  explicit Event(int device);
  ~Event();
  Event(Event&& o) noexcept;
  Event& operator=(Event&& o) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(const Stream& s);  // s must be on the event's device
  void synchronize() const;      // waits until the recorded work is done
  int device() const { return device_; }
  void* native() const { return event_; }

 private:
  void* event_ = nullptr;
  int device_ = 0;
};
// Seconds from `start` to `end` (both recorded and complete; cudaEventElapsedTime).
double elapsed_s(const Event& start, const Event& end);
// Work queued on `s` after this call waits for `e` (which may be on another device).
void stream_wait(const Stream& s, const Event& e);

// ---------------------------------------------------------------- memory and copies
// Pinned host memory (page-locked, for asynchronous copies at full rate).
void* host_alloc_pinned(std::size_t bytes);  // 0 bytes -> nullptr
void host_free_pinned(void* ptr) noexcept;
// Device memory on `device` (the current device is restored).
void* device_alloc_on(int device, std::size_t bytes);  // 0 bytes -> nullptr
void device_free_on(void* ptr) noexcept;
void fill_bytes_on(const Stream& s, void* dst, int value, std::size_t bytes);  // cudaMemsetAsync

// Stream-ordered copies of `bytes` bytes (pointers on the stream's device, host pointers
// pinned for asynchrony).
void copy_h2d(const Stream& s, void* dst, const void* src_host, std::size_t bytes);
void copy_d2h(const Stream& s, void* dst_host, const void* src, std::size_t bytes);
void copy_d2d(const Stream& s, void* dst, const void* src, std::size_t bytes);

// Peer access: whether `device` can read and write `peer`'s memory directly
// (cudaDeviceCanAccessPeer), and enabling it (idempotent; false when it cannot).
bool can_access_peer(int device, int peer);
bool enable_peer_access(int device, int peer);
// A copy from src (on src_device) to dst (on dst_device) queued on `s` (on either device): a
// peer copy (cudaMemcpyPeerAsync) when peer access is enabled from src_device to dst_device,
// else a host round trip through `staging` (pinned, >= bytes; may be null only with peer
// access): device-to-host then host-to-device, both on `s`.
void copy_peer(const Stream& s, void* dst, int dst_device, const void* src, int src_device,
               std::size_t bytes, void* staging);
// Whether copy_peer(src_device -> dst_device) goes directly (peer access was enabled).
bool peer_enabled(int src_device, int dst_device);

// ---------------------------------------------------------------- GEMM
// Row-major C (M,N) = A (M,K) B (K,N), float32 on the stream's device (one cuBLAS handle per
// device, true fp32 as cuda/kernels.h).
void gemm_on(const Stream& s, float* C, const float* A, const float* B, int M, int N, int K);

}  // namespace gdp::cuda
