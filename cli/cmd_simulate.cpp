// `gdp simulate`: one training step of a placed graph on a cluster, with an optional trace.
#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/io.h"
#include "place/registry.h"
#include "sim/simulator.h"

namespace gdp::cli {

namespace {
// A placement file, or the name of a method (run with its default options and seed 1).
Placement placement_from_arg(const std::string& spec, const Graph& g, const Cluster& c,
                             const CostModel& cost) {
  const place::Registry& reg = place::registry();
  if (!reg.find(spec)) return read_placement_file(spec, g, c.num_devices());
  place::Problem problem(g, c, cost);
  return place::place(place::prepare(reg, spec), problem, place::Budget(), 1).placement;
}

std::string method_list() {
  std::string r;
  for (const auto& m : place::registry().names()) r += (r.empty() ? "" : ", ") + m;
  return r;
}
}  // namespace

int cmd_simulate(int argc, char** argv) {
  Args a(argc, argv, {"--graph", "--cluster", "--placement", "--trace", "--profile", "--queue"},
         {"--json"});
  if (a.help()) {
    std::printf(
        "usage: gdp simulate --graph G --cluster C --placement P [--trace T.json] [--json]\n"
        "                    [--profile PROFILE.json] [--queue fifo|topo]\n\n"
        "Simulates one training step (discrete-event: a compute stream per device, a FIFO per\n"
        "link direction, memory per device) and prints the step time and per-device figures.\n"
        "  --graph G       gdp-graph JSON or PipeDream profile\n"
        "  --cluster C     cluster JSON file or preset (see `gdp cluster --list`)\n"
        "  --placement P   placement JSON (docs/formats.md) or a method (default options, seed\n"
        "                  1): %s\n"
        "  --trace T.json  write a Chrome trace (open in Perfetto / chrome://tracing)\n"
        "  --profile F     device profile JSON for the cost model (default: built-in)\n"
        "  --queue Q       ready-queue order per device: fifo (default) or topo\n"
        "  --json          print one JSON object (step_time_s, valid, reason, devices, links, "
        "...)\n"
        "Exit status: 0 also for an invalid placement (see 'valid'); 1 bad input; 2 bad usage.\n",
        method_list().c_str());
    return 0;
  }
  if (!a.positional().empty()) throw UsageError("unexpected argument '" + a.positional()[0] + "'");
  Graph g = read_graph_file(a.require("--graph"));
  Cluster c = read_cluster(a.require("--cluster"));
  CostModel cost = a.has("--profile") ? CostModel::from_json_file(a.get("--profile")) : CostModel();
  Placement p = placement_from_arg(a.require("--placement"), g, c, cost);
  SimOptions opt;
  std::string q = a.get("--queue", "fifo");
  if (q == "fifo")
    opt.queue_policy = QueuePolicy::fifo;
  else if (q == "topo")
    opt.queue_policy = QueuePolicy::topo_priority;
  else
    throw UsageError("--queue expects fifo or topo, got '" + q + "'");
  opt.record_trace = a.has("--trace");
  Simulator sim(g, c, cost, opt);
  SimResult r = sim.run(p);
  if (a.has("--trace")) write_text_file_atomic(a.get("--trace"), trace_to_chrome_json(r, c));
  if (a.has("--json")) {
    std::printf("%s\n", sim_result_to_json(r, c, g).c_str());
    return 0;
  }
  std::printf("graph %s (%d ops) on %s (%d devices)\n", g.name.c_str(), g.num_ops(), c.name.c_str(),
              c.num_devices());
  if (!r.valid) {
    std::printf("INVALID placement: %s\n", r.reason.c_str());
    return 0;
  }
  std::printf("step time %.6f s\n", r.step_time_s);
  std::printf("%-14s %6s %12s %10s %14s\n", "device", "ops", "busy_s", "util", "peak_mem_MiB");
  for (int32_t d = 0; d < c.num_devices(); ++d) {
    const DeviceStats& s = r.devices[d];
    std::printf("%-14s %6d %12.6f %9.1f%% %14.1f\n", c.devices[d].name.c_str(), s.ops, s.busy_s,
                r.step_time_s > 0 ? 100 * s.busy_s / r.step_time_s : 0.0,
                s.peak_memory_bytes / 1048576.0);
  }
  int64_t moved = 0;
  for (int64_t b : r.link_bytes) moved += b;
  std::printf("bytes over links %lld; critical path %zu ops\n", (long long)moved,
              r.critical_path.size());
  return 0;
}

}  // namespace gdp::cli
