// GDP's trainer on disk and across ranks (rl/gdp/trainer.h): its part of the checkpoint frame
// (rl/run/learner.h), its keys of config.json, and the data-parallel exchange of every graph's
// row and state after each step (core/mpi.h).
#include <cmath>

#include "core/error.h"
#include "core/mpi.h"
#include "nn/checkpoint.h"
#include "rl/gdp/trainer.h"
#include "rl/run/stats.h"

namespace gdp::rl {

nlohmann::ordered_json Trainer::save_model(const std::string& bin) const {
  nn::save_checkpoint(bin, policy_->params(), adam_.get(), iteration_);
  nlohmann::ordered_json j;
  j["rng"] = rng_.state();
  return j;
}

void Trainer::load_model(const StrictJson& sj, const nlohmann::json& state, const std::string& bin,
                         int64_t iteration, const std::string& source) {
  int64_t user_step = 0;
  try {
    user_step = nn::load_checkpoint(bin, policy_->params(), adam_.get());
  } catch (const std::runtime_error& e) {
    throw InputError(source + ": checkpoint: " + e.what());
  }
  if (user_step != iteration)
    sj.fail("checkpoint", "the checkpoint holds iteration " + std::to_string(user_step) +
                              ", the state iteration " + std::to_string(iteration));
  if (!rng_.set_state(sj.string(state, "rng", ""))) sj.fail("rng", "expected a generator state");
}

nlohmann::ordered_json Trainer::config_json() const {
  nlohmann::ordered_json j;
  j["train"] = config_.to_json();
  j["train"]["policy"] = policy_->config().to_json();  // an init's policy config wins
  j["vocabulary"] = policy_->vocabulary().to_json();
  return j;
}

void Trainer::check_resume(const StrictJson& sj, const nlohmann::json& config) const {
  if (policy_->vocabulary().to_json() !=
      OpVocabulary::from_json(sj.object(config, "vocabulary", ""), sj.source()).to_json())
    sj.fail("vocabulary",
            "differs from the graphs' (were the graph files changed since the run started?)");
}

nlohmann::ordered_json Trainer::graph_state(size_t i) const {
  const GraphState& g = graphs_[i];
  nlohmann::ordered_json x = run_state_to_json(g.spec.name, *g.run);
  if (std::isfinite(g.imitation_accuracy)) x["imitation_accuracy"] = g.imitation_accuracy;
  if (g.elites.capacity() > 0) x["elites"] = g.elites.to_json();
  if (!g.greedy.empty()) x["greedy"] = g.greedy;
  if (g.anneal_t0 > 0) x["anneal_t0"] = g.anneal_t0;
  if (graphs_.size() > 1) x["rng"] = g.rng.state();
  return x;
}

void Trainer::restore_graph_state(const StrictJson& sj, const nlohmann::json& x,
                                  const std::string& p, size_t i) {
  GraphState& g = graphs_[i];
  sj.check_keys(x, p, run_state_keys(),
                {"imitation_accuracy", "elites", "greedy", "anneal_t0", "rng"});
  if (x.contains("imitation_accuracy"))
    g.imitation_accuracy = sj.number(x, "imitation_accuracy", p, 0, 1);
  const int32_t U = g.input.num_rows(), A = config_.policy.max_devices;
  if (x.contains("elites")) g.elites.from_json(sj, x.at("elites"), json_path(p, "elites"), U, A);
  g.anneal_t0 = x.contains("anneal_t0") ? sj.number(x, "anneal_t0", p, 0, 1e9) : 0;
  g.greedy.clear();
  if (x.contains("greedy")) {
    const nlohmann::json& a = sj.array(x, "greedy", p);
    if (static_cast<int32_t>(a.size()) != U)
      sj.fail(json_path(p, "greedy"), "expected " + std::to_string(U) + " unit devices");
    for (size_t u = 0; u < a.size(); ++u)
      g.greedy.push_back(static_cast<int32_t>(
          sj.integer_value(a[u], json_path(json_path(p, "greedy"), u), 0, A - 1)));
  }
  if (x.contains("rng") && !g.rng.set_state(sj.string(x, "rng", p)))
    sj.fail(json_path(p, "rng"), "expected a generator state");
  run_state_from_json(sj, x, p, g.spec.name, g.spec.graph->num_ops(), *g.run);
}

void Trainer::sync_graphs(std::vector<IterationStats>& rows) {
  for (size_t gi = 0; gi < graphs_.size(); ++gi) {
    GraphState& g = graphs_[gi];
    const int owner = g.owner;
    std::vector<double> packed(stats_width());
    pack_stats(rows[gi], packed.data());
    mpi_broadcast(packed.data(), static_cast<int64_t>(packed.size()), owner);
    std::string bytes = owner == rank_ ? graph_state(gi).dump() : std::string();
    mpi_broadcast(bytes, owner);
    if (owner == rank_) continue;
    unpack_stats(packed.data(), rows[gi]);
    const std::string source = "rank " + std::to_string(owner) + "'s state of " + g.spec.name;
    StrictJson sj(source);
    restore_graph_state(sj, sj.parse(bytes), "", gi);
  }
}

}  // namespace gdp::rl
