// Human-expert placement rules (see human.h): unit (layer/stack) blocks per device, stage
// splits for CNNs that do not fit, neighbours for unscoped ops, gradients with their forward op.
#include "place/human.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <stdexcept>

#include "core/error.h"
#include "place/methods.h"
#include "place/units.h"

namespace gdp::place {

namespace {

// Unit index from the first scope component "layer_<k>" or "stack_<k>"; -1 when none.
int32_t unit_of(const std::string& scope) {
  size_t pos = 0;
  while (pos <= scope.size()) {
    size_t end = scope.find('/', pos);
    if (end == std::string::npos) end = scope.size();
    std::string c = scope.substr(pos, end - pos);
    for (const char* prefix : {"layer_", "stack_"}) {
      std::string p = prefix;
      if (c.size() > p.size() && c.compare(0, p.size(), p) == 0 &&
          std::all_of(c.begin() + p.size(), c.end(),
                      [](unsigned char ch) { return std::isdigit(ch); }))
        return static_cast<int32_t>(std::stoi(c.substr(p.size())));
    }
    pos = end + 1;
  }
  return -1;
}

bool has_component(const std::string& scope, const std::string& comp) {
  size_t pos = 0;
  while (pos <= scope.size()) {
    size_t end = scope.find('/', pos);
    if (end == std::string::npos) end = scope.size();
    if (scope.compare(pos, end - pos, comp) == 0) return true;
    pos = end + 1;
  }
  return false;
}

// The forward op a builder-generated gradient op belongs to: "gradients/<fwd>_grad/...".
int32_t forward_of(const Graph& g, const Op& op) {
  const std::string pre = "gradients/";
  if (op.name.compare(0, pre.size(), pre) != 0) return -1;
  size_t k = op.name.rfind("_grad/");
  if (k == std::string::npos || k <= pre.size()) return -1;
  return g.find_op(op.name.substr(pre.size(), k - pre.size()));
}

// Fills unassigned ops (-1) of the selected phase set: from producers (topological order),
// then from the earliest consumer (reverse order), then device 0.
void fill_from_neighbours(const Graph& g, std::vector<int32_t>& dev, bool forward_only) {
  const auto& topo = g.topo_order();
  std::vector<int32_t> pos(g.num_ops());
  for (size_t i = 0; i < topo.size(); ++i) pos[topo[i]] = static_cast<int32_t>(i);
  auto selected = [&](int32_t op) { return !forward_only || g.op(op).phase == Phase::forward; };
  for (int32_t op : topo) {
    if (dev[op] >= 0 || !selected(op)) continue;
    for (int64_t e = g.in_ptr()[op]; e < g.in_ptr()[op + 1]; ++e) {
      int32_t src = g.edges()[g.in_edge_ids()[e]].src;
      if (dev[src] >= 0) {
        dev[op] = dev[src];
        break;
      }
    }
  }
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    int32_t op = *it;
    if (dev[op] >= 0 || !selected(op)) continue;
    int32_t best = -1;
    for (int64_t e = g.out_ptr()[op]; e < g.out_ptr()[op + 1]; ++e) {
      int32_t dst = g.edges()[g.out_edge_ids()[e]].dst;
      if (dev[dst] >= 0 && (best < 0 || pos[dst] < pos[best])) best = dst;
    }
    if (best >= 0) dev[op] = dev[best];
  }
  for (int32_t op = 0; op < g.num_ops(); ++op)
    if (dev[op] < 0 && selected(op)) dev[op] = 0;
}

// Backward and update ops with their forward op (by gradient name), else by neighbours;
// then colocation groups together.
Placement finish(const Graph& g, std::vector<int32_t> dev) {
  for (int32_t op = 0; op < g.num_ops(); ++op) {
    if (g.op(op).phase == Phase::forward) continue;
    int32_t f = forward_of(g, g.op(op));
    if (f >= 0 && dev[f] >= 0) dev[op] = dev[f];
  }
  fill_from_neighbours(g, dev, false);
  Placement p{std::move(dev)};
  enforce_colocation(g, p);
  return p;
}

// Forward ops cut into `parts` contiguous stages of the topological order, balanced by
// forward flops; graphs without flops (imported profiles) are balanced by their measured
// times, and graphs with neither by op count.
std::vector<int32_t> stage_split(const Graph& g, int32_t parts) {
  std::vector<int32_t> dev(g.num_ops(), -1);
  double total_flops = 0, total_measured = 0;
  for (const Op& o : g.ops())
    if (o.phase == Phase::forward) {
      total_flops += o.flops;
      if (!o.measured.empty()) total_measured += o.measured[0].time_s;
    }
  auto weight = [&](const Op& o) {
    if (total_flops > 0) return o.flops;
    if (total_measured > 0) return o.measured.empty() ? 0.0 : o.measured[0].time_s;
    return 1.0;
  };
  double total = 0;
  for (const Op& o : g.ops())
    if (o.phase == Phase::forward) total += weight(o);
  double acc = 0;
  for (int32_t op : g.topo_order()) {
    const Op& o = g.op(op);
    if (o.phase != Phase::forward) continue;
    const double w = weight(o);
    double mid = acc + 0.5 * w;
    acc += w;
    int32_t s = total > 0 ? static_cast<int32_t>(mid / total * parts) : 0;
    dev[op] = std::min(s, parts - 1);
  }
  return dev;
}

bool fits(Run& run, const Placement& p) {
  const Simulator& sim = run.problem().simulator();
  auto state = sim.make_state();
  run.count_samples(1);
  return sim.run(p, *state).valid;
}

}  // namespace

