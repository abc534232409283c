// Seeded random layered DAG generator (see random_dag.h).
#include "datasets/random_dag.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/rng.h"

namespace gdp::datasets {

Graph make_random_layered_graph(const RandomGraphSpec& spec) {
  Rng rng(spec.seed);
  Graph g;
  g.name = "random_layered_" + std::to_string(spec.num_ops) + "_s" + std::to_string(spec.seed);
  static const char* kTypes[] = {"MatMul", "Conv2D", "Add", "Relu", "Sum", "Reshape"};
  const int32_t n = spec.num_ops, w = std::max(1, spec.layer_width);
  for (int32_t i = 0; i < n; ++i) {
    Op op;
    op.id = i;
    op.name = "op" + std::to_string(i);
    op.type = kTypes[rng.below(6)];
    op.flops = 1e6 * (1.0 + 999.0 * rng.uniform());          // 1e6 .. 1e9
    op.bytes_accessed = 1e5 * (1.0 + 99.0 * rng.uniform());  // 1e5 .. 1e7
    TensorSpec t;
    int64_t elems = 1024 + rng.below(256 * 1024);
    t.shape = {elems};
    t.dtype = DType::f32;
    t.bytes = elems * 4;
    op.outputs.push_back(t);
    if (rng.uniform() < spec.param_fraction) op.param_bytes = 4 * (1024 + rng.below(1024 * 1024));
    op.temp_bytes = rng.uniform() < 0.2 ? 4 * rng.below(64 * 1024) : 0;
    g.add_op(std::move(op));
  }
  std::vector<int32_t> srcs;
  for (int32_t i = w; i < n; ++i) {
    const int32_t layer = i / w;
    const int32_t lo = std::max(0, layer - spec.lookback_layers) * w, hi = layer * w;  // [lo, hi)
    // In-degree 1 + Poisson-like extra so that the mean is edges_per_op.
    int32_t k = 1;
    double extra = std::max(0.0, spec.edges_per_op - 1.0);
    while (extra >= 1.0) {
      ++k;
      extra -= 1.0;
    }
    if (rng.uniform() < extra) ++k;
    k = std::min(k, hi - lo);
    srcs.clear();
    while (static_cast<int32_t>(srcs.size()) < k) {
      int32_t s = lo + static_cast<int32_t>(rng.below(hi - lo));
      if (std::find(srcs.begin(), srcs.end(), s) == srcs.end()) srcs.push_back(s);
    }
    for (int32_t s : srcs) g.add_edge(s, 0, i, g.op(s).outputs[0].bytes);
  }
  g.finalize();
  return g;
}

Placement random_placement(const Graph& g, int32_t num_devices, uint64_t seed) {
  Rng rng(seed);
  Placement p;
  p.device.resize(g.num_ops());
  for (auto& d : p.device) d = static_cast<int32_t>(rng.below(num_devices));
  return p;
}

}  // namespace gdp::datasets
