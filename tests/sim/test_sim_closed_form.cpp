// Simulator cases with closed-form answers worked by hand (all constants powers of two, so
// every comparison is exact): chains, transfers, link contention, routes, memory, validity.
#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "sim/lower_bound.h"
#include "sim/simulator.h"
#include "sim_fixtures.h"

using namespace gdp;
using namespace gdp::test;

namespace {

// A -> B -> C, roofline ops of 2^38 flops (0.5 s at half efficiency) + launch.
Graph roofline_chain() {
  Graph g;
  g.name = "chain";
  for (const char* n : {"A", "B", "C"}) {
    Op op;
    op.name = n;
    op.type = "MatMul";
    op.flops = 0x1p38;
    op.outputs.push_back(TensorSpec{{256}, DType::f32, 1024});
    g.add_op(op);
  }
  g.add_edge(0, 0, 1, 1024);
  g.add_edge(1, 0, 2, 1024);
  g.finalize();
  return g;
}

int32_t directed_link(const Cluster& c, int32_t from, int32_t to) {
  for (size_t l = 0; l < c.links.size(); ++l) {
    if (c.links[l].a == from && c.links[l].b == to) return static_cast<int32_t>(2 * l);
    if (c.links[l].b == from && c.links[l].a == to) return static_cast<int32_t>(2 * l + 1);
  }
  return -1;
}

}  // namespace

TEST_CASE("sim/closed/chain on one device is the sum of op times plus launch overheads", "[sim]") {
  Graph g = roofline_chain();
  Cluster c = full_mesh(2);
  Simulator sim(g, c, half_efficiency_model());
  SimResult r = sim.run(placement_of({0, 0, 0}));
  REQUIRE(r.valid);
  CHECK(r.step_time_s == 3 * (kLaunch_s + 0.5));
  CHECK(r.devices[0].busy_s == 3 * (kLaunch_s + 0.5));
  CHECK(r.devices[1].busy_s == 0);
  CHECK(r.devices[0].ops == 3);
  CHECK(r.transfers == 0);
  CHECK(r.link_bytes == std::vector<int64_t>{0, 0});
  CHECK(r.critical_path == std::vector<int32_t>{0, 1, 2});
  auto st = sim.make_state();
  CHECK(sim.step_time(placement_of({0, 0, 0}), *st) == r.step_time_s);
}

TEST_CASE("sim/closed/chain split across two devices adds latency + bytes/bandwidth", "[sim]") {
  Graph g;
  g.add_op(timed_op("A", 0.25, int64_t(1) << 28));
  g.add_op(timed_op("B", 0.5));
  g.add_edge(0, 0, 1, int64_t(1) << 28);  // 2^28 B over 2^30 B/s = 0.25 s
  g.finalize();
  Cluster c = full_mesh(2);
  Simulator sim(g, c, CostModel());
  SimResult r = sim.run(placement_of({0, 1}));
  REQUIRE(r.valid);
  CHECK(r.step_time_s == 0.25 + (0.25 + kLinkLat_s) + 0.5);
  CHECK(r.transfers == 1);
  CHECK(r.link_bytes[directed_link(c, 0, 1)] == int64_t(1) << 28);
  CHECK(r.link_bytes[directed_link(c, 1, 0)] == 0);
  CHECK(r.critical_path == std::vector<int32_t>{0, 1});
  // The same graph on one device: no transfer.
  CHECK(sim.run(placement_of({1, 1})).step_time_s == 0.75);
}

TEST_CASE("sim/closed/fan-out to one remote device sends one transfer, not two", "[sim]") {
  Graph g;
  g.add_op(timed_op("A", 0.25, int64_t(1) << 28));
  g.add_op(timed_op("B", 0.5));
  g.add_op(timed_op("C", 0.125));
  g.add_edge(0, 0, 1, int64_t(1) << 28);
  g.add_edge(0, 0, 2, int64_t(1) << 28);
  g.finalize();
  Cluster c = full_mesh(2);
  Simulator sim(g, c, CostModel());
  SimResult r = sim.run(placement_of({0, 1, 1}));
  REQUIRE(r.valid);
  CHECK(r.transfers == 1);
  CHECK(r.link_bytes[directed_link(c, 0, 1)] == int64_t(1) << 28);
  CHECK(r.step_time_s == 0.25 + 0.25 + kLinkLat_s + 0.5 + 0.125);  // B and C share gpu1
  // Two remote devices: two transfers on two links.
  Cluster c3 = full_mesh(3);
  Simulator sim3(g, c3, CostModel());
  SimResult r3 = sim3.run(placement_of({0, 1, 2}));
  CHECK(r3.transfers == 2);
  CHECK(r3.step_time_s == 0.25 + 0.25 + kLinkLat_s + 0.5);
}

