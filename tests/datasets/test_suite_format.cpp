// The suite format: the shipped suites parse, the reader is strict (names the file, the JSON
// path and what was expected), and load_suite materializes generator calls and files.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/io.h"
#include "datasets/registry.h"
#include "datasets/suite.h"
#include "test_paths.h"

using namespace gdp;
using namespace gdp::datasets;

namespace {

std::string suite_path(const std::string& name) {
  return gdp::test::source_dir() + "/datasets/suites/" + name + ".json";
}

std::string wrap(const std::string& entries) {
  return R"({"format": "gdp-suite", "version": 1, "name": "t", "entries": [)" + entries + "]}";
}

void expect_error(const std::string& text, const std::string& fragment) {
  INFO(text);
  CHECK_THROWS_WITH(parse_suite_json(text, "t.json", ""), Catch::Contains(fragment));
}

}  // namespace

TEST_CASE("datasets/suite shipped suites parse strictly", "[datasets]") {
  for (const char* n : {"paper", "smoke", "pretrain", "holdout"}) {
    INFO(n);
    SuiteSpec s = read_suite_spec(suite_path(n));
    CHECK(s.name == n);
    CHECK(!s.entries.empty());
    for (const auto& e : s.entries) {
      CHECK(!e.model.empty());
      CHECK(read_cluster(e.cluster).num_devices() >= 2);
    }
  }
  // paper.json: each paper workload on 2, 4 or 8 GPUs; the GNMT family at 2, 4 and 8 layers.
  SuiteSpec p = read_suite_spec(suite_path("paper"));
  int gnmt = 0;
  for (const auto& e : p.entries) {
    int32_t d = read_cluster(e.cluster).num_devices();
    CHECK((d == 2 || d == 4 || d == 8));
    if (e.model == "gnmt") {
      ++gnmt;
      CHECK(e.options.layers == d);
    }
  }
  CHECK(gnmt == 3);
}

TEST_CASE("datasets/suite reader rejects malformed suites", "[datasets]") {
  const std::string ok = R"({"name": "a", "model": "rnnlm", "cluster": "v100x2-nvlink"})";
  CHECK(parse_suite_json(wrap(ok), "t.json", "").entries.size() == 1);
  expect_error(R"({"format": "gdp-suite", "version": 2, "name": "t", "entries": [)" + ok + "]}",
               "version");
  expect_error(R"({"format": "gdp-graph", "version": 1, "name": "t", "entries": [)" + ok + "]}",
               "format");
  expect_error(R"({"format": "gdp-suite", "version": 1, "name": "t", "entries": [], "extra": 1})",
               "extra");
  expect_error(wrap(""), "entries");
  expect_error(
      wrap(R"({"name": "a", "model": "rnnlm", "cluster": "v100x2-nvlink", "color": "red"})"),
      "entries[0]");
  expect_error(wrap(R"({"name": "a", "model": "rnnlm"})"), "cluster");
  expect_error(wrap(R"({"name": "a", "cluster": "v100x2-nvlink"})"), "exactly one of");
  expect_error(
      wrap(R"({"name": "a", "model": "rnnlm", "graph": "g.json", "cluster": "v100x2-nvlink"})"),
      "exactly one of");
  expect_error(wrap(R"({"name": "a", "model": "lstm", "cluster": "v100x2-nvlink"})"),
               "unknown model");
  expect_error(
      wrap(
          R"({"name": "a", "model": "rnnlm", "options": {"layer": 2}, "cluster": "v100x2-nvlink"})"),
      "entries[0].options.layer");
  expect_error(
      wrap(
          R"({"name": "a", "model": "rnnlm", "options": {"layers": -2}, "cluster": "v100x2-nvlink"})"),
      "entries[0].options.layers");
  expect_error(
      wrap(
          R"({"name": "a", "model": "rnnlm", "options": {"layers": "2"}, "cluster": "v100x2-nvlink"})"),
      "entries[0].options.layers");
  expect_error(
      wrap(
          R"({"name": "a", "model": "rnnlm", "options": {"stacks": 2}, "cluster": "v100x2-nvlink"})"),
      "does not take option 'stacks'");
  expect_error(
      wrap(
          R"({"name": "a", "model": "gnmt", "options": {"layers": 1}, "cluster": "v100x2-nvlink"})"),
      "layers");
  expect_error(wrap(ok + "," + ok), "duplicate entry name");
  expect_error(wrap(R"({"name": "a", "model": "rnnlm", "cluster": "v100x3-warp"})"), "cluster");
  expect_error(wrap(R"({"name": "a", "graph": "missing.json", "cluster": "v100x2-nvlink"})"),
               "does not exist");
  expect_error(
      wrap(
          R"({"name": "a", "model": "rnnlm", "cluster": "v100x2-nvlink", "placements": {"human": "p.json"}})"),
      "does not exist");
  expect_error("{", "t.json");
}

