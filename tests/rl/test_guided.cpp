// gdp-anneal (rl/gdp/guided.cpp): annealing guided by a GDP checkpoint. It finds the exhaustive
// optimum on tiny graphs as anneal does; a policy with all its mass on one placement starts
// there and, with mix 0, never leaves it; a missing, corrupt or mismatched checkpoint is a clear
// error naming the file. And the shipped pre-trained checkpoint still loads.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>

#include "core/io.h"
#include "datasets/suite.h"
#include "nn/autograd.h"
#include "nn/checkpoint.h"
#include "place/registry.h"
#include "place_helpers.h"
#include "rl/gdp/load.h"
#include "rl/gdp/policy.h"
#include "rl/gdp/pretrained.h"
#include "rl/methods.h"
#include "rl/run/session.h"
#include "rl_fixtures.h"
#include "sim/lower_bound.h"
#include "sim/sim_fixtures.h"
#include "sim/simulator.h"

using namespace gdp;
using namespace gdp::test;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {

// A GDP run on a small RNNLM (a few iterations of the tiny policy): a checkpoint to guide from.
fs::path tiny_run(const std::string& name, int32_t width = 8) {
  const fs::path dir = fresh_dir(name);
  fs::create_directories(dir);
  const fs::path graph = dir / "g.json";
  write_graph_file(test::small_rnnlm(), graph.string());
  rl::TrainConfig c = test::tiny_config();
  c.policy.width = width;
  rl::train(rl::learners(), test::one_graph_spec(graph, 17, c, 3), (dir / "run").string());
  return dir / "run";
}

place::PlaceResult guided(const Graph& g, const Cluster& c, int64_t samples,
                          const nlohmann::json& options, uint64_t seed = 1) {
  const CostModel cost;
  const place::Problem pb(g, c, cost);
  return place::place(place::prepare(rl_registry(), "gdp-anneal", options), pb,
                      place::Budget{samples, 0}, seed);
}

}  // namespace

TEST_CASE("rl/gdp-anneal finds the exhaustive optimum on tiny graphs", "[rl][guided]") {
  const std::string ckpt = tiny_run("guided_optimum").string();
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    const test::TinyCase tc = test::tiny_case(seed);
    const Graph& g = tc.graph;
    const Cluster& c = tc.cluster;
    INFO("graph " << g.name << ", " << g.num_ops() << " ops on " << c.num_devices() << " devices");
    const place::PlaceResult opt = test::run_method(rl_registry(), "exhaustive", g, c);
    const place::PlaceResult r = guided(g, c, 3000, {{"checkpoint", ckpt}});
    CHECK(r.report.samples <= 3000);
    CHECK(test::groups_together(g, r.placement));
    const SimResult s = test::simulate(g, c, r.placement);
    REQUIRE(s.valid);
    CHECK(s.step_time_s == Approx(opt.report.best_step_s).epsilon(1e-9));
  }
}

TEST_CASE("rl/gdp-anneal: a policy with all its mass on one placement starts there",
          "[rl][guided]") {
  const fs::path run = tiny_run("guided_onehot");
  // The same run's policy, rewritten so that every unit prefers device label 1 by far.
  std::unique_ptr<rl::Policy> p = rl::load_policy(run.string());
  nn::Tensor w = p->params().get("out.w").value();
  w.fill(0.0f);
  nn::Tensor b = p->params().get("out.b").value();
  b.fill(-50.0f);
  b[1] = 50.0f;
  const std::string onehot = (run / "onehot.bin").string();
  nn::save_checkpoint(onehot, p->params(), nullptr, 1);
  const Graph g = test::small_rnnlm();
  const Cluster c = test::full_mesh(2);  // interchangeable: unit 0 is anchored to device 0
  const place::Units units = place::Units::colocation(g);
  std::vector<int32_t> want(static_cast<size_t>(units.num_units()), 1);
  want[0] = 0;
  const Placement target = units.expand(want);
  const nlohmann::json opts = {{"checkpoint", onehot}, {"mix", 0.0},         {"p_neighbour", 0.0},
                               {"p_swap", 0.0},        {"init_methods", ""}, {"policy_samples", 4}};
  const place::PlaceResult r = guided(g, c, 120, opts);
  CHECK(r.placement.device == target.device);
  CHECK(r.report.samples <= 120);
  CHECK(r.report.best_step_s == test::simulate(g, c, target).step_time_s);
  CHECK_THAT(r.report.note, Contains("gdp-anneal from policy greedy"));
  // With the uniform share the search leaves it (the target is far from the optimum).
  nlohmann::json mixed = opts;
  mixed["mix"] = 1.0;
  CHECK(guided(g, c, 300, mixed).report.best_step_s < r.report.best_step_s);
  // Beside the start methods, whose placements are far better than the policy's, the gate
  // turns the guide off; with the gate open (1e9) the guide stays on.
  nlohmann::json gated = opts;
  gated.erase("init_methods");
  CHECK_THAT(guided(g, c, 120, gated).report.note, Contains("guide off"));
  gated["gate"] = 1e9;
  CHECK_THAT(guided(g, c, 120, gated).report.note, !Contains("guide off"));
}

