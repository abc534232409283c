// nn ops on cuda tensors against the same ops on cpu tensors: the same random inputs on both
// devices, forward values and every input gradient compared with |got - ref| <= atol + rtol*|ref|,
// at odd sizes; plus a small composite network (linear -> layer_norm -> gelu -> linear ->
// log_softmax -> loss) forward and backward, tensor round trips and the error of an unported op.
#include "cuda_test_util.h"

#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "nn/graph_ops.h"
#include "nn/ops.h"

namespace nn = gdp::nn;
using gdp::cuda::test::check_close;
using gdp::cuda::test::random_vec;

namespace {

const std::vector<int64_t> kSizes = {1, 7, 33, 127, 1000};
const std::vector<int64_t> kRows = {1, 7, 33, 127};

struct Input {
  nn::Shape shape;
  float lo = -1.0f, hi = 1.0f;
  bool grad = true;
};

using OpFn = std::function<nn::Var(const std::vector<nn::Var>&)>;

// Runs fn on cpu and on cuda with the same inputs and seed gradient; compares the outputs and
// every input gradient.
void compare(const std::string& what, const std::vector<Input>& inputs, const OpFn& fn, std::mt19937& rng,
             float atol = 1e-4f, float rtol = 1e-4f) {
  std::vector<nn::Tensor> host;
  for (const Input& in : inputs)
    host.push_back(nn::Tensor::from_vector(
        in.shape, random_vec(static_cast<std::size_t>(nn::shape_numel(in.shape)), rng, in.lo, in.hi)));
  std::vector<nn::Var> cpu_vars, gpu_vars;
  for (std::size_t i = 0; i < host.size(); ++i) {
    cpu_vars.emplace_back(host[i], inputs[i].grad);
    gpu_vars.emplace_back(host[i].to_device(nn::Device::cuda), inputs[i].grad);
    REQUIRE(gpu_vars.back().value().device() == nn::Device::cuda);
  }
  // One device at a time: a backward sweeps (and clears) the whole tape.
  nn::Var cpu_out = fn(cpu_vars);
  const nn::Tensor seed = nn::Tensor::from_vector(
      cpu_out.shape(), random_vec(static_cast<std::size_t>(cpu_out.numel()), rng));
  nn::Tape::current().backward(cpu_out, seed);
  nn::Var gpu_out = fn(gpu_vars);
  REQUIRE(gpu_out.value().device() == nn::Device::cuda);
  REQUIRE(gpu_out.shape() == cpu_out.shape());
  check_close(gpu_out.value().to_vector(), cpu_out.value().to_vector(), atol, rtol, what + " forward");
  nn::Tape::current().backward(gpu_out, seed);
  for (std::size_t i = 0; i < host.size(); ++i) {
    if (!inputs[i].grad) continue;
    const nn::Tensor& gc = cpu_vars[i].grad();
    const nn::Tensor& gg = gpu_vars[i].grad();
    REQUIRE(gc.defined() == gg.defined());
    if (!gc.defined()) continue;
    REQUIRE(gg.device() == nn::Device::cuda);
    check_close(gg.to_vector(), gc.to_vector(), atol, rtol, what + " grad of input " + std::to_string(i));
  }
}

std::string dims(std::initializer_list<int64_t> d) {
  std::string s;
  for (int64_t v : d) s += (s.empty() ? "" : "x") + std::to_string(v);
  return s;
}

}  // namespace

