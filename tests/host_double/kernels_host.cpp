// A host "double" of the CUDA backend: every function of cuda/kernels.h as a plain loop over
// HOST memory, so that machines without a GPU (CI) run the nn device path and tests/cuda/.
// It is also a checker: "device" memory is a table of live host allocations, new memory reads
// as NaN (0xFF bytes), and every pointer a kernel receives must lie, with the whole extent the
// call touches, inside one live allocation; index values must be in range. Violations throw
// std::logic_error naming the function and the argument. See docs/cuda.md, "Host double".
//
// Glossary as in cuda/kernels.h: N rows, C columns, M gathered rows, R segments, E CSR entries,
// BH batch*heads, Tq queries, Tk keys, D head size.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cuda/kernels.h"

namespace gdp::cuda {

namespace {

// ================================================================ the allocation table

constexpr std::size_t kAlign = 256;                           // cudaMalloc's alignment
constexpr std::size_t kMaxAllocBytes = std::size_t{1} << 40;  // 1 TiB: beyond is "out of memory"
constexpr std::size_t kQuarantineBytes = std::size_t{64} << 20;
constexpr std::size_t kQuarantineBlocks = 4096;

struct Table {
  std::mutex mu;
  std::map<std::uintptr_t, std::size_t> live;  // start -> requested bytes
  // Freed blocks are kept (NaN-filled) for a while so that a stale pointer does not land in a
  // fresh allocation at the same address and pass the checks.
  std::deque<void*> quarantine;
  std::deque<std::size_t> quarantine_sizes;
  std::size_t quarantine_bytes = 0;
};

Table& table() {
  static Table* t = new Table;  // never destroyed: device_free may run from static destructors
  return *t;
}

std::string hex(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

[[noreturn]] void bad_arg(const char* fn, const char* arg, const std::string& why) {
  throw std::logic_error(std::string(fn) + ": argument " + arg +
                         " (host pointer or out of bounds): " + why);
}

[[noreturn]] void bad_index(const char* fn, const char* arg, const std::string& why) {
  throw std::logic_error(std::string(fn) + ": argument " + arg + " (index out of range): " + why);
}

[[noreturn]] void bad_size(const char* fn, const std::string& why) {
  throw std::invalid_argument(std::string(fn) + ": " + why);
}

// Elements of size elem available around p inside its live allocation: [-before, after).
struct Room {
  long long before = 0;
  long long after = 0;
};

Room room_of(const char* fn, const char* arg, const void* p, std::size_t elem) {
  if (!p) bad_arg(fn, arg, "null pointer");
  const auto u = reinterpret_cast<std::uintptr_t>(p);
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.live.upper_bound(u);
  if (it == t.live.begin()) bad_arg(fn, arg, hex(p) + " is not inside any live device allocation");
  --it;
  const std::uintptr_t start = it->first, end = it->first + it->second;
  if (u >= end) bad_arg(fn, arg, hex(p) + " is not inside any live device allocation");
  if ((u - start) % elem != 0) bad_arg(fn, arg, hex(p) + " is not aligned to its element size");
  return {static_cast<long long>((u - start) / elem), static_cast<long long>((end - u) / elem)};
}

// Elements [lo, hi) of p (elem bytes each) must lie in p's live allocation; nothing when empty.
void require_span(const char* fn, const char* arg, const void* p, long long lo, long long hi,
                  std::size_t elem) {
  if (hi <= lo) return;
  const Room r = room_of(fn, arg, p, elem);
  if (lo < -r.before || hi > r.after)
    bad_arg(fn, arg,
            "touches elements [" + std::to_string(lo) + ", " + std::to_string(hi) + ") of " +
                hex(p) + " but its allocation holds [" + std::to_string(-r.before) + ", " +
                std::to_string(r.after) + ")");
}

void require(const char* fn, const char* arg, const float* p, long long n) {
  require_span(fn, arg, p, 0, n, 4);
}
void require(const char* fn, const char* arg, const int* p, long long n) {
  require_span(fn, arg, p, 0, n, 4);
}

// Outputs of kernels whose threads read other elements than they write must not overlap their
// inputs (the GPU result would depend on thread order). Byte ranges [p+lo, p+hi) elements.
void require_disjoint(const char* fn, const char* out_name, const void* out, long long out_lo,
                      long long out_hi, const char* in_name, const void* in, long long in_lo,
                      long long in_hi) {
  if (!out || !in || out_hi <= out_lo || in_hi <= in_lo) return;
  const auto o = reinterpret_cast<std::intptr_t>(out), i = reinterpret_cast<std::intptr_t>(in);
  const std::intptr_t o0 = o + out_lo * 4, o1 = o + out_hi * 4, i0 = i + in_lo * 4,
                      i1 = i + in_hi * 4;
  if (o0 < i1 && i0 < o1)
    throw std::logic_error(std::string(fn) + ": output " + out_name + " overlaps input " + in_name +
                           " (the kernel's result would depend on thread order)");
}

void nonneg(const char* fn, std::initializer_list<long long> sizes) {
  for (long long s : sizes)
    if (s < 0) bad_size(fn, "negative size " + std::to_string(s));
}

// Rows of width C that p's allocation holds from p on (for indices with no other stated bound).
long long rows_from(const char* fn, const char* arg, const float* p, int C) {
  const Room r = room_of(fn, arg, p, sizeof(float));
  return r.after / C;
}

void require_index(const char* fn, const char* arg, long long pos, long long value, long long bound,
                   const char* bound_what) {
  if (value < 0 || value >= bound)
    bad_index(fn, arg,
              "value " + std::to_string(value) + " at position " + std::to_string(pos) +
                  " is outside [0, " + std::to_string(bound) + ") (" + bound_what + ")");
}

using Size = std::size_t;
Size sz(long long v) { return static_cast<Size>(v); }

// ================================================================ element-wise helpers

template <class F>
void binary_forward(const char* fn, float* out, const float* a, const float* b, int N, int C,
                    bool b_is_row, F f) {
  nonneg(fn, {N, C});
  const long long n = static_cast<long long>(N) * C;
  if (n == 0) return;
  require(fn, "out", out, n);
  require(fn, "a", a, n);
  require(fn, "b", b, b_is_row ? C : n);
  if (b_is_row) require_disjoint(fn, "out", out, 0, n, "b", b, 0, C);
  for (Size i = 0; i < sz(n); ++i) out[i] = f(a[i], b[b_is_row ? i % sz(C) : i]);
}

// da += ga(g, a, b), db += gb(g, a, b) (column sums when b_is_row); either may be nullptr.
template <class GA, class GB>
void binary_backward(const char* fn, float* da, float* db, const float* dout, const float* a,
                     const float* b, int N, int C, bool b_is_row, GA ga, GB gb) {
  nonneg(fn, {N, C});
  const long long n = static_cast<long long>(N) * C, nb = b_is_row ? C : n;
  if (n == 0) return;
  require(fn, "dout", dout, n);
  if (a) require(fn, "a", a, n);
  if (b) require(fn, "b", b, nb);
  if (da) require(fn, "da", da, n);
  if (db) require(fn, "db", db, nb);
  if (da)
    for (Size i = 0; i < sz(n); ++i)
      da[i] +=
          static_cast<float>(ga(dout[i], a ? a[i] : 0.0f, b ? b[b_is_row ? i % sz(C) : i] : 0.0f));
  if (db) {
    std::vector<double> acc(sz(nb), 0.0);
    for (Size i = 0; i < sz(n); ++i) {
      const Size bi = b_is_row ? i % sz(C) : i;
      acc[bi] += gb(dout[i], a ? a[i] : 0.0f, b ? b[bi] : 0.0f);
    }
    for (Size j = 0; j < sz(nb); ++j) db[j] = static_cast<float>(db[j] + acc[j]);
  }
}

template <class F>
void unary_forward(const char* fn, float* out, const float* x, std::size_t n, F f) {
  if (n == 0) return;
  require(fn, "out", out, static_cast<long long>(n));
  require(fn, "x", x, static_cast<long long>(n));
  for (Size i = 0; i < n; ++i) out[i] = static_cast<float>(f(static_cast<double>(x[i])));
}

// dx += df(saved) * dout, saved = the forward input or output as the header says.
template <class DF>
void unary_backward(const char* fn, float* dx, const char* saved_name, const float* saved,
                    const float* dout, std::size_t n, DF df) {
  if (n == 0) return;
  require(fn, "dx", dx, static_cast<long long>(n));
  require(fn, saved_name, saved, static_cast<long long>(n));
  require(fn, "dout", dout, static_cast<long long>(n));
  for (Size i = 0; i < n; ++i)
    dx[i] = static_cast<float>(dx[i] +
                               df(static_cast<double>(saved[i])) * static_cast<double>(dout[i]));
}

constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2/pi)

double gelu(double x) {
  return 0.5 * x * (1.0 + std::tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x)));
}
double gelu_grad(double x) {
  const double t = std::tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * kSqrt2OverPi * (1.0 + 3.0 * 0.044715 * x * x);
}

