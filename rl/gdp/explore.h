// Structured exploration for the GDP trainer: proposals drawn around a good placement instead
// of U independent draws from the policy, which scatter every layer while the policy is near
// uniform. A local proposal copies a base placement (an elite, else the policy's greedy one)
// and changes one contiguous run of units in topological order: either each unit of the run to
// another device drawn from the policy, or the whole run to one device drawn from the run's
// mean policy (a block move: a layer to another GPU). The devices come from the policy mixed
// with the uniform distribution, so the policy steers the search and the search never stops.
//
// Also the trainer's diagnostics of one iteration that need the logits on the host.
// Glossary: U = units, A = device columns (masked columns have logit kMaskedLogit).
#pragma once

#include <cstdint>
#include <vector>

#include "core/rng.h"
#include "nn/tensor.h"
#include "place/units.h"

namespace gdp::rl {

struct ExploreConfig {
  double local_fraction = 0;    // share of the K samples that are local proposals (0: none)
  double block_fraction = 0.1;  // longest run a proposal changes, as a fraction of U (>= 1 unit)
  double uniform_mix = 0.1;     // device distribution: (1 - mix) policy + mix uniform
  // Weights of the move kinds (normalized over the kinds available: boundary needs the unit
  // adjacency, scope the name scopes).
  double p_run = 0.3, p_block = 0.3, p_boundary = 0.3, p_scope = 0.1;
};

// One local proposal around `base` (U). logits (U, A) on the host; `anchored`: unit 0 keeps
// its device. The move kinds, drawn by c's weights: a run of units each to another device
// (run), a run to one device (block: a layer to another GPU), with `adj` a unit with a
// neighbour on another device joins that device (boundary; where none is found in a few tries:
// a run move), with `scopes` every unit under one name-scope prefix of a unit to one device
// (scope). A run's length is log-uniform in [1, max(1, block_fraction U)], its start uniform.
// Every changed unit gets an allowed device other than its base one (with one allowed device,
// nothing changes).
std::vector<int32_t> local_proposal(const nn::Tensor& logits, const std::vector<int32_t>& base,
                                    bool anchored, const ExploreConfig& c, Rng& rng,
                                    const place::UnitAdjacency* adj = nullptr,
                                    const place::UnitScopes* scopes = nullptr);

// Per-unit entropies (nats) of the policy, from logits (U, A) on the host.
std::vector<double> unit_entropies(const nn::Tensor& logits);
// The q-quantile (0..1, nearest rank) of xs (copied, not reordered).
double quantile(std::vector<double> xs, double q);

// How much the K samples tell each unit: the REINFORCE estimate of d E[R] / d z_uc at the
// policy's greedy column c of each unit, g_ku = A_k (1{a_ku = c} - p_uc); per unit the t
// statistic mean_k g_ku / (sd_k g_ku / sqrt K); returns the mean over units of |t| (units
// with sd = 0 skipped; NaN when none). Pure noise gives about 0.8 (E|N(0,1)|); a unit whose
// device the samples decide gives several. docs/ppo.md, "Diagnosis".
double signal_t(const nn::Tensor& logits, const std::vector<int32_t>& actions,
                const std::vector<double>& adv);

}  // namespace gdp::rl
