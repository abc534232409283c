// GraphSAGE encoder: a stack of fused sage_layer ops with parameters in the flat buffer.
#include "nn/sage.h"

#include <cmath>
#include <stdexcept>

namespace gdp::nn {

template <typename T>
BasicSageEncoder<T>::BasicSageEncoder(BasicParameterBuffer<T>& params, const std::string& prefix,
                                      SageConfig config, Rng& rng)
    : config_(config) {
  if (config.in_dim <= 0 || config.width <= 0 || config.layers <= 0)
    throw std::invalid_argument("SageEncoder: in_dim, width and layers must be positive");
  for (int32_t l = 0; l < config.layers; ++l) {
    const int64_t in = l == 0 ? config.in_dim : config.width;
    const double bound = 1.0 / std::sqrt(static_cast<double>(3 * in));
    const std::string name = prefix + std::to_string(l);
    w_.push_back(params.add_uniform(name + ".w", {config.width, 3 * in}, bound, rng));
    b_.push_back(params.add_uniform(name + ".b", {config.width}, bound, rng));
  }
}

template <typename T>
BasicVar<T> BasicSageEncoder<T>::forward(const BasicVar<T>& x,
                                         const std::shared_ptr<const Adjacency>& adj) const {
  if (x.ndim() != 2 || x.dim(1) != config_.in_dim)
    throw std::invalid_argument("SageEncoder: x must be (N, " + std::to_string(config_.in_dim) +
                                "), got " + shape_str(x.shape()));
  BasicVar<T> h = x;
  for (int32_t l = 0; l < config_.layers; ++l) {
    const bool relu_act = l + 1 < config_.layers || config_.relu_last;
    h = sage_layer(h, w_[l], b_[l], adj, relu_act);
  }
  return h;
}

template class BasicSageEncoder<float>;
template class BasicSageEncoder<double>;

}  // namespace gdp::nn
