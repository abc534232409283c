// Relative-position multi-head attention kernels (Transformer-XL): per head, the content and
// position scores are two GEMMs (Qu K^T, Qv RK^T); the position matrix is then gathered along
// the relative distance ("rel shift" as an index), softmaxed, and multiplied by V. Heads run in
// parallel (OpenMP); scratch is thread-local and reused across calls.
#include "nn/attention.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace gdp::nn {
namespace {

template <typename T>
using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using StridedMap = Eigen::Map<Mat<T>, 0, Eigen::OuterStride<>>;
template <typename T>
using ConstStridedMap = Eigen::Map<const Mat<T>, 0, Eigen::OuterStride<>>;
template <typename T>
using MatMap = Eigen::Map<Mat<T>>;
template <typename T>
using RowVecMap = Eigen::Map<Eigen::Matrix<T, 1, Eigen::Dynamic>>;
template <typename T>
using ConstRowVecMap = Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>>;
template <typename T>
using ArrMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T>
using ConstArrMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

// Head h's (rows, Dh) slice of a (rows, D) matrix.
template <typename T>
ConstStridedMap<T> head(const T* base, int32_t rows, const RelAttentionDims& d, int32_t h) {
  return ConstStridedMap<T>(base + static_cast<int64_t>(h) * d.Dh, rows, d.Dh,
                            Eigen::OuterStride<>(d.D()));
}
template <typename T>
StridedMap<T> head_mut(T* base, int32_t rows, const RelAttentionDims& d, int32_t h) {
  return StridedMap<T>(base + static_cast<int64_t>(h) * d.Dh, rows, d.Dh,
                       Eigen::OuterStride<>(d.D()));
}

// Thread-local scratch that only grows, so steady-state calls do not allocate.
template <typename T>
struct Scratch {
  std::vector<T> buf[4];
  T* get(int i, int64_t n) {
    if (static_cast<int64_t>(buf[i].size()) < n) buf[i].resize(n);
    return buf[i].data();
  }
};
template <typename T>
Scratch<T>& scratch() {
  thread_local Scratch<T> s;
  return s;
}

// Rows are processed in blocks; a block of query rows [i0, i1) only touches the position rows
// [p_lo, p_lo + w): p = M + i + off - j spans [i, i + K - 1] (full) or [0, M + i] (causal). This
// skips the (S - block) unused columns of the S x P position-score matrix.
constexpr int32_t kRowBlock = 64;
void position_window(const RelAttentionDims& d, int32_t i0, int32_t i1, int32_t& p_lo, int32_t& w) {
  p_lo = d.causal ? 0 : i0;
  w = d.M + (i1 - 1) + d.rel_offset() - p_lo + 1;
}

}  // namespace

void RelAttentionDims::validate() const {
  if (S <= 0 || M < 0 || H <= 0 || Dh <= 0)
    throw std::invalid_argument(
        "rel_attention: need S > 0, M >= 0, H > 0, Dh > 0 (got S=" + std::to_string(S) +
        " M=" + std::to_string(M) + " H=" + std::to_string(H) + " Dh=" + std::to_string(Dh) + ")");
}

template <typename T>
void relative_sinusoid(T* R, int32_t P, int32_t D, int32_t rel_offset) {
  if (D % 2 != 0) throw std::invalid_argument("relative_sinusoid: D must be even");
  const int32_t half = D / 2;
  for (int32_t p = 0; p < P; ++p) {
    const double r = static_cast<double>(p - rel_offset);
    T* row = R + static_cast<int64_t>(p) * D;
    for (int32_t k = 0; k < half; ++k) {
      const double f = std::pow(10000.0, -2.0 * k / D);
      row[k] = static_cast<T>(std::sin(r * f));
      row[half + k] = static_cast<T>(std::cos(r * f));
    }
  }
}

