// The transfer regime (rl/gdp/trainer.h TrainConfig::regime): its preset and how a config
// overrides it, stage decisions (one decision per structural stage rank), type dropout and
// family weights (deterministic, and they change the run), and fine-tuning that keeps its
// start (no behaviour cloning over a checkpoint; elites seeded from its own placements).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <memory>
#include <set>

#include "core/error.h"
#include "datasets/registry.h"
#include "nn/autograd.h"
#include "place/run.h"
#include "place/stages.h"
#include "place_helpers.h"
#include "rl/gdp/ppo.h"
#include "rl/gdp/trainer.h"
#include "rl/gdp/zero_shot.h"
#include "rl_fixtures.h"
#include "sim/simulator.h"

using namespace gdp;
using Catch::Contains;
namespace fs = std::filesystem;

TEST_CASE("rl/transfer regime: the preset, keys that override it, a strict round trip", "[rl]") {
  const rl::TrainConfig t = rl::TrainConfig::preset("transfer");
  CHECK(t.regime == "transfer");
  CHECK(t.policy.features == 4);
  CHECK(t.policy.decision == "op");
  CHECK_FALSE(t.policy.devices_used);
  CHECK(t.samples_per_iteration == 16);
  CHECK(t.imitation_steps == 0);
  CHECK(t.warm_start.empty());
  CHECK(t.elite.size == 0);
  CHECK(t.explore.local_fraction == 0);
  CHECK(t.ppo.baseline == rl::Baseline::mean);
  CHECK(t.type_dropout == 0);
  CHECK_FALSE(t.family_weights);
  CHECK(t.decisions.empty());
  const rl::TrainConfig s = rl::TrainConfig::preset("search");
  CHECK(s.regime == "search");
  CHECK(s.policy.features == 1);
  CHECK(s.policy.decision == "op");
  CHECK_FALSE(s.policy.devices_used);
  CHECK(s.imitation_steps == 20);
  CHECK_FALSE(s.family_weights);

  // A key overrides the regime's default; a policy key leaves the regime's others.
  const auto j = nlohmann::json::parse(
      R"({"regime": "transfer", "samples_per_iteration": 8, "policy": {"width": 32}})");
  const rl::TrainConfig c = rl::TrainConfig::from_json(j, "c.json");
  CHECK(c.samples_per_iteration == 8);
  CHECK(c.policy.width == 32);
  CHECK(c.policy.features == 4);
  CHECK(c.imitation_steps == 0);
  // Without "regime" the caller's default applies (`gdp train --suite`: transfer).
  CHECK(rl::TrainConfig::from_json(nlohmann::json::object(), "c.json", "transfer").regime ==
        "transfer");
  CHECK(rl::TrainConfig::from_json(nlohmann::json::object(), "c.json").regime == "search");
  // Round trip.
  CHECK(rl::TrainConfig::from_json(c.to_json(), "c.json").to_json() == c.to_json());
  // Strict.
  auto err = [](const char* text) {
    return test::error_of(
        [&] { rl::TrainConfig::from_json(nlohmann::json::parse(text), "c.json"); });
  };
  CHECK_THAT(err(R"({"regime": "fast"})"), Contains("c.json: regime") && Contains("transfer"));
  CHECK_THAT(err(R"({"policy": {"decision": "layer"}})"), Contains("decision"));
  CHECK_THAT(err(R"({"policy": {"features": 6}})"), Contains("features"));
  CHECK_THAT(err(R"({"type_dropout": 1.5})"), Contains("type_dropout"));
}

TEST_CASE("rl/stage decisions: one decision per stage rank, a rank's ops on one device", "[rl]") {
  const Graph g = test::small_rnnlm();
  const Cluster c = read_cluster("v100x2-nvlink");
  rl::TrainConfig cfg = test::tiny_config();
  cfg.policy.features = 2;
  cfg.policy.decision = "stage";
  rl::Policy policy(cfg.policy, rl::OpVocabulary::from_graphs({&g}), 3);
  const rl::PolicyInput in = policy.prepare(g, c);
  REQUIRE(in.features.num_stage_ranks > 1);
  CHECK(in.num_units() <= in.features.num_stage_ranks);
  CHECK(in.num_units() < g.num_ops() / 10);
  CHECK(in.x.dim(1) == 2 * rl::kNodeFeaturesV2);
  nn::NoGradGuard no_grad;
  const nn::Var logits = policy.forward(in);
  Rng rng(1);
  const std::vector<int32_t> acts = rl::sample_actions(logits.value(), 4, rng);
  for (int32_t k = 0; k < 4; ++k) {
    const Placement p = rl::placement_of(in.units, acts, k);
    std::map<int32_t, int32_t> device_of_rank;
    for (int32_t v = 0; v < g.num_ops(); ++v) {
      auto [it, fresh] = device_of_rank.emplace(in.features.stage_rank[v], p.device[v]);
      if (!fresh) REQUIRE(it->second == p.device[v]);
    }
    CHECK(test::groups_together(g, p));
  }
  // The first feature set still reads 36 node columns (the shipped policy's).
  rl::PolicyConfig old = cfg.policy;
  old.features = 1;
  old.decision = "op";
  rl::Policy v1(old, rl::OpVocabulary::from_graphs({&g}), 3);
  CHECK(v1.prepare(g, c).x.dim(1) == 2 * rl::kNodeFeaturesV1);
  // The third reads the links' cost too, and every graph column.
  old.features = 3;
  rl::Policy v3(old, rl::OpVocabulary::from_graphs({&g}), 3);
  CHECK(v3.prepare(g, c).x.dim(1) == 2 * rl::kNodeFeaturesV3);
  CHECK(v3.prepare(g, c).stats.dim(1) == rl::kGraphFeatures);
  // The fourth: the second's columns, then the concurrency columns, raw and standardized.
  old.features = 4;
  rl::Policy v4(old, rl::OpVocabulary::from_graphs({&g}), 3);
  const rl::PolicyInput in4 = v4.prepare(g, c);
  const int64_t F4 = rl::kNodeFeaturesV2 + 2;
  REQUIRE(in4.x.dim(1) == 2 * F4);
  CHECK(in4.stats.dim(1) == rl::kGraphFeaturesV2);
  for (int32_t v = 0; v < g.num_ops(); v += 17) {
    const float* row = in4.features.x.data() + static_cast<int64_t>(v) * rl::kNodeFeatures;
    CHECK(in4.x.data()[v * 2 * F4 + rl::kNodeFeaturesV2] == row[rl::feat::stage_fold]);
    CHECK(in4.x.data()[v * 2 * F4 + rl::kNodeFeaturesV2 + 1] == row[rl::feat::stage_share]);
    CHECK(in4.x.data()[v * 2 * F4 + rl::feat::stage_rank] == row[rl::feat::stage_rank]);
  }
  // The fifth: the fourth's columns, then the critical-path columns.
  old.features = 5;
  rl::Policy v5(old, rl::OpVocabulary::from_graphs({&g}), 3);
  const rl::PolicyInput in5 = v5.prepare(g, c);
  const int64_t F5 = F4 + 3;
  REQUIRE(in5.x.dim(1) == 2 * F5);
  CHECK(in5.stats.dim(1) == rl::kGraphFeaturesV2);
  for (int32_t v = 0; v < g.num_ops(); v += 17) {
    const float* row = in5.features.x.data() + static_cast<int64_t>(v) * rl::kNodeFeatures;
    CHECK(in5.x.data()[v * 2 * F5 + F4 - 1] == row[rl::feat::stage_share]);
    CHECK(in5.x.data()[v * 2 * F5 + F4] == row[rl::feat::crit_top]);
    CHECK(in5.x.data()[v * 2 * F5 + F4 + 2] == row[rl::feat::crit_slack]);
  }
}

