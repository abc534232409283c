// What `gdp train` drives (rl/run/session.h): a learned placer trained iteration by iteration
// against the simulator, on one graph or several, with a checkpoint a resumed run continues
// from. The run layer (rl/run/) knows no method: GDP's PPO trainer (rl/gdp/trainer.h), HDP
// (rl/hdp/learner.cpp) and Placeto (rl/placeto/learner.cpp) implement Learner and register
// themselves (rl/run/registry.h, rl/methods.cpp), so that the command line, logs, checkpoints,
// --resume and summary.json treat every learned method alike.
//
// Shared pieces: the reference placement a summary compares against, the per-graph part of a
// checkpoint (samples, best placement, curve, seconds run; place::Run's bookkeeping), and the
// one checkpoint frame (FramedLearner: state.json + ckpt-<iteration>.bin) every learner saves
// through.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/graph.h"
#include "core/json_strict.h"
#include "place/problem.h"
#include "place/run.h"

namespace gdp::rl {

// A graph to train on (the caller owns graph and cluster; they outlive the learner). With a
// `run` (a place/ method's run: its problem, budget accounting and best), the learner
// simulates through it; else it makes its own problem and run.
struct TrainGraph {
  std::string name;
  const Graph* graph = nullptr;
  const Cluster* cluster = nullptr;
  place::Run* run = nullptr;
  // The graph's family (a suite entry's model, "random/<family>" for the random families;
  // empty: a family of its own). GDP's transfer regime weighs families, not graphs, equally.
  std::string family = {};
};

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// One row of the log: an iteration on one graph. The log's columns and the ranks' exchange
// read the fields through one table (rl/run/stats.h).
struct IterationStats {
  int64_t iteration = 0;
  std::string graph;
  int64_t samples = 0;     // of this graph, so far
  double wall_s = 0;       // of the run, so far
  double best_step_s = 0;  // of this graph, so far (+inf when none valid yet)
  double mean_step_s = 0;  // over this iteration's valid samples (+inf when none)
  double invalid_frac = 0;
  double entropy = 0;  // mean per decision, nats
  double loss = 0;     // the last update's loss
  double approx_kl = 0;
  double clip_fraction = 0;
  // GDP's diagnostics (docs/ppo.md, "Diagnosis"); NaN where a learner has none.
  double reward_std = kNaN;   // population std of the on-policy rewards (advantage spread)
  double signal_t = kNaN;     // mean |t| of the per-unit gradient estimates (noise ~0.8)
  double grad_norm = kNaN;    // global L2 norm before clipping, the last update
  double entropy_p10 = kNaN;  // quantiles of the per-unit entropies, nats
  double entropy_p50 = kNaN;
  double entropy_p90 = kNaN;
  double greedy_changed = kNaN;  // fraction of units whose greedy device changed
  double elite_ce = kNaN;        // the elite cross-entropy, mean over elites and units
  int64_t local_samples = 0;     // of this iteration's samples, local proposals
  // Counterfactual probes (GDP's TrainConfig::counterfactual): the mean over probes of the
  // step-time fraction the probed unit's best device saves over the sample's, and the fraction
  // of probes where the policy's most likely device is that best one.
  double cf_gain = kNaN;
  double cf_agree = kNaN;
};

class Learner {
 public:
  virtual ~Learner() = default;
  // One iteration (GDP, HDP: one policy update; Placeto: one episode per graph). Returns one
  // row per graph it touched.
  virtual std::vector<IterationStats> step() = 0;
  // The next iteration would exceed the budget, or its seconds are spent.
  virtual bool done(const place::Budget& budget) const = 0;
  virtual int64_t iteration() const = 0;
  // Iterations between checkpoints (0: only at the end).
  virtual int32_t checkpoint_every() const = 0;

  virtual size_t num_graphs() const = 0;
  virtual const TrainGraph& graph(size_t i) const = 0;
  virtual const place::Run& run(size_t i) const = 0;
  // The reference placement's step time (human, else single, else round-robin: the first
  // valid) and its method, for the summary.
  virtual double reference_step_s(size_t i) const = 0;
  virtual const std::string& reference_method(size_t i) const = 0;
  // GDP's warm start only (NaN otherwise).
  virtual double imitation_accuracy(size_t) const {
    return std::numeric_limits<double>::quiet_NaN();
  }
  virtual double wall_s() const = 0;

  // The keys of config.json the method owns (its resolved configuration), written beside the
  // run's own keys when the run starts (rl/run/session.h).
  virtual nlohmann::ordered_json config_json() const = 0;
  // On resume: checks that the stored config.json (`config`, read through `sj`) still fits
  // the learner built from it (GDP: the op vocabulary of the graphs). Nothing by default.
  virtual void check_resume(const StrictJson& sj, const nlohmann::json& config) const {
    (void)sj;
    (void)config;
  }

  int64_t total_samples() const;
  // Samples and run seconds at which graph i's best was first reached.
  int64_t samples_to_best(size_t i) const;
  double seconds_to_best(size_t i) const;

