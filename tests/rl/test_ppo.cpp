// The PPO loss: gradients by finite differences (inside the clip range, just outside it on both
// sides, one-sided at the kinks), against a hand-written reference gradient (docs/ppo.md),
// masked columns, the ratio-1 case against REINFORCE, advantages, stats, determinism, and the
// K samples sharing one pass.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "nn/gradcheck.h"
#include "rl/gdp/config.h"
#include "rl/gdp/ppo.h"

using namespace gdp;
using namespace gdp::rl;
using nn::TensorD;
using nn::VarD;

namespace {

// One PPO problem of K samples over logits (U, A).
struct Case {
  TensorD logits;                // (U, A)
  std::vector<int32_t> actions;  // (K * U)
  std::vector<double> old_logp;  // (K * U)
  std::vector<double> adv;       // (K)
  int64_t K = 0, U = 0, A = 0;
};

// Row-wise log-softmax in plain loops (the reference, independent of nn).
std::vector<double> log_softmax_ref(const TensorD& z, int64_t U, int64_t A) {
  std::vector<double> out(static_cast<size_t>(U * A));
  for (int64_t u = 0; u < U; ++u) {
    double mx = z[u * A];
    for (int64_t c = 1; c < A; ++c) mx = std::max(mx, z[u * A + c]);
    double s = 0;
    for (int64_t c = 0; c < A; ++c) s += std::exp(z[u * A + c] - mx);
    for (int64_t c = 0; c < A; ++c) out[u * A + c] = z[u * A + c] - mx - std::log(s);
  }
  return out;
}

// Random logits and actions; old_logp set so that sample k, unit u has ratio ratios(k, u).
template <typename RatioFn>
Case make_case(int64_t K, int64_t U, int64_t A, std::vector<double> adv, uint64_t seed,
               RatioFn ratios) {
  Case c;
  c.K = K, c.U = U, c.A = A, c.adv = std::move(adv);
  nn::Rng rng(seed);
  c.logits = TensorD({U, A});
  for (int64_t i = 0; i < U * A; ++i) c.logits[i] = rng.uniform(-1.5, 1.5);
  const std::vector<double> lsm = log_softmax_ref(c.logits, U, A);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t u = 0; u < U; ++u) {
      const int32_t a = static_cast<int32_t>(rng.below(static_cast<uint64_t>(A)));
      c.actions.push_back(a);
      c.old_logp.push_back(lsm[u * A + a] - std::log(ratios(k, u)));
    }
  return c;
}

// Gradient of the loss w.r.t. the logits by the closed form of docs/ppo.md, plain loops:
//   g_ku = -(1/KU) A_k r_ku if the unclipped term is the minimum, else 0;
//   dL/dz_uc = sum_k g_ku (1{c = a_ku} - p_uc) + (coef/U) p_uc (log p_uc + H_u).
std::vector<double> reference_grad(const Case& c, const PpoConfig& cfg) {
  const int64_t K = c.K, U = c.U, A = c.A;
  const std::vector<double> lsm = log_softmax_ref(c.logits, U, A);
  std::vector<double> g(static_cast<size_t>(U * A), 0.0);
  for (int64_t u = 0; u < U; ++u) {
    double h = 0;
    for (int64_t a = 0; a < A; ++a) h -= std::exp(lsm[u * A + a]) * lsm[u * A + a];
    for (int64_t a = 0; a < A; ++a) {
      const double p = std::exp(lsm[u * A + a]);
      g[u * A + a] += cfg.entropy_coef / U * p * (lsm[u * A + a] + h);
    }
    for (int64_t k = 0; k < K; ++k) {
      const int32_t act = c.actions[k * U + u];
      const double r = std::exp(lsm[u * A + act] - c.old_logp[k * U + u]);
      const double adv = c.adv[k];
      const bool clipped = (adv > 0 && r > 1 + cfg.clip) || (adv < 0 && r < 1 - cfg.clip);
      if (clipped) continue;
      const double gku = -adv * r / static_cast<double>(K * U);
      for (int64_t a = 0; a < A; ++a) g[u * A + a] -= gku * std::exp(lsm[u * A + a]);
      g[u * A + act] += gku;
    }
  }
  return g;
}

VarD loss_of(const VarD& x, const Case& c, const PpoConfig& cfg, PpoStats* stats = nullptr) {
  return ppo_loss(x, c.actions, c.old_logp, c.adv, cfg, stats);
}

