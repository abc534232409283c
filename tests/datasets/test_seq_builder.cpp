// Tests of the GraphBuilder's derived training structure: gradient ops consume the saved
// forward tensors, fan-out is accumulated with AddN, one colocated ApplyAdam per variable.
#include <catch2/catch.hpp>

#include "core/error.h"
#include "datasets/builder.h"

using namespace gdp;
using namespace gdp::datasets;

namespace {

int32_t count_type(const Graph& g, const std::string& type, Phase ph) {
  int32_t n = 0;
  for (const Op& o : g.ops()) n += o.type == type && o.phase == ph;
  return n;
}

std::vector<std::string> input_names(const Graph& g, int32_t op) {
  std::vector<std::string> r;
  for (int64_t e = g.in_ptr()[op]; e < g.in_ptr()[op + 1]; ++e)
    r.push_back(g.op(g.edges()[g.in_edge_ids()[e]].src).name);
  return r;
}

}  // namespace

TEST_CASE("datasets/builder matmul: dW consumes x and the upstream gradient", "[datasets]") {
  GraphBuilder b("mm");
  Tensor x = b.input("x", {8, 16});
  Tensor w;
  {
    GraphBuilder::Scope s(b, "dense");
    w = b.variable("w", {16, 4});
  }
  Tensor y = b.matmul(x, w);
  b.set_loss(b.reduce_mean(y, {0, 1}));
  Graph g = b.build_training_graph();
  // Forward: x, w (VariableV2 + read), MatMul, Mean = 5; backward: Fill, Tile, MatMul (dW only,
  // x needs no gradient) = 3; update: ApplyAdam = 1.
  auto s = g.summary();
  CHECK(s.ops_forward == 5);
  CHECK(s.ops_backward == 3);
  CHECK(s.ops_update == 1);
  CHECK(s.flops_forward == Approx(2.0 * 8 * 16 * 4 + 8 * 4));
  int32_t dw = g.find_op("gradients/MatMul_grad/MatMul");
  REQUIRE(dw >= 0);
  CHECK(g.op(dw).phase == Phase::backward);
  CHECK(g.op(dw).flops == Approx(2.0 * 8 * 16 * 4));
  CHECK(g.op(dw).outputs[0].shape == std::vector<int64_t>{16, 4});
  auto ins = input_names(g, dw);
  CHECK(std::find(ins.begin(), ins.end(), "x") != ins.end());
  int32_t var = g.find_op("dense/w");
  int32_t read = g.find_op("dense/w/read");
  int32_t upd = g.find_op("dense/w/Adam/ApplyAdam");
  REQUIRE(var >= 0);
  REQUIRE(read >= 0);
  REQUIRE(upd >= 0);
  CHECK(g.op(var).param_bytes == 16 * 4 * 4);          // the weights
  CHECK(g.op(var).optimizer_bytes == 2 * 16 * 4 * 4);  // Adam's m and v
  CHECK(g.op(var).parameters() == 16 * 4);
  CHECK(g.summary().parameters == b.parameter_count());
  // An inference graph has no optimizer: the variable holds its weights only.
  Graph inf = b.build_forward_graph();
  CHECK(inf.op(inf.find_op("dense/w")).param_bytes == 16 * 4 * 4);
  CHECK(inf.summary().optimizer_bytes == 0);
  CHECK(g.op(var).colocation == "dense/w");
  CHECK(g.op(read).colocation == "dense/w");
  CHECK(g.op(upd).colocation == "dense/w");
  CHECK(g.op(upd).phase == Phase::update);
  CHECK(input_names(g, upd) == std::vector<std::string>{"gradients/MatMul_grad/MatMul"});
  CHECK(g.op(dw).scope == "");
  CHECK(g.op(var).scope == "dense");
}

