// Structural stage coordinates (place/stages.h), the stage-cut control and memory repair
// (place/repair.h): exact ranks on a hand-built two-layer graph, layer order recovered on
// GNMT from structure alone (checked against the scopes, which the coordinates never read),
// forward levels without parameters, and a repair that makes an out-of-memory cut fit.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <numeric>
#include <regex>
#include <set>

#include "core/cluster.h"
#include "core/error.h"
#include "datasets/registry.h"
#include "place/repair.h"
#include "place/stages.h"
#include "place_helpers.h"

using namespace gdp;
using namespace gdp::place;

namespace {

Op make_op(const std::string& name, Phase phase, int64_t param_bytes = 0,
           const std::string& colocation = "") {
  Op op;
  op.name = name;
  op.type = "T";
  op.phase = phase;
  op.flops = 1e6;
  op.param_bytes = param_bytes;
  op.colocation = colocation;
  op.outputs = {TensorSpec{{4}, DType::f32, 16}};
  return op;
}

// Appends op to g with the next id; returns its index.
int32_t append_op(Graph& g, Op op) {
  op.id = g.num_ops();
  return g.add_op(std::move(op));
}

// x -> mm1(w1) -> act1 -> mm2(w2) -> loss -> g_mm2 -> g_act1 -> g_mm1; weight gradients
// dw1, dw2 feed the updates. Variables, reads and updates are colocated per weight.
Graph two_layers() {
  Graph g;
  g.name = "two_layers";
  auto add = [&](Op op) { return append_op(g, std::move(op)); };
  const int32_t x = add(make_op("x", Phase::forward));
  const int32_t w2 = add(make_op("w2", Phase::forward, 64, "w2"));  // declared first on purpose
  const int32_t w1 = add(make_op("w1", Phase::forward, 64, "w1"));
  const int32_t r1 = add(make_op("w1/read", Phase::forward, 0, "w1"));
  const int32_t r2 = add(make_op("w2/read", Phase::forward, 0, "w2"));
  const int32_t mm1 = add(make_op("mm1", Phase::forward));
  const int32_t act1 = add(make_op("act1", Phase::forward));
  const int32_t mm2 = add(make_op("mm2", Phase::forward));
  const int32_t loss = add(make_op("loss", Phase::forward));
  const int32_t gmm2 = add(make_op("g_mm2", Phase::backward));
  const int32_t dw2 = add(make_op("dw2", Phase::backward));
  const int32_t gact1 = add(make_op("g_act1", Phase::backward));
  const int32_t dw1 = add(make_op("dw1", Phase::backward));
  const int32_t up1 = add(make_op("w1/update", Phase::update, 0, "w1"));
  const int32_t up2 = add(make_op("w2/update", Phase::update, 0, "w2"));
  auto edge = [&](int32_t a, int32_t b) { g.add_edge(a, 0, b, 16); };
  edge(w1, r1), edge(w2, r2);
  edge(x, mm1), edge(r1, mm1), edge(mm1, act1), edge(act1, mm2), edge(r2, mm2), edge(mm2, loss);
  edge(loss, gmm2), edge(r2, gmm2), edge(loss, dw2), edge(act1, dw2), edge(gmm2, gact1);
  edge(act1, gact1), edge(gact1, dw1), edge(x, dw1), edge(dw1, up1), edge(dw2, up2);
  g.finalize();
  return g;
}

// The most frequent rank among the ops selected.
template <typename Pred>
int32_t modal_rank(const Graph& g, const StageCoordinates& sc, Pred pred) {
  std::map<int32_t, int32_t> count;
  for (int32_t v = 0; v < g.num_ops(); ++v)
    if (pred(g.op(v))) ++count[sc.rank[v]];
  REQUIRE(!count.empty());
  return std::max_element(count.begin(), count.end(),
                          [](auto& a, auto& b) { return a.second < b.second; })
      ->first;
}

std::vector<double> unit_times(const Graph& g) { return std::vector<double>(g.num_ops(), 1e-3); }

// A 4-layer GNMT, 6 time steps, small widths.
Graph small_gnmt() {
  datasets::GenOptions o;
  o.layers = 4;
  o.seq_len = 6;
  o.hidden = 32;
  o.vocab = 64;
  o.batch = 4;
  return datasets::generate("gnmt", o);
}

}  // namespace