// The tape's gradient of the loss w.r.t. the logits.
std::vector<double> autograd_grad(const Case& c, const PpoConfig& cfg) {
  nn::TapeD::current().clear();
  VarD x(c.logits.clone(), true);
  nn::backward(loss_of(x, c, cfg));
  return x.grad().to_vector();
}

nn::GradcheckResult fd_check(const Case& c, const PpoConfig& cfg) {
  return nn::gradcheck([&](const std::vector<VarD>& in) { return loss_of(in[0], c, cfg); },
                       {VarD(c.logits.clone(), true)});
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

double max_abs(const std::vector<double>& a) {
  return max_abs_diff(a, std::vector<double>(a.size()));
}

}  // namespace

TEST_CASE("rl/sample_log_probs values and gradcheck (the fused op)", "[rl]") {
  for (const bool with_mask : {false, true}) {
    const int64_t K = 3, U = 5, A = 4;
    Case c = make_case(K, U, A, {0, 0, 0}, 11, [](int64_t, int64_t) { return 1.0; });
    if (with_mask)
      for (int64_t u = 0; u < U; ++u) {
        c.logits[u * A + 3] += kMaskedLogit;
        for (int64_t k = 0; k < K; ++k) c.actions[k * U + u] %= 3;
      }
    INFO("mask " << with_mask);
    const std::vector<double> lsm = log_softmax_ref(c.logits, U, A);
    const VarD lp = sample_log_probs(VarD(c.logits), c.actions);
    REQUIRE(lp.shape() == nn::Shape{K, U});
    for (int64_t k = 0; k < K; ++k)
      for (int64_t u = 0; u < U; ++u)
        CHECK(lp.value()[k * U + u] ==
              Approx(lsm[u * A + c.actions[k * U + u]]).epsilon(1e-14).margin(1e-14));
    // The same numbers as the composition log_softmax -> take_along_last, per sample.
    for (int64_t k = 0; k < K; ++k) {
      const std::vector<int64_t> idx(c.actions.begin() + k * U, c.actions.begin() + (k + 1) * U);
      const TensorD ref = nn::take_along_last(nn::log_softmax(VarD(c.logits)), idx).value();
      for (int64_t u = 0; u < U; ++u) CHECK(lp.value()[k * U + u] == Approx(ref[u]).epsilon(1e-14));
    }
    const auto fd = nn::gradcheck(
        [&](const std::vector<VarD>& in) { return sample_log_probs(in[0], c.actions); },
        {VarD(c.logits.clone(), true)});
    INFO(fd.worst);
    CHECK(fd.passed);
    CHECK(fd.skipped_kinks == 0);
    CHECK(log_probs(c.logits, c.actions) == lp.value().to_vector());
  }
}

TEST_CASE("rl/gdp/ppo gradcheck with ratios inside the clip range", "[rl]") {
  for (int64_t K : {2, 3, 4})
    for (int64_t U : {3, 5})
      for (int64_t A : {2, 4}) {
        // Ratios in [0.85, 1.15], inside [0.8, 1.2].
        nn::Rng rr(static_cast<uint64_t>(K * 100 + U * 10 + A));
        std::vector<double> ratio(static_cast<size_t>(K * U));
        for (double& r : ratio) r = rr.uniform(0.85, 1.15);
        std::vector<double> adv;
        for (int64_t k = 0; k < K; ++k) adv.push_back(rr.uniform(-1.5, 1.5));
        const Case c = make_case(K, U, A, adv, 7 + K + U + A,
                                 [&](int64_t k, int64_t u) { return ratio[k * U + u]; });
        for (double coef : {0.0, 0.3}) {
          PpoConfig cfg;
          cfg.entropy_coef = coef;
          INFO("K " << K << " U " << U << " A " << A << " coef " << coef);
          const auto fd = fd_check(c, cfg);
          INFO(fd.worst);
          CHECK(fd.passed);
          CHECK(fd.skipped_kinks == 0);
          CHECK(max_abs_diff(autograd_grad(c, cfg), reference_grad(c, cfg)) < 1e-14);
        }
      }
}

