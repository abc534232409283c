// Cluster presets, routes over several hops, the strict cluster reader, placement files.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <regex>

#include "core/error.h"
#include "core/io.h"

using namespace gdp;

namespace {
int hops(const Cluster& c, int s, int d) { return static_cast<int>(c.route(s, d).size()); }
}  // namespace

TEST_CASE("core/cluster nvlink preset is all-to-all", "[core]") {
  Cluster c = make_cluster_preset("v100x4-nvlink");
  REQUIRE(c.num_devices() == 4);
  CHECK(c.devices[0].kind == "V100");
  CHECK(c.devices[0].peak_fp32_flops == Approx(15.7e12));
  CHECK(c.devices[0].mem_bandwidth_Bps == Approx(900e9));
  for (int s = 0; s < 4; ++s)
    for (int d = 0; d < 4; ++d) CHECK(hops(c, s, d) == (s == d ? 0 : 1));
  // Route endpoints chain correctly: the directed link leaves s and reaches d.
  int32_t dl = c.route(1, 3)[0];
  CHECK(c.directed_link_name(dl) == "gpu1->gpu3");
}

TEST_CASE("core/cluster pcie preset routes through switches and host", "[core]") {
  Cluster c = make_cluster_preset("k80x8-pcie");
  REQUIRE(c.num_devices() == 8);
  CHECK(hops(c, 0, 1) == 2);  // same PCIe switch
  CHECK(hops(c, 0, 5) == 4);  // across the host
  const auto& r = c.route(0, 5);
  CHECK(c.directed_link_name(r[0]) == "gpu0->pcie0");
  CHECK(c.directed_link_name(r[1]) == "pcie0->host");
  CHECK(c.directed_link_name(r[2]) == "host->pcie1");
  CHECK(c.directed_link_name(r[3]) == "pcie1->gpu5");
  CHECK_THROWS_WITH(make_cluster_preset("k80x2-nvlink"), Catch::Contains("no NVLink"));
}

TEST_CASE("core/cluster multi-node preset crosses NICs", "[core]") {
  Cluster c = make_cluster_preset("h100x16-2node");
  REQUIRE(c.num_devices() == 16);
  CHECK(hops(c, 0, 7) == 1);  // NVLink inside a node
  CHECK(hops(c, 0, 8) == 4);  // gpu -> nic -> netswitch -> nic -> gpu
  CHECK(c.devices[9].name == "node1/gpu1");
}

TEST_CASE("core/cluster preset grammar errors are clear", "[core]") {
  CHECK_THROWS_WITH(make_cluster_preset("v100-4"), Catch::Contains("<kind>x<count>-<topology>"));
  CHECK_THROWS_WITH(make_cluster_preset("tpu4x4-nvlink"), Catch::Contains("unknown kind"));
  CHECK_THROWS_WITH(make_cluster_preset("v100x6-4node"),
                    Catch::Contains("multiple of the node count"));
  CHECK_THROWS_WITH(make_cluster_preset("v100x99999999999999999999-nvlink"),
                    Catch::Contains("<kind>x<count>-<topology>"));
  for (const auto& e : cluster_preset_examples()) CHECK_NOTHROW(make_cluster_preset(e));
  // One node still means NVLink inside (and a NIC), like every <N>node preset.
  Cluster one = make_cluster_preset("v100x4-1node");
  CHECK(one.route(0, 3).size() == 1);
  CHECK(one.find_node("node0/nic") >= 0);
}

