// Cluster validation, routing (fewest hops, widest bottleneck) and datasheet presets.
#include "core/cluster.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>
#include <tuple>

#include "core/error.h"

namespace gdp {

RouteCost Cluster::route_cost(int32_t s, int32_t d) const {
  RouteCost c;
  for (int32_t dl : route(s, d)) {
    const LinkSpec& l = links[static_cast<size_t>(dl / 2)];
    ++c.hops;
    c.latency_s += l.latency_s;
    c.bottleneck_Bps = std::min(c.bottleneck_Bps, l.bandwidth_Bps);
  }
  return c;
}

bool Cluster::devices_interchangeable() const {
  const int32_t D = num_devices();
  const DeviceSpec& d0 = devices[0];
  for (const DeviceSpec& d : devices)
    if (d.kind != d0.kind || d.peak_fp32_flops != d0.peak_fp32_flops ||
        d.peak_fp16_flops != d0.peak_fp16_flops || d.mem_bandwidth_Bps != d0.mem_bandwidth_Bps ||
        d.memory_bytes != d0.memory_bytes || d.launch_overhead_s != d0.launch_overhead_s)
      return false;
  auto profile = [&](int32_t s) {  // the sorted costs of s's routes to the others
    std::vector<std::tuple<int32_t, double, double>> keys;
    for (int32_t d = 0; d < D; ++d) {
      if (d == s) continue;
      const RouteCost k = route_cost(s, d);
      keys.emplace_back(k.hops, k.bottleneck_Bps, k.latency_s);
    }
    std::sort(keys.begin(), keys.end());
    return keys;
  };
  const auto p0 = profile(0);
  for (int32_t s = 1; s < D; ++s)
    if (profile(s) != p0) return false;
  return true;
}

std::string Cluster::node_name(int32_t node) const {
  if (node < num_devices()) return devices[node].name;
  return switches[node - num_devices()];
}

std::string Cluster::directed_link_name(int32_t dlink) const {
  const LinkSpec& l = links[dlink / 2];
  return (dlink % 2 == 0) ? node_name(l.a) + "->" + node_name(l.b)
                          : node_name(l.b) + "->" + node_name(l.a);
}

int32_t Cluster::find_node(const std::string& n) const {
  for (int32_t i = 0; i < num_nodes(); ++i)
    if (node_name(i) == n) return i;
  return -1;
}

void Cluster::finalize() {
  const std::string who = "cluster '" + name + "'";
  if (devices.empty()) throw InputError(who + ": expected at least one device");
  const int32_t nn = num_nodes();
  for (int32_t i = 0; i < nn; ++i) {
    if (node_name(i).empty())
      throw InputError(who + ": node #" + std::to_string(i) + " has an empty name");
    for (int32_t j = 0; j < i; ++j)
      if (node_name(i) == node_name(j))
        throw InputError(who + ": duplicate node name '" + node_name(i) + "'");
  }
  for (const DeviceSpec& d : devices) {
    if (!(d.peak_fp32_flops > 0) || !(d.mem_bandwidth_Bps > 0) || d.memory_bytes <= 0 ||
        !(d.peak_fp16_flops > 0) || !(d.launch_overhead_s >= 0) ||
        !std::isfinite(d.peak_fp32_flops) || !std::isfinite(d.peak_fp16_flops) ||
        !std::isfinite(d.mem_bandwidth_Bps) || !std::isfinite(d.launch_overhead_s))
      throw InputError(
          who + ": device '" + d.name +
          "' needs positive finite peak flop/s, bandwidth and memory, launch overhead >= 0");
  }
  for (size_t l = 0; l < links.size(); ++l) {
    const LinkSpec& k = links[l];
    if (k.a < 0 || k.a >= nn || k.b < 0 || k.b >= nn || k.a == k.b)
      throw InputError(who + ": link #" + std::to_string(l) + " has invalid endpoints");
    if (!(k.bandwidth_Bps > 0) || !std::isfinite(k.bandwidth_Bps) || !(k.latency_s >= 0) ||
        !std::isfinite(k.latency_s))
      throw InputError(who + ": link #" + std::to_string(l) +
                       " needs a positive bandwidth and a latency >= 0");
  }
  // Adjacency: (neighbour, directed link id), sorted for deterministic tie-breaking.
  std::vector<std::vector<std::pair<int32_t, int32_t>>> adj(nn);
  for (size_t l = 0; l < links.size(); ++l) {
    adj[links[l].a].push_back({links[l].b, static_cast<int32_t>(2 * l)});
    adj[links[l].b].push_back({links[l].a, static_cast<int32_t>(2 * l + 1)});
  }
  const int32_t D = num_devices();
  // BFS from s layer by layer; among shortest paths keep the widest bottleneck (then lowest
  // link id). Without devices_relay a device other than s is reached but not passed through.
  auto search = [&](int32_t s, bool devices_relay, std::vector<int32_t>& hops,
                    std::vector<int32_t>& via) {
    hops.assign(nn, -1);
    via.assign(nn, -1);
    std::vector<double> width(nn, 0);
    hops[s] = 0;
    width[s] = INFINITY;
    std::vector<int32_t> layer{s};
    while (!layer.empty()) {
      std::vector<int32_t> next;
      for (int32_t u : layer) {
        if (!devices_relay && u != s && u < D) continue;
        for (auto [v, dl] : adj[u]) {
          double w = std::min(width[u], links[dl / 2].bandwidth_Bps);
          if (hops[v] == -1) {
            hops[v] = hops[u] + 1;
            width[v] = w;
            via[v] = dl;
            next.push_back(v);
          } else if (hops[v] == hops[u] + 1 && (w > width[v] || (w == width[v] && dl < via[v]))) {
            width[v] = w;
            via[v] = dl;
          }
        }
      }
      layer = std::move(next);
    }
  };
  routes_.assign(static_cast<size_t>(D) * D, {});
  std::vector<int32_t> hops, via, relay_hops, relay_via;
  for (int32_t s = 0; s < D; ++s) {
    // GPUs do not forward traffic: a route passes through another device only when no route
    // through switches alone exists (docs/formats.md, "Cluster").
    search(s, false, hops, via);
    bool relayed = false;
    for (int32_t d = 0; d < D; ++d) {
      if (d == s) continue;
      const std::vector<int32_t>* h = &hops;
      const std::vector<int32_t>* v_of = &via;
      if (hops[d] < 0) {
        if (!relayed) search(s, true, relay_hops, relay_via);
        relayed = true;
        h = &relay_hops;
        v_of = &relay_via;
      }
      if ((*h)[d] < 0)
        throw InputError(who + ": no route from '" + devices[s].name + "' to '" + devices[d].name +
                         "'");
      std::vector<int32_t>& r = routes_[static_cast<size_t>(s) * D + d];
      for (int32_t v = d; v != s;) {
        int32_t dl = (*v_of)[v];
        r.push_back(dl);
        const LinkSpec& k = links[dl / 2];
        v = (dl % 2 == 0) ? k.a : k.b;
      }
      std::reverse(r.begin(), r.end());
    }
  }
}

// ---- Presets ------------------------------------------------------------------------------

namespace {

constexpr double kT = 1e12, kG = 1e9, kUs = 1e-6;
constexpr int64_t kGiB = int64_t{1} << 30;

struct KindSheet {
  const char* kind;
  double fp32_tflops, fp16_tflops, hbm_GBps;
  int64_t mem_GiB;
  double nvlink_GBps;  // aggregate bidirectional per GPU; 0 = none
  double pcie_GBps;    // achieved per direction
  double nic_GBps;     // per node, per direction
  bool nvswitch;       // an NVSwitch generation exists for the kind (DGX-2, DGX A100/H100/H200)
};

// Dense datasheet figures (../shared/MISSION.md). K80 is one GK210 die (half a board).
constexpr KindSheet kSheets[] = {
    {"K80", 4.37, 4.37, 240, 12, 0, 6.5, 7.0, false},
    {"P100", 10.6, 21.2, 732, 16, 160, 12, 12.5, false},
    {"V100", 15.7, 125, 900, 16, 300, 12, 12.5, true},
    {"A100", 19.5, 312, 2039, 80, 600, 25, 25, true},
    {"H100", 67, 989, 3350, 80, 900, 50, 50, true},
    {"H200", 67, 989, 4800, 141, 900, 50, 50, true},
};

// Named machines: each is a preset of the grammar under the machine's name.
struct MachinePreset {
  const char* name;
  const char* preset;
  const char* machine;
};
constexpr MachinePreset kMachines[] = {
    {"dgx1-v100", "v100x8-cubemesh", "NVIDIA DGX-1 (V100)"},
    {"dgx-a100", "a100x8-nvswitch", "NVIDIA DGX A100"},
    {"dgx-h100", "h100x8-nvswitch", "NVIDIA DGX H100"},
    {"dgx-h200", "h200x8-nvswitch", "NVIDIA DGX H200"},
};

const MachinePreset* find_machine(const std::string& name) {
  for (const auto& m : kMachines)
    if (name == m.name) return &m;
  return nullptr;
}

char ascii_upper(char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c; }
char ascii_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

const KindSheet* find_sheet(std::string kind) {
  std::transform(kind.begin(), kind.end(), kind.begin(), ascii_upper);
  for (const auto& s : kSheets)
    if (kind == s.kind) return &s;
  return nullptr;
}

DeviceSpec device_from_sheet(const KindSheet& s) {
  DeviceSpec d;
  d.kind = s.kind;
  d.peak_fp32_flops = s.fp32_tflops * kT;
  d.peak_fp16_flops = s.fp16_tflops * kT;
  d.mem_bandwidth_Bps = s.hbm_GBps * kG;
  d.memory_bytes = s.mem_GiB * kGiB;
  d.launch_overhead_s = 5 * kUs;
  return d;
}

int32_t add_switch(Cluster& c, const std::string& n) {
  c.switches.push_back(n);
  return c.num_devices() + static_cast<int32_t>(c.switches.size()) - 1;
}

// Devices [first, first+count) joined by NVLink, pairwise: each pair gets an equal share of a
// GPU's per-direction NVLink bandwidth (docs/cost-model.md). Idealised: no machine is wired so.
void wire_nvlink(Cluster& c, const KindSheet& s, int32_t first, int32_t count) {
  double per_pair = (s.nvlink_GBps / 2) * kG / std::max(1, count - 1);
  for (int32_t i = first; i < first + count; ++i)
    for (int32_t j = i + 1; j < first + count; ++j)
      c.links.push_back({i, j, per_pair, 10 * kUs});  // framework + peer-copy launch per transfer
}

// Devices [first, first+count) on one non-blocking NVSwitch fabric: each GPU has one link to
// the switch with its full per-direction NVLink bandwidth, so a peer copy streams at that rate
// and copies into (out of) one GPU share its down-link (up-link). The 10 us per transfer of
// wire_nvlink is split over the two hops.
void wire_nvswitch(Cluster& c, const KindSheet& s, int32_t first, int32_t count) {
  int32_t sw = add_switch(c, "nvswitch");
  for (int32_t i = first; i < first + count; ++i)
    c.links.push_back({i, sw, (s.nvlink_GBps / 2) * kG, 5 * kUs});
}

// The DGX-1 V100 hybrid cube-mesh (NVIDIA, "NVIDIA DGX-1 With Tesla V100 System Architecture",
// 2017, and `nvidia-smi topo -m` on DGX-1V): GPU pairs and their NVLink 2.0 link counts, 6
// links per GPU. The other 12 pairs (across the two CPU sockets) have no NVLink.
struct NvlinkPair {
  int32_t a, b, links;
};
constexpr NvlinkPair kDgx1CubeMesh[] = {
    {0, 1, 1}, {0, 2, 1}, {0, 3, 2}, {0, 4, 2}, {1, 2, 2}, {1, 3, 1}, {1, 5, 2}, {2, 3, 2},
    {2, 6, 1}, {3, 7, 1}, {4, 5, 1}, {4, 6, 1}, {4, 7, 2}, {5, 6, 2}, {5, 7, 1}, {6, 7, 2},
};
constexpr double kNvlink2LinkGBps = 25;  // per link, per direction (V100 white paper, 2017)
constexpr double kQpiGBps = 38.4;        // 2 QPI links x 9.6 GT/s x 2 B, per direction

// DGX-1 V100: 8 GPUs in the hybrid cube-mesh; for the pairs without NVLink, the PCIe path a
// CUDA copy takes without peer access: GPU -> PCIe switch (2 GPUs each) -> CPU socket (2
// switches each) -> QPI -> the other socket -> PCIe switch -> GPU, staged in host memory.
void wire_dgx1_cubemesh(Cluster& c, const KindSheet& s) {
  for (const NvlinkPair& p : kDgx1CubeMesh)
    c.links.push_back({p.a, p.b, p.links * kNvlink2LinkGBps * kG, 10 * kUs});
  int32_t cpu0 = add_switch(c, "cpu0"), cpu1 = add_switch(c, "cpu1");
  c.links.push_back({cpu0, cpu1, kQpiGBps * kG, 5 * kUs});
  for (int32_t k = 0; k < 4; ++k) {
    int32_t sw = add_switch(c, "pcie" + std::to_string(k));
    c.links.push_back({sw, k < 2 ? cpu0 : cpu1, s.pcie_GBps * kG, 5 * kUs});
    for (int32_t i = 2 * k; i < 2 * k + 2; ++i)
      c.links.push_back({i, sw, s.pcie_GBps * kG, 10 * kUs});
  }
}

// Devices [first, first+count) under PCIe switches (4 GPUs each) below a host root complex.
int32_t wire_pcie(Cluster& c, const KindSheet& s, int32_t first, int32_t count,
                  const std::string& prefix) {
  int32_t host = add_switch(c, prefix + "host");
  int32_t nsw = (count + 3) / 4;
  for (int32_t k = 0; k < nsw; ++k) {
    int32_t sw = add_switch(c, prefix + "pcie" + std::to_string(k));
    c.links.push_back({sw, host, s.pcie_GBps * kG, 5 * kUs});
    for (int32_t i = first + 4 * k; i < std::min(first + count, first + 4 * k + 4); ++i)
      c.links.push_back({i, sw, s.pcie_GBps * kG, 10 * kUs});
  }
  return host;
}

// A preset name split by its grammar, <kind>x<count>-<topology>: kind [A-Za-z0-9]+, count of
// 1-4 digits, topology "nvlink", "nvswitch", "cubemesh", "pcie" or 1-4 digits then "node".
// Parsed by hand in one pass, so that any name, however long, costs linear time and constant
// stack.
struct PresetName {
  std::string_view kind, topology;  // topology: "nvlink", "nvswitch", "cubemesh", "pcie", "node"
  int64_t count = 0;
  int64_t nodes = 1;
  bool multi_node = false;  // the <N>node form, also for N = 1
};

bool is_ascii_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// 1 to 4 decimal digits -> *value.
bool parse_small_number(std::string_view s, int64_t* value) {
  if (s.empty() || s.size() > 4) return false;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = 10 * v + (c - '0');
  }
  *value = v;
  return true;
}

bool parse_preset_name(std::string_view s, PresetName* out) {
  // Neither kind nor topology holds a '-', and the count is digits only, so the first '-'
  // ends the count and the last 'x' before it starts the count.
  const size_t dash = s.find('-');
  if (dash == std::string_view::npos) return false;
  const std::string_view head = s.substr(0, dash), topology = s.substr(dash + 1);
  const size_t x = head.rfind('x');
  if (x == std::string_view::npos || x == 0) return false;
  out->kind = head.substr(0, x);
  if (!std::all_of(out->kind.begin(), out->kind.end(), is_ascii_alnum)) return false;
  if (!parse_small_number(head.substr(x + 1), &out->count)) return false;
  if (topology == "nvlink" || topology == "pcie" || topology == "nvswitch" ||
      topology == "cubemesh") {
    out->topology = topology;
    return true;
  }
  constexpr std::string_view kNode = "node";
  if (topology.size() <= kNode.size() || !topology.ends_with(kNode)) return false;
  if (!parse_small_number(topology.substr(0, topology.size() - kNode.size()), &out->nodes))
    return false;
  out->topology = kNode;
  out->multi_node = true;
  return true;
}

// The preset as quoted in messages: a very long name is shortened.
std::string quoted_preset(const std::string& preset) {
  constexpr size_t kShown = 64;
  if (preset.size() <= kShown) return "'" + preset + "'";
  return "'" + preset.substr(0, kShown) + "...' (" + std::to_string(preset.size()) + " characters)";
}

// A rate as written in descriptions, 3 significant digits: "450", "21.4", "12.5".
std::string gbps(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

}  // namespace

std::vector<std::string> cluster_preset_kinds() {
  std::vector<std::string> v;
  for (const auto& s : kSheets) {
    std::string k = s.kind;
    std::transform(k.begin(), k.end(), k.begin(), ascii_lower);
    v.push_back(k);
  }
  return v;
}

std::vector<std::string> cluster_preset_examples() {
  return {"k80x2-pcie",    "k80x4-pcie",      "p100x4-pcie",     "p100x4-nvlink",
          "v100x2-nvlink", "v100x4-nvlink",   "v100x8-nvlink",   "v100x4-pcie",
          "a100x8-nvlink", "h100x8-nvlink",   "h100x16-2node",   "h200x8-nvlink",
          "v100x16-4node", "dgx1-v100",       "dgx-a100",        "dgx-h100",
          "dgx-h200",      "a100x4-nvswitch", "h100x4-nvswitch", "h100x2-nvswitch"};
}

std::vector<std::string> cluster_machine_presets() {
  std::vector<std::string> v;
  for (const auto& m : kMachines) v.push_back(m.name);
  return v;
}

DeviceSpec device_preset(const std::string& kind) {
  const KindSheet* s = find_sheet(kind);
  if (!s) {
    std::string known;
    for (const auto& k : cluster_preset_kinds()) known += (known.empty() ? "" : ", ") + k;
    throw InputError("unknown device kind '" + kind + "' (known: " + known + ")");
  }
  return device_from_sheet(*s);
}

Cluster make_cluster_preset(const std::string& preset) {
  if (const MachinePreset* machine = find_machine(preset)) {
    Cluster c = make_cluster_preset(machine->preset);
    c.name = preset;
    return c;
  }
  const std::string grammar =
      "expected <kind>x<count>-<topology> with kind in {k80, p100, v100, a100, h100, h200} and "
      "topology nvlink, nvswitch, cubemesh, pcie or <N>node, e.g. v100x4-nvlink, or a machine: "
      "dgx1-v100, dgx-a100, dgx-h100, dgx-h200";
  const std::string who = "cluster preset " + quoted_preset(preset);
  PresetName m;
  if (!parse_preset_name(preset, &m)) throw InputError(who + ": " + grammar);
  const KindSheet* s = find_sheet(std::string(m.kind));
  if (!s) throw InputError(who + ": unknown kind; " + grammar);
  const int64_t count = m.count;
  if (count < 1 || count > 1024) throw InputError(who + ": device count must be in [1, 1024]");
  const std::string_view topo = m.topology;
  const int64_t nodes = m.nodes;
  if (nodes < 1 || count % nodes != 0)
    throw InputError(who + ": device count must be a multiple of the node count");
  if (topo == "nvlink" && s->nvlink_GBps == 0)
    throw InputError(who + ": " + s->kind + " has no NVLink; use pcie");
  if (topo == "nvswitch" && !s->nvswitch)
    throw InputError(who + ": " + s->kind + " has no NVSwitch; use " +
                     (s->nvlink_GBps > 0 ? "nvlink or pcie" : "pcie"));
  if (topo == "cubemesh" && (std::string_view(s->kind) != "V100" || count != 8))
    throw InputError(who +
                     ": cubemesh is the DGX-1 wiring of 8 V100 (v100x8-cubemesh, "
                     "dgx1-v100)");

  Cluster c;
  c.name = preset;
  const int32_t per_node = static_cast<int32_t>(count / nodes);
  for (int32_t i = 0; i < count; ++i) {
    DeviceSpec d = device_from_sheet(*s);
    d.name = nodes > 1
                 ? "node" + std::to_string(i / per_node) + "/gpu" + std::to_string(i % per_node)
                 : "gpu" + std::to_string(i);
    c.devices.push_back(d);
  }
  if (!m.multi_node) {
    if (topo == "nvlink")
      wire_nvlink(c, *s, 0, per_node);
    else if (topo == "nvswitch")
      wire_nvswitch(c, *s, 0, per_node);
    else if (topo == "cubemesh")
      wire_dgx1_cubemesh(c, *s);
    else
      wire_pcie(c, *s, 0, per_node, "");
  } else {
    // Per node: NVLink inside (GPUs reach the node's NIC over PCIe) or a PCIe tree whose host
    // holds the NIC; the NICs meet at a network switch.
    int32_t net = add_switch(c, "netswitch");
    for (int32_t n = 0; n < nodes; ++n) {
      std::string prefix = "node" + std::to_string(n) + "/";
      int32_t first = n * per_node;
      int32_t nic = add_switch(c, prefix + "nic");
      if (s->nvlink_GBps > 0) {
        wire_nvlink(c, *s, first, per_node);
        for (int32_t i = first; i < first + per_node; ++i)
          c.links.push_back({i, nic, s->pcie_GBps * kG, 5 * kUs});
      } else {
        int32_t host = wire_pcie(c, *s, first, per_node, prefix);
        c.links.push_back({host, nic, s->pcie_GBps * kG, 2 * kUs});
      }
      c.links.push_back({nic, net, s->nic_GBps * kG, 3 * kUs});
    }
  }
  c.finalize();
  return c;
}

std::string cluster_preset_description(const std::string& preset) {
  if (const MachinePreset* machine = find_machine(preset))
    return std::string(machine->machine) + ": " + cluster_preset_description(machine->preset);
  make_cluster_preset(preset);  // validates the name and the kind's support of the topology
  PresetName m;
  parse_preset_name(preset, &m);
  const KindSheet& s = *find_sheet(std::string(m.kind));
  const std::string nv = gbps(s.nvlink_GBps / 2), pcie = gbps(s.pcie_GBps);
  if (m.multi_node)
    return std::to_string(m.nodes) + " nodes, " +
           (s.nvlink_GBps > 0 ? "idealised NVLink pairs inside" : "PCIe tree inside") + ", a " +
           gbps(s.nic_GBps) + " GB/s NIC per node";
  if (m.topology == "nvswitch")
    return "one NVSwitch, every GPU " + nv + " GB/s per direction up and down";
  if (m.topology == "cubemesh")
    return "hybrid cube-mesh NVLink (25 or 50 GB/s per direction), PCIe + QPI for the rest";
  if (m.topology == "nvlink")
    return "idealised: every GPU pair a private link of " +
           gbps(s.nvlink_GBps / 2 / static_cast<double>(std::max<int64_t>(1, m.count - 1))) +
           " GB/s per direction";
  return "PCIe switches of 4 GPUs under a host, " + pcie + " GB/s per direction";
}

}  // namespace gdp
