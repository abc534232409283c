// Tests of the LSTM cell (nn/lstm.h), the recurrent block of the HDP baseline's placer: finite
// differences through a 3-step unrolled sequence, PyTorch's LSTMCell with the same weights
// (scripts/torch_oracle.py --lstm; skipped where torch is missing), and seeded initialization.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "nn/gradcheck.h"
#include "nn/lstm.h"
#include "nn/ops.h"
#include "nn/torch_oracle_util.h"
#include "test_paths.h"

using namespace gdp::nn;
using nlohmann::json;

namespace {

constexpr int32_t kIn = 5, kHidden = 6, kBatch = 3, kSteps = 3;

// hs (T x (B, H)) and c_T stacked into one (T B + B, H) output.
template <typename T>
BasicVar<T> stacked(const BasicLstmSequence<T>& seq) {
  std::vector<BasicVar<T>> parts = seq.hs;
  parts.push_back(seq.last.c);
  return concat(parts, 0);
}

// The oracle's cell, inputs and loss in our library (parameter names match the script's).
template <typename T>
struct OracleLstm {
  BasicParameterBuffer<T> params;
  std::unique_ptr<BasicLstmCell<T>> cell;
  std::vector<BasicVar<T>> xs;
  BasicLstmState<T> state0;
  BasicVar<T> proj_h, proj_c;  // (T, B, H), (B, H)

  OracleLstm(const json& doc, bool inputs_require_grad) {
    const json& c = doc.at("config");
    Rng rng(1);  // initial values are overwritten below
    cell = std::make_unique<BasicLstmCell<T>>(params, "lstm",
                                              LstmConfig{c.at("input"), c.at("hidden")}, rng);
    gdp::test::load_oracle_params(params, doc.at("params"));
    const json& in = doc.at("inputs");
    for (int t = 0; t < c.at("steps").get<int>(); ++t)
      xs.emplace_back(gdp::test::oracle_tensor<T>(in.at("x" + std::to_string(t))),
                      inputs_require_grad);
    state0.h = BasicVar<T>(gdp::test::oracle_tensor<T>(in.at("h0")), inputs_require_grad);
    state0.c = BasicVar<T>(gdp::test::oracle_tensor<T>(in.at("c0")), inputs_require_grad);
    proj_h = BasicVar<T>(gdp::test::oracle_tensor<T>(doc.at("proj").at("h")));
    proj_c = BasicVar<T>(gdp::test::oracle_tensor<T>(doc.at("proj").at("c")));
  }

  // loss = sum(h * proj_h) + sum(c_T * proj_c); h (T, B, H) stacked into *h_out.
  BasicVar<T> loss(BasicVar<T>* h_out, BasicVar<T>* c_out) const {
    const BasicLstmSequence<T> seq = lstm_sequence(*cell, xs, state0);
    std::vector<BasicVar<T>> rows;
    for (const auto& h : seq.hs) rows.push_back(reshape(h, {1, h.dim(0), h.dim(1)}));
    *h_out = concat(rows, 0);
    *c_out = seq.last.c;
    return add(sum(mul(*h_out, proj_h)), sum(mul(seq.last.c, proj_c)));
  }
};

}  // namespace

TEST_CASE("nn/lstm cell gradcheck through a 3-step sequence", "[nn][lstm]") {
  Rng rng(31);
  ParameterBufferD params;
  const LstmCellD cell(params, "lstm", {kIn, kHidden}, rng);
  REQUIRE(params.count() == 4);
  std::vector<VarD> inputs;
  for (const auto& e : params.entries()) inputs.push_back(e.var);
  const size_t first = inputs.size();
  for (int t = 0; t < kSteps; ++t) inputs.push_back(random_input({kBatch, kIn}, rng));

  SECTION("from a given state: every parameter, every x, h0 and c0") {
    inputs.push_back(random_input({kBatch, kHidden}, rng));
    inputs.push_back(random_input({kBatch, kHidden}, rng));
    const auto res = gradcheck(
        [&](const std::vector<VarD>& in) {
          const std::vector<VarD> xs(in.begin() + first, in.begin() + first + kSteps);
          return stacked(lstm_sequence(cell, xs, {in[first + kSteps], in[first + kSteps + 1]}));
        },
        inputs);
    INFO(res.worst);
    CHECK(res.passed);
    CHECK(res.skipped_kinks == 0);
    CHECK(res.checked == params.size() + kSteps * kBatch * kIn + 2 * kBatch * kHidden);
  }

  SECTION("from the zero state (undefined h0, c0)") {
    const auto res = gradcheck(
        [&](const std::vector<VarD>& in) {
          return stacked(lstm_sequence(cell, std::vector<VarD>(in.begin() + first, in.end())));
        },
        inputs);
    INFO(res.worst);
    CHECK(res.passed);
    CHECK(res.skipped_kinks == 0);
    CHECK(res.checked == params.size() + kSteps * kBatch * kIn);
  }
}

TEST_CASE("nn/lstm zero state equals explicit zero tensors bit for bit", "[nn][lstm]") {
  Rng rng(32);
  ParameterBuffer params;
  const LstmCell cell(params, "enc", {kIn, kHidden}, rng);
  Tensor xv({kBatch, kIn});
  for (int64_t i = 0; i < xv.numel(); ++i) xv[i] = static_cast<float>(rng.uniform(-1.0, 1.0));
  const Var x(xv);
  NoGradGuard no_grad;
  const LstmState a = cell.forward(x, {});
  const LstmState b =
      cell.forward(x, {Var(Tensor({kBatch, kHidden})), Var(Tensor({kBatch, kHidden}))});
  REQUIRE(a.h.shape() == Shape{kBatch, kHidden});
  CHECK(a.h.value().to_vector() == b.h.value().to_vector());
  CHECK(a.c.value().to_vector() == b.c.value().to_vector());
}

