// nn ops on cuda tensors against the same ops on cpu tensors: the same random inputs on both
// devices, forward values and every input gradient compared with |got - ref| <= atol + rtol*|ref|,
// at odd sizes; plus a small composite network (linear -> layer_norm -> gelu -> linear ->
// log_softmax -> loss) forward and backward, tensor round trips and the error of an unported op.
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda_test_util.h"
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
// every input gradient. Each input's gradient starts from the same random values on both devices,
// so a backward that overwrites instead of accumulating shows.
void compare(const std::string& what, const std::vector<Input>& inputs, const OpFn& fn,
             std::mt19937& rng, float atol = 1e-4f, float rtol = 1e-4f) {
  std::vector<nn::Tensor> host;
  for (const Input& in : inputs)
    host.push_back(nn::Tensor::from_vector(
        in.shape,
        random_vec(static_cast<std::size_t>(nn::shape_numel(in.shape)), rng, in.lo, in.hi)));
  std::vector<nn::Var> cpu_vars, gpu_vars;
  for (std::size_t i = 0; i < host.size(); ++i) {
    cpu_vars.emplace_back(host[i], inputs[i].grad);
    gpu_vars.emplace_back(host[i].to_device(nn::Device::cuda), inputs[i].grad);
    REQUIRE(gpu_vars.back().value().device() == nn::Device::cuda);
    if (inputs[i].grad && host[i].numel() > 0) {
      const nn::Tensor start = nn::Tensor::from_vector(
          host[i].shape(), random_vec(static_cast<std::size_t>(host[i].numel()), rng));
      cpu_vars.back().grad_buffer().copy_from(start);
      gpu_vars.back().grad_buffer().copy_from(start.to_device(nn::Device::cuda));
    }
  }
  // One device at a time: a backward sweeps (and clears) the whole tape.
  nn::Var cpu_out = fn(cpu_vars);
  const nn::Tensor seed = nn::Tensor::from_vector(
      cpu_out.shape(), random_vec(static_cast<std::size_t>(cpu_out.numel()), rng));
  nn::Tape::current().backward(cpu_out, seed);
  nn::Var gpu_out = fn(gpu_vars);
  REQUIRE(gpu_out.value().device() == nn::Device::cuda);
  REQUIRE(gpu_out.shape() == cpu_out.shape());
  check_close(gpu_out.value().to_vector(), cpu_out.value().to_vector(), atol, rtol,
              what + " forward");
  nn::Tape::current().backward(gpu_out, seed);
  for (std::size_t i = 0; i < host.size(); ++i) {
    if (!inputs[i].grad) continue;
    const nn::Tensor& gc = cpu_vars[i].grad();
    const nn::Tensor& gg = gpu_vars[i].grad();
    REQUIRE(gc.defined() == gg.defined());
    if (!gc.defined()) continue;
    REQUIRE(gg.device() == nn::Device::cuda);
    check_close(gg.to_vector(), gc.to_vector(), atol, rtol,
                what + " grad of input " + std::to_string(i));
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
    const nn::Tensor h =
        nn::Tensor::from_vector({n, 3}, random_vec(static_cast<std::size_t>(n) * 3, rng));
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

TEST_CASE("nn/cuda mixed devices throw naming the op", "[cuda][nn]") {
  nn::Var x(nn::Tensor::full({3, 4}, 0.5f).to_device(nn::Device::cuda), true);
  nn::Var h(nn::Tensor::full({3, 4}, 0.5f), true);
  auto throws_naming = [](const std::string& op, const std::function<void()>& fn) {
    try {
      fn();
      FAIL(op + " on mixed devices did not throw");
    } catch (const std::runtime_error& e) {
      CHECK(std::string(e.what()).find(op) != std::string::npos);
    }
  };
  throws_naming("add", [&] { (void)nn::add(x, h); });
  throws_naming("concat", [&] { (void)nn::concat<float>({x, h}, 0); });
  throws_naming("linear", [&] { (void)nn::linear(x, h, nn::Var()); });
  throws_naming("reshape", [&] {  // a strided device view has no copy kernel
    (void)nn::reshape(nn::Var(x.value().transpose_view(0, 1)), {12});
  });
  throws_naming("layer_norm", [&] {
    (void)nn::layer_norm(x, nn::Var(nn::Tensor::full({4}, 1.0f)),
                         nn::Var(nn::Tensor::full({4}, 0.0f)));
  });
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
            compare(
                "matmul " + dims({M, K, P}) + (ta ? " ta" : "") + (tb ? " tb" : ""), {{as}, {bs}},
                [ta, tb](const std::vector<nn::Var>& v) { return nn::matmul(v[0], v[1], ta, tb); },
                rng, 1e-3f, 1e-3f);
          }
        compare(
            "linear " + dims({M, K, P}), {{{M, K}}, {{P, K}}, {{P}}},
            [](const std::vector<nn::Var>& v) { return nn::linear(v[0], v[1], v[2]); }, rng, 1e-3f,
            1e-3f);
        compare(
            "linear no bias " + dims({M, K, P}), {{{M, K}}, {{P, K}}},
            [](const std::vector<nn::Var>& v) { return nn::linear(v[0], v[1], nn::Var()); }, rng,
            1e-3f, 1e-3f);
      }
  // Batched (3 leading dims flattened to 6 batches) and flattened-rows forms.
  for (int64_t K : kSizes) {
    compare(
        "batched matmul K=" + std::to_string(K), {{{2, 3, 7, K}}, {{2, 3, K, 33}}},
        [](const std::vector<nn::Var>& v) { return nn::matmul(v[0], v[1]); }, rng, 1e-3f, 1e-3f);
    compare(
        "batched matmul ta tb K=" + std::to_string(K), {{{6, K, 7}}, {{6, 33, K}}},
        [](const std::vector<nn::Var>& v) { return nn::matmul(v[0], v[1], true, true); }, rng,
        1e-3f, 1e-3f);
    compare(
        "rows matmul K=" + std::to_string(K), {{{3, 7, K}}, {{K, 33}}},
        [](const std::vector<nn::Var>& v) { return nn::matmul(v[0], v[1]); }, rng, 1e-3f, 1e-3f);
  }
}

