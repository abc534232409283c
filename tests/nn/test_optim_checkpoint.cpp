// Adam/AdamW against hand-computed updates, learning-rate schedules, and checkpoints: save,
// reload and continue gives bit-identical Adam steps; bad files are rejected with messages.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "nn/checkpoint.h"
#include "nn/ops.h"
#include "nn/optim.h"
#include "test_paths.h"

using namespace gdp::nn;
namespace fs = std::filesystem;

namespace {

// A small regression model registered in a ParameterBuffer (rebuilt identically from a seed).
struct TinyModel {
  ParameterBuffer params;
  Var w1, b1, g, beta, w2;
  explicit TinyModel(uint64_t seed) {
    Rng rng(seed);
    w1 = params.add_uniform("l1.w", {9, 5}, 0.4, rng);
    b1 = params.add_uniform("l1.b", {9}, 0.1, rng);
    g = params.add_constant("ln.w", {9}, 1.f);
    beta = params.add("ln.b", {9});
    w2 = params.add_uniform("l2.w", {3, 9}, 0.3, rng);
  }
  float train_step(Adam& opt, int64_t step) {
    Rng data(1000 + step);  // batch depends only on the step
    Tensor x({11, 5}), y({11, 3});
    for (int64_t i = 0; i < x.numel(); ++i) x[i] = static_cast<float>(data.normal());
    for (int64_t i = 0; i < y.numel(); ++i) y[i] = static_cast<float>(data.normal());
    params.zero_grad();
    Var h = layer_norm(gelu(linear(Var(x), w1, b1)), g, beta);
    Var loss = mean(square(sub(linear(h, w2, Var()), Var(y))));
    backward(loss);
    clip_grad_norm(params, 1.0);
    opt.step();
    return loss.item();
  }
};

std::string temp_path(const std::string& name) {
  const fs::path dir = fs::path(gdp::test::binary_dir()) / "nn_test_tmp";
  fs::create_directories(dir);
  return (dir / name).string();
}

}  // namespace

TEST_CASE("nn/adam matches a hand-computed update, AdamW decays weights", "[nn]") {
  for (bool decoupled : {true, false}) {
    ParameterBuffer params;
    Var p = params.add("p", {3});
    p.value().copy_from(Tensor::from_vector({3}, {1.f, -2.f, 0.5f}));
    AdamConfig cfg;
    cfg.lr = 0.1;
    cfg.weight_decay = 0.01;
    cfg.decoupled = decoupled;
    Adam opt(params, cfg);
    double m[3] = {0, 0, 0}, v[3] = {0, 0, 0}, ref[3] = {1, -2, 0.5};
    for (int t = 1; t <= 3; ++t) {
      const float grads[3] = {0.3f * t, -0.1f, 2.f};
      for (int i = 0; i < 3; ++i) params.grads()[i] = grads[i];
      opt.step();
      for (int i = 0; i < 3; ++i) {
        double gi = grads[i];
        if (!decoupled) gi += 0.01 * ref[i];
        m[i] = 0.9 * m[i] + 0.1 * gi;
        v[i] = 0.999 * v[i] + 0.001 * gi * gi;
        const double mh = m[i] / (1 - std::pow(0.9, t)), vh = v[i] / (1 - std::pow(0.999, t));
        if (decoupled) ref[i] -= 0.1 * 0.01 * ref[i];
        ref[i] -= 0.1 * mh / (std::sqrt(vh) + 1e-8);
      }
    }
    for (int i = 0; i < 3; ++i) CHECK(p.value()[i] == Approx(ref[i]).epsilon(1e-5));
    CHECK(opt.steps() == 3);
  }
}

TEST_CASE("nn/adam trains a small model (loss goes down)", "[nn]") {
  TinyModel model(3);
  AdamConfig cfg;
  cfg.lr = 0.02;
  Adam opt(model.params, cfg);
  // Fit a fixed batch: the loss must drop well below its start.
  Rng data(5);
  Tensor x({16, 5}), y({16, 3});
  for (int64_t i = 0; i < x.numel(); ++i) x[i] = static_cast<float>(data.normal());
  for (int64_t i = 0; i < y.numel(); ++i) y[i] = static_cast<float>(data.normal());
  float first = 0.f, last = 0.f;
  for (int step = 0; step < 200; ++step) {
    model.params.zero_grad();
    Var h = layer_norm(gelu(linear(Var(x), model.w1, model.b1)), model.g, model.beta);
    Var loss = mean(square(sub(linear(h, model.w2, Var()), Var(y))));
    backward(loss);
    opt.step();
    if (step == 0) first = loss.item();
    last = loss.item();
  }
  CHECK(last < 0.5f * first);
}

TEST_CASE("nn/lr schedules", "[nn]") {
  LrSchedule s;
  s.kind = "linear_warmup_cosine";
  s.base_lr = 1.0;
  s.min_lr = 0.1;
  s.warmup_steps = 4;
  s.total_steps = 14;
  CHECK(s.lr_at(0) == Approx(0.25));
  CHECK(s.lr_at(3) == Approx(1.0));
  CHECK(s.lr_at(4) == Approx(1.0));
  CHECK(s.lr_at(9) == Approx(0.55));  // halfway: min + (base-min)/2
  CHECK(s.lr_at(14) == Approx(0.1));
  CHECK(s.lr_at(100) == Approx(0.1));
  s.kind = "step";
  s.step_size = 3;
  s.gamma = 0.5;
  CHECK(s.lr_at(5) == Approx(0.5));
  CHECK(s.lr_at(6) == Approx(0.25));
  s.kind = "linear_warmup_linear_decay";
  CHECK(s.lr_at(9) == Approx(0.55));
  s.kind = "cosine";
  CHECK_THROWS_WITH(s.lr_at(0), Catch::Contains("known: constant"));
}

