// Streams, events, copies and the per-device GEMM of cuda/bench.h. Host code only (the CUDA
// runtime and cuBLAS, no kernel), so it is a .cpp: the CUDA emulator of tests/cuda_emu, which
// rewrites every cuda/*.cu, has nothing to do with it.
#include "cuda/bench.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <mutex>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

namespace gdp::cuda {

namespace {

[[noreturn]] void throw_cuda_error(cudaError_t err, const char* what, const char* file, int line) {
  (void)cudaGetLastError();
  throw std::runtime_error(std::string("CUDA error in ") + what + " at " + file + ":" +
                           std::to_string(line) + ": " + cudaGetErrorString(err));
}

#define GDP_BENCH_CHECK(call)                                                           \
  do {                                                                                  \
    cudaError_t gdp_err_ = (call);                                                      \
    if (gdp_err_ != cudaSuccess) throw_cuda_error(gdp_err_, #call, __FILE__, __LINE__); \
  } while (0)

// Restores the current device when it goes out of scope.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    GDP_BENCH_CHECK(cudaGetDevice(&saved_));
    if (device != saved_) GDP_BENCH_CHECK(cudaSetDevice(device));
  }
  ~DeviceGuard() { (void)cudaSetDevice(saved_); }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int saved_ = 0;
};

cudaStream_t stream_of(const Stream& s) { return static_cast<cudaStream_t>(s.native()); }

std::mutex g_peer_mu;
std::set<std::pair<int, int>> g_peer_enabled;  // (device, peer) with access enabled

std::mutex g_blas_mu;
std::vector<cublasHandle_t> g_blas;  // per device, created on first use, never destroyed

void check_cublas(cublasStatus_t st, const char* what) {
  if (st != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cuBLAS error in ") + what + ": " +
                             cublasGetStatusString(st));
}

cublasHandle_t blas_handle(int device) {
  std::lock_guard<std::mutex> lk(g_blas_mu);
  if (device < 0) throw std::runtime_error("gemm_on: bad device " + std::to_string(device));
  if (static_cast<size_t>(device) >= g_blas.size()) g_blas.resize(device + 1, nullptr);
  if (!g_blas[device]) {
    DeviceGuard g(device);
    cublasHandle_t h = nullptr;
    check_cublas(cublasCreate(&h), "cublasCreate");
    check_cublas(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    g_blas[device] = h;
  }
  return g_blas[device];
}

}  // namespace

// ---------------------------------------------------------------- devices

int device_count() {
  int n = 0;
  GDP_BENCH_CHECK(cudaGetDeviceCount(&n));
  return n;
}

void set_device(int device) { GDP_BENCH_CHECK(cudaSetDevice(device)); }

int get_device() {
  int d = 0;
  GDP_BENCH_CHECK(cudaGetDevice(&d));
  return d;
}

DeviceProperties device_properties(int device) {
  cudaDeviceProp prop{};
  GDP_BENCH_CHECK(cudaGetDeviceProperties(&prop, device));
  DeviceProperties p;
  p.name = prop.name;
  p.sm_count = prop.multiProcessorCount;
  p.memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
  p.cc_major = prop.major;
  p.cc_minor = prop.minor;
  // The clocks left cudaDeviceProp in CUDA 13: ask for the attributes (kHz), 0 when refused.
  int v = 0;
  if (cudaDeviceGetAttribute(&v, cudaDevAttrClockRate, device) == cudaSuccess)
    p.sm_clock_hz = 1e3 * v;
  else
    (void)cudaGetLastError();
  if (cudaDeviceGetAttribute(&v, cudaDevAttrMemoryClockRate, device) == cudaSuccess)
    p.memory_clock_hz = 1e3 * v;
  else
    (void)cudaGetLastError();
  if (cudaDeviceGetAttribute(&v, cudaDevAttrGlobalMemoryBusWidth, device) == cudaSuccess)
    p.memory_bus_bits = v;
  else
    (void)cudaGetLastError();
  return p;
}

// ---------------------------------------------------------------- streams and events

Stream::Stream(int device) : device_(device), owned_(true) {
  DeviceGuard g(device);
  cudaStream_t s = nullptr;
  GDP_BENCH_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  stream_ = s;
}

Stream Stream::default_stream(int device) {
  Stream s;
  s.device_ = device;
  s.stream_ = nullptr;
  s.owned_ = false;
  return s;
}

Stream::~Stream() {
  if (owned_ && stream_) (void)cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
}

Stream::Stream(Stream&& o) noexcept
    : stream_(std::exchange(o.stream_, nullptr)),
      device_(o.device_),
      owned_(std::exchange(o.owned_, false)) {}

Stream& Stream::operator=(Stream&& o) noexcept {
  if (this != &o) {
    if (owned_ && stream_) (void)cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
    stream_ = std::exchange(o.stream_, nullptr);
    device_ = o.device_;
    owned_ = std::exchange(o.owned_, false);
  }
  return *this;
}

void Stream::synchronize() const {
  DeviceGuard g(device_);
  GDP_BENCH_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)));
}

Event::Event(int device) : device_(device) {
  DeviceGuard g(device);
  cudaEvent_t e = nullptr;
  GDP_BENCH_CHECK(cudaEventCreate(&e));
  event_ = e;
}

Event::~Event() {
  if (event_) (void)cudaEventDestroy(static_cast<cudaEvent_t>(event_));
}

Event::Event(Event&& o) noexcept : event_(std::exchange(o.event_, nullptr)), device_(o.device_) {}

Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    if (event_) (void)cudaEventDestroy(static_cast<cudaEvent_t>(event_));
    event_ = std::exchange(o.event_, nullptr);
    device_ = o.device_;
  }
  return *this;
}

