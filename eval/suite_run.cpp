// The batch runner: run.json, per-cell files written as cells end, outputs rebuilt from them.
#include "eval/suite_run.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <sstream>

#include "core/error.h"
#include "core/io.h"
#include "core/json_strict.h"
#include "core/mpi.h"
#include "sim/lower_bound.h"
#include "sim/simulator.h"

#ifdef GDP_HAVE_MPI
#include <mpi.h>
#include <omp.h>
#endif

namespace gdp::eval {

namespace {

namespace fs = std::filesystem;
constexpr int kRunVersion = 1;
constexpr int kCellVersion = 1;

Validity validity_from_name(const std::string& s, const std::string& source) {
  for (Validity v : {Validity::valid, Validity::out_of_memory, Validity::split_colocation,
                     Validity::malformed_placement, Validity::method_failed})
    if (s == validity_name(v)) return v;
  throw InputError(source + ": validity: unknown value '" + s + "'");
}

// Characters outside [A-Za-z0-9_.-] as '_' (file names).
std::string safe_name(std::string s) {
  for (char& c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-')) c = '_';
  return s;
}

std::string fmt(double x) {
  if (!std::isfinite(x)) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}

// A CSV field: quoted when it holds a comma, a quote or a line break.
std::string csv(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

nlohmann::ordered_json record_json(const Record& r) {
  nlohmann::ordered_json j = to_json(r);
  const int64_t s5 = samples_to_within(r.curve, 0.05);
  j["samples_to_5pct"] = s5 >= 0 ? nlohmann::ordered_json(s5) : nlohmann::ordered_json();
  j["cell"] = cell_stem(r.graph, r.method, r.seed);
  return j;
}

// Mean and (sample) standard deviation of the valid seeds' step times.
struct Stat {
  int n = 0, total = 0;
  double mean = 0, sd = 0, search_s = 0;
};

Stat stat_of(const std::vector<const Record*>& rs) {
  Stat s;
  s.total = static_cast<int>(rs.size());
  for (const Record* r : rs) {
    s.search_s += r->wall_s / std::max<size_t>(1, rs.size());
    if (!r->valid()) continue;
    ++s.n;
    s.mean += r->step_time_s;
  }
  if (s.n == 0) return s;
  s.mean /= s.n;
  for (const Record* r : rs)
    if (r->valid()) s.sd += (r->step_time_s - s.mean) * (r->step_time_s - s.mean);
  s.sd = s.n > 1 ? std::sqrt(s.sd / (s.n - 1)) : 0;
  return s;
}

std::string num(const char* f, double x) {
  char buf[48];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

std::string report_md(const SuiteRunSpec& spec, const std::vector<Record>& records) {
  std::vector<std::string> graphs, labels;
  for (const Record& r : records) {
    if (std::find(graphs.begin(), graphs.end(), r.graph) == graphs.end()) graphs.push_back(r.graph);
    if (std::find(labels.begin(), labels.end(), r.method) == labels.end())
      labels.push_back(r.method);
  }
  std::map<std::pair<std::string, std::string>, std::vector<const Record*>> by;
  for (const Record& r : records) by[{r.graph, r.method}].push_back(&r);
  // Speed-ups over these methods, where they ran.
  std::vector<std::string> bases;
  for (const char* b : {"human", "hdp"})
    if (std::find(labels.begin(), labels.end(), b) != labels.end()) bases.push_back(b);
  std::ostringstream o;
  o << "# Suite run: " << spec.suite_path << "\n\n"
    << "Seeds: " << spec.seeds.size() << "; budget per cell: "
    << (spec.budget.samples > 0 ? std::to_string(spec.budget.samples) + " samples" : "none")
    << (spec.budget.seconds > 0 ? ", " + num("%g", spec.budget.seconds) + " s" : "")
    << ". Step times in ms: mean ± standard deviation over the valid seeds (valid / seeds); "
       "search time: mean seconds per cell.\n";
  std::map<std::string, std::map<std::string, std::vector<double>>> logs;  // base -> method
  for (const std::string& g : graphs) {
    double bound = 0;
    for (const Record& r : records)
      if (r.graph == g) bound = r.lower_bound_s;
    o << "\n## " << g << "\n\nLower bound " << num("%.3f", bound * 1e3) << " ms.\n\n"
      << "| method | step ms | valid |";
    for (const std::string& b : bases) o << " over " << b << " |";
    o << " search s |\n|---|---|---|";
    for (size_t k = 0; k < bases.size(); ++k) o << "---|";
    o << "---|\n";
    for (const std::string& m : labels) {
      auto it = by.find({g, m});
      if (it == by.end()) continue;
      const Stat s = stat_of(it->second);
      o << "| " << m << " | "
        << (s.n ? num("%.3f", s.mean * 1e3) + " ± " + num("%.3f", s.sd * 1e3)
                : std::string(validity_name(it->second.front()->validity)))
        << " | " << s.n << "/" << s.total << " |";
      for (const std::string& b : bases) {
        auto bi = by.find({g, b});
        const Stat bs = bi == by.end() ? Stat() : stat_of(bi->second);
        if (s.n && bs.n) {
          o << " " << num("%.3f", bs.mean / s.mean) << "x |";
          logs[b][m].push_back(std::log(bs.mean / s.mean));
        } else {
          o << " - |";
        }
      }
      o << " " << num("%.3g", s.search_s) << " |\n";
    }
  }
  if (!bases.empty()) {
    o << "\n## Geometric means over the workloads valid under both\n\n| method |";
    for (const std::string& b : bases) o << " over " << b << " |";
    o << "\n|---|";
    for (size_t k = 0; k < bases.size(); ++k) o << "---|";
    o << "\n";
    for (const std::string& m : labels) {
      o << "| " << m << " |";
      for (const std::string& b : bases) {
        const std::vector<double>& v = logs[b][m];
        double sum = 0;
        for (double x : v) sum += x;
        o << " "
          << (v.empty()
                  ? std::string("-")
                  : num("%.3f", std::exp(sum / v.size())) + "x (" + std::to_string(v.size()) + ")")
          << " |";
      }
      o << "\n";
    }
  }
  return o.str();
}

std::string results_csv(const std::vector<Record>& records) {
  std::string s =
      "graph,cluster,method,seed,valid,validity,reason,step_time_s,lower_bound_s,gap_to_bound,"
      "samples,search_time_s,samples_to_5pct,peak_memory_bytes\n";
  for (const Record& r : records) {
    std::string mem;
    for (size_t d = 0; d < r.peak_memory_bytes.size(); ++d)
      mem += (d ? ";" : "") + std::to_string(r.peak_memory_bytes[d]);
    const int64_t s5 = samples_to_within(r.curve, 0.05);
    s += csv(r.graph) + "," + csv(r.cluster) + "," + csv(r.method) + "," + std::to_string(r.seed) +
         "," + (r.valid() ? "true" : "false") + "," + validity_name(r.validity) + "," +
         csv(r.reason) + "," + fmt(r.step_time_s) + "," + fmt(r.lower_bound_s) + "," +
         fmt(r.gap_to_bound()) + "," + std::to_string(r.samples) + "," + fmt(r.wall_s) + "," +
         (s5 >= 0 ? std::to_string(s5) : "") + "," + mem + "\n";
  }
  return s;
}

// The first difference between two run.json objects, or "" when equal.
std::string first_difference(const nlohmann::json& a, const nlohmann::json& b) {
  for (auto it = a.begin(); it != a.end(); ++it)
    if (!b.contains(it.key()) || b.at(it.key()) != it.value())
      return it.key() + " (" + it.value().dump() + " here, " +
             (b.contains(it.key()) ? b.at(it.key()).dump() : std::string("absent")) +
             " in the directory)";
  for (auto it = b.begin(); it != b.end(); ++it)
    if (!a.contains(it.key())) return it.key();
  return "";
}

// A finished cell's file content.
std::string cell_text(const Record& r) {
  nlohmann::ordered_json cj;
  cj["format"] = "gdp-suite-cell";
  cj["version"] = kCellVersion;
  cj["record"] = record_json(r);
  cj["placement"] = r.placement.device;
  return cj.dump() + "\n";
}

#ifdef GDP_HAVE_MPI
constexpr int kTagResult = 1, kTagCell = 2;

// Ranks >= 1: ask rank 0 for a cell (by grid index), run it on one thread, send its file text
// back with the next request; until rank 0 answers -1.
void mpi_worker(const std::vector<datasets::SuiteEntry>& entries, const SuiteRunSpec& spec,
                const CostModel& cost) {
  omp_set_num_threads(1);  // as the evaluator's cells: one thread each, the same results
  std::vector<place::PreparedMethod> methods;
  for (const MethodSpec& m : spec.methods)
    methods.push_back(place::prepare(place::registry(), m.name, m.options, m.options_source));
  std::map<size_t, std::unique_ptr<place::Problem>> problems;
  std::map<size_t, double> bounds;
  const size_t M = spec.methods.size(), S = spec.seeds.size();
  std::string result;  // empty: the first request
  while (true) {
    MPI_Send(result.data(), static_cast<int>(result.size()), MPI_CHAR, 0, kTagResult,
             MPI_COMM_WORLD);
    int64_t index = -1;
    MPI_Recv(&index, 1, MPI_INT64_T, 0, kTagCell, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (index < 0) return;
    const size_t e = static_cast<size_t>(index) / (M * S), k = index / S % M, s = index % S;
    if (!problems.count(e)) {
      problems[e] = std::make_unique<place::Problem>(entries[e].graph, entries[e].cluster, cost);
      bounds[e] = step_time_lower_bound(problems[e]->simulator()).bound_s;
    }
    const MethodSpec& m = spec.methods[k];
    result = cell_text(evaluate_cell(entries[e], *problems[e], &methods[k],
                                     m.label.empty() ? m.name : m.label, spec.seeds[s], spec.budget,
                                     bounds[e], true));
  }
}

// Rank 0: a dynamic work queue over the ranks; every result is written as it arrives.
void mpi_coordinator(const std::vector<size_t>& todo, int ranks,
                     const std::function<void(const std::string&)>& on_result) {
  size_t next = 0;
  int active = ranks - 1;
  while (active > 0) {
    MPI_Status st;
    MPI_Probe(MPI_ANY_SOURCE, kTagResult, MPI_COMM_WORLD, &st);
    int count = 0;
    MPI_Get_count(&st, MPI_CHAR, &count);
    std::string text(static_cast<size_t>(count), '\0');
    MPI_Recv(text.data(), count, MPI_CHAR, st.MPI_SOURCE, kTagResult, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
    if (!text.empty()) on_result(text);
    int64_t index = -1;
    if (next < todo.size())
      index = static_cast<int64_t>(todo[next++]);
    else
      --active;
    MPI_Send(&index, 1, MPI_INT64_T, st.MPI_SOURCE, kTagCell, MPI_COMM_WORLD);
  }
}
#endif

}  // namespace

nlohmann::ordered_json SuiteRunSpec::to_json() const {
  nlohmann::ordered_json j;
  j["format"] = "gdp-suite-run";
  j["version"] = kRunVersion;
  j["suite"] = suite_path;
  j["profile"] = profile_path;
  nlohmann::ordered_json ms = nlohmann::ordered_json::array();
  for (const MethodSpec& m : methods)
    ms.push_back({{"label", m.label.empty() ? m.name : m.label},
                  {"method", m.name},
                  {"options", m.options.is_null() ? nlohmann::json::object() : m.options}});
  j["methods"] = ms;
  j["seeds"] = seeds;
  j["budget"] = {{"samples", budget.samples}, {"seconds", budget.seconds}};
  return j;
}

std::string trace_cell(const std::string& dir, const std::string& cell) {
  const fs::path root(dir);
  const std::string run_path = (root / "run.json").string();
  const std::string cell_path = (root / "cells" / (cell + ".json")).string();
  if (!fs::exists(cell_path))
    throw InputError(cell_path + ": no such cell (the stems are the file names in " +
                     (root / "cells").string() + ")");
  StrictJson rs(run_path);
  const nlohmann::json run = rs.parse(read_text_file(run_path));
  rs.check_header(run, "gdp-suite-run", kRunVersion);
  StrictJson cs(cell_path);
  const nlohmann::json cj = cs.parse(read_text_file(cell_path));
  cs.check_header(cj, "gdp-suite-cell", kCellVersion);
  const Record r = record_from_json(cj.at("record"), cell_path);
  const datasets::SuiteSpec suite = datasets::read_suite_spec(rs.string(run, "suite", ""));
  const std::string profile = rs.string(run, "profile", "");
  for (const datasets::SuiteEntrySpec& es : suite.entries) {
    if (es.name != r.graph) continue;
    const datasets::SuiteEntry e = datasets::materialize(es);
    const CostModel cost = profile.empty() ? CostModel() : CostModel::from_json_file(profile);
    SimOptions so;
    so.record_trace = true;
    Simulator sim(e.graph, e.cluster, cost, so);
    const SimResult res = sim.run(Placement{cj.at("placement").get<std::vector<int32_t>>()});
    std::error_code ec;
    fs::create_directories(root / "traces", ec);
    const std::string out = (root / "traces" / (safe_name(cell) + ".json")).string();
    write_text_file_atomic(out, trace_to_chrome_json(res, e.cluster));
    return out;
  }
  throw InputError(cell_path + ": graph '" + r.graph + "' is not in the suite " +
                   rs.string(run, "suite", ""));
}

std::string cell_stem(const std::string& graph, const std::string& label, uint64_t seed) {
  return safe_name(graph + "." + label + ".s" + std::to_string(seed));
}

int64_t samples_to_within(const std::vector<place::CurvePoint>& curve, double frac) {
  if (curve.empty()) return -1;
  const double final_best = curve.back().best_step_s;
  for (const auto& p : curve)
    if (p.best_step_s <= final_best * (1 + frac)) return p.samples;
  return curve.back().samples;
}

Record record_from_json(const nlohmann::json& j, const std::string& source) {
  try {
    Record r;
    r.graph = j.at("graph").get<std::string>();
    r.cluster = j.at("cluster").get<std::string>();
    r.method = j.at("method").get<std::string>();
    r.seed = j.at("seed").get<uint64_t>();
    r.ops = j.at("ops").get<int32_t>();
    r.validity = validity_from_name(j.at("validity").get<std::string>(), source);
    r.step_time_s = j.at("step_time_s").is_null() ? std::numeric_limits<double>::infinity()
                                                  : j.at("step_time_s").get<double>();
    r.lower_bound_s = j.at("lower_bound_s").get<double>();
    r.reason = j.at("reason").get<std::string>();
    r.samples = j.at("samples").get<int64_t>();
    r.wall_s = j.at("wall_s").get<double>();
    r.peak_memory_bytes = j.at("peak_memory_bytes").get<std::vector<int64_t>>();
    r.options = j.at("options");
    r.note = j.at("note").get<std::string>();
    for (const auto& p : j.at("curve"))
      r.curve.push_back({p.at(0).get<int64_t>(), p.at(1).get<double>(), p.at(2).get<double>()});
    return r;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(source + ": a cell record: " + e.what());
  }
}

namespace {

// Options a column does not get from the command line come from the suite's "method_options"
// (by label), so that the run's identity (run.json) holds what ran; every method and its
// options checked before the directory is touched.
SuiteRunSpec with_suite_options(const SuiteRunSpec& spec_in) {
  SuiteRunSpec spec = spec_in;
  const nlohmann::json suite_options = datasets::read_suite_spec(spec.suite_path).method_options;
  for (MethodSpec& m : spec.methods) {
    const std::string label = m.label.empty() ? m.name : m.label;
    if (m.options.is_null() && suite_options.contains(label)) {
      m.options = suite_options.at(label);
      m.options_source = spec.suite_path + ": method_options." + label;
    }
  }
  for (const MethodSpec& m : spec.methods)
    place::prepare(place::registry(), m.name, m.options, m.options_source);
  return spec;
}

// The run's identity first: a directory holds one run. Under MPI only rank 0 touches the
// directory; the other ranks learn whether it could (and stop with it when not).
void set_up_dir(const std::string& dir, const nlohmann::ordered_json& run_json) {
  const int ranks = mpi_size();
  const fs::path root(dir);
  const fs::path run_path = root / "run.json";
  std::string setup_error;
  if (mpi_rank() == 0) {
    try {
      std::error_code ec;
      if (fs::exists(run_path)) {
        const nlohmann::json old = nlohmann::json::parse(read_text_file(run_path.string()));
        const std::string diff = first_difference(nlohmann::json(run_json), old);
        if (!diff.empty())
          throw UsageError(dir + " holds another run (run.json differs in " + diff +
                           "); give another --out or the same arguments");
      } else {
        fs::create_directories(root / "cells", ec);
        if (ec) throw InputError(dir + ": cannot create the directory: " + ec.message());
        write_text_file_atomic(run_path.string(), run_json.dump(2) + "\n");
      }
      fs::create_directories(root / "cells", ec);
      fs::create_directories(root / "traces", ec);
    } catch (const std::exception& e) {
      setup_error = e.what();
      if (ranks == 1) throw;
    }
  }
  if (ranks > 1) {
    double ok = setup_error.empty() ? 1 : 0;
    mpi_broadcast(&ok, 1, 0);
    if (ok == 0)
      throw UsageError(mpi_rank() == 0 ? setup_error
                                       : "rank 0 could not set up " + dir + " (see its message)");
  }
}

// The outputs from every cell file, in grid order: results.json, results.csv, report.md, and
// a trace of each graph's best valid placement (the Gantt chart's input).
void write_outputs(const SuiteRunSpec& spec, const fs::path& root,
                   const nlohmann::ordered_json& run_json,
                   const std::vector<datasets::SuiteEntry>& entries, const CostModel& cost) {
  std::vector<Record> records;
  std::vector<std::vector<int32_t>> placements;
  for (const auto& e : entries)
    for (const MethodSpec& m : spec.methods)
      for (uint64_t s : spec.seeds) {
        const std::string label = m.label.empty() ? m.name : m.label;
        const fs::path p = root / "cells" / (cell_stem(e.name, label, s) + ".json");
        if (!fs::exists(p)) continue;  // a cell that failed to write: reported as missing
        StrictJson sj(p.string());
        const nlohmann::json cj = sj.parse(read_text_file(p.string()));
        sj.check_header(cj, "gdp-suite-cell", kCellVersion);
        records.push_back(record_from_json(cj.at("record"), p.string()));
        placements.push_back(cj.at("placement").get<std::vector<int32_t>>());
      }
  nlohmann::ordered_json rj;
  rj["format"] = "gdp-suite-results";
  rj["version"] = 1;
  rj["run"] = run_json;
  nlohmann::ordered_json recs = nlohmann::ordered_json::array();
  for (const Record& r : records) recs.push_back(record_json(r));
  rj["records"] = std::move(recs);
  write_text_file_atomic((root / "results.json").string(), rj.dump(1) + "\n");
  write_text_file_atomic((root / "results.csv").string(), results_csv(records));
  write_text_file_atomic((root / "report.md").string(), report_md(spec, records));
  for (const auto& e : entries) {
    int best = -1;
    for (size_t k = 0; k < records.size(); ++k)
      if (records[k].graph == e.name && records[k].valid() &&
          static_cast<int32_t>(placements[k].size()) == e.graph.num_ops() &&
          (best < 0 || records[k].step_time_s < records[best].step_time_s))
        best = static_cast<int>(k);
    if (best < 0) continue;
    SimOptions so;
    so.record_trace = true;
    Simulator sim(e.graph, e.cluster, cost, so);
    const SimResult res = sim.run(Placement{placements[best]});
    write_text_file_atomic((root / "traces" / (safe_name(e.name) + ".json")).string(),
                           trace_to_chrome_json(res, e.cluster));
  }
}

}  // namespace

SuiteRunSummary run_suite(const SuiteRunSpec& spec_in, const std::string& dir,
                          const SuiteRunUi& ui) {
  const SuiteRunSpec spec = with_suite_options(spec_in);
  const int rank = mpi_rank(), ranks = mpi_size();
  const nlohmann::ordered_json run_json = spec.to_json();
  const fs::path root(dir);
  set_up_dir(dir, run_json);

  CostModel cost =
      spec.profile_path.empty() ? CostModel() : CostModel::from_json_file(spec.profile_path);
  std::vector<datasets::SuiteEntry> entries = datasets::load_suite(spec.suite_path);
#ifdef GDP_HAVE_MPI
  if (ranks > 1 && rank > 0) {
    mpi_worker(entries, spec, cost);
    return SuiteRunSummary{};
  }
#else
  (void)rank;
#endif

  Spec es;
  es.methods = spec.methods;
  es.seeds = spec.seeds;
  es.budget = spec.budget;
  es.keep_placements = true;
  auto cell_path = [&](const std::string& g, const std::string& l, uint64_t s) {
    return root / "cells" / (cell_stem(g, l, s) + ".json");
  };
  SuiteRunSummary sum;
  es.skip = [&](const std::string& g, const std::string& l, uint64_t s) {
    ++sum.cells;
    const bool done = fs::exists(cell_path(g, l, s));
    if (done) ++sum.skipped;
    return done;
  };
  std::mutex progress_mutex;
  if (ui.progress)
    es.progress = [&](const std::string& g, const std::string& l, uint64_t s,
                      const place::Progress& p) {
      std::lock_guard<std::mutex> lock(progress_mutex);
      ui.progress(g, l, s, p);
    };
  int64_t written = 0;
  std::vector<std::string> write_errors;
  // Each cell's file is written as the cell ends (serialized by the caller).
  auto finished = [&](const Record& r, const std::string& text, size_t done, size_t total) {
    try {
      write_text_file_atomic(cell_path(r.graph, r.method, r.seed).string(), text);
    } catch (const std::exception& e) {
      write_errors.push_back(e.what());
      return;
    }
    ++sum.ran;
    if (ui.cell_done) ui.cell_done(done, total, r);
    if (ui.stop_after > 0 && ++written >= ui.stop_after) std::_Exit(137);
  };
  if (ranks == 1) {
    evaluate(entries, es, cost, place::registry(), [&](const Record& r, size_t done, size_t total) {
      finished(r, cell_text(r), done, total);
    });
  } else {
#ifdef GDP_HAVE_MPI
    // The grid in the evaluator's order (entries, methods, seeds); rank 0 hands out the
    // unfinished cells one at a time to whichever rank asks.
    std::vector<size_t> todo;
    size_t index = 0;
    for (const auto& e : entries)
      for (const MethodSpec& m : spec.methods)
        for (uint64_t sd : spec.seeds) {
          if (!es.skip(e.name, m.label.empty() ? m.name : m.label, sd)) todo.push_back(index);
          ++index;
        }
    size_t done = 0;
    mpi_coordinator(todo, ranks, [&](const std::string& text) {
      const nlohmann::json cj = nlohmann::json::parse(text);
      finished(record_from_json(cj.at("record"), "a worker's cell"), text, ++done, todo.size());
    });
#endif
  }
  if (!write_errors.empty())
    throw InputError(dir + ": " + std::to_string(write_errors.size()) +
                     " cell file(s) could not be written; the first: " + write_errors.front());
  write_outputs(spec, root, run_json, entries, cost);
  return sum;
}

}  // namespace gdp::eval
