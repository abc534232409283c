// The trainer with the policy on the CUDA device path (--device cuda), built against the
// checking host double of the CUDA backend (tests/host_double/: every kernel a host loop that
// checks pointers, extents and indices): the same run as on the cpu, up to float rounding.
#include <catch2/catch.hpp>
#include <cmath>

#include "core/io.h"
#include "place_helpers.h"
#include "rl/trainer.h"
#include "rl_fixtures.h"

using namespace gdp;

TEST_CASE("rl/device: PPO iterations on the device path match the cpu", "[rl]") {
  const Graph g = test::small_rnnlm();
  const Cluster c = read_cluster("v100x2-nvlink");
  auto run = [&](nn::Device d) {
    rl::Trainer t(test::tiny_config(), {rl::TrainGraph{"rnn", &g, &c, nullptr}}, CostModel(), 4,
                  nullptr, d);
    std::vector<rl::IterationStats> rows;
    for (int i = 0; i < 3; ++i) rows.push_back(t.step()[0]);
    REQUIRE(t.policy().params().device() == d);
    return rows;
  };
  const auto cpu = run(nn::Device::cpu), dev = run(nn::Device::cuda);
  // The first iteration samples from the same initial policy: identical placements, so the
  // same step times; later ones may differ where float rounding flips a sample.
  CHECK(dev[0].mean_step_s == cpu[0].mean_step_s);
  CHECK(dev[0].entropy == Approx(cpu[0].entropy).epsilon(1e-4));
  CHECK(dev[0].loss == Approx(cpu[0].loss).margin(1e-4));
  for (const auto& r : dev) {
    CHECK(std::isfinite(r.loss));
    CHECK(std::isfinite(r.best_step_s));
  }
}