// TrainConfig::decisions: one network, each graph trained twice per iteration, its node logits
// pooled per op and per stage; the second copy's rows carry "@stage", its samples keep a stage
// rank's ops on one device, the run is deterministic, and the stage copy changes what the
// shared network learns.
TEST_CASE("rl/decisions: each graph trained per op and per stage, one network", "[rl]") {
  const Graph g = test::small_rnnlm();
  const Cluster c = read_cluster("v100x2-nvlink");
  auto trainer = [&](std::vector<std::string> decisions) {
    rl::TrainConfig cfg = test::tiny_config();
    cfg.policy.features = 2;
    cfg.decisions = std::move(decisions);
    return std::make_unique<rl::Trainer>(cfg, std::vector<rl::TrainGraph>{{"rnn", &g, &c}},
                                         CostModel(), 4);
  };
  auto trace = [&](rl::Trainer& t) {
    std::vector<double> out;
    for (int i = 0; i < 3; ++i)
      for (const auto& r : t.step()) out.insert(out.end(), {r.entropy, r.loss, r.mean_step_s});
    return out;
  };
  const auto both = trainer({"op", "stage"});
  REQUIRE(both->num_graphs() == 2);
  CHECK(both->graph(0).name == "rnn");
  CHECK(both->graph(1).name == "rnn@stage");
  const std::vector<rl::IterationStats> rows = both->step();
  REQUIRE(rows.size() == 2);
  CHECK(rows[1].graph == "rnn@stage");
  CHECK(both->run(0).samples() == both->run(1).samples());
  CHECK(rows[1].entropy != rows[0].entropy);
  // The stage copy's best placement keeps every stage rank on one device.
  const rl::Policy& p = both->policy();
  const rl::PolicyInput in = p.prepare(g, c, CostModel(), "stage");
  REQUIRE(both->run(1).has_best());
  const Placement& best = both->run(1).best();
  std::map<int32_t, int32_t> device_of_rank;
  for (int32_t v = 0; v < g.num_ops(); ++v) {
    auto [it, fresh] = device_of_rank.emplace(in.features.stage_rank[v], best.device[v]);
    if (!fresh) REQUIRE(it->second == best.device[v]);
  }
  // Deterministic, and the stage copy changes the network's training.
  const auto a = trace(*trainer({"op", "stage"})), b = trace(*trainer({"op", "stage"}));
  CHECK(a == b);
  const auto op_only = trace(*trainer({"op"})), plain = trace(*trainer({}));
  CHECK(op_only == plain);   // one entry, the policy's own decision: the plain run
  std::vector<double> a_op;  // the op rows of the joint run
  for (size_t i = 0; i < a.size(); i += 6)
    a_op.insert(a_op.end(), a.begin() + i, a.begin() + i + 3);
  CHECK(a_op.size() == op_only.size());
  CHECK(a_op != op_only);
  // Strict.
  auto err = [](const char* text) {
    return test::error_of(
        [&] { rl::TrainConfig::from_json(nlohmann::json::parse(text), "c.json"); });
  };
  CHECK_THAT(err(R"({"decisions": ["layer"]})"), Contains("c.json") && Contains("decisions[0]"));
  CHECK_THAT(err(R"({"decisions": ["op", "op"]})"), Contains("twice"));
  const auto j = nlohmann::json::parse(R"({"decisions": ["op", "stage"]})");
  const rl::TrainConfig rt = rl::TrainConfig::from_json(j, "c.json");
  CHECK(rt.decisions == std::vector<std::string>{"op", "stage"});
  CHECK(rl::TrainConfig::from_json(rt.to_json(), "c.json").to_json() == rt.to_json());
}

