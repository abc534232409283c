// Random graph families (see random_families.h). A graph is a stem, a sequence of "units"
// (a layer of a layered DAG, a series-parallel segment, a repeated block, a NAS cell) and a
// loss head; the number of units, then a short chain of element-wise ops, is searched so that
// the training graph (forward + backward + updates) has the requested op count.
#include "datasets/random_families.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.h"
#include "datasets/cnn_layers.h"

namespace gdp::datasets {

namespace {

constexpr const char* kFamilyNames[] = {"layered", "series_parallel", "block_chain", "nas_cell"};

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// Up to this size the unit count is searched exactly (cheap); above, a forward-op budget.
constexpr int64_t kExactSearchMaxOps = 10000;

// Tensor sizes of one graph. Vision tensors are (batch, hw, hw, ch); sequence tensors are
// (batch * seq, width). Sizes are drawn from real layers, then shrunk so that the forward
// activations and the parameters (x3 for Adam) of a graph of `target_ops` ops stay within
// a few GiB (a 100,000-op graph gets small tensors, as large real graphs have).
struct Domain {
  bool vision = true;
  int64_t batch = 32, hw = 28, ch = 64, ch_max = 512, min_hw = 4;
  int64_t seq = 64, width = 512, width_max = 1024, vocab = 8000;
  int64_t classes = 1000;
  int transitions_left = 3;
};

Domain choose_domain(Rng& r, bool vision, int64_t target_ops, bool cifar) {
  Domain d;
  d.vision = vision;
  const double fwd_tensors = 0.45 * static_cast<double>(target_ops);
  const double weighted_ops = std::max(1.0, static_cast<double>(target_ops) / 8.0);
  // Budgets drawn per graph (compute-heavy and launch-bound graphs both occur): the sum of
  // all forward outputs, whose simulated peak on one device is several times lower (outputs
  // are freed after their last backward consumer), and the resident parameters.
  const double act_budget = (4 + 12 * r.uniform()) * kGiB;
  const double param_budget = (1.5 + 3 * r.uniform()) * kGiB;
  if (vision) {
    d.batch = r.pick(std::vector<int64_t>{16, 32, 64, 128});
    d.hw = cifar ? 32 : r.pick(std::vector<int64_t>{56, 28, 14});
    d.ch = cifar ? r.pick(std::vector<int64_t>{20, 24, 32, 36, 48})
                 : r.pick(std::vector<int64_t>{32, 64, 96, 128, 256});
    d.classes = r.pick(std::vector<int64_t>{10, 100, 1000});
    d.ch_max = 1024;
    while (d.ch_max > 16 && weighted_ops * 9.0 * d.ch_max * d.ch_max * 12.0 > param_budget)
      d.ch_max /= 2;
    d.ch = std::min(d.ch, d.ch_max);
    auto act = [&] { return fwd_tensors * 4.0 * d.batch * d.hw * d.hw * d.ch; };
    while (act() > act_budget) {  // halve a random dimension that can still shrink
      std::vector<int64_t*> dims;
      if (d.batch > 4) dims.push_back(&d.batch);
      if (d.hw > 8) dims.push_back(&d.hw);
      if (d.ch > 16) dims.push_back(&d.ch);
      if (dims.empty()) dims.push_back(&d.batch);
      if (d.batch == 1 && dims.size() == 1 && dims[0] == &d.batch) break;
      *r.pick(dims) /= 2;
    }
    d.min_hw = std::min<int64_t>(4, d.hw);
    d.transitions_left = cifar ? 2 : 3;
  } else {
    d.batch = r.pick(std::vector<int64_t>{8, 16, 32, 64});
    d.seq = r.pick(std::vector<int64_t>{16, 32, 64, 128});
    d.width = r.pick(std::vector<int64_t>{256, 512, 768, 1024});
    d.vocab = r.pick(std::vector<int64_t>{1000, 8000, 32000});
    d.width_max = 2048;
    while (d.width_max > 32 && weighted_ops * 1.0 * d.width_max * d.width_max * 12.0 > param_budget)
      d.width_max /= 2;
    d.width = std::min(d.width, d.width_max);
    auto act = [&] { return fwd_tensors * 4.0 * d.batch * d.seq * d.width; };
    while (act() > act_budget) {  // halve a random dimension that can still shrink
      std::vector<int64_t*> dims;
      if (d.batch > 2) dims.push_back(&d.batch);
      if (d.seq > 8) dims.push_back(&d.seq);
      if (d.width > 64) dims.push_back(&d.width);
      if (dims.empty()) dims.push_back(&d.batch);
      if (d.batch == 1 && dims.size() == 1 && dims[0] == &d.batch) break;
      *r.pick(dims) /= 2;
    }
    while (d.vocab > 1000 && 4.0 * d.batch * d.seq * d.vocab > 0.5 * kGiB) d.vocab /= 2;
    d.transitions_left = 3;
  }
  return d;
}

// Records random but well-formed layers. Every "layer" keeps the shape of its input, so
// tensors of one stage always merge; transitions change the shape between stages.
// When a family stops adding units: after `units` units, or once the builder holds
// `forward_ops` forward ops (whichever is set, >= 0).
struct Stop {
  int64_t units = -1;
  int64_t forward_ops = -1;
};

class Net {
 public:
  Net(GraphBuilder& b, Rng& r, Domain d, Stop stop) : b_(b), r_(&r), d_(d), stop_(stop) {}

