// The policy-sized network on the device, end to end: the same model (GraphSAGE encoder ->
// superposition -> Transformer-XL -> logits -> categorical log-prob and entropy) built twice from
// one seed, one copy moved to cuda with ParameterBuffer::to_device, must give the cpu copy's loss,
// parameter gradients, clipped norm and Adam updates; a checkpoint written from the device reloads
// into the cpu model bit for bit.
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "nn/checkpoint.h"
#include "nn/graph_ops.h"
#include "nn/ops.h"
#include "nn/optim.h"
#include "nn/sage.h"
#include "nn/superposition.h"
#include "nn/transformer_xl.h"

namespace nn = gdp::nn;
using gdp::cuda::test::check_close;

namespace {

constexpr int32_t kNodes = 45, kFeatures = 6, kWidth = 16, kActions = 5;

struct Policy {
  nn::Rng r_sage, r_film, r_xl, r_head;  // before the modules they initialise
  nn::ParameterBuffer params;
  nn::SageEncoder sage;
  nn::Superposition film;
  nn::TransformerXL xl;
  nn::Var head_w, head_b;
  explicit Policy(uint64_t seed)
      : r_sage(seed * 10 + 1),
        r_film(seed * 10 + 2),
        r_xl(seed * 10 + 3),
        r_head(seed * 10 + 4),
        sage(params, "sage", nn::SageConfig{kFeatures, kWidth, 2, true}, r_sage),
        film(params, "film", nn::SuperpositionConfig{kWidth, 8, 2}, r_film),
        xl(params, "xl", nn::TransformerXLConfig{kWidth, 2, 2, 24, 16, 16, false, 1e-5}, r_xl),
        head_w(params.add_uniform("head.w", {kActions, kWidth}, 0.3, r_head)),
        head_b(params.add_uniform("head.b", {kActions}, 0.3, r_head)) {}
  // Mean of -(log-prob * advantage) - 0.01 entropy over all nodes (a PPO-like scalar).
  nn::Var loss(const nn::Tensor& features, const std::shared_ptr<const nn::Adjacency>& adj,
               const std::vector<int32_t>& actions, const nn::Tensor& advantage) const {
    const nn::Device d = params.device();
    const nn::Var x(features.to_device(d)), adv(advantage.to_device(d));
    const nn::Var h = sage.forward(x, adj);
    const nn::Var o = xl.forward(h, film.forward(h));
    const nn::Var logits = nn::linear(o, head_w, head_b);
    const nn::Var pg = nn::mul(nn::categorical_log_prob(logits, actions), adv);
    return nn::sub(nn::neg(nn::mean(pg)),
                   nn::scale(nn::mean(nn::categorical_entropy(logits)), 0.01f));
  }
};

std::vector<float> values_of(const nn::ParameterBuffer& p) { return p.values().to_vector(); }

}  // namespace

