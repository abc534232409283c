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
#include <regex>
#include <set>

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
fs::path tiny_run(const std::string& name, int32_t width = 8, bool devices_used = false) {
  const fs::path dir = fresh_dir(name);
  fs::create_directories(dir);
  const fs::path graph = dir / "g.json";
  write_graph_file(test::small_rnnlm(), graph.string());
  rl::TrainConfig c = test::tiny_config();
  c.policy.width = width;
  c.policy.devices_used = devices_used;
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

// Fine-tuning through the method seeds its elites from the zero-shot placement the method's own
// options would give (TrainConfig::fine_tune_zero_shot): a reading the checkpoint lacks is the
// zero-shot error, with fine_tune as without.
TEST_CASE("rl/gdp fine-tuning seeds from the reading its options name", "[rl]") {
  const std::string ckpt = tiny_run("fine_tune_reading").string();
  const Graph g = test::small_rnnlm();
  const Cluster c = read_cluster("v100x2-nvlink");
  const CostModel cost;
  const place::Problem pb(g, c, cost);
  place::Budget budget;
  budget.samples = 40;
  auto ft = [&](nlohmann::json o) {
    o["checkpoint"] = ckpt;
    return place::place(place::prepare(rl_registry(), "gdp", o), pb, budget, 1);
  };
  for (bool fine_tune : {false, true})
    CHECK_THAT(error_of([&] {
                 ft({{"decode", "cut"}, {"fine_tune", fine_tune}});
               }),
               Contains("options.decode") && Contains("cut head"));
  // The options win over a config's section (a run's config.json carries one): its reading
  // the checkpoint lacks is not read.
  const place::PlaceResult own = ft({{"decode", "own"},
                                     {"fine_tune", true},
                                     {"config", {{"fine_tune_zero_shot", {{"decode", "cut"}}}}}});
  CHECK(std::isfinite(own.report.best_step_s));
  const place::PlaceResult r = ft({{"decode", "own"}, {"fine_tune", true}});
  CHECK(std::isfinite(r.report.best_step_s));
  CHECK_THAT(r.report.note, Contains("fine-tuned"));
}

// Zero-shot with a devices-used policy (a tiny run with the row): the greedy positions are read
// at every device count (every_count, on by default) in place of as many samples, nearest the
// greedy count first, a count that decodes to a placement already listed skipped: on 4 devices
// with 3 samples, the greedy and its distinct counts (each decoded here by hand), then samples.
// With every_count off, the same budget is the greedy and 3 samples; with one sample, the
// nearest distinct count; under memory pressure, only the counts the mask leaves open.
TEST_CASE("rl/zero-shot reads the greedy positions at every device count", "[rl]") {
  const std::string ckpt = tiny_run("zero_shot_counts", 8, true).string();
  const std::unique_ptr<rl::Policy> policy = rl::load_policy(ckpt);
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
  auto zs = [&](const place::Problem& p, nlohmann::json o) {
    o["checkpoint"] = ckpt;
    o["decode"] = "own";
    return place::place(place::prepare(rl_registry(), "gdp", o), p, place::Budget{}, 1);
  };
  auto placement_at = [&](int32_t L) {  // L = 0: the greedy count
    std::vector<int32_t> a = greedy;
    if (L > 0) a.back() = L - 1;
    return rl::placement_of(in, a, 0);
  };
  auto greedy_at = [&](int32_t L) { return sim.run(placement_at(L)).step_time_s; };
  // The counts in the method's order (nearest the greedy one first, the lower on a tie), a
  // placement already listed skipped.
  const int32_t used = greedy.back() + 1;
  std::vector<int32_t> order;
  for (int32_t d = 1; d < 4; ++d)
    for (int32_t L : {used - d, used + d})
      if (L >= 1 && L <= 4) order.push_back(L);
  std::set<std::vector<int32_t>> seen{placement_at(0).device};
  std::vector<int32_t> distinct;
  for (int32_t L : order)
    if (seen.insert(placement_at(L).device).second) distinct.push_back(L);
  REQUIRE(!distinct.empty());
  const int32_t n = static_cast<int32_t>(distinct.size());
  const place::PlaceResult every = zs(pb, {{"samples", 3}});
  CHECK(every.report.samples == 4);
  CHECK_THAT(every.report.note,
             Contains("greedy at " + std::to_string(n + 1) + " device counts" +
                      (n < 3 ? " and " + std::to_string(3 - n) + " samples" : "") + " from"));
  CHECK(every.report.best_step_s <=
        std::min({greedy_at(1), greedy_at(2), greedy_at(3), greedy_at(4)}));
  if (n == 3)
    CHECK(every.report.best_step_s ==
          std::min({greedy_at(1), greedy_at(2), greedy_at(3), greedy_at(4)}));
  const place::PlaceResult plain = zs(pb, {{"samples", 3}, {"every_count", false}});
  CHECK(plain.report.samples == 4);
  CHECK_THAT(plain.report.note, Contains("zero-shot: greedy and 3 samples from"));
  // One sample's budget: the nearest count that decodes to another placement takes it.
  const place::PlaceResult one = zs(pb, {{"samples", 1}});
  CHECK(one.report.samples == 2);
  CHECK_THAT(one.report.note, Contains("greedy at 2 device counts from"));
  CHECK(one.report.best_step_s == std::min(greedy_at(0), greedy_at(distinct[0])));
  // Counts the memory mask closes are not candidates: with each device holding 0.3 of what the
  // graph needs, only L = 4 is open, and the budget goes to samples.
  Cluster small = c;
  for (DeviceSpec& d : small.devices) d.memory_bytes = memory_lower_bound_bytes(g) * 3 / 10;
  const place::Problem pbs(g, small, cost);
  const place::PlaceResult masked = zs(pbs, {{"samples", 3}});
  CHECK_THAT(masked.report.note, Contains("zero-shot: greedy and 3 samples from"));
  CHECK_THAT(masked.report.note, Contains("greedy on 4 of 4 devices"));
}

// Zero-shot reads the node logits two ways (decode "both"): pooled per op, as the tiny run was
// trained, and per stage. A policy without a devices-used row has its greedy labels read at
// every other device count too, coarsened as the row would coarsen them (floor(a L / D)),
// nearest the full count first, the decodings taking turns, a placement already listed skipped.
// On 4 devices with 6 samples (7 candidates) every distinct candidate fits (2 greedy placements
// and at most 3 + 2 counts: stage at L = 1 is op at L = 1), the rest of the budget samples: the
// result is at least as good as every candidate decoded here by hand, and the note's counts are
// the distinct ones. Under memory pressure only L = 4 is open and the samples are split between
// the two decodings.
TEST_CASE("rl/zero-shot decodes op and stage decisions, and a rowless policy at every count",
          "[rl]") {
  const std::string ckpt = tiny_run("zero_shot_both").string();
  const std::unique_ptr<rl::Policy> policy = rl::load_policy(ckpt);
  REQUIRE_FALSE(policy->config().devices_used);
  REQUIRE(policy->config().decision == "op");
  const Graph g = test::small_rnnlm();
  const Cluster c = read_cluster("v100x4-nvlink");
  const CostModel cost;
  const place::Problem pb(g, c, cost);
  Simulator sim(g, c, cost);
  CHECK(policy->prepare(g, c, cost, "stage").num_units() <
        policy->prepare(g, c, cost, "op").num_units());
  CHECK_THROWS(policy->prepare(g, c, cost, "layer"));
  // Each decoding's greedy placement read at L devices, by hand.
  std::map<std::string, std::vector<std::vector<int32_t>>> at;  // decision -> L - 1 -> op devices
  for (const char* d : {"op", "stage"}) {
    const rl::PolicyInput in = policy->prepare(g, c, cost, d);
    std::vector<int32_t> greedy;
    {
      nn::NoGradGuard no_grad;
      greedy = rl::greedy_actions(policy->forward(in).value());
    }
    REQUIRE(greedy.size() == static_cast<size_t>(in.num_units()));
    for (int32_t L = 1; L <= 4; ++L) {
      std::vector<int32_t> a = greedy;
      for (int32_t& x : a) x = x * L / 4;
      at[d].push_back(in.units.expand(a).device);
    }
  }
  double best = std::numeric_limits<double>::infinity();
  for (const auto& [d, ps] : at)
    for (const auto& p : ps) {
      const SimResult r = sim.run(Placement{p});
      if (r.valid) best = std::min(best, r.step_time_s);
    }
  // The distinct counts, in the order the method lists them.
  std::set<std::vector<int32_t>> seen{at["op"][3], at["stage"][3]};
  std::map<std::string, int32_t> counts;
  for (int32_t L = 3; L >= 1; --L)
    for (const char* d : {"op", "stage"}) counts[d] += seen.insert(at[d][L - 1]).second;
  auto zs = [&](const place::Problem& p, nlohmann::json o) {
    o["checkpoint"] = ckpt;
    return place::place(place::prepare(rl_registry(), "gdp", o), p, place::Budget{}, 1);
  };
  auto greedy_at = [](int32_t n) {
    return n ? "greedy at " + std::to_string(n + 1) + " device counts" : std::string("greedy");
  };
  const place::PlaceResult both = zs(pb, {{"samples", 6}, {"decode", "both"}});
  CHECK(both.report.samples == 7);  // 1 + samples candidates, as with one decoding
  CHECK_THAT(both.report.note, Contains("op decisions (") && Contains("stage decisions (") &&
                                   Contains("): " + greedy_at(counts["op"])) &&
                                   Contains("): " + greedy_at(counts["stage"])));
  CHECK(both.report.best_step_s <= best);
  CHECK(zs(pb, {{"samples", 6}}).report.note == both.report.note);  // "both" is the default
  // The policy's own decisions alone: its greedy and its distinct counts, then samples.
  std::set<std::vector<int32_t>> own_seen{at["op"][3]};
  int32_t own_counts = 0;
  for (int32_t L = 3; L >= 1; --L) own_counts += own_seen.insert(at["op"][L - 1]).second;
  const place::PlaceResult own = zs(pb, {{"samples", 5}, {"decode", "own"}});
  CHECK(own.report.samples == 6);
  CHECK_THAT(own.report.note, Contains("zero-shot: " + greedy_at(own_counts) + " and " +
                                       std::to_string(5 - own_counts) + " samples from"));
  Cluster small = c;
  for (DeviceSpec& d : small.devices) d.memory_bytes = memory_lower_bound_bytes(g) * 3 / 10;
  const place::Problem pbs(g, small, cost);
  const place::PlaceResult masked =
      zs(pbs, {{"samples", 6}, {"decode", "both"}, {"allocate", "even"}});
  CHECK_THAT(masked.report.note,
             Contains("): greedy and 3 samples;") && Contains("): greedy and 2 samples;"));
  CHECK_THROWS_WITH(zs(pb, {{"decode", "layer"}}), Contains("decode"));
  // "all" is op and stage for a policy without a cut head, which cannot be read as a cut.
  CHECK(zs(pbs, {{"samples", 6}, {"decode", "all"}, {"allocate", "even"}}).report.note ==
        masked.report.note);
  CHECK_THROWS_WITH(zs(pb, {{"decode", "cut"}}), Contains("cut head"));
  // allocate "best": a first round of samples to each decoding (rounds of about a tenth of
  // them), then each round to the decoding with the fastest candidate so far: deterministic,
  // the same budget and the same candidates before the samples.
  const place::PlaceResult even =
      zs(pb, {{"samples", 20}, {"decode", "both"}, {"allocate", "even"}});
  const place::PlaceResult lead =
      zs(pb, {{"samples", 20}, {"decode", "both"}, {"allocate", "best"}});
  CHECK(zs(pb, {{"samples", 20}, {"decode", "both"}}).report.note == lead.report.note);  // default
  CHECK(lead.report.samples == 21);
  CHECK(even.report.samples == 21);
  CHECK(lead.report.note ==
        zs(pb, {{"samples", 20}, {"decode", "both"}, {"allocate", "best"}}).report.note);
  auto drawn = [](const std::string& note) {  // the samples each decoding drew
    std::vector<int32_t> n;
    const std::regex re("(\\d+) samples");
    for (auto it = std::sregex_iterator(note.begin(), note.end(), re); it != std::sregex_iterator();
         ++it)
      n.push_back(std::stoi((*it)[1]));
    return n;
  };
  const std::vector<int32_t> a = drawn(even.report.note), b = drawn(lead.report.note);
  REQUIRE(a.size() == 2);
  REQUIRE(b.size() == 2);
  CHECK(a[0] + a[1] == b[0] + b[1]);
  CHECK(std::abs(a[0] - a[1]) <= 1);  // even
  CHECK(std::min(b[0], b[1]) >= 1);   // every decoding sampled at least once
  CHECK_THROWS_WITH(zs(pb, {{"allocate", "most"}}), Contains("allocate"));
  // The samples are placements not seen before: on one device every sample repeats the greedy
  // placement, so none is simulated (the two greedy placements are, one per decoding).
  Cluster one = c;
  one.devices.resize(1);
  one.links.clear();
  one.finalize();
  const place::Problem pb1(g, one, cost);
  const place::PlaceResult single = zs(pb1, {{"samples", 20}, {"decode", "both"}});
  CHECK(single.report.samples == 2);
  CHECK(drawn(single.report.note).empty());
  const place::PlaceResult lead1 =
      zs(pb1, {{"samples", 20}, {"decode", "both"}, {"allocate", "best"}});
  CHECK(lead1.report.samples == 2);  // every decoding exhausted: the rounds stop
  CHECK(drawn(lead1.report.note).empty());
}

// The regression issue 27 started from (a shipped policy that placed held-out graphs worse
// than human, unnoticed) cannot come back silently: the shipped policy's zero-shot placement
// (greedy + 63 samples, seed 1, deterministic) of each graph of holdout.json and smoke.json,
// none of them in pre-training, is held to a floor over the human placement: 1.0 where the
// shipped policy is at least human, else its measured ratio less 0.02 (docs/results.md,
// "Op first, then joint: the shipped policy"). Retraining the
// shipped policy updates this table.
TEST_CASE("rl/the shipped policy places held-out graphs zero-shot at least as well as before",
          "[rl][pretrained]") {
  const std::map<std::string, double> floor = {
      // holdout.json (measured: docs/results.md, "The weight gradients beside the input gradients")
      {"gnmt_8layer", 1.00},            // 1.049x (the previous policies' 0.978x, 0.969x, 0.930x)
      {"bert_base", 1.00},              // 1.391x
      {"resnet50_b64", 1.00},           // 1.422x
      {"transformer_xl_8layer", 1.00},  // 1.206x
      // smoke.json
      {"rnnlm_small", 1.00},                   // 1.02x
      {"gnmt_small", 1.00},                    // 1.08x (an earlier policy's 0.972x)
      {"transformer_xl_small", 1.00},          // 1.24x
      {"bert_small", 1.00},                    // 1.50x
      {"inception_v3_small", 1.00},            // 1.70x
      {"resnet50_small", 1.00},                // 1.53x
      {"amoebanet_small", 1.00},               // 1.88x
      {"wavenet_small", 1.00},                 // 1.30x
      {"random_layered_small", 1.00},          // 1.31x
      {"random_series_parallel_small", 1.00},  // 1.37x
      {"random_block_chain_small", 1.00},      // 1.50x
      {"random_nas_cell_small", 1.00},         // 1.13x
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

TEST_CASE("rl/zero-shot repairs within its budget when nothing the network gives fits", "[rl]") {
  // Eight ops of 0.45 of a device's memory each on 4 devices: a placement fits only with two
  // ops per device, which few of a small network's draws do. With the whole budget spent on
  // candidates, the repair once had no sample left and the method threw ("exceeds the sample
  // budget"); the last sample is now kept for it while nothing valid has been found.
  const std::string ckpt = tiny_run("zero_shot_repair").string();
  const int64_t mem = int64_t(1) << 30;
  Graph g;
  g.name = "tight";
  for (int i = 0; i < 8; ++i) {
    Op op = timed_op("w" + std::to_string(i), 1e-3, 1024);
    op.id = i;
    op.type = "MatMul";
    op.param_bytes = mem * 45 / 100;
    g.add_op(op);
    if (i > 0) g.add_edge(i - 1, 0, i, 1024);
  }
  g.finalize();
  const Cluster c = full_mesh(4, kLinkBw_Bps, kLinkLat_s, mem);
  const CostModel cost;
  const place::Problem pb(g, c, cost);
  Simulator sim(g, c, cost);
  int repaired = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    for (int64_t budget : {4, 8, 64}) {
      INFO("seed " << seed << ", budget " << budget);
      const place::PlaceResult r = place::place(
          place::prepare(rl_registry(), "gdp", {{"checkpoint", ckpt}, {"samples", budget - 1}}), pb,
          place::Budget{budget, 0}, seed);
      const SimResult s = sim.run(r.placement);
      CHECK(s.valid);
      CHECK(r.report.best_step_s == Approx(s.step_time_s));
      if (r.report.note.find("repaired") != std::string::npos) {
        ++repaired;
        CHECK(r.report.note.find(" 0/") != std::string::npos);  // none valid as decoded
      }
    }
  }
  INFO(repaired << " of 18 repaired");
  CHECK(repaired > 0);  // the case the fix is for happened
}

TEST_CASE("rl/zero-shot with a second policy: its greedy placements within the budget", "[rl]") {
  // options.also: a second network (here another width) whose readings add their greedy
  // placements (and device counts) to the candidates in place of as many samples.
  const std::string a = tiny_run("zero_shot_also_a").string();
  const std::string b = tiny_run("zero_shot_also_b", 16).string();
  const Graph g = test::small_rnnlm();
  const Cluster c = test::full_mesh(4);
  const CostModel cost;
  const place::Problem pb(g, c, cost);
  Simulator sim(g, c, cost);
  auto run = [&](const nlohmann::json& o, uint64_t seed) {
    return place::place(place::prepare(rl_registry(), "gdp", o), pb, place::Budget{16, 0}, seed);
  };
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    INFO("seed " << seed);
    // Even shares: what an exhausted first-policy reading cannot draw goes to the others.
    const nlohmann::json both = {
        {"checkpoint", a}, {"samples", 15}, {"also", b}, {"allocate", seed % 2 ? "best" : "even"}};
    const place::PlaceResult r = run(both, seed);
    CHECK(r.report.samples <= 16);
    CHECK_THAT(r.report.note, Contains("the second policy's op decisions"));
    CHECK_THAT(r.report.note, Contains("the second policy's stage decisions"));
    // ... which draw no samples: the samples are the first policy's.
    CHECK_FALSE(std::regex_search(
        r.report.note,
        std::regex("second policy's [a-z]+ decisions \\([0-9]+\\): greedy[^;]*samples")));
    CHECK(std::regex_search(r.report.note, std::regex("[0-9]+ samples")));
    CHECK(r.report.best_step_s == Approx(sim.run(r.placement).step_time_s));
    // The best is at least as fast as each of the second policy's greedy placements.
    const std::unique_ptr<rl::Policy> p = rl::load_policy(b);
    nn::NoGradGuard no_grad;
    for (const char* d : {"op", "stage"}) {
      const rl::PolicyInput in = p->prepare(g, c, cost, d);
      const Placement q = rl::placement_of(in, rl::greedy_actions(p->forward(in).value().cpu()), 0);
      CHECK(r.report.best_step_s <= sim.run(q).step_time_s * (1 + 1e-12));
    }
    CHECK(run(both, seed).placement.device == r.placement.device);  // deterministic
  }
  // Without a first checkpoint, or fine-tuning, the option is refused by name.
  CHECK_THAT(error_of([&] {
               place::prepare(rl_registry(), "gdp", {{"checkpoint", "none"}, {"also", b}});
             }),
             Contains("options.also"));
  CHECK_THAT(
      error_of([&] {
        place::prepare(rl_registry(), "gdp", {{"checkpoint", a}, {"also", b}, {"fine_tune", true}});
      }),
      Contains("options.also"));
}