// Row reductions: x (N,C) rows checked, out (N).
void check_rows(const char* fn, const char* out_name, const float* out, const float* x, int N,
                int C) {
  require(fn, out_name, out, N);
  require(fn, "x", x, static_cast<long long>(N) * C);
}

}  // namespace

// ================================================================ device and memory

int cuda_device_count() { return 1; }
std::string cuda_device_name(int device) { return device == 0 ? "host double (no GPU)" : ""; }
std::string cuda_last_error_string() { return ""; }
void synchronize() {}

void* device_alloc(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  if (bytes > kMaxAllocBytes)
    throw std::runtime_error("device_alloc (host double): out of memory for " +
                             std::to_string(bytes) + " bytes");
  const std::size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
  void* p = std::aligned_alloc(kAlign, rounded);
  if (!p)
    throw std::runtime_error("device_alloc (host double): out of memory for " +
                             std::to_string(bytes) + " bytes");
  std::memset(p, 0xFF, rounded);  // NaN as float, -1 as int: "uninitialised" is visible
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  t.live[reinterpret_cast<std::uintptr_t>(p)] = bytes;
  return p;
}

void device_free(void* ptr) noexcept {
  if (!ptr) return;
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.live.find(reinterpret_cast<std::uintptr_t>(ptr));
  if (it == t.live.end()) {
    // A double free or a pointer that device_alloc never returned: cannot throw from noexcept.
    std::fprintf(stderr, "device_free (host double): %p is not a live device allocation\n", ptr);
    std::abort();
  }
  const std::size_t bytes = it->second;
  t.live.erase(it);
  std::memset(ptr, 0xFF, bytes);
  t.quarantine.push_back(ptr);
  t.quarantine_sizes.push_back(bytes);
  t.quarantine_bytes += bytes;
  while (!t.quarantine.empty() &&
         (t.quarantine_bytes > kQuarantineBytes || t.quarantine.size() > kQuarantineBlocks)) {
    std::free(t.quarantine.front());
    t.quarantine_bytes -= t.quarantine_sizes.front();
    t.quarantine.pop_front();
    t.quarantine_sizes.pop_front();
  }
}

namespace {
// The host side of a copy must NOT be device memory (it would work here, and fail on a GPU).
void require_host(const char* fn, const char* arg, const void* p, std::size_t n) {
  if (n == 0) return;
  if (!p) throw std::logic_error(std::string(fn) + ": argument " + arg + " is a null host pointer");
  const auto u = reinterpret_cast<std::uintptr_t>(p);
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.live.upper_bound(u);
  if (it != t.live.begin() && u < std::prev(it)->first + std::prev(it)->second)
    throw std::logic_error(std::string(fn) + ": argument " + arg + " is a device pointer (" +
                           hex(p) + "), a host pointer was expected");
}

template <class T>
void copy_in(const char* fn, T* dst, const T* src_host, std::size_t n) {
  if (n == 0) return;
  require_span(fn, "dst", dst, 0, static_cast<long long>(n), sizeof(T));
  require_host(fn, "src_host", src_host, n);
  std::memcpy(dst, src_host, n * sizeof(T));
}

template <class T>
void copy_out(const char* fn, T* dst_host, const T* src, std::size_t n) {
  if (n == 0) return;
  require_span(fn, "src", src, 0, static_cast<long long>(n), sizeof(T));
  require_host(fn, "dst_host", dst_host, n);
  std::memcpy(dst_host, src, n * sizeof(T));
}
}  // namespace

void copy_to_device(float* dst, const float* src_host, std::size_t n) {
  copy_in("copy_to_device", dst, src_host, n);
}
void copy_to_device(int* dst, const int* src_host, std::size_t n) {
  copy_in("copy_to_device", dst, src_host, n);
}
void copy_to_host(float* dst_host, const float* src, std::size_t n) {
  copy_out("copy_to_host", dst_host, src, n);
}
void copy_to_host(int* dst_host, const int* src, std::size_t n) {
  copy_out("copy_to_host", dst_host, src, n);
}

void fill_zero(void* dst, std::size_t bytes) {
  if (bytes == 0) return;
  require_span("fill_zero", "dst", dst, 0, static_cast<long long>(bytes), 1);
  std::memset(dst, 0, bytes);
}

// ================================================================ element-wise

void add_forward(float* out, const float* a, const float* b, int N, int C, bool b_is_row) {
  binary_forward("add_forward", out, a, b, N, C, b_is_row, [](float x, float y) { return x + y; });
}
void sub_forward(float* out, const float* a, const float* b, int N, int C, bool b_is_row) {
  binary_forward("sub_forward", out, a, b, N, C, b_is_row, [](float x, float y) { return x - y; });
}
void mul_forward(float* out, const float* a, const float* b, int N, int C, bool b_is_row) {
  binary_forward("mul_forward", out, a, b, N, C, b_is_row, [](float x, float y) { return x * y; });
}
void div_forward(float* out, const float* a, const float* b, int N, int C, bool b_is_row) {
  binary_forward("div_forward", out, a, b, N, C, b_is_row, [](float x, float y) { return x / y; });
}
void add_backward(float* da, float* db, const float* dout, int N, int C, bool b_is_row) {
  binary_backward(
      "add_backward", da, db, dout, nullptr, nullptr, N, C, b_is_row,
      [](double g, double, double) { return g; }, [](double g, double, double) { return g; });
}
void sub_backward(float* da, float* db, const float* dout, int N, int C, bool b_is_row) {
  binary_backward(
      "sub_backward", da, db, dout, nullptr, nullptr, N, C, b_is_row,
      [](double g, double, double) { return g; }, [](double g, double, double) { return -g; });
}
void mul_backward(float* da, float* db, const float* dout, const float* a, const float* b, int N,
                  int C, bool b_is_row) {
  if (!a && db && static_cast<long long>(N) * C > 0)
    bad_arg("mul_backward", "a", "null pointer (db needs a)");
  if (!b && da && static_cast<long long>(N) * C > 0)
    bad_arg("mul_backward", "b", "null pointer (da needs b)");
  binary_backward(
      "mul_backward", da, db, dout, a, b, N, C, b_is_row,
      [](double g, double, double y) { return g * y; },
      [](double g, double x, double) { return g * x; });
}
void div_backward(float* da, float* db, const float* dout, const float* a, const float* b, int N,
                  int C, bool b_is_row) {
  if (!b && (da || db) && static_cast<long long>(N) * C > 0)
    bad_arg("div_backward", "b", "null pointer");
  if (!a && db && static_cast<long long>(N) * C > 0)
    bad_arg("div_backward", "a", "null pointer (db needs a)");
  binary_backward(
      "div_backward", da, db, dout, a, b, N, C, b_is_row,
      [](double g, double, double y) { return g / y; },
      [](double g, double x, double y) { return -g * x / (y * y); });
}

