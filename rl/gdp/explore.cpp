// Local proposals and per-iteration diagnostics of the GDP trainer (rl/gdp/explore.h).
#include "rl/gdp/explore.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "rl/gdp/ppo.h"

namespace gdp::rl {

namespace {

// Probabilities of one row of logits (masked columns exactly 0).
void row_probs(const float* z, int32_t A, std::vector<double>& p) {
  p.assign(static_cast<size_t>(A), 0.0);
  masked_softmax_row(z, A, p.data());
}

// Mixes p with the uniform distribution over allowed columns, zeroes `exclude`, draws one.
// Returns `exclude` when no other column is allowed.
int32_t draw_other(const float* z, const std::vector<double>& p, int32_t A, int32_t exclude,
                   double mix, Rng& rng) {
  int32_t allowed = 0;
  for (int32_t c = 0; c < A; ++c) allowed += z[c] >= kMaskedLogit / 2;
  double total = 0;
  std::vector<double> q(static_cast<size_t>(A), 0.0);
  for (int32_t c = 0; c < A; ++c) {
    if (c == exclude || z[c] < kMaskedLogit / 2) continue;
    q[static_cast<size_t>(c)] = (1 - mix) * p[static_cast<size_t>(c)] + mix / allowed;
    total += q[static_cast<size_t>(c)];
  }
  if (!(total > 0)) return exclude;
  double r = rng.uniform() * total;
  int32_t last = exclude;
  for (int32_t c = 0; c < A; ++c) {
    if (q[static_cast<size_t>(c)] <= 0) continue;
    last = c;
    if (r < q[static_cast<size_t>(c)]) return c;
    r -= q[static_cast<size_t>(c)];
  }
  return last;  // rounding
}

}  // namespace

std::vector<int32_t> local_proposal(const nn::Tensor& logits, const std::vector<int32_t>& base,
                                    bool anchored, const ExploreConfig& c, Rng& rng,
                                    const place::UnitAdjacency* adj,
                                    const place::UnitScopes* scopes) {
  const int32_t U = static_cast<int32_t>(logits.dim(0)), A = static_cast<int32_t>(logits.dim(1));
  if (static_cast<int32_t>(base.size()) != U)
    throw std::invalid_argument("rl::local_proposal: base has " + std::to_string(base.size()) +
                                " units, the logits " + std::to_string(U));
  std::vector<int32_t> a = base;
  const int32_t lo_unit = anchored ? 1 : 0;
  if (U - lo_unit <= 0) return a;
  const int32_t max_len =
      std::clamp(static_cast<int32_t>(std::lround(c.block_fraction * U)), 1, U - lo_unit);
  const int32_t len = std::clamp(
      static_cast<int32_t>(std::floor(std::exp(rng.uniform() * std::log(max_len + 1.0)))), 1,
      max_len);
  const int32_t start =
      lo_unit + static_cast<int32_t>(rng.below(static_cast<uint64_t>(U - lo_unit - len + 1)));
  const double w_boundary = adj ? c.p_boundary : 0.0;
  const double w_scope = scopes && !scopes->units.empty() ? c.p_scope : 0.0;
  double kind = rng.uniform() * (c.p_run + c.p_block + w_boundary + w_scope);
  const float* z = logits.data();
  std::vector<double> p;
  if ((kind -= w_boundary) < 0) {  // boundary move
    for (int tries = 0; tries < 8; ++tries) {
      const int32_t u =
          lo_unit + static_cast<int32_t>(rng.below(static_cast<uint64_t>(U - lo_unit)));
      const int64_t b = adj->ptr[static_cast<size_t>(u)], e = adj->ptr[static_cast<size_t>(u) + 1];
      int32_t other = 0;
      for (int64_t i = b; i < e; ++i)
        other += base[static_cast<size_t>(adj->neighbour[static_cast<size_t>(i)])] !=
                 base[static_cast<size_t>(u)];
      if (other == 0) continue;
      int64_t pick = static_cast<int64_t>(rng.below(static_cast<uint64_t>(other)));
      for (int64_t i = b; i < e; ++i) {
        const int32_t d = base[static_cast<size_t>(adj->neighbour[static_cast<size_t>(i)])];
        if (d == base[static_cast<size_t>(u)]) continue;
        if (pick-- == 0) {
          a[static_cast<size_t>(u)] = d;
          return a;
        }
      }
    }
  } else if ((kind -= w_scope) < 0) {  // scope move
    for (int tries = 0; tries < 8; ++tries) {
      const int32_t u =
          lo_unit + static_cast<int32_t>(rng.below(static_cast<uint64_t>(U - lo_unit)));
      const auto& of = scopes->of_unit[static_cast<size_t>(u)];
      if (of.empty()) continue;
      const auto& members = scopes->units[static_cast<size_t>(of[rng.below(of.size())])];
      std::vector<double> mean(static_cast<size_t>(A), 0.0);
      for (int32_t v : members) {
        row_probs(z + static_cast<size_t>(v) * A, A, p);
        for (int32_t d = 0; d < A; ++d)
          mean[static_cast<size_t>(d)] += p[static_cast<size_t>(d)] / members.size();
      }
      const int32_t d = draw_other(z + static_cast<size_t>(u) * A, mean, A,
                                   base[static_cast<size_t>(u)], c.uniform_mix, rng);
      for (int32_t v : members)
        if (v >= lo_unit) a[static_cast<size_t>(v)] = d;
      return a;
    }
  }
  const bool block_move = kind >= c.p_run;
  if (block_move) {
    std::vector<double> mean(static_cast<size_t>(A), 0.0);
    for (int32_t u = start; u < start + len; ++u) {
      row_probs(z + static_cast<size_t>(u) * A, A, p);
      for (int32_t d = 0; d < A; ++d)
        mean[static_cast<size_t>(d)] += p[static_cast<size_t>(d)] / len;
    }
    const int32_t d = draw_other(z + static_cast<size_t>(start) * A, mean, A,
                                 base[static_cast<size_t>(start)], c.uniform_mix, rng);
    for (int32_t u = start; u < start + len; ++u) a[static_cast<size_t>(u)] = d;
  } else {
    for (int32_t u = start; u < start + len; ++u) {
      const float* zu = z + static_cast<size_t>(u) * A;
      row_probs(zu, A, p);
      a[static_cast<size_t>(u)] =
          draw_other(zu, p, A, base[static_cast<size_t>(u)], c.uniform_mix, rng);
    }
  }
  return a;
}

std::vector<double> unit_entropies(const nn::Tensor& logits) {
  const int32_t U = static_cast<int32_t>(logits.dim(0)), A = static_cast<int32_t>(logits.dim(1));
  std::vector<double> h(static_cast<size_t>(U), 0.0), p;
  for (int32_t u = 0; u < U; ++u) {
    row_probs(logits.data() + static_cast<size_t>(u) * A, A, p);
    for (double x : p)
      if (x > 0) h[static_cast<size_t>(u)] -= x * std::log(x);
  }
  return h;
}

double quantile(std::vector<double> xs, double q) {
  if (xs.empty()) return std::numeric_limits<double>::quiet_NaN();
  const size_t i = std::min(xs.size() - 1, static_cast<size_t>(q * static_cast<double>(xs.size())));
  std::nth_element(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(i), xs.end());
  return xs[i];
}

double signal_t(const nn::Tensor& logits, const std::vector<int32_t>& actions,
                const std::vector<double>& adv) {
  const int32_t U = static_cast<int32_t>(logits.dim(0)), A = static_cast<int32_t>(logits.dim(1));
  const size_t K = adv.size();
  if (K < 2 || actions.size() != K * static_cast<size_t>(U))
    return std::numeric_limits<double>::quiet_NaN();
  double sum_t = 0;
  int64_t n = 0;
  std::vector<double> p;
  for (int32_t u = 0; u < U; ++u) {
    const float* zu = logits.data() + static_cast<size_t>(u) * A;
    row_probs(zu, A, p);
    const int32_t c = static_cast<int32_t>(std::max_element(p.begin(), p.end()) - p.begin());
    double m = 0, m2 = 0;
    for (size_t k = 0; k < K; ++k) {
      const double g =
          adv[k] *
          ((actions[k * static_cast<size_t>(U) + static_cast<size_t>(u)] == c ? 1.0 : 0.0) -
           p[static_cast<size_t>(c)]);
      m += g, m2 += g * g;
    }
    m /= static_cast<double>(K);
    const double var =
        (m2 / static_cast<double>(K) - m * m) * static_cast<double>(K) / static_cast<double>(K - 1);
    if (!(var > 1e-30)) continue;
    sum_t += std::fabs(m) / std::sqrt(var / static_cast<double>(K));
    ++n;
  }
  return n ? sum_t / static_cast<double>(n) : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace gdp::rl