  // Whether unit `u` (0-based) is to be recorded.
  bool more(int64_t u) const {
    if (stop_.units >= 0) return u < stop_.units;
    return b_.num_forward_ops() < stop_.forward_ops;
  }

  GraphBuilder& b() { return b_; }
  Rng& rng() { return *r_; }
  void set_rng(Rng* r) { r_ = r; }
  const Domain& domain() const { return d_; }

  std::string fresh(const char* base) { return std::string(base) + "_" + std::to_string(n_++); }

  Tensor stem() {
    GraphBuilder::Scope s(b_, "stem");
    if (d_.vision) {
      Tensor x = b_.input("images", {d_.batch, d_.hw, d_.hw, 3});
      return conv_bn(b_, x, 3, 3, d_.ch, 1, Padding::same, true, "conv");
    }
    Tensor ids = b_.input("ids", {d_.batch, d_.seq}, DType::i32);
    Tensor table = b_.variable("embedding", {d_.vocab, d_.width});
    Tensor e = b_.embedding_lookup(table, ids);                      // (B, T, D)
    return b_.reshape(e, {d_.batch * d_.seq, d_.width}, "flatten");  // (B*T, D)
  }

  // One random shape-preserving layer on x.
  Tensor layer(Tensor x) {
    GraphBuilder::Scope s(b_, fresh("layer"));
    return d_.vision ? vision_layer(x) : sequence_layer(x);
  }

  Tensor merge(std::vector<Tensor> xs) {
    if (xs.size() == 1) return xs[0];
    GraphBuilder::Scope s(b_, fresh("merge"));
    size_t kind =
        xs.size() == 2 ? r_->weighted({0.55, 0.1, 0.2, 0.15}) : (r_->chance(0.65) ? 3 : 2);
    if (kind == 0) return b_.add(xs[0], xs[1]);
    if (kind == 1) return b_.mul(xs[0], xs[1]);
    if (kind == 3) return b_.add_n(xs);
    const int64_t c = b_.shape(xs[0]).back();
    if (d_.vision)
      return conv_bn(b_, b_.concat(xs, 3), 1, 1, c, 1, Padding::same, false, "project");
    return dense(b_, b_.concat(xs, 1), c, "project");
  }

  bool can_transition() const {
    if (d_.transitions_left <= 0) return false;
    return !d_.vision || d_.hw / 2 >= d_.min_hw;
  }

  // A stage change made by the caller (NAS reduction cells).
  void mark_transition(int64_t hw) {
    --d_.transitions_left;
    d_.hw = hw;
  }

