// The learner interface's shared pieces: the checkpoint frame, reference placement, run
// ownership, the per-graph part of a checkpoint. See rl/run/learner.h.
#include "rl/run/learner.h"

#include <cmath>
#include <filesystem>

#include "core/error.h"
#include "core/io.h"
#include "place/registry.h"

namespace gdp::rl {

int64_t Learner::total_samples() const {
  int64_t n = 0;
  for (size_t i = 0; i < num_graphs(); ++i) n += run(i).samples();
  return n;
}

int64_t Learner::samples_to_best(size_t i) const {
  const auto& c = run(i).curve();
  return c.empty() ? 0 : c.back().samples;
}

double Learner::seconds_to_best(size_t i) const {
  const auto& c = run(i).curve();
  return c.empty() ? 0 : c.back().wall_s;
}

Reference reference_placement(const place::Problem& problem, uint64_t seed,
                              const std::string& graph_name) {
  for (const char* m : {"human", "single", "round-robin"}) {
    Placement p = place::place(place::prepare(place::registry(), m), problem, place::Budget(), seed)
                      .placement;
    auto state = problem.simulator().make_state();
    const double t = problem.simulator().step_time(p, *state);
    if (std::isfinite(t)) return Reference{std::move(p), t, m};
  }
  throw InputError("train: graph '" + graph_name +
                   "': no reference placement (human, single, round-robin) is valid on "
                   "cluster '" +
                   problem.cluster().name + "'; the reward needs one");
}

place::Run* attach_run(const TrainGraph& g, const CostModel& cost, const std::string& method,
                       uint64_t seed, OwnedRun& own) {
  if (g.run) return g.run;
  own.problem = std::make_unique<place::Problem>(*g.graph, *g.cluster, cost);
  own.run = std::make_unique<place::Run>(*own.problem, method, place::Budget(), seed);
  return own.run.get();
}

nlohmann::ordered_json run_state_to_json(const std::string& name, const place::Run& run) {
  nlohmann::ordered_json x;
  x["name"] = name;
  x["samples"] = run.samples();
  x["elapsed_s"] = run.elapsed_s();
  x["best_step_s"] =
      run.has_best() ? nlohmann::ordered_json(run.best_step_s()) : nlohmann::ordered_json(nullptr);
  x["best"] = run.best().device;
  nlohmann::ordered_json curve = nlohmann::ordered_json::array();
  for (const auto& c : run.curve()) curve.push_back({c.samples, c.wall_s, c.best_step_s});
  x["curve"] = std::move(curve);
  return x;
}

void run_state_from_json(const StrictJson& sj, const nlohmann::json& x, const std::string& p,
                         const std::string& name, int32_t num_ops, place::Run& run) {
  if (sj.string(x, "name", p) != name)
    sj.fail(json_path(p, "name"), "expected graph \"" + name + "\"");
  Placement best;
  const nlohmann::json& b = sj.array(x, "best", p);
  if (!b.empty() && static_cast<int64_t>(b.size()) != num_ops)
    sj.fail(json_path(p, "best"), "expected " + std::to_string(num_ops) + " devices");
  for (size_t k = 0; k < b.size(); ++k)
    best.device.push_back(static_cast<int32_t>(
        sj.integer_value(b[k], json_path(json_path(p, "best"), k), 0, 1 << 20)));
  std::vector<place::CurvePoint> curve;
  const nlohmann::json& c = sj.array(x, "curve", p);
  for (size_t k = 0; k < c.size(); ++k) {
    const std::string q = json_path(json_path(p, "curve"), k);
    if (!c[k].is_array() || c[k].size() != 3) sj.fail(q, "expected [samples, wall_s, best_step_s]");
    curve.push_back(
        {sj.integer_value(c[k][0], q), sj.number_value(c[k][1], q), sj.number_value(c[k][2], q)});
  }
  const double best_s = x.at("best_step_s").is_null() ? std::numeric_limits<double>::infinity()
                                                      : sj.number(x, "best_step_s", p);
  run.restore(sj.integer(x, "samples", p), std::move(best), best_s, std::move(curve),
              sj.number(x, "elapsed_s", p));
}

const std::vector<std::string>& run_state_keys() {
  static const std::vector<std::string> k = {"name",        "samples", "elapsed_s",
                                             "best_step_s", "best",    "curve"};
  return k;
}

void remove_old_checkpoints(const std::string& dir, const std::string& keep) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const auto& f : fs::directory_iterator(dir, ec)) {
    const std::string n = f.path().filename().string();
    if (n.rfind("ckpt-", 0) == 0 && n != keep && n.size() > 4 &&
        n.compare(n.size() - 4, 4, ".bin") == 0)
      fs::remove(f.path(), ec);
  }
}

namespace fs = std::filesystem;

// ---- the checkpoint frame ----

namespace {

// DIR/state.json parsed, its header checked (the frame's one reader; `sj` names the file).
nlohmann::json read_state(const StrictJson& sj) {
  const nlohmann::json j = sj.parse(read_text_file(sj.source()));
  sj.check_header(j, "gdp-train-state", 1);
  return j;
}

}  // namespace

