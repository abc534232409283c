// The GDP policy network: strict configuration, unit logits with masked devices, one decision
// per colocation group, finite-difference gradients of the whole network (with and without
// attention and superposition), seeded sampling.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <set>

#include "core/error.h"
#include "core/io.h"
#include "datasets/registry.h"
#include "nn/gradcheck.h"
#include "place/stages.h"
#include "place_helpers.h"
#include "rl/gdp/policy.h"
#include "rl/gdp/ppo.h"
#include "rl_fixtures.h"
#include "sim/lower_bound.h"
#include "sim/simulator.h"

using namespace gdp;
using Catch::Contains;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

rl::OpVocabulary vocab_of(const Graph& g) { return rl::OpVocabulary::from_graphs({&g}); }

// Sets every entry of the named parameter to value.
void fill_parameter(rl::Policy& policy, const char* name, float value) {
  const auto* e = policy.params().find(name);
  REQUIRE(e);
  int64_t n = 1;
  for (int64_t d : e->shape) n *= d;
  float* v = policy.params().values().data() + e->offset;
  std::fill(v, v + n, value);
}

struct ControlAgreement {
  int64_t same = 0;    // ops on the control's device, or one below it where D x c is whole
  int64_t ties = 0;    // ops of the second kind
  size_t devices = 0;  // devices the greedy placement uses
};

// The greedy placement of a cut head whose mu is the feature column `column` against the
// control, stage-cut of that column at D stages: where D x c is a whole number the two
// neighbouring devices tie in the head's logits and the greedy takes the lower, floor the upper.
ControlAgreement against_control(const rl::Policy& policy, const rl::PolicyInput& in,
                                 const Graph& g, int32_t column) {
  nn::NoGradGuard no_grad;
  const Placement p = rl::placement_of(in, rl::greedy_actions(policy.forward(in).value()), 0);
  std::vector<double> c(static_cast<size_t>(g.num_ops()));
  for (int32_t v = 0; v < g.num_ops(); ++v)
    c[v] = in.features.x[static_cast<int64_t>(v) * rl::kNodeFeatures + column];
  const std::vector<int32_t> control = place::stage_cut(g, c, in.num_devices);
  const double D = in.num_devices;
  ControlAgreement a;
  for (int32_t v = 0; v < g.num_ops(); ++v) {
    const bool tie = std::abs(D * c[v] - std::round(D * c[v])) < 1e-5;
    a.ties += tie && p.device[v] != control[v];
    a.same += p.device[v] == control[v] || (tie && p.device[v] == control[v] - 1);
  }
  a.devices = std::set<int32_t>(p.device.begin(), p.device.end()).size();
  return a;
}

}  // namespace

TEST_CASE("rl/gdp/policy config: defaults, round trip, strict keys", "[rl]") {
  const rl::PolicyConfig d;
  const auto j = d.to_json();
  CHECK(rl::PolicyConfig::from_json(nlohmann::json::parse(j.dump()), "x").to_json() == j);
  const auto c =
      rl::PolicyConfig::from_json(nlohmann::json::parse(R"({"width": 32, "heads": 2})"), "c");
  CHECK(c.width == 32);
  CHECK(c.heads == 2);
  CHECK(c.segment == d.segment);
  auto err = [](const char* text) {
    return error_of([&] { rl::PolicyConfig::from_json(nlohmann::json::parse(text), "cfg.json"); });
  };
  CHECK_THAT(err(R"({"widht": 32})"),
             Contains("cfg.json") && Contains("widht") && Contains("unknown key"));
  CHECK_THAT(err(R"({"width": "32"})"), Contains("width"));
  CHECK_THAT(err(R"({"width": 0})"), Contains("width"));
  CHECK_THAT(err(R"({"width": 30, "heads": 4})"), Contains("heads") && Contains("divisor"));
  CHECK_THAT(err(R"({"attention": 1})"), Contains("attention"));
  CHECK(d.head == "slots");  // checkpoints without the key keep their output layer
  CHECK_THAT(err(R"({"head": "columns"})"), Contains("head") && Contains("position"));
  CHECK_THAT(err(R"({"head_hidden": 0})"), Contains("head_hidden"));
  CHECK(!d.devices_used);  // checkpoints without the key have no devices-used row
  CHECK_THAT(err(R"({"devices_used": 1})"), Contains("devices_used"));
  CHECK(!d.cut_head);  // checkpoints without the key have no cut head
  CHECK_THAT(err(R"({"cut_head": "yes"})"), Contains("cut_head"));
  CHECK_THAT(err(R"({"decision": "layer"})"), Contains("decision") && Contains("cut"));
  const auto cut =
      rl::PolicyConfig::from_json(nlohmann::json::parse(R"({"decision": "cut"})"), "c");
  CHECK(cut.cut_head);  // implied by its decision
  CHECK(rl::PolicyConfig::from_json(nlohmann::json::parse(cut.to_json().dump()), "x").cut_head);
}

