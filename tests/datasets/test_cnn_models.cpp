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
  std::printf("resnet50: %lld params, %.3f GMACs/example\n", static_cast<long long>(f.parameters),
              f.macs_per_example / 1e9);
  CHECK(f.parameters == Approx(25.6e6).epsilon(0.10));
  CHECK(f.macs_per_example == Approx(4.1e9).epsilon(0.10));
}

TEST_CASE("datasets/cnn layer shapes and formula flops", "[datasets]") {
  InceptionV3Options io;
  const Graph inc = make_inception_v3(io);
  // Stem conv: 3x3/2 VALID on 299x299x3 -> 149x149x32; 2*N*Ho*Wo*Kh*Kw*Cin*Cout.
  const Op& c1 = inc.op(inc.find_op("InceptionV3/Conv2d_1a_3x3/Conv2D"));
  CHECK(c1.outputs[0].shape == std::vector<int64_t>{32, 149, 149, 32});
  CHECK(c1.flops == Approx(2.0 * 32 * 149 * 149 * 3 * 3 * 3 * 32));
  const Op& m7 = inc.op(inc.find_op("InceptionV3/Mixed_7c/concat"));
  CHECK(m7.outputs[0].shape == std::vector<int64_t>{32, 8, 8, 2048});
  CHECK(inc.op(inc.find_op("InceptionV3/Mixed_6a/concat")).outputs[0].shape ==
        std::vector<int64_t>{32, 17, 17, 768});
  // Its gradient ops exist and read the forward input (activation kept for backward).
  const int32_t bf =
      inc.find_op("gradients/InceptionV3/Conv2d_2a_3x3/Conv2D_grad/Conv2DBackpropFilter");
  const int32_t relu = inc.find_op("InceptionV3/Conv2d_1a_3x3/Relu");
  REQUIRE(bf >= 0);
  REQUIRE(relu >= 0);
  bool reads_activation = false;
  for (int64_t k = inc.in_ptr()[bf]; k < inc.in_ptr()[bf + 1]; ++k)
    reads_activation = reads_activation || inc.edges()[inc.in_edge_ids()[k]].src == relu;
  CHECK(reads_activation);

  ResNet50Options ro;
  const Graph res = make_resnet50(ro);
  CHECK(res.op(res.find_op("resnet50/block4/unit_3/add")).outputs[0].shape ==
        std::vector<int64_t>{64, 7, 7, 2048});
  CHECK(res.op(res.find_op("resnet50/block2/unit_1/conv2/Conv2D")).outputs[0].shape ==
        std::vector<int64_t>{64, 28, 28, 128});  // v1.5: the stride is in the 3x3
  CHECK(res.find_op("resnet50/block1/unit_1/shortcut/Conv2D") >= 0);
  CHECK(res.find_op("resnet50/block1/unit_2/shortcut/Conv2D") < 0);
}
