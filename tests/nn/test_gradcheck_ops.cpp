// Finite-difference gradient checks (double, central differences, relative error) for every core
// op, on odd sizes, with kink points (ReLU at 0, clamp edges) skipped on purpose and counted.
#include <catch2/catch.hpp>

#include "nn/gradcheck.h"
#include "nn/ops.h"

using namespace gdp::nn;

namespace {

using Fn = std::function<VarD(const std::vector<VarD>&)>;

GradcheckResult check(const std::string& what, const Fn& f, std::vector<VarD> inputs,
                      GradcheckOptions opt = {}) {
  const GradcheckResult r = gradcheck(f, std::move(inputs), opt);
  INFO(what << ": max rel error " << r.max_error << " (" << r.worst << "), checked " << r.checked
            << ", kinks skipped " << r.skipped_kinks);
  CHECK(r.passed);
  return r;
}

VarD input(const Shape& s, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  Rng rng(seed);
  return random_input(s, rng, lo, hi);
}

}  // namespace

TEST_CASE("nn/gradcheck matmul (plain, transposed, flattened rows, batched)", "[nn]") {
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      const Shape as = ta ? Shape{7, 5} : Shape{5, 7};
      const Shape bs = tb ? Shape{3, 7} : Shape{7, 3};
      check("matmul ta=" + std::to_string(ta) + " tb=" + std::to_string(tb),
            [=](const std::vector<VarD>& v) { return matmul(v[0], v[1], ta, tb); },
            {input(as, 1), input(bs, 2)});
    }
  check("matmul flattened rows", [](const std::vector<VarD>& v) { return matmul(v[0], v[1]); },
        {input({2, 3, 4}, 3), input({4, 5}, 4)});
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      const Shape as = ta ? Shape{3, 5, 4} : Shape{3, 4, 5};
      const Shape bs = tb ? Shape{3, 2, 5} : Shape{3, 5, 2};
      check("batched matmul",
            [=](const std::vector<VarD>& v) { return matmul(v[0], v[1], ta, tb); },
            {input(as, 5), input(bs, 6)});
    }
}

TEST_CASE("nn/gradcheck linear with and without bias", "[nn]") {
  check("linear bias", [](const std::vector<VarD>& v) { return linear(v[0], v[1], v[2]); },
        {input({2, 3, 5}, 1), input({4, 5}, 2), input({4}, 3)});
  check("linear no bias", [](const std::vector<VarD>& v) { return linear(v[0], v[1], VarD()); },
        {input({7, 5}, 4), input({3, 5}, 5)});
}

TEST_CASE("nn/gradcheck broadcasting binary ops", "[nn]") {
  const std::vector<std::pair<Shape, Shape>> cases = {{{3, 5}, {3, 5}}, {{3, 5}, {5}},
                                                      {{3, 1}, {1, 5}}, {{2, 3, 4}, {3, 1}},
                                                      {{2, 3, 4}, {}},  {{1, 7}, {3, 1, 7}}};
  for (const auto& [sa, sb] : cases) {
    const std::string shapes = shape_str(sa) + " " + shape_str(sb);
    check("add " + shapes, [](const std::vector<VarD>& v) { return add(v[0], v[1]); },
          {input(sa, 1), input(sb, 2)});
    check("sub " + shapes, [](const std::vector<VarD>& v) { return sub(v[0], v[1]); },
          {input(sa, 3), input(sb, 4)});
    check("mul " + shapes, [](const std::vector<VarD>& v) { return mul(v[0], v[1]); },
          {input(sa, 5), input(sb, 6)});
    check("div " + shapes, [](const std::vector<VarD>& v) { return div(v[0], v[1]); },
          {input(sa, 7), input(sb, 8, 0.5, 2.0)});
  }
  check("minimum", [](const std::vector<VarD>& v) { return minimum(v[0], v[1]); },
        {input({4, 7}, 9), input({4, 7}, 10)});
  check("maximum", [](const std::vector<VarD>& v) { return maximum(v[0], v[1]); },
        {input({4, 7}, 11), input({7}, 12)});
}

TEST_CASE("nn/gradcheck unary ops", "[nn]") {
  const Shape s = {5, 7};
  check("gelu", [](const std::vector<VarD>& v) { return gelu(v[0]); }, {input(s, 1, -3, 3)});
  check("tanh", [](const std::vector<VarD>& v) { return tanh(v[0]); }, {input(s, 2, -2, 2)});
  check("sigmoid", [](const std::vector<VarD>& v) { return sigmoid(v[0]); }, {input(s, 3, -4, 4)});
  check("exp", [](const std::vector<VarD>& v) { return exp(v[0]); }, {input(s, 4)});
  check("log", [](const std::vector<VarD>& v) { return log(v[0]); }, {input(s, 5, 0.5, 3)});
  check("square", [](const std::vector<VarD>& v) { return square(v[0]); }, {input(s, 6)});
  check("sqrt", [](const std::vector<VarD>& v) { return sqrt(v[0]); }, {input(s, 7, 0.5, 3)});
  check("add_scalar", [](const std::vector<VarD>& v) { return add_scalar(v[0], 0.7); },
        {input(s, 8)});
  check("scale", [](const std::vector<VarD>& v) { return scale(v[0], -1.3); }, {input(s, 9)});
  check("neg", [](const std::vector<VarD>& v) { return neg(v[0]); }, {input(s, 10)});
}

