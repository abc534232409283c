// Training-graph structure of the CNN and WaveNet generators: op counts of the defaults,
// backward ~2x forward, one colocated update per variable, strict round trip, determinism.
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

#include "core/graph.h"
#include "core/io.h"
#include "datasets/amoebanet.h"
#include "datasets/cnn_layers.h"
#include "datasets/registry.h"
#include "place_helpers.h"
#include "sim/simulator.h"

using namespace gdp;
using namespace gdp::datasets;

namespace {

void print_summary(const std::string& model, const Graph& g) {
  GraphSummary s = g.summary();
  std::printf(
      "%s: ops %lld (fwd %lld, bwd %lld, upd %lld), edges %lld, flops %.3e "
      "(fwd %.3e, bwd %.3e), params %.2fM (%.1f MB + %.1f MB Adam), activations %.2f GB, "
      "depth %lld\n",
      model.c_str(), (long long)s.ops, (long long)s.ops_forward, (long long)s.ops_backward,
      (long long)s.ops_update, (long long)s.edges, s.flops, s.flops_forward, s.flops_backward,
      s.parameters / 1e6, s.parameter_bytes / 1e6, s.optimizer_bytes / 1e6,
      s.activation_bytes / 1e9, (long long)s.depth);
}

// Every ApplyAdam shares its colocation group with exactly one VariableV2.
void check_updates_colocated(const Graph& g) {
  int64_t vars = 0, updates = 0, matched = 0;
  for (const Op& op : g.ops()) {
    if (op.type == "VariableV2") ++vars;
    if (op.type != "ApplyAdam") continue;
    ++updates;
    int32_t v = g.find_op(op.colocation);
    if (v >= 0 && g.op(v).type == "VariableV2" && g.op(v).param_bytes > 0) ++matched;
  }
  CHECK(vars > 0);
  CHECK(updates == vars);
  CHECK(matched == updates);
}

}  // namespace

TEST_CASE("datasets/cnn defaults: op counts, backward about twice forward", "[datasets]") {
  // Op counts of the defaults as stated in docs/workloads.md (exact: generators are fixed).
  struct Case {
    const char* model;
    GenOptions opt;
    int32_t ops;  // docs/workloads.md, "CNN and random families"
  };
  GenOptions four_stacks;
  four_stacks.stacks = 4;
  GenOptions batch64;
  batch64.batch = 64;
  const Case cases[] = {{"inception_v3", {}, 1819}, {"inception_v3", batch64, 1819},
                        {"resnet50", {}, 999},      {"amoebanet", {}, 5736},
                        {"wavenet", {}, 1131},      {"wavenet", four_stacks, 2231}};
  for (const Case& c : cases) {
    Graph g = generate(c.model, c.opt);
    REQUIRE(g.finalized());
    print_summary(g.name, g);
    GraphSummary s = g.summary();
    INFO(g.name);
    CHECK(g.num_ops() == c.ops);
    CHECK(s.flops_backward > 1.5 * s.flops_forward);
    CHECK(s.flops_backward < 2.5 * s.flops_forward);
    CHECK(s.ops_backward > s.ops_forward / 2);
    check_updates_colocated(g);
  }
}

TEST_CASE("datasets/amoebanet published figures (AmoebaNet-A N=6 F=190)", "[datasets]") {
  // Real et al. 2018, Table 2: 86.7M parameters, 23.1B multiply-adds at 331x331. Our cell
  // wiring follows the TPU reference; the auxiliary head and drop-path are left out.
  GraphBuilder b("amoeba");
  AmoebaNetOptions o;
  o.batch = 1;
  record_amoebanet(b, o);
  ForwardFigures f = forward_figures(b, 1);
  std::printf("amoebanet: %lld params, %.3f GMACs/example\n", (long long)f.parameters,
              f.macs_per_example / 1e9);
  CHECK(f.parameters == Approx(86.7e6).epsilon(0.15));
  CHECK(f.macs_per_example == Approx(23.1e9).epsilon(0.15));
}

TEST_CASE("datasets/cnn defaults: deterministic JSON, strict round trip, fit one V100",
          "[datasets]") {
  // The practitioner's placement of these CNNs and of a 2-stack WaveNet is one GPU: the
  // default graphs must fit a 16 GiB V100 with their activations and Adam state.
  const Cluster cluster = read_cluster("v100x1-nvlink");
  for (const char* model : {"inception_v3", "resnet50", "amoebanet", "wavenet"}) {
    INFO(model);
    const Graph g = generate(model, {});
    const std::string json = graph_to_json(g);
    CHECK(json == graph_to_json(generate(model, {})));
    const Graph back = parse_graph_json(json, model);
    CHECK(back.num_ops() == g.num_ops());
    CHECK(back.num_edges() == g.num_edges());
    CHECK(graph_to_json(back) == json);
    Simulator sim(g, cluster, CostModel());
    SimResult r = sim.run(Placement{std::vector<int32_t>(g.num_ops(), 0)});
    INFO(r.reason);
    CHECK(r.valid);
    CHECK(r.step_time_s > 0);
    CHECK(r.devices[0].peak_memory_bytes < cluster.devices[0].memory_bytes);
  }
}

