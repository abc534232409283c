// LSTM cell (torch.nn.LSTMCell's definition) composed of linear, slice, sigmoid, tanh, mul and
// add, so it runs wherever those ops do (cpu; cuda for float) and needs no backward of its own.
#include "nn/lstm.h"

#include <cmath>
#include <stdexcept>

#include "nn/ops.h"

namespace gdp::nn {

template <typename T>
BasicLstmCell<T>::BasicLstmCell(BasicParameterBuffer<T>& params, const std::string& prefix,
                                LstmConfig config, Rng& rng)
    : config_(config) {
  if (config.input <= 0 || config.hidden <= 0)
    throw std::invalid_argument("LstmCell: input and hidden must be positive");
  const int64_t H = config.hidden, G = 4LL * H;
  const double bound = 1.0 / std::sqrt(static_cast<double>(H));
  w_ih_ = params.add_uniform(prefix + ".w_ih", {G, config.input}, bound, rng);
  w_hh_ = params.add_uniform(prefix + ".w_hh", {G, H}, bound, rng);
  b_ih_ = params.add_uniform(prefix + ".b_ih", {G}, bound, rng);
  b_hh_ = params.add_uniform(prefix + ".b_hh", {G}, bound, rng);
}

template <typename T>
BasicLstmState<T> BasicLstmCell<T>::forward(const BasicVar<T>& x,
                                            const BasicLstmState<T>& state) const {
  const int64_t H = config_.hidden;
  if (x.ndim() != 2 || x.dim(1) != config_.input)
    throw std::invalid_argument("LstmCell: x must be (B, " + std::to_string(config_.input) +
                                "), got " + shape_str(x.shape()));
  const int64_t B = x.dim(0);
  for (const BasicVar<T>* s : {&state.h, &state.c})
    if (s->defined() && (s->ndim() != 2 || s->dim(0) != B || s->dim(1) != H))
      throw std::invalid_argument("LstmCell: h and c must be (" + std::to_string(B) + ", " +
                                  std::to_string(H) + "), got " + shape_str(s->shape()));

  // gates (B, 4H); with h = 0 the recurrent term is b_hh alone (broadcast over rows).
  const BasicVar<T> gx = linear(x, w_ih_, b_ih_);
  const BasicVar<T> gates =
      state.h.defined() ? add(gx, linear(state.h, w_hh_, b_hh_)) : add(gx, b_hh_);
  const BasicVar<T> i = sigmoid(slice(gates, 1, 0, H));      // (B, H)
  const BasicVar<T> f = sigmoid(slice(gates, 1, H, 2 * H));  // (B, H)
  const BasicVar<T> g = tanh(slice(gates, 1, 2 * H, 3 * H));
  const BasicVar<T> o = sigmoid(slice(gates, 1, 3 * H, 4 * H));
  const BasicVar<T> ig = mul(i, g);
  BasicLstmState<T> next;
  next.c = state.c.defined() ? add(mul(f, state.c), ig) : ig;
  next.h = mul(o, tanh(next.c));
  return next;
}

template <typename T>
BasicLstmSequence<T> lstm_sequence(const BasicLstmCell<T>& cell, const std::vector<BasicVar<T>>& xs,
                                   const BasicLstmState<T>& state0) {
  BasicLstmSequence<T> out;
  out.last = state0;
  out.hs.reserve(xs.size());
  for (const BasicVar<T>& x : xs) {
    out.last = cell.forward(x, out.last);
    out.hs.push_back(out.last.h);
  }
  return out;
}

template class BasicLstmCell<float>;
template class BasicLstmCell<double>;
template BasicLstmSequence<float> lstm_sequence<float>(const BasicLstmCell<float>&,
                                                       const std::vector<BasicVar<float>>&,
                                                       const BasicLstmState<float>&);
template BasicLstmSequence<double> lstm_sequence<double>(const BasicLstmCell<double>&,
                                                         const std::vector<BasicVar<double>>&,
                                                         const BasicLstmState<double>&);

}  // namespace gdp::nn