TEST_CASE("place/stages: ranks of a hand-built two-layer graph", "[place][stages]") {
  const Graph g = two_layers();
  const StageCoordinates sc = stage_coordinates(g, unit_times(g));
  REQUIRE(sc.from_parameters);
  REQUIRE(sc.num_ranks == 2);
  auto rank = [&](const char* name) { return sc.rank[g.find_op(name)]; };
  // w1 is read first (by mm1): rank 0, though w2 was declared first.
  for (const char* n : {"x", "w1", "w1/read", "mm1", "act1", "w1/update", "dw1", "g_act1"}) {
    INFO(n);
    CHECK(rank(n) == 0);
  }
  for (const char* n : {"w2", "w2/read", "mm2", "loss", "g_mm2", "dw2", "w2/update"}) {
    INFO(n);
    CHECK(rank(n) == 1);
  }
  // Equal time per op: rank 0 holds 8 of 15 ops.
  CHECK(sc.by_time[g.find_op("mm1")] == Approx(4.0 / 15));
  CHECK(sc.by_time[g.find_op("mm2")] == Approx((8 + 3.5) / 15));
  CHECK(sc.by_rank[g.find_op("mm2")] == Approx(0.75));
  const std::vector<int32_t> cut = stage_cut(g, sc.by_time, 2);
  for (int32_t v = 0; v < g.num_ops(); ++v) CHECK(cut[v] == sc.rank[v]);
  CHECK(stage_cut(g, sc.by_time, 1) == std::vector<int32_t>(g.num_ops(), 0));
  CHECK_THROWS_AS(stage_coordinates(g, std::vector<double>(3, 0.0)), InputError);
}

TEST_CASE("place/stages: weight gradients found and split off their ranks", "[place][stages]") {
  const Graph g = two_layers();
  const std::vector<uint8_t> w = weight_gradient_ops(g);
  for (int32_t v = 0; v < g.num_ops(); ++v) {
    INFO(g.op(v).name);
    const std::string& n = g.op(v).name;
    // g_mm2 and g_act1 serve w1's update alone (layer 1 has no input gradient to pass on)
    CHECK(static_cast<bool>(w[v]) == (n == "dw1" || n == "dw2" || n == "g_mm2" || n == "g_act1"));
  }
  const StageCoordinates sc = stage_coordinates(g, unit_times(g));
  const Units base = stage_units(g, sc.rank, sc.num_ranks);
  REQUIRE(base.num_units() == 2);
  std::vector<uint8_t> part_of;
  const Units s = split_units(g, base, w, &part_of);
  REQUIRE(s.num_units() == 4);
  REQUIRE(part_of.size() == 4);
  auto unit = [&](const char* n) { return s.unit_of[g.find_op(n)]; };
  CHECK(unit("dw1") != unit("mm1"));
  CHECK(unit("dw2") != unit("mm2"));
  CHECK(part_of[unit("dw1")] == 1);
  CHECK(part_of[unit("mm1")] == 0);
  CHECK(unit("loss") == unit("mm2"));          // forward ops stay with their rank
  CHECK(unit("w1/update") == unit("w1"));      // and the update with its variable
  for (int32_t k = 1; k < s.num_units(); ++k)  // numbered in topological order of first op
    CHECK(std::find(g.topo_order().begin(), g.topo_order().end(), s.first_op[k - 1]) <
          std::find(g.topo_order().begin(), g.topo_order().end(), s.first_op[k]));
  // Nothing in part: the units are the base's.
  const Units same = split_units(g, base, std::vector<uint8_t>(g.num_ops(), 0), &part_of);
  CHECK(same.unit_of == base.unit_of);
  CHECK(part_of == std::vector<uint8_t>(2, 0));
}

