// Cluster JSON (or preset string) and placement JSON readers/writers, strict like the graph's.
#include <filesystem>
#include <unordered_map>

#include "core/error.h"
#include "core/io.h"
#include "core/json_strict.h"

namespace gdp {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

Cluster parse_cluster_json(const std::string& text, const std::string& source) {
  StrictJson sj(source);
  json root = sj.parse(text);
  sj.check_header(root, "gdp-cluster", kClusterFormatVersion);
  sj.check_keys(root, "", {"format", "version", "name", "devices", "links"}, {"switches"});
  Cluster c;
  c.name = sj.string(root, "name", "");
  const json& devs = sj.array(root, "devices", "");
  if (devs.empty()) sj.fail("devices", "expected at least one device");
  for (size_t i = 0; i < devs.size(); ++i) {
    const std::string p = json_path("devices", i);
    sj.check_keys(devs[i], p,
                  {"name", "kind", "peak_fp32_tflops", "peak_fp16_tflops", "mem_bandwidth_GBps",
                   "memory_bytes", "launch_overhead_us"},
                  {});
    DeviceSpec d;
    d.name = sj.string(devs[i], "name", p);
    d.kind = sj.string(devs[i], "kind", p);
    d.peak_fp32_flops = sj.number(devs[i], "peak_fp32_tflops", p, 1e-9, 1e9) * 1e12;
    d.peak_fp16_flops = sj.number(devs[i], "peak_fp16_tflops", p, 1e-9, 1e9) * 1e12;
    d.mem_bandwidth_Bps = sj.number(devs[i], "mem_bandwidth_GBps", p, 1e-9, 1e9) * 1e9;
    d.memory_bytes = sj.integer(devs[i], "memory_bytes", p, 1, kMaxBytes);
    d.launch_overhead_s = sj.number(devs[i], "launch_overhead_us", p, 0, 1e9) * 1e-6;
    c.devices.push_back(d);
  }
  // Node ids by name (the first node of a name, as Cluster::find_node): a link's ends are
  // looked up in constant time, not by a scan of every node.
  std::unordered_map<std::string, int32_t> node_of;
  for (size_t i = 0; i < c.devices.size(); ++i)
    node_of.emplace(c.devices[i].name, static_cast<int32_t>(i));
  if (root.contains("switches")) {
    const json& sw = sj.array(root, "switches", "");
    for (size_t i = 0; i < sw.size(); ++i) {
      const std::string p = json_path("switches", i);
      if (!sw[i].is_string())
        sj.fail(p, "expected a switch name (a string), got " + json_preview(sw[i]));
      const std::string n = sw[i].get<std::string>();
      if (n.empty()) sj.fail(p, "expected a non-empty switch name");
      if (!node_of.emplace(n, c.num_nodes()).second)
        sj.fail(p, "duplicate name \"" + n + "\"; expected a name no device or switch has");
      c.switches.push_back(n);
    }
  }
  const json& links = sj.array(root, "links", "");
  for (size_t i = 0; i < links.size(); ++i) {
    const std::string p = json_path("links", i);
    sj.check_keys(links[i], p, {"a", "b", "bandwidth_GBps", "latency_us"}, {});
    LinkSpec l;
    for (const char* end : {"a", "b"}) {
      std::string n = sj.string(links[i], end, p);
      const auto it = node_of.find(n);
      const int32_t node = it == node_of.end() ? -1 : it->second;
      if (node < 0) sj.fail(json_path(p, end), "refers to unknown device or switch \"" + n + "\"");
      (end[0] == 'a' ? l.a : l.b) = node;
    }
    l.bandwidth_Bps = sj.number(links[i], "bandwidth_GBps", p, 1e-9, 1e9) * 1e9;
    l.latency_s = sj.number(links[i], "latency_us", p, 0, 1e9) * 1e-6;
    c.links.push_back(l);
  }
  try {
    c.finalize();
  } catch (const InputError& e) {
    throw InputError(source + ": " + e.what());
  }
  return c;
}

std::string cluster_to_json(const Cluster& c) {
  ojson j;
  j["format"] = "gdp-cluster";
  j["version"] = kClusterFormatVersion;
  j["name"] = c.name;
  ojson devs = ojson::array();
  for (const auto& d : c.devices)
    devs.push_back(ojson{{"name", d.name},
                         {"kind", d.kind},
                         {"peak_fp32_tflops", d.peak_fp32_flops / 1e12},
                         {"peak_fp16_tflops", d.peak_fp16_flops / 1e12},
                         {"mem_bandwidth_GBps", d.mem_bandwidth_Bps / 1e9},
                         {"memory_bytes", d.memory_bytes},
                         {"launch_overhead_us", d.launch_overhead_s * 1e6}});
  j["devices"] = std::move(devs);
  j["switches"] = c.switches;
  ojson links = ojson::array();
  for (const auto& l : c.links)
    links.push_back(ojson{{"a", c.node_name(l.a)},
                          {"b", c.node_name(l.b)},
                          {"bandwidth_GBps", l.bandwidth_Bps / 1e9},
                          {"latency_us", l.latency_s * 1e6}});
  j["links"] = std::move(links);
  return j.dump(2) + "\n";
}

Cluster read_cluster(const std::string& path_or_preset) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(path_or_preset, ec))
    return parse_cluster_json(read_text_file(path_or_preset), path_or_preset);
  if (path_or_preset.find(".json") != std::string::npos)
    throw InputError(path_or_preset + ": cannot open cluster file");
  return make_cluster_preset(path_or_preset);
}

