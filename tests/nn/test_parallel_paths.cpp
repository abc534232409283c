// The OpenMP paths (taken above ~32k elements) against the serial paths: each op runs once on a
// large input and once chunk by chunk on row blocks small enough to stay serial; values and
// gradients (including the per-thread partial sums of broadcast/bias/layer-norm gradients) agree.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "nn/ops.h"

using namespace gdp::nn;

namespace {

using Fn = std::function<Var(const std::vector<Var>&)>;

Tensor random_tensor(const Shape& s, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  Rng rng(seed);
  Tensor t(s);
  for (int64_t i = 0; i < t.numel(); ++i) t[i] = static_cast<float>(rng.uniform(lo, hi));
  return t;
}

Tensor rows_of(const Tensor& t, int64_t r0, int64_t r1) {
  const int64_t row = t.numel() / t.dim(0);
  Shape s = t.shape();
  s[0] = r1 - r0;
  Tensor out(s);
  std::copy(t.data() + r0 * row, t.data() + r1 * row, out.data());
  return out;
}

void expect_close(const std::string& what, const Tensor& got, const Tensor& want) {
  REQUIRE(got.numel() == want.numel());
  double scale = 1.0;
  for (int64_t i = 0; i < want.numel(); ++i) scale = std::max(scale, double(std::abs(want[i])));
  const double err = max_abs_diff(got.reshape(want.shape()), want);
  INFO(what << ": max abs diff " << err << " (scale " << scale << ")");
  CHECK(err <= 2e-5 * scale);
}

// inputs[i] with split[i] are split by rows (output rows follow them); others are shared.
void compare_chunked(const std::string& name, const Fn& f, const std::vector<Tensor>& inputs,
                     const std::vector<bool>& split, int64_t chunk_rows) {
  std::vector<Var> full;
  for (const auto& t : inputs) full.emplace_back(t.clone(), true);
  Var y = f(full);
  const Tensor proj = random_tensor(y.shape(), 77);
  backward(sum(mul(y, Var(proj))));

  const int64_t N = y.dim(0);
  std::vector<Var> shared(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!split[i]) shared[i] = Var(inputs[i].clone(), true);
  Tensor y_chunks(y.shape());
  std::vector<Tensor> split_grads(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    if (split[i]) split_grads[i] = Tensor(inputs[i].shape());
  const int64_t out_row = y.numel() / N;
  for (int64_t r0 = 0; r0 < N; r0 += chunk_rows) {
    const int64_t r1 = std::min(N, r0 + chunk_rows);
    std::vector<Var> part;
    for (size_t i = 0; i < inputs.size(); ++i)
      part.push_back(split[i] ? Var(rows_of(inputs[i], r0, r1), true) : shared[i]);
    Var yc = f(part);
    std::copy(yc.value().data(), yc.value().data() + yc.numel(), y_chunks.data() + r0 * out_row);
    backward(sum(mul(yc, Var(rows_of(proj, r0, r1)))));
    for (size_t i = 0; i < inputs.size(); ++i)
      if (split[i]) {
        const int64_t row = inputs[i].numel() / inputs[i].dim(0);
        std::copy(part[i].grad().data(), part[i].grad().data() + part[i].numel(),
                  split_grads[i].data() + r0 * row);
      }
  }
  expect_close(name + " value", y.value(), y_chunks);
  for (size_t i = 0; i < inputs.size(); ++i)
    expect_close(name + " grad " + std::to_string(i), full[i].grad(),
                 split[i] ? split_grads[i] : shared[i].grad());
}

}  // namespace

TEST_CASE("nn/parallel paths agree with serial chunks", "[nn]") {
  const int64_t N = 2003, C = 129;  // odd sizes, N*C well above the parallel threshold
  const Tensor x = random_tensor({N, C}, 1, -2, 2);
  compare_chunked(
      "add bias", [](const std::vector<Var>& v) { return add(v[0], v[1]); },
      {x, random_tensor({C}, 2)}, {true, false}, 7);
  compare_chunked(
      "mul column", [](const std::vector<Var>& v) { return mul(v[0], v[1]); },
      {x, random_tensor({N, 1}, 3)}, {true, true}, 7);
  compare_chunked(
      "div same shape", [](const std::vector<Var>& v) { return div(v[0], v[1]); },
      {x, random_tensor({N, C}, 4, 0.5, 2)}, {true, true}, 7);
  compare_chunked(
      "layer_norm", [](const std::vector<Var>& v) { return layer_norm(v[0], v[1], v[2]); },
      {x, random_tensor({C}, 5), random_tensor({C}, 6)}, {true, false, false}, 7);
  compare_chunked(
      "linear", [](const std::vector<Var>& v) { return linear(v[0], v[1], v[2]); },
      {x, random_tensor({65, C}, 7), random_tensor({65}, 8)}, {true, false, false}, 7);
  compare_chunked(
      "softmax", [](const std::vector<Var>& v) { return softmax(v[0]); }, {x}, {true}, 7);
  compare_chunked(
      "log_softmax", [](const std::vector<Var>& v) { return log_softmax(v[0]); }, {x}, {true}, 7);
  compare_chunked(
      "gelu tanh sigmoid",
      [](const std::vector<Var>& v) { return gelu(add(tanh(v[0]), sigmoid(v[0]))); }, {x}, {true},
      7);
  compare_chunked(
      "relu exp", [](const std::vector<Var>& v) { return exp(relu(v[0])); }, {x}, {true}, 7);
  compare_chunked(
      "batched matmul", [](const std::vector<Var>& v) { return matmul(v[0], v[1], false, true); },
      {random_tensor({64, 33, 31}, 9), random_tensor({64, 17, 31}, 10)}, {true, true}, 2);
}

TEST_CASE("nn/parallel embedding backward and column sums match a serial reference", "[nn]") {
  const int64_t V = 53, C = 129, N = 3001;
  Rng rng(11);
  std::vector<int64_t> idx(N);
  for (auto& i : idx) i = static_cast<int64_t>(rng.below(V));
  const Tensor table = random_tensor({V, C}, 12);
  const Tensor g = random_tensor({N, C}, 13);
  Var t(table.clone(), true);
  Var y = embedding(t, idx);
  Tape::current().backward(y, g);
  // Serial reference in double.
  std::vector<double> ref(V * C, 0.0);
  for (int64_t i = 0; i < N; ++i)
    for (int64_t c = 0; c < C; ++c) ref[idx[i] * C + c] += g[i * C + c];
  double err = 0.0;
  for (int64_t k = 0; k < V * C; ++k) err = std::max(err, std::abs(ref[k] - t.grad()[k]));
  CHECK(err < 1e-3);
  for (int64_t c = 0; c < C; ++c) CHECK(y.value()[5 * C + c] == table[idx[5] * C + c]);

  // sum over axis 0 of a tall matrix (parallel partial sums) against a double loop.
  Var s = sum(Var(g), 0);
  double serr = 0.0;
  for (int64_t c = 0; c < C; ++c) {
    double acc = 0.0;
    for (int64_t i = 0; i < N; ++i) acc += g[i * C + c];
    serr = std::max(serr, std::abs(acc - s.value()[c]));
  }
  CHECK(serr < 1e-3);
}

TEST_CASE("nn/float ops match double ops", "[nn]") {
  // The float instantiation against the double one (already gradchecked) on a small MLP.
  const Tensor x = random_tensor({9, 6}, 1), w1 = random_tensor({7, 6}, 2),
               b1 = random_tensor({7}, 3), w2 = random_tensor({4, 7}, 4);
  Var xf(x, true), w1f(w1.clone(), true), b1f(b1.clone(), true), w2f(w2.clone(), true);
  VarD xd(x.cast<double>(), true), w1d(w1.cast<double>(), true), b1d(b1.cast<double>(), true),
      w2d(w2.cast<double>(), true);
  Var yf = mean(log_softmax(linear(gelu(linear(xf, w1f, b1f)), w2f, Var())));
  VarD yd = mean(log_softmax(linear(gelu(linear(xd, w1d, b1d)), w2d, VarD())));
  CHECK(yf.item() == Approx(yd.item()).epsilon(1e-5));
  backward(yf);
  backward(yd);
  CHECK(max_abs_diff(w1f.grad().cast<double>(), w1d.grad()) < 1e-5);
  CHECK(max_abs_diff(xf.grad().cast<double>(), xd.grad()) < 1e-5);
  CHECK(max_abs_diff(b1f.grad().cast<double>(), b1d.grad()) < 1e-5);
}
