// Tests of the Transformer-XL relative attention: against a naive per-element reference written
// from the formula, causality, the sinusoid table, and double-precision gradchecks with memory
// and relative positions (causal and full masks, odd sizes).
#include <catch2/catch.hpp>
#include <cmath>

#include "nn/attention.h"
#include "nn/gradcheck.h"
#include "nn/graph_ops.h"

using namespace gdp::nn;

namespace {

// Direct evaluation of out_i = sum_j softmax_j(a_ij) v_j with
// a_ij = ((q_i + u) . k_j + (q_i + vb) . rk_{r + off}) / sqrt(Dh), r = M + i - j.
std::vector<double> naive_attention(const std::vector<double>& q, const std::vector<double>& k,
                                    const std::vector<double>& v, const std::vector<double>& rk,
                                    const std::vector<double>& u, const std::vector<double>& vb,
                                    const RelAttentionDims& d) {
  const int D = d.D(), K = d.K();
  std::vector<double> out(static_cast<size_t>(d.S) * D, 0.0);
  for (int h = 0; h < d.H; ++h)
    for (int i = 0; i < d.S; ++i) {
      std::vector<double> a(K, -INFINITY);
      for (int j = 0; j < K; ++j) {
        const int r = d.M + i - j;
        if (d.causal && r < 0) continue;
        const int p = r + (d.causal ? 0 : d.S - 1);
        double s = 0;
        for (int c = h * d.Dh; c < (h + 1) * d.Dh; ++c)
          s += (q[i * D + c] + u[c]) * k[j * D + c] + (q[i * D + c] + vb[c]) * rk[p * D + c];
        a[j] = s / std::sqrt(static_cast<double>(d.Dh));
      }
      double mx = -INFINITY, z = 0;
      for (double x : a) mx = std::max(mx, x);
      for (double& x : a) z += (x = std::exp(x - mx));
      for (int j = 0; j < K; ++j)
        for (int c = h * d.Dh; c < (h + 1) * d.Dh; ++c) out[i * D + c] += a[j] / z * v[j * D + c];
    }
  return out;
}

std::vector<double> random_vec(size_t n, Rng& rng) {
  std::vector<double> x(n);
  for (auto& e : x) e = rng.uniform(-1.0, 1.0);
  return x;
}

// Random q, k, v, rk, u, vb for d; the largest |forward - naive_attention| in double, and (when
// errf) in float against the same reference.
struct Inputs {
  std::vector<double> q, k, v, rk, u, vb;
};
Inputs random_inputs(const RelAttentionDims& d, Rng& rng) {
  const int D = d.D();
  return {random_vec(d.S * D, rng),   random_vec(d.K() * D, rng), random_vec(d.K() * D, rng),
          random_vec(d.P() * D, rng), random_vec(D, rng),         random_vec(D, rng)};
}
double forward_error(const Inputs& in, const RelAttentionDims& d, double* errf = nullptr) {
  const auto ref = naive_attention(in.q, in.k, in.v, in.rk, in.u, in.vb, d);
  std::vector<double> out(d.S * d.D()), probs(d.H * d.S * d.K());
  rel_attention_forward(out.data(), probs.data(), in.q.data(), in.k.data(), in.v.data(),
                        in.rk.data(), in.u.data(), in.vb.data(), d);
  double err = 0;
  for (size_t i = 0; i < out.size(); ++i) err = std::max(err, std::abs(out[i] - ref[i]));
  if (errf) {
    auto f = [](const std::vector<double>& x) { return std::vector<float>(x.begin(), x.end()); };
    const auto qf = f(in.q), kf = f(in.k), vf = f(in.v), rkf = f(in.rk), uf = f(in.u),
               vbf = f(in.vb);
    std::vector<float> outf(out.size()), probsf(probs.size());
    rel_attention_forward(outf.data(), probsf.data(), qf.data(), kf.data(), vf.data(), rkf.data(),
                          uf.data(), vbf.data(), d);
    *errf = 0;
    for (size_t i = 0; i < out.size(); ++i) *errf = std::max(*errf, std::abs(outf[i] - ref[i]));
  }
  return err;
}

}  // namespace

TEST_CASE("nn/relative sinusoid table", "[nn]") {
  std::vector<double> R(7 * 6);
  relative_sinusoid(R.data(), 7, 6, 2);  // rows encode r = -2 .. 4
  for (int c = 0; c < 3; ++c) {
    CHECK(R[2 * 6 + c] == Approx(0.0).margin(1e-15));  // sin(0)
    CHECK(R[2 * 6 + 3 + c] == Approx(1.0));            // cos(0)
  }
  CHECK(R[3 * 6 + 0] == Approx(std::sin(1.0)));  // r = 1, f_0 = 1
  CHECK(R[0 * 6 + 0] == Approx(std::sin(-2.0)));
  CHECK(R[6 * 6 + 1] == Approx(std::sin(4.0 * std::pow(10000.0, -2.0 / 6))));
}