// The cut head (PolicyConfig::cut_head): one position per stage unit, read as a contiguous cut
// on any device count; with its skip weight on the fold coordinate alone it places exactly as
// the fold control, stage-cut over by_fold at D stages (docs/policy.md, "The cut head").
TEST_CASE("rl/gdp/policy cut head: a position per stage, the fold control expressible exactly",
          "[rl]") {
  datasets::GenOptions o;  // a 4-layer GNMT, as tests/place/test_stages.cpp
  o.layers = 4;
  o.seq_len = 6;
  o.hidden = 32;
  o.vocab = 64;
  o.batch = 4;
  const Graph g = datasets::generate("gnmt", o);
  rl::PolicyConfig cfg = test::tiny_config().policy;
  cfg.max_devices = 8;
  cfg.features = 4;
  const rl::Policy plain(cfg, vocab_of(g), 3);
  CHECK_THAT(error_of([&] { plain.prepare(g, read_cluster("v100x4-nvlink"), CostModel(), "cut"); }),
             Contains("cut head"));
  cfg.cut_head = true;
  rl::Policy policy(cfg, vocab_of(g), 3);
  // The parameters before the head are a plain policy's, in the same order and values.
  for (const auto& e : plain.params().entries()) {
    const auto* f = policy.params().find(e.name);
    REQUIRE(f);
    CHECK(f->offset == e.offset);
  }
  CHECK(plain.params().values().to_vector() ==
        nn::slice(nn::Var(policy.params().values()), 0, 0, plain.params().size())
            .value()
            .to_vector());
  for (const char* cluster : {"v100x4-nvlink", "v100x6-nvlink"}) {
    INFO(cluster);
    const Cluster c = read_cluster(cluster);
    const int32_t D = c.num_devices();
    const rl::PolicyInput in = policy.prepare(g, c, CostModel(), "cut");
    const rl::PolicyInput stages = policy.prepare(g, c, CostModel(), "stage");
    CHECK(in.cut);
    CHECK(in.anchored);  // unit 0 at position 0: a cut and its mirror image are one
    // Targets (elites, searches) in positions: devices renumbered in the order of first use.
    CHECK(rl::encode_devices({2, 2, 0, 3, 0, 1}, in) == std::vector<int32_t>{0, 0, 1, 2, 1, 3});
    CHECK(rl::encode_devices({2, 2, 0}, stages) == std::vector<int32_t>{2, 2, 0});  // labels
    CHECK(in.num_units() == stages.num_units());
    CHECK(in.units.unit_of == stages.units.unit_of);
    nn::NoGradGuard no_grad;
    const nn::Tensor l = policy.forward(in).value();
    REQUIRE(l.shape() == nn::Shape{in.num_units(), 8});
    // Each row is a parabola over the devices, -(D mu - (k + 0.5))^2 / 2 at width 1: second
    // differences of -1, and the masked slots beyond D; the anchored unit 0 on device 0 only.
    for (int32_t k = 1; k < 8; ++k) CHECK(l[k] < -1e8f);
    for (int32_t u = 1; u < in.num_units(); ++u) {
      for (int32_t k = 1; k + 1 < D; ++k)
        CHECK(l[u * 8 + k + 1] - 2 * l[u * 8 + k] + l[u * 8 + k - 1] == Approx(-1).margin(1e-3));
      for (int32_t k = D; k < 8; ++k) CHECK(l[u * 8 + k] < -1e8f);
    }
    // Untrained, mu is near 0.5 for every unit: the middle devices, never all on one.
    const std::vector<int32_t> greedy = rl::greedy_actions(l);
    for (size_t u = 1; u < greedy.size(); ++u) CHECK(std::abs(greedy[u] + 0.5 - D / 2.0) <= 1.0);
  }
  // mu = the op's fold coordinate: w_x on the raw stage_fold column, nothing else (no anchor:
  // the control has none).
  cfg.anchor = false;
  rl::Policy fold_policy(cfg, vocab_of(g), 3);
  for (const char* name : {"cut.w", "cut.b", "cut.w_x"}) fill_parameter(fold_policy, name, 0);
  {
    const std::vector<int32_t> cols = rl::cut_columns(4);
    const auto at = std::find(cols.begin(), cols.end(), static_cast<int32_t>(rl::feat::stage_fold));
    REQUIRE(at != cols.end());
    fold_policy.params().values().data()[fold_policy.params().find("cut.w_x")->offset +
                                         (at - cols.begin())] = 0.2f;  // gain 5
  }
  for (const char* cluster : {"v100x4-nvlink", "v100x6-nvlink", "v100x8-nvlink"}) {
    INFO(cluster);
    const rl::PolicyInput in = fold_policy.prepare(g, read_cluster(cluster), CostModel(), "cut");
    const ControlAgreement a = against_control(fold_policy, in, g, rl::feat::stage_fold);
    CHECK(a.same == g.num_ops());
    CHECK(a.ties < g.num_ops() / 20);
    CHECK(a.devices > 2);  // a real cut
  }
}

