// RNN language model (2 or 4 LSTM layers, statically unrolled over the sequence) and the LSTM
// building blocks that the GNMT generator shares.
#pragma once

#include <cstdint>
#include <vector>

#include "datasets/builder.h"
#include "datasets/registry.h"

namespace gdp::datasets {

// Variables of one LSTM layer (TensorFlow's BasicLSTMCell layout), created in the current
// scope: kernel (In + H, 4H), bias (4H).
struct LstmWeights {
  Tensor kernel;       // (In + H, 4H)
  Tensor bias;         // (4H)
  Tensor forget_bias;  // scalar Const added to the forget gate
  int64_t input = 0, hidden = 0;
};
LstmWeights make_lstm_weights(GraphBuilder& b, int64_t input, int64_t hidden);

struct LstmState {
  Tensor h;  // (B, H)
  Tensor c;  // (B, H)
};
// Zero initial state, Const ops (B, H) in the current scope.
LstmState lstm_zero_state(GraphBuilder& b, int64_t batch, int64_t hidden);
// One step: gates = [x_0, ..., x_k, h] W + b; i, j, f, o = split(gates);
// c' = c * sigmoid(f + forget_bias) + sigmoid(i) * tanh(j); h' = tanh(c') * sigmoid(o).
// 14 forward ops; `xs` are concatenated with h (their widths sum to the layer's input).
LstmState lstm_step(GraphBuilder& b, const LstmWeights& w, const std::vector<Tensor>& xs,
                    LstmState prev);

// Dropout as TensorFlow 1.x's nn.dropout builds it: RandomUniform, Add(keep_prob), Floor
// (the 0/1 mask), RealDiv(x, keep_prob), Mul. `keep_prob` is a scalar Const.
Tensor tf_dropout(GraphBuilder& b, Tensor x, Tensor keep_prob);

// Splits (B, T, D) into T tensors (B, D): an Unpack-like Split plus a Reshape per step.
std::vector<Tensor> unstack_time(GraphBuilder& b, Tensor x);
// Stacks T tensors (B, D) time-major into (T*B, D) (one ConcatV2).
Tensor stack_time_major(GraphBuilder& b, const std::vector<Tensor>& xs);

Graph make_rnnlm(const GenOptions& o);  // options with defaults applied

}  // namespace gdp::datasets
