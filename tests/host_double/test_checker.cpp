// The host double's checker itself: host pointers and out-of-bounds extents passed to kernels
// throw naming the function and the argument, fresh device memory reads as NaN, out-of-range
// index values throw, and freed memory is no longer "device" memory.
#include <catch2/catch.hpp>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/kernels.h"

using namespace gdp::cuda;

namespace {

// Runs f, which must throw std::logic_error whose message contains every needle.
template <class F>
void check_logic_error(F f, std::initializer_list<const char*> needles) {
  try {
    f();
    FAIL("no exception");
  } catch (const std::logic_error& e) {
    const std::string what = e.what();
    INFO(what);
    for (const char* n : needles) CHECK(what.find(n) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("cuda/host-double checker names itself as the device", "[host-double]") {
  CHECK(cuda_device_count() == 1);
  CHECK(cuda_device_name(0) == "host double (no GPU)");
  CHECK(cuda_device_name(1).empty());
  synchronize();
}

TEST_CASE("cuda/host-double checker rejects a host pointer passed to a kernel", "[host-double]") {
  std::vector<float> host(16, 1.0f);
  DeviceBuffer out(16);
  check_logic_error([&] { relu_forward(out.data(), host.data(), 16); },
                    {"relu_forward", "argument x", "host pointer or out of bounds"});
  DeviceBuffer a(12), b(12);
  std::vector<float> c(16);
  check_logic_error([&] { gemm(c.data(), a.data(), b.data(), 4, 4, 3, false, false); },
                    {"gemm", "argument C", "host pointer or out of bounds"});
  check_logic_error([&] { gemm(out.data(), host.data(), b.data(), 4, 4, 3, false, false); },
                    {"gemm", "argument A"});
  // the host side of a copy must not be device memory
  check_logic_error([&] { copy_to_device(out.data(), a.data(), 4); },
                    {"copy_to_device", "src_host"});
  check_logic_error([&] { copy_to_host(host.data(), host.data() + 8, 4); },
                    {"copy_to_host", "argument src"});
}

TEST_CASE("cuda/host-double checker rejects an out-of-bounds extent", "[host-double]") {
  DeviceBuffer x(10), y(10), a(12), b(12), c(16);
  check_logic_error([&] { relu_forward(y.data(), x.data(), 11); },
                    {"relu_forward", "argument out"});
  check_logic_error([&] { scale_forward(y.data() + 5, x.data(), 2.0f, 6); },
                    {"scale_forward", "argument out"});
  // gemm's A is (M,K) = (4,4): 16 elements, the buffer holds 12
  check_logic_error([&] { gemm(c.data(), a.data(), b.data(), 4, 3, 4, false, false); },
                    {"gemm", "argument A"});
  // strided batched: the second B matrix runs past the end
  DeviceBuffer cc(32);
  check_logic_error(
      [&] {
        gemm_strided_batched(cc.data(), a.data(), b.data(), 2, 2, 2, 3, false, false, 1.0f, 0.0f, 6,
                             8, 16);
      },
      {"gemm", "argument B"});
  check_logic_error([&] { copy_2d(y.data(), 5, x.data(), 5, 3, 5, false); },
                    {"copy_2d", "argument dst"});
  // a stale pointer: freed memory is no longer device memory
  float* stale = nullptr;
  {
    DeviceBuffer tmp(8);
    stale = tmp.data();
  }
  check_logic_error([&] { fill_zero(stale, 8 * sizeof(float)); }, {"fill_zero", "argument dst"});
  // outputs may not overlap the inputs of a gather-type kernel
  check_logic_error([&] { swap_axes(x.data(), x.data(), 1, 2, 1, 5, 1, false); },
                    {"swap_axes", "overlaps"});
  // zero sizes touch nothing, even through null pointers
  relu_forward(nullptr, nullptr, 0);
  gemm(nullptr, nullptr, nullptr, 0, 4, 4, false, false);
}

TEST_CASE("cuda/host-double checker fresh allocations read as NaN", "[host-double]") {
  DeviceBuffer d(33);
  std::vector<float> h(33, 0.0f);
  d.download(h.data());
  for (float v : h) CHECK(std::isnan(v));
  DeviceIndexBuffer di(5);
  std::vector<int> hi(5, 0);
  di.download(hi.data());
  for (int v : hi) CHECK(v == -1);
  // a forward that overwrites leaves no NaN; gemm with beta = 0 does not read C
  DeviceBuffer a(6), b(6), c(4);
  a.zero();
  b.zero();
  gemm(c.data(), a.data(), b.data(), 2, 2, 3, false, false, 1.0f, 0.0f);
  std::vector<float> hc(4);
  c.download(hc.data());
  CHECK(hc == std::vector<float>(4, 0.0f));
}

TEST_CASE("cuda/host-double checker rejects an index out of range", "[host-double]") {
  DeviceBuffer x(4 * 3), out(2 * 3), row_out(2);
  x.zero();
  std::vector<int> bad = {1, 4};  // x has 4 rows
  DeviceIndexBuffer idx(2);
  idx.upload(bad.data());
  check_logic_error([&] { gather_rows(out.data(), x.data(), idx.data(), 2, 3); },
                    {"gather_rows", "argument idx", "4"});
  // take_along_last: indices must be in [0, C)
  std::vector<int> cols = {0, 3};
  DeviceIndexBuffer cidx(2);
  cidx.upload(cols.data());
  check_logic_error([&] { take_along_last_forward(row_out.data(), x.data(), cidx.data(), 2, 3); },
                    {"take_along_last_forward", "argument idx"});
  // CSR: a neighbour past the rows of x, and a decreasing row_ptr
  std::vector<int> rp = {0, 1, 2}, ci = {0, 9}, rp_bad = {0, 2, 1};
  DeviceIndexBuffer d_rp(3), d_ci(2), d_rp_bad(3);
  d_rp.upload(rp.data());
  d_ci.upload(ci.data());
  d_rp_bad.upload(rp_bad.data());
  check_logic_error(
      [&] { segment_mean_forward(out.data(), x.data(), d_rp.data(), d_ci.data(), 2, 3); },
      {"segment_mean_forward", "argument col_idx"});
  check_logic_error(
      [&] { segment_mean_forward(out.data(), x.data(), d_rp_bad.data(), d_ci.data(), 2, 3); },
      {"segment_mean_forward", "argument row_ptr"});
  // max_backward: argmax must be a column
  std::vector<int> am = {2, -1};
  DeviceIndexBuffer d_am(2);
  d_am.upload(am.data());
  DeviceBuffer g(2);
  g.zero();
  check_logic_error([&] { max_backward(x.data(), g.data(), d_am.data(), 2, 3); },
                    {"max_backward", "argument argmax"});
}