Placement human_placement(Run& run, HumanPlacementInfo* info) {
  const Graph& g = run.problem().graph();
  const int32_t D = run.problem().num_devices();
  HumanPlacementInfo local;
  HumanPlacementInfo& inf = info ? *info : local;

  std::vector<int32_t> unit(g.num_ops(), -1);
  int32_t units = 0;
  for (int32_t op = 0; op < g.num_ops(); ++op) {
    if (g.op(op).phase != Phase::forward) continue;
    unit[op] = unit_of(g.op(op).scope);
    units = std::max(units, unit[op] + 1);
  }

  if (units >= 2) {
    // A layer (or stack) per GPU; more units than GPUs: contiguous blocks.
    auto device_of_unit = [&](int32_t k) {
      return units <= D ? k : static_cast<int32_t>(static_cast<int64_t>(k) * D / units);
    };
    std::vector<int32_t> dev(g.num_ops(), -1);
    for (int32_t op = 0; op < g.num_ops(); ++op) {
      if (unit[op] >= 0) {
        dev[op] = device_of_unit(unit[op]);
      } else if (g.op(op).phase == Phase::forward && has_component(g.op(op).scope, "attention")) {
        dev[op] = device_of_unit(0);  // GNMT: attention beside the bottom decoder layer
      }
    }
    fill_from_neighbours(g, dev, true);
    Placement p = finish(g, std::move(dev));
    inf.strategy = "layers";
    inf.units = units;
    inf.devices_used = std::min(units, D);
    return p;
  }

  // CNNs and other unlayered graphs: one GPU when it fits, else the fewest stages that fit.
  inf.units = 0;
  for (int32_t parts = 1; parts <= D; ++parts) {
    std::vector<int32_t> dev =
        parts == 1 ? std::vector<int32_t>(g.num_ops(), 0) : stage_split(g, parts);
    Placement p = finish(g, std::move(dev));
    if (parts == D || fits(run, p)) {
      inf.strategy = parts == 1 ? "single" : "stages";
      inf.devices_used = parts;
      return p;
    }
  }
  throw std::logic_error("human_placement: no stage count was tried");  // parts == D returns
}

namespace {

class HumanPlacer : public Placer {
 public:
  Placement place(Run& run) override {
    HumanPlacementInfo info;
    Placement p = human_placement(run, &info);
    std::string n = info.strategy + ", " + std::to_string(info.devices_used) + " device(s)";
    if (info.strategy == "layers") n += ", " + std::to_string(info.units) + " layers/stacks";
    run.set_note(n);
    return p;
  }
};

}  // namespace

MethodInfo human_method() {
  return MethodInfo{"human",
                    "the expert's placement: a layer or stack per GPU in contiguous blocks; CNNs "
                    "on one GPU, or in stages when they do not fit",
                    {},
                    false,
                    [](const Options&) { return std::make_unique<HumanPlacer>(); }};
}

}  // namespace gdp::place
