// HDP (rl/hdp/hdp.h): finds the optimum of a tiny graph, deterministic per seed, charges invalid
// placements the failing signal, strict options, and the gradient of the model's
// log-probability against finite differences in double precision.
#include <catch2/catch.hpp>
#include <cmath>

#include "core/error.h"
#include "core/rng.h"
#include "nn/gradcheck.h"
#include "place/registry.h"
#include "place_helpers.h"
#include "rl/hdp/hdp.h"
#include "rl/methods.h"
#include "rl_fixtures.h"
#include "sim/cost_model.h"
#include "sim/sim_fixtures.h"
#include "sim/simulator.h"

using namespace gdp;
using Catch::Contains;

namespace {

const place::Registry& reg() { return test::rl_registry(); }

place::PlaceResult run_method(const std::string& method, const Graph& g, const Cluster& c,
                              int64_t samples, uint64_t seed,
                              const nlohmann::json& options = nullptr) {
  return test::run_method(reg(), method, g, c, samples, seed, options);
}

}  // namespace

TEST_CASE("rl/hdp finds the optimum of 8-op graphs within 2000 samples (lr 0.01)", "[rl][hdp]") {
  const Cluster c = test::full_mesh(2);
  for (uint64_t seed : {3u, 4u}) {
    const Graph g = test::tiny_graph(seed, 8);
    INFO("graph " << g.name);
    const place::PlaceResult opt = run_method("exhaustive", g, c, 0, 1);
    // lr 0.01, not the reference's 0.1: at 0.1 the policy collapses onto its first samples
    // here (the baseline starts at the failing cost, so they all look good) and the best stays
    // the one found within the first 10 samples (docs/baselines.md ("HDP")).
    const place::PlaceResult r =
        run_method("hdp", g, c, 2000, 7, {{"hidden_size", 16}, {"num_children", 4}, {"lr", 0.01}});
    CHECK(r.report.samples <= 2000);
    const SimResult s = test::simulate(g, c, r.placement);
    REQUIRE(s.valid);
    CHECK(s.step_time_s == Approx(opt.report.best_step_s).epsilon(1e-9));
    CHECK(r.report.best_step_s == s.step_time_s);
    CHECK_THAT(r.report.note, Contains("REINFORCE iterations"));
  }
}

TEST_CASE("rl/hdp is deterministic per seed", "[rl][hdp]") {
  const Graph g = test::tiny_graph(5, 8);
  const Cluster c = test::full_mesh(3);
  const nlohmann::json o = {{"hidden_size", 8}, {"num_children", 3}};
  const place::PlaceResult a = run_method("hdp", g, c, 300, 11, o);
  const place::PlaceResult b = run_method("hdp", g, c, 300, 11, o);
  CHECK(a.report.samples == 300);
  test::check_same_search(a, b);
}

TEST_CASE("rl/hdp charges invalid placements the failing signal", "[rl][hdp]") {
  CHECK(rl::hdp_cost(4.0, true) == 2.0);
  CHECK(rl::hdp_cost(4.0, false) == std::sqrt(100.0));
  CHECK(rl::hdp_cost(INFINITY, true) == std::sqrt(100.0));
  CHECK(rl::hdp_cost(3.0, false, 49.0) == 7.0);
  CHECK(rl::hdp_cost(3.0, true, 100.0, "id") == 3.0);
  CHECK(rl::hdp_cost(3.0, true, 100.0, "log") == Approx(std::log1p(3.0)));
  // The learning-rate schedule of the reference (staircase after start_decay_step).
  const rl::HdpConfig d = rl::HdpConfig::reference();
  CHECK(rl::hdp_learning_rate(d, 399) == 0.1);
  CHECK(rl::hdp_learning_rate(d, 449) == 0.1);
  CHECK(rl::hdp_learning_rate(d, 450) == Approx(0.095));

  // Six 1-GiB-weight ops on devices of 4 GiB: one device cannot hold them, two can.
  Graph g;
  g.name = "heavy";
  for (int32_t i = 0; i < 6; ++i) {
    Op op = test::timed_op("w" + std::to_string(i), 0.1, 1 << 20);
    op.id = i;
    op.param_bytes = int64_t{1} << 30;
    g.add_op(op);
    if (i > 0) g.add_edge(i - 1, 0, i, 1 << 20);
  }
  g.finalize();
  const Cluster c = test::full_mesh(2, test::kLinkBw_Bps, test::kLinkLat_s, int64_t{4} << 30);
  REQUIRE_FALSE(test::simulate(g, c, test::on_device(g, 0)).valid);
  const place::PlaceResult r = run_method("hdp", g, c, 200, 3, {{"hidden_size", 8}});
  CHECK(test::simulate(g, c, r.placement).valid);
  CHECK(std::isfinite(r.report.best_step_s));
}

