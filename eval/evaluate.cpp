// Suite x methods x seeds, in parallel: every cell placed through the registry, simulated,
// and recorded with its validity; geometric means; JSON.
#include "eval/evaluate.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <map>
#include <memory>
#include <tuple>

#include "core/error.h"
#include "place/problem.h"
#include "sim/lower_bound.h"

namespace gdp::eval {

const char* validity_name(Validity v) {
  switch (v) {
    case Validity::valid:
      return "valid";
    case Validity::out_of_memory:
      return "out_of_memory";
    case Validity::split_colocation:
      return "split_colocation";
    case Validity::malformed_placement:
      return "malformed_placement";
    case Validity::method_failed:
      return "method_failed";
  }
  return "?";
}

Validity validity_of(SimStatus s) {
  switch (s) {
    case SimStatus::valid:
      return Validity::valid;
    case SimStatus::out_of_memory:
      return Validity::out_of_memory;
    case SimStatus::split_colocation:
      return Validity::split_colocation;
    case SimStatus::malformed_placement:
      return Validity::malformed_placement;
  }
  return Validity::malformed_placement;
}

void simulate_into(const place::Problem& problem, const Placement& p, Record& r) {
  const Simulator& sim = problem.simulator();
  auto state = sim.make_state();
  const SimResult s = sim.run(p, *state);
  r.validity = validity_of(s.status);
  r.reason = s.valid ? std::string() : s.reason;
  r.step_time_s = s.valid ? s.step_time_s : std::numeric_limits<double>::infinity();
  r.peak_memory_bytes.clear();
  for (const DeviceStats& d : s.devices) r.peak_memory_bytes.push_back(d.peak_memory_bytes);
}

Record evaluate_cell(const datasets::SuiteEntry& e, const place::Problem& problem,
                     const place::PreparedMethod* method, const std::string& label, uint64_t seed,
                     const place::Budget& budget, double lower_bound_s, bool keep_placement,
                     const place::ProgressFn& progress) {
  Record r;
  r.graph = e.name;
  r.cluster = e.cluster_name;
  r.method = label;
  r.seed = seed;
  r.ops = e.graph.num_ops();
  r.lower_bound_s = lower_bound_s;
  Placement p;
  bool placed = false;
  try {
    if (!method) {
      p = e.placements.at(label.substr(4));
    } else {
      r.options = method->options.json();
      place::PlaceResult res = place::place(*method, problem, budget, seed, progress);
      p = std::move(res.placement);
      r.options = std::move(res.report.options);
      r.samples = res.report.samples;
      r.wall_s = res.report.wall_s;
      r.note = std::move(res.report.note);
      r.curve = std::move(res.report.curve);
    }
    placed = true;
    simulate_into(problem, p, r);
  } catch (const std::exception& ex) {
    if (!placed) {
      r.validity = Validity::method_failed;
      r.reason = ex.what();
    } else {  // the simulator failed on a placement of the right shape: a bug, say so
      r.validity = Validity::malformed_placement;
      r.reason = std::string("simulation failed: ") + ex.what();
    }
    r.step_time_s = std::numeric_limits<double>::infinity();
  } catch (...) {
    r.validity = placed ? Validity::malformed_placement : Validity::method_failed;
    r.reason = "unknown exception";
    r.step_time_s = std::numeric_limits<double>::infinity();
  }
  if (keep_placement) r.placement = std::move(p);
  return r;
}

namespace {

struct Cell {
  size_t entry;
  int method;         // index into the prepared methods, or -1 for a reference placement
  std::string label;  // the record's method name
  uint64_t seed;
};

}  // namespace

std::vector<Record> evaluate(const std::vector<datasets::SuiteEntry>& entries, const Spec& spec,
                             const CostModel& cost, const place::Registry& registry,
                             const CellDoneFn& on_done) {
  if (spec.seeds.empty()) throw UsageError("evaluate: no seeds");
  std::vector<place::PreparedMethod> methods;
  for (const MethodSpec& m : spec.methods)
    methods.push_back(place::prepare(registry, m.name, m.options, m.options_source));
  std::vector<std::string> ref_labels;
  if (spec.references)
    for (const auto& e : entries)
      for (const auto& [label, p] : e.placements)
        if (std::find(ref_labels.begin(), ref_labels.end(), label) == ref_labels.end())
          ref_labels.push_back(label);

  std::vector<Cell> cells;
  auto add_cell = [&](Cell c) {
    if (!spec.skip || !spec.skip(entries[c.entry].name, c.label, c.seed))
      cells.push_back(std::move(c));
  };
  for (size_t i = 0; i < entries.size(); ++i) {
    for (size_t k = 0; k < methods.size(); ++k)
      for (uint64_t s : spec.seeds)
        add_cell({i, static_cast<int>(k),
                  spec.methods[k].label.empty() ? methods[k].info->name : spec.methods[k].label,
                  s});
    for (const auto& label : ref_labels)
      if (entries[i].placements.count(label))
        for (uint64_t s : spec.seeds) add_cell({i, -1, "ref:" + label, s});
  }
  std::vector<std::unique_ptr<place::Problem>> problems;
  for (const auto& e : entries)
    problems.push_back(std::make_unique<place::Problem>(e.graph, e.cluster, cost));
  std::vector<double> bound(entries.size(), 0);
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t i = 0; i < static_cast<int64_t>(entries.size()); ++i)
    bound[i] = step_time_lower_bound(problems[i]->simulator()).bound_s;

