// The batch runner (eval/suite_run.h) on the smoke suite: its results.json, results.csv and
// report.md hold the evaluator's own numbers; records survive the JSON round trip; the curve
// measure and the cell names. (Resume after a kill is tested end to end in cli/suite.)
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/io.h"
#include "eval/suite_run.h"
#include "test_paths.h"

using namespace gdp;
using Catch::Contains;

namespace {

std::string read_all(const std::filesystem::path& p) { return read_text_file(p.string()); }

}  // namespace

TEST_CASE("eval/suite run: results, CSV and report hold the evaluator's numbers", "[eval]") {
  const std::filesystem::path dir =
      std::filesystem::path(test::binary_dir()) / "eval_suite_run_test";
  std::filesystem::remove_all(dir);
  eval::SuiteRunSpec spec;
  spec.suite_path = test::source_dir() + "/datasets/suites/smoke.json";
  spec.methods = {{"human", nullptr, "", "human"},
                  {"random", nlohmann::json{{"samples", 8}}, "", "random"},
                  {"random", nlohmann::json{{"samples", 16}}, "", "random16"}};
  spec.seeds = {1, 2};
  const eval::SuiteRunSummary sum = eval::run_suite(spec, dir.string());
  const auto entries = datasets::load_suite(spec.suite_path);
  CHECK(sum.cells == entries.size() * 3 * 2);
  CHECK(sum.ran == sum.cells);
  CHECK(sum.skipped == 0);

  // The same grid through the evaluator directly.
  eval::Spec es;
  es.methods = spec.methods;
  es.seeds = spec.seeds;
  const std::vector<eval::Record> ref = eval::evaluate(entries, es, CostModel());

  const nlohmann::json rj = nlohmann::json::parse(read_all(dir / "results.json"));
  CHECK(rj.at("format") == "gdp-suite-results");
  CHECK(rj.at("run").at("methods").size() == 3);
  const auto& recs = rj.at("records");
  REQUIRE(recs.size() == ref.size());
  std::istringstream csv(read_all(dir / "results.csv"));
  std::string line;
  std::getline(csv, line);
  CHECK_THAT(line, Contains("graph,cluster,method,seed,valid,validity,reason,step_time_s"));
  const std::string report = read_all(dir / "report.md");
  for (size_t k = 0; k < ref.size(); ++k) {
    const eval::Record r = eval::record_from_json(recs[k], "results.json");
    INFO(ref[k].graph << " " << ref[k].method << " s" << ref[k].seed);
    CHECK(r.graph == ref[k].graph);
    CHECK(r.method == ref[k].method);
    CHECK(r.seed == ref[k].seed);
    CHECK(r.validity == ref[k].validity);
    CHECK(r.step_time_s == ref[k].step_time_s);
    CHECK(r.lower_bound_s == ref[k].lower_bound_s);
    CHECK(r.samples == ref[k].samples);
    CHECK(r.peak_memory_bytes == ref[k].peak_memory_bytes);
    CHECK(recs[k].at("cell") == eval::cell_stem(r.graph, r.method, r.seed));
    REQUIRE(std::getline(csv, line));
    char step[32];
    std::snprintf(step, sizeof step, "%.9g", ref[k].step_time_s);
    CHECK_THAT(line, Contains("," + std::string(step) + ","));
    CHECK(line.rfind(r.graph + ",v100x2-nvlink," + r.method + "," + std::to_string(r.seed) + ",",
                     0) == 0);
  }
  CHECK_FALSE(std::getline(csv, line));
  // The report: a section per workload, human's and random16's mean over the two seeds.
  for (const auto& e : entries) CHECK_THAT(report, Contains("## " + e.name + "\n"));
  const eval::Record& h = ref[0];  // first entry, human, seed 1
  char mean[48];
  std::snprintf(mean, sizeof mean, "| human | %.3f ± 0.000 | 2/2 | 1.000x |", h.step_time_s * 1e3);
  CHECK_THAT(report, Contains(mean));
  CHECK_THAT(report, Contains("| random16 |"));
  CHECK(std::filesystem::exists(dir / "traces" / (entries[0].name + ".json")));

  // A second run of the same spec runs nothing and rewrites the same results.
  const std::string before = read_all(dir / "results.csv");
  const eval::SuiteRunSummary again = eval::run_suite(spec, dir.string());
  CHECK(again.ran == 0);
  CHECK(again.skipped == again.cells);
  CHECK(read_all(dir / "results.csv") == before);
  std::filesystem::remove_all(dir);
}

TEST_CASE("eval/suite run: samples to within 5% and cell names", "[eval]") {
  CHECK(eval::samples_to_within({}, 0.05) == -1);
  const std::vector<place::CurvePoint> c{{1, 0.1, 2.0}, {10, 0.2, 1.04}, {50, 0.3, 1.0}};
  CHECK(eval::samples_to_within(c, 0.05) == 10);
  CHECK(eval::samples_to_within(c, 0.01) == 50);
  CHECK(eval::samples_to_within(c, 1.5) == 1);
  CHECK(eval::cell_stem("gnmt/8 layer", "a=b", 3) == "gnmt_8_layer.a_b.s3");
}
