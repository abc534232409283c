// Categorical sampling, log-probability and entropy kernels (row-wise log-softmax, stable in
// float: the row max is subtracted before exp).
#include "nn/sampling.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace gdp::nn {
namespace {

// log-softmax of one row into out (A); returns nothing, out[c] = x[c] - logsumexp(x).
template <typename T>
void log_softmax_row(T* out, const T* x, int32_t A) {
  T mx = x[0];
  for (int32_t c = 1; c < A; ++c) mx = std::max(mx, x[c]);
  T sum = 0;
  for (int32_t c = 0; c < A; ++c) sum += std::exp(x[c] - mx);
  const T lse = mx + std::log(sum);
  for (int32_t c = 0; c < A; ++c) out[c] = x[c] - lse;
}

void check_sizes(int32_t N, int32_t A, const char* who) {
  if (N < 0 || A <= 0) throw std::invalid_argument(std::string(who) + ": need N >= 0 and A > 0");
}

}  // namespace

template <typename T>
void categorical_sample(int32_t* actions, const T* logits, int32_t N, int32_t A, Rng& rng) {
  check_sizes(N, A, "categorical_sample");
  std::vector<T> lp(A);
  for (int32_t n = 0; n < N; ++n) {
    log_softmax_row(lp.data(), logits + static_cast<int64_t>(n) * A, A);
    const double u = rng.uniform();
    double cdf = 0;
    // Rounding can leave the total slightly below 1 (by ~1e-7 in float): u past it picks the
    // last column of positive probability, never a masked one (probability exactly 0).
    int32_t pick = -1, last_positive = 0;
    for (int32_t c = 0; c < A; ++c) {
      const double p = std::exp(static_cast<double>(lp[c]));
      if (p > 0) last_positive = c;
      cdf += p;
      if (u < cdf) {
        pick = c;
        break;
      }
    }
    if (pick < 0) pick = last_positive;
    actions[n] = pick;
  }
}

template <typename T>
void categorical_argmax(int32_t* actions, const T* logits, int32_t N, int32_t A) {
  check_sizes(N, A, "categorical_argmax");
  for (int32_t n = 0; n < N; ++n) {
    const T* x = logits + static_cast<int64_t>(n) * A;
    actions[n] = static_cast<int32_t>(std::max_element(x, x + A) - x);
  }
}

template <typename T>
void categorical_log_prob_forward(T* logp, const T* logits, const int32_t* actions, int32_t N,
                                  int32_t A) {
  check_sizes(N, A, "categorical_log_prob");
  std::vector<T> lp(A);
  for (int32_t n = 0; n < N; ++n) {
    if (actions[n] < 0 || actions[n] >= A)
      throw std::invalid_argument("categorical_log_prob: action outside [0, A)");
    log_softmax_row(lp.data(), logits + static_cast<int64_t>(n) * A, A);
    logp[n] = lp[actions[n]];
  }
}

template <typename T>
void categorical_log_prob_backward(T* dlogits, const T* dlogp, const T* logits,
                                   const int32_t* actions, int32_t N, int32_t A) {
  std::vector<T> lp(A);
  for (int32_t n = 0; n < N; ++n) {
    log_softmax_row(lp.data(), logits + static_cast<int64_t>(n) * A, A);
    T* d = dlogits + static_cast<int64_t>(n) * A;
    for (int32_t c = 0; c < A; ++c) d[c] -= dlogp[n] * std::exp(lp[c]);
    d[actions[n]] += dlogp[n];
  }
}

template <typename T>
void categorical_entropy_forward(T* ent, const T* logits, int32_t N, int32_t A) {
  check_sizes(N, A, "categorical_entropy");
  std::vector<T> lp(A);
  for (int32_t n = 0; n < N; ++n) {
    log_softmax_row(lp.data(), logits + static_cast<int64_t>(n) * A, A);
    T h = 0;
    for (int32_t c = 0; c < A; ++c) h -= std::exp(lp[c]) * lp[c];
    ent[n] = h;
  }
}

template <typename T>
void categorical_entropy_backward(T* dlogits, const T* dent, const T* logits, int32_t N,
                                  int32_t A) {
  std::vector<T> lp(A);
  for (int32_t n = 0; n < N; ++n) {
    log_softmax_row(lp.data(), logits + static_cast<int64_t>(n) * A, A);
    T h = 0;
    for (int32_t c = 0; c < A; ++c) h -= std::exp(lp[c]) * lp[c];
    T* d = dlogits + static_cast<int64_t>(n) * A;
    for (int32_t c = 0; c < A; ++c) d[c] -= dent[n] * std::exp(lp[c]) * (lp[c] + h);
  }
}

#define GDP_SAMPLING_INSTANTIATE(T)                                                               \
  template void categorical_sample<T>(int32_t*, const T*, int32_t, int32_t, Rng&);                \
  template void categorical_argmax<T>(int32_t*, const T*, int32_t, int32_t);                      \
  template void categorical_log_prob_forward<T>(T*, const T*, const int32_t*, int32_t, int32_t);  \
  template void categorical_log_prob_backward<T>(T*, const T*, const T*, const int32_t*, int32_t, \
                                                 int32_t);                                        \
  template void categorical_entropy_forward<T>(T*, const T*, int32_t, int32_t);                   \
  template void categorical_entropy_backward<T>(T*, const T*, const T*, int32_t, int32_t);
GDP_SAMPLING_INSTANTIATE(float)
GDP_SAMPLING_INSTANTIATE(double)
#undef GDP_SAMPLING_INSTANTIATE

}  // namespace gdp::nn