TEST_CASE("core/cluster preset parser accepts exactly the grammar's regex", "[core]") {
  // The grammar as the regex the parser replaced (fine on short names): the reference.
  // Machine names (dgx-h100, ...) are exact names outside the grammar.
  const std::regex grammar(
      R"(([A-Za-z0-9]+)x([0-9]{1,4})-(nvlink|nvswitch|cubemesh|pcie|([0-9]{1,4})node))");
  const std::vector<std::string> machines = cluster_machine_presets();
  std::vector<std::string> names = cluster_preset_examples();
  for (const auto& kind : cluster_preset_kinds())
    for (const char* rest : {"x1-pcie", "x4-nvlink", "x8-pcie", "x16-2node", "x8-8node",
                             "x8-nvswitch", "x3-nvswitch", "x8-cubemesh", "x4-cubemesh"})
      names.push_back(kind + rest);
  for (const char* n : {"dgx-h300", "DGX-H100", "dgx-h100 ", "dgx1-v100x8", "dgx-a100-8",
                        "v100x8-NVSWITCH", "h100x8-nvswitch2", "h100x8-2nvswitch"})
    names.push_back(n);
  for (const char* n : {"V100x4-nvlink",
                        "v100X4-nvlink",
                        "v100x0004-nvlink",
                        "v100x00004-nvlink",
                        "v100x0-nvlink",
                        "v100x2000-pcie",
                        "x4-nvlink",
                        "v1x00x4-pcie",
                        "v100xx4-pcie",
                        "v100x4x-pcie",
                        "v100x4-NVLINK",
                        "v100x4-node",
                        "v100x4-1node",
                        "v100x4-0node",
                        "v100x4-00002node",
                        "v100x4-0002node",
                        "v100x4-2nodes",
                        "v100x4-nvlink ",
                        " v100x4-nvlink",
                        "v100x4_nvlink",
                        "v100x4-nvlink-x",
                        "v100x4--nvlink",
                        "-v100x4-nvlink",
                        "v100-x4-nvlink",
                        "",
                        "x",
                        "-",
                        "x-",
                        "v100x-pcie",
                        "v100x4-",
                        "v1.0x4-pcie",
                        "v100x4-2node\n",
                        "v\xc3\xa9x4-pcie",
                        "tpu4x4-nvlink",
                        "k80x3-2node",
                        "k80x2-nvlink"})
    names.push_back(n);
  const std::string grammar_text = "<kind>x<count>-<topology>";
  for (const auto& n : names) {
    INFO("preset '" << n << "'");
    std::smatch m;
    const bool machine = std::find(machines.begin(), machines.end(), n) != machines.end();
    const bool matches = std::regex_match(n, m, grammar) || machine;
    std::string error;
    int32_t devices = -1;
    try {
      devices = make_cluster_preset(n).num_devices();
    } catch (const InputError& e) {
      error = e.what();
    }
    CHECK(matches == (error.find(grammar_text) == std::string::npos ||
                      error.find("unknown kind") != std::string::npos));
    if (matches && error.empty()) CHECK(devices == (machine ? 8 : std::stoi(m[2].str())));
  }
}

TEST_CASE("core/cluster every preset of the list and every kind builds", "[core]") {
  for (const auto& e : cluster_preset_examples()) {
    INFO(e);
    Cluster c = make_cluster_preset(e);
    CHECK(c.name == e);
    CHECK(c.num_devices() >= 2);
  }
  for (const auto& kind : cluster_preset_kinds()) {
    INFO(kind);
    CHECK(make_cluster_preset(kind + "x4-pcie").num_devices() == 4);
    CHECK(make_cluster_preset(kind + "x8-2node").num_devices() == 8);
    CHECK_THROWS_WITH(make_cluster_preset(kind + "x1025-pcie"), Catch::Contains("[1, 1024]"));
  }
}

TEST_CASE("core/cluster a 131,000-letter preset name is a grammar error", "[core]") {
  // Once a crash: the regex recursed once per character and overflowed the stack.
  const std::string letters(131000, 'a');
  for (const std::string& n : {letters, letters + "x4-nvlink", "v100x4-" + letters,
                               std::string(131000, 'x') + "4-pcie", "v100x" + letters + "-pcie"}) {
    std::string error;
    try {
      make_cluster_preset(n);
    } catch (const InputError& e) {
      error = e.what();
    }
    CHECK_THAT(error, Catch::Contains("<kind>x<count>-<topology>"));
    CHECK(error.size() < 400);  // the name is shortened in the message
  }
  CHECK_THROWS_WITH(make_cluster_preset(std::string(131000, 'a') + "x4-nvlink"),
                    Catch::Contains("131009 characters"));
  CHECK_THROWS_WITH(read_cluster(letters), Catch::Contains("<kind>x<count>-<topology>"));
}