// cut_branch and cut_graph_skip: the skip reads the width coordinate (place/stages.h,
// by_width), and its weights are w_x + 0.05 W_g . graph statistics; with the width's weight
// set through W_g alone the head places exactly as the width control.
TEST_CASE("rl/gdp/policy cut head: the width control through a skip weight set by the graph",
          "[rl]") {
  const Graph g = test::small_inception();
  rl::PolicyConfig cfg = test::tiny_config().policy;
  cfg.max_devices = 8;
  cfg.features = 4;
  cfg.cut_head = true;
  cfg.anchor = false;
  const rl::Policy plain(cfg, vocab_of(g), 3);
  cfg.cut_branch = true;
  cfg.cut_graph_skip = true;
  CHECK(rl::PolicyConfig::from_json(nlohmann::json::parse(cfg.to_json().dump()), "x").to_json() ==
        cfg.to_json());
  CHECK(!rl::PolicyConfig().cut_branch);  // checkpoints without the keys read as before
  CHECK(!rl::PolicyConfig().cut_graph_skip);
  CHECK_THROWS_AS(rl::PolicyConfig::from_json(nlohmann::json::parse(R"({"cut_branch": 1})"), "c"),
                  InputError);
  rl::Policy policy(cfg, vocab_of(g), 3);
  const std::vector<int32_t> cols = rl::cut_columns(4, true);
  REQUIRE(cols.size() == rl::cut_columns(4).size() + 1);
  REQUIRE(cols.back() == rl::feat::stage_width);
  const auto* wx = policy.params().find("cut.w_x");
  const auto* wg = policy.params().find("cut.w_x_graph");
  REQUIRE(wx);
  REQUIRE(wg);
  CHECK(wx->shape == nn::Shape{1, static_cast<int64_t>(cols.size())});
  CHECK(wg->shape == nn::Shape{static_cast<int64_t>(cols.size()), plain.graph_width()});
  CHECK(policy.params().size() == plain.params().size() + 1 + wg->shape[0] * wg->shape[1]);
  for (const char* cluster : {"v100x2-nvlink", "v100x4-nvlink", "v100x6-nvlink"}) {
    INFO(cluster);
    const Cluster c = read_cluster(cluster);
    const rl::PolicyInput in = policy.prepare(g, c, CostModel(), "cut");
    REQUIRE(in.cut_x.dim(1) == static_cast<int64_t>(cols.size()));
    // W_g starts at 0: the skip is w_x alone, as without cut_graph_skip.
    for (int64_t k = 0; k < wg->shape[0] * wg->shape[1]; ++k)
      REQUIRE(policy.params().values().data()[wg->offset + k] == 0.0f);
    // The width's weight 0.2 (gain 5: mu = width) through one graph statistic, nothing else.
    const std::vector<float> stats = in.stats.to_vector();
    int64_t j = 0;
    for (int64_t k = 1; k < static_cast<int64_t>(stats.size()); ++k)
      if (std::abs(stats[k]) > std::abs(stats[j])) j = k;
    REQUIRE(std::abs(stats[j]) > 0.1f);
    rl::Policy width_policy(cfg, vocab_of(g), 3);
    for (const char* name : {"cut.w", "cut.b", "cut.w_x"}) fill_parameter(width_policy, name, 0);
    width_policy.params()
        .values()
        .data()[wg->offset + (static_cast<int64_t>(cols.size()) - 1) * wg->shape[1] + j] =
        0.2f / (0.05f * stats[j]);
    const ControlAgreement a = against_control(width_policy, in, g, rl::feat::stage_width);
    CHECK(a.same == g.num_ops());
    CHECK(a.devices >= 2);
  }
}