Placement read_placement_file(const std::string& path, const Graph& g, int32_t num_devices) {
  StrictJson sj(path);
  json root = sj.parse(read_text_file(path));
  sj.check_header(root, "gdp-placement", kPlacementFormatVersion);
  sj.check_keys(root, "", {"format", "version", "devices", "placement"}, {"graph"});
  if (root.contains("graph")) sj.string(root, "graph", "");
  int64_t nd = sj.integer(root, "devices", "", 1, INT32_MAX);
  if (nd > num_devices)
    sj.fail("devices", "placement uses " + std::to_string(nd) + " devices but the cluster has " +
                           std::to_string(num_devices));
  const json& m = sj.object(root, "placement", "");
  Placement p{std::vector<int32_t>(g.num_ops(), -1)};
  for (auto it = m.begin(); it != m.end(); ++it) {
    const std::string q = "placement." + it.key();
    int32_t op = g.find_op(it.key());
    if (op < 0) sj.fail(q, "no op named \"" + it.key() + "\" in graph '" + g.name + "'");
    p.device[op] = static_cast<int32_t>(sj.integer_value(it.value(), q, 0, nd - 1));
  }
  for (int32_t i = 0; i < g.num_ops(); ++i)
    if (p.device[i] < 0)
      sj.fail("placement",
              "op \"" + g.op(i).name + "\" has no device; expected every op of the graph");
  return p;
}

std::string placement_to_json(const Placement& p, const Graph& g, int32_t num_devices) {
  std::string out =
      "{\"format\": \"gdp-placement\", \"version\": " + std::to_string(kPlacementFormatVersion) +
      ", \"graph\": " + json(g.name).dump() + ", \"devices\": " + std::to_string(num_devices) +
      ",\n\"placement\": {\n";
  for (int32_t i = 0; i < g.num_ops(); ++i) {
    out += "  " + json(g.op(i).name).dump() + ": " + std::to_string(p.device[i]);
    out += (i + 1 < g.num_ops()) ? ",\n" : "\n";
  }
  out += "}}\n";
  return out;
}

void write_placement_file(const Placement& p, const Graph& g, int32_t num_devices,
                          const std::string& path) {
  write_text_file_atomic(path, placement_to_json(p, g, num_devices));
}

}  // namespace gdp