TEST_CASE("rl/gdp/ppo ratios just outside the clip range, both sides, both signs of advantage",
          "[rl]") {
  const int64_t K = 4, U = 5, A = 3;
  PpoConfig cfg;
  cfg.entropy_coef = 0.0;
  const double eps = cfg.clip;
  // Sample k: positive advantage for k even, negative for k odd; units alternate between ratios
  // above 1+eps and below 1-eps (0.05 away), so every combination occurs.
  const std::vector<double> adv = {1.2, -0.8, 0.5, -1.4};
  const auto ratio = [&](int64_t k, int64_t u) {
    return (k / 2 + u) % 2 == 0 ? 1 + eps + 0.05 : 1 - eps - 0.05;
  };
  const Case c = make_case(K, U, A, adv, 21, ratio);
  const auto fd = fd_check(c, cfg);
  INFO(fd.worst);
  CHECK(fd.passed);
  CHECK(fd.skipped_kinks == 0);
  const std::vector<double> g = autograd_grad(c, cfg);
  CHECK(max_abs_diff(g, reference_grad(c, cfg)) < 1e-14);
  CHECK(max_abs(g) > 1e-3);  // the unclipped terms (r > 1+eps with A < 0, r < 1-eps, A > 0)

  SECTION("only clipped terms: the gradient is exactly zero") {
    // A > 0 with r > 1+eps, and A < 0 with r < 1-eps: the clipped term is the minimum.
    const Case z = make_case(2, U, A, {0.9, -0.6}, 22, [&](int64_t k, int64_t) {
      return k == 0 ? 1 + eps + 0.05 : 1 - eps - 0.05;
    });
    const std::vector<double> gz = autograd_grad(z, cfg);
    CHECK(max_abs(gz) == 0.0);
    const auto fdz = fd_check(z, cfg);
    CHECK(fdz.passed);
    CHECK(fdz.skipped_kinks == 0);
    // With the entropy bonus only the entropy gradient remains.
    PpoConfig with_entropy = cfg;
    with_entropy.entropy_coef = 0.2;
    CHECK(max_abs_diff(autograd_grad(z, with_entropy), reference_grad(z, with_entropy)) < 1e-14);
  }
}

TEST_CASE("rl/gdp/ppo one-sided gradients a small step either side of the kinks", "[rl]") {
  // One sample, U = 3, A = 3; every unit at the same ratio. The kink of min(rA, clip(r)A) is at
  // 1+eps for A > 0 and at 1-eps for A < 0; at the other edge the unclipped term stays the
  // minimum and the gradient is continuous. Points are 1e-3 away (the finite-difference step
  // moves r by ~1e-6), never on the edge.
  PpoConfig cfg;
  cfg.entropy_coef = 0.0;
  const double eps = cfg.clip, d = 1e-3;
  const auto grad_at = [&](double r, double adv) {
    const Case c = make_case(1, 3, 3, {adv}, 31, [&](int64_t, int64_t) { return r; });
    const auto fd = fd_check(c, cfg);
    INFO("r " << r << " A " << adv << ": " << fd.worst);
    CHECK(fd.passed);
    CHECK(fd.skipped_kinks == 0);
    const std::vector<double> g = autograd_grad(c, cfg);
    CHECK(max_abs_diff(g, reference_grad(c, cfg)) < 1e-14);
    return g;
  };
  // A > 0 at 1+eps: the gradient -A r (1{a} - p) / U below, zero above.
  const auto in_hi = grad_at(1 + eps - d, 1.0), out_hi = grad_at(1 + eps + d, 1.0);
  CHECK(max_abs(in_hi) > 0.05);
  CHECK(max_abs(out_hi) == 0.0);
  // A < 0 at 1-eps: the gradient above, zero below.
  const auto in_lo = grad_at(1 - eps + d, -1.0), out_lo = grad_at(1 - eps - d, -1.0);
  CHECK(max_abs(in_lo) > 0.05);
  CHECK(max_abs(out_lo) == 0.0);
  // No kink where the clip does not bind: both sides agree up to the change of r (2d / r).
  const auto a_lo = grad_at(1 - eps - d, 1.0), b_lo = grad_at(1 - eps + d, 1.0);
  CHECK(max_abs_diff(a_lo, b_lo) < 3 * d * max_abs(a_lo));
  const auto a_hi = grad_at(1 + eps - d, -1.0), b_hi = grad_at(1 + eps + d, -1.0);
  CHECK(max_abs_diff(a_hi, b_hi) < 3 * d * max_abs(a_hi));
}