TEST_CASE("nn/cuda tensors copy to the device and back", "[cuda][nn]") {
  std::mt19937 rng(1);
  for (int64_t n : kSizes) {
    const nn::Tensor h = nn::Tensor::from_vector({n, 3}, random_vec(static_cast<std::size_t>(n) * 3, rng));
    const nn::Tensor d = h.to_device(nn::Device::cuda);
    CHECK(d.device() == nn::Device::cuda);
    CHECK(d.to_device(nn::Device::cuda).data() == d.data());  // already there: no copy
    const nn::Tensor c = d.clone();
    CHECK(c.data() != d.data());
    CHECK(c.cpu().to_vector() == h.to_vector());
    nn::Tensor z(h.shape(), nn::Device::cuda);
    CHECK(z.to_vector() == std::vector<float>(h.numel(), 0.0f));
    z.copy_from(h);
    CHECK(z.to_vector() == h.to_vector());
    z.fill(2.5f);
    CHECK(z.to_vector() == std::vector<float>(h.numel(), 2.5f));
  }
  CHECK(nn::Tensor::full({}, 3.0f).to_device(nn::Device::cuda).item() == 3.0f);
}

TEST_CASE("nn/cuda unported ops throw naming the op", "[cuda][nn]") {
  nn::Var x(nn::Tensor::full({3, 4}, 0.5f).to_device(nn::Device::cuda), true);
  try {
    (void)nn::square(x);
    FAIL("square on a cuda tensor did not throw");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find("square") != std::string::npos);
  }
  try {
    (void)nn::max(x, -1);
    FAIL("max on a cuda tensor did not throw");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find("max") != std::string::npos);
  }
  nn::Var h(nn::Tensor::full({3, 4}, 0.5f), true);
  CHECK_THROWS_AS(nn::add(x, h), std::runtime_error);  // mixed devices
}

TEST_CASE("nn/cuda matmul and linear match cpu", "[cuda][nn]") {
  std::mt19937 rng(2);
  for (int64_t M : kRows)
    for (int64_t K : kSizes)
      for (int64_t P : {int64_t(1), int64_t(7), int64_t(33)}) {
        for (bool ta : {false, true})
          for (bool tb : {false, true}) {
            const nn::Shape as = ta ? nn::Shape{K, M} : nn::Shape{M, K};
            const nn::Shape bs = tb ? nn::Shape{P, K} : nn::Shape{K, P};
            compare("matmul " + dims({M, K, P}) + (ta ? " ta" : "") + (tb ? " tb" : ""), {{as}, {bs}},
                    [ta, tb](const std::vector<nn::Var>& v) { return nn::matmul(v[0], v[1], ta, tb); }, rng,
                    1e-3f, 1e-3f);
          }
        compare("linear " + dims({M, K, P}), {{{M, K}}, {{P, K}}, {{P}}},
                [](const std::vector<nn::Var>& v) { return nn::linear(v[0], v[1], v[2]); }, rng, 1e-3f, 1e-3f);
        compare("linear no bias " + dims({M, K, P}), {{{M, K}}, {{P, K}}},
                [](const std::vector<nn::Var>& v) { return nn::linear(v[0], v[1], nn::Var()); }, rng, 1e-3f,
                1e-3f);
      }
  // Batched (3 leading dims flattened to 6 batches) and flattened-rows forms.
  for (int64_t K : kSizes) {
    compare("batched matmul K=" + std::to_string(K), {{{2, 3, 7, K}}, {{2, 3, K, 33}}},
            [](const std::vector<nn::Var>& v) { return nn::matmul(v[0], v[1]); }, rng, 1e-3f, 1e-3f);
    compare("batched matmul ta tb K=" + std::to_string(K), {{{6, K, 7}}, {{6, 33, K}}},
            [](const std::vector<nn::Var>& v) { return nn::matmul(v[0], v[1], true, true); }, rng, 1e-3f, 1e-3f);
    compare("rows matmul K=" + std::to_string(K), {{{3, 7, K}}, {{K, 33}}},
            [](const std::vector<nn::Var>& v) { return nn::matmul(v[0], v[1]); }, rng, 1e-3f, 1e-3f);
  }
}

