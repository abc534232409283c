// Categorical policy head: sample an action per row of logits with a seeded Rng, and the
// log-probability and entropy of a row (with their gradients) for the PPO loss.
//
// Glossary: N = rows (nodes to place), A = actions (devices).
#pragma once

#include <cstdint>

#include "nn/rng.h"

namespace gdp::nn {

// actions[n] ~ softmax(logits[n]) by inverse CDF on one rng.uniform() per row (rows in order,
// so the same seed gives the same actions). A column of probability exactly 0 (masked with a
// large negative logit) is never picked, even when rounding leaves the row's total below 1.
template <typename T>
void categorical_sample(int32_t* actions,  // (N)
                        const T* logits,   // (N, A)
                        int32_t N, int32_t A, Rng& rng);
// Most likely action per row (first on ties).
template <typename T>
void categorical_argmax(int32_t* actions, const T* logits, int32_t N, int32_t A);

// logp[n] = logits[n][a_n] - logsumexp(logits[n]).
template <typename T>
void categorical_log_prob_forward(T* logp,                 // (N)
                                  const T* logits,         // (N, A)
                                  const int32_t* actions,  // (N)
                                  int32_t N, int32_t A);
// dlogits[n][c] += dlogp[n] * (1{c = a_n} - p_nc).
template <typename T>
void categorical_log_prob_backward(T* dlogits,              // (N, A), accumulated
                                   const T* dlogp,          // (N)
                                   const T* logits,         // (N, A)
                                   const int32_t* actions,  // (N)
                                   int32_t N, int32_t A);

// ent[n] = -sum_c p_nc log p_nc.
template <typename T>
void categorical_entropy_forward(T* ent,           // (N)
                                 const T* logits,  // (N, A)
                                 int32_t N, int32_t A);
// dlogits[n][c] += dent[n] * (-p_nc (log p_nc + ent_n)).
template <typename T>
void categorical_entropy_backward(T* dlogits,       // (N, A), accumulated
                                  const T* dent,    // (N)
                                  const T* logits,  // (N, A)
                                  int32_t N, int32_t A);

}  // namespace gdp::nn