TEST_CASE("rl/gdp/policy position head: one network for any device count", "[rl]") {
  const Graph g = test::small_rnnlm();
  rl::PolicyConfig cfg = test::tiny_config().policy;
  cfg.max_devices = 8;
  cfg.head = "position";
  const rl::Policy policy(cfg, vocab_of(g), 7);
  // No parameter is per device slot: the same parameters for every D.
  for (const auto& e : policy.params().entries()) CHECK(e.name.rfind("out.", 0) != 0);
  for (const char* cluster : {"v100x3-nvlink", "v100x6-nvlink", "a100x5-pcie", "v100x8-nvlink"}) {
    const Cluster c = read_cluster(cluster);
    const int32_t D = c.num_devices();
    INFO(cluster);
    const rl::PolicyInput in = policy.prepare(g, c);
    const nn::Tensor l = policy.forward(in).value();
    REQUIRE(l.shape() == nn::Shape{in.num_units(), 8});
    // The cluster's devices are open (beyond the anchored unit 0), the other slots masked, and
    // the untrained head is close to uniform over the open ones.
    for (int32_t a = 0; a < 8; ++a) {
      const float v = l[1 * 8 + a];
      if (a < D) {
        CHECK(std::abs(v) < 0.5f);
      } else {
        CHECK(v < -1e8f);
      }
    }
    // Device features: positions (k + 0.5) / D in order, 1 / D, the anchored slot flagged.
    const std::vector<float> f = rl::device_features(c, 8, true);
    for (int32_t k = 0; k < 8; ++k) {
      const float* r = f.data() + static_cast<size_t>(k) * rl::kDeviceFeatures;
      if (k < D) {
        CHECK(r[rl::devfeat::position] == Approx((k + 0.5) / D));
        CHECK(r[0] == Approx(std::cos(M_PI * (k + 0.5) / D)));  // the first harmonic
        CHECK(r[rl::devfeat::inv_count] == Approx(1.0 / D));
        CHECK(r[rl::devfeat::memory] == Approx(1.0));  // identical devices: each the largest
        CHECK(r[rl::devfeat::flops] == Approx(1.0));
        CHECK(r[rl::devfeat::anchor] == (k == 0 ? 1.0f : 0.0f));
        CHECK(r[rl::devfeat::one] == 1.0f);
      } else {
        for (int32_t p = 0; p < rl::kDeviceFeatures; ++p) CHECK(r[p] == 0.0f);
      }
    }
  }
  // Devices that differ: memory relative to the largest; no anchor.
  Cluster mixed = read_cluster("v100x3-nvlink");
  mixed.devices[1].memory_bytes /= 2;
  mixed.finalize();
  const std::vector<float> f = rl::device_features(mixed, 8, false);
  CHECK(f[1 * rl::kDeviceFeatures + rl::devfeat::memory] == Approx(0.5));
  CHECK(f[0 * rl::kDeviceFeatures + rl::devfeat::anchor] == 0.0f);
}