TEST_CASE("nn/cuda add sub mul div match cpu", "[cuda][nn]") {
  std::mt19937 rng(3);
  using Bin = nn::Var (*)(const nn::Var&, const nn::Var&);
  const std::vector<std::pair<std::string, Bin>> ops = {{"add", &nn::add<float>},
                                                        {"sub", &nn::sub<float>},
                                                        {"mul", &nn::mul<float>},
                                                        {"div", &nn::div<float>}};
  for (const auto& [name, op] : ops)
    for (int64_t N : kRows)
      for (int64_t C : kSizes) {
        const float lo = name == "div" ? 0.5f : -1.0f, hi = name == "div" ? 2.0f : 1.0f;
        auto fn = [op = op](const std::vector<nn::Var>& v) { return op(v[0], v[1]); };
        compare(name + " " + dims({N, C}), {{{N, C}}, {{N, C}, lo, hi}}, fn, rng);
        compare(name + " row " + dims({N, C}), {{{N, C}}, {{C}, lo, hi}}, fn, rng, 1e-3f, 1e-4f);
        compare(name + " row (1,C) " + dims({N, C}), {{{2, N, C}}, {{1, C}, lo, hi}}, fn, rng,
                1e-3f, 1e-4f);
      }
}

TEST_CASE("nn/cuda activations exp log match cpu", "[cuda][nn]") {
  std::mt19937 rng(4);
  using Un = nn::Var (*)(const nn::Var&);
  const std::vector<std::pair<std::string, Un>> ops = {
      {"relu", &nn::relu<float>},       {"gelu", &nn::gelu<float>}, {"tanh", &nn::tanh<float>},
      {"sigmoid", &nn::sigmoid<float>}, {"exp", &nn::exp<float>},   {"log", &nn::log<float>}};
  for (const auto& [name, op] : ops)
    for (int64_t N : kRows)
      for (int64_t C : kSizes) {
        const float lo = name == "log" ? 0.5f : -2.0f, hi = name == "log" ? 2.0f : 2.0f;
        compare(
            name + " " + dims({N, C}), {{{N, C}, lo, hi}},
            [op = op](const std::vector<nn::Var>& v) { return op(v[0]); }, rng);
      }
}