  // Vision: conv 3x3 / 2 to twice the channels; sequence: a dense layer to a new width.
  Tensor transition(Tensor x) {
    GraphBuilder::Scope s(b_, fresh("transition"));
    --d_.transitions_left;
    if (d_.vision) {
      const int64_t c = std::min(2 * b_.shape(x).back(), d_.ch_max);
      Tensor y = conv_bn(b_, x, 3, 3, c, 2, Padding::same, true, "reduce");
      d_.hw = b_.shape(y)[1];
      return y;
    }
    const int64_t w = b_.shape(x).back();
    const int64_t nw =
        r_->chance(0.5) ? std::min(2 * w, d_.width_max) : std::max<int64_t>(32, w / 2);
    return b_.relu(dense(b_, x, nw, "dense"));
  }

  // n element-wise ops (each adds one forward and one gradient op).
  Tensor filler(Tensor x, int64_t n) {
    if (n <= 0) return x;
    GraphBuilder::Scope s(b_, "postprocess");
    for (int64_t i = 0; i < n; ++i) {
      size_t k = r_->weighted({0.5, 0.25, 0.25});
      x = k == 0 ? b_.relu(x) : k == 1 ? b_.tanh(x) : b_.sigmoid(x);
    }
    return x;
  }

  void head(Tensor x) {
    if (d_.vision) {
      classifier_head(b_, x, d_.classes, r_->chance(0.5));
      return;
    }
    Tensor logits;
    {
      GraphBuilder::Scope s(b_, "logits");
      logits = dense(b_, x, d_.vocab, "softmax_projection");  // (B*T, V)
    }
    softmax_loss(b_, logits);
  }

  // ---- Shape-changing building blocks used by the block templates ----
  Tensor conv(Tensor x, int64_t k, int64_t c, bool relu, const char* name, int64_t stride = 1) {
    return conv_bn(b_, x, k, k, c, stride, Padding::same, relu, name);
  }

  // Single-head self-attention over (B, T, D) as TensorFlow lowers it: q, k, v projections,
  // scores by batched matmul, softmax, weighted sum, output projection.
  Tensor attention(Tensor x) {
    GraphBuilder::Scope s(b_, "attention");
    const int64_t w = b_.shape(x).back();
    auto heads = [&](const char* n) {
      return b_.reshape(dense(b_, x, w, n), {d_.batch, d_.seq, w}, std::string(n) + "_reshape");
    };
    Tensor q = heads("query"), k = heads("key"), v = heads("value");
    Tensor scores = b_.batch_matmul(q, k, false, true, "scores");  // (B, T, T)
    Tensor p = b_.softmax(scores);
    Tensor ctx = b_.batch_matmul(p, v, false, false, "context");  // (B, T, D)
    return dense(b_, b_.reshape(ctx, {d_.batch * d_.seq, w}, "merge_heads"), w, "output");
  }

  Tensor ffn(Tensor x, int64_t mult) {
    GraphBuilder::Scope s(b_, "ffn");
    const int64_t w = b_.shape(x).back();
    Tensor h = b_.gelu(dense(b_, x, mult * w, "intermediate"));
    return dense(b_, h, w, "output");
  }

 private:
  Tensor vision_layer(Tensor x) {
    const int64_t c = b_.shape(x).back();
    switch (r_->weighted({0.30, 0.08, 0.10, 0.07, 0.15, 0.07, 0.05, 0.08, 0.05, 0.05})) {
      case 0: {
        const int64_t k = r_->pick(std::vector<int64_t>{1, 3, 3, 5});
        return conv_bn(b_, x, k, k, c, 1, Padding::same, true, "conv_bn_relu");
      }
      case 1: {
        const int64_t k = r_->pick(std::vector<int64_t>{1, 3});
        return b_.conv2d(x, b_.variable("weights", {k, k, c, c}), 1, 1, Padding::same);
      }
      case 2:
        return separable_conv_bn(b_, b_.relu(x), r_->pick(std::vector<int64_t>{3, 5}), c, 1,
                                 "sep_conv");
      case 3:
        return batch_norm_vars(b_, x);
      case 4:
        return b_.relu(x);
      case 5:
        return r_->chance(0.5) ? b_.max_pool(x, 3, 1, Padding::same)
                               : b_.avg_pool(x, 3, 1, Padding::same);
      case 6:
        return r_->chance(0.5) ? b_.tanh(x) : b_.sigmoid(x);
      case 7: {
        const int64_t k = r_->pick(std::vector<int64_t>{1, 3});
        return conv_bias(b_, x, k, k, c, 1, Padding::same, 1, "conv_bias");
      }
      case 8: {  // squeeze-and-excitation gate
        const auto sx = b_.shape(x);
        Tensor g = b_.reduce_mean(x, {1, 2}, "squeeze");  // (N, C)
        g = b_.relu(dense(b_, g, std::max<int64_t>(4, c / 4), "reduce"));
        g = b_.sigmoid(dense(b_, g, c, "expand"));
        g = b_.reshape(g, {sx[0], 1, 1, c}, "gate_reshape");
        return b_.mul(x, g, "excite");
      }
      default:
        return b_.dropout(x);
    }
  }

