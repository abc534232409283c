// Tests of the categorical policy head: seeded sampling (reproducible, frequencies match the
// softmax), log-prob and entropy values, and their gradchecks in double.
#include <catch2/catch.hpp>
#include <cmath>

#include "nn/gradcheck.h"
#include "nn/graph_ops.h"
#include "nn/sampling.h"

using namespace gdp::nn;

TEST_CASE("nn/categorical sample is seeded and follows the softmax", "[nn]") {
  const int N = 20000, A = 3;
  const std::vector<float> row = {0.0f, std::log(2.0f), std::log(5.0f)};  // p = 1/8, 2/8, 5/8
  std::vector<float> logits;
  for (int n = 0; n < N; ++n) logits.insert(logits.end(), row.begin(), row.end());
  std::vector<int32_t> a1(N), a2(N), a3(N);
  Rng r1(99), r2(99), r3(100);
  categorical_sample(a1.data(), logits.data(), N, A, r1);
  categorical_sample(a2.data(), logits.data(), N, A, r2);
  categorical_sample(a3.data(), logits.data(), N, A, r3);
  CHECK(a1 == a2);
  CHECK(a1 != a3);
  std::vector<int> count(A, 0);
  for (int32_t a : a1) count.at(a) += 1;
  // 5 sigma of a binomial with n = 20000 is below 0.02 for every p here.
  CHECK(count[0] / double(N) == Approx(0.125).margin(0.02));
  CHECK(count[1] / double(N) == Approx(0.25).margin(0.02));
  CHECK(count[2] / double(N) == Approx(0.625).margin(0.02));
  std::vector<int32_t> best(1);
  categorical_argmax(best.data(), row.data(), 1, A);
  CHECK(best[0] == 2);
}

TEST_CASE("nn/categorical sample never picks a masked column", "[nn]") {
  // 35 equal logits and a masked last column: in float the 35 probabilities sum to 1 - 9.6e-8,
  // and seed 3138459 draws u above that total (found by search). The fallback used to be the
  // last column, i.e. the masked device.
  std::vector<float> row(36, 0.0f);
  row[35] = -1e9f;
  int32_t a = -1;
  Rng rng(3138459);
  categorical_sample(&a, row.data(), 1, 36, rng);
  CHECK(a == 34);
}

TEST_CASE("nn/categorical log prob and entropy values", "[nn]") {
  // Row 0 uniform over 4; row 1 = log(1, 3) -> p = (1/4, 3/4) padded with -inf-like logits.
  const TensorD logits =
      TensorD::from_vector({2, 4}, {0.3, 0.3, 0.3, 0.3, 0.0, std::log(3.0), -60, -60});
  const VarD x(logits);
  const TensorD lp = categorical_log_prob(x, {2, 1}).value();
  CHECK(lp[0] == Approx(-std::log(4.0)));
  CHECK(lp[1] == Approx(std::log(0.75)));
  const TensorD h = categorical_entropy(x).value();
  CHECK(h[0] == Approx(std::log(4.0)));
  CHECK(h[1] == Approx(-(0.25 * std::log(0.25) + 0.75 * std::log(0.75))).epsilon(1e-9));
  CHECK_THROWS_WITH(categorical_log_prob(x, {0}), Catch::Contains("N = actions.size() = 1"));
}

TEST_CASE("nn/categorical log prob and entropy gradcheck", "[nn]") {
  Rng rng(17);
  const std::vector<int32_t> actions = {0, 4, 2, 2, 1, 3, 4};
  const auto lp =
      gradcheck([&](const std::vector<VarD>& in) { return categorical_log_prob(in[0], actions); },
                {random_input({7, 5}, rng, -2.0, 2.0)});
  INFO(lp.worst);
  CHECK(lp.passed);
  const auto ent =
      gradcheck([&](const std::vector<VarD>& in) { return categorical_entropy(in[0]); },
                {random_input({7, 5}, rng, -2.0, 2.0)});
  INFO(ent.worst);
  CHECK(ent.passed);
}
