// Masked multi-head attention over [memory; current] keys against a double-precision CPU
// loop: probabilities, output, and the accumulated dq, dk, dv and relative-position-bias
// gradients, causal and not, with and without the bias.
#include <algorithm>
#include <stdexcept>
#include <tuple>

#include "cuda_test_util.h"

using namespace gdp::cuda;
using namespace gdp::cuda::test;

namespace {

struct AttentionRef {
  std::vector<double> att, out, dq, dk, dv, dbias;
};

// q (BH,Tq,D), k/v (BH,Tk,D), bias (BH,Tq,Tk) or empty, dout (BH,Tq,D).
AttentionRef attention_ref(const std::vector<float>& q, const std::vector<float>& k,
                           const std::vector<float>& v, const std::vector<float>& bias,
                           const std::vector<float>& dout, int BH, int Tq, int Tk, int D,
                           bool causal) {
  AttentionRef r;
  r.att.assign(std::size_t(BH) * Tq * Tk, 0.0);
  r.out.assign(std::size_t(BH) * Tq * D, 0.0);
  r.dq.assign(r.out.size(), 0.0);
  r.dk.assign(std::size_t(BH) * Tk * D, 0.0);
  r.dv.assign(r.dk.size(), 0.0);
  r.dbias.assign(r.att.size(), 0.0);
  double scale = 1.0 / std::sqrt(double(D));
  for (int h = 0; h < BH; ++h) {
    const float* qh = &q[std::size_t(h) * Tq * D];
    const float* kh = &k[std::size_t(h) * Tk * D];
    const float* vh = &v[std::size_t(h) * Tk * D];
    const float* gh = &dout[std::size_t(h) * Tq * D];
    for (int i = 0; i < Tq; ++i) {
      int visible = causal ? (Tk - Tq) + i + 1 : Tk;
      std::size_t arow = (std::size_t(h) * Tq + i) * Tk;
      std::vector<double> s(Tk, 0.0);
      double m = -1e300;
      for (int j = 0; j < visible; ++j) {
        double dot = 0;
        for (int d = 0; d < D; ++d) dot += double(qh[i * D + d]) * kh[j * D + d];
        s[j] = dot * scale + (bias.empty() ? 0.0 : bias[arow + j]);
        m = std::max(m, s[j]);
      }
      double z = 0;
      for (int j = 0; j < visible; ++j) z += std::exp(s[j] - m);
      double* p = &r.att[arow];
      for (int j = 0; j < visible; ++j) p[j] = std::exp(s[j] - m) / z;
      for (int j = 0; j < Tk; ++j)
        for (int d = 0; d < D; ++d)
          r.out[(std::size_t(h) * Tq + i) * D + d] += p[j] * vh[j * D + d];
      // backward of row i
      std::vector<double> datt(Tk, 0.0);
      double dot = 0;
      for (int j = 0; j < Tk; ++j) {
        for (int d = 0; d < D; ++d) datt[j] += double(gh[i * D + d]) * vh[j * D + d];
        dot += datt[j] * p[j];
      }
      for (int j = 0; j < Tk; ++j) {
        double ds = p[j] * (datt[j] - dot);
        r.dbias[arow + j] = ds;
        for (int d = 0; d < D; ++d) {
          r.dq[(std::size_t(h) * Tq + i) * D + d] += scale * ds * kh[j * D + d];
          r.dk[(std::size_t(h) * Tk + j) * D + d] += scale * ds * qh[i * D + d];
          r.dv[(std::size_t(h) * Tk + j) * D + d] += p[j] * gh[i * D + d];
        }
      }
    }
  }
  return r;
}

std::vector<float> plus(const std::vector<float>& a, const std::vector<double>& b) {
  std::vector<float> r(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) r[i] = float(a[i] + b[i]);
  return r;
}

}  // namespace

