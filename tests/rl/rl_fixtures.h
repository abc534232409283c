// Small graphs and configurations for the rl tests.
#pragma once

#include <string>

#include "core/cluster.h"
#include "core/graph.h"
#include "place/registry.h"
#include "rl/register.h"
#include "rl/trainer.h"
#include "sim/sim_fixtures.h"

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
  return c;
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

}  // namespace gdp::test
