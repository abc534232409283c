// libFuzzer target of the cluster readers: the cluster JSON, and (for a short input without a
// '{') the preset grammar. A cluster read must have a route between every pair of devices made
// of links that join end to end, and read back from cluster_to_json with the same devices,
// switches and links (numbers to 1e-12 relative: the writer converts units); both checked up
// to kMaxCheckedDevices devices.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/io.h"
#include "fuzz/fuzz_common.h"

using gdp::Cluster;
using gdp::fuzz::finding;
using gdp::fuzz::outcome_of;

namespace {

constexpr int32_t kMaxCheckedDevices = 128;

void check_routes(const Cluster& c) {
  const int32_t D = c.num_devices();
  for (int32_t s = 0; s < D; ++s)
    for (int32_t d = 0; d < D; ++d) {
      const auto& route = c.route(s, d);
      if ((s == d) != route.empty())
        finding("route " + std::to_string(s) + " -> " + std::to_string(d) + " has " +
                std::to_string(route.size()) + " links");
      int32_t at = s;
      for (int32_t dl : route) {
        if (dl < 0 || dl >= c.num_directed_links()) finding("route link id out of range");
        const gdp::LinkSpec& l = c.links[static_cast<size_t>(dl / 2)];
        const int32_t from = dl % 2 == 0 ? l.a : l.b, to = dl % 2 == 0 ? l.b : l.a;
        if (from != at)
          finding("route " + std::to_string(s) + " -> " + std::to_string(d) +
                  " is not a path: " + c.directed_link_name(dl));
        at = to;
      }
      if (at != d)
        finding("route " + std::to_string(s) + " -> " + std::to_string(d) + " ends elsewhere");
    }
}

bool close(double a, double b) { return std::fabs(a - b) <= 1e-12 * std::fabs(a); }

std::string cluster_diff(const Cluster& a, const Cluster& b) {
  if (a.name != b.name || a.switches != b.switches) return "name or switches";
  if (a.devices.size() != b.devices.size() || a.links.size() != b.links.size()) return "counts";
  for (size_t i = 0; i < a.devices.size(); ++i) {
    const gdp::DeviceSpec &x = a.devices[i], &y = b.devices[i];
    if (x.name != y.name || x.kind != y.kind || x.memory_bytes != y.memory_bytes ||
        !close(x.peak_fp32_flops, y.peak_fp32_flops) ||
        !close(x.peak_fp16_flops, y.peak_fp16_flops) ||
        !close(x.mem_bandwidth_Bps, y.mem_bandwidth_Bps) ||
        !close(x.launch_overhead_s, y.launch_overhead_s))
      return "device #" + std::to_string(i);
  }
  for (size_t i = 0; i < a.links.size(); ++i) {
    const gdp::LinkSpec &x = a.links[i], &y = b.links[i];
    if (x.a != y.a || x.b != y.b || !close(x.bandwidth_Bps, y.bandwidth_Bps) ||
        !close(x.latency_s, y.latency_s))
      return "link #" + std::to_string(i);
  }
  return "";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const bool preset = size <= 64 && text.find('{') == std::string::npos;
  const auto read = outcome_of([&] {
    return preset ? gdp::make_cluster_preset(text) : gdp::parse_cluster_json(text, "fuzz.json");
  });
  if (preset) {
    const auto description = outcome_of([&] { return gdp::cluster_preset_description(text); });
    if (read.value.has_value() != description.value.has_value())
      finding("make_cluster_preset and cluster_preset_description disagree on '" + text + "'");
  }
  if (!read.value) return 0;
  const Cluster& c = *read.value;
  // The checks below up to kMaxCheckedDevices devices: the properties do not depend on the
  // size, and on a preset of 1,024 devices (a million routes; v100x1024-nvlink: 523,776 links,
  // 65 MB of JSON) they take seconds to minutes under the sanitizers.
  if (c.num_devices() > kMaxCheckedDevices) return 0;
  check_routes(c);
  const auto written = outcome_of([&] { return gdp::cluster_to_json(c); });
  if (!written.value) finding("cluster_to_json fails on a cluster read: " + written.error);
  const auto back =
      outcome_of([&] { return gdp::parse_cluster_json(*written.value, "back.json"); });
  if (!back.value) finding("cluster_to_json's text does not read back: " + back.error);
  if (std::string d = cluster_diff(c, *back.value); !d.empty())
    finding("the cluster read back from cluster_to_json differs in " + d);
  for (int32_t s = 0; s < c.num_devices(); ++s)
    for (int32_t d = 0; d < c.num_devices(); ++d)
      if (c.route(s, d) != back.value->route(s, d)) finding("routes differ after the round trip");
  return 0;
}
