// Reading and writing graph files at scale: read_graph_file end to end (file read, strict
// parse, finalize) on random layered training graphs of 200,000 and 1,000,000 ops, the checked
// DOM reader for comparison, the writer, and the generator. The input files are generated once
// per run into a temporary directory (removed at exit), so the benchmark runs anywhere.
// Figures and commands: docs/performance.md ("Graph files").
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "core/io.h"
#include "datasets/random_families.h"

namespace {

using namespace gdp;
namespace fs = std::filesystem;

datasets::RandomGraphOptions random_options(int64_t ops) {
  datasets::RandomGraphOptions o;
  o.family = datasets::RandomFamily::layered;
  o.ops = ops;
  o.seed = 1;
  return o;
}

// The graph files of this run, by requested op count, written on first use.
class GraphFiles {
 public:
  GraphFiles() : dir_(fs::temp_directory_path() / ("gdp_bench_io." + std::to_string(::getpid()))) {
    fs::create_directories(dir_);
  }
  ~GraphFiles() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  const std::string& path(int64_t ops) {
    auto it = paths_.find(ops);
    if (it != paths_.end()) return it->second;
    const std::string p = (dir_ / ("random_layered_" + std::to_string(ops) + ".json")).string();
    std::fprintf(stderr, "bench_io: writing %s\n", p.c_str());
    write_graph_file(datasets::make_random_graph(random_options(ops)), p);
    return paths_[ops] = p;
  }

 private:
  fs::path dir_;
  std::map<int64_t, std::string> paths_;
};

GraphFiles& files() {
  static GraphFiles f;
  return f;
}

void set_counters(benchmark::State& state, const Graph& g, const std::string& path) {
  state.counters["ops"] = g.num_ops();
  state.counters["edges"] = static_cast<double>(g.num_edges());
  state.counters["MB"] = static_cast<double>(fs::file_size(path)) / 1e6;
  state.SetItemsProcessed(state.iterations() * g.num_ops());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(fs::file_size(path)));
}

// The target: read_graph_file end to end (arg: requested op count).
void BM_ReadGraphFile(benchmark::State& state) {
  const std::string& path = files().path(state.range(0));
  std::unique_ptr<Graph> g;
  for (auto _ : state) {
    state.PauseTiming();  // the previous graph is freed untimed
    g.reset();
    state.ResumeTiming();
    g = std::make_unique<Graph>(read_graph_file(path));
    benchmark::DoNotOptimize(g->topo_order().data());
  }
  set_counters(state, *g, path);
}
BENCHMARK(BM_ReadGraphFile)
    ->Arg(200000)
    ->Arg(1000000)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The checked reader that builds the whole DOM (the path of invalid files), for comparison.
void BM_ReadGraphFileReference(benchmark::State& state) {
  const std::string& path = files().path(state.range(0));
  std::unique_ptr<Graph> g;
  for (auto _ : state) {
    state.PauseTiming();
    g.reset();
    state.ResumeTiming();
    g = std::make_unique<Graph>(parse_graph_json_reference(read_text_file(path), path));
    benchmark::DoNotOptimize(g->topo_order().data());
  }
  set_counters(state, *g, path);
}
BENCHMARK(BM_ReadGraphFileReference)->Arg(200000)->Unit(benchmark::kMillisecond)->UseRealTime();

// graph_to_json (the text write_graph_file writes).
void BM_GraphToJson(benchmark::State& state) {
  const std::string& path = files().path(state.range(0));
  const Graph g = read_graph_file(path);
  for (auto _ : state) {
    std::string text = graph_to_json(g);
    benchmark::DoNotOptimize(text.data());
  }
  set_counters(state, g, path);
}
BENCHMARK(BM_GraphToJson)->Arg(200000)->Arg(1000000)->Unit(benchmark::kMillisecond)->UseRealTime();

// make_random_graph (what `gdp gen random` does before writing).
void BM_MakeRandomGraph(benchmark::State& state) {
  int32_t ops = 0;
  for (auto _ : state) {
    Graph g = datasets::make_random_graph(random_options(state.range(0)));
    ops = g.num_ops();
  }
  state.counters["ops"] = ops;
  state.SetItemsProcessed(state.iterations() * ops);
}
BENCHMARK(BM_MakeRandomGraph)
    ->Arg(200000)
    ->Arg(1000000)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
