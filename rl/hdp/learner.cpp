// HDP as a learner of `gdp train --method hdp` (rl/hdp/method.h): one graph (HDP is
// transductive: the grouper and placer are sized by the graph); an iteration is one REINFORCE
// update of num_children placements. It does not simulate the reference placement as a sample
// (GDP's keep_reference): it starts from its own policy, as in its paper; the reference is
// simulated outside the budget for the summary's speed-up only.
#include <memory>

#include "core/error.h"
#include "place/options.h"
#include "rl/hdp/hdp.h"
#include "rl/hdp/method.h"

namespace gdp::rl {

namespace {

class HdpLearner : public RunLearner {
 public:
  HdpLearner(const nlohmann::json& options, const HdpConfig& config, std::vector<TrainGraph> graphs,
             const CostModel& cost, uint64_t seed, nn::Device device, int32_t checkpoint_every)
      : RunLearner(check_one(std::move(graphs)), cost, "hdp", seed, checkpoint_every, options),
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
  nlohmann::ordered_json save_agent(const std::string& bin) const override {
    return agent_.save(bin);
  }
  void load_agent(const nlohmann::json& j, const std::string& bin,
                  const std::string& source) override {
    agent_.load(j, bin, source);
  }

  HdpAgent agent_;
};

}  // namespace

LearnerMethod hdp_learner() {
  LearnerMethod m;
  m.name = "hdp";
  m.config_keys = {"options"};
  m.stored_options = stored_place_options;
  m.make = [](const LearnerArgs& a) -> std::unique_ptr<Learner> {
    const place::Options o =
        place::resolve_options("hdp", hdp_method().options, a.spec.options, a.source + ": options");
    if (!a.spec.init_dir.empty())
      throw InputError(a.source + ": init: hdp does not start from a run");
    const int32_t every = 100;  // iterations between checkpoints unless the run says otherwise
    return std::make_unique<HdpLearner>(o.json(), hdp_config(o), a.graphs, a.cost, a.spec.seed,
                                        device_of(a.spec), every);
  };
  return m;
}

}  // namespace gdp::rl
