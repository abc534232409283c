// The project's one random stream (core/rng.h): the standard engine's fixed output, portable
// integer/real/normal mappings, determinism per seed.
#include <catch2/catch.hpp>
#include <cmath>

#include "core/rng.h"

using gdp::Rng;

TEST_CASE("core/rng is the standard mt19937_64 with portable mappings", "[core]") {
  Rng r(5489);  // std::mt19937_64's default seed; the standard fixes its 10000th output
  uint64_t x = 0;
  for (int i = 0; i < 10000; ++i) x = r.next_u64();
  CHECK(x == 9981545732273789042ull);
  Rng a(7), b(7);
  int hits[5] = {0, 0, 0, 0, 0};
  for (int i = 0; i < 5000; ++i) {
    int64_t v = a.uniform_int(-2, 2);
    REQUIRE(v >= -2);
    REQUIRE(v <= 2);
    ++hits[v + 2];
    CHECK(b.uniform_int(-2, 2) == v);
  }
  for (int h : hits) CHECK(h > 800);  // about 1000 each
  for (int i = 0; i < 1000; ++i) {
    double u = a.uniform();
    REQUIRE(u >= 0);
    REQUIRE(u < 1);
    uint64_t k = a.below(3);
    REQUIRE(k < 3);
  }
  CHECK(a.below(0) == 0);
  CHECK(a.weighted({0, 1, 0}) == 1);
}

TEST_CASE("core/rng normal has mean 0 and variance 1, and reseed restarts the stream", "[core]") {
  Rng r(11);
  double s = 0, s2 = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    double z = r.normal();
    s += z;
    s2 += z * z;
  }
  CHECK(std::abs(s / n) < 0.03);
  CHECK(std::abs(s2 / n - 1.0) < 0.05);
  Rng a(3);
  const double first = a.normal();
  a.uniform();
  a.reseed(3);
  CHECK(a.normal() == first);
}

TEST_CASE("core/rng state round-trips through text, the Box-Muller spare included", "[core]") {
  Rng a(99);
  a.normal();  // leaves a spare
  const std::string st = a.state();
  Rng b(1);
  REQUIRE(b.set_state(st));
  for (int i = 0; i < 5; ++i) CHECK(a.normal() == b.normal());
  CHECK(a.next_u64() == b.next_u64());
  const std::string before = b.state();
  CHECK_FALSE(b.set_state("not a state"));
  CHECK_FALSE(b.set_state(""));
  CHECK(b.state() == before);
}
