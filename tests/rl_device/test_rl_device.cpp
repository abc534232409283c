// The trainer with the policy on the CUDA device path (--device cuda), built against the
// checking host double of the CUDA backend (tests/host_double/: every kernel a host loop that
// checks pointers, extents and indices): the same run as on the cpu, up to float rounding.
#include <catch2/catch.hpp>
#include <cmath>

#include "core/io.h"
#include "place_helpers.h"
#include "rl/gdp/trainer.h"
#include "rl/hdp/hdp.h"
#include "rl/placeto/placeto.h"
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

TEST_CASE("rl/device: HDP and Placeto on the device path match the cpu", "[rl]") {
  const Graph g = test::small_rnnlm();
  const Cluster c = read_cluster("v100x2-nvlink");
  const CostModel cost;
  const place::Problem pb(g, c, cost);
  rl::HdpConfig hc;
  hc.hidden_size = 16;
  hc.num_groups = 6;
  hc.num_children = 2;
  hc.lr = 0.01;
  auto hdp = [&](nn::Device d) {
    place::Run run(pb, "hdp", place::Budget(), 3);
    rl::HdpAgent agent(pb, hc, 3, d);
    std::vector<rl::HdpAgent::StepStats> rows;
    for (int i = 0; i < 3; ++i) rows.push_back(agent.step(run, 2));
    REQUIRE(agent.model().params().device() == d);
    return rows;
  };
  const auto hc_cpu = hdp(nn::Device::cpu), hc_dev = hdp(nn::Device::cuda);
  CHECK(hc_dev[0].mean_step_s == hc_cpu[0].mean_step_s);
  CHECK(hc_dev[0].entropy == Approx(hc_cpu[0].entropy).epsilon(1e-4));
  CHECK(hc_dev[0].loss == Approx(hc_cpu[0].loss).margin(1e-4));
  for (const auto& r : hc_dev) CHECK(std::isfinite(r.loss));

  rl::placeto::TrainConfig pc;
  pc.policy.width = 8;
  pc.policy.rounds = 2;
  auto placeto = [&](nn::Device d) {
    place::Run run(pb, "placeto", place::Budget(), 3);
    rl::placeto::Agent agent(pc, 2, 3, d);
    agent.add_graph(pb, 12, 3);
    std::vector<rl::placeto::Agent::Episode> eps;
    for (int i = 0; i < 2; ++i) eps.push_back(agent.train_episode(0, run));
    REQUIRE(agent.policy().params().device() == d);
    return eps;
  };
  const auto pe_cpu = placeto(nn::Device::cpu), pe_dev = placeto(nn::Device::cuda);
  CHECK(pe_dev[0].end_step_s == pe_cpu[0].end_step_s);
  CHECK(pe_dev[0].entropy == Approx(pe_cpu[0].entropy).epsilon(1e-4));
  CHECK(pe_dev[0].loss == Approx(pe_cpu[0].loss).epsilon(1e-3).margin(1e-4));
  for (const auto& e : pe_dev) CHECK(e.complete);
}