TEST_CASE("rl/gdp/policy devices used: one more decision, unit positions coarsened onto L devices",
          "[rl]") {
  const Graph g = test::small_rnnlm();
  rl::PolicyConfig cfg = test::tiny_config().policy;
  cfg.max_devices = 8;
  cfg.devices_used = true;
  const rl::Policy policy(cfg, vocab_of(g), 5);
  const Cluster c = read_cluster("v100x6-nvlink");
  const rl::PolicyInput in = policy.prepare(g, c);
  const int32_t U = in.num_units(), R = in.num_rows(), D = 6;
  REQUIRE(R == U + 1);
  nn::NoGradGuard no_grad;
  const nn::Tensor l = policy.forward(in).value();
  REQUIRE(l.shape() == nn::Shape{R, 8});
  // The devices-used row: L = 1..6 open and near uniform at the start, 7 and 8 masked.
  for (int32_t a = 0; a < 8; ++a) {
    INFO("column " << a);
    if (a < D) {
      CHECK(std::abs(l[U * 8 + a]) < 0.5f);
    } else {
      CHECK(l[U * 8 + a] < -1e8f);
    }
  }
  // Positions 0..5 coarsened: L = 1 puts everything on device 0, L = 6 changes nothing, L = 2
  // and 3 keep contiguous positions together.
  std::vector<int32_t> acts(static_cast<size_t>(R));
  for (int32_t u = 0; u < U; ++u) acts[static_cast<size_t>(u)] = u % D;
  const std::vector<std::pair<int32_t, std::vector<int32_t>>> expect = {{1, {0, 0, 0, 0, 0, 0}},
                                                                        {2, {0, 0, 0, 1, 1, 1}},
                                                                        {3, {0, 0, 1, 1, 2, 2}},
                                                                        {6, {0, 1, 2, 3, 4, 5}}};
  for (const auto& [L, dev] : expect) {
    INFO("L = " << L);
    acts.back() = L - 1;
    const Placement p = rl::placement_of(in, acts, 0);
    for (int32_t u = 0; u < U; ++u)
      CHECK(p.device[static_cast<size_t>(in.units.first_op[static_cast<size_t>(u)])] ==
            dev[static_cast<size_t>(u % D)]);
    CHECK(test::groups_together(g, p));
  }
  // A placement's own actions use every device (L = D) and decode back to it (up to the anchor's
  // relabeling, which keeps the units that share a device together).
  Placement rr;
  rr.device.assign(static_cast<size_t>(g.num_ops()), 0);
  for (int32_t v = 0; v < g.num_ops(); ++v)
    rr.device[static_cast<size_t>(v)] = in.units.unit_of[static_cast<size_t>(v)] % D;
  const std::vector<int32_t> a = rl::unit_actions(rr, in);
  REQUIRE(static_cast<int32_t>(a.size()) == R);
  CHECK(a.back() == D - 1);
  const Placement back = rl::placement_of(in, a, 0);
  std::map<int32_t, int32_t> label;  // rr's device -> back's: one relabeling for every op
  for (int32_t v = 0; v < g.num_ops(); ++v) {
    const auto [it, fresh] =
        label.emplace(rr.device[static_cast<size_t>(v)], back.device[static_cast<size_t>(v)]);
    CHECK(it->second == back.device[static_cast<size_t>(v)]);
  }
  std::set<int32_t> images;
  for (const auto& [from, to] : label) images.insert(to);
  CHECK(images.size() == label.size());
  // Samples: every L is drawn from the untrained row, and each sample's ops use at most L devices.
  Rng rng(3);
  const int32_t K = 64;
  const std::vector<int32_t> s = rl::sample_actions(l, K, rng);
  std::set<int32_t> seen;
  for (int32_t k = 0; k < K; ++k) {
    const int32_t L = s[static_cast<size_t>(k * R + U)] + 1;
    seen.insert(L);
    const Placement p = rl::placement_of(in, s, k);
    CHECK(*std::max_element(p.device.begin(), p.device.end()) < L);
  }
  CHECK(seen.size() == static_cast<size_t>(D));
  // The canonical encoding: the fewest devices that hold the placement. One GPU is L = 1; two
  // devices {0, 1} are L = 2 with positions 0 and ceil(6 / 2) = 3; each decodes back exactly.
  for (int32_t used : {1, 2, 4}) {
    INFO("devices " << used);
    Placement p;
    p.device.assign(static_cast<size_t>(g.num_ops()), 0);
    for (int32_t v = 0; v < g.num_ops(); ++v)
      p.device[static_cast<size_t>(v)] = (in.units.unit_of[static_cast<size_t>(v)] * 7) % used;
    const std::vector<int32_t> e = rl::unit_actions(p, in);
    CHECK(e.back() == used - 1);
    const Placement q = rl::placement_of(in, e, 0);
    std::map<int32_t, int32_t> relabel;  // up to the anchor's transposition
    for (int32_t v = 0; v < g.num_ops(); ++v) {
      const auto [it, fresh] =
          relabel.emplace(p.device[static_cast<size_t>(v)], q.device[static_cast<size_t>(v)]);
      CHECK(it->second == q.device[static_cast<size_t>(v)]);
    }
    CHECK(rl::unit_actions(q, in) == e);
    if (used == 2)
      for (int32_t u = 0; u < U; ++u)
        CHECK((e[static_cast<size_t>(u)] == 0 || e[static_cast<size_t>(u)] == 3));
  }
  // Each unit's marginal over devices, for guides and local proposals: a distribution over the
  // 6 devices, equal to the sum over L and positions; the anchored unit 0 on device 0 only.
  const nn::Tensor rows = rl::unit_rows(l, in);
  REQUIRE(rows.shape() == nn::Shape{U, 8});
  auto softmax = [&](int32_t r) {
    std::vector<double> p(8);
    rl::masked_softmax_row(l.data() + r * 8, 8, p.data());
    return p;
  };
  const std::vector<double> pl = softmax(U);
  for (int32_t u : {0, 1, U - 1}) {
    INFO("unit " << u);
    const std::vector<double> pa = softmax(u);
    std::vector<double> q(8, 0.0);
    for (int32_t L = 1; L <= D; ++L)
      for (int32_t a = 0; a < D; ++a) q[static_cast<size_t>(a * L / D)] += pl[L - 1] * pa[a];
    double sum = 0;
    for (int32_t d = 0; d < 8; ++d) {
      const float z = rows[u * 8 + d];
      if (q[d] > 0) {
        CHECK(std::exp(z) == Approx(q[d]).epsilon(1e-5));
        sum += std::exp(z);
      } else {
        CHECK(z < -1e8f);
      }
    }
    CHECK(sum == Approx(1.0).epsilon(1e-5));
    if (u == 0) CHECK(q[0] == Approx(1.0));
  }
}

