// Transformer-XL generator. Per layer: the cached memory (B, M, D) of the previous segment
// (no gradient) is concatenated with the segment (B, T, D); queries come from the segment,
// keys/values from [memory, segment]; scores = (q + u) k^T + relshift((q + v) r^T) with r the
// projected relative position encodings; then softmax, dropout, output projection, residual,
// LayerNorm, and a ReLU FFN. Defaults (enwik8 base model): docs/workloads.md.
#include "datasets/transformer_xl.h"

#include <string>

#include "core/error.h"
#include "datasets/builder.h"

namespace gdp::datasets {

namespace {

Tensor placeholder(GraphBuilder& b, const std::string& name, std::vector<int64_t> shape) {
  OpSpec s;
  s.type = "Placeholder";
  s.name = name;
  s.outputs = {TensorSpec{std::move(shape), b.dtype(), 0}};
  return b.record(std::move(s));
}

// Shifts each score row left by its query position (pad, reshape, slice in the reference
// code): a pure data movement op on (B, N, T, K).
Tensor rel_shift(GraphBuilder& b, Tensor x) {
  OpSpec s;
  s.type = "RelShift";
  s.name = "rel_shift";
  s.inputs = {x};
  s.outputs = {TensorSpec{b.shape(x), b.dtype_of(x), 0}};
  s.grads = {GradSpec{"RelShiftGrad", 0, {}, {}, 0, 0}};
  return b.record(std::move(s));
}

Tensor dense(GraphBuilder& b, Tensor x, int64_t in, int64_t out, bool bias,
             const std::string& name) {
  GraphBuilder::Scope s(b, name);
  Tensor w = b.variable("kernel", {in, out});
  Tensor y = b.matmul(x, w);
  if (bias) y = b.bias_add(y, b.variable("bias", {out}));
  return y;
}

}  // namespace

Graph make_transformer_xl(const GenOptions& o) {
  const int64_t L = o.layers, B = o.batch, T = o.seq_len, M = o.seq_len, D = o.hidden, N = o.heads,
                V = o.vocab;
  const int64_t Dh = D / N, K = M + T, Di = 4 * D;
  GraphBuilder b("transformer_xl_" + std::to_string(L) + "layer");
  Tensor ids, labels;
  {
    GraphBuilder::Scope s(b, "input");
    ids = b.input("ids", {B, T}, DType::i32);
    labels = b.input("labels", {B * T}, DType::i32);
  }
  Tensor h, pos;
  {
    GraphBuilder::Scope s(b, "embedding");
    Tensor table = b.variable("word_embedding", {V, D});
    Tensor scale = b.constant("sqrt_d", {});
    h = b.dropout(b.mul(b.embedding_lookup(table, ids), scale, "scale"));  // (B, T, D)
    pos = b.dropout(b.constant("pos_emb", {K, D}), "pos_dropout");         // sinusoid (K, D)
  }
  Tensor mask, inv_sqrt;
  {
    GraphBuilder::Scope s(b, "attn_mask");
    mask = b.constant("mask", {T, K});  // causal over [memory, segment]: 0 or -inf
    inv_sqrt = b.constant("inv_sqrt_dh", {});
  }
  for (int64_t l = 0; l < L; ++l) {
    GraphBuilder::Scope sl(b, "layer_" + std::to_string(l));
    Tensor mem = placeholder(b, "memory", {B, M, D});  // previous segment, stop-gradient
    Tensor cat = b.concat({mem, h}, 1, "cat_memory");  // (B, K, D)
    Tensor attn_out;
    {
      GraphBuilder::Scope sa(b, "rel_attn");
      Tensor q = dense(b, b.reshape(h, {B * T, D}), D, N * Dh, false, "q");          // (B*T, N*Dh)
      Tensor kv = dense(b, b.reshape(cat, {B * K, D}), D, 2 * N * Dh, false, "kv");  // (B*K, 2N*Dh)
      std::vector<Tensor> kvs = b.split(kv, 1, 2);
      Tensor r = dense(b, pos, D, N * Dh, false, "r");  // (K, N*Dh)
      Tensor u = b.variable("r_w_bias", {N, 1, Dh});
      Tensor vb = b.variable("r_r_bias", {N, 1, Dh});
      Tensor q4 = b.transpose(b.reshape(q, {B, T, N, Dh}), {0, 2, 1, 3});       // (B, N, T, Dh)
      Tensor k4 = b.transpose(b.reshape(kvs[0], {B, K, N, Dh}), {0, 2, 1, 3});  // (B, N, K, Dh)
      Tensor v4 = b.transpose(b.reshape(kvs[1], {B, K, N, Dh}), {0, 2, 1, 3});  // (B, N, K, Dh)
      Tensor ac =
          b.batch_matmul(b.add(q4, u, "add_r_w_bias"), k4, false, true, "AC");  // (B, N, T, K)
      // (q + v) r^T with r shared over the batch: queries laid out (N, B*T, Dh).
      Tensor qn = b.reshape(b.transpose(b.reshape(q, {B * T, N, Dh}), {1, 0, 2}), {N, B * T, Dh});
      Tensor rn = b.transpose(b.reshape(r, {K, N, Dh}), {1, 0, 2});  // (N, K, Dh)
      Tensor bd =
          b.batch_matmul(b.add(qn, vb, "add_r_r_bias"), rn, false, true, "BD");   // (N, B*T, K)
      bd = rel_shift(b, b.transpose(b.reshape(bd, {N, B, T, K}), {1, 0, 2, 3}));  // (B, N, T, K)
      Tensor score = b.add(b.mul(b.add(ac, bd, "AC_plus_BD"), inv_sqrt, "scale"), mask, "mask");
      Tensor prob = b.dropout(b.softmax(score), "attn_dropout");        // (B, N, T, K)
      Tensor vec = b.batch_matmul(prob, v4, false, false, "attn_vec");  // (B, N, T, Dh)
      vec = b.reshape(b.transpose(vec, {0, 2, 1, 3}), {B * T, N * Dh});
      Tensor out = b.dropout(dense(b, vec, N * Dh, D, false, "o"));
      attn_out = b.layer_norm(b.add(b.reshape(out, {B, T, D}), h, "residual"),
                              b.variable("ln_gamma", {D}), b.variable("ln_beta", {D}));
    }
    {
      GraphBuilder::Scope sf(b, "ff");
      Tensor x = b.reshape(attn_out, {B * T, D});
      Tensor y = b.dropout(b.relu(dense(b, x, D, Di, true, "layer_1")));
      y = b.dropout(dense(b, y, Di, D, true, "layer_2"));
      h = b.layer_norm(b.add(b.reshape(y, {B, T, D}), attn_out, "residual"),
                       b.variable("ln_gamma", {D}), b.variable("ln_beta", {D}));
    }
  }
  {
    GraphBuilder::Scope s(b, "softmax");
    Tensor logits = dense(b, b.reshape(h, {B * T, D}), D, V, true, "logits");  // (B*T, V)
    Tensor loss = b.softmax_cross_entropy(logits, labels);
    b.set_loss(b.reduce_mean(loss, {0}, "loss"));
  }
  return b.build_training_graph();
}

namespace {

void validate_txl(const GenOptions& o) {
  if (o.layers < 1 || o.layers > 64)
    throw InputError("transformer_xl: option 'layers' must be in 1..64 (paper: 2, 4 or 8), got " +
                     std::to_string(o.layers));
  if (o.batch < 1) throw InputError("transformer_xl: option 'batch' must be >= 1");
  if (o.seq_len < 1) throw InputError("transformer_xl: option 'seq_len' must be >= 1");
  if (o.heads < 1 || o.hidden < 1 || o.hidden % o.heads != 0)
    throw InputError("transformer_xl: option 'hidden' (" + std::to_string(o.hidden) +
                     ") must be a positive multiple of 'heads' (" + std::to_string(o.heads) + ")");
  if (o.vocab < 2) throw InputError("transformer_xl: option 'vocab' must be >= 2");
}

}  // namespace

ModelSpec transformer_xl_spec() {
  ModelSpec m;
  m.name = "transformer_xl";
  m.summary =
      "Transformer-XL segment with memory (layers 2|4|8; default 4, D 512, 8 heads, T=M=512, B 22)";
  m.options = {"layers", "batch", "seq_len", "hidden", "heads", "vocab"};
  m.defaults.layers = 4;
  m.defaults.batch = 22;
  m.defaults.seq_len = 512;
  m.defaults.hidden = 512;
  m.defaults.heads = 8;
  m.defaults.vocab = 204;
  m.validate = validate_txl;
  m.generate = make_transformer_xl;
  return m;
}

}  // namespace gdp::datasets
