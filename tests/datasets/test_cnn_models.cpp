// Checks of the CNN generators against published figures (parameters, forward multiply-adds)
// and of the training structure (backward ~2x forward, updates colocated with variables).
#include <catch2/catch.hpp>

#include <cstdio>

#include "core/graph.h"
#include "core/io.h"
#include "datasets/builder.h"
#include "datasets/cnn_layers.h"
#include "datasets/inception_v3.h"
#include "datasets/resnet50.h"

using namespace gdp;
using namespace gdp::datasets;

TEST_CASE("datasets/inception_v3 matches published params and multiply-adds", "[datasets]") {
  GraphBuilder b("inception");
  InceptionV3Options o;
  o.batch = 2;
  record_inception_v3(b, o);
  ForwardFigures f = forward_figures(b, o.batch);
  std::printf("inception_v3: %lld params, %.3f GMACs/example\n",
              static_cast<long long>(f.parameters), f.macs_per_example / 1e9);
  CHECK(f.parameters == Approx(23.8e6).epsilon(0.10));
  CHECK(f.macs_per_example == Approx(5.7e9).epsilon(0.10));
}

TEST_CASE("datasets/resnet50 matches published params and multiply-adds", "[datasets]") {
  GraphBuilder b("resnet");
  ResNet50Options o;
  o.batch = 2;
  record_resnet50(b, o);
  ForwardFigures f = forward_figures(b, o.batch);
  std::printf("resnet50: %lld params, %.3f GMACs/example\n",
              static_cast<long long>(f.parameters), f.macs_per_example / 1e9);
  CHECK(f.parameters == Approx(25.6e6).epsilon(0.10));
  CHECK(f.macs_per_example == Approx(4.1e9).epsilon(0.10));
}