TEST_CASE("nn/cuda add sub mul div match cpu", "[cuda][nn]") {
  std::mt19937 rng(3);
  using Bin = nn::Var (*)(const nn::Var&, const nn::Var&);
  const std::vector<std::pair<std::string, Bin>> ops = {
      {"add", &nn::add<float>}, {"sub", &nn::sub<float>}, {"mul", &nn::mul<float>}, {"div", &nn::div<float>}};
  for (const auto& [name, op] : ops)
    for (int64_t N : kRows)
      for (int64_t C : kSizes) {
        const float lo = name == "div" ? 0.5f : -1.0f, hi = name == "div" ? 2.0f : 1.0f;
        auto fn = [op = op](const std::vector<nn::Var>& v) { return op(v[0], v[1]); };
        compare(name + " " + dims({N, C}), {{{N, C}}, {{N, C}, lo, hi}}, fn, rng);
        compare(name + " row " + dims({N, C}), {{{N, C}}, {{C}, lo, hi}}, fn, rng, 1e-3f, 1e-4f);
        compare(name + " row (1,C) " + dims({N, C}), {{{2, N, C}}, {{1, C}, lo, hi}}, fn, rng, 1e-3f, 1e-4f);
      }
}

TEST_CASE("nn/cuda activations exp log match cpu", "[cuda][nn]") {
  std::mt19937 rng(4);
  using Un = nn::Var (*)(const nn::Var&);
  const std::vector<std::pair<std::string, Un>> ops = {
      {"relu", &nn::relu<float>}, {"gelu", &nn::gelu<float>}, {"tanh", &nn::tanh<float>},
      {"sigmoid", &nn::sigmoid<float>}, {"exp", &nn::exp<float>}, {"log", &nn::log<float>}};
  for (const auto& [name, op] : ops)
    for (int64_t N : kRows)
      for (int64_t C : kSizes) {
        const float lo = name == "log" ? 0.5f : -2.0f, hi = name == "log" ? 2.0f : 2.0f;
        compare(name + " " + dims({N, C}), {{{N, C}, lo, hi}},
                [op = op](const std::vector<nn::Var>& v) { return op(v[0]); }, rng);
      }
}

TEST_CASE("nn/cuda softmax log_softmax layer_norm match cpu", "[cuda][nn]") {
  std::mt19937 rng(5);
  for (int64_t N : kRows)
    for (int64_t C : kSizes) {
      compare("softmax " + dims({N, C}), {{{N, C}, -3.0f, 3.0f}},
              [](const std::vector<nn::Var>& v) { return nn::softmax(v[0]); }, rng);
      compare("log_softmax " + dims({N, C}), {{{N, C}, -3.0f, 3.0f}},
              [](const std::vector<nn::Var>& v) { return nn::log_softmax(v[0]); }, rng);
      compare("layer_norm " + dims({N, C}), {{{N, C}}, {{C}}, {{C}}},
              [](const std::vector<nn::Var>& v) { return nn::layer_norm(v[0], v[1], v[2]); }, rng, 1e-3f, 1e-3f);
    }
}

TEST_CASE("nn/cuda sum and mean match cpu", "[cuda][nn]") {
  std::mt19937 rng(6);
  for (int64_t N : kRows)
    for (int64_t C : kSizes) {
      for (bool keepdim : {false, true}) {
        compare("sum last " + dims({N, C}), {{{N, C}}},
                [keepdim](const std::vector<nn::Var>& v) { return nn::sum(v[0], -1, keepdim); }, rng, 1e-3f, 1e-4f);
        compare("mean last " + dims({N, C}), {{{N, C}}},
                [keepdim](const std::vector<nn::Var>& v) { return nn::mean(v[0], 1, keepdim); }, rng, 1e-4f, 1e-4f);
      }
      compare("sum all " + dims({N, C}), {{{N, C}}},
              [](const std::vector<nn::Var>& v) { return nn::sum(v[0]); }, rng, 1e-2f, 1e-4f);
      compare("mean all " + dims({N, C}), {{{N, C}}},
              [](const std::vector<nn::Var>& v) { return nn::mean(v[0]); }, rng, 1e-4f, 1e-4f);
    }
}

