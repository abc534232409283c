// Tests of the CSR helpers and the segment mean/max ops (GraphSAGE aggregation): hand-checked
// values, empty segments, and finite-difference gradchecks in double on odd sizes.
#include <catch2/catch.hpp>

#include "nn/gradcheck.h"
#include "nn/graph_ops.h"
#include "nn/ops.h"

using namespace gdp::nn;

namespace {

// 0->1, 0->2, 1->2, 3->2, 2->4, 4->0; node 5 isolated, node 3 has no in-edges.
std::shared_ptr<const Adjacency> small_graph() {
  return make_adjacency(6, {0, 0, 1, 3, 2, 4}, {1, 2, 2, 2, 4, 0});
}

// A random graph on n nodes with e edges (may contain duplicates, no self loops).
std::shared_ptr<const Adjacency> random_graph(int32_t n, int32_t e, uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> src, dst;
  while (static_cast<int32_t>(src.size()) < e) {
    const auto a = static_cast<int32_t>(rng.below(n)), b = static_cast<int32_t>(rng.below(n));
    if (a == b) continue;
    src.push_back(a);
    dst.push_back(b);
  }
  return make_adjacency(n, src, dst);
}

}  // namespace

TEST_CASE("nn/csr from edges and transpose", "[nn]") {
  const auto adj = small_graph();
  adj->in.validate();
  adj->out.validate();
  CHECK(adj->in.row_ptr == std::vector<int32_t>{0, 1, 2, 5, 5, 6, 6});
  CHECK(adj->in.col_idx == std::vector<int32_t>{4, 0, 0, 1, 3, 2});
  CHECK(adj->out.row_ptr == std::vector<int32_t>{0, 2, 3, 4, 5, 6, 6});
  CHECK(adj->out.col_idx == std::vector<int32_t>{1, 2, 2, 4, 2, 0});
  const Csr back = csr_transpose(adj->out);
  CHECK(back.row_ptr == adj->in.row_ptr);
  // Rows of a transpose are sorted, so compare as sets per row.
  for (int32_t r = 0; r < 6; ++r) {
    std::vector<int32_t> a(adj->in.col_idx.begin() + adj->in.row_ptr[r],
                           adj->in.col_idx.begin() + adj->in.row_ptr[r + 1]);
    std::vector<int32_t> b(back.col_idx.begin() + back.row_ptr[r],
                           back.col_idx.begin() + back.row_ptr[r + 1]);
    std::sort(a.begin(), a.end());
    CHECK(a == b);
  }
  CHECK_THROWS_WITH(make_adjacency(3, {0, 5}, {1, 2}), Catch::Contains("outside [0, 3)"));
}

TEST_CASE("nn/segment mean and max forward values", "[nn]") {
  const auto adj = small_graph();
  // x (6, 2): row n = (n, -n) + small offsets
  const Tensor x = Tensor::from_vector({6, 2}, {0, 0, 1, -1, 2, -2, 3, -3, 4, -4, 5, -5});
  const Var xv(x);
  const Tensor mi = segment_mean(xv, adj, EdgeDir::in).value();
  // node 2 gathers 0, 1, 3 -> mean (4/3, -4/3); node 3 and 5 have no in-edges -> 0.
  CHECK(mi.at({2, 0}) == Approx(4.0 / 3.0));
  CHECK(mi.at({2, 1}) == Approx(-4.0 / 3.0));
  CHECK(mi.at({0, 0}) == Approx(4.0));
  CHECK(mi.at({3, 0}) == 0.0f);
  CHECK(mi.at({5, 1}) == 0.0f);
  const Tensor mo = segment_mean(xv, adj, EdgeDir::out).value();
  CHECK(mo.at({0, 0}) == Approx(1.5));  // 0 -> 1, 2
  CHECK(mo.at({5, 0}) == 0.0f);
  const Tensor mx = segment_max(xv, adj, EdgeDir::in).value();
  CHECK(mx.at({2, 0}) == 3.0f);  // max(0, 1, 3)
  CHECK(mx.at({2, 1}) == 0.0f);  // max(0, -1, -3)
  CHECK(mx.at({3, 0}) == 0.0f);  // empty
}

TEST_CASE("nn/segment mean gradcheck both directions", "[nn]") {
  const auto adj = random_graph(13, 29, 7);
  Rng rng(11);
  for (EdgeDir dir : {EdgeDir::in, EdgeDir::out}) {
    const auto res =
        gradcheck([&](const std::vector<VarD>& in) { return segment_mean(in[0], adj, dir); },
                  {random_input({13, 5}, rng)});
    INFO(res.worst);
    CHECK(res.passed);
    CHECK(res.checked == 13 * 5);
  }
}

TEST_CASE("nn/segment max gradcheck both directions", "[nn]") {
  const auto adj = random_graph(11, 31, 3);
  Rng rng(5);
  for (EdgeDir dir : {EdgeDir::in, EdgeDir::out}) {
    // Distinct random values: no ties, so the max is differentiable everywhere checked.
    const auto res =
        gradcheck([&](const std::vector<VarD>& in) { return segment_max(in[0], adj, dir); },
                  {random_input({11, 7}, rng)});
    INFO(res.worst);
    CHECK(res.passed);
    CHECK(res.skipped_kinks == 0);
  }
}

TEST_CASE("nn/sage layer gradcheck", "[nn]") {
  const auto adj = random_graph(9, 17, 21);
  Rng rng(2);
  for (bool relu_act : {false, true}) {
    const auto res = gradcheck(
        [&](const std::vector<VarD>& in) { return sage_layer(in[0], in[1], in[2], adj, relu_act); },
        {random_input({9, 5}, rng), random_input({7, 15}, rng), random_input({7}, rng)});
    INFO(res.worst);
    CHECK(res.passed);
  }
}

TEST_CASE("nn/sage layer equals its unfused composition", "[nn]") {
  const auto adj = random_graph(17, 40, 4);
  Rng rng(9);
  const VarD x = random_input({17, 6}, rng), w = random_input({5, 18}, rng),
             b = random_input({5}, rng);
  const VarD fused = sage_layer(x, w, b, adj, true);
  const VarD cat =
      concat<double>({x, segment_mean(x, adj, EdgeDir::in), segment_mean(x, adj, EdgeDir::out)}, 1);
  const VarD ref = relu(linear(cat, w, b));
  CHECK(max_abs_diff(fused.value(), ref.value()) < 1e-12);
  TapeD::current().clear();
}
