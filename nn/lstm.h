// LSTM cell and an unrolled sequence helper, built from the core ops (their closures give the
// gradient): the recurrent block of HDP's seq2seq placer (Mirhoseini et al. 2018), a baseline.
//
// Dimension letters: B = batch, I = input width, H = hidden width, T = time steps.
// Same definition, gate order and parameter layout as torch.nn.LSTMCell, so weights load as is:
//   gates = x W_ih^T + b_ih + h W_hh^T + b_hh     (B, 4H), column blocks [i | f | g | o]
//   i = sigmoid(gates[:, 0:H])    f = sigmoid(gates[:, H:2H])
//   g = tanh(gates[:, 2H:3H])     o = sigmoid(gates[:, 3H:4H])
//   c' = f * c + i * g            h' = o * tanh(c')
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nn/autograd.h"
#include "nn/parameters.h"

namespace gdp::nn {

struct LstmConfig {
  int32_t input = 0;   // I
  int32_t hidden = 0;  // H
};

// The recurrent state: h (B, H), c (B, H). Undefined members mean zeros (a fresh sequence), as
// PyTorch's hx = None; the cell then skips the W_hh product (bit-identical to zero tensors).
template <typename T>
struct BasicLstmState {
  BasicVar<T> h;  // (B, H)
  BasicVar<T> c;  // (B, H)
};

template <typename T>
class BasicLstmCell {
 public:
  // Registers "<prefix>.w_ih" (4H, I), ".w_hh" (4H, H), ".b_ih" (4H), ".b_hh" (4H) in params
  // (that order), each uniform in +-1/sqrt(H) from rng, as PyTorch's LSTMCell.
  BasicLstmCell(BasicParameterBuffer<T>& params, const std::string& prefix, LstmConfig config,
                Rng& rng);

  // x (B, I), state {h (B, H), c (B, H)} (either may be undefined: zeros) -> {h', c'}.
  BasicLstmState<T> forward(const BasicVar<T>& x, const BasicLstmState<T>& state) const;
  const LstmConfig& config() const { return config_; }

 private:
  LstmConfig config_;
  BasicVar<T> w_ih_;  // (4H, I)
  BasicVar<T> w_hh_;  // (4H, H)
  BasicVar<T> b_ih_;  // (4H)
  BasicVar<T> b_hh_;  // (4H)
};

template <typename T>
struct BasicLstmSequence {
  std::vector<BasicVar<T>> hs;  // T x (B, H): h after each step
  BasicLstmState<T> last;       // {h_T, c_T}, e.g. to start a decoder
};

// The cell unrolled over xs (T x (B, I)) from state0 (members may be undefined: zeros); every
// step is recorded on the tape, so backward runs through time.
template <typename T>
BasicLstmSequence<T> lstm_sequence(const BasicLstmCell<T>& cell, const std::vector<BasicVar<T>>& xs,
                                   const BasicLstmState<T>& state0 = {});

using LstmCell = BasicLstmCell<float>;
using LstmCellD = BasicLstmCell<double>;
using LstmState = BasicLstmState<float>;
using LstmStateD = BasicLstmState<double>;

}  // namespace gdp::nn
