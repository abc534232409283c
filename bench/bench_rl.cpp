// Speed of the GDP policy and of its PPO iteration (docs/performance.md, "GDP policy and PPO
// iteration"):
//   BM_PpoIteration_gnmt8: one rl::Trainer::step() on GNMT-8 (datasets::generate("gnmt",
//     layers 8), 53k ops) on v100x8-nvlink, default TrainConfig, seed 1; counters are the
//     phases of Trainer::last_step_times() per iteration, samples/s and the process's peak RSS.
//   BM_PpoIteration_gnmt8_nolevers: the same with the levers off (same K): what they cost.
//   BM_PolicyStep_50k: the policy's forward, a backward seeded with a fixed random cotangent R
//     of the unit logits (the gradient of sum(logits * R)) and one Adam step over every
//     parameter, default PolicyConfig, on the 50k-op random layered graph of
//     datasets::make_random_graph (seed 1). bench/torch_policy.py runs the same network in
//     PyTorch on a graph of the same sizes (read from this program's JSON output) and prints
//     the ratio ours / PyTorch.
// Wall time per iteration (UseRealTime) over a fixed count of iterations after one untimed
// warm-up step; the nn ops run on all OpenMP threads (OMP_NUM_THREADS).
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <chrono>
#include <cmath>

#include "core/alloc.h"
#include "core/cluster.h"
#include "datasets/random_families.h"
#include "datasets/registry.h"
#include "nn/optim.h"
#include "rl/gdp/policy.h"
#include "rl/gdp/trainer.h"

using namespace gdp;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Peak resident set of this process so far (ru_maxrss is in KiB on Linux).
double max_rss_gib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / (1024.0 * 1024.0);
}

// levers: the default TrainConfig; else the same K with the levers off (no elites, no local
// proposals, no warm start or imitation): the difference is what the levers cost an iteration.
void ppo_iteration_gnmt8(benchmark::State& state, bool levers) {
  const auto setup = Clock::now();
  datasets::GenOptions o;
  o.layers = 8;
  const Graph g = datasets::generate("gnmt", o);
  const Cluster c = make_cluster_preset("v100x8-nvlink");
  rl::TrainConfig config;
  if (!levers) {
    config.elite.size = 0;
    config.explore.local_fraction = 0;
    config.warm_start.clear();
    config.imitation_steps = 0;
  }
  rl::Trainer trainer(config, {rl::TrainGraph{"gnmt8", &g, &c, nullptr}}, CostModel(), 1);
  const double setup_s = seconds_since(setup);
  trainer.step();  // warm-up (first touch of the allocator's blocks)
  rl::PhaseTimes sum;
  double wall = 0;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    benchmark::DoNotOptimize(trainer.step());
    wall += seconds_since(t0);
    const rl::PhaseTimes& t = trainer.last_step_times();
    sum.forward_s += t.forward_s;
    sum.sample_s += t.sample_s;
    sum.simulate_s += t.simulate_s;
    sum.backward_s += t.backward_s;
    sum.update_s += t.update_s;
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["forward_s"] = sum.forward_s / n;
  state.counters["sample_s"] = sum.sample_s / n;
  state.counters["simulate_s"] = sum.simulate_s / n;
  state.counters["backward_s"] = sum.backward_s / n;
  state.counters["update_s"] = sum.update_s / n;
  state.counters["samples_per_s"] = config.samples_per_iteration * n / wall;
  state.counters["setup_s"] = setup_s;  // generate, featurize, reference placements
  state.counters["ops"] = g.num_ops();
  state.counters["units"] = place::Units::colocation(g).num_units();
  state.counters["max_rss_GiB"] = max_rss_gib();
}

void BM_PpoIteration_gnmt8(benchmark::State& state) { ppo_iteration_gnmt8(state, true); }
void BM_PpoIteration_gnmt8_nolevers(benchmark::State& state) { ppo_iteration_gnmt8(state, false); }

void BM_PolicyStep_50k(benchmark::State& state) {
  const Graph g = datasets::make_random_graph({datasets::RandomFamily::layered, 50000, 1});
  const Cluster c = make_cluster_preset("v100x8-nvlink");
  rl::Policy policy(rl::PolicyConfig(), rl::OpVocabulary::from_graphs({&g}), 1);
  const rl::PolicyInput in = policy.prepare(g, c);
  nn::AdamConfig ac;
  ac.lr = 3e-3;  // TrainConfig's
  nn::Adam adam(policy.params(), ac);
  Rng rng(7);
  const int32_t U = in.num_units(), A = policy.config().max_devices;
  nn::Tensor seed({U, A});  // fixed random cotangent of the unit logits
  for (int64_t i = 0; i < seed.numel(); ++i) seed[i] = static_cast<float>(rng.uniform(-1.0, 1.0));
  double fwd = 0, bwd = 0, upd = 0;
  auto step = [&] {
    policy.params().zero_grad();
    auto t0 = Clock::now();
    const nn::Var logits = policy.forward(in);
    fwd += seconds_since(t0);
    t0 = Clock::now();
    nn::Tape::current().backward(logits, seed);
    bwd += seconds_since(t0);
    t0 = Clock::now();
    adam.step();
    upd += seconds_since(t0);
  };
  step();  // warm-up, as torch_policy.py does
  fwd = bwd = upd = 0;
  for (auto _ : state) {
    step();
    benchmark::DoNotOptimize(policy.params().values().data());
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["forward_s"] = fwd / n;
  state.counters["backward_s"] = bwd / n;
  state.counters["adam_s"] = upd / n;
  // The sizes torch_policy.py reads to build a graph of the same shape.
  state.counters["nodes"] = g.num_ops();
  state.counters["edges"] = in.features.adj->in.num_entries();  // distinct (src, dst) pairs
  state.counters["units"] = U;
  state.counters["vocab"] = policy.vocabulary().size();
  state.counters["params"] = static_cast<double>(policy.params().size());
}

}  // namespace

// An iteration takes seconds: a fixed count, so that the setup runs once (with a minimum time
// the library calls the function twice, the setup with it).
BENCHMARK(BM_PpoIteration_gnmt8)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_PpoIteration_gnmt8_nolevers)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);
BENCHMARK(BM_PolicyStep_50k)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(5);

int main(int argc, char** argv) {
  gdp::keep_freed_memory();  // as the gdp command does
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
