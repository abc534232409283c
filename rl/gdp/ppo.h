// The PPO loss of the placement policy (GDP trains with PPO): the K placements sampled in one
// iteration share one forward pass of the policy and one backward pass through this loss.
// Equations, derivation of the gradient and the choices (unit weighting, masking): docs/ppo.md.
//
// Glossary: U = placement units (a colocation group or a lone op: one decision each),
// A = action columns (devices; columns >= the cluster's device count are masked by the caller
// with kMaskedLogit), K = samples (placements) of one graph per iteration.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "nn/autograd.h"
#include "nn/tensor.h"

namespace gdp::rl {

// Added to the logits of columns that are not devices of the cluster. Finite on purpose: with
// -inf the entropy's p log p would be 0 * -inf = NaN. exp(kMaskedLogit - max) is exactly 0 in
// float and double, so a masked column has probability 0, is never sampled (nn::
// categorical_sample) and gets an exactly zero gradient from ppo_loss.
inline constexpr float kMaskedLogit = -1e9f;

// The one masked softmax of a row of host logits (exploration, the annealer's guide): p[c] for
// c < A, exactly 0 on masked columns; exponentials and their sum in double, each stored as T
// before the division (T = float: the guide's float table).
template <typename T>
void masked_softmax_row(const float* z, int32_t A, T* p) {
  double mx = -std::numeric_limits<double>::infinity(), s = 0;
  for (int32_t c = 0; c < A; ++c) mx = std::max(mx, static_cast<double>(z[c]));
  for (int32_t c = 0; c < A; ++c) {
    p[c] = T(0);
    if (z[c] < kMaskedLogit / 2) continue;  // a device the cluster does not have
    const double e = std::exp(static_cast<double>(z[c]) - mx);
    p[c] = static_cast<T>(e);
    s += e;
  }
  for (int32_t c = 0; c < A; ++c) p[c] = static_cast<T>(p[c] / s);
}

// How the K rewards of one graph become advantages (docs/ppo.md, "Advantages").
enum class Baseline {
  mean,  // r_k - mean_j r_j
  loo,   // r_k - mean_{j != k} r_j  (leave-one-out: the baseline does not see its own sample)
  rank,  // centred ranks: (rank_k / (K - 1)) - 1/2, ties share their mean rank; scale-free
  // risk-seeking (Petersen et al. 2021, deep symbolic regression): (r_k - q) for the samples
  // at or above q, the rewards' upper quartile, 0 for the others: the policy is pushed toward
  // its best draws only, what a best-of-N zero-shot search reads, not its mean.
  top,
};
const char* baseline_name(Baseline b);

struct PpoConfig {
  double clip = 0.2;                 // epsilon of the clipped ratio, > 0
  double entropy_coef = 0.01;        // bonus weight (loss -= coef * mean entropy)
  bool normalize_advantages = true;  // per graph: divided by (std + 1e-8) over its K samples
  Baseline baseline = Baseline::rank;
  // With normalize_advantages, the divisor is max(std, std_floor): a graph whose K rewards
  // barely differ (a large graph under a near-uniform policy, where the spread is the noise
  // of U independent draws) is not amplified to the scale of one whose placements matter.
  double std_floor = 0;
};

// Advantages of the K samples of one graph from their rewards (c.baseline), divided by their
// population std (+ 1e-8) when c.normalize_advantages. One sample or zero spread gives zeros.
// Rewards must be finite and K >= 1.
std::vector<double> advantages(const std::vector<double>& rewards, const PpoConfig& c);

struct PpoStats {
  double loss = 0;           // policy_loss - entropy_coef * entropy
  double policy_loss = 0;    // -mean_{k,u} min(r A_k, clip(r) A_k)
  double entropy = 0;        // mean_u H(u) of the current policy
  double approx_kl = 0;      // mean_{k,u} (r - 1) - log r  (>= 0; KL(old || new) estimator)
  double clip_fraction = 0;  // fraction of (k, u) with |r - 1| > clip
};

// The PPO loss of K samples sharing one forward pass: logits (U, A) computed once; the log-probs
// of every sample's actions from one log_softmax (one gather of K*U entries, no K copies of the
// logits); ratio r = exp(logp - logp_old) per unit;
//   loss = -mean_{k,u} min(r A_k, clip(r, 1-eps, 1+eps) A_k) - entropy_coef * mean_u H(u).
// Every unit counts once (no per-unit weights, docs/ppo.md). Returns a scalar Var: backward()
// once gives the gradient of all K samples. Fills stats when given. Throws std::invalid_argument
// on inconsistent sizes, an action outside [0, A) or on a masked column (log-probability below
// kMaskedLogit / 2, now or in old_logp), non-finite old_logp or advantages, clip <= 0.
// Float logits may live on the CUDA device (every op used has a device path); double is for
// gradient checks.
template <typename T>
nn::BasicVar<T> ppo_loss(const nn::BasicVar<T>& logits,          // (U, A)
                         const std::vector<int32_t>& actions,    // (K * U), sample-major
                         const std::vector<T>& old_logp,         // (K * U)
                         const std::vector<double>& advantages,  // (K)
                         const PpoConfig& c, PpoStats* stats = nullptr);

// The counterfactual probes' term (TrainConfig::counterfactual, docs/ppo.md): over the rows
// `units` (P) of logits (U, A) and their advantages adv (P * A, row-major; 0 on masked columns,
// whose probability is exactly 0),
//   loss = -weight * mean_j sum_c p(c | u_j) adv_jc,
// the all-actions policy gradient: dloss/dz_{u_j c} = -(weight / P) p_c (adv_jc - sum_d p_d
// adv_jd). A unit probed twice gets both rows' gradients. Throws std::invalid_argument on an empty
// or out-of-range unit list, adv of the wrong size or a non-finite entry.
template <typename T>
nn::BasicVar<T> counterfactual_loss(const nn::BasicVar<T>& logits,      // (U, A)
                                    const std::vector<int64_t>& units,  // (P)
                                    const std::vector<T>& adv,          // (P * A)
                                    double weight);

// The probes' term with target "best": a weighted cross-entropy toward each probe's best column,
//   loss = -weight * mean_j m_j log p(best_j | u_j),
// dloss/dz_{u_j c} = -(weight / P) m_j (1{c = best_j} - p_c). best (P) must be open columns;
// m (P) finite. Throws std::invalid_argument as counterfactual_loss.
template <typename T>
nn::BasicVar<T> counterfactual_best_loss(const nn::BasicVar<T>& logits,      // (U, A)
                                         const std::vector<int64_t>& units,  // (P)
                                         const std::vector<int32_t>& best,   // (P)
                                         const std::vector<T>& m,            // (P)
                                         double weight);

// The log-probabilities of K placements from one pass over the logits, differentiable:
// logits (U, A), actions (K * U) sample-major -> logp (K, U),
//   logp[k][u] = logits[u][a_ku] - logsumexp(logits[u]).
// On the CPU a fused op: one log-sum-exp per unit, then K*U lookups; its backward
//   dlogits[u][c] += sum_k g_ku 1{c = a_ku} - p_uc sum_k g_ku
// costs O(U A + K U) and gives masked columns (p exactly 0, std::exp) an exactly zero gradient.
// On the CUDA device: log_softmax then one gather (nn ops). ppo_loss and log_probs use it.
template <typename T>
nn::BasicVar<T> sample_log_probs(const nn::BasicVar<T>& logits,         // (U, A)
                                 const std::vector<int32_t>& actions);  // (K * U)

// The sampling pass: log-probabilities of K placements under plain logits (U, A), no tape.
// actions (K * U) sample-major -> (K * U). Computed by the same ops as in ppo_loss, so that
// ppo_loss at unchanged logits sees a ratio of exactly 1. logits may be a CUDA float tensor.
template <typename T>
std::vector<T> log_probs(const nn::BasicTensor<T>& logits,  // (U, A)
                         const std::vector<int32_t>& actions);

}  // namespace gdp::rl
