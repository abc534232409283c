// A training run on disk: config.json, log.csv, best placements, checkpoints, summary.json.
#include "rl/session.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/io.h"
#include "core/json_strict.h"
#include "datasets/suite.h"
#include "nn/checkpoint.h"
#include "place/options.h"
#include "rl/dist.h"
#include "rl/learners.h"
#include "rl/register.h"
#ifdef GDP_HAVE_CUDA
#include "cuda/kernels.h"
#endif

namespace gdp::rl {

namespace {

namespace fs = std::filesystem;
constexpr int kSessionVersion = 1;

// The graphs and clusters of a session, materialized (they outlive the trainer).
struct Materialized {
  std::vector<std::string> names, families;
  std::vector<Graph> graphs;
  std::vector<Cluster> clusters;
  CostModel cost;
};

std::unique_ptr<Materialized> materialize(const SessionSpec& s) {
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

// The method's options resolved (every key, defaults filled in); hdp and placeto only.
place::Options method_options(const SessionSpec& s, const std::string& source) {
  if (s.method == "hdp")
    return place::resolve_options("hdp", hdp_method().options, s.options, source);
  if (s.method == "placeto")
    return place::resolve_options("placeto", placeto_method().options, s.options, source);
  throw InputError(source + ": method: expected gdp, hdp or placeto, got '" + s.method + "'");
}

nlohmann::ordered_json spec_to_json(const SessionSpec& s, const Policy* policy) {
  nlohmann::ordered_json j;
  j["format"] = "gdp-train-run";
  j["version"] = kSessionVersion;
  j["method"] = s.method;
  j["graph"] = s.graph_path;
  j["cluster"] = s.cluster;
  j["suite"] = s.suite_path;
  j["profile"] = s.profile_path;
  j["init"] = s.init_dir;
  j["seed"] = s.seed;
  j["device"] = s.device;
  j["budget"] = {{"samples", s.budget.samples}, {"seconds", s.budget.seconds}};
  j["max_iterations"] = s.max_iterations;
  j["checkpoint_every"] = s.checkpoint_every;
  if (policy) {
    j["train"] = s.config.to_json();
    j["train"]["policy"] = policy->config().to_json();  // an init's policy config wins
    j["vocabulary"] = policy->vocabulary().to_json();
  } else {
    j["options"] = s.options;
  }
  return j;
}

struct SessionFile {
  SessionSpec spec;
  nlohmann::json vocabulary;
};

// A training run is a directory holding config.json; say so plainly when `dir` is not one.
void check_run_dir(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec))
    throw InputError(dir + ": no such training run (expected a `gdp train --out` directory)");
  if (!fs::is_directory(dir, ec))
    throw InputError(dir +
                     ": not a training run: expected a `gdp train --out` directory, got a "
                     "file");
  if (!fs::exists(fs::path(dir) / "config.json", ec))
    throw InputError(dir +
                     ": not a training run (it has no config.json; expected a `gdp train "
                     "--out` directory)");
}

SessionFile read_session(const std::string& dir) {
  check_run_dir(dir);
  const std::string path = (fs::path(dir) / "config.json").string();
  StrictJson sj(path);
  const nlohmann::json j = sj.parse(read_text_file(path));
  sj.check_header(j, "gdp-train-run", kSessionVersion);
  sj.check_keys(j, "",
                {"format", "version", "graph", "cluster", "suite", "profile", "init", "seed",
                 "device", "budget", "max_iterations"},
                {"method", "checkpoint_every", "train", "vocabulary", "options"});
  SessionFile f;
  SessionSpec& s = f.spec;
  s.method = j.contains("method") ? sj.string(j, "method", "") : "gdp";
  if (j.contains("checkpoint_every"))
    s.checkpoint_every = static_cast<int32_t>(sj.integer(j, "checkpoint_every", "", -1, 1 << 30));
  s.graph_path = sj.string(j, "graph", "");
  s.cluster = sj.string(j, "cluster", "");
  s.suite_path = sj.string(j, "suite", "");
  s.profile_path = sj.string(j, "profile", "");
  s.init_dir = sj.string(j, "init", "");
  const nlohmann::json& seed = j.at("seed");
  if (!seed.is_number_unsigned() && !seed.is_number_integer())
    sj.fail("seed", "expected a non-negative integer");
  s.seed = seed.get<uint64_t>();
  s.device = sj.string(j, "device", "");
  const nlohmann::json& b = sj.object(j, "budget", "");
  sj.check_keys(b, "budget", {"samples", "seconds"}, {});
  s.budget.samples = sj.integer(b, "samples", "budget");
  s.budget.seconds = sj.number(b, "seconds", "budget");
  s.max_iterations = sj.integer(j, "max_iterations", "");
  if (s.method == "gdp") {
    // A run written before the trainer's levers (no "elite" key) continues as it was trained:
    // the keys it lacks take their pre-lever values, not today's defaults.
    nlohmann::json train = sj.object(j, "train", "");
    if (!train.contains("elite")) {
      train["elite"] = {{"size", 0}};
      train["explore"] = {{"local_fraction", 0}};
      train["warm_start"] = nlohmann::json::array();
      train["ppo"]["baseline"] = "mean";
    }
    s.config = TrainConfig::from_json(train, path + ": train");
    f.vocabulary = sj.object(j, "vocabulary", "");
  } else {
    s.options = sj.object(j, "options", "");
    method_options(s, path + ": options");  // checks them
  }
  return f;
}

std::string fmt(double x) {
  if (!std::isfinite(x)) return x > 0 ? "inf" : "nan";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}

std::string log_header(bool batch) {
  return std::string("iteration,") + (batch ? "graph," : "") +
         "samples,wall_s,best_step_s,mean_step_s,invalid_frac,entropy,loss,reward_std,signal_t,"
         "grad_norm,approx_kl,clip_fraction,entropy_p10,entropy_p50,entropy_p90,greedy_changed,"
         "elite_ce,local_samples\n";
}

std::string log_row(const IterationStats& r, bool batch) {
  std::string s = std::to_string(r.iteration) + ",";
  if (batch) s += r.graph + ",";
  s += std::to_string(r.samples) + "," + fmt(r.wall_s) + "," + fmt(r.best_step_s) + "," +
       fmt(r.mean_step_s) + "," + fmt(r.invalid_frac) + "," + fmt(r.entropy) + "," + fmt(r.loss);
  for (double x : {r.reward_std, r.signal_t, r.grad_norm, r.approx_kl, r.clip_fraction,
                   r.entropy_p10, r.entropy_p50, r.entropy_p90, r.greedy_changed, r.elite_ce})
    s += "," + fmt(x);
  s += "," + std::to_string(r.local_samples) + "\n";
  return s;
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
void run_loop(Learner& t, const SessionSpec& s, const std::string& dir, const IterationFn& on_it,
              int64_t max_iterations) {
  const bool batch = t.num_graphs() > 1;
  const std::string log_path = (fs::path(dir) / "log.csv").string();
  std::ofstream log;
  if (dist_rank() == 0) log.open(log_path, std::ios::binary | std::ios::app);
  if (dist_rank() == 0 && !log) throw InputError(log_path + ": cannot open for appending");
  // Data-parallel (rl/dist.h): every rank trains, rank 0 alone writes the run directory.
  const bool writer = dist_rank() == 0;
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

nn::Device device_of(const SessionSpec& s) {
  return s.device == "cuda" ? nn::Device::cuda : nn::Device::cpu;
}

place::Budget effective_budget(const SessionSpec& s, size_t graphs) {
  place::Budget b = s.budget;
  if (!b.limited())
    b.samples = 5000 * static_cast<int64_t>(graphs);  // documented default (gdp train --help)
  return b;
}

// The parameters of a run's last checkpoint (state.json names it) into `params`.
// `file`: a ckpt-N.bin of the run to load instead of the one its state.json names.
void load_parameters(const std::string& dir, nn::ParameterBuffer& params,
                     const std::string& file = "") {
  std::string bin = file;
  if (bin.empty()) {
    const std::string state_path = (fs::path(dir) / "state.json").string();
    StrictJson sj(state_path);
    const nlohmann::json st = sj.parse(read_text_file(state_path));
    sj.check_header(st, "gdp-train-state", 1);
    bin = (fs::path(dir) / sj.string(st, "checkpoint", "")).string();
  }
  try {
    nn::load_checkpoint(bin, params, nullptr);
  } catch (const std::runtime_error& e) {
    throw InputError(dir + ": the checkpoint does not fit this policy: " + e.what());
  }
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

namespace {

// The learner of a session: GDP's trainer (from `init`'s policy when given) or a baseline.
std::unique_ptr<Learner> make_learner(const SessionSpec& s, const Materialized& m,
                                      const std::string& source) {
  if (s.method == "gdp") {
    std::unique_ptr<Policy> init;
    if (!s.init_dir.empty()) init = load_policy(s.init_dir);
    auto t = std::make_unique<Trainer>(s.config, train_graphs(m), m.cost, s.seed, init.get(),
                                       device_of(s));
    t->distribute();  // data-parallel under mpirun (rl/dist.h)
    return t;
  }
  const place::Options o = method_options(s, source);
  const int32_t every = 100;  // hdp iterations; placeto uses 1 (an episode per graph)
  if (s.method == "hdp") {
    if (!s.init_dir.empty()) throw InputError(source + ": init: hdp does not start from a run");
    return make_hdp_learner(hdp_config(o), train_graphs(m), m.cost, s.seed, device_of(s), every);
  }
  if (!o.string("checkpoint").empty())
    throw InputError(source +
                     ": options.checkpoint: is for placing with a trained policy (gdp "
                     "place); to train from one give --init DIR");
  placeto::TrainConfig cfg = placeto::train_config(o);
  std::unique_ptr<placeto::PlacetoPolicy> init;
  if (!s.init_dir.empty()) init = load_placeto_policy(s.init_dir, nullptr);
  return make_placeto_learner(cfg, train_graphs(m), m.cost, s.seed, device_of(s), s.budget, 1,
                              init.get());
}

}  // namespace

void train(const SessionSpec& spec_in, const std::string& dir, const IterationFn& on_iteration) {
  SessionSpec spec = spec_in;
  check_device(spec.device);
  if (spec.method != "gdp") {
    // Resolve (and check) the options before anything is written; placeto's device slots
    // are fixed now so that a policy read back from the run has the same shape.
    spec.options = method_options(spec, "train --options").json();
  }
  if (fs::exists(fs::path(dir) / "config.json"))
    throw InputError(dir + ": holds a training run already; resume it with --resume " + dir +
                     " or choose another --out");
  auto m = materialize(spec);
  spec.budget = effective_budget(spec, m->graphs.size());
  if (spec.method == "placeto" && spec.init_dir.empty())
    spec.options["max_devices"] = placeto_slots(
        placeto::train_config(method_options(spec, "train --options")), train_graphs(*m));
  if (dist_size() > 1 && spec.method != "gdp")
    throw InputError("train: data-parallel training (mpirun) is GDP's; run " + spec.method +
                     " as one process");
  std::unique_ptr<Learner> t = make_learner(spec, *m, "train");
  const Trainer* gdp = dynamic_cast<const Trainer*>(t.get());
  if (dist_rank() == 0) {
    fs::create_directories(dir);
    write_text_file_atomic((fs::path(dir) / "config.json").string(),
                           spec_to_json(spec, gdp ? &gdp->policy() : nullptr).dump(2) + "\n");
    write_text_file_atomic((fs::path(dir) / "log.csv").string(), log_header(m->graphs.size() > 1));
  }
  run_loop(*t, spec, dir, on_iteration, spec.max_iterations);
}

void resume(const std::string& dir, const IterationFn& on_iteration, int64_t max_iterations) {
  SessionFile f = read_session(dir);
  auto m = materialize(f.spec);
  check_device(f.spec.device);
  std::unique_ptr<Learner> t = make_learner(f.spec, *m, dir + "/config.json");
  if (const Trainer* gdp = dynamic_cast<const Trainer*>(t.get()))
    if (gdp->policy().vocabulary().to_json() !=
        OpVocabulary::from_json(f.vocabulary, dir).to_json())
      throw InputError(dir +
                       "/config.json: vocabulary: differs from the graphs' (were the graph "
                       "files changed since the run started?)");
  if (dist_size() > 1 && f.spec.method != "gdp")
    throw InputError("train: data-parallel training (mpirun) is GDP's; resume " + f.spec.method +
                     " as one process");
  const int64_t log_bytes = t->load(dir);
  // The killed run may have logged iterations after its last checkpoint: cut them.
  const std::string log_path = (fs::path(dir) / "log.csv").string();
  std::error_code ec;
  if (dist_rank() == 0) fs::resize_file(log_path, static_cast<uintmax_t>(log_bytes), ec);
  if (ec)
    throw InputError(log_path + ": cannot cut the log back to the checkpoint: " + ec.message());
  run_loop(*t, f.spec, dir, on_iteration, max_iterations);
}

std::unique_ptr<Policy> load_policy(const std::string& path) {
  // A run directory, or one of its checkpoint files (RUN/ckpt-N.bin): that file's parameters.
  std::string dir = path, bin;
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) {
    const fs::path parent = fs::path(path).parent_path();
    if (!fs::exists(parent / "config.json", ec))
      throw InputError(path +
                       ": expected a `gdp train --out` run directory or a ckpt-N.bin "
                       "inside one; this file is neither");
    dir = parent.empty() ? "." : parent.string();
    bin = path;
  }
  SessionFile f = read_session(dir);
  if (f.spec.method != "gdp")
    throw InputError(dir + "/config.json: method: a GDP policy was expected; this run trained '" +
                     f.spec.method + "'");
  const std::string cfg = (fs::path(dir) / "config.json").string();
  auto policy = std::make_unique<Policy>(
      f.spec.config.policy, OpVocabulary::from_json(f.vocabulary, cfg + ": vocabulary"),
      f.spec.seed);
  load_parameters(dir, policy->params(), bin);
  return policy;
}

std::unique_ptr<placeto::PlacetoPolicy> load_placeto_policy(const std::string& dir,
                                                            placeto::TrainConfig* config) {
  SessionFile f = read_session(dir);
  const std::string cfg_path = (fs::path(dir) / "config.json").string();
  if (f.spec.method != "placeto")
    throw InputError(cfg_path + ": method: a Placeto policy was expected; this run trained '" +
                     f.spec.method + "'");
  const placeto::TrainConfig cfg =
      placeto::train_config(method_options(f.spec, cfg_path + ": options"));
  if (cfg.max_devices < 1)
    throw InputError(cfg_path + ": options.max_devices: expected the policy's device slots (>= 1)");
  auto policy = std::make_unique<placeto::PlacetoPolicy>(cfg.max_devices, cfg.policy, f.spec.seed);
  load_parameters(dir, policy->params());
  if (config) *config = cfg;
  return policy;
}

}  // namespace gdp::rl
