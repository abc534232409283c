// Small graphs and configurations for the rl tests.
#pragma once

#include <filesystem>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/graph.h"
#include "core/io.h"
#include "place/registry.h"
#include "rl/gdp/load.h"
#include "rl/gdp/trainer.h"
#include "rl/methods.h"
#include "rl/run/session.h"
#include "sim/sim_fixtures.h"
#include "test_paths.h"

namespace gdp::test {

// Eight ops: a feeds two chains of three that join in d: b* (MatMul, 1/64 s each) and c*
// (Conv2D, 1/32 s each), on device kind "T"; a and d take 1/64 s; tensors are 1 KiB. The best
// placements run the chains on different devices (with a and the b chain together).
inline Graph two_chains() {
  Graph g;
  g.name = "two_chains";
  const char* names[] = {"a", "b1", "b2", "b3", "c1", "c2", "c3", "d"};
  for (int i = 0; i < 8; ++i) {
    const bool c_chain = i >= 4 && i <= 6;
    Op op = timed_op(names[i], c_chain ? 1.0 / 32 : 1.0 / 64, 1024);
    op.id = i;
    op.type = i == 0 || i == 7 ? "Add" : c_chain ? "Conv2D" : "MatMul";
    g.add_op(op);
  }
  for (auto [s, d] : {std::pair{0, 1}, {1, 2}, {2, 3}, {0, 4}, {4, 5}, {5, 6}, {3, 7}, {6, 7}})
    g.add_edge(s, 0, d, 1024);
  g.finalize();
  return g;
}

// A policy small enough for finite differences and fast training.
inline rl::TrainConfig tiny_config() {
  rl::TrainConfig c;
  c.policy.max_devices = 4;
  c.policy.type_embedding = 3;
  c.policy.width = 8;
  c.policy.sage_layers = 1;
  c.policy.attention_layers = 1;
  c.policy.heads = 2;
  c.policy.ffn = 8;
  c.policy.segment = 4;
  c.policy.memory = 4;
  c.policy.film_hidden = 4;
  c.samples_per_iteration = 8;
  c.epochs = 2;
  c.lr = 0.01;
  // Plain PPO (the paper's GDP): the mechanics these tests check; the levers on top of it are
  // tested with their own config (tests/rl/test_levers.cpp).
  c.imitation_steps = 0;
  c.warm_start.clear();
  c.elite.size = 0;
  c.explore.local_fraction = 0;
  c.ppo.baseline = rl::Baseline::mean;
  return c;
}

// A GDP-one session on one graph file on v100x2-nvlink: `config` (the tiny one by default),
// checkpoints every 2 iterations, `samples` in the budget, seed 5.
inline rl::RunSpec one_graph_spec(const std::filesystem::path& graph_file, int64_t samples,
                                  const rl::TrainConfig& config = tiny_config(),
                                  uint64_t seed = 5) {
  rl::RunSpec s;
  s.graph_path = graph_file.string();
  s.cluster = "v100x2-nvlink";
  rl::TrainConfig c = config;
  c.checkpoint_every = 2;
  s.options = c.to_json();
  s.budget.samples = samples;
  s.seed = seed;
  return s;
}

// The built-in methods and rl's (gdp, hdp, placeto), built once.
inline const place::Registry& rl_registry() {
  static const place::Registry r = [] {
    place::Registry x;
    place::register_builtin_methods(x);
    rl::register_methods(x);
    return x;
  }();
  return r;
}

// The message of what f throws ("" when it throws nothing).
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// An empty directory for a training run under the build tree.
inline std::filesystem::path fresh_dir(const std::string& name) {
  const std::filesystem::path d = std::filesystem::path(binary_dir()) / "rl_test_runs" / name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d.parent_path());
  return d;
}

inline std::string text_of(const std::filesystem::path& p) { return read_text_file(p.string()); }

// log.csv without its wall_s column (the only column that depends on the machine's speed):
// column 2, or 3 in a suite's log (after "graph").
inline std::string log_without_wall(const std::filesystem::path& p, size_t wall_column = 2) {
  std::istringstream in(text_of(p));
  std::string line, out;
  while (std::getline(in, line)) {
    std::vector<std::string> cols;
    std::stringstream ss(line);
    std::string c;
    while (std::getline(ss, c, ',')) cols.push_back(c);
    for (size_t k = 0; k < cols.size(); ++k)
      if (k != wall_column) out += cols[k] + (k + 1 < cols.size() ? "," : "\n");
  }
  return out;
}

}  // namespace gdp::test