TEST_CASE("rl/type dropout and family weights: deterministic, and they change the run", "[rl]") {
  const Graph g1 = test::small_rnnlm(), g2 = test::two_chains();
  const Cluster c = read_cluster("v100x2-nvlink"), mesh = test::full_mesh(2);
  auto trace = [&](double dropout, bool families) {
    rl::TrainConfig cfg = test::tiny_config();
    cfg.type_dropout = dropout;
    cfg.family_weights = families;
    rl::Trainer t(cfg,
                  {rl::TrainGraph{"rnn", &g1, &c, nullptr, "rnnlm"},
                   rl::TrainGraph{"chains", &g2, &mesh, nullptr, "chains"},
                   rl::TrainGraph{"rnn2", &g1, &c, nullptr, "rnnlm"}},
                  CostModel(), 4);
    std::vector<double> out;
    for (int i = 0; i < 3; ++i)
      for (const auto& r : t.step()) out.insert(out.end(), {r.entropy, r.loss, r.mean_step_s});
    return out;
  };
  const auto plain = trace(0, false);
  CHECK(trace(0.5, false) == trace(0.5, false));
  CHECK(trace(0.5, false) != plain);
  CHECK(trace(0, true) == trace(0, true));
  CHECK(trace(0, true) != plain);
}

TEST_CASE("rl/fine-tuning keeps its start: no cloning over a checkpoint", "[rl]") {
  const Graph g = test::small_rnnlm();
  const Cluster c = read_cluster("v100x2-nvlink");
  rl::TrainConfig cfg = test::tiny_config();
  cfg.imitation_steps = 20;
  cfg.warm_start = {"human", "m-etf"};
  cfg.fine_tune_warm_start = false;
  rl::Trainer scratch(cfg, {rl::TrainGraph{"rnn", &g, &c, nullptr}}, CostModel(), 2);
  scratch.step();
  CHECK_FALSE(std::isnan(scratch.imitation_accuracy(0)));  // cloned the heuristics
  rl::Trainer tuned(cfg, {rl::TrainGraph{"rnn", &g, &c, nullptr}}, CostModel(), 2,
                    &scratch.policy());
  CHECK(tuned.config().imitation_steps == 0);
  CHECK(tuned.config().warm_start.empty());
  const int64_t before = tuned.run(0).samples();
  tuned.step();
  CHECK(std::isnan(tuned.imitation_accuracy(0)));
  // Only the policy's own samples: nothing ran the heuristics.
  CHECK(tuned.run(0).samples() - before == cfg.samples_per_iteration);

  // fine_tune_warm_start (the search regime's default): the heuristics run and are counted,
  // but nothing is cloned.
  cfg.fine_tune_warm_start = true;
  rl::Trainer warm(cfg, {rl::TrainGraph{"rnn", &g, &c, nullptr}}, CostModel(), 2,
                   &scratch.policy());
  CHECK(warm.config().imitation_steps == 0);
  CHECK(warm.config().warm_start.size() == 2);
  const int64_t warm_before = warm.run(0).samples();
  warm.step();
  CHECK(std::isnan(warm.imitation_accuracy(0)));
  CHECK(warm.run(0).samples() - warm_before >= cfg.samples_per_iteration + 2);
}

// An op-decision checkpoint over features 4, one iteration on the small RNNLM: what the cut
// head tests add a head to.
std::unique_ptr<rl::Trainer> op_checkpoint(const Graph& g, const Cluster& c) {
  rl::TrainConfig cfg = test::tiny_config();
  cfg.policy.features = 4;
  auto op = std::make_unique<rl::Trainer>(
      cfg, std::vector<rl::TrainGraph>{{"rnn", &g, &c, nullptr}}, CostModel(), 2);
  op->step();
  return op;
}

// Decisions "cut" (PolicyConfig::cut_head): the cut head trains beside the device columns; over
// a checkpoint that lacks it, the run adds the head and keeps every other parameter.
TEST_CASE("rl/decisions: a cut head added over a checkpoint, trained beside the op decisions",
          "[rl]") {
  const Graph g = test::small_rnnlm();
  const Cluster c = read_cluster("v100x4-nvlink");
  const std::unique_ptr<rl::Trainer> op = op_checkpoint(g, c);
  CHECK_FALSE(op->policy().config().cut_head);
  const auto j = nlohmann::json::parse(R"({"decisions": ["op", "cut"]})");
  CHECK(rl::TrainConfig::from_json(j, "c.json").policy.cut_head);  // implied by the decisions
  rl::TrainConfig joint = test::tiny_config();  // plain PPO: no warm start, no elites
  joint.decisions = {"op", "cut"};
  joint.keep_reference = false;  // every placement simulated is the policy's own
  rl::Trainer t(joint, {rl::TrainGraph{"rnn", &g, &c, nullptr}}, CostModel(), 3, &op->policy());
  CHECK(t.policy().config().cut_head);
  REQUIRE(t.num_graphs() == 2);
  CHECK(t.graph(1).name == "rnn@cut");
  // Every parameter of the checkpoint carried over, the head at its initial values.
  const nn::Tensor a = op->policy().params().values();
  const nn::Tensor b = t.policy().params().values();
  REQUIRE(b.numel() > a.numel());
  bool same = true;
  for (int64_t i = 0; i < a.numel(); ++i) same = same && a.data()[i] == b.data()[i];
  CHECK(same);
  const auto* bias = t.policy().params().find("cut.b");
  REQUIRE(bias);
  CHECK(b.data()[bias->offset] == 0.5f);
  const std::vector<rl::IterationStats> rows = t.step();
  REQUIRE(rows.size() == 2);
  CHECK(rows[1].graph == "rnn@cut");
  CHECK(std::isfinite(rows[1].entropy));
  CHECK(rows[1].entropy > 0);
  // The head learns: its parameters moved, and the cut copy's best keeps a stage on one device.
  const nn::Tensor after = t.policy().params().values();
  CHECK(after.data()[bias->offset] != 0.5f);
  const rl::PolicyInput in = t.policy().prepare(g, c, CostModel(), "cut");
  REQUIRE(t.run(1).has_best());
  const Placement& best = t.run(1).best();
  std::map<int32_t, int32_t> device_of_unit;  // a stage unit: a rank, its groups whole
  for (int32_t v = 0; v < g.num_ops(); ++v) {
    auto [it, fresh] = device_of_unit.emplace(in.units.unit_of[v], best.device[v]);
    if (!fresh) REQUIRE(it->second == best.device[v]);
  }
  CHECK(device_of_unit.size() < static_cast<size_t>(g.num_ops()) / 4);
  CHECK_THAT(test::error_of([] {
               rl::TrainConfig::from_json(nlohmann::json::parse(R"({"decisions": ["cuts"]})"),
                                          "c.json");
             }),
             Contains("decisions[0]") && Contains("\"cut\""));
}