TEST_CASE("nn/cuda policy network trains like the cpu one", "[cuda][nn]") {
  std::mt19937 rng(21);
  std::vector<int32_t> src, dst, actions(kNodes);
  std::uniform_int_distribution<int32_t> node(0, kNodes - 1), act(0, kActions - 1);
  for (int e = 0; e < 2 * kNodes; ++e) {
    src.push_back(node(rng));
    dst.push_back(node(rng));
  }
  for (auto& a : actions) a = act(rng);
  const auto adj = nn::make_adjacency(kNodes, src, dst);
  const nn::Tensor features = nn::Tensor::from_vector(
      {kNodes, kFeatures}, gdp::cuda::test::random_vec(kNodes * kFeatures, rng));
  const nn::Tensor advantage =
      nn::Tensor::from_vector({kNodes}, gdp::cuda::test::random_vec(kNodes, rng));

  Policy cpu(7), gpu(7);
  REQUIRE(values_of(cpu.params) == values_of(gpu.params));
  gpu.params.to_device(nn::Device::cuda);
  REQUIRE(gpu.params.device() == nn::Device::cuda);
  REQUIRE(gpu.head_w.value().device() == nn::Device::cuda);  // Vars held by the model follow
  CHECK_THROWS_AS(gpu.params.add("late", {2}), std::runtime_error);

  nn::AdamConfig config;
  config.lr = 1e-2;
  config.weight_decay = 0.01;
  // eps well above the rounding noise of tiny gradients: with eps = 1e-8 Adam multiplies a
  // 1e-9 cpu/device difference of a near-zero gradient by lr / eps = 1e6.
  config.eps = 1e-5;
  nn::Adam opt_cpu(cpu.params, config), opt_gpu(gpu.params, config);
  for (int step = 0; step < 3; ++step) {
    cpu.params.zero_grad();
    gpu.params.zero_grad();
    const nn::Var lc = cpu.loss(features, adj, actions, advantage);
    nn::Tape::current().backward(lc);
    const nn::Var lg = gpu.loss(features, adj, actions, advantage);
    REQUIRE(lg.value().device() == nn::Device::cuda);
    nn::Tape::current().backward(lg);
    const std::string at = " at step " + std::to_string(step);
    check_close(lg.value().to_vector(), lc.value().to_vector(), 1e-5f, 1e-4f, "loss" + at);
    check_close(gpu.params.grads().to_vector(), cpu.params.grads().to_vector(), 1e-5f, 2e-3f,
                "gradients" + at);
    const double nc = nn::clip_grad_norm(cpu.params, 0.05),
                 ng = nn::clip_grad_norm(gpu.params, 0.05);
    CHECK(ng == Approx(nc).epsilon(1e-4));
    opt_cpu.step();
    opt_gpu.step();
    check_close(values_of(gpu.params), values_of(cpu.params), 1e-5f, 1e-3f, "parameters" + at);
  }
  check_close(opt_gpu.m(), opt_cpu.m(), 1e-6f, 2e-3f, "adam m");

  // Checkpoint from the device, reload into a fresh cpu model: bit-identical values and moments.
  const std::string path =
      (std::filesystem::temp_directory_path() / "gdp_cuda_policy.ckpt").string();
  nn::save_checkpoint(path, gpu.params, &opt_gpu, 3);
  Policy back(99);
  nn::Adam opt_back(back.params, config);
  CHECK(nn::load_checkpoint(path, back.params, &opt_back) == 3);
  CHECK(values_of(back.params) == values_of(gpu.params));
  CHECK(opt_back.m() == opt_gpu.m());
  CHECK(opt_back.v() == opt_gpu.v());
  CHECK(opt_back.steps() == 3);
  // ... and straight into a model already on the device; a step there, then the model and its
  // Adam state move back to the cpu and continue: the same as the cpu model continuing.
  Policy dev(98);
  dev.params.to_device(nn::Device::cuda);
  nn::Adam opt_dev(dev.params, config);
  CHECK(nn::load_checkpoint(path, dev.params, &opt_dev) == 3);
  CHECK(dev.params.device() == nn::Device::cuda);
  CHECK(values_of(dev.params) == values_of(gpu.params));
  Policy ref(97);
  nn::Adam opt_ref(ref.params, config);
  nn::load_checkpoint(path, ref.params, &opt_ref);
  for (int step = 0; step < 2; ++step) {
    if (step == 1) dev.params.to_device(nn::Device::cpu);
    for (auto* p : {&dev, &ref}) {
      p->params.zero_grad();
      nn::Tape::current().backward(p->loss(features, adj, actions, advantage));
    }
    opt_dev.step();
    opt_ref.step();
    check_close(values_of(dev.params), values_of(ref.params), 1e-5f, 1e-3f,
                "continued from the checkpoint, step " + std::to_string(step));
  }
  CHECK(dev.params.device() == nn::Device::cpu);
  CHECK(opt_dev.steps() == 5);
  std::remove(path.c_str());
}
