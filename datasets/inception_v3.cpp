// Inception-v3 generator: stem, 3 x Inception-A (35x35), reduction, 4 x Inception-C with
// factorized 7x7 (17x17), reduction, 2 x Inception-E (8x8), pooling and the classifier.
// Every convolution is conv (no bias) + batch norm + ReLU, as in TF-slim.
#include "datasets/inception_v3.h"

#include <string>
#include <vector>

#include "core/error.h"
#include "datasets/cnn_layers.h"

namespace gdp::datasets {

namespace {

using P = Padding;

Tensor cbr(GraphBuilder& b, Tensor x, int64_t kh, int64_t kw, int64_t c, const std::string& n,
           int64_t stride = 1, P p = P::same) {
  return conv_bn(b, x, kh, kw, c, stride, p, true, n);
}

// Mixed_5b/5c/5d: 1x1 | 1x1-5x5 | 1x1-3x3-3x3 | avgpool-1x1.
Tensor inception_a(GraphBuilder& b, Tensor x, int64_t pool_features, const std::string& name) {
  GraphBuilder::Scope s(b, name);
  Tensor b0, b1, b2, b3;
  {
    GraphBuilder::Scope t(b, "Branch_0");
    b0 = cbr(b, x, 1, 1, 64, "Conv2d_0a_1x1");
  }
  {
    GraphBuilder::Scope t(b, "Branch_1");
    b1 = cbr(b, x, 1, 1, 48, "Conv2d_0a_1x1");
    b1 = cbr(b, b1, 5, 5, 64, "Conv2d_0b_5x5");
  }
  {
    GraphBuilder::Scope t(b, "Branch_2");
    b2 = cbr(b, x, 1, 1, 64, "Conv2d_0a_1x1");
    b2 = cbr(b, b2, 3, 3, 96, "Conv2d_0b_3x3");
    b2 = cbr(b, b2, 3, 3, 96, "Conv2d_0c_3x3");
  }
  {
    GraphBuilder::Scope t(b, "Branch_3");
    b3 = b.avg_pool(x, 3, 1, P::same, "AvgPool_0a_3x3");
    b3 = cbr(b, b3, 1, 1, pool_features, "Conv2d_0b_1x1");
  }
  return b.concat({b0, b1, b2, b3}, 3, "concat");
}

// Mixed_6a: 3x3/2 | 1x1-3x3-3x3/2 | maxpool/2.
Tensor reduction_a(GraphBuilder& b, Tensor x) {
  GraphBuilder::Scope s(b, "Mixed_6a");
  Tensor b0, b1, b2;
  {
    GraphBuilder::Scope t(b, "Branch_0");
    b0 = cbr(b, x, 3, 3, 384, "Conv2d_1a_1x1", 2, P::valid);
  }
  {
    GraphBuilder::Scope t(b, "Branch_1");
    b1 = cbr(b, x, 1, 1, 64, "Conv2d_0a_1x1");
    b1 = cbr(b, b1, 3, 3, 96, "Conv2d_0b_3x3");
    b1 = cbr(b, b1, 3, 3, 96, "Conv2d_1a_1x1", 2, P::valid);
  }
  {
    GraphBuilder::Scope t(b, "Branch_2");
    b2 = b.max_pool(x, 3, 2, P::valid, "MaxPool_1a_3x3");
  }
  return b.concat({b0, b1, b2}, 3, "concat");
}

// Mixed_6b..6e: 1x1 | 1x1-1x7-7x1 | 1x1-7x1-1x7-7x1-1x7 | avgpool-1x1; c7 = inner width.
Tensor inception_c(GraphBuilder& b, Tensor x, int64_t c7, const std::string& name) {
  GraphBuilder::Scope s(b, name);
  Tensor b0, b1, b2, b3;
  {
    GraphBuilder::Scope t(b, "Branch_0");
    b0 = cbr(b, x, 1, 1, 192, "Conv2d_0a_1x1");
  }
  {
    GraphBuilder::Scope t(b, "Branch_1");
    b1 = cbr(b, x, 1, 1, c7, "Conv2d_0a_1x1");
    b1 = cbr(b, b1, 1, 7, c7, "Conv2d_0b_1x7");
    b1 = cbr(b, b1, 7, 1, 192, "Conv2d_0c_7x1");
  }
  {
    GraphBuilder::Scope t(b, "Branch_2");
    b2 = cbr(b, x, 1, 1, c7, "Conv2d_0a_1x1");
    b2 = cbr(b, b2, 7, 1, c7, "Conv2d_0b_7x1");
    b2 = cbr(b, b2, 1, 7, c7, "Conv2d_0c_1x7");
    b2 = cbr(b, b2, 7, 1, c7, "Conv2d_0d_7x1");
    b2 = cbr(b, b2, 1, 7, 192, "Conv2d_0e_1x7");
  }
  {
    GraphBuilder::Scope t(b, "Branch_3");
    b3 = b.avg_pool(x, 3, 1, P::same, "AvgPool_0a_3x3");
    b3 = cbr(b, b3, 1, 1, 192, "Conv2d_0b_1x1");
  }
  return b.concat({b0, b1, b2, b3}, 3, "concat");
}

// Mixed_7a: 1x1-3x3/2 | 1x1-1x7-7x1-3x3/2 | maxpool/2.
Tensor reduction_b(GraphBuilder& b, Tensor x) {
  GraphBuilder::Scope s(b, "Mixed_7a");
  Tensor b0, b1, b2;
  {
    GraphBuilder::Scope t(b, "Branch_0");
    b0 = cbr(b, x, 1, 1, 192, "Conv2d_0a_1x1");
    b0 = cbr(b, b0, 3, 3, 320, "Conv2d_1a_3x3", 2, P::valid);
  }
  {
    GraphBuilder::Scope t(b, "Branch_1");
    b1 = cbr(b, x, 1, 1, 192, "Conv2d_0a_1x1");
    b1 = cbr(b, b1, 1, 7, 192, "Conv2d_0b_1x7");
    b1 = cbr(b, b1, 7, 1, 192, "Conv2d_0c_7x1");
    b1 = cbr(b, b1, 3, 3, 192, "Conv2d_1a_3x3", 2, P::valid);
  }
  {
    GraphBuilder::Scope t(b, "Branch_2");
    b2 = b.max_pool(x, 3, 2, P::valid, "MaxPool_1a_3x3");
  }
  return b.concat({b0, b1, b2}, 3, "concat");
}

// Mixed_7b/7c: 1x1 | 1x1-(1x3|3x1) | 1x1-3x3-(1x3|3x1) | avgpool-1x1.
Tensor inception_e(GraphBuilder& b, Tensor x, const std::string& name) {
  GraphBuilder::Scope s(b, name);
  Tensor b0, b1, b2, b3;
  {
    GraphBuilder::Scope t(b, "Branch_0");
    b0 = cbr(b, x, 1, 1, 320, "Conv2d_0a_1x1");
  }
  {
    GraphBuilder::Scope t(b, "Branch_1");
    Tensor y = cbr(b, x, 1, 1, 384, "Conv2d_0a_1x1");
    b1 = b.concat({cbr(b, y, 1, 3, 384, "Conv2d_0b_1x3"), cbr(b, y, 3, 1, 384, "Conv2d_0b_3x1")}, 3,
                  "concat");
  }
  {
    GraphBuilder::Scope t(b, "Branch_2");
    Tensor y = cbr(b, x, 1, 1, 448, "Conv2d_0a_1x1");
    y = cbr(b, y, 3, 3, 384, "Conv2d_0b_3x3");
    b2 = b.concat({cbr(b, y, 1, 3, 384, "Conv2d_0c_1x3"), cbr(b, y, 3, 1, 384, "Conv2d_0d_3x1")}, 3,
                  "concat");
  }
  {
    GraphBuilder::Scope t(b, "Branch_3");
    b3 = b.avg_pool(x, 3, 1, P::same, "AvgPool_0a_3x3");
    b3 = cbr(b, b3, 1, 1, 192, "Conv2d_0b_1x1");
  }
  return b.concat({b0, b1, b2, b3}, 3, "concat");
}

void validate_inception(const GenOptions& o) {
  if (o.batch < 1) throw InputError("inception_v3: option 'batch' must be >= 1");
  if (o.image_size < 75)
    throw InputError("inception_v3: option 'image_size' must be >= 75 (got " +
                     std::to_string(o.image_size) + ")");
}

}  // namespace

void record_inception_v3(GraphBuilder& b, const InceptionV3Options& o) {
  GraphBuilder::Scope top(b, "InceptionV3");
  Tensor x = b.input("images", {o.batch, o.image_size, o.image_size, 3});
  x = cbr(b, x, 3, 3, 32, "Conv2d_1a_3x3", 2, P::valid);   // 149x149x32
  x = cbr(b, x, 3, 3, 32, "Conv2d_2a_3x3", 1, P::valid);   // 147x147x32
  x = cbr(b, x, 3, 3, 64, "Conv2d_2b_3x3");                // 147x147x64
  x = b.max_pool(x, 3, 2, P::valid, "MaxPool_3a_3x3");     // 73x73x64
  x = cbr(b, x, 1, 1, 80, "Conv2d_3b_1x1", 1, P::valid);   // 73x73x80
  x = cbr(b, x, 3, 3, 192, "Conv2d_4a_3x3", 1, P::valid);  // 71x71x192
  x = b.max_pool(x, 3, 2, P::valid, "MaxPool_5a_3x3");     // 35x35x192
  x = inception_a(b, x, 32, "Mixed_5b");                   // 35x35x256
  x = inception_a(b, x, 64, "Mixed_5c");                   // 35x35x288
  x = inception_a(b, x, 64, "Mixed_5d");                   // 35x35x288
  x = reduction_a(b, x);                                   // 17x17x768
  x = inception_c(b, x, 128, "Mixed_6b");
  x = inception_c(b, x, 160, "Mixed_6c");
  x = inception_c(b, x, 160, "Mixed_6d");
  x = inception_c(b, x, 192, "Mixed_6e");  // 17x17x768
  x = reduction_b(b, x);                   // 8x8x1280
  x = inception_e(b, x, "Mixed_7b");       // 8x8x2048
  x = inception_e(b, x, "Mixed_7c");       // 8x8x2048
  classifier_head(b, x, o.classes, true);
}

Graph make_inception_v3(const InceptionV3Options& o) {
  GraphBuilder b("inception_v3_b" + std::to_string(o.batch));
  record_inception_v3(b, o);
  return b.build_training_graph();
}

ModelSpec inception_v3_spec() {
  ModelSpec m;
  m.name = "inception_v3";
  m.summary = "Inception-v3 CNN, TF-slim layers, no aux head (batch 32|64; default B 32, 299x299)";
  m.options = {"batch", "image_size"};
  m.defaults.batch = 32;
  m.defaults.image_size = 299;
  m.validate = validate_inception;
  m.generate = [](const GenOptions& g) {
    InceptionV3Options o;
    o.batch = g.batch;
    o.image_size = g.image_size;
    return make_inception_v3(o);
  };
  return m;
}

}  // namespace gdp::datasets