// A cut head with an encoder of its own (cut_width), trained alone ("decisions": ["cut"]) over
// a checkpoint: the head learns and every other parameter stays bit for bit, so the op and
// stage readings of the checkpoint are unchanged.
TEST_CASE("rl/decisions: a cut head of its own trains alone, the rest of the network unchanged",
          "[rl]") {
  const Graph g = test::small_rnnlm();
  const Cluster c = read_cluster("v100x4-nvlink");
  const std::unique_ptr<rl::Trainer> op = op_checkpoint(g, c);
  rl::TrainConfig cut = test::tiny_config();
  cut.decisions = {"cut"};
  cut.policy.cut_width = 6;
  cut.policy.cut_branch = true;  // the head's options, kept over a checkpoint without a head
  cut.policy.cut_graph_skip = true;
  cut.keep_reference = false;
  rl::Trainer t(cut, {rl::TrainGraph{"rnn", &g, &c, nullptr}}, CostModel(), 3, &op->policy());
  REQUIRE(t.policy().config().cut_head);
  CHECK(t.policy().config().cut_width == 6);
  CHECK(t.policy().config().cut_branch);
  CHECK(t.policy().config().cut_graph_skip);
  REQUIRE(t.policy().params().find("cut.w_x_graph"));
  REQUIRE(t.num_graphs() == 1);
  const nn::Tensor before = t.policy().params().values().clone();
  for (int i = 0; i < 3; ++i) t.step();
  const nn::Tensor after = t.policy().params().values();
  bool trunk_same = true, head_moved = false;
  for (const auto& e : t.policy().params().entries()) {
    int64_t n = 1;
    for (int64_t d : e.shape) n *= d;
    const bool head = e.name.rfind("cut.", 0) == 0;
    for (int64_t i = e.offset; i < e.offset + n; ++i) {
      if (!head) trunk_same = trunk_same && before.data()[i] == after.data()[i];
      if (head) head_moved = head_moved || before.data()[i] != after.data()[i];
    }
  }
  CHECK(trunk_same);
  CHECK(head_moved);
  CHECK(t.policy().params().find("cut.sage0.w"));
  const auto* wg = t.policy().params().find("cut.w_x_graph");  // starts at 0, learns
  bool graph_skip_moved = false;
  for (int64_t i = wg->offset; i < wg->offset + wg->shape[0] * wg->shape[1]; ++i)
    graph_skip_moved = graph_skip_moved || after.data()[i] != 0;
  CHECK(graph_skip_moved);
  // The op reading of the trained policy equals the checkpoint's.
  nn::NoGradGuard no_grad;
  const rl::PolicyInput a = op->policy().prepare(g, c), b = t.policy().prepare(g, c);
  CHECK(op->policy().forward(a).value().to_vector() == t.policy().forward(b).value().to_vector());
}

