// Transformer-XL stack over node embeddings: segments, detached memory, relative attention,
// FiLM modulation from the superposition network, post-LN residual blocks.
#include "nn/transformer_xl.h"

#include <cmath>
#include <stdexcept>

#include "nn/graph_ops.h"
#include "nn/ops.h"
#include "nn/superposition.h"

namespace gdp::nn {

template <typename T>
BasicTransformerXL<T>::BasicTransformerXL(BasicParameterBuffer<T>& params,
                                          const std::string& prefix, TransformerXLConfig config,
                                          Rng& rng)
    : config_(config) {
  const auto& c = config;
  if (c.width <= 0 || c.heads <= 0 || c.width % c.heads != 0 || c.width % 2 != 0)
    throw std::invalid_argument("TransformerXL: width must be even and a multiple of heads");
  if (c.layers <= 0 || c.ffn <= 0 || c.segment <= 0 || c.memory < 0)
    throw std::invalid_argument("TransformerXL: need layers, ffn, segment > 0 and memory >= 0");
  const int64_t D = c.width, F = c.ffn;
  const double bd = 1.0 / std::sqrt(static_cast<double>(D));
  const double bf = 1.0 / std::sqrt(static_cast<double>(F));
  for (int32_t l = 0; l < c.layers; ++l) {
    const std::string p = prefix + std::to_string(l) + ".";
    Layer L;
    L.wq = params.add_uniform(p + "wq", {D, D}, bd, rng);
    L.wk = params.add_uniform(p + "wk", {D, D}, bd, rng);
    L.wv = params.add_uniform(p + "wv", {D, D}, bd, rng);
    L.wr = params.add_uniform(p + "wr", {D, D}, bd, rng);
    L.wo = params.add_uniform(p + "wo", {D, D}, bd, rng);
    L.u = params.add_uniform(p + "u", {D}, bd, rng);
    L.vb = params.add_uniform(p + "vb", {D}, bd, rng);
    L.ln1_w = params.add_constant(p + "ln1_w", {D}, T(1));
    L.ln1_b = params.add(p + "ln1_b", {D});
    L.w1 = params.add_uniform(p + "w1", {F, D}, bd, rng);
    L.b1 = params.add_uniform(p + "b1", {F}, bd, rng);
    L.w2 = params.add_uniform(p + "w2", {D, F}, bf, rng);
    L.b2 = params.add_uniform(p + "b2", {D}, bf, rng);
    L.ln2_w = params.add_constant(p + "ln2_w", {D}, T(1));
    L.ln2_b = params.add(p + "ln2_b", {D});
    layers_.push_back(L);
  }
  const int32_t p_all = c.memory + c.segment - r_min();
  r_all_ = BasicTensor<T>({p_all, D});
  relative_sinusoid(r_all_.data(), p_all, c.width, -r_min());
}

template <typename T>
BasicVar<T> BasicTransformerXL<T>::positions(int32_t layer) const {
  const BasicVar<T>& wr = layers_.at(layer).wr;
  const Device device = wr.value().device();  // the encodings follow the parameters' device
  const BasicTensor<T> r = r_all_.device() == device ? r_all_ : r_all_.to_device(device);
  return linear(BasicVar<T>(r), wr, BasicVar<T>());
}

template <typename T>
BasicVar<T> BasicTransformerXL<T>::layer_forward(int32_t layer, const BasicVar<T>& x,
                                                 const BasicVar<T>& mem, const BasicVar<T>& rk_all,
                                                 const BasicVar<T>& film) const {
  const auto& c = config_;
  const Layer& L = layers_.at(layer);
  if (x.ndim() != 2 || x.dim(1) != c.width || x.dim(0) > c.segment || x.dim(0) == 0)
    throw std::invalid_argument("TransformerXL: segment must be (S', D) with 0 < S' <= " +
                                std::to_string(c.segment) + ", got " + shape_str(x.shape()));
  RelAttentionDims d;
  d.S = static_cast<int32_t>(x.dim(0));
  d.M = mem.defined() ? static_cast<int32_t>(mem.dim(0)) : 0;
  d.H = c.heads;
  d.Dh = c.width / c.heads;
  d.causal = c.causal;
  if (d.M > c.memory)
    throw std::invalid_argument("TransformerXL: memory has " + std::to_string(d.M) +
                                " rows, more than the configured " + std::to_string(c.memory));
  const BasicVar<T> none;
  const BasicVar<T> ctx = d.M > 0 ? concat<T>({mem, x}, 0) : x;  // (K, D)
  const BasicVar<T> q = linear(x, L.wq, none);
  const BasicVar<T> k = linear(ctx, L.wk, none);
  const BasicVar<T> v = linear(ctx, L.wv, none);
  // Rows of rk_all for r in [-(S'-1) or 0, M' + S' - 1].
  const int64_t lo = (c.causal ? 0 : 1 - d.S) - r_min();
  const BasicVar<T> rk = slice(rk_all, 0, lo, lo + d.P());
  BasicVar<T> o = linear(rel_attention(q, k, v, rk, L.u, L.vb, d), L.wo, none);
  if (film.defined()) o = film_modulate(o, film, layer);
  const BasicVar<T> h = layer_norm(add(x, o), L.ln1_w, L.ln1_b, static_cast<T>(c.ln_eps));
  const BasicVar<T> f = linear(relu(linear(h, L.w1, L.b1)), L.w2, L.b2);
  return layer_norm(add(h, f), L.ln2_w, L.ln2_b, static_cast<T>(c.ln_eps));
}

template <typename T>
BasicVar<T> BasicTransformerXL<T>::forward(const BasicVar<T>& h, const BasicVar<T>& film) const {
  const auto& c = config_;
  if (h.ndim() != 2 || h.dim(1) != c.width)
    throw std::invalid_argument("TransformerXL: h must be (N, " + std::to_string(c.width) +
                                "), got " + shape_str(h.shape()));
  const int64_t N = h.dim(0);
  std::vector<BasicVar<T>> rk_all(c.layers), mems(c.layers), outs;
  for (int32_t l = 0; l < c.layers; ++l) rk_all[l] = positions(l);
  for (int64_t start = 0; start < N; start += c.segment) {
    const int64_t end = std::min<int64_t>(N, start + c.segment);
    BasicVar<T> x = slice(h, 0, start, end);
    for (int32_t l = 0; l < c.layers; ++l) {
      BasicVar<T> next_mem;
      if (c.memory > 0) {  // last `memory` rows of [mem ; x], no gradient
        const BasicVar<T> xd = detach(x);
        const BasicVar<T> all = mems[l].defined() ? concat<T>({mems[l], xd}, 0) : xd;
        const int64_t rows = all.dim(0);
        next_mem = rows > c.memory ? slice(all, 0, rows - c.memory, rows) : all;
      }
      x = layer_forward(l, x, mems[l], rk_all[l], film);
      mems[l] = next_mem;
    }
    outs.push_back(x);
  }
  return outs.size() == 1 ? outs[0] : concat(outs, 0);
}

template class BasicTransformerXL<float>;
template class BasicTransformerXL<double>;

}  // namespace gdp::nn