void Event::record(const Stream& s) {
  if (s.device() != device_)
    throw std::runtime_error("cudaEventRecord: event of device " + std::to_string(device_) +
                             " recorded on a stream of device " + std::to_string(s.device()));
  DeviceGuard g(device_);
  GDP_BENCH_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event_), stream_of(s)));
}

void Event::synchronize() const {
  GDP_BENCH_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(event_)));
}

double elapsed_s(const Event& start, const Event& end) {
  float ms = 0;
  GDP_BENCH_CHECK(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start.native()),
                                       static_cast<cudaEvent_t>(end.native())));
  return 1e-3 * static_cast<double>(ms);
}

void stream_wait(const Stream& s, const Event& e) {
  DeviceGuard g(s.device());
  GDP_BENCH_CHECK(cudaStreamWaitEvent(stream_of(s), static_cast<cudaEvent_t>(e.native()), 0));
}

// ---------------------------------------------------------------- memory and copies

void* host_alloc_pinned(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = nullptr;
  GDP_BENCH_CHECK(cudaMallocHost(&p, bytes));
  return p;
}

void host_free_pinned(void* ptr) noexcept {
  if (ptr) (void)cudaFreeHost(ptr);
}

void* device_alloc_on(int device, std::size_t bytes) {
  if (bytes == 0) return nullptr;
  DeviceGuard g(device);
  void* p = nullptr;
  GDP_BENCH_CHECK(cudaMalloc(&p, bytes));
  return p;
}

void device_free_on(void* ptr) noexcept {
  if (ptr) (void)cudaFree(ptr);  // cudaFree finds the device of ptr (unified addressing)
}

void fill_bytes_on(const Stream& s, void* dst, int value, std::size_t bytes) {
  if (bytes == 0) return;
  DeviceGuard g(s.device());
  GDP_BENCH_CHECK(cudaMemsetAsync(dst, value, bytes, stream_of(s)));
}

void copy_h2d(const Stream& s, void* dst, const void* src_host, std::size_t bytes) {
  if (bytes == 0) return;
  DeviceGuard g(s.device());
  GDP_BENCH_CHECK(cudaMemcpyAsync(dst, src_host, bytes, cudaMemcpyHostToDevice, stream_of(s)));
}

void copy_d2h(const Stream& s, void* dst_host, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  DeviceGuard g(s.device());
  GDP_BENCH_CHECK(cudaMemcpyAsync(dst_host, src, bytes, cudaMemcpyDeviceToHost, stream_of(s)));
}

void copy_d2d(const Stream& s, void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  DeviceGuard g(s.device());
  GDP_BENCH_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_of(s)));
}

bool can_access_peer(int device, int peer) {
  int ok = 0;
  GDP_BENCH_CHECK(cudaDeviceCanAccessPeer(&ok, device, peer));
  return ok != 0;
}

bool enable_peer_access(int device, int peer) {
  if (device == peer) return true;
  std::lock_guard<std::mutex> lk(g_peer_mu);
  if (g_peer_enabled.count({device, peer})) return true;
  int ok = 0;
  GDP_BENCH_CHECK(cudaDeviceCanAccessPeer(&ok, device, peer));
  if (!ok) return false;
  DeviceGuard g(device);
  const cudaError_t err = cudaDeviceEnablePeerAccess(peer, 0);
  if (err == cudaErrorPeerAccessAlreadyEnabled)
    (void)cudaGetLastError();
  else if (err != cudaSuccess)
    throw_cuda_error(err, "cudaDeviceEnablePeerAccess", __FILE__, __LINE__);
  g_peer_enabled.insert({device, peer});
  return true;
}

bool peer_enabled(int src_device, int dst_device) {
  std::lock_guard<std::mutex> lk(g_peer_mu);
  // A peer copy src -> dst needs dst's memory mapped for src (or the reverse; the driver uses
  // either direction's mapping).
  return src_device == dst_device || g_peer_enabled.count({src_device, dst_device}) ||
         g_peer_enabled.count({dst_device, src_device});
}

void copy_peer(const Stream& s, void* dst, int dst_device, const void* src, int src_device,
               std::size_t bytes, void* staging) {
  if (bytes == 0) return;
  DeviceGuard g(s.device());
  if (peer_enabled(src_device, dst_device)) {
    GDP_BENCH_CHECK(cudaMemcpyPeerAsync(dst, dst_device, src, src_device, bytes, stream_of(s)));
    return;
  }
  if (!staging)
    throw std::runtime_error("copy_peer: no peer access from device " + std::to_string(src_device) +
                             " to " + std::to_string(dst_device) + " and no staging buffer");
  GDP_BENCH_CHECK(cudaMemcpyAsync(staging, src, bytes, cudaMemcpyDeviceToHost, stream_of(s)));
  GDP_BENCH_CHECK(cudaMemcpyAsync(dst, staging, bytes, cudaMemcpyHostToDevice, stream_of(s)));
}

// ---------------------------------------------------------------- GEMM

void gemm_on(const Stream& s, float* C, const float* A, const float* B, int M, int N, int K) {
  if (M <= 0 || N <= 0 || K <= 0) return;
  cublasHandle_t h = blas_handle(s.device());
  std::lock_guard<std::mutex> lk(g_blas_mu);  // the handle's stream is state: one caller at a time
  DeviceGuard g(s.device());
  check_cublas(cublasSetStream(h, stream_of(s)), "cublasSetStream");
  const float alpha = 1.0f, beta = 0.0f;
  // Row-major C = A B is column-major C^T = B^T A^T.
  check_cublas(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B, N, A, K, &beta, C, N),
               "cublasSgemm");
}

}  // namespace gdp::cuda