// The mix head's weight-gradient shift (mix_wgrad): the weight gradients are units of their own
// and one more row moves them s devices on, mod D. s = 0 is the placement without the row, op
// for op; s > 0 moves exactly the weight-gradient ops; shifts of D and more are masked; and on
// a transformer one shift beats every placement the row-less head can express with its bias
// alone (the step the row exists for: weight gradients beside the input gradients).
TEST_CASE("rl/mix decisions: the weight gradients' shift row", "[rl]") {
  datasets::GenOptions o;
  o.layers = 2;
  o.seq_len = 32;
  o.hidden = 256;
  o.vocab = 512;
  o.batch = 8;
  o.heads = 4;
  const Graph g = datasets::generate("bert", o);
  rl::TrainConfig cfg = test::tiny_config();
  cfg.policy.max_devices = 8;
  cfg.policy.features = 4;
  cfg.decisions = {"mix"};
  rl::PolicyConfig pc = rl::TrainConfig::from_json(cfg.to_json(), "c").policy;
  const rl::Policy plain(pc, rl::OpVocabulary::from_graphs({&g}), 3);
  pc.mix_wgrad = true;
  CHECK(rl::PolicyConfig::from_json(nlohmann::json::parse(pc.to_json().dump()), "x").mix_wgrad);
  const rl::Policy shifted(pc, rl::OpVocabulary::from_graphs({&g}), 3);
  const int64_t M = static_cast<int64_t>(rl::mix_columns().size());
  const int64_t G = plain.params().find("mix.w")->shape[1] - 2 * M;
  CHECK(shifted.params().find("mix.w")->shape == nn::Shape{(1 + M) * 8, G + 2 * M});
  CHECK(shifted.params().find("mix.shift.w")->shape == nn::Shape{8, G + 2 * M});
  CHECK(plain.params().find("mix.shift.w") == nullptr);
  const Cluster c = read_cluster("v100x4-nvlink");
  const rl::PolicyInput a = plain.prepare(g, c, CostModel(), "mix");
  const rl::PolicyInput b = shifted.prepare(g, c, CostModel(), "mix");
  REQUIRE(b.mix_shift);
  REQUIRE(b.num_rows() == a.num_rows() + 1);
  CHECK(b.num_units() > a.num_units());
  const std::vector<uint8_t> w = place::weight_gradient_ops(g);
  REQUIRE(std::count(w.begin(), w.end(), 1) > 0);
  // The mask: shifts 0..3 open, 4..7 closed.
  const std::vector<float> mask = b.mask.to_vector();
  for (int32_t s = 0; s < 8; ++s) CHECK((mask[(b.num_rows() - 1) * 8 + s] == 0.0f) == (s < 4));
  CHECK(b.mix_x.to_vector() == a.mix_x.to_vector());  // the same inputs
  const std::vector<int32_t> blend{2, 2, 2, 2, 7};    // b = 2 / 8, the width's weight 1.5
  Simulator sim(g, c, CostModel());
  for (const std::vector<int32_t>& base : {std::vector<int32_t>{0, 2, 2, 2, 2}, blend}) {
    const Placement p0 = rl::placement_of(a, base, 0);
    std::vector<int32_t> with = base;
    with.push_back(0);
    CHECK(rl::placement_of(b, with, 0).device == p0.device);
    for (int32_t s = 1; s < 4; ++s) {
      with.back() = s;
      const Placement ps = rl::placement_of(b, with, 0);
      for (int32_t v = 0; v < g.num_ops(); ++v) {
        INFO(g.op(v).name << " shift " << s);
        CHECK(ps.device[v] == (w[v] ? (p0.device[v] + s) % 4 : p0.device[v]));
      }
    }
  }
  // One device (bias 0) against the forward and input gradients on device 0 and the weight
  // gradients on device 1: the shift runs them side by side.
  const double one = sim.run(rl::placement_of(b, {0, 2, 2, 2, 2, 0}, 0)).step_time_s;
  const double beside = sim.run(rl::placement_of(b, {0, 2, 2, 2, 2, 1}, 0)).step_time_s;
  INFO("one device " << one << " s, weight gradients on device 1 " << beside << " s");
  CHECK(beside < one);
  // A run over a mix head without the row adds it (--init) and, with the blend frozen, trains
  // the row alone: the blend's parameters stay bit for bit, the row's move.
  rl::TrainConfig run = cfg;
  run.samples_per_iteration = 8;
  run.keep_reference = false;
  run.policy.mix_wgrad = true;
  run.freeze = {"mix.w", "mix.b"};
  const rl::TrainConfig back = rl::TrainConfig::from_json(run.to_json(), "c");
  CHECK(back.freeze == run.freeze);
  rl::Trainer t(run, {rl::TrainGraph{"bert", &g, &c, nullptr}}, CostModel(), 3, &plain);
  REQUIRE(t.policy().config().mix_wgrad);
  auto vals = [](const rl::Policy& pol, const char* name) {
    const auto* e = pol.params().find(name);
    REQUIRE(e != nullptr);
    int64_t n = 1;
    for (int64_t d : e->shape) n *= d;
    const nn::Tensor v = pol.params().values().cpu().contiguous();
    return std::vector<float>(v.data() + e->offset, v.data() + e->offset + n);
  };
  const std::vector<float> shift0 = vals(t.policy(), "mix.shift.w");
  for (int i = 0; i < 3; ++i) t.step();
  CHECK(vals(t.policy(), "mix.w") == vals(plain, "mix.w"));
  CHECK(vals(t.policy(), "mix.b") == vals(plain, "mix.b"));
  CHECK(vals(t.policy(), "mix.shift.w") != shift0);
  rl::TrainConfig typo = run;
  typo.freeze = {"mix.x"};
  CHECK_THROWS_AS(
      rl::Trainer(typo, {rl::TrainGraph{"bert", &g, &c, nullptr}}, CostModel(), 3, &plain),
      InputError);
  CHECK_THROWS_AS(rl::TrainConfig::from_json(nlohmann::json::parse(R"({"freeze": [""]})"), "c"),
                  InputError);
}