void relu_forward(float* out, const float* x, std::size_t n) {
  unary_forward("relu_forward", out, x, n, [](double v) { return v > 0 ? v : 0.0; });
}
void gelu_forward(float* out, const float* x, std::size_t n) {
  unary_forward("gelu_forward", out, x, n, gelu);
}
void tanh_forward(float* out, const float* x, std::size_t n) {
  unary_forward("tanh_forward", out, x, n, [](double v) { return std::tanh(v); });
}
void sigmoid_forward(float* out, const float* x, std::size_t n) {
  unary_forward("sigmoid_forward", out, x, n, [](double v) { return 1.0 / (1.0 + std::exp(-v)); });
}
void exp_forward(float* out, const float* x, std::size_t n) {
  unary_forward("exp_forward", out, x, n, [](double v) { return std::exp(v); });
}
void log_forward(float* out, const float* x, std::size_t n) {
  unary_forward("log_forward", out, x, n, [](double v) { return std::log(v); });
}
void relu_backward(float* dx, const float* x, const float* dout, std::size_t n) {
  unary_backward("relu_backward", dx, "x", x, dout, n, [](double v) { return v > 0 ? 1.0 : 0.0; });
}
void gelu_backward(float* dx, const float* x, const float* dout, std::size_t n) {
  unary_backward("gelu_backward", dx, "x", x, dout, n, gelu_grad);
}
void log_backward(float* dx, const float* x, const float* dout, std::size_t n) {
  unary_backward("log_backward", dx, "x", x, dout, n, [](double v) { return 1.0 / v; });
}
void tanh_backward(float* dx, const float* y, const float* dout, std::size_t n) {
  unary_backward("tanh_backward", dx, "y", y, dout, n, [](double v) { return 1.0 - v * v; });
}
void sigmoid_backward(float* dx, const float* y, const float* dout, std::size_t n) {
  unary_backward("sigmoid_backward", dx, "y", y, dout, n, [](double v) { return v * (1.0 - v); });
}
void exp_backward(float* dx, const float* y, const float* dout, std::size_t n) {
  unary_backward("exp_backward", dx, "y", y, dout, n, [](double v) { return v; });
}
void scale_forward(float* out, const float* x, float s, std::size_t n) {
  if (n == 0) return;
  require("scale_forward", "out", out, static_cast<long long>(n));
  require("scale_forward", "x", x, static_cast<long long>(n));
  for (Size i = 0; i < n; ++i) out[i] = s * x[i];
}
void scale_backward(float* dx, const float* dout, float s, std::size_t n) {
  if (n == 0) return;
  require("scale_backward", "dx", dx, static_cast<long long>(n));
  require("scale_backward", "dout", dout, static_cast<long long>(n));
  for (Size i = 0; i < n; ++i) dx[i] += s * dout[i];
}

void map_forward(float* out, const float* x, MapOp op, float p0, float p1, std::size_t n) {
  const char* fn = "map_forward";
  if (n == 0) return;
  require(fn, "out", out, static_cast<long long>(n));
  require(fn, "x", x, static_cast<long long>(n));
  for (Size i = 0; i < n; ++i) {
    const float v = x[i];
    switch (op) {
      case MapOp::affine:
        out[i] = p0 * v + p1;
        break;
      case MapOp::square:
        out[i] = v * v;
        break;
      case MapOp::sqrt:
        out[i] = std::sqrt(v);
        break;
      case MapOp::clamp:
        out[i] = std::min(std::max(v, p0), p1);
        break;
      default:
        bad_size(fn, "unknown MapOp");
    }
  }
}

void map_backward(float* dx, const float* x, const float* dout, MapOp op, float p0, float p1,
                  std::size_t n) {
  const char* fn = "map_backward";
  if (n == 0) return;
  require(fn, "dx", dx, static_cast<long long>(n));
  require(fn, "x", x, static_cast<long long>(n));
  require(fn, "dout", dout, static_cast<long long>(n));
  for (Size i = 0; i < n; ++i) {
    const double v = x[i];
    double d = 0.0;
    switch (op) {
      case MapOp::affine:
        d = p0;
        break;
      case MapOp::square:
        d = 2.0 * v;
        break;
      case MapOp::sqrt:
        d = 0.5 / std::sqrt(v);
        break;
      case MapOp::clamp:
        d = (p0 <= v && v <= p1) ? 1.0 : 0.0;
        break;
      default:
        bad_size(fn, "unknown MapOp");
    }
    dx[i] = static_cast<float>(dx[i] + d * dout[i]);
  }
}

void minmax_forward(float* out, const float* a, const float* b, int N, int C, bool b_is_row,
                    bool is_max) {
  binary_forward(is_max ? "minmax_forward (max)" : "minmax_forward (min)", out, a, b, N, C,
                 b_is_row,
                 [is_max](float x, float y) { return (is_max ? x >= y : x <= y) ? x : y; });
}

void minmax_backward(float* da, float* db, const float* dout, const float* a, const float* b, int N,
                     int C, bool b_is_row, bool is_max) {
  const char* fn = is_max ? "minmax_backward (max)" : "minmax_backward (min)";
  if (static_cast<long long>(N) * C > 0 && (da || db)) {  // who wins needs both inputs
    require(fn, "a", a, static_cast<long long>(N) * C);
    require(fn, "b", b, b_is_row ? C : static_cast<long long>(N) * C);
  }
  auto a_wins = [is_max](double x, double y) { return is_max ? x >= y : x <= y; };
  binary_backward(
      fn, da, db, dout, a, b, N, C, b_is_row,
      [a_wins](double g, double x, double y) { return a_wins(x, y) ? g : 0.0; },
      [a_wins](double g, double x, double y) { return a_wins(x, y) ? 0.0 : g; });
}

// ================================================================ layout

void copy_2d(float* dst, int ld_dst, const float* src, int ld_src, int rows, int cols,
             bool accumulate) {
  const char* fn = "copy_2d";
  nonneg(fn, {rows, cols});
  if (ld_dst < cols || ld_src < cols)
    bad_size(fn, "leading dimensions ld_dst " + std::to_string(ld_dst) + ", ld_src " +
                     std::to_string(ld_src) + " must be >= cols " + std::to_string(cols));
  if (rows == 0 || cols == 0) return;
  const long long nd = static_cast<long long>(rows - 1) * ld_dst + cols;
  const long long ns = static_cast<long long>(rows - 1) * ld_src + cols;
  require(fn, "dst", dst, nd);
  require(fn, "src", src, ns);
  if (!(dst == src && ld_dst == ld_src)) require_disjoint(fn, "dst", dst, 0, nd, "src", src, 0, ns);
  for (Size r = 0; r < sz(rows); ++r)
    for (Size c = 0; c < sz(cols); ++c) {
      float& d = dst[r * sz(ld_dst) + c];
      const float s = src[r * sz(ld_src) + c];
      d = accumulate ? d + s : s;
    }
}

