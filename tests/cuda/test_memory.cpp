// Device query and DeviceArray: round trips, zeroing and moves, the base every other
// CUDA test stands on.
#include <stdexcept>

#include "cuda_test_util.h"

using namespace gdp::cuda;
using namespace gdp::cuda::test;

TEST_CASE("cuda/device query", "[cuda]") {
  REQUIRE(cuda_device_count() > 0);
  CHECK_FALSE(cuda_device_name(0).empty());
  CHECK(cuda_device_name(cuda_device_count()).empty());  // an invalid device gives ""
}

TEST_CASE("cuda/device buffer round trip zero and move", "[cuda]") {
  std::mt19937 rng(1);
  for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{4097}, std::size_t{1} << 20}) {
    auto h = random_vec(n, rng);
    DeviceBuffer d = to_device(h);
    REQUIRE(d.size() == n);
    CHECK(to_host(d) == h);

    DeviceBuffer moved = std::move(d);
    CHECK(d.data() == nullptr);
    CHECK(d.size() == 0);
    CHECK(to_host(moved) == h);

    moved.zero();
    CHECK(to_host(moved) == std::vector<float>(n, 0.0f));
  }
  std::vector<int> hi = {3, -1, 7, 2147483647};
  DeviceIndexBuffer di = to_device(hi);
  CHECK(to_host(di) == hi);
  DeviceBuffer empty(0);
  CHECK(empty.data() == nullptr);
  synchronize();
}

TEST_CASE("cuda/failed allocation throws and leaves the device usable", "[cuda]") {
  CHECK_THROWS_AS(DeviceBuffer(std::size_t{1} << 50), std::runtime_error);  // 4 PiB
  std::vector<float> x = {1.0f, -2.0f, 3.0f};
  auto d_x = to_device(x);
  DeviceBuffer d_y(3);
  scale_forward(d_y.data(), d_x.data(), 2.0f, 3);  // its launch check must not see the old error
  CHECK(to_host(d_y) == std::vector<float>{2.0f, -4.0f, 6.0f});
}
