// GraphSAGE encoder of GDP's graph embedding network: inductive mean aggregation over in- and
// out-neighbours, so one set of weights embeds graphs of any size.
//
// Layer (the "concat" form, fused in sage_layer of nn/graph_ops.h):
//   h' = act([h | mean_in(h) | mean_out(h)] @ W^T + b),  W (OUT, 3 IN) = [W_self | W_in | W_out]
// which equals W_self h + W_nbr [mean_in(h) ; mean_out(h)] + b with W_nbr = [W_in | W_out].
// act = relu on every layer but the last, which is relu when relu_last.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nn/graph_ops.h"
#include "nn/parameters.h"

namespace gdp::nn {

struct SageConfig {
  int32_t in_dim = 0;   // node feature width F
  int32_t width = 128;  // hidden and output width D
  int32_t layers = 2;
  bool relu_last = true;
};

template <typename T>
class BasicSageEncoder {
 public:
  // Registers "<prefix><l>.w" (OUT, 3 IN) and "<prefix><l>.b" (OUT) in params, initialized as
  // PyTorch's Linear: uniform in +-1/sqrt(fan_in).
  BasicSageEncoder(BasicParameterBuffer<T>& params, const std::string& prefix, SageConfig config,
                   Rng& rng);

  // x (N, F) -> (N, D).
  BasicVar<T> forward(const BasicVar<T>& x, const std::shared_ptr<const Adjacency>& adj) const;
  const SageConfig& config() const { return config_; }

 private:
  SageConfig config_;
  std::vector<BasicVar<T>> w_;  // (D, 3 IN) each
  std::vector<BasicVar<T>> b_;  // (D) each
};

using SageEncoder = BasicSageEncoder<float>;
using SageEncoderD = BasicSageEncoder<double>;

}  // namespace gdp::nn