  Tensor sequence_layer(Tensor x) {
    const int64_t w = b_.shape(x).back();
    switch (r_->weighted({0.22, 0.15, 0.12, 0.18, 0.08, 0.10, 0.04, 0.06, 0.05})) {
      case 0:
        return dense(b_, x, w, "dense");
      case 1: {
        Tensor y = dense(b_, x, w, "dense");
        return r_->chance(0.5) ? b_.relu(y) : r_->chance(0.5) ? b_.gelu(y) : b_.tanh(y);
      }
      case 2: {
        Tensor gamma = b_.variable("gamma", {w});
        Tensor beta = b_.variable("beta", {w});
        return b_.layer_norm(x, gamma, beta);
      }
      case 3: {
        size_t k = r_->weighted({0.35, 0.25, 0.2, 0.2});
        return k == 0 ? b_.relu(x) : k == 1 ? b_.gelu(x) : k == 2 ? b_.tanh(x) : b_.sigmoid(x);
      }
      case 4:
        return b_.dropout(x);
      case 5:
        return ffn(x, 4);
      case 6:
        return b_.softmax(x);
      case 7:
        return b_.mul(x, b_.sigmoid(dense(b_, x, w, "gate")), "glu");
      default:
        return attention(x);
    }
  }

  GraphBuilder& b_;
  Rng* r_;
  Domain d_;
  Stop stop_;
  int64_t n_ = 0;
};

// ---- Families: each records `units` units after the stem and returns the last tensor ----

// Layered DAG: layers of 1..W nodes; every node of a layer feeds the next layer, some also
// skip one layer; multi-input nodes merge (add, add_n, mul, concat + projection).
Tensor layered(Net& n, Tensor x) {
  Rng& r = n.rng();
  const int64_t max_width = r.uniform_int(2, 8);
  const int64_t stage_len = r.uniform_int(3, 12);
  const double skip_p = 0.1 + 0.3 * r.uniform();
  std::vector<Tensor> prev{x}, prev2;
  int64_t in_stage = 0;
  for (int64_t u = 0; n.more(u); ++u) {
    GraphBuilder::Scope s(n.b(), "unit_" + std::to_string(u));
    if (in_stage >= stage_len && n.can_transition()) {
      prev = {n.transition(n.merge(prev))};
      prev2.clear();
      in_stage = 0;
    }
    const int64_t w = r.uniform_int(1, max_width);
    std::vector<std::vector<Tensor>> ins(static_cast<size_t>(w));
    for (const Tensor& p : prev) ins[static_cast<size_t>(r.uniform_int(0, w - 1))].push_back(p);
    for (auto& in : ins) {
      if (in.empty()) in.push_back(r.pick(prev));
      if (!prev2.empty() && r.chance(skip_p)) in.push_back(r.pick(prev2));
    }
    std::vector<Tensor> next;
    for (auto& in : ins) next.push_back(n.layer(n.merge(in)));
    prev2 = prev;
    prev = next;
    ++in_stage;
  }
  return n.merge(prev);
}

// A series-parallel graph of about `size` layers: series or parallel composition, recursively.
Tensor sp_graph(Net& n, Tensor x, int64_t size) {
  Rng& r = n.rng();
  if (size <= 2) {
    for (int64_t i = 0; i < size; ++i) x = n.layer(x);
    return x;
  }
  if (r.chance(0.5)) {
    const int64_t a = r.uniform_int(1, size - 1);
    return sp_graph(n, sp_graph(n, x, a), size - a);
  }
  const int64_t k = r.uniform_int(2, std::min<int64_t>(4, size));
  std::vector<int64_t> parts(static_cast<size_t>(k), 1);
  for (int64_t i = k; i < size; ++i) ++parts[static_cast<size_t>(r.uniform_int(0, k - 1))];
  std::vector<Tensor> branches;
  for (int64_t p : parts) branches.push_back(sp_graph(n, x, p));
  return n.merge(branches);
}

Tensor series_parallel(Net& n, Tensor x, int64_t target_ops) {
  Rng& r = n.rng();
  const int64_t stage_len = r.uniform_int(2, 8);
  // Segments of up to 16 layers; small graphs get small segments so the target is reachable.
  const int64_t max_size =
      std::min<int64_t>(r.uniform_int(4, 16), std::max<int64_t>(3, target_ops / 40));
  for (int64_t u = 0; n.more(u); ++u) {
    GraphBuilder::Scope s(n.b(), "unit_" + std::to_string(u));
    if (u > 0 && u % stage_len == 0 && n.can_transition()) x = n.transition(x);
    x = sp_graph(n, x, r.uniform_int(3, max_size));
  }
  return x;
}

// Repeated blocks: one template per graph, repeated; stages change the shape now and then.
enum class Block { basic, bottleneck, inception, inverted, transformer, recurrent, random };

Tensor block_chain(Net& n, Tensor x, int64_t target_ops) {
  Rng& r = n.rng();
  GraphBuilder& b = n.b();
  const bool vision = n.domain().vision;
  // Graphs under 300 ops only take the small templates (a large block alone would overshoot).
  const bool small = target_ops < 300;
  const Block kind =
      vision
          ? (small ? r.pick(std::vector<Block>{Block::basic, Block::inverted, Block::random})
                   : r.pick(std::vector<Block>{Block::basic, Block::bottleneck, Block::inception,
                                               Block::inverted, Block::random}))
          : (small
                 ? r.pick(std::vector<Block>{Block::recurrent, Block::random})
                 : r.pick(std::vector<Block>{Block::transformer, Block::recurrent, Block::random}));
  const int64_t stage_len = r.uniform_int(2, 8);
  const uint64_t template_seed = r.next_u64();
  const int64_t template_size = small ? r.uniform_int(2, 4) : r.uniform_int(4, 12);
  Tensor shared_kernel, shared_bias;  // recurrent blocks share their weights (tied repeats)
  for (int64_t u = 0; n.more(u); ++u) {
    GraphBuilder::Scope s(b, "block_" + std::to_string(u));
    if (u > 0 && u % stage_len == 0 && kind != Block::recurrent && n.can_transition())
      x = n.transition(x);
    const int64_t c = b.shape(x).back();
    switch (kind) {
      case Block::basic: {
        Tensor y = n.conv(x, 3, c, true, "conv1");
        y = n.conv(y, 3, c, false, "conv2");
        x = b.relu(b.add(x, y, "residual"));
        break;
      }
      case Block::bottleneck: {
        const int64_t m = std::max<int64_t>(4, c / 4);
        Tensor y = n.conv(x, 1, m, true, "conv1");
        y = n.conv(y, 3, m, true, "conv2");
        y = n.conv(y, 1, c, false, "conv3");
        x = b.relu(b.add(x, y, "residual"));
        break;
      }
      case Block::inception: {
        const int64_t m = std::max<int64_t>(4, c / 4);
        Tensor b0 = n.conv(x, 1, m, true, "branch0_1x1");
        Tensor b1 = n.conv(n.conv(x, 1, m, true, "branch1_1x1"), 3, m, true, "branch1_3x3");
        Tensor b2 = n.conv(n.conv(n.conv(x, 1, m, true, "branch2_1x1"), 3, m, true, "branch2_3x3a"),
                           3, m, true, "branch2_3x3b");
        Tensor b3 = n.conv(b.avg_pool(x, 3, 1, Padding::same), 1, m, true, "branch3_1x1");
        Tensor y = n.conv(b.concat({b0, b1, b2, b3}, 3), 1, c, false, "project");
        x = b.relu(b.add(x, y, "residual"));
        break;
      }
      case Block::inverted: {
        Tensor y = n.conv(x, 1, 4 * c, true, "expand");
        y = b.relu(separable_conv_bn(b, y, 3, c, 1, "depthwise_project"));
        x = b.add(x, y, "residual");
        break;
      }
      case Block::transformer: {
        const int64_t w = c;
        Tensor h = b.layer_norm(x, b.variable("ln1_gamma", {w}), b.variable("ln1_beta", {w}));
        x = b.add(x, b.dropout(n.attention(h)), "residual1");
        h = b.layer_norm(x, b.variable("ln2_gamma", {w}), b.variable("ln2_beta", {w}));
        x = b.add(x, b.dropout(n.ffn(h, 4)), "residual2");
        break;
      }
      case Block::recurrent: {  // a GRU-like gated update with weights tied across repeats
        const int64_t w = c;
        if (!shared_kernel.valid()) {
          shared_kernel = b.variable("tied_kernel", {w, 3 * w});
          shared_bias = b.variable("tied_bias", {3 * w});
        }
        Tensor g = b.bias_add(b.matmul(x, shared_kernel), shared_bias);  // (M, 3W)
        std::vector<Tensor> parts = b.split(g, 1, 3);
        Tensor z = b.sigmoid(parts[0], "update_gate");
        Tensor h = b.tanh(b.mul(b.sigmoid(parts[1], "reset_gate"), parts[2], "reset"), "candidate");
        x = b.add(b.mul(z, x, "keep"), b.mul(b.sub(h, x, "delta"), z, "blend"), "new_state");
        break;
      }
      case Block::random: {  // the same random series-parallel block every time
        Rng tr(template_seed);
        Rng* outer = &n.rng();
        n.set_rng(&tr);
        Tensor y = sp_graph(n, x, template_size);
        n.set_rng(outer);
        x = b.add(x, y, "residual");
        break;
      }
    }
  }
  return x;
}

// ENAS-style cells: a normal and a reduction cell sampled once (B nodes, each adding two ops
// on two earlier states), stacked with reductions between stages; the cell output is the
// concatenation of the unused nodes, projected back by a 1x1 conv.
enum class NasOp { sep3, sep5, avg3, max3, identity };
struct NasCell {
  std::vector<int> in;     // 2 per node
  std::vector<NasOp> ops;  // 2 per node
};

NasCell sample_cell(Rng& r, int nodes) {
  NasCell c;
  for (int i = 0; i < nodes; ++i)
    for (int side = 0; side < 2; ++side) {
      c.in.push_back(static_cast<int>(r.uniform_int(0, i + 1)));
      c.ops.push_back(r.pick(
          std::vector<NasOp>{NasOp::sep3, NasOp::sep5, NasOp::avg3, NasOp::max3, NasOp::identity}));
    }
  return c;
}

Tensor nas_op(GraphBuilder& b, Tensor x, NasOp op, int64_t c, int64_t stride) {
  switch (op) {
    case NasOp::sep3:
    case NasOp::sep5:
      return separable_conv_bn(b, b.relu(x), op == NasOp::sep3 ? 3 : 5, c, stride, "sep_conv");
    case NasOp::avg3:
      return b.avg_pool(x, 3, stride, Padding::same);
    case NasOp::max3:
      return b.max_pool(x, 3, stride, Padding::same);
    case NasOp::identity:
      if (stride == 1) return x;
      return conv_bn(b, b.relu(x), 1, 1, c, stride, Padding::same, false, "reduce");
  }
  return x;
}

Tensor nas_cell_graph(Net& n, Tensor x, int64_t target_ops) {
  Rng& r = n.rng();
  GraphBuilder& b = n.b();
  const int nodes = target_ops < 200    ? 1
                    : target_ops < 400  ? 2
                    : target_ops < 1500 ? 3
                                        : static_cast<int>(r.uniform_int(4, 6));
  const NasCell normal = sample_cell(r, nodes), reduction = sample_cell(r, nodes);
  const int64_t per_stage = r.uniform_int(2, 6);
  Tensor prev = x, cur = x;
  int64_t since_reduction = 0;
  for (int64_t u = 0; n.more(u); ++u) {
    const bool reduce = since_reduction >= per_stage && n.can_transition();
    GraphBuilder::Scope s(b, "cell_" + std::to_string(u));
    int64_t c = b.shape(cur).back();
    if (reduce) c = std::min(2 * c, n.domain().ch_max);
    const NasCell& cell = reduce ? reduction : normal;
    // The two cell inputs are adjusted on first use only (an unused one builds nothing).
    std::vector<Tensor> states(2);
    auto input_state = [&](int idx) {
      if (states[static_cast<size_t>(idx)].valid()) return states[static_cast<size_t>(idx)];
      Tensor t;
      if (idx == 1) {
        t = conv_bn(b, b.relu(cur), 1, 1, c, 1, Padding::same, false, "input_1x1");
      } else if (b.shape(prev)[1] != b.shape(cur)[1]) {
        t = conv_bn(b, b.relu(prev), 1, 1, c, b.shape(prev)[1] / b.shape(cur)[1], Padding::same,
                    false, "prev_reduce");
      } else if (b.shape(prev)[3] != c) {
        t = conv_bn(b, b.relu(prev), 1, 1, c, 1, Padding::same, false, "prev_1x1");
      } else {
        t = prev;
      }
      states[static_cast<size_t>(idx)] = t;
      return t;
    };
    std::vector<bool> used(2 + cell.in.size() / 2, false);
    for (size_t i = 0; i < cell.in.size() / 2; ++i) {
      GraphBuilder::Scope ns(b, "node_" + std::to_string(i));
      Tensor h[2];
      for (int side = 0; side < 2; ++side) {
        const int idx = cell.in[2 * i + side];
        used[static_cast<size_t>(idx)] = true;
        const int64_t stride = (reduce && idx < 2) ? 2 : 1;
        Tensor in = idx < 2 ? input_state(idx) : states[static_cast<size_t>(idx)];
        GraphBuilder::Scope ss(b, side == 0 ? "left" : "right");
        h[side] = nas_op(b, in, cell.ops[2 * i + side], c, stride);
      }
      states.push_back(b.add(h[0], h[1], "combine"));
    }
    std::vector<Tensor> outs;
    for (size_t i = 2; i < states.size(); ++i)
      if (!used[i]) outs.push_back(states[i]);
    Tensor out = outs.size() == 1 ? outs[0] : b.concat(outs, 3, "concat");
    out = conv_bn(b, b.relu(out), 1, 1, c, 1, Padding::same, false, "final_combine");
    if (reduce) n.mark_transition(b.shape(out)[1]);
    prev = cur;
    cur = out;
    since_reduction = reduce ? 0 : since_reduction + 1;
  }
  return cur;
}

Graph build_random(const RandomGraphOptions& o, Stop stop, int64_t filler) {
  const int fi = static_cast<int>(o.family);
  Rng r(splitmix64(o.seed ^ (0x5851f42d4c957f2dull * static_cast<uint64_t>(fi + 1))));
  const bool vision = o.family == RandomFamily::nas_cell ? true : r.chance(0.5);
  Domain d = choose_domain(r, vision, o.ops, o.family == RandomFamily::nas_cell);
  GraphBuilder b(std::string("random_") + kFamilyNames[fi] + "_" + std::to_string(o.ops) + "_s" +
                 std::to_string(o.seed));
  Net n(b, r, d, stop);
  Tensor x = n.stem();
  switch (o.family) {
    case RandomFamily::layered:
      x = layered(n, x);
      break;
    case RandomFamily::series_parallel:
      x = series_parallel(n, x, o.ops);
      break;
    case RandomFamily::block_chain:
      x = block_chain(n, x, o.ops);
      break;
    case RandomFamily::nas_cell:
      x = nas_cell_graph(n, x, o.ops);
      break;
  }
  x = n.filler(x, filler);
  n.head(x);
  return b.build_training_graph();
}

}  // namespace

std::vector<std::string> random_family_names() {
  return std::vector<std::string>(std::begin(kFamilyNames), std::end(kFamilyNames));
}

const char* random_family_name(RandomFamily f) { return kFamilyNames[static_cast<int>(f)]; }

bool parse_random_family(const std::string& s, RandomFamily* out) {
  for (int i = 0; i < 4; ++i)
    if (s == kFamilyNames[i]) {
      *out = static_cast<RandomFamily>(i);
      return true;
    }
  return false;
}

Graph make_random_graph(const RandomGraphOptions& o) {
  if (o.ops < kRandomMinOps || o.ops > kRandomMaxOps)
    throw InputError("random graph: ops must be in [" + std::to_string(kRandomMinOps) + ", " +
                     std::to_string(kRandomMaxOps) + "], got " + std::to_string(o.ops));
  const int64_t target = o.ops;
  if (target > kExactSearchMaxOps) {
    // Large graphs: the ratio of graph ops to forward ops, measured on a pilot a tenth of the
    // size (a prefix of the same random stream), sets the forward op budget; one correction
    // with the full graph's own ratio when the first try misses by more than 3%.
    auto forward_ops = [](const Graph& g) { return std::max<int64_t>(1, g.summary().ops_forward); };
    Stop pilot;
    pilot.forward_ops = target / 21;
    Graph p = build_random(o, pilot, 0);
    double ratio = static_cast<double>(p.num_ops()) / static_cast<double>(forward_ops(p));
    Stop full;
    full.forward_ops = static_cast<int64_t>(static_cast<double>(target) / ratio);
    Graph g = build_random(o, full, 0);
    const double miss = static_cast<double>(g.num_ops() - target) / static_cast<double>(target);
    if (miss > 0.03 || miss < -0.03) {
      ratio = static_cast<double>(g.num_ops()) / static_cast<double>(forward_ops(g));
      full.forward_ops = static_cast<int64_t>(static_cast<double>(target) / ratio);
      g = build_random(o, full, 0);
    }
    return g;
  }
  // Small graphs: units are searched on the total op count (secant steps on the measured
  // rate per unit), then the remainder below the target is filled with element-wise ops
  // (2 graph ops each), which lands within a couple of ops.
  auto count = [&](int64_t units) {
    Stop st;
    st.units = units;
    return static_cast<int64_t>(build_random(o, st, 0).num_ops());
  };
  const int64_t n1 = count(1);
  int64_t units = 1, n = n1;
  if (n1 < target) {
    const int64_t probe = 4;
    const int64_t n4 = count(probe);
    double rate = std::max(1.0, static_cast<double>(n4 - n1) / (probe - 1));
    units = std::max<int64_t>(1, 1 + static_cast<int64_t>((target - n1) / rate));
    n = count(units);
    int64_t prev_units = units, prev_n = n;
    for (int iter = 0; iter < 12; ++iter) {
      if (n > target) {
        if (units == 1) break;
        units -= std::max<int64_t>(1, static_cast<int64_t>((n - target) / rate + 0.999));
        units = std::max<int64_t>(1, units);
      } else if (static_cast<double>(target - n) > 1.5 * rate) {
        units += std::max<int64_t>(1, static_cast<int64_t>((target - n) / rate) - 1);
      } else {
        break;
      }
      n = count(units);
      if (units != prev_units)
        rate = std::max(1.0, static_cast<double>(std::abs(n - prev_n)) /
                                 static_cast<double>(std::abs(units - prev_units)));
      prev_units = units;
      prev_n = n;
    }
    while (n > target && units > 1) n = count(--units);
  }
  // Tiny targets where even one unit overshoots: stem, element-wise chain and head only.
  if (n > target && units == 1 && count(0) <= target) {
    units = 0;
    n = count(0);
  }
  const int64_t filler = n < target ? (target - n) / 2 : 0;
  Stop st;
  st.units = units;
  return build_random(o, st, filler);
}

}  // namespace gdp::datasets
