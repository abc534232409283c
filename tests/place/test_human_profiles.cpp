// Human placement and suites on real measured graphs (PipeDream profiles in ../shared): graphs
// without flops are staged by their measured times when they do not fit one GPU.
#include <catch2/catch.hpp>
#include <filesystem>
#include <set>

#include "core/io.h"
#include "datasets/suite.h"
#include "place_helpers.h"
#include "sim/simulator.h"
#include "test_paths.h"

using namespace gdp;

TEST_CASE("place/human placement stages an imported profile that does not fit one GPU", "[place]") {
  GDP_REQUIRE_INPUT(test::shared_available(),
                    "the PipeDream profiles are missing: " << test::pipedream_profiles_dir());
  Graph g = read_graph_file(test::shared_dir() +
                            "/data/pipedream-profiles/image_classification/resnet50.txt");
  Cluster c = make_cluster_preset("v100x4-nvlink");
  Simulator sim(g, c, CostModel());
  REQUIRE_FALSE(sim.run(Placement{std::vector<int32_t>(g.num_ops(), 0)})
                    .valid);  // 16 GiB is not enough at batch 128
  place::HumanPlacementInfo info;
  Placement p = test::human(g, c, &info);
  SimResult r = sim.run(p);
  CHECK(r.valid);
  CHECK(info.strategy == "stages");
  CHECK(info.devices_used >= 2);
  std::set<int32_t> used(p.device.begin(), p.device.end());
  CHECK(used.size() >= 2);
}

TEST_CASE("place/pipedream suite loads the shared profiles", "[place]") {
  // The suite names its graphs relative to itself: in ../shared beside the checkout.
  const std::string beside = test::source_dir() + "/../shared/data/pipedream-profiles";
  GDP_REQUIRE_INPUT(
      test::shared_available() && std::filesystem::is_directory(beside),
      "the PipeDream profiles are missing: " << test::pipedream_profiles_dir() << " or " << beside);
  auto entries = datasets::load_suite(test::source_dir() + "/datasets/suites/pipedream.json");
  REQUIRE(entries.size() == 8);
  for (const auto& e : entries) {
    INFO(e.name);
    Simulator sim(e.graph, e.cluster, CostModel());
    CHECK(sim.run(test::human(e.graph, e.cluster)).valid);
  }
}