TEST_CASE("place/stages: a transformer's weight gradients each serve one update",
          "[place][stages]") {
  datasets::GenOptions o;
  o.layers = 2;
  o.seq_len = 8;
  o.hidden = 32;
  o.vocab = 64;
  o.batch = 2;
  o.heads = 4;
  const Graph g = datasets::generate("bert", o);
  const std::vector<uint8_t> w = weight_gradient_ops(g);
  const Units col = Units::colocation(g);
  // Over backward edges, the update groups each op reaches (checked by search, not by the rule).
  int32_t weight = 0, input = 0;
  for (int32_t v = 0; v < g.num_ops(); ++v) {
    if (g.op(v).phase != Phase::backward) {
      CHECK(!w[v]);
      continue;
    }
    std::set<int32_t> groups;
    std::vector<int32_t> stack{v};
    std::set<int32_t> seen{v};
    while (!stack.empty()) {
      const int32_t x = stack.back();
      stack.pop_back();
      for (int64_t k = g.out_ptr()[x]; k < g.out_ptr()[x + 1]; ++k) {
        const int32_t d = g.edges()[g.out_edge_ids()[k]].dst;
        if (g.op(d).phase == Phase::update)
          groups.insert(col.unit_of[d]);
        else if (g.op(d).phase == Phase::backward && seen.insert(d).second)
          stack.push_back(d);
      }
    }
    INFO(g.op(v).name);
    CHECK(static_cast<bool>(w[v]) == (groups.size() == 1));
    (w[v] ? weight : input) += 1;
  }
  CHECK(weight > 0);
  CHECK(input > 0);
}

TEST_CASE("place/stages: GNMT's layers in order from structure alone", "[place][stages]") {
  const Graph g = small_gnmt();
  const StageCoordinates sc = stage_coordinates(g, unit_times(g));
  REQUIRE(sc.from_parameters);
  // Checked against the scopes (the coordinates never read them): the ranks of each layer's
  // weights come after every rank of the layer before, encoder before decoder, and the modal
  // rank of the layer's forward ops and that of its backward ops are ranks of its weights.
  int32_t last = -1;
  for (const char* part : {"encoder", "decoder"}) {
    for (int l = 0; l < 4; ++l) {
      const std::regex layer(std::string(".*") + part + "/layer_" + std::to_string(l) + "(/.*)?");
      auto in_layer = [&](const Op& op, Phase ph) {
        return op.phase == ph && std::regex_match(op.scope, layer);
      };
      INFO(part << " layer " << l);
      std::set<int32_t> weights;
      for (int32_t v = 0; v < g.num_ops(); ++v)
        if (g.op(v).param_bytes > 0 && std::regex_match(g.op(v).scope, layer))
          weights.insert(sc.rank[v]);
      REQUIRE(!weights.empty());
      CHECK(*weights.begin() > last);
      last = *weights.rbegin();
      const int32_t fwd =
          modal_rank(g, sc, [&](const Op& op) { return in_layer(op, Phase::forward); });
      const int32_t bwd =
          modal_rank(g, sc, [&](const Op& op) { return in_layer(op, Phase::backward); });
      CHECK(weights.count(fwd) == 1);
      CHECK(weights.count(bwd) == 1);
    }
  }
  for (int32_t v = 0; v < g.num_ops(); ++v) {
    REQUIRE(sc.rank[v] >= 0);
    REQUIRE(sc.rank[v] < sc.num_ranks);
    REQUIRE(sc.by_time[v] >= 0);
    REQUIRE(sc.by_time[v] <= 1);
  }
}

TEST_CASE("place/stages: a chain of layers has no concurrency", "[place][stages]") {
  const Graph g = two_layers();
  const StageCoordinates sc = stage_coordinates(g, unit_times(g));
  // mm1, act1 (levels 2, 3) and mm2, loss (4, 5): neither span holds the other's centre (the
  // variables and their reads, at levels 0 and 1, are not counted).
  for (int32_t v = 0; v < g.num_ops(); ++v) {
    INFO(g.op(v).name);
    CHECK(sc.by_fold[v] == Approx(0.5));
    CHECK(sc.share[v] == Approx(1.0));
  }
}

