// The GDP trainer's levers (docs/ppo.md, "Levers"): advantage baselines with closed-form values,
// the elite set, local proposals, the warm start from heuristics, and a run with every lever on
// that is deterministic, resumes into the uninterrupted run and beats its own first samples.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/error.h"
#include "core/io.h"
#include "place_helpers.h"
#include "rl/gdp/elites.h"
#include "rl/gdp/explore.h"
#include "rl/gdp/trainer.h"
#include "rl/run/session.h"
#include "rl_fixtures.h"

using namespace gdp;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {

rl::TrainConfig lever_config() {
  rl::TrainConfig c = test::tiny_config();
  c.elite.size = 4;
  c.elite.weight = 1.0;
  c.explore.local_fraction = 0.5;
  c.warm_start = {"human", "m-etf"};
  c.imitation_steps = 5;
  c.ppo.baseline = rl::Baseline::rank;
  return c;
}

nn::Tensor logits_of(int32_t U, int32_t A, const std::vector<float>& v) {
  nn::Tensor t({U, A});
  for (size_t i = 0; i < v.size(); ++i) t.data()[i] = v[i];
  return t;
}

}  // namespace

TEST_CASE("rl/gdp/ppo advantages: leave-one-out and centred ranks, closed form", "[rl]") {
  rl::PpoConfig c;
  c.normalize_advantages = false;
  const std::vector<double> r{1, 2, 6};
  c.baseline = rl::Baseline::mean;
  CHECK(rl::advantages(r, c) == std::vector<double>{-2, -1, 3});
  c.baseline = rl::Baseline::loo;  // r_k - mean of the other two
  const auto loo = rl::advantages(r, c);
  CHECK(loo[0] == Approx(1 - 4.0));
  CHECK(loo[1] == Approx(2 - 3.5));
  CHECK(loo[2] == Approx(6 - 1.5));
  c.baseline = rl::Baseline::rank;  // ranks 0, 1, 2 of 3 -> -0.5, 0, 0.5; scale-free
  CHECK(rl::advantages({1, 2, 600}, c) == std::vector<double>{-0.5, 0, 0.5});
  CHECK(rl::advantages({5, 1, 5}, c) == std::vector<double>{0.25, -0.5, 0.25});  // tied: mean rank
  c.normalize_advantages = true;
  const auto n = rl::advantages({1, 2, 600}, c);
  CHECK(n[2] == Approx(1 / std::sqrt(1.0 / 6.0) * 0.5).epsilon(1e-6));
  CHECK(rl::advantages({3}, c) == std::vector<double>{0});
}

TEST_CASE("rl/gdp/elites keep the k fastest distinct placements, in order, and round-trip",
          "[rl]") {
  rl::EliteSet e(2);
  CHECK(e.offer(3.0, {0, 1}));
  CHECK_FALSE(e.offer(3.0, {0, 1}));  // the same placement again
  CHECK_FALSE(e.offer(std::numeric_limits<double>::infinity(), {1, 1}));  // invalid
  CHECK(e.offer(2.0, {1, 0}));
  CHECK_FALSE(e.offer(4.0, {1, 1}));  // slower than both, the set is full
  CHECK(e.offer(1.0, {0, 0}));
  REQUIRE(e.size() == 2);
  CHECK(e[0].step_s == 1.0);
  CHECK(e[1].actions == std::vector<int32_t>{1, 0});
  CHECK(e.flat_actions() == std::vector<int32_t>{0, 0, 1, 0});
  const nlohmann::json j = nlohmann::json::parse(e.to_json().dump());
  rl::EliteSet back(2);
  back.from_json(StrictJson("state.json"), j, "graphs[0].elites", 2, 2);
  CHECK(back.flat_actions() == e.flat_actions());
  rl::EliteSet small(1);
  CHECK_THROWS_WITH(small.from_json(StrictJson("state.json"), j, "graphs[0].elites", 2, 2),
                    Contains("graphs[0].elites") && Contains("keeps 1"));
  CHECK_THROWS_WITH(back.from_json(StrictJson("state.json"), j, "graphs[0].elites", 3, 2),
                    Contains("expected 3 unit devices"));
}

