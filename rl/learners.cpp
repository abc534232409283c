// HDP and Placeto as rl::Learner for `gdp train` (rl/learners.h).
#include "rl/learners.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>

#include "core/error.h"
#include "core/io.h"
#include "core/json_strict.h"

namespace gdp::rl {

namespace {

namespace fs = std::filesystem;

// What HDP and Placeto share: the graphs with their runs and references, the iteration count,
// the clock, and the checkpoint's frame (state.json with the runs; the model's own state under
// "model" and its parameters in ckpt-<iteration>.bin).
class RunLearner : public Learner {
 public:
  RunLearner(std::vector<TrainGraph> graphs, const CostModel& cost, const std::string& method,
             uint64_t seed, int32_t checkpoint_every)
      : cost_(cost),
        seed_(seed),
        checkpoint_every_(checkpoint_every),
        start_(std::chrono::steady_clock::now()) {
    if (graphs.empty()) throw InputError("train: no graphs");
    graphs_.resize(graphs.size());
    for (size_t i = 0; i < graphs.size(); ++i) {
      G& g = graphs_[i];
      g.spec = graphs[i];
      g.run = attach_run(g.spec, cost_, method, seed, g.own);
      g.ref = reference_placement(g.run->problem(), seed, g.spec.name);
    }
  }

  int64_t iteration() const override { return iteration_; }
  int32_t checkpoint_every() const override { return checkpoint_every_; }
  size_t num_graphs() const override { return graphs_.size(); }
  const TrainGraph& graph(size_t i) const override { return graphs_[i].spec; }
  const place::Run& run(size_t i) const override { return *graphs_[i].run; }
  double reference_step_s(size_t i) const override { return graphs_[i].ref.step_s; }
  const std::string& reference_method(size_t i) const override { return graphs_[i].ref.method; }
  double wall_s() const override {
    return wall_offset_s_ +
           std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

  void save(const std::string& dir, int64_t log_bytes) const override {
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
    for (const G& g : graphs_) gs.push_back(run_state_to_json(g.spec.name, *g.run));
    j["graphs"] = std::move(gs);
    j["model"] = std::move(model);
    write_text_file_atomic((fs::path(dir) / "state.json").string(), j.dump(1) + "\n");
    remove_old_checkpoints(dir, bin);
  }

  int64_t load(const std::string& dir) override {
    const std::string path = (fs::path(dir) / "state.json").string();
    StrictJson sj(path);
    const nlohmann::json j = sj.parse(read_text_file(path));
    sj.check_header(j, "gdp-train-state", 1);
    sj.check_keys(j, "",
                  {"format", "version", "iteration", "checkpoint", "seed", "wall_s", "log_bytes",
                   "graphs", "model"},
                  {});
    const nlohmann::json& gs = check_state(sj, j, seed_, graphs_.size());
    for (size_t i = 0; i < gs.size(); ++i) {
      const std::string p = json_path("graphs", i);
      sj.check_keys(gs[i], p, {"name", "samples", "elapsed_s", "best_step_s", "best", "curve"}, {});
      run_state_from_json(sj, gs[i], p, graphs_[i].spec.name, graphs_[i].spec.graph->num_ops(),
                          *graphs_[i].run);
    }
    load_model(sj.object(j, "model", ""), (fs::path(dir) / sj.string(j, "checkpoint", "")).string(),
               path);
    iteration_ = sj.integer(j, "iteration", "");
    wall_offset_s_ = sj.number(j, "wall_s", "");
    start_ = std::chrono::steady_clock::now();
    return sj.integer(j, "log_bytes", "");
  }

 protected:
  struct G {
    TrainGraph spec;
    OwnedRun own;
    place::Run* run = nullptr;
    Reference ref;
  };
  virtual nlohmann::ordered_json save_model(const std::string& bin) const = 0;
  virtual void load_model(const nlohmann::json& j, const std::string& bin,
                          const std::string& source) = 0;
  IterationStats row(size_t i) const {
    IterationStats r;
    r.iteration = iteration_;
    r.graph = graphs_[i].spec.name;
    r.samples = graphs_[i].run->samples();
    r.wall_s = wall_s();
    r.best_step_s = graphs_[i].run->best_step_s();
    return r;
  }

  CostModel cost_;
  uint64_t seed_;
  int32_t checkpoint_every_;
  std::vector<G> graphs_;
  int64_t iteration_ = 0;
  double wall_offset_s_ = 0;
  std::chrono::steady_clock::time_point start_;
};

class HdpLearner : public RunLearner {
 public:
  HdpLearner(const HdpConfig& config, std::vector<TrainGraph> graphs, const CostModel& cost,
             uint64_t seed, nn::Device device, int32_t checkpoint_every)
      : RunLearner(check_one(std::move(graphs)), cost, "hdp", seed, checkpoint_every),
        agent_(graphs_[0].run->problem(), config, seed, device) {}

  std::vector<IterationStats> step() override {
    ++iteration_;
    const HdpAgent::StepStats st = agent_.step(*graphs_[0].run, agent_.config().num_children);
    IterationStats r = row(0);
    r.mean_step_s = st.mean_step_s;
    r.invalid_frac = st.invalid_frac;
    r.entropy = st.entropy;
    r.loss = st.loss;
    return {r};
  }
  bool done(const place::Budget& b) const override {
    if (b.samples > 0 && total_samples() + agent_.config().num_children > b.samples) return true;
    return b.seconds > 0 && wall_s() >= b.seconds;
  }

