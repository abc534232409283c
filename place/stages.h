// Structural stage coordinates: where each op of a training graph sits along the model's
// depth, read from the graph's structure alone (never from op names or scopes), so that a
// contiguous cut of the coordinate is a pipeline of layers. Used as policy features (rl/) and
// by the non-learned control `stage-cut` (place/stage_cut.cpp). docs/placement.md, "Stage
// coordinates", has the rules and why.
//
//   parameter groups  the colocation units that hold resident bytes (a variable with its read
//                     and update; a layer op that carries its own weights)
//   rank              groups ordered by first use: the topological position of the first
//                     forward op that reads the group (a layer of GNMT's decoder reads its
//                     weights at every time step; its first read orders it)
//   forward ops       a reader takes its group's rank (the lowest when it reads several); the
//                     others take the rank of the nearest reader (breadth-first over forward
//                     edges, either direction, lower rank first on ties)
//   backward, update  the rank of an adjacent parameter group (a weight-gradient feeds its
//                     update, an input-gradient reads the weight), else the highest rank of
//                     the forward ops it reads (the activations of its layer), else the
//                     nearest such op's (breadth-first over backward and update edges)
//   coordinates       the midpoint of the op's rank in the ranks' cumulative time (or memory),
//                     in [0, 1]
//
// A graph without parameters ranks its forward ops by level (longest path from a source).
//
// Glossary: N = ops, R = ranks.
#pragma once

#include <cstdint>
#include <vector>

#include "core/graph.h"
#include "place/units.h"

namespace gdp::place {

struct StageCoordinates {
  int32_t num_ranks = 0;          // R
  bool from_parameters = false;   // false: no parameter group; ranks are forward levels
  std::vector<int32_t> rank;      // (N) in [0, R)
  std::vector<double> by_time;    // (N) midpoint of the op's rank in cumulative op time, [0, 1]
  std::vector<double> by_memory;  // (N) the same in cumulative resident + output bytes
  std::vector<double> by_rank;    // (N) (rank + 0.5) / R
  // Concurrency, from forward levels (longest path from a source over forward edges): a
  // rank's span is the time-weighted quartiles [q25, q75] of its forward ops' levels, its
  // centre their median; the ranks concurrent with rank r are those whose span holds r's
  // centre (r among them). by_fold: the midpoint of r in the cumulative time of its
  // concurrent ranks, in rank order, [0, 1] (an unrolled RNN's layer k reads k / layers in
  // the encoder and in the decoder alike: a cut of it runs each phase's wavefront over every
  // device; a chain of layers, each alone at its level, reads 0.5). share: r's time over its
  // concurrent ranks' time, (0, 1] (1: nothing runs beside it).
  std::vector<double> by_fold;  // (N)
  std::vector<double> share;    // (N)
  // Branches, from forward edges: every forward op holds an interval of [0, 1] (one fed by no
  // forward op holds all of it); an op whose output feeds several forward ops splits its
  // interval among them in topological order, each successor's share proportional to its
  // longest path of op times to the end of the forward pass; an op takes the smallest interval
  // holding what its inputs that compute give it (a join takes back what its branches split);
  // an op fed only by ops that do not compute (a graph input, a variable's read: no input from
  // outside their colocation unit) takes the narrowest they give. by_width: the mean over a
  // rank's forward ops that compute of their intervals' midpoints (0.5 for a rank without
  // one), in [0, 1]. Parallel branches (an Inception block's towers, a NAS cell's operations)
  // read apart, a chain reads 0.5, and backward and update ops read as their rank.
  std::vector<double> by_width;  // (N)
  // by_op_width: the same intervals per op instead of per rank: a forward op that computes
  // reads its own interval's midpoint; a backward or update op the mean midpoint of the forward
  // ops that compute it reads (the activations its gradient needs), so that it follows its
  // forward op; any other op reads as by_width. A cut of it places the branches of one block
  // apart even when one rank holds several of them, each op's gradient beside it.
  std::vector<double> by_op_width;  // (N)
};

// O(N log N + E) (the concurrency sorts each rank's levels); deterministic. op_time_s (N):
// each op's time (the caller's cost model on one device); it weighs the ranks of by_time and
// of by_fold. Throws InputError when the graph is not finalized or op_time_s has the wrong
// length or a negative or non-finite entry.
StageCoordinates stage_coordinates(const Graph& g, const std::vector<double>& op_time_s);

// Decision units of one stage rank each: the ops of a rank take one device together (a
// colocation group goes with the rank of its first op, so groups stay whole). Numbered in the
// topological order of their first op, as Units::colocation. A policy that places these
// units makes 25 decisions on GNMT-8 instead of 53,481 (docs/ppo.md, "Transfer").
Units stage_units(const Graph& g, const std::vector<int32_t>& rank, int32_t num_ranks);

// Weight-gradient ops (1) from structure alone: the backward ops whose output serves the update
// of one parameter group only (reaches, over backward edges, the update ops of exactly one
// colocation group): a matrix product that computes a weight's gradient and its reductions,
// not the input-gradient product that feeds the layers below (it serves all their updates).
// The first layer's input-gradient chain serves its own weights only and counts. A graph that
// joins every gradient (a global norm clip) has none. O(N + E).
std::vector<uint8_t> weight_gradient_ops(const Graph& g);

// `units` with each unit's colocation groups that hold only ops of `part` (N, 0/1) split off
// into a unit of their own: the unit keeps its other ops. Numbered in the topological order of
// their first op; part_of (returned) marks the new units (1). Used by the mix head's shift of
// the weight gradients (rl/gdp/policy.h, mix_wgrad).
Units split_units(const Graph& g, const Units& units, const std::vector<uint8_t>& part,
                  std::vector<uint8_t>* part_of);

// Device of each op when the coordinate is cut into `stages` equal pieces, stage s on device
// s (stages in [1, devices]); colocation groups follow their first op.
std::vector<int32_t> stage_cut(const Graph& g, const std::vector<double>& coordinate,
                               int32_t stages);

}  // namespace gdp::place