TEST_CASE("place/stages: two branches at the same levels fold onto one coordinate",
          "[place][stages]") {
  // x -> mmA(wA) -> addAB <- mmB(wB) <- x; addAB -> mmC(wC) -> loss. Forward only: branches A
  // and B are concurrent (equal spans), C runs alone after them.
  Graph g;
  g.name = "branches";
  auto add = [&](Op op) { return append_op(g, std::move(op)); };
  const int32_t x = add(make_op("x", Phase::forward));
  int32_t mm[3];
  const char* names[3] = {"A", "B", "C"};
  int32_t read[3];
  for (int i = 0; i < 3; ++i) {
    const std::string n = names[i];
    const int32_t w = add(make_op("w" + n, Phase::forward, 64, "w" + n));
    read[i] = add(make_op("w" + n + "/read", Phase::forward, 0, "w" + n));
    g.add_edge(w, 0, read[i], 16);
  }
  for (int i = 0; i < 2; ++i) mm[i] = add(make_op(std::string("mm") + names[i], Phase::forward));
  const int32_t sum = add(make_op("addAB", Phase::forward));
  mm[2] = add(make_op("mmC", Phase::forward));
  const int32_t loss = add(make_op("loss", Phase::forward));
  auto edge = [&](int32_t a, int32_t b) { g.add_edge(a, 0, b, 16); };
  edge(x, mm[0]), edge(x, mm[1]), edge(read[0], mm[0]), edge(read[1], mm[1]);
  edge(mm[0], sum), edge(mm[1], sum), edge(sum, mm[2]), edge(read[2], mm[2]), edge(mm[2], loss);
  g.finalize();
  const StageCoordinates sc = stage_coordinates(g, unit_times(g));
  REQUIRE(sc.num_ranks == 3);
  const int32_t a = sc.rank[mm[0]], b = sc.rank[mm[1]], c = sc.rank[mm[2]];
  REQUIRE(a == 0);
  REQUIRE(b == 1);
  REQUIRE(c == 2);
  // x and addAB join a rank by the search's rules (the nearest reader, the lower rank on a
  // tie): the expected midpoints come from the ranks' sizes.
  std::vector<double> t(3, 0);
  for (int32_t v = 0; v < g.num_ops(); ++v) t[sc.rank[v]] += 1e-3;
  CHECK(sc.by_fold[mm[0]] == Approx(0.5 * t[a] / (t[a] + t[b])));
  CHECK(sc.by_fold[mm[1]] == Approx((t[a] + 0.5 * t[b]) / (t[a] + t[b])));
  CHECK(sc.share[mm[0]] == Approx(t[a] / (t[a] + t[b])));
  CHECK(sc.by_fold[mm[2]] == Approx(0.5));
  CHECK(sc.share[mm[2]] == Approx(1.0));
  // A cut of the fold into two puts the branches on different devices.
  const std::vector<int32_t> cut = stage_cut(g, sc.by_fold, 2);
  CHECK(cut[mm[0]] != cut[mm[1]]);
  // Branches: x (which computes nothing) splits [0, 1] between mmA and mmB, whose paths to
  // the end are equal (4 ops each), so mmA holds [0, 0.5] and mmB [0.5, 1] (the reads' whole
  // [0, 1] is wider); addAB joins them back to [0, 1], and mmC and loss follow it. A rank reads
  // the mean midpoint of its ops that compute (x, the variables and reads do not).
  std::map<int32_t, double> mid{
      {mm[0], 0.25}, {mm[1], 0.75}, {sum, 0.5}, {mm[2], 0.5}, {loss, 0.5}};
  std::vector<double> total(3, 0);
  std::vector<int> count(3, 0);
  for (const auto& [v, m] : mid) {
    total[sc.rank[v]] += m;
    ++count[sc.rank[v]];
  }
  for (int32_t v = 0; v < g.num_ops(); ++v) {
    INFO(g.op(v).name);
    const int32_t r = sc.rank[v];
    CHECK(sc.by_width[v] == Approx(count[r] ? total[r] / count[r] : 0.5));
  }
  CHECK(sc.by_width[mm[0]] < 0.5);
  CHECK(sc.by_width[mm[1]] > 0.5);
  const std::vector<int32_t> across = stage_cut(g, sc.by_width, 2);
  CHECK(across[mm[0]] != across[mm[1]]);
}