TEST_CASE("cuda/attention forward and backward vs cpu", "[cuda]") {
  std::mt19937 rng(70);
  // (BH, Tq, Tm memory keys, D)
  std::vector<std::tuple<int, int, int, int>> shapes = {{1, 1, 0, 1},     {2, 7, 0, 5},
                                                        {3, 33, 33, 16},  {1, 127, 1, 33},
                                                        {2, 64, 200, 32}, {4, 256, 256, 32}};
  for (auto [BH, Tq, Tm, D] : shapes) {
    int Tk = Tm + Tq;
    for (int variant = 0; variant < 4; ++variant) {
      bool causal = variant & 1, with_bias = variant & 2;
      std::size_t nq = std::size_t(BH) * Tq * D, nk = std::size_t(BH) * Tk * D,
                  na = std::size_t(BH) * Tq * Tk;
      auto q = random_vec(nq, rng), k = random_vec(nk, rng), v = random_vec(nk, rng),
           dout = random_vec(nq, rng);
      std::vector<float> bias = with_bias ? random_vec(na, rng, -2.0f, 2.0f) : std::vector<float>{};
      auto dq0 = random_vec(nq, rng), dk0 = random_vec(nk, rng), dv0 = random_vec(nk, rng),
           db0 = random_vec(na, rng);
      auto ref = attention_ref(q, k, v, bias, dout, BH, Tq, Tk, D, causal);

      auto d_q = to_device(q), d_k = to_device(k), d_v = to_device(v), d_g = to_device(dout);
      auto d_bias = to_device(bias);
      auto d_dq = to_device(dq0), d_dk = to_device(dk0), d_dv = to_device(dv0),
           d_db = to_device(db0);
      DeviceBuffer d_out(nq), d_att(na), d_scratch(na);
      attention_forward(d_out.data(), d_att.data(), d_q.data(), d_k.data(), d_v.data(),
                        with_bias ? d_bias.data() : nullptr, BH, Tq, Tk, D, causal);
      // backward from the reference probabilities: only the backward is under test
      auto d_att_ref = to_device(std::vector<float>(ref.att.begin(), ref.att.end()));
      attention_backward(d_dq.data(), d_dk.data(), d_dv.data(), with_bias ? d_db.data() : nullptr,
                         d_scratch.data(), d_g.data(), d_q.data(), d_k.data(), d_v.data(),
                         d_att_ref.data(), BH, Tq, Tk, D);

      std::string what = "BH=" + std::to_string(BH) + " Tq=" + std::to_string(Tq) +
                         " Tk=" + std::to_string(Tk) + " D=" + std::to_string(D) +
                         (causal ? " causal" : "") + (with_bias ? " bias" : "");
      check_close(to_host(d_att), std::vector<float>(ref.att.begin(), ref.att.end()), 1e-5f, 1e-4f,
                  "att " + what);
      check_close(to_host(d_out), std::vector<float>(ref.out.begin(), ref.out.end()), 1e-5f, 1e-4f,
                  "out " + what);
      check_close(to_host(d_dq), plus(dq0, ref.dq), 1e-4f, 1e-4f, "dq " + what);
      check_close(to_host(d_dk), plus(dk0, ref.dk), 1e-4f, 1e-4f, "dk " + what);
      check_close(to_host(d_dv), plus(dv0, ref.dv), 1e-4f, 1e-4f, "dv " + what);
      if (with_bias)
        check_close(to_host(d_db), plus(db0, ref.dbias), 1e-5f, 1e-4f, "dbias " + what);
    }
  }
}

TEST_CASE("cuda/attention causal mask hides later keys", "[cuda]") {
  // Changing a key the mask hides must not change any output of the queries before it.
  std::mt19937 rng(71);
  int BH = 2, Tq = 9, Tm = 4, D = 8, Tk = Tm + Tq;
  auto q = random_vec(std::size_t(BH) * Tq * D, rng), k = random_vec(std::size_t(BH) * Tk * D, rng);
  auto v = random_vec(std::size_t(BH) * Tk * D, rng);
  auto run = [&](const std::vector<float>& kk, const std::vector<float>& vv) {
    auto d_q = to_device(q), d_k = to_device(kk), d_v = to_device(vv);
    DeviceBuffer d_out(q.size()), d_att(std::size_t(BH) * Tq * Tk);
    attention_forward(d_out.data(), d_att.data(), d_q.data(), d_k.data(), d_v.data(), nullptr, BH,
                      Tq, Tk, D, true);
    return to_host(d_out);
  };
  auto base = run(k, v);
  auto k2 = k, v2 = v;
  for (int h = 0; h < BH; ++h)
    for (int d = 0; d < D; ++d) {  // the last key: only the last query sees it
      k2[(std::size_t(h) * Tk + Tk - 1) * D + d] += 5.0f;
      v2[(std::size_t(h) * Tk + Tk - 1) * D + d] -= 5.0f;
    }
  auto changed = run(k2, v2);
  for (int h = 0; h < BH; ++h)
    for (int i = 0; i < Tq; ++i)
      for (int d = 0; d < D; ++d) {
        std::size_t o = (std::size_t(h) * Tq + i) * D + d;
        if (i < Tq - 1)
          CHECK(changed[o] == base[o]);
        else
          CHECK(changed[o] != base[o]);
      }
  CHECK_THROWS_AS(
      attention_forward(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 1, 5, 4, 8, true),
      std::invalid_argument);
}