// The mix head (decision "mix"): five decisions per placement, a blend of the stage
// coordinates cut over the devices. Its bins express the controls exactly (one device; the width
// control, stage-cut over by_width at D stages), and PPO over the five decisions alone, from
// a near-uniform start, finds a blend that beats the untrained one on a NAS graph whose branches
// pay to run side by side.
TEST_CASE(
    "rl/mix decisions: a blend of coordinates as five decisions, the controls exact, PPO "
    "learns one",
    "[rl]") {
  datasets::GenOptions o;  // smoke.json's amoebanet_small
  o.batch = 1;
  o.image_size = 64;
  o.layers = 1;
  o.hidden = 16;
  const Graph g = datasets::generate("amoebanet", o);
  rl::TrainConfig cfg = test::tiny_config();
  cfg.policy.max_devices = 8;
  cfg.policy.features = 4;
  cfg.decisions = {"mix"};
  cfg.samples_per_iteration = 16;
  cfg.keep_reference = false;
  REQUIRE(rl::TrainConfig::from_json(nlohmann::json::parse(R"({"decisions": ["mix"]})"), "c")
              .policy.mix_head);
  const rl::Policy policy(rl::TrainConfig::from_json(cfg.to_json(), "c").policy,
                          rl::OpVocabulary::from_graphs({&g}), 3);
  for (const char* cluster : {"v100x2-nvlink", "v100x6-nvlink"}) {
    INFO(cluster);
    const Cluster c = read_cluster(cluster);
    const int32_t D = c.num_devices();
    const rl::PolicyInput in = policy.prepare(g, c, CostModel(), "mix");
    REQUIRE(in.mix);
    CHECK(in.num_rows() == 1 + static_cast<int32_t>(rl::mix_columns().size()));
    CHECK(in.mix_bins == 8);
    CHECK_FALSE(in.anchored);  // the rows are bins, not devices
    nn::NoGradGuard no_grad;
    const nn::Tensor l = policy.forward(in).value();
    REQUIRE(l.shape() == nn::Shape{in.num_rows(), 8});
    for (int64_t i = 0; i < l.numel(); ++i) CHECK(std::abs(l[i]) < 0.5f);  // near uniform
    // b = 0, every weight 0: one device. b = 4 / 8, the width's weight 1 (bin 6): the width
    // control, op for op.
    const std::vector<int32_t> one{0, 2, 2, 2, 2}, width{4, 2, 2, 2, 6};
    const Placement p1 = rl::placement_of(in, one, 0);
    CHECK(std::set<int32_t>(p1.device.begin(), p1.device.end()) == std::set<int32_t>{0});
    const Placement pw = rl::placement_of(in, width, 0);
    std::vector<double> w(static_cast<size_t>(g.num_ops()));
    for (int32_t v = 0; v < g.num_ops(); ++v)
      w[v] = in.features.x[static_cast<int64_t>(v) * rl::kNodeFeatures + rl::feat::stage_width];
    CHECK(pw.device == place::stage_cut(g, w, D));
    CHECK(std::set<int32_t>(pw.device.begin(), pw.device.end()).size() == static_cast<size_t>(D));
    CHECK_THROWS_AS(rl::unit_actions(pw, in), std::invalid_argument);
  }
  // Without the graph statistics (mix_stats false) the head reads log2 D and the coordinates'
  // mean and spread only: 1 + 2M inputs; the bins read the same.
  {
    rl::PolicyConfig pc = rl::TrainConfig::from_json(cfg.to_json(), "c").policy;
    pc.mix_stats = false;
    CHECK(rl::PolicyConfig::from_json(nlohmann::json::parse(pc.to_json().dump()), "x").to_json() ==
          pc.to_json());
    const rl::Policy lean(pc, rl::OpVocabulary::from_graphs({&g}), 3);
    const int64_t M = static_cast<int64_t>(rl::mix_columns().size());
    CHECK(lean.params().find("mix.w")->shape == nn::Shape{(1 + M) * 8, 1 + 2 * M});
    const Cluster c4 = read_cluster("v100x4-nvlink");
    const rl::PolicyInput in = lean.prepare(g, c4, CostModel(), "mix");
    REQUIRE(in.mix_x.dim(1) == 1 + 2 * M);
    CHECK(in.mix_x.to_vector()[0] == Approx(2.0));  // log2 of 4 devices
    const rl::PolicyInput full = policy.prepare(g, c4, CostModel(), "mix");
    CHECK(rl::placement_of(in, {4, 2, 2, 2, 6}, 0).device ==
          rl::placement_of(full, {4, 2, 2, 2, 6}, 0).device);
  }
  // PPO alone: the levers that imitate devices are refused.
  const Cluster c = read_cluster("v100x2-nvlink");
  rl::TrainConfig elites = cfg;
  elites.elite.size = 4;
  CHECK_THROWS_AS(rl::Trainer(elites, {rl::TrainGraph{"nas", &g, &c, nullptr}}, CostModel(), 3),
                  InputError);
  rl::Trainer t(cfg, {rl::TrainGraph{"nas", &g, &c, nullptr}}, CostModel(), 3);
  CHECK(t.policy().config().mix_head);
  Simulator sim(g, c, CostModel());
  auto greedy_step = [&] {
    nn::NoGradGuard no_grad;
    const rl::PolicyInput in = t.policy().prepare(g, c, CostModel(), "mix");
    return sim.run(rl::placement_of(in, rl::greedy_actions(t.policy().forward(in).value()), 0))
        .step_time_s;
  };
  const double untrained = greedy_step();
  double first_entropy = 0, last_entropy = 0;
  for (int i = 0; i < 40; ++i) {
    const std::vector<rl::IterationStats> rows = t.step();
    REQUIRE(rows.size() == 1);
    (i == 0 ? first_entropy : last_entropy) = rows[0].entropy;
  }
  const double trained = greedy_step();
  // A warm start and behaviour cloning would imitate devices: refused on a fresh run, allowed
  // over a checkpoint, where fine-tuning turns them off (the warm start with
  // fine_tune_warm_start false).
  rl::TrainConfig cloning = cfg;
  cloning.warm_start = {"human"};
  cloning.imitation_steps = 20;
  cloning.fine_tune_warm_start = false;
  CHECK_THROWS_AS(rl::Trainer(cloning, {rl::TrainGraph{"nas", &g, &c, nullptr}}, CostModel(), 3),
                  InputError);
  CHECK_NOTHROW(
      rl::Trainer(cloning, {rl::TrainGraph{"nas", &g, &c, nullptr}}, CostModel(), 3, &t.policy()));
  INFO("untrained " << untrained << " trained " << trained << " best " << t.run(0).best_step_s());
  CHECK(last_entropy < first_entropy);
  CHECK(trained < untrained);
  CHECK(trained <= 1.05 * t.run(0).best_step_s());  // the greedy is near the best it sampled
}

