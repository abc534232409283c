// Policy inputs: every feature column of a hand-built graph against its formula, the op-type
// vocabulary (order, unknown slot, JSON round trip, strict reader), determinism, the adjacency
// against the graph's edges, the topological order, measured-time flags on a PipeDream
// profile, and finite bounded features on every smoke-suite graph.
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/io.h"
#include "datasets/random_families.h"
#include "datasets/suite.h"
#include "place/stages.h"
#include "place_helpers.h"
#include "rl/gdp/features.h"
#include "sim/cost_model.h"
#include "test_paths.h"

using namespace gdp;
using namespace gdp::rl;

namespace {

double lg(double x, double unit) { return std::log10(1 + x / unit); }

TensorSpec tensor(std::vector<int64_t> shape, int64_t bytes) {
  TensorSpec t;
  t.shape = std::move(shape);
  t.bytes = bytes;
  return t;
}

// a (MatMul, forward, group g, 2 outputs, V100 and "*" times) -> b (Relu, group g)
// a -> c twice (both outputs of a: one deduplicated adjacency edge), b -> c,
// c (MatMul, backward, "*" time) -> d (ApplyAdam, update, no outputs) twice.
Graph tiny_graph() {
  Graph g;
  g.name = "tiny";
  Op a;
  a.id = 0;
  a.name = "a";
  a.type = "MatMul";
  a.phase = Phase::forward;
  a.outputs = {tensor({8, 16, 3, 5, 7}, 53760), tensor({4}, 16)};
  a.flops = 2e6;
  a.bytes_accessed = 1e5;
  a.measured = {{"*", 5e-3}, {"V100", 1e-3}};
  a.param_bytes = 4000;
  a.optimizer_bytes = 8000;
  a.temp_bytes = 500;
  a.colocation = "g";
  g.add_op(a);
  Op b;
  b.id = 1;
  b.name = "b";
  b.type = "Relu";
  b.outputs = {tensor({8, 16}, 512)};
  b.flops = 128;
  b.bytes_accessed = 1024;
  b.param_bytes = 1000;
  b.colocation = "g";
  g.add_op(b);
  Op c;
  c.id = 2;
  c.name = "c";
  c.type = "MatMul";
  c.phase = Phase::backward;
  c.outputs = {tensor({10, 10}, 400), tensor({}, 4)};
  c.flops = 4e3;
  c.measured = {{"K80", 1.0}, {"*", 2e-4}};
  g.add_op(c);
  Op d;
  d.id = 3;
  d.name = "d";
  d.type = "ApplyAdam";
  d.phase = Phase::update;
  g.add_op(d);
  g.add_edge(0, 0, 1, 53760);
  g.add_edge(0, 0, 2, 53760);
  g.add_edge(0, 1, 2, 16);
  g.add_edge(1, 0, 2, 512);
  g.add_edge(2, 0, 3, 400);
  g.add_edge(2, 1, 3, 4);
  g.finalize();
  return g;
}

float at(const nn::Tensor& x, int64_t r, int64_t c) { return x.at({r, c}); }

// The (src, dst) pairs of the adjacency's in-rows, checking both directions agree.
std::set<std::pair<int32_t, int32_t>> adjacency_pairs(const nn::Adjacency& adj, size_t* entries) {
  std::set<std::pair<int32_t, int32_t>> in_pairs, out_pairs;
  for (int32_t v = 0; v < adj.num_nodes(); ++v) {
    for (int32_t e = adj.in.row_ptr[v]; e < adj.in.row_ptr[v + 1]; ++e)
      in_pairs.insert({adj.in.col_idx[e], v});
    for (int32_t e = adj.out.row_ptr[v]; e < adj.out.row_ptr[v + 1]; ++e)
      out_pairs.insert({v, adj.out.col_idx[e]});
  }
  CHECK(in_pairs == out_pairs);
  *entries = adj.in.col_idx.size();
  return in_pairs;
}

std::set<std::pair<int32_t, int32_t>> graph_pairs(const Graph& g) {
  std::set<std::pair<int32_t, int32_t>> s;
  for (const Edge& e : g.edges()) s.insert({e.src, e.dst});
  return s;
}

}  // namespace

