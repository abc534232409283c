// Transfer times on the realistic machine presets, in closed form: a peer copy through the
// NVSwitch, copies that share a GPU's down-link, the DGX-1's single, doubled and missing
// NVLinks; and the fast simulator against the readable reference on these presets.
#include <catch2/catch.hpp>

#include "core/cluster.h"
#include "datasets/random_dag.h"
#include "reference_sim.h"
#include "sim/simulator.h"

using namespace gdp;

namespace {

constexpr double kOp_s = 1e-4;                  // every op's measured time, shorter than any copy
constexpr int64_t kBytes = int64_t{450} << 20;  // 450 MiB per copy

// An op with a measured time on every device kind and one output of `bytes`.
Op measured_op(const std::string& name, int64_t bytes = 1024) {
  Op op;
  op.name = name;
  op.type = "MatMul";
  op.measured.push_back({"*", kOp_s});
  TensorSpec t;
  t.shape = {bytes / 4};
  t.bytes = bytes;
  op.outputs.push_back(t);
  return op;
}

// One source op per distinct source device (kBytes out, sent once to each consumer's device)
// and one consumer op per (source device, consumer device) pair: the step is one op, the
// copies, one op.
double copies_step_s(const Cluster& c, const std::vector<std::pair<int, int>>& pairs,
                     SimResult* result = nullptr) {
  Graph g;
  std::vector<int32_t> devs, source_of_device(c.num_devices(), -1);
  for (auto [s, d] : pairs) {
    if (source_of_device[s] >= 0) continue;
    source_of_device[s] = g.add_op(measured_op("S" + std::to_string(s), kBytes));
    devs.push_back(s);
  }
  for (auto [s, d] : pairs) {
    int32_t consumer = g.add_op(measured_op("C" + std::to_string(s) + "_" + std::to_string(d)));
    g.add_edge(source_of_device[s], 0, consumer, kBytes);
    devs.push_back(d);
  }
  g.finalize();
  Simulator sim(g, c, CostModel());
  SimResult r = sim.run(Placement{devs});
  REQUIRE(r.valid);
  REQUIRE(r.transfers == static_cast<int32_t>(pairs.size()));
  if (result) *result = r;
  return r.step_time_s;
}

// The time of the copies alone: the step less the source op and the consumer op.
double copies_s(const Cluster& c, const std::vector<std::pair<int, int>>& pairs) {
  return copies_step_s(c, pairs) - 2 * kOp_s;
}

constexpr double kTol = 1e-12;

}  // namespace

TEST_CASE("sim/topology/nvswitch: one peer copy takes latency + bytes / full GPU bandwidth",
          "[sim][topology]") {
  for (auto [name, bw] : std::vector<std::pair<const char*, double>>{
           {"dgx-h100", 450e9}, {"dgx-h200", 450e9}, {"dgx-a100", 300e9}}) {
    INFO(name);
    Cluster c = make_cluster_preset(name);
    const double one = 10e-6 + static_cast<double>(kBytes) / bw;
    for (auto [s, d] : std::vector<std::pair<int, int>>{{0, 1}, {3, 7}, {6, 2}})
      CHECK(copies_s(c, {{s, d}}) == Approx(one).epsilon(kTol));
    // The idealised all-pairs preset gives the same copy 1/7 of the bandwidth.
    if (std::string(name) == "dgx-h100")
      CHECK(copies_s(make_cluster_preset("h100x8-nvlink"), {{0, 1}}) ==
            Approx(10e-6 + 7 * static_cast<double>(kBytes) / bw).epsilon(kTol));
  }
}

