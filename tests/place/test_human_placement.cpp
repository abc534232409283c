// Human-expert placements: valid (fits memory) for every registered generator on its suite
// cluster, and the rules (layer blocks, embeddings/softmax beside their layer, gradients and
// updates with their forward op) on GNMT and the RNNLM.
#include <catch2/catch.hpp>
#include <set>

#include "core/io.h"
#include "datasets/registry.h"
#include "datasets/suite.h"
#include "place_helpers.h"
#include "sim/simulator.h"
#include "test_paths.h"

using namespace gdp;
using namespace gdp::datasets;

namespace {

std::string suite_path(const std::string& name) {
  return gdp::test::source_dir() + "/datasets/suites/" + name + ".json";
}

SimResult simulate(const Graph& g, const Cluster& c, const Placement& p) {
  Simulator sim(g, c, CostModel());
  return sim.run(p);
}

}  // namespace

TEST_CASE("place/every generator: deterministic, strict round trip, valid human placement (smoke)",
          "[place]") {
  SuiteSpec spec = read_suite_spec(suite_path("smoke"));
  std::set<std::string> covered;
  for (const auto& e : spec.entries) covered.insert(e.model);
  for (const auto& m : model_names()) {
    INFO("model " << m << " has no entry in smoke.json");
    CHECK(covered.count(m) == 1);
  }
  std::vector<SuiteEntry> entries = load_suite(suite_path("smoke"));
  REQUIRE(entries.size() == spec.entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    const SuiteEntry& e = entries[i];
    INFO(e.name);
    std::string text = graph_to_json(e.graph);
    // Determinism: the same call gives byte-identical JSON.
    CHECK(graph_to_json(generate(spec.entries[i].model, spec.entries[i].options)) == text);
    Graph back = parse_graph_json(text, e.name);
    CHECK(graph_to_json(back) == text);
    Placement p = test::human(back, e.cluster);
    REQUIRE(p.device.size() == static_cast<size_t>(back.num_ops()));
    SimResult r = simulate(back, e.cluster, p);
    CHECK(r.valid);
    CHECK(r.step_time_s > 0);
  }
}

TEST_CASE("place/human placement of every paper and holdout workload fits its cluster", "[place]") {
  for (const char* suite : {"paper", "holdout"}) {
    for (const SuiteEntry& e : load_suite(suite_path(suite))) {
      INFO(suite << ": " << e.name);
      place::HumanPlacementInfo info;
      Placement p = test::human(e.graph, e.cluster, &info);
      SimResult r = simulate(e.graph, e.cluster, p);
      CHECK(r.valid);
      INFO(r.reason);
      CHECK(r.step_time_s > 0);
      if (info.strategy == "layers") CHECK(info.devices_used == e.cluster.num_devices());
    }
  }
}

TEST_CASE("place/human placement of GNMT: layer k of encoder and decoder on GPU k", "[place]") {
  GenOptions o;
  o.layers = 4;
  o.seq_len = 6;
  o.hidden = 64;
  o.vocab = 100;
  o.batch = 4;
  Graph g = generate("gnmt", o);
  Cluster c = read_cluster("v100x4-nvlink");
  place::HumanPlacementInfo info;
  Placement p = test::human(g, c, &info);
  CHECK(info.strategy == "layers");
  CHECK(info.units == 4);
  auto dev = [&](const std::string& name) {
    int32_t i = g.find_op(name);
    REQUIRE(i >= 0);
    return p.device[i];
  };
  CHECK(dev("encoder/layer_0/fw/t0/MatMul") == 0);
  CHECK(dev("encoder/layer_0/bw/t3/MatMul") == 0);
  CHECK(dev("encoder/layer_2/t1/MatMul") == 2);
  CHECK(dev("decoder/layer_3/t5/MatMul") == 3);
  CHECK(dev("decoder/layer_0/t2/attention/context") == 0);
  CHECK(dev("encoder/embedding/embedding_encoder") == 0);  // beside layer 0
  CHECK(dev("encoder/embedding/embedding_encoder/Adam/ApplyAdam") == 0);
  CHECK(dev("softmax/output_projection") == 3);  // beside the last layer
  CHECK(dev("softmax/MatMul") == 3);
  CHECK(dev("gradients/decoder/layer_3/t5/MatMul_grad/MatMul") == 3);  // with its forward op
  // Colocation groups are never split.
  std::map<std::string, int32_t> group;
  for (int32_t i = 0; i < g.num_ops(); ++i) {
    const std::string& grp = g.op(i).colocation;
    if (grp.empty()) continue;
    auto [it, fresh] = group.emplace(grp, p.device[i]);
    if (!fresh) CHECK(it->second == p.device[i]);
  }
  // Each GPU holds work, and the simulation is valid.
  std::vector<int32_t> per(4, 0);
  for (int32_t d : p.device) per[d]++;
  for (int32_t n : per) CHECK(n > 0);
  CHECK(simulate(g, c, p).valid);
}

TEST_CASE("place/human placement: more layers than GPUs go in contiguous blocks", "[place]") {
  GenOptions o;
  o.layers = 4;
  o.seq_len = 3;
  o.hidden = 32;
  o.vocab = 50;
  o.batch = 2;
  Graph g = generate("rnnlm", o);
  Cluster c = read_cluster("v100x2-nvlink");
  Placement p = test::human(g, c);
  for (int32_t l = 0; l < 4; ++l) {
    int32_t i = g.find_op("layer_" + std::to_string(l) + "/t1/MatMul");
    REQUIRE(i >= 0);
    CHECK(p.device[i] == l / 2);
  }
  CHECK(p.device[g.find_op("embedding/GatherV2")] == 0);
  CHECK(p.device[g.find_op("softmax/MatMul")] == 1);
}

TEST_CASE("place/human placement of a small CNN: one GPU", "[place]") {
  GenOptions o;
  o.batch = 2;
  o.image_size = 64;
  Graph g = generate("resnet50", o);
  place::HumanPlacementInfo info;
  Placement p = test::human(g, read_cluster("v100x4-nvlink"), &info);
  CHECK(info.strategy == "single");
  for (int32_t d : p.device) CHECK(d == 0);
}