// Device counts that cannot hold the graph are masked: with the devices' capacity set to 0.3 of
// the memory bound (sim/lower_bound.h), L = 1..3 are out of memory whatever the units do (the
// simulator agrees) and never sampled; L = 4..6 stay open.
TEST_CASE("rl/gdp/policy devices used: device counts below the memory bound are masked", "[rl]") {
  const Graph g = test::small_rnnlm();
  rl::PolicyConfig cfg = test::tiny_config().policy;
  cfg.max_devices = 8;
  cfg.devices_used = true;
  const rl::Policy policy(cfg, vocab_of(g), 5);
  Cluster c = read_cluster("v100x6-nvlink");
  const int64_t need = memory_lower_bound_bytes(g);
  for (DeviceSpec& d : c.devices) d.memory_bytes = need * 3 / 10;
  const rl::PolicyInput in = policy.prepare(g, c);
  const int32_t U = in.num_units(), R = in.num_rows();
  nn::NoGradGuard no_grad;
  const nn::Tensor l = policy.forward(in).value();
  for (int32_t L = 1; L <= 8; ++L) {
    INFO("L = " << L);
    CHECK((l[U * 8 + L - 1] < -1e8f) == (L <= 3 || L > 6));
  }
  Rng rng(4);
  const int32_t K = 64;
  const std::vector<int32_t> s = rl::sample_actions(l, K, rng);
  std::set<int32_t> seen;
  for (int32_t k = 0; k < K; ++k) seen.insert(s[static_cast<size_t>(k * R + U)] + 1);
  CHECK(seen == std::set<int32_t>{4, 5, 6});
  // The masked counts are out of memory: every op on device 0, or on devices 0..2.
  Simulator sim(g, c, CostModel());
  CHECK(sim.run(test::on_device(g, 0)).status == SimStatus::out_of_memory);
  std::vector<int32_t> acts = s;
  acts.resize(static_cast<size_t>(R));
  acts.back() = 2;  // L = 3: the first sample's positions on three devices
  CHECK(sim.run(rl::placement_of(in, acts, 0)).status == SimStatus::out_of_memory);
  // Without the bound's pressure nothing is masked below D.
  const rl::PolicyInput open = policy.prepare(g, read_cluster("v100x6-nvlink"));
  const nn::Tensor lo = policy.forward(open).value();
  for (int32_t L = 1; L <= 6; ++L) CHECK(lo[U * 8 + L - 1] > -1e8f);
}