TEST_CASE("nn/checkpoint save, reload and continue: next Adam steps match bit for bit", "[nn]") {
  const std::string path = temp_path("resume.ckpt");
  AdamConfig cfg;
  cfg.lr = 0.01;
  cfg.weight_decay = 0.001;
  // Run A: 5 steps, checkpoint, 5 more steps.
  TinyModel a(42);
  Adam opt_a(a.params, cfg);
  for (int s = 0; s < 5; ++s) a.train_step(opt_a, s);
  save_checkpoint(path, a.params, &opt_a, 5);
  std::vector<float> losses_a;
  for (int s = 5; s < 10; ++s) losses_a.push_back(a.train_step(opt_a, s));

  // Run B: a differently initialized model, restored from the checkpoint, continues.
  TinyModel b(7);
  Adam opt_b(b.params, cfg);
  const int64_t step = load_checkpoint(path, b.params, &opt_b);
  CHECK(step == 5);
  CHECK(opt_b.steps() == 5);
  std::vector<float> losses_b;
  for (int s = 5; s < 10; ++s) losses_b.push_back(b.train_step(opt_b, s));
  CHECK(losses_a == losses_b);
  const Tensor va = a.params.values(), vb = b.params.values();
  CHECK(std::memcmp(va.data(), vb.data(), sizeof(float) * va.numel()) == 0);
  CHECK(opt_a.m() == opt_b.m());
  CHECK(opt_a.v() == opt_b.v());
  // The atomic write leaves no temp file behind.
  for (const auto& entry : fs::directory_iterator(fs::path(path).parent_path()))
    CHECK(entry.path().filename().string().find(".tmp.") == std::string::npos);
}

TEST_CASE("nn/checkpoint rejects wrong magic, version, shapes and truncation", "[nn]") {
  const std::string path = temp_path("bad.ckpt");
  TinyModel m(1);
  Adam opt(m.params, AdamConfig{});
  save_checkpoint(path, m.params, nullptr, 3);
  std::vector<char> bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto write = [&](const std::string& p, const std::vector<char>& data) {
    std::ofstream out(p, std::ios::binary);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
  };
  TinyModel other(2);
  CHECK(load_checkpoint(path, other.params, nullptr) == 3);
  CHECK_THROWS_WITH(load_checkpoint(path, other.params, &opt),
                    Catch::Contains("no optimizer state"));

  auto bad = bytes;
  bad[0] = 'X';
  write(path + ".magic", bad);
  CHECK_THROWS_WITH(load_checkpoint(path + ".magic", other.params, nullptr),
                    Catch::Contains("wrong magic"));
  bad = bytes;
  bad[8] = 9;  // version field
  write(path + ".version", bad);
  CHECK_THROWS_WITH(load_checkpoint(path + ".version", other.params, nullptr),
                    Catch::Contains("unsupported version 9"));
  bad.assign(bytes.begin(), bytes.end() - 20);
  write(path + ".trunc", bad);
  CHECK_THROWS_WITH(load_checkpoint(path + ".trunc", other.params, nullptr),
                    Catch::Contains("truncated"));

  // A negative Adam step count is rejected before anything is written into the model. The
  // field is found as the only byte that differs between saves at steps 5 and 6.
  {
    const std::vector<float> m0(static_cast<size_t>(m.params.size()), 0.1f), v0(m0.size(), 0.2f);
    std::vector<char> at5, at6;
    for (int64_t t : {5, 6}) {
      opt.set_state(m0, v0, t);
      save_checkpoint(path + ".adam", m.params, &opt, 3);
      std::ifstream in(path + ".adam", std::ios::binary);
      (t == 5 ? at5 : at6).assign(std::istreambuf_iterator<char>(in), {});
    }
    REQUIRE(at5.size() == at6.size());
    size_t field = 0, diffs = 0;
    for (size_t i = 0; i < at5.size(); ++i)
      if (at5[i] != at6[i]) field = i, ++diffs;
    REQUIRE(diffs == 1);
    for (size_t i = field; i < field + 8; ++i) at5[i] = static_cast<char>(0xFF);  // int64 -1
    write(path + ".negstep", at5);
    Adam other_opt(other.params, AdamConfig{});
    const std::vector<float> before = other.params.values().to_vector();
    CHECK_THROWS_WITH(load_checkpoint(path + ".negstep", other.params, &other_opt),
                      Catch::Contains("negative adam step count"));
    CHECK(other.params.values().to_vector() == before);
  }

  ParameterBuffer wrong_shape;
  wrong_shape.add("l1.w", {9, 4});
  wrong_shape.add("l1.b", {9});
  wrong_shape.add("ln.w", {9});
  wrong_shape.add("ln.b", {9});
  wrong_shape.add("l2.w", {3, 9});
  CHECK_THROWS_WITH(load_checkpoint(path, wrong_shape, nullptr),
                    Catch::Contains("'l1.w' has shape (9, 5) in the file, (9, 4) in the model"));
  ParameterBuffer fewer;
  fewer.add("l1.w", {9, 5});
  CHECK_THROWS_WITH(load_checkpoint(path, fewer, nullptr), Catch::Contains("has 5 parameters"));
  CHECK_THROWS_WITH(load_checkpoint(path + ".missing", fewer, nullptr),
                    Catch::Contains("cannot open"));
}
