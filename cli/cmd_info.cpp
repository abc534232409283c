// `gdp info G [--cluster C] [--json]`: op and edge counts, flops split by phase, parameters
// (count, weight bytes, optimizer state bytes), activation bytes and, with a cluster, the
// step-time lower bound and the memory every placement holds at once (sim/lower_bound.h).
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/io.h"
#include "sim/cost_model.h"
#include "sim/lower_bound.h"
#include "sim/simulator.h"

namespace gdp::cli {

int cmd_info(int argc, char** argv) {
  Args a(argc, argv, {"--cluster", "--profile"}, {"--json"});
  if (a.help()) {
    std::printf(
        "usage: gdp info GRAPH [--cluster C] [--profile F] [--json]\n\n"
        "Prints a graph's op and edge counts, total flops with the forward/backward/update split,\n"
        "the parameters (count of weights), their bytes and the optimizer state's bytes, and the\n"
        "activation (output) bytes. GRAPH is a gdp-graph JSON file or a PipeDream profile\n"
        "(detected from content; imported with Adam's state, see gdp convert --optimizer).\n"
        "  --cluster C  also the step-time lower bound on cluster C (a preset or cluster JSON):\n"
        "               max(longest path of op times on their fastest device, total op time\n"
        "               / devices); no placement can beat it. And the memory bound: bytes\n"
        "               that every placement holds at once, summed over the devices, and\n"
        "               the fewest of the cluster's first devices whose capacity covers it\n"
        "  --profile F  device profile JSON for the op times (default: built-in)\n"
        "  --json   print one JSON object (keys: name, ops, edges, flops, flops_forward,\n"
        "           flops_backward, flops_update, ops_forward, ops_backward, ops_update,\n"
        "           parameters, parameter_bytes, optimizer_state_bytes, activation_bytes,\n"
        "           temp_bytes, colocation_groups, depth; with --cluster: cluster,\n"
        "           lower_bound_s, critical_path_s, work_bound_s, memory_bound_bytes,\n"
        "           min_devices (0 when even all devices fall short))\n");
    return 0;
  }
  if (a.positional().size() != 1)
    throw UsageError("expected exactly one GRAPH argument (see --help)");
  Graph g = read_graph_file(a.positional()[0]);
  GraphSummary s = g.summary();
  bool with_bound = a.has("--cluster");
  StepBound bound;
  int64_t memory_bound = 0;
  int32_t min_devices = 0;
  std::string cluster_name;
  if (with_bound) {
    cluster_name = a.get("--cluster");
    Cluster c = read_cluster(cluster_name);
    CostModel cost =
        a.has("--profile") ? CostModel::from_json_file(a.get("--profile")) : CostModel();
    Simulator sim(g, c, cost);
    bound = step_time_lower_bound(sim);
    memory_bound = memory_lower_bound_bytes(g);
    min_devices = fewest_devices_holding(c, memory_bound);
  } else if (a.has("--profile")) {
    throw UsageError("--profile needs --cluster");
  }
  if (a.has("--json")) {
    nlohmann::ordered_json j = graph_summary_json(g);
    if (with_bound) {
      j["cluster"] = cluster_name;
      j["lower_bound_s"] = bound.bound_s;
      j["critical_path_s"] = bound.critical_path_s;
      j["work_bound_s"] = bound.work_s;
      j["memory_bound_bytes"] = memory_bound;
      j["min_devices"] = min_devices;
    }
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  auto pct = [&](double x) { return s.flops > 0 ? 100.0 * x / s.flops : 0.0; };
  std::printf("graph            %s\n", g.name.c_str());
  std::printf("ops              %lld (forward %lld, backward %lld, update %lld)\n",
              (long long)s.ops, (long long)s.ops_forward, (long long)s.ops_backward,
              (long long)s.ops_update);
  std::printf("edges            %lld\n", (long long)s.edges);
  std::printf("depth            %lld ops on the longest path\n", (long long)s.depth);
  std::printf("flops            %.4g (forward %.1f%%, backward %.1f%%, update %.1f%%)\n", s.flops,
              pct(s.flops_forward), pct(s.flops_backward), pct(s.flops_update));
  std::printf("parameters       %lld (%.2fM)\n", (long long)s.parameters, s.parameters / 1e6);
  std::printf("parameter bytes  %lld (%.2f MiB)\n", (long long)s.parameter_bytes,
              s.parameter_bytes / 1048576.0);
  std::printf("optimizer bytes  %lld (%.2f MiB)\n", (long long)s.optimizer_bytes,
              s.optimizer_bytes / 1048576.0);
  std::printf("activation bytes %lld (%.2f MiB)\n", (long long)s.activation_bytes,
              s.activation_bytes / 1048576.0);
  std::printf("colocation groups %lld\n", (long long)s.colocation_groups);
  if (with_bound)
    std::printf("lower bound      %.6g s on %s (critical path %.6g s, work / devices %.6g s)\n",
                bound.bound_s, cluster_name.c_str(), bound.critical_path_s, bound.work_s);
  if (with_bound)
    std::printf("memory bound     %.2f MiB held at once, summed over devices: %s\n",
                memory_bound / 1048576.0,
                min_devices > 0 ? ("at least " + std::to_string(min_devices) + " device(s)").c_str()
                                : "more than the cluster holds");
  return 0;
}

}  // namespace gdp::cli
