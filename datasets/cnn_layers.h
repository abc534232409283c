// Building blocks shared by the CNN generators (Inception-v3, ResNet-50, AmoebaNet) and the
// random families: conv + batch norm (+ ReLU) as TF-slim writes it, separable convs, a dense
// layer and the classifier loss. Shapes are NHWC, filters (Kh, Kw, Cin, Cout).
#pragma once

#include <cstdint>
#include <string>

#include "datasets/builder.h"

namespace gdp::datasets {

// In a new scope `name`: weights (Kh, Kw, Cin, Cout), Conv2D (no bias), FusedBatchNorm with
// gamma/beta (C), then Relu when `relu`. x (N, H, W, Cin) -> (N, Ho, Wo, Cout).
Tensor conv_bn(GraphBuilder& b, Tensor x, int64_t kh, int64_t kw, int64_t cout, int64_t stride,
               Padding p, bool relu, const std::string& name);
// Same as conv_bn with the conv followed by a bias add instead of batch norm (no ReLU).
Tensor conv_bias(GraphBuilder& b, Tensor x, int64_t kh, int64_t kw, int64_t cout, int64_t stride,
                 Padding p, int64_t dilation_w, const std::string& name);
// In scope `name`: depthwise (k, k, C, 1) with stride, then pointwise (1, 1, C, cout), then
// batch norm. x (N, H, W, C) -> (N, Ho, Wo, cout).
Tensor separable_conv_bn(GraphBuilder& b, Tensor x, int64_t k, int64_t cout, int64_t stride,
                         const std::string& name);
// Batch norm with fresh gamma/beta variables (C) in the current scope.
Tensor batch_norm_vars(GraphBuilder& b, Tensor x, const std::string& name = "BatchNorm");
// In scope `name`: x (M, K) -> x W + b, W (K, out), b (out).
Tensor dense(GraphBuilder& b, Tensor x, int64_t out, const std::string& name);
// features (N, H, W, C) -> global average pool (N, C), dense to `classes` logits,
// sparse softmax cross-entropy against int32 labels from the input pipeline, mean over the
// batch; sets the loss. Scope "logits" / "loss".
void classifier_head(GraphBuilder& b, Tensor features, int64_t classes, bool dropout);
// Loss on already-computed logits (N, classes): labels input, cross-entropy, mean, set_loss.
void softmax_loss(GraphBuilder& b, Tensor logits);

// Parameter elements and forward flops per example of what a builder recorded (the figures
// the published tables report).
struct ForwardFigures {
  int64_t parameters = 0;
  double flops_per_example = 0;  // multiply-add = 2 flops
  double macs_per_example = 0;   // flops_per_example / 2
};
ForwardFigures forward_figures(const GraphBuilder& b, int64_t batch);

}  // namespace gdp::datasets
