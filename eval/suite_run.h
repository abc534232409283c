// The batch experiment runner (`gdp suite run`): a suite's graphs x methods x seeds on the
// evaluator, each finished cell written atomically to DIR/cells/ as it ends, so that a run
// killed at any moment loses nothing but its running cells and a rerun of the same command
// skips what is done; then results.json, results.csv, report.md and a Chrome trace of each
// graph's best placement, all rebuilt from the cell files. Layout: docs/formats.md, "Suite
// run directory".
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "eval/evaluate.h"

namespace gdp::eval {

struct SuiteRunSpec {
  std::string suite_path;
  std::string profile_path;         // "" = the built-in cost model
  std::vector<MethodSpec> methods;  // every label set (the record's method name)
  std::vector<uint64_t> seeds{1};
  place::Budget budget;                    // per cell
  nlohmann::ordered_json to_json() const;  // run.json's content
};

struct SuiteRunUi {
  // After each cell's file is written (serialized): cells finished in this process, cells
  // this process runs, the record.
  std::function<void(size_t done, size_t total, const Record&)> cell_done;
  // A running cell's method progress (serialized by the runner).
  std::function<void(const std::string& graph, const std::string& label, uint64_t seed,
                     const place::Progress&)>
      progress;
  // Tests: after this many cells are written, end the process at once with exit code 137, as
  // kill -9 would (no output rebuilt, running cells lost). 0 = never.
  int64_t stop_after = 0;
};

struct SuiteRunSummary {
  size_t cells = 0;    // in the grid
  size_t skipped = 0;  // finished by an earlier run
  size_t ran = 0;
};

// Creates DIR (or continues it: its run.json must equal spec's, else UsageError naming the
// first difference), runs the missing cells, then rebuilds the outputs. A column without
// options takes the suite's "method_options" for its label.
SuiteRunSummary run_suite(const SuiteRunSpec& spec, const std::string& dir,
                          const SuiteRunUi& ui = {});

// The Chrome trace of one finished cell (`gdp suite trace DIR CELL`: CELL is a file stem of
// DIR/cells/), written to DIR/traces/CELL.json for scripts/suite_plots.py's Gantt chart; only
// that cell's graph is generated. Returns the trace's path. InputError when the cell is absent.
std::string trace_cell(const std::string& dir, const std::string& cell);

// OpenMPI (optional at build time, GDP_HAVE_MPI; core/mpi.h): under `mpirun -np N gdp suite
// run ...` rank 0 owns the directory and hands unfinished cells to ranks 1..N-1 one at a time (a
// dynamic work queue), writing each result as it arrives; resume works the same way.

// The cell's file stem: "<graph>.<label>.s<seed>", characters outside [A-Za-z0-9_.-] as '_'.
std::string cell_stem(const std::string& graph, const std::string& label, uint64_t seed);
// Samples at which the best-so-far first came within `frac` of the final best; -1 when the
// curve is empty.
int64_t samples_to_within(const std::vector<place::CurvePoint>& curve, double frac);
// The inverse of to_json(Record) (strict: a missing or mistyped key is an InputError naming
// `source`).
Record record_from_json(const nlohmann::json& j, const std::string& source);

}  // namespace gdp::eval
