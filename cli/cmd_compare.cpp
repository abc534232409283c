// `gdp compare`: the main job. Materializes a workload suite, places every graph with each
// method and simulates the placements (eval/evaluate.h, in parallel over the cells), then
// prints the step times side by side.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/method_columns.h"
#include "core/io.h"
#include "datasets/suite.h"
#include "eval/evaluate.h"
#include "place/options.h"
#include "place/registry.h"

namespace gdp::cli {

namespace {

// The results of a comparison: every (graph, column) record, the columns (the methods, then the
// reference labels in order of first appearance) and the baseline column.
struct Comparison {
  std::string suite_path, baseline;
  const std::vector<datasets::SuiteEntry>* entries = nullptr;
  const std::vector<eval::Record>* records = nullptr;
  std::vector<std::string> columns;
  std::map<std::pair<std::string, std::string>, const eval::Record*> cell;

  Comparison(std::string suite, std::string base, const std::vector<datasets::SuiteEntry>& e,
             const std::vector<eval::Record>& r, std::vector<std::string> methods)
      : suite_path(std::move(suite)),
        baseline(std::move(base)),
        entries(&e),
        records(&r),
        columns(std::move(methods)) {
    for (const eval::Record& x : r) {
      cell[{x.graph, x.method}] = &x;
      if (std::find(columns.begin(), columns.end(), x.method) == columns.end())
        columns.push_back(x.method);
    }
  }
  const eval::Record* find(size_t i, const std::string& col) const {
    auto it = cell.find({(*entries)[i].name, col});
    return it == cell.end() ? nullptr : it->second;
  }
};

void print_json(const Comparison& c) {
  const auto& entries = *c.entries;
  nlohmann::ordered_json j;
  j["suite"] = c.suite_path;
  j["methods"] = c.columns;
  j["baseline"] = c.baseline;
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (size_t i = 0; i < entries.size(); ++i) {
    nlohmann::ordered_json row;
    row["name"] = entries[i].name;
    row["ops"] = entries[i].graph.num_ops();
    row["cluster"] = entries[i].cluster_name;
    for (const eval::Record& r : *c.records)
      if (r.graph == entries[i].name) {
        row["lower_bound_s"] = r.lower_bound_s;
        break;
      }
    nlohmann::ordered_json cells = nlohmann::ordered_json::object();
    for (const auto& col : c.columns) {
      const eval::Record* r = c.find(i, col);
      nlohmann::ordered_json cj;
      cj["valid"] = r && r->valid();
      if (r && r->valid())
        cj["step_time_s"] = r->step_time_s;
      else
        cj["reason"] = r ? r->reason : std::string("n/a");
      if (r && r->valid()) cj["gap_to_bound"] = r->gap_to_bound();
      if (r) {
        cj["validity"] = eval::validity_name(r->validity);
        cj["wall_s"] = r->wall_s;
        cj["samples"] = r->samples;
      }
      cells[col] = cj;
    }
    row["results"] = cells;
    rows.push_back(row);
  }
  j["entries"] = rows;
  std::printf("%s\n", j.dump(2).c_str());
}

// One cell of the table: the step time in ms and the speed-up over the baseline, or why not.
std::string cell_text(const eval::Record* r, const eval::Record* base) {
  char buf[64];
  if (!r)
    std::snprintf(buf, sizeof buf, "-");
  else if (r->validity == eval::Validity::out_of_memory)
    std::snprintf(buf, sizeof buf, "OOM");
  else if (r->validity == eval::Validity::method_failed)
    std::snprintf(buf, sizeof buf, "failed");
  else if (!r->valid())
    std::snprintf(buf, sizeof buf, "invalid");
  else if (base && base->valid())
    std::snprintf(buf, sizeof buf, "%.2f (%.2fx)", r->step_time_s * 1e3,
                  base->step_time_s / r->step_time_s);
  else
    std::snprintf(buf, sizeof buf, "%.2f", r->step_time_s * 1e3);
  return buf;
}

void print_rows(const Comparison& c) {
  const auto& entries = *c.entries;
  std::printf("suite %s: %zu graphs; simulated step time in ms (x: speed-up over %s)\n\n",
              c.suite_path.c_str(), entries.size(), c.baseline.c_str());
  std::printf("%-30s %8s %-16s %9s", "graph", "ops", "cluster", "bound");
  for (const auto& col : c.columns) std::printf(" %20s", col.c_str());
  std::printf("\n");
  for (size_t i = 0; i < entries.size(); ++i) {
    double bound = 0;
    for (const auto& col : c.columns)
      if (const eval::Record* r = c.find(i, col)) bound = r->lower_bound_s;
    std::printf("%-30s %8d %-16s %9.2f", entries[i].name.c_str(), entries[i].graph.num_ops(),
                entries[i].cluster_name.c_str(), bound * 1e3);
    const eval::Record* base = c.find(i, c.baseline);
    for (const auto& col : c.columns) std::printf(" %20s", cell_text(c.find(i, col), base).c_str());
    std::printf("\n");
  }
}

// The summary lines under the table: geomean speed-up over the baseline, geomean gap to the
// lower bound, total placement time; then the invalid cells and why.
void print_summary(const Comparison& c) {
  const auto& entries = *c.entries;
  std::printf("\n%-66s", "geomean speed-up (entries valid under both)");
  for (const auto& col : c.columns) {
    const eval::GeoMean gm = eval::geomean_speedup(*c.records, col, c.baseline);
    char buf[32];
    if (gm.n)
      std::snprintf(buf, sizeof buf, "%.3fx (%d)", gm.value, gm.n);
    else
      std::snprintf(buf, sizeof buf, "-");
    std::printf(" %20s", buf);
  }
  std::printf("\n%-66s", "geomean step / lower bound (valid entries)");
  for (const auto& col : c.columns) {
    double logsum = 0;
    int n = 0;
    for (size_t i = 0; i < entries.size(); ++i)
      if (const eval::Record* r = c.find(i, col); r && r->valid() && r->lower_bound_s > 0) {
        logsum += std::log(r->gap_to_bound());
        ++n;
      }
    char buf[32];
    if (n)
      std::snprintf(buf, sizeof buf, "%.3f (%d)", std::exp(logsum / n), n);
    else
      std::snprintf(buf, sizeof buf, "-");
    std::printf(" %20s", buf);
  }
  std::printf("\n%-66s", "total placement time (s)");
  for (const auto& col : c.columns) {
    double t = 0;
    for (size_t i = 0; i < entries.size(); ++i)
      if (const eval::Record* r = c.find(i, col)) t += r->wall_s;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", t);
    std::printf(" %20s", buf);
  }
  std::printf("\n");
  int invalid = 0;
  for (size_t i = 0; i < entries.size(); ++i)
    for (const auto& col : c.columns) {
      const eval::Record* r = c.find(i, col);
      if (!r || r->valid()) continue;
      if (!invalid++) std::printf("\ninvalid placements:\n");
      std::printf("  %s / %s: %s\n", entries[i].name.c_str(), col.c_str(), r->reason.c_str());
    }
}

}  // namespace

int cmd_compare(int argc, char** argv) {
  Args a(argc, argv,
         {"--suite", "--methods", "--profile", "--baseline", "--seed", "--samples", "--seconds",
          "--records", "--options"},
         {"--json", "--references"});
  if (a.help()) {
    std::string known;
    for (const auto& m : place::registry().names()) known += (known.empty() ? "" : ", ") + m;
    std::printf(
        "usage: gdp compare [--suite S.json] [--methods m1,m2,...] [--baseline M] [--json]\n\n"
        "Generates or reads every graph of a workload suite, places it on the suite's cluster\n"
        "with each method, simulates one training step per placement and prints the step times\n"
        "and the speed-up of each method over the baseline method.\n"
        "  --suite S     suite file (default datasets/suites/smoke.json)\n"
        "  --methods M   comma-separated methods (default single,round-robin,human); known:\n"
        "                %s\n"
        "                LABEL=METHOD runs METHOD under the column LABEL (one method twice\n"
        "                with different options: gdp,zeroshot=gdp)\n"
        "  --options O   a JSON object (or a file holding one) of options per column:\n"
        "                '{\"zeroshot\": {\"checkpoint\": \"runs/pre\"}}' (gdp place --list)\n"
        "  --baseline M  one of the methods; speed-ups are relative to it (default single, else "
        "the\n"
        "                first method)\n"
        "  --references  also simulate the reference placements the suite lists\n"
        "  --seed S      seed of every method (default 1)\n"
        "  --samples N   budget per search method: simulated placements\n"
        "  --seconds S   budget per search method: wall-clock seconds\n"
        "  --profile F   device profile JSON for the cost model (default: built-in)\n"
        "  --json        print one JSON object instead of the table\n"
        "  --records F   also write every cell's full record (samples, wall time, options,\n"
        "                note, the best-so-far curve) as a JSON array to F\n",
        known.c_str());
    return 0;
  }
  if (!a.positional().empty()) throw UsageError("unexpected argument '" + a.positional()[0] + "'");
  const std::string suite_path = a.get("--suite", "datasets/suites/smoke.json");
  eval::Spec spec;
  spec.methods =
      parse_method_columns(a.get("--methods", "single,round-robin,human"), a.get("--options", ""));
  std::vector<std::string> methods;
  for (const eval::MethodSpec& m : spec.methods) methods.push_back(m.label);
  const bool has_single = std::find(methods.begin(), methods.end(), "single") != methods.end();
  const std::string baseline = a.get("--baseline", has_single ? "single" : methods.front());
  if (std::find(methods.begin(), methods.end(), baseline) == methods.end())
    throw UsageError("--baseline '" + baseline + "' is not one of --methods");
  spec.seeds = {static_cast<uint64_t>(a.integer("--seed", 1, 0, INT64_MAX))};
  spec.budget.samples = a.integer("--samples", 0, 1, int64_t{1} << 40);
  spec.budget.seconds = a.number("--seconds", 0, 1e-3, 1e9);
  spec.references = a.has("--references");
  CostModel cost = a.has("--profile") ? CostModel::from_json_file(a.get("--profile")) : CostModel();

  std::vector<datasets::SuiteEntry> entries = datasets::load_suite(suite_path);
  const std::vector<eval::Record> records = eval::evaluate(entries, spec, cost);
  if (a.has("--records"))
    write_text_file_atomic(a.get("--records"), eval::to_json(records).dump(1));

  const Comparison c(suite_path, baseline, entries, records, methods);
  if (a.has("--json")) {
    print_json(c);
    return 0;
  }
  print_rows(c);
  print_summary(c);
  return 0;
}

}  // namespace gdp::cli