TEST_CASE("rl/fine-tuning a stage policy into op decisions: same network, finer decisions",
          "[rl]") {
  const Graph g = test::small_rnnlm();
  const Cluster c = read_cluster("v100x2-nvlink");
  rl::TrainConfig cfg = test::tiny_config();
  cfg.policy.features = 2;
  cfg.policy.decision = "stage";
  rl::Trainer stage(cfg, {rl::TrainGraph{"rnn", &g, &c, nullptr}}, CostModel(), 2);
  stage.step();

  // The key is strict, and round-trips.
  const auto j = nlohmann::json::parse(R"({"fine_tune_decision": "op"})");
  const rl::TrainConfig op = rl::TrainConfig::from_json(j, "cfg.json");
  CHECK(op.fine_tune_decision == "op");
  CHECK(rl::TrainConfig::from_json(op.to_json(), "rt").fine_tune_decision == "op");
  CHECK_THROWS_WITH(rl::TrainConfig::from_json(
                        nlohmann::json::parse(R"({"fine_tune_decision": "layer"})"), "cfg.json"),
                    Contains("cfg.json") && Contains("fine_tune_decision") && Contains("\"op\""));

  // Without it the checkpoint's decision stays; with it the same parameters decide per
  // colocation unit: more decisions, and the network's own values unchanged.
  rl::TrainConfig keep = test::tiny_config();
  keep.fine_tune_decision = "";
  rl::Trainer kept(keep, {rl::TrainGraph{"rnn", &g, &c, nullptr}}, CostModel(), 3, &stage.policy());
  CHECK(kept.policy().config().decision == "stage");
  rl::TrainConfig finer = test::tiny_config();  // "op": the search regime's default
  CHECK(finer.fine_tune_decision == "op");
  CHECK(rl::TrainConfig::preset("transfer").fine_tune_decision.empty());
  rl::Trainer tuned(finer, {rl::TrainGraph{"rnn", &g, &c, nullptr}}, CostModel(), 3,
                    &stage.policy());
  CHECK(tuned.policy().config().decision == "op");
  CHECK(tuned.policy().config().features == 2);
  const nn::Tensor a = stage.policy().params().values();
  const nn::Tensor b = tuned.policy().params().values();
  REQUIRE(a.numel() == b.numel());
  bool same = true;
  for (int64_t i = 0; i < a.numel(); ++i) same = same && a.data()[i] == b.data()[i];
  CHECK(same);
  const rl::PolicyInput si = stage.policy().prepare(g, c);
  const rl::PolicyInput oi = tuned.policy().prepare(g, c);
  CHECK(oi.num_units() > si.num_units());
  tuned.step();  // trains over the op decisions
  CHECK(tuned.iteration() == 1);
}

TEST_CASE("rl/fine-tuning with elites starts from the checkpoint's zero-shot candidates", "[rl]") {
  const Graph g = test::small_rnnlm();
  const Cluster c = read_cluster("v100x2-nvlink");
  rl::TrainConfig cfg = test::tiny_config();
  rl::Trainer pre(cfg, {rl::TrainGraph{"rnn", &g, &c, nullptr}}, CostModel(), 2);
  pre.step();
  rl::TrainConfig search = test::tiny_config();
  search.elite.size = 2;
  search.keep_reference = false;
  // The zero-shot method's candidates, fine_tune_seeds of them, counted before the first step.
  search.fine_tune_seeds = 5;
  rl::Trainer seeded(search, {rl::TrainGraph{"rnn", &g, &c, nullptr}}, CostModel(), 3,
                     &pre.policy());
  CHECK(seeded.run(0).samples() == 5);
  REQUIRE(seeded.run(0).has_best());
  {
    // Exactly the zero-shot method's (rl/gdp/zero_shot.h, its defaults, 1 + 4 candidates) on
    // a run of the same seed: every reading of the network, not only the op decisions'.
    const CostModel cost;  // the problem keeps a reference
    const place::Problem pb(g, c, cost);
    place::Run zs(pb, "gdp", place::Budget(), 3);
    rl::ZeroShotOptions o;
    o.samples = 4;
    const rl::ZeroShotResult r = rl::zero_shot(zs, pre.policy(), o);
    CHECK(r.candidates.size() == 5);
    CHECK(zs.samples() == 5);
    CHECK(r.note.find("stage decisions") != std::string::npos);  // more than one reading
    CHECK(zs.best_step_s() == seeded.run(0).best_step_s());
  }
  {
    // Read as fine_tune_zero_shot says (the gdp method passes its own options): one reading,
    // another temperature, no device counts; the same as zero_shot with those options.
    rl::TrainConfig stage = search;
    stage.fine_tune_zero_shot.decode = "stage";
    stage.fine_tune_zero_shot.temperature = 0.5;
    stage.fine_tune_zero_shot.every_count = false;
    rl::Trainer read(stage, {rl::TrainGraph{"rnn", &g, &c, nullptr}}, CostModel(), 3,
                     &pre.policy());
    CHECK(read.run(0).samples() == 5);
    const CostModel cost;
    const place::Problem pb(g, c, cost);
    place::Run zs(pb, "gdp", place::Budget(), 3);
    rl::ZeroShotOptions o = stage.fine_tune_zero_shot;
    o.samples = 4;
    const rl::ZeroShotResult r = rl::zero_shot(zs, pre.policy(), o);
    CHECK(r.note.find("stage decisions") != std::string::npos);
    CHECK(r.note.find("op decisions") == std::string::npos);
    CHECK(zs.best_step_s() == read.run(0).best_step_s());
    // The section is strict and round-trips.
    const rl::TrainConfig rt = rl::TrainConfig::from_json(stage.to_json(), "rt");
    CHECK(rt.fine_tune_zero_shot.decode == "stage");
    CHECK(rt.fine_tune_zero_shot.temperature == 0.5);
    CHECK_FALSE(rt.fine_tune_zero_shot.every_count);
    CHECK(rt.fine_tune_zero_shot.allocate == "best");
    CHECK_THROWS_WITH(
        rl::TrainConfig::from_json(
            nlohmann::json::parse(R"({"fine_tune_zero_shot": {"decode": "layer"}})"), "cfg.json"),
        Contains("cfg.json: fine_tune_zero_shot") && Contains("decode") && Contains("\"mix\""));
    CHECK_THROWS_WITH(
        rl::TrainConfig::from_json(
            nlohmann::json::parse(R"({"fine_tune_zero_shot": {"samples": 3}})"), "cfg.json"),
        Contains("fine_tune_zero_shot") && Contains("samples"));
  }
  // The checkpoint's greedy placement is among them: the best is at least as fast.
  nn::NoGradGuard no_grad;
  const rl::PolicyInput in = pre.policy().prepare(g, c);
  const Placement greedy =
      rl::placement_of(in.units, rl::greedy_actions(pre.policy().forward(in).value()), 0);
  const Simulator sim(g, c, CostModel());
  const auto state = sim.make_state();
  CHECK(seeded.run(0).best_step_s() <= sim.step_time(greedy, *state) + 1e-12);
  // Off, or without elites (the transfer regime's fine-tuning): nothing is seeded.
  search.fine_tune_seeds = 0;
  rl::Trainer off(search, {rl::TrainGraph{"rnn", &g, &c, nullptr}}, CostModel(), 3, &pre.policy());
  CHECK(off.run(0).samples() == 0);
  rl::TrainConfig no_elites = test::tiny_config();
  no_elites.keep_reference = false;
  rl::Trainer plain(no_elites, {rl::TrainGraph{"rnn", &g, &c, nullptr}}, CostModel(), 3,
                    &pre.policy());
  CHECK(plain.run(0).samples() == 0);
}