void swap_axes(float* out, const float* x, int A, int n0, int B, int n1, int C, bool accumulate) {
  const char* fn = "swap_axes";
  nonneg(fn, {A, n0, B, n1, C});
  const long long n = static_cast<long long>(A) * n0 * B * n1 * C;
  if (n == 0) return;
  require(fn, "out", out, n);
  require(fn, "x", x, n);
  const bool identity = n0 == 1 || n1 == 1;
  if (!(identity && out == x)) require_disjoint(fn, "out", out, 0, n, "x", x, 0, n);
  for (Size a = 0; a < sz(A); ++a)
    for (Size i = 0; i < sz(n0); ++i)
      for (Size b = 0; b < sz(B); ++b)
        for (Size j = 0; j < sz(n1); ++j) {
          const float* xs = x + (((a * n0 + i) * B + b) * n1 + j) * C;  // x[a][i][b][j][:]
          float* os = out + (((a * n1 + j) * B + b) * n0 + i) * C;      // out[a][j][b][i][:]
          for (Size c = 0; c < sz(C); ++c) os[c] = accumulate ? os[c] + xs[c] : xs[c];
        }
}

namespace {
// out (dims...) element count and the span [lo, hi) of x offsets it reads; throws on bad shapes.
struct ExpandPlan {
  long long n = 1;
  long long x_lo = 0, x_hi = 1;
};

ExpandPlan plan_expand(const char* fn, const BroadcastShape& s) {
  if (s.ndim < 0 || s.ndim > kMaxBroadcastDims)
    bad_size(fn, "ndim " + std::to_string(s.ndim) + " outside [0, " +
                     std::to_string(kMaxBroadcastDims) + "]");
  ExpandPlan p;
  for (int k = 0; k < s.ndim; ++k) {
    if (s.dims[k] < 0) bad_size(fn, "negative dim " + std::to_string(s.dims[k]));
    p.n *= s.dims[k];
  }
  if (p.n == 0) return p;
  for (int k = 0; k < s.ndim; ++k) {
    const long long reach = static_cast<long long>(s.dims[k] - 1) * s.x_strides[k];
    if (reach < 0)
      p.x_lo += reach;
    else
      p.x_hi += reach;
  }
  return p;
}

// Calls f(out_index, x_offset) for every element of out in row-major order.
template <class F>
void for_each_broadcast(const BroadcastShape& s, long long n, F f) {
  int idx[kMaxBroadcastDims] = {};
  long long off = 0;
  for (long long i = 0; i < n; ++i) {
    f(i, off);
    for (int k = s.ndim - 1; k >= 0; --k) {  // odometer step
      if (++idx[k] < s.dims[k]) {
        off += s.x_strides[k];
        break;
      }
      off -= static_cast<long long>(idx[k] - 1) * s.x_strides[k];
      idx[k] = 0;
    }
  }
}
}  // namespace

void expand_forward(float* out, const float* x, const BroadcastShape& shape) {
  const char* fn = "expand_forward";
  const ExpandPlan p = plan_expand(fn, shape);
  if (p.n == 0) return;
  require(fn, "out", out, p.n);
  require_span(fn, "x", x, p.x_lo, p.x_hi, sizeof(float));
  require_disjoint(fn, "out", out, 0, p.n, "x", x, p.x_lo, p.x_hi);
  for_each_broadcast(shape, p.n, [&](long long i, long long off) { out[i] = x[off]; });
}

void expand_backward(float* dx, const float* dout, const BroadcastShape& shape) {
  const char* fn = "expand_backward";
  const ExpandPlan p = plan_expand(fn, shape);
  if (p.n == 0) return;
  require(fn, "dout", dout, p.n);
  require_span(fn, "dx", dx, p.x_lo, p.x_hi, sizeof(float));
  require_disjoint(fn, "dx", dx, p.x_lo, p.x_hi, "dout", dout, 0, p.n);
  for_each_broadcast(shape, p.n, [&](long long i, long long off) { dx[off] += dout[i]; });
}

// ================================================================ reductions

void sum_forward(float* out, const float* x, int N, int C) {
  nonneg("sum_forward", {N, C});
  if (N == 0 || C == 0) return;
  check_rows("sum_forward", "out", out, x, N, C);
  for (Size i = 0; i < sz(N); ++i) {
    double s = 0;
    for (Size j = 0; j < sz(C); ++j) s += x[i * C + j];
    out[i] = static_cast<float>(s);
  }
}

void mean_forward(float* out, const float* x, int N, int C) {
  nonneg("mean_forward", {N, C});
  if (N == 0 || C == 0) return;
  check_rows("mean_forward", "out", out, x, N, C);
  for (Size i = 0; i < sz(N); ++i) {
    double s = 0;
    for (Size j = 0; j < sz(C); ++j) s += x[i * C + j];
    out[i] = static_cast<float>(s / C);
  }
}

void max_forward(float* out, int* argmax, const float* x, int N, int C) {
  const char* fn = "max_forward";
  nonneg(fn, {N, C});
  if (N == 0 || C == 0) return;
  check_rows(fn, "out", out, x, N, C);
  require(fn, "argmax", argmax, N);
  for (Size i = 0; i < sz(N); ++i) {
    int a = 0;
    for (Size j = 1; j < sz(C); ++j)
      if (x[i * C + j] > x[i * C + sz(a)]) a = static_cast<int>(j);
    out[i] = x[i * C + sz(a)];
    argmax[i] = a;
  }
}

void sum_backward(float* dx, const float* dout, int N, int C) {
  nonneg("sum_backward", {N, C});
  if (N == 0 || C == 0) return;
  check_rows("sum_backward", "dout", dout, dx, N, C);
  for (Size i = 0; i < sz(N); ++i)
    for (Size j = 0; j < sz(C); ++j) dx[i * C + j] += dout[i];
}

void mean_backward(float* dx, const float* dout, int N, int C) {
  nonneg("mean_backward", {N, C});
  if (N == 0 || C == 0) return;
  check_rows("mean_backward", "dout", dout, dx, N, C);
  for (Size i = 0; i < sz(N); ++i)
    for (Size j = 0; j < sz(C); ++j)
      dx[i * C + j] = static_cast<float>(dx[i * C + j] + double(dout[i]) / C);
}

void max_backward(float* dx, const float* dout, const int* argmax, int N, int C) {
  const char* fn = "max_backward";
  nonneg(fn, {N, C});
  if (N == 0 || C == 0) return;
  require(fn, "dx", dx, static_cast<long long>(N) * C);
  require(fn, "dout", dout, N);
  require(fn, "argmax", argmax, N);
  for (Size i = 0; i < sz(N); ++i) {
    require_index(fn, "argmax", static_cast<long long>(i), argmax[i], C, "columns C");
    dx[i * C + sz(argmax[i])] += dout[i];
  }
}

