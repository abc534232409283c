// Sequence-model generators (rnnlm, gnmt, transformer_xl, bert): op counts and totals of the
// defaults, published figures, scaling with layers, determinism, strict-reader round trip.
#include <catch2/catch.hpp>

#include "core/error.h"
#include "core/io.h"
#include "datasets/registry.h"

using namespace gdp;
using namespace gdp::datasets;

namespace {

int64_t parameters(const Graph& g) {
  int64_t n = 0;
  for (const Op& o : g.ops())
    if (o.type == "VariableV2") n += o.outputs[0].bytes / 4;
  return n;
}

int64_t count_type(const Graph& g, const std::string& type) {
  int64_t n = 0;
  for (const Op& o : g.ops()) n += o.type == type;
  return n;
}

GenOptions layers(int64_t l) {
  GenOptions o;
  o.layers = l;
  return o;
}

}  // namespace

TEST_CASE("datasets/rnnlm defaults: op counts, parameters, backward twice forward", "[datasets]") {
  Graph g = generate("rnnlm", {});
  GraphSummary s = g.summary();
  CHECK(s.ops == 3370);  // docs/workloads.md
  CHECK(s.ops_update == count_type(g, "VariableV2"));
  // embedding (V, H), 2 x [kernel (2H, 4H), bias (4H)], softmax (H, V) + (V).
  const int64_t H = 2048, V = 32000;
  CHECK(parameters(g) == V * H + 2 * (2 * H * 4 * H + 4 * H) + H * V + V);
  CHECK(s.flops_backward / s.flops_forward == Approx(2.0).epsilon(0.1));
  // 40 unrolled steps x 2 layers of gate MatMuls.
  int64_t gate_mm = 0;
  for (const Op& o : g.ops())
    gate_mm += o.phase == Phase::forward && o.type == "MatMul" && o.scope.rfind("layer_", 0) == 0;
  CHECK(gate_mm == 80);
  // Forward MatMul flops by formula (2mnk): 80 gate MatMuls (B, 2H) x (2H, 4H) and the
  // softmax layer (T*B, H) x (H, V).
  const double B = 64, T = 40;
  double mm_flops = 0;
  for (const Op& o : g.ops())
    if (o.phase == Phase::forward && o.type == "MatMul") mm_flops += o.flops;
  CHECK(mm_flops == Approx(80 * 2 * B * (2.0 * H) * (4.0 * H) + 2 * T * B * H * V));
  Graph g4 = generate("rnnlm", layers(4));
  CHECK(g4.summary().ops == 6586);
}

TEST_CASE("datasets/gnmt default (8 layers) has over 50,000 ops", "[datasets]") {
  Graph g = generate("gnmt", {});
  GraphSummary s = g.summary();
  CHECK(s.ops >= 50000);
  CHECK(s.ops == 53481);  // docs/workloads.md
  CHECK(s.flops_backward / s.flops_forward == Approx(2.0).epsilon(0.1));
  CHECK(s.ops_update == count_type(g, "VariableV2"));
  // Encoder: 9 LSTMs (bidirectional first layer), decoder: 8, over 70 steps.
  int64_t cells = 0;
  for (const Op& o : g.ops())
    cells +=
        o.phase == Phase::forward && o.type == "Split" && o.name.find("/t") != std::string::npos;
  CHECK(cells == 17 * 70);
  // Attention once per decoder step.
  CHECK(count_type(g, "Softmax") == 70);
  // Parameters: 2 embeddings (V, H); encoder: 2 x (2H, 4H) bidirectional, (3H, 4H), 6 x (2H, 4H);
  // decoder: 8 x (3H, 4H) with the attention context; attention: memory and query layers
  // (H, H), v, b (H), g; output projection (H, V); plus the LSTM biases (4H) x 17.
  const int64_t H = 1024, V = 32000;
  CHECK(parameters(g) == 2 * V * H + 2 * 2 * H * 4 * H + 3 * H * 4 * H + 6 * 2 * H * 4 * H +
                             8 * 3 * H * 4 * H + 2 * H * H + 2 * H + 1 + H * V + 17 * 4 * H);
}

