// TrainConfig's regimes and JSON (rl/gdp/config.h).
#include "rl/gdp/config.h"

#include <algorithm>
#include <initializer_list>
#include <variant>

#include "core/error.h"
#include "core/json_strict.h"
#include "place/registry.h"

namespace gdp::rl {

namespace {

// One key of a config struct: its JSON name, the member it reads and writes, and the range an
// integer or a number must lie in. Each struct's table below is the one list of its keys: the
// strict reader's allowed keys, the reader and to_json all go through it.
template <typename S>
struct Key {
  const char* name;
  std::variant<int32_t S::*, double S::*, bool S::*> member;
  double lo = 0, hi = 0;
};

template <typename S>
std::vector<std::string> names_of(const std::vector<Key<S>>& keys,
                                  std::initializer_list<const char*> more = {}) {
  std::vector<std::string> n;
  for (const Key<S>& k : keys) n.emplace_back(k.name);
  for (const char* m : more) n.emplace_back(m);
  return n;
}

// Reads the keys of `keys` that `j` holds into `s` (the others keep their values).
template <typename S>
void read_keys(const StrictJson& sj, const nlohmann::json& j, const std::vector<Key<S>>& keys,
               S& s) {
  for (const Key<S>& k : keys) {
    if (!j.contains(k.name)) continue;
    if (auto m = std::get_if<int32_t S::*>(&k.member))
      s.** m = static_cast<int32_t>(
          sj.integer(j, k.name, "", static_cast<int64_t>(k.lo), static_cast<int64_t>(k.hi)));
    else if (auto d = std::get_if<double S::*>(&k.member))
      s.** d = sj.number(j, k.name, "", k.lo, k.hi);
    else
      s.*std::get<bool S::*>(k.member) = sj.boolean(j, k.name, "");
  }
}

template <typename S>
nlohmann::ordered_json write_keys(const std::vector<Key<S>>& keys, const S& s) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const Key<S>& k : keys) std::visit([&](auto m) { j[k.name] = s.*m; }, k.member);
  return j;
}

// A section (an object under `name`) of a struct with its own table, strictly: `more` are
// keys the caller reads itself. Returns the section (an empty object when absent).
template <typename S>
const nlohmann::json& read_section(const StrictJson& sj, const nlohmann::json& j, const char* name,
                                   const std::string& source, const std::vector<Key<S>>& keys, S& s,
                                   std::initializer_list<const char*> more = {}) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  if (!j.contains(name)) return kEmpty;
  const nlohmann::json& o = sj.object(j, name, "");
  const StrictJson ss(source + ": " + name);
  ss.check_keys(o, "", {}, names_of(keys, more));
  read_keys(ss, o, keys, s);
  return o;
}

const std::vector<Key<PpoConfig>>& ppo_keys() {
  using S = PpoConfig;
  static const std::vector<Key<S>> k = {{"clip", &S::clip, 0, 1},
                                        {"entropy_coef", &S::entropy_coef, 0, 10},
                                        {"normalize_advantages", &S::normalize_advantages},
                                        {"std_floor", &S::std_floor, 0, 1e6}};
  return k;  // and "baseline" (an enum)
}

const std::vector<Key<RewardConfig>>& reward_keys() {
  using S = RewardConfig;
  static const std::vector<Key<S>> k = {{"invalid_penalty", &S::invalid_penalty, -1e6, 0}};
  return k;
}

const std::vector<Key<EliteConfig>>& elite_keys() {
  using S = EliteConfig;
  static const std::vector<Key<S>> k = {{"size", &S::size, 0, 4096},
                                        {"weight", &S::weight, 0, 1e6},
                                        {"decay_iterations", &S::decay_iterations, 0, 1 << 30}};
  return k;
}

const std::vector<Key<ExploreConfig>>& explore_keys() {
  using S = ExploreConfig;
  static const std::vector<Key<S>> k = {{"local_fraction", &S::local_fraction, 0, 1},
                                        {"block_fraction", &S::block_fraction, 0, 1},
                                        {"uniform_mix", &S::uniform_mix, 0, 1},
                                        {"p_run", &S::p_run, 0, 1},
                                        {"p_block", &S::p_block, 0, 1},
                                        {"p_boundary", &S::p_boundary, 0, 1},
                                        {"p_scope", &S::p_scope, 0, 1}};
  return k;
}

const std::vector<Key<ExpertConfig>>& expert_keys() {
  using S = ExpertConfig;
  static const std::vector<Key<S>> k = {{"anneal_samples", &S::anneal_samples, 0, 1 << 20},
                                        {"mix", &S::mix, 0, 1},
                                        {"t_ratio", &S::t_ratio, 1e-9, 1}};
  return k;
}

const std::vector<Key<CounterfactualConfig>>& counterfactual_keys() {
  using S = CounterfactualConfig;
  static const std::vector<Key<S>> k = {{"units", &S::units, 0, 1 << 16},
                                        {"weight", &S::weight, 0, 1e6}};
  return k;
}

