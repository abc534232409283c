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

using namespace gdp;
using namespace gdp::datasets;

namespace {

void print_summary(const std::string& model, const Graph& g) {
  GraphSummary s = g.summary();
  std::printf("%s: ops %lld (fwd %lld, bwd %lld, upd %lld), edges %lld, flops %.3e "
              "(fwd %.3e, bwd %.3e), params %.1f MB (x3 Adam), activations %.2f GB, depth %lld\n",
              model.c_str(), (long long)s.ops, (long long)s.ops_forward, (long long)s.ops_backward,
              (long long)s.ops_update, (long long)s.edges, s.flops, s.flops_forward,
              s.flops_backward, s.parameter_bytes / 1e6, s.activation_bytes / 1e9,
              (long long)s.depth);
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
  };
  GenOptions four_stacks;
  four_stacks.stacks = 4;
  GenOptions batch64;
  batch64.batch = 64;
  const Case cases[] = {{"inception_v3", {}}, {"inception_v3", batch64}, {"resnet50", {}},
                        {"amoebanet", {}},    {"wavenet", {}},          {"wavenet", four_stacks}};
  for (const Case& c : cases) {
    Graph g = generate(c.model, c.opt);
    REQUIRE(g.finalized());
    print_summary(g.name, g);
    GraphSummary s = g.summary();
    INFO(g.name);
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