TEST_CASE("rl/features every column of a hand-built op matches its formula", "[rl]") {
  const Graph g = tiny_graph();
  const Cluster c = make_cluster_preset("v100x2-nvlink");
  REQUIRE(c.devices[0].kind == "V100");
  const OpVocabulary vocab = OpVocabulary::from_graphs({&g});
  const NodeFeatures f = featurize(g, c, vocab);
  REQUIRE(f.num_nodes == 4);
  REQUIRE(f.x.shape() == nn::Shape{4, kNodeFeatures});
  REQUIRE(f.graph_stats.shape() == nn::Shape{1, kGraphFeatures});
  const double cap = static_cast<double>(c.devices[0].memory_bytes);
  const CostModel cost;
  const nn::Tensor& x = f.x;

  // Op a, every column.
  std::vector<double> want(kNodeFeatures, 0.0);
  want[feat::phase_forward] = 1;
  want[feat::class_matmul] = 1;
  want[feat::num_outputs] = std::log10(3.0);
  want[feat::out_rank] = 5.0 / 4;
  want[feat::out_dim0] = std::log10(9.0);
  want[feat::out_dim1] = std::log10(17.0);
  want[feat::out_dim2] = std::log10(4.0);
  want[feat::out_dim3] = std::log10(6.0);
  want[feat::flops] = lg(2e6, 1e6);
  want[feat::bytes_accessed] = lg(1e5, 1e3);
  want[feat::measured_time] = lg(1e-3, 1e-6);  // the V100 time, not the "*" one
  want[feat::measured_exact] = 1;
  want[feat::cost_time] = lg(1e-3, 1e-6);
  want[feat::param_bytes] = lg(4000, 1e3);
  want[feat::optimizer_bytes] = lg(8000, 1e3);
  want[feat::output_bytes] = lg(53776, 1e3);
  want[feat::temp_bytes] = lg(500, 1e3);
  want[feat::resident_frac] = 12000 / cap;
  want[feat::output_frac] = 53776 / cap;
  want[feat::in_degree] = 0;
  want[feat::out_degree] = std::log10(3.0);  // b and c, the two edges to c counted once
  want[feat::in_edge_bytes] = 0;
  want[feat::out_edge_bytes] = lg(53760 + 53760 + 16, 1e3);
  want[feat::topo_pos] = 0;
  want[feat::level] = 0;
  want[feat::has_group] = 1;
  want[feat::group_size] = std::log10(2.0);
  want[feat::unit_resident_frac] = 13000 / cap;  // a's 12000 + b's 1000
  // The stage coordinates are place/stages.h's (tested there), on the cost model's times.
  std::vector<double> times;
  for (const Op& op : g.ops()) times.push_back(cost.op_time_s(op, c.devices[0]));
  const place::StageCoordinates sc = place::stage_coordinates(g, times);
  want[feat::stage_time] = sc.by_time[0];
  want[feat::stage_memory] = sc.by_memory[0];
  want[feat::stage_rank] = sc.by_rank[0];
  want[feat::stage_fold] = sc.by_fold[0];
  want[feat::stage_share] = sc.share[0];
  want[feat::stage_width] = sc.by_width[0];
  // The links: one route each way between the two V100s.
  const RouteCost route = c.route_cost(0, 1);
  REQUIRE(route.bottleneck_Bps > 0);
  auto comm = [&](double bytes) {
    return bytes > 0 ? route.latency_s + bytes / route.bottleneck_Bps : 0.0;
  };
  const double a_out = 53760 + 53760 + 16;
  want[feat::out_comm_time] = lg(comm(a_out), 1e-6);
  want[feat::comm_ratio] = lg(comm(a_out) / 1e-3, 1);
  // a -> b -> c -> d is the one longest path: a starts it, nothing can slip.
  want[feat::crit_top] = 0;
  want[feat::crit_bottom] = 1;
  want[feat::crit_slack] = 0;
  CHECK(f.stage_rank == sc.rank);
  CHECK(f.num_stage_ranks == sc.num_ranks);
  for (int32_t k = 0; k < kNodeFeatures; ++k) {
    INFO("column " << k);
    CHECK(at(x, 0, k) == Approx(want[k]).margin(1e-7));
  }

  // Op b: no measurement, in the middle of the order.
  CHECK(at(x, 1, feat::measured_time) == 0);
  CHECK(at(x, 1, feat::measured_exact) == 0);
  CHECK(at(x, 1, feat::measured_any) == 0);
  CHECK(at(x, 1, feat::class_elementwise) == 1);
  CHECK(at(x, 1, feat::cost_time) == Approx(lg(cost.op_time_s(g.op(1), c.devices[0]), 1e-6)));
  CHECK(at(x, 1, feat::out_rank) == Approx(0.5));
  CHECK(at(x, 1, feat::out_dim2) == 0);
  CHECK(at(x, 1, feat::topo_pos) == Approx(1.0 / 3));
  CHECK(at(x, 1, feat::level) == Approx(1.0 / 3));
  CHECK(at(x, 1, feat::unit_resident_frac) == Approx(13000 / cap));
  CHECK(at(x, 1, feat::resident_frac) == Approx(1000 / cap));

  // Op c: only a "*" time applies (K80 is not the cluster's kind).
  CHECK(at(x, 2, feat::phase_backward) == 1);
  CHECK(at(x, 2, feat::measured_time) == Approx(lg(2e-4, 1e-6)));
  CHECK(at(x, 2, feat::measured_exact) == 0);
  CHECK(at(x, 2, feat::measured_any) == 1);
  CHECK(at(x, 2, feat::cost_time) == Approx(lg(2e-4, 1e-6)));
  CHECK(at(x, 2, feat::in_degree) == Approx(std::log10(3.0)));  // a and b
  CHECK(at(x, 2, feat::in_edge_bytes) == Approx(lg(53760 + 16 + 512, 1e3)));
  CHECK(at(x, 2, feat::out_rank) == Approx(0.5));
  CHECK(at(x, 2, feat::has_group) == 0);
  CHECK(at(x, 2, feat::group_size) == 0);
  CHECK(at(x, 2, feat::level) == Approx(2.0 / 3));

  // Op d: no outputs, update, last.
  CHECK(at(x, 3, feat::phase_update) == 1);
  CHECK(at(x, 3, feat::num_outputs) == 0);
  CHECK(at(x, 3, feat::out_rank) == 0);
  CHECK(at(x, 3, feat::out_dim0) == 0);
  CHECK(at(x, 3, feat::topo_pos) == 1);
  CHECK(at(x, 3, feat::level) == 1);
  CHECK(at(x, 3, feat::in_degree) == Approx(std::log10(2.0)));
  CHECK(at(x, 3, feat::class_matmul + static_cast<int32_t>(classify_op("ApplyAdam"))) == 1);

  // Vocabulary indices: MatMul (2 ops) first, then ApplyAdam and Relu by name.
  CHECK(f.op_type == std::vector<int64_t>{1, 3, 1, 2});

  // Graph statistics.
  const nn::Tensor& s = f.graph_stats;
  const double total_mem = 2 * cap;
  double t_sum = 0;
  for (const Op& op : g.ops()) t_sum += cost.op_time_s(op, c.devices[0]);
  std::vector<double> gw(kGraphFeatures, 0.0);
  gw[feat::g_ops] = std::log10(5.0);
  gw[feat::g_edges] = std::log10(7.0);
  gw[feat::g_mean_degree] = std::log10(2.0);  // 4 distinct pairs / 4 ops
  gw[feat::g_depth] = std::log10(5.0);
  gw[feat::g_depth_frac] = 1;
  gw[feat::g_flops] = lg(2e6 + 128 + 4e3, 1e6);
  gw[feat::g_cost_time] = lg(t_sum, 1e-6);
  gw[feat::g_param_bytes] = lg(5000, 1e3);
  gw[feat::g_resident_frac] = 13000 / total_mem;
  gw[feat::g_memory_frac] = (13000 + 53776 + 512 + 404) / total_mem;
  gw[feat::g_devices] = 0.25;
  gw[feat::g_log_devices] = std::log10(3.0);
  gw[feat::g_frac_forward] = 0.5;
  gw[feat::g_frac_backward] = 0.25;
  gw[feat::g_frac_update] = 0.25;
  gw[feat::g_frac_grouped] = 0.5;
  gw[feat::g_units_frac] = 0.75;
  gw[feat::g_frac_measured] = 0.5;
  gw[feat::g_device_memory] = lg(cap, 1e9);
  gw[feat::g_stage_ranks] = lg(sc.num_ranks, 1);
  gw[feat::g_link_bandwidth] = lg(route.bottleneck_Bps, 1e9);
  std::vector<double> out_bytes(4, 0.0);
  for (const Edge& e : g.edges()) out_bytes[e.src] += static_cast<double>(e.bytes);
  double comm_sum = 0;
  for (double b : out_bytes) comm_sum += comm(b);
  gw[feat::g_comm_ratio] = lg(comm_sum / t_sum, 1);
  for (int32_t k = 0; k < kGraphFeatures; ++k) {
    INFO("graph column " << k);
    CHECK(s.at({0, k}) == Approx(gw[k]).margin(1e-7));
  }

  // Adjacency: the distinct data edges, each once; the topological order of the graph.
  size_t entries = 0;
  CHECK(adjacency_pairs(*f.adj, &entries) == graph_pairs(g));
  CHECK(entries == 4);
  CHECK(f.adj->num_nodes() == 4);
  CHECK(f.topo == std::vector<int64_t>{0, 1, 2, 3});
}