void sum_all_forward(float* out, const float* x, std::size_t n) {
  if (n == 0) return;
  require("sum_all_forward", "out", out, 1);
  require("sum_all_forward", "x", x, static_cast<long long>(n));
  double s = 0;
  for (Size i = 0; i < n; ++i) s += x[i];
  out[0] = static_cast<float>(s);
}

void sum_all_backward(float* dx, const float* dout, std::size_t n) {
  if (n == 0) return;
  require("sum_all_backward", "dx", dx, static_cast<long long>(n));
  require("sum_all_backward", "dout", dout, 1);
  const float g = dout[0];
  for (Size i = 0; i < n; ++i) dx[i] += g;
}

// ================================================================ softmax

namespace {
void softmax_rows(const char* fn, float* out, const float* x, int N, int C, bool log) {
  nonneg(fn, {N, C});
  if (N == 0 || C == 0) return;
  require(fn, "out", out, static_cast<long long>(N) * C);
  require(fn, "x", x, static_cast<long long>(N) * C);
  for (Size i = 0; i < sz(N); ++i) {
    const float* xr = x + i * C;
    float* yr = out + i * C;
    double m = -FLT_MAX;  // as the kernel: an all -inf row gives zeros (softmax), not NaN
    for (Size j = 0; j < sz(C); ++j) m = std::max(m, static_cast<double>(xr[j]));
    double s = 0;
    for (Size j = 0; j < sz(C); ++j) s += std::exp(xr[j] - m);
    if (log) {
      const double lse = m + std::log(s);
      for (Size j = 0; j < sz(C); ++j) yr[j] = static_cast<float>(xr[j] - lse);
    } else {
      const double inv = s > 0 ? 1.0 / s : 0.0;
      for (Size j = 0; j < sz(C); ++j) yr[j] = static_cast<float>(std::exp(xr[j] - m) * inv);
    }
  }
}

void softmax_rows_backward(const char* fn, float* dx, const float* y, const float* dout, int N,
                           int C, bool log) {
  nonneg(fn, {N, C});
  if (N == 0 || C == 0) return;
  const long long n = static_cast<long long>(N) * C;
  require(fn, "dx", dx, n);
  require(fn, "out", y, n);
  require(fn, "dout", dout, n);
  for (Size i = 0; i < sz(N); ++i) {
    const Size o = i * C;
    double acc = 0;
    for (Size j = 0; j < sz(C); ++j)
      acc += log ? double(dout[o + j]) : double(dout[o + j]) * y[o + j];
    for (Size j = 0; j < sz(C); ++j) {
      const double g = dout[o + j], yj = y[o + j];
      const double d = log ? g - std::exp(yj) * acc : yj * (g - acc);
      dx[o + j] = static_cast<float>(dx[o + j] + d);
    }
  }
}
}  // namespace

void softmax_forward(float* out, const float* x, int N, int C) {
  softmax_rows("softmax_forward", out, x, N, C, false);
}
void softmax_backward(float* dx, const float* out, const float* dout, int N, int C) {
  softmax_rows_backward("softmax_backward", dx, out, dout, N, C, false);
}
void log_softmax_forward(float* out, const float* x, int N, int C) {
  softmax_rows("log_softmax_forward", out, x, N, C, true);
}
void log_softmax_backward(float* dx, const float* out, const float* dout, int N, int C) {
  softmax_rows_backward("log_softmax_backward", dx, out, dout, N, C, true);
}

// ================================================================ layer norm

void layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* weight,
                       const float* bias, int N, int C, float eps) {
  const char* fn = "layernorm_forward";
  nonneg(fn, {N, C});
  if (N == 0 || C == 0) return;
  const long long n = static_cast<long long>(N) * C;
  require(fn, "out", out, n);
  require(fn, "mean", mean, N);
  require(fn, "rstd", rstd, N);
  require(fn, "x", x, n);
  require(fn, "weight", weight, C);
  require(fn, "bias", bias, C);
  for (Size i = 0; i < sz(N); ++i) {
    const float* xr = x + i * C;
    double m = 0, v = 0;
    for (Size j = 0; j < sz(C); ++j) m += xr[j];
    m /= C;
    for (Size j = 0; j < sz(C); ++j) v += (xr[j] - m) * (xr[j] - m);
    const double rs = 1.0 / std::sqrt(v / C + eps);
    for (Size j = 0; j < sz(C); ++j)
      out[i * C + j] = static_cast<float>((xr[j] - m) * rs * weight[j] + bias[j]);
    mean[i] = static_cast<float>(m);
    rstd[i] = static_cast<float>(rs);
  }
}

void layernorm_backward(float* dx, float* dweight, float* dbias, const float* dout, const float* x,
                        const float* weight, const float* mean, const float* rstd, int N, int C) {
  const char* fn = "layernorm_backward";
  nonneg(fn, {N, C});
  if (N == 0 || C == 0) return;
  const long long n = static_cast<long long>(N) * C;
  require(fn, "dx", dx, n);
  if (dweight) require(fn, "dweight", dweight, C);
  if (dbias) require(fn, "dbias", dbias, C);
  require(fn, "dout", dout, n);
  require(fn, "x", x, n);
  require(fn, "weight", weight, C);
  require(fn, "mean", mean, N);
  require(fn, "rstd", rstd, N);
  std::vector<double> dw(sz(C), 0.0), db(sz(C), 0.0);
  for (Size i = 0; i < sz(N); ++i) {
    const Size o = i * C;
    const double m = mean[i], rs = rstd[i];
    double sg = 0, sgx = 0;
    for (Size j = 0; j < sz(C); ++j) {
      const double g = double(dout[o + j]) * weight[j], xhat = (x[o + j] - m) * rs;
      sg += g;
      sgx += g * xhat;
      dw[j] += double(dout[o + j]) * xhat;
      db[j] += dout[o + j];
    }
    sg /= C;
    sgx /= C;
    for (Size j = 0; j < sz(C); ++j) {
      const double xhat = (x[o + j] - m) * rs;
      dx[o + j] =
          static_cast<float>(dx[o + j] + rs * (double(dout[o + j]) * weight[j] - sg - xhat * sgx));
    }
  }
  for (Size j = 0; j < sz(C); ++j) {
    if (dweight) dweight[j] = static_cast<float>(dweight[j] + dw[j]);
    if (dbias) dbias[j] = static_cast<float>(dbias[j] + db[j]);
  }
}

// ================================================================ rows by index

namespace {
// out (M,C) = x rows idx (M); x's row count is what its allocation holds from x on.
void gather(const char* fn, float* out, const float* x, const int* idx, int M, int C) {
  nonneg(fn, {M, C});
  if (M == 0 || C == 0) return;
  require(fn, "out", out, static_cast<long long>(M) * C);
  require(fn, "idx", idx, M);
  const long long rows = rows_from(fn, "x", x, C);
  for (Size m = 0; m < sz(M); ++m)
    require_index(fn, "idx", static_cast<long long>(m), idx[m], rows, "rows of x's allocation");
  long long hi = 0;
  for (Size m = 0; m < sz(M); ++m) hi = std::max<long long>(hi, idx[m] + 1);
  require_disjoint(fn, "out", out, 0, static_cast<long long>(M) * C, "x", x, 0, hi * C);
  for (Size m = 0; m < sz(M); ++m)
    std::memcpy(out + m * C, x + sz(idx[m]) * C, sz(C) * sizeof(float));
}

// out[idx[m], :] += src (M,C).
void scatter_add(const char* fn, const char* out_name, float* out, const float* src, const int* idx,
                 int M, int C) {
  nonneg(fn, {M, C});
  if (M == 0 || C == 0) return;
  require(fn, "src", src, static_cast<long long>(M) * C);
  require(fn, "idx", idx, M);
  const long long rows = rows_from(fn, out_name, out, C);
  for (Size m = 0; m < sz(M); ++m)
    require_index(fn, "idx", static_cast<long long>(m), idx[m], rows,
                  "rows of the output's allocation");
  for (Size m = 0; m < sz(M); ++m) {
    float* o = out + sz(idx[m]) * C;
    const float* s = src + m * C;
    for (Size c = 0; c < sz(C); ++c) o[c] += s[c];
  }
}
}  // namespace