TEST_CASE("rl/gdp-anneal: a missing, corrupt or mismatched checkpoint is a clear error",
          "[rl][guided]") {
  auto err = [](const nlohmann::json& o) {
    return error_of([&] { place::prepare(rl_registry(), "gdp-anneal", o); });
  };
  const fs::path run = tiny_run("guided_errors");
  CHECK_THAT(err({{"checkpoint", (run / "nosuch").string()}}), Contains("nosuch"));
  // Corrupt: the checkpoint file cut short.
  const fs::path cut = run / "cut.bin";
  {
    const std::string bytes = read_text_file((run / "ckpt-2.bin").string());
    std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  }
  CHECK_THAT(err({{"checkpoint", cut.string()}}), Contains("cut.bin"));
  // Mismatched: a wider policy's parameters under this run's config.
  const fs::path wide = tiny_run("guided_errors_wide", 16);
  fs::copy_file(wide / "ckpt-2.bin", run / "wide.bin", fs::copy_options::overwrite_existing);
  CHECK_THAT(err({{"checkpoint", (run / "wide.bin").string()}}),
             Contains("does not fit this policy"));
  CHECK_THAT(err({{"mix", 2.0}}), Contains("mix"));
}

TEST_CASE("rl/the shipped pre-trained checkpoint loads with the current policy code",
          "[rl][pretrained]") {
  std::string dir;
  std::unique_ptr<rl::Policy> p;
  const std::string how =
      "the shipped checkpoint (models/gdp-pretrained) no longer loads with the current policy "
      "code; retrain it with scripts/pretrain.sh (models/gdp-pretrained/README.md) and commit "
      "the new directory";
  try {
    dir = rl::resolve_checkpoint("pretrained", "gdp");
    p = rl::load_policy(dir);
  } catch (const std::exception& e) {
    FAIL(how << ": " << e.what());
  }
  INFO(how);
  // It places an unseen graph zero-shot, validly, in one forward pass plus its samples.
  const Graph g = test::small_rnnlm();
  const Cluster c = read_cluster("v100x4-nvlink");
  const CostModel cost;
  const place::Problem pb(g, c, cost);
  const place::PlaceResult r =
      place::place(place::prepare(rl_registry(), "gdp", {{"samples", 3}}), pb, place::Budget{}, 1);
  CHECK(r.report.samples == 4);
  CHECK(std::isfinite(r.report.best_step_s));
  CHECK_THAT(r.report.note, Contains(dir));
  CHECK_THAT(rl::pretrained_summary(), Contains("pretrain"));
}

