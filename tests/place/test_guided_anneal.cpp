// The anneal search with a guide (place/anneal.h): what gdp-anneal and the GDP trainer's expert
// step build on. A guide that gives no other device any mass (mix 0) never proposes one; a guide
// whose start is the one placement it allows starts and stays there; mix 1 is plain anneal,
// draw for draw.
#include <catch2/catch.hpp>
#include <set>

#include "core/rng.h"
#include "place/anneal.h"
#include "place/registry.h"
#include "place_helpers.h"
#include "sim/sim_fixtures.h"

using namespace gdp;
using Catch::Contains;

namespace {

// A guide over A columns: unit u may go only to devices allowed(u) (equal mass).
place::AnnealGuide only_devices(int32_t U, int32_t A,
                                const std::function<std::vector<int32_t>(int32_t)>& allowed,
                                double mix) {
  place::AnnealGuide g;
  g.columns = A;
  g.mix = mix;
  g.probs.assign(static_cast<size_t>(U) * A, 0.0f);
  for (int32_t u = 0; u < U; ++u) {
    const auto ds = allowed(u);
    for (int32_t d : ds) g.probs[static_cast<size_t>(u) * A + d] = 1.0f / ds.size();
  }
  return g;
}

place::AnnealConfig moves_only(double move, double scope) {
  place::AnnealConfig c;
  c.p_move = move;
  c.p_neighbour = 0;
  c.p_swap = 0;
  c.p_scope = scope;
  return c;
}

}  // namespace

TEST_CASE("place/guided anneal: with mix 0 every move goes to a device the guide allows",
          "[place][anneal]") {
  const Graph g = test::small_rnnlm();
  const Cluster c = test::full_mesh(4);
  const CostModel cost;
  const place::Problem pb(g, c, cost);
  const place::Annealer an(pb, place::Units::colocation(g));
  const int32_t U = an.units().num_units();
  REQUIRE(U > 4);
  // Even units may use devices 0 and 1, odd units devices 2 and 3.
  auto allowed = [](int32_t u) {
    return u % 2 ? std::vector<int32_t>{2, 3} : std::vector<int32_t>{0, 1};
  };
  std::vector<int32_t> cur(U);
  for (int32_t u = 0; u < U; ++u) cur[u] = allowed(u)[0];
  Rng rng(7);
  int changed = 0;
  for (const double mix : {0.0, 0.5}) {
    const place::AnnealGuide guide = only_devices(U, 4, allowed, mix);
    std::set<int32_t> outside;  // units moved to a device the guide does not allow
    for (int k = 0; k < 2000; ++k) {
      const std::vector<int32_t> x = an.proposal(moves_only(0.7, 0.3), guide, cur, {}, rng);
      for (int32_t u = 0; u < U; ++u) {
        if (x[u] == cur[u]) continue;
        ++changed;
        const auto ok = allowed(u);
        if (x[u] != ok[0] && x[u] != ok[1]) outside.insert(u);
      }
    }
    INFO("mix " << mix);
    if (mix == 0)
      CHECK(outside.empty());
    else
      CHECK(!outside.empty());  // the uniform share reaches the other devices
  }
  CHECK(changed > 1000);
  // Unguided proposals always change something.
  const place::AnnealGuide none;
  for (int k = 0; k < 200; ++k)
    CHECK(an.proposal(place::AnnealConfig(), none, cur, {}, rng) != cur);
}

TEST_CASE("place/guided anneal: a guide with all its mass on one placement starts and stays there",
          "[place][anneal]") {
  const Graph g = test::small_rnnlm();
  const Cluster c = test::full_mesh(2);
  const CostModel cost;
  const place::Problem pb(g, c, cost);
  const place::Units units = place::Units::colocation(g);
  const int32_t U = units.num_units();
  std::vector<int32_t> target(U);
  for (int32_t u = 0; u < U; ++u) target[u] = (u / 3) % 2;
  const Placement p = units.expand(target);
  place::AnnealConfig cfg = moves_only(0.8, 0.2);
  cfg.init_methods = "";  // the guide's start only
  auto plan = [&](place::Run&, const place::Units&) {
    place::GuidePlan gp;
    gp.guide = only_devices(
        U, 2, [&](int32_t u) { return std::vector<int32_t>{target[u]}; }, 0);
    gp.starts = {p};
    gp.start_names = {"the guide's placement"};
    return gp;
  };
  std::unique_ptr<place::Placer> placer = place::make_anneal_placer(cfg, plan, "guided");
  place::Run run(pb, "guided", place::Budget{200, 0}, 1);
  const Placement out = placer->place(run);
  CHECK(out.device == p.device);
  CHECK(run.samples() <= 200);
  CHECK(run.best_step_s() == test::simulate(g, c, p).step_time_s);
  CHECK_THAT(run.note(), Contains("guided from the guide's placement"));
  // Without starts and start methods there is nothing to start from.
  auto empty_plan = [](place::Run&, const place::Units&) { return place::GuidePlan(); };
  place::Run run2(pb, "guided", place::Budget{200, 0}, 1);
  CHECK_THROWS_WITH(place::make_anneal_placer(cfg, empty_plan, "guided")->place(run2),
                    Contains("options.init_methods is empty"));
}

TEST_CASE("place/guided anneal: mix 1 without starts is plain anneal, draw for draw",
          "[place][anneal]") {
  const Graph g = test::small_rnnlm();
  const Cluster c = test::full_mesh(3);
  const CostModel cost;
  const place::Problem pb(g, c, cost);
  const place::Units units = place::Units::colocation(g);
  const int32_t U = units.num_units();
  auto plan = [&](place::Run&, const place::Units&) {
    place::GuidePlan gp;
    gp.guide = only_devices(
        U, 3, [](int32_t) { return std::vector<int32_t>{0}; }, 1.0);
    return gp;
  };
  const place::PlaceResult plain =
      place::place(place::prepare(place::registry(), "anneal"), pb, place::Budget{300, 0}, 3);
  place::Run run(pb, "guided", place::Budget{300, 0}, 3);
  const Placement out = place::make_anneal_placer(place::AnnealConfig(), plan)->place(run);
  CHECK(out.device == plain.placement.device);
  CHECK(run.samples() == plain.report.samples);
  REQUIRE(run.curve().size() == plain.report.curve.size());
  for (size_t i = 0; i < run.curve().size(); ++i)
    CHECK(run.curve()[i].best_step_s == plain.report.curve[i].best_step_s);
}