TEST_CASE("sim/closed/two transfers on one link are serialized", "[sim]") {
  // A and B (0.25 s each) on gpu0 both feed C on gpu1; each transfer takes 0.5 s on the link.
  Graph g;
  g.add_op(timed_op("A", 0.25, int64_t(1) << 29));
  g.add_op(timed_op("B", 0.25, int64_t(1) << 29));
  g.add_op(timed_op("C", 0.125));
  g.add_edge(0, 0, 2, int64_t(1) << 29);
  g.add_edge(1, 0, 2, int64_t(1) << 29);
  g.finalize();
  Cluster c = full_mesh(2);
  SimOptions opt;
  opt.record_trace = true;
  Simulator sim(g, c, CostModel(), opt);
  SimResult r = sim.run(placement_of({0, 0, 1}));
  REQUIRE(r.valid);
  // A's transfer occupies the link [0.25, 0.75]; B ends at 0.5 but waits until 0.75.
  CHECK(r.step_time_s == 0.25 + 0.5 + 0.5 + kLinkLat_s + 0.125);
  CHECK(r.link_bytes[directed_link(c, 0, 1)] == int64_t(1) << 30);
  CHECK(r.transfers == 2);
  // Critical path: C waited for B's transfer, which waited behind A's transfer on the link.
  CHECK(r.critical_path == std::vector<int32_t>{0, 2});
  int link_rows = 0;
  for (const TraceEvent& e : r.trace) {
    if (e.row < 2) continue;
    ++link_rows;
    CHECK(e.row == 2 + directed_link(c, 0, 1));
    CHECK(e.end_s - e.start_s == 0.5);
  }
  CHECK(link_rows == 2);
  // Opposite directions do not contend: C's input from gpu1 to gpu0 and back.
  Graph g2;
  g2.add_op(timed_op("A", 0.25, int64_t(1) << 29));
  g2.add_op(timed_op("B", 0.25, int64_t(1) << 29));
  g2.add_op(timed_op("A2", 0.125));
  g2.add_op(timed_op("B2", 0.125));
  g2.add_edge(0, 0, 2, int64_t(1) << 29);
  g2.add_edge(1, 0, 3, int64_t(1) << 29);
  g2.finalize();
  Simulator sim2(g2, c, CostModel());
  CHECK(sim2.run(placement_of({0, 1, 1, 0})).step_time_s == 0.25 + 0.5 + kLinkLat_s + 0.125);
}

