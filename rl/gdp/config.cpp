// TrainConfig's regimes and JSON (rl/gdp/config.h).
#include "rl/gdp/config.h"

#include "core/error.h"
#include "core/json_strict.h"
#include "place/registry.h"

namespace gdp::rl {

namespace {

int32_t int_key(const StrictJson& sj, const nlohmann::json& j, const char* key, int32_t def,
                int32_t lo, int32_t hi) {
  return j.contains(key) ? static_cast<int32_t>(sj.integer(j, key, "", lo, hi)) : def;
}
double num_key(const StrictJson& sj, const nlohmann::json& j, const char* key, double def,
               double lo, double hi) {
  return j.contains(key) ? sj.number(j, key, "", lo, hi) : def;
}

}  // namespace

TrainConfig TrainConfig::preset(const std::string& regime, const std::string& source) {
  TrainConfig c;
  if (regime == "search") return c;
  if (regime != "transfer")
    throw InputError(source + ": expected \"search\" or \"transfer\", got \"" + regime + "\"");
  c.regime = regime;
  c.policy.features = 2;
  c.policy.decision = "stage";
  c.samples_per_iteration = 16;
  c.imitation_steps = 0;
  c.warm_start.clear();
  c.elite.size = 0;
  c.explore.local_fraction = 0;
  c.ppo.baseline = Baseline::mean;
  c.ppo.std_floor = 0.01;
  c.type_dropout = 0.1;
  c.family_weights = true;
  return c;
}

TrainConfig TrainConfig::from_json(const nlohmann::json& j, const std::string& source,
                                   const std::string& default_regime) {
  StrictJson sj(source);
  sj.check_keys(
      j, "", {},
      {"regime", "policy", "ppo", "reward", "samples_per_iteration", "epochs", "minibatches", "lr",
       "grad_clip", "checkpoint_every", "keep_reference", "imitation_steps", "warm_start", "elite",
       "explore", "expert", "entropy_decay_iterations", "type_dropout", "family_weights"});
  TrainConfig c = preset(j.contains("regime") ? sj.string(j, "regime", "") : default_regime,
                         source + ": regime");
  if (j.contains("policy")) {
    // The regime's policy keys are the defaults of the given ones.
    nlohmann::json p = c.policy.to_json();
    for (const auto& [k, v] : sj.object(j, "policy", "").items()) p[k] = v;
    c.policy = PolicyConfig::from_json(p, source + ": policy");
  }
  if (j.contains("ppo")) {
    const nlohmann::json& p = sj.object(j, "ppo", "");
    StrictJson sp(source + ": ppo");
    sp.check_keys(p, "", {},
                  {"clip", "entropy_coef", "normalize_advantages", "baseline", "std_floor"});
    c.ppo.std_floor = num_key(sp, p, "std_floor", c.ppo.std_floor, 0, 1e6);
    c.ppo.clip = num_key(sp, p, "clip", c.ppo.clip, 0, 1);
    c.ppo.entropy_coef = num_key(sp, p, "entropy_coef", c.ppo.entropy_coef, 0, 10);
    if (p.contains("normalize_advantages"))
      c.ppo.normalize_advantages = sp.boolean(p, "normalize_advantages", "");
    if (p.contains("baseline")) {
      const std::string b = sp.string(p, "baseline", "");
      if (b == "mean")
        c.ppo.baseline = Baseline::mean;
      else if (b == "loo")
        c.ppo.baseline = Baseline::loo;
      else if (b == "rank")
        c.ppo.baseline = Baseline::rank;
      else
        sp.fail("baseline", "expected \"mean\", \"loo\" or \"rank\", got \"" + b + "\"");
    }
  }
  if (j.contains("reward")) {
    const nlohmann::json& r = sj.object(j, "reward", "");
    StrictJson sr(source + ": reward");
    sr.check_keys(r, "", {}, {"invalid_penalty"});
    c.reward.invalid_penalty = num_key(sr, r, "invalid_penalty", c.reward.invalid_penalty, -1e6, 0);
  }
  c.samples_per_iteration =
      int_key(sj, j, "samples_per_iteration", c.samples_per_iteration, 1, 4096);
  c.epochs = int_key(sj, j, "epochs", c.epochs, 1, 100);
  c.minibatches = int_key(sj, j, "minibatches", c.minibatches, 1, 4096);
  if (c.minibatches > c.samples_per_iteration)
    sj.fail("minibatches", "expected at most samples_per_iteration (" +
                               std::to_string(c.samples_per_iteration) + ")");
  c.lr = num_key(sj, j, "lr", c.lr, 0, 10);
  c.grad_clip = num_key(sj, j, "grad_clip", c.grad_clip, 0, 1e9);
  c.checkpoint_every = int_key(sj, j, "checkpoint_every", c.checkpoint_every, 0, 1 << 30);
  if (j.contains("keep_reference")) c.keep_reference = sj.boolean(j, "keep_reference", "");
  c.imitation_steps = int_key(sj, j, "imitation_steps", c.imitation_steps, 0, 1 << 20);
  if (j.contains("warm_start")) {
    const nlohmann::json& w = sj.array(j, "warm_start", "");
    const place::Registry& reg = place::registry();
    c.warm_start.clear();  // the given list replaces the default one
    for (size_t i = 0; i < w.size(); ++i) {
      if (!w[i].is_string()) sj.fail(json_path("warm_start", i), "expected a method name");
      const std::string m = w[i].get<std::string>();
      if (m == "gdp") sj.fail(json_path("warm_start", i), "gdp cannot warm-start itself");
      if (!reg.find(m))
        sj.fail(
            json_path("warm_start", i), "unknown method '" + m + "' (known: " + [&] {
              std::string k;
              for (const auto& n : reg.names()) k += (k.empty() ? "" : ", ") + n;
              return k;
            }() + ")");
      c.warm_start.push_back(m);
    }
  }
  if (j.contains("elite")) {
    const nlohmann::json& e = sj.object(j, "elite", "");
    StrictJson se(source + ": elite");
    se.check_keys(e, "", {}, {"size", "weight", "decay_iterations"});
    c.elite.size = int_key(se, e, "size", c.elite.size, 0, 4096);
    c.elite.weight = num_key(se, e, "weight", c.elite.weight, 0, 1e6);
    c.elite.decay_iterations =
        int_key(se, e, "decay_iterations", c.elite.decay_iterations, 0, 1 << 30);
  }
  if (j.contains("explore")) {
    const nlohmann::json& e = sj.object(j, "explore", "");
    StrictJson se(source + ": explore");
    se.check_keys(e, "", {},
                  {"local_fraction", "block_fraction", "uniform_mix", "p_run", "p_block",
                   "p_boundary", "p_scope"});
    c.explore.local_fraction = num_key(se, e, "local_fraction", c.explore.local_fraction, 0, 1);
    c.explore.block_fraction = num_key(se, e, "block_fraction", c.explore.block_fraction, 0, 1);
    c.explore.uniform_mix = num_key(se, e, "uniform_mix", c.explore.uniform_mix, 0, 1);
    c.explore.p_run = num_key(se, e, "p_run", c.explore.p_run, 0, 1);
    c.explore.p_block = num_key(se, e, "p_block", c.explore.p_block, 0, 1);
    c.explore.p_boundary = num_key(se, e, "p_boundary", c.explore.p_boundary, 0, 1);
    c.explore.p_scope = num_key(se, e, "p_scope", c.explore.p_scope, 0, 1);
    if (c.explore.p_run + c.explore.p_block <= 0)
      se.fail("p_run", "p_run + p_block must be positive (the moves every graph has)");
  }
  if (j.contains("expert")) {
    const nlohmann::json& e = sj.object(j, "expert", "");
    StrictJson se(source + ": expert");
    se.check_keys(e, "", {}, {"anneal_samples", "mix", "t_ratio"});
    c.expert.anneal_samples = int_key(se, e, "anneal_samples", c.expert.anneal_samples, 0, 1 << 20);
    c.expert.mix = num_key(se, e, "mix", c.expert.mix, 0, 1);
    c.expert.t_ratio = num_key(se, e, "t_ratio", c.expert.t_ratio, 1e-9, 1);
    if (c.expert.anneal_samples > 0 && c.elite.size == 0)
      se.fail("anneal_samples", "expert iteration imitates the elites: needs elite.size > 0");
  }
  c.entropy_decay_iterations =
      int_key(sj, j, "entropy_decay_iterations", c.entropy_decay_iterations, 0, 1 << 30);
  c.type_dropout = num_key(sj, j, "type_dropout", c.type_dropout, 0, 1);
  if (j.contains("family_weights")) c.family_weights = sj.boolean(j, "family_weights", "");
  return c;
}

nlohmann::ordered_json TrainConfig::to_json() const {
  nlohmann::ordered_json j;
  j["regime"] = regime;
  j["policy"] = policy.to_json();
  j["ppo"] = {{"clip", ppo.clip},
              {"entropy_coef", ppo.entropy_coef},
              {"normalize_advantages", ppo.normalize_advantages},
              {"baseline", baseline_name(ppo.baseline)},
              {"std_floor", ppo.std_floor}};
  j["reward"] = {{"invalid_penalty", reward.invalid_penalty}};
  j["samples_per_iteration"] = samples_per_iteration;
  j["epochs"] = epochs;
  j["minibatches"] = minibatches;
  j["lr"] = lr;
  j["grad_clip"] = grad_clip;
  j["checkpoint_every"] = checkpoint_every;
  j["keep_reference"] = keep_reference;
  j["imitation_steps"] = imitation_steps;
  j["warm_start"] = warm_start;
  j["elite"] = {
      {"size", elite.size}, {"weight", elite.weight}, {"decay_iterations", elite.decay_iterations}};
  j["explore"] = {{"local_fraction", explore.local_fraction},
                  {"block_fraction", explore.block_fraction},
                  {"uniform_mix", explore.uniform_mix},
                  {"p_run", explore.p_run},
                  {"p_block", explore.p_block},
                  {"p_boundary", explore.p_boundary},
                  {"p_scope", explore.p_scope}};
  j["expert"] = {
      {"anneal_samples", expert.anneal_samples}, {"mix", expert.mix}, {"t_ratio", expert.t_ratio}};
  j["entropy_decay_iterations"] = entropy_decay_iterations;
  j["type_dropout"] = type_dropout;
  j["family_weights"] = family_weights;
  return j;
}

}  // namespace gdp::rl
