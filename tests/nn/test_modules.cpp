// Tests of the GDP network modules in double: GraphSAGE encoder, one Transformer-XL layer (with
// memory, relative positions and FiLM), the superposition network, and the segment-recurrent
// stack (memory used in the forward pass, gradient stopped at it).
#include <catch2/catch.hpp>

#include "nn/gradcheck.h"
#include "nn/ops.h"
#include "nn/sage.h"
#include "nn/superposition.h"
#include "nn/transformer_xl.h"

using namespace gdp::nn;

namespace {

std::shared_ptr<const Adjacency> random_graph(int32_t n, int32_t e, uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> src, dst;
  while (static_cast<int32_t>(src.size()) < e) {
    const auto a = static_cast<int32_t>(rng.below(n)), b = static_cast<int32_t>(rng.below(n));
    if (a != b) {
      src.push_back(a);
      dst.push_back(b);
    }
  }
  return make_adjacency(n, src, dst);
}

// All parameters of a buffer, as gradcheck inputs (the Vars share the modules' nodes).
std::vector<VarD> parameter_vars(const ParameterBufferD& params) {
  std::vector<VarD> vars;
  for (const auto& e : params.entries()) vars.push_back(e.var);
  return vars;
}

TransformerXLConfig small_txl(bool causal) {
  TransformerXLConfig c;
  c.width = 6;
  c.heads = 2;
  c.layers = 2;
  c.ffn = 7;
  c.segment = 4;
  c.memory = 3;
  c.causal = causal;
  return c;
}

}  // namespace

TEST_CASE("nn/sage encoder gradcheck", "[nn]") {
  const auto adj = random_graph(9, 19, 1);
  Rng rng(4);
  ParameterBufferD params;
  const SageEncoderD sage(params, "sage", {3, 5, 2, true}, rng);
  std::vector<VarD> inputs = parameter_vars(params);
  inputs.push_back(random_input({9, 3}, rng));
  const auto res =
      gradcheck([&](const std::vector<VarD>& in) { return sage.forward(in.back(), adj); }, inputs);
  INFO(res.worst);
  CHECK(res.passed);
  CHECK(res.checked > 100);
}

TEST_CASE("nn/transformer-xl layer gradcheck with memory, positions and film", "[nn]") {
  Rng rng(6);
  for (bool causal : {true, false}) {
    ParameterBufferD params;
    const TransformerXLD txl(params, "txl", small_txl(causal), rng);
    std::vector<VarD> inputs = parameter_vars(params);
    const size_t first = inputs.size();
    inputs.push_back(random_input({3, 6}, rng));             // segment x (S' = 3 < S)
    inputs.push_back(random_input({3, 6}, rng));             // memory (M = 3)
    inputs.push_back(random_input({4, 6}, rng, -0.5, 0.5));  // film (2L, D)
    const auto res = gradcheck(
        [&](const std::vector<VarD>& in) {
          return txl.layer_forward(1, in[first], in[first + 1], txl.positions(1), in[first + 2]);
        },
        inputs);
    INFO("causal " << causal << ": " << res.worst);
    CHECK(res.passed);
    CHECK(res.checked > 300);
  }
}

TEST_CASE("nn/superposition gradcheck", "[nn]") {
  Rng rng(12);
  ParameterBufferD params;
  const SuperpositionD sup(params, "sup", {6, 5, 2}, rng);
  CHECK(sup.forward(random_input({7, 6}, rng)).shape() == Shape{4, 6});
  std::vector<VarD> inputs = parameter_vars(params);
  inputs.push_back(random_input({7, 6}, rng));
  inputs.push_back(random_input({3, 6}, rng));
  const auto res = gradcheck(
      [&](const std::vector<VarD>& in) {
        return film_modulate(in.back(), sup.forward(in[in.size() - 2]), 1);
      },
      inputs);
  INFO(res.worst);
  CHECK(res.passed);
}