  std::vector<Record> out(cells.size());
  size_t done = 0;
  const int64_t n = static_cast<int64_t>(cells.size());
  // One cell per thread; the methods' own parallel simulations then run on that thread.
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t c = 0; c < n; ++c) {
    const Cell& cell = cells[c];
    const datasets::SuiteEntry& e = entries[cell.entry];
    const place::Problem& problem = *problems[cell.entry];
    place::ProgressFn progress;
    if (spec.progress)
      progress = [&](const place::Progress& pr) {
        spec.progress(e.name, cell.label, cell.seed, pr);
      };
    out[c] =
        evaluate_cell(e, problem, cell.method < 0 ? nullptr : &methods[cell.method], cell.label,
                      cell.seed, spec.budget, bound[cell.entry], spec.keep_placements, progress);
    const Record& r = out[c];
#pragma omp critical(gdp_eval_done)
    {
      ++done;
      if (on_done) {
        try {
          on_done(r, done, cells.size());
        } catch (...) {  // a progress printer must not take the run down
        }
      }
    }
  }
  return out;
}

GeoMean geomean_speedup(const std::vector<Record>& records, const std::string& method,
                        const std::string& baseline) {
  std::map<std::tuple<std::string, std::string, uint64_t>, double> base;
  for (const Record& r : records)
    if (r.method == baseline && r.valid()) base[{r.graph, r.cluster, r.seed}] = r.step_time_s;
  double logsum = 0;
  GeoMean g;
  for (const Record& r : records) {
    if (r.method != method || !r.valid()) continue;
    auto it = base.find({r.graph, r.cluster, r.seed});
    if (it == base.end()) continue;
    logsum += std::log(it->second / r.step_time_s);
    ++g.n;
  }
  if (g.n) g.value = std::exp(logsum / g.n);
  return g;
}

nlohmann::ordered_json to_json(const Record& r) {
  nlohmann::ordered_json j;
  j["graph"] = r.graph;
  j["cluster"] = r.cluster;
  j["method"] = r.method;
  j["seed"] = r.seed;
  j["ops"] = r.ops;
  j["validity"] = validity_name(r.validity);
  j["valid"] = r.valid();
  if (r.valid())
    j["step_time_s"] = r.step_time_s;
  else
    j["step_time_s"] = nullptr;
  j["lower_bound_s"] = r.lower_bound_s;
  if (r.valid())
    j["gap_to_bound"] = r.gap_to_bound();
  else
    j["gap_to_bound"] = nullptr;
  j["reason"] = r.reason;
  j["samples"] = r.samples;
  j["wall_s"] = r.wall_s;
  j["peak_memory_bytes"] = r.peak_memory_bytes;
  j["options"] = r.options.is_null() ? nlohmann::ordered_json::object() : r.options;
  j["note"] = r.note;
  nlohmann::ordered_json curve = nlohmann::ordered_json::array();
  for (const auto& c : r.curve) curve.push_back({c.samples, c.wall_s, c.best_step_s});
  j["curve"] = std::move(curve);  // [samples, wall_s, best_step_s] where the best improved
  return j;
}

nlohmann::ordered_json to_json(const std::vector<Record>& records) {
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (const Record& r : records) a.push_back(to_json(r));
  return a;
}

}  // namespace gdp::eval
