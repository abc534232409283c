// The cluster: devices (GPUs with their datasheet constants), switch nodes (host, PCIe switch,
// NIC) and full-duplex links, with precomputed multi-hop routes between every device pair.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace gdp {

struct DeviceSpec {
  std::string name;              // unique, e.g. "gpu0"
  std::string kind;              // e.g. "V100"; matches MeasuredTime::device_kind and profiles
  double peak_fp32_flops = 0;    // flop/s
  double peak_fp16_flops = 0;    // flop/s (tensor cores where the device has them)
  double mem_bandwidth_Bps = 0;  // device memory bandwidth, bytes/s
  int64_t memory_bytes = 0;      // capacity
  double launch_overhead_s = 0;  // per-op fixed cost (kernel launch + framework)
};

// The uncontended cost of a route: its hops, the sum of their latencies and the smallest of
// their bandwidths (docs/cost-model.md §3: transfers are cut-through).
struct RouteCost {
  int32_t hops = 0;
  double latency_s = 0;
  double bottleneck_Bps = std::numeric_limits<double>::infinity();
  // latency + bytes / bottleneck (0 bytes: the latency alone).
  double time_s(int64_t bytes) const {
    return latency_s + (bytes > 0 ? static_cast<double>(bytes) / bottleneck_Bps : 0.0);
  }
};

// A full-duplex link between two nodes. Nodes 0..D-1 are the devices, D.. are switches.
struct LinkSpec {
  int32_t a = 0, b = 0;
  double bandwidth_Bps = 0;  // per direction
  double latency_s = 0;      // per hop, per transfer
};

class Cluster {
 public:
  std::string name;
  std::vector<DeviceSpec> devices;
  std::vector<std::string> switches;  // names of the non-compute nodes
  std::vector<LinkSpec> links;

  int32_t num_devices() const { return static_cast<int32_t>(devices.size()); }
  int32_t num_nodes() const { return num_devices() + static_cast<int32_t>(switches.size()); }
  // Directed link ids: 2*l for a->b, 2*l+1 for b->a.
  int32_t num_directed_links() const { return 2 * static_cast<int32_t>(links.size()); }
  std::string node_name(int32_t node) const;
  std::string directed_link_name(int32_t dlink) const;  // "gpu0->pcie0"
  int32_t find_node(const std::string& name) const;     // -1 when absent

  // Validates (names unique, links in range, positive bandwidth, every device pair
  // connected) and computes the routes. Throws InputError.
  void finalize();
  // Route from device s to device d as directed link ids (empty when s == d). Routes are
  // shortest by hop count, ties broken by larger bottleneck bandwidth then lower ids, among
  // the routes that pass through switches only; a route passes through another device only
  // when no such route exists (GPUs do not forward traffic).
  const std::vector<int32_t>& route(int32_t s, int32_t d) const {
    return routes_[static_cast<size_t>(s) * devices.size() + d];
  }
  // The one home of a route's latency and bottleneck (the cost view, the validator and the
  // policy's features all read them here).
  RouteCost route_cost(int32_t s, int32_t d) const;
  // Every device has the same constants and the same multiset of route costs to the others:
  // relabeling devices can then be a symmetry of the step time (a policy may anchor labels).
  bool devices_interchangeable() const;

 private:
  std::vector<std::vector<int32_t>> routes_;
};

// Presets from datasheets: "v100x4-nvlink", "k80x2-pcie", "h100x16-2node", "h100x8-nvswitch",
// ... Grammar: <kind>x<count>-<topology>, topology in {nvlink, nvswitch, cubemesh, pcie,
// <N>node}; or a machine name ("dgx1-v100", "dgx-a100", "dgx-h100", "dgx-h200"), which is a
// preset of the grammar under the machine's name. `nvlink` is the idealised all-pairs wiring;
// `nvswitch` and `cubemesh` are the real ones (docs/cost-model.md).
std::vector<std::string> cluster_preset_kinds();         // k80, p100, v100, a100, h100, h200
std::vector<std::string> cluster_preset_examples();      // a list for `gdp cluster --list`
std::vector<std::string> cluster_machine_presets();      // dgx1-v100, dgx-a100, ...
Cluster make_cluster_preset(const std::string& preset);  // throws InputError with the grammar
// One line on the preset's wiring for `gdp cluster --list`; throws like make_cluster_preset.
std::string cluster_preset_description(const std::string& preset);
DeviceSpec device_preset(const std::string& kind);  // throws InputError

}  // namespace gdp