TEST_CASE("rl/gdp/explore: a local proposal changes one contiguous run of units", "[rl]") {
  const int32_t U = 40, A = 3;
  std::vector<float> v(static_cast<size_t>(U) * A, 0.0f);
  for (int32_t u = 0; u < U; ++u)
    v[static_cast<size_t>(u) * A + 2] = rl::kMaskedLogit;  // 2 devices
  const nn::Tensor z = logits_of(U, A, v);
  const std::vector<int32_t> base(U, 0);
  rl::ExploreConfig c;
  c.block_fraction = 0.25;
  Rng rng(3);
  std::set<int32_t> lengths;
  for (int trial = 0; trial < 200; ++trial) {
    const std::vector<int32_t> a = rl::local_proposal(z, base, /*anchored=*/true, c, rng);
    REQUIRE(a.size() == base.size());
    CHECK(a[0] == 0);  // the anchored unit never moves
    int32_t first = -1, last = -1;
    for (int32_t u = 0; u < U; ++u) {
      CHECK(a[static_cast<size_t>(u)] != 2);  // never a masked device
      if (a[static_cast<size_t>(u)] != base[static_cast<size_t>(u)]) {
        if (first < 0) first = u;
        last = u;
      }
    }
    REQUIRE(first >= 1);  // something changed (two devices: each changed unit flips)
    for (int32_t u = first; u <= last; ++u) CHECK(a[static_cast<size_t>(u)] == 1);  // contiguous
    CHECK(last - first + 1 <= 10);
    lengths.insert(last - first + 1);
  }
  CHECK(lengths.count(1) == 1);
  CHECK(lengths.size() >= 4);
  // One allowed device: nothing can change.
  std::vector<float> one(static_cast<size_t>(U) * A, rl::kMaskedLogit);
  for (int32_t u = 0; u < U; ++u) one[static_cast<size_t>(u) * A] = 0.0f;
  CHECK(rl::local_proposal(logits_of(U, A, one), base, false, c, rng) == base);
}

TEST_CASE("rl/gdp/explore: boundary and scope moves", "[rl]") {
  const int32_t U = 6, A = 2;
  const nn::Tensor z = logits_of(U, A, std::vector<float>(static_cast<size_t>(U) * A, 0.0f));
  const std::vector<int32_t> base{0, 0, 0, 1, 1, 1};
  Rng rng(5);
  // A chain 0-1-2-3-4-5: only units 2 and 3 have a neighbour on the other device.
  place::UnitAdjacency adj;
  adj.ptr = {0, 1, 3, 5, 7, 9, 10};
  adj.neighbour = {1, 0, 2, 1, 3, 2, 4, 3, 5, 4};
  rl::ExploreConfig c;
  c.p_run = c.p_block = 0;
  c.p_boundary = 1;
  c.p_run = 1e-12;  // the fallback when no boundary unit is drawn in 8 tries
  int boundary = 0;
  for (int t = 0; t < 50; ++t) {
    const std::vector<int32_t> a = rl::local_proposal(z, base, false, c, rng, &adj);
    std::vector<int32_t> changed;
    for (int32_t u = 0; u < U; ++u)
      if (a[static_cast<size_t>(u)] != base[static_cast<size_t>(u)]) changed.push_back(u);
    REQUIRE(!changed.empty());
    // A boundary move changes one unit, 2 or 3, to its neighbour's device; else (8 missed
    // tries) it is a fallback run.
    if (changed.size() == 1 && (changed[0] == 2 || changed[0] == 3)) ++boundary;
  }
  CHECK(boundary >= 40);
  // Scopes: {0, 1, 2} and {3, 4, 5}; a scope move sends a whole scope to one other device.
  place::UnitScopes scopes;
  scopes.units = {{0, 1, 2}, {3, 4, 5}};
  scopes.of_unit = {{0}, {0}, {0}, {1}, {1}, {1}};
  c.p_boundary = 0;
  c.p_scope = 1;
  for (int t = 0; t < 20; ++t) {
    const std::vector<int32_t> a = rl::local_proposal(z, base, false, c, rng, &adj, &scopes);
    const bool first = a[0] != base[0];
    CHECK(a == (first ? std::vector<int32_t>{1, 1, 1, 1, 1, 1}
                      : std::vector<int32_t>{0, 0, 0, 0, 0, 0}));
  }
}

TEST_CASE("rl/gdp/explore diagnostics: entropies, quantiles, the noise floor of signal_t", "[rl]") {
  const nn::Tensor z = logits_of(2, 2, {0, 0, 0, rl::kMaskedLogit});
  const auto h = rl::unit_entropies(z);
  CHECK(h[0] == Approx(std::log(2.0)));
  CHECK(h[1] == 0);
  CHECK(rl::quantile({3, 1, 2, 4}, 0.5) == 3);
  // Advantages independent of the actions: |t| averages about E|t| ~ 0.8, far below a decided unit.
  const int32_t U = 400, K = 64;
  const nn::Tensor u0 = logits_of(U, 2, std::vector<float>(static_cast<size_t>(U) * 2, 0.0f));
  Rng rng(11);
  std::vector<int32_t> acts(static_cast<size_t>(U) * K);
  for (auto& a : acts) a = static_cast<int32_t>(rng.below(2));
  std::vector<double> adv(K);
  for (auto& x : adv) x = rng.uniform(-1, 1);
  const double noise = rl::signal_t(u0, acts, adv);
  CHECK(noise > 0.6);
  CHECK(noise < 1.0);
  for (int32_t k = 0; k < K; ++k)  // now unit u's device decides the sign of the advantage
    for (int32_t u = 0; u < U; ++u)
      acts[static_cast<size_t>(k) * U + u] = adv[static_cast<size_t>(k)] > 0 ? 0 : 1;
  CHECK(rl::signal_t(u0, acts, adv) > 5);
}