TEST_CASE("rl/gdp/ppo masked columns: finite loss, zero gradient there", "[rl]") {
  const int64_t K = 3, U = 4, A = 4;
  PpoConfig cfg;
  cfg.entropy_coef = 0.1;
  // Column 3 masked everywhere (3 devices), column 2 too in unit 1; actions avoid them.
  Case c = make_case(K, U, A, {0.7, -1.1, 0.4}, 41,
                     [](int64_t k, int64_t u) { return 0.9 + 0.05 * double((k + u) % 5); });
  const auto masked = [](int64_t u, int64_t a) { return a == 3 || (u == 1 && a == 2); };
  for (int64_t u = 0; u < U; ++u)
    for (int64_t a = 0; a < A; ++a)
      if (masked(u, a)) c.logits[u * A + a] += kMaskedLogit;
  for (int64_t k = 0; k < K; ++k)
    for (int64_t u = 0; u < U; ++u) {
      int32_t& act = c.actions[k * U + u];
      act = static_cast<int32_t>((act + k) % (u == 1 ? 2 : 3));
    }
  // Ratios from the masked logits: old = current log-prob - log(target).
  c.old_logp = log_probs(c.logits, c.actions);
  for (size_t i = 0; i < c.old_logp.size(); ++i) c.old_logp[i] -= std::log(0.85 + 0.03 * (i % 10));

  SECTION("double") {
    PpoStats st;
    nn::TapeD::current().clear();
    VarD x(c.logits.clone(), true);
    const VarD loss = loss_of(x, c, cfg, &st);
    CHECK(std::isfinite(loss.item()));
    CHECK(std::isfinite(st.entropy));
    nn::backward(loss);
    const std::vector<double> g = x.grad().to_vector();
    for (int64_t u = 0; u < U; ++u)
      for (int64_t a = 0; a < A; ++a) {
        CHECK(std::isfinite(g[u * A + a]));
        if (masked(u, a)) CHECK(g[u * A + a] == 0.0);
      }
    CHECK(max_abs_diff(g, reference_grad(c, cfg)) < 1e-14);
    const auto fd = fd_check(c, cfg);
    INFO(fd.worst);
    CHECK(fd.passed);
    CHECK(fd.skipped_kinks == 0);
  }
  SECTION("float") {
    const nn::Tensor lf = c.logits.cast<float>();
    const std::vector<float> old_f = log_probs(lf, c.actions);
    nn::Tape::current().clear();
    nn::Var x(lf.clone(), true);
    PpoStats st;
    const nn::Var loss = ppo_loss(x, c.actions, old_f, c.adv, cfg, &st);
    CHECK(std::isfinite(loss.item()));
    CHECK(st.clip_fraction == 0.0);
    nn::backward(loss);
    const std::vector<float> g = x.grad().to_vector();
    for (int64_t u = 0; u < U; ++u)
      for (int64_t a = 0; a < A; ++a) {
        CHECK(std::isfinite(g[u * A + a]));
        if (masked(u, a)) CHECK(g[u * A + a] == 0.0f);
      }
  }
}

TEST_CASE("rl/gdp/ppo at ratio 1 is REINFORCE: value -mean(A) and its gradient", "[rl]") {
  const int64_t K = 3, U = 4, A = 3;
  Case c = make_case(K, U, A, {0.9, -0.3, 0.15}, 51, [](int64_t, int64_t) { return 1.0; });
  c.old_logp = log_probs(c.logits, c.actions);  // the sampling pass: ratio exactly 1
  const double mean_adv = (0.9 - 0.3 + 0.15) / 3;
  PpoConfig cfg;
  cfg.entropy_coef = 0.0;
  PpoStats st;
  {
    nn::TapeD::current().clear();
    const VarD loss = loss_of(VarD(c.logits), c, cfg, &st);
    CHECK(loss.item() == Approx(-mean_adv).epsilon(1e-14));
    CHECK(st.policy_loss == Approx(-mean_adv).epsilon(1e-14));
    CHECK(st.approx_kl == 0.0);
    CHECK(st.clip_fraction == 0.0);
  }
  // The REINFORCE surrogate J(z) = -mean_k A_k mean_u log p(a_ku | z_u), its gradient by central
  // differences in plain loops (no nn), against the tape's gradient of the PPO loss.
  const auto reinforce = [&](const TensorD& z) {
    const std::vector<double> lsm = log_softmax_ref(z, U, A);
    double j = 0;
    for (int64_t k = 0; k < K; ++k)
      for (int64_t u = 0; u < U; ++u) j -= c.adv[k] * lsm[u * A + c.actions[k * U + u]];
    return j / static_cast<double>(K * U);
  };
  std::vector<double> numeric(static_cast<size_t>(U * A));
  for (int64_t i = 0; i < U * A; ++i) {
    TensorD zp = c.logits.clone(), zm = c.logits.clone();
    zp[i] += 1e-6;
    zm[i] -= 1e-6;
    numeric[i] = (reinforce(zp) - reinforce(zm)) / 2e-6;
  }
  const std::vector<double> g = autograd_grad(c, cfg);
  CHECK(max_abs_diff(g, numeric) < 1e-8);
  CHECK(max_abs(g) > 1e-2);

  SECTION("normalized advantages: policy loss 0; entropy bonus by hand") {
    c.adv = advantages({-1.0, -2.0, -1.5}, PpoConfig{});
    cfg.entropy_coef = 0.25;
    const VarD loss = loss_of(VarD(c.logits), c, cfg, &st);
    CHECK(std::abs(st.policy_loss) < 1e-15);
    const std::vector<double> lsm = log_softmax_ref(c.logits, U, A);
    double h = 0;
    for (double l : lsm) h -= std::exp(l) * l;
    h /= static_cast<double>(U);
    CHECK(st.entropy == Approx(h).epsilon(1e-13));
    CHECK(loss.item() == Approx(st.policy_loss - 0.25 * h).epsilon(1e-13));
    CHECK(st.loss == loss.item());
  }
}