TEST_CASE("sim/closed/a multi-hop route occupies each hop, cut-through", "[sim]") {
  Cluster c;
  c.name = "two_hop";
  c.devices = {test_device("gpu0"), test_device("gpu1")};
  c.switches = {"sw"};
  c.links.push_back({0, 2, 0x1p30, 1.0 / 64});  // gpu0 - sw: 2^30 B/s, 2^-6 s
  c.links.push_back({2, 1, 0x1p29, 1.0 / 32});  // sw - gpu1: 2^29 B/s, 2^-5 s
  c.finalize();
  REQUIRE(c.route(0, 1).size() == 2);
  Graph g;
  g.add_op(timed_op("A", 0.25, int64_t(1) << 28));
  g.add_op(timed_op("B", 0.5));
  g.add_edge(0, 0, 1, int64_t(1) << 28);
  g.finalize();
  Simulator sim(g, c, CostModel());
  SimResult r = sim.run(placement_of({0, 1}));
  REQUIRE(r.valid);
  // Cut-through: latencies add up, the bytes stream at the bottleneck (hop 2) bandwidth.
  CHECK(r.step_time_s == 0.25 + 1.0 / 64 + 1.0 / 32 + 0.5 + 0.5);
  CHECK(r.link_bytes[directed_link(c, 0, 2)] == int64_t(1) << 28);
  CHECK(r.link_bytes[directed_link(c, 2, 1)] == int64_t(1) << 28);
  CHECK(r.link_bytes[directed_link(c, 1, 2)] == 0);
  // Peak memory: nothing is held at the switch; gpu1 holds the received copy.
  CHECK(r.devices[1].peak_memory_bytes == (int64_t(1) << 28) + 1024);

  // Two transfers through the route pipeline: the second waits for the slower hop 2.
  Graph g2;
  g2.add_op(timed_op("A", 0.25, int64_t(1) << 28));
  g2.add_op(timed_op("B", 0.25, int64_t(1) << 28));
  g2.add_op(timed_op("C", 0.5));
  g2.add_edge(0, 0, 2, int64_t(1) << 28);
  g2.add_edge(1, 0, 2, int64_t(1) << 28);
  g2.finalize();
  Simulator sim2(g2, c, CostModel());
  // A's: hop 1 [0.25, 0.5], head at the switch 0.25+1/64, hop 2 [0.25+1/64, 0.75+1/64].
  // B's: hop 1 [0.5, 0.75], head at 0.5+1/64 waits for hop 2 until 0.75+1/64; hop 2 ends
  // 1.25+1/64 and the tensor arrives 1/32 later; C runs 0.5.
  CHECK(sim2.run(placement_of({0, 0, 1})).step_time_s == 1.25 + 1.0 / 64 + 1.0 / 32 + 0.5);

  // A slow first hop holds the second hop until its tail arrives.
  Cluster c3;
  c3.name = "slow_first_hop";
  c3.devices = {test_device("gpu0"), test_device("gpu1")};
  c3.switches = {"sw"};
  c3.links.push_back({0, 2, 0x1p28, 1.0 / 64});  // 1 s for 2^28 bytes
  c3.links.push_back({2, 1, 0x1p30, 1.0 / 32});  // 0.25 s for 2^28 bytes
  c3.finalize();
  Simulator sim3(g, c3, CostModel());
  CHECK(sim3.run(placement_of({0, 1})).step_time_s == 0.25 + 1.0 + 1.0 / 64 + 1.0 / 32 + 0.5);
}

TEST_CASE("sim/closed/memory: peak and release follow the allocation rules", "[sim][memory]") {
  // A (params 1000, out 100) -> B (temp 10, out 200) -> C (out 300).
  Graph g;
  Op a = timed_op("A", 0.25, 100);
  a.param_bytes = 1000;
  Op b = timed_op("B", 0.25, 200);
  b.temp_bytes = 10;
  g.add_op(a);
  g.add_op(b);
  g.add_op(timed_op("C", 0.25, 300));
  g.add_edge(0, 0, 1, 100);
  g.add_edge(1, 0, 2, 200);
  g.finalize();
  Cluster c = full_mesh(2);
  Simulator sim(g, c, CostModel());
  SimResult r = sim.run(placement_of({0, 0, 0}));
  REQUIRE(r.valid);
  CHECK(r.devices[0].resident_bytes == 1000);
  // At C's start: A's output freed at B's end; B's output (200) + C's (300) live.
  CHECK(r.devices[0].peak_memory_bytes == 1000 + 500);
  CHECK(r.devices[0].end_memory_bytes == 1000);
  // Split: gpu0 holds A's output until its transfer arrives; gpu1 receives it.
  SimResult s = sim.run(placement_of({0, 1, 1}));
  REQUIRE(s.valid);
  CHECK(s.devices[0].peak_memory_bytes == 1000 + 100);
  CHECK(s.devices[1].peak_memory_bytes == 500);  // 100 received + 210 at B, then 200 + 300 at C
  CHECK(s.devices[0].end_memory_bytes == 1000);
  CHECK(s.devices[1].end_memory_bytes == 0);
}

TEST_CASE("sim/closed/memory: weights and optimizer state are both resident", "[sim][memory]") {
  // A holds 1000 bytes of weights and 2000 of optimizer state, B 300 of weights only, C 50 of
  // optimizer state only: each device's resident bytes are its ops' weights + optimizer state.
  Graph g;
  Op a = timed_op("A", 0.25, 100);
  a.param_bytes = 1000;
  a.optimizer_bytes = 2000;
  Op b = timed_op("B", 0.25, 200);
  b.param_bytes = 300;
  Op c = timed_op("C", 0.25, 4);
  c.optimizer_bytes = 50;
  g.add_op(a);
  g.add_op(b);
  g.add_op(c);
  g.add_edge(0, 0, 1, 100);
  g.add_edge(1, 0, 2, 200);
  g.finalize();
  Simulator sim(g, full_mesh(2), CostModel());
  SimResult r = sim.run(placement_of({0, 1, 1}));
  REQUIRE(r.valid);
  CHECK(r.devices[0].resident_bytes == 3000);
  CHECK(r.devices[1].resident_bytes == 350);
  CHECK(r.devices[0].peak_memory_bytes == 3000 + 100);
  CHECK(r.devices[0].end_memory_bytes == 3000);
  // Over capacity by the optimizer state alone: out of memory at t=0.
  Cluster small = full_mesh(2, kLinkBw_Bps, kLinkLat_s, 2500);
  Simulator tight(g, small, CostModel());
  SimResult t = tight.run(placement_of({0, 1, 1}));
  CHECK_FALSE(t.valid);
  CHECK_THAT(t.reason, Catch::Contains("gpu0") && Catch::Contains("3000 bytes"));
}

