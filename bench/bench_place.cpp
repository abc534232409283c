// Placement wall time of the methods on GNMT-8 (datasets::generate("gnmt", layers 8): 53,481
// ops, 8 V100s, NVLink), the speed targets: m-TOPO and METIS under 1 s, m-ETF under
// 10 s, m-SCT's LP cost (its fallback past options.lp_max_ops). One placement per iteration,
// the method's final simulation included; the graph and simulator are built once. anneal is
// timed per simulated sample (1,000 samples from the best baseline start).
//   build-dev/bench/bench_place --benchmark_filter=gnmt8
#include <benchmark/benchmark.h>
#include <omp.h>

#include <chrono>

#include "core/alloc.h"
#include "core/cluster.h"
#include "datasets/registry.h"
#include "place/registry.h"

using namespace gdp;

namespace {

struct Gnmt8 {
  Graph g;
  Cluster c = make_cluster_preset("v100x8-nvlink");
  CostModel cost;
  std::unique_ptr<place::Problem> problem;
  Gnmt8() {
    datasets::GenOptions o;
    o.layers = 8;
    g = datasets::generate("gnmt", o);
    problem = std::make_unique<place::Problem>(g, c, cost);
    problem->simulator();  // built outside the timed region
  }
};

Gnmt8& gnmt8() {
  static Gnmt8 w;
  return w;
}

void place_once(benchmark::State& state, const std::string& method, int64_t samples) {
  keep_freed_memory();
  Gnmt8& w = gnmt8();
  const place::PreparedMethod m = place::prepare(place::registry(), method);
  place::Budget b;
  b.samples = samples;
  double step = 0;
  for (auto _ : state) {
    place::PlaceResult r = place::place(m, *w.problem, b, 1);
    step = r.report.best_step_s;
    benchmark::DoNotOptimize(r.placement.device.data());
  }
  state.counters["ops"] = w.g.num_ops();
  state.counters["step_s"] = step;
}

void BM_Place_gnmt8_metis(benchmark::State& s) { place_once(s, "metis", 0); }
void BM_Place_gnmt8_m_topo(benchmark::State& s) { place_once(s, "m-topo", 0); }
void BM_Place_gnmt8_m_etf(benchmark::State& s) { place_once(s, "m-etf", 0); }
void BM_Place_gnmt8_m_sct(benchmark::State& s) { place_once(s, "m-sct", 0); }
void BM_Place_gnmt8_human(benchmark::State& s) { place_once(s, "human", 0); }
void BM_Place_gnmt8_anneal_1k(benchmark::State& s) { place_once(s, "anneal", 1000); }

// anneal's cost per sample on one thread from the human start (2,000 samples, the start's one
// included), with the early stop (arg 1) and without (arg 0): the figure to compare with one
// full simulation of the human placement, bench_sim's BM_SimStepTime_gnmt8_human. Counters:
// ms per sample, and the step time reached (equal in both: the early stop is exact).
void BM_Anneal_gnmt8_human_per_sample(benchmark::State& s) {
  keep_freed_memory();
  Gnmt8& w = gnmt8();
  const int before = omp_get_max_threads();
  omp_set_num_threads(1);
  const place::PreparedMethod m = place::prepare(
      place::registry(), "anneal", {{"init", "human"}, {"early_stop", s.range(0) != 0}});
  place::Budget b;
  b.samples = 2000;
  double step = 0, per_sample_ms = 0;
  for (auto _ : s) {
    const auto t0 = std::chrono::steady_clock::now();
    place::PlaceResult r = place::place(m, *w.problem, b, 1);
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    per_sample_ms = 1e3 * dt / static_cast<double>(r.report.samples);
    step = r.report.best_step_s;
    benchmark::DoNotOptimize(r.placement.device.data());
  }
  omp_set_num_threads(before);
  s.counters["ms_per_sample"] = per_sample_ms;
  s.counters["step_s"] = step;
}

}  // namespace

BENCHMARK(BM_Place_gnmt8_human)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_Place_gnmt8_metis)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_Place_gnmt8_m_topo)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_Place_gnmt8_m_etf)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_Place_gnmt8_m_sct)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK(BM_Place_gnmt8_anneal_1k)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK(BM_Anneal_gnmt8_human_per_sample)
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);

BENCHMARK_MAIN();