void gather_rows(float* out, const float* x, const int* idx, int M, int C) {
  gather("gather_rows", out, x, idx, M, C);
}
void scatter_add_rows(float* out, const float* src, const int* idx, int M, int C) {
  scatter_add("scatter_add_rows", "out", out, src, idx, M, C);
}
void embedding_forward(float* out, const float* table, const int* idx, int M, int C) {
  gather("embedding_forward", out, table, idx, M, C);
}
void embedding_backward(float* dtable, const float* dout, const int* idx, int M, int C) {
  scatter_add("embedding_backward", "dtable", dtable, dout, idx, M, C);
}

void take_along_last_forward(float* out, const float* x, const int* idx, int N, int C) {
  const char* fn = "take_along_last_forward";
  nonneg(fn, {N, C});
  if (N == 0) return;
  require(fn, "out", out, N);
  require(fn, "idx", idx, N);
  require(fn, "x", x, static_cast<long long>(N) * C);
  require_disjoint(fn, "out", out, 0, N, "x", x, 0, static_cast<long long>(N) * C);
  for (Size n = 0; n < sz(N); ++n) {
    require_index(fn, "idx", static_cast<long long>(n), idx[n], C, "columns C");
    out[n] = x[n * C + sz(idx[n])];
  }
}

void take_along_last_backward(float* dx, const float* dout, const int* idx, int N, int C) {
  const char* fn = "take_along_last_backward";
  nonneg(fn, {N, C});
  if (N == 0) return;
  require(fn, "dx", dx, static_cast<long long>(N) * C);
  require(fn, "dout", dout, N);
  require(fn, "idx", idx, N);
  for (Size n = 0; n < sz(N); ++n) {
    require_index(fn, "idx", static_cast<long long>(n), idx[n], C, "columns C");
    dx[n * C + sz(idx[n])] += dout[n];
  }
}

// ================================================================ CSR segments

namespace {
// Checks row_ptr (R+1, non-decreasing, >= 0), col_idx (its entries) and, when x_name is given,
// every neighbour against the rows that allocation holds. Returns nothing; throws.
void check_csr(const char* fn, const int* row_ptr, const int* col_idx, int R, int C,
               const char* x_name, const float* x) {
  require(fn, "row_ptr", row_ptr, static_cast<long long>(R) + 1);
  for (Size r = 0; r < sz(R); ++r)
    if (row_ptr[r] < 0 || row_ptr[r + 1] < row_ptr[r])
      bad_index(fn, "row_ptr",
                "row_ptr[" + std::to_string(r) + "] = " + std::to_string(row_ptr[r]) +
                    ", row_ptr[" + std::to_string(r + 1) + "] = " + std::to_string(row_ptr[r + 1]) +
                    " (must be >= 0 and non-decreasing)");
  const long long e0 = row_ptr[0], e1 = row_ptr[R];
  if (e1 <= e0) return;
  require_span(fn, "col_idx", col_idx, e0, e1, sizeof(int));
  const long long rows = rows_from(fn, x_name, x, C);
  for (long long e = e0; e < e1; ++e)
    require_index(fn, "col_idx", e, col_idx[e], rows, "rows of x's allocation");
}
}  // namespace

void segment_mean_forward(float* out, const float* x, const int* row_ptr, const int* col_idx, int R,
                          int C) {
  const char* fn = "segment_mean_forward";
  nonneg(fn, {R, C});
  if (R == 0 || C == 0) return;
  require(fn, "out", out, static_cast<long long>(R) * C);
  check_csr(fn, row_ptr, col_idx, R, C, "x", x);
  std::vector<double> acc(sz(C));
  for (Size r = 0; r < sz(R); ++r) {
    const int e0 = row_ptr[r], e1 = row_ptr[r + 1];
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int e = e0; e < e1; ++e) {
      const float* xr = x + sz(col_idx[e]) * C;
      for (Size c = 0; c < sz(C); ++c) acc[c] += xr[c];
    }
    for (Size c = 0; c < sz(C); ++c)
      out[r * C + c] = e1 > e0 ? static_cast<float>(acc[c] / (e1 - e0)) : 0.0f;
  }
}

void segment_mean_backward(float* dx, const float* dout, const int* row_ptr, const int* col_idx,
                           int R, int C) {
  const char* fn = "segment_mean_backward";
  nonneg(fn, {R, C});
  if (R == 0 || C == 0) return;
  require(fn, "dout", dout, static_cast<long long>(R) * C);
  check_csr(fn, row_ptr, col_idx, R, C, "dx", dx);
  for (Size r = 0; r < sz(R); ++r) {
    const int e0 = row_ptr[r], e1 = row_ptr[r + 1];
    if (e1 <= e0) continue;
    const double inv = 1.0 / (e1 - e0);
    for (int e = e0; e < e1; ++e) {
      float* d = dx + sz(col_idx[e]) * C;
      for (Size c = 0; c < sz(C); ++c) d[c] = static_cast<float>(d[c] + dout[r * C + c] * inv);
    }
  }
}

void segment_max_forward(float* out, int* argmax, const float* x, const int* row_ptr,
                         const int* col_idx, int R, int C) {
  const char* fn = "segment_max_forward";
  nonneg(fn, {R, C});
  if (R == 0 || C == 0) return;
  require(fn, "out", out, static_cast<long long>(R) * C);
  require(fn, "argmax", argmax, static_cast<long long>(R) * C);
  check_csr(fn, row_ptr, col_idx, R, C, "x", x);
  for (Size r = 0; r < sz(R); ++r) {
    const int e0 = row_ptr[r], e1 = row_ptr[r + 1];
    for (Size c = 0; c < sz(C); ++c) {
      int a = -1;
      for (int e = e0; e < e1; ++e) {
        const int nb = col_idx[e];
        if (a < 0 || x[sz(nb) * C + c] > x[sz(a) * C + c]) a = nb;  // the first maximum wins
      }
      out[r * C + c] = a < 0 ? 0.0f : x[sz(a) * C + c];
      argmax[r * C + c] = a;
    }
  }
}

void segment_max_backward(float* dx, const float* dout, const int* argmax, int R, int C) {
  const char* fn = "segment_max_backward";
  nonneg(fn, {R, C});
  if (R == 0 || C == 0) return;
  const long long n = static_cast<long long>(R) * C;
  require(fn, "dout", dout, n);
  require(fn, "argmax", argmax, n);
  const long long rows = rows_from(fn, "dx", dx, C);
  for (Size i = 0; i < sz(n); ++i) {
    const int a = argmax[i];
    if (a == -1) continue;  // empty segment
    require_index(fn, "argmax", static_cast<long long>(i), a, rows,
                  "rows of dx's allocation, or -1");
    dx[sz(a) * C + i % sz(C)] += dout[i];
  }
}