TEST_CASE("rl/gdp/trainer levers: warm start counted, elites imitated, deterministic", "[rl]") {
  const Graph g = test::small_rnnlm();
  const Cluster c = read_cluster("v100x2-nvlink");
  rl::TrainConfig cfg = lever_config();
  cfg.keep_reference = false;
  auto run = [&](uint64_t seed, int iterations) {
    rl::Trainer t(cfg, {rl::TrainGraph{"rnn", &g, &c, nullptr}}, CostModel(), seed);
    std::vector<rl::IterationStats> rows;
    for (int i = 0; i < iterations; ++i)
      for (const auto& r : t.step()) rows.push_back(r);
    return std::make_pair(rows, t.run(0).best().device);
  };
  const auto a = run(4, 6), b = run(4, 6);
  REQUIRE(a.first.size() == 6);
  for (size_t i = 0; i < a.first.size(); ++i) {
    CHECK(a.first[i].best_step_s == b.first[i].best_step_s);
    CHECK(a.first[i].mean_step_s == b.first[i].mean_step_s);
    CHECK(a.first[i].loss == b.first[i].loss);
    CHECK(a.first[i].elite_ce == b.first[i].elite_ce);
  }
  CHECK(a.second == b.second);
  // Two heuristics, then K = 8 a iteration: 4 on-policy and 4 local.
  CHECK(a.first[0].samples >= 2 + 8);
  CHECK(a.first[0].local_samples == 4);
  CHECK(std::isfinite(a.first[0].elite_ce));
  CHECK(std::isfinite(a.first[0].grad_norm));
  CHECK(std::isnan(a.first[0].greedy_changed));  // no previous iteration
  CHECK(std::isfinite(a.first[1].greedy_changed));
  // Never worse than the best heuristic it started from (that placement is an elite).
  Simulator sim(g, c, CostModel());
  auto st = sim.make_state();
  double heuristic = std::numeric_limits<double>::infinity();
  for (const char* m : {"human", "m-etf"}) {
    const Placement p = place::place(place::prepare(test::rl_registry(), m),
                                     place::Problem(g, c, CostModel()), place::Budget(), 4)
                            .placement;
    heuristic = std::min(heuristic, sim.step_time(p, *st));
  }
  CHECK(a.first.back().best_step_s <= heuristic);
}

TEST_CASE("rl/session: a run with every lever on resumes into the uninterrupted one", "[rl]") {
  const fs::path dir = test::fresh_dir("levers-resume");
  fs::create_directories(dir);
  const fs::path graph = dir / "g.json";
  write_graph_file(test::small_rnnlm(), graph.string());
  rl::RunSpec s = test::one_graph_spec(graph, 58, lever_config());
  rl::train(rl::learners(), s, (dir / "full").string());
  s.max_iterations = 3;
  rl::train(rl::learners(), s, (dir / "part").string());
  rl::resume(rl::learners(), (dir / "part").string());
  CHECK(test::log_without_wall(dir / "part" / "log.csv") ==
        test::log_without_wall(dir / "full" / "log.csv"));
  CHECK(test::text_of(dir / "part" / "best.json") == test::text_of(dir / "full" / "best.json"));
  const auto state = nlohmann::json::parse(test::text_of(dir / "full" / "state.json"));
  CHECK(state["graphs"][0]["elites"].size() == 4);
}

TEST_CASE("rl/gdp/trainer config: the levers' keys are strict", "[rl]") {
  auto err = [](const char* text) {
    return test::error_of(
        [&] { rl::TrainConfig::from_json(nlohmann::json::parse(text), "cfg.json"); });
  };
  CHECK_THAT(err(R"({"warm_start": ["humn"]})"), Contains("warm_start[0]") && Contains("humn"));
  CHECK_THAT(err(R"({"warm_start": ["gdp"]})"), Contains("cannot warm-start itself"));
  CHECK_THAT(err(R"({"elite": {"sise": 3}})"), Contains("sise"));
  CHECK_THAT(err(R"({"explore": {"local_fraction": 1.5}})"), Contains("local_fraction"));
  CHECK_THAT(err(R"({"ppo": {"baseline": "median"}})"),
             Contains("\"mean\", \"loo\", \"rank\" or \"top\""));
  const rl::TrainConfig c = rl::TrainConfig::from_json(lever_config().to_json(), "cfg.json");
  CHECK(c.to_json() == lever_config().to_json());
}

