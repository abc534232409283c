// ResNet-50 (He et al. 2016; v1.5 layout: stride in the 3x3 conv, as torchvision and the
// MLPerf reference) training graph at TensorFlow-op granularity.
#pragma once

#include <cstdint>

#include "datasets/builder.h"
#include "datasets/registry.h"

namespace gdp::datasets {

struct ResNet50Options {
  int64_t batch = 64;
  int64_t image_size = 224;  // input height = width (>= 32)
  int64_t classes = 1000;
};

void record_resnet50(GraphBuilder& b, const ResNet50Options& o);
Graph make_resnet50(const ResNet50Options& o);

}  // namespace gdp::datasets
