// The host double of cuda/bench.h: fake GPUs whose "device" memory is the host double's checked
// allocations (kernels_host.cpp), work done synchronously at the call, and events stamped with
// the host's steady clock (strictly increasing). What it checks: an event is recorded on a
// stream of its own device; elapsed_s takes two recorded events of one device (as CUDA);
// stream_wait takes a recorded event (a wait on an unrecorded event orders nothing on a GPU,
// so an executor that enqueues a consumer before its producer fails here); copies without
// peer access need a staging buffer; devices are in range.
#include "host_double/bench_host.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include "cuda/bench.h"
#include "cuda/kernels.h"

namespace gdp::cuda {

namespace {

struct EventState {
  int device = 0;
  bool recorded = false;
  int64_t t_ns = 0;
};

std::mutex g_mu;
int g_devices = 2;
bool g_peer_access = true;
std::set<std::pair<int, int>> g_enabled;
host_double::BenchCounters g_counters;
int64_t g_last_ns = 0;
thread_local int t_current = 0;

void check_device(int device, const char* what) {
  if (device < 0 || device >= g_devices)
    throw std::logic_error(std::string(what) + ": device " + std::to_string(device) +
                           " out of range (host double has " + std::to_string(g_devices) + ")");
}

int64_t stamp() {  // strictly increasing nanoseconds
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  g_last_ns = std::max(now, g_last_ns + 1);
  return g_last_ns;
}

EventState* state(const Event& e) { return static_cast<EventState*>(e.native()); }

}  // namespace

namespace host_double {

void set_fake_devices(int count, bool peer_access) {
  std::lock_guard<std::mutex> lk(g_mu);
  g_devices = count;
  g_peer_access = peer_access;
  g_enabled.clear();
  g_counters = BenchCounters();
  t_current = 0;
}

BenchCounters counters() {
  std::lock_guard<std::mutex> lk(g_mu);
  return g_counters;
}

}  // namespace host_double

int device_count() { return g_devices; }
void set_device(int device) {
  check_device(device, "set_device");
  t_current = device;
}
int get_device() { return t_current; }

DeviceProperties device_properties(int device) {
  check_device(device, "device_properties");
  DeviceProperties p;
  p.name = "host double gpu" + std::to_string(device);
  p.sm_count = 1;
  p.memory_bytes = int64_t{16} << 30;
  return p;
}

Stream::Stream(int device) : device_(device), owned_(true) {
  check_device(device, "Stream");
  stream_ = new int(device);
}
Stream Stream::default_stream(int device) {
  check_device(device, "Stream::default_stream");
  Stream s;
  s.device_ = device;
  return s;
}
Stream::~Stream() {
  if (owned_) delete static_cast<int*>(stream_);
}
Stream::Stream(Stream&& o) noexcept
    : stream_(std::exchange(o.stream_, nullptr)),
      device_(o.device_),
      owned_(std::exchange(o.owned_, false)) {}
Stream& Stream::operator=(Stream&& o) noexcept {
  if (this != &o) {
    if (owned_) delete static_cast<int*>(stream_);
    stream_ = std::exchange(o.stream_, nullptr);
    device_ = o.device_;
    owned_ = std::exchange(o.owned_, false);
  }
  return *this;
}
void Stream::synchronize() const {}

Event::Event(int device) : device_(device) {
  check_device(device, "Event");
  auto* s = new EventState;
  s->device = device;
  event_ = s;
}
Event::~Event() { delete static_cast<EventState*>(event_); }
Event::Event(Event&& o) noexcept : event_(std::exchange(o.event_, nullptr)), device_(o.device_) {}
Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    delete static_cast<EventState*>(event_);
    event_ = std::exchange(o.event_, nullptr);
    device_ = o.device_;
  }
  return *this;
}
void Event::record(const Stream& s) {
  if (s.device() != device_)
    throw std::logic_error("Event::record: event of device " + std::to_string(device_) +
                           " on a stream of device " + std::to_string(s.device()));
  std::lock_guard<std::mutex> lk(g_mu);
  EventState* st = static_cast<EventState*>(event_);
  st->recorded = true;
  st->t_ns = stamp();
  g_counters.records++;
}
void Event::synchronize() const {}