TEST_CASE("rl/gdp/ppo advantages: baseline, normalization, single sample, zero spread", "[rl]") {
  PpoConfig norm, raw;
  norm.baseline = raw.baseline = rl::Baseline::mean;
  raw.normalize_advantages = false;
  const auto a = advantages({1.0, 2.0, 3.0}, norm);
  const double s = std::sqrt(2.0 / 3.0);  // population std
  REQUIRE(a.size() == 3);
  CHECK(a[0] == Approx(-1.0 / (s + 1e-8)).epsilon(1e-15));
  CHECK(a[1] == 0.0);
  CHECK(a[2] == Approx(1.0 / (s + 1e-8)).epsilon(1e-15));
  CHECK(advantages({1.0, 2.0, 3.0}, raw) == std::vector<double>{-1.0, 0.0, 1.0});
  // Normalized: mean 0, std ~1.
  const auto b = advantages({-0.3, -1.7, -0.9, -2.5, -1.1}, norm);
  double m = 0, v = 0;
  for (double x : b) m += x;
  for (double x : b) v += x * x;
  CHECK(std::abs(m) < 1e-12);
  CHECK(std::sqrt(v / 5) == Approx(1.0).epsilon(1e-7));
  CHECK(advantages({-4.2}, norm) == std::vector<double>{0.0});
  CHECK(advantages({-4.2}, raw) == std::vector<double>{0.0});
  CHECK(advantages({-10.0, -10.0, -10.0}, norm) == std::vector<double>{0.0, 0.0, 0.0});
  CHECK_THROWS_AS(advantages({}, norm), std::invalid_argument);
  CHECK_THROWS_WITH(advantages({1.0, std::numeric_limits<double>::infinity()}, norm),
                    Catch::Contains("reward[1]"));
  // std_floor: a spread below the floor is divided by the floor, not amplified to 1.
  PpoConfig floored = norm;
  floored.std_floor = 0.01;
  const auto f = advantages({-1.001, -1.0, -0.999}, floored);  // std 8.2e-4
  CHECK(f[0] == Approx(-0.001 / (0.01 + 1e-8)).epsilon(1e-9));
  CHECK(f[2] == Approx(0.001 / (0.01 + 1e-8)).epsilon(1e-9));
  CHECK(advantages({1.0, 2.0, 3.0}, floored) == a);  // above the floor: unchanged
  // top (risk-seeking): the samples above the upper quartile q, by how much; the others 0. Five
  // rewards: q sits at order statistic 3 of 0..4, the second best.
  PpoConfig top = raw;
  top.baseline = rl::Baseline::top;
  CHECK(advantages({-5.0, -1.0, -4.0, -2.0, -3.0}, top) ==
        std::vector<double>{0.0, 1.0, 0.0, 0.0, 0.0});
  // Four rewards: q = 0.75 of the way from the third to the fourth, 3.25.
  CHECK(advantages({1.0, 2.0, 3.0, 4.0}, top) == std::vector<double>{0.0, 0.0, 0.0, 0.75});
  top.normalize_advantages = true;  // divided by the root mean square
  const auto t = advantages({1.0, 2.0, 3.0, 4.0}, top);
  CHECK(t[3] == Approx(0.75 / (std::sqrt(0.75 * 0.75 / 4) + 1e-8)));
  CHECK(advantages({-1.0, -1.0, -1.0}, top) == std::vector<double>{0.0, 0.0, 0.0});
  CHECK(rl::TrainConfig::from_json(nlohmann::json::parse(R"({"ppo": {"baseline": "top"}})"), "c")
            .ppo.baseline == rl::Baseline::top);
}