// fine_tune_zero_shot's scalar keys (and "decode", "allocate": strings; `samples` is
// fine_tune_seeds - 1, `source` the checkpoint's).
const std::vector<Key<ZeroShotOptions>>& zero_shot_keys() {
  using S = ZeroShotOptions;
  static const std::vector<Key<S>> k = {{"temperature", &S::temperature, 0.05, 100},
                                        {"every_count", &S::every_count}};
  return k;
}

// TrainConfig's own scalar keys (the sections, regime, policy and warm_start aside).
const std::vector<Key<TrainConfig>>& train_keys() {
  using S = TrainConfig;
  static const std::vector<Key<S>> k = {
      {"samples_per_iteration", &S::samples_per_iteration, 1, 4096},
      {"epochs", &S::epochs, 1, 100},
      {"minibatches", &S::minibatches, 1, 4096},
      {"lr", &S::lr, 0, 10},
      {"grad_clip", &S::grad_clip, 0, 1e9},
      {"checkpoint_every", &S::checkpoint_every, 0, 1 << 30},
      {"keep_reference", &S::keep_reference},
      {"imitation_steps", &S::imitation_steps, 0, 1 << 20},
      {"entropy_decay_iterations", &S::entropy_decay_iterations, 0, 1 << 30},
      {"type_dropout", &S::type_dropout, 0, 1},
      {"family_weights", &S::family_weights},
      {"fine_tune_seeds", &S::fine_tune_seeds, 0, 4096},
      {"fine_tune_warm_start", &S::fine_tune_warm_start}};
  return k;
}

}  // namespace

TrainConfig TrainConfig::preset(const std::string& regime, const std::string& source) {
  TrainConfig c;
  if (regime == "search") return c;
  if (regime != "transfer")
    throw InputError(source + ": expected \"search\" or \"transfer\", got \"" + regime + "\"");
  c.regime = regime;
  // Op decisions with plain PPO over the stage-coordinate and concurrency features (features
  // 4). scripts/pretrain.sh then continues the run for 30 iterations with the joint op + stage
  // decisions (`decisions`, --init): the pair measured best on holdout.json over 3 seeds
  // (docs/results.md, "Op first, then joint: the shipped policy"). Stage decisions with a
  // devices-used row, joint training from the start, type dropout, family weights and the std
  // floor each measured worse (docs/ppo.md, "Regimes").
  c.policy.features = 4;
  c.samples_per_iteration = 16;
  c.imitation_steps = 0;
  c.warm_start.clear();
  c.elite.size = 0;
  c.explore.local_fraction = 0;
  c.ppo.baseline = Baseline::mean;
  c.fine_tune_decision = "";  // a suite's fine-tuning keeps the checkpoint's decisions
  c.fine_tune_warm_start = false;
  return c;
}