double elapsed_s(const Event& start, const Event& end) {
  const EventState* a = state(start);
  const EventState* b = state(end);
  if (!a || !b || !a->recorded || !b->recorded)
    throw std::logic_error("elapsed_s: an event was never recorded");
  if (a->device != b->device)
    throw std::logic_error("elapsed_s: events of devices " + std::to_string(a->device) + " and " +
                           std::to_string(b->device) + " (CUDA needs one device)");
  return 1e-9 * static_cast<double>(b->t_ns - a->t_ns);
}

void stream_wait(const Stream& s, const Event& e) {
  check_device(s.device(), "stream_wait");
  const EventState* st = state(e);
  if (!st || !st->recorded)
    throw std::logic_error(
        "stream_wait: the event was never recorded (the wait would order nothing on a GPU)");
  std::lock_guard<std::mutex> lk(g_mu);
  g_counters.waits++;
}

void* host_alloc_pinned(std::size_t bytes) { return bytes ? std::malloc(bytes) : nullptr; }
void host_free_pinned(void* ptr) noexcept { std::free(ptr); }
void* device_alloc_on(int device, std::size_t bytes) {
  check_device(device, "device_alloc_on");
  return device_alloc(bytes);
}
void device_free_on(void* ptr) noexcept { device_free(ptr); }
void fill_bytes_on(const Stream& s, void* dst, int value, std::size_t bytes) {
  check_device(s.device(), "fill_bytes_on");
  if (bytes) std::memset(dst, value, bytes);
}
void copy_h2d(const Stream&, void* dst, const void* src_host, std::size_t bytes) {
  if (bytes) std::memcpy(dst, src_host, bytes);
}
void copy_d2h(const Stream&, void* dst_host, const void* src, std::size_t bytes) {
  if (bytes) std::memcpy(dst_host, src, bytes);
}
void copy_d2d(const Stream&, void* dst, const void* src, std::size_t bytes) {
  if (bytes) std::memmove(dst, src, bytes);
}

bool can_access_peer(int device, int peer) {
  check_device(device, "can_access_peer");
  check_device(peer, "can_access_peer");
  return g_peer_access;
}
bool enable_peer_access(int device, int peer) {
  if (device == peer) return true;
  if (!can_access_peer(device, peer)) return false;
  std::lock_guard<std::mutex> lk(g_mu);
  g_enabled.insert({device, peer});
  return true;
}
bool peer_enabled(int src_device, int dst_device) {
  std::lock_guard<std::mutex> lk(g_mu);
  return src_device == dst_device || g_enabled.count({src_device, dst_device}) ||
         g_enabled.count({dst_device, src_device});
}
void copy_peer(const Stream& s, void* dst, int dst_device, const void* src, int src_device,
               std::size_t bytes, void* staging) {
  check_device(s.device(), "copy_peer");
  check_device(dst_device, "copy_peer");
  check_device(src_device, "copy_peer");
  if (bytes == 0) return;
  if (peer_enabled(src_device, dst_device)) {
    std::memcpy(dst, src, bytes);
    std::lock_guard<std::mutex> lk(g_mu);
    g_counters.peer_copies++;
    return;
  }
  if (!staging) throw std::logic_error("copy_peer: no peer access and no staging buffer");
  std::memcpy(staging, src, bytes);
  std::memcpy(dst, staging, bytes);
  std::lock_guard<std::mutex> lk(g_mu);
  g_counters.staged_copies++;
}

void gemm_on(const Stream& s, float* C, const float* A, const float* B, int M, int N, int K) {
  check_device(s.device(), "gemm_on");
  gemm(C, A, B, M, N, K, false, false);  // the checked host GEMM of kernels_host.cpp
}

}  // namespace gdp::cuda
