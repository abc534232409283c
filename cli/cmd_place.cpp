// `gdp place --method M --graph G --cluster C -o P.json`: computes a placement with a named
// method (cli/methods.h: human expert rules, single device, round-robin, ...) and writes it
// as placement JSON, printing its simulated step time.
#include <cstdio>
#include <string>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/methods.h"
#include "core/io.h"
#include "sim/simulator.h"

namespace gdp::cli {

int cmd_place(int argc, char** argv) {
  Args a(argc, argv, {"--method", "--graph", "--cluster", "-o", "--output"}, {});
  if (a.help()) {
    std::string known;
    for (const auto& m : placement_methods()) known += (known.empty() ? "" : ", ") + m;
    std::printf(
        "usage: gdp place --method M --graph G --cluster C -o P.json\n\n"
        "Computes a placement of graph G (gdp-graph JSON or PipeDream profile) on cluster C\n"
        "(a preset such as v100x4-nvlink, or a cluster JSON file), writes it atomically as\n"
        "gdp-placement JSON and prints its simulated step time.\n"
        "  --method M      one of: %s\n"
        "                  human: the expert placement (docs/workloads.md): a layer or stack\n"
        "                  per GPU in contiguous blocks, embeddings/softmax beside their layer,\n"
        "                  gradients and updates with their forward op; CNNs on one GPU, or\n"
        "                  split into stages when they do not fit\n"
        "  --graph G       graph file\n"
        "  --cluster C     cluster preset or file\n"
        "  -o, --output F  output placement file\n",
        known.c_str());
    return 0;
  }
  if (!a.positional().empty()) throw UsageError("unexpected argument '" + a.positional()[0] + "'");
  if (a.has("-o") && a.has("--output")) throw UsageError("give -o or --output, not both");
  const std::string out = a.has("-o") ? a.get("-o") : a.require("--output");
  if (out.empty()) throw UsageError("the output path is empty");
  const std::string method = a.require("--method");
  if (!is_placement_method(method)) place_with_method(method, Graph(), Cluster());  // throws
  Graph g = read_graph_file(a.require("--graph"));
  Cluster c = read_cluster(a.require("--cluster"));
  std::string note;
  Placement p = place_with_method(method, g, c, &note);
  write_placement_file(p, g, c.num_devices(), out);
  Simulator sim(g, c, CostModel());
  SimResult r = sim.run(p);
  if (r.valid)
    std::printf("%s: %s placement (%s), simulated step %.6g s\n", out.c_str(), method.c_str(),
                note.c_str(), r.step_time_s);
  else
    std::printf("%s: %s placement (%s), INVALID: %s\n", out.c_str(), method.c_str(), note.c_str(),
                r.reason.c_str());
  return 0;
}

}  // namespace gdp::cli
