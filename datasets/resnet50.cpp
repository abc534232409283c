// ResNet-50 generator: 7x7/2 stem and max pool, four stages of 3, 4, 6, 3 bottleneck units
// (1x1, 3x3, 1x1 with 4x expansion, projection shortcut on each stage's first unit), global
// pooling and the classifier. Conv + batch norm (+ ReLU) everywhere.
#include "datasets/resnet50.h"

#include <string>

#include "core/error.h"
#include "datasets/cnn_layers.h"

namespace gdp::datasets {

namespace {

Tensor bottleneck(GraphBuilder& b, Tensor x, int64_t width, int64_t stride, bool project,
                  const std::string& name) {
  GraphBuilder::Scope s(b, name);
  Tensor shortcut = x;
  if (project) shortcut = conv_bn(b, x, 1, 1, 4 * width, stride, Padding::same, false, "shortcut");
  Tensor y = conv_bn(b, x, 1, 1, width, 1, Padding::same, true, "conv1");
  y = conv_bn(b, y, 3, 3, width, stride, Padding::same, true, "conv2");
  y = conv_bn(b, y, 1, 1, 4 * width, 1, Padding::same, false, "conv3");
  return b.relu(b.add(y, shortcut, "add"), "Relu");
}

void validate_resnet50(const GenOptions& o) {
  if (o.batch < 1) throw InputError("resnet50: option 'batch' must be >= 1");
  if (o.image_size < 32)
    throw InputError("resnet50: option 'image_size' must be >= 32 (got " +
                     std::to_string(o.image_size) + ")");
}

}  // namespace

void record_resnet50(GraphBuilder& b, const ResNet50Options& o) {
  GraphBuilder::Scope top(b, "resnet50");
  Tensor x = b.input("images", {o.batch, o.image_size, o.image_size, 3});
  x = conv_bn(b, x, 7, 7, 64, 2, Padding::same, true, "conv1");  // 112x112x64
  x = b.max_pool(x, 3, 2, Padding::same, "pool1");               // 56x56x64
  const int64_t units[4] = {3, 4, 6, 3};
  const int64_t widths[4] = {64, 128, 256, 512};
  for (int st = 0; st < 4; ++st) {
    GraphBuilder::Scope s(b, "block" + std::to_string(st + 1));
    for (int64_t u = 0; u < units[st]; ++u) {
      int64_t stride = (u == 0 && st > 0) ? 2 : 1;
      x = bottleneck(b, x, widths[st], stride, u == 0, "unit_" + std::to_string(u + 1));
    }
  }
  classifier_head(b, x, o.classes, false);  // 7x7x2048 -> 1000
}

Graph make_resnet50(const ResNet50Options& o) {
  GraphBuilder b("resnet50_b" + std::to_string(o.batch));
  record_resnet50(b, o);
  return b.build_training_graph();
}

ModelSpec resnet50_spec() {
  ModelSpec m;
  m.name = "resnet50";
  m.summary = "ResNet-50 v1.5 CNN (default B 64, 224x224)";
  m.options = {"batch", "image_size"};
  m.defaults.batch = 64;
  m.defaults.image_size = 224;
  m.validate = validate_resnet50;
  m.generate = [](const GenOptions& g) {
    ResNet50Options o;
    o.batch = g.batch;
    o.image_size = g.image_size;
    return make_resnet50(o);
  };
  return m;
}

}  // namespace gdp::datasets
