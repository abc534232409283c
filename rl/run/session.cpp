// A training run on disk: config.json, log.csv, best placements, checkpoints, summary.json.
#include "rl/run/session.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/io.h"
#include "core/mpi.h"
#include "datasets/suite.h"
#include "rl/run/stats.h"
#ifdef GDP_HAVE_CUDA
#include "cuda/kernels.h"
#endif

namespace gdp::rl {

namespace {

namespace fs = std::filesystem;

// The graphs and clusters of a run, materialized (they outlive the learner).
struct Materialized {
  std::vector<std::string> names, families;
  std::vector<Graph> graphs;
  std::vector<Cluster> clusters;
  CostModel cost;
};

std::unique_ptr<Materialized> materialize(const RunSpec& s) {
  auto m = std::make_unique<Materialized>();
  if (!s.profile_path.empty()) m->cost = CostModel::from_json_file(s.profile_path);
  if (!s.suite_path.empty()) {
    const datasets::SuiteSpec spec = datasets::read_suite_spec(s.suite_path);
    for (const datasets::SuiteEntrySpec& e : spec.entries)
      m->families.push_back(e.model.empty()       ? e.name
                            : e.model == "random" ? "random/" + e.options.family
                                                  : e.model);
    for (auto& e : datasets::load_suite(s.suite_path)) {
      m->names.push_back(e.name);
      m->graphs.push_back(std::move(e.graph));
      m->clusters.push_back(std::move(e.cluster));
    }
    if (m->families.size() != m->names.size()) m->families.assign(m->names.size(), "");
  } else {
    m->graphs.push_back(read_graph_file(s.graph_path));
    m->clusters.push_back(read_cluster(s.cluster));
    m->names.push_back(m->graphs.back().name);
    m->families.push_back("");
  }
  return m;
}

std::vector<TrainGraph> train_graphs(const Materialized& m) {
  std::vector<TrainGraph> r;
  for (size_t i = 0; i < m.graphs.size(); ++i)
    r.push_back(TrainGraph{m.names[i], &m.graphs[i], &m.clusters[i], nullptr, m.families[i]});
  return r;
}

void write_best(const Learner& t, const std::string& dir) {
  const bool batch = t.num_graphs() > 1;
  for (size_t i = 0; i < t.num_graphs(); ++i) {
    if (!t.run(i).has_best()) continue;
    const TrainGraph& g = t.graph(i);
    const std::string name = batch ? "best-" + g.name + ".json" : "best.json";
    write_placement_file(t.run(i).best(), *g.graph, g.cluster->num_devices(),
                         (fs::path(dir) / name).string());
  }
}

void write_summary(const Learner& t, const std::string& dir, const std::string& method) {
  nlohmann::ordered_json gs = nlohmann::ordered_json::array();
  double logsum = 0;
  int valid = 0;
  for (size_t i = 0; i < t.num_graphs(); ++i) {
    nlohmann::ordered_json g;
    const double best = t.run(i).best_step_s(), ref = t.reference_step_s(i);
    g["graph"] = t.graph(i).name;
    g["best_step_time_s"] = std::isfinite(best) ? nlohmann::ordered_json(best) : nullptr;
    g["reference_step_time_s"] = ref;
    g["reference_method"] = t.reference_method(i);
    g["speedup_over_reference"] =
        std::isfinite(best) ? nlohmann::ordered_json(ref / best) : nullptr;
    g["samples"] = t.run(i).samples();
    g["samples_to_best"] = t.samples_to_best(i);
    g["seconds_to_best"] = t.seconds_to_best(i);
    if (std::isfinite(t.imitation_accuracy(i)))
      g["imitation_accuracy"] = t.imitation_accuracy(i);  // greedy = reference, after warm start
    if (std::isfinite(best)) logsum += std::log(ref / best), ++valid;
    gs.push_back(std::move(g));
  }
  nlohmann::ordered_json j;
  j["method"] = method;
  if (t.num_graphs() == 1) {
    for (const char* k : {"best_step_time_s", "reference_step_time_s", "reference_method",
                          "speedup_over_reference"})
      j[k] = gs[0][k];
  } else {
    j["geomean_speedup_over_reference"] =
        valid ? nlohmann::ordered_json(std::exp(logsum / valid)) : nullptr;
  }
  j["samples"] = t.total_samples();
  j["wall_s"] = t.wall_s();
  j["iterations"] = t.iteration();
  if (t.num_graphs() == 1) {
    j["samples_to_best"] = t.samples_to_best(0);
    j["seconds_to_best"] = t.seconds_to_best(0);
  }
  j["graphs"] = std::move(gs);
  write_text_file_atomic((fs::path(dir) / "summary.json").string(), j.dump(2) + "\n");
}

int64_t file_size_of(const std::string& path) {
  std::error_code ec;
  const auto n = fs::file_size(path, ec);
  return ec ? 0 : static_cast<int64_t>(n);
}

// Iterates to the budget, logging, checkpointing; ends with the best placements, a
// checkpoint and the summary.
void run_loop(Learner& t, const RunSpec& s, const std::string& dir, const IterationFn& on_it,
              int64_t max_iterations) {
  const bool batch = t.num_graphs() > 1;
  const std::string log_path = (fs::path(dir) / "log.csv").string();
  // Data-parallel (core/mpi.h): every rank trains, rank 0 alone writes the run directory.
  const bool writer = mpi_rank() == 0;
  std::ofstream log;
  if (writer) log.open(log_path, std::ios::binary | std::ios::app);
  if (writer && !log) throw InputError(log_path + ": cannot open for appending");
  int64_t ran = 0;
  while (!t.done(s.budget) && (max_iterations <= 0 || ran < max_iterations)) {
    const std::vector<IterationStats> rows = t.step();
    ++ran;
    if (!writer) continue;
    for (const auto& r : rows) log << log_row(r, batch);
    log.flush();
    if (!log) throw InputError(log_path + ": write error");
    if (on_it) on_it(rows, t);
    const int32_t every = s.checkpoint_every >= 0 ? s.checkpoint_every : t.checkpoint_every();
    if (every > 0 && t.iteration() % every == 0) {
      write_best(t, dir);
      t.save(dir, file_size_of(log_path));
    }
  }
  log.close();
  if (!writer) return;
  write_best(t, dir);
  t.save(dir, file_size_of(log_path));
  write_summary(t, dir, s.method);
}

place::Budget effective_budget(const RunSpec& s, size_t graphs) {
  place::Budget b = s.budget;
  if (!b.limited())
    b.samples = 5000 * static_cast<int64_t>(graphs);  // documented default (gdp train --help)
  return b;
}

// One process, or a method that trains data-parallel.
void check_ranks(const LearnerMethod& m, const char* verb) {
  if (mpi_size() > 1 && !m.data_parallel)
    throw InputError(std::string("train: data-parallel training (mpirun) is not ") + m.name +
                     "'s; " + verb + " it as one process");
}

}  // namespace

void check_device(const std::string& device) {
  if (device == "cpu") return;
  if (device != "cuda") throw InputError("device: expected cpu or cuda, got '" + device + "'");
#ifdef GDP_HAVE_CUDA
  if (cuda::cuda_device_count() > 0) return;
  throw InputError("device cuda: no GPU is visible (" + cuda::cuda_last_error_string() +
                   "); use --device cpu");
#else
  throw InputError(
      "device cuda: this build has no CUDA backend (nvcc was not found at build time)");
#endif
}

void train(const LearnerRegistry& learners, const RunSpec& spec_in, const std::string& dir,
           const IterationFn& on_iteration) {
  RunSpec spec = spec_in;
  check_device(spec.device);
  const LearnerMethod& method = learners.find(spec.method, "train");
  if (fs::exists(fs::path(dir) / "config.json"))
    throw InputError(dir + ": holds a training run already; resume it with --resume " + dir +
                     " or choose another --out");
  check_ranks(method, "run");
  auto m = materialize(spec);
  spec.budget = effective_budget(spec, m->graphs.size());
  std::unique_ptr<Learner> t =
      method.make(LearnerArgs{spec, train_graphs(*m), m->cost,
                              spec.options_source.empty() ? "train" : spec.options_source});
  if (mpi_rank() == 0) {
    nlohmann::ordered_json config = run_spec_to_json(spec);
    const nlohmann::ordered_json own = t->config_json();
    for (const auto& [k, v] : own.items()) config[k] = v;
    fs::create_directories(dir);
    write_text_file_atomic((fs::path(dir) / "config.json").string(), config.dump(2) + "\n");
    write_text_file_atomic((fs::path(dir) / "log.csv").string(), log_header(m->graphs.size() > 1));
  }
  run_loop(*t, spec, dir, on_iteration, spec.max_iterations);
}

void resume(const LearnerRegistry& learners, const std::string& dir,
            const IterationFn& on_iteration, int64_t max_iterations) {
  RunConfig c = read_run_config(dir);
  const LearnerMethod& method = learners.find(c.spec.method, c.sj.source());
  check_method_keys(c, method.config_keys);
  c.spec.options = method.stored_options(c);
  auto m = materialize(c.spec);
  check_device(c.spec.device);
  std::unique_ptr<Learner> t =
      method.make(LearnerArgs{c.spec, train_graphs(*m), m->cost, c.sj.source()});
  t->check_resume(c.sj, c.json);
  check_ranks(method, "resume");
  const int64_t log_bytes = t->load(dir);
  // The killed run may have logged iterations after its last checkpoint: cut them.
  const std::string log_path = (fs::path(dir) / "log.csv").string();
  std::error_code ec;
  if (mpi_rank() == 0) fs::resize_file(log_path, static_cast<uintmax_t>(log_bytes), ec);
  if (ec)
    throw InputError(log_path + ": cannot cut the log back to the checkpoint: " + ec.message());
  run_loop(*t, c.spec, dir, on_iteration, max_iterations);
}

}  // namespace gdp::rl