TEST_CASE("sim/closed/out of memory is invalid and names device, time and bytes", "[sim][memory]") {
  Graph g;
  g.add_op(timed_op("A", 0.25, 600));
  g.add_op(timed_op("B", 0.25, 600));
  g.add_op(timed_op("C", 0.25, 4));
  g.add_edge(0, 0, 1, 600);
  g.add_edge(1, 0, 2, 600);
  g.finalize();
  Cluster c = full_mesh(2, kLinkBw_Bps, kLinkLat_s, 1000);
  c.devices[1].memory_bytes = 2000;
  c.finalize();
  Simulator sim(g, c, CostModel());
  SimResult r = sim.run(placement_of({0, 0, 0}));
  CHECK_FALSE(r.valid);
  CHECK_THAT(r.reason, Catch::Contains("out of memory on gpu0") && Catch::Contains("t=0.25") &&
                           Catch::Contains("1200 bytes") && Catch::Contains("capacity 1000"));
  CHECK(r.devices[0].peak_memory_bytes == 1200);
  auto st = sim.make_state();
  CHECK(std::isinf(sim.step_time(placement_of({0, 0, 0}), *st)));
  // On the larger gpu1 it fits.
  CHECK(sim.run(placement_of({1, 1, 1})).valid);
  CHECK(std::isfinite(sim.step_time(placement_of({1, 1, 1}), *st)));
  // Resident parameters over capacity: out of memory at t=0.
  Graph h;
  Op p = timed_op("P", 0.25, 4);
  p.param_bytes = 3000;
  h.add_op(p);
  h.finalize();
  Simulator simh(h, c, CostModel());
  SimResult rh = simh.run(placement_of({1}));
  CHECK_FALSE(rh.valid);
  CHECK_THAT(rh.reason,
             Catch::Contains("gpu1") && Catch::Contains("t=0 ") && Catch::Contains("3000 bytes"));
  // Without the memory check the placement is valid.
  SimOptions opt;
  opt.check_memory = false;
  Simulator nocheck(g, c, CostModel(), opt);
  CHECK(nocheck.run(placement_of({0, 0, 0})).valid);
}

TEST_CASE("sim/closed/a split colocation group is invalid and names the group and devices",
          "[sim]") {
  Graph g;
  Op a = timed_op("A", 0.25);
  a.colocation = "layer1/vars";
  Op b = timed_op("B", 0.25);
  b.colocation = "layer1/vars";
  g.add_op(a);
  g.add_op(timed_op("X", 0.25));
  g.add_op(b);
  g.add_edge(0, 0, 1, 4);
  g.add_edge(1, 0, 2, 4);
  g.finalize();
  Cluster c = full_mesh(2);
  Simulator sim(g, c, CostModel());
  SimResult r = sim.run(placement_of({0, 1, 1}));
  CHECK_FALSE(r.valid);
  CHECK(std::isinf(r.step_time_s));
  CHECK_THAT(r.reason, Catch::Contains("layer1/vars") && Catch::Contains("gpu0") &&
                           Catch::Contains("gpu1") && Catch::Contains("'A'") &&
                           Catch::Contains("'B'"));
  auto st = sim.make_state();
  CHECK(std::isinf(sim.step_time(placement_of({0, 1, 1}), *st)));
  CHECK(sim.run(placement_of({1, 0, 1})).valid);
}

