// Helpers shared by the CUDA tests: seeded random data, device round trips, and the
// llm.c-style comparison |got - ref| <= atol + rtol * |ref| with a report of the worst miss.
#pragma once

#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <random>
#include <string>
#include <vector>

#include "cuda/kernels.h"

namespace gdp::cuda::test {

// Column sizes of every sweep: odd, around the warp (32) and block sizes, and large.
inline const std::vector<int> kColSweep = {1, 7, 32, 33, 127, 128, 1000, 4097};
inline const std::vector<int> kRowSweep = {1, 7, 33, 257};

inline std::vector<float> random_vec(std::size_t n, std::mt19937& rng, float lo = -1.0f,
                                     float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

inline std::vector<int> random_idx(std::size_t n, int hi, std::mt19937& rng) {  // values in [0, hi)
  std::uniform_int_distribution<int> dist(0, hi - 1);
  std::vector<int> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

template <class T>
DeviceArray<T> to_device(const std::vector<T>& host) {
  DeviceArray<T> d(host.size());
  if (!host.empty()) d.upload(host.data());
  return d;
}

template <class T>
std::vector<T> to_host(const DeviceArray<T>& d) {
  std::vector<T> h(d.size());
  if (!h.empty()) d.download(h.data());
  return h;
}

// Fails the current test when any element misses atol + rtol*|ref|; reports the first
// and the count. `what` names the tensor and sizes.
inline void check_close(const std::vector<float>& got, const std::vector<float>& ref, float atol,
                        float rtol, const std::string& what) {
  REQUIRE(got.size() == ref.size());
  std::size_t bad = 0, first = 0;
  double worst = 0.0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    double err = std::fabs(static_cast<double>(got[i]) - ref[i]);
    bool ok = err <= atol + rtol * std::fabs(ref[i]);  // NaN fails too
    if (!ok) {
      if (bad == 0) first = i;
      ++bad;
    }
    if (err > worst || std::isnan(err)) worst = err;
  }
  INFO(what << ": " << bad << " of " << ref.size() << " elements out of tolerance (atol " << atol
            << ", rtol " << rtol << "), max abs error " << worst
            << (bad ? ", first at " + std::to_string(first) + ": got " +
                          std::to_string(got[first]) + " want " + std::to_string(ref[first])
                    : std::string()));
  CHECK(bad == 0);
}

inline void check_equal(const std::vector<int>& got, const std::vector<int>& ref,
                        const std::string& what) {
  REQUIRE(got.size() == ref.size());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) bad += got[i] != ref[i];
  INFO(what << ": " << bad << " of " << ref.size() << " indices differ");
  CHECK(bad == 0);
}

}  // namespace gdp::cuda::test
