// The PPO loss: the fused op sample_log_probs (one log-sum-exp per unit for all K samples),
// then nn's element-wise ops on (K, U) (ratio, clip, min, mean) and nn::categorical_entropy.
#include "rl/gdp/ppo.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>

#include "nn/graph_ops.h"
#include "nn/ops.h"

namespace gdp::rl {
namespace {

using nn::BasicTensor;
using nn::BasicVar;

// Rows times work above which the per-unit loops run in parallel (as nn's row ops).
constexpr int64_t kParallelElems = 1 << 15;

[[noreturn]] void fail(const char* who, const std::string& what) {
  throw std::invalid_argument(std::string(who) + ": " + what);
}

// Checks logits (U, A) against actions (K * U) and returns K.
template <typename T>
int64_t check_samples(const char* who, const BasicTensor<T>& logits,
                      const std::vector<int32_t>& actions) {
  if (logits.ndim() != 2 || logits.dim(0) < 1 || logits.dim(1) < 1)
    fail(who, "logits must be (U, A) with U, A >= 1, got " + nn::shape_str(logits.shape()));
  const int64_t U = logits.dim(0), A = logits.dim(1);
  const int64_t n = static_cast<int64_t>(actions.size());
  if (n == 0 || n % U != 0)
    fail(who, "actions must be (K * U) with K >= 1 and U = " + std::to_string(U) + ", got " +
                  std::to_string(n) + " actions");
  for (int64_t i = 0; i < n; ++i)
    if (actions[i] < 0 || actions[i] >= A)
      fail(who, "action[" + std::to_string(i) + "] (sample " + std::to_string(i / U) + ", unit " +
                    std::to_string(i % U) + ") = " + std::to_string(actions[i]) + " not in [0, " +
                    std::to_string(A) + ")");
  return n / U;
}

// A sampled action on a masked column (log-probability about kMaskedLogit, now or at sampling
// time) is a bug of the caller: its ratio is meaningless and its gradient would reach the mask.
template <typename T>
void check_not_masked(const char* who, const BasicTensor<T>& logp, const std::vector<T>& old_logp,
                      int64_t U) {
  const double floor = 0.5 * static_cast<double>(kMaskedLogit);
  for (size_t i = 0; i < old_logp.size(); ++i)
    if (static_cast<double>(logp[static_cast<int64_t>(i)]) < floor ||
        static_cast<double>(old_logp[i]) < floor)
      fail(who, "sample " + std::to_string(i / U) + ", unit " + std::to_string(i % U) +
                    ": the action is on a masked column (log-probability " +
                    std::to_string(logp[static_cast<int64_t>(i)]) + " now, " +
                    std::to_string(old_logp[i]) + " when sampled)");
}

// The probed units of the counterfactual terms: at least one, each a row of logits (U, A).
void check_probed_units(const char* who, const std::vector<int64_t>& units, int64_t U) {
  if (units.empty()) fail(who, "no probed units");
  for (size_t j = 0; j < units.size(); ++j)
    if (units[j] < 0 || units[j] >= U)
      fail(who, "unit[" + std::to_string(j) + "] = " + std::to_string(units[j]) + " not in [0, " +
                    std::to_string(U) + ")");
}

template <typename T>
double item_of(const BasicVar<T>& v) {
  return static_cast<double>(v.value().cpu().item());
}

}  // namespace

template <typename T>
BasicVar<T> sample_log_probs(const BasicVar<T>& logits, const std::vector<int32_t>& actions) {
  const char* who = "rl::sample_log_probs";
  if (!logits.defined()) fail(who, "logits undefined");
  const int64_t K = check_samples(who, logits.value(), actions);
  const int64_t U = logits.dim(0), A = logits.dim(1);
  if (logits.value().device() != nn::Device::cpu) {
    // The device path: log_softmax once, then one gather over its flat view (index u*A + a).
    std::vector<int64_t> index(static_cast<size_t>(K * U));
    for (int64_t k = 0; k < K; ++k)
      for (int64_t u = 0; u < U; ++u) index[k * U + u] = u * A + actions[k * U + u];
    const BasicVar<T> flat = nn::reshape(nn::log_softmax(logits), {U * A, 1});
    return nn::reshape(nn::gather_rows(flat, index), {K, U});
  }
  const BasicTensor<T> z = logits.value().contiguous();
  BasicTensor<T> lse = BasicTensor<T>::empty({U});  // log-sum-exp of each unit's row
  BasicTensor<T> out = BasicTensor<T>::empty({K, U});
  const T* zd = z.data();
  const bool par = U * (A + K) >= kParallelElems;
#pragma omp parallel for schedule(static) if (par)
  for (int64_t u = 0; u < U; ++u) {
    const T* x = zd + u * A;
    T mx = x[0];
    for (int64_t c = 1; c < A; ++c) mx = std::max(mx, x[c]);
    T s = 0;
    for (int64_t c = 0; c < A; ++c) s += std::exp(x[c] - mx);
    lse[u] = mx + std::log(s);
    for (int64_t k = 0; k < K; ++k) out[k * U + u] = x[actions[k * U + u]] - lse[u];
  }
  const bool rg = nn::needs_grad<T>({&logits});
  BasicVar<T> res = nn::make_result(std::move(out), rg);
  if (rg) {
    auto acts = std::make_shared<const std::vector<int32_t>>(actions);
    nn::BasicTape<T>::current().record(
        [ln = logits.node(), on = res.node(), z, lse, acts, K, U, A, par] {
          if (!on->has_grad()) return;
          T* d = ln->grad_buffer().data();
          const T* g = on->grad.data();
          const T* zd = z.data();
          const int32_t* a = acts->data();
#pragma omp parallel for schedule(static) if (par)
          for (int64_t u = 0; u < U; ++u) {
            T gsum = 0;
            for (int64_t k = 0; k < K; ++k) gsum += g[k * U + u];
            // std::exp, not Eigen's: exp(masked - lse) must be 0, not Eigen's clamped denormal.
            for (int64_t c = 0; c < A; ++c) d[u * A + c] -= gsum * std::exp(zd[u * A + c] - lse[u]);
            for (int64_t k = 0; k < K; ++k) d[u * A + a[k * U + u]] += g[k * U + u];
          }
        });
  }
  return res;
}

const char* baseline_name(Baseline b) {
  switch (b) {
    case Baseline::mean:
      return "mean";
    case Baseline::loo:
      return "loo";
    case Baseline::rank:
      return "rank";
    case Baseline::top:
      return "top";
  }
  return "?";
}

std::vector<double> advantages(const std::vector<double>& rewards, const PpoConfig& c) {
  if (rewards.empty()) fail("rl::advantages", "no rewards (need K >= 1 samples)");
  double mean = 0;
  for (size_t k = 0; k < rewards.size(); ++k) {
    if (!std::isfinite(rewards[k]))
      fail("rl::advantages", "reward[" + std::to_string(k) + "] is not finite");
    mean += rewards[k];
  }
  const size_t n = rewards.size();
  const double K = static_cast<double>(n);
  mean /= K;
  std::vector<double> adv(n);
  if (n == 1) return std::vector<double>(1, 0.0);
  switch (c.baseline) {
    case Baseline::mean:
      for (size_t k = 0; k < n; ++k) adv[k] = rewards[k] - mean;
      break;
    case Baseline::loo:  // r_k - (K mean - r_k) / (K - 1)
      for (size_t k = 0; k < n; ++k) adv[k] = rewards[k] - (K * mean - rewards[k]) / (K - 1);
      break;
    case Baseline::rank: {
      std::vector<size_t> order(n);
      for (size_t k = 0; k < n; ++k) order[k] = k;
      std::stable_sort(order.begin(), order.end(),
                       [&](size_t a, size_t b) { return rewards[a] < rewards[b]; });
      for (size_t i = 0; i < n;) {  // ties share the mean of their ranks
        size_t j = i;
        while (j + 1 < n && rewards[order[j + 1]] == rewards[order[i]]) ++j;
        const double r = 0.5 * static_cast<double>(i + j) / (K - 1) - 0.5;
        for (size_t q = i; q <= j; ++q) adv[order[q]] = r;
        i = j + 1;
      }
      break;
    }
    case Baseline::top: {  // q: the upper quartile, linear between order statistics
      std::vector<double> r(rewards);
      std::sort(r.begin(), r.end());
      const double pos = 0.75 * (K - 1);
      const size_t lo = static_cast<size_t>(std::floor(pos));
      const size_t hi = std::min(lo + 1, n - 1);
      const double q = r[lo] + (pos - static_cast<double>(lo)) * (r[hi] - r[lo]);
      for (size_t k = 0; k < n; ++k) adv[k] = std::max(0.0, rewards[k] - q);
      break;
    }
  }
  if (c.normalize_advantages) {
    double var = 0;  // the root mean square (the centred baselines' std; top's is not centred)
    for (double a : adv) var += a * a;
    const double scale = 1.0 / (std::max(std::sqrt(var / K), c.std_floor) + 1e-8);
    for (double& a : adv) a *= scale;
  }
  return adv;
}

template <typename T>
BasicVar<T> ppo_loss(const BasicVar<T>& logits, const std::vector<int32_t>& actions,
                     const std::vector<T>& old_logp, const std::vector<double>& advantages,
                     const PpoConfig& c, PpoStats* stats) {
  const char* who = "rl::ppo_loss";
  if (!logits.defined()) fail(who, "logits undefined");
  const int64_t K = check_samples(who, logits.value(), actions);
  const int64_t U = logits.dim(0);
  if (static_cast<int64_t>(advantages.size()) != K)
    fail(who, std::to_string(K) + " samples in actions but " + std::to_string(advantages.size()) +
                  " advantages");
  if (old_logp.size() != actions.size())
    fail(who, "old_logp has " + std::to_string(old_logp.size()) + " entries, actions " +
                  std::to_string(actions.size()));
  for (size_t i = 0; i < old_logp.size(); ++i)
    if (!std::isfinite(static_cast<double>(old_logp[i])))
      fail(who, "old_logp[" + std::to_string(i) + "] is not finite");
  std::vector<T> adv(advantages.size());
  for (size_t k = 0; k < advantages.size(); ++k) {
    if (!std::isfinite(advantages[k]))
      fail(who, "advantage[" + std::to_string(k) + "] is not finite");
    adv[k] = static_cast<T>(advantages[k]);
  }
  if (!(c.clip > 0) || !std::isfinite(c.clip))
    fail(who, "clip must be positive, got " + std::to_string(c.clip));
  if (!std::isfinite(c.entropy_coef)) fail(who, "entropy_coef must be finite");

  const nn::Device dev = logits.value().device();
  const BasicVar<T> old(BasicTensor<T>::from_vector({K, U}, old_logp).to_device(dev));
  const BasicVar<T> adv_k(BasicTensor<T>::from_vector({K, 1}, adv).to_device(dev));

  const BasicVar<T> logp = sample_log_probs(logits, actions);  // (K, U)
  check_not_masked(who, logp.value().cpu(), old_logp, U);
  const BasicVar<T> ratio = nn::exp(nn::sub(logp, old));  // (K, U)
  const T lo = static_cast<T>(1.0 - c.clip), hi = static_cast<T>(1.0 + c.clip);
  // minimum gives ties to its first argument: inside [lo, hi] both terms are equal and the
  // gradient is that of r A (the clip is inactive there).
  const BasicVar<T> surrogate =
      nn::minimum(nn::mul(ratio, adv_k), nn::mul(nn::clamp(ratio, lo, hi), adv_k));
  const BasicVar<T> policy_loss = nn::neg(nn::mean(surrogate));

  BasicVar<T> loss = policy_loss, entropy;
  if (c.entropy_coef != 0) {
    entropy = nn::mean(nn::categorical_entropy(logits));
    loss = nn::sub(policy_loss, nn::scale(entropy, static_cast<T>(c.entropy_coef)));
  } else if (stats) {
    nn::NoGradGuard no_grad;
    entropy = nn::mean(nn::categorical_entropy(logits));
  }

  if (stats) {
    stats->loss = item_of(loss);
    stats->policy_loss = item_of(policy_loss);
    stats->entropy = item_of(entropy);
    const BasicTensor<T> lp = logp.value().cpu(), rv = ratio.value().cpu();
    double kl = 0;
    int64_t clipped = 0;
    for (int64_t i = 0; i < K * U; ++i) {
      const double log_r = static_cast<double>(lp[i]) - static_cast<double>(old_logp[i]);
      const double r = static_cast<double>(rv[i]);
      kl += (r - 1.0) - log_r;
      clipped += std::abs(r - 1.0) > c.clip;
    }
    stats->approx_kl = kl / static_cast<double>(K * U);
    stats->clip_fraction = static_cast<double>(clipped) / static_cast<double>(K * U);
  }
  return loss;
}

template <typename T>
BasicVar<T> counterfactual_loss(const BasicVar<T>& logits, const std::vector<int64_t>& units,
                                const std::vector<T>& adv, double weight) {
  const char* who = "rl::counterfactual_loss";
  if (!logits.defined() || logits.value().ndim() != 2) fail(who, "logits must be (U, A)");
  const int64_t U = logits.dim(0), A = logits.dim(1), P = static_cast<int64_t>(units.size());
  check_probed_units(who, units, U);
  if (static_cast<int64_t>(adv.size()) != P * A)
    fail(who, "adv has " + std::to_string(adv.size()) +
                  " entries, expected P * A = " + std::to_string(P * A));
  for (size_t i = 0; i < adv.size(); ++i)
    if (!std::isfinite(static_cast<double>(adv[i])))
      fail(who, "adv[" + std::to_string(i) + "] is not finite");
  if (!std::isfinite(weight)) fail(who, "weight must be finite");
  const BasicVar<T> p = nn::exp(nn::log_softmax(nn::gather_rows(logits, units)));  // (P, A)
  const BasicVar<T> a(BasicTensor<T>::from_vector({P, A}, adv).to_device(logits.value().device()));
  // the mean over P * A entries times A: the mean over probes of the sum over columns
  return nn::scale(nn::mean(nn::mul(p, a)), static_cast<T>(-weight * static_cast<double>(A)));
}

template <typename T>
BasicVar<T> counterfactual_best_loss(const BasicVar<T>& logits, const std::vector<int64_t>& units,
                                     const std::vector<int32_t>& best, const std::vector<T>& m,
                                     double weight) {
  const char* who = "rl::counterfactual_best_loss";
  if (!logits.defined() || logits.value().ndim() != 2) fail(who, "logits must be (U, A)");
  const int64_t U = logits.dim(0), P = static_cast<int64_t>(units.size());
  check_probed_units(who, units, U);
  if (static_cast<int64_t>(best.size()) != P || static_cast<int64_t>(m.size()) != P)
    fail(who, "best and m must have P = " + std::to_string(P) + " entries, got " +
                  std::to_string(best.size()) + " and " + std::to_string(m.size()));
  for (size_t i = 0; i < m.size(); ++i)
    if (!std::isfinite(static_cast<double>(m[i])))
      fail(who, "m[" + std::to_string(i) + "] is not finite");
  if (!std::isfinite(weight)) fail(who, "weight must be finite");
  // sample_log_probs checks best against [0, A); its (1, P) log-probabilities of the best columns
  const BasicVar<T> logp = sample_log_probs(nn::gather_rows(logits, units), best);
  const std::vector<T> lp = logp.value().cpu().to_vector();
  for (int64_t j = 0; j < P; ++j)
    if (static_cast<double>(lp[j]) < 0.5 * static_cast<double>(kMaskedLogit))
      fail(who, "probe " + std::to_string(j) + ": its best column " + std::to_string(best[j]) +
                    " is masked");
  const BasicVar<T> mv(BasicTensor<T>::from_vector({1, P}, m).to_device(logits.value().device()));
  return nn::scale(nn::mean(nn::mul(logp, mv)), static_cast<T>(-weight));
}

template <typename T>
std::vector<T> log_probs(const BasicTensor<T>& logits, const std::vector<int32_t>& actions) {
  nn::NoGradGuard no_grad;
  return sample_log_probs(BasicVar<T>(logits), actions).value().cpu().to_vector();
}

#define GDP_RL_PPO_INSTANTIATE(T)                                                              \
  template BasicVar<T> ppo_loss<T>(const BasicVar<T>&, const std::vector<int32_t>&,            \
                                   const std::vector<T>&, const std::vector<double>&,          \
                                   const PpoConfig&, PpoStats*);                               \
  template BasicVar<T> sample_log_probs<T>(const BasicVar<T>&, const std::vector<int32_t>&);   \
  template std::vector<T> log_probs<T>(const BasicTensor<T>&, const std::vector<int32_t>&);    \
  template BasicVar<T> counterfactual_loss<T>(const BasicVar<T>&, const std::vector<int64_t>&, \
                                              const std::vector<T>&, double);                  \
  template BasicVar<T> counterfactual_best_loss<T>(                                            \
      const BasicVar<T>&, const std::vector<int64_t>&, const std::vector<int32_t>&,            \
      const std::vector<T>&, double);
GDP_RL_PPO_INSTANTIATE(float)
GDP_RL_PPO_INSTANTIATE(double)
#undef GDP_RL_PPO_INSTANTIATE

}  // namespace gdp::rl
