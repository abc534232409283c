// Inception-v3 (Szegedy et al. 2016) training graph at TensorFlow-op granularity, layer for
// layer as TF-slim's inception_v3 (no auxiliary head). Defaults and op counts in
// docs/workloads.md ("CNN and random families").
#pragma once

#include <cstdint>

#include "datasets/builder.h"
#include "datasets/registry.h"

namespace gdp::datasets {

struct InceptionV3Options {
  int64_t batch = 32;        // 32 or 64 in the paper's setting
  int64_t image_size = 299;  // input height = width (>= 75)
  int64_t classes = 1000;
};

// Records the forward model and its loss into `b`.
void record_inception_v3(GraphBuilder& b, const InceptionV3Options& o);
Graph make_inception_v3(const InceptionV3Options& o);

}  // namespace gdp::datasets
