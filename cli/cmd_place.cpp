// `gdp place`: runs one placement method from the registry (place/registry.h) on a graph and
// a cluster, prints the simulated step time, validity, wall time and samples used, and
// writes the placement. `gdp place --list` shows every method with its options.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/io.h"
#include "eval/evaluate.h"
#include "place/registry.h"
#include "rl/gdp/pretrained.h"
#include "sim/cost_model.h"

namespace gdp::cli {

namespace {

// One status line on stderr, rewritten at most every half second.
place::ProgressFn progress_printer() {
  auto last = std::make_shared<double>(-1.0);
  return [last](const place::Progress& p) {
    if (*last >= 0 && p.wall_s - *last < 0.5) return;
    *last = p.wall_s;
    char best[32] = "-";
    if (std::isfinite(p.best_step_s))
      std::snprintf(best, sizeof best, "%.4g ms", p.best_step_s * 1e3);
    std::fprintf(stderr, "\r%s: %lld samples, %.1f s, best %s", p.method.c_str(),
                 static_cast<long long>(p.samples), p.wall_s, best);
    if (p.fraction >= 0) std::fprintf(stderr, " (%.0f%%)", 100 * p.fraction);
    if (!p.message.empty()) std::fprintf(stderr, " %s", p.message.c_str());
    std::fprintf(stderr, "   ");
    std::fflush(stderr);
  };
}

}  // namespace

int cmd_place(int argc, char** argv) {
  Args a(argc, argv,
         {"--method", "--graph", "--cluster", "-o", "--output", "--options", "--seed", "--samples",
          "--seconds", "--profile"},
         {"--list", "--json", "--progress"});
  const place::Registry& reg = place::registry();
  if (a.help()) {
    std::string known;
    for (const auto& m : reg.names()) known += (known.empty() ? "" : ", ") + m;
    std::printf(
        "usage: gdp place --list\n"
        "       gdp place --method M --graph G --cluster C [-o P.json] [--options JSON|FILE]\n"
        "                 [--seed S] [--samples N] [--seconds S] [--profile F] [--json]\n\n"
        "Computes a placement of graph G (gdp-graph JSON or PipeDream profile) on cluster C\n"
        "(a preset such as v100x4-nvlink, or a cluster JSON file) with method M, prints its\n"
        "simulated step time, validity, wall time and samples used, and writes it atomically as\n"
        "gdp-placement JSON.\n"
        "  --list          every method with its description and options\n"
        "  --method M      one of: %s\n"
        "  --options O     the method's options: a JSON object ('{\"samples\": 64}') or a file\n"
        "  --seed S        random seed (default 1): the same seed gives the same placement\n"
        "  --samples N     budget: most placements a search may simulate\n"
        "  --seconds S     budget: most wall-clock seconds a search may take\n"
        "  --profile F     device profile JSON for the cost model (default: built-in); every\n"
        "                  method sees it\n"
        "  -o, --output F  write the placement here\n"
        "  --json          print one JSON object (method, resolved options, step time, ...)\n"
        "  --progress      show the search's progress on stderr (default when stderr is a tty)\n",
        known.c_str());
    return 0;
  }
  if (!a.positional().empty()) throw UsageError("unexpected argument '" + a.positional()[0] + "'");
  if (a.has("--list")) {
    std::fputs(place::describe_methods(reg).c_str(), stdout);
    std::printf("\n(gdp, gdp-anneal: %s)\n", rl::pretrained_summary().c_str());
    return 0;
  }
  if (a.has("-o") && a.has("--output")) throw UsageError("give -o or --output, not both");
  const std::string out = a.has("-o") ? a.get("-o") : a.get("--output");
  if ((a.has("-o") || a.has("--output")) && out.empty())
    throw UsageError("the output path is empty");
  // Usage first (method, options, budget), then the inputs.
  const std::string method = a.require("--method");
  nlohmann::json user_options;
  std::string options_source;
  if (a.has("--options")) {
    const std::string arg = a.get("--options");
    user_options = place::parse_options_arg(arg);
    const size_t k = arg.find_first_not_of(" \t\r\n");
    options_source = k != std::string::npos && arg[k] == '{' ? "--options" : arg;
  }
  const place::PreparedMethod pm = place::prepare(reg, method, user_options, options_source);
  place::Budget budget;
  budget.samples = a.integer("--samples", 0, 1, int64_t{1} << 40);
  budget.seconds = a.number("--seconds", 0, 1e-3, 1e9);
  const uint64_t seed = static_cast<uint64_t>(a.integer("--seed", 1, 0, INT64_MAX));
  CostModel cost = a.has("--profile") ? CostModel::from_json_file(a.get("--profile")) : CostModel();
  Graph g = read_graph_file(a.require("--graph"));
  Cluster c = read_cluster(a.require("--cluster"));

  place::Problem problem(g, c, cost);
  const bool show = a.has("--progress") || (!a.has("--json") && isatty(STDERR_FILENO));
  place::PlaceResult res =
      place::place(pm, problem, budget, seed, show ? progress_printer() : place::ProgressFn());
  if (show) std::fprintf(stderr, "\n");
  if (!out.empty()) write_placement_file(res.placement, g, c.num_devices(), out);
  eval::Record r;
  eval::simulate_into(problem, res.placement, r);

  if (a.has("--json")) {
    nlohmann::ordered_json j;
    j["graph"] = g.name;
    j["ops"] = g.num_ops();
    j["cluster"] = c.name;
    j["method"] = method;
    j["options"] = res.report.options;
    j["seed"] = seed;
    j["valid"] = r.valid();
    j["validity"] = eval::validity_name(r.validity);
    if (r.valid())
      j["step_time_s"] = r.step_time_s;
    else
      j["step_time_s"] = nullptr;
    j["reason"] = r.reason;
    j["samples"] = res.report.samples;
    j["wall_s"] = res.report.wall_s;
    j["note"] = res.report.note;
    j["peak_memory_bytes"] = r.peak_memory_bytes;
    if (!out.empty()) j["output"] = out;
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  const std::string head =
      (out.empty() ? std::string() : out + ": ") + method + " placement (" + res.report.note + ")";
  if (r.valid())
    std::printf("%s, simulated step %.6g s\n", head.c_str(), r.step_time_s);
  else
    std::printf("%s, INVALID (%s): %s\n", head.c_str(), eval::validity_name(r.validity),
                r.reason.c_str());
  std::printf("  %lld samples simulated in %.3f s; options %s\n",
              static_cast<long long>(res.report.samples), res.report.wall_s,
              res.report.options.dump().c_str());
  return 0;
}

}  // namespace gdp::cli
