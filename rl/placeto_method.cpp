// The Placeto baseline as a place/ method ("placeto"): trains a fresh policy on the problem
// within the run's sample budget (rl/placeto.h) and returns the best placement it simulated.
#include <cstdio>
#include <memory>

#include "core/error.h"
#include "rl/placeto.h"
#include "rl/register.h"

namespace gdp::rl {

namespace {

class PlacetoPlacer : public place::Placer {
 public:
  explicit PlacetoPlacer(const place::Options& o) {
    cfg_.max_nodes = static_cast<int32_t>(o.integer("max_nodes"));
    cfg_.min_episodes = static_cast<int32_t>(o.integer("min_episodes"));
    cfg_.policy.width = static_cast<int32_t>(o.integer("width"));
    cfg_.policy.rounds = static_cast<int32_t>(o.integer("rounds"));
    cfg_.lr = o.number("lr");
    cfg_.entropy = o.number("entropy");
    cfg_.discount = o.number("discount");
    cfg_.baseline_episodes = static_cast<int32_t>(o.integer("baseline_episodes"));
    cfg_.grad_clip = o.number("grad_clip");
    cfg_.invalid_penalty = o.number("invalid_penalty");
    cfg_.init = o.string("init");
  }

  Placement place(place::Run& run) override {
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
  placeto::TrainConfig cfg_;
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
                            "per run, or all on device 0")},
      true,
      [](const place::Options& o) { return std::make_unique<PlacetoPlacer>(o); }};
}

}  // namespace gdp::rl