TEST_CASE("sim/closed/placements of the wrong length or out of range are invalid, not crashes",
          "[sim]") {
  Graph g = roofline_chain();
  Cluster c = full_mesh(2);
  Simulator sim(g, c, half_efficiency_model());
  auto st = sim.make_state();
  SimResult r = sim.run(placement_of({0, 0}));
  CHECK_FALSE(r.valid);
  CHECK_THAT(r.reason, Catch::Contains("2 entries") && Catch::Contains("3 ops"));
  CHECK(std::isinf(sim.step_time(placement_of({0, 0, 0, 0}), *st)));
  SimResult r2 = sim.run(placement_of({0, 2, 0}));
  CHECK_FALSE(r2.valid);
  CHECK_THAT(r2.reason,
             Catch::Contains("'B'") && Catch::Contains("device 2") && Catch::Contains("2 devices"));
  CHECK(std::isinf(sim.step_time(placement_of({-1, 0, 0}), *st)));
  CHECK(sim.run(placement_of({0, 1, 0})).valid);  // and a good one still works afterwards
}

TEST_CASE("sim/closed/device queueing: ready ops wait in FIFO order and the critical path follows",
          "[sim]") {
  // A and B independent; A -> C. All on gpu0. FIFO by ready time, ties by topological order.
  Graph g;
  g.add_op(timed_op("A", 0.25));
  g.add_op(timed_op("B", 0.5));
  g.add_op(timed_op("C", 0.125));
  g.add_edge(0, 0, 2, 4);
  g.finalize();
  Cluster c = full_mesh(1);
  SimOptions opt;
  opt.record_op_times = true;
  Simulator sim(g, c, CostModel(), opt);
  SimResult r = sim.run(placement_of({0, 0, 0}));
  CHECK(r.op_start_s == std::vector<double>{0, 0.25, 0.75});
  CHECK(r.step_time_s == 0.875);
  CHECK(r.critical_path == std::vector<int32_t>{0, 1, 2});  // C queued behind B behind A
  // topo_priority gives the same order here (B precedes C topologically).
  opt.queue_policy = QueuePolicy::topo_priority;
  Simulator simt(g, c, CostModel(), opt);
  CHECK(simt.run(placement_of({0, 0, 0})).step_time_s == 0.875);
}

TEST_CASE("sim/closed/queue policies differ where ready times and topological order disagree",
          "[sim]") {
  // R (root) -> X (slow, gpu1) -> Y (gpu0); R -> Z1 -> Z2 (gpu0).
  // At t=0.25 Z1 is ready on gpu0; Y becomes ready later, so FIFO and topo agree on gpu0 unless
  // a later-ready op has an earlier topological position: here P (index 1, ready late).
  Graph g;
  g.add_op(timed_op("R", 0.25));   // 0
  g.add_op(timed_op("P", 0.25));   // 1: consumes X, topologically early by index
  g.add_op(timed_op("X", 0.25));   // 2 on gpu1
  g.add_op(timed_op("Q1", 0.25));  // 3 on gpu0
  g.add_op(timed_op("Q2", 0.25));  // 4 on gpu0
  g.add_edge(0, 0, 2, 0);
  g.add_edge(2, 0, 1, 0);
  g.add_edge(0, 0, 3, 0);
  g.add_edge(0, 0, 4, 0);
  g.finalize();
  Cluster c = full_mesh(2, kLinkBw_Bps, 0.0);
  SimOptions opt;
  opt.record_op_times = true;
  Simulator fifo(g, c, CostModel(), opt);
  opt.queue_policy = QueuePolicy::topo_priority;
  Simulator topo(g, c, CostModel(), opt);
  Placement p = placement_of({0, 0, 1, 0, 0});
  SimResult rf = fifo.run(p), rt = topo.run(p);
  // Both: R [0, .25], X on gpu1 [.25, .5], Q1 [.25, .5]. At .5 P and Q2 are both ready on gpu0;
  // FIFO picks Q2 (ready at .25, earlier), topo picks P (topological position before Q2).
  CHECK(rf.op_start_s[4] == 0.5);
  CHECK(rf.op_start_s[1] == 0.75);
  CHECK(rt.op_start_s[1] == 0.5);
  CHECK(rt.op_start_s[4] == 0.75);
  CHECK(rf.step_time_s == 1.0);
  CHECK(rt.step_time_s == 1.0);
}