TEST_CASE("rl/features critical path: top, bottom and slack on a diamond", "[rl]") {
  // s (1 ms) -> l (3 ms) -> t (1 ms) and s -> h (1 ms) -> t: the longest path is s l t, 5 ms.
  Graph g;
  g.name = "diamond";
  const std::pair<const char*, double> ops[] = {{"s", 1e-3}, {"l", 3e-3}, {"h", 1e-3}, {"t", 1e-3}};
  for (int32_t v = 0; v < 4; ++v) {
    Op op;
    op.id = v;
    op.name = ops[v].first;
    op.type = "Relu";
    op.outputs = {tensor({4}, 16)};
    op.measured = {{"*", ops[v].second}};
    g.add_op(op);
  }
  g.add_edge(0, 0, 1, 16);
  g.add_edge(0, 0, 2, 16);
  g.add_edge(1, 0, 3, 16);
  g.add_edge(2, 0, 3, 16);
  g.finalize();
  const NodeFeatures f =
      featurize(g, make_cluster_preset("v100x2-nvlink"), OpVocabulary::from_graphs({&g}));
  const double want[4][3] = {{0, 1, 0}, {0.2, 0.8, 0}, {0.2, 0.4, 0.4}, {0.8, 0.2, 0}};
  for (int32_t v = 0; v < 4; ++v) {
    INFO("op " << ops[v].first);
    CHECK(at(f.x, v, feat::crit_top) == Approx(want[v][0]));
    CHECK(at(f.x, v, feat::crit_bottom) == Approx(want[v][1]));
    CHECK(at(f.x, v, feat::crit_slack) == Approx(want[v][2]).margin(1e-6));
  }
}