TEST_CASE("rl/gdp/ppo stats: ratio 1, and a clipped case by hand", "[rl]") {
  const int64_t K = 2, U = 5, A = 4;
  Case c = make_case(K, U, A, {1.0, -1.0}, 61, [](int64_t, int64_t) { return 1.0; });
  PpoConfig cfg;
  PpoStats st;
  SECTION("float, old log-probs from the sampling pass") {
    const nn::Tensor lf = c.logits.cast<float>();
    const std::vector<float> old_f = log_probs(lf, c.actions);
    const nn::Var loss = ppo_loss(nn::Var(lf), c.actions, old_f, c.adv, cfg, &st);
    CHECK(st.approx_kl == 0.0);
    CHECK(st.clip_fraction == 0.0);
    CHECK(std::abs(st.policy_loss) < 1e-7);
    CHECK(st.loss == static_cast<double>(loss.item()));
  }
  SECTION("double, 3 of 10 ratios outside the range") {
    const std::vector<double> r = {1.5, 1.0, 0.5, 1.1, 0.9, 1.0, 1.0, 1.25, 1.0, 0.95};
    c.old_logp = log_probs(c.logits, c.actions);
    double kl = 0;
    for (size_t i = 0; i < r.size(); ++i) {
      c.old_logp[i] -= std::log(r[i]);
      kl += (r[i] - 1) - std::log(r[i]);
    }
    loss_of(VarD(c.logits), c, cfg, &st);
    CHECK(st.clip_fraction == Approx(0.3));
    CHECK(st.approx_kl == Approx(kl / 10).epsilon(1e-12));
    CHECK(st.approx_kl > 0);
    // policy loss by hand: -mean min(r A, clip(r) A).
    double pl = 0;
    for (int64_t i = 0; i < K * U; ++i) {
      const double adv = c.adv[i / U], rc = std::min(std::max(r[i], 0.8), 1.2);
      pl -= std::min(r[i] * adv, rc * adv);
    }
    CHECK(st.policy_loss == Approx(pl / 10).epsilon(1e-12));
  }
}

TEST_CASE("rl/gdp/ppo K samples in one pass = the mean of K single-sample passes", "[rl]") {
  const int64_t K = 4, U = 5, A = 3;
  PpoConfig cfg;
  cfg.entropy_coef = 0.1;
  const Case c = make_case(K, U, A, {0.8, -0.2, -1.3, 0.6}, 71, [](int64_t k, int64_t u) {
    return 0.7 + 0.15 * double((k * 3 + u) % 5);  // some inside, some outside the clip
  });
  const std::vector<double> joint = autograd_grad(c, cfg);
  nn::TapeD::current().clear();
  const double joint_loss = loss_of(VarD(c.logits), c, cfg).item();
  std::vector<double> mean_grad(static_cast<size_t>(U * A), 0.0);
  double mean_loss = 0;
  for (int64_t k = 0; k < K; ++k) {
    Case one = c;
    one.K = 1;
    one.actions.assign(c.actions.begin() + k * U, c.actions.begin() + (k + 1) * U);
    one.old_logp.assign(c.old_logp.begin() + k * U, c.old_logp.begin() + (k + 1) * U);
    one.adv = {c.adv[k]};
    const std::vector<double> g = autograd_grad(one, cfg);
    for (size_t i = 0; i < g.size(); ++i) mean_grad[i] += g[i] / K;
    mean_loss += loss_of(VarD(c.logits), one, cfg).item() / K;
  }
  CHECK(joint_loss == Approx(mean_loss).epsilon(1e-14));
  CHECK(max_abs_diff(joint, mean_grad) < 1e-15);
}