TEST_CASE("datasets/inception_v3 batch 64 doubles flops, keeps parameters", "[datasets]") {
  GenOptions b32, b64;
  b32.batch = 32;
  b64.batch = 64;
  const GraphSummary s32 = generate("inception_v3", b32).summary();
  const GraphSummary s64 = generate("inception_v3", b64).summary();
  CHECK(s64.flops_forward == Approx(2 * s32.flops_forward).epsilon(1e-3));
  CHECK(s64.parameter_bytes == s32.parameter_bytes);
  CHECK(s64.activation_bytes > s32.activation_bytes);
}

TEST_CASE("datasets/inception_v3 reports 23.8M parameters, weights and Adam state apart",
          "[datasets]") {
  // 23,834,568 = torchvision's inception_v3 without the auxiliary head (27,161,264 with it);
  // Keras counts 23,851,784 (no gamma, with the moving averages); published "23.8M".
  const Graph g = generate("inception_v3", GenOptions{});
  const GraphSummary s = g.summary();
  CHECK(s.parameters == 23834568);
  CHECK(static_cast<double>(s.parameters) == Approx(23.8e6).epsilon(0.01));
  CHECK(s.parameter_bytes == 4 * s.parameters);       // f32 weights
  CHECK(s.optimizer_bytes == 2 * s.parameter_bytes);  // Adam's m and v
  // Simulated resident memory = weights + optimizer state (3 x the weights, as before the
  // split), on whichever devices hold the variables.
  for (int devices : {1, 2}) {
    Cluster c = make_cluster_preset("v100x" + std::to_string(devices) + "-nvlink");
    Simulator sim(g, c, CostModel());
    SimResult r = sim.run(test::place_by(devices == 1 ? "single" : "round-robin", g, c));
    int64_t resident = 0;
    for (const auto& d : r.devices) resident += d.resident_bytes;
    CHECK(resident == s.parameter_bytes + s.optimizer_bytes);
    CHECK(resident == 3 * 4 * s.parameters);
  }
}

TEST_CASE("datasets/wavenet stacks of ten dilated layers", "[datasets]") {
  GenOptions four;
  four.stacks = 4;
  const Graph g = generate("wavenet", four);
  for (int s = 0; s < 4; ++s)
    for (int l = 0; l < 10; ++l) {
      const std::string base = "wavenet/stack_" + std::to_string(s) + "/layer_" + std::to_string(l);
      INFO(base);
      CHECK(g.find_op(base + "/filter/Conv2D") >= 0);
      CHECK(g.find_op(base + "/gate/Conv2D") >= 0);
      CHECK(g.find_op(base + "/skip/Conv2D") >= 0);
    }
  CHECK(g.find_op("wavenet/stack_4/layer_0/filter/Conv2D") < 0);
  CHECK(g.find_op("wavenet/stack_0/layer_10/filter/Conv2D") < 0);
  // A filter conv is 2 * N*T * 2 taps * R * R flops, whatever its dilation.
  const Op& f = g.op(g.find_op("wavenet/stack_1/layer_9/filter/Conv2D"));
  CHECK(f.flops == Approx(2.0 * 4 * 16000 * 2 * 64 * 64));
  // Options are validated with the option's name.
  GenOptions bad;
  bad.stacks = 0;
  CHECK_THROWS_WITH(generate("wavenet", bad), Catch::Contains("stacks"));
}

TEST_CASE("datasets/amoebanet cells and options", "[datasets]") {
  GenOptions o;
  o.layers = 2;   // N normal cells per stack
  o.hidden = 32;  // F
  o.batch = 2;
  o.image_size = 128;
  const Graph g = generate("amoebanet", o);
  for (int i = 0; i < 6; ++i)
    CHECK(g.find_op("amoebanet/cell_" + std::to_string(i) + "/cell_output") >= 0);
  CHECK(g.find_op("amoebanet/cell_6/cell_output") < 0);
  for (const char* c : {"stem_cell_0", "stem_cell_1", "reduction_cell_0", "reduction_cell_1"})
    CHECK(g.find_op(std::string("amoebanet/") + c + "/cell_output") >= 0);
  CHECK(g.find_op("amoebanet/reduction_cell_2/cell_output") < 0);
  // Normal cells concatenate 4 states of F filters; the last stack runs at 4F.
  CHECK(g.op(g.find_op("amoebanet/cell_0/cell_output")).outputs[0].shape.back() == 4 * 32);
  CHECK(g.op(g.find_op("amoebanet/cell_5/cell_output")).outputs[0].shape.back() == 4 * 4 * 32);
  check_updates_colocated(g);
}