TEST_CASE("rl/features vocabulary: frequency order, unknown slot, cap", "[rl]") {
  const OpVocabulary empty;
  CHECK(empty.size() == 1);
  CHECK(empty.index("MatMul") == 0);
  CHECK(empty.type(0).empty());

  const Graph g = test::small_rnnlm();
  const Graph t = tiny_graph();
  const OpVocabulary v = OpVocabulary::from_graphs({&g, &t});
  // Counts over both graphs, most frequent first, ties by name.
  std::map<std::string, int64_t> count;
  for (const Graph* gr : {&g, &t})
    for (const Op& op : gr->ops()) ++count[op.type];
  REQUIRE(v.size() == static_cast<int32_t>(count.size()) + 1);
  for (int32_t k = 1; k + 1 < v.size(); ++k) {
    const int64_t a = count.at(v.type(k)), b = count.at(v.type(k + 1));
    CHECK((a > b || (a == b && v.type(k) < v.type(k + 1))));
  }
  for (const auto& [type, n] : count) CHECK(v.type(v.index(type)) == type);
  CHECK(v.index("NoSuchOpType") == 0);
  CHECK(v.index("") == 0);
  CHECK_THROWS_AS(v.type(v.size()), std::out_of_range);

  // max_size keeps the most frequent types; 1 keeps only the unknown slot.
  const OpVocabulary small = OpVocabulary::from_graphs({&g, &t}, 3);
  REQUIRE(small.size() == 3);
  CHECK(small.type(1) == v.type(1));
  CHECK(small.type(2) == v.type(2));
  CHECK(small.index(v.type(3)) == 0);
  CHECK(OpVocabulary::from_graphs({&g}, 1).size() == 1);
  CHECK_THROWS_AS(OpVocabulary::from_graphs({&g}, 0), std::invalid_argument);
  CHECK_THROWS_AS(OpVocabulary::from_graphs({nullptr}), std::invalid_argument);

  // A type the vocabulary has not seen is featurized as unknown.
  const Cluster c = make_cluster_preset("v100x2-nvlink");
  Graph unseen = t;
  unseen.mutable_ops()[3].type = "NoSuchOpType";
  unseen.finalize();
  const NodeFeatures f = featurize(unseen, c, v);
  CHECK(f.op_type[3] == 0);
  for (int32_t i = 0; i < 3; ++i) CHECK(f.op_type[i] == v.index(t.op(i).type));
  CHECK(f.op_type[0] > 0);
  const NodeFeatures u = featurize(t, c, OpVocabulary());
  for (int64_t k : u.op_type) CHECK(k == 0);
}

