// Core-op timings at the policy's working size (50,000 rows, width 128): matmul, layer norm and a
// 2-layer MLP, forward and forward+backward, to compare with PyTorch CPU on the same machine.
// Run: build-nncore/bench/bench_nn_core --benchmark_min_time=1
#include <benchmark/benchmark.h>

#include "nn/ops.h"
#include "nn/parameters.h"

using namespace gdp::nn;

namespace {

constexpr int64_t kRows = 50000;
constexpr int64_t kWidth = 128;

Tensor random_tensor(const Shape& s, uint64_t seed) {
  Rng rng(seed);
  Tensor t = Tensor::empty(s);
  for (int64_t i = 0; i < t.numel(); ++i) t[i] = static_cast<float>(rng.normal());
  return t;
}

// x (N, C) @ w (C, C)^T, forward only.
void BM_matmul_forward(benchmark::State& state) {
  Var x(random_tensor({kRows, kWidth}, 1), false), w(random_tensor({kWidth, kWidth}, 2), false);
  NoGradGuard no_grad;
  for (auto _ : state) {
    Var y = matmul(x, w, false, true);
    benchmark::DoNotOptimize(y.value().data());
  }
  state.SetItemsProcessed(state.iterations() * 2 * kRows * kWidth * kWidth);  // flops
}

// Forward + backward of matmul (both inputs need gradients).
void BM_matmul_forward_backward(benchmark::State& state) {
  Var x(random_tensor({kRows, kWidth}, 1), true), w(random_tensor({kWidth, kWidth}, 2), true);
  const Tensor seed = random_tensor({kRows, kWidth}, 3);
  for (auto _ : state) {
    x.zero_grad();
    w.zero_grad();
    Var y = matmul(x, w, false, true);
    Tape::current().backward(y, seed);
    benchmark::DoNotOptimize(w.grad().data());
  }
  state.SetItemsProcessed(state.iterations() * 6 * kRows * kWidth * kWidth);
}

void BM_layer_norm_forward(benchmark::State& state) {
  Var x(random_tensor({kRows, kWidth}, 1), false);
  Var g(Tensor::full({kWidth}, 1.f), false), b(Tensor({kWidth}), false);
  NoGradGuard no_grad;
  for (auto _ : state) {
    Var y = layer_norm(x, g, b);
    benchmark::DoNotOptimize(y.value().data());
  }
  state.SetBytesProcessed(state.iterations() * 2 * kRows * kWidth * sizeof(float));
}

void BM_layer_norm_forward_backward(benchmark::State& state) {
  Var x(random_tensor({kRows, kWidth}, 1), true);
  Var g(Tensor::full({kWidth}, 1.f), true), b(Tensor({kWidth}), true);
  const Tensor seed = random_tensor({kRows, kWidth}, 3);
  for (auto _ : state) {
    x.zero_grad();
    Var y = layer_norm(x, g, b);
    Tape::current().backward(y, seed);
    benchmark::DoNotOptimize(x.grad().data());
  }
}

// 2-layer MLP: y = linear2(gelu(linear1(x))), loss = mean(y^2); params in a ParameterBuffer.
struct Mlp {
  ParameterBuffer params;
  Var w1, b1, w2, b2;
  Mlp() {
    Rng rng(9);
    const double bound = 1.0 / std::sqrt(static_cast<double>(kWidth));
    w1 = params.add_uniform("w1", {kWidth, kWidth}, bound, rng);
    b1 = params.add_uniform("b1", {kWidth}, bound, rng);
    w2 = params.add_uniform("w2", {kWidth, kWidth}, bound, rng);
    b2 = params.add_uniform("b2", {kWidth}, bound, rng);
  }
  Var forward(const Var& x) { return linear(gelu(linear(x, w1, b1)), w2, b2); }
};

void BM_mlp_forward(benchmark::State& state) {
  Mlp mlp;
  Var x(random_tensor({kRows, kWidth}, 1), false);
  NoGradGuard no_grad;
  for (auto _ : state) {
    Var y = mlp.forward(x);
    benchmark::DoNotOptimize(y.value().data());
  }
}

void BM_mlp_forward_backward(benchmark::State& state) {
  Mlp mlp;
  Var x(random_tensor({kRows, kWidth}, 1), false);
  for (auto _ : state) {
    mlp.params.zero_grad();
    Var loss = mean(square(mlp.forward(x)));
    backward(loss);
    benchmark::DoNotOptimize(mlp.params.grads().data());
  }
}

}  // namespace

BENCHMARK(BM_matmul_forward)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_matmul_forward_backward)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_layer_norm_forward)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_layer_norm_forward_backward)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_mlp_forward)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_mlp_forward_backward)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
