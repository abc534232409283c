// `gdp suite run`: the batch experiment runner (eval/suite_run.h) with a progress line;
// `gdp suite compare A B`: what changed between two run directories.
#include <omp.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/method_columns.h"
#include "core/io.h"
#include "core/json_strict.h"
#include "core/mpi.h"
#include "eval/suite_run.h"

namespace gdp::cli {

namespace {

std::string duration(double s) {
  char buf[32];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%.0fs", s);
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  else
    std::snprintf(buf, sizeof buf, "%dh%02dm", static_cast<int>(s) / 3600,
                  static_cast<int>(s) % 3600 / 60);
  return buf;
}

std::string ms(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
  return buf;
}

// "samples=N", "seconds=S" or both, comma-separated.
place::Budget parse_budget(const std::string& arg) {
  place::Budget b;
  for (const std::string& part : place::split_commas(arg)) {
    const size_t eq = part.find('=');
    const std::string key = part.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : part.substr(eq + 1);
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0' || !(v > 0))
      throw UsageError("--budget: '" + part + "': expected samples=N or seconds=S with N, S > 0");
    if (key == "samples") {
      if (v != std::floor(v) || v > 1e12)
        throw UsageError("--budget: samples must be a whole number up to 1e12");
      b.samples = static_cast<int64_t>(v);
    } else if (key == "seconds") {
      b.seconds = v;
    } else {
      throw UsageError("--budget: unknown key '" + key + "' (expected samples or seconds)");
    }
  }
  return b;
}

// The progress line: cells done of this process's total, the running cells with their
// methods' own progress, elapsed time and a linear estimate of the time left. On a terminal
// it redraws one line; otherwise it prints a line per finished cell.
class ProgressLine {
 public:
  explicit ProgressLine(bool tty) : tty_(tty), start_(std::chrono::steady_clock::now()) {}

  void running(const std::string& cell, const place::Progress& p) {
    std::lock_guard<std::mutex> lock(m_);
    running_[cell] = p.fraction >= 0 ? p.fraction : -1;
    if (tty_ && since(last_draw_) > 0.25) draw();
  }

  void done(size_t n, size_t total, const eval::Record& r) {
    std::lock_guard<std::mutex> lock(m_);
    done_ = n;
    total_ = total;
    running_.erase(eval::cell_stem(r.graph, r.method, r.seed));
    char buf[256];
    std::snprintf(buf, sizeof buf, "[%zu/%zu] %s %s s%llu: %s  elapsed %s, left ~%s", n, total,
                  r.graph.c_str(), r.method.c_str(), static_cast<unsigned long long>(r.seed),
                  r.valid() ? ms(r.step_time_s).c_str() : eval::validity_name(r.validity),
                  duration(elapsed()).c_str(), duration(left()).c_str());
    if (tty_) std::fprintf(stderr, "\r\033[K");
    std::fprintf(stderr, "%s\n", buf);
    if (tty_) draw();
  }

  void finish() {
    if (tty_) std::fprintf(stderr, "\r\033[K");
  }

 private:
  double since(std::chrono::steady_clock::time_point t) const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  }
  double elapsed() const { return since(start_); }
  double left() const { return done_ ? elapsed() / done_ * (total_ - done_) : 0; }
  void draw() {
    last_draw_ = std::chrono::steady_clock::now();
    std::string line = "[" + std::to_string(done_) + "/" + (total_ ? std::to_string(total_) : "?") +
                       "] " + duration(elapsed());
    for (const auto& [cell, f] : running_) {
      line += "  " + cell;
      if (f >= 0) line += " " + std::to_string(static_cast<int>(f * 100)) + "%";
      if (line.size() > 150) break;
    }
    std::fprintf(stderr, "\r\033[K%s", line.substr(0, 160).c_str());
  }