TEST_CASE("rl/hdp options are strict", "[rl][hdp]") {
  try {
    place::prepare(reg(), "hdp", {{"hiden_size", 16}});
    FAIL("accepted an unknown key");
  } catch (const InputError& e) {
    CHECK_THAT(e.what(), Contains("hiden_size"));
  }
  CHECK_THROWS_AS(place::prepare(reg(), "hdp", {{"hidden_size", 7}}), InputError);
  CHECK_THROWS_AS(place::prepare(reg(), "hdp", {{"reward_function", "cube"}}), InputError);
  CHECK_THROWS_AS(place::prepare(reg(), "hdp", {{"lr", "fast"}}), InputError);
  const place::PreparedMethod m = place::prepare(reg(), "hdp");
  CHECK(m.options.integer("hidden_size") == 128);  // preset "tuned"
  CHECK(m.options.number("lr") == 0.01);
  CHECK(m.options.integer("num_children") == 4);
  const rl::HdpConfig ref =
      rl::hdp_config(place::prepare(reg(), "hdp", {{"preset", "reference"}}).options);
  CHECK(ref.hidden_size == 512);
  CHECK(ref.num_children == 1);
  CHECK(ref.lr == 0.1);
  const rl::HdpConfig mixed = rl::hdp_config(
      place::prepare(reg(), "hdp", {{"preset", "reference"}, {"hidden_size", 64}}).options);
  CHECK(mixed.hidden_size == 64);  // a key given keeps its value
  CHECK(mixed.lr == 0.1);
  CHECK_THROWS_AS(place::prepare(reg(), "hdp", {{"preset", "paper"}}), InputError);
  CHECK(m.options.number("bl_dec") == 0.9);
  CHECK(m.options.number("failing_signal") == 100.0);
}

TEST_CASE("rl/hdp log-probability gradient matches finite differences", "[rl][hdp]") {
  const Graph g = test::tiny_graph(3, 5);
  rl::HdpConfig c;
  c.hidden_size = 4;
  c.grouping_hidden_size = 3;
  c.num_groups = 3;
  c.adj_embed_dim = 4;
  c.max_num_outputs = 1;
  c.max_output_size = 2;
  c.tanh_constant = 2.0;  // exercises the tanh squashing
  c.temperature = 0.5;
  const rl::HdpInputs in = rl::hdp_inputs(g, 2, c);
  rl::HdpModelD model(in, c, 17);
  Rng rng(5);
  rl::HdpModelD::Rollout r;
  {
    nn::NoGradGuard no_grad;
    r = model.sample(2, rng, false);
  }
  nn::TapeD::current().clear();
  // Sampled log-probability (no noise) equals the scored one.
  const nn::VarD lp = model.log_prob(r.groups, r.devices);
  for (int k = 0; k < 2; ++k) CHECK(lp.value()[k] == Approx(r.log_prob.value()[k]).epsilon(1e-12));
  nn::TapeD::current().clear();
  std::vector<nn::VarD> inputs;
  for (const auto& e : model.params().entries()) inputs.push_back(e.var);
  const nn::GradcheckResult res = nn::gradcheck(
      [&](const std::vector<nn::VarD>&) { return model.log_prob(r.groups, r.devices); }, inputs);
  INFO("worst " << res.worst << " error " << res.max_error);
  CHECK(res.passed);
  CHECK(res.checked > 100);
}