// Zero-shot with a devices-used policy: the greedy positions are read at every device count
// (every_count, on by default) in place of as many samples, and the result is the best of them:
// on 4 devices with 3 samples, 4 greedy candidates and no sample; each candidate decoded here
// by hand. With every_count off, the same budget is the greedy and 3 samples; with one sample,
// the nearest count; under memory pressure, only the counts the mask leaves open.
TEST_CASE("rl/zero-shot reads the greedy positions at every device count", "[rl][pretrained]") {
  const std::unique_ptr<rl::Policy> policy =
      rl::load_policy(rl::resolve_checkpoint("pretrained", "gdp"));
  REQUIRE(policy->config().devices_used);
  const Graph g = test::small_rnnlm();
  const Cluster c = read_cluster("v100x4-nvlink");
  const CostModel cost;
  const place::Problem pb(g, c, cost);
  // The greedy positions read at L devices (0: the greedy count), simulated.
  const rl::PolicyInput in = policy->prepare(g, c, cost);
  std::vector<int32_t> greedy;
  {
    nn::NoGradGuard no_grad;
    greedy = rl::greedy_actions(policy->forward(in).value());
  }
  Simulator sim(g, c, cost);
  auto greedy_at = [&](int32_t L) {
    std::vector<int32_t> a = greedy;
    if (L > 0) a.back() = L - 1;
    return sim.run(rl::placement_of(in, a, 0)).step_time_s;
  };
  const place::PlaceResult every =
      place::place(place::prepare(rl_registry(), "gdp", {{"samples", 3}}), pb, place::Budget{}, 1);
  CHECK(every.report.samples == 4);
  CHECK_THAT(every.report.note, Contains("greedy at 4 device counts from"));
  CHECK(every.report.best_step_s ==
        std::min({greedy_at(1), greedy_at(2), greedy_at(3), greedy_at(4)}));
  const place::PlaceResult plain =
      place::place(place::prepare(rl_registry(), "gdp", {{"samples", 3}, {"every_count", false}}),
                   pb, place::Budget{}, 1);
  CHECK(plain.report.samples == 4);
  CHECK_THAT(plain.report.note, Contains("zero-shot: greedy and 3 samples from"));
  // One sample's budget: the count nearest the greedy one (the lower on a tie) takes it.
  const place::PlaceResult one =
      place::place(place::prepare(rl_registry(), "gdp", {{"samples", 1}}), pb, place::Budget{}, 1);
  CHECK(one.report.samples == 2);
  CHECK_THAT(one.report.note, Contains("greedy at 2 device counts from"));
  const int32_t used = greedy.back() + 1;
  CHECK(one.report.best_step_s == std::min(greedy_at(0), greedy_at(used > 1 ? used - 1 : 2)));
  // Counts the memory mask closes are not candidates: with each device holding 0.3 of what the
  // graph needs, only L = 4 is open, and the budget goes to samples.
  Cluster small = c;
  for (DeviceSpec& d : small.devices) d.memory_bytes = memory_lower_bound_bytes(g) * 3 / 10;
  const place::Problem pbs(g, small, cost);
  const place::PlaceResult masked =
      place::place(place::prepare(rl_registry(), "gdp", {{"samples", 3}}), pbs, place::Budget{}, 1);
  CHECK_THAT(masked.report.note, Contains("zero-shot: greedy and 3 samples from"));
  CHECK_THAT(masked.report.note, Contains("greedy on 4 of 4 devices"));
}

// The regression issue 27 started from (a shipped policy that placed held-out graphs worse
// than human, unnoticed) cannot come back silently: the shipped policy's zero-shot placement
// (greedy + 63 samples, seed 1, deterministic) of each graph of holdout.json and smoke.json,
// none of them in pre-training, is held to a floor over the human placement: 1.0 where the
// shipped policy is at least human, else its measured ratio less 0.02 (docs/results.md,
// "Devices used" and "The memory mask and the greedy at every device count"). Retraining the
// shipped policy updates this table.
TEST_CASE("rl/the shipped policy places held-out graphs zero-shot at least as well as before",
          "[rl][pretrained]") {
  const std::map<std::string, double> floor = {
      // holdout.json (measured: docs/results.md, "Devices used", the shipped policy)
      {"gnmt_8layer", 0.81},            // 0.834x (the previous policy's 0.932x: see docs)
      {"bert_base", 0.97},              // 0.997x
      {"resnet50_b64", 1.00},           // 1.118x
      {"transformer_xl_8layer", 1.00},  // 1.031x
      // smoke.json
      {"rnnlm_small", 1.00},                   // 1.021x
      {"gnmt_small", 1.00},                    // 1.115x
      {"transformer_xl_small", 1.00},          // 1.095x
      {"bert_small", 1.00},                    // 1.087x
      {"inception_v3_small", 1.00},            // 1.545x
      {"resnet50_small", 1.00},                // 1.264x
      {"amoebanet_small", 1.00},               // 1.633x
      {"wavenet_small", 1.00},                 // 1.079x
      {"random_layered_small", 1.00},          // 1.308x
      {"random_series_parallel_small", 1.00},  // 1.232x
      {"random_block_chain_small", 1.00},      // 1.090x
      {"random_nas_cell_small", 1.00},         // 1.101x
  };
  for (const char* suite : {"holdout", "smoke"}) {
    for (const datasets::SuiteEntry& e :
         datasets::load_suite(test::source_dir() + "/datasets/suites/" + suite + ".json")) {
      INFO(suite << ": " << e.name);
      REQUIRE(floor.count(e.name) == 1);
      const CostModel cost;
      const place::Problem pb(e.graph, e.cluster, cost);
      const place::PlaceResult human =
          place::place(place::prepare(rl_registry(), "human"), pb, place::Budget{}, 1);
      const place::PlaceResult zs = place::place(
          place::prepare(rl_registry(), "gdp", {{"samples", 63}}), pb, place::Budget{}, 1);
      Simulator sim(e.graph, e.cluster, cost);
      const SimResult h = sim.run(human.placement), z = sim.run(zs.placement);
      REQUIRE(h.valid);
      REQUIRE(z.valid);
      const double ratio = h.step_time_s / z.step_time_s;
      INFO("zero-shot " << z.step_time_s << " s, human " << h.step_time_s << " s: " << ratio
                        << "x");
      CHECK(ratio >= floor.at(e.name));
    }
  }
}
