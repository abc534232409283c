// Compares our nn library against PyTorch on a small GDP-style model (GraphSAGE -> superposition
// -> Transformer-XL segments with memory -> categorical head): scripts/torch_oracle.py computes
// outputs, all gradients and Adam-step losses with PyTorch's own ops and autograd; we rebuild the
// model with the same weights and must agree. Skipped where torch is missing (GDP_REQUIRE_INPUT).
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "nn/graph_ops.h"
#include "nn/ops.h"
#include "nn/optim.h"
#include "nn/sage.h"
#include "nn/superposition.h"
#include "nn/torch_oracle_util.h"
#include "nn/transformer_xl.h"
#include "test_paths.h"

using namespace gdp::nn;
using nlohmann::json;

namespace {

// The oracle's model in our library (names match the script's parameter names).
template <typename T>
struct OracleModel {
  BasicParameterBuffer<T> params;
  std::unique_ptr<BasicSageEncoder<T>> sage;
  std::unique_ptr<BasicSuperposition<T>> sup;
  std::unique_ptr<BasicTransformerXL<T>> txl;
  BasicVar<T> head_w, head_b;
  std::shared_ptr<const Adjacency> adj;
  std::vector<int32_t> actions;
  BasicVar<T> adv;
  double entropy_coef = 0;

  explicit OracleModel(const json& doc) {
    const json& c = doc.at("config");
    Rng rng(1);  // initial values are overwritten below
    const int32_t D = c.at("width");
    sage = std::make_unique<BasicSageEncoder<T>>(
        params, "sage", SageConfig{c.at("in_dim"), D, c.at("sage_layers"), true}, rng);
    TransformerXLConfig tc;
    tc.width = D;
    tc.heads = c.at("heads");
    tc.layers = c.at("txl_layers");
    tc.ffn = c.at("ffn");
    tc.segment = c.at("segment");
    tc.memory = c.at("memory");
    tc.causal = c.at("causal");
    tc.ln_eps = c.at("ln_eps");
    txl = std::make_unique<BasicTransformerXL<T>>(params, "txl", tc, rng);
    sup = std::make_unique<BasicSuperposition<T>>(
        params, "sup", SuperpositionConfig{D, c.at("sup_hidden"), tc.layers}, rng);
    const int64_t A = c.at("actions");
    head_w = params.add("head.w", {A, D});
    head_b = params.add("head.b", {A});
    gdp::test::load_oracle_params(params, doc.at("params"));
    const json& g = doc.at("graph");
    adj = make_adjacency(g.at("num_nodes"), g.at("src").get<std::vector<int32_t>>(),
                         g.at("dst").get<std::vector<int32_t>>());
    actions = doc.at("actions").get<std::vector<int32_t>>();
    const auto a = doc.at("advantages").get<std::vector<double>>();
    adv = BasicVar<T>(BasicTensor<T>::from_vector({static_cast<int64_t>(a.size())},
                                                  std::vector<T>(a.begin(), a.end())));
    entropy_coef = c.at("entropy_coef");
  }

  // loss = -mean(logp * adv) - entropy_coef * mean(entropy); fills outs when given.
  BasicVar<T> loss(const BasicVar<T>& x, std::map<std::string, BasicVar<T>>* outs = nullptr) {
    const BasicVar<T> h = sage->forward(x, adj);
    const BasicVar<T> film = sup->forward(h);
    const BasicVar<T> y = txl->forward(h, film);
    const BasicVar<T> logits = linear(y, head_w, head_b);
    const BasicVar<T> logp = categorical_log_prob(logits, actions);
    const BasicVar<T> ent = categorical_entropy(logits);
    if (outs)
      *outs = {{"sage", h},        {"film", film},     {"txl", y},
               {"logits", logits}, {"log_prob", logp}, {"entropy", ent}};
    return sub(neg(mean(mul(logp, adv))), scale(mean(ent), static_cast<T>(entropy_coef)));
  }
};

// Every check on one oracle case (one model configuration).
void check_case(const json& oc) {
  SECTION("double: outputs and every gradient") {
    OracleModel<double> m(oc);
    VarD x(gdp::test::oracle_tensor<double>(oc.at("inputs").at("x")), true);
    std::map<std::string, VarD> outs;
    const VarD loss = m.loss(x, &outs);
    for (const auto& [name, v] : outs)
      gdp::test::check_close(v.value(), oc.at("outputs").at(name), 1e-4, 1e-9, name);
    gdp::test::check_close(loss.value(), oc.at("outputs").at("loss"), 1e-4, 1e-9, "loss");
    m.params.zero_grad();
    backward(loss);
    gdp::test::check_close(x.grad(), oc.at("grads").at("x"), 1e-4, 1e-9, "grad x");
    for (const auto& e : m.params.entries())
      gdp::test::check_close(e.var.grad(), oc.at("grads").at(e.name), 1e-4, 1e-9, "grad " + e.name);
  }

  SECTION("double: Adam step losses") {
    OracleModel<double> m(oc);
    const VarD x(gdp::test::oracle_tensor<double>(oc.at("inputs").at("x")));
    const auto want = oc.at("adam").at("losses").get<std::vector<double>>();
    AdamConfig cfg;
    cfg.lr = oc.at("adam").at("lr");
    cfg.eps = oc.at("adam").at("eps");
    AdamD adam(m.params, cfg);
    for (size_t step = 0; step + 1 < want.size(); ++step) {
      m.params.zero_grad();
      const VarD loss = m.loss(x);
      CHECK(loss.item() == Approx(want[step]).epsilon(1e-4));
      backward(loss);
      adam.step();
    }
    NoGradGuard no_grad;
    CHECK(m.loss(x).item() == Approx(want.back()).epsilon(1e-4));
  }

  SECTION("float: outputs and loss to float precision") {
    OracleModel<float> m(oc);
    const Var x(gdp::test::oracle_tensor<float>(oc.at("inputs").at("x")));
    std::map<std::string, Var> outs;
    const Var loss = m.loss(x, &outs);
    for (const auto& [name, v] : outs)
      gdp::test::check_close(v.value(), oc.at("outputs").at(name), 1e-4, 1e-5, name);
    gdp::test::check_close(loss.value(), oc.at("outputs").at("loss"), 1e-4, 1e-5, "loss");
    Tape::current().clear();
  }
}

}  // namespace

TEST_CASE("nn/oracle: GDP model matches PyTorch (outputs, gradients, Adam)", "[nn][oracle]") {
  static std::string why_not;
  static const json doc = gdp::test::run_torch_oracle("", "nn_torch_oracle.json",
                                                      why_not);  // one script run for all sections
  GDP_REQUIRE_INPUT(!doc.is_null(), "nn/oracle needs PyTorch: " << why_not);
  INFO(why_not);
  REQUIRE_FALSE(doc.contains("error"));
  REQUIRE(doc.at("format") == "gdp-torch-oracle");
  REQUIRE(doc.at("version") == 2);
  REQUIRE(doc.at("cases").size() == 2);

  for (const json& oc : doc.at("cases")) {
    const bool causal = oc.at("config").at("causal");
    DYNAMIC_SECTION("causal " << causal) { check_case(oc); }
  }
}
