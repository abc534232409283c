// Multi-head attention with Transformer-XL relative positions (Dai et al. 2019) and a memory of
// the previous segment: the placement network's core. Raw kernels; the derivation of the
// backward pass is in docs/attention.md.
//
// Glossary: S = queries (current segment), M = memory rows, K = M + S keys/values
// ([memory ; current]), H = heads, Dh = head width, D = H * Dh, P = relative positions.
// Query i sits at absolute position M + i; key j at j; their distance is r = M + i - j.
//   causal: j <= M + i allowed, r in [0, K - 1], P = K, position row p = r.
//   full:   every j allowed, r in [-(S - 1), K - 1], P = K + S - 1, position row p = r + S - 1.
// Score (per head, scale = 1/sqrt(Dh)):
//   a_ij = scale * ((q_i + u) . k_j + (q_i + v) . rk_p(i,j))
// i.e. content term + position term with the learned biases u, v of Transformer-XL ("(a)+(c)"
// and "(b)+(d)"); rk = R W_r is the projected sinusoidal encoding. probs = softmax_j(a),
// out_i = sum_j probs_ij v_j.
#pragma once

#include <cstdint>

namespace gdp::nn {

struct RelAttentionDims {
  int32_t S = 0;   // queries
  int32_t M = 0;   // memory rows (0 for the first segment)
  int32_t H = 1;   // heads
  int32_t Dh = 1;  // head width
  bool causal = true;

  int32_t K() const { return M + S; }
  int32_t D() const { return H * Dh; }
  int32_t P() const { return causal ? M + S : M + 2 * S - 1; }
  int32_t rel_offset() const { return causal ? 0 : S - 1; }  // p = r + rel_offset()
  void validate() const;                                     // throws std::invalid_argument
};

// Sinusoidal encodings of relative distances: row p encodes r = p - rel_offset as
// [sin(r * f_0) .. sin(r * f_{D/2-1}), cos(r * f_0) .. cos(r * f_{D/2-1})], f_k = 10000^(-2k/D).
// D must be even.
template <typename T>
void relative_sinusoid(T* R,  // (P, D)
                       int32_t P, int32_t D, int32_t rel_offset);

template <typename T>
void rel_attention_forward(T* out,       // (S, D)
                           T* probs,     // (H, S, K), saved for the backward pass
                           const T* q,   // (S, D)
                           const T* k,   // (K, D)
                           const T* v,   // (K, D)
                           const T* rk,  // (P, D)
                           const T* u,   // (D), content bias
                           const T* vb,  // (D), position bias
                           const RelAttentionDims& dims);

// Gradients ACCUMULATE into dq, dk, dv, drk, du, dvb; any of them may be nullptr (not needed).
template <typename T>
void rel_attention_backward(T* dq,           // (S, D)
                            T* dk,           // (K, D)
                            T* dv,           // (K, D)
                            T* drk,          // (P, D)
                            T* du,           // (D)
                            T* dvb,          // (D)
                            const T* dout,   // (S, D)
                            const T* probs,  // (H, S, K) from the forward pass
                            const T* q, const T* k, const T* v, const T* rk, const T* u,
                            const T* vb, const RelAttentionDims& dims);

}  // namespace gdp::nn
