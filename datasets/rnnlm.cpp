// RNN language model generator: embedding, L LSTM layers unrolled over T steps (static
// unroll, as TensorFlow's static_rnn builds it), one softmax over all steps, and the shared
// LSTM building blocks. Defaults and op counts: docs/workloads.md.
#include "datasets/rnnlm.h"

#include <string>

#include "core/error.h"

namespace gdp::datasets {

LstmWeights make_lstm_weights(GraphBuilder& b, int64_t input, int64_t hidden) {
  LstmWeights w;
  w.input = input;
  w.hidden = hidden;
  w.kernel = b.variable("kernel", {input + hidden, 4 * hidden});
  w.bias = b.variable("bias", {4 * hidden});
  w.forget_bias = b.constant("forget_bias", {});
  return w;
}

LstmState lstm_zero_state(GraphBuilder& b, int64_t batch, int64_t hidden) {
  return LstmState{b.constant("zero_h", {batch, hidden}), b.constant("zero_c", {batch, hidden})};
}

LstmState lstm_step(GraphBuilder& b, const LstmWeights& w, const std::vector<Tensor>& xs,
                    LstmState prev) {
  std::vector<Tensor> parts = xs;
  parts.push_back(prev.h);
  Tensor in = b.concat(parts, 1, "concat");                   // (B, In + H)
  Tensor gates = b.bias_add(b.matmul(in, w.kernel), w.bias);  // (B, 4H)
  std::vector<Tensor> g = b.split(gates, 1, 4);               // i, j, f, o: (B, H)
  Tensor f = b.sigmoid(b.add(g[2], w.forget_bias, "add_forget_bias"), "Sigmoid_f");
  Tensor i = b.sigmoid(g[0], "Sigmoid_i");
  Tensor j = b.tanh(g[1], "Tanh_j");
  Tensor o = b.sigmoid(g[3], "Sigmoid_o");
  Tensor c = b.add(b.mul(prev.c, f, "mul_c_f"), b.mul(i, j, "mul_i_j"), "new_c");
  Tensor h = b.mul(b.tanh(c, "Tanh_c"), o, "new_h");
  return LstmState{h, c};
}

Tensor tf_dropout(GraphBuilder& b, Tensor x, Tensor keep_prob) {
  GraphBuilder::Scope s(b, "dropout");
  const auto shp = b.shape(x);
  const double n = static_cast<double>(numel(shp));
  OpSpec r;
  r.type = "RandomUniform";
  r.name = "random_uniform";
  r.outputs = {TensorSpec{shp, b.dtype(), 0}};
  r.flops = n;
  Tensor mask = b.unary("Floor", b.add(b.record(std::move(r)), keep_prob, "add"), 1, false,
                        "Floor");  // no gradient flows: the mask does not depend on a variable
  OpSpec d;
  d.type = "RealDiv";
  d.name = "div";
  d.inputs = {x, keep_prob};
  d.outputs = {TensorSpec{shp, b.dtype_of(x), 0}};
  d.flops = n;
  d.grads = {GradSpec{"RealDiv", 0, {1}, {}, n, 0}};
  return b.mul(b.record(std::move(d)), mask, "mul");
}

std::vector<Tensor> unstack_time(GraphBuilder& b, Tensor x) {
  const auto s = b.shape(x);  // (B, T, D)
  std::vector<Tensor> steps = b.split(x, 1, static_cast<int32_t>(s[1]), "unstack");
  for (size_t t = 0; t < steps.size(); ++t)
    steps[t] = b.reshape(steps[t], {s[0], s[2]}, "squeeze_" + std::to_string(t));
  return steps;
}

Tensor stack_time_major(GraphBuilder& b, const std::vector<Tensor>& xs) {
  return b.concat(xs, 0, "stack_outputs");
}

Graph make_rnnlm(const GenOptions& o) {
  const int64_t L = o.layers, B = o.batch, T = o.seq_len, H = o.hidden, V = o.vocab;
  // Dropout on the non-recurrent connections (Zaremba et al. 2014).
  GraphBuilder b("rnnlm_" + std::to_string(L) + "layer");
  Tensor ids, labels;
  {
    GraphBuilder::Scope s(b, "input");
    ids = b.input("ids", {B, T}, DType::i32);
    labels = b.input("labels", {T * B}, DType::i32);
  }
  std::vector<Tensor> xs;
  {
    GraphBuilder::Scope s(b, "embedding");
    Tensor table = b.variable("embedding", {V, H});
    Tensor keep = b.constant("keep_prob", {});
    Tensor emb = tf_dropout(b, b.embedding_lookup(table, ids), keep);  // (B, T, H)
    xs = unstack_time(b, emb);
  }
  for (int64_t l = 0; l < L; ++l) {
    GraphBuilder::Scope s(b, "layer_" + std::to_string(l));
    LstmWeights w = make_lstm_weights(b, H, H);
    LstmState st = lstm_zero_state(b, B, H);
    Tensor keep = b.constant("keep_prob", {});
    for (int64_t t = 0; t < T; ++t) {
      GraphBuilder::Scope st_scope(b, indexed("t", t));
      st = lstm_step(b, w, {xs[t]}, st);
      xs[t] = tf_dropout(b, st.h, keep);
    }
  }
  {
    GraphBuilder::Scope s(b, "softmax");
    Tensor out = stack_time_major(b, xs);  // (T*B, H)
    Tensor w = b.variable("softmax_w", {H, V});
    Tensor bias = b.variable("softmax_b", {V});
    Tensor logits = b.bias_add(b.matmul(out, w), bias);  // (T*B, V)
    Tensor loss = b.softmax_cross_entropy(logits, labels);
    b.set_loss(b.reduce_mean(loss, {0}, "loss"));
  }
  return b.build_training_graph();
}

namespace {

void validate_rnnlm(const GenOptions& o) {
  if (o.layers < 1 || o.layers > 16)
    throw InputError("rnnlm: option 'layers' must be in 1..16 (paper: 2 or 4), got " +
                     std::to_string(o.layers));
  if (o.batch < 1) throw InputError("rnnlm: option 'batch' must be >= 1");
  if (o.seq_len < 1 || o.seq_len > 1000)
    throw InputError("rnnlm: option 'seq_len' must be in 1..1000, got " +
                     std::to_string(o.seq_len));
  if (o.hidden < 1) throw InputError("rnnlm: option 'hidden' must be >= 1");
  if (o.vocab < 2) throw InputError("rnnlm: option 'vocab' must be >= 2");
}

}  // namespace

ModelSpec rnnlm_spec() {
  ModelSpec m;
  m.name = "rnnlm";
  m.summary = "LSTM language model, unrolled (layers 2|4; default 2 layers, H 2048, T 40, B 64)";
  m.options = {"layers", "batch", "seq_len", "hidden", "vocab"};
  m.defaults.layers = 2;
  m.defaults.batch = 64;
  m.defaults.seq_len = 40;
  m.defaults.hidden = 2048;
  m.defaults.vocab = 32000;
  m.validate = validate_rnnlm;
  m.generate = make_rnnlm;
  return m;
}

}  // namespace gdp::datasets
