// Placeto as a learner of `gdp train --method placeto` (rl/placeto/method.h), and its trained
// policy read back from a run. It does not simulate the reference placement as a sample (GDP's
// keep_reference): it starts from its own policy, as in its paper; the reference is simulated
// outside the budget for the summary's speed-up only.
#include <algorithm>
#include <memory>

#include "core/error.h"
#include "place/options.h"
#include "rl/placeto/method.h"

namespace gdp::rl {

namespace {

place::Options resolved(const nlohmann::json& options, const std::string& source) {
  return place::resolve_options("placeto", placeto_method().options, options, source);
}

class PlacetoLearner : public RunLearner {
 public:
  PlacetoLearner(const nlohmann::json& options, const placeto::TrainConfig& config,
                 std::vector<TrainGraph> graphs, const CostModel& cost, uint64_t seed,
                 nn::Device device, const place::Budget& budget, int32_t checkpoint_every,
                 const placeto::PlacetoPolicy* init)
      : RunLearner(graphs, cost, "placeto", seed, checkpoint_every, options),
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
  nlohmann::ordered_json save_agent(const std::string& bin) const override {
    return agent_.save(bin);
  }
  void load_agent(const nlohmann::json& j, const std::string& bin,
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

std::unique_ptr<placeto::PlacetoPolicy> load_placeto_policy(const std::string& dir,
                                                            placeto::TrainConfig* config) {
  const RunConfig c = read_method_run(dir, "placeto", "Placeto", {"options"});
  const std::string& path = c.sj.source();
  const placeto::TrainConfig cfg =
      placeto::train_config(resolved(stored_place_options(c), path + ": options"));
  if (cfg.max_devices < 1)
    throw InputError(path + ": options.max_devices: expected the policy's device slots (>= 1)");
  auto policy = std::make_unique<placeto::PlacetoPolicy>(cfg.max_devices, cfg.policy, c.spec.seed);
  load_parameters(dir, policy->params());
  if (config) *config = cfg;
  return policy;
}

LearnerMethod placeto_learner() {
  LearnerMethod m;
  m.name = "placeto";
  m.config_keys = {"options"};
  m.stored_options = stored_place_options;
  m.make = [](const LearnerArgs& a) -> std::unique_ptr<Learner> {
    const std::string source = a.source + ": options";
    const place::Options o = resolved(a.spec.options, source);
    if (!o.string("checkpoint").empty())
      throw InputError(source +
                       ".checkpoint: is for placing with a trained policy (gdp place); to "
                       "train from one give --init DIR");
    nlohmann::json options = o.json();
    placeto::TrainConfig cfg = placeto::train_config(o);
    // The device slots are fixed now, so that a policy read back from the run has the shape.
    if (a.spec.init_dir.empty())
      options["max_devices"] = cfg.max_devices = placeto_slots(cfg, a.graphs);
    std::unique_ptr<placeto::PlacetoPolicy> init;
    if (!a.spec.init_dir.empty()) init = load_placeto_policy(a.spec.init_dir, nullptr);
    return std::make_unique<PlacetoLearner>(options, cfg, a.graphs, a.cost, a.spec.seed,
                                            device_of(a.spec), a.spec.budget, 1, init.get());
  };
  return m;
}

}  // namespace gdp::rl