TEST_CASE("nn/cuda gather scatter embedding match cpu", "[cuda][nn]") {
  std::mt19937 rng(7);
  for (int64_t R : kRows)
    for (int64_t C : kSizes)
      for (int64_t M : {int64_t(1), int64_t(7), int64_t(127)}) {
        std::uniform_int_distribution<int64_t> pick(0, R - 1);
        std::vector<int64_t> idx(static_cast<std::size_t>(M));
        for (auto& i : idx) i = pick(rng);  // repeats included
        compare("gather_rows " + dims({R, C, M}), {{{R, C}}},
                [idx](const std::vector<nn::Var>& v) { return nn::gather_rows(v[0], idx); }, rng);
        compare("embedding " + dims({R, C, M}), {{{R, C}}},
                [idx](const std::vector<nn::Var>& v) { return nn::embedding(v[0], idx); }, rng);
        compare("scatter_add_rows " + dims({R, C, M}), {{{M, C}}},
                [idx, R](const std::vector<nn::Var>& v) { return nn::scatter_add_rows(v[0], idx, R); }, rng);
      }
}

TEST_CASE("nn/cuda segment mean and max match cpu", "[cuda][nn]") {
  std::mt19937 rng(8);
  for (int64_t N : kRows)
    for (int64_t C : kSizes) {
      // Random edges (some nodes get none); node 0 has none when N > 1.
      const int32_t n = static_cast<int32_t>(N);
      std::vector<int32_t> src, dst;
      std::uniform_int_distribution<int32_t> pick(0, n - 1);
      for (int32_t e = 0; e < 3 * n; ++e) {
        const int32_t s = pick(rng), d = pick(rng);
        if (n > 1 && (s == 0 || d == 0)) continue;
        src.push_back(s);
        dst.push_back(d);
      }
      auto adj = nn::make_adjacency(n, src, dst);
      for (nn::EdgeDir dir : {nn::EdgeDir::in, nn::EdgeDir::out}) {
        const std::string d = dir == nn::EdgeDir::in ? " in " : " out ";
        compare("segment_mean" + d + dims({N, C}), {{{N, C}}},
                [adj, dir](const std::vector<nn::Var>& v) { return nn::segment_mean(v[0], adj, dir); }, rng);
        compare("segment_max" + d + dims({N, C}), {{{N, C}}},
                [adj, dir](const std::vector<nn::Var>& v) { return nn::segment_max(v[0], adj, dir); }, rng);
      }
    }
}

TEST_CASE("nn/cuda composite network forward and backward match cpu", "[cuda][nn]") {
  std::mt19937 rng(9);
  const int64_t N = 33, IN = 7, H = 127, OUT = 10;
  std::vector<float> target(static_cast<std::size_t>(N * OUT), 0.0f);
  for (int64_t i = 0; i < N; ++i) target[static_cast<std::size_t>(i * OUT + (i * 7) % OUT)] = -1.0f;
  const nn::Tensor t = nn::Tensor::from_vector({N, OUT}, target);
  // inputs: x, w1, b1, ln_w, ln_b, w2, b2, target (no grad)
  compare("composite", {{{N, IN}}, {{H, IN}}, {{H}}, {{H}, 0.5f, 1.5f}, {{H}}, {{OUT, H}}, {{OUT}}, {{N, OUT}, 0.0f, 0.0f, false}},
          [t](const std::vector<nn::Var>& v) {
            const nn::Var tgt(v[7].value().device() == nn::Device::cuda ? t.to_device(nn::Device::cuda) : t);
            nn::Var h = nn::linear(v[0], v[1], v[2]);
            h = nn::gelu(nn::layer_norm(h, v[3], v[4]));
            const nn::Var logp = nn::log_softmax(nn::linear(h, v[5], v[6]));
            return nn::mean(nn::sum(nn::mul(logp, tgt), -1));  // mean negative log-likelihood
          },
          rng, 1e-4f, 1e-3f);
}