 private:
  static std::vector<TrainGraph> check_one(std::vector<TrainGraph> graphs) {
    if (graphs.size() != 1)
      throw InputError(
          "train --method hdp: HDP trains on one graph (its grouper and placer are sized by the "
          "graph); give --graph and --cluster, not a suite of " +
          std::to_string(graphs.size()));
    return graphs;
  }
  nlohmann::ordered_json save_model(const std::string& bin) const override {
    return agent_.save(bin);
  }
  void load_model(const nlohmann::json& j, const std::string& bin,
                  const std::string& source) override {
    agent_.load(j, bin, source);
  }

  HdpAgent agent_;
};

class PlacetoLearner : public RunLearner {
 public:
  PlacetoLearner(const placeto::TrainConfig& config, std::vector<TrainGraph> graphs,
                 const CostModel& cost, uint64_t seed, nn::Device device,
                 const place::Budget& budget, int32_t checkpoint_every,
                 const placeto::PlacetoPolicy* init)
      : RunLearner(graphs, cost, "placeto", seed, checkpoint_every),
        agent_(init ? placeto::Agent(config, *init, seed, device)
                    : placeto::Agent(config, placeto_slots(config, graphs), seed, device)) {
    // Node limit per graph: max_nodes, lowered so that min_episodes episodes (at most N
    // samples each, after the initial one) fit the graph's share of a sample budget.
    int64_t limit = config.max_nodes;
    if (budget.samples > 0) {
      const int64_t share = budget.samples / static_cast<int64_t>(graphs_.size());
      limit = std::min<int64_t>(limit, std::max<int64_t>(1, (share - 1) / config.min_episodes));
    }
    for (size_t i = 0; i < graphs_.size(); ++i)
      agent_.add_graph(graphs_[i].run->problem(), static_cast<int32_t>(limit),
                       seed + 0x632be59bd9b4e019ULL * i);
  }

  std::vector<IterationStats> step() override {
    ++iteration_;
    std::vector<IterationStats> rows;
    for (size_t i = 0; i < graphs_.size(); ++i) {
      place::Run& run = *graphs_[i].run;
      IterationStats r;
      if (run.problem().num_devices() == 1) {  // one placement: simulate it once
        if (!agent_.begin(i, run)) continue;
        r = row(i);
        r.mean_step_s = agent_.initial_step_s(i);
      } else {
        const placeto::Agent::Episode ep = agent_.train_episode(i, run);
        r = row(i);
        r.mean_step_s = ep.mean_step_s;
        r.invalid_frac = ep.invalid_frac;
        r.entropy = ep.entropy;
        r.loss = ep.loss;
      }
      rows.push_back(r);
    }
    return rows;
  }
  bool done(const place::Budget& b) const override {
    if (b.seconds > 0 && wall_s() >= b.seconds) return true;
    // An episode simulates at most one placement per coarse node (plus the initial one).
    int64_t next = 0;
    bool settled = true;
    for (size_t i = 0; i < graphs_.size(); ++i) {
      next += agent_.groups(i) + 1;
      if (graphs_[i].run->problem().num_devices() > 1 && agent_.idle(i) < kIdleEpisodes)
        settled = false;
      if (graphs_[i].run->problem().num_devices() == 1 && graphs_[i].run->samples() == 0)
        settled = false;
    }
    if (settled) return true;
    return b.samples > 0 && total_samples() + next > b.samples;
  }

 private:
  static constexpr int32_t kIdleEpisodes = 20;  // as placeto::train: the policy has settled
  nlohmann::ordered_json save_model(const std::string& bin) const override {
    return agent_.save(bin);
  }
  void load_model(const nlohmann::json& j, const std::string& bin,
                  const std::string& source) override {
    agent_.load(j, bin, source);
  }

  placeto::Agent agent_;
};

}  // namespace

int32_t placeto_slots(const placeto::TrainConfig& config, const std::vector<TrainGraph>& graphs) {
  if (config.max_devices > 0) return config.max_devices;
  int32_t a = 1;
  for (const TrainGraph& g : graphs) a = std::max(a, g.cluster->num_devices());
  return a;
}

std::unique_ptr<Learner> make_hdp_learner(const HdpConfig& config, std::vector<TrainGraph> graphs,
                                          const CostModel& cost, uint64_t seed, nn::Device device,
                                          int32_t checkpoint_every) {
  return std::make_unique<HdpLearner>(config, std::move(graphs), cost, seed, device,
                                      checkpoint_every);
}

std::unique_ptr<Learner> make_placeto_learner(const placeto::TrainConfig& config,
                                              std::vector<TrainGraph> graphs, const CostModel& cost,
                                              uint64_t seed, nn::Device device,
                                              const place::Budget& budget, int32_t checkpoint_every,
                                              const placeto::PlacetoPolicy* init) {
  return std::make_unique<PlacetoLearner>(config, std::move(graphs), cost, seed, device, budget,
                                          checkpoint_every, init);
}

}  // namespace gdp::rl
