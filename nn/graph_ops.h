// Differentiable wrappers of the graph kernels (segment mean/max, relative attention, categorical
// log-prob/entropy, the fused GraphSAGE layer): each computes its output with the raw kernel and
// records a closure that ACCUMULATES into the inputs' gradients (see nn/autograd.h).
//
// Glossary: N = nodes, C = channels, OUT = output channels, S/K/P/D as in nn/attention.h,
// A = actions.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "nn/attention.h"
#include "nn/autograd.h"
#include "nn/segment.h"

namespace gdp::nn {

// Both edge directions of a directed graph: in.row v lists the sources of v's incoming edges,
// out = csr_transpose(in) lists the destinations of v's outgoing edges. Shared by the closures
// of the ops that use it, so it outlives the tape.
struct Adjacency {
  Csr in;
  Csr out;
  int32_t num_nodes() const { return in.num_rows; }
};
enum class EdgeDir { in, out };
std::shared_ptr<const Adjacency> make_adjacency(int32_t num_nodes, const std::vector<int32_t>& src,
                                                const std::vector<int32_t>& dst);

// x (N, C) -> (N, C): mean / max over the dir-neighbours of each node (zeros when none).
template <typename T>
BasicVar<T> segment_mean(const BasicVar<T>& x, const std::shared_ptr<const Adjacency>& adj,
                         EdgeDir dir);
template <typename T>
BasicVar<T> segment_max(const BasicVar<T>& x, const std::shared_ptr<const Adjacency>& adj,
                        EdgeDir dir);

// Fused GraphSAGE layer (mean aggregator, both directions, "concat" form):
//   out = act([x | mean_in(x) | mean_out(x)] @ w^T + b)
// x (N, C), w (OUT, 3C) = [W_self | W_in | W_out], b (OUT); act = relu when relu_act, else none.
template <typename T>
BasicVar<T> sage_layer(const BasicVar<T>& x, const BasicVar<T>& w, const BasicVar<T>& b,
                       const std::shared_ptr<const Adjacency>& adj, bool relu_act);

// Transformer-XL relative attention (nn/attention.h): q (S, D), k, v (K, D), rk (P, D),
// u, vb (D) -> (S, D).
template <typename T>
BasicVar<T> rel_attention(const BasicVar<T>& q, const BasicVar<T>& k, const BasicVar<T>& v,
                          const BasicVar<T>& rk, const BasicVar<T>& u, const BasicVar<T>& vb,
                          const RelAttentionDims& dims);

// logits (N, A), actions (N) -> (N) log-probabilities / entropies.
template <typename T>
BasicVar<T> categorical_log_prob(const BasicVar<T>& logits, const std::vector<int32_t>& actions);
template <typename T>
BasicVar<T> categorical_entropy(const BasicVar<T>& logits);

}  // namespace gdp::nn