TEST_CASE("nn/cuda softmax log_softmax layer_norm match cpu", "[cuda][nn]") {
  std::mt19937 rng(5);
  for (int64_t N : kRows)
    for (int64_t C : kSizes) {
      compare(
          "softmax " + dims({N, C}), {{{N, C}, -3.0f, 3.0f}},
          [](const std::vector<nn::Var>& v) { return nn::softmax(v[0]); }, rng);
      compare(
          "log_softmax " + dims({N, C}), {{{N, C}, -3.0f, 3.0f}},
          [](const std::vector<nn::Var>& v) { return nn::log_softmax(v[0]); }, rng);
      compare(
          "layer_norm " + dims({N, C}), {{{N, C}}, {{C}}, {{C}}},
          [](const std::vector<nn::Var>& v) { return nn::layer_norm(v[0], v[1], v[2]); }, rng,
          1e-3f, 1e-3f);
    }
}

TEST_CASE("nn/cuda sum and mean match cpu", "[cuda][nn]") {
  std::mt19937 rng(6);
  for (int64_t N : kRows)
    for (int64_t C : kSizes) {
      for (bool keepdim : {false, true}) {
        compare(
            "sum last " + dims({N, C}), {{{N, C}}},
            [keepdim](const std::vector<nn::Var>& v) { return nn::sum(v[0], -1, keepdim); }, rng,
            1e-3f, 1e-4f);
        compare(
            "mean last " + dims({N, C}), {{{N, C}}},
            [keepdim](const std::vector<nn::Var>& v) { return nn::mean(v[0], 1, keepdim); }, rng,
            1e-4f, 1e-4f);
      }
      compare(
          "sum all " + dims({N, C}), {{{N, C}}},
          [](const std::vector<nn::Var>& v) { return nn::sum(v[0]); }, rng, 1e-2f, 1e-4f);
      compare(
          "mean all " + dims({N, C}), {{{N, C}}},
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
        compare(
            "gather_rows " + dims({R, C, M}), {{{R, C}}},
            [idx](const std::vector<nn::Var>& v) { return nn::gather_rows(v[0], idx); }, rng);
        compare(
            "embedding " + dims({R, C, M}), {{{R, C}}},
            [idx](const std::vector<nn::Var>& v) { return nn::embedding(v[0], idx); }, rng);
        compare(
            "scatter_add_rows " + dims({R, C, M}), {{{M, C}}},
            [idx, R](const std::vector<nn::Var>& v) { return nn::scatter_add_rows(v[0], idx, R); },
            rng);
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
        compare(
            "segment_mean" + d + dims({N, C}), {{{N, C}}},
            [adj, dir](const std::vector<nn::Var>& v) { return nn::segment_mean(v[0], adj, dir); },
            rng);
        compare(
            "segment_max" + d + dims({N, C}), {{{N, C}}},
            [adj, dir](const std::vector<nn::Var>& v) { return nn::segment_max(v[0], adj, dir); },
            rng);
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
  compare(
      "composite",
      {{{N, IN}},
       {{H, IN}},
       {{H}},
       {{H}, 0.5f, 1.5f},
       {{H}},
       {{OUT, H}},
       {{OUT}},
       {{N, OUT}, 0.0f, 0.0f, false}},
      [t](const std::vector<nn::Var>& v) {
        const nn::Var tgt(v[7].value().device() == nn::Device::cuda ? t.to_device(nn::Device::cuda)
                                                                    : t);
        nn::Var h = nn::linear(v[0], v[1], v[2]);
        h = nn::gelu(nn::layer_norm(h, v[3], v[4]));
        const nn::Var logp = nn::log_softmax(nn::linear(h, v[5], v[6]));
        return nn::mean(nn::sum(nn::mul(logp, tgt), -1));  // mean negative log-likelihood
      },
      rng, 1e-4f, 1e-3f);
}

TEST_CASE("nn/cuda general broadcasting, minimum and maximum match cpu", "[cuda][nn]") {
  std::mt19937 rng(10);
  using Bin = nn::Var (*)(const nn::Var&, const nn::Var&);
  const std::vector<std::pair<std::string, Bin>> ops = {
      {"add", &nn::add<float>}, {"sub", &nn::sub<float>},         {"mul", &nn::mul<float>},
      {"div", &nn::div<float>}, {"minimum", &nn::minimum<float>}, {"maximum", &nn::maximum<float>}};
  for (const auto& [name, op] : ops)
    for (int64_t N : kRows)
      for (int64_t C : {int64_t(1), int64_t(7), int64_t(33)}) {
        const float lo = name == "div" ? 0.5f : -1.0f, hi = name == "div" ? 2.0f : 1.0f;
        auto fn = [op = op](const std::vector<nn::Var>& v) { return op(v[0], v[1]); };
        compare(name + " " + dims({N, C}), {{{N, C}}, {{N, C}, lo, hi}}, fn, rng);
        compare(name + " row " + dims({N, C}), {{{N, C}}, {{C}, lo, hi}}, fn, rng, 1e-3f, 1e-4f);
        compare(name + " column " + dims({N, C}), {{{N, C}}, {{N, 1}, lo, hi}}, fn, rng, 1e-3f,
                1e-4f);
        compare(name + " row a " + dims({N, C}), {{{C}, lo, hi}, {{N, C}, lo, hi}}, fn, rng, 1e-3f,
                1e-4f);
        compare(name + " outer " + dims({N, C}), {{{N, 1, C}}, {{3, 1}, lo, hi}}, fn, rng, 1e-3f,
                1e-4f);
        compare(name + " scalar " + dims({N, C}), {{{N, C}}, {{}, lo, hi}}, fn, rng, 1e-3f, 1e-4f);
      }
  // Ties (|x| <= 0.5 equals its clamp): the gradient goes to a on both devices.
  compare(
      "minimum ties", {{{33, 7}}},
      [](const std::vector<nn::Var>& v) {
        return nn::minimum(v[0], nn::detach(nn::clamp(v[0], -0.5f, 0.5f)));
      },
      rng);
  compare(
      "maximum ties", {{{33, 7}}},
      [](const std::vector<nn::Var>& v) {
        return nn::maximum(nn::detach(nn::clamp(v[0], -0.5f, 0.5f)), v[0]);
      },
      rng);
}

TEST_CASE("nn/cuda parametrised maps and dropout match cpu", "[cuda][nn]") {
  std::mt19937 rng(11);
  for (int64_t N : kRows)
    for (int64_t C : kSizes) {
      const std::string d = " " + dims({N, C});
      compare(
          "add_scalar" + d, {{{N, C}}},
          [](const std::vector<nn::Var>& v) { return nn::add_scalar(v[0], 0.25f); }, rng);
      compare(
          "scale" + d, {{{N, C}}},
          [](const std::vector<nn::Var>& v) { return nn::scale(v[0], -1.5f); }, rng);
      compare(
          "neg" + d, {{{N, C}}}, [](const std::vector<nn::Var>& v) { return nn::neg(v[0]); }, rng);
      compare(
          "square" + d, {{{N, C}}}, [](const std::vector<nn::Var>& v) { return nn::square(v[0]); },
          rng);
      compare(
          "sqrt" + d, {{{N, C}, 0.25f, 4.0f}},
          [](const std::vector<nn::Var>& v) { return nn::sqrt(v[0]); }, rng);
      compare(
          "clamp" + d, {{{N, C}}},
          [](const std::vector<nn::Var>& v) { return nn::clamp(v[0], -0.3f, 0.6f); }, rng);
      // The mask is drawn from the same seeded stream on both devices.
      compare(
          "dropout" + d, {{{N, C}}},
          [](const std::vector<nn::Var>& v) {
            nn::Rng r(42);
            return nn::dropout(v[0], 0.3, r);
          },
          rng);
    }
}

TEST_CASE("nn/cuda reductions over any axis match cpu", "[cuda][nn]") {
  std::mt19937 rng(12);
  for (const nn::Shape& shape :
       {nn::Shape{7}, nn::Shape{33, 7}, nn::Shape{3, 7, 5}, nn::Shape{2, 3, 1, 5}})
    for (int64_t axis = 0; axis < static_cast<int64_t>(shape.size()); ++axis)
      for (bool keepdim : {false, true}) {
        std::string d = "axis " + std::to_string(axis) + (keepdim ? " keepdim" : "") + " of rank " +
                        std::to_string(shape.size());
        compare(
            "sum " + d, {{shape}},
            [axis, keepdim](const std::vector<nn::Var>& v) { return nn::sum(v[0], axis, keepdim); },
            rng);
        compare(
            "mean " + d, {{shape}},
            [axis, keepdim](const std::vector<nn::Var>& v) {
              return nn::mean(v[0], axis, keepdim);
            },
            rng);
        compare(
            "max " + d, {{shape}},
            [axis, keepdim](const std::vector<nn::Var>& v) { return nn::max(v[0], axis, keepdim); },
            rng);
      }
}

TEST_CASE("nn/cuda shape ops match cpu", "[cuda][nn]") {
  std::mt19937 rng(13);
  for (int64_t axis : {0, 1, 2}) {
    const std::string d = " axis " + std::to_string(axis);
    nn::Shape a{3, 7, 5}, b{3, 7, 5}, c{3, 7, 5};
    a[axis] = 1;
    b[axis] = 4;
    c[axis] = 2;
    compare(
        "concat" + d, {{a}, {b}, {c}},
        [axis](const std::vector<nn::Var>& v) {
          return nn::concat<float>({v[0], v[1], v[2]}, axis);
        },
        rng);
    compare(
        "concat repeated part" + d, {{b}},
        [axis](const std::vector<nn::Var>& v) {
          return nn::concat<float>({v[0], v[0]}, axis);
        },
        rng);
    compare(
        "slice" + d, {{{5, 6, 7}}},
        [axis](const std::vector<nn::Var>& v) { return nn::slice(v[0], axis, 1, 4); }, rng);
    compare(
        "empty slice" + d, {{{5, 6, 7}}},
        [axis](const std::vector<nn::Var>& v) { return nn::slice(v[0], axis, 2, 2); }, rng);
  }
  compare(
      "reshape", {{{6, 35}}},
      [](const std::vector<nn::Var>& v) {
        return nn::mul(nn::reshape(v[0], {5, -1, 7}), nn::reshape(v[0], {5, 6, 7}));
      },
      rng);
  for (int64_t a0 = 0; a0 < 4; ++a0)
    for (int64_t a1 = 0; a1 < 4; ++a1)
      compare(
          "transpose " + std::to_string(a0) + "," + std::to_string(a1), {{{2, 3, 5, 7}}},
          [a0, a1](const std::vector<nn::Var>& v) { return nn::transpose(v[0], a0, a1); }, rng);
}

TEST_CASE("nn/cuda take_along_last and categorical ops match cpu", "[cuda][nn]") {
  std::mt19937 rng(14);
  for (int64_t N : kRows)
    for (int64_t A : {int64_t(1), int64_t(2), int64_t(8), int64_t(33)}) {
      std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(A) - 1);
      std::vector<int32_t> actions(static_cast<std::size_t>(N));
      for (auto& a : actions) a = pick(rng);
      const std::vector<int64_t> idx(actions.begin(), actions.end());
      const std::string d = " " + dims({N, A});
      compare(
          "take_along_last" + d, {{{N, A}}},
          [idx](const std::vector<nn::Var>& v) { return nn::take_along_last(v[0], idx); }, rng);
      compare(
          "categorical_log_prob" + d, {{{N, A}, -3.0f, 3.0f}},
          [actions](const std::vector<nn::Var>& v) {
            return nn::categorical_log_prob(v[0], actions);
          },
          rng);
      compare(
          "categorical_entropy" + d, {{{N, A}, -3.0f, 3.0f}},
          [](const std::vector<nn::Var>& v) { return nn::categorical_entropy(v[0]); }, rng);
    }
}

TEST_CASE("nn/cuda fused GraphSAGE layer matches cpu", "[cuda][nn]") {
  std::mt19937 rng(15);
  for (int32_t n : {1, 7, 127})
    for (int64_t C : {int64_t(3), int64_t(33)}) {
      std::vector<int32_t> src, dst;
      std::uniform_int_distribution<int32_t> pick(0, n - 1);
      for (int32_t e = 0; e < 2 * n; ++e) {
        src.push_back(pick(rng));
        dst.push_back(pick(rng));
      }
      auto adj = nn::make_adjacency(n, src, dst);
      for (bool act : {false, true})
        compare(
            "sage_layer " + dims({n, C}) + (act ? " relu" : ""), {{{n, C}}, {{17, 3 * C}}, {{17}}},
            [adj, act](const std::vector<nn::Var>& v) {
              return nn::sage_layer(v[0], v[1], v[2], adj, act);
            },
            rng, 1e-4f, 1e-3f);
    }
}

TEST_CASE("nn/cuda relative attention matches cpu", "[cuda][nn]") {
  std::mt19937 rng(16);
  struct Case {
    int32_t S, M, H, Dh;
  };
  for (const Case& c : {Case{1, 0, 1, 2}, Case{5, 0, 2, 3}, Case{5, 3, 2, 3}, Case{33, 17, 4, 8},
                        Case{70, 64, 2, 32}})
    for (bool causal : {true, false}) {
      nn::RelAttentionDims d{c.S, c.M, c.H, c.Dh, causal};
      const int64_t D = d.D();
      compare(
          "rel_attention S=" + std::to_string(c.S) + " M=" + std::to_string(c.M) + " H=" +
              std::to_string(c.H) + " Dh=" + std::to_string(c.Dh) + (causal ? " causal" : " full"),
          {{{d.S, D}}, {{d.K(), D}}, {{d.K(), D}}, {{d.P(), D}}, {{D}}, {{D}}},
          [d](const std::vector<nn::Var>& v) {
            return nn::rel_attention(v[0], v[1], v[2], v[3], v[4], v[5], d);
          },
          rng, 1e-4f, 1e-3f);
    }
}

TEST_CASE("nn/cuda an input used twice gets both gradients", "[cuda][nn]") {
  std::mt19937 rng(17);
  auto one = [](nn::Var (*f)(const nn::Var&)) {
    return [f](const std::vector<nn::Var>& v) { return f(v[0]); };
  };
  compare("mul(x, x)", {{{7, 33}}}, one([](const nn::Var& x) { return nn::mul(x, x); }), rng);
  compare("div(x, x)", {{{7, 33}, 0.5f, 2.0f}}, one([](const nn::Var& x) { return nn::div(x, x); }),
          rng);
  compare("maximum(x, x)", {{{7, 33}}}, one([](const nn::Var& x) { return nn::maximum(x, x); }),
          rng);
  compare("matmul(x, x^T)", {{{7, 33}}},
          one([](const nn::Var& x) { return nn::matmul(x, x, false, true); }), rng, 1e-3f, 1e-3f);
  compare("concat(x, x)", {{{7, 33}}}, one([](const nn::Var& x) {
            return nn::concat<float>({x, x}, 1);
          }),
          rng);
  compare(
      "layer_norm(x, w, w)", {{{7, 33}}, {{33}}},
      [](const std::vector<nn::Var>& v) { return nn::layer_norm(v[0], v[1], v[1]); }, rng, 1e-3f,
      1e-3f);
  for (bool causal : {true, false}) {
    const nn::RelAttentionDims d{9, 0, 2, 4, causal};  // M = 0: q, k and v share a shape
    compare(
        std::string("rel_attention(q, q, q, rk, u, u)") + (causal ? " causal" : " full"),
        {{{d.S, d.D()}}, {{d.P(), d.D()}}, {{d.D()}}},
        [d](const std::vector<nn::Var>& v) {
          return nn::rel_attention(v[0], v[0], v[0], v[1], v[2], v[2], d);
        },
        rng, 1e-4f, 1e-3f);
  }
}

TEST_CASE("nn/cuda zero-size tensors", "[cuda][nn]") {
  std::mt19937 rng(18);
  compare(
      "add (0,7)", {{{0, 7}}, {{0, 7}}},
      [](const std::vector<nn::Var>& v) { return nn::add(v[0], v[1]); }, rng);
  compare(
      "add row (0,7)", {{{0, 7}}, {{7}}},
      [](const std::vector<nn::Var>& v) { return nn::add(v[0], v[1]); }, rng);
  compare(
      "matmul (0,5)(5,3)", {{{0, 5}}, {{5, 3}}},
      [](const std::vector<nn::Var>& v) { return nn::matmul(v[0], v[1]); }, rng);
  compare(
      "matmul (4,0)(0,3)", {{{4, 0}}, {{0, 3}}},
      [](const std::vector<nn::Var>& v) { return nn::matmul(v[0], v[1]); }, rng);
  compare(
      "softmax (0,7)", {{{0, 7}}}, [](const std::vector<nn::Var>& v) { return nn::softmax(v[0]); },
      rng);
  compare(
      "sum last (0,7)", {{{0, 7}}}, [](const std::vector<nn::Var>& v) { return nn::sum(v[0], -1); },
      rng);
  compare(
      "sum rows (0,7)", {{{0, 7}}}, [](const std::vector<nn::Var>& v) { return nn::sum(v[0], 0); },
      rng);
  compare(
      "concat with an empty part", {{{0, 7}}, {{3, 7}}},
      [](const std::vector<nn::Var>& v) {
        return nn::concat<float>({v[0], v[1]}, 0);
      },
      rng);
  compare(
      "gather no rows", {{{5, 7}}},
      [](const std::vector<nn::Var>& v) { return nn::gather_rows(v[0], {}); }, rng);
  compare(
      "transpose (0,3,2)", {{{0, 3, 2}}},
      [](const std::vector<nn::Var>& v) { return nn::transpose(v[0], 0, 2); }, rng);
}