TEST_CASE("rl/features vocabulary JSON: round trip and strict reader", "[rl]") {
  const Graph g = test::small_rnnlm();
  const OpVocabulary v = OpVocabulary::from_graphs({&g});
  const std::string text = v.to_json().dump();
  CHECK(text.rfind("{\"unknown\":0,\"types\":[", 0) == 0);
  const OpVocabulary back = OpVocabulary::from_json(nlohmann::json::parse(text), "vocab.json");
  CHECK(back.types() == v.types());
  CHECK(back.to_json() == v.to_json());
  CHECK(OpVocabulary::from_json_text(text, "vocab.json").types() == v.types());
  CHECK(OpVocabulary::from_json_text(OpVocabulary().to_json().dump(), "e").size() == 1);

  auto fails = [](const std::string& t, const std::string& what) {
    INFO(t);
    CHECK_THROWS_WITH(OpVocabulary::from_json_text(t, "vocab.json"),
                      Catch::Contains("vocab.json") && Catch::Contains(what));
  };
  fails(R"({"unknown": 0, "types": ["A"], "extra": 1})", "extra: unknown key");
  fails(R"({"types": ["A"]})", "unknown: missing required key");
  fails(R"({"unknown": 0})", "types: missing required key");
  fails(R"({"unknown": 1, "types": []})", "unknown: expected 0");
  fails(R"({"unknown": "0", "types": []})", "unknown: expected 0");
  fails(R"({"unknown": 0, "types": "A"})", "types: expected an array");
  fails(R"({"unknown": 0, "types": ["A", 3]})", "types[1]: expected an op type");
  fails(R"({"unknown": 0, "types": ["A", ""]})", "types[1]: expected an op type");
  fails(R"({"unknown": 0, "types": ["A", "B", "A"]})", "types[2]: duplicate type \"A\"");
  fails(R"({"unknown": 0, "types": ["A"], "unknown": 0})", "appears twice");
  fails(R"(["A"])", "expected an object");
  CHECK_THROWS_AS(OpVocabulary::from_json(nlohmann::json::array(), "v"), InputError);
}