TEST_CASE("rl/gdp/ppo is deterministic, and float agrees with double", "[rl]") {
  // Large enough for the OpenMP paths (K*U and U*A above 32k elements).
  const int64_t K = 8, U = 6000, A = 8;
  const Case c = make_case(
      K, U, A, advantages({-1.0, -1.2, -0.8, -1.1, -0.95, -1.3, -0.7, -1.05}, PpoConfig{}), 81,
      [](int64_t k, int64_t u) { return 0.755 + 0.01 * double((k + u) % 50); });
  const nn::Tensor lf = c.logits.cast<float>();
  const std::vector<float> old_f(c.old_logp.begin(), c.old_logp.end());
  PpoConfig cfg;
  const auto run = [&](PpoStats* st) {
    nn::Tape::current().clear();
    nn::Var x(lf.clone(), true);
    const nn::Var loss = ppo_loss(x, c.actions, old_f, c.adv, cfg, st);
    nn::backward(loss);
    std::vector<float> out = x.grad().to_vector();
    out.push_back(loss.item());
    return out;
  };
  PpoStats s1, s2;
  const std::vector<float> a = run(&s1), b = run(&s2);
  REQUIRE(a.size() == b.size());
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
  CHECK(s1.approx_kl == s2.approx_kl);
  CHECK(s1.clip_fraction == s2.clip_fraction);
  CHECK(s1.clip_fraction > 0);

  nn::TapeD::current().clear();
  PpoStats sd;
  VarD xd(c.logits.clone(), true);
  const VarD ld = loss_of(xd, c, cfg, &sd);
  nn::backward(ld);
  const std::vector<double> gd = xd.grad().to_vector();
  CHECK(a.back() == Approx(ld.item()).margin(1e-5));
  double worst = 0, scale = 0;
  for (size_t i = 0; i < gd.size(); ++i) {
    worst = std::max(worst, std::abs(a[i] - gd[i]));
    scale = std::max(scale, std::abs(gd[i]));
  }
  CHECK(worst < 1e-3 * scale);
  CHECK(s1.clip_fraction == Approx(sd.clip_fraction).margin(1e-3));
}

TEST_CASE("rl/gdp/ppo rejects inconsistent input with a message", "[rl]") {
  const Case c = make_case(2, 3, 3, {1.0, -1.0}, 91, [](int64_t, int64_t) { return 1.0; });
  const VarD x(c.logits);
  const PpoConfig cfg;
  CHECK_THROWS_WITH(ppo_loss(x, {0, 1}, {0.0, 0.0}, {1.0}, cfg), Catch::Contains("(K * U)"));
  CHECK_THROWS_WITH(ppo_loss(x, c.actions, c.old_logp, {1.0}, cfg),
                    Catch::Contains("2 samples in actions but 1 advantages"));
  CHECK_THROWS_WITH(ppo_loss(x, c.actions, {0.0}, c.adv, cfg), Catch::Contains("old_logp"));
  std::vector<int32_t> bad = c.actions;
  bad[4] = 3;
  CHECK_THROWS_WITH(ppo_loss(x, bad, c.old_logp, c.adv, cfg),
                    Catch::Contains("action[4] (sample 1, unit 1) = 3 not in [0, 3)"));
  bad[4] = -1;
  CHECK_THROWS_AS(log_probs(c.logits, bad), std::invalid_argument);
  std::vector<double> nan_old = c.old_logp;
  nan_old[2] = std::nan("");
  CHECK_THROWS_WITH(ppo_loss(x, c.actions, nan_old, c.adv, cfg), Catch::Contains("old_logp[2]"));
  // An action on a masked column, at sampling time or now.
  TensorD masked = c.logits.clone();
  masked[1 * 3 + c.actions[1]] += kMaskedLogit;  // sample 0, unit 1
  CHECK_THROWS_WITH(ppo_loss(VarD(masked), c.actions, c.old_logp, c.adv, cfg),
                    Catch::Contains("sample 0, unit 1: the action is on a masked column"));
  CHECK_THROWS_WITH(ppo_loss(x, c.actions, log_probs(masked, c.actions), c.adv, cfg),
                    Catch::Contains("sample 0, unit 1: the action is on a masked column"));
  PpoConfig no_clip;
  no_clip.clip = 0;
  CHECK_THROWS_WITH(ppo_loss(x, c.actions, c.old_logp, c.adv, no_clip), Catch::Contains("clip"));
  CHECK_THROWS_AS(ppo_loss(VarD(TensorD({3})), c.actions, c.old_logp, c.adv, cfg),
                  std::invalid_argument);
}

namespace {

// Logits (U, A) uniform in [-1.5, 1.5] from `seed`, entry `masked` (row-major) masked.
TensorD probe_logits(int64_t U, int64_t A, uint64_t seed, int64_t masked) {
  nn::Rng rng(seed);
  TensorD z({U, A});
  for (int64_t i = 0; i < U * A; ++i) z[i] = rng.uniform(-1.5, 1.5);
  z[masked] = kMaskedLogit;
  return z;
}

// The tape's value and gradient of loss(x) at logits z.
template <typename F>
std::pair<double, std::vector<double>> value_and_grad(const TensorD& z, F loss) {
  nn::TapeD::current().clear();
  const VarD x(z.clone(), true);
  const VarD l = loss(x);
  nn::backward(l);
  return {l.item(), x.grad().to_vector()};
}

}  // namespace