  bool tty_;
  std::mutex m_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  size_t done_ = 0, total_ = 0;
  std::map<std::string, double> running_;
};

int suite_run(int argc, char** argv) {
  Args a(argc, argv,
         {"--methods", "--options", "--seeds", "--budget", "--out", "--jobs", "--profile",
          "--stop-after"},
         {"--quiet"});
  if (a.help()) {
    std::printf(
        "usage: gdp suite run SUITE.json --methods m1,m2,... --out DIR [--seeds N]\n"
        "                     [--budget samples=N|seconds=S] [--options O] [--jobs J]\n"
        "                     [--profile F] [--quiet]\n\n"
        "Runs every graph of SUITE x every method x seeds 1..N (one cell each) in parallel,\n"
        "writing each finished cell to DIR/cells/ at once (atomically): a rerun of the same\n"
        "command after a crash, kill -9 or Ctrl-C skips the finished cells. Then writes\n"
        "DIR/results.json, results.csv, report.md and traces/ (docs/formats.md, \"Suite run\n"
        "directory\"); scripts/suite_plots.py DIR draws the plots.\n"
        "  --methods M   comma-separated methods, LABEL=METHOD for a second column of one\n"
        "                method (as gdp compare); unknown methods fail before anything runs\n"
        "  --options O   options per column: a JSON object (or file) '{\"anneal\": {...}}',\n"
        "                or one column's as LABEL=JSON: 'anneal={\"samples\": 5000}'\n"
        "  --seeds N     seeds 1..N (default 1)\n"
        "  --budget B    per cell: samples=N, seconds=S, or both (samples=N,seconds=S)\n"
        "  --jobs J      cells at a time (default: the machine's cores)\n"
        "  --profile F   device profile JSON for the cost model\n"
        "  --quiet       no progress output\n\n"
        "Under `mpirun -np N gdp suite run ...` rank 0 owns DIR and hands cells to the other\n"
        "N-1 ranks one at a time (docs/runner.md). This build: MPI %s.\n",
#ifdef GDP_HAVE_MPI
        "on");
#else
        "off");
#endif
    return 0;
  }
  if (a.positional().size() != 1)
    throw UsageError("expected exactly one SUITE.json argument (see --help)");
  eval::SuiteRunSpec spec;
  spec.suite_path = a.positional()[0];
  spec.profile_path = a.get("--profile", "");
  spec.methods = parse_method_columns(a.require("--methods"), a.get("--options", ""));
  const int64_t seeds = a.integer("--seeds", 1, 1, 1000);
  spec.seeds.clear();
  for (int64_t s = 1; s <= seeds; ++s) spec.seeds.push_back(static_cast<uint64_t>(s));
  if (a.has("--budget")) spec.budget = parse_budget(a.get("--budget"));
  const std::string dir = a.require("--out");
  if (a.has("--jobs")) omp_set_num_threads(static_cast<int>(a.integer("--jobs", 1, 1, 4096)));

  eval::SuiteRunUi ui;
  ui.stop_after = a.integer("--stop-after", 0, 0, INT64_MAX);
  // Under mpirun: rank 0 writes and reports, the other ranks run cells (docs/runner.md).
  const MpiWorld mpi = mpi_begin();
  struct MpiEnd {
    ~MpiEnd() { mpi_end(); }
  } mpi_end_guard;
  ProgressLine line(isatty(2));
  if (!a.has("--quiet") && mpi.rank == 0) {
    ui.cell_done = [&](size_t n, size_t total, const eval::Record& r) { line.done(n, total, r); };
    ui.progress = [&](const std::string& g, const std::string& l, uint64_t s,
                      const place::Progress& p) { line.running(eval::cell_stem(g, l, s), p); };
  }
  const eval::SuiteRunSummary sum = eval::run_suite(spec, dir, ui);
  line.finish();
  if (mpi.rank != 0) return 0;
  if (mpi.size > 1)
    std::printf("MPI: %d ranks (1 coordinator, %d running cells)\n", mpi.size, mpi.size - 1);
  std::printf(
      "%zu cells: %zu run now, %zu finished earlier; results in %s/ (results.json, "
      "results.csv, report.md, traces/)\n",
      sum.cells, sum.ran, sum.skipped, dir.c_str());
  return 0;
}

// Step times per (graph, method) of a run directory's results.json, by seed.
struct Side {
  std::map<std::pair<std::string, std::string>, std::map<uint64_t, double>> steps;  // valid only
  std::set<std::pair<std::string, std::string>> cells;
};

Side read_results(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / "results.json").string();
  StrictJson sj(path);
  const nlohmann::json j = sj.parse(read_text_file(path));
  sj.check_header(j, "gdp-suite-results", 1);
  Side s;
  for (const auto& rj : j.at("records")) {
    const eval::Record r = eval::record_from_json(rj, path);
    s.cells.insert({r.graph, r.method});
    if (r.valid()) s.steps[{r.graph, r.method}][r.seed] = r.step_time_s;
  }
  return s;
}

