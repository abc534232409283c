// What the fuzz targets share: a reader's outcome (a value or an InputError's message), a
// field-by-field comparison of two graphs through the public API, and the fixed graph the
// placement target and its seeds use. Any other exception escapes to libFuzzer as a crash.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "core/error.h"
#include "core/graph.h"

namespace gdp::fuzz {

// The result of one reader call: the value, or the message of the InputError it threw.
template <class T>
struct Outcome {
  std::optional<T> value;
  std::string error;
};

template <class F>
auto outcome_of(F&& read) -> Outcome<decltype(read())> {
  Outcome<decltype(read())> out;
  try {
    out.value.emplace(read());
  } catch (const InputError& e) {
    out.error = e.what();
  }
  return out;
}

// A property of the readers does not hold: print what and stop (libFuzzer saves the input).
[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "\nFUZZ FINDING: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

// Doubles compared bit for bit (0.0 and -0.0 differ; no NaN reaches a graph).
inline bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// The first difference between two finalized graphs ("" when none): every field of every op
// and edge, the adjacency, the topological order, the name index and the summary.
inline std::string graph_diff(const Graph& a, const Graph& b) {
  if (a.name != b.name) return "graph name";
  if (a.finalized() != b.finalized()) return "finalized";
  if (a.num_ops() != b.num_ops()) return "op count";
  if (a.num_edges() != b.num_edges()) return "edge count";
  for (int32_t i = 0; i < a.num_ops(); ++i) {
    const Op &x = a.op(i), &y = b.op(i);
    const std::string at = "op #" + std::to_string(i) + ": ";
    if (x.id != y.id) return at + "id";
    if (x.name != y.name) return at + "name";
    if (x.type != y.type) return at + "type";
    if (x.scope != y.scope) return at + "scope";
    if (x.phase != y.phase) return at + "phase";
    if (x.outputs.size() != y.outputs.size()) return at + "output count";
    for (size_t k = 0; k < x.outputs.size(); ++k) {
      const TensorSpec &s = x.outputs[k], &t = y.outputs[k];
      if (s.shape != t.shape || s.dtype != t.dtype || s.bytes != t.bytes)
        return at + "output " + std::to_string(k);
    }
    if (!same_bits(x.flops, y.flops)) return at + "flops";
    if (!same_bits(x.bytes_accessed, y.bytes_accessed)) return at + "bytes_accessed";
    if (x.measured.size() != y.measured.size()) return at + "measured count";
    for (size_t k = 0; k < x.measured.size(); ++k)
      if (x.measured[k].device_kind != y.measured[k].device_kind ||
          !same_bits(x.measured[k].time_s, y.measured[k].time_s))
        return at + "measured " + std::to_string(k);
    if (x.param_bytes != y.param_bytes) return at + "param_bytes";
    if (x.optimizer_bytes != y.optimizer_bytes) return at + "optimizer_bytes";
    if (x.param_dtype != y.param_dtype) return at + "param_dtype";
    if (x.temp_bytes != y.temp_bytes) return at + "temp_bytes";
    if (x.colocation != y.colocation) return at + "colocation";
    if (a.find_op(x.name) != i || b.find_op(y.name) != i) return at + "find_op";
  }
  for (int64_t e = 0; e < a.num_edges(); ++e) {
    const Edge &x = a.edges()[e], &y = b.edges()[e];
    if (x.src != y.src || x.src_output != y.src_output || x.dst != y.dst || x.bytes != y.bytes)
      return "edge #" + std::to_string(e);
  }
  if (!a.finalized()) return "";
  if (a.out_ptr() != b.out_ptr() || a.out_edge_ids() != b.out_edge_ids()) return "out-adjacency";
  if (a.in_ptr() != b.in_ptr() || a.in_edge_ids() != b.in_edge_ids()) return "in-adjacency";
  if (a.topo_order() != b.topo_order()) return "topological order";
  const GraphSummary s = a.summary(), t = b.summary();
  if (s.ops != t.ops || s.edges != t.edges || !same_bits(s.flops, t.flops) ||
      s.parameters != t.parameters || s.parameter_bytes != t.parameter_bytes ||
      s.optimizer_bytes != t.optimizer_bytes || s.activation_bytes != t.activation_bytes ||
      s.temp_bytes != t.temp_bytes || s.colocation_groups != t.colocation_groups ||
      s.depth != t.depth)
    return "summary";
  return "";
}

// The graph whose placements the placement target reads (and make_seeds writes): a small
// training step whose op names need JSON escapes ('"', '\\', a tab, non-ASCII UTF-8).
inline Graph placement_target_graph() {
  Graph g;
  g.name = "fuzz-placement";
  const char* const names[] = {"input",          "dense/kernel",        "dense/MatMul",
                               "dense/Relu",     "loss \"xent\"",       "grad\\dense\tMatMul",
                               "déjà/ApplyAdam", "gradients/dense/Relu"};
  for (const char* n : names) {
    Op op;
    op.id = g.num_ops();
    op.name = n;
    op.type = "Op";
    op.outputs.push_back({{4, 4}, DType::f32, 64});
    g.add_op(std::move(op));
  }
  // input, kernel -> MatMul -> Relu -> loss -> Relu grad -> MatMul grad -> ApplyAdam.
  const std::pair<int32_t, int32_t> edges[] = {{0, 2}, {1, 2}, {2, 3}, {3, 4},
                                               {4, 7}, {7, 5}, {5, 6}, {1, 6}};
  for (const auto& [src, dst] : edges) g.add_edge(src, 0, dst, 64);
  g.finalize();
  return g;
}

}  // namespace gdp::fuzz
