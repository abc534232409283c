// GNMT generator. Encoder: layer 0 bidirectional (fw + bw LSTMs, outputs concatenated),
// layers 1.. unidirectional, residual from layer 2. Decoder: L LSTM layers; the bottom
// layer's output queries additive attention over the encoder outputs, and the context feeds
// the bottom layer at the next step and every other layer at this step (GNMT's attention
// placement). Output projection and softmax over all target steps. Defaults: docs/workloads.md.
#include "datasets/gnmt.h"

#include <string>

#include "core/error.h"
#include "datasets/rnnlm.h"

namespace gdp::datasets {

namespace {

struct AttentionWeights {
  Tensor w_query;  // (H, H)
  Tensor v;        // (H)
  Tensor g;        // () weight-norm gain
  Tensor bias;     // (H)
};

// Normalized Bahdanau attention (GNMT's) of query (B, H) over keys/memory (B, S, H) ->
// context (B, H). As in TensorFlow's _bahdanau_score, v is re-normalized at every call:
// score = sum(g * v / |v| * tanh(keys + W q + b), axis 2).
Tensor attend(GraphBuilder& b, Tensor query, Tensor keys, Tensor memory,
              const AttentionWeights& a) {
  const auto s = b.shape(keys);  // (B, S, H)
  Tensor q = b.reshape(b.matmul(query, a.w_query, false, false, "query"), {s[0], 1, s[2]});
  Tensor sq = b.reduce_sum(b.mul(a.v, a.v, "square_v"), {0}, "sum_square_v");  // ()
  Tensor inv_norm = b.unary("Rsqrt", sq, 4, true, "rsqrt");
  Tensor normed_v = b.mul(b.mul(a.g, a.v, "g_v"), inv_norm, "normed_v");      // (H)
  Tensor e = b.tanh(b.add(b.add(keys, q, "add_query"), a.bias, "add_bias"));  // (B, S, H)
  Tensor score = b.reduce_sum(b.mul(e, normed_v, "mul_v"), {2}, "score");     // (B, S)
  Tensor align = b.reshape(b.softmax(score, "alignments"), {s[0], 1, s[1]});
  Tensor ctx = b.batch_matmul(align, memory, false, false, "context");  // (B, 1, H)
  return b.reshape(ctx, {s[0], s[2]}, "context_2d");
}

}  // namespace

Graph make_gnmt(const GenOptions& o) {
  const int64_t L = o.layers, B = o.batch, S = o.seq_len, T = o.seq_len, H = o.hidden, V = o.vocab;
  GraphBuilder b("gnmt_" + std::to_string(L) + "layer");
  Tensor src, tgt_in, labels;
  {
    GraphBuilder::Scope s(b, "input");
    src = b.input("source_ids", {B, S}, DType::i32);
    tgt_in = b.input("target_input_ids", {B, T}, DType::i32);
    labels = b.input("target_output_ids", {T * B}, DType::i32);
  }

  // ---- Encoder ----
  std::vector<Tensor> xs;
  std::vector<LstmState> enc_final(L);
  {
    GraphBuilder::Scope se(b, "encoder");
    {
      GraphBuilder::Scope s(b, "embedding");
      Tensor table = b.variable("embedding_encoder", {V, H});
      xs = unstack_time(b, b.embedding_lookup(table, src));  // S x (B, H)
    }
    for (int64_t l = 0; l < L; ++l) {
      GraphBuilder::Scope sl(b, "layer_" + std::to_string(l));
      if (l == 0) {
        std::vector<Tensor> fw(S), bw(S);
        Tensor keep = b.constant("keep_prob", {});
        {
          GraphBuilder::Scope sd(b, "fw");
          LstmWeights w = make_lstm_weights(b, H, H);
          LstmState st = lstm_zero_state(b, B, H);
          for (int64_t t = 0; t < S; ++t) {
            GraphBuilder::Scope stp(b, indexed("t", t));
            st = lstm_step(b, w, {tf_dropout(b, xs[t], keep)}, st);
            fw[t] = st.h;
          }
          enc_final[0] = st;
        }
        {
          GraphBuilder::Scope sd(b, "bw");
          LstmWeights w = make_lstm_weights(b, H, H);
          LstmState st = lstm_zero_state(b, B, H);
          for (int64_t t = S - 1; t >= 0; --t) {
            GraphBuilder::Scope stp(b, indexed("t", t));
            st = lstm_step(b, w, {tf_dropout(b, xs[t], keep)}, st);
            bw[t] = st.h;
          }
        }
        for (int64_t t = 0; t < S; ++t) xs[t] = b.concat({fw[t], bw[t]}, 1, "bi_concat");
        continue;
      }
      LstmWeights w = make_lstm_weights(b, l == 1 ? 2 * H : H, H);
      LstmState st = lstm_zero_state(b, B, H);
      Tensor keep = b.constant("keep_prob", {});
      for (int64_t t = 0; t < S; ++t) {
        GraphBuilder::Scope stp(b, indexed("t", t));
        st = lstm_step(b, w, {tf_dropout(b, xs[t], keep)}, st);
        xs[t] = l >= 2 ? b.add(st.h, xs[t], "residual") : st.h;
      }
      enc_final[l] = st;
    }
  }

  // ---- Attention memory: encoder outputs (B, S, H) and their key projection ----
  Tensor memory, keys;
  AttentionWeights att;
  {
    GraphBuilder::Scope sd(b, "decoder");
    GraphBuilder::Scope sa(b, "attention");
    std::vector<Tensor> parts;
    for (int64_t t = 0; t < S; ++t)
      parts.push_back(b.reshape(xs[t], {B, 1, H}, "expand_" + std::to_string(t)));
    memory = b.concat(parts, 1, "memory");  // (B, S, H)
    Tensor w_mem = b.variable("memory_layer", {H, H});
    keys =
        b.reshape(b.matmul(b.reshape(memory, {B * S, H}), w_mem, false, false, "keys"), {B, S, H});
    att.w_query = b.variable("query_layer", {H, H});
    att.v = b.variable("attention_v", {H});
    att.g = b.variable("attention_g", {});
    att.bias = b.variable("attention_b", {H});
  }

  // ---- Decoder ----
  std::vector<Tensor> outs(T);
  {
    GraphBuilder::Scope sd(b, "decoder");
    std::vector<Tensor> ys;
    {
      GraphBuilder::Scope s(b, "embedding");
      Tensor table = b.variable("embedding_decoder", {V, H});
      ys = unstack_time(b, b.embedding_lookup(table, tgt_in));  // T x (B, H)
    }
    std::vector<LstmWeights> w(L);
    std::vector<LstmState> st(L);
    std::vector<Tensor> keep(L);
    for (int64_t l = 0; l < L; ++l) {
      GraphBuilder::Scope sl(b, "layer_" + std::to_string(l));
      keep[l] = b.constant("keep_prob", {});
      w[l] = make_lstm_weights(b, 2 * H, H);  // input: [x, attention context]
      st[l] = enc_final[l];                   // GNMT passes the encoder state through
    }
    Tensor ctx;
    {
      GraphBuilder::Scope sa(b, "attention");
      ctx = b.constant("initial_context", {B, H});
    }
    for (int64_t t = 0; t < T; ++t) {
      Tensor x = ys[t];
      for (int64_t l = 0; l < L; ++l) {
        GraphBuilder::Scope sl(b, "layer_" + std::to_string(l));
        GraphBuilder::Scope stp(b, indexed("t", t));
        LstmState ns = lstm_step(b, w[l], {tf_dropout(b, x, keep[l]), ctx}, st[l]);
        st[l] = ns;
        Tensor y = l >= 2 ? b.add(ns.h, x, "residual") : ns.h;
        if (l == 0) {
          GraphBuilder::Scope sa(b, "attention");  // decoder/layer_0/tT/attention
          ctx = attend(b, ns.h, keys, memory, att);
        }
        x = y;
      }
      outs[t] = x;
    }
  }

  {
    GraphBuilder::Scope s(b, "softmax");
    Tensor out = stack_time_major(b, outs);  // (T*B, H)
    Tensor w = b.variable("output_projection", {H, V});
    Tensor logits = b.matmul(out, w);  // (T*B, V)
    Tensor loss = b.softmax_cross_entropy(logits, labels);
    b.set_loss(b.reduce_mean(loss, {0}, "loss"));
  }
  return b.build_training_graph();
}

namespace {

void validate_gnmt(const GenOptions& o) {
  if (o.layers < 2 || o.layers > 16)
    throw InputError("gnmt: option 'layers' must be in 2..16 (paper: 2, 4 or 8), got " +
                     std::to_string(o.layers));
  if (o.batch < 1) throw InputError("gnmt: option 'batch' must be >= 1");
  if (o.seq_len < 1 || o.seq_len > 1000)
    throw InputError("gnmt: option 'seq_len' must be in 1..1000, got " + std::to_string(o.seq_len));
  if (o.hidden < 1) throw InputError("gnmt: option 'hidden' must be >= 1");
  if (o.vocab < 2) throw InputError("gnmt: option 'vocab' must be >= 2");
}

}  // namespace

ModelSpec gnmt_spec() {
  ModelSpec m;
  m.name = "gnmt";
  m.summary =
      "GNMT encoder/decoder with attention, unrolled (layers 2|4|8; default 8, H 1024, T 70, B "
      "128)";
  m.options = {"layers", "batch", "seq_len", "hidden", "vocab"};
  m.defaults.layers = 8;
  m.defaults.batch = 128;
  m.defaults.seq_len = 70;
  m.defaults.hidden = 1024;
  m.defaults.vocab = 32000;
  m.validate = validate_gnmt;
  m.generate = make_gnmt;
  return m;
}

}  // namespace gdp::datasets
