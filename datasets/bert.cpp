// BERT generator following google-research/bert modeling.py op by op (dense q/k/v, scaled
// dot-product attention with an additive mask, GELU FFN, post-LayerNorm), with the
// pre-training heads: 20 masked positions per sequence (max_predictions_per_seq) and NSP.
// Defaults: BERT-base (12 layers, 768 hidden, 12 heads, vocab 30522): docs/workloads.md.
#include "datasets/bert.h"

#include <string>

#include "core/error.h"
#include "datasets/builder.h"

namespace gdp::datasets {

namespace {

Tensor dense(GraphBuilder& b, Tensor x, int64_t in, int64_t out, const std::string& name) {
  GraphBuilder::Scope s(b, name);
  Tensor w = b.variable("kernel", {in, out});
  return b.bias_add(b.matmul(x, w), b.variable("bias", {out}));
}

Tensor layer_norm(GraphBuilder& b, Tensor x, int64_t d) {
  GraphBuilder::Scope s(b, "LayerNorm");
  return b.layer_norm(x, b.variable("gamma", {d}), b.variable("beta", {d}));
}

}  // namespace

Graph make_bert(const GenOptions& o) {
  const int64_t L = o.layers, B = o.batch, T = o.seq_len, D = o.hidden, N = o.heads, V = o.vocab;
  const int64_t Dh = D / N, Di = 4 * D, P = 20;  // P: masked positions per sequence
  GraphBuilder b("bert_" + std::to_string(L) + "layer");
  Tensor ids, types, mask_in, mlm_pos, mlm_labels, nsp_labels;
  {
    GraphBuilder::Scope s(b, "input");
    ids = b.input("input_ids", {B, T}, DType::i32);
    types = b.input("segment_ids", {B, T}, DType::i32);
    mask_in = b.input("attention_mask_bias", {B, 1, 1, T});  // 0 or -10000 per key
    mlm_pos = b.input("masked_lm_positions", {B * P}, DType::i32);
    mlm_labels = b.input("masked_lm_ids", {B * P}, DType::i32);
    nsp_labels = b.input("next_sentence_labels", {B}, DType::i32);
  }
  Tensor word_table, h;
  {
    GraphBuilder::Scope s0(b, "bert");
    GraphBuilder::Scope s(b, "embeddings");
    word_table = b.variable("word_embeddings", {V, D});
    Tensor x = b.embedding_lookup(word_table, ids);  // (B, T, D)
    Tensor tt = b.embedding_lookup(b.variable("token_type_embeddings", {2, D}), types);
    Tensor pos = b.slice(b.variable("position_embeddings", {512, D}), 0, 0, T);  // (T, D)
    x = b.add(b.add(x, tt, "add_token_type"), pos, "add_position");
    h = b.dropout(layer_norm(b, x, D));
  }
  Tensor inv_sqrt;
  {
    GraphBuilder::Scope s0(b, "bert");
    GraphBuilder::Scope s(b, "encoder");
    inv_sqrt = b.constant("inv_sqrt_dh", {});
  }
  for (int64_t l = 0; l < L; ++l) {
    GraphBuilder::Scope s0(b, "bert");
    GraphBuilder::Scope s1(b, "encoder");
    GraphBuilder::Scope sl(b, "layer_" + std::to_string(l));
    Tensor x2 = b.reshape(h, {B * T, D});
    Tensor attn;
    {
      GraphBuilder::Scope sa(b, "attention");
      Tensor q = b.transpose(b.reshape(dense(b, x2, D, D, "query"), {B, T, N, Dh}), {0, 2, 1, 3});
      Tensor k = b.transpose(b.reshape(dense(b, x2, D, D, "key"), {B, T, N, Dh}), {0, 2, 1, 3});
      Tensor v = b.transpose(b.reshape(dense(b, x2, D, D, "value"), {B, T, N, Dh}), {0, 2, 1, 3});
      Tensor score = b.mul(b.batch_matmul(q, k, false, true, "scores"), inv_sqrt, "scale");
      Tensor prob = b.dropout(b.softmax(b.add(score, mask_in, "add_mask")));  // (B, N, T, T)
      Tensor ctx = b.batch_matmul(prob, v, false, false, "context");          // (B, N, T, Dh)
      ctx = b.reshape(b.transpose(ctx, {0, 2, 1, 3}), {B * T, D});
      GraphBuilder::Scope so(b, "output");
      attn = layer_norm(b, b.add(b.dropout(dense(b, ctx, D, D, "dense")), x2, "residual"), D);
    }
    Tensor inter;
    {
      GraphBuilder::Scope si(b, "intermediate");
      inter = b.gelu(dense(b, attn, D, Di, "dense"));  // (B*T, Di)
    }
    {
      GraphBuilder::Scope so(b, "output");
      Tensor y = b.dropout(dense(b, inter, Di, D, "dense"));
      h = b.reshape(layer_norm(b, b.add(y, attn, "residual"), D), {B, T, D});
    }
  }
  Tensor pooled;
  {
    GraphBuilder::Scope s0(b, "bert");
    GraphBuilder::Scope s(b, "pooler");
    Tensor first = b.reshape(b.slice(h, 1, 0, 1, "first_token"), {B, D});
    pooled = b.tanh(dense(b, first, D, D, "dense"));
  }
  Tensor mlm_loss, nsp_loss;
  {
    GraphBuilder::Scope s0(b, "cls");
    GraphBuilder::Scope s(b, "predictions");
    // Gather the masked positions of the flattened sequence output: (B*P, D).
    Tensor x = b.embedding_lookup(b.reshape(h, {B * T, D}), mlm_pos, "gather_positions");
    {
      GraphBuilder::Scope st(b, "transform");
      x = layer_norm(b, b.gelu(dense(b, x, D, D, "dense")), D);
    }
    Tensor logits = b.bias_add(b.matmul(x, word_table, false, true, "logits"),
                               b.variable("output_bias", {V}));  // (B*P, V), tied embedding
    mlm_loss = b.reduce_mean(b.softmax_cross_entropy(logits, mlm_labels), {0}, "loss");
  }
  {
    GraphBuilder::Scope s0(b, "cls");
    GraphBuilder::Scope s(b, "seq_relationship");
    Tensor w = b.variable("output_weights", {D, 2});
    Tensor logits = b.bias_add(b.matmul(pooled, w), b.variable("output_bias", {2}));
    nsp_loss = b.reduce_mean(b.softmax_cross_entropy(logits, nsp_labels), {0}, "loss");
  }
  b.set_loss(b.add(mlm_loss, nsp_loss, "total_loss"));
  return b.build_training_graph();
}

namespace {

void validate_bert(const GenOptions& o) {
  if (o.layers < 1 || o.layers > 64)
    throw InputError("bert: option 'layers' must be in 1..64, got " + std::to_string(o.layers));
  if (o.batch < 1) throw InputError("bert: option 'batch' must be >= 1");
  if (o.seq_len < 1 || o.seq_len > 512)
    throw InputError("bert: option 'seq_len' must be in 1..512 (position table), got " +
                     std::to_string(o.seq_len));
  if (o.heads < 1 || o.hidden < 1 || o.hidden % o.heads != 0)
    throw InputError("bert: option 'hidden' (" + std::to_string(o.hidden) +
                     ") must be a positive multiple of 'heads' (" + std::to_string(o.heads) + ")");
  if (o.vocab < 2) throw InputError("bert: option 'vocab' must be >= 2");
}

}  // namespace

ModelSpec bert_spec() {
  ModelSpec m;
  m.name = "bert";
  m.summary =
      "BERT pre-training (default base: 12 layers, D 768, 12 heads, vocab 30522, T 128, B 32)";
  m.options = {"layers", "batch", "seq_len", "hidden", "heads", "vocab"};
  m.defaults.layers = 12;
  m.defaults.batch = 32;
  m.defaults.seq_len = 128;
  m.defaults.hidden = 768;
  m.defaults.heads = 12;
  m.defaults.vocab = 30522;
  m.validate = validate_bert;
  m.generate = make_bert;
  return m;
}

}  // namespace gdp::datasets
