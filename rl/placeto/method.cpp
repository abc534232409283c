// The Placeto baseline as a place/ method ("placeto"): trains a fresh policy on the problem
// within the run's sample budget (rl/placeto/placeto.h) and returns the best placement it
// simulated.
#include "rl/placeto/method.h"

#include <cstdio>
#include <memory>

#include "core/error.h"
#include "rl/placeto/placeto.h"

namespace gdp::rl {

namespace {

class PlacetoPlacer : public place::Placer {
 public:
  explicit PlacetoPlacer(const place::Options& o)
      : cfg_(placeto::train_config(o)),
        checkpoint_(o.string("checkpoint")),
        samples_(o.integer("samples")) {}

  Placement place(place::Run& run) override {
    if (!checkpoint_.empty()) return zero_shot(run);
    const placeto::TrainReport r = placeto::train(run, cfg_);
    char note[256];
    std::snprintf(note, sizeof note,
                  "%lld episodes%s, %d coarse nodes (limit %d) of %d ops, best %.4g s, initial "
                  "%.4g s",
                  static_cast<long long>(r.episodes),
                  r.partial   ? " (+1 partial, not trained on)"
                  : r.settled ? " (settled: no change sampled)"
                              : "",
                  r.groups, r.node_limit, run.problem().graph().num_ops(), run.best_step_s(),
                  r.initial_step_s);
    run.set_note(note);
    if (run.has_best()) return run.best();
    throw InputError("placeto: no valid placement was simulated (budget " +
                     std::to_string(run.samples()) + " samples)");
  }

 private:
  // A trained policy (gdp train --method placeto) places the graph without learning: one
  // greedy episode, then `samples` sampled ones; each placement simulated once.
  Placement zero_shot(place::Run& run) {
    placeto::TrainConfig trained;
    const auto policy = load_placeto_policy(checkpoint_, &trained);
    placeto::Agent agent(trained, *policy, run.seed());
    agent.add_graph(run.problem(), trained.max_nodes, run.seed());
    Placement last;
    int64_t episodes = 0;
    for (int64_t k = 0; k <= samples_; ++k) {
      if (run.samples_left() < 1 || run.out_of_time()) break;
      agent.place_episode(0, run, k == 0);
      ++episodes;
    }
    char note[224];
    std::snprintf(
        note, sizeof note,
        "zero-shot from %s: greedy + %lld sampled placements, %d coarse nodes, best %.4g s",
        checkpoint_.c_str(), static_cast<long long>(episodes > 0 ? episodes - 1 : 0),
        agent.groups(0), run.best_step_s());
    run.set_note(note);
    if (run.has_best()) return run.best();
    throw InputError("placeto: zero-shot from " + checkpoint_ +
                     ": no valid placement (the budget allowed " + std::to_string(episodes) +
                     " samples)");
  }

  placeto::TrainConfig cfg_;
  std::string checkpoint_;
  int64_t samples_ = 0;
};

}  // namespace

place::MethodInfo placeto_method() {
  const placeto::TrainConfig d;
  return place::MethodInfo{
      "placeto",
      "Placeto (Addanki et al. 2019): coarsened graph, message-passing GNN over the current "
      "placement, visits groups in topological order, REINFORCE on per-step step-time "
      "improvements, trained within the budget",
      {place::integer_option(
           "max_nodes", d.max_nodes, 1, 5000,
           "coarse-node limit (colocation groups, then name scopes merged); at most 5000: the "
           "ancestor/descendant/parallel sets are O(nodes^2)"),
       place::integer_option("min_episodes", d.min_episodes, 1, 1 << 20,
                             "the node limit is lowered so that this many episodes fit the "
                             "sample budget"),
       place::integer_option("width", d.policy.width, 1, 1024, "embedding width W"),
       place::integer_option("rounds", d.policy.rounds, 0, 64,
                             "message-passing rounds per direction"),
       place::number_option("lr", d.lr, 1e-9, 1.0, "Adam learning rate"),
       place::number_option("entropy", d.entropy, 0.0, 100.0, "entropy bonus weight"),
       place::number_option("discount", d.discount, 0.0, 1.0, "discount of per-step rewards"),
       place::integer_option("baseline_episodes", d.baseline_episodes, 2, 1 << 20,
                             "per-round baseline: mean return of the last K episodes"),
       place::number_option("grad_clip", d.grad_clip, 0.0, 1e9,
                            "global gradient-norm bound; 0 = none"),
       place::number_option("invalid_penalty", d.invalid_penalty, 1.0, 1e9,
                            "an invalid (out-of-memory) placement counts as this x the serial "
                            "compute time"),
       place::string_option("init", d.init, {"random", "zero"},
                            "initial placement of every episode: one fixed random placement "
                            "per run, or all on device 0"),
       place::integer_option("max_devices", d.max_devices, 0, 64,
                             "policy device slots; 0 = the cluster's (a suite's largest) count"),
       place::string_option("checkpoint", "", {},
                            "a gdp train --method placeto DIR: place with its policy, no "
                            "training (zero-shot)"),
       place::integer_option("samples", 0, 0, int64_t{1} << 30,
                             "zero-shot: sampled placements after the greedy one")},
      true,
      [](const place::Options& o) { return std::make_unique<PlacetoPlacer>(o); }};
}

}  // namespace gdp::rl