TEST_CASE("place/stages: the width splits a fork by the branches' paths to the end",
          "[place][stages]") {
  // x -> a -> {b, c}; b -> b2 -> join; c -> join; join -> loss. Times 1 ms: b's path to the
  // end is b, b2, join, loss (4 ms), c's is c, join, loss (3 ms), so b holds 4/7 of a's [0, 1].
  Graph g;
  g.name = "fork";
  auto add = [&](const char* name) { return append_op(g, make_op(name, Phase::forward)); };
  const int32_t x = add("x"), a = add("a"), b = add("b"), c = add("c"), b2 = add("b2");
  const int32_t join = add("join"), loss = add("loss");
  auto edge = [&](int32_t u, int32_t v) { g.add_edge(u, 0, v, 16); };
  edge(x, a), edge(a, b), edge(a, c), edge(b, b2), edge(b2, join), edge(c, join), edge(join, loss);
  g.finalize();
  const StageCoordinates sc = stage_coordinates(g, unit_times(g));
  REQUIRE_FALSE(sc.from_parameters);  // ranks are forward levels: b and c share level 2
  // Levels: x 0, a 1, {b, c} 2, b2 3, join 4, loss 5; rank 2 reads the mean of b and c.
  const double mb = 0.5 * 4.0 / 7.0, mc = 4.0 / 7.0 + 0.5 * 3.0 / 7.0;
  CHECK(sc.by_width[b] == Approx(0.5 * (mb + mc)));
  CHECK(sc.by_width[b2] == Approx(mb));
  CHECK(sc.by_width[a] == Approx(0.5));
  CHECK(sc.by_width[join] == Approx(0.5));
  CHECK(sc.by_width[x] == Approx(0.5));  // a rank of no op that computes
}

TEST_CASE("place/stages: the op width reads each op's own branch, gradients with theirs",
          "[place][stages]") {
  // The fork above with a backward op per forward op that reads its forward op (and the
  // gradient from above): b and c share a rank (level 2) and so one by_width, but by_op_width
  // sets them apart, and each gradient reads as the forward op it reads.
  Graph g;
  g.name = "fork_backward";
  auto add = [&](const std::string& name, Phase phase) {
    return append_op(g, make_op(name, phase));
  };
  const int32_t x = add("x", Phase::forward), a = add("a", Phase::forward);
  const int32_t b = add("b", Phase::forward), c = add("c", Phase::forward);
  const int32_t b2 = add("b2", Phase::forward), join = add("join", Phase::forward);
  const int32_t loss = add("loss", Phase::forward);
  const int32_t gjoin = add("join_grad", Phase::backward), gb2 = add("b2_grad", Phase::backward);
  const int32_t gb = add("b_grad", Phase::backward), gc = add("c_grad", Phase::backward);
  const int32_t ga = add("a_grad", Phase::backward);
  auto edge = [&](int32_t u, int32_t v) { g.add_edge(u, 0, v, 16); };
  edge(x, a), edge(a, b), edge(a, c), edge(b, b2), edge(b2, join), edge(c, join), edge(join, loss);
  edge(loss, gjoin), edge(join, gjoin), edge(gjoin, gb2), edge(b2, gb2), edge(gb2, gb), edge(b, gb);
  edge(gjoin, gc), edge(c, gc), edge(gb, ga), edge(gc, ga), edge(a, ga);
  g.finalize();
  const StageCoordinates sc = stage_coordinates(g, unit_times(g));
  const double mb = 0.5 * 4.0 / 7.0, mc = 4.0 / 7.0 + 0.5 * 3.0 / 7.0;
  CHECK(sc.by_width[b] == Approx(sc.by_width[c]));  // one rank
  CHECK(sc.by_op_width[b] == Approx(mb));
  CHECK(sc.by_op_width[c] == Approx(mc));
  CHECK(sc.by_op_width[b2] == Approx(mb));
  CHECK(sc.by_op_width[a] == Approx(0.5));
  CHECK(sc.by_op_width[x] == Approx(sc.by_width[x]));  // computes nothing: its rank's
  // Each gradient reads the forward ops that compute among its inputs (join_grad reads join;
  // its input from loss counts too: loss computes).
  CHECK(sc.by_op_width[gb] == Approx(mb));
  CHECK(sc.by_op_width[gc] == Approx(mc));
  CHECK(sc.by_op_width[gb2] == Approx(mb));
  CHECK(sc.by_op_width[ga] == Approx(0.5));
  CHECK(sc.by_op_width[gjoin] == Approx(0.5));
  // Cut in two: b's branch (with its gradients) on one device, c's on the other.
  const std::vector<int32_t> cut = stage_cut(g, sc.by_op_width, 2);
  CHECK(cut[b] == 0);
  CHECK(cut[gb] == 0);
  CHECK(cut[c] == 1);
  CHECK(cut[gc] == 1);
}

