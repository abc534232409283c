// PipeDream import of every shipped profile: node/edge counts and total forward/backward time
// preserved (counted independently from the raw text), plus the importer's strictness.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "core/error.h"
#include "core/io.h"
#include "test_paths.h"

using namespace gdp;

TEST_CASE("core/pipedream import of every shared profile", "[core]") {
  GDP_REQUIRE_INPUT(test::shared_available(),
                    "the PipeDream profiles are missing: " << test::pipedream_profiles_dir());
  const std::filesystem::path root = test::pipedream_profiles_dir();
  std::vector<std::filesystem::path> files;
  for (auto& e : std::filesystem::recursive_directory_iterator(root))
    if (e.path().extension() == ".txt" && e.path().filename() != "LICENSE.txt") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 14);
  const std::regex node_re(R"(^node\d+ -- .* -- forward_compute_time=([0-9.]+), backward_compute_time=([0-9.]+),)");
  for (const auto& f : files) {
    INFO(f.string());
    std::ifstream in(f);
    std::string line;
    int64_t nodes = 0, edges = 0;
    double fwd_ms = 0, bwd_ms = 0, params = 0;
    while (std::getline(in, line)) {
      std::smatch m;
      if (line.rfind("\t", 0) == 0) ++edges;
      else if (std::regex_search(line, m, node_re)) {
        ++nodes;
        fwd_ms += std::stod(m[1]);
        bwd_ms += std::stod(m[2]);
        auto k = line.find("parameter_size=");
        params += std::stod(line.substr(k + 15));
      }
    }
    Graph g = read_graph_file(f.string());
    CHECK(g.num_ops() == 2 * nodes);
    CHECK(g.num_edges() == 2 * edges + nodes);
    double gf = 0, gb = 0;
    for (const Op& o : g.ops()) {
      REQUIRE(o.measured.size() == 1);
      (o.phase == Phase::forward ? gf : gb) += o.measured[0].time_s;
    }
    CHECK(gf == Approx(fwd_ms * 1e-3).epsilon(1e-9));
    CHECK(gb == Approx(bwd_ms * 1e-3).epsilon(1e-9));
    CHECK(static_cast<double>(g.summary().parameter_bytes) == Approx(params).epsilon(1e-9));
    // Round trip through the native format.
    Graph h = parse_graph_json(graph_to_json(g), "mem");
    CHECK(graph_to_json(h) == graph_to_json(g));
  }
}

TEST_CASE("core/pipedream mapping: backward mirrors forward, activation kept alive", "[core]") {
  const std::string text =
      "node1 -- Input0 -- forward_compute_time=0.000, backward_compute_time=0.000, activation_size=400.0, parameter_size=0.000\n"
      "node2 -- Linear(in_features=10, out_features=10) -- forward_compute_time=1.5, backward_compute_time=3.0, activation_size=[400.0; 40.0], parameter_size=440.000 -- stage_id=0\n"
      "node3 -- ReLU() -- forward_compute_time=0.25, backward_compute_time=0.5, activation_size=440.0, parameter_size=0.000\n"
      "\tnode1 -- node2\n"
      "\tnode2 -- node3\n";
  Graph g = parse_pipedream(text, "mini/graph.txt");
  CHECK(g.name == "mini");
  REQUIRE(g.num_ops() == 6);
  int32_t f2 = g.find_op("node2/forward"), b2 = g.find_op("node2/backward"), b3 = g.find_op("node3/backward"),
          b1 = g.find_op("node1/backward");
  REQUIRE(f2 >= 0);
  CHECK(g.op(f2).outputs[0].bytes == 440);  // list summed
  CHECK(g.op(f2).param_bytes == 440);
  CHECK(g.op(f2).type == "Linear");
  CHECK(g.op(f2).colocation == g.op(b2).colocation);
  CHECK(g.op(f2).measured[0].time_s == Approx(1.5e-3));
  bool keeps = false, mirror = false, grad_to_input = false;
  for (const Edge& e : g.edges()) {
    if (e.src == f2 && e.dst == b2) keeps = true;
    if (e.src == b3 && e.dst == b2) mirror = e.bytes == 440;
    if (e.src == b2 && e.dst == b1) grad_to_input = e.bytes == 400;
  }
  CHECK(keeps);
  CHECK(mirror);
  CHECK(grad_to_input);
}

TEST_CASE("core/pipedream importer rejects malformed input", "[core]") {
  auto err = [](const std::string& t) {
    try {
      parse_pipedream(t, "p.txt");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK_THAT(err("node1 -- X -- forward_compute_time=abc, backward_compute_time=0, activation_size=1, parameter_size=0\n"),
             Catch::Contains("p.txt:1") && Catch::Contains("forward_compute_time"));
  CHECK_THAT(err("node1 -- X -- forward_compute_time=1, activation_size=1, parameter_size=0\n"),
             Catch::Contains("missing field backward_compute_time"));
  CHECK_THAT(err("node1 -- X -- forward_compute_time=1, backward_compute_time=0, activation_size=1, parameter_size=0\n\tnode1 -- node7\n"),
             Catch::Contains("p.txt:2") && Catch::Contains("node7"));
  CHECK_THAT(err("node1 -- X -- forward_compute_time=-1, backward_compute_time=0, activation_size=1, parameter_size=0\n"),
             Catch::Contains("expected a number in"));
  const std::string node = "node1 -- X -- forward_compute_time=1, backward_compute_time=0, activation_size=1, parameter_size=0\n";
  const std::string node2 = "node2 -- X -- forward_compute_time=1, backward_compute_time=0, activation_size=1, parameter_size=0\n";
  CHECK_THAT(err(node + node2 + "\tnode1 -- node2\n\tnode1 -- node2\n"), Catch::Contains("p.txt:4") && Catch::Contains("duplicate edge"));
  CHECK_THAT(err("node1 -- X -- forward_compute_time=1, forward_compute_time=2, backward_compute_time=0, activation_size=1, parameter_size=0\n"),
             Catch::Contains("appears twice"));
  CHECK_THAT(err("node+1 -- X -- forward_compute_time=1, backward_compute_time=0, activation_size=1, parameter_size=0\n"),
             Catch::Contains("nodeN"));
  CHECK_THAT(err("node1 -- X -- forward_compute_time=1, backward_compute_time=0, activation_size=[1.0;], parameter_size=0\n"),
             Catch::Contains("empty list item"));
  CHECK_THAT(err("node1 -- X -- forward_compute_time=1, backward_compute_time=0, activation_size=1e30, parameter_size=0\n"),
             Catch::Contains("activation_size"));
}