// ================================================================ optimizer

void adam_update(float* params, float* m, float* v, const float* grads, std::size_t n, float lr,
                 float beta1, float beta2, float eps, float weight_decay, bool decoupled,
                 long long t) {
  const char* fn = "adam_update";
  if (t < 1) bad_size(fn, "step number t = " + std::to_string(t) + " must be >= 1");
  if (n == 0) return;
  const long long nn = static_cast<long long>(n);
  require(fn, "params", params, nn);
  require(fn, "m", m, nn);
  require(fn, "v", v, nn);
  require(fn, "grads", grads, nn);
  const std::pair<const char*, const float*> bufs[] = {
      {"params", params}, {"m", m}, {"v", v}, {"grads", grads}};
  for (int i = 0; i < 3; ++i)
    for (int j = i + 1; j < 4; ++j)
      require_disjoint(fn, bufs[i].first, bufs[i].second, 0, nn, bufs[j].first, bufs[j].second, 0,
                       nn);
  // float, in the operation order of nn::adam_update (nn/kernels.cpp)
  const float bc1 =
      static_cast<float>(1.0 - std::pow(static_cast<double>(beta1), static_cast<double>(t)));
  const float bc2 =
      static_cast<float>(1.0 - std::pow(static_cast<double>(beta2), static_cast<double>(t)));
  for (Size i = 0; i < n; ++i) {
    float g = grads[i];
    if (!decoupled) g += weight_decay * params[i];
    m[i] = beta1 * m[i] + (1.0f - beta1) * g;
    v[i] = beta2 * v[i] + (1.0f - beta2) * g * g;
    const float mhat = m[i] / bc1, vhat = v[i] / bc2;
    if (decoupled) params[i] -= lr * weight_decay * params[i];
    params[i] -= lr * mhat / (std::sqrt(vhat) + eps);
  }
}

// ================================================================ GEMM

void gemm_strided_batched(float* C, const float* A, const float* B, int batch, int M, int N, int K,
                          bool trans_a, bool trans_b, float alpha, float beta, long long stride_a,
                          long long stride_b, long long stride_c) {
  const char* fn = "gemm";
  nonneg(fn, {batch, M, N, K});
  if (batch == 0 || M == 0 || N == 0) return;
  const long long last = batch - 1;
  auto span = [last](long long stride, long long count, long long& lo, long long& hi) {
    lo = std::min(0LL, last * stride);
    hi = std::max(0LL, last * stride) + count;
  };
  long long c_lo, c_hi, a_lo = 0, a_hi = 0, b_lo = 0, b_hi = 0;
  span(stride_c, static_cast<long long>(M) * N, c_lo, c_hi);
  require_span(fn, "C", C, c_lo, c_hi, sizeof(float));
  if (batch > 1 && std::llabs(stride_c) < static_cast<long long>(M) * N)
    throw std::logic_error("gemm: stride_c " + std::to_string(stride_c) +
                           " < M*N = " + std::to_string(static_cast<long long>(M) * N) +
                           ": the batch's C matrices overlap (a race on the GPU)");
  const bool reads_ab =
      K > 0 && alpha != 0.0f;  // BLAS: alpha == 0 (or K == 0) reads neither A nor B
  if (reads_ab) {
    span(stride_a, static_cast<long long>(M) * K, a_lo, a_hi);
    span(stride_b, static_cast<long long>(K) * N, b_lo, b_hi);
    require_span(fn, "A", A, a_lo, a_hi, sizeof(float));
    require_span(fn, "B", B, b_lo, b_hi, sizeof(float));
    require_disjoint(fn, "C", C, c_lo, c_hi, "A", A, a_lo, a_hi);
    require_disjoint(fn, "C", C, c_lo, c_hi, "B", B, b_lo, b_hi);
  }
  // op(A) packed (M,K) and op(B)^T packed (N,K), so every dot product runs over contiguous memory.
  std::vector<float> ap(reads_ab ? sz(M) * K : 0), bt(reads_ab ? sz(N) * K : 0);
  for (long long p = 0; p < batch; ++p) {
    float* Cp = C + p * stride_c;
    if (reads_ab) {
      const float* Ap = A + p * stride_a;
      const float* Bp = B + p * stride_b;
      for (Size i = 0; i < sz(M); ++i)
        for (Size k = 0; k < sz(K); ++k) ap[i * K + k] = trans_a ? Ap[k * M + i] : Ap[i * K + k];
      for (Size j = 0; j < sz(N); ++j)
        for (Size k = 0; k < sz(K); ++k) bt[j * K + k] = trans_b ? Bp[j * K + k] : Bp[k * N + j];
    }
    for (Size i = 0; i < sz(M); ++i)
      for (Size j = 0; j < sz(N); ++j) {
        double s = 0;
        if (reads_ab) {
          const float* ar = &ap[i * K];
          const float* br = &bt[j * K];
          double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
          Size k = 0;
          for (; k + 4 <= sz(K); k += 4) {
            s0 += double(ar[k]) * br[k];
            s1 += double(ar[k + 1]) * br[k + 1];
            s2 += double(ar[k + 2]) * br[k + 2];
            s3 += double(ar[k + 3]) * br[k + 3];
          }
          for (; k < sz(K); ++k) s0 += double(ar[k]) * br[k];
          s = (s0 + s1) + (s2 + s3);
        }
        float& c = Cp[i * N + j];
        // beta == 0: C is not read (BLAS), so uninitialised (NaN) outputs are fine.
        c = static_cast<float>(alpha * s + (beta == 0.0f ? 0.0 : double(beta) * c));
      }
  }
}

void gemm(float* C, const float* A, const float* B, int M, int N, int K, bool trans_a, bool trans_b,
          float alpha, float beta) {
  gemm_strided_batched(C, A, B, 1, M, N, K, trans_a, trans_b, alpha, beta, 0, 0, 0);
}

// ================================================================ attention

namespace {
void attention_sizes(const char* fn, int BH, int Tq, int Tk, int D, bool causal) {
  if (BH < 0 || Tq < 0 || Tk < 0 || D <= 0) bad_size(fn, "need BH, Tq, Tk >= 0 and D > 0");
  if (causal && Tk < Tq) bad_size(fn, "causal masking needs Tk >= Tq");
}
}  // namespace