TEST_CASE("place/stages: the width sets Inception's towers apart from structure alone",
          "[place][stages]") {
  const Graph g = test::small_inception();
  const StageCoordinates sc = stage_coordinates(g, unit_times(g));
  // In every Mixed block (from the scopes, which the coordinates never read), the forward
  // convolutions of its towers do not all read one width, and the first tower reads below
  // the last; every op reads in [0, 1].
  std::map<std::string, std::map<int, std::set<double>>> towers;  // block -> tower -> widths
  const std::regex conv(".*/(Mixed_[0-9a-z]+)/Branch_([0-9])/.*");
  for (int32_t v = 0; v < g.num_ops(); ++v) {
    REQUIRE(sc.by_width[v] >= 0);
    REQUIRE(sc.by_width[v] <= 1);
    std::smatch m;
    const Op& op = g.op(v);
    if (op.phase == Phase::forward && op.type == "Conv2D" && std::regex_match(op.name, m, conv))
      towers[m[1]][std::stoi(m[2])].insert(sc.by_width[v]);
  }
  REQUIRE(towers.size() >= 8);
  for (const auto& [block, t] : towers) {
    INFO(block);
    REQUIRE(t.size() >= 2);  // Mixed_6a and 7a: two towers of convolutions beside a pool
    CHECK(*t.begin()->second.begin() < *t.rbegin()->second.rbegin());
  }
}

TEST_CASE("place/stages: the fold runs GNMT's wavefront over the coordinate", "[place][stages]") {
  const Graph g = small_gnmt();
  const StageCoordinates sc = stage_coordinates(g, unit_times(g));
  // The modal fold and share of each layer's forward ops (from the scopes, which the
  // coordinates never read): layers 1-3 of the encoder, and those of the decoder, run at
  // once over the time steps, so each is a minority of its concurrent time and their folds
  // rise with depth in each part; by_time orders the decoder after the encoder instead.
  for (const char* part : {"encoder", "decoder"}) {
    double last_fold = -1, first_fold = -1;
    for (int l = 1; l < 4; ++l) {
      const std::regex layer(std::string(".*") + part + "/layer_" + std::to_string(l) + "(/.*)?");
      std::map<double, int> fold, share;
      for (int32_t v = 0; v < g.num_ops(); ++v)
        if (g.op(v).phase == Phase::forward && std::regex_match(g.op(v).scope, layer)) {
          ++fold[sc.by_fold[v]];
          ++share[sc.share[v]];
        }
      REQUIRE(!fold.empty());
      auto modal = [](const std::map<double, int>& m) {
        return std::max_element(m.begin(), m.end(),
                                [](auto& p, auto& q) { return p.second < q.second; })
            ->first;
      };
      INFO(part << " layer " << l);
      CHECK(modal(share) < 0.5);
      CHECK(modal(fold) > last_fold);
      last_fold = modal(fold);
      if (first_fold < 0) first_fold = last_fold;
    }
    INFO(part);
    CHECK(last_fold - first_fold >= 0.2);
  }
  for (int32_t v = 0; v < g.num_ops(); ++v) {
    REQUIRE(sc.by_fold[v] >= 0);
    REQUIRE(sc.by_fold[v] <= 1);
    REQUIRE(sc.share[v] > 0);
    REQUIRE(sc.share[v] <= 1);
  }
}

