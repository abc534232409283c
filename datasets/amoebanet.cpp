// AmoebaNet-A generator. The cell genotype is the published one (TensorFlow TPU models,
// amoeba_net model_specs): ten operations combined pairwise into five new hidden states; the
// cell output concatenates the hidden states the spec marks as unused.
#include "datasets/amoebanet.h"

#include <string>
#include <vector>

#include "core/error.h"
#include "datasets/cnn_layers.h"

namespace gdp::datasets {

namespace {

enum class CellOp { sep3, sep5, sep7, avg3, max3, none, conv1x7_7x1 };

struct CellSpec {
  std::vector<CellOp> ops;  // 10: ops[2i], ops[2i+1] combine into hidden state 2 + i
  std::vector<int> inputs;  // 10: hidden state each op reads
  std::vector<int> used;    // 7: 1 = not part of the concatenated output
};

const CellSpec& normal_cell() {
  using C = CellOp;
  static const CellSpec s{
      {C::avg3, C::max3, C::sep3, C::none, C::none, C::avg3, C::sep3, C::sep5, C::avg3, C::sep3},
      {0, 0, 1, 1, 0, 1, 0, 2, 5, 0},
      {1, 0, 1, 0, 0, 1, 0}};
  return s;
}

const CellSpec& reduction_cell() {
  using C = CellOp;
  static const CellSpec s{{C::sep3, C::avg3, C::max3, C::sep7, C::max3, C::max3, C::sep3,
                           C::conv1x7_7x1, C::avg3, C::sep7},
                          {1, 0, 0, 2, 1, 0, 4, 0, 1, 0},
                          {1, 1, 1, 0, 0, 0, 0}};
  return s;
}

const char* op_name(CellOp op) {
  switch (op) {
    case CellOp::sep3:
      return "separable_3x3_2";
    case CellOp::sep5:
      return "separable_5x5_2";
    case CellOp::sep7:
      return "separable_7x7_2";
    case CellOp::avg3:
      return "avg_pool_3x3";
    case CellOp::max3:
      return "max_pool_3x3";
    case CellOp::none:
      return "none";
    case CellOp::conv1x7_7x1:
      return "1x7_7x1";
  }
  return "?";
}

// relu -> conv 1x1 -> bn (channel adjustment).
Tensor relu_conv_bn(GraphBuilder& b, Tensor x, int64_t filters, int64_t stride,
                    const std::string& name) {
  return conv_bn(b, b.relu(x, name + "_relu"), 1, 1, filters, stride, Padding::same, false, name);
}

// NASNet's factorized reduction: two 1x1 convs on pixel-shifted stride-2 paths, concatenated.
Tensor factorized_reduction(GraphBuilder& b, Tensor x, int64_t filters) {
  GraphBuilder::Scope s(b, "factorized_reduction");
  Tensor r = b.relu(x);
  Tensor p1 = b.avg_pool(r, 1, 2, Padding::valid, "path1_pool");
  p1 = b.conv2d(p1, b.variable("path1_conv", {1, 1, b.shape(r)[3], filters / 2}), 1, 1,
                Padding::same, 1, 1, "path1_conv");
  // Path 2 shifts the image by one pixel (TensorFlow: Pad bottom-right, then drop the first
  // row and column): one shape-preserving "Pad" op here, its gradient a Slice.
  const auto sr = b.shape(r);
  OpSpec shift;
  shift.type = "Pad";
  shift.name = "path2_shift";
  shift.inputs = {r};
  shift.outputs = {TensorSpec{sr, b.dtype_of(r), 0}};
  shift.grads = {GradSpec{"Slice", 0, {}, {}, 0, 0}};
  Tensor p2 = b.avg_pool(b.record(std::move(shift)), 1, 2, Padding::valid, "path2_pool");
  p2 = b.conv2d(p2, b.variable("path2_conv", {1, 1, sr[3], filters - filters / 2}), 1, 1,
                Padding::same, 1, 1, "path2_conv");
  return batch_norm_vars(b, b.concat({p1, p2}, 3, "concat"));
}

Tensor apply_op(GraphBuilder& b, Tensor x, CellOp op, int64_t filters, int64_t stride) {
  switch (op) {
    case CellOp::sep3:
    case CellOp::sep5:
    case CellOp::sep7: {
      int64_t k = op == CellOp::sep3 ? 3 : op == CellOp::sep5 ? 5 : 7;
      Tensor y = b.relu(x, "relu_1");
      y = separable_conv_bn(b, y, k, filters, stride, "separable_1");
      y = b.relu(y, "relu_2");
      return separable_conv_bn(b, y, k, filters, 1, "separable_2");
    }
    case CellOp::avg3:
    case CellOp::max3: {
      Tensor y = op == CellOp::avg3 ? b.avg_pool(x, 3, stride, Padding::same, "avg_pool")
                                    : b.max_pool(x, 3, stride, Padding::same, "max_pool");
      if (b.shape(y)[3] != filters)
        y = conv_bn(b, y, 1, 1, filters, 1, Padding::same, false, "proj");
      return y;
    }
    case CellOp::none:
      if (stride == 1 && b.shape(x)[3] == filters) return x;
      return relu_conv_bn(b, x, filters, stride, "proj");
    case CellOp::conv1x7_7x1: {
      Tensor y =
          conv_bn(b, b.relu(x, "relu_1"), 1, 7, filters, stride, Padding::same, false, "conv_1x7");
      return conv_bn(b, b.relu(y, "relu_2"), 7, 1, filters, 1, Padding::same, false, "conv_7x1");
    }
  }
  return x;
}

// One cell: prev (h_{i-2}) and cur (h_{i-1}) -> concatenated output (N, H', W', k*filters).
Tensor cell(GraphBuilder& b, const CellSpec& spec, Tensor prev, Tensor cur, int64_t filters,
            bool reduction, const std::string& name) {
  GraphBuilder::Scope s(b, name);
  // Bring h_{i-2} to cur's spatial size and `filters` channels; h_{i-1} to `filters`.
  Tensor p = prev;
  if (b.shape(prev)[1] != b.shape(cur)[1])
    p = factorized_reduction(b, prev, filters);
  else if (b.shape(prev)[3] != filters)
    p = relu_conv_bn(b, prev, filters, 1, "prev_1x1");
  Tensor c = relu_conv_bn(b, cur, filters, 1, "beginning_1x1");
  std::vector<Tensor> states{p, c};
  for (int i = 0; i < 5; ++i) {
    GraphBuilder::Scope cs(b, "comb_iter_" + std::to_string(i));
    Tensor h[2];
    for (int side = 0; side < 2; ++side) {
      int idx = spec.inputs[2 * i + side];
      CellOp op = spec.ops[2 * i + side];
      int64_t stride = (reduction && idx < 2) ? 2 : 1;
      GraphBuilder::Scope ss(b, std::string(side == 0 ? "left_" : "right_") + op_name(op));
      h[side] = apply_op(b, states[idx], op, filters, stride);
    }
    states.push_back(b.add(h[0], h[1], "combine"));
  }
  std::vector<Tensor> outs;
  for (size_t i = 0; i < states.size(); ++i) {
    if (spec.used[i]) continue;
    Tensor t = states[i];
    // An unused input state of a reduction cell still has the input resolution.
    if (b.shape(t)[1] != b.shape(states.back())[1]) t = factorized_reduction(b, t, filters);
    outs.push_back(t);
  }
  return b.concat(outs, 3, "cell_output");
}

void validate_amoebanet(const GenOptions& o) {
  if (o.batch < 1) throw InputError("amoebanet: option 'batch' must be >= 1");
  if (o.image_size < 64)
    throw InputError("amoebanet: option 'image_size' must be >= 64 (got " +
                     std::to_string(o.image_size) + ")");
  if (o.layers < 1)
    throw InputError("amoebanet: option 'layers' (normal cells per stack) must be >= 1");
  if (o.hidden < 8) throw InputError("amoebanet: option 'hidden' (filters F) must be >= 8");
}

}  // namespace

void record_amoebanet(GraphBuilder& b, const AmoebaNetOptions& o) {
  GraphBuilder::Scope top(b, "amoebanet");
  Tensor x = b.input("images", {o.batch, o.image_size, o.image_size, 3});
  // ImageNet stem: conv 3x3/2 (3 x 32 filters), then two reduction cells at F/4 and F/2.
  Tensor net = conv_bn(b, x, 3, 3, 96, 2, Padding::valid, false, "stem_conv");
  Tensor prev = net;  // NASNet feeds the stem conv as both inputs of the first stem cell
  Tensor cur = net;
  int64_t filters = o.filters / 4;
  for (int i = 0; i < 2; ++i) {
    Tensor out =
        cell(b, reduction_cell(), prev, cur, filters, true, "stem_cell_" + std::to_string(i));
    prev = cur;
    cur = out;
    filters *= 2;
  }
  filters = o.filters;
  int cell_id = 0;
  for (int stack = 0; stack < 3; ++stack) {
    if (stack > 0) {
      filters *= 2;
      Tensor out = cell(b, reduction_cell(), prev, cur, filters, true,
                        "reduction_cell_" + std::to_string(stack - 1));
      prev = cur;
      cur = out;
    }
    for (int64_t n = 0; n < o.normal_cells; ++n) {
      Tensor out =
          cell(b, normal_cell(), prev, cur, filters, false, "cell_" + std::to_string(cell_id++));
      prev = cur;
      cur = out;
    }
  }
  classifier_head(b, b.relu(cur, "final_relu"), o.classes, true);
}

Graph make_amoebanet(const AmoebaNetOptions& o) {
  GraphBuilder b("amoebanet_n" + std::to_string(o.normal_cells) + "_f" + std::to_string(o.filters));
  record_amoebanet(b, o);
  return b.build_training_graph();
}

ModelSpec amoebanet_spec() {
  ModelSpec m;
  m.name = "amoebanet";
  m.summary =
      "AmoebaNet-A CNN, normal + reduction cells (layers = N cells/stack, hidden = F; "
      "default N 6, F 190, B 16, 331x331)";
  m.options = {"batch", "image_size", "layers", "hidden"};
  m.defaults.batch = 16;
  m.defaults.image_size = 331;
  m.defaults.layers = 6;
  m.defaults.hidden = 190;
  m.validate = validate_amoebanet;
  m.generate = [](const GenOptions& g) {
    AmoebaNetOptions o;
    o.batch = g.batch;
    o.image_size = g.image_size;
    o.normal_cells = g.layers;
    o.filters = g.hidden;
    return make_amoebanet(o);
  };
  return m;
}

}  // namespace gdp::datasets