TEST_CASE("nn/transformer-xl stack on one segment gradcheck with superposition", "[nn]") {
  // One segment (N <= S): no memory path, so finite differences see exactly the analytic graph.
  Rng rng(13);
  ParameterBufferD params;
  const TransformerXLD txl(params, "txl", small_txl(false), rng);
  const SuperpositionD sup(params, "sup", {6, 5, 2}, rng);
  std::vector<VarD> inputs = parameter_vars(params);
  inputs.push_back(random_input({4, 6}, rng));
  const auto res = gradcheck(
      [&](const std::vector<VarD>& in) { return txl.forward(in.back(), sup.forward(in.back())); },
      inputs);
  INFO(res.worst);
  CHECK(res.passed);
}

TEST_CASE("nn/transformer-xl stack uses memory and stops its gradient", "[nn]") {
  Rng rng(14);
  ParameterBufferD params;
  const TransformerXLD txl(params, "txl", small_txl(true), rng);
  const TensorD h0 = random_input({11, 6}, rng).value();  // segments [0,4) [4,8) [8,11)
  const VarD h(h0.clone(), true);
  const VarD out = txl.forward(h, VarD());
  REQUIRE(out.shape() == Shape{11, 6});
  // Forward: changing the first segment changes the second segment's output (via memory).
  TensorD h1 = h0.clone();
  h1.at({1, 2}) += 0.5;
  const VarD out1 = txl.forward(VarD(h1), VarD());
  double diff_second = 0;
  for (int i = 4; i < 8; ++i)
    for (int c = 0; c < 6; ++c)
      diff_second =
          std::max(diff_second, std::abs(out1.value().at({i, c}) - out.value().at({i, c})));
  CHECK(diff_second > 1e-6);
  // Backward: a loss on the second segment only sends no gradient into the first segment.
  // (A weighted sum: plain sums of layer-norm rows are constant.)
  const VarD loss = sum(mul(slice(out, 0, 4, 8), VarD(random_input({4, 6}, rng).value())));
  TapeD::current().backward(loss);
  REQUIRE(h.grad().defined());
  double g_first = 0, g_second = 0;
  for (int c = 0; c < 6; ++c) {
    for (int i = 0; i < 4; ++i) g_first = std::max(g_first, std::abs(h.grad().at({i, c})));
    for (int i = 4; i < 8; ++i) g_second = std::max(g_second, std::abs(h.grad().at({i, c})));
  }
  CHECK(g_first == 0.0);
  CHECK(g_second > 1e-6);
}

TEST_CASE("nn/transformer-xl stack equals its layers applied segment by segment", "[nn]") {
  Rng rng(15);
  ParameterBufferD params;
  auto cfg = small_txl(false);
  cfg.memory = 6;  // longer than a segment: memory spans two previous segments
  const TransformerXLD txl(params, "txl", cfg, rng);
  const VarD h = random_input({10, 6}, rng);
  const VarD film = random_input({4, 6}, rng);
  NoGradGuard no_grad;
  const TensorD out = txl.forward(h, film).value();
  // Hand-rolled recurrence: memory of layer l = last 6 rows of all earlier inputs to layer l.
  std::vector<TensorD> layer_inputs(2, TensorD({0, 6}));
  std::vector<VarD> outs;
  for (int s = 0; s < 10; s += 4) {
    VarD x = slice(h, 0, s, std::min(10, s + 4));
    for (int l = 0; l < 2; ++l) {
      const int64_t rows = layer_inputs[l].dim(0);
      VarD mem;
      if (rows > 0) mem = slice(VarD(layer_inputs[l]), 0, std::max<int64_t>(0, rows - 6), rows);
      const VarD next = txl.layer_forward(l, x, mem, txl.positions(l), film);
      layer_inputs[l] =
          rows > 0 ? concat<double>({VarD(layer_inputs[l]), x}, 0).value() : x.value().clone();
      x = next;
    }
    outs.push_back(x);
  }
  CHECK(max_abs_diff(out, concat(outs, 0).value()) < 1e-12);
}