TEST_CASE("rl/session: a run written before the levers resumes as it was trained", "[rl]") {
  const fs::path dir = test::fresh_dir("pre-lever-resume");
  fs::create_directories(dir);
  const fs::path graph = dir / "g.json";
  write_graph_file(test::small_rnnlm(), graph.string());
  // The levers off (the tiny config): what such a run trained with.
  rl::RunSpec s = test::one_graph_spec(graph, 49);
  rl::train(rl::learners(), s, (dir / "full").string());
  s.max_iterations = 3;
  rl::train(rl::learners(), s, (dir / "part").string());
  // Its config.json as the trainer before the levers wrote it: none of their keys.
  const fs::path cfg = dir / "part" / "config.json";
  auto j = nlohmann::ordered_json::parse(test::text_of(cfg));
  for (const char* k : {"elite", "explore", "warm_start", "entropy_decay_iterations"})
    j["train"].erase(k);
  j["train"]["ppo"].erase("baseline");
  std::ofstream(cfg) << j.dump(1);
  rl::resume(rl::learners(), (dir / "part").string());
  CHECK(test::log_without_wall(dir / "part" / "log.csv") ==
        test::log_without_wall(dir / "full" / "log.csv"));
}

TEST_CASE("rl/gdp/counterfactual probes: counted, in the loss, deterministic, strict config",
          "[rl]") {
  const Graph g = test::two_chains();
  const Cluster c = test::full_mesh(3);
  rl::TrainConfig cfg = test::tiny_config();
  cfg.policy.anchor = false;  // every unit may move to both other devices
  cfg.counterfactual.units = 5;
  auto run = [&](const rl::TrainConfig& conf, int iterations) {
    rl::Trainer t(conf, {rl::TrainGraph{"chains", &g, &c, nullptr}}, CostModel(), 7);
    std::vector<rl::IterationStats> rows;
    for (int i = 0; i < iterations; ++i)
      for (const auto& r : t.step()) rows.push_back(r);
    return rows;
  };
  for (const char* target : {"expected", "best"}) {
    INFO(target);
    cfg.counterfactual.target = target;
    const auto a = run(cfg, 3), b = run(cfg, 3);
    REQUIRE(a.size() == 3);
    // The reference, then per iteration K = 8 samples and 5 probes of D - 1 = 2 moves each.
    CHECK(a[0].samples == 1 + 8 + 5 * 2);
    CHECK(a[2].samples == 1 + 3 * (8 + 5 * 2));
    for (size_t i = 0; i < a.size(); ++i) {
      CHECK(a[i].loss == b[i].loss);
      CHECK(a[i].cf_gain == b[i].cf_gain);
      CHECK(a[i].cf_gain >= 0.0);  // the best of a probe's devices includes the sample's own
      CHECK(a[i].cf_agree >= 0.0);
      CHECK(a[i].cf_agree <= 1.0);
    }
    // The term enters the loss: with weight 0 the same probes (the same samples) give another.
    rl::TrainConfig off = cfg;
    off.counterfactual.weight = 0;
    const auto z = run(off, 1);
    CHECK(z[0].samples == a[0].samples);
    CHECK(z[0].cf_gain == a[0].cf_gain);
    CHECK(z[0].loss != a[0].loss);
  }
  // Off: no probes, no columns.
  const auto none = run(test::tiny_config(), 1);
  CHECK(none[0].samples == 1 + 8);
  CHECK(std::isnan(none[0].cf_gain));
  // The section: strict, round-trips.
  const auto j = cfg.to_json();
  CHECK(j["counterfactual"]["units"] == 5);
  CHECK(j["counterfactual"]["target"] == "best");
  const rl::TrainConfig back = rl::TrainConfig::from_json(nlohmann::json::parse(j.dump()), "cfg");
  CHECK(back.counterfactual.units == 5);
  CHECK(back.counterfactual.target == "best");
  CHECK_THROWS_WITH(
      rl::TrainConfig::from_json({{"counterfactual", {{"target", "worst"}}}}, "cfg.json"),
      Catch::Contains("cfg.json: counterfactual") && Catch::Contains("\"worst\""));
  CHECK_THROWS_WITH(rl::TrainConfig::from_json({{"counterfactual", {{"probes", 4}}}}, "cfg.json"),
                    Catch::Contains("probes"));
}