TEST_CASE("rl/gdp/counterfactual_loss: value and all-actions gradient by hand, masked columns",
          "[rl]") {
  // Logits (U = 4, A = 3), column 2 of unit 3 masked; probes of units 1, 3 and 1 again.
  const int64_t U = 4, A = 3;
  const TensorD z = probe_logits(U, A, 77, 3 * A + 2);
  const std::vector<int64_t> units = {1, 3, 1};
  const std::vector<double> adv = {0.5, -1.0, 0.5, 2.0, -2.0, 0.0, -0.3, 0.6, -0.3};
  const double w = 1.7;
  const int64_t P = 3;
  const std::vector<double> lsm = log_softmax_ref(z, U, A);
  double value = 0;
  std::vector<double> grad(static_cast<size_t>(U * A), 0.0);
  for (int64_t j = 0; j < P; ++j) {
    const int64_t u = units[j];
    double mean = 0;  // sum_d p_d A_d
    for (int64_t c = 0; c < A; ++c) mean += std::exp(lsm[u * A + c]) * adv[j * A + c];
    value -= w * mean / P;
    for (int64_t c = 0; c < A; ++c)
      grad[u * A + c] -= w / P * std::exp(lsm[u * A + c]) * (adv[j * A + c] - mean);
  }
  const auto [loss, g] =
      value_and_grad(z, [&](const VarD& x) { return counterfactual_loss(x, units, adv, w); });
  CHECK(loss == Approx(value).epsilon(1e-13));
  CHECK(max_abs_diff(g, grad) < 1e-13);
  CHECK(max_abs(grad) > 1e-2);
  CHECK(g[3 * A + 2] == 0.0);                                  // the masked column
  for (int64_t c = 0; c < A; ++c) CHECK(g[0 * A + c] == 0.0);  // an unprobed unit
  // The gradient moves each probed unit toward its better columns: one small step lowers it.
  TensorD z2 = z.clone();
  for (int64_t i = 0; i < U * A; ++i) z2[i] -= 0.1 * g[i];
  nn::TapeD::current().clear();
  CHECK(counterfactual_loss(VarD(z2), units, adv, w).item() < loss);

  CHECK_THROWS_WITH(counterfactual_loss(VarD(z), {}, adv, w), Catch::Contains("no probed units"));
  CHECK_THROWS_WITH(counterfactual_loss(VarD(z), {1, 4, 1}, adv, w),
                    Catch::Contains("unit[1] = 4 not in [0, 4)"));
  CHECK_THROWS_WITH(counterfactual_loss(VarD(z), {1, 3}, adv, w),
                    Catch::Contains("expected P * A = 6"));
}

TEST_CASE("rl/gdp/counterfactual_best_loss: weighted cross-entropy toward each probe's best",
          "[rl]") {
  const int64_t U = 3, A = 4;
  const TensorD z = probe_logits(U, A, 78, 2 * A + 3);
  const std::vector<int64_t> units = {2, 0, 2};
  const std::vector<int32_t> best = {1, 3, 0};
  const std::vector<double> m = {0.5, 2.0, 0.0};
  const double w = 0.8;
  const int64_t P = 3;
  const std::vector<double> lsm = log_softmax_ref(z, U, A);
  double value = 0;
  std::vector<double> grad(static_cast<size_t>(U * A), 0.0);
  for (int64_t j = 0; j < P; ++j) {
    const int64_t u = units[j];
    value -= w / P * m[j] * lsm[u * A + best[j]];
    for (int64_t c = 0; c < A; ++c)
      grad[u * A + c] -= w / P * m[j] * ((c == best[j] ? 1.0 : 0.0) - std::exp(lsm[u * A + c]));
  }
  const auto [loss, g] = value_and_grad(
      z, [&](const VarD& x) { return counterfactual_best_loss(x, units, best, m, w); });
  CHECK(loss == Approx(value).epsilon(1e-13));
  CHECK(max_abs_diff(g, grad) < 1e-13);
  CHECK(g[2 * A + 3] == 0.0);                                  // the masked column
  for (int64_t c = 0; c < A; ++c) CHECK(g[1 * A + c] == 0.0);  // an unprobed unit
  CHECK(g[0 * A + 3] < 0.0);  // descent raises the best column's logit
  CHECK_THROWS_WITH(counterfactual_best_loss(VarD(z), units, {1, 3, 3}, m, w),
                    Catch::Contains("best column 3 is masked"));
  CHECK_THROWS_WITH(counterfactual_best_loss(VarD(z), units, {1, 3}, m, w),
                    Catch::Contains("P = 3"));
}