FramedLearner::FramedLearner(uint64_t seed)
    : seed_(seed), start_(std::chrono::steady_clock::now()) {}

double FramedLearner::wall_s() const {
  return wall_offset_s_ +
         std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

nlohmann::ordered_json FramedLearner::graph_state(size_t i) const {
  return run_state_to_json(graph(i).name, run(i));
}

void FramedLearner::save(const std::string& dir, int64_t log_bytes) const {
  const std::string bin = "ckpt-" + std::to_string(iteration_) + ".bin";
  nlohmann::ordered_json model = save_model((fs::path(dir) / bin).string());
  nlohmann::ordered_json j;
  j["format"] = "gdp-train-state";
  j["version"] = 1;
  j["iteration"] = iteration_;
  j["checkpoint"] = bin;
  j["seed"] = seed_;
  j["wall_s"] = wall_s();
  j["log_bytes"] = log_bytes;
  nlohmann::ordered_json gs = nlohmann::ordered_json::array();
  for (size_t i = 0; i < num_graphs(); ++i) gs.push_back(graph_state(i));
  j["graphs"] = std::move(gs);
  for (auto& [k, v] : model.items()) j[k] = v;
  write_text_file_atomic((fs::path(dir) / "state.json").string(), j.dump(1) + "\n");
  remove_old_checkpoints(dir, bin);  // no longer named by the state
}

int64_t FramedLearner::load(const std::string& dir) {
  const std::string path = (fs::path(dir) / "state.json").string();
  StrictJson sj(path);
  const nlohmann::json j = read_state(sj);
  std::vector<std::string> keys = {"format", "version", "iteration", "checkpoint",
                                   "seed",   "wall_s",  "log_bytes", "graphs"};
  for (const std::string& k : model_keys()) keys.push_back(k);
  sj.check_keys(j, "", keys, {});
  const nlohmann::json& js = j.at("seed");
  if (!(js.is_number_unsigned() || js.is_number_integer()) || js.get<uint64_t>() != seed_)
    sj.fail("seed", "expected the seed this run was built with, " + std::to_string(seed_));
  const nlohmann::json& gs = sj.array(j, "graphs", "");
  if (gs.size() != num_graphs())
    sj.fail("graphs", "expected " + std::to_string(num_graphs()) + " graphs, got " +
                          std::to_string(gs.size()));
  const int64_t it = sj.integer(j, "iteration", "");
  const std::string bin = (fs::path(dir) / sj.string(j, "checkpoint", "")).string();
  for (size_t i = 0; i < gs.size(); ++i) restore_graph_state(sj, gs[i], json_path("graphs", i), i);
  load_model(sj, j, bin, it, path);
  iteration_ = it;
  wall_offset_s_ = sj.number(j, "wall_s", "");
  start_ = std::chrono::steady_clock::now();
  return sj.integer(j, "log_bytes", "");
}

std::string checkpoint_path(const std::string& dir) {
  StrictJson sj((fs::path(dir) / "state.json").string());
  return (fs::path(dir) / sj.string(read_state(sj), "checkpoint", "")).string();
}

// ---- RunLearner ----

RunLearner::RunLearner(std::vector<TrainGraph> graphs, const CostModel& cost,
                       const std::string& method, uint64_t seed, int32_t checkpoint_every,
                       nlohmann::json options)
    : FramedLearner(seed),
      cost_(cost),
      checkpoint_every_(checkpoint_every),
      options_(std::move(options)) {
  if (graphs.empty()) throw InputError("train: no graphs");
  graphs_.resize(graphs.size());
  for (size_t i = 0; i < graphs.size(); ++i) {
    G& g = graphs_[i];
    g.spec = graphs[i];
    g.run = attach_run(g.spec, cost_, method, seed, g.own);
    g.ref = reference_placement(g.run->problem(), seed, g.spec.name);
  }
}

nlohmann::ordered_json RunLearner::config_json() const {
  nlohmann::ordered_json j;
  j["options"] = options_;
  return j;
}

void RunLearner::restore_graph_state(const StrictJson& sj, const nlohmann::json& x,
                                     const std::string& p, size_t i) {
  sj.check_keys(x, p, run_state_keys(), {});
  run_state_from_json(sj, x, p, graphs_[i].spec.name, graphs_[i].spec.graph->num_ops(),
                      *graphs_[i].run);
}

IterationStats RunLearner::row(size_t i) const {
  IterationStats r;
  r.iteration = iteration_;
  r.graph = graphs_[i].spec.name;
  r.samples = graphs_[i].run->samples();
  r.wall_s = wall_s();
  r.best_step_s = graphs_[i].run->best_step_s();
  return r;
}

nlohmann::ordered_json RunLearner::save_model(const std::string& bin) const {
  nlohmann::ordered_json j;
  j["model"] = save_agent(bin);
  return j;
}

void RunLearner::load_model(const StrictJson& sj, const nlohmann::json& state,
                            const std::string& bin, int64_t iteration, const std::string& source) {
  (void)iteration;
  load_agent(sj.object(state, "model", ""), bin, source);
}

}  // namespace gdp::rl