TrainConfig TrainConfig::from_json(const nlohmann::json& j, const std::string& source,
                                   const std::string& default_regime) {
  StrictJson sj(source);
  sj.check_keys(j, "", {},
                names_of(train_keys(), {"regime", "policy", "ppo", "reward", "warm_start", "elite",
                                        "explore", "expert", "counterfactual", "fine_tune_decision",
                                        "fine_tune_zero_shot", "decisions", "freeze"}));
  TrainConfig c = preset(j.contains("regime") ? sj.string(j, "regime", "") : default_regime,
                         source + ": regime");
  if (j.contains("policy")) {
    // The regime's policy keys are the defaults of the given ones.
    nlohmann::json p = c.policy.to_json();
    for (const auto& [k, v] : sj.object(j, "policy", "").items()) p[k] = v;
    c.policy = PolicyConfig::from_json(p, source + ": policy");
  }
  const nlohmann::json& ppo = read_section(sj, j, "ppo", source, ppo_keys(), c.ppo, {"baseline"});
  if (ppo.contains("baseline")) {
    const StrictJson sp(source + ": ppo");
    const std::string b = sp.string(ppo, "baseline", "");
    if (b == "mean")
      c.ppo.baseline = Baseline::mean;
    else if (b == "loo")
      c.ppo.baseline = Baseline::loo;
    else if (b == "rank")
      c.ppo.baseline = Baseline::rank;
    else if (b == "top")
      c.ppo.baseline = Baseline::top;
    else
      sp.fail("baseline", "expected \"mean\", \"loo\", \"rank\" or \"top\", got \"" + b + "\"");
  }
  read_section(sj, j, "reward", source, reward_keys(), c.reward);
  read_keys(sj, j, train_keys(), c);
  if (j.contains("fine_tune_decision")) {
    c.fine_tune_decision = sj.string(j, "fine_tune_decision", "");
    if (!c.fine_tune_decision.empty())  // "" keeps the checkpoint's; else a policy's decision
      PolicyConfig::from_json({{"decision", c.fine_tune_decision}},
                              source + ": fine_tune_decision");
  }
  if (c.minibatches > c.samples_per_iteration)
    sj.fail("minibatches", "expected at most samples_per_iteration (" +
                               std::to_string(c.samples_per_iteration) + ")");
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
  if (j.contains("decisions")) {
    const nlohmann::json& d = sj.array(j, "decisions", "");
    c.decisions.clear();
    for (size_t i = 0; i < d.size(); ++i) {
      if (!d[i].is_string() || (d[i] != "op" && d[i] != "stage" && d[i] != "cut" && d[i] != "mix"))
        sj.fail(json_path("decisions", i), "expected \"op\", \"stage\", \"cut\" or \"mix\"");
      const std::string x = d[i].get<std::string>();
      if (std::find(c.decisions.begin(), c.decisions.end(), x) != c.decisions.end())
        sj.fail(json_path("decisions", i), "\"" + x + "\" is listed twice");
      c.decisions.push_back(x);
    }
  }
  if (j.contains("freeze")) {
    const nlohmann::json& f = sj.array(j, "freeze", "");
    c.freeze.clear();
    for (size_t i = 0; i < f.size(); ++i) {
      if (!f[i].is_string() || f[i].get<std::string>().empty())
        sj.fail(json_path("freeze", i), "expected a parameter name or name prefix");
      c.freeze.push_back(f[i].get<std::string>());
    }
  }
  if (std::find(c.decisions.begin(), c.decisions.end(), "cut") != c.decisions.end())
    c.policy.cut_head = true;
  if (std::find(c.decisions.begin(), c.decisions.end(), "mix") != c.decisions.end())
    c.policy.mix_head = true;
  const nlohmann::json& zs = read_section(sj, j, "fine_tune_zero_shot", source, zero_shot_keys(),
                                          c.fine_tune_zero_shot, {"decode", "allocate"});
  {
    const StrictJson sz(source + ": fine_tune_zero_shot");
    auto one_of = [&](const char* key, std::string& out, const std::vector<std::string>& ok) {
      if (!zs.contains(key)) return;
      const std::string v = sz.string(zs, key, "");
      if (std::find(ok.begin(), ok.end(), v) != ok.end()) {
        out = v;
        return;
      }
      std::string list;
      for (const std::string& x : ok) list += (list.empty() ? "\"" : ", \"") + x + "\"";
      sz.fail(key, "expected one of " + list + ", got \"" + v + "\"");
    };
    one_of("decode", c.fine_tune_zero_shot.decode, kZeroShotDecodes);
    one_of("allocate", c.fine_tune_zero_shot.allocate, kZeroShotAllocations);
  }
  read_section(sj, j, "elite", source, elite_keys(), c.elite);
  if (!read_section(sj, j, "explore", source, explore_keys(), c.explore).empty() &&
      c.explore.p_run + c.explore.p_block <= 0)
    StrictJson(source + ": explore")
        .fail("p_run", "p_run + p_block must be positive (the moves every graph has)");
  if (!read_section(sj, j, "expert", source, expert_keys(), c.expert).empty() &&
      c.expert.anneal_samples > 0 && c.elite.size == 0)
    StrictJson(source + ": expert")
        .fail("anneal_samples", "expert iteration imitates the elites: needs elite.size > 0");
  const nlohmann::json& cf = read_section(sj, j, "counterfactual", source, counterfactual_keys(),
                                          c.counterfactual, {"target"});
  if (cf.contains("target")) {
    const StrictJson sc(source + ": counterfactual");
    const std::string t = sc.string(cf, "target", "");
    if (t != "expected" && t != "best")
      sc.fail("target", "expected \"expected\" or \"best\", got \"" + t + "\"");
    c.counterfactual.target = t;
  }
  return c;
}

nlohmann::ordered_json TrainConfig::to_json() const {
  nlohmann::ordered_json j;
  j["regime"] = regime;
  j["policy"] = policy.to_json();
  j["ppo"] = write_keys(ppo_keys(), ppo);
  j["ppo"]["baseline"] = baseline_name(ppo.baseline);
  j["reward"] = write_keys(reward_keys(), reward);
  const nlohmann::ordered_json scalars = write_keys(train_keys(), *this);
  for (const auto& [k, v] : scalars.items()) j[k] = v;
  j["warm_start"] = warm_start;
  j["elite"] = write_keys(elite_keys(), elite);
  j["explore"] = write_keys(explore_keys(), explore);
  j["expert"] = write_keys(expert_keys(), expert);
  j["counterfactual"] = write_keys(counterfactual_keys(), counterfactual);
  j["counterfactual"]["target"] = counterfactual.target;
  j["fine_tune_decision"] = fine_tune_decision;
  j["fine_tune_zero_shot"] = write_keys(zero_shot_keys(), fine_tune_zero_shot);
  j["fine_tune_zero_shot"]["decode"] = fine_tune_zero_shot.decode;
  j["fine_tune_zero_shot"]["allocate"] = fine_tune_zero_shot.allocate;
  j["decisions"] = decisions;
  j["freeze"] = freeze;
  return j;
}

}  // namespace gdp::rl
