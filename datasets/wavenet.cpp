// WaveNet generator: causal input conv, `stacks` x 10 gated residual layers with dilations
// 1..512, skip outputs accumulated layer by layer, then relu-1x1-relu-1x1 and the softmax
// over the quantized amplitude of every sample. Scopes "stack_S/layer_L" for placements.
#include "datasets/wavenet.h"

#include <string>

#include "core/error.h"
#include "datasets/cnn_layers.h"

namespace gdp::datasets {

namespace {

void validate_wavenet(const GenOptions& o) {
  if (o.stacks < 1) throw InputError("wavenet: option 'stacks' must be >= 1");
  if (o.batch < 1) throw InputError("wavenet: option 'batch' must be >= 1");
  if (o.hidden < 1) throw InputError("wavenet: option 'hidden' (residual channels) must be >= 1");
  if (o.seq_len < 2) throw InputError("wavenet: option 'seq_len' (samples) must be >= 2");
}

}  // namespace

void record_wavenet(GraphBuilder& b, const WaveNetOptions& o) {
  GraphBuilder::Scope top(b, "wavenet");
  const int64_t R = o.residual_channels, S = o.skip_channels, Q = o.quantization;
  Tensor audio = b.input("audio_one_hot", {o.batch, 1, o.samples, Q});           // (N, 1, T, Q)
  Tensor x = conv_bias(b, audio, 1, 2, R, 1, Padding::same, 1, "causal_layer");  // (N, 1, T, R)
  Tensor skip_total;
  for (int64_t s = 0; s < o.stacks; ++s) {
    GraphBuilder::Scope ss(b, "stack_" + std::to_string(s));
    for (int64_t l = 0; l < o.layers_per_stack; ++l) {
      GraphBuilder::Scope ls(b, "layer_" + std::to_string(l));
      const int64_t dilation = int64_t{1} << l;
      Tensor filter = conv_bias(b, x, 1, 2, R, 1, Padding::same, dilation, "filter");
      Tensor gate = conv_bias(b, x, 1, 2, R, 1, Padding::same, dilation, "gate");
      Tensor out = b.mul(b.tanh(filter, "Tanh"), b.sigmoid(gate, "Sigmoid"), "gated");
      Tensor skip = conv_bias(b, out, 1, 1, S, 1, Padding::same, 1, "skip");  // (N,1,T,S)
      // The very last layer's residual output would feed nothing: it is not built.
      if (s + 1 < o.stacks || l + 1 < o.layers_per_stack) {
        Tensor dense = conv_bias(b, out, 1, 1, R, 1, Padding::same, 1, "dense");  // (N,1,T,R)
        x = b.add(x, dense, "residual");
      }
      skip_total = skip_total.valid() ? b.add(skip_total, skip, "skip_sum") : skip;
    }
  }
  Tensor logits;
  {
    GraphBuilder::Scope ps(b, "postprocessing");
    Tensor y = b.relu(skip_total, "relu_1");
    y = conv_bias(b, y, 1, 1, S, 1, Padding::same, 1, "postprocess1");
    y = b.relu(y, "relu_2");
    y = conv_bias(b, y, 1, 1, Q, 1, Padding::same, 1, "postprocess2");  // (N, 1, T, Q)
    logits = b.reshape(y, {o.batch * o.samples, Q}, "flatten");         // (N*T, Q)
  }
  softmax_loss(b, logits);
}

Graph make_wavenet(const WaveNetOptions& o) {
  GraphBuilder b("wavenet_" + std::to_string(o.stacks) + "stack");
  record_wavenet(b, o);
  return b.build_training_graph();
}

ModelSpec wavenet_spec() {
  ModelSpec m;
  m.name = "wavenet";
  m.summary =
      "WaveNet, dilated causal conv stacks (stacks 2|4; default 2 stacks x 10 layers, "
      "B 4, T 16000, 64 residual / 256 skip channels)";
  m.options = {"stacks", "batch", "seq_len", "hidden"};
  m.defaults.stacks = 2;
  m.defaults.batch = 4;
  m.defaults.seq_len = 16000;
  m.defaults.hidden = 64;
  m.validate = validate_wavenet;
  m.generate = [](const GenOptions& g) {
    WaveNetOptions o;
    o.stacks = g.stacks;
    o.batch = g.batch;
    o.samples = g.seq_len;
    o.residual_channels = g.hidden;
    return make_wavenet(o);
  };
  return m;
}

}  // namespace gdp::datasets