TEST_CASE("datasets/suite load_suite materializes generator calls, files and placements",
          "[datasets]") {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(gdp::test::binary_dir()) / "test_suite_tmp";
  fs::create_directories(dir);
  GenOptions o;
  o.layers = 2;
  o.seq_len = 4;
  o.hidden = 32;
  o.vocab = 50;
  o.batch = 4;
  Graph g = generate("rnnlm", o);
  write_graph_file(g, (dir / "g.json").string());
  Placement p;
  for (int32_t i = 0; i < g.num_ops(); ++i) p.device.push_back(i % 2);
  write_placement_file(p, g, 2, (dir / "p.json").string());
  std::ofstream((dir / "s.json").string())
      << R"({"format": "gdp-suite", "version": 1, "name": "tmp",
    "entries": [
      {"name": "from_file", "graph": "g.json", "cluster": "v100x2-nvlink", "placements": {"rr": "p.json"}},
      {"name": "from_model", "model": "rnnlm", "options": {"layers": 2, "seq_len": 4, "hidden": 32, "vocab": 50, "batch": 4},
       "cluster": "k80x2-pcie"}
    ]})";
  std::vector<SuiteEntry> es = load_suite((dir / "s.json").string());
  REQUIRE(es.size() == 2);
  CHECK(es[0].name == "from_file");
  CHECK(graph_to_json(es[0].graph) == graph_to_json(g));
  CHECK(graph_to_json(es[1].graph) == graph_to_json(g));
  CHECK(es[0].cluster_name == "v100x2-nvlink");
  CHECK(es[1].cluster.num_devices() == 2);
  REQUIRE(es[0].placements.count("rr") == 1);
  CHECK(es[0].placements.at("rr").device == p.device);
  fs::remove_all(dir);
}

TEST_CASE("datasets/suite a path the system cannot look up is an InputError naming file and field",
          "[datasets]") {
  // A path component over NAME_MAX (255 bytes) once threw std::filesystem_error out of the reader.
  const std::string part(256, 'p');
  const std::string graph =
      R"({"name": "a", "graph": ")" + part + R"(/g.json", "cluster": "v100x2-nvlink"})";
  const std::string cluster = R"({"name": "a", "model": "rnnlm", "cluster": ")" + part + R"("})";
  const std::string placement = R"({"name": "a", "model": "rnnlm", "cluster": "v100x2-nvlink",
      "placements": {"rr": ")" + part +
                                R"(.json"}})";
  const std::string preset =
      R"({"name": "a", "model": "rnnlm", "cluster": ")" + std::string(131000, 'a') + R"("})";
  struct Case {
    std::string entry, field;
  };
  for (const Case& c :
       {Case{graph, "entries[0].graph"}, Case{cluster, "entries[0].cluster"},
        Case{placement, "entries[0].placements.rr"}, Case{preset, "entries[0].cluster"}}) {
    INFO(c.field);
    std::string error;
    try {
      parse_suite_json(wrap(c.entry), "t.json", "");
    } catch (const InputError& e) {
      error = e.what();
    }
    CHECK_THAT(error, Catch::Contains("t.json") && Catch::Contains(c.field));
    if (c.entry != preset) CHECK_THAT(error, Catch::Contains("File name too long"));
  }
  // Through the file reader too, relative to the suite's folder.
  namespace fs = std::filesystem;
  const fs::path f = fs::path(gdp::test::binary_dir()) / "test_suite_long_path.json";
  std::ofstream(f.string()) << wrap(graph);
  CHECK_THROWS_WITH(read_suite_spec(f.string()),
                    Catch::Contains(f.string()) && Catch::Contains("entries[0].graph"));
  CHECK_THROWS_AS(load_suite(f.string()), InputError);
  fs::remove(f);
}
