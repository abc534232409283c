// The CNN building blocks (see cnn_layers.h): every block is a handful of builder calls, so
// flops, bytes and the backward structure come from the builder's formulas.
#include "datasets/cnn_layers.h"

namespace gdp::datasets {

Tensor batch_norm_vars(GraphBuilder& b, Tensor x, const std::string& name) {
  const int64_t c = b.shape(x).back();
  GraphBuilder::Scope s(b, name);
  Tensor gamma = b.variable("gamma", {c});
  Tensor beta = b.variable("beta", {c});
  return b.batch_norm(x, gamma, beta, "FusedBatchNorm");
}

Tensor conv_bn(GraphBuilder& b, Tensor x, int64_t kh, int64_t kw, int64_t cout, int64_t stride,
               Padding p, bool relu, const std::string& name) {
  GraphBuilder::Scope s(b, name);
  const int64_t cin = b.shape(x).back();
  Tensor w = b.variable("weights", {kh, kw, cin, cout});
  Tensor y = b.conv2d(x, w, stride, stride, p);
  y = batch_norm_vars(b, y);
  return relu ? b.relu(y) : y;
}

Tensor conv_bias(GraphBuilder& b, Tensor x, int64_t kh, int64_t kw, int64_t cout, int64_t stride,
                 Padding p, int64_t dilation_w, const std::string& name) {
  GraphBuilder::Scope s(b, name);
  const int64_t cin = b.shape(x).back();
  Tensor w = b.variable("weights", {kh, kw, cin, cout});
  Tensor bias = b.variable("biases", {cout});
  return b.bias_add(b.conv2d(x, w, stride, stride, p, 1, dilation_w), bias);
}

Tensor separable_conv_bn(GraphBuilder& b, Tensor x, int64_t k, int64_t cout, int64_t stride,
                         const std::string& name) {
  GraphBuilder::Scope s(b, name);
  const int64_t c = b.shape(x).back();
  Tensor dw = b.variable("depthwise_weights", {k, k, c, 1});
  Tensor pw = b.variable("pointwise_weights", {1, 1, c, cout});
  Tensor y = b.depthwise_conv2d(x, dw, stride, Padding::same);
  y = b.conv2d(y, pw, 1, 1, Padding::same);
  return batch_norm_vars(b, y);
}

Tensor dense(GraphBuilder& b, Tensor x, int64_t out, const std::string& name) {
  GraphBuilder::Scope s(b, name);
  const int64_t k = b.shape(x).back();
  Tensor w = b.variable("weights", {k, out});
  Tensor bias = b.variable("biases", {out});
  return b.bias_add(b.matmul(x, w), bias);
}

void softmax_loss(GraphBuilder& b, Tensor logits) {
  GraphBuilder::Scope s(b, "loss");
  const int64_t n = b.shape(logits)[0];
  Tensor labels = b.input("labels", {n}, DType::i32);
  Tensor per_example = b.softmax_cross_entropy(logits, labels);
  b.set_loss(b.reduce_mean(per_example, {0}, "Mean"));
}

void classifier_head(GraphBuilder& b, Tensor features, int64_t classes, bool dropout) {
  Tensor logits;
  {
    GraphBuilder::Scope s(b, "logits");
    Tensor pooled = b.reduce_mean(features, {1, 2}, "global_avg_pool");  // (N, C)
    if (dropout) pooled = b.dropout(pooled);
    logits = dense(b, pooled, classes, "fc");
  }
  softmax_loss(b, logits);
}

ForwardFigures forward_figures(const GraphBuilder& b, int64_t batch) {
  ForwardFigures f;
  f.parameters = b.parameter_count();
  f.flops_per_example = b.forward_flops() / static_cast<double>(batch);
  f.macs_per_example = f.flops_per_example / 2;
  return f;
}

}  // namespace gdp::datasets
