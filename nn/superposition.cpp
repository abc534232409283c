// Superposition (FiLM) network: graph embedding -> MLP -> per-layer scale and shift, composed of
// the core ops so its gradient comes from their closures.
#include "nn/superposition.h"

#include <cmath>
#include <stdexcept>

#include "nn/ops.h"

namespace gdp::nn {

template <typename T>
BasicSuperposition<T>::BasicSuperposition(BasicParameterBuffer<T>& params,
                                          const std::string& prefix, SuperpositionConfig config,
                                          Rng& rng)
    : config_(config) {
  if (config.width <= 0 || config.hidden <= 0 || config.layers <= 0)
    throw std::invalid_argument("Superposition: width, hidden and layers must be positive");
  const double b1 = 1.0 / std::sqrt(static_cast<double>(config.width));
  const double b2 = 1.0 / std::sqrt(static_cast<double>(config.hidden));
  const int64_t film = 2LL * config.layers * config.width;
  w1_ = params.add_uniform(prefix + ".w1", {config.hidden, config.width}, b1, rng);
  b1_ = params.add_uniform(prefix + ".b1", {config.hidden}, b1, rng);
  w2_ = params.add_uniform(prefix + ".w2", {film, config.hidden}, b2, rng);
  b2_ = params.add_uniform(prefix + ".b2", {film}, b2, rng);
}

template <typename T>
BasicVar<T> BasicSuperposition<T>::forward(const BasicVar<T>& h) const {
  if (h.ndim() != 2 || h.dim(1) != config_.width)
    throw std::invalid_argument("Superposition: h must be (N, " + std::to_string(config_.width) +
                                "), got " + shape_str(h.shape()));
  const BasicVar<T> g = mean(h, 0, /*keepdim=*/true);  // (1, D)
  const BasicVar<T> z = relu(linear(g, w1_, b1_));     // (1, Hs)
  const BasicVar<T> f = linear(z, w2_, b2_);           // (1, 2 L D)
  return reshape(f, {2LL * config_.layers, config_.width});
}

template <typename T>
BasicVar<T> film_modulate(const BasicVar<T>& o, const BasicVar<T>& film, int32_t layer) {
  if (film.ndim() != 2 || film.dim(0) < 2LL * (layer + 1) || film.dim(1) != o.dim(-1))
    throw std::invalid_argument("film_modulate: film " + shape_str(film.shape()) +
                                " has no rows for layer " + std::to_string(layer) + " of width " +
                                std::to_string(o.dim(-1)));
  const BasicVar<T> gamma = slice(film, 0, 2LL * layer, 2LL * layer + 1);     // (1, D)
  const BasicVar<T> beta = slice(film, 0, 2LL * layer + 1, 2LL * layer + 2);  // (1, D)
  return add(mul(o, add_scalar(gamma, T(1))), beta);
}

template class BasicSuperposition<float>;
template class BasicSuperposition<double>;
template BasicVar<float> film_modulate<float>(const BasicVar<float>&, const BasicVar<float>&,
                                              int32_t);
template BasicVar<double> film_modulate<double>(const BasicVar<double>&, const BasicVar<double>&,
                                                int32_t);

}  // namespace gdp::nn