TEST_CASE("datasets/builder accumulates fan-out gradients with AddN", "[datasets]") {
  GraphBuilder b("fanout");
  Tensor x = b.input("x", {4, 8});
  Tensor w = b.variable("w", {8, 8});
  Tensor h = b.matmul(x, w, false, false, "first");
  Tensor y = b.matmul(h, w, false, false, "second");  // w used twice, h feeds one op
  Tensor z = b.add(b.tanh(y), b.sigmoid(y));          // y used twice
  b.set_loss(b.reduce_sum(z, {0, 1}));
  Graph g = b.build_training_graph();
  CHECK(count_type(g, "AddN", Phase::backward) == 2);  // dW and dy
  int32_t upd = g.find_op("w/Adam/ApplyAdam");
  REQUIRE(upd >= 0);
  auto ins = input_names(g, upd);
  REQUIRE(ins.size() == 1);
  int32_t acc = g.find_op(ins[0]);
  CHECK(g.op(acc).type == "AddN");
  CHECK(g.in_ptr()[acc + 1] - g.in_ptr()[acc] == 2);
  // Backward flops of the matmuls: dh (second), dW (second), dW (first) = 3 x 2*4*8*8.
  double mm = 0;
  for (const Op& o : g.ops())
    if (o.phase == Phase::backward && o.type == "MatMul") mm += o.flops;
  CHECK(mm == Approx(3 * 2.0 * 4 * 8 * 8));
}

TEST_CASE("datasets/builder saved activations feed the gradient ops", "[datasets]") {
  GraphBuilder b("act");
  Tensor x = b.input("x", {2, 3});
  Tensor w = b.variable("w", {3, 5});
  Tensor s = b.sigmoid(b.matmul(x, w), "sig");
  b.set_loss(b.reduce_mean(s, {0, 1}));
  Graph g = b.build_training_graph();
  int32_t sg = g.find_op("gradients/sig_grad/SigmoidGrad");
  REQUIRE(sg >= 0);
  auto ins = input_names(g, sg);
  CHECK(std::find(ins.begin(), ins.end(), "sig") != ins.end());  // reads the forward output
}

TEST_CASE("datasets/builder rejects bad shapes and a missing loss", "[datasets]") {
  GraphBuilder b("bad");
  Tensor x = b.input("x", {2, 3});
  Tensor w = b.variable("w", {4, 5});
  CHECK_THROWS_AS(b.matmul(x, w), InputError);
  CHECK_THROWS_AS(b.reshape(x, {7}), InputError);
  CHECK_THROWS_AS(b.add(x, w), InputError);
  CHECK_THROWS_AS(b.build_training_graph(), InputError);
  b.set_loss(b.reduce_sum(x, {0, 1}));  // does not depend on a variable
  CHECK_THROWS_AS(b.build_training_graph(), InputError);
}

TEST_CASE("datasets/builder formula helpers", "[datasets]") {
  CHECK(matmul_flops(3, 4, 5) == 120.0);
  CHECK(conv2d_flops(2, 7, 7, 3, 3, 16, 32) == Approx(2.0 * 2 * 7 * 7 * 3 * 3 * 16 * 32));
  CHECK(conv_out_size(299, 3, 2, 1, Padding::valid) == 149);
  CHECK(conv_out_size(35, 3, 2, 1, Padding::same) == 18);
  CHECK(conv_out_size(10, 3, 1, 4, Padding::valid) == 2);
  GraphBuilder b("conv");
  Tensor x = b.input("x", {2, 9, 9, 3});
  Tensor k = b.variable("k", {3, 3, 3, 8});
  Tensor y = b.conv2d(x, k, 2, 2, Padding::valid);
  CHECK(b.shape(y) == std::vector<int64_t>{2, 4, 4, 8});
  b.set_loss(b.reduce_mean(y, {0, 1, 2, 3}));
  Graph g = b.build_training_graph();
  int32_t f = g.find_op("gradients/Conv2D_grad/Conv2DBackpropFilter");
  REQUIRE(f >= 0);
  CHECK(g.op(f).flops == Approx(conv2d_flops(2, 4, 4, 3, 3, 3, 8)));
  CHECK(g.find_op("gradients/Conv2D_grad/Conv2DBackpropInput") < 0);  // x needs no gradient
}