TEST_CASE("rl/features are deterministic", "[rl]") {
  const Graph g = test::small_rnnlm();
  const Cluster c = make_cluster_preset("v100x4-nvlink");
  const OpVocabulary v = OpVocabulary::from_graphs({&g});
  const NodeFeatures a = featurize(g, c, v), b = featurize(g, c, v);
  CHECK(a.x.to_vector() == b.x.to_vector());
  CHECK(a.graph_stats.to_vector() == b.graph_stats.to_vector());
  CHECK(a.op_type == b.op_type);
  CHECK(a.topo == b.topo);
  CHECK(a.adj->in.row_ptr == b.adj->in.row_ptr);
  CHECK(a.adj->in.col_idx == b.adj->in.col_idx);
  // The vocabulary too: built twice, and from graphs in another order.
  const Graph t = tiny_graph();
  CHECK(OpVocabulary::from_graphs({&g, &t}).types() == OpVocabulary::from_graphs({&t, &g}).types());
}

TEST_CASE("rl/features measured-time flags on a PipeDream profile (\"*\" times)", "[rl]") {
  const std::string text =
      "node1 -- Input0 -- forward_compute_time=0.000, backward_compute_time=0.000, "
      "activation_size=400.0, parameter_size=0.000\n"
      "node2 -- Linear(in_features=10, out_features=10) -- forward_compute_time=1.5, "
      "backward_compute_time=3.0, activation_size=[400.0; 40.0], parameter_size=440.000 -- "
      "stage_id=0\n"
      "node3 -- ReLU() -- forward_compute_time=0.25, backward_compute_time=0.5, "
      "activation_size=440.0, parameter_size=0.000\n"
      "\tnode1 -- node2\n"
      "\tnode2 -- node3\n";
  const Graph g = parse_pipedream(text, "mini/graph.txt");
  const Cluster c = make_cluster_preset("p100x2-pcie");
  const NodeFeatures f = featurize(g, c, OpVocabulary::from_graphs({&g}));
  const int32_t f2 = g.find_op("node2/forward"), b2 = g.find_op("node2/backward");
  REQUIRE(f2 >= 0);
  REQUIRE(b2 >= 0);
  for (int32_t i = 0; i < g.num_ops(); ++i) {
    CHECK(f.x.at({i, feat::measured_any}) == 1);
    CHECK(f.x.at({i, feat::measured_exact}) == 0);
  }
  CHECK(f.x.at({f2, feat::measured_time}) == Approx(lg(1.5e-3, 1e-6)));
  CHECK(f.x.at({b2, feat::measured_time}) == Approx(lg(3e-3, 1e-6)));
  CHECK(f.x.at({f2, feat::cost_time}) == Approx(lg(1.5e-3, 1e-6)));
  CHECK(f.x.at({f2, feat::has_group}) == 1);
  CHECK(f.x.at({f2, feat::group_size}) == Approx(std::log10(2.0)));
  CHECK(f.graph_stats.at({0, feat::g_frac_measured}) == 1);
  // An exact-kind measurement wins over "*" and flips the flags.
  Graph h = g;
  h.mutable_ops()[f2].measured.push_back({"P100", 7e-3});
  h.finalize();
  const NodeFeatures fh = featurize(h, c, OpVocabulary());
  CHECK(fh.x.at({f2, feat::measured_exact}) == 1);
  CHECK(fh.x.at({f2, feat::measured_any}) == 0);
  CHECK(fh.x.at({f2, feat::measured_time}) == Approx(lg(7e-3, 1e-6)));
}