  // Checkpoint into `dir`: state.json (format "gdp-train-state") naming a ckpt-<iteration>.bin,
  // each written atomically, the state last, so that a kill at any moment leaves a
  // consistent pair. `log_bytes` is stored so that a resumed run cuts the log back to it.
  virtual void save(const std::string& dir, int64_t log_bytes) const = 0;
  // Restores a save() of a learner built with the same configuration, graphs and seed.
  // Returns the stored log_bytes. InputError naming the file on anything inconsistent.
  virtual int64_t load(const std::string& dir) = 0;
};

// The one checkpoint frame. state.json holds
//   {format "gdp-train-state", version 1, iteration, checkpoint "ckpt-<iteration>.bin", seed,
//    wall_s, log_bytes, graphs: [per graph {name, samples, elapsed_s, best_step_s, best, curve,
//    and the learner's own keys}], and the learner's own keys}
// and the .bin the model's parameters (and optimizer), written by the learner. A learner
// derives from it and fills in the model's part; the frame owns the iteration count and the
// run's clock.
class FramedLearner : public Learner {
 public:
  int64_t iteration() const override { return iteration_; }
  double wall_s() const override;
  void save(const std::string& dir, int64_t log_bytes) const final;
  int64_t load(const std::string& dir) final;

 protected:
  explicit FramedLearner(uint64_t seed);

  // Writes the model to `bin` (a path) and returns its keys of state.json.
  virtual nlohmann::ordered_json save_model(const std::string& bin) const = 0;
  // The keys save_model returns (load checks them as required).
  virtual std::vector<std::string> model_keys() const = 0;
  // Restores the model from `bin` and its keys of `state`, whose iteration is `iteration`.
  // `source`: state.json's path, for messages.
  virtual void load_model(const StrictJson& sj, const nlohmann::json& state, const std::string& bin,
                          int64_t iteration, const std::string& source) = 0;
  // Graph i's entry of state.json (default: the run's six keys, run_state_to_json) and back
  // (RunLearner: those six keys checked and restored).
  virtual nlohmann::ordered_json graph_state(size_t i) const;
  virtual void restore_graph_state(const StrictJson& sj, const nlohmann::json& x,
                                   const std::string& p, size_t i) = 0;

  uint64_t seed_;
  int64_t iteration_ = 0;
  double wall_offset_s_ = 0;  // run seconds before a resume
  std::chrono::steady_clock::time_point start_;
};

// The checkpoint file a run directory's state.json names (its path), for reading a trained
// policy's parameters back (rl/run/run_dir.h load_parameters). InputError naming state.json.
std::string checkpoint_path(const std::string& dir);

// The reference placement of a problem: human, else single, else round-robin, the first whose
// simulation is valid (not counted as a sample). Throws InputError naming `graph_name` when
// none is.
struct Reference {
  Placement placement;
  double step_s = 0;
  std::string method;
};
Reference reference_placement(const place::Problem& problem, uint64_t seed,
                              const std::string& graph_name);

// Owns a problem and a run per graph unless the TrainGraph brings its run.
struct OwnedRun {
  std::unique_ptr<place::Problem> problem;
  std::unique_ptr<place::Run> run;
};
place::Run* attach_run(const TrainGraph& g, const CostModel& cost, const std::string& method,
                       uint64_t seed, OwnedRun& own);

// The per-graph part of state.json: {name, samples, elapsed_s, best_step_s, best, curve}.
nlohmann::ordered_json run_state_to_json(const std::string& name, const place::Run& run);
// Restores it into `run` (checking the name and the op count). `p` is the JSON path of `x`; the
// caller checks x's keys (these six and its own).
void run_state_from_json(const StrictJson& sj, const nlohmann::json& x, const std::string& p,
                         const std::string& name, int32_t num_ops, place::Run& run);
// The six keys run_state_to_json writes.
const std::vector<std::string>& run_state_keys();

// Removes the ckpt-*.bin files of `dir` other than `keep` (older checkpoints).
void remove_old_checkpoints(const std::string& dir, const std::string& keep);

// A learner over graphs that each own a run and a reference, configured by a place method's
// options (HDP, Placeto: rl/hdp/learner.cpp, rl/placeto/learner.cpp): the frame plus the
// graphs, the row every iteration starts from, and config.json's "options" (the resolved
// options, as given).
class RunLearner : public FramedLearner {
 public:
  RunLearner(std::vector<TrainGraph> graphs, const CostModel& cost, const std::string& method,
             uint64_t seed, int32_t checkpoint_every,
             nlohmann::json options = nlohmann::json::object());
  nlohmann::ordered_json config_json() const override;

  int32_t checkpoint_every() const override { return checkpoint_every_; }
  size_t num_graphs() const override { return graphs_.size(); }
  const TrainGraph& graph(size_t i) const override { return graphs_[i].spec; }
  const place::Run& run(size_t i) const override { return *graphs_[i].run; }
  double reference_step_s(size_t i) const override { return graphs_[i].ref.step_s; }
  const std::string& reference_method(size_t i) const override { return graphs_[i].ref.method; }

 protected:
  struct G {
    TrainGraph spec;
    OwnedRun own;
    place::Run* run = nullptr;
    Reference ref;
  };
  // The model's state under state.json's "model" key (the frame's model_keys).
  virtual nlohmann::ordered_json save_agent(const std::string& bin) const = 0;
  virtual void load_agent(const nlohmann::json& j, const std::string& bin,
                          const std::string& source) = 0;
  // Graph i's row with the frame's fields filled in (iteration, graph, samples, clock, best).
  IterationStats row(size_t i) const;
  void restore_graph_state(const StrictJson& sj, const nlohmann::json& x, const std::string& p,
                           size_t i) override;

  CostModel cost_;
  int32_t checkpoint_every_;
  nlohmann::json options_;
  std::vector<G> graphs_;

 private:
  nlohmann::ordered_json save_model(const std::string& bin) const final;
  std::vector<std::string> model_keys() const final { return {"model"}; }
  void load_model(const StrictJson& sj, const nlohmann::json& state, const std::string& bin,
                  int64_t iteration, const std::string& source) final;
};

}  // namespace gdp::rl