void attention_forward(float* out, float* att, const float* q, const float* k, const float* v,
                       const float* pos_bias, int BH, int Tq, int Tk, int D, bool causal) {
  const char* fn = "attention_forward";
  attention_sizes(fn, BH, Tq, Tk, D, causal);
  if (BH == 0 || Tq == 0) return;
  const long long nq = static_cast<long long>(BH) * Tq * D,
                  nk = static_cast<long long>(BH) * Tk * D,
                  na = static_cast<long long>(BH) * Tq * Tk;
  require(fn, "out", out, nq);
  require(fn, "att", att, na);
  require(fn, "q", q, nq);
  require(fn, "k", k, nk);
  require(fn, "v", v, nk);
  if (pos_bias) require(fn, "pos_bias", pos_bias, na);
  const std::tuple<const char*, const float*, long long> inputs[] = {
      {"q", q, nq}, {"k", k, nk}, {"v", v, nk}, {"pos_bias", pos_bias, na}};
  for (const auto& [name, p, n] : inputs) {
    require_disjoint(fn, "out", out, 0, nq, name, p, 0, n);
    require_disjoint(fn, "att", att, 0, na, name, p, 0, n);
  }
  require_disjoint(fn, "out", out, 0, nq, "att", att, 0, na);
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  std::vector<double> s(sz(Tk));
  for (Size h = 0; h < sz(BH); ++h)
    for (Size i = 0; i < sz(Tq); ++i) {
      const Size visible = causal ? sz(Tk - Tq) + i + 1 : sz(Tk);  // keys [0, visible)
      const Size arow = (h * Tq + i) * Tk;
      const float* qi = q + (h * Tq + i) * D;
      double m = -DBL_MAX;
      for (Size j = 0; j < visible; ++j) {
        const float* kj = k + (h * Tk + j) * D;
        double dot = 0;
        for (Size d = 0; d < sz(D); ++d) dot += double(qi[d]) * kj[d];
        s[j] = dot * scale + (pos_bias ? double(pos_bias[arow + j]) : 0.0);
        m = std::max(m, s[j]);
      }
      double z = 0;
      for (Size j = 0; j < visible; ++j) z += std::exp(s[j] - m);
      for (Size j = 0; j < sz(Tk); ++j) s[j] = j < visible ? std::exp(s[j] - m) / z : 0.0;
      float* oi = out + (h * Tq + i) * D;
      for (Size d = 0; d < sz(D); ++d) {
        double acc = 0;
        for (Size j = 0; j < visible; ++j) acc += s[j] * v[(h * Tk + j) * D + d];
        oi[d] = static_cast<float>(acc);
      }
      for (Size j = 0; j < sz(Tk); ++j) att[arow + j] = static_cast<float>(s[j]);
    }
}

void attention_backward(float* dq, float* dk, float* dv, float* dpos_bias, float* scratch,
                        const float* dout, const float* q, const float* k, const float* v,
                        const float* att, int BH, int Tq, int Tk, int D) {
  const char* fn = "attention_backward";
  attention_sizes(fn, BH, Tq, Tk, D, false);
  if (BH == 0 || Tq == 0) return;
  const long long nq = static_cast<long long>(BH) * Tq * D,
                  nk = static_cast<long long>(BH) * Tk * D,
                  na = static_cast<long long>(BH) * Tq * Tk;
  require(fn, "dq", dq, nq);
  require(fn, "dk", dk, nk);
  require(fn, "dv", dv, nk);
  if (dpos_bias) require(fn, "dpos_bias", dpos_bias, na);
  require(fn, "scratch", scratch, na);
  require(fn, "dout", dout, nq);
  require(fn, "q", q, nq);
  require(fn, "k", k, nk);
  require(fn, "v", v, nk);
  require(fn, "att", att, na);
  const std::tuple<const char*, const float*, long long> inputs[] = {
      {"dout", dout, nq}, {"q", q, nq}, {"k", k, nk}, {"v", v, nk}, {"att", att, na}};
  const std::tuple<const char*, const float*, long long> outputs[] = {{"dq", dq, nq},
                                                                      {"dk", dk, nk},
                                                                      {"dv", dv, nk},
                                                                      {"dpos_bias", dpos_bias, na},
                                                                      {"scratch", scratch, na}};
  for (const auto& [oname, o, on] : outputs)
    for (const auto& [iname, ip, in] : inputs)
      require_disjoint(fn, oname, o, 0, on, iname, ip, 0, in);
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  std::vector<double> gq(sz(Tq) * D), gk(sz(Tk) * D), gv(sz(Tk) * D);
  for (Size h = 0; h < sz(BH); ++h) {
    std::fill(gq.begin(), gq.end(), 0.0);
    std::fill(gk.begin(), gk.end(), 0.0);
    std::fill(gv.begin(), gv.end(), 0.0);
    const float* qh = q + h * Tq * D;
    const float* kh = k + h * Tk * D;
    const float* vh = v + h * Tk * D;
    const float* gh = dout + h * Tq * D;
    for (Size i = 0; i < sz(Tq); ++i) {
      const Size arow = (h * Tq + i) * Tk;
      const float* p = att + arow;
      float* ds = scratch + arow;  // the work buffer: datt, then dscore
      double dot = 0;
      for (Size j = 0; j < sz(Tk); ++j) {
        double datt = 0;
        for (Size d = 0; d < sz(D); ++d) datt += double(gh[i * D + d]) * vh[j * D + d];
        ds[j] = static_cast<float>(datt);
        dot += datt * p[j];
      }
      for (Size j = 0; j < sz(Tk); ++j) {
        const double dsc = p[j] * (double(ds[j]) - dot);
        ds[j] = static_cast<float>(dsc);
        if (dpos_bias) dpos_bias[arow + j] = static_cast<float>(dpos_bias[arow + j] + dsc);
        for (Size d = 0; d < sz(D); ++d) {
          gq[i * D + d] += scale * dsc * kh[j * D + d];
          gk[j * D + d] += scale * dsc * qh[i * D + d];
          gv[j * D + d] += double(p[j]) * gh[i * D + d];
        }
      }
    }
    for (Size e = 0; e < gq.size(); ++e)
      dq[h * Tq * D + e] = static_cast<float>(dq[h * Tq * D + e] + gq[e]);
    for (Size e = 0; e < gk.size(); ++e) {
      dk[h * Tk * D + e] = static_cast<float>(dk[h * Tk * D + e] + gk[e]);
      dv[h * Tk * D + e] = static_cast<float>(dv[h * Tk * D + e] + gv[e]);
    }
  }
}

// ================================================================ relative shift

void rel_shift_forward(float* out, const float* bd, int BH, int S, int K, int P, int base,
                       float scale) {
  const char* fn = "rel_shift_forward";
  nonneg(fn, {BH, S, K, P});
  const long long no = static_cast<long long>(BH) * S * K, nb = static_cast<long long>(BH) * S * P;
  if (no == 0) return;
  require(fn, "out", out, no);
  require(fn, "bd", bd, nb);
  require_disjoint(fn, "out", out, 0, no, "bd", bd, 0, nb);
  for (Size b = 0; b < sz(BH); ++b)
    for (Size i = 0; i < sz(S); ++i)
      for (Size j = 0; j < sz(K); ++j) {
        const long long p =
            static_cast<long long>(base) + static_cast<long long>(i) - static_cast<long long>(j);
        out[(b * S + i) * K + j] = (p >= 0 && p < P) ? scale * bd[(b * S + i) * P + sz(p)] : 0.0f;
      }
}

void rel_shift_backward(float* dbd, const float* dout, int BH, int S, int K, int P, int base,
                        float scale) {
  const char* fn = "rel_shift_backward";
  nonneg(fn, {BH, S, K, P});
  const long long no = static_cast<long long>(BH) * S * K, nb = static_cast<long long>(BH) * S * P;
  if (no == 0 || nb == 0) return;
  require(fn, "dbd", dbd, nb);
  require(fn, "dout", dout, no);
  require_disjoint(fn, "dbd", dbd, 0, nb, "dout", dout, 0, no);
  for (Size b = 0; b < sz(BH); ++b)
    for (Size i = 0; i < sz(S); ++i)
      for (Size j = 0; j < sz(K); ++j) {
        const long long p =
            static_cast<long long>(base) + static_cast<long long>(i) - static_cast<long long>(j);
        if (p >= 0 && p < P) dbd[(b * S + i) * P + sz(p)] += scale * dout[(b * S + i) * K + j];
      }
}

}  // namespace gdp::cuda