TEST_CASE("rl/gdp/policy logits: one row per unit, devices beyond the cluster masked", "[rl]") {
  const Graph g = test::small_rnnlm();
  const Cluster c = read_cluster("v100x2-nvlink");
  const rl::Policy policy(test::tiny_config().policy, vocab_of(g), 7);
  const rl::PolicyInput in = policy.prepare(g, c);
  REQUIRE(in.num_units() < g.num_ops());  // the rnnlm has colocation groups
  const nn::Var logits = policy.forward(in);
  REQUIRE(logits.shape() == nn::Shape{in.num_units(), 4});
  const nn::Tensor v = logits.value();
  // Two identical V100s: the first unit is anchored to device 0 (docs/policy.md, "Symmetry").
  CHECK(in.anchored);
  CHECK(v.at({0, 1}) < -1e8);
  for (int64_t u = 0; u < in.num_units(); ++u) {
    CHECK(std::isfinite(v.at({u, 0})));
    if (u > 0) CHECK(std::abs(v.at({u, 1})) < 100);
    CHECK(v.at({u, 2}) < -1e8);
    CHECK(v.at({u, 3}) < -1e8);
  }
  // Sampling never picks a masked device; same seed, same samples.
  Rng r1(3), r2(3);
  const auto a1 = rl::sample_actions(v, 5, r1), a2 = rl::sample_actions(v, 5, r2);
  CHECK(a1 == a2);
  for (int32_t x : a1) CHECK((x == 0 || x == 1));
  const std::set<int32_t> used(a1.begin(), a1.end());
  CHECK(used.size() == 2);  // near-uniform at initialization
  // Temperature: softmax(logits / T). Cold, every sample is the greedy action; hot, the
  // columns even out; a masked column stays masked at any T.
  nn::Tensor t(nn::Shape{2, 4});
  for (int64_t u = 0; u < 2; ++u)
    for (int64_t a = 0; a < 4; ++a) t[u * 4 + a] = a == 3 ? -1e9f : static_cast<float>(a);
  const std::vector<int32_t> greedy = rl::greedy_actions(t);
  Rng rt(5);
  const auto cold = rl::sample_actions(t, 50, rt, 0.05);
  for (size_t k = 0; k < cold.size(); ++k) CHECK(cold[k] == greedy[k % 2]);
  auto top_share = [&](double temp) {
    Rng r(5);
    const auto a = rl::sample_actions(t, 2000, r, temp);
    int n = 0;
    for (int32_t x : a) {
      CHECK(x != 3);
      n += x == 2;
    }
    return n / 4000.0;
  };
  CHECK(top_share(1) == Approx(std::exp(2.0) / (1 + std::exp(1.0) + std::exp(2.0))).margin(0.03));
  CHECK(top_share(100) == Approx(1.0 / 3).margin(0.03));
  CHECK_THROWS(rl::sample_actions(t, 1, rt, 0));
  // Expanded placements keep colocation groups together: the simulator accepts them.
  const Placement p = rl::placement_of(in.units, a1, 4);
  Simulator sim(g, c, CostModel());
  CHECK(sim.run(p).status != SimStatus::split_colocation);
  // Deterministic: same seed, same network, same logits.
  const rl::Policy again(test::tiny_config().policy, vocab_of(g), 7);
  CHECK(again.forward(again.prepare(g, c)).value().to_vector() == v.to_vector());
  // No anchor on devices that differ, or when the option is off.
  Cluster mixed = c;
  mixed.devices[1].memory_bytes /= 2;
  mixed.finalize();
  CHECK_FALSE(policy.prepare(g, mixed).anchored);
  CHECK_FALSE(mixed.devices_interchangeable());
  CHECK(read_cluster("v100x4-pcie").devices_interchangeable());
  CHECK(read_cluster("v100x8-nvlink").devices_interchangeable());
  // More devices than max_devices: a clear error.
  CHECK_THAT(error_of([&] { policy.prepare(g, read_cluster("v100x8-nvlink")); }),
             Contains("8 devices") && Contains("max_devices = 4"));
}

