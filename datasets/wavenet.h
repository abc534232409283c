// WaveNet (van den Oord et al. 2016) training graph: stacks of dilated causal convolutions
// (dilations 1, 2, ..., 512 per stack) with gated activations, residual and skip connections,
// over mu-law one-hot audio. Layout as in the widely used TensorFlow implementation
// (separate filter and gate convolutions, biases, skip outputs summed).
#pragma once

#include <cstdint>

#include "datasets/builder.h"
#include "datasets/registry.h"

namespace gdp::datasets {

// Tensors are (N, 1, T, C): audio as a 1-pixel-high image, so every conv is a Conv2D with a
// (1, 2) kernel dilated along time (TensorFlow's conv1d lowers to Conv2D the same way).
struct WaveNetOptions {
  int64_t stacks = 2;             // 2 or 4 in the paper's setting
  int64_t layers_per_stack = 10;  // dilations 1 .. 2^(layers_per_stack - 1)
  int64_t batch = 4;
  int64_t samples = 16000;         // T: one second at 16 kHz
  int64_t residual_channels = 64;  // also the dilation (filter/gate) channels
  int64_t skip_channels = 256;
  int64_t quantization = 256;  // mu-law classes
};

void record_wavenet(GraphBuilder& b, const WaveNetOptions& o);
Graph make_wavenet(const WaveNetOptions& o);

}  // namespace gdp::datasets