TEST_CASE("place/stages: forward levels without parameters", "[place][stages]") {
  const Graph g = test::small_colocated_graph();  // a -> b -> c, a -> c, a -> d; no weights
  const StageCoordinates sc = stage_coordinates(g, unit_times(g));
  CHECK_FALSE(sc.from_parameters);
  CHECK(sc.num_ranks == 3);
  CHECK(sc.rank == std::vector<int32_t>{0, 1, 2, 1});
}

TEST_CASE("place/repair: an out-of-memory cut made to fit by moving few ops", "[place][stages]") {
  const Graph g = test::small_rnnlm();
  Cluster c = make_cluster_preset("v100x4-nvlink");
  CostModel cost;
  // Capacity so that the whole graph does not fit on one device, but fits on four.
  Simulator sim(g, c, cost);
  const SimResult one = sim.run(Placement{std::vector<int32_t>(g.num_ops(), 0)});
  REQUIRE(one.valid);
  const int64_t peak = one.devices[0].peak_memory_bytes;
  for (DeviceSpec& d : c.devices) d.memory_bytes = peak * 6 / 10;
  Problem pb(g, c, cost);
  std::vector<double> time(g.num_ops());
  for (int32_t v = 0; v < g.num_ops(); ++v) time[v] = pb.simulator().op_time_s(v, 0);
  const StageCoordinates sc = stage_coordinates(g, time);

  const Placement all0{std::vector<int32_t>(g.num_ops(), 0)};
  const RepairResult r = repair_memory(pb, all0, sc.by_time);
  REQUIRE(r.valid);
  CHECK(r.changed);
  CHECK(r.moved_ops > 0);
  CHECK(r.moved_ops < g.num_ops());
  CHECK(r.simulations >= 2);
  const SimResult after = Simulator(g, c, cost).run(r.placement);
  CHECK(after.valid);
  CHECK(test::groups_together(g, r.placement));

  // A valid placement comes back unchanged after one simulation.
  const Placement two{stage_cut(g, sc.by_time, 4)};
  const RepairResult same = repair_memory(pb, two, sc.by_time);
  if (Simulator(g, c, cost).run(two).valid) {
    CHECK(same.valid);
    CHECK_FALSE(same.changed);
    CHECK(same.simulations == 1);
    CHECK(same.placement.device == two.device);
  }
  // Nothing fits anywhere: reported invalid, the input returned.
  for (DeviceSpec& d : c.devices) d.memory_bytes = 1;
  Problem tiny(g, c, cost);
  const RepairResult none = repair_memory(tiny, all0, sc.by_time);
  CHECK_FALSE(none.valid);
  CHECK(none.placement.device == all0.device);
}

TEST_CASE("place/stage-cut: the control tries every stage count and returns a valid placement",
          "[place][stages]") {
  const Graph g = test::small_rnnlm();
  const Cluster c = make_cluster_preset("v100x2-nvlink");
  CostModel cost;
  Problem pb(g, c, cost);
  const PlaceResult r =
      place::place(place::prepare(place::registry(), "stage-cut"), pb, Budget(), 1);
  CHECK(r.report.samples == 2);  // one evaluation per stage count; both cuts fit
  CHECK(Simulator(g, c, cost).run(r.placement).valid);
  // The fold coordinate: the same protocol, its own cuts.
  const PlaceResult f = place::place(
      place::prepare(place::registry(), "stage-cut", {{"coordinate", "fold"}}), pb, Budget(), 1);
  CHECK(f.report.samples == 2);
  CHECK(Simulator(g, c, cost).run(f.placement).valid);
  CHECK_THAT(f.report.note, Catch::Contains("fold coordinate"));
  const PlaceResult w = place::place(
      place::prepare(place::registry(), "stage-cut", {{"coordinate", "width"}}), pb, Budget(), 1);
  CHECK(w.report.samples == 2);
  CHECK_THAT(w.report.note, Catch::Contains("width coordinate"));
  CHECK_THROWS_AS(place::place(place::prepare(place::registry(), "stage-cut", {{"stages", 3}}), pb,
                               Budget(), 1),
                  InputError);
}