TEST_CASE("core/cluster json round-trips and is strict", "[core]") {
  Cluster c = make_cluster_preset("p100x4-pcie");
  std::string text = cluster_to_json(c);
  Cluster d = parse_cluster_json(text, "c.json");
  CHECK(cluster_to_json(d) == text);
  CHECK(d.route(0, 3) == c.route(0, 3));

  auto err = [](const std::string& t) {
    try {
      parse_cluster_json(t, "c.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string dev =
      "{\"name\": \"g0\", \"kind\": \"V100\", \"peak_fp32_tflops\": 15.7, \"peak_fp16_tflops\": "
      "125, "
      "\"mem_bandwidth_GBps\": 900, \"memory_bytes\": 1000, \"launch_overhead_us\": 5}";
  const std::string dev1 = std::string(dev).replace(dev.find("g0"), 2, "g1");
  auto cl = [&](const std::string& devs, const std::string& links) {
    return "{\"format\": \"gdp-cluster\", \"version\": 1, \"name\": \"x\", \"devices\": [" + devs +
           "], \"links\": [" + links + "]}";
  };
  const std::string link =
      "{\"a\": \"g0\", \"b\": \"g1\", \"bandwidth_GBps\": 10, \"latency_us\": 2}";
  CHECK(err(cl(dev + "," + dev1, link)).empty());
  CHECK_THAT(err(cl(dev + "," + dev1, "")), Catch::Contains("no route"));
  CHECK_THAT(err(cl(dev + "," + dev1,
                    "{\"a\": \"g0\", \"b\": \"g9\", \"bandwidth_GBps\": 10, \"latency_us\": 2}")),
             Catch::Contains("links[0].b") && Catch::Contains("unknown device or switch"));
  CHECK_THAT(err(cl(dev + "," + dev1,
                    "{\"a\": \"g0\", \"b\": \"g1\", \"bandwidth_GBps\": 0, \"latency_us\": 2}")),
             Catch::Contains("links[0].bandwidth_GBps"));
  CHECK_THAT(err(cl(dev + "," + dev, "")), Catch::Contains("duplicate node name"));
  std::string bad = dev;
  bad.replace(bad.find("\"launch_overhead_us\""), 20,
              "\"launch_overhead\": 5, \"launch_overhead_us\"");
  CHECK_THAT(err(cl(bad, "")),
             Catch::Contains("devices[0].launch_overhead") && Catch::Contains("unknown key"));
  CHECK_THAT(err(cl("", "")), Catch::Contains("at least one device"));
  std::string fast = dev;
  fast.replace(fast.find("\"peak_fp32_tflops\": 15.7"), 24, "\"peak_fp32_tflops\": 1e300");
  CHECK_THAT(err(cl(fast, "")),
             Catch::Contains("devices[0].peak_fp32_tflops") && Catch::Contains("<="));
}

TEST_CASE("core/placement files round-trip and are strict", "[core]") {
  Graph g;
  g.name = "p";
  for (int i = 0; i < 4; ++i) {
    Op o;
    o.id = i;
    o.name = "op" + std::to_string(i);
    o.outputs.push_back({{1}, DType::f32, 4});
    if (i >= 2) o.colocation = "v";
    g.add_op(o);
  }
  g.add_edge(0, 0, 1, 4);
  g.add_edge(1, 0, 2, 4);
  g.add_edge(2, 0, 3, 4);
  g.finalize();
  Placement rr{{0, 1, 2, 2}};  // op3 with its colocation group
  auto path = (std::filesystem::temp_directory_path() / "gdp_place.json").string();
  write_placement_file(rr, g, 3, path);
  CHECK(read_placement_file(path, g, 3).device == rr.device);
  CHECK_THROWS_WITH(read_placement_file(path, g, 2),
                    Catch::Contains("uses 3 devices but the cluster has 2"));
  write_text_file_atomic(path,
                         "{\"format\": \"gdp-placement\", \"version\": 1, \"devices\": 2, "
                         "\"placement\": {\"op0\": 0, \"op1\": 1, \"op2\": 1}}");
  CHECK_THROWS_WITH(read_placement_file(path, g, 2),
                    Catch::Contains("op3") && Catch::Contains("no device"));
  write_text_file_atomic(path,
                         "{\"format\": \"gdp-placement\", \"version\": 1, \"devices\": 2, "
                         "\"placement\": {\"op0\": 0, \"op1\": 2, \"op2\": 1, \"op3\": 1}}");
  CHECK_THROWS_WITH(read_placement_file(path, g, 2), Catch::Contains("placement.op1"));
  write_text_file_atomic(path,
                         "{\"format\": \"gdp-placement\", \"version\": 1, \"devices\": 2, "
                         "\"placement\": {\"opX\": 0}}");
  CHECK_THROWS_WITH(read_placement_file(path, g, 2), Catch::Contains("no op named \"opX\""));
  std::filesystem::remove(path);
}
