// The op-count range of the random families: 100 to 1,000,000 ops (a million-op graph is
// generated and read in the benchmark bench/bench_io.cpp and docs/performance.md, not here).
#include <catch2/catch.hpp>

#include "core/error.h"
#include "datasets/random_families.h"
#include "datasets/registry.h"

using namespace gdp;
using namespace gdp::datasets;

TEST_CASE("datasets/random accepts 100 to 1,000,000 ops", "[datasets]") {
  CHECK(kRandomMinOps == 100);
  CHECK(kRandomMaxOps == 1000000);
  GenOptions o;
  set_option(o, "ops", "1000000");
  CHECK(resolve_options("random", o).ops == 1000000);
  set_option(o, "ops", "1000001");
  CHECK_THROWS_WITH(resolve_options("random", o),
                    "random: option 'ops' must be in [100, 1000000], got 1000001");
  RandomGraphOptions r;
  r.ops = 1000001;
  CHECK_THROWS_AS(make_random_graph(r), InputError);
  r.ops = 99;
  CHECK_THROWS_AS(make_random_graph(r), InputError);
}