template <typename T>
void rel_attention_forward(T* out, T* probs, const T* q, const T* k, const T* v, const T* rk,
                           const T* u, const T* vb, const RelAttentionDims& d) {
  d.validate();
  const int32_t S = d.S, M = d.M, K = d.K(), P = d.P(), Dh = d.Dh, off = d.rel_offset();
  const T scale = T(1) / std::sqrt(static_cast<T>(Dh));
#pragma omp parallel for schedule(static) if (d.H > 1 && int64_t(S) * K * d.D() > 65536)
  for (int32_t h = 0; h < d.H; ++h) {
    Scratch<T>& sc = scratch<T>();
    MatMap<T> qu(sc.get(0, static_cast<int64_t>(S) * Dh), S, Dh);
    MatMap<T> qv(sc.get(1, static_cast<int64_t>(S) * Dh), S, Dh);
    T* bd_buf = sc.get(2, static_cast<int64_t>(std::min(S, kRowBlock)) * P);
    MatMap<T> a(probs + static_cast<int64_t>(h) * S * K, S, K);
    const auto qh = head(q, S, d, h);
    const auto rkh = head(rk, P, d, h);
    qu = qh.rowwise() + ConstRowVecMap<T>(u + static_cast<int64_t>(h) * Dh, Dh);
    qv = qh.rowwise() + ConstRowVecMap<T>(vb + static_cast<int64_t>(h) * Dh, Dh);
    a.noalias() = qu * head(k, K, d, h).transpose();
    for (int32_t i0 = 0; i0 < S; i0 += kRowBlock) {
      const int32_t i1 = std::min(S, i0 + kRowBlock);
      int32_t p_lo, w;
      position_window(d, i0, i1, p_lo, w);
      MatMap<T> bd(bd_buf, i1 - i0, w);  // position scores of rows [i0, i1), columns p - p_lo
      bd.noalias() = qv.middleRows(i0, i1 - i0) * rkh.middleRows(p_lo, w).transpose();
      for (int32_t i = i0; i < i1; ++i) {
        T* ai = a.data() + static_cast<int64_t>(i) * K;
        const T* bdi = bd_buf + static_cast<int64_t>(i - i0) * w;
        const int32_t jend = d.causal ? M + i + 1 : K;  // allowed keys: [0, jend)
        const int32_t pbase = M + i + off - p_lo;       // column of key j: pbase - j
        // a_ij = scale (AC_ij + BD_i,pbase-j): the position row read backwards.
        ArrMap<T> ar(ai, jend);
        ar = scale * (ar + ConstArrMap<T>(bdi + pbase - (jend - 1), jend).reverse());
        ar = (ar - ar.maxCoeff()).exp();
        ar *= T(1) / ar.sum();
        for (int32_t j = jend; j < K; ++j) ai[j] = T(0);
      }
    }
    head_mut(out, S, d, h).noalias() = a * head(v, K, d, h);
  }
}