TEST_CASE("sim/closed/trace and result JSON are well formed", "[sim][json]") {
  Graph g = roofline_chain();
  Cluster c = full_mesh(2);
  SimOptions opt;
  opt.record_trace = true;
  Simulator sim(g, c, half_efficiency_model(), opt);
  SimResult r = sim.run(placement_of({0, 1, 1}));
  nlohmann::json t = nlohmann::json::parse(trace_to_chrome_json(r, c));
  int complete = 0, names = 0;
  for (const auto& e : t.at("traceEvents")) {
    if (e.at("ph") == "X") {
      ++complete;
      CHECK(e.at("dur").get<double>() >= 0);
    }
    if (e.at("ph") == "M" && e.at("name") == "thread_name") ++names;
  }
  CHECK(complete == 3 + 1);  // three ops and one transfer
  CHECK(names == 2 + 2);     // two devices, two directed links
  nlohmann::json j = nlohmann::json::parse(sim_result_to_json(r, c, g));
  CHECK(j.at("step_time_s").get<double>() == r.step_time_s);
  CHECK(j.at("critical_path") == nlohmann::json::array({"A", "B", "C"}));
  CHECK(j.at("links").size() == 1);
}

TEST_CASE("sim/closed/an unfinalized graph is an InputError", "[sim]") {
  Graph g;
  g.add_op(timed_op("A", 0.25));
  Cluster c = full_mesh(1);
  REQUIRE_THROWS_AS(Simulator(g, c, CostModel()), InputError);
}

TEST_CASE("sim/closed/a graph of one op and no edges, and ops without outputs", "[sim]") {
  // Once read the input slots and outputs of the op through a null reference (no edges, no
  // tensors): UBSan's finding at the dispatch of the op.
  auto one_op = [](int outputs) {
    Graph g;
    g.name = "one";
    Op op = timed_op("A", 0.25);
    op.outputs.resize(outputs);
    g.add_op(op);
    g.finalize();
    return g;
  };
  Cluster c = full_mesh(2);
  SimOptions opt;
  opt.record_trace = true;
  opt.record_op_times = true;
  for (int outputs : {1, 0}) {
    INFO(outputs << " outputs");
    Graph g = one_op(outputs);
    Simulator sim(g, c, CostModel(), opt);
    for (int32_t d : {0, 1}) {
      SimResult r = sim.run(placement_of({d}));
      REQUIRE(r.valid);
      CHECK(r.step_time_s == 0.25);
      CHECK(r.devices[d].ops == 1);
      CHECK(r.transfers == 0);
      CHECK(r.critical_path == std::vector<int32_t>{0});
      CHECK(r.trace.size() == 1);
      auto st = sim.make_state();
      CHECK(sim.step_time(placement_of({d}), *st) == 0.25);
    }
    CHECK(sim.step_times({placement_of({0}), placement_of({1})}) ==
          std::vector<double>{0.25, 0.25});
  }
  // A chain whose last op (the last tensor-less one) is remote from its input.
  Graph g;
  g.name = "tail";
  g.add_op(timed_op("A", 0.25));
  Op b = timed_op("B", 0.5);
  b.outputs.clear();
  g.add_op(b);
  g.add_edge(0, 0, 1, 1024);
  g.finalize();
  Simulator sim(g, c, CostModel(), opt);
  SimResult r = sim.run(placement_of({0, 0}));
  REQUIRE(r.valid);
  CHECK(r.step_time_s == 0.75);
  CHECK(r.critical_path == std::vector<int32_t>{0, 1});
  CHECK(sim.run(placement_of({0, 1})).step_time_s == 0.75 + kLinkLat_s + 1024 / kLinkBw_Bps);
}

TEST_CASE("sim/lower bound: longest path and work / devices, each op on its fastest device",
          "[sim][bound]") {
  // a (1/4 s) -> b (1/8 s); c (1/2 s) alone; d (1/2 s) alone; two devices.
  Graph g;
  g.name = "bound";
  for (auto [n, t] : {std::pair{"a", 0.25}, {"b", 0.125}, {"c", 0.5}, {"d", 0.5}}) {
    Op op = test::timed_op(n, t);
    op.id = g.num_ops();
    g.add_op(op);
  }
  g.add_edge(0, 0, 1, 1024);
  g.finalize();
  Simulator sim(g, test::full_mesh(2), CostModel());
  StepBound b = step_time_lower_bound(sim);
  CHECK(b.critical_path_s == 0.5);  // c (or d) alone beats a -> b (0.375)
  CHECK(b.work_s == 1.375 / 2);     // 0.6875
  CHECK(b.bound_s == 1.375 / 2);
  Simulator sim4(g, test::full_mesh(4), CostModel());
  CHECK(step_time_lower_bound(sim4).bound_s == 0.5);  // the path bound wins on four devices
}