TEST_CASE("nn/gradcheck relu and clamp skip kink points on purpose", "[nn]") {
  VarD x = input({3, 11}, 1);
  x.value()[0] = 0.0;  // exactly on the kink
  x.value()[5] = 0.0;
  const auto r = check("relu", [](const std::vector<VarD>& v) { return relu(v[0]); }, {x});
  CHECK(r.skipped_kinks == 2);
  CHECK(r.checked == 31);
  VarD y = input({3, 11}, 2);
  y.value()[3] = 0.5;    // exactly on the upper edge
  y.value()[4] = -0.25;  // exactly on the lower edge
  const auto rc =
      check("clamp", [](const std::vector<VarD>& v) { return clamp(v[0], -0.25, 0.5); }, {y});
  CHECK(rc.skipped_kinks == 2);
}

TEST_CASE("nn/gradcheck softmax, log_softmax, layer_norm", "[nn]") {
  check("softmax", [](const std::vector<VarD>& v) { return softmax(v[0]); },
        {input({2, 3, 7}, 1, -2, 2)});
  check("log_softmax", [](const std::vector<VarD>& v) { return log_softmax(v[0]); },
        {input({5, 9}, 2, -2, 2)});
  check("layer_norm", [](const std::vector<VarD>& v) { return layer_norm(v[0], v[1], v[2]); },
        {input({3, 2, 7}, 3, -2, 2), input({7}, 4, 0.5, 1.5), input({7}, 5)});
  check("layer_norm C=1 rows",
        [](const std::vector<VarD>& v) { return layer_norm(v[0], v[1], v[2], 1e-2); },
        {input({4, 1}, 6), input({1}, 7), input({1}, 8)});
}

TEST_CASE("nn/gradcheck indexing ops", "[nn]") {
  const std::vector<int64_t> idx = {4, 0, 2, 4, 5, 1, 4};
  check("embedding", [idx](const std::vector<VarD>& v) { return embedding(v[0], idx); },
        {input({6, 5}, 1)});
  check("gather_rows", [idx](const std::vector<VarD>& v) { return gather_rows(v[0], idx); },
        {input({6, 3, 2}, 2)});
  check("scatter_add_rows",
        [idx](const std::vector<VarD>& v) { return scatter_add_rows(v[0], idx, 7); },
        {input({7, 3}, 3)});
  const std::vector<int64_t> pick = {2, 0, 4, 4, 1};
  check("take_along_last",
        [pick](const std::vector<VarD>& v) { return take_along_last(v[0], pick); },
        {input({5, 5}, 4)});
}

TEST_CASE("nn/gradcheck shape ops", "[nn]") {
  for (int64_t axis : {0, 1, -1}) {
    check("concat axis " + std::to_string(axis),
          [axis](const std::vector<VarD>& v) {
            return concat<double>({v[0], v[1], v[2]}, axis);
          },
          {input({2, 3, 4}, 1), input({2, 3, 4}, 2), input({2, 3, 4}, 3)});
  }
  check("concat uneven",
        [](const std::vector<VarD>& v) {
          return concat<double>({v[0], v[1]}, 1);
        },
        {input({3, 2}, 4), input({3, 5}, 5)});
  check("slice", [](const std::vector<VarD>& v) { return slice(v[0], 1, 1, 4); },
        {input({3, 5, 2}, 6)});
  check("reshape",
        [](const std::vector<VarD>& v) {
          return reshape(v[0], {5, -1});
        },
        {input({3, 5, 2}, 7)});
  check("transpose", [](const std::vector<VarD>& v) { return transpose(v[0], 0, 2); },
        {input({3, 5, 2}, 8)});
}

TEST_CASE("nn/gradcheck reductions", "[nn]") {
  check("sum all", [](const std::vector<VarD>& v) { return sum(v[0]); }, {input({3, 5}, 1)});
  check("mean all", [](const std::vector<VarD>& v) { return mean(v[0]); }, {input({3, 5}, 2)});
  for (int64_t axis : {0, 1, 2}) {
    check("sum axis", [axis](const std::vector<VarD>& v) { return sum(v[0], axis, axis == 1); },
          {input({3, 5, 7}, 3)});
    check("mean axis", [axis](const std::vector<VarD>& v) { return mean(v[0], axis); },
          {input({3, 5, 7}, 4)});
    check("max axis", [axis](const std::vector<VarD>& v) { return max(v[0], axis, axis == 2); },
          {input({3, 5, 7}, 5)});
  }
}

TEST_CASE("nn/gradcheck dropout with a fixed mask and a composite expression", "[nn]") {
  check("dropout",
        [](const std::vector<VarD>& v) {
          Rng rng(99);  // same mask in every evaluation
          return dropout(v[0], 0.3, rng);
        },
        {input({4, 9}, 1)});
  // A small 2-layer MLP with layer norm and a log-softmax head: the chain rule across ops.
  check("mlp",
        [](const std::vector<VarD>& v) {
          VarD h = gelu(linear(v[0], v[1], v[2]));
          h = layer_norm(h, v[3], v[4]);
          return log_softmax(linear(h, v[5], v[6]));
        },
        {input({5, 6}, 2), input({7, 6}, 3), input({7}, 4), input({7}, 5, 0.5, 1.5), input({7}, 6),
         input({3, 7}, 7), input({3}, 8)});
}

TEST_CASE("nn/gradcheck detects a wrong gradient", "[nn]") {
  // x * detach(x): the analytic gradient misses one path (x instead of 2x), so the check fails.
  const GradcheckResult r =
      gradcheck([](const std::vector<VarD>& v) { return mul(v[0], detach(v[0])); },
                {input({3, 4}, 1, 0.5, 1)});
  CHECK_FALSE(r.passed);
  CHECK(r.max_error > 0.3);
}