template <typename T>
void rel_attention_backward(T* dq, T* dk, T* dv, T* drk, T* du, T* dvb, const T* dout,
                            const T* probs, const T* q, const T* k, const T* v, const T* rk,
                            const T* u, const T* vb, const RelAttentionDims& d) {
  d.validate();
  const int32_t S = d.S, M = d.M, K = d.K(), P = d.P(), Dh = d.Dh, off = d.rel_offset();
  const T scale = T(1) / std::sqrt(static_cast<T>(Dh));
#pragma omp parallel for schedule(static) if (d.H > 1 && int64_t(S) * K * d.D() > 65536)
  for (int32_t h = 0; h < d.H; ++h) {
    Scratch<T>& sc = scratch<T>();
    MatMap<T> ds(sc.get(0, static_cast<int64_t>(S) * K), S, K);  // dP, then dScore
    T* dbd_buf = sc.get(1, static_cast<int64_t>(std::min(S, kRowBlock)) * P);
    MatMap<T> g(sc.get(2, static_cast<int64_t>(S) * Dh), S, Dh);   // dq contributions
    MatMap<T> qb(sc.get(3, static_cast<int64_t>(S) * Dh), S, Dh);  // q + bias
    const Eigen::Map<const Mat<T>> p(probs + static_cast<int64_t>(h) * S * K, S, K);
    const auto doh = head(dout, S, d, h);
    const auto qh = head(q, S, d, h);
    const auto kh = head(k, K, d, h);
    const auto rkh = head(rk, P, d, h);

    ds.noalias() = doh * head(v, K, d, h).transpose();
    if (dv) head_mut(dv, K, d, h).noalias() += p.transpose() * doh;
    qb = qh.rowwise() + ConstRowVecMap<T>(vb + static_cast<int64_t>(h) * Dh, Dh);
    for (int32_t i0 = 0; i0 < S; i0 += kRowBlock) {
      const int32_t i1 = std::min(S, i0 + kRowBlock), nb = i1 - i0;
      int32_t p_lo, w;
      position_window(d, i0, i1, p_lo, w);
      MatMap<T> dbd(dbd_buf, nb, w);  // d(position scores) of rows [i0, i1), columns p - p_lo
      dbd.setZero();
      // Softmax backward, times the score scale; scatter into the position-score gradient.
      for (int32_t i = i0; i < i1; ++i) {
        T* dsi = ds.data() + static_cast<int64_t>(i) * K;
        const T* pi = p.data() + static_cast<int64_t>(i) * K;
        T* dbdi = dbd_buf + static_cast<int64_t>(i - i0) * w;
        const int32_t jend = d.causal ? M + i + 1 : K;
        const int32_t pbase = M + i + off - p_lo;
        ArrMap<T> dsa(dsi, jend);
        const ConstArrMap<T> pa(pi, jend);
        const T dot = (pa * dsa).sum();
        dsa = scale * pa * (dsa - dot);
        ArrMap<T>(dbdi + pbase - (jend - 1), jend).reverse() = dsa;
        for (int32_t j = jend; j < K; ++j) dsi[j] = T(0);
      }
      if (dq || dvb) {
        auto gb = g.middleRows(i0, nb);
        gb.noalias() = dbd * rkh.middleRows(p_lo, w);
        if (dq) head_mut(dq, S, d, h).middleRows(i0, nb) += gb;
        if (dvb) RowVecMap<T>(dvb + static_cast<int64_t>(h) * Dh, Dh) += gb.colwise().sum();
      }
      if (drk)
        head_mut(drk, P, d, h).middleRows(p_lo, w).noalias() +=
            dbd.transpose() * qb.middleRows(i0, nb);
    }
    if (dq || du) {
      g.noalias() = ds * kh;
      if (dq) head_mut(dq, S, d, h) += g;
      if (du) RowVecMap<T>(du + static_cast<int64_t>(h) * Dh, Dh) += g.colwise().sum();
    }
    if (dk) {
      qb = qh.rowwise() + ConstRowVecMap<T>(u + static_cast<int64_t>(h) * Dh, Dh);
      head_mut(dk, K, d, h).noalias() += ds.transpose() * qb;
    }
  }
}

#define GDP_ATTENTION_INSTANTIATE(T)                                                               \
  template void relative_sinusoid<T>(T*, int32_t, int32_t, int32_t);                               \
  template void rel_attention_forward<T>(T*, T*, const T*, const T*, const T*, const T*, const T*, \
                                         const T*, const RelAttentionDims&);                       \
  template void rel_attention_backward<T>(T*, T*, T*, T*, T*, T*, const T*, const T*, const T*,    \
                                          const T*, const T*, const T*, const T*, const T*,        \
                                          const RelAttentionDims&);
GDP_ATTENTION_INSTANTIATE(float)
GDP_ATTENTION_INSTANTIATE(double)
#undef GDP_ATTENTION_INSTANTIATE

}  // namespace gdp::nn
