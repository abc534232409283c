// The realistic machine presets (NVSwitch, the DGX-1 hybrid cube-mesh), the rule that routes
// avoid relaying through devices, and the cluster JSON of switch nodes.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <numeric>

#include "core/error.h"
#include "core/io.h"

using namespace gdp;

namespace {

// The DGX-1 V100 NVLink map as `nvidia-smi topo -m` prints it on the machine (NV<k> = k
// NVLink 2.0 links, SYS = none): written out here independently of core/cluster.cpp.
constexpr int kDgx1NvLinks[8][8] = {
    {0, 1, 1, 2, 2, 0, 0, 0}, {1, 0, 2, 1, 0, 2, 0, 0}, {1, 2, 0, 2, 0, 0, 1, 0},
    {2, 1, 2, 0, 0, 0, 0, 1}, {2, 0, 0, 0, 0, 1, 1, 2}, {0, 2, 0, 0, 1, 0, 2, 1},
    {0, 0, 1, 0, 1, 2, 0, 2}, {0, 0, 0, 1, 2, 1, 2, 0},
};

std::vector<std::string> route_names(const Cluster& c, int s, int d) {
  std::vector<std::string> v;
  for (int32_t dl : c.route(s, d)) v.push_back(c.directed_link_name(dl));
  return v;
}

double route_latency_s(const Cluster& c, int s, int d) {
  double t = 0;
  for (int32_t dl : c.route(s, d)) t += c.links[dl / 2].latency_s;
  return t;
}

double route_bottleneck_Bps(const Cluster& c, int s, int d) {
  double bw = INFINITY;
  for (int32_t dl : c.route(s, d)) bw = std::min(bw, c.links[dl / 2].bandwidth_Bps);
  return bw;
}

std::string parse_error(const std::string& text) {
  try {
    parse_cluster_json(text, "c.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("core/topology machine presets load and are listed with a description", "[core]") {
  const std::vector<std::string> machines = cluster_machine_presets();
  CHECK(machines == std::vector<std::string>{"dgx1-v100", "dgx-a100", "dgx-h100", "dgx-h200"});
  const std::vector<std::string> examples = cluster_preset_examples();
  const std::vector<std::pair<const char*, const char*>> kinds = {
      {"dgx1-v100", "V100"}, {"dgx-a100", "A100"}, {"dgx-h100", "H100"}, {"dgx-h200", "H200"}};
  for (auto [name, kind] : kinds) {
    INFO(name);
    Cluster c = make_cluster_preset(name);
    CHECK(c.name == name);
    REQUIRE(c.num_devices() == 8);
    for (const DeviceSpec& d : c.devices) CHECK(d.kind == kind);
    CHECK(c.devices[7].name == "gpu7");
    CHECK(std::find(examples.begin(), examples.end(), name) != examples.end());
    CHECK_THAT(cluster_preset_description(name), Catch::StartsWith("NVIDIA DGX"));
    CHECK(read_cluster(name).num_devices() == 8);
  }
  // A machine is its grammar preset under another name.
  CHECK(cluster_to_json(make_cluster_preset("h100x8-nvswitch")) == [] {
    Cluster c = make_cluster_preset("dgx-h100");
    c.name = "h100x8-nvswitch";
    return cluster_to_json(c);
  }());
  for (const auto& e : examples) CHECK_FALSE(cluster_preset_description(e).empty());
  CHECK_THAT(cluster_preset_description("v100x8-nvlink"), Catch::Contains("idealised"));
  CHECK_THROWS_WITH(cluster_preset_description("dgx-h300"),
                    Catch::Contains("<kind>x<count>-<topology>") && Catch::Contains("dgx-h100"));
}

TEST_CASE("core/topology nvswitch: every GPU pair crosses the switch at full NVLink bandwidth",
          "[core]") {
  for (auto [name, gbps] : std::vector<std::pair<std::string, double>>{{"dgx-a100", 300},
                                                                       {"dgx-h100", 450},
                                                                       {"dgx-h200", 450},
                                                                       {"h100x4-nvswitch", 450},
                                                                       {"v100x16-nvswitch", 150}}) {
    INFO(name);
    Cluster c = make_cluster_preset(name);
    const int n = c.num_devices();
    CHECK(c.switches == std::vector<std::string>{"nvswitch"});
    CHECK(static_cast<int>(c.links.size()) == n);  // one full-duplex link per GPU
    for (const LinkSpec& l : c.links) CHECK(l.bandwidth_Bps == Approx(gbps * 1e9));
    for (int s = 0; s < n; ++s)
      for (int d = 0; d < n; ++d) {
        if (s == d) continue;
        const std::string gs = "gpu" + std::to_string(s), gd = "gpu" + std::to_string(d);
        CHECK(route_names(c, s, d) ==
              std::vector<std::string>{gs + "->nvswitch", "nvswitch->" + gd});
        CHECK(route_latency_s(c, s, d) == Approx(10e-6));
      }
  }
  CHECK(make_cluster_preset("h100x1-nvswitch").num_devices() == 1);
  CHECK_THROWS_WITH(make_cluster_preset("p100x8-nvswitch"), Catch::Contains("no NVSwitch"));
  CHECK_THROWS_WITH(make_cluster_preset("k80x2-nvswitch"),
                    Catch::Contains("no NVSwitch; use pcie"));
}

TEST_CASE("core/topology dgx1-v100 is the hybrid cube-mesh, PCIe and QPI where no NVLink",
          "[core]") {
  Cluster c = make_cluster_preset("dgx1-v100");
  REQUIRE(c.num_devices() == 8);
  CHECK(c.switches == std::vector<std::string>{"cpu0", "cpu1", "pcie0", "pcie1", "pcie2", "pcie3"});
  int nvlink_pairs = 0;
  for (int s = 0; s < 8; ++s) {
    // Six NVLink 2.0 links per GPU, to four peers, two of them doubled.
    CHECK(std::accumulate(kDgx1NvLinks[s], kDgx1NvLinks[s] + 8, 0) == 6);
    CHECK(std::count(kDgx1NvLinks[s], kDgx1NvLinks[s] + 8, 2) == 2);
    for (int d = 0; d < 8; ++d) {
      if (s == d) continue;
      INFO("gpu" << s << " -> gpu" << d);
      CHECK(kDgx1NvLinks[s][d] == kDgx1NvLinks[d][s]);
      const int k = kDgx1NvLinks[s][d];
      const std::string gs = "gpu" + std::to_string(s), gd = "gpu" + std::to_string(d);
      if (k > 0) {
        ++nvlink_pairs;
        CHECK(route_names(c, s, d) == std::vector<std::string>{gs + "->" + gd});
        CHECK(route_bottleneck_Bps(c, s, d) == Approx(k * 25e9));
        CHECK(route_latency_s(c, s, d) == Approx(10e-6));
      } else {
        // No NVLink: GPU -> PCIe switch -> own socket -> QPI -> other socket -> PCIe -> GPU.
        CHECK(s / 4 != d / 4);  // only pairs across the sockets lack NVLink
        const std::string ps = "pcie" + std::to_string(s / 2), pd = "pcie" + std::to_string(d / 2);
        const std::string cs = "cpu" + std::to_string(s / 4), cd = "cpu" + std::to_string(d / 4);
        CHECK(route_names(c, s, d) == std::vector<std::string>{gs + "->" + ps, ps + "->" + cs,
                                                               cs + "->" + cd, cd + "->" + pd,
                                                               pd + "->" + gd});
        CHECK(route_bottleneck_Bps(c, s, d) == Approx(12e9));
        CHECK(route_latency_s(c, s, d) == Approx(35e-6));
      }
    }
  }
  CHECK(nvlink_pairs == 2 * 16);
  CHECK(cluster_to_json(make_cluster_preset("v100x8-cubemesh")) == [] {
    Cluster x = make_cluster_preset("dgx1-v100");
    x.name = "v100x8-cubemesh";
    return cluster_to_json(x);
  }());
  CHECK_THROWS_WITH(make_cluster_preset("v100x4-cubemesh"), Catch::Contains("8 V100"));
  CHECK_THROWS_WITH(make_cluster_preset("a100x8-cubemesh"), Catch::Contains("8 V100"));
}

TEST_CASE("core/topology routes relay through a device only when no switch route exists",
          "[core]") {
  auto gpu = [](const std::string& n) {
    DeviceSpec d = device_preset("v100");
    d.name = n;
    return d;
  };
  // gpu0 - gpu1 - gpu2 by direct links, and gpu0 - sw0 - sw1 - gpu2 through switches.
  Cluster c;
  c.name = "relay";
  c.devices = {gpu("gpu0"), gpu("gpu1"), gpu("gpu2")};
  c.switches = {"sw0", "sw1"};
  c.links = {{0, 1, 1e9, 0}, {1, 2, 1e9, 0}, {0, 3, 1e9, 0}, {3, 4, 1e9, 0}, {4, 2, 1e9, 0}};
  c.finalize();
  CHECK(route_names(c, 0, 2) == std::vector<std::string>{"gpu0->sw0", "sw0->sw1", "sw1->gpu2"});
  CHECK(route_names(c, 2, 0) == std::vector<std::string>{"gpu2->sw1", "sw1->sw0", "sw0->gpu0"});
  CHECK(route_names(c, 0, 1) == std::vector<std::string>{"gpu0->gpu1"});
  // Without the switches, gpu1 relays (a ring or chain of devices still routes).
  c.switches.clear();
  c.links.resize(2);
  c.finalize();
  CHECK(route_names(c, 0, 2) == std::vector<std::string>{"gpu0->gpu1", "gpu1->gpu2"});
}

TEST_CASE("core/topology cluster JSON of the new presets round-trips through the strict reader",
          "[core]") {
  for (const char* name :
       {"dgx1-v100", "dgx-a100", "dgx-h100", "dgx-h200", "h100x4-nvswitch", "v100x8-cubemesh"}) {
    INFO(name);
    Cluster c = make_cluster_preset(name);
    const std::string text = cluster_to_json(c);
    Cluster d = parse_cluster_json(text, std::string(name) + ".json");
    CHECK(cluster_to_json(d) == text);
    CHECK(d.switches == c.switches);
    REQUIRE(d.links.size() == c.links.size());
    for (size_t l = 0; l < c.links.size(); ++l) {
      CHECK(d.links[l].a == c.links[l].a);
      CHECK(d.links[l].b == c.links[l].b);
      CHECK(d.links[l].bandwidth_Bps == Approx(c.links[l].bandwidth_Bps).epsilon(1e-15));
      CHECK(d.links[l].latency_s == Approx(c.links[l].latency_s).epsilon(1e-15));
    }
    for (int s = 0; s < c.num_devices(); ++s)
      for (int t = 0; t < c.num_devices(); ++t) CHECK(d.route(s, t) == c.route(s, t));
  }
}

TEST_CASE("core/topology a malformed switch entry names the file and the field", "[core]") {
  const std::string dev =
      "{\"name\": \"g0\", \"kind\": \"H100\", \"peak_fp32_tflops\": 67, \"peak_fp16_tflops\": "
      "989, \"mem_bandwidth_GBps\": 3350, \"memory_bytes\": 1000, \"launch_overhead_us\": 5}";
  const std::string dev1 = std::string(dev).replace(dev.find("g0"), 2, "g1");
  auto cl = [&](const std::string& switches, const std::string& links) {
    return "{\"format\": \"gdp-cluster\", \"version\": 1, \"name\": \"x\", \"devices\": [" + dev +
           "," + dev1 + "], \"switches\": " + switches + ", \"links\": [" + links + "]}";
  };
  auto link = [](const char* a, const char* b) {
    return std::string("{\"a\": \"") + a + "\", \"b\": \"" + b +
           "\", \"bandwidth_GBps\": 450, \"latency_us\": 5}";
  };
  const std::string star = link("g0", "nvswitch") + "," + link("g1", "nvswitch");
  CHECK(parse_error(cl("[\"nvswitch\"]", star)).empty());
  CHECK_THAT(parse_error(cl("[7]", star)), Catch::StartsWith("c.json") &&
                                               Catch::Contains("switches[0]") &&
                                               Catch::Contains("expected a switch name"));
  CHECK_THAT(parse_error(cl("[\"nvswitch\", {\"name\": \"sw\"}]", star)),
             Catch::Contains("switches[1]") && Catch::Contains("an object"));
  CHECK_THAT(parse_error(cl("[\"\"]", star)),
             Catch::Contains("switches[0]") && Catch::Contains("non-empty"));
  CHECK_THAT(parse_error(cl("[\"nvswitch\", \"nvswitch\"]", star)),
             Catch::Contains("switches[1]") && Catch::Contains("duplicate name \"nvswitch\""));
  CHECK_THAT(parse_error(cl("[\"g1\"]", star)),
             Catch::Contains("switches[0]") && Catch::Contains("duplicate name \"g1\""));
  CHECK_THAT(parse_error(cl("\"nvswitch\"", star)), Catch::Contains("switches"));
  CHECK_THAT(
      parse_error(cl("[\"nvswitch\"]", link("g0", "nvswitch") + "," + link("g1", "nvswich"))),
      Catch::Contains("links[1].b") && Catch::Contains("\"nvswich\""));
  CHECK_THAT(parse_error(cl("[]", star)), Catch::Contains("links[0].b"));
  // Through a file, the message names the file's path.
  const auto path = (std::filesystem::temp_directory_path() / "gdp_topology_bad.json").string();
  write_text_file_atomic(path, cl("[null]", star));
  CHECK_THROWS_WITH(read_cluster(path), Catch::StartsWith(path) && Catch::Contains("switches[0]"));
  std::filesystem::remove(path);
}