TEST_CASE("rl/features are finite and bounded on every smoke-suite graph", "[rl]") {
  const auto suite = datasets::load_suite(test::source_dir() + "/datasets/suites/smoke.json");
  REQUIRE(suite.size() >= 10);
  std::vector<const Graph*> graphs;
  for (const auto& e : suite) graphs.push_back(&e.graph);
  const OpVocabulary v = OpVocabulary::from_graphs(graphs);
  for (const auto& e : suite) {
    INFO(e.name);
    const Graph& g = e.graph;
    const NodeFeatures f = featurize(g, e.cluster, v);
    REQUIRE(f.num_nodes == g.num_ops());
    REQUIRE(f.x.shape() == nn::Shape{g.num_ops(), kNodeFeatures});
    float worst = 0;
    bool finite = true;
    for (float z : f.x.to_vector()) {
      finite = finite && std::isfinite(z);
      worst = std::max(worst, std::abs(z));
    }
    for (float z : f.graph_stats.to_vector()) {
      finite = finite && std::isfinite(z);
      worst = std::max(worst, std::abs(z));
    }
    CHECK(finite);
    CHECK(worst < 50);
    // One-hots sum to one per op.
    for (int32_t i = 0; i < g.num_ops(); ++i) {
      float phase = 0, cls = 0;
      for (int32_t k = feat::phase_forward; k <= feat::phase_update; ++k) phase += f.x.at({i, k});
      for (int32_t k = feat::class_matmul; k <= feat::class_other; ++k) cls += f.x.at({i, k});
      if (phase != 1 || cls != 1) FAIL("op " << i << ": one-hot sums " << phase << ", " << cls);
      // The critical-path columns are fractions of the longest path, and every op's path
      // through it is no longer than it.
      const float top = f.x.at({i, feat::crit_top}), bottom = f.x.at({i, feat::crit_bottom});
      if (!(top >= 0 && bottom >= 0 && top + bottom <= 1 + 1e-5f &&
            std::abs(1 - top - bottom - f.x.at({i, feat::crit_slack})) < 1e-5f))
        FAIL("op " << i << ": critical path " << top << " + " << bottom);
    }
    for (int64_t k : f.op_type) CHECK((k > 0 && k < v.size()));
    const auto& topo = g.topo_order();
    CHECK(f.topo == std::vector<int64_t>(topo.begin(), topo.end()));
    size_t entries = 0;
    const auto pairs = adjacency_pairs(*f.adj, &entries);
    CHECK(pairs == graph_pairs(g));
    CHECK(entries == pairs.size());  // no duplicate within a row
  }
}

TEST_CASE("rl/features reject bad input", "[rl]") {
  const Cluster c = make_cluster_preset("v100x2-nvlink");
  Graph g = tiny_graph();
  Graph unfinalized = g;
  unfinalized.mutable_ops();
  CHECK_THROWS_WITH(featurize(unfinalized, c, OpVocabulary()), Catch::Contains("not finalized"));
  Cluster none;
  none.name = "empty";
  CHECK_THROWS_WITH(featurize(g, none, OpVocabulary()), Catch::Contains("no devices"));
  Graph bad = g;
  bad.mutable_ops()[2].flops = -1;
  bad.finalize();
  CHECK_THROWS_WITH(featurize(bad, c, OpVocabulary()),
                    Catch::Contains("op 'c'") && Catch::Contains("flops"));
  Graph nan_time = g;
  nan_time.mutable_ops()[1].measured = {{"*", NAN}};
  nan_time.finalize();
  CHECK_THROWS_WITH(featurize(nan_time, c, OpVocabulary()),
                    Catch::Contains("op 'b'") && Catch::Contains("measured time"));
}

// Hidden (not run by ctest or a plain test_rl): the figure in docs/policy.md. Prints the time,
// asserts nothing about it. Run: build/tests/test_rl "[perf]"
TEST_CASE("rl/features on a 1M-op random graph (timing, printed)", "[.][perf]") {
  datasets::RandomGraphOptions o;
  o.ops = 1000000;
  o.seed = 1;
  const Graph g = datasets::make_random_graph(o);
  const Cluster c = make_cluster_preset("v100x8-nvlink");
  const OpVocabulary v = OpVocabulary::from_graphs({&g});
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    const NodeFeatures f = featurize(g, c, v);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cout << "featurize: " << g.num_ops() << " ops, " << g.num_edges() << " edges, "
              << f.adj->in.num_entries() << " distinct edges: " << s << " s\n";
    CHECK(f.num_nodes == g.num_ops());
  }
}
