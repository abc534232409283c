// `gdp compare`: the main job. Materializes a workload suite, places every graph with each
// method, simulates the placements in parallel and prints the step times side by side.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/methods.h"
#include "core/io.h"
#include "datasets/suite.h"
#include "sim/simulator.h"

namespace gdp::cli {

namespace {

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, ','))
    if (!part.empty()) out.push_back(part);
  return out;
}

struct Cell {
  bool valid = false;
  double step_s = 0;
  std::string reason;
};

}  // namespace

int cmd_compare(int argc, char** argv) {
  Args a(argc, argv, {"--suite", "--methods", "--profile", "--baseline"}, {"--json", "--references"});
  if (a.help()) {
    std::printf(
        "usage: gdp compare [--suite S.json] [--methods m1,m2,...] [--baseline M] [--json]\n\n"
        "Generates or reads every graph of a workload suite, places it on the suite's cluster\n"
        "with each method, simulates one training step per placement and prints the step times\n"
        "and the speed-up of each method over the baseline method.\n"
        "  --suite S     suite file (default datasets/suites/smoke.json)\n"
        "  --methods M   comma-separated methods (default single,round-robin,human)\n"
        "  --baseline M  one of the methods; speed-ups are relative to it (default single, else the\n"
        "                first method)\n"
        "  --references  also simulate the reference placements the suite lists\n"
        "  --profile F   device profile JSON for the cost model (default: built-in)\n"
        "  --json        print one JSON object instead of the table\n");
    return 0;
  }
  if (!a.positional().empty()) throw UsageError("unexpected argument '" + a.positional()[0] + "'");
  const std::string suite_path = a.get("--suite", "datasets/suites/smoke.json");
  std::vector<std::string> methods = split_commas(a.get("--methods", "single,round-robin,human"));
  if (methods.empty()) throw UsageError("--methods needs at least one method");
  for (const auto& m : methods)
    if (!is_placement_method(m)) throw UsageError("unknown method '" + m + "' in --methods (known: single, round-robin, human)");
  const bool has_single = std::find(methods.begin(), methods.end(), "single") != methods.end();
  const std::string baseline = a.get("--baseline", has_single ? "single" : methods.front());
  if (std::find(methods.begin(), methods.end(), baseline) == methods.end())
    throw UsageError("--baseline '" + baseline + "' is not one of --methods");
  CostModel cost = a.has("--profile") ? CostModel::from_json_file(a.get("--profile")) : CostModel();

  std::vector<datasets::SuiteEntry> entries = datasets::load_suite(suite_path);
  std::vector<std::string> columns = methods;
  if (a.has("--references"))
    for (const auto& e : entries)
      for (const auto& [label, p] : e.placements)
        if (std::find(columns.begin(), columns.end(), "ref:" + label) == columns.end())
          columns.push_back("ref:" + label);

  std::vector<std::vector<Cell>> table(entries.size(), std::vector<Cell>(columns.size()));
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto& e = entries[i];
    Simulator sim(e.graph, e.cluster, cost);
    std::vector<Placement> ps(columns.size());
    std::vector<bool> have(columns.size(), false);
    for (size_t k = 0; k < columns.size(); ++k) {
      if (columns[k].rfind("ref:", 0) == 0) {
        auto it = e.placements.find(columns[k].substr(4));
        if (it == e.placements.end()) continue;
        ps[k] = it->second;
      } else {
        ps[k] = place_with_method(columns[k], e.graph, e.cluster);
      }
      have[k] = true;
    }
    // One simulator state per thread; placements of one graph in parallel.
    // Exceptions may not leave the OpenMP region: keep the first, rethrow it afterwards.
    std::exception_ptr error;
#pragma omp parallel for schedule(dynamic)
    for (int64_t k = 0; k < static_cast<int64_t>(columns.size()); ++k) {
      if (!have[k]) continue;
      try {
        auto state = sim.make_state();
        SimResult r = sim.run(ps[k], *state);
        table[i][k] = Cell{r.valid, r.step_time_s, r.reason};
        if (!r.valid) table[i][k].step_s = INFINITY;
        if (r.valid) table[i][k].reason.clear();
      } catch (...) {
#pragma omp critical(gdp_compare_error)
        if (!error) error = std::current_exception();
      }
    }
    if (error) std::rethrow_exception(error);
    for (size_t k = 0; k < columns.size(); ++k)
      if (!have[k]) table[i][k].reason = "n/a";
  }

  const auto base_it = std::find(columns.begin(), columns.end(), baseline);
  const size_t base = base_it == columns.end() ? columns.size() : base_it - columns.begin();
  if (a.has("--json")) {
    nlohmann::ordered_json j;
    j["suite"] = suite_path;
    j["methods"] = columns;
    j["baseline"] = baseline;
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (size_t i = 0; i < entries.size(); ++i) {
      nlohmann::ordered_json r;
      r["name"] = entries[i].name;
      r["ops"] = entries[i].graph.num_ops();
      r["cluster"] = entries[i].cluster_name;
      nlohmann::ordered_json cells = nlohmann::ordered_json::object();
      for (size_t k = 0; k < columns.size(); ++k) {
        const Cell& c = table[i][k];
        nlohmann::ordered_json cj;
        cj["valid"] = c.valid;
        if (c.valid) cj["step_time_s"] = c.step_s;
        else cj["reason"] = c.reason;
        cells[columns[k]] = cj;
      }
      r["results"] = cells;
      rows.push_back(r);
    }
    j["entries"] = rows;
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("suite %s: %zu graphs; simulated step time in ms (x: speed-up over %s)\n\n", suite_path.c_str(),
              entries.size(), baseline.c_str());
  std::printf("%-30s %8s %-16s", "graph", "ops", "cluster");
  for (const auto& c : columns) std::printf(" %20s", c.c_str());
  std::printf("\n");
  for (size_t i = 0; i < entries.size(); ++i) {
    std::printf("%-30s %8d %-16s", entries[i].name.c_str(), entries[i].graph.num_ops(), entries[i].cluster_name.c_str());
    for (size_t k = 0; k < columns.size(); ++k) {
      const Cell& c = table[i][k];
      char buf[64];
      if (c.reason == "n/a") std::snprintf(buf, sizeof buf, "-");
      else if (!c.valid) std::snprintf(buf, sizeof buf, "%s", c.reason.rfind("out of memory", 0) == 0 ? "OOM" : "invalid");
      else if (base < columns.size() && table[i][base].valid)
        std::snprintf(buf, sizeof buf, "%.2f (%.2fx)", c.step_s * 1e3, table[i][base].step_s / c.step_s);
      else std::snprintf(buf, sizeof buf, "%.2f", c.step_s * 1e3);
      std::printf(" %20s", buf);
    }
    std::printf("\n");
  }
  // Geometric-mean speed-up over the baseline, on entries where both are valid.
  if (base < columns.size()) {
    std::printf("\n%-56s", "geomean speed-up (entries valid under both)");
    for (size_t k = 0; k < columns.size(); ++k) {
      double logsum = 0;
      int n = 0;
      for (size_t i = 0; i < entries.size(); ++i)
        if (table[i][k].valid && table[i][base].valid) {
          logsum += std::log(table[i][base].step_s / table[i][k].step_s);
          ++n;
        }
      char buf[32];
      if (n) std::snprintf(buf, sizeof buf, "%.3fx (%d)", std::exp(logsum / n), n);
      else std::snprintf(buf, sizeof buf, "-");
      std::printf(" %20s", buf);
    }
    std::printf("\n");
  }
  int invalid = 0;
  for (size_t i = 0; i < entries.size(); ++i)
    for (size_t k = 0; k < columns.size(); ++k)
      if (!table[i][k].valid && table[i][k].reason != "n/a") {
        if (!invalid++) std::printf("\ninvalid placements:\n");
        std::printf("  %s / %s: %s\n", entries[i].name.c_str(), columns[k].c_str(), table[i][k].reason.c_str());
      }
  return 0;
}

}  // namespace gdp::cli