TEST_CASE("sim/topology/nvswitch: copies into one GPU share its down-link, disjoint pairs do not",
          "[sim][topology]") {
  Cluster c = make_cluster_preset("dgx-h100");
  const double xfer = static_cast<double>(kBytes) / 450e9, lat = 10e-6;
  // Two copies into gpu2: they serialize on nvswitch->gpu2, the second ends a full copy later.
  SimResult r;
  CHECK(copies_step_s(c, {{0, 2}, {1, 2}}, &r) - 2 * kOp_s == Approx(lat + 2 * xfer).epsilon(kTol));
  const int32_t down = c.route(0, 2)[1];
  CHECK(c.directed_link_name(down) == "nvswitch->gpu2");
  CHECK(r.link_bytes[down] == 2 * kBytes);
  CHECK(r.link_bytes[c.route(0, 2)[0]] == kBytes);
  CHECK(r.link_bytes[c.route(1, 2)[0]] == kBytes);
  // Four copies into gpu7 take four copy times.
  CHECK(copies_s(c, {{0, 7}, {1, 7}, {2, 7}, {3, 7}}) == Approx(lat + 4 * xfer).epsilon(kTol));
  // Two copies out of gpu0 share its up-link the same way.
  CHECK(copies_s(c, {{0, 1}, {0, 2}}) == Approx(lat + 2 * xfer).epsilon(kTol));
  // Disjoint pairs, and a pair and its reverse, do not slow each other.
  CHECK(copies_s(c, {{0, 1}, {2, 3}}) == Approx(lat + xfer).epsilon(kTol));
  CHECK(copies_s(c, {{0, 1}, {2, 3}, {4, 5}, {6, 7}}) == Approx(lat + xfer).epsilon(kTol));
  CHECK(copies_s(c, {{0, 1}, {1, 0}}) == Approx(lat + xfer).epsilon(kTol));
}

TEST_CASE("sim/topology/dgx1-v100: doubled NVLink is twice as fast as single, no NVLink is PCIe",
          "[sim][topology]") {
  Cluster c = make_cluster_preset("dgx1-v100");
  const double B = static_cast<double>(kBytes);
  const double single = copies_s(c, {{0, 1}});   // NV1
  const double doubled = copies_s(c, {{0, 3}});  // NV2
  CHECK(single == Approx(10e-6 + B / 25e9).epsilon(kTol));
  CHECK(doubled == Approx(10e-6 + B / 50e9).epsilon(kTol));
  CHECK(single - 10e-6 == Approx(2 * (doubled - 10e-6)).epsilon(kTol));
  // gpu0 -> gpu5 has no NVLink: 5 hops over PCIe and QPI, 35 us, 12 GB/s PCIe bottleneck.
  const double fallback = copies_s(c, {{0, 5}});
  CHECK(fallback == Approx(35e-6 + B / 12e9).epsilon(kTol));
  CHECK(fallback > single);
  // Two fallback copies from gpu0 and gpu1 (one PCIe switch) share its up-link to cpu0.
  CHECK(copies_s(c, {{0, 5}, {1, 6}}) == Approx(35e-6 + 2 * B / 12e9).epsilon(kTol));
  // The NVLink copies of one GPU to different peers use different links.
  CHECK(copies_s(c, {{0, 1}, {0, 3}}) == Approx(single).epsilon(kTol));
}

TEST_CASE("sim/topology/fast simulator equals the readable reference on the machine presets",
          "[sim][topology][reference]") {
  int cases = 0;
  // (Also one of 16 devices and one of 32: the devices' calendar scans up to 16, eight of
  // them unrolled, and is a tree beyond; sim/event_tree.h.)
  for (const char* name :
       {"dgx1-v100", "dgx-h100", "a100x4-nvswitch", "v100x16-4node", "v100x32-4node"}) {
    Cluster c = make_cluster_preset(name);
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      datasets::RandomGraphSpec spec;
      spec.num_ops = 40 + static_cast<int32_t>(seed * 37 % 120);
      spec.layer_width = 4 + static_cast<int32_t>(seed % 5);
      spec.seed = seed;
      Graph g = datasets::make_random_layered_graph(spec);
      SimOptions opt;
      opt.record_op_times = true;
      opt.check_memory = false;
      Simulator sim(g, c, CostModel(), opt);
      Placement p = datasets::random_placement(g, c.num_devices(), seed * 77);
      SimResult fast = sim.run(p);
      test::RefResult ref = test::reference_simulate(g, c, sim, p, QueuePolicy::fifo);
      INFO(name << " seed " << seed);
      CHECK(fast.step_time_s == ref.step_time_s);
      CHECK(fast.op_start_s == ref.start_s);
      CHECK(fast.link_bytes == ref.link_bytes);
      CHECK(fast.transfers == ref.transfers);
      ++cases;
    }
  }
  CHECK(cases == 15);
}
