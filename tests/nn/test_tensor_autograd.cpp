// Tensor views/copies and tape semantics: accumulation, no_grad, undefined grads, parameter views.
#include <catch2/catch.hpp>

#include "nn/ops.h"
#include "nn/parameters.h"

using namespace gdp::nn;

TEST_CASE("nn/tensor shape, views and copies", "[nn]") {
  Tensor t = Tensor::from_vector({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(t.numel() == 6);
  CHECK(t.dim(-1) == 3);
  CHECK(t.is_contiguous());
  CHECK(t.at({1, 2}) == 6.f);
  Tensor r = t.reshape({3, -1});
  CHECK(r.shape() == Shape{3, 2});
  r[0] = 10.f;  // a view: writes through
  CHECK(t[0] == 10.f);
  Tensor tt = t.transpose_view(0, 1);
  CHECK_FALSE(tt.is_contiguous());
  CHECK(tt.at({2, 1}) == 6.f);
  Tensor c = tt.contiguous();
  CHECK(c.is_contiguous());
  CHECK(c.to_vector() == std::vector<float>{10, 4, 2, 5, 3, 6});
  Tensor cl = t.clone();
  cl[1] = -1.f;
  CHECK(t[1] == 2.f);
  CHECK(t.mat().rows() == 2);
  CHECK(t.mat()(1, 0) == 4.f);
  TensorD d = t.cast<double>();
  CHECK(d[5] == 6.0);
  CHECK(reinterpret_cast<uintptr_t>(Tensor({33}).data()) % 64 == 0);
  CHECK_THROWS_AS(t.reshape({4, 2}), std::invalid_argument);
  CHECK_THROWS_AS(t.at({2, 0}), std::out_of_range);
  CHECK_THROWS_AS(Tensor::from_vector({2, 2}, {1, 2, 3}), std::invalid_argument);
}

TEST_CASE("nn/autograd gradients accumulate across backward calls until zeroed", "[nn]") {
  Var x(Tensor::from_vector({3}, {1, 2, 3}), true);
  for (int rep = 0; rep < 2; ++rep) {
    Var y = sum(mul(x, x));  // dy/dx = 2x
    backward(y);
  }
  CHECK(x.grad().to_vector() == std::vector<float>{4, 8, 12});
  CHECK(Tape::current().size() == 0);  // cleared by backward
  x.zero_grad();
  backward(sum(x));
  CHECK(x.grad().to_vector() == std::vector<float>{1, 1, 1});
}

TEST_CASE("nn/autograd a value used twice gets both contributions", "[nn]") {
  Var x(Tensor::from_vector({2}, {3, -1}), true);
  Var y = add(relu(x), scale(x, 2.f));  // d/dx = [1 + 2, 0 + 2]
  backward(sum(y));
  CHECK(x.grad().to_vector() == std::vector<float>{3, 2});
}

TEST_CASE("nn/autograd no_grad records nothing and inputs without grad get none", "[nn]") {
  Var x(Tensor::from_vector({2}, {1, 2}), true);
  Var c(Tensor::from_vector({2}, {5, 6}), false);
  {
    NoGradGuard guard;
    Var y = mul(x, c);
    CHECK_FALSE(y.requires_grad());
    CHECK(Tape::current().size() == 0);
  }
  CHECK(grad_enabled());
  Var y = mul(x, c);
  CHECK(y.requires_grad());
  CHECK(Tape::current().size() == 1);
  backward(sum(y));
  CHECK(x.grad().to_vector() == std::vector<float>{5, 6});
  CHECK_FALSE(c.grad().defined());
  // A branch that does not reach the loss leaves no gradient and does not fail.
  Var z(Tensor::from_vector({2}, {1, 1}), true);
  Var unused = exp(z);
  Var loss = sum(x);
  backward(loss);
  CHECK_FALSE(z.grad().defined());
  CHECK_THROWS_AS(backward(mul(x, x)), std::invalid_argument);  // not a scalar
  Tape::current().clear();
}

TEST_CASE("nn/autograd seeded backward gives a vector-Jacobian product", "[nn]") {
  Var x(Tensor::from_vector({2, 2}, {1, 2, 3, 4}), true);
  Var y = square(x);
  Tape::current().backward(y, Tensor::from_vector({2, 2}, {1, 0, 0, 2}));
  CHECK(x.grad().to_vector() == std::vector<float>{2, 0, 0, 16});
}

TEST_CASE("nn/parameter buffer: flat arrays, views, growth, zero_grad, clipping", "[nn]") {
  ParameterBuffer params;
  Rng rng(7);
  Var w = params.add_uniform("w", {3, 4}, 0.5, rng);
  Var b = params.add_constant("b", {4}, 1.f);
  CHECK(params.size() == 16);
  CHECK(params.count() == 2);
  // Adding more parameters (storage grows) keeps earlier views valid.
  for (int i = 0; i < 20; ++i) params.add("extra" + std::to_string(i), {5});
  CHECK(params.size() == 116);
  CHECK(params.values()[12] == 1.f);  // b starts at offset 12
  CHECK(w.value().data() == params.values().data());
  CHECK(b.value().data() == params.values().data() + 12);
  for (int64_t i = 0; i < 12; ++i) CHECK(std::abs(w.value()[i]) <= 0.5f);
  CHECK_THROWS_AS(params.add("w", {1}), std::invalid_argument);
  CHECK_THROWS_AS(params.get("nope"), std::out_of_range);

  Var x(Tensor::full({2, 3}, 1.f), false);
  backward(sum(linear(x, transpose(w, 0, 1), b)));  // grads land in the flat buffer
  CHECK(params.grads()[12] == 2.f);                 // db = number of rows
  CHECK(params.grads()[0] == 2.f);
  const double norm = params.grad_norm();
  CHECK(norm == Approx(std::sqrt(12 * 4.0 + 4 * 4.0)));
  const double before = clip_grad_norm(params, 1.0);
  CHECK(before == Approx(norm));
  CHECK(params.grad_norm() == Approx(1.0).epsilon(1e-5));
  params.zero_grad();
  CHECK(params.grad_norm() == 0.0);
}

TEST_CASE("nn/ops reject bad shapes and indices with messages", "[nn]") {
  Var a(Tensor({2, 3}), false), b(Tensor({4, 5}), false);
  CHECK_THROWS_WITH(matmul(a, b), Catch::Contains("inner dims differ"));
  CHECK_THROWS_WITH(add(a, b), Catch::Contains("do not broadcast"));
  CHECK_THROWS_WITH(embedding(b, {0, 4}), Catch::Contains("index[1] = 4"));
  CHECK_THROWS_AS(slice(a, 1, 2, 5), std::out_of_range);
  CHECK_THROWS_AS(concat<float>({a, b}, 0), std::invalid_argument);
  CHECK_THROWS_AS(sum(a, 2), std::out_of_range);
}

TEST_CASE("nn/allocator cache reuses large blocks and still zero-fills", "[nn]") {
  clear_allocator_cache();
  const Shape big = {300, 129};  // 154,800 bytes: above the 64 KiB caching floor
  const float* first = nullptr;
  {
    Tensor t = Tensor::full(big, 3.f);
    first = t.data();
  }
  CHECK(allocator_cached_bytes() >= 300 * 129 * sizeof(float));
  Tensor again(big);  // same size: the cached block comes back, zeroed
  CHECK(again.data() == first);
  CHECK(allocator_cached_bytes() == 0);
  for (int64_t i = 0; i < again.numel(); ++i) REQUIRE(again[i] == 0.f);
  Tensor small({10});  // small blocks bypass the cache
  CHECK(allocator_cached_bytes() == 0);
  clear_allocator_cache();
}
