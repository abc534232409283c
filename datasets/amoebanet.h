// AmoebaNet-A (Real et al. 2018) training graph at TensorFlow-op granularity: the evolved
// normal and reduction cells stacked as in NASNet's ImageNet network (stem, 2 stem reduction
// cells, 3 stacks of N normal cells separated by reduction cells).
#pragma once

#include <cstdint>

#include "datasets/builder.h"
#include "datasets/registry.h"

namespace gdp::datasets {

struct AmoebaNetOptions {
  int64_t batch = 16;
  int64_t image_size = 331;  // input height = width (>= 64)
  int64_t normal_cells = 6;  // N: normal cells per stack (3 stacks)
  int64_t filters = 190;     // F: filters of the first stack (x2 after each reduction)
  int64_t classes = 1000;
};

void record_amoebanet(GraphBuilder& b, const AmoebaNetOptions& o);
Graph make_amoebanet(const AmoebaNetOptions& o);

}  // namespace gdp::datasets