TEST_CASE("nn/lstm init is seeded, bounded and named like PyTorch's LSTMCell", "[nn][lstm]") {
  auto build = [](uint64_t seed) {
    Rng rng(seed);
    auto params = std::make_unique<ParameterBuffer>();
    LstmCell cell(*params, "hdp.enc", {kIn, kHidden}, rng);
    return params;
  };
  const auto a = build(7), b = build(7), c = build(8);
  REQUIRE(a->count() == 4);
  const std::vector<std::pair<std::string, Shape>> want = {{"hdp.enc.w_ih", {4 * kHidden, kIn}},
                                                           {"hdp.enc.w_hh", {4 * kHidden, kHidden}},
                                                           {"hdp.enc.b_ih", {4 * kHidden}},
                                                           {"hdp.enc.b_hh", {4 * kHidden}}};
  for (size_t k = 0; k < want.size(); ++k) {
    CHECK(a->entries()[k].name == want[k].first);
    CHECK(a->entries()[k].shape == want[k].second);
  }
  const auto va = a->values().to_vector(), vb = b->values().to_vector(),
             vc = c->values().to_vector();
  CHECK(va == vb);
  CHECK(va != vc);
  const double bound = 1.0 / std::sqrt(static_cast<double>(kHidden));
  double largest = 0;
  for (float v : va) largest = std::max(largest, std::abs(static_cast<double>(v)));
  CHECK(largest <= bound);
  CHECK(largest > 0.8 * bound);  // the whole range is used
}

TEST_CASE("nn/lstm rejects inputs of the wrong shape", "[nn][lstm]") {
  Rng rng(33);
  ParameterBuffer params;
  const LstmCell cell(params, "lstm", {kIn, kHidden}, rng);
  CHECK_THROWS_WITH(cell.forward(Var(Tensor({kBatch, kIn + 1})), {}),
                    Catch::Contains("x must be (B, 5)"));
  CHECK_THROWS_WITH(
      cell.forward(Var(Tensor({kBatch, kIn})), {Var(), Var(Tensor({kBatch + 1, kHidden}))}),
      Catch::Contains("h and c must be (3, 6)"));
  CHECK_THROWS_AS(LstmCell(params, "bad", {kIn, 0}, rng), std::invalid_argument);
  Tape::current().clear();
}

TEST_CASE("nn/lstm oracle: LSTMCell matches PyTorch (outputs, gradients)", "[nn][lstm][oracle]") {
  static std::string why_not;
  static const json doc = gdp::test::run_torch_oracle("--lstm", "nn_torch_oracle_lstm.json",
                                                      why_not);  // one script run for all sections
  GDP_REQUIRE_INPUT(!doc.is_null(), "nn/lstm oracle needs PyTorch: " << why_not);
  INFO(why_not);
  REQUIRE_FALSE(doc.contains("error"));
  REQUIRE(doc.at("format") == "gdp-torch-oracle-lstm");
  REQUIRE(doc.at("version") == 1);
  const json& outs = doc.at("outputs");

  SECTION("double: outputs and every gradient") {
    OracleLstm<double> m(doc, true);
    VarD h, c;
    const VarD loss = m.loss(&h, &c);
    gdp::test::check_close(h.value(), outs.at("h"), 1e-4, 1e-9, "h");
    gdp::test::check_close(c.value(), outs.at("c"), 1e-4, 1e-9, "c");
    gdp::test::check_close(loss.value(), outs.at("loss"), 1e-4, 1e-9, "loss");
    m.params.zero_grad();
    backward(loss);
    for (const auto& e : m.params.entries())
      gdp::test::check_close(e.var.grad(), doc.at("grads").at(e.name), 1e-4, 1e-9,
                             "grad " + e.name);
    for (size_t t = 0; t < m.xs.size(); ++t)
      gdp::test::check_close(m.xs[t].grad(), doc.at("grads").at("x" + std::to_string(t)), 1e-4,
                             1e-9, "grad x" + std::to_string(t));
    gdp::test::check_close(m.state0.h.grad(), doc.at("grads").at("h0"), 1e-4, 1e-9, "grad h0");
    gdp::test::check_close(m.state0.c.grad(), doc.at("grads").at("c0"), 1e-4, 1e-9, "grad c0");
  }

  SECTION("double: one step from the zero state (hx = None)") {
    const OracleLstm<double> m(doc, false);
    const LstmStateD s = m.cell->forward(m.xs[0], {});
    gdp::test::check_close(s.h.value(), outs.at("h1_zero_state"), 1e-4, 1e-9, "h1 zero state");
    gdp::test::check_close(s.c.value(), outs.at("c1_zero_state"), 1e-4, 1e-9, "c1 zero state");
    TapeD::current().clear();
  }

  SECTION("float: outputs and loss to float precision") {
    const OracleLstm<float> m(doc, false);
    Var h, c;
    const Var loss = m.loss(&h, &c);
    gdp::test::check_close(h.value(), outs.at("h"), 1e-4, 1e-5, "h");
    gdp::test::check_close(c.value(), outs.at("c"), 1e-4, 1e-5, "c");
    gdp::test::check_close(loss.value(), outs.at("loss"), 1e-4, 1e-5, "loss");
    Tape::current().clear();
  }
}