namespace {

// A chain of eight ops whose 64 MiB tensors take four times an op's compute to cross a link:
// every split pays transfers and gains nothing, so the best placement is one device.
Graph heavy_chain() {
  Graph g;
  g.name = "heavy_chain";
  const int64_t bytes = int64_t{64} << 20;
  for (int i = 0; i < 8; ++i) {
    Op op = test::timed_op("op" + std::to_string(i), 1.0 / 64, bytes);
    op.id = i;
    g.add_op(op);
  }
  for (int i = 0; i + 1 < 8; ++i) g.add_edge(i, 0, i + 1, bytes);
  g.finalize();
  return g;
}

// The policy's probability of using one device (the devices-used row's first column).
double p_one_device(const rl::Policy& policy, const Graph& g, const Cluster& c) {
  nn::NoGradGuard no_grad;
  const rl::PolicyInput in = policy.prepare(g, c);
  const nn::Tensor l = policy.forward(in).value().cpu().contiguous();
  const int64_t A = l.dim(1), row = in.num_units();
  std::vector<double> p(static_cast<size_t>(A));
  rl::masked_softmax_row(l.data() + row * A, static_cast<int32_t>(A), p.data());
  return p[0];
}

}  // namespace

TEST_CASE("rl/devices used: PPO learns one device where transfers dominate, levers, expert, resume",
          "[rl]") {
  const Graph g = heavy_chain();
  const Cluster c = test::full_mesh(4);
  rl::TrainConfig cfg = test::tiny_config();
  cfg.policy.devices_used = true;
  rl::Trainer t(cfg, {rl::TrainGraph{"chain", &g, &c, nullptr}}, CostModel(), 3);
  const double before = p_one_device(t.policy(), g, c);
  CHECK(before == Approx(0.25).margin(0.02));  // near uniform over L = 1..4
  for (int i = 0; i < 30; ++i) t.step();
  const double after = p_one_device(t.policy(), g, c);
  INFO("P(L = 1) " << before << " -> " << after);
  CHECK(after > 0.5);
  CHECK(t.run(0).best_step_s() == Approx(8.0 / 64).epsilon(1e-6));  // one device: the ops' sum

  // The search regime's levers over the extra decision: the warm start's placements (L = D),
  // elites, local proposals that move units and keep the base's L.
  rl::TrainConfig search = cfg;
  search.imitation_steps = 3;
  search.warm_start = {"human", "m-etf"};
  search.elite.size = 2;
  search.explore.local_fraction = 0.5;
  rl::Trainer s(search, {rl::TrainGraph{"chain", &g, &c, nullptr}}, CostModel(), 3);
  for (int i = 0; i < 3; ++i) s.step();
  CHECK(std::isfinite(s.run(0).best_step_s()));

  // A run resumes into the uninterrupted one (the elites and greedy actions carry the row).
  const fs::path dir = test::fresh_dir("devices_used");
  fs::create_directories(dir);
  const fs::path graph = dir / "g.json";
  write_graph_file(test::small_rnnlm(), graph.string());
  // Expert iteration too: its searches start from an elite's decoded devices and return
  // encoded ones.
  search.expert.anneal_samples = 6;
  rl::RunSpec spec = test::one_graph_spec(graph, 97, search);
  rl::train(rl::learners(), spec, (dir / "full").string());
  spec.max_iterations = 3;
  rl::train(rl::learners(), spec, (dir / "part").string());
  rl::resume(rl::learners(), (dir / "part").string());
  CHECK(test::log_without_wall(dir / "part" / "log.csv") ==
        test::log_without_wall(dir / "full" / "log.csv"));
  CHECK(test::text_of(dir / "part" / "best.json") == test::text_of(dir / "full" / "best.json"));
  // Every elite is stored in its canonical encoding and decodes to the placement whose step
  // time it carries.
  const Graph rnn = test::small_rnnlm();
  const Cluster two = read_cluster("v100x2-nvlink");
  const rl::Policy shape(search.policy, rl::OpVocabulary::from_graphs({&rnn}), 1);
  const rl::PolicyInput in = shape.prepare(rnn, two);
  const Simulator sim(rnn, two, CostModel());
  const auto state = nlohmann::json::parse(test::text_of(dir / "full" / "state.json"));
  const nlohmann::json& elites = state["graphs"][0]["elites"];
  CHECK(elites.size() == 2);
  for (const auto& e : elites) {
    const std::vector<int32_t> a = e.at("actions").get<std::vector<int32_t>>();
    REQUIRE(static_cast<int32_t>(a.size()) == in.num_rows());
    const Placement p = rl::placement_of(in, a, 0);
    CHECK(rl::unit_actions(p, in) == a);
    const auto st = sim.make_state();
    CHECK(sim.step_time(p, *st) == Approx(e.at("step_s").get<double>()).epsilon(1e-9));
  }
}
