// Segment-recurrent attention stack of GDP's placement network (Transformer-XL style): the
// sequence of N node embeddings is cut into segments of S rows; each layer of a segment attends
// to [memory ; segment], the memory being the same layer's input over the previous segment(s),
// with the gradient stopped (Dai et al. 2019). Graphs of 50k+ nodes then cost O(N (M + S)).
//
// Layer l on a segment x (S, D) with memory m (M, D) (post-LN, as Transformer-XL):
//   c = [m ; x] (K, D);  q = x Wq^T;  k = c Wk^T;  v = c Wv^T;  rk = R Wr^T  (R sinusoidal)
//   o = rel_attention(q, k, v, rk, u_l, v_l) Wo^T          (nn/attention.h)
//   o = o * (1 + gamma_l) + beta_l                         (superposition, when given)
//   h = LN1(x + o);  out = LN2(h + W2 relu(W1 h + b1) + b2)
// Memory update: m <- last `memory` rows of [m ; x], detached. The positional projection R Wr^T
// is computed once per forward over all distances any segment needs and sliced per segment.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nn/attention.h"
#include "nn/autograd.h"
#include "nn/parameters.h"

namespace gdp::nn {

struct TransformerXLConfig {
  int32_t width = 128;    // D
  int32_t heads = 4;      // H, divides D
  int32_t layers = 2;     // L
  int32_t ffn = 512;      // FFN hidden width
  int32_t segment = 256;  // S
  int32_t memory = 256;   // M (0: no memory)
  bool causal = false;    // placement sees the whole segment by default
  double ln_eps = 1e-5;
};

template <typename T>
class BasicTransformerXL {
 public:
  struct Layer {
    BasicVar<T> wq, wk, wv, wr, wo;  // (D, D) each, no bias
    BasicVar<T> u, vb;               // (D) content / position biases
    BasicVar<T> ln1_w, ln1_b;        // (D)
    BasicVar<T> w1, b1;              // (F, D), (F)
    BasicVar<T> w2, b2;              // (D, F), (D)
    BasicVar<T> ln2_w, ln2_b;        // (D)
  };

  // Registers "<prefix><l>.wq" ... "<prefix><l>.ln2_b" for every layer.
  BasicTransformerXL(BasicParameterBuffer<T>& params, const std::string& prefix,
                     TransformerXLConfig config, Rng& rng);

  // h (N, D), film (2L, D) or undefined -> (N, D).
  BasicVar<T> forward(const BasicVar<T>& h, const BasicVar<T>& film) const;

  // The pieces of forward, public for tests:
  // rk_all (P_all, D) = R_all Wr_l^T over distances r in [r_min(), memory + S - 1].
  BasicVar<T> positions(int32_t layer) const;
  // One layer on a segment x (S', D) with memory mem (M', D) or undefined (M' = 0).
  BasicVar<T> layer_forward(int32_t layer, const BasicVar<T>& x, const BasicVar<T>& mem,
                            const BasicVar<T>& rk_all, const BasicVar<T>& film) const;
  int32_t r_min() const { return config_.causal ? 0 : 1 - config_.segment; }

  const TransformerXLConfig& config() const { return config_; }
  const std::vector<Layer>& layers() const { return layers_; }

 private:
  TransformerXLConfig config_;
  std::vector<Layer> layers_;
  BasicTensor<T> r_all_;  // (P_all, D) sinusoidal encodings, row p <-> r = p + r_min()
};

using TransformerXL = BasicTransformerXL<float>;
using TransformerXLD = BasicTransformerXL<double>;

}  // namespace gdp::nn