TEST_CASE(
    "rl/gdp/policy gradients by finite differences (attention and superposition on and off, LSTM, "
    "position head, devices used, cut head, its branch skip set by the graph)",
    "[rl]") {
  const Graph g = test::two_chains();
  const Cluster c = test::full_mesh(3);
  for (int variant = 0; variant < 10; ++variant) {
    rl::PolicyConfig cfg = test::tiny_config().policy;
    cfg.cut_head = variant >= 6;
    cfg.cut_trunk = variant == 7;
    cfg.cut_width = variant >= 8 ? 3 : 0;
    cfg.cut_branch = cfg.cut_graph_skip = variant == 9;
    if (variant == 4) {
      cfg.head = "position";
      cfg.head_hidden = 3;
    }
    cfg.devices_used = variant == 5;
    cfg.width = 4;
    cfg.ffn = 4;
    // One segment: Transformer-XL stops the gradient through its memory on purpose, which
    // finite differences would see (nn/transformer_xl.h; the segments are tested in nn/).
    cfg.segment = 8;
    cfg.memory = 2;
    cfg.anchor = false;  // an anchored unit's masked logits (-1e9) defeat finite differences
    cfg.attention = variant != 1;
    cfg.superposition = variant != 2;
    cfg.lstm = variant == 3;
    INFO("attention " << cfg.attention << " superposition " << cfg.superposition << " lstm "
                      << cfg.lstm << " head " << cfg.head << " devices_used " << cfg.devices_used
                      << " cut " << cfg.cut_head << " trunk " << cfg.cut_trunk << " own width "
                      << cfg.cut_width << " branch, graph skip " << cfg.cut_graph_skip);
    rl::PolicyD policy(cfg, vocab_of(g), 11);
    const rl::PolicyInputD in = policy.prepare(g, c, CostModel(), cfg.cut_head ? "cut" : "");
    // A cut head that does not train the trunk: its own parameters are checked, and the
    // trunk's gradient from it is exactly zero.
    const bool head_only = cfg.cut_head && !cfg.cut_trunk;
    std::vector<nn::VarD> params;
    for (const auto& e : policy.params().entries())
      if (!head_only || e.name.rfind("cut.", 0) == 0) params.push_back(e.var);
    if (head_only) {
      policy.params().zero_grad();
      nn::backward(nn::sum(nn::slice(policy.forward(in), 1, 0, 3)));
      double trunk = 0, head = 0;
      for (const auto& e : policy.params().entries())
        for (double gv : e.var.grad().to_vector())
          (e.name.rfind("cut.", 0) == 0 ? head : trunk) += std::abs(gv);
      CHECK(trunk == 0);
      CHECK(head > 0);
      policy.params().zero_grad();
    }
    nn::GradcheckOptions opt;
    opt.tolerance = 1e-4;
    // The masked columns are constants; check the device columns the cluster has.
    const auto res = nn::gradcheck(
        [&](const std::vector<nn::VarD>&) { return nn::slice(policy.forward(in), 1, 0, 3); },
        params, opt);
    INFO(res.worst << " (checked " << res.checked << ", kinks skipped " << res.skipped_kinks
                   << ")");
    CHECK(res.passed);
    CHECK(res.checked > (head_only ? 7 : 100));  // the head alone: w, w_x, b, the width
  }
}