int suite_compare(int argc, char** argv) {
  Args a(argc, argv, {}, {});
  if (a.help()) {
    std::printf(
        "usage: gdp suite compare DIR_A DIR_B\n\n"
        "What changed from run A to run B (two `gdp suite run` directories): per graph and\n"
        "method, the mean step time over the valid seeds of each and the change; with two or\n"
        "more seeds on both sides, Welch's t statistic and a note (|t| >= 3: likely a real\n"
        "change, else within the seeds' spread); then each method's geometric mean of B / A.\n");
    return 0;
  }
  if (a.positional().size() != 2) throw UsageError("expected DIR_A DIR_B (see --help)");
  const Side A = read_results(a.positional()[0]);
  const Side B = read_results(a.positional()[1]);
  std::printf("%-28s %-14s %12s %12s %9s  %s\n", "graph", "method", "A ms", "B ms", "change",
              "note");
  std::map<std::string, std::pair<double, int>> logs;  // method -> sum log(B/A), n
  std::set<std::pair<std::string, std::string>> all = A.cells;
  all.insert(B.cells.begin(), B.cells.end());
  auto stats = [](const std::map<uint64_t, double>& m) {
    double mean = 0, var = 0;
    for (const auto& [s, v] : m) mean += v;
    mean /= m.size();
    for (const auto& [s, v] : m) var += (v - mean) * (v - mean);
    return std::pair{mean, m.size() > 1 ? var / (m.size() - 1) : 0.0};
  };
  for (const auto& key : all) {
    const auto ia = A.steps.find(key), ib = B.steps.find(key);
    const bool ha = ia != A.steps.end(), hb = ib != B.steps.end();
    std::string note;
    char ca[32] = "-", cb[32] = "-", ch[32] = "";
    if (!A.cells.count(key)) note = "only in B";
    if (!B.cells.count(key)) note = "only in A";
    if (ha) std::snprintf(ca, sizeof ca, "%.3f", stats(ia->second).first * 1e3);
    if (hb) std::snprintf(cb, sizeof cb, "%.3f", stats(ib->second).first * 1e3);
    if (A.cells.count(key) && B.cells.count(key) && ha != hb)
      note = ha ? "became invalid" : "became valid";
    if (ha && hb) {
      const auto [ma, va] = stats(ia->second);
      const auto [mb, vb] = stats(ib->second);
      std::snprintf(ch, sizeof ch, "%+.2f%%", (mb / ma - 1) * 100);
      logs[key.second].first += std::log(mb / ma);
      logs[key.second].second += 1;
      if (ia->second == ib->second) {
        note = "identical";
      } else if (ia->second.size() >= 2 && ib->second.size() >= 2) {
        const double se = std::sqrt(va / ia->second.size() + vb / ib->second.size());
        const double t = se > 0 ? (mb - ma) / se : std::numeric_limits<double>::infinity();
        char tb[64];
        std::snprintf(tb, sizeof tb, "t = %.2f: %s", t,
                      std::fabs(t) >= 3 ? "likely a real change" : "within the seeds' spread");
        note = tb;
      } else {
        note = "one seed: no significance";
      }
    }
    std::printf("%-28s %-14s %12s %12s %9s  %s\n", key.first.c_str(), key.second.c_str(), ca, cb,
                ch, note.c_str());
  }
  std::printf("\ngeometric mean of B / A step time (graphs valid in both):\n");
  for (const auto& [m, v] : logs)
    std::printf("  %-14s %.4f (%d)\n", m.c_str(), std::exp(v.first / v.second), v.second);
  return 0;
}

int suite_trace(int argc, char** argv) {
  Args a(argc, argv, {}, {});
  if (a.help()) {
    std::printf(
        "usage: gdp suite trace DIR CELL\n\n"
        "Simulates one finished cell of a `gdp suite run` directory (CELL: a file stem of\n"
        "DIR/cells/, e.g. gnmt_small.anneal.s1) with the trace on and writes\n"
        "DIR/traces/CELL.json; scripts/suite_plots.py DIR then draws its Gantt chart.\n");
    return 0;
  }
  if (a.positional().size() != 2) throw UsageError("expected DIR CELL (see --help)");
  std::printf("%s\n", eval::trace_cell(a.positional()[0], a.positional()[1]).c_str());
  return 0;
}

}  // namespace

int cmd_suite(int argc, char** argv) {
  if (argc < 1 || std::string(argv[0]) == "--help" || std::string(argv[0]) == "-h") {
    std::printf(
        "usage: gdp suite run SUITE.json --methods ... --out DIR [...]   (gdp suite run --help)\n"
        "       gdp suite compare DIR_A DIR_B\n"
        "       gdp suite trace DIR CELL\n\n"
        "Batch experiments over a workload suite: resumable runs with results, report and\n"
        "traces, and the comparison of two runs.\n");
    return argc < 1 ? 2 : 0;
  }
  const std::string sub = argv[0];
  if (sub == "run") return suite_run(argc - 1, argv + 1);
  if (sub == "compare") return suite_compare(argc - 1, argv + 1);
  if (sub == "trace") return suite_trace(argc - 1, argv + 1);
  throw UsageError("unknown suite subcommand '" + sub + "' (expected run, compare or trace)");
}

}  // namespace gdp::cli
