// Superposition network of GDP: a graph-level embedding conditions the placement network, so one
// policy serves graphs of very different size and shape (feature-wise modulation, FiLM style).
//
//   g = mean_n h_n                       (1, D)   graph embedding from the node embeddings
//   z = relu(g W1^T + b1)                (1, Hs)
//   f = z W2^T + b2, reshaped            (2L, D)  rows 2l, 2l+1 = gamma_l, beta_l
// Attention layer l then modulates its attention output o: o' = o * (1 + gamma_l) + beta_l.
#pragma once

#include <cstdint>
#include <string>

#include "nn/autograd.h"
#include "nn/parameters.h"

namespace gdp::nn {

struct SuperpositionConfig {
  int32_t width = 128;   // D, node embedding and attention width
  int32_t hidden = 128;  // Hs
  int32_t layers = 2;    // L, attention layers to modulate
};

template <typename T>
class BasicSuperposition {
 public:
  // Registers "<prefix>.w1" (Hs, D), ".b1" (Hs), ".w2" (2 L D, Hs), ".b2" (2 L D).
  BasicSuperposition(BasicParameterBuffer<T>& params, const std::string& prefix,
                     SuperpositionConfig config, Rng& rng);

  // h (N, D) -> film (2L, D).
  BasicVar<T> forward(const BasicVar<T>& h) const;
  const SuperpositionConfig& config() const { return config_; }

 private:
  SuperpositionConfig config_;
  BasicVar<T> w1_, b1_, w2_, b2_;
};

// o (R, D), film (2L, D) -> o * (1 + gamma_l) + beta_l.
template <typename T>
BasicVar<T> film_modulate(const BasicVar<T>& o, const BasicVar<T>& film, int32_t layer);

using Superposition = BasicSuperposition<float>;
using SuperpositionD = BasicSuperposition<double>;

}  // namespace gdp::nn