TEST_CASE("datasets/gnmt 2 and 4 layers, options validated", "[datasets]") {
  GenOptions o = layers(2);
  o.seq_len = 10;
  Graph g2 = generate("gnmt", o);
  o.layers = 4;
  Graph g4 = generate("gnmt", o);
  CHECK(g4.summary().ops > g2.summary().ops);
  CHECK(g4.summary().flops > g2.summary().flops);
  CHECK_THROWS_AS(generate("gnmt", layers(1)), InputError);
  GenOptions bad;
  bad.stacks = 2;  // gnmt takes no stacks
  CHECK_THROWS_WITH(generate("gnmt", bad), Catch::Contains("does not take option 'stacks'"));
}

TEST_CASE("datasets/transformer_xl grows linearly with layers", "[datasets]") {
  int64_t n2 = generate("transformer_xl", layers(2)).summary().ops;
  int64_t n4 = generate("transformer_xl", layers(4)).summary().ops;
  int64_t n8 = generate("transformer_xl", layers(8)).summary().ops;
  CHECK(n4 == 642);  // default, docs/workloads.md
  CHECK(n8 - n4 == 2 * (n4 - n2));
  Graph g = generate("transformer_xl", {});
  GraphSummary s = g.summary();
  CHECK(s.flops_backward / s.flops_forward == Approx(2.0).epsilon(0.1));
  // Keys/values attend over memory + segment: AC scores (B, N, T, M + T).
  int32_t ac = g.find_op("layer_0/rel_attn/AC");
  REQUIRE(ac >= 0);
  CHECK(g.op(ac).outputs[0].shape == std::vector<int64_t>{22, 8, 512, 1024});
  GenOptions bad;
  bad.hidden = 100;
  bad.heads = 8;
  CHECK_THROWS_AS(generate("transformer_xl", bad), InputError);
}

TEST_CASE("datasets/bert base has about 110M parameters", "[datasets]") {
  Graph g = generate("bert", {});
  int64_t p = parameters(g);
  CHECK(p > 99000000);
  CHECK(p < 121000000);
  GraphSummary s = g.summary();
  CHECK(s.ops == 1660);  // docs/workloads.md
  CHECK(s.flops_backward / s.flops_forward == Approx(2.0).epsilon(0.1));
  // Tied output embedding: the word embedding's gradient accumulates two contributions.
  int32_t upd = g.find_op("bert/embeddings/word_embeddings/Adam/ApplyAdam");
  REQUIRE(upd >= 0);
  int32_t src = g.edges()[g.in_edge_ids()[g.in_ptr()[upd]]].src;
  CHECK(g.op(src).type == "AddN");
}

TEST_CASE("datasets/seq generators are deterministic and round-trip the strict reader",
          "[datasets]") {
  for (const char* m : {"rnnlm", "gnmt", "transformer_xl", "bert"}) {
    GenOptions o = layers(2);
    o.seq_len = 8;
    std::string a = graph_to_json(generate(m, o));
    std::string b = graph_to_json(generate(m, o));
    CHECK(a == b);
    Graph back = parse_graph_json(a, m);
    CHECK(graph_to_json(back) == a);
  }
}

TEST_CASE("datasets/registry options: strict names and values", "[datasets]") {
  GenOptions o;
  CHECK_THROWS_WITH(set_option(o, "layer", "2"), Catch::Contains("unknown generator option"));
  CHECK_THROWS_AS(set_option(o, "layers", "two"), InputError);
  CHECK_THROWS_AS(set_option(o, "layers", "-1"), InputError);
  set_option(o, "seq_len", "12");
  CHECK(o.seq_len == 12);
  CHECK(option_value(o, "seq_len") == "12");
  CHECK(option_value(o, "batch") == "");
  CHECK_THROWS_WITH(generate("no_such_model", {}), Catch::Contains("gnmt"));
  for (const char* m : {"rnnlm", "gnmt", "transformer_xl", "bert"}) CHECK(find_model(m) != nullptr);
}