TEST_CASE("nn/rel attention matches a naive reference", "[nn]") {
  Rng rng(42);
  for (bool causal : {true, false})
    for (int M : {0, 3}) {
      RelAttentionDims d{5, M, 2, 3, causal};
      double errf = 0;
      const double err = forward_error(random_inputs(d, rng), d, &errf);
      INFO("causal " << causal << " M " << M);
      CHECK(err < 1e-12);
      CHECK(errf < 1e-5);  // the float path agrees to float precision
    }
}

TEST_CASE("nn/rel attention across row blocks matches the reference and gradcheck", "[nn]") {
  // S > 64 rows: the kernels split the position scores into row blocks with column windows.
  Rng rng(77);
  for (bool causal : {true, false}) {
    RelAttentionDims d{67, 9, 1, 2, causal};
    const int D = d.D();
    CHECK(forward_error(random_inputs(d, rng), d) < 1e-12);
    const auto res = gradcheck(
        [&](const std::vector<VarD>& in) {
          return rel_attention(in[0], in[1], in[2], in[3], in[4], in[5], d);
        },
        {random_input({d.S, D}, rng), random_input({d.K(), D}, rng), random_input({d.K(), D}, rng),
         random_input({d.P(), D}, rng), random_input({D}, rng), random_input({D}, rng)});
    INFO("causal " << causal << ": " << res.worst);
    CHECK(res.passed);
  }
}

TEST_CASE("nn/rel attention causal mask ignores later keys", "[nn]") {
  Rng rng(8);
  RelAttentionDims d{4, 2, 1, 4, true};
  const int D = d.D();
  auto q = random_vec(d.S * D, rng), k = random_vec(d.K() * D, rng), v = random_vec(d.K() * D, rng),
       rk = random_vec(d.P() * D, rng), u = random_vec(D, rng), vb = random_vec(D, rng);
  std::vector<double> out0(d.S * D), out1(d.S * D), probs(d.S * d.K());
  rel_attention_forward(out0.data(), probs.data(), q.data(), k.data(), v.data(), rk.data(),
                        u.data(), vb.data(), d);
  // Row i puts weight only on keys j <= M + i, and its weights sum to one.
  for (int i = 0; i < d.S; ++i) {
    double total = 0;
    for (int j = 0; j < d.K(); ++j) {
      const double pij = probs[i * d.K() + j];
      if (j > d.M + i)
        CHECK(pij == 0.0);
      else
        CHECK(pij > 0.0);
      total += pij;
    }
    CHECK(total == Approx(1.0));
  }
  // Changing the last key/value (position M + S - 1) leaves queries 0..S-2 unchanged.
  for (int c = 0; c < D; ++c) {
    k[(d.K() - 1) * D + c] += 1.0;
    v[(d.K() - 1) * D + c] -= 2.0;
  }
  rel_attention_forward(out1.data(), probs.data(), q.data(), k.data(), v.data(), rk.data(),
                        u.data(), vb.data(), d);
  for (int i = 0; i < (d.S - 1) * D; ++i) CHECK(out1[i] == out0[i]);
  bool last_changed = false;
  for (int c = 0; c < D; ++c) last_changed |= out1[(d.S - 1) * D + c] != out0[(d.S - 1) * D + c];
  CHECK(last_changed);
}

TEST_CASE("nn/rel attention gradcheck with memory and relative positions", "[nn]") {
  Rng rng(3);
  for (bool causal : {true, false})
    for (int M : {0, 4}) {
      RelAttentionDims d{5, M, 2, 3, causal};
      const int D = d.D();
      const auto res = gradcheck(
          [&](const std::vector<VarD>& in) {
            return rel_attention(in[0], in[1], in[2], in[3], in[4], in[5], d);
          },
          {random_input({d.S, D}, rng), random_input({d.K(), D}, rng),
           random_input({d.K(), D}, rng), random_input({d.P(), D}, rng), random_input({D}, rng),
           random_input({D}, rng)});
      INFO("causal " << causal << " M " << M << ": " << res.worst);
      CHECK(res.passed);
      CHECK(res.skipped_kinks == 0);
    }
}

TEST_CASE("nn/rel attention rejects mismatched shapes", "[nn]") {
  RelAttentionDims d{3, 2, 1, 2, false};
  const VarD q(TensorD({3, 2})), k(TensorD({5, 2})), rk_bad(TensorD({5, 2})), u(TensorD({2}));
  CHECK_THROWS_WITH(rel_attention(q, k, k, rk_bad, u, u, d), Catch::Contains("rk must be (7, 2)"));
}
